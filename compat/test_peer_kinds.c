/*
 * test_peer_kinds.c: rlock's spin and fenced locks against a Redisson
 * client (node-redisson 1.0.4) holding the plain RLock of the same name.
 *
 * The peer has only RLock, so this tests what the other kinds share with
 * it (REDISSON-PROTOCOL.md sections 5 and 6): the lock hash at key N with
 * one field "<client id>:<thread id>" per owner, and, for the fenced lock,
 * the unlock message "0" on redisson_lock__channel:{N}. So:
 * - a C spin lock and a peer RLock exclude each other both ways, and a C
 *   spin waiter gets the lock soon after the peer lets go, by polling,
 *   without ever subscribing;
 * - a C fenced lock and a peer RLock exclude each other both ways, and
 *   unlock messages cross in both directions (rlock's clients re-check a
 *   held lock only every CT_RECHECK_MS, so a wake-up within
 *   CT_WAKE_BOUND_MS came from the message, not from the 30 s lease);
 * - the fenced token (redisson_lock_token:{N}) counts only the fenced
 *   lock's takes: the peer's turns never touch it.
 *
 * node-redisson subscribes only after its second attempt fails, so before
 * rlock unlocks, a test with a peer waiter waits for its subscription in
 * PUBSUB NUMSUB (see test_peer_wakeup.c and compat/README.md).
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

#define LT_SUITE      "peer_kinds"
#define SPIN_BOUND_MS 1000 /* a spin waiter polls at least every 128 ms */

/* ---------------------------------------------------------------- helpers */

