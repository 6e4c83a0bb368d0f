/*
 * test_fault_kill.c: the client's connections are killed from the server
 * side (CLIENT KILL), for the command connections and for the subscriber.
 *
 * What must hold: the client reconnects, resubscribes and
 * retries at once; messages published while it was unsubscribed are lost,
 * so a resubscribed waiter re-tries its acquire; a waiter whose subscriber
 * connection was killed still takes the lock within a second of the
 * holder's unlock, the holder being another process.
 *
 * To kill a command while it is in flight, Redis is first told to hold
 * back every write (CLIENT PAUSE <ms> WRITE: scripts wait, CLIENT KILL
 * does not), the call is made, the test waits until CLIENT LIST shows it
 * blocked, and then kills the client's command connections by ID. A killed
 * paused command never runs. The retry interval is set far longer than the
 * pause, so "retried at once" and "retried after the interval" cannot be
 * confused.
 *
 * Waiters use a 30 s re-check interval and face 30 s leases, so only the
 * unlock message or a resubscription can wake them within the margins.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-kill"

#define SLOW_RECHECK_MS 30000
/* "Within a second" of an unlock, asserted with margin for a loaded
 * 2-core machine. */
#define WAKE_MS 2500
/* The subscriber's retry backs off to 1 s: back on the channel within
 * about that, asserted with margin. */
#define RESUBSCRIBE_MS 3000
/* Writes are held back this long while a command is killed in flight. */
#define PAUSE_MS 1500
/* The retry interval of the in-flight tests: a retry that waited for it
 * could not finish within PAUSE_MS + RETRY_MARGIN_MS. */
#define LONG_INTERVAL_MS 8000
#define RETRY_MARGIN_MS  3000
#define HANG_MS          20000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* ------------------------------------------------------------- helpers */

/* The ids of the command connections client c opened: those of CLIENT LIST
 * TYPE normal that were not in before[0..nbefore). */
static int new_ids(rt_redis *r, const long long *before, int nbefore,
                   long long *out, int max)
{
    long long now[64];
    int n = ft_client_ids(r, "normal", now, 64), k = 0;

    for (int i = 0; i < n; i++)
        if (!ft_id_in(now[i], before, nbefore) && k < max)
            out[k++] = now[i];
    return k;
}

/* CLIENT PAUSE ms WRITE; asserts OK. */
static void pause_writes(rt_redis *r, int ms)
{
    char *ok = rt_cmd_str(r, "CLIENT PAUSE %d WRITE", ms);

    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
}

static void unpause(rt_redis *r)
{
    char *ok = rt_cmd_str(r, "CLIENT UNPAUSE");

    free(ok);
}

/* Resumes writes if a test failed during a pause. */
static int teardown(void **state)
{
    lt_fixture *f = *state;

    unpause(&f->redis);
    return 0;
}

/* --------------------------------------------------------------- tests */

/* A holder in another process; a waiter thread of this process. The
 * waiter's subscriber connection is killed three times while it waits; it
 * must come back each time, subscribed once (not twice), and when the
 * holder unlocks, the waiter takes the lock within a second. */
