/*
 * test_stats_scenarios.c: what a client's statistics (rlock_client_stats) count when
 * real lock traffic runs against a real server, and the log lines that go
 * with them: each test plays one scenario on fresh clients and checks the
 * counters it must produce, and no others.
 *
 * Waits of a known minimum length: the holder unlocks only once the
 * waiter's subscription shows on the server (PUBSUB NUMSUB), which comes
 * after the waiter's call started, and then only after HOLD_MS more; so
 * every such wait is longer than HOLD_MS, whatever the machine's speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "stats"
#define HOLD_MS  100
/* generous: a renewal period or a reconnect is well within it */
#define WITHIN_MS 10000

/* ------------------------------------------------------------- log lines */

#define MAX_LINES 256

typedef struct log_record {
    pthread_mutex_t mu;
    int n;
    int level[MAX_LINES];
    char line[MAX_LINES][512];
} log_record;

static void record_line(int level, const char *message, void *arg)
{
    log_record *lr = arg;
    pthread_mutex_lock(&lr->mu);
    if (lr->n < MAX_LINES) {
        lr->level[lr->n] = level;
        snprintf(lr->line[lr->n], sizeof(lr->line[0]), "%s", message);
        lr->n++;
    }
    pthread_mutex_unlock(&lr->mu);
}

/* Lines of the given level (0: any) that contain both words (b may be
 * NULL); prints each. */
static int lines_with(log_record *lr, int level, const char *a, const char *b)
{
    int found = 0;
    pthread_mutex_lock(&lr->mu);
    for (int i = 0; i < lr->n; i++) {
        if ((level == 0 || lr->level[i] == level) &&
            strstr(lr->line[i], a) != NULL &&
            (b == NULL || strstr(lr->line[i], b) != NULL)) {
            print_message("log %d: %s\n", lr->level[i], lr->line[i]);
            found++;
        }
    }
    pthread_mutex_unlock(&lr->mu);
    return found;
}

/* --------------------------------------------------------------- clients */

/* A client of f's server; watchdog_ms and recheck_ms 0 keep the defaults;
 * lr (may be NULL) gets every log line. */
static rlock_client *connect_client(lt_fixture *f, int64_t watchdog_ms,
                                    int64_t recheck_ms, log_record *lr)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    if (watchdog_ms > 0)
        assert_int_equal(rlock_config_set_watchdog_timeout(cfg, watchdog_ms),
                         RLOCK_OK);
    if (recheck_ms > 0)
        assert_int_equal(rlock_config_set_recheck_interval(cfg, recheck_ms),
                         RLOCK_OK);
    if (lr != NULL)
        assert_int_equal(
            rlock_config_set_log(cfg, RLOCK_LOG_DEBUG, record_line, lr),
            RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

static rlock_stats stats_of(rlock_client *c)
{
    rlock_stats s = RLOCK_STATS_INIT;
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_OK);
    return s;
}

/* Polls c's statistics until cond (an expression over s) holds, failing
 * after WITHIN_MS; leaves the last snapshot in s. */
