/*
 * test_fault_stall.c: Redis stalls (SIGSTOP for a few seconds, then
 * SIGCONT), and renewals fail for a while.
 *
 * What must hold: calls made during the stall return
 * RLOCK_ETIMEDOUT or RLOCK_ECONN within their budget (the command timeout
 * is 500 ms here); the watchdog keeps trying instead of dying, so a lock
 * whose lease outlived the stall is still held and renewed afterwards; a
 * stall longer than the lease gets the hold reported lost with
 * RLOCK_LOST_EXPIRED, judged on the monotonic clock while Redis is still
 * silent.
 *
 * A stopped server keeps its TCP connections open and answers nothing, so
 * every request simply waits; the client must give up on its own clock.
 * Calls run on helper threads with deadlines, so a hang fails the test.
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

#define LT_SUITE "faults-stall"

#define COMMAND_MS 500
/* Added to every time budget: a loaded 2-core machine can delay a thread's
 * wake-up by hundreds of milliseconds. */
#define MARGIN_MS 2000
/* Nothing may hang: a call still running after this has hung. */
#define HANG_MS 15000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* Resumes the server if a test failed while it was stopped, and gives
 * scripts back if one failed while they were refused. */
static int teardown(void **state)
{
    lt_fixture *f = *state;
    char *ok;

    rt_redis_resume(&f->redis);
    ok = rt_cmd_str(&f->redis, "ACL SETUSER default +@all");
    free(ok);
    return 0;
}

/* Waits for a call started during a stall; resumes Redis and fails the test
 * if it is still running after HANG_MS. */
static void wait_or_fail(lt_fixture *f, ft_call *a, const char *what)
{
    if (!ft_call_wait(a, HANG_MS)) {
        rt_redis_resume(&f->redis);
        ft_call_wait(a, HANG_MS);
        fail_msg("%s did not return during a %d ms stall", what, HANG_MS);
    }
    print_message("%-22s %-16s after %5lld ms\n", what,
                  rlock_err_name((int)a->rc), (long long)a->elapsed_ms);
}

/* How many commands Redis refused with NOPERM since CONFIG RESETSTAT. */
static long long noperm_count(rt_redis *r)
{
    redisReply *rep = rt_cmd(r, "INFO errorstats");
    const char *key = "errorstat_NOPERM:count=";
    long long n = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    const char *p = strstr(rep->str, key);
    if (p != NULL)
        n = atoll(p + strlen(key));
    freeReplyObject(rep);
    return n;
}

static int is_timeout_or_conn(int64_t rc)
{
    return rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN;
}

/* ------------------------------------------------------------- tests */

/* Every kind of call made while Redis is stopped returns a timeout or a
 * connection error within its budget: the command timeout for one round
 * trip, wait + command timeout for a trylock, and all retries for an unlock
 * (attempts x timeout + retries x interval). Afterwards the client works. */
