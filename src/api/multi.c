/*
 * api/multi.c: several locks taken as one (Redisson's RedissonMultiLock and
 * RedissonRedLock, facts sheet section 7).
 *
 * Design notes. A multi-lock has no keys of its own: it is a list of
 * borrowed handles, each taken by the calling thread through the per-lock
 * code (rlock__trylock_ex), so every sub-lock's Redis state is exactly what
 * that lock writes on its own and a Java peer sees nothing unusual. The
 * object itself is immutable after creation; what one call has taken is
 * tracked in that call's stack frame, so a rollback never releases a hold
 * the caller had before the call (a reentrant hold simply loses one count).
 *
 * A round takes the locks in order. A multi-lock tolerates no failure and a
 * Redlock tolerates n - (n/2 + 1); past that, the round's locks are
 * released and, while the wait lasts, a new round starts from the first
 * lock. Per-lock waits and the 2 x wait lease follow Redisson: the lease is
 * only a safety net for a half-finished round, and the real lease is set on
 * every held lock once the round has succeeded (rlock__set_lease).
 *
 * Deviations, all towards safety or liveness: given a wait, sub-lock calls
 * are bounded by their share of it, so a stalled server costs its share
 * and not a command timeout (without a wait each gets the command
 * timeout); a round that failed waits a little (a
 * jitter, plus the retry interval after connection errors) before the next,
 * so that competing callers fall out of step and a dead server is not
 * hammered; an acquisition with no validity left is rolled back.
 *
 * Validity is counted from the start of the successful round: every
 * sub-lock was taken after it, so each key's lease runs until at least
 * then + lease. With the watchdog it is a lower bound that renewals extend.
 *
 * Public functions in src/api, built on the per-lock calls of
 * src/api/lock_sync.c and lock.c.
 */
#include "api/api.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* rlock.h promises at most 64 locks: a call's bookkeeping fits the stack. */
#define RLOCK__MULTI_MAX 64
/* Redisson's lock(): each round waits this much per lock. */
#define RLOCK__MULTI_ROUND_PER_LOCK_MS 1500
/* The most a failed round waits before the next, besides the retry
 * interval after connection errors. */
#define RLOCK__MULTI_JITTER_MS 50

struct rlock_multi {
    bool redlock;
    size_t n;
    rlock *locks[]; /* borrowed */
};

/* One acquisition call's memory, across its rounds. */
typedef struct attempt {
    const rlock_multi *m;
    bool taken[RLOCK__MULTI_MAX]; /* held by this round of this call */
    bool tried;                   /* some lock answered: taken or busy */
    int first_err;                /* first failure other than a timeout */
} attempt;

/* ------------------------------------------------------------ lifecycle */

/* Returns 0 when every lock may be used, else the first reason one may
 * not (a handle whose client was freed says RLOCK_ECLOSED): checked before
 * a round, so that no lock is taken for a round that cannot succeed. */
static int check_locks(rlock *const *locks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = rlock__handle_check(locks[i]);
        if (rc != 0)
            return rc;
    }
    return RLOCK_OK;
}

static int multi_new(rlock *const *locks, size_t n, bool redlock,
                     rlock_multi **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    if (locks == NULL || n == 0 || n > RLOCK__MULTI_MAX)
        return RLOCK_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (locks[i] == NULL)
            return RLOCK_EINVAL;
    int rc = check_locks(locks, n);
    if (rc != 0)
        return rc;
    rlock_multi *m = rlock__malloc(sizeof(*m) + n * sizeof(m->locks[0]));
    if (m == NULL)
        return RLOCK_ENOMEM;
    m->redlock = redlock;
    m->n = n;
    for (size_t i = 0; i < n; i++)
        m->locks[i] = locks[i];
    *out = m;
    return RLOCK_OK;
}

int rlock_multi_new(rlock *const *locks, size_t n, rlock_multi **out)
{
    return multi_new(locks, n, false, out);
}

int rlock_redlock_new(rlock *const *locks, size_t n, rlock_multi **out)
{
    return multi_new(locks, n, true, out);
}

void rlock_multi_free(rlock_multi *m)
{
    free(m);
}

/* -------------------------------------------------------------- helpers */

/* How many locks a round must hold: all of them, or a majority. */
static size_t quorum(const rlock_multi *m)
{
    return m->redlock ? m->n / 2 + 1 : m->n;
}

/* Errors that no other server or later round can cure: they end the call
 * at once. Everything else only makes one lock fail. */
