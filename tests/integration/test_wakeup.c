/*
 * test_wakeup.c: how waiters wake up (REDISSON-PROTOCOL.md section 1.6).
 *
 * A waiter sleeps until an unlock message arrives on the lock's channel, or
 * until the holder's lease or the re-check interval runs out. To prove that
 * the message is what woke it, the clients here use a re-check interval far
 * longer than the margins asserted, and holders take long leases: a waiter
 * that missed the message would sleep for tens of seconds.
 *
 * Two rlock_client objects in one process behave as two processes (two
 * uuids, two subscriber connections).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "wakeup"

/* Re-check interval of the "pub/sub only" clients: longer than any margin
 * below, so only the unlock message can wake a waiter in time. */
#define SLOW_RECHECK_MS 30000
/* Margin for a wake-up through pub/sub (measured: a few ms on loopback). */
#define WAKE_MARGIN_MS 3000

/* ------------------------------------------------------------- helpers */

/* Connects a client with the given re-check interval (0: default). */
static rlock_client *connect_client(lt_fixture *f, int64_t recheck_ms)
{
    return lt_connect(f->redis.url,
                      recheck_ms > 0 ? rlock_config_set_recheck_interval : NULL,
                      recheck_ms);
}

/* The re-check interval ms, and every waiter on the lock's channel (the
 * queue off), for the tests of how a client shares that channel between
 * its waiters; with the queue only its head listens there (test_herd). */
static int set_recheck_unqueued(rlock_config *cfg, int64_t ms)
{
    int rc = rlock_config_set_recheck_interval(cfg, ms);
    return rc != 0 ? rc : rlock_config_set_lock_queue(cfg, 0);
}

/* A thread that takes a lock (lock() or trylock(wait, lease)), notes when,
 * and gives it back. */
typedef struct waiter {
    pthread_t thread;
    rlock *l;
    int use_trylock;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t hold_ms; /* how long to keep it */
    int rc;
    int unlock_rc;
    int64_t started_ms;
    int64_t acquired_ms;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;

    w->started_ms = rt_now_ms();
    w->rc = w->use_trylock ? rlock_trylock(w->l, w->wait_ms, w->lease_ms)
                           : rlock_lock(w->l);
    w->acquired_ms = rt_now_ms();
    if (w->rc == RLOCK_OK) {
        if (w->hold_ms > 0)
            rt_sleep_ms(w->hold_ms);
        w->unlock_rc = rlock_unlock(w->l);
    }
    return NULL;
}

static void waiter_start(waiter *w, rlock *l)
{
    w->l = l;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void waiter_join(waiter *w)
{
    assert_int_equal(pthread_join(w->thread, NULL), 0);
}

/* --------------------------------------------------------------- tests */

/* Holder in the main thread with a 20 s lease, waiter in another thread of
 * the same client; the unlock must wake the waiter at once. */
static void test_waiter_is_woken_by_unlock_message(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    rlock *l;
    waiter w = {0};
    int64_t t_unlock;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(l, 0, 20000), RLOCK_OK);
    waiter_start(&w, l);
    /* the waiter has subscribed once the channel has a subscriber */
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    waiter_join(&w);

    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms >= t_unlock);
    print_message("woken %lld ms after unlock\n",
                  (long long)(w.acquired_ms - t_unlock));
    assert_true(w.acquired_ms - t_unlock < WAKE_MARGIN_MS);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_waiter_in_other_client_is_woken_by_unlock(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *holder = connect_client(f, SLOW_RECHECK_MS);
    rlock_client *other = connect_client(f, SLOW_RECHECK_MS);
    rlock *hl, *wl;
    waiter w = {0};
    int64_t t_unlock;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    hl = lt_get_lock(holder, name);
    wl = lt_get_lock(other, name);
    assert_int_equal(rlock_trylock(hl, 0, 20000), RLOCK_OK);
    waiter_start(&w, wl);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    waiter_join(&w);

    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms >= t_unlock);
    assert_true(w.acquired_ms - t_unlock < WAKE_MARGIN_MS);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(holder);
    rlock_client_free(other);
}