static void test_calls_during_stall_return_within_budget(void **state)
{
    lt_fixture *f = *state;
    char base[128], name_free[160], name_held[160];
    const int attempts = 2, interval = 100;
    ft_timing t = {.command_ms = COMMAND_MS,
                   .retry_interval_ms = interval,
                   .retry_attempts = attempts};
    rlock_client *c = ft_connect(f->redis.url, t);
    const int64_t unlock_budget =
        (attempts + 1) * COMMAND_MS + attempts * interval;
    static ft_call trylock, lock, locked, ttl;
    static ft_holder h;
    int64_t t_ask;
    rlock *lf, *lh;

    LT_TEST_NAME(base);
    snprintf(name_free, sizeof(name_free), "%s:free", base);
    snprintf(name_held, sizeof(name_held), "%s:held", base);
    lf = lt_get_lock(c, name_free);
    lh = lt_get_lock(c, name_held);
    /* warm both command connections up */
    assert_int_equal(rlock_lock(lf), RLOCK_OK);
    assert_int_equal(rlock_unlock(lf), RLOCK_OK);
    assert_int_equal(rlock_is_locked(lf), 0);
    ft_holder_start(&h, lh, 1, 60000); /* held, to be unlocked in the stall */

    rt_redis_pause(&f->redis);
    ft_call_start(&trylock, lf, FT_TRYLOCK, 1000, RLOCK_LEASE_WATCHDOG);
    ft_call_start(&lock, lf, FT_LOCK, 0, 0);
    ft_call_start(&locked, lf, FT_IS_LOCKED, 0, 0);
    ft_call_start(&ttl, lf, FT_TTL, 0, 0);
    t_ask = rt_now_ms();
    ft_holder_finish(&h, 1, 0); /* joins: the unlock must return */
    wait_or_fail(f, &trylock, "trylock(1000)");
    wait_or_fail(f, &lock, "lock");
    wait_or_fail(f, &locked, "is_locked");
    wait_or_fail(f, &ttl, "remaining_ttl");
    print_message("%-22s %-16s after %5lld ms\n", "unlock",
                  rlock_err_name(h.unlock_rc[0]),
                  (long long)(h.unlocked_ms - h.unlock_started_ms));
    /* every call above returned while Redis was still stopped */
    rt_redis_resume(&f->redis);

    assert_true(is_timeout_or_conn(trylock.rc));
    assert_true(trylock.elapsed_ms < 1000 + COMMAND_MS + MARGIN_MS);
    assert_true(is_timeout_or_conn(lock.rc));
    assert_true(lock.elapsed_ms < COMMAND_MS + MARGIN_MS);
    assert_true(is_timeout_or_conn(locked.rc));
    assert_true(locked.elapsed_ms < COMMAND_MS + MARGIN_MS);
    assert_true(is_timeout_or_conn(ttl.rc));
    assert_true(ttl.elapsed_ms < COMMAND_MS + MARGIN_MS);
    assert_true(is_timeout_or_conn(h.unlock_rc[0]));
    assert_true(h.unlocked_ms - h.unlock_started_ms <
                unlock_budget + MARGIN_MS);
    /* is_held_by_me (one round trip) and the unlock, from the request */
    assert_true(h.unlocked_ms - t_ask < COMMAND_MS + unlock_budget + MARGIN_MS);

    /* the client works again without being recreated */
    ft_call_start(&lock, lf, FT_TRYLOCK, 5000, 30000);
    wait_or_fail(f, &lock, "trylock after resume");
    assert_int_equal(lock.rc, RLOCK_OK);
    assert_int_equal(rlock_force_unlock(lf), RLOCK_OK);
    assert_int_equal(rlock_is_locked(lf), 0);
    rlock_free(lf);
    rlock_free(lh);
    rlock_client_free(c);
}

/* A fair lock's trylock while Redis is stopped: its attempt times out
 * after a command timeout, and leaving the queue (sent when it gives up,
 * as Redisson's does) must not take another: the call returns within its
 * wait plus one command timeout (2 s here, against 0.1 s of wait; it took
 * two command timeouts before). */
