/*
 * test_java_latch.c: rlock and the real Java Redisson share Redisson 4.4's
 * non-reentrant locks and the count-down latch, for one Redisson version
 * per program (compat/CMakeLists.txt builds test_java_latch_<version> for
 * each in compat/java/versions.txt; the non-reentrant cases only for 4.4
 * and later).
 *
 * One redis-server and one JVM for the group (support/java_testing.c's
 * fixture, jt_group_setup_one). C and Java each hold, wait and open; each side's release or
 * count-down wakes the other side's waiter. Wake-ups must come from the
 * messages: rlock's clients re-check only every 60 s (CT_RECHECK_MS),
 * Java's default wait is the holder's lease, a Redisson latch waiter
 * waits for the message alone, and a wake-up must come within
 * CT_WAKE_BOUND_MS. The wake-up tests print the latencies they measured
 * (wall clock, from the call that released to the waiter's return).
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

#include "compat_testing.h"
#include "harness.h"
#include "java_peer.h"
#include "java_testing.h"
#include "lock_testing.h"
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define LT_SUITE    "java_latch"
#define VERSION     RLOCK_JAVA_VERSION
#define WAKE_ROUNDS 5

typedef int (*getter)(rlock_client *c, const char *name, rlock **out);

static rlock *get(getter g, rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(g(c, name, &l), RLOCK_OK);
    return l;
}

static rlock_latch *latch(rlock_client *c, const char *name)
{
    rlock_latch *l = NULL;

    assert_int_equal(rlock_latch_get(c, name, &l), RLOCK_OK);
    return l;
}

/* ------------------------------------------------- non-reentrant locks */

/* Java's second acquire of its own hold throws; C's is refused; each
 * side's hold keeps the other out (one hold, one field, count 1). */
