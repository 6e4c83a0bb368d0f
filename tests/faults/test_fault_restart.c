/*
 * test_fault_restart.c: Redis is restarted (SHUTDOWN NOSAVE, then started
 * again on the same port with an empty data set) while locks are held and
 * waiters wait.
 *
 * What must hold: holders are told their lock was lost within one
 * renewal period (lost-lock callbacks with RLOCK_LOST_GONE, unlock answers
 * RLOCK_ELOST); waiters resubscribe and acquire; nothing crashes or hangs;
 * the same client object keeps working afterwards.
 *
 * Clients that must prove "the unlock message woke it" use a 30 s re-check
 * interval and face 30 s leases, so a waiter that missed its resubscription
 * would sleep far past every margin below. Calls that could hang run on
 * helper threads with deadlines.
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

#define LT_SUITE "faults-restart"

/* The holder's watchdog: lease 3 s, renewed every second. */
#define WATCHDOG_MS 3000
#define PERIOD_MS   (WATCHDOG_MS / 3)
/* "Within one renewal period" is asserted as < PERIOD_MS + this, for a
 * loaded 2-core machine (the notifier thread, the reconnect and the restart
 * itself all take a little time). */
#define LOST_MARGIN_MS 1500
/* Re-check interval of "pub/sub only" waiters: longer than any margin. */
#define SLOW_RECHECK_MS 30000
/* A waiter must be back on its channel within about a second of Redis
 * returning (the subscriber's retry backs off to 1 s); asserted as < 5 s,
 * far below the 30 s lease and re-check. */
#define RESUBSCRIBE_MS 5000
/* A wake-up through the unlock message ("within a second"), with margin. */
#define WAKE_MS 2500
/* Nothing may hang: every helper thread must be done within this. */
#define HANG_MS 20000

/* ------------------------------------------------------------- helpers */

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* SHUTDOWN NOSAVE, then the same port again with an empty data set.
 * Returns the monotonic time at which the new server answered. */
static int64_t restart_redis(rt_redis *r)
{
    int64_t t0 = rt_now_ms(), t_up;
    redisReply *rep = rt_cmd(r, "SHUTDOWN NOSAVE");

    /* the connection closes without a reply when the shutdown works */
    if (rep != NULL)
        freeReplyObject(rep);
    assert_int_equal(rt_redis_restart(r), 0);
    t_up = rt_now_ms();
    print_message("restart took %lld ms\n", (long long)(t_up - t0));
    return t_up;
}

/* --------------------------------------------------------------- tests */

/* Two holds (one of them nested) in two threads of one client, renewed by
 * the watchdog. After the restart both keys are gone: each hold is reported
 * once per callback, with RLOCK_LOST_GONE and its owner's thread id, within
 * a renewal period of Redis being back; unlock answers RLOCK_ELOST once and
 * then RLOCK_ENOTOWNER (local state cleared). */
