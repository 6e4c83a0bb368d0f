/*
 * test_java_peer.c: rlock and the real Java Redisson (compat/java's Driver)
 * share locks, for one Redisson version per test program.
 *
 * compat/CMakeLists.txt builds this file once per version in
 * compat/java/versions.txt, as test_java_peer_<version>, with
 * RLOCK_JAVA_VERSION naming it. Each program starts one redis-server and
 * two JVMs for all its tests (JVM start-up is the slow part; the fixture
 * and helpers are support/java_testing.c's): "ja" with Redisson's default
 * 30 s watchdog and "jb" with a 2 s one; the lost-reply test starts a third
 * with a 300 ms command timeout. Which tests run for which version is in
 * compat/README.md; a version lacking a feature (the fenced lock before
 * 3.19, the unlock latch before 3.24) does not register its tests.
 *
 * Wake-ups must come from unlock messages: rlock's clients here re-check a
 * held lock only every 60 s (CT_RECHECK_MS), Java's default wait is the
 * holder's lease (30 s), and a wake-up must come within CT_WAKE_BOUND_MS.
 * The wake-up tests print the latencies they measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat_testing.h"
#include "harness.h"
#include "java_peer.h"
#include "java_testing.h"
#include "lock_testing.h"
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define LT_SUITE       "java_peer"
#define VERSION        RLOCK_JAVA_VERSION
#define WAKE_ROUNDS    5

/* ------------------------------------------------------------ versions */

/* Whether this version is at least major.minor. */
static int version_at_least(int major, int minor)
{
    return jt_version_at_least(VERSION, major, minor);
}

/* Redisson added the fenced lock in 3.19 and the unlock latch in 3.24. */
static int has_fenced(void)
{
    return version_at_least(3, 19);
}

static int has_latch(void)
{
    return version_at_least(3, 24);
}

/* --------------------------------------------------------- wake-ups */

static void test_c_waiter_is_woken_by_java_unlock(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128];
        rlock *l;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        l = lt_get_lock(f->a, name);
        lat[i] = jt_c_waiter_woken_by_java(f->ja, &f->redis, "lock", name, l,
                                           i == 0);
        rlock_free(l);
    }
    jt_report_latencies(VERSION, "Java unlock -> C waiter", lat, WAKE_ROUNDS);
}

static void test_java_waiter_is_woken_by_c_unlock(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128];
        rlock *l;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        l = lt_get_lock(f->a, name);
        lat[i] = jt_java_waiter_woken_by_c(f->ja, &f->redis, "lock", name, l,
                                           i == 0);
        rlock_free(l);
    }
    jt_report_latencies(VERSION, "C unlock -> Java waiter", lat, WAKE_ROUNDS);
}

/* ------------------------------------------------------- every kind */

/* Java holds, C's tryLock(0) fails and a C waiter waits; Java's unlock
 * wakes it; then C holds, Java's tryLock(0) fails and a Java waiter waits;
 * C's unlock wakes it. For the fenced lock every acquisition's token is
 * larger than the one before, whichever side drew it. The Java thread is
 * named after the kind, so that one kind's failure, which may leave it
 * blocked, does not hold up the next kind's test. */
