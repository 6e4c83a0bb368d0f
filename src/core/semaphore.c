/*
 * core/semaphore.c: a semaphore's calls on an entry (Redisson's RSemaphore;
 * the names and scripts are proto/semaphore.c's), and its acquire as a
 * state machine of core.h's kind, which the blocking driver runs.
 *
 * Waiting mirrors acquire.c's for locks (facts sheet 1.6): try; when too
 * few permits are there, join the channel "redisson_sc:{N}", wait for the
 * subscription (at most Redisson's subscriptionTimeout), try again (closing
 * the gap between the first try and the subscription), then sleep until a
 * permit message wakes this waiter or the re-check interval passes, and try
 * again, until the deadline. A message carries the permits available now,
 * and entry_waiters.c wakes only waiters whose wants it covers; a waiter
 * that wants more sleeps on, and its re-check bounds what a lost message
 * costs. Nothing here polls: the re-check is the client's
 * recheck_interval, as for locks.
 *
 * The wait budget: every try carries the caller's deadline (send_by_ms),
 * so no connect, back-off or resend of the transport outlasts it, and its
 * reply is awaited for at most one command timeout past it.
 *
 * A permit-expirable semaphore's acquire takes one permit under a new id
 * (16 random bytes, as Redisson's) with a lease end by this process's wall
 * clock; its try also gives back every lease that clock says has ended,
 * and when no permit is free it tells the earliest lease end, which bounds
 * the next sleep too (as Redisson's waiter does).
 *
 * A try whose reply was lost (its connection dropped, or no answer in
 * time) may have taken the permits: as Redisson's tryAcquire, which
 * Redisson never retries (syncedEvalNoRetry), it ends the acquire with
 * that error and the permits, if taken, stay taken.
 */
#include "core.h"

#include <stdlib.h>

/* Redisson's subscriptionTimeout (acquire.c has the same for locks). */
#define SEM_SUBSCRIBE_WAIT_MS 7500

enum {
    S_IDLE,
    S_TRYING,      /* a try is out */
    S_SUBSCRIBING, /* waiting for its channel */
    S_WAITING,     /* for a permit message, or the re-check */
    S_GIVING_BACK, /* cancelled after a try took the permits */
    S_DONE,
};

static int64_t sem_min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* e's names and client settings, as proto's calls take them. */
void rlock__sem_describe(rlock__sem_desc *d, const rlock__entry *e)
{
    d->name = e->name;
    d->channel = e->channel;
    d->timeouts = e->aux[0];
    d->publish = e->client->publish;
}

/* The request of spec s, built by a proto call that returned rc; NULL
 * when it failed (*rc then says why: RLOCK_ENOMEM when rc was 0). */
rlock__req *rlock__sem_req(rlock_client *c, rlock__spec *s, int *rc)
{
    if (*rc != 0)
        return NULL;
    rlock__req *r = rlock__req_from_spec(c, s);
    rlock__spec_clear(s);
    if (r == NULL)
        *rc = RLOCK_ENOMEM;
    return r;
}

static rlock_client *sem_client(const rlock__sem_acquire *a)
{
    return a->entry->client;
}

static rlock__step sem_done(rlock__sem_acquire *a, int status)
{
    if (a->entered)
        rlock__waiter_leave(&a->waiter);
    a->entered = false;
    a->state = S_DONE;
    rlock__stats_acquire_done(sem_client(a)->stats, status, a->waited,
                              a->started_us);
    return (rlock__step){.kind = RLOCK__STEP_DONE, .status = status};
}

/* One round trip's timeout: a command timeout, but none past the caller's
 * deadline plus one command timeout. */
static int64_t sem_round_trip_ms(const rlock__sem_acquire *a)
{
    int64_t t = sem_client(a)->cfg.command_timeout_ms;
    if (a->deadline_ms <= INT64_MAX - t) {
        int64_t left = a->deadline_ms + t - rlock__now_ms();
        t = sem_min64(t, left > 1 ? left : 1);
    }
    return t;
}

static bool expirable(const rlock__sem_acquire *a)
{
    return a->entry->kind == RLOCK__KIND_PERMIT_SEMAPHORE;
}

static rlock__step sem_try(rlock__sem_acquire *a)
{
    rlock__sem_desc d;
    rlock__spec spec;
    rlock__sem_describe(&d, a->entry);
    int rc = expirable(a) ? rlock__permit_acquire(&spec, &d, a->id,
                                                  rlock__wall_ms(),
                                                  a->lease_ms)
                          : rlock__sem_try_acquire(&spec, &d, a->permits);
    rlock__req *r = rlock__sem_req(sem_client(a), &spec, &rc);
    if (r == NULL)
        return sem_done(a, rc);
    if (a->deadline_ms != INT64_MAX)
        r->send_by_ms = a->deadline_ms;
    r->run_once = true; /* a second run could take twice */
    a->state = S_TRYING;
    return (rlock__step){.kind = RLOCK__STEP_SEND,
                         .req = r,
                         .timeout_ms = sem_round_trip_ms(a)};
}

static rlock__step sem_wait(rlock__sem_acquire *a, int state, int want,
                            int64_t until_ms)
{
    a->state = state;
    return (rlock__step){.kind = RLOCK__STEP_WAIT,
                         .waiter = &a->waiter,
                         .want = want,
                         .until_ms = sem_min64(until_ms, a->deadline_ms)};
}