#define WAIT_STATS(c, s, cond)                                               \
    do {                                                                     \
        int64_t until_ = rt_now_ms() + WITHIN_MS;                            \
        for (;;) {                                                           \
            (s) = stats_of(c);                                               \
            if (cond)                                                        \
                break;                                                       \
            if (rt_now_ms() > until_)                                        \
                fail_msg("statistics never showed %s", #cond);               \
            rt_sleep_ms(10);                                                 \
        }                                                                    \
    } while (0)

/* How many of h's values are at most us. */
static uint64_t at_most(const rlock_histogram *h, uint64_t us)
{
    uint64_t n = 0;
    for (int i = 0; i < RLOCK_STATS_BUCKETS; i++)
        if (rlock_stats_bucket_le_us(i) <= us &&
            i < RLOCK_STATS_BUCKETS - 1)
            n += h->buckets[i];
    return n;
}

/* Subscribers of lock name's unlock channel, as the server counts them. */
static long long subscribers(rt_redis *r, const char *name)
{
    char channel[256];
    lt_channel_of(channel, sizeof(channel), name);
    redisReply *rep = rt_cmd(r, "PUBSUB NUMSUB %s", channel);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    long long n = rep->element[1]->integer;
    freeReplyObject(rep);
    return n;
}

static void wait_subscribers(rt_redis *r, const char *name, long long n)
{
    int64_t until = rt_now_ms() + WITHIN_MS;
    while (subscribers(r, name) != n) {
        if (rt_now_ms() > until)
            fail_msg("%s never had %lld subscribers", name, n);
        rt_sleep_ms(2);
    }
}

/* A thread that takes a lock (waiting), and gives it back when the test
 * joins it: a test can first see what holds while it has the lock (its
 * client off the channel, so it does not hear its own unlock). */
typedef struct waiter {
    pthread_t thread;
    rlock *lock;
    int64_t wait_ms; /* RLOCK_WAIT_FOREVER: rlock_lock() */
    int rc;
    atomic_bool acquired;   /* trylock has returned */
    atomic_bool may_unlock; /* set by waiter_join */
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    w->rc = rlock_trylock(w->lock, w->wait_ms, RLOCK_LEASE_WATCHDOG);
    atomic_store(&w->acquired, true);
    if (w->rc == RLOCK_OK) {
        while (!atomic_load(&w->may_unlock))
            rt_sleep_ms(1);
        rlock_unlock(w->lock);
    }
    return NULL;
}

/* Waits until w's trylock has returned. */
static void waiter_await_acquire(waiter *w)
{
    int64_t until = rt_now_ms() + WITHIN_MS;
    while (!atomic_load(&w->acquired)) {
        if (rt_now_ms() > until)
            fail_msg("the waiter never got the lock");
        rt_sleep_ms(1);
    }
}

static void waiter_start(waiter *w, rlock *l, int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->lock = l;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static int waiter_join(waiter *w)
{
    atomic_store(&w->may_unlock, true);
    assert_int_equal(pthread_join(w->thread, NULL), 0);
    return w->rc;
}

/* Two clients of f's server on one lock name: a holder, and a waiter whose
 * statistics the test reads (recheck_ms and lr as connect_client takes
 * them), each with its handle. */
typedef struct duo {
    rlock_client *h, *w;
    rlock *hl, *wl;
} duo;

static duo duo_open(lt_fixture *f, const char *name, int64_t recheck_ms,
                    log_record *lr)
{
    duo d;
    d.h = connect_client(f, 0, 0, NULL);
    d.w = connect_client(f, 0, recheck_ms, lr);
    d.hl = lt_get_lock(d.h, name);
    d.wl = lt_get_lock(d.w, name);
    return d;
}

static void duo_close(duo *d)
{
    rlock_free(d->hl);
    rlock_free(d->wl);
    rlock_client_free(d->h);
    rlock_client_free(d->w);
}

/* The holder takes the lock, th starts waiting for it on the waiter's
 * side, and this returns once the server sees the waiter listening. */
static void hold_with_a_waiter(lt_fixture *f, duo *d, const char *name,
                               waiter *th)
{
    assert_int_equal(rlock_lock(d->hl), RLOCK_OK);
    waiter_start(th, d->wl, RLOCK_WAIT_FOREVER);
    wait_subscribers(&f->redis, name, 1);
}

/* ------------------------------------------------------------ acquiring */

static void test_an_uncontended_lock_counts_an_immediate_acquire_and_a_hold(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, NULL);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_sleep_ms(HOLD_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    rlock_stats s = stats_of(c);
    assert_int_equal(s.acquired_immediately, 1);
    assert_int_equal(s.acquired_after_wait, 0);
    assert_int_equal(s.acquire_timeouts, 0);
    assert_int_equal(s.acquire_errors, 0);
    assert_int_equal(s.releases, 1);
    assert_int_equal(s.wait.count, 1);
    assert_int_equal(s.hold.count, 1);
    assert_int_equal(at_most(&s.hold, HOLD_MS * 1000 - 1), 0);
    assert_true(s.hold.max_us >= HOLD_MS * 1000);
    assert_true(s.round_trips >= 2); /* the acquire and the release */
    rlock_free(l);
    rlock_client_free(c);
}

/* A reentrant acquire is an acquisition; the hold is timed once, from the
 * first acquire to the last release. */
static void test_reentry_counts_acquires_and_releases_but_one_hold(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, NULL);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    rlock_stats s = stats_of(c);
    assert_int_equal(s.acquired_immediately, 2);
    assert_int_equal(s.releases, 2);
    assert_int_equal(s.hold.count, 1);
    rlock_free(l);
    rlock_client_free(c);
}

/* N waits of at least HOLD_MS each (see the file comment) land in buckets
 * at or above HOLD_MS; each was woken by its unlock message. */
static void test_waits_of_a_known_minimum_land_in_the_buckets_above_it(
    void **state)
{
    enum { N = 4 };
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 0, NULL);

    for (int i = 0; i < N; i++) {
        waiter th;
        hold_with_a_waiter(f, &d, name, &th);
        rt_sleep_ms(HOLD_MS);
        assert_int_equal(rlock_unlock(d.hl), RLOCK_OK);
        /* the waiter leaves the channel before its own unlock, which it
         * would otherwise hear (and count) when that came first */
        waiter_await_acquire(&th);
        wait_subscribers(&f->redis, name, 0);
        assert_int_equal(waiter_join(&th), RLOCK_OK);
    }

    rlock_stats s = stats_of(d.w);
    assert_int_equal(s.acquired_after_wait, N);
    assert_int_equal(s.acquired_immediately, 0);
    assert_int_equal(s.wait.count, N);
    assert_int_equal(at_most(&s.wait, HOLD_MS * 1000), 0);
    assert_true(rlock_stats_quantile(&s.wait, 0.0) > HOLD_MS * 1000);
    assert_int_equal(s.unlock_messages, N);
    assert_int_equal(s.rechecks_found_free, 0);
    print_message("waits: p50 %lld us, max %llu us\n",
                  (long long)rlock_stats_quantile(&s.wait, 0.5),
                  (unsigned long long)s.wait.max_us);

    rlock_stats hs = stats_of(d.h);
    assert_int_equal(hs.acquired_immediately, N);
    assert_int_equal(hs.hold.count, N);
    assert_int_equal(at_most(&hs.hold, HOLD_MS * 1000), 0);
    duo_close(&d);
}