/* A raw DEL publishes nothing: the waiter must find out on its own within
 * the re-check interval, long before the 60 s lease it was told about. */
static void test_waiter_recovers_from_raw_del_by_recheck(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = connect_client(f, 500);
    rlock *l;
    waiter w = {0};
    int64_t t_del;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
    waiter_start(&w, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);
    t_del = rt_now_ms();
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    waiter_join(&w);

    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    print_message("acquired %lld ms after the raw DEL\n",
                  (long long)(w.acquired_ms - t_del));
    assert_true(w.acquired_ms - t_del < 5000);
    /* the original holder's hold was taken away behind its back */
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
    rlock_client_free(c);
}

/* A lease that simply runs out publishes nothing: the waiter must wake when
 * the TTL it was told about has passed, not at the 30 s re-check. */
static void test_waiter_takes_lock_when_lease_expires(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *holder = connect_client(f, SLOW_RECHECK_MS);
    rlock_client *other = connect_client(f, SLOW_RECHECK_MS);
    rlock *hl, *wl;
    waiter w = {0};
    int64_t t_lock;

    LT_TEST_NAME(name);
    hl = lt_get_lock(holder, name);
    wl = lt_get_lock(other, name);
    t_lock = rt_now_ms();
    assert_int_equal(rlock_trylock(hl, 0, 1000), RLOCK_OK);
    waiter_start(&w, wl);
    waiter_join(&w);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    print_message("acquired %lld ms after a 1000 ms lease was taken\n",
                  (long long)(w.acquired_ms - t_lock));
    assert_true(w.acquired_ms - t_lock >= 900);
    assert_true(w.acquired_ms - t_lock < 1000 + WAKE_MARGIN_MS);
    assert_int_equal(rlock_unlock(hl), RLOCK_ELOST);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(holder);
    rlock_client_free(other);
}

static void test_trylock_budget_on_held_lock_times_out(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *holder = connect_client(f, 0);
    rlock_client *other = connect_client(f, 400);
    const int64_t budgets[] = {300, 1500};
    rlock *hl, *wl;

    LT_TEST_NAME(name);
    hl = lt_get_lock(holder, name);
    wl = lt_get_lock(other, name);
    assert_int_equal(rlock_trylock(hl, 0, 30000), RLOCK_OK);
    for (size_t i = 0; i < sizeof(budgets) / sizeof(*budgets); i++) {
        int64_t t0 = rt_now_ms(), elapsed;

        assert_int_equal(rlock_trylock(wl, budgets[i], RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        elapsed = rt_now_ms() - t0;
        print_message("budget %lld ms: returned after %lld ms\n",
                      (long long)budgets[i], (long long)elapsed);
        assert_true(elapsed >= budgets[i] - 50);
        assert_true(elapsed <= budgets[i] + 2000);
    }
    assert_int_equal(rlock_hold_count(wl), 0);
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(holder);
    rlock_client_free(other);
}

static void test_trylock_budget_acquires_when_released_in_time(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *holder = connect_client(f, SLOW_RECHECK_MS);
    rlock_client *other = connect_client(f, SLOW_RECHECK_MS);
    rlock *hl, *wl;
    waiter w = {
        .use_trylock = 1, .wait_ms = 10000, .lease_ms = RLOCK_LEASE_WATCHDOG};
    int64_t t_unlock;

    LT_TEST_NAME(name);
    hl = lt_get_lock(holder, name);
    wl = lt_get_lock(other, name);
    assert_int_equal(rlock_trylock(hl, 0, 20000), RLOCK_OK);
    waiter_start(&w, wl);
    rt_sleep_ms(300);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    waiter_join(&w);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms - t_unlock < WAKE_MARGIN_MS);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(holder);
    rlock_client_free(other);
}

/* The subscriber connection is killed while a waiter waits: the client
 * subscribes again, and the next unlock still wakes the waiter at once. */
static void test_waiter_survives_subscriber_connection_kill(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    rlock *l;
    waiter w = {0};
    int64_t t_unlock;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(l, 0, 20000), RLOCK_OK);
    waiter_start(&w, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    assert_true(rt_cmd_int(&f->redis, "CLIENT KILL TYPE pubsub") >= 1);
    /* resubscribed within about a second (the retry backs off to 1 s) */
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(100);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    waiter_join(&w);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms - t_unlock < WAKE_MARGIN_MS);
    rlock_free(l);
    rlock_client_free(c);
}