static void test_fair_trylock_during_stall_takes_one_command_timeout(
    void **state)
{
    lt_fixture *f = *state;
    const int64_t command_ms = 2000, wait_ms = 100;
    ft_timing t = {.command_ms = command_ms};
    rlock_client *c = ft_connect(f->redis.url, t);
    static ft_call trylock;
    char name[128];
    rlock *l = NULL;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_fair_get(c, name, &l), RLOCK_OK);
    /* its connection up */
    assert_int_equal(rlock_trylock(l, wait_ms, 10000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    rt_redis_pause(&f->redis);
    ft_call_start(&trylock, l, FT_TRYLOCK, wait_ms, 10000);
    wait_or_fail(f, &trylock, "fair trylock(100)");
    rt_redis_resume(&f->redis);

    assert_true(is_timeout_or_conn(trylock.rc));
    assert_true(trylock.elapsed_ms < wait_ms + command_ms + 1000);
    rlock_free(l);
    rlock_client_free(c);
}

/* Lease 4500 ms, renewed every 1500 ms; Redis stops for 2000 ms, so at
 * least one renewal goes unanswered, but the lease outlives the stall.
 * Afterwards the lock is still ours: renewed at once (PTTL back up), and
 * for longer than a whole lease after the stall, which a watchdog that died
 * on the stall could not do; no loss is reported. */
static void test_lock_outliving_a_stall_is_still_held_and_renewed(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200];
    const int64_t wd = 4500, period = wd / 3, stall = 2000;
    ft_timing t = {
        .watchdog_ms = wd, .command_ms = COMMAND_MS, .retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    ft_lost_log log;
    static ft_holder h;
    int64_t t_resume, t_back = -1;
    long long pttl, min_pttl = wd;
    rlock *l;

    LT_TEST_NAME(name);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    l = lt_get_lock(c, name);
    ft_holder_start(&h, l, 1, 0);
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)h.tid);

    rt_redis_pause(&f->redis);
    rt_sleep_ms(stall);
    rt_redis_resume(&f->redis);
    t_resume = rt_now_ms();

    /* without renewal, PTTL would now be at most wd - stall = 2500 */
    for (;;) {
        pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
        assert_true(pttl > 0);
        if (pttl > wd - stall + 500) {
            t_back = rt_now_ms();
            break;
        }
        if (rt_now_ms() - t_resume > period + MARGIN_MS)
            break;
        rt_sleep_ms(10);
    }
    print_message("PTTL back up to %lld ms, %lld ms after the stall\n", pttl,
                  (long long)(t_back - t_resume));
    assert_true(t_back >= 0);
    /* and kept up for a lease and a period more */
    while (rt_now_ms() - t_resume < wd + period) {
        pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
        assert_true(pttl > 0);
        if (pttl < min_pttl)
            min_pttl = pttl;
        assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field),
                         1);
        rt_sleep_ms(50);
    }
    print_message("lowest PTTL after the stall: %lld ms\n", min_pttl);
    assert_true(min_pttl > period / 2);

    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.is_held_rc, 1);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(ft_lost_count(&log, 0, NULL), 0);
    rlock_free(l);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

/* Renewals that fail outright (Redis refuses scripts for a while: ACL
 * -eval -evalsha) are tried again on the next tick; once Redis accepts them
 * again the lease is renewed, before it ran out. */
static void test_watchdog_retries_after_failed_renewals(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200], *ok;
    const int64_t wd = 3000, period = wd / 3, refused = 1300;
    ft_timing t = {
        .watchdog_ms = wd, .command_ms = COMMAND_MS, .retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    ft_lost_log log;
    static ft_holder h;
    int64_t t0, t_allow, t_back = -1;
    long long pttl, refusals;
    rlock *l;

    LT_TEST_NAME(name);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    l = lt_get_lock(c, name);
    ft_holder_start(&h, l, 1, 0);
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)h.tid);

    /* start refusing right after a renewal, so the lease has the most left */
    rt_sleep_ms(50);
    t0 = rt_now_ms();
    while ((pttl = rt_cmd_int(&f->redis, "PTTL %s", name)) < wd - 60 &&
           rt_now_ms() - t0 < 3 * period)
        rt_sleep_ms(5);
    assert_true(pttl >= wd - 60);
    ok = rt_cmd_str(&f->redis, "CONFIG RESETSTAT");
    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
    ok = rt_cmd_str(&f->redis, "ACL SETUSER default -eval -evalsha");
    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
    rt_sleep_ms(refused);
    /* renewals really failed: nothing extended the lease meanwhile */
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    refusals = noperm_count(&f->redis);
    print_message("after %lld ms of refused scripts: PTTL %lld, %lld "
                  "renewals refused\n",
                  (long long)refused, pttl, refusals);
    assert_true(refusals >= 1);
    assert_true(pttl > 0);
    assert_true(pttl < wd - refused + 200);
    ok = rt_cmd_str(&f->redis, "ACL SETUSER default +@all");
    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
    t_allow = rt_now_ms();

    for (;;) {
        pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
        assert_true(pttl > 0);
        if (pttl > wd - period / 2) {
            t_back = rt_now_ms();
            break;
        }
        if (rt_now_ms() - t_allow > period + MARGIN_MS)
            break;
        rt_sleep_ms(10);
    }
    print_message("renewed again %lld ms after scripts were allowed\n",
                  (long long)(t_back - t_allow));
    assert_true(t_back >= 0);
    /* and it keeps being renewed */
    while (rt_now_ms() - t_allow < wd + period) {
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 0);
        rt_sleep_ms(50);
    }
    assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field), 1);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(ft_lost_count(&log, 0, NULL), 0);
    rlock_free(l);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