static void
test_waiter_with_killed_subscriber_takes_lock_at_unlock(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    ft_timing slow = {.recheck_ms = SLOW_RECHECK_MS, .retry_attempts = -1};
    rlock_client *w;
    ft_remote holder;
    ft_remote_report rep;
    static ft_waiter wt;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    ft_remote_start(&holder, f->redis.url, name, 0, 0); /* 30 s watchdog */
    w = ft_connect(f->redis.url, slow);
    l = lt_get_lock(w, name);
    ft_waiter_start(&wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);

    for (int round = 0; round < 3; round++) {
        int64_t t_kill;
        long long ids[8];

        rt_sleep_ms(200);
        /* the only pub/sub connection on this server is the waiter's */
        assert_int_equal(ft_client_ids(&f->redis, "pubsub", ids, 8), 1);
        assert_int_equal(ft_kill_ids(&f->redis, ids, 1), 1);
        t_kill = rt_now_ms();
        assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
        print_message("round %d: resubscribed in %lld ms\n", round,
                      (long long)(rt_now_ms() - t_kill));
        assert_true(rt_now_ms() - t_kill < RESUBSCRIBE_MS);
    }
    rt_sleep_ms(300);
    assert_int_equal(rt_numsub(&f->redis, channel), 1);
    assert_int_equal(atomic_load(&wt.done), 0);

    rep = ft_remote_unlock(&holder);
    assert_int_equal(rep.rc, RLOCK_OK);
    if (!ft_waiters_wait(&wt, 1, HANG_MS))
        fail_msg("the waiter did not take the lock in %d ms", HANG_MS);
    print_message("waiter took it %lld ms after the holder's unlock\n",
                  (long long)(wt.acquired_ms - rep.before_ms));
    assert_int_equal(wt.rc, RLOCK_OK);
    assert_int_equal(wt.unlock_rc, RLOCK_OK);
    assert_true(wt.acquired_ms - rep.before_ms < WAKE_MS);
    ft_remote_quit(&holder);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 3000), 0);
    rlock_free(l);
    rlock_client_free(w);
}

/* The unlock message goes out while the waiter's subscriber is down: one
 * transaction kills the subscriber connection, deletes the holder's lock
 * and publishes "0" to nobody. The holder is another process (its lease is
 * 30 s). The waiter must re-try once it is subscribed again, and take the
 * lock at once instead of sleeping through the lease. */