static void test_restart_reports_held_locks_lost_within_a_period(void **state)
{
    lt_fixture *f = *state;
    char base[128], name_a[160], name_b[160];
    ft_timing t = {.watchdog_ms = WATCHDOG_MS,
                   .command_ms = 1000,
                   .retry_interval_ms = 100,
                   .retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    ft_lost_log log;
    ft_lost_event ev_a = {0}, ev_b = {0};
    static ft_holder hb;
    int64_t t_up;
    rlock *la, *lb;

    LT_TEST_NAME(base);
    snprintf(name_a, sizeof(name_a), "%s:a", base);
    snprintf(name_b, sizeof(name_b), "%s:b", base);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    la = lt_get_lock(c, name_a);
    lb = lt_get_lock(c, name_b);
    assert_int_equal(rlock_on_lost(la, ft_on_lock_lost, &log), RLOCK_OK);
    assert_int_equal(rlock_on_lost(lb, ft_on_lock_lost, &log), RLOCK_OK);

    assert_int_equal(rlock_lock(la), RLOCK_OK);
    ft_holder_start(&hb, lb, 2, 0); /* nested: one hold, count 2 */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name_b), 1);
    rt_sleep_ms(PERIOD_MS + 200); /* at least one renewal went through */
    assert_int_equal(ft_lost_count(&log, 0, NULL), 0);

    t_up = restart_redis(&f->redis);

    /* wait far longer than the bound, so "late" and "never" differ */
    assert_true(ft_lost_wait(&log, 'L', name_a, HANG_MS, &ev_a));
    assert_true(ft_lost_wait(&log, 'L', name_b, HANG_MS, &ev_b));
    print_message("lost reported %lld ms and %lld ms after Redis was back\n",
                  (long long)(ev_a.at_ms - t_up),
                  (long long)(ev_b.at_ms - t_up));
    assert_int_equal(ev_a.reason, RLOCK_LOST_GONE);
    assert_int_equal(ev_b.reason, RLOCK_LOST_GONE);
    assert_true(ev_a.owner == rlock_thread_id());
    assert_true(ev_b.owner == hb.tid);
    assert_true(ev_a.at_ms - t_up < PERIOD_MS + LOST_MARGIN_MS);
    assert_true(ev_b.at_ms - t_up < PERIOD_MS + LOST_MARGIN_MS);
    /* the client-wide callback too */
    assert_true(ft_lost_wait(&log, 'C', name_a, HANG_MS, NULL));
    assert_true(ft_lost_wait(&log, 'C', name_b, HANG_MS, NULL));

    /* the owners see it at once */
    assert_int_equal(rlock_is_held_by_me(la), 0);
    assert_int_equal(rlock_unlock(la), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(la), RLOCK_ENOTOWNER);
    ft_holder_finish(&hb, 3, 0);
    assert_int_equal(hb.is_held_rc, 0);
    assert_int_equal(hb.unlock_rc[0], RLOCK_ELOST);
    assert_int_equal(hb.unlock_rc[1], RLOCK_ENOTOWNER);
    assert_int_equal(hb.unlock_rc[2], RLOCK_ENOTOWNER);

    /* once per hold: two more periods bring no repeat */
    rt_sleep_ms(2 * PERIOD_MS);
    assert_int_equal(ft_lost_count(&log, 'L', name_a), 1);
    assert_int_equal(ft_lost_count(&log, 'C', name_a), 1);
    assert_int_equal(ft_lost_count(&log, 'L', name_b), 1);
    assert_int_equal(ft_lost_count(&log, 'C', name_b), 1);
    /* and nothing was written back to the new server */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name_a), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name_b), 0);

    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

/* A holder client keeps a lock with a 30 s lease; two threads of another
 * client (30 s re-check) wait for it. The restart wipes the lock and drops
 * the waiters' subscription: they must subscribe again, re-try (the lock is
 * free now) and take it in turn, the second one woken by the first one's
 * unlock message on the new server. */
static void test_waiters_resubscribe_and_acquire_after_restart(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    ft_timing slow = {.recheck_ms = SLOW_RECHECK_MS, .retry_attempts = -1};
    ft_timing plain = {.retry_attempts = -1};
    rlock_client *h = ft_connect(f->redis.url, plain);
    rlock_client *w = ft_connect(f->redis.url, slow);
    static ft_waiter ws[2];
    ft_waiter *first, *second;
    int64_t t_up;
    rlock *hl, *wl;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    hl = lt_get_lock(h, name);
    wl = lt_get_lock(w, name);
    assert_int_equal(rlock_lock(hl), RLOCK_OK); /* 30 s watchdog lease */

    memset(ws, 0, sizeof(ws));
    for (int i = 0; i < 2; i++) {
        ws[i].hold_ms = 300;
        ft_waiter_start(&ws[i], wl);
    }
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(300); /* both have tried and sleep on the channel */
    assert_int_equal(atomic_load(&ws[0].done) + atomic_load(&ws[1].done), 0);

    t_up = restart_redis(&f->redis);

    if (!ft_waiters_wait(ws, 2, HANG_MS))
        fail_msg("a waiter was stranded by the restart (not done in %d ms)",
                 HANG_MS);
    first = ws[0].acquired_ms <= ws[1].acquired_ms ? &ws[0] : &ws[1];
    second = first == &ws[0] ? &ws[1] : &ws[0];
    print_message("first waiter in %lld ms after Redis was back; second "
                  "%lld ms after the first unlocked\n",
                  (long long)(first->acquired_ms - t_up),
                  (long long)(second->acquired_ms - first->unlocked_ms));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ws[i].rc, RLOCK_OK);
        assert_int_equal(ws[i].unlock_rc, RLOCK_OK);
    }
    assert_true(first->acquired_ms - t_up < RESUBSCRIBE_MS);
    /* only the unlock message can wake it this fast: its subscription is
     * live on the new server */
    assert_true(second->acquired_ms >= first->acquired_ms + 250); /* held */
    assert_true(second->acquired_ms - first->unlocked_ms < WAKE_MS);

    /* the old holder learns its hold is gone */
    assert_int_equal(rlock_unlock(hl), RLOCK_ELOST);
    /* and no subscription is left behind on the new server */
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 3000), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(h);
    rlock_client_free(w);
}