static void assert_holders_refused_both_ways(jt_fixture *f, getter g,
                                             const char *kind)
{
    char name[128];
    rlock *l;
    json_t *ev;

    snprintf(name, sizeof(name), LT_SUITE ":refused:%s", kind);
    l = get(g, f->a, name);
    jt_java_lock(f->ja, "h", kind, name);
    jp_send(f->ja, "h trylock %s %s 0", kind, name);
    ev = jp_expect(f->ja, "h", "error", JT_PEER_MS);
    assert_non_null(strstr(np_str(ev, "error"),
                           "IllegalMonitorStateException"));
    json_decref(ev);
    assert_int_equal(jt_single_count(&f->redis, name), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    jt_java_unlock(f->ja, "h", kind, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_EREENTRY);
    assert_false(jt_java_trylock(f->ja, kind, name, 0));
    assert_int_equal(jt_single_count(&f->redis, name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_nonreentrant_holders_refused_both_ways(void **state)
{
    assert_holders_refused_both_ways(*state, rlock_nonreentrant_get,
                                     "nonreentrant");
}

static void test_nonreentrant_fair_holders_refused_both_ways(void **state)
{
    assert_holders_refused_both_ways(*state, rlock_nonreentrant_fair_get,
                                     "nonreentrant_fair");
}

/* Java's getLock and rlock's non-reentrant handle are one lock: a Java
 * holder of the plain lock keeps the C non-reentrant one out. */
static void test_java_plain_hold_keeps_c_nonreentrant_out(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = get(rlock_nonreentrant_get, f->a, name);
    jt_java_lock(f->ja, "h", "lock", name);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    jt_java_unlock(f->ja, "h", "lock", name);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* WAKE_ROUNDS rounds of one wake-up (a java_testing.c round) on fresh
 * non-reentrant locks; prints the latencies under what. */
typedef long long (*wake_round)(jp_peer *p, rt_redis *r, const char *kind,
                                const char *name, rlock *l, int first);

static void nonreentrant_wake_rounds(jt_fixture *f, wake_round round,
                                     const char *test, const char *what)
{
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128];
        rlock *l;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", test, i);
        l = get(rlock_nonreentrant_get, f->a, name);
        lat[i] = round(f->ja, &f->redis, "nonreentrant", name, l, i == 0);
        rlock_free(l);
    }
    jt_report_latencies(VERSION, what, lat, WAKE_ROUNDS);
}

static void test_c_nonreentrant_waiter_is_woken_by_java_unlock(void **state)
{
    nonreentrant_wake_rounds(*state, jt_c_waiter_woken_by_java, __func__,
                             "Java unlock -> C non-reentrant waiter");
}

static void test_java_nonreentrant_waiter_is_woken_by_c_unlock(void **state)
{
    nonreentrant_wake_rounds(*state, jt_java_waiter_woken_by_c, __func__,
                             "C unlock -> Java non-reentrant waiter");
}

/* The fair kind: C and Java queue behind each other and each unlock hands
 * the lock to the other side's waiter. */
static void test_nonreentrant_fair_c_and_java_take_turns(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    ct_locker waiter;
    rlock *l;

    LT_TEST_NAME(name);
    l = get(rlock_nonreentrant_fair_get, f->a, name);
    jt_java_lock(f->ja, "h", "nonreentrant_fair", name);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    assert_false(ct_locker_wait(&waiter, 300));
    jt_java_unlock(f->ja, "h", "nonreentrant_fair", name);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);

    jp_send(f->ja, "w lock nonreentrant_fair %s", name);
    assert_true(jp_quiet(f->ja, "w", 300));
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    json_decref(jp_expect(f->ja, "w", "lock", CT_WAKE_BOUND_MS));
    jt_java_unlock(f->ja, "w", "nonreentrant_fair", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* ------------------------------------------------------ count-down latch */

/* A C thread waiting on a latch; done_wall_ms is the wall clock when its
 * await returned. */
typedef struct c_awaiter {
    rlock_latch *l;
    int rc;
    atomic_llong done_wall_ms; /* 0 while it waits */
    pthread_t thread;
} c_awaiter;

static void *c_awaiter_main(void *p)
{
    c_awaiter *w = p;

    w->rc = rlock_latch_await(w->l, RLOCK_WAIT_FOREVER);
    atomic_store(&w->done_wall_ms, ct_wall_ms());
    return NULL;
}

static void test_c_latch_waiter_is_opened_by_java_count_down(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[200];
        c_awaiter w = {.l = NULL};
        json_t *ev;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        lt_latch_channel_of(channel, sizeof(channel), name);
        w.l = latch(f->a, name);
        assert_int_equal(rlock_latch_try_set_count(w.l, 2), 1);
        assert_int_equal(pthread_create(&w.thread, NULL, c_awaiter_main, &w),
                         0);
        ct_wait_numsub(&f->redis, channel, 1, 5000);
        json_decref(jt_java_do(f->ja, "d", "countdown", "latch", name, NULL,
                               JT_PEER_MS));
        rt_sleep_ms(i == 0 ? 200 : 50); /* one count left: still waiting */
        assert_int_equal(atomic_load(&w.done_wall_ms), 0);
        ev = jt_java_do(f->ja, "d", "countdown", "latch", name, NULL,
                        JT_PEER_MS);
        assert_int_equal(pthread_join(w.thread, NULL), 0);
        assert_int_equal(w.rc, RLOCK_OK);
        lat[i] = atomic_load(&w.done_wall_ms) - np_int(ev, "t0");
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
        rlock_latch_free(w.l);
    }
    jt_report_latencies(VERSION, "Java countDown -> C latch waiter", lat,
                        WAKE_ROUNDS);
}

static void test_java_latch_waiter_is_opened_by_c_count_down(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[200];
        rlock_latch *l;
        json_t *ev;
        int64_t t0;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        lt_latch_channel_of(channel, sizeof(channel), name);
        l = latch(f->a, name);
        assert_int_equal(rlock_latch_try_set_count(l, 2), 1);
        jp_send(f->ja, "w await latch %s", name);
        ct_wait_numsub(&f->redis, channel, 1, JT_PEER_MS);
        assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
        assert_true(jp_quiet(f->ja, "w", i == 0 ? 200 : 50));
        t0 = ct_wall_ms();
        assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
        ev = jp_expect(f->ja, "w", "await", CT_WAKE_BOUND_MS);
        assert_true(np_bool(ev, "opened"));
        lat[i] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        rlock_latch_free(l);
    }
    jt_report_latencies(VERSION, "C countDown -> Java latch waiter", lat,
                        WAKE_ROUNDS);
}

/* The count each side sets is the other's: trySetCount refuses a count
 * set by the other side, and counts down are shared. */
static void test_latch_count_is_shared_both_ways(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    json_t *ev;

    LT_TEST_NAME(name);
    l = latch(f->a, name);
    assert_int_equal(rlock_latch_try_set_count(l, 3), 1);
    ev = jt_java_do(f->ja, "d", "setcount", "latch", name, "5", JT_PEER_MS);
    assert_false(np_bool(ev, "set"));
    json_decref(ev);
    json_decref(
        jt_java_do(f->ja, "d", "countdown", "latch", name, NULL, JT_PEER_MS));
    assert_int_equal(rlock_latch_count(l), 2);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    ev = jt_java_do(f->ja, "d", "count", "latch", name, NULL, JT_PEER_MS);
    assert_int_equal(np_int(ev, "count"), 1);
    json_decref(ev);
    ev = jt_java_do(f->ja, "d", "delete", "latch", name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    assert_int_equal(rlock_latch_count(l), 0);
    ev = jt_java_do(f->ja, "d", "setcount", "latch", name, "4", JT_PEER_MS);
    assert_true(np_bool(ev, "set"));
    json_decref(ev);
    assert_int_equal(rlock_latch_try_set_count(l, 9), 0);
    assert_int_equal(rlock_latch_count(l), 4);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* A Java await with a budget on a latch C keeps closed runs out, and one
 * on a latch C opened returns at once. */
static void test_java_await_budget_and_open_latch(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    json_t *ev;

    LT_TEST_NAME(name);
    l = latch(f->a, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    ev = jt_java_do(f->ja, "w", "await", "latch", name, "300", JT_PEER_MS);
    assert_false(np_bool(ev, "opened"));
    json_decref(ev);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    ev = jt_java_do(f->ja, "w", "await", "latch", name, "300", JT_PEER_MS);
    assert_true(np_bool(ev, "opened"));
    json_decref(ev);
    rlock_latch_free(l);
}

/* --------------------------------------------------------------- main */

static int group_setup(void **state)
{
    return jt_group_setup_one(state, VERSION);
}

#define T(fn)                                                                 \
    (struct CMUnitTest)                                                       \
        cmocka_unit_test_setup_teardown(fn, jt_setup, jt_teardown)

int main(void)
{
    struct CMUnitTest tests[16];
    size_t n = 0;

    /* Redisson added the non-reentrant locks in 4.4 */
    if (jt_version_at_least(VERSION, 4, 4)) {
        tests[n++] = T(test_nonreentrant_holders_refused_both_ways);
        tests[n++] = T(test_nonreentrant_fair_holders_refused_both_ways);
        tests[n++] = T(test_java_plain_hold_keeps_c_nonreentrant_out);
        tests[n++] = T(test_c_nonreentrant_waiter_is_woken_by_java_unlock);
        tests[n++] = T(test_java_nonreentrant_waiter_is_woken_by_c_unlock);
        tests[n++] = T(test_nonreentrant_fair_c_and_java_take_turns);
    }
    tests[n++] = T(test_c_latch_waiter_is_opened_by_java_count_down);
    tests[n++] = T(test_java_latch_waiter_is_opened_by_c_count_down);
    tests[n++] = T(test_latch_count_is_shared_both_ways);
    tests[n++] = T(test_java_await_budget_and_open_latch);

    rt_require_redis();
    jp_require_java(VERSION);
    return _cmocka_run_group_tests("test_java_latch_" VERSION, tests, n,
                                   group_setup, jt_group_teardown);
}
