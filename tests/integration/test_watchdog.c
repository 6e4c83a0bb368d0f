/*
 * test_watchdog.c: lease renewal (REDISSON-PROTOCOL.md section 1.7).
 *
 * The client runs with a 1500 ms watchdog timeout, so it renews every
 * 500 ms and a few seconds cover several lease periods.
 *
 * Loss detection is checked so that only the watchdog can explain the
 * result: after a hold was taken away, the test writes the owner's field
 * back by hand. A hold the watchdog had already declared lost stays lost
 * (is_held_by_me says 0 and unlock says RLOCK_ELOST without touching
 * Redis); a hold nobody had noticed would look held again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define WATCHDOG_MS 1500
#define PERIOD_MS   (WATCHDOG_MS / 3)
#define LT_SUITE    "watchdog"

/* A short watchdog timeout, so that several leases pass within a test. */
static int group_setup(void **state)
{
    return lt_group_setup_with_watchdog(state, WATCHDOG_MS);
}

static void test_lock_lease_is_watchdog_timeout(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long long pttl;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > WATCHDOG_MS - 300);
    assert_true(pttl <= WATCHDOG_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_watchdog_keeps_lock_for_several_leases(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    int64_t t0;
    long long pttl, min_pttl = WATCHDOG_MS;
    int samples = 0;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 5000) {
        pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
        assert_true(pttl > 0);
        assert_true(pttl <= WATCHDOG_MS);
        if (pttl < min_pttl)
            min_pttl = pttl;
        assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field),
                         1);
        samples++;
        rt_sleep_ms(50);
    }
    print_message("%d samples over 5 s, lowest PTTL %lld ms\n", samples,
                  min_pttl);
    /* renewed every third of the lease: never close to running out */
    assert_true(min_pttl > PERIOD_MS / 2);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_nested_lock_is_renewed_until_last_unlock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* one hold is left: still renewed */
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 2 * WATCHDOG_MS) {
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 0);
        rt_sleep_ms(100);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_unlocked_key_stays_gone(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_sleep_ms(PERIOD_MS + 100); /* at least one renewal happened */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 2 * WATCHDOG_MS) {
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
        rt_sleep_ms(100);
    }
    rlock_free(l);
}

static void test_explicit_lease_is_not_renewed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long long pttl;
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 1000), RLOCK_OK);
    t0 = rt_now_ms();
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 0);
    assert_true(pttl <= 1000);
    /* 1.5 s later (three watchdog ticks) the lease has run out */
    rt_sleep_ms(1500 - (rt_now_ms() - t0));
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rt_sleep_ms(PERIOD_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    rlock_free(l);
}

/* Waits two watchdog periods and a bit: long enough for a renewal to have
 * run after whatever the test just did behind the holder's back. */
static void wait_two_periods(void)
{
    rt_sleep_ms(2 * PERIOD_MS + 200);
}

static void test_deleted_key_is_reported_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    wait_two_periods();
    /* the watchdog must not bring the key back */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    /* put the field back: a hold already declared lost stays lost */
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s %s 1", name, field), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    /* the lost unlock did not touch Redis */
    assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_deleted_key_makes_unlock_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    wait_two_periods();
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    /* the lock is usable again */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_replaced_field_is_reported_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    long long pttl;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* another owner takes the key over */
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:9"), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    wait_two_periods();
    /* our watchdog did not renew somebody else's lock */
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > WATCHDOG_MS);
    assert_true(pttl <= 10000 - 2 * PERIOD_MS);
    /* add our field next to theirs: our hold stays lost regardless */
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s %s 1", name, field), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    {
        char *v = rt_cmd_str(&f->redis, "HGET %s %s", name, "other-uuid:9");

        assert_non_null(v);
        assert_string_equal(v, "1");
        free(v);
    }
    assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_replaced_field_makes_unlock_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    char *v;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:9"), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    wait_two_periods();
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    /* the other owner's lock is untouched */
    v = rt_cmd_str(&f->redis, "HGET %s %s", name, "other-uuid:9");
    assert_non_null(v);
    assert_string_equal(v, "1");
    free(v);
    assert_int_equal(rt_cmd_int(&f->redis, "HLEN %s", name), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* Redis unreachable for longer than a lease: the key has expired by the
 * time it answers again, and the hold must be reported lost. */
static void test_hold_is_lost_after_pause_longer_than_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_redis_pause(&f->redis);
    rt_sleep_ms(WATCHDOG_MS + 1000);
    rt_redis_resume(&f->redis);
    wait_two_periods();
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    /* found lost by the watchdog, not by the query below */
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s %s 1", name, field), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* A pause shorter than what is left of the lease does not lose the hold:
 * renewal resumes and the key stays. */
static void test_short_pause_keeps_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* renewed at least once; the last renewal is at most a period old, so
     * at least 1000 ms of lease are left when the pause starts */
    rt_sleep_ms(PERIOD_MS + 100);
    rt_redis_pause(&f->redis);
    rt_sleep_ms(400);
    rt_redis_resume(&f->redis);
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 2 * WATCHDOG_MS) {
        assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field),
                         1);
        rt_sleep_ms(50);
    }
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* Redis stops answering altogether: once a whole lease has passed since
 * the last renewal, the lease must have run out, so the hold is lost even
 * though Redis cannot be asked. */
static void test_hold_is_lost_when_redis_unreachable_for_a_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t t0, elapsed;
    rlock *l;
    int rc;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_redis_stop(&f->redis);
    rt_sleep_ms(WATCHDOG_MS + 2 * PERIOD_MS);
    t0 = rt_now_ms();
    assert_int_equal(rlock_is_held_by_me(l), 0);
    rc = rlock_unlock(l);
    elapsed = rt_now_ms() - t0;
    assert_int_equal(rc, RLOCK_ELOST);
    assert_true(elapsed < 1000); /* known locally: no retries */
    rlock_free(l);
}

/* Brings the group's server back if a test stopped it. */
static int restart_if_stopped(void **state)
{
    lt_fixture *f = *state;

    if (f->redis.pid == 0)
        return rt_redis_restart(&f->redis);
    return 0;
}

static void test_freed_handle_keeps_lock_renewed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rlock_free(l);
    rt_sleep_ms(2 * WATCHDOG_MS);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 0);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_lease_is_watchdog_timeout),
        cmocka_unit_test(test_watchdog_keeps_lock_for_several_leases),
        cmocka_unit_test(test_nested_lock_is_renewed_until_last_unlock),
        cmocka_unit_test(test_unlocked_key_stays_gone),
        cmocka_unit_test(test_explicit_lease_is_not_renewed),
        cmocka_unit_test(test_deleted_key_is_reported_lost),
        cmocka_unit_test(test_deleted_key_makes_unlock_lost),
        cmocka_unit_test(test_replaced_field_is_reported_lost),
        cmocka_unit_test(test_replaced_field_makes_unlock_lost),
        cmocka_unit_test(test_hold_is_lost_after_pause_longer_than_lease),
        cmocka_unit_test(test_short_pause_keeps_hold),
        cmocka_unit_test(test_freed_handle_keeps_lock_renewed),
        cmocka_unit_test_teardown(
            test_hold_is_lost_when_redis_unreachable_for_a_lease,
            restart_if_stopped),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