static void test_a_trylock_that_runs_out_counts_a_timeout(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 0, NULL);

    assert_int_equal(rlock_lock(d.hl), RLOCK_OK);
    assert_int_equal(rlock_trylock(d.wl, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_trylock(d.wl, 100, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_unlock(d.hl), RLOCK_OK);

    rlock_stats s = stats_of(d.w);
    assert_int_equal(s.acquire_timeouts, 2);
    assert_int_equal(s.acquired_immediately + s.acquired_after_wait, 0);
    assert_int_equal(s.wait.count, 0); /* acquisitions only */
    duo_close(&d);
}

static void test_async_acquires_are_counted_as_blocking_ones_are(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 0, NULL);
    uint64_t owner = rlock_owner_new();
    lt_completion done = {0};

    /* free: held at once */
    assert_int_equal(rlock_lock_async(d.wl, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, lt_on_done, &done),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&done, WITHIN_MS), RLOCK_OK);
    memset(&done, 0, sizeof(done));
    assert_int_equal(rlock_unlock_async(d.wl, owner, lt_on_done, &done),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&done, WITHIN_MS), RLOCK_OK);

    /* taken: held once the holder lets go, HOLD_MS after it waits */
    assert_int_equal(rlock_lock(d.hl), RLOCK_OK);
    memset(&done, 0, sizeof(done));
    assert_int_equal(rlock_lock_async(d.wl, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, lt_on_done, &done),
                     RLOCK_OK);
    wait_subscribers(&f->redis, name, 1);
    rt_sleep_ms(HOLD_MS);
    assert_int_equal(rlock_unlock(d.hl), RLOCK_OK);
    assert_int_equal(lt_await_completion(&done, WITHIN_MS), RLOCK_OK);
    memset(&done, 0, sizeof(done));
    assert_int_equal(rlock_unlock_async(d.wl, owner, lt_on_done, &done),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&done, WITHIN_MS), RLOCK_OK);

    rlock_stats s = stats_of(d.w);
    assert_int_equal(s.acquired_immediately, 1);
    assert_int_equal(s.acquired_after_wait, 1);
    assert_int_equal(s.releases, 2);
    assert_int_equal(s.wait.count, 2);
    assert_int_equal(s.hold.count, 2);
    assert_true(s.wait.max_us > HOLD_MS * 1000);
    assert_int_equal(s.unlock_messages, 1);
    duo_close(&d);
}