/* Lease 1500 ms, renewed every 500 ms; Redis stops for longer than the
 * lease. With no answer, the lease must be presumed run out once a whole
 * lease has passed since it was last known to be set: the hold is reported
 * lost with RLOCK_LOST_EXPIRED while Redis is still stopped (the client's
 * own monotonic clock decides), not before the lease could have run out,
 * and its owner's unlock answers RLOCK_ELOST. */
static void test_stall_longer_than_lease_reports_hold_expired(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    const int64_t wd = 1500, period = wd / 3;
    ft_timing t = {
        .watchdog_ms = wd, .command_ms = COMMAND_MS, .retry_attempts = -1};
    rlock_client *c = ft_connect(f->redis.url, t);
    rlock_client *o;
    ft_lost_log log;
    ft_lost_event ev = {0};
    static ft_holder h;
    int64_t t_pause, t_resume, t_sample;
    long long pttl;
    int seen;
    rlock *l, *ol;

    LT_TEST_NAME(name);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_on_lost(l, ft_on_lock_lost, &log), RLOCK_OK);
    ft_holder_start(&h, l, 1, 0);
    rt_sleep_ms(period + 100); /* renewed at least once */

    /* when the lease set by the last renewal runs out, as far as we know */
    t_sample = rt_now_ms();
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 0);
    rt_redis_pause(&f->redis);
    t_pause = rt_now_ms();
    /* a hold is renewed at most a period before the stall, so it is
     * presumed expired by wd (+ a tick) into it */
    seen = ft_lost_wait(&log, 'L', name, (int)(wd + period + MARGIN_MS), &ev);
    t_resume = rt_now_ms();
    rt_redis_resume(&f->redis);
    assert_true(seen);
    print_message("presumed expired %lld ms into the stall\n",
                  (long long)(ev.at_ms - t_pause));
    assert_int_equal(ev.reason, RLOCK_LOST_EXPIRED);
    assert_true(ev.owner == h.tid);
    assert_true(ev.at_ms <= t_resume);
    /* not before the lease could have run out: a renewal answered after
     * the PTTL sample only pushes that moment later; 150 ms allow for the
     * round trip between sending a renewal and Redis running it */
    assert_true(ev.at_ms >= t_sample + pttl - 150);
    assert_true(ft_lost_wait(&log, 'C', name, 5000, NULL));

    ft_holder_finish(&h, 2, 0);
    assert_int_equal(h.is_held_rc, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_ELOST);
    assert_int_equal(h.unlock_rc[1], RLOCK_ENOTOWNER);
    /* the lease did run out in Redis, and the lock is free for others */
    assert_int_equal(ft_wait_exists(&f->redis, name, 0, 3000), 0);
    o = ft_connect(f->redis.url, (ft_timing){.retry_attempts = -1});
    ol = lt_get_lock(o, name);
    assert_int_equal(rlock_trylock(ol, 0, 10000), RLOCK_OK);
    assert_int_equal(rlock_unlock(ol), RLOCK_OK);
    assert_int_equal(ft_lost_count(&log, 'L', name), 1);
    rlock_free(ol);
    rlock_client_free(o);
    rlock_free(l);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_calls_during_stall_return_within_budget,
                                  teardown),
        cmocka_unit_test_teardown(
            test_fair_trylock_during_stall_takes_one_command_timeout,
            teardown),
        cmocka_unit_test_teardown(
            test_lock_outliving_a_stall_is_still_held_and_renewed, teardown),
        cmocka_unit_test_teardown(test_watchdog_retries_after_failed_renewals,
                                  teardown),
        cmocka_unit_test_teardown(
            test_stall_longer_than_lease_reports_hold_expired, teardown),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
