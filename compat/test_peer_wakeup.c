/*
 * test_peer_wakeup.c: unlock messages cross between rlock and a Redisson
 * client (node-redisson 1.0.4) in both directions.
 *
 * A waiter must be woken by the other side's unlock message, not by its
 * lease running out or by polling: every lock here is held under the 30 s
 * watchdog lease, rlock's clients re-check a held lock only every 60 s
 * (CT_RECHECK_MS), and a wake-up must come within CT_WAKE_BOUND_MS (3 s).
 *
 * node-redisson subscribes only after its second acquire attempt fails, and
 * attaches its message listener only after the SUBSCRIBE reply has been read
 * (a later microtask), so an unlock that lands before then is missed and its
 * waiter sleeps until the lock's TTL (compat/README.md). That is the peer's
 * bug, not rlock's, so before rlock unlocks a peer waiter, these tests wait
 * for the peer's own "listening" event (compat/node/wait.js): PUBSUB NUMSUB
 * shows the subscription as soon as the server has it, which under load can
 * come well before the peer listens.
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

#define LT_SUITE    "peer_wakeup"
#define PEER_MS     10000 /* budget for a peer event that needs no wait */
#define WATCHDOG_MS 30000

/* ------------------------------------------------------------------ tests */

static void test_c_waiter_is_woken_by_peer_unlock(void **state)
{
    ct_fixture *f = *state;
    char name[128], channel[160];
    ct_locker waiter;
    json_t *ev;
    np_peer *holder;
    rlock *l;
    int64_t released;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    holder =
        np_start("hold", f->redis.url, name, (const char *const[]){"-1", NULL});
    json_decref(np_expect(holder, "locked", PEER_MS));

    l = lt_get_lock(f->a, name);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    /* the C waiter is subscribed, and still waiting on the peer's hold */
    ct_wait_numsub(&f->redis, channel, 1, 5000);
    assert_false(ct_locker_wait(&waiter, 200));
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > WATCHDOG_MS - 5000);

    released = rt_now_ms();
    np_send(holder, "unlock");
    ev = np_expect(holder, "unlocked", PEER_MS);
    json_decref(ev);

    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - released < CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    np_finish(holder, PEER_MS);
    rlock_free(l);
}

