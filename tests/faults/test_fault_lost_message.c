/*
 * test_fault_lost_message.c: the unlock message never comes.
 *
 * A lock can vanish without a message: a raw DEL (an operator, a script),
 * or a holder that crashed and whose lease then ran out (expiry publishes
 * nothing). A waiter that only trusted the TTL it was told would sleep for
 * the rest of a 30 s lease. What must hold: the waiter re-checks
 * at least every re-check interval (rlock_config_set_recheck_interval,
 * default 2 s), so it gets the lock within about that interval; and it does
 * not poll much faster than that either.
 *
 * Every holder here takes a 30 s lease, so only a re-check explains a
 * waiter getting in within the margins.
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

#define LT_SUITE "faults-lostmsg"

#define DEFAULT_RECHECK_MS 2000 /* documented default */
#define HOLDER_LEASE_MS    30000
/* "Within about the interval", asserted as < interval + this on a loaded
 * 2-core machine: still far below the 30 s lease. */
#define MARGIN_MS 1500
#define HANG_MS   40000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* ------------------------------------------------------------- helpers */

/* Writes the lock by hand as another Redisson client holding it with a
 * 30 s lease would. */
static void foreign_hold(rt_redis *r, const char *name)
{
    assert_int_equal(rt_cmd_int(r, "HSET %s %s 1", name,
                                "0badc0de-0000-4000-8000-000000000001:1"),
                     1);
    assert_int_equal(rt_cmd_int(r, "PEXPIRE %s %d", name, HOLDER_LEASE_MS), 1);
}

/* A waiter (rlock_lock) on name in a client with recheck_ms (0: default)
 * is asleep on the channel of a lock held for 30 s; the lock is deleted
 * without a message; it must get in within recheck + margin. */
static void raw_del_case(lt_fixture *f, const char *name, int64_t recheck_ms)
{
    char channel[160];
    ft_timing t = {.recheck_ms = recheck_ms, .retry_attempts = -1};
    rlock_client *w = ft_connect(f->redis.url, t);
    int64_t interval = recheck_ms > 0 ? recheck_ms : DEFAULT_RECHECK_MS;
    /* on the heap and left there if the test fails while it still runs */
    ft_waiter *wt = calloc(1, sizeof(*wt));
    int64_t t_del;
    rlock *l;

    assert_non_null(wt);
    lt_channel_of(channel, sizeof(channel), name);
    foreign_hold(&f->redis, name);
    l = lt_get_lock(w, name);
    ft_waiter_start(wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(300); /* asleep, told a TTL of about 30 s */
    assert_int_equal(atomic_load(&wt->done), 0);

    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    t_del = rt_now_ms();
    if (!ft_waiters_wait(wt, 1, HANG_MS))
        fail_msg("the waiter slept through a deleted lock");
    print_message("re-check interval %lld ms: in %lld ms after the raw DEL\n",
                  (long long)interval, (long long)(wt->acquired_ms - t_del));
    assert_int_equal(wt->rc, RLOCK_OK);
    assert_int_equal(wt->unlock_rc, RLOCK_OK);
    assert_true(wt->acquired_ms - t_del < interval + MARGIN_MS);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 3000), 0);
    free(wt);
    rlock_free(l);
    rlock_client_free(w);
}

/* --------------------------------------------------------------- tests */

/* Default configuration: the re-check cap is 2 s. */
static void test_raw_del_is_noticed_within_default_recheck(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    raw_del_case(*state, name, 0);
}

/* A configured cap is honoured (500 ms here). */
static void test_raw_del_is_noticed_within_configured_recheck(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    raw_del_case(*state, name, 500);
}

/* While the lock stays held (30 s lease), a waiter with a 250 ms re-check
 * tries again about every 250 ms: over a 3 s trylock that is roughly a
 * dozen acquire scripts, not the handful a 2 s or TTL-bound wait would
 * make, nor the hundreds of a busy poll. The waiter does not get the lock
 * and times out on budget. */
