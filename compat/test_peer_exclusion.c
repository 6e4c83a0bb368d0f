/*
 * test_peer_exclusion.c: rlock and a Redisson client (node-redisson 1.0.4)
 * exclude each other on one lock name, and neither can release the other's
 * hold.
 *
 * Both sides write the same hash (REDISSON-PROTOCOL.md section 2): key N,
 * one field "<client id>:<thread id>" per owner holding its count. A hold is
 * visible to the other side as isLocked() and as a failing tryLock, and an
 * unlock by a non-owner changes nothing in Redis and publishes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_testing.h"
#include "harness.h"
#include "lock_testing.h"
#include "node_peer.h"
#include "rlock.h"

#define LT_SUITE    "peer_exclusion"
#define WATCHDOG_MS 30000
#define SENTINEL    "sentinel"

/* Only the fixture's client a: the other side is always a peer. */
static int setup(void **state)
{
    ct_fixture *f = *state;

    f->a = ct_connect(&f->redis);
    return 0;
}

/* ---------------------------------------------------------------- helpers */

/* Asserts that nothing was published on sub's channel since it started:
 * publishes a sentinel itself, which must be the first message to arrive
 * (Redis delivers in order). */
static void expect_no_message(rt_redis *r, rt_sub *s, const char *channel)
{
    assert_int_equal(rt_cmd_int(r, "PUBLISH %s %s", channel, SENTINEL), 1);
    assert_int_equal(rt_sub_wait(s, 1, 5000), 1);
    assert_string_equal(rt_sub_message(s, 0), SENTINEL);
}

/* ------------------------------------------------------------ exclusion */

static void test_c_holder_makes_peer_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    assert_false(ct_peer_trylock(&f->redis, name, "0"));
    assert_false(ct_peer_trylock(&f->redis, name, "300"));
    lt_assert_single_field(&f->redis, name, field, "1");

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(ct_peer_trylock(&f->redis, name, "0"));
    rlock_free(l);
}

static void test_peer_holder_makes_c_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    np_peer *holder;
    rlock *l;
    int64_t start;

    LT_TEST_NAME(name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    l = lt_get_lock(f->a, name);

    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    start = rt_now_ms();
    assert_int_equal(rlock_trylock(l, 300, 5000), RLOCK_ETIMEDOUT);
    assert_true(rt_now_ms() - start >= 300);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    lt_assert_single_field(&f->redis, name, field, "1");

    ct_peer_release(holder);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* --------------------------------------------------- unlock by non-owner */

static void test_peer_cannot_unlock_c_hold(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128], channel[160], *before, *after;
    np_peer *p;
    rt_sub *sub;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    before = lt_hash_dump(&f->redis, name);

    p = np_start("unlock", f->redis.url, name, NULL);
    ev = np_expect(p, "unlock", CT_PEER_MS);
    assert_false(np_bool(ev, "ok"));
    json_decref(ev);
    np_finish(p, CT_PEER_MS);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > WATCHDOG_MS - 5000);
    expect_no_message(&f->redis, sub, channel);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    free(before);
    free(after);
    rt_sub_stop(sub);
    rlock_free(l);
}

static void test_c_cannot_unlock_peer_hold(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160], channel[160], *before, *after;
    np_peer *holder;
    rt_sub *sub;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    before = lt_hash_dump(&f->redis, name);
    l = lt_get_lock(f->a, name);

    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    expect_no_message(&f->redis, sub, channel);
    /* the peer still holds, and its own unlock still works */
    ct_peer_release(holder);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    free(before);
    free(after);
    rt_sub_stop(sub);
    rlock_free(l);
}

/* ------------------------------------------------------------- nesting */

static void test_c_nested_holds_are_one_field_counting_three(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = lt_get_lock(f->a, name);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);

    lt_assert_single_field(&f->redis, name, field, "3");
    assert_int_equal(rlock_hold_count(l), 3);
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_peer_sees_c_nested_lock_held_until_third_unlock(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = lt_get_lock(f->a, name);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "2");
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    ct_expect_peer_sees(&f->redis, name, 0, 1);
    rlock_free(l);
}

static void test_c_sees_peer_nested_lock_held_until_third_unlock(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    np_peer *p;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->a, name);
    p = np_start("nested", f->redis.url, name,
                 (const char *const[]){"3", NULL});
    for (int k = 1; k <= 3; k++) {
        ev = np_expect(p, "locked", CT_PEER_MS);
        assert_int_equal(np_int(ev, "holds"), k);
        snprintf(field, sizeof(field), "%s", np_str(ev, "field"));
        json_decref(ev);
    }
    lt_assert_single_field(&f->redis, name, field, "3");

    for (int left = 2; left >= 0; left--) {
        assert_int_equal(rlock_is_locked(l), 1);
        assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        np_send(p, "unlock");
        ev = np_expect(p, "unlocked", CT_PEER_MS);
        assert_int_equal(np_int(ev, "holds"), left);
        assert_int_equal(np_bool(ev, "locked"), left > 0);
        json_decref(ev);
        if (left > 0) {
            char count[8];

            snprintf(count, sizeof(count), "%d", left);
            lt_assert_single_field(&f->redis, name, field, count);
        }
    }
    json_decref(np_expect(p, "done", CT_PEER_MS));
    np_finish(p, CT_PEER_MS);

    assert_int_equal(rlock_is_locked(l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ---------------------------------------------------------- hash tags */

static void test_peer_and_c_exclude_on_name_with_leading_hash_tag(void **state)
{
    ct_fixture *f = *state;
    const char *name = "{peer_exclusion}tagged";
    char field[128];
    rlock *l;

    lt_owner_field(field, sizeof(field), f->a);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ct_expect_peer_sees(&f->redis, name, 0, 1);
    rlock_free(l);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, ct_teardown)
    const struct CMUnitTest tests[] = {
        T(test_c_holder_makes_peer_trylock_fail),
        T(test_peer_holder_makes_c_trylock_fail),
        T(test_peer_cannot_unlock_c_hold),
        T(test_c_cannot_unlock_peer_hold),
        T(test_c_nested_holds_are_one_field_counting_three),
        T(test_peer_sees_c_nested_lock_held_until_third_unlock),
        T(test_c_sees_peer_nested_lock_held_until_third_unlock),
        T(test_peer_and_c_exclude_on_name_with_leading_hash_tag),
    };
#undef T

    rt_require_redis();
    np_require_node();
    return cmocka_run_group_tests(tests, ct_group_setup, ct_group_teardown);
}