/* ----------------------------------------------------- lost unlock message */

/* The holder's lock vanishes without an unlock message (a raw DEL): the
 * waiter's re-check finds it free, and that is what the counter says. */
static void test_a_lost_unlock_message_found_by_a_recheck_is_counted(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 200, NULL);
    waiter th;
    uint64_t before = stats_of(d.w).round_trips;

    hold_with_a_waiter(f, &d, name, &th);
    /* the DEL comes after the waiter's try that follows its subscription
     * (its second round trip), else that try, not a re-check, finds the
     * lock free */
    rlock_stats s;
    WAIT_STATS(d.w, s, s.round_trips >= before + 2);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(waiter_join(&th), RLOCK_OK);

    s = stats_of(d.w);
    assert_int_equal(s.acquired_after_wait, 1);
    assert_int_equal(s.rechecks_found_free, 1);
    assert_int_equal(s.unlock_messages, 0);
    assert_int_equal(rlock_unlock(d.hl), RLOCK_ELOST);
    duo_close(&d);
}

/* The same with the message: no re-check is counted. */
static void test_a_wake_by_message_is_not_a_recheck(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 200, NULL);
    waiter th;
    uint64_t before = stats_of(d.w).round_trips;

    hold_with_a_waiter(f, &d, name, &th);
    /* the unlock comes after the waiter's try that follows its
     * subscription, as above: else that try may find the lock free and the
     * waiter leave the channel before the message is read */
    rlock_stats s;
    WAIT_STATS(d.w, s, s.round_trips >= before + 2);
    assert_int_equal(rlock_unlock(d.hl), RLOCK_OK);
    assert_int_equal(waiter_join(&th), RLOCK_OK);

    s = stats_of(d.w);
    assert_int_equal(s.acquired_after_wait, 1);
    assert_int_equal(s.unlock_messages, 1);
    assert_int_equal(s.rechecks_found_free, 0);
    duo_close(&d);
}

/* ------------------------------------------------------------ lost locks */

static void test_a_raw_del_of_a_held_lock_counts_a_loss_and_logs_why(
    void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    /* a lease long enough to outlast a valgrind stall between the lock
     * and the DEL (300 ms did not); the loss is still seen within a
     * renewal interval of 500 ms */
    rlock_client *c = connect_client(f, 1500, 0, &lr);
    rlock *l = lt_get_lock(c, name);
    rlock_stats s;

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    WAIT_STATS(c, s, s.lost_gone == 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);

    s = stats_of(c);
    assert_int_equal(s.lost_gone, 1); /* once, not again at the unlock */
    assert_int_equal(s.lost_taken + s.lost_expired + s.lost_abandoned, 0);
    assert_int_equal(s.hold.count, 0); /* a lost hold is not timed */
    assert_int_equal(s.releases, 0);
    rlock_client_free(c); /* every line is delivered by then */
    assert_int_equal(lines_with(&lr, RLOCK_LOG_WARN, name, "vanished"), 1);
    rlock_free(l);
}