static void test_message_lost_while_unsubscribed_is_made_up_for(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    ft_timing slow = {.recheck_ms = SLOW_RECHECK_MS, .retry_attempts = -1};
    struct timeval tv = {5, 0};
    rlock_client *w;
    ft_remote holder;
    ft_remote_report rep;
    static ft_waiter wt;
    redisContext *raw;
    redisReply *r;
    int64_t t_exec;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    ft_remote_start(&holder, f->redis.url, name, 30000, 0);
    w = ft_connect(f->redis.url, slow);
    l = lt_get_lock(w, name);
    ft_waiter_start(&wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);

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
        assert_int_equal(redisGetReply(raw, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    assert_int_equal(redisGetReply(raw, (void **)&r), REDIS_OK);
    t_exec = rt_now_ms();
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_int_equal(r->element[0]->integer, 1); /* the waiter's */
    assert_int_equal(r->element[1]->integer, 1); /* the lock */
    assert_int_equal(r->element[2]->integer, 0); /* heard by nobody */
    freeReplyObject(r);
    redisFree(raw);

    if (!ft_waiters_wait(&wt, 1, HANG_MS))
        fail_msg("the waiter slept through a lost unlock message");
    print_message("waiter took it %lld ms after the unheard release\n",
                  (long long)(wt.acquired_ms - t_exec));
    assert_int_equal(wt.rc, RLOCK_OK);
    assert_int_equal(wt.unlock_rc, RLOCK_OK);
    assert_true(wt.acquired_ms - t_exec < RESUBSCRIBE_MS);
    /* the old holder's hold is gone */
    rep = ft_remote_unlock(&holder);
    assert_int_equal(rep.rc, RLOCK_ELOST);
    ft_remote_quit(&holder);
    rlock_free(l);
    rlock_client_free(w);
}

/* Starts a holder thread whose lock call (rlock_lock, or a trylock with
 * lease_ms > 0 and no wait) is then made; unlike ft_holder_start() it does
 * not wait for the call to return. */
static void holder_begin(ft_holder *h, rlock *l, int64_t lease_ms)
{
    memset(h, 0, sizeof(*h));
    h->l = l;
    h->times = 1;
    h->lease_ms = lease_ms;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    assert_int_equal(pthread_create(&h->thread, NULL, ft_holder_main, h), 0);
}

/* Waits until the holder's lock call returned; fails the test on a hang. */
static void holder_wait_locked(ft_holder *h, int64_t since)
{
    for (;;) {
        pthread_mutex_lock(&h->mu);
        int st = h->state;
        pthread_mutex_unlock(&h->mu);
        if (st >= 1)
            return;
        if (rt_now_ms() - since > HANG_MS)
            fail_msg("the acquire did not return in %d ms", HANG_MS);
        rt_sleep_ms(2);
    }
}

/* Opens the client's command connections with a few calls on l, and
 * returns their ids: those of CLIENT LIST that were not in before. */
static int warm_and_list(rt_redis *r, rlock *l, const long long *before,
                         int nbefore, long long *ids)
{
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rlock_trylock(l, 0, 30000), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    return new_ids(r, before, nbefore, ids, 8);
}

/* Runs an acquire (rlock_lock) while writes are held back, kills the
 * connection it is in flight on (all == 0) or every command connection of
 * the client (all == 1), and checks that it is retried at once and takes
 * the lock exactly once. */
static void acquire_killed_in_flight(lt_fixture *f, const char *name, int all)
{
    ft_timing t = {.command_ms = 5000,
                   .retry_interval_ms = LONG_INTERVAL_MS,
                   .retry_attempts = 3};
    long long before[64], ids[8], blocked;
    int nbefore, nids;
    rlock_client *c;
    /* on the heap and left there if the test fails while it still runs */
    ft_holder *h = calloc(1, sizeof(*h));
    int64_t t_start, elapsed;
    char field[200];
    rlock *l;

    assert_non_null(h);
    nbefore = ft_client_ids(&f->redis, "normal", before, 64);
    c = ft_connect(f->redis.url, t);
    l = lt_get_lock(c, name);
    nids = warm_and_list(&f->redis, l, before, nbefore, ids);
    assert_true(nids >= 1);

    pause_writes(&f->redis, PAUSE_MS);
    t_start = rt_now_ms();
    holder_begin(h, l, 0);
    blocked = ft_wait_blocked(&f->redis, "evalsha", PAUSE_MS / 2);
    assert_true(ft_id_in(blocked, ids, nids));
    if (all)
        assert_int_equal(ft_kill_ids(&f->redis, ids, nids), nids);
    else
        assert_int_equal(ft_kill_ids(&f->redis, &blocked, 1), 1);
    holder_wait_locked(h, t_start);
    elapsed = rt_now_ms() - t_start;
    print_message("acquire killed in flight (%s): %s after %lld ms (writes "
                  "held back for %d ms)\n",
                  all ? "every command connection" : "its connection",
                  rlock_err_name(h->lock_rc), (long long)elapsed, PAUSE_MS);
    assert_int_equal(h->lock_rc, RLOCK_OK);
    /* held exactly once, by that thread */
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)h->tid);
    lt_assert_single_field(&f->redis, name, field, "1");
    ft_holder_finish(h, 2, 0);
    assert_int_equal(h->is_held_rc, 1);
    assert_int_equal(h->unlock_rc[0], RLOCK_OK);
    assert_int_equal(h->unlock_rc[1], RLOCK_ENOTOWNER);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    free(h);
    rlock_free(l);
    rlock_client_free(c);
    /* at once: not after the retry interval */
    assert_true(elapsed < PAUSE_MS + RETRY_MARGIN_MS);
}

/* An acquire is in flight (held back by CLIENT PAUSE WRITE) when its
 * command connection is killed: it is retried at once, not after the (8 s)
 * retry interval, and takes the lock exactly once. */
static void test_acquire_killed_in_flight_is_retried_at_once(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    acquire_killed_in_flight(*state, name, 0);
}

/* The same with every command connection of the client killed at once
 * (CLIENT KILL TYPE normal would do this), so that whatever the client
 * sends next may also meet a dying connection. */
static void
test_acquire_with_all_connections_killed_is_retried_at_once(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    acquire_killed_in_flight(*state, name, 1);
}

/* An unlock is in flight (held back by CLIENT PAUSE WRITE) when its
 * command connection is killed: it is retried at once on a new connection,
 * not after the (8 s) retry interval; the lock is released once and one
 * unlock message is published. */