/* Too few permits: wait (see the file comment). */
static rlock__step sem_busy(rlock__sem_acquire *a)
{
    int64_t now = rlock__now_ms();
    if (a->wait_ms == 0 || now >= a->deadline_ms)
        return sem_done(a, RLOCK_ETIMEDOUT);
    a->waited = true;
    if (!a->entered) {
        a->waiter.need = a->permits;
        rlock__waiter_enter(a->entry, &a->waiter, a->kick);
        a->entered = true;
        return sem_wait(a, S_SUBSCRIBING, RLOCK__WAIT_SUBSCRIBED,
                        now + SEM_SUBSCRIBE_WAIT_MS);
    }
    int64_t until = now + sem_client(a)->cfg.recheck_interval_ms;
    if (a->lease_end_ms > 0) {
        /* a lease ends then, by this process's clock: try again then */
        int64_t left = a->lease_end_ms - rlock__wall_ms();
        until = sem_min64(until, now + (left > 0 ? left : 1));
    }
    return sem_wait(a, S_WAITING, RLOCK__WAIT_PERMIT, until);
}

/* The permits a cancelled acquire took go back, with a message for the
 * waiters they may serve. */
static rlock__step sem_give_back(rlock__sem_acquire *a)
{
    rlock__sem_desc d;
    rlock__spec spec;
    rlock__sem_describe(&d, a->entry);
    int rc = expirable(a)
                 ? rlock__permit_release(&spec, &d, a->id, rlock__wall_ms())
                 : rlock__sem_release(&spec, &d, a->permits, false);
    rlock__req *r = rlock__sem_req(sem_client(a), &spec, &rc);
    if (r == NULL)
        return sem_done(a, RLOCK_ECANCELED);
    a->state = S_GIVING_BACK;
    return (rlock__step){
        .kind = RLOCK__STEP_SEND,
        .req = r,
        .timeout_ms = sem_client(a)->cfg.command_timeout_ms};
}

static rlock__step sem_reply(void *op, rlock__req *r, int status)
{
    rlock__sem_acquire *a = op;
    if (a->state == S_GIVING_BACK)
        return sem_done(a, RLOCK_ECANCELED);
    if (a->state != S_TRYING)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    /* a permit-expirable try answers 0 when taken, else the earliest lease
     * end (or -1: none) */
    bool taken = status == 0 && !r->nil &&
                 r->value == (expirable(a) ? 0 : 1);
    if (status == 0 && expirable(a))
        a->lease_end_ms = r->value > 0 ? r->value : 0;
    if (taken && a->canceled)
        return sem_give_back(a);
    if (a->canceled)
        return sem_done(a, RLOCK_ECANCELED);
    if (status != 0)
        return sem_done(a, status);
    if (taken)
        return sem_done(a, RLOCK_OK);
    return sem_busy(a);
}

static rlock__step sem_wake(void *op, bool woken)
{
    rlock__sem_acquire *a = op;
    (void)woken;
    if (a->state == S_SUBSCRIBING || a->state == S_WAITING)
        return sem_try(a);
    return (rlock__step){.kind = RLOCK__STEP_NONE};
}

static rlock__step sem_cancel(void *op, int why)
{
    rlock__sem_acquire *a = op;
    switch (a->state) {
    case S_TRYING:
        if (why == RLOCK_ECLOSED)
            return sem_done(a, why);
        a->canceled = true;
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    case S_GIVING_BACK:
        return why == RLOCK_ECLOSED ? sem_done(a, RLOCK_ECANCELED)
                                    : (rlock__step){.kind = RLOCK__STEP_NONE};
    case S_DONE:
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    default:
        return sem_done(a, why);
    }
}

const rlock__op_class rlock__sem_acquire_class = {sem_reply, sem_wake,
                                                  sem_cancel};

/* Sets a up to take permits of e (the caller keeps e referenced while a
 * lives) within wait_ms (RLOCK_WAIT_FOREVER: no limit), for a
 * permit-expirable semaphore one permit under a new id with lease_ms
 * (RLOCK_LEASE_NONE: none), and returns its first step: a try. */
rlock__step rlock__sem_acquire_start(rlock__sem_acquire *a, rlock__entry *e,
                                     int permits, int64_t wait_ms,
                                     int64_t lease_ms)
{
    *a = (rlock__sem_acquire){.entry = e,
                              .permits = permits,
                              .wait_ms = wait_ms,
                              .lease_ms = lease_ms,
                              .deadline_ms = INT64_MAX,
                              .started_us =
                                  rlock__stats_clock(e->client->stats)};
    if (expirable(a)) {
        unsigned char raw[RLOCK__PERMIT_ID_LEN / 2];
        if (rlock__random_bytes(raw, sizeof(raw)) != 0)
            return sem_done(a, RLOCK_ENOMEM);
        rlock__hex(a->id, raw, sizeof(raw));
        a->permits = 1;
    }
    int64_t now = rlock__now_ms();
    if (wait_ms != RLOCK_WAIT_FOREVER && wait_ms <= INT64_MAX - now)
        a->deadline_ms = now + wait_ms;
    return sem_try(a);
}

/* Leaves e's waiters if a still is among them; after its DONE step. */
void rlock__sem_acquire_clear(rlock__sem_acquire *a)
{
    if (a->entered)
        rlock__waiter_leave(&a->waiter);
    a->entered = false;
}