static void test_a_lock_taken_by_another_owner_counts_a_loss_taken(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 1500, 0, NULL); /* as above */
    rlock *l = lt_get_lock(c, name);
    rlock_stats s;

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* in one step: a renewal between a DEL and an HSET would find the lock
     * gone, not taken */
    assert_int_equal(rt_cmd_int(&f->redis,
                                "EVAL %s 1 %s",
                                "redis.call('del', KEYS[1]) "
                                "return redis.call('hset', KEYS[1], "
                                "'other:1', 1)",
                                name),
                     1);
    WAIT_STATS(c, s, s.lost_taken == 1);
    assert_int_equal(s.lost_gone, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rt_cmd_int(&f->redis, "DEL %s", name);
    rlock_free(l);
    rlock_client_free(c);
}

/* A lock found gone by its own unlock is a loss too (the watchdog had not
 * looked yet): counted once, as gone. */
static void test_a_loss_found_by_the_unlock_is_counted(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, NULL); /* 30 s watchdog */
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);

    rlock_stats s = stats_of(c);
    assert_int_equal(s.lost_gone, 1);
    assert_int_equal(s.releases, 0);
    assert_int_equal(s.hold.count, 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------------------- renewals */

static void test_renewals_are_counted_with_the_least_lease_margin(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    const int64_t lease = 300; /* renewed every 100 ms */
    rlock_client *c = connect_client(f, lease, 0, NULL);
    rlock *l = lt_get_lock(c, name);
    rlock_stats s;

    s = stats_of(c);
    assert_int_equal(s.lease_margin_min_ms, -1);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    WAIT_STATS(c, s, s.renewals_sent >= 3 && s.lease_margin_min_ms >= 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(s.renewals_failed, 0);
    assert_true(s.lease_margin_min_ms > 0);
    assert_true(s.lease_margin_min_ms <= lease);
    print_message("%llu renewals, least margin %lld ms of %lld\n",
                  (unsigned long long)s.renewals_sent,
                  (long long)s.lease_margin_min_ms, (long long)lease);
    rlock_free(l);
    rlock_client_free(c);
}

/* A renewal held up by a stalled server comes back with less than a third
 * of its lease left: the least margin says so, and the log warns. The
 * stall starts just after a renewal (the server shows more than 8/9 of the
 * lease left) and lasts 7/9 of the lease: the renewal sent during it comes
 * back with at most 2/9 left, later than a third, yet before the lease ran
 * out. */
static void test_a_renewal_held_up_by_a_stalled_server_is_logged_as_late(
    void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    const int64_t lease = 900; /* renewed every 300 ms */
    rlock_client *c = connect_client(f, lease, 0, &lr);
    rlock *l = lt_get_lock(c, name);
    rlock_stats s;

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    WAIT_STATS(c, s, s.renewals_sent >= 1 && s.lease_margin_min_ms >= 0);
    int64_t until = rt_now_ms() + WITHIN_MS;
    while (rt_cmd_int(&f->redis, "PTTL %s", name) <= lease * 8 / 9) {
        assert_true(rt_now_ms() < until);
        rt_sleep_ms(1);
    }
    rt_redis_pause(&f->redis);
    rt_sleep_ms(lease * 7 / 9);
    rt_redis_resume(&f->redis);
    WAIT_STATS(c, s, s.lease_margin_min_ms < lease / 3);
    assert_true(s.lease_margin_min_ms > 0);
    assert_int_equal(s.lost_expired + s.lost_gone, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
    assert_true(lines_with(&lr, RLOCK_LOG_WARN, name, "came back late") >= 1);
}

/* The server goes away for longer than a lease: renewals fail, and once a
 * whole lease has passed the hold is declared lost, as expired. */
static void test_a_server_gone_for_a_lease_fails_renewals_and_expires_the_hold(
    void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 600, 0, &lr);
    rlock *l = lt_get_lock(c, name);
    rlock_stats s;

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    WAIT_STATS(c, s, s.renewals_sent >= 1);
    rt_redis_stop(&f->redis);
    WAIT_STATS(c, s, s.lost_expired == 1);
    assert_true(s.renewals_failed >= 1);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
    rlock_client_free(c);
    assert_true(lines_with(&lr, RLOCK_LOG_WARN, "renewing", "failed") >= 1);
    assert_int_equal(lines_with(&lr, RLOCK_LOG_WARN, name, "renewals failed"),
                     1);
}

/* ---------------------------------------------------- connections, traffic */

static void test_client_kill_is_counted_as_a_reconnect_and_logged(
    void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, &lr);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(stats_of(c).reconnects, 0);
    assert_true(rt_cmd_int(&f->redis, "CLIENT KILL TYPE normal") >= 1);
    rt_sleep_ms(50); /* idle: the next call checks its connection first */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    rlock_stats s = stats_of(c);
    assert_true(s.reconnects >= 1);
    rlock_free(l);
    rlock_client_free(c);
    assert_true(lines_with(&lr, RLOCK_LOG_INFO, "reconnected", NULL) >= 1);
    assert_int_equal(lines_with(&lr, RLOCK_LOG_INFO, "reconnected", NULL),
                     (int)s.reconnects);
}

static void test_a_killed_subscriber_is_counted_as_a_reconnect(void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    duo d = duo_open(f, name, 0, &lr);
    waiter th;

    hold_with_a_waiter(f, &d, name, &th);
    assert_int_equal(rt_cmd_int(&f->redis, "CLIENT KILL TYPE pubsub"), 1);
    wait_subscribers(&f->redis, name, 1); /* subscribed again */
    assert_int_equal(rlock_unlock(d.hl), RLOCK_OK);
    assert_int_equal(waiter_join(&th), RLOCK_OK);

    rlock_stats s = stats_of(d.w);
    assert_int_equal(s.reconnects, 1);
    duo_close(&d);
    assert_int_equal(lines_with(&lr, RLOCK_LOG_INFO, "subscriber connection",
                                "closed"),
                     1);
    assert_int_equal(
        lines_with(&lr, RLOCK_LOG_INFO, "subscriber reconnected", NULL), 1);
}

static void test_noscript_is_counted_as_a_script_reload_and_logged(
    void **state)
{
    lt_fixture *f = *state;
    log_record lr = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, &lr);
    rlock *l = lt_get_lock(c, name);
    redisReply *rep;

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(stats_of(c).script_reloads, 0);
    rep = rt_cmd(&f->redis, "SCRIPT FLUSH");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_int_equal(rlock_lock(l), RLOCK_OK);   /* lock_acquire again */
    assert_int_equal(rlock_unlock(l), RLOCK_OK); /* lock_release again */

    rlock_stats s = stats_of(c);
    assert_int_equal(s.script_reloads, 2);
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(lines_with(&lr, RLOCK_LOG_INFO, "NOSCRIPT", NULL), 2);
    assert_int_equal(lines_with(&lr, RLOCK_LOG_INFO, "lock_acquire", NULL), 1);
}