/* The same client object, not recreated, works after a restart that broke
 * every connection it had in use: it takes a lock (the scripts were flushed
 * with the data), the watchdog renews it for two leases, another client is
 * excluded, its unlock publishes exactly one message, and its own waiters
 * are woken through pub/sub again. */
static void test_client_keeps_working_after_restart(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160], field[200];
    const int64_t wd = 1500; /* renewed every 500 ms */
    ft_timing t = {.watchdog_ms = wd,
                   .command_ms = 1000,
                   .recheck_ms = SLOW_RECHECK_MS,
                   .retry_interval_ms = 100,
                   .retry_attempts = -1};
    ft_timing plain = {.retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    rlock_client *o;
    static ft_holder hold;
    static ft_waiter before, wt;
    rt_sub *sub;
    int64_t t0, t_unlock;
    long long min_pttl = wd;
    rlock *l, *ol;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(c, name);
    o = ft_connect(f->redis.url, plain);
    ol = lt_get_lock(o, name);
    /* used before the restart: command connections, script cache and
     * subscriber (a waiter of c woken by o's unlock) all in use */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(ol, 0, 30000), RLOCK_OK);
    ft_waiter_start(&before, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    assert_int_equal(rlock_unlock(ol), RLOCK_OK);
    if (!ft_waiters_wait(&before, 1, HANG_MS))
        fail_msg("waiter before the restart was stranded");
    assert_int_equal(before.rc, RLOCK_OK);

    restart_redis(&f->redis);

    /* on a thread that stays alive: a thread that exits abandons its holds */
    ft_holder_start(&hold, l, 1, 0);
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)hold.tid);
    lt_assert_single_field(&f->redis, name, field, "1");
    /* the watchdog renews it for two leases */
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 2 * wd) {
        long long pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
        assert_true(pttl > 0);
        if (pttl < min_pttl)
            min_pttl = pttl;
        rt_sleep_ms(50);
    }
    print_message("lowest PTTL over two leases: %lld ms\n", min_pttl);
    assert_true(min_pttl > wd / 3 / 2);
    ft_holder_finish(&hold, 1, 0);
    assert_int_equal(hold.is_held_rc, 1);
    assert_int_equal(hold.unlock_rc[0], RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    /* the main thread now holds it; another client is excluded */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(ol, 200, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_sub_wait(sub, 1, 2000), 1);
    rt_sleep_ms(200);
    assert_int_equal(rt_sub_count(sub), 1);
    assert_string_equal(rt_sub_message(sub, 0), "0");
    rt_sub_stop(sub);

    /* its subscriber is back: a waiter of c is woken by o's unlock */
    assert_int_equal(rlock_trylock(ol, 0, 30000), RLOCK_OK);
    wt.hold_ms = 0;
    ft_waiter_start(&wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(200);
    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(ol), RLOCK_OK);
    if (!ft_waiters_wait(&wt, 1, HANG_MS))
        fail_msg("waiter of the restarted client was stranded");
    assert_int_equal(wt.rc, RLOCK_OK);
    assert_int_equal(wt.unlock_rc, RLOCK_OK);
    assert_true(wt.acquired_ms - t_unlock < WAKE_MS);

    rlock_free(ol);
    rlock_client_free(o);
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restart_reports_held_locks_lost_within_a_period),
        cmocka_unit_test(test_waiters_resubscribe_and_acquire_after_restart),
        cmocka_unit_test(test_client_keeps_working_after_restart),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