/* The holder (a foreign client, written by hand) releases while our
 * subscriber is down, so the unlock message is lost: one transaction kills
 * the subscriber connection, deletes the lock and publishes "0" to nobody.
 * Resubscribing must make the waiter try again rather than sleep through
 * the 20 s lease it was told about. */
static void test_unlock_during_subscriber_outage_wakes_waiter(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    struct timeval tv = {5, 0};
    redisContext *raw;
    redisReply *rep;
    rlock *l;
    waiter w = {0};
    int64_t t_release;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:1"), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 20000", name), 1);
    l = lt_get_lock(c, name);
    waiter_start(&w, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(100);

    raw = redisConnectWithTimeout("127.0.0.1", f->redis.port, tv);
    assert_non_null(raw);
    assert_int_equal(raw->err, 0);
    redisSetTimeout(raw, tv);
    redisAppendCommand(raw, "MULTI");
    redisAppendCommand(raw, "CLIENT KILL TYPE pubsub");
    redisAppendCommand(raw, "DEL %s", name);
    redisAppendCommand(raw, "PUBLISH %s 0", channel);
    redisAppendCommand(raw, "EXEC");
    for (int i = 0; i < 4; i++) {
        assert_int_equal(redisGetReply(raw, (void **)&rep), REDIS_OK);
        freeReplyObject(rep);
    }
    assert_int_equal(redisGetReply(raw, (void **)&rep), REDIS_OK);
    t_release = rt_now_ms();
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 3);
    assert_true(rep->element[0]->integer >= 1);    /* killed */
    assert_int_equal(rep->element[1]->integer, 1); /* deleted */
    assert_int_equal(rep->element[2]->integer, 0); /* heard by nobody */
    freeReplyObject(rep);
    redisFree(raw);

    waiter_join(&w);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    print_message("woken %lld ms after a release nobody heard\n",
                  (long long)(w.acquired_ms - t_release));
    assert_true(w.acquired_ms - t_release < WAKE_MARGIN_MS);
    rlock_free(l);
    rlock_client_free(c);
}

/* Two clients take turns 50 times each; every hand-over goes through an
 * unlock message (re-check 30 s), so no single lock() may take long. */
typedef struct contender {
    pthread_t thread;
    rlock *l;
    int iterations;
    atomic_int *inside;
    atomic_int *overlaps;
    int errors;
    int waited;          /* lock() calls that had to wait > 10 ms */
    int64_t max_wait_ms; /* longest lock() */
} contender;

static void *contender_main(void *p)
{
    contender *k = p;

    for (int i = 0; i < k->iterations; i++) {
        int64_t t0 = rt_now_ms(), waited;

        if (rlock_lock(k->l) != RLOCK_OK) {
            k->errors++;
            break;
        }
        waited = rt_now_ms() - t0;
        if (waited > k->max_wait_ms)
            k->max_wait_ms = waited;
        if (waited > 10)
            k->waited++;
        if (atomic_fetch_add(k->inside, 1) != 0)
            atomic_fetch_add(k->overlaps, 1);
        rt_sleep_ms(20);
        atomic_fetch_sub(k->inside, 1);
        if (rlock_unlock(k->l) != RLOCK_OK)
            k->errors++;
        rt_sleep_ms(1);
    }
    return NULL;
}