static void test_unlock_killed_in_flight_is_retried_at_once(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    ft_timing t = {.command_ms = 5000,
                   .retry_interval_ms = LONG_INTERVAL_MS,
                   .retry_attempts = 3};
    long long before[64], ids[8], blocked;
    int nbefore, nids;
    rlock_client *c;
    static ft_holder h;
    rt_sub *sub;
    int64_t elapsed;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    nbefore = ft_client_ids(&f->redis, "normal", before, 64);
    c = ft_connect(f->redis.url, t);
    l = lt_get_lock(c, name);
    nids = warm_and_list(&f->redis, l, before, nbefore, ids);
    assert_true(nids >= 1);
    ft_holder_start(&h, l, 1, 60000);
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);

    pause_writes(&f->redis, PAUSE_MS);
    ft_holder_release(&h, 1, 0);
    blocked = ft_wait_blocked(&f->redis, "evalsha", PAUSE_MS / 2);
    assert_true(ft_id_in(blocked, ids, nids));
    assert_int_equal(ft_kill_ids(&f->redis, &blocked, 1), 1);
    ft_holder_join(&h, HANG_MS);
    elapsed = h.unlocked_ms - h.unlock_started_ms;
    print_message("unlock killed in flight: %s after %lld ms (writes held "
                  "back for %d ms)\n",
                  rlock_err_name(h.unlock_rc[0]), (long long)elapsed, PAUSE_MS);
    assert_int_equal(h.is_held_rc, 1);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    /* released once: one message */
    assert_int_equal(rt_sub_wait(sub, 1, 2000), 1);
    rt_sleep_ms(300);
    assert_int_equal(rt_sub_count(sub), 1);
    assert_string_equal(rt_sub_message(sub, 0), "0");
    rt_sub_stop(sub);
    rlock_free(l);
    rlock_client_free(c);
    /* at once: not after the retry interval */
    assert_true(elapsed < PAUSE_MS + RETRY_MARGIN_MS);
}

/* Every connection of a client is killed (command and subscriber) while
 * one of its threads holds a lock and another waits for it. The holder's
 * unlock reconnects at once (the retry interval is 8 s, so a call that
 * first met a dead connection and waited to retry would be far too late),
 * the waiter resubscribes, and the hand-over through the unlock message
 * still happens within a second. */
static void test_all_connections_killed_while_waiting(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    ft_timing t = {.recheck_ms = SLOW_RECHECK_MS,
                   .retry_interval_ms = LONG_INTERVAL_MS,
                   .retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    static ft_waiter wt;
    int64_t t_unlock;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(l, 0, 30000), RLOCK_OK);
    ft_waiter_start(&wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);

    assert_true(rt_cmd_int(&f->redis, "CLIENT KILL TYPE normal") >= 1);
    assert_true(rt_cmd_int(&f->redis, "CLIENT KILL TYPE pubsub") >= 1);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, RESUBSCRIBE_MS), 1);
    rt_sleep_ms(300);
    assert_int_equal(atomic_load(&wt.done), 0);

    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    if (!ft_waiters_wait(&wt, 1, HANG_MS))
        fail_msg("the waiter did not take the lock in %d ms", HANG_MS);
    print_message("hand-over after the kill: %lld ms\n",
                  (long long)(wt.acquired_ms - t_unlock));
    assert_int_equal(wt.rc, RLOCK_OK);
    assert_int_equal(wt.unlock_rc, RLOCK_OK);
    assert_true(wt.acquired_ms - t_unlock < WAKE_MS);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 3000), 0);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_waiter_with_killed_subscriber_takes_lock_at_unlock, teardown),
        cmocka_unit_test_teardown(
            test_message_lost_while_unsubscribed_is_made_up_for, teardown),
        cmocka_unit_test_teardown(
            test_acquire_killed_in_flight_is_retried_at_once, teardown),
        cmocka_unit_test_teardown(
            test_acquire_with_all_connections_killed_is_retried_at_once,
            teardown),
        cmocka_unit_test_teardown(
            test_unlock_killed_in_flight_is_retried_at_once, teardown),
        cmocka_unit_test_teardown(test_all_connections_killed_while_waiting,
                                  teardown),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
