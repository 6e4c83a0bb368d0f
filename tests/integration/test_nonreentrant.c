/*
 * test_nonreentrant.c: Redisson's non-reentrant lock and non-reentrant fair
 * lock (docs/protocol-synchronizers.md).
 *
 * They are the plain and the fair lock's state on Redis, and differ in one
 * thing: the owner that holds one and asks for it again is refused with
 * RLOCK_EREENTRY, at once, whatever its wait, and its one hold stays. The
 * refusal comes from the script as well (Redisson's error reply) when
 * Redis has a hold the client does not know of. Everything else is the
 * reentrant kind's: another owner waits and is woken by the unlock, and the
 * watchdog keeps a hold alive.
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

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "proto/scripts.h"

#define LT_SUITE "nonreentrant"

/* The watchdog timeout of this suite's client: short, so that a hold
 * outlives several leases within a test. */
#define WATCHDOG_MS 1000
/* How long a refusal may take at most: it makes no round trip, but the
 * machine may be loaded. */
#define REFUSAL_MS 500
#define WAKE_MS    2000

typedef int (*getter)(rlock_client *c, const char *name, rlock **out);

static rlock *get(getter g, rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(g(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* The holder locks, asks again with rlock_lock() and with a long
 * rlock_trylock(): both are refused at once, and Redis still has one hold. */
static void assert_second_acquire_refused(lt_fixture *f, getter g,
                                          const char *name)
{
    char field[200];
    rlock *l = get(g, f->client, name);
    int64_t t0;

    lt_owner_field(field, sizeof(field), f->client);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    t0 = rt_now_ms();
    assert_int_equal(rlock_lock(l), RLOCK_EREENTRY);
    assert_int_equal(rlock_trylock(l, 5000, RLOCK_LEASE_WATCHDOG),
                     RLOCK_EREENTRY);
    assert_int_equal(rlock_trylock(l, 0, 10000), RLOCK_EREENTRY);
    assert_true(rt_now_ms() - t0 < REFUSAL_MS);
    assert_int_equal(rlock_hold_count(l), 1);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_holder_second_acquire_is_refused(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_second_acquire_refused(*state, rlock_nonreentrant_get, name);
}

static void test_fair_holder_second_acquire_is_refused(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_second_acquire_refused(*state, rlock_nonreentrant_fair_get, name);
}

/* Redis has the owner's hold (written behind the client's back, as a hold
 * the client lost track of): the script refuses, with Redisson's error
 * reply, and the count stays 1. */
static void assert_script_refuses(lt_fixture *f, getter g, const char *name)
{
    char field[200];
    rlock *l = get(g, f->client, name);

    lt_owner_field(field, sizeof(field), f->client);
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s %s 1", name, field), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 30000", name), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_EREENTRY);
    assert_int_equal(rlock_hold_count(l), 0);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_script_refuses_a_hold_the_client_forgot(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_script_refuses(*state, rlock_nonreentrant_get, name);
}

static void test_fair_script_refuses_a_hold_the_client_forgot(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_script_refuses(*state, rlock_nonreentrant_fair_get, name);
}

/* rlock's queued acquire (lock_acquire_queued.lua, which a waiter that
 * found the lock taken runs) refuses a holder the same way when given the
 * error text, and re-enters without it. */
static void test_queued_script_refuses_a_holder(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200], queue[200], stale[200], channel[200];
    redisReply *rep;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale, sizeof(stale), name);
    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s %s 1", name, field), 1);
    const char *argv[] = {
        "EVAL", (const char *)rlock__script_lock_acquire_queued.body, "3",
        name, queue, stale, "30000", field, "5000", channel, "PUBLISH",
        "NON_REENTRANT_REACQUIRE"};
    size_t n = sizeof(argv) / sizeof(*argv);
    char *body = strndup(argv[1], rlock__script_lock_acquire_queued.len);

    argv[1] = body;
    rep = rt_cmd_argv(&f->redis, (int)n, argv);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(rep->str, "NON_REENTRANT_REACQUIRE"));
    freeReplyObject(rep);
    lt_assert_single_field(&f->redis, name, field, "1");
    argv[n - 1] = ""; /* reentrant */
    rep = rt_cmd_argv(&f->redis, (int)n, argv);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);
    lt_assert_single_field(&f->redis, name, field, "2");
    free(body);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
}

/* A reentrant handle's hold on the name is the same lock: the
 * non-reentrant handle refuses the holder; and the reentrant handle may
 * re-enter a hold the non-reentrant one took, as in Redisson. */