static void test_peer_waiter_is_woken_by_c_unlock(void **state)
{
    ct_fixture *f = *state;
    char name[128], channel[160];
    np_peer *waiter;
    json_t *ev;
    rlock *l;
    int64_t released, woke;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    waiter = np_start("wait", f->redis.url, name, NULL);
    json_decref(np_expect(waiter, "waiting", PEER_MS));
    /* the peer is past its retry and its listener is attached (see the
     * file comment): not merely subscribed */
    json_decref(np_expect(waiter, "listening", PEER_MS));
    assert_int_equal(rt_numsub(&f->redis, channel), 1);

    released = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ev = np_expect(waiter, "acquired", CT_WAKE_BOUND_MS);
    woke = rt_now_ms();
    json_decref(ev);
    assert_true(woke - released < CT_WAKE_BOUND_MS);
    json_decref(np_expect(waiter, "unlocked", PEER_MS));
    np_finish(waiter, PEER_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void
test_c_waiter_in_other_client_is_woken_by_peer_unlock_of_lease(void **state)
{
    ct_fixture *f = *state;
    char name[128], channel[160];
    ct_locker waiter;
    np_peer *holder;
    rlock *l;
    int64_t released;

    /* the peer holds with an explicit 30 s lease and no watchdog */
    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    holder = np_start("hold", f->redis.url, name,
                      (const char *const[]){"-1", "30000", NULL});
    json_decref(np_expect(holder, "locked", PEER_MS));

    l = lt_get_lock(f->b, name);
    ct_locker_start(&waiter, l, 20000);
    ct_wait_numsub(&f->redis, channel, 1, 5000);
    released = rt_now_ms();
    np_send(holder, "unlock");
    json_decref(np_expect(holder, "unlocked", PEER_MS));

    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - released < CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    np_finish(holder, PEER_MS);
    rlock_free(l);
}

static void test_peer_force_unlock_wakes_c_waiters(void **state)
{
    ct_fixture *f = *state;
    char name[128], channel[160];
    ct_locker same_client, other_client, *first, *second;
    np_peer *forcer;
    json_t *ev;
    rlock *la, *lb;
    int64_t forced;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    la = lt_get_lock(f->a, name);
    lb = lt_get_lock(f->b, name);
    assert_int_equal(rlock_lock(la), RLOCK_OK);
    /* one waiter in the holder's own client, one in another client; they
     * queue in rlock's queue (rlock_config_set_lock_queue, the default),
     * whose head alone listens on the lock's channel: the peer's message
     * wakes it, and its taking the lock tells the other its turn is next */
    ct_locker_start(&same_client, la, RLOCK_WAIT_FOREVER);
    ct_wait_queued(&f->redis, name, 1, 5000);
    ct_locker_start(&other_client, lb, RLOCK_WAIT_FOREVER);
    ct_wait_queued(&f->redis, name, 2, 5000);
    ct_wait_numsub(&f->redis, channel, 1, 5000);

    forcer = np_start("force_unlock", f->redis.url, name, NULL);
    ev = np_expect(forcer, "force_unlock", PEER_MS);
    forced = rt_now_ms();
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    np_finish(forcer, PEER_MS);

    /* the message wakes the head, which wins */
    for (;;) {
        if (ct_locker_wait(&same_client, 10)) {
            first = &same_client;
            second = &other_client;
            break;
        }
        if (ct_locker_wait(&other_client, 10)) {
            first = &other_client;
            second = &same_client;
            break;
        }
        assert_true(rt_now_ms() - forced < CT_WAKE_BOUND_MS);
    }
    assert_int_equal(first->acquired_rc, RLOCK_OK);
    assert_false(ct_locker_wait(second, 100));

    /* and the winner's unlock wakes the other */
    forced = rt_now_ms();
    assert_int_equal(ct_locker_release(first), RLOCK_OK);
    assert_true(ct_locker_wait(second, CT_WAKE_BOUND_MS));
    assert_int_equal(second->acquired_rc, RLOCK_OK);
    assert_true(second->done_ms - forced < CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(second), RLOCK_OK);

    /* the forced-out holder's own unlock: the hold is gone */
    assert_int_equal(rlock_unlock(la), RLOCK_ELOST);
    rlock_free(la);
    rlock_free(lb);
}

static void test_peer_force_unlock_makes_c_holder_see_lock_lost(void **state)
{
    ct_fixture *f = *state;
    char name[128];
    np_peer *forcer, *taker;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_is_held_by_me(l), 1);

    forcer = np_start("force_unlock", f->redis.url, name, NULL);
    ev = np_expect(forcer, "force_unlock", PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    np_finish(forcer, PEER_MS);

    /* the lock is free for anyone: the peer takes it and lets it go */
    taker = np_start("trylock", f->redis.url, name,
                     (const char *const[]){"0", NULL});
    ev = np_expect(taker, "trylock", PEER_MS);
    assert_true(np_bool(ev, "acquired"));
    json_decref(ev);
    json_decref(np_expect(taker, "unlocked", PEER_MS));
    np_finish(taker, PEER_MS);

    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_peer_force_unlock_makes_c_unlock_return_lost(void **state)
{
    ct_fixture *f = *state;
    char name[128];
    np_peer *forcer;
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    forcer = np_start("force_unlock", f->redis.url, name, NULL);
    ev = np_expect(forcer, "force_unlock", PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    np_finish(forcer, PEER_MS);

    /* no query first: the unlock itself finds the hold gone */
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* ------------------------------------------------- the peer's deviation */

/* node-redisson wraps a name in braces unless it STARTS with '{', where
 * Redisson (and rlock) use it as is whenever it CONTAINS one (section 1.2).
 * For "head{tag}tail" the peer publishes on a channel no Redisson client
 * listens on. This pins that deviation, so that docs/compatibility.md's
 * account of it stays true. */
static void
test_peer_deviation_inner_brace_unlock_goes_to_other_channel(void **state)
{
    ct_fixture *f = *state;
    const char *name = "peer_wakeup:head{tag}tail";
    const char *redisson = "redisson_lock__channel:peer_wakeup:head{tag}tail";
    const char *peers = "redisson_lock__channel:{peer_wakeup:head{tag}tail}";
    rt_sub *right, *wrong;
    np_peer *holder;

    (void)f;
    right = rt_sub_start(&f->redis, redisson);
    wrong = rt_sub_start(&f->redis, peers);
    assert_non_null(right);
    assert_non_null(wrong);
    holder =
        np_start("hold", f->redis.url, name, (const char *const[]){"-1", NULL});
    json_decref(np_expect(holder, "locked", PEER_MS));
    np_send(holder, "unlock");
    json_decref(np_expect(holder, "unlocked", PEER_MS));
    np_finish(holder, PEER_MS);

    assert_int_equal(rt_sub_wait(wrong, 1, 5000), 1);
    assert_string_equal(rt_sub_message(wrong, 0), "0");
    /* nothing on Redisson's channel: a sentinel arrives first */
    assert_int_equal(rt_cmd_int(&f->redis, "PUBLISH %s sentinel", redisson), 1);
    assert_int_equal(rt_sub_wait(right, 1, 5000), 1);
    assert_string_equal(rt_sub_message(right, 0), "sentinel");
    rt_sub_stop(right);
    rt_sub_stop(wrong);
}

/* What that deviation costs an rlock waiter with the default settings: the
 * unlock message never comes, and the waiter finds the lock free at its
 * next re-check (rlock's recheck interval, 2 s by default), not after the
 * peer's 30 s lease. */
static void
test_c_waiter_recovers_from_peer_inner_brace_unlock_by_recheck(void **state)
{
    ct_fixture *f = *state;
    const char *name = "peer_wakeup:recheck{tag}";
    rlock_client *c;
    ct_locker waiter;
    np_peer *holder;
    rlock *l;
    int64_t released;

    holder =
        np_start("hold", f->redis.url, name, (const char *const[]){"-1", NULL});
    json_decref(np_expect(holder, "locked", PEER_MS));
    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    l = lt_get_lock(c, name);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    ct_wait_numsub(&f->redis, "redisson_lock__channel:peer_wakeup:recheck{tag}",
                   1, 5000);

    released = rt_now_ms();
    np_send(holder, "unlock");
    json_decref(np_expect(holder, "unlocked", PEER_MS));
    np_finish(holder, PEER_MS);
    assert_true(ct_locker_wait(&waiter, 2000 + CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - released < 2000 + CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_waiter_is_woken_by_peer_unlock,
                                        ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_peer_waiter_is_woken_by_c_unlock,
                                        ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(
            test_c_waiter_in_other_client_is_woken_by_peer_unlock_of_lease,
            ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_peer_force_unlock_wakes_c_waiters,
                                        ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(
            test_peer_force_unlock_makes_c_holder_see_lock_lost, ct_setup,
            ct_teardown),
        cmocka_unit_test_setup_teardown(
            test_peer_force_unlock_makes_c_unlock_return_lost, ct_setup,
            ct_teardown),
        cmocka_unit_test_setup_teardown(
            test_peer_deviation_inner_brace_unlock_goes_to_other_channel,
            ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(
            test_c_waiter_recovers_from_peer_inner_brace_unlock_by_recheck,
            ct_setup, ct_teardown),
    };

    rt_require_redis();
    np_require_node();
    return cmocka_run_group_tests(tests, ct_group_setup, ct_group_teardown);
}