static void take_turns(jt_fixture *f, const char *kind, const char *name)
{
    jt_lock h = jt_c_get(f->a, kind, name);
    ct_locker waiter;
    json_t *ev;
    int64_t token = 0, t0;

    ev = jt_java_do(f->ja, kind, "lock", kind, name, NULL, JT_PEER_MS);
    if (strcmp(kind, "fenced") == 0)
        token = np_int(ev, "token");
    json_decref(ev);
    assert_int_equal(rlock_trylock(h.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);

    ct_locker_start(&waiter, h.l, RLOCK_WAIT_FOREVER);
    assert_false(ct_locker_wait(&waiter, 300));
    jt_java_unlock(f->ja, kind, kind, name);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    if (strcmp(kind, "fenced") == 0) {
        assert_true(rlock_fenced_token(h.l) > token);
        token = rlock_fenced_token(h.l);
    }

    assert_false(jt_java_trylock(f->ja, kind, name, 0));
    jp_send(f->ja, "%s lock %s %s", kind, kind, name);
    assert_true(jp_quiet(f->ja, kind, 300));
    t0 = ct_wall_ms();
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    ev = jp_expect(f->ja, kind, "lock", CT_WAKE_BOUND_MS);
    assert_true(np_int(ev, "t") - t0 < CT_WAKE_BOUND_MS);
    if (strcmp(kind, "fenced") == 0)
        assert_true(np_int(ev, "token") > token);
    json_decref(ev);
    jt_java_unlock(f->ja, kind, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    jt_c_free(&h);
}

static void test_lock_c_and_java_take_turns(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    take_turns(*state, "lock", name);
}

static void test_fair_lock_c_and_java_take_turns(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    take_turns(*state, "fair", name);
}

static void test_write_lock_c_and_java_take_turns(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    take_turns(*state, "write", name);
}

static void test_spin_lock_c_and_java_take_turns(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    take_turns(*state, "spin", name);
}

static void test_fenced_lock_c_and_java_take_turns(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    take_turns(*state, "fenced", name);
}

static void
test_read_lock_is_shared_and_excludes_writers_both_ways(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    jt_lock r, w;

    LT_TEST_NAME(name);
    r = jt_c_get(f->a, "read", name);
    w = jt_c_get(f->a, "write", name);

    jt_java_lock(f->ja, "r", "read", name);
    assert_int_equal(rlock_trylock(r.l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_trylock(w.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_false(jt_java_trylock(f->ja, "write", name, 0));
    assert_int_equal(rlock_unlock(r.l), RLOCK_OK);
    jt_java_unlock(f->ja, "r", "read", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    assert_int_equal(rlock_lock(w.l), RLOCK_OK);
    assert_false(jt_java_trylock(f->ja, "read", name, 0));
    assert_false(jt_java_trylock(f->ja, "write", name, 0));
    assert_int_equal(rlock_unlock(w.l), RLOCK_OK);
    assert_true(jt_java_trylock(f->ja, "read", name, 0));
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    jt_c_free(&r);
    jt_c_free(&w);
}

/* Neither side can release the other side's hold of kind: the refused
 * unlock leaves the hash as it was. */
static void non_owner_unlock_is_refused_both_ways(jt_fixture *f,
                                                  const char *kind,
                                                  const char *name)
{
    jt_lock h = jt_c_get(f->a, kind, name);
    char tid[32], *before, *after;
    json_t *ev;

    snprintf(tid, sizeof(tid), "no-%s", kind);
    assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    before = lt_hash_dump(&f->redis, name);
    ev = jt_java_do(f->ja, tid, "unlock", kind, name, NULL, JT_PEER_MS);
    assert_false(np_bool(ev, "ok"));
    assert_non_null(strstr(np_str(ev, "error"), "IllegalMonitorState"));
    json_decref(ev);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    jt_java_lock(f->ja, tid, kind, name);
    before = lt_hash_dump(&f->redis, name);
    assert_int_equal(rlock_unlock(h.l), RLOCK_ENOTOWNER);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(before);
    free(after);
    jt_java_unlock(f->ja, tid, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    jt_c_free(&h);
}

/* Whether Redisson's unlock() of kind returns normally when the lock is
 * gone altogether (measured on the five versions in versions.txt). */
static int unlock_of_missing_lock_succeeds(const char *kind)
{
    if (strcmp(kind, "fair") == 0)
        return 1;
    if (strcmp(kind, "read") == 0 || strcmp(kind, "write") == 0)
        return !version_at_least(3, 52);
    return 0;
}

/* Each side's forceUnlock deletes the other side's hold of kind, whose
 * owner's unlock then finds it gone. */
static void force_unlock_frees_the_other_side(jt_fixture *f, const char *kind,
                                              const char *name)
{
    jt_lock h = jt_c_get(f->a, kind, name);
    char tid[32];
    json_t *ev;

    snprintf(tid, sizeof(tid), "fu-%s", kind);
    assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    ev = jt_java_do(f->ja, tid, "force", kind, name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(h.l), RLOCK_ELOST);

    jt_java_lock(f->ja, tid, kind, name);
    assert_int_equal(rlock_force_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    ev = jt_java_do(f->ja, tid, "probe", kind, name, NULL, JT_PEER_MS);
    assert_false(np_bool(ev, "locked"));
    assert_false(np_bool(ev, "held"));
    json_decref(ev);
    /* Java's unlock of the lost hold: RLock's script (the plain, spin and
     * fenced locks) refuses it, but Redisson's fair unlock, and the
     * read-write unlock of the versions here up to 3.29.0, report success
     * when the lock is gone (they publish to the next waiter and return 1).
     * Either way it must not bring the lock back. */
    ev = jt_java_do(f->ja, tid, "unlock", kind, name, NULL, JT_PEER_MS);
    assert_int_equal(np_bool(ev, "ok"), unlock_of_missing_lock_succeeds(kind));
    json_decref(ev);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    jt_c_free(&h);
}

/* Three nested holds are one owner counting 3, and the lock stays closed
 * to the other side until the third unlock: first Java's holds, then C's. */
static void nested_holds_are_exact_both_ways(jt_fixture *f, const char *kind,
                                             const char *name)
{
    jt_lock h = jt_c_get(f->a, kind, name);
    jt_lock other = jt_c_get(f->b, jt_excluded_by(kind), name);
    char tid[32];

    snprintf(tid, sizeof(tid), "nest-%s", kind);
    for (int i = 0; i < 3; i++)
        jt_java_lock(f->ja, tid, kind, name);
    assert_int_equal(jt_owner_count(&f->redis, name), 3);
    jt_java_unlock(f->ja, tid, kind, name);
    jt_java_unlock(f->ja, tid, kind, name);
    assert_int_equal(jt_owner_count(&f->redis, name), 1);
    assert_int_equal(rlock_trylock(other.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    jt_java_unlock(f->ja, tid, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    assert_int_equal(jt_owner_count(&f->redis, name), 3);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(jt_owner_count(&f->redis, name), 1);
    assert_false(jt_java_trylock(f->ja, jt_excluded_by(kind), name, 0));
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    jt_c_free(&h);
    jt_c_free(&other);
}

/* The three tests above for one kind (RLock's own are further down). */
#define KIND_TESTS(kind)                                                      \
    static void test_##kind##_unlock_by_non_owner_is_refused_both_ways(       \
        void **state)                                                         \
    {                                                                         \
        char name[128];                                                       \
                                                                              \
        LT_TEST_NAME(name);                                                   \
        non_owner_unlock_is_refused_both_ways(*state, #kind, name);           \
    }                                                                         \
    static void test_##kind##_force_unlock_frees_the_other_side(void **state) \
    {                                                                         \
        char name[128];                                                       \
                                                                              \
        LT_TEST_NAME(name);                                                   \
        force_unlock_frees_the_other_side(*state, #kind, name);               \
    }                                                                         \
    static void test_##kind##_nested_holds_are_exact_both_ways(void **state)  \
    {                                                                         \
        char name[128];                                                       \
                                                                              \
        LT_TEST_NAME(name);                                                   \
        nested_holds_are_exact_both_ways(*state, #kind, name);                \
    }

KIND_TESTS(fair)
KIND_TESTS(read)
KIND_TESTS(write)
KIND_TESTS(spin)
KIND_TESTS(fenced)

/* A multi-lock (or Redlock) on names n[0..n-1]: C's over rlock handles and
 * Java's RedissonMultiLock (RedissonRedLock) over getLock()s exclude each
 * other, and each side's all-or-nothing hold blocks the other's single
 * lock on one of the names. */
static void multi_take_turns(jt_fixture *f, const char *kind, int redlock)
{
    char names[3][128], list[400];
    rlock *ls[3];
    rlock_multi *m;
    int n = redlock ? 3 : 2;

    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), LT_SUITE ":%s:%d", kind, i);
        ls[i] = lt_get_lock(f->a, names[i]);
    }
    snprintf(list, sizeof(list), "%s,%s%s%s", names[0], names[1],
             redlock ? "," : "", redlock ? names[2] : "");
    assert_int_equal(redlock ? rlock_redlock_new(ls, 3, &m)
                             : rlock_multi_new(ls, 2, &m),
                     RLOCK_OK);

    jt_java_lock(f->ja, "m", kind, list);
    for (int i = 0; i < n; i++)
        assert_int_equal(rlock_is_locked(ls[i]), 1);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ETIMEDOUT);
    jt_java_unlock(f->ja, "m", kind, list);
    for (int i = 0; i < n; i++)
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[i]), 0);

    assert_int_equal(rlock_multi_lock(m, NULL), RLOCK_OK);
    assert_false(jt_java_trylock(f->ja, kind, list, 0));
    assert_false(jt_java_trylock(f->ja, "lock", names[1], 0));
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    assert_true(jt_java_trylock(f->ja, kind, list, 0));
    for (int i = 0; i < n; i++) {
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[i]), 0);
        rlock_free(ls[i]);
    }
    rlock_multi_free(m);
}

static void test_multilock_c_and_java_exclude_each_other(void **state)
{
    multi_take_turns(*state, "multi", 0);
}

static void test_redlock_c_and_java_exclude_each_other(void **state)
{
    multi_take_turns(*state, "red", 1);
}

/* ------------------------------------------------------------- nesting */

static void test_java_nested_holds_are_one_field_counting_three(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->a, name);
    for (int i = 0; i < 3; i++)
        jt_java_lock(f->ja, "n", "lock", name);
    assert_int_equal(jt_single_count(&f->redis, name), 3);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 20000);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);

    jt_java_unlock(f->ja, "n", "lock", name);
    jt_java_unlock(f->ja, "n", "lock", name);
    assert_int_equal(jt_single_count(&f->redis, name), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    jt_java_unlock(f->ja, "n", "lock", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_java_sees_c_nested_lock_held_until_third_unlock(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->a, name);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);
    ev = jt_java_do(f->ja, "p", "probe", "lock", name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "locked"));
    assert_false(np_bool(ev, "held"));
    assert_int_equal(np_int(ev, "holds"), 0);
    json_decref(ev);
    assert_int_equal(jt_single_count(&f->redis, name), 3);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(jt_java_trylock(f->ja, "lock", name, 0));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(jt_java_trylock(f->ja, "lock", name, 0));
    rlock_free(l);
}

/* ---------------------------------------------------- non-owner unlock */

static void test_java_cannot_unlock_c_hold(void **state)
{
    jt_fixture *f = *state;
    char name[128], field[128];
    json_t *ev;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->a);
    l = lt_get_lock(f->a, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    ev = jt_java_do(f->ja, "x", "unlock", "lock", name, NULL, JT_PEER_MS);
    assert_false(np_bool(ev, "ok"));
    assert_non_null(strstr(np_str(ev, "error"), "IllegalMonitorState"));
    json_decref(ev);

    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_c_cannot_unlock_java_hold(void **state)
{
    jt_fixture *f = *state;
    char name[128], *before, *after;
    rlock *l;

    LT_TEST_NAME(name);
    jt_java_lock(f->ja, "x", "lock", name);
    before = lt_hash_dump(&f->redis, name);
    l = lt_get_lock(f->a, name);

    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    jt_java_unlock(f->ja, "x", "lock", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    free(before);
    free(after);
    rlock_free(l);
}

/* ------------------------------------------------------------- force */

static void
test_java_force_unlock_frees_c_hold_and_wakes_c_waiter(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    ct_locker waiter;
    json_t *ev;
    rlock *la, *lb;
    int64_t forced;

    LT_TEST_NAME(name);
    la = lt_get_lock(f->a, name);
    lb = lt_get_lock(f->b, name);
    assert_int_equal(rlock_lock(la), RLOCK_OK);
    ct_locker_start(&waiter, lb, RLOCK_WAIT_FOREVER);
    assert_false(ct_locker_wait(&waiter, 300));

    forced = rt_now_ms();
    ev = jt_java_do(f->ja, "f", "force", "lock", name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - forced < CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    assert_int_equal(rlock_unlock(la), RLOCK_ELOST);
    rlock_free(la);
    rlock_free(lb);
}

static void
test_c_force_unlock_frees_java_hold_and_wakes_java_waiter(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    json_t *ev;
    rlock *l;
    int64_t t0;

    LT_TEST_NAME(name);
    jt_java_lock(f->ja, "f1", "lock", name);
    jp_send(f->ja, "f2 lock lock %s", name);
    assert_true(jp_quiet(f->ja, "f2", 300));

    l = lt_get_lock(f->a, name);
    t0 = ct_wall_ms();
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    ev = jp_expect(f->ja, "f2", "lock", CT_WAKE_BOUND_MS);
    assert_true(np_int(ev, "t") - t0 < CT_WAKE_BOUND_MS);
    json_decref(ev);

    ev = jt_java_do(f->ja, "f1", "unlock", "lock", name, NULL, JT_PEER_MS);
    assert_false(np_bool(ev, "ok"));
    json_decref(ev);
    jt_java_unlock(f->ja, "f2", "lock", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* ------------------------------------------------------------ watchdog */

/* Java (jb, lockWatchdogTimeout 2 s) holds one lock of every kind and C
 * (watchdog 2 s) another of every kind. After 1.75 leases each lock is
 * still there, renewed by its own side's watchdog alone, and still keeps
 * the other side out; the plain locks also have a waiter of the other side,
 * which each release then wakes. */
static void test_each_watchdog_keeps_its_locks_of_every_kind(void **state)
{
    static const char *const kinds[] = {"lock", "fair",  "read",
                                        "write", "spin", "fenced"};
    size_t nkinds = has_fenced() ? 6 : 5;
    jt_fixture *f = *state;
    char jname[6][128], cname[6][128], tid[32];
    jt_lock held[6], probe[6];
    rlock_client *c;
    ct_locker waiter;
    rlock *wait;

    c = lt_connect(f->redis.url, rlock_config_set_watchdog_timeout,
                   JT_SHORT_WATCHDOG);
    for (size_t k = 0; k < nkinds; k++) {
        snprintf(jname[k], sizeof(jname[k]), LT_SUITE ":watchdog:java:%s",
                 kinds[k]);
        snprintf(cname[k], sizeof(cname[k]), LT_SUITE ":watchdog:c:%s",
                 kinds[k]);
        snprintf(tid, sizeof(tid), "wd-%s", kinds[k]);
        jt_java_lock(f->jb, tid, kinds[k], jname[k]);
        held[k] = jt_c_get(c, kinds[k], cname[k]);
        assert_int_equal(rlock_lock(held[k].l), RLOCK_OK);
        probe[k] = jt_c_get(f->a, jt_excluded_by(kinds[k]), jname[k]);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", jname[k]) <=
                    JT_SHORT_WATCHDOG);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", cname[k]) <=
                    JT_SHORT_WATCHDOG);
    }
    wait = lt_get_lock(f->a, jname[0]);
    ct_locker_start(&waiter, wait, RLOCK_WAIT_FOREVER);
    jp_send(f->jb, "ww lock lock %s", cname[0]);

    assert_true(jp_quiet(f->jb, "ww", JT_SHORT_WATCHDOG * 7 / 4));
    assert_false(ct_locker_wait(&waiter, 0));
    for (size_t k = 0; k < nkinds; k++) {
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", jname[k]) > 0);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", cname[k]) > 0);
        assert_int_equal(rlock_trylock(probe[k].l, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        assert_false(
            jt_java_trylock(f->ja, jt_excluded_by(kinds[k]), cname[k], 0));
    }

    jt_java_unlock(f->jb, "wd-lock", "lock", jname[0]);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_int_equal(rlock_unlock(held[0].l), RLOCK_OK);
    json_decref(jp_expect(f->jb, "ww", "lock", CT_WAKE_BOUND_MS));
    jt_java_unlock(f->jb, "ww", "lock", cname[0]);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    for (size_t k = 1; k < nkinds; k++) {
        snprintf(tid, sizeof(tid), "wd-%s", kinds[k]);
        jt_java_unlock(f->jb, tid, kinds[k], jname[k]);
        assert_int_equal(rlock_unlock(held[k].l), RLOCK_OK);
    }
    for (size_t k = 0; k < nkinds; k++) {
        jt_c_free(&held[k]);
        jt_c_free(&probe[k]);
    }
    rlock_free(wait);
    rlock_client_free(c);
}

/* ---------------------------------------------------------- the latch */

#define PAUSE_MS 1500

#define LOST_KINDS 6

/* What one lost-reply round leaves: per kind its lock's name and the
 * answer to its unlock, and how many scripts ran. */
typedef struct lost_round {
    rt_redis redis;
    size_t nkinds;
    char names[LOST_KINDS][64];
    json_t *answers[LOST_KINDS];
    long long calls;
} lost_round;

static const char *const lost_kinds[LOST_KINDS] = {"lock", "fair",  "read",
                                                   "write", "spin", "fenced"};

/* A third JVM, whose command timeout (300 ms) is shorter than a CLIENT
 * PAUSE WRITE, holds a lock of every kind twice, one Java thread a kind;
 * the pause starts, and every thread unlocks once: each unlock's reply is
 * lost to the timeout. The JVM talks to a server of its own, so that the
 * scripts counted are its alone (with the group's server, runs under load
 * counted stray scripts of the other JVMs), and has run every unlock
 * script once before (Redisson sends EVALSHA and loads a script only after
 * NOSCRIPT, which a paused first unlock would meet instead of the lock).
 * Fills round once the pause is over and every copy has run. */
static void lost_unlock_replies(lost_round *round)
{
    static const char *const opts[] = {"timeout=300", "retries=10",
                                       "retry_interval=100", NULL};
    rt_redis *r = &round->redis;
    long long before;
    int64_t paused;
    char tid[32], *ok;
    jp_peer *jc;

    round->nkinds = has_fenced() ? LOST_KINDS : LOST_KINDS - 1;
    assert_int_equal(rt_redis_start(r), 0);
    jc = jp_start(VERSION, r->url, opts);
    assert_non_null(jc);
    assert_int_equal(jp_ready(jc, VERSION, JT_JVM_START_MS), 0);
    for (size_t k = 0; k < round->nkinds; k++) {
        snprintf(round->names[k], sizeof(round->names[k]), "lost:%s",
                 lost_kinds[k]);
        snprintf(tid, sizeof(tid), "lost-%s", lost_kinds[k]);
        jt_java_lock(jc, tid, lost_kinds[k], "warm-up");
        jt_java_unlock(jc, tid, lost_kinds[k], "warm-up");
        jt_java_lock(jc, tid, lost_kinds[k], round->names[k]);
        jt_java_lock(jc, tid, lost_kinds[k], round->names[k]);
        assert_int_equal(jt_owner_count(r, round->names[k]), 2);
    }

    before = jt_script_calls(r);
    paused = rt_now_ms();
    ok = rt_cmd_str(r, "CLIENT PAUSE %d WRITE", PAUSE_MS);
    assert_string_equal(ok, "OK");
    free(ok);
    for (size_t k = 0; k < round->nkinds; k++)
        jp_send(jc, "lost-%s unlock %s %s", lost_kinds[k], lost_kinds[k],
                round->names[k]);
    for (size_t k = 0; k < round->nkinds; k++) {
        snprintf(tid, sizeof(tid), "lost-%s", lost_kinds[k]);
        round->answers[k] = jp_expect(jc, tid, "unlock", JT_PEER_MS);
    }
    rt_sleep_ms(paused + PAUSE_MS + 300 - rt_now_ms());
    round->calls = jt_script_calls(r) - before;
    print_message("redisson %s: %zu unlocks with lost replies: %lld script "
                  "runs\n",
                  VERSION, round->nkinds, round->calls);
    jp_free(jc);
}

static void lost_round_free(lost_round *round)
{
    for (size_t k = 0; k < round->nkinds; k++)
        json_decref(round->answers[k]);
    rt_redis_stop(&round->redis);
}

/* 3.24 to 3.47 resend the unlock with the same request id, and the latch
 * makes every copy after the first answer as the first did: one hold off,
 * and the unlock succeeds. */
static void
test_java_resent_unlocks_take_one_hold_off_by_the_latch(void **state)
{
    lost_round round = {0};

    (void)state;
    lost_unlock_replies(&round);
    assert_true(round.calls >= 2 * (long long)round.nkinds);
    for (size_t k = 0; k < round.nkinds; k++) {
        assert_true(np_bool(round.answers[k], "ok"));
        assert_int_equal(jt_owner_count(&round.redis, round.names[k]), 1);
    }
    lost_round_free(&round);
}

/* 3.52 and 4.x send the unlock script without retries (evalWriteSynced-
 * NoRetry; the latch serves their replica-sync retry): the caller gets the
 * timeout, and the one copy runs when the pause ends. */
static void test_java_unlocks_with_lost_replies_are_not_resent(void **state)
{
    lost_round round = {0};

    (void)state;
    lost_unlock_replies(&round);
    assert_int_equal(round.calls, (long long)round.nkinds);
    for (size_t k = 0; k < round.nkinds; k++) {
        assert_false(np_bool(round.answers[k], "ok"));
        assert_non_null(strstr(np_str(round.answers[k], "error"), "Timeout"));
        assert_int_equal(jt_owner_count(&round.redis, round.names[k]), 1);
    }
    lost_round_free(&round);
}

/* Before the latch (3.23 and older) a resent inner unlock runs again and
 * takes the second hold off too: one unlock() frees a lock held twice,
 * of every kind. Redisson's bug, fixed by the latch; pinned so
 * docs/compatibility.md stays true. (What the caller hears varies: the fair and read-write
 * unlocks of these versions answer success for a lock that is gone.) */
static void
test_java_resent_unlocks_without_latch_take_two_holds_off(void **state)
{
    lost_round round = {0};

    (void)state;
    lost_unlock_replies(&round);
    assert_true(round.calls >= 2 * (long long)round.nkinds);
    for (size_t k = 0; k < round.nkinds; k++)
        assert_int_equal(
            rt_cmd_int(&round.redis, "EXISTS %s", round.names[k]), 0);
    lost_round_free(&round);
}

/* --------------------------------------------------------- contention */

#define CONTEND_ITER     25
#define CONTEND_THINK_MS 4
#define CONTEND_THREADS  2

typedef struct contender {
    rlock *lock;
    int port;
    const char *counter;
    int failures;
    pthread_t thread;
} contender;

static void *contender_main(void *arg)
{
    contender *k = arg;
    redisContext *c = redisConnect("127.0.0.1", k->port);

    if (c == NULL || c->err) {
        k->failures = CONTEND_ITER;
        redisFree(c);
        return NULL;
    }
    for (int i = 0; i < CONTEND_ITER; i++) {
        redisReply *rep;
        long long v;

        if (rlock_lock(k->lock) != RLOCK_OK) {
            k->failures++;
            continue;
        }
        rep = redisCommand(c, "GET %s", k->counter);
        v = rep != NULL && rep->type == REDIS_REPLY_STRING ? atoll(rep->str)
                                                            : 0;
        freeReplyObject(rep);
        rt_sleep_ms(1);
        freeReplyObject(redisCommand(c, "SET %s %lld", k->counter, v + 1));
        freeReplyObject(redisCommand(c, "RPUSH %s:log c", k->counter));
        if (rlock_unlock(k->lock) != RLOCK_OK)
            k->failures++;
        rt_sleep_ms(CONTEND_THINK_MS);
    }
    redisFree(c);
    return NULL;
}

/* CONTEND_THREADS C threads on one client; returns their failures. */
static int contend_threads(const char *url, int port, const char *name,
                           const char *counter)
{
    contender k[CONTEND_THREADS];
    rlock_client *c = NULL;
    rlock *l[CONTEND_THREADS];
    int failures = 0;

    if (rlock_client_connect(&c, url) != RLOCK_OK)
        return -1;
    for (int i = 0; i < CONTEND_THREADS; i++) {
        if (rlock_get(c, name, &l[i]) != RLOCK_OK)
            return -1;
        k[i] = (contender){.lock = l[i], .port = port, .counter = counter};
        pthread_create(&k[i].thread, NULL, contender_main, &k[i]);
    }
    for (int i = 0; i < CONTEND_THREADS; i++) {
        pthread_join(k[i].thread, NULL);
        failures += k[i].failures;
        rlock_free(l[i]);
    }
    rlock_client_free(c);
    return failures;
}

/* The second C process: this program run again with --contend. */
static int contend_child(int argc, char **argv)
{
    if (argc != 6)
        return 2;
    return contend_threads(argv[2], atoi(argv[3]), argv[4], argv[5]) == 0 ? 0
                                                                          : 1;
}

/* Two C threads in this process and two in a second one, two Java threads
 * in each JVM: each repeats lock, GET, SET + 1, unlock on one counter.
 * GET and SET are separate commands, so only mutual exclusion across all
 * eight keeps the count exact; the log shows the lock changed hands
 * between C and Java. (test_peer_contention.c shows that the same loop
 * without a lock does lose updates.) */
static void
test_c_and_java_threads_in_four_processes_lose_no_increment(void **state)
{
    jt_fixture *f = *state;
    char name[128], counter[160], port[16], args[256], *value;
    jp_peer *jvms[2] = {f->ja, f->jb};
    int changes = 0, status, total;
    redisReply *rep;
    pid_t child;

    LT_TEST_NAME(name);
    snprintf(counter, sizeof(counter), "%s:counter", name);
    snprintf(port, sizeof(port), "%d", f->redis.port);
    snprintf(args, sizeof(args), "%s %d %d", counter, CONTEND_ITER,
             CONTEND_THINK_MS);

    for (int j = 0; j < 2; j++)
        for (int t = 0; t < CONTEND_THREADS; t++)
            jp_send(jvms[j], "c%d contend lock %s %s", t, name, args);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        execl(program_invocation_name, program_invocation_name, "--contend",
              f->redis.url, port, name, counter, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(contend_threads(f->redis.url, f->redis.port, name,
                                     counter),
                     0);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    for (int j = 0; j < 2; j++)
        for (int t = 0; t < CONTEND_THREADS; t++) {
            char tid[8];

            snprintf(tid, sizeof(tid), "c%d", t);
            json_decref(jp_expect(jvms[j], tid, "contend", 60000));
        }

    total = 4 * CONTEND_THREADS * CONTEND_ITER;
    value = rt_cmd_str(&f->redis, "GET %s", counter);
    assert_non_null(value);
    assert_int_equal(atoll(value), total);
    free(value);
    rep = rt_cmd(&f->redis, "LRANGE %s:log 0 -1", counter);
    assert_non_null(rep);
    assert_int_equal(rep->elements, (size_t)total);
    for (size_t i = 1; i < rep->elements; i++)
        changes += strcmp(rep->element[i]->str, rep->element[i - 1]->str) != 0;
    freeReplyObject(rep);
    print_message("redisson %s: %d increments, the lock changed sides %d "
                  "times\n",
                  VERSION, total, changes);
    assert_true(changes >= 2);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
}

/* --------------------------------------------------------------- main */

static int group_setup(void **state)
{
    return jt_group_setup(state, VERSION);
}

#define T(fn)                                                                 \
    (struct CMUnitTest)                                                       \
        cmocka_unit_test_setup_teardown(fn, jt_setup, jt_teardown)

/* The three tests every kind but the plain lock has (KIND_TESTS). */
#define KIND_T(kind)                                                          \
    do {                                                                      \
        tests[n++] =                                                          \
            T(test_##kind##_unlock_by_non_owner_is_refused_both_ways);        \
        tests[n++] = T(test_##kind##_force_unlock_frees_the_other_side);      \
        tests[n++] = T(test_##kind##_nested_holds_are_exact_both_ways);       \
    } while (0)

int main(int argc, char **argv)
{
    struct CMUnitTest tests[64];
    size_t n = 0;

    if (argc > 1 && strcmp(argv[1], "--contend") == 0)
        return contend_child(argc, argv);

    tests[n++] = T(test_c_waiter_is_woken_by_java_unlock);
    tests[n++] = T(test_java_waiter_is_woken_by_c_unlock);
    tests[n++] = T(test_lock_c_and_java_take_turns);
    tests[n++] = T(test_fair_lock_c_and_java_take_turns);
    tests[n++] = T(test_write_lock_c_and_java_take_turns);
    tests[n++] = T(test_read_lock_is_shared_and_excludes_writers_both_ways);
    tests[n++] = T(test_spin_lock_c_and_java_take_turns);
    if (has_fenced())
        tests[n++] = T(test_fenced_lock_c_and_java_take_turns);
    KIND_T(fair);
    KIND_T(read);
    KIND_T(write);
    KIND_T(spin);
    if (has_fenced())
        KIND_T(fenced);
    tests[n++] = T(test_multilock_c_and_java_exclude_each_other);
    tests[n++] = T(test_redlock_c_and_java_exclude_each_other);
    tests[n++] = T(test_java_nested_holds_are_one_field_counting_three);
    tests[n++] = T(test_java_sees_c_nested_lock_held_until_third_unlock);
    tests[n++] = T(test_java_cannot_unlock_c_hold);
    tests[n++] = T(test_c_cannot_unlock_java_hold);
    tests[n++] = T(test_java_force_unlock_frees_c_hold_and_wakes_c_waiter);
    tests[n++] = T(test_c_force_unlock_frees_java_hold_and_wakes_java_waiter);
    tests[n++] = T(test_each_watchdog_keeps_its_locks_of_every_kind);
    if (!has_latch())
        tests[n++] =
            T(test_java_resent_unlocks_without_latch_take_two_holds_off);
    else if (version_at_least(3, 52))
        tests[n++] = T(test_java_unlocks_with_lost_replies_are_not_resent);
    else
        tests[n++] =
            T(test_java_resent_unlocks_take_one_hold_off_by_the_latch);
    tests[n++] = T(test_c_and_java_threads_in_four_processes_lose_no_increment);

    rt_require_redis();
    jp_require_java(VERSION);
    return _cmocka_run_group_tests("test_java_peer_" VERSION, tests, n,
                                   group_setup, jt_group_teardown);
}