static bool fatal(int rc)
{
    return rc == RLOCK_EINVAL || rc == RLOCK_EDEADLK || rc == RLOCK_EFORKED ||
           rc == RLOCK_ECLOSED || rc == RLOCK_ENOMEM;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return b > INT64_MAX - a ? INT64_MAX : a + b;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Returns a number in [lo, hi), or lo when the range is empty. A failing
 * random source only costs the spread, so it falls back to lo. */
static int64_t random_between(int64_t lo, int64_t hi)
{
    uint64_t r = 0;
    if (hi <= lo || rlock__random_bytes(&r, sizeof(r)) != 0)
        return lo;
    return lo + (int64_t)(r % (uint64_t)(hi - lo));
}

/* The lease the locks get when none is given: the shortest watchdog
 * timeout among their clients, so that validity never overstates any. */
static int64_t watchdog_lease(const rlock_multi *m)
{
    int64_t lease = m->locks[0]->client->cfg.watchdog_timeout_ms;
    for (size_t i = 1; i < m->n; i++)
        lease = min64(lease, m->locks[i]->client->cfg.watchdog_timeout_ms);
    return lease;
}

/* Releases what the current round took. Errors are not reported: a hold
 * that cannot be released is forgotten locally and left to its lease. */
static void roll_back(attempt *a)
{
    for (size_t i = 0; i < a->m->n; i++) {
        if (a->taken[i]) {
            rlock_unlock(a->m->locks[i]);
            a->taken[i] = false;
        }
    }
}

/* Notes a lock that answered rc (not 0, not fatal). A timeout means the
 * lock was reached and found busy (or the server was too slow), so only
 * the other codes can say that nothing could be tried at all. */
static void note_failure(attempt *a, int rc)
{
    if (rc == RLOCK_ETIMEDOUT)
        a->tried = true;
    else if (a->first_err == 0)
        a->first_err = rc;
}

/* What a call that gave up reports. */
static int give_up(const attempt *a)
{
    return !a->tried && a->first_err != 0 ? a->first_err : RLOCK_ETIMEDOUT;
}

/* Gives every held lock the caller's lease, as RedissonMultiLock PEXPIREs
 * each one after the round. A lock whose lease cannot be set is released
 * and counted out of *held. Returns 0 or a fatal code. */
static int apply_lease(attempt *a, int64_t lease_ms, size_t *held)
{
    for (size_t i = 0; i < a->m->n; i++) {
        if (!a->taken[i])
            continue;
        int rc = rlock__set_lease(a->m->locks[i], lease_ms);
        if (rc == 0)
            continue;
        if (fatal(rc))
            return rc;
        note_failure(a, rc);
        rlock_unlock(a->m->locks[i]);
        a->taken[i] = false;
        (*held)--;
    }
    return RLOCK_OK;
}

/* ---------------------------------------------------------- acquisition */

/* rlock_multi_trylock() for a finite wait_ms (>= 0): Redisson's
 * tryLock(wait, lease). */
static int try_rounds(rlock_multi *m, int64_t wait_ms, int64_t lease_ms,
                      int64_t *validity_ms)
{
    attempt a = {.m = m};
    const size_t need = quorum(m), limit = m->n - need;
    const int64_t deadline = add_sat(rlock__now_ms(), wait_ms);
    /* a half-finished round must not pin a lock for the whole lease: 2 x
     * wait outlives any round, and the real lease comes once all are held */
    int64_t sub_lease = RLOCK_LEASE_WATCHDOG;
    if (lease_ms > 0)
        sub_lease = wait_ms > 0
                        ? min64(add_sat(wait_ms, wait_ms), RLOCK__LEASE_MAX)
                        : lease_ms;
    /* with a wait, no round trip may outlast a lock's share of it (a
     * Redlock's stalled server costs its share, not a command timeout);
     * with none there is no share, and a bounded call would get 1 ms */
    const bool bounded = wait_ms > 0;

    for (;;) {
        const int64_t round_start = rlock__now_ms();
        int64_t share = deadline - round_start;
        if (m->redlock)
            share = share / (int64_t)m->n > 1 ? share / (int64_t)m->n : 1;
        size_t held = 0, failed = 0;
        int round_err = 0;
        int64_t err_pause = 0; /* the failing client's retry interval */
        int rc;

        for (size_t i = 0; i < m->n; i++) {
            int64_t now = rlock__now_ms();
            int64_t wait = 0;
            if (wait_ms > 0) {
                if (now >= deadline) {
                    round_err = RLOCK_ETIMEDOUT;
                    break; /* a quorum already held still counts */
                }
                wait = min64(share, deadline - now);
            }
            rc = rlock__trylock_ex(m->locks[i], wait, sub_lease, NULL, bounded);
            if (rc == 0) {
                a.taken[i] = true;
                a.tried = true;
                held++;
                continue;
            }
            if (fatal(rc)) {
                roll_back(&a);
                return rc;
            }
            note_failure(&a, rc);
            round_err = rc;
            if (rc != RLOCK_ETIMEDOUT)
                err_pause = m->locks[i]->client->cfg.retry_interval_ms;
            if (++failed > limit || held >= need)
                break; /* lost, or a quorum is enough (Redisson) */
        }

        if (held >= need && lease_ms > 0) {
            rc = apply_lease(&a, lease_ms, &held);
            if (rc != 0) {
                roll_back(&a);
                return rc;
            }
        }
        if (held >= need) {
            int64_t lease = lease_ms > 0 ? lease_ms : watchdog_lease(m);
            int64_t validity =
                lease - (rlock__now_ms() - round_start) - (lease / 100 + 2);
            if (validity > 0) {
                if (validity_ms != NULL)
                    *validity_ms = validity;
                return RLOCK_OK;
            }
            round_err = RLOCK_ETIMEDOUT;
        }

        roll_back(&a);
        if (wait_ms <= 0)
            return give_up(&a);
        int64_t pause = random_between(1, RLOCK__MULTI_JITTER_MS + 1);
        if (round_err != RLOCK_ETIMEDOUT)
            pause += err_pause;
        if (rlock__now_ms() + pause >= deadline)
            return give_up(&a);
        sleep_ms(pause);
    }
}

/* Redisson's lock(lease): rounds of tryLock until one succeeds, each
 * waiting n x 1500 ms, or a random part of the lease when one is given so
 * that callers with the same lease fall out of step. */
static int lock_rounds(rlock_multi *m, int64_t lease_ms, int64_t *validity_ms)
{
    const int64_t base = (int64_t)m->n * RLOCK__MULTI_ROUND_PER_LOCK_MS;
    for (;;) {
        int64_t wait = base;
        if (lease_ms > 0)
            wait = lease_ms <= base ? random_between(lease_ms / 2, lease_ms)
                                    : random_between(base, lease_ms);
        if (wait < 1)
            wait = 1;
        int rc = try_rounds(m, wait, lease_ms, validity_ms);
        if (rc == 0 || fatal(rc))
            return rc;
        /* every server refused at once: do not spin on them */
        if (rc != RLOCK_ETIMEDOUT)
            sleep_ms(random_between(1, RLOCK__MULTI_JITTER_MS + 1));
    }
}

int rlock_multi_lock(rlock_multi *m, int64_t *validity_ms)
{
    if (m == NULL)
        return RLOCK_EINVAL;
    int rc = check_locks(m->locks, m->n);
    if (rc != 0)
        return rc;
    return lock_rounds(m, RLOCK_LEASE_WATCHDOG, validity_ms);
}

int rlock_multi_trylock(rlock_multi *m, int64_t wait_ms, int64_t lease_ms,
                        int64_t *validity_ms)
{
    if (m == NULL || wait_ms < RLOCK_WAIT_FOREVER || lease_ms == 0 ||
        lease_ms < RLOCK_LEASE_WATCHDOG || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    int rc = check_locks(m->locks, m->n);
    if (rc != 0)
        return rc;
    if (wait_ms == RLOCK_WAIT_FOREVER)
        return lock_rounds(m, lease_ms, validity_ms);
    return try_rounds(m, wait_ms, lease_ms, validity_ms);
}

/* -------------------------------------------------------------- release */

int rlock_multi_unlock(rlock_multi *m)
{
    if (m == NULL)
        return RLOCK_EINVAL;
    size_t held = 0, released = 0;
    bool lost = false;
    int first_err = 0;
    /* every lock is tried even after an error, so that one bad server does
     * not leave the others held */
    for (size_t i = 0; i < m->n; i++) {
        int rc = rlock_unlock(m->locks[i]);
        if (rc == RLOCK_ENOTOWNER)
            continue; /* a Redlock's lock that was not won, or misuse */
        held++;
        if (rc == 0 || rc == RLOCK_ENOTIFY) {
            /* released, though its waiters may not have been told */
            released++;
            if (rc != 0 && first_err == 0 && !m->redlock)
                first_err = rc;
            continue;
        }
        if (rc == RLOCK_ELOST)
            lost = true;
        if (first_err == 0 || first_err == RLOCK_ENOTIFY)
            first_err = rc;
    }
    if (held == 0)
        return RLOCK_ENOTOWNER;
    if (!m->redlock)
        return first_err;
    if (released >= quorum(m))
        return RLOCK_OK;
    /* a majority was not given back: either it had been lost already, or
     * servers could not be reached (their keys run out on their lease) */
    if (lost || first_err == 0)
        return RLOCK_ELOST;
    return first_err;
}