static void test_two_clients_hand_over_through_pubsub(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *a = connect_client(f, SLOW_RECHECK_MS);
    rlock_client *b = connect_client(f, SLOW_RECHECK_MS);
    atomic_int inside, overlaps;
    contender k[2] = {{0}, {0}};
    rt_sub *s;
    int64_t t0;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    atomic_init(&inside, 0);
    atomic_init(&overlaps, 0);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    k[0].l = lt_get_lock(a, name);
    k[1].l = lt_get_lock(b, name);
    t0 = rt_now_ms();
    for (int i = 0; i < 2; i++) {
        k[i].iterations = 50;
        k[i].inside = &inside;
        k[i].overlaps = &overlaps;
        assert_int_equal(
            pthread_create(&k[i].thread, NULL, contender_main, &k[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(k[i].thread, NULL), 0);
    print_message("100 turns in %lld ms; waits %d + %d, longest %lld ms\n",
                  (long long)(rt_now_ms() - t0), k[0].waited, k[1].waited,
                  (long long)(k[0].max_wait_ms > k[1].max_wait_ms
                                  ? k[0].max_wait_ms
                                  : k[1].max_wait_ms));

    assert_int_equal(k[0].errors + k[1].errors, 0);
    assert_int_equal(atomic_load(&overlaps), 0);
    /* there was real contention, and every wait ended by message */
    assert_true(k[0].waited + k[1].waited >= 10);
    assert_true(k[0].max_wait_ms < WAKE_MARGIN_MS);
    assert_true(k[1].max_wait_ms < WAKE_MARGIN_MS);
    /* one "0" per final unlock, nothing else */
    assert_int_equal(rt_cmd_int(&f->redis, "PUBLISH %s %s", channel, "end"), 1);
    assert_int_equal(rt_sub_wait(s, 101, 5000), 101);
    for (int i = 0; i < 100; i++)
        assert_string_equal(rt_sub_message(s, i), "0");
    assert_string_equal(rt_sub_message(s, 100), "end");
    rt_sub_stop(s);
    rlock_free(k[0].l);
    rlock_free(k[1].l);
    rlock_client_free(a);
    rlock_client_free(b);
}

/* Waiters come and go 20 times in a row, so a new waiter often joins the
 * channel while the previous one is still leaving it. */
static void test_waiters_are_woken_round_after_round(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    rlock *l;
    int64_t worst = 0;

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    for (int round = 0; round < 20; round++) {
        waiter w = {0};
        int64_t t_unlock;

        assert_int_equal(rlock_trylock(l, 0, 20000), RLOCK_OK);
        waiter_start(&w, l);
        rt_sleep_ms(round % 2 == 0 ? 5 : 60);
        t_unlock = rt_now_ms();
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        waiter_join(&w);
        assert_int_equal(w.rc, RLOCK_OK);
        assert_int_equal(w.unlock_rc, RLOCK_OK);
        if (w.acquired_ms - t_unlock > worst)
            worst = w.acquired_ms - t_unlock;
        assert_true(w.acquired_ms - t_unlock < WAKE_MARGIN_MS);
    }
    print_message("worst wake-up over 20 rounds: %lld ms\n", (long long)worst);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_subscription_released_after_waiters_finish(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c =
        lt_connect(f->redis.url, set_recheck_unqueued, SLOW_RECHECK_MS);
    rlock_client *other =
        lt_connect(f->redis.url, set_recheck_unqueued, SLOW_RECHECK_MS);
    waiter w[4];
    rlock *l, *ol;
    int64_t t_unlock;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    memset(w, 0, sizeof(w));
    l = lt_get_lock(c, name);
    ol = lt_get_lock(other, name);
    assert_int_equal(rt_numsub(&f->redis, channel), 0);
    assert_int_equal(rlock_trylock(l, 0, 20000), RLOCK_OK);
    /* three waiters in the holder's client, one in another client */
    for (int i = 0; i < 3; i++)
        waiter_start(&w[i], l);
    waiter_start(&w[3], ol);
    /* one subscriber connection per client */
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 2, 5000), 2);
    rt_sleep_ms(100);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* each hand-over, within a client and across, goes by message */
    for (int i = 0; i < 4; i++) {
        waiter_join(&w[i]);
        assert_int_equal(w[i].rc, RLOCK_OK);
        assert_int_equal(w[i].unlock_rc, RLOCK_OK);
        assert_true(w[i].acquired_ms - t_unlock < WAKE_MARGIN_MS);
    }
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 2000), 0);
    rlock_free(l);
    rlock_free(ol);
    rlock_client_free(c);
    rlock_client_free(other);
}