static rlock *spin_get(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_spin_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

static rlock *fenced_get(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fenced_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* Writes the fenced token key of name (section 1.2's prefix rule). */
static void token_key_of(char *buf, size_t n, const char *name)
{
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "redisson_lock_token:%s", name);
    else
        snprintf(buf, n, "redisson_lock_token:{%s}", name);
}

/* Returns the token counter's value, 0 when the key does not exist. */
static long long token_value(ct_fixture *f, const char *name)
{
    char key[192], *v;
    long long n;

    token_key_of(key, sizeof(key), name);
    v = rt_cmd_str(&f->redis, "GET %s", key);
    if (v == NULL)
        return 0;
    n = atoll(v);
    free(v);
    assert_int_equal(rt_cmd_int(&f->redis, "PTTL %s", key), -1);
    return n;
}

/* Asserts that hash name has one field, owned by a thread of client c,
 * holding value. */
static void expect_held_by_client(ct_fixture *f, const char *name,
                                  rlock_client *c, const char *value)
{
    redisReply *rep = rt_cmd(&f->redis, "HGETALL %s", name);
    size_t n = strlen(rlock_client_id(c));

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_memory_equal(rep->element[0]->str, rlock_client_id(c), n);
    assert_int_equal(rep->element[0]->str[n], ':');
    assert_string_equal(rep->element[1]->str, value);
    freeReplyObject(rep);
}

/* Asserts that no channel has a subscriber. */
static void expect_no_lock_subscriptions(ct_fixture *f)
{
    redisReply *rep = rt_cmd(&f->redis, "PUBSUB CHANNELS");

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < rep->elements; i++)
        fail_msg("%s has a subscriber", rep->element[i]->str);
    freeReplyObject(rep);
}

/* ------------------------------------------------------------ spin lock */

static void test_c_spin_holder_makes_peer_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = spin_get(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_false(ct_peer_trylock(&f->redis, name, "300"));
    lt_assert_single_field(&f->redis, name, field, "1");

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ct_expect_peer_sees(&f->redis, name, 0, 1);
    rlock_free(l);
}

static void test_peer_holder_makes_c_spin_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    np_peer *holder;
    int64_t start;
    rlock *l;

    LT_TEST_NAME(name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    l = spin_get(f->a, name);

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

static void
test_c_spin_waiter_takes_lock_soon_after_peer_unlock_unsubscribed(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    ct_locker waiter;
    np_peer *holder;
    int64_t until, released;
    rlock *l;

    LT_TEST_NAME(name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    l = spin_get(f->b, name);
    ct_locker_start(&waiter, l, 20000);
    /* it polls: no subscription while it waits */
    until = rt_now_ms() + 600;
    while (rt_now_ms() < until) {
        expect_no_lock_subscriptions(f);
        rt_sleep_ms(50);
    }
    assert_false(ct_locker_wait(&waiter, 0));
    lt_assert_single_field(&f->redis, name, field, "1");

    released = rt_now_ms();
    ct_peer_release(holder);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - released < SPIN_BOUND_MS);
    expect_held_by_client(f, name, f->b, "1");
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    ct_expect_peer_sees(&f->redis, name, 0, 1);
    rlock_free(l);
}

static void test_peer_cannot_unlock_c_spin_hold(void **state)
{
    ct_fixture *f = *state;
    char name[128], *before, *after;
    np_peer *p;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    l = spin_get(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    before = lt_hash_dump(&f->redis, name);

    p = np_start("unlock", f->redis.url, name, NULL);
    ev = np_expect(p, "unlock", CT_PEER_MS);
    assert_false(np_bool(ev, "ok"));
    json_decref(ev);
    np_finish(p, CT_PEER_MS);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    free(before);
    free(after);
    rlock_free(l);
}

/* ----------------------------------------------------------- fenced lock */

static void test_c_fenced_holder_makes_peer_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[128];
    int64_t token = -1;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = fenced_get(f->a, name);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 1);

    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_false(ct_peer_trylock(&f->redis, name, "300"));
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(token_value(f, name), 1);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ct_expect_peer_sees(&f->redis, name, 0, 1);
    assert_int_equal(token_value(f, name), 1);
    rlock_free(l);
}

static void test_peer_holder_makes_c_fenced_trylock_fail(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    int64_t token = -77;
    np_peer *holder;
    rlock *l;

    LT_TEST_NAME(name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    l = fenced_get(f->a, name);

    assert_int_equal(rlock_fenced_trylock(l, 0, RLOCK_LEASE_WATCHDOG, &token),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_fenced_trylock(l, 300, 5000, &token),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(token, -77);
    assert_int_equal(token_value(f, name), 0); /* no token drawn */
    assert_int_equal(rlock_is_locked(l), 1);
    lt_assert_single_field(&f->redis, name, field, "1");

    ct_peer_release(holder);
    assert_int_equal(rlock_fenced_trylock(l, 0, RLOCK_LEASE_WATCHDOG, &token),
                     RLOCK_OK);
    assert_int_equal(token, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_peer_unlock_wakes_c_fenced_waiter(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160], channel[160];
    ct_locker waiter;
    np_peer *holder;
    int64_t released;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    l = fenced_get(f->b, name);
    ct_locker_start(&waiter, l, 20000);
    /* the fenced waiter listens on the plain lock channel */
    ct_wait_numsub(&f->redis, channel, 1, 5000);
    assert_false(ct_locker_wait(&waiter, 100));

    released = rt_now_ms();
    ct_peer_release(holder);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    /* well under the peer's 30 s lease and rlock's 60 s re-check */
    assert_true(waiter.done_ms - released < CT_WAKE_BOUND_MS);
    expect_held_by_client(f, name, f->b, "1");
    assert_int_equal(token_value(f, name), 1);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    rlock_free(l);
}

static void test_c_fenced_unlock_wakes_peer_waiter(void **state)
{
    ct_fixture *f = *state;
    char name[128], channel[160];
    int64_t token, released, woke;
    np_peer *waiter;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = fenced_get(f->a, name);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);

    waiter = np_start("wait", f->redis.url, name, NULL);
    json_decref(np_expect(waiter, "waiting", CT_PEER_MS));
    /* listening, not merely subscribed (test_peer_wakeup.c says why) */
    json_decref(np_expect(waiter, "listening", CT_PEER_MS));
    assert_int_equal(rt_numsub(&f->redis, channel), 1);

    released = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ev = np_expect(waiter, "acquired", CT_WAKE_BOUND_MS);
    woke = rt_now_ms();
    json_decref(ev);
    assert_true(woke - released < CT_WAKE_BOUND_MS);
    json_decref(np_expect(waiter, "unlocked", CT_PEER_MS));
    np_finish(waiter, CT_PEER_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(token_value(f, name), 1);
    rlock_free(l);
}

static void test_c_fenced_token_counts_on_while_peer_takes_turns(void **state)
{
    ct_fixture *f = *state;
    char name[128], field[160];
    int64_t token = -1;
    np_peer *holder;
    rlock *l;

    LT_TEST_NAME(name);
    l = fenced_get(f->a, name);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    /* the peer's take, hold and release leave the counter alone */
    holder = ct_peer_hold(&f->redis, name, field, sizeof(field));
    assert_int_equal(token_value(f, name), 1);
    assert_int_equal(rlock_fenced_token(l), 1);
    ct_peer_release(holder);
    assert_true(ct_peer_trylock(&f->redis, name, "0"));
    assert_int_equal(token_value(f, name), 1);

    /* the next fenced takes go on from there, re-entries included */
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 2);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 3);
    ct_expect_peer_sees(&f->redis, name, 1, 0);
    assert_int_equal(token_value(f, name), 3);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_fenced_token(l), 3);
    rlock_free(l);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, ct_setup, ct_teardown)
    const struct CMUnitTest tests[] = {
        /* spin */
        T(test_c_spin_holder_makes_peer_trylock_fail),
        T(test_peer_holder_makes_c_spin_trylock_fail),
        T(test_c_spin_waiter_takes_lock_soon_after_peer_unlock_unsubscribed),
        T(test_peer_cannot_unlock_c_spin_hold),
        /* fenced */
        T(test_c_fenced_holder_makes_peer_trylock_fail),
        T(test_peer_holder_makes_c_fenced_trylock_fail),
        T(test_peer_unlock_wakes_c_fenced_waiter),
        T(test_c_fenced_unlock_wakes_peer_waiter),
        T(test_c_fenced_token_counts_on_while_peer_takes_turns),
    };
#undef T

    rt_require_redis();
    np_require_node();
    return cmocka_run_group_tests(tests, ct_group_setup, ct_group_teardown);
}