static void test_each_reply_counts_one_round_trip(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, NULL);
    rlock *l = lt_get_lock(c, name);

    uint64_t before = stats_of(c).round_trips;
    for (int i = 0; i < 5; i++)
        assert_int_equal(rlock_is_locked(l), 0);
    assert_int_equal(stats_of(c).round_trips - before, 5);
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------------- the snapshot call */

static void test_stats_turned_off_count_nothing(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_stats(cfg, 0), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_stats s = RLOCK_STATS_INIT;
    memset((char *)&s + sizeof(s.size), 0xab, sizeof(s) - sizeof(s.size));
    assert_int_equal(rlock_client_stats(c, &s), RLOCK_ENOTSUP);
    assert_int_equal(s.acquired_immediately, 0);
    assert_int_equal(s.round_trips, 0);
    assert_int_equal(s.wait.count, 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* The struct grows at its end: a caller's smaller struct gets the fields
 * it has, a larger one gets zeros past this library's. */
static void test_a_snapshot_fills_only_the_callers_size(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(f, 0, 0, NULL);
    rlock *l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    rlock_stats small;
    memset(&small, 0xab, sizeof(small));
    small.size = offsetof(rlock_stats, releases) + sizeof(small.releases);
    assert_int_equal(rlock_client_stats(c, &small), RLOCK_OK);
    assert_int_equal(small.size,
                     offsetof(rlock_stats, releases) + sizeof(small.releases));
    assert_int_equal(small.acquired_immediately, 1);
    assert_int_equal(small.releases, 1);
    assert_true(small.unlock_messages == 0xababababababababULL);

    size_t bigger = sizeof(rlock_stats) + 64;
    unsigned char *big = malloc(bigger);
    assert_non_null(big);
    memset(big, 0xab, bigger);
    ((rlock_stats *)big)->size = bigger;
    assert_int_equal(rlock_client_stats(c, (rlock_stats *)big), RLOCK_OK);
    assert_int_equal(((rlock_stats *)big)->size, sizeof(rlock_stats));
    assert_int_equal(((rlock_stats *)big)->releases, 1);
    for (size_t i = sizeof(rlock_stats); i < bigger; i++)
        assert_int_equal(big[i], 0);
    free(big);

    rlock_stats tiny = {.size = 1};
    assert_int_equal(rlock_client_stats(c, &tiny), RLOCK_EINVAL);
    assert_int_equal(rlock_client_stats(c, NULL), RLOCK_EINVAL);
    rlock_stats s = RLOCK_STATS_INIT;
    assert_int_equal(rlock_client_stats(NULL, &s), RLOCK_EINVAL);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    rt_require_redis();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_an_uncontended_lock_counts_an_immediate_acquire_and_a_hold),
        cmocka_unit_test(
            test_reentry_counts_acquires_and_releases_but_one_hold),
        cmocka_unit_test(
            test_waits_of_a_known_minimum_land_in_the_buckets_above_it),
        cmocka_unit_test(test_a_trylock_that_runs_out_counts_a_timeout),
        cmocka_unit_test(test_async_acquires_are_counted_as_blocking_ones_are),
        cmocka_unit_test(
            test_a_lost_unlock_message_found_by_a_recheck_is_counted),
        cmocka_unit_test(test_a_wake_by_message_is_not_a_recheck),
        cmocka_unit_test(
            test_a_raw_del_of_a_held_lock_counts_a_loss_and_logs_why),
        cmocka_unit_test(
            test_a_lock_taken_by_another_owner_counts_a_loss_taken),
        cmocka_unit_test(test_a_loss_found_by_the_unlock_is_counted),
        cmocka_unit_test(
            test_renewals_are_counted_with_the_least_lease_margin),
        cmocka_unit_test(
            test_a_renewal_held_up_by_a_stalled_server_is_logged_as_late),
        cmocka_unit_test(
            test_a_server_gone_for_a_lease_fails_renewals_and_expires_the_hold),
        cmocka_unit_test(
            test_client_kill_is_counted_as_a_reconnect_and_logged),
        cmocka_unit_test(test_a_killed_subscriber_is_counted_as_a_reconnect),
        cmocka_unit_test(
            test_noscript_is_counted_as_a_script_reload_and_logged),
        cmocka_unit_test(test_each_reply_counts_one_round_trip),
        cmocka_unit_test(test_stats_turned_off_count_nothing),
        cmocka_unit_test(test_a_snapshot_fills_only_the_callers_size),
    };
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