static void test_waiter_rechecks_at_the_configured_interval(void **state)
{
    lt_fixture *f = *state;
    char name[128], *ok;
    const int64_t recheck = 250, wait = 3000;
    ft_timing t = {.recheck_ms = recheck, .retry_attempts = -1};
    rlock_client *w = ft_connect(f->redis.url, t);
    long long tries;
    static ft_call call;
    rlock *l;

    LT_TEST_NAME(name);
    foreign_hold(&f->redis, name);
    l = lt_get_lock(w, name);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT); /* scripts cached, connection up */
    ok = rt_cmd_str(&f->redis, "CONFIG RESETSTAT");
    assert_non_null(ok);
    free(ok);
    ft_call_start(&call, l, FT_TRYLOCK, wait, RLOCK_LEASE_WATCHDOG);
    if (!ft_call_wait(&call, HANG_MS))
        fail_msg("trylock(%lld) did not return", (long long)wait);
    tries = ft_script_calls(&f->redis);
    print_message("%lld acquire attempts in %lld ms (re-check %lld ms)\n",
                  tries, (long long)call.elapsed_ms, (long long)recheck);
    assert_int_equal(call.rc, RLOCK_ETIMEDOUT);
    assert_true(call.elapsed_ms >= wait - 5);
    assert_true(call.elapsed_ms < wait + MARGIN_MS);
    /* 3000 / 250 = 12 sleeps plus the first try and the one after
     * subscribing; loose bounds for a loaded machine */
    assert_true(tries >= 8);
    assert_true(tries <= 30);
    rlock_free(l);
    rlock_client_free(w);
}

/* A holder in another process takes the lock with a 30 s lease, and the
 * waiter is told so. Then the holder takes it again with a 1 s lease (a
 * reentrant take sets the lease, as Redisson's does) and crashes (SIGKILL)
 * without unlocking: the key expires a second later and nobody publishes.
 * The waiter must get in within the expiry plus the default 2 s re-check
 * (plus margin), not after the 30 s it was told. */
static void test_lease_run_out_without_unlock_is_noticed(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    const int64_t short_lease = 1000;
    ft_timing t = {.retry_attempts = -1};
    rlock_client *w;
    ft_remote holder;
    static ft_waiter wt;
    int64_t t_short;
    long long pttl;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    ft_remote_start(&holder, f->redis.url, name, HOLDER_LEASE_MS, short_lease);
    w = ft_connect(f->redis.url, t);
    l = lt_get_lock(w, name);
    ft_waiter_start(&wt, l);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(300); /* asleep, told a TTL of about 30 s */

    assert_int_equal(ft_remote_reenter(&holder), RLOCK_OK);
    t_short = rt_now_ms();
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 0 && pttl <= short_lease);
    ft_remote_crash(&holder);

    if (!ft_waiters_wait(&wt, 1, HANG_MS))
        fail_msg("the waiter slept through an expired lease");
    print_message("in %lld ms after the lease was cut to %lld ms\n",
                  (long long)(wt.acquired_ms - t_short),
                  (long long)short_lease);
    assert_int_equal(wt.rc, RLOCK_OK);
    assert_int_equal(wt.unlock_rc, RLOCK_OK);
    /* it cannot get in before the key expired */
    assert_true(wt.acquired_ms - t_short >= short_lease - 50);
    assert_true(wt.acquired_ms - t_short <
                short_lease + DEFAULT_RECHECK_MS + MARGIN_MS);
    rlock_free(l);
    rlock_client_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_del_is_noticed_within_default_recheck),
        cmocka_unit_test(test_raw_del_is_noticed_within_configured_recheck),
        cmocka_unit_test(test_waiter_rechecks_at_the_configured_interval),
        cmocka_unit_test(test_lease_run_out_without_unlock_is_noticed),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