static void test_reentrant_and_nonreentrant_handles_share_the_lock(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200];
    rlock *plain, *non;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    plain = lt_get_lock(f->client, name);
    non = get(rlock_nonreentrant_get, f->client, name);
    assert_int_equal(rlock_lock(plain), RLOCK_OK);
    assert_int_equal(rlock_trylock(non, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_EREENTRY);
    assert_int_equal(rlock_unlock(plain), RLOCK_OK);
    assert_int_equal(rlock_lock(non), RLOCK_OK);
    assert_int_equal(rlock_lock(plain), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(rlock_unlock(plain), RLOCK_OK);
    assert_int_equal(rlock_unlock(non), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(plain);
    rlock_free(non);
}

/* Another client's thread waits for the held lock and gets it when the
 * holder unlocks (the unlock message wakes it, well before a re-check). */
static void assert_waiter_woken(lt_fixture *f, getter g, const char *name)
{
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);
    rlock *held = get(g, f->client, name);
    lt_waiter w = {.l = get(g, other, name),
                   .wait_ms = 10000,
                   .lease_ms = RLOCK_LEASE_WATCHDOG};
    int64_t t0;

    assert_int_equal(rlock_lock(held), RLOCK_OK);
    lt_waiter_start(&w);
    rt_sleep_ms(300); /* it is waiting by now */
    t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(held), RLOCK_OK);
    lt_waiter_join(&w);
    lt_waiter_assert_woken(&w, t0, "unlock", WAKE_MS);
    rlock_free(w.l);
    rlock_free(held);
    rlock_client_free(other);
}

static void test_other_owner_waits_and_is_woken_by_unlock(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_waiter_woken(*state, rlock_nonreentrant_get, name);
}

static void test_fair_other_owner_waits_and_is_woken_by_unlock(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    assert_waiter_woken(*state, rlock_nonreentrant_fair_get, name);
}

/* The async acquire of a holder is refused through its callback. */
static void test_async_second_acquire_is_refused(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;
    lt_completion first = {0}, second = {0};

    LT_TEST_NAME(name);
    l = get(rlock_nonreentrant_get, f->client, name);
    assert_int_equal(rlock_lock_async(l, 42, 0, RLOCK_LEASE_WATCHDOG,
                                      lt_on_done, &first),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&first, 5000), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, 42, 5000, RLOCK_LEASE_WATCHDOG,
                                      lt_on_done, &second),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&second, REFUSAL_MS),
                     RLOCK_EREENTRY);
    assert_int_equal(rlock_owner_hold_count(l, 42), 1);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* The watchdog renews a non-reentrant hold as it does a reentrant one. */
static void test_watchdog_keeps_the_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = get(rlock_nonreentrant_get, f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_sleep_ms(2 * WATCHDOG_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_kinds_are_reported(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *non, *fair;

    LT_TEST_NAME(name);
    non = get(rlock_nonreentrant_get, f->client, name);
    fair = get(rlock_nonreentrant_fair_get, f->client, name);
    assert_int_equal(rlock_kind(non), RLOCK_KIND_NONREENTRANT);
    assert_int_equal(rlock_kind(fair), RLOCK_KIND_NONREENTRANT_FAIR);
    assert_string_equal(rlock_err_name(RLOCK_EREENTRY), "RLOCK_EREENTRY");
    rlock_free(non);
    rlock_free(fair);
}

static int setup(void **state)
{
    return lt_group_setup_with_watchdog(state, WATCHDOG_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holder_second_acquire_is_refused),
        cmocka_unit_test(test_fair_holder_second_acquire_is_refused),
        cmocka_unit_test(test_script_refuses_a_hold_the_client_forgot),
        cmocka_unit_test(test_fair_script_refuses_a_hold_the_client_forgot),
        cmocka_unit_test(test_queued_script_refuses_a_holder),
        cmocka_unit_test(
            test_reentrant_and_nonreentrant_handles_share_the_lock),
        cmocka_unit_test(test_other_owner_waits_and_is_woken_by_unlock),
        cmocka_unit_test(test_fair_other_owner_waits_and_is_woken_by_unlock),
        cmocka_unit_test(test_async_second_acquire_is_refused),
        cmocka_unit_test(test_watchdog_keeps_the_hold),
        cmocka_unit_test(test_kinds_are_reported),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, setup, lt_group_teardown);
}