static void test_subscription_released_after_trylock_times_out(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    rlock_client *other = connect_client(f, SLOW_RECHECK_MS);
    rlock *l, *ol;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    ol = lt_get_lock(other, name);
    assert_int_equal(rlock_trylock(l, 0, 20000), RLOCK_OK);
    assert_int_equal(rlock_trylock(ol, 500, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 2000), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_free(ol);
    rlock_client_free(c);
    rlock_client_free(other);
}

/* Many short trylock waits on one held lock from a few threads of one
 * client: the local waiter count goes 1 -> 0 -> 1 thousands of times, so
 * the last waiter's "leave the channel" and the next first waiter's "join
 * it" race each other. However they interleave, once every waiter is done
 * the subscription must be released. */
typedef struct short_waiter {
    pthread_t thread;
    rlock *l;
    int unexpected; /* results other than RLOCK_ETIMEDOUT */
} short_waiter;

static void *short_waiter_main(void *p)
{
    short_waiter *w = p;

    for (int i = 0; i < 5000; i++) {
        if (rlock_trylock(w->l, 1, RLOCK_LEASE_WATCHDOG) != RLOCK_ETIMEDOUT)
            w->unexpected++;
    }
    return NULL;
}

static void test_subscription_released_after_many_short_waits(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *holder = connect_client(f, 0);
    rlock_client *c = connect_client(f, SLOW_RECHECK_MS);
    short_waiter w[4];
    rlock *hl, *l;
    long long left;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    memset(w, 0, sizeof(w));
    hl = lt_get_lock(holder, name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(hl, 0, 120000), RLOCK_OK);
    for (int i = 0; i < 4; i++) {
        w[i].l = l;
        assert_int_equal(
            pthread_create(&w[i].thread, NULL, short_waiter_main, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
        assert_int_equal(w[i].unexpected, 0);
    }
    left = rt_wait_numsub(&f->redis, channel, 0, 2000);
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    rlock_free(hl);
    rlock_free(l);
    rlock_client_free(holder);
    rlock_client_free(c);
    if (left != 0)
        fail_msg("channel still has %lld subscriber(s) after every waiter "
                 "left (a leave/join race lost the last leave)",
                 left);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiter_is_woken_by_unlock_message),
        cmocka_unit_test(test_waiter_in_other_client_is_woken_by_unlock),
        cmocka_unit_test(test_waiter_recovers_from_raw_del_by_recheck),
        cmocka_unit_test(test_waiter_takes_lock_when_lease_expires),
        cmocka_unit_test(test_trylock_budget_on_held_lock_times_out),
        cmocka_unit_test(test_trylock_budget_acquires_when_released_in_time),
        cmocka_unit_test(test_waiter_survives_subscriber_connection_kill),
        cmocka_unit_test(test_unlock_during_subscriber_outage_wakes_waiter),
        cmocka_unit_test(test_two_clients_hand_over_through_pubsub),
        cmocka_unit_test(test_waiters_are_woken_round_after_round),
        cmocka_unit_test(test_subscription_released_after_waiters_finish),
        cmocka_unit_test(test_subscription_released_after_trylock_times_out),
        cmocka_unit_test(test_subscription_released_after_many_short_waits),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
