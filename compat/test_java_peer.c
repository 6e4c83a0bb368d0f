/*
 * test_java_peer.c: rlock and the real Java Redisson (compat/java's Driver)
 * share locks, for one Redisson version per test program.
 *
 * compat/CMakeLists.txt builds this file once per version in
 * compat/java/versions.txt, as test_java_peer_<version>, with
 * RLOCK_JAVA_VERSION naming it. Each program starts one redis-server and
 * two JVMs for all its tests (JVM start-up is the slow part): "ja" with Redisson's default
 * 30 s watchdog and "jb" with a 2 s one; the latch test starts a third with
 * a 300 ms command timeout. Which tests run for which version is in
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
#include "lock_testing.h"
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define LT_SUITE       "java_peer"
#define VERSION        RLOCK_JAVA_VERSION
#define JVM_START_MS   60000 /* JVM start-up on a loaded 2-core machine */
#define PEER_MS        10000 /* a peer answer that needs no wait */
#define WAKE_ROUNDS    5
#define SHORT_WATCHDOG 2000 /* jb's and the C watchdog test's timeout */

/* The group: one server, two JVMs, and the test's C clients. */
typedef struct jt_fixture {
    rt_redis redis;
    jp_peer *ja; /* Redisson's default watchdog (30 s) */
    jp_peer *jb; /* watchdog SHORT_WATCHDOG */
    rlock_client *a, *b;
} jt_fixture;

/* ------------------------------------------------------------ versions */

/* Whether this version is at least major.minor. */
static int version_at_least(int major, int minor)
{
    int ma = 0, mi = 0;

    if (sscanf(VERSION, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
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

/* ------------------------------------------------------------- fixture */

static int group_setup(void **state)
{
    static const char *const short_wd[] = {"watchdog=2000", NULL};
    jt_fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    /* both JVMs start at once: each takes a second or more */
    f->ja = jp_start(VERSION, f->redis.url, NULL);
    f->jb = jp_start(VERSION, f->redis.url, short_wd);
    if (f->ja == NULL || f->jb == NULL ||
        jp_ready(f->ja, VERSION, JVM_START_MS) != 0 ||
        jp_ready(f->jb, VERSION, JVM_START_MS) != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    jt_fixture *f = *state;

    jp_free(f->ja);
    jp_free(f->jb);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

static int setup(void **state)
{
    jt_fixture *f = *state;

    f->a = ct_connect(&f->redis);
    f->b = ct_connect(&f->redis);
    return 0;
}

static int teardown(void **state)
{
    jt_fixture *f = *state;
    char *ok = rt_cmd_str(&f->redis, "CLIENT UNPAUSE");

    free(ok);
    rlock_client_free(f->a);
    rlock_client_free(f->b);
    f->a = f->b = NULL;
    return 0;
}

/* -------------------------------------------------------------- helpers */

/* A C handle of one kind (the names Driver.java uses for KIND). */
typedef struct c_lock {
    rlock *l;
    rlock_rw *rw; /* read and write: the pair that owns l */
} c_lock;

static c_lock c_get(rlock_client *c, const char *kind, const char *name)
{
    c_lock h = {0};
    int rc;

    if (strcmp(kind, "lock") == 0)
        rc = rlock_get(c, name, &h.l);
    else if (strcmp(kind, "fair") == 0)
        rc = rlock_fair_get(c, name, &h.l);
    else if (strcmp(kind, "spin") == 0)
        rc = rlock_spin_get(c, name, &h.l);
    else if (strcmp(kind, "fenced") == 0)
        rc = rlock_fenced_get(c, name, &h.l);
    else {
        rc = rlock_rw_get(c, name, &h.rw);
        assert_int_equal(rc, RLOCK_OK);
        h.l = strcmp(kind, "read") == 0 ? rlock_rw_read(h.rw)
                                        : rlock_rw_write(h.rw);
    }
    assert_int_equal(rc, RLOCK_OK);
    assert_non_null(h.l);
    return h;
}

static void c_free(c_lock *h)
{
    if (h->rw != NULL)
        rlock_rw_free(h->rw);
    else
        rlock_free(h->l);
    *h = (c_lock){0};
}

/* Sends "tid op kind name [args]" to p and returns the event it answers. */
static json_t *java_do(jp_peer *p, const char *tid, const char *op,
                       const char *kind, const char *name, const char *args,
                       int timeout_ms)
{
    jp_send(p, "%s %s %s %s %s", tid, op, kind, name, args != NULL ? args : "");
    return jp_expect(p, tid, strcmp(op, "force") == 0 ? "force" : op,
                     timeout_ms);
}

/* The Java thread tid takes the lock (no wait expected). */
static void java_lock(jp_peer *p, const char *tid, const char *kind,
                      const char *name)
{
    json_decref(java_do(p, tid, "lock", kind, name, NULL, PEER_MS));
}

/* The Java thread tid unlocks, which must succeed. */
static void java_unlock(jp_peer *p, const char *tid, const char *kind,
                        const char *name)
{
    json_t *ev = java_do(p, tid, "unlock", kind, name, NULL, PEER_MS);

    assert_true(np_bool(ev, "ok"));
    json_decref(ev);
}

/* One tryLock(wait_ms) by a fresh Java thread; a hold it gets is given
 * back at once. Returns whether it got the lock. */
static int java_trylock(jp_peer *p, const char *kind, const char *name,
                        int wait_ms)
{
    char args[32];
    json_t *ev;
    int got;

    snprintf(args, sizeof(args), "%d", wait_ms);
    ev = java_do(p, "try", "trylock", kind, name, args, PEER_MS + wait_ms);
    got = np_bool(ev, "acquired");
    json_decref(ev);
    if (got)
        java_unlock(p, "try", kind, name);
    return got;
}

/* The only field of hash name, which must have exactly one, and its value
 * (the hold count) as a number. */
static long long single_count(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "HVALS %s", name);
    long long n;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    n = atoll(rep->element[0]->str);
    freeReplyObject(rep);
    return n;
}

static int cmp_ll(const void *x, const void *y)
{
    long long a = *(const long long *)x, b = *(const long long *)y;

    return (a > b) - (a < b);
}

/* Prints min/median/max of n latencies, for the wake-up table in
 * compat/README.md. */
static void report_latencies(const char *what, long long *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_ll);
    print_message("redisson %s: %s wake-up, %d rounds: min %lld ms, median "
                  "%lld ms, max %lld ms\n",
                  VERSION, what, n, ms[0], ms[n / 2], ms[n - 1]);
}

/* --------------------------------------------------------- wake-ups */

static void test_c_waiter_is_woken_by_java_unlock(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160];
        ct_locker waiter;
        json_t *ev;
        int64_t offset, t0;
        rlock *l;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        lt_channel_of(channel, sizeof(channel), name);
        java_lock(f->ja, "h", "lock", name);
        l = lt_get_lock(f->a, name);
        ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
        ct_wait_numsub(&f->redis, channel, 1, 5000);
        if (i == 0)
            assert_false(ct_locker_wait(&waiter, 200));

        offset = ct_wall_ms() - rt_now_ms();
        ev = java_do(f->ja, "h", "unlock", "lock", name, NULL, PEER_MS);
        assert_true(np_bool(ev, "ok"));
        t0 = np_int(ev, "t0");
        json_decref(ev);
        assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
        assert_int_equal(waiter.acquired_rc, RLOCK_OK);
        lat[i] = waiter.done_ms + offset - t0;
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
        rlock_free(l);
    }
    report_latencies("Java unlock -> C waiter", lat, WAKE_ROUNDS);
}

static void test_java_waiter_is_woken_by_c_unlock(void **state)
{
    jt_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160];
        json_t *ev;
        int64_t t0;
        rlock *l;

        snprintf(name, sizeof(name), LT_SUITE ":%s:%d", __func__, i);
        lt_channel_of(channel, sizeof(channel), name);
        l = lt_get_lock(f->a, name);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        jp_send(f->ja, "w lock lock %s", name);
        ct_wait_numsub(&f->redis, channel, 1, PEER_MS);
        if (i == 0)
            assert_true(jp_quiet(f->ja, "w", 200));

        t0 = ct_wall_ms();
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        ev = jp_expect(f->ja, "w", "lock", CT_WAKE_BOUND_MS);
        lat[i] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        java_unlock(f->ja, "w", "lock", name);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
        rlock_free(l);
    }
    report_latencies("C unlock -> Java waiter", lat, WAKE_ROUNDS);
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
    c_lock h = c_get(f->a, kind, name);
    ct_locker waiter;
    json_t *ev;
    int64_t token = 0, t0;

    ev = java_do(f->ja, kind, "lock", kind, name, NULL, PEER_MS);
    if (strcmp(kind, "fenced") == 0)
        token = np_int(ev, "token");
    json_decref(ev);
    assert_int_equal(rlock_trylock(h.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);

    ct_locker_start(&waiter, h.l, RLOCK_WAIT_FOREVER);
    assert_false(ct_locker_wait(&waiter, 300));
    java_unlock(f->ja, kind, kind, name);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    if (strcmp(kind, "fenced") == 0) {
        assert_true(rlock_fenced_token(h.l) > token);
        token = rlock_fenced_token(h.l);
    }

    assert_false(java_trylock(f->ja, kind, name, 0));
    jp_send(f->ja, "%s lock %s %s", kind, kind, name);
    assert_true(jp_quiet(f->ja, kind, 300));
    t0 = ct_wall_ms();
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    ev = jp_expect(f->ja, kind, "lock", CT_WAKE_BOUND_MS);
    assert_true(np_int(ev, "t") - t0 < CT_WAKE_BOUND_MS);
    if (strcmp(kind, "fenced") == 0)
        assert_true(np_int(ev, "token") > token);
    json_decref(ev);
    java_unlock(f->ja, kind, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    c_free(&h);
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
    c_lock r, w;

    LT_TEST_NAME(name);
    r = c_get(f->a, "read", name);
    w = c_get(f->a, "write", name);

    java_lock(f->ja, "r", "read", name);
    assert_int_equal(rlock_trylock(r.l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_trylock(w.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_false(java_trylock(f->ja, "write", name, 0));
    assert_int_equal(rlock_unlock(r.l), RLOCK_OK);
    java_unlock(f->ja, "r", "read", name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    assert_int_equal(rlock_lock(w.l), RLOCK_OK);
    assert_false(java_trylock(f->ja, "read", name, 0));
    assert_false(java_trylock(f->ja, "write", name, 0));
    assert_int_equal(rlock_unlock(w.l), RLOCK_OK);
    assert_true(java_trylock(f->ja, "read", name, 0));
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    c_free(&r);
    c_free(&w);
}

/* Neither side can release the other side's hold of kind: the refused
 * unlock leaves the hash as it was. */
static void non_owner_unlock_is_refused_both_ways(jt_fixture *f,
                                                  const char *kind,
                                                  const char *name)
{
    c_lock h = c_get(f->a, kind, name);
    char tid[32], *before, *after;
    json_t *ev;

    snprintf(tid, sizeof(tid), "no-%s", kind);
    assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    before = lt_hash_dump(&f->redis, name);
    ev = java_do(f->ja, tid, "unlock", kind, name, NULL, PEER_MS);
    assert_false(np_bool(ev, "ok"));
    assert_non_null(strstr(np_str(ev, "error"), "IllegalMonitorState"));
    json_decref(ev);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    java_lock(f->ja, tid, kind, name);
    before = lt_hash_dump(&f->redis, name);
    assert_int_equal(rlock_unlock(h.l), RLOCK_ENOTOWNER);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(before);
    free(after);
    java_unlock(f->ja, tid, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    c_free(&h);
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
    c_lock h = c_get(f->a, kind, name);
    char tid[32];
    json_t *ev;

    snprintf(tid, sizeof(tid), "fu-%s", kind);
    assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    ev = java_do(f->ja, tid, "force", kind, name, NULL, PEER_MS);
    assert_true(np_bool(ev, "deleted"));
    json_decref(ev);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(h.l), RLOCK_ELOST);

    java_lock(f->ja, tid, kind, name);
    assert_int_equal(rlock_force_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    ev = java_do(f->ja, tid, "probe", kind, name, NULL, PEER_MS);
    assert_false(np_bool(ev, "locked"));
    assert_false(np_bool(ev, "held"));
    json_decref(ev);
    /* Java's unlock of the lost hold: RLock's script (the plain, spin and
     * fenced locks) refuses it, but Redisson's fair unlock, and the
     * read-write unlock of the versions here up to 3.29.0, report success
     * when the lock is gone (they publish to the next waiter and return 1).
     * Either way it must not bring the lock back. */
    ev = java_do(f->ja, tid, "unlock", kind, name, NULL, PEER_MS);
    assert_int_equal(np_bool(ev, "ok"), unlock_of_missing_lock_succeeds(kind));
    json_decref(ev);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    c_free(&h);
}

/* The hold count in hash name of its one owner: the value of its only
 * field other than the read-write lock's "mode". */
static long long owner_count(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "HGETALL %s", name);
    long long count = -1;
    int owners = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        if (strcmp(rep->element[i]->str, "mode") == 0)
            continue;
        owners++;
        count = atoll(rep->element[i + 1]->str);
    }
    freeReplyObject(rep);
    assert_int_equal(owners, 1);
    return count;
}

/* The kind that a hold of kind keeps out: the read lock only keeps out
 * writers. */
static const char *excluded_by(const char *kind)
{
    return strcmp(kind, "read") == 0 ? "write" : kind;
}

/* Three nested holds are one owner counting 3, and the lock stays closed
 * to the other side until the third unlock: first Java's holds, then C's. */
static void nested_holds_are_exact_both_ways(jt_fixture *f, const char *kind,
                                             const char *name)
{
    c_lock h = c_get(f->a, kind, name);
    c_lock other = c_get(f->b, excluded_by(kind), name);
    char tid[32];

    snprintf(tid, sizeof(tid), "nest-%s", kind);
    for (int i = 0; i < 3; i++)
        java_lock(f->ja, tid, kind, name);
    assert_int_equal(owner_count(&f->redis, name), 3);
    java_unlock(f->ja, tid, kind, name);
    java_unlock(f->ja, tid, kind, name);
    assert_int_equal(owner_count(&f->redis, name), 1);
    assert_int_equal(rlock_trylock(other.l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    java_unlock(f->ja, tid, kind, name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(h.l), RLOCK_OK);
    assert_int_equal(owner_count(&f->redis, name), 3);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(owner_count(&f->redis, name), 1);
    assert_false(java_trylock(f->ja, excluded_by(kind), name, 0));
    assert_int_equal(rlock_unlock(h.l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    c_free(&h);
    c_free(&other);
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

    java_lock(f->ja, "m", kind, list);
    for (int i = 0; i < n; i++)
        assert_int_equal(rlock_is_locked(ls[i]), 1);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ETIMEDOUT);
    java_unlock(f->ja, "m", kind, list);
    for (int i = 0; i < n; i++)
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[i]), 0);

    assert_int_equal(rlock_multi_lock(m, NULL), RLOCK_OK);
    assert_false(java_trylock(f->ja, kind, list, 0));
    assert_false(java_trylock(f->ja, "lock", names[1], 0));
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    assert_true(java_trylock(f->ja, kind, list, 0));
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
        java_lock(f->ja, "n", "lock", name);
    assert_int_equal(single_count(&f->redis, name), 3);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 20000);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);

    java_unlock(f->ja, "n", "lock", name);
    java_unlock(f->ja, "n", "lock", name);
    assert_int_equal(single_count(&f->redis, name), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    java_unlock(f->ja, "n", "lock", name);
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
    ev = java_do(f->ja, "p", "probe", "lock", name, NULL, PEER_MS);
    assert_true(np_bool(ev, "locked"));
    assert_false(np_bool(ev, "held"));
    assert_int_equal(np_int(ev, "holds"), 0);
    json_decref(ev);
    assert_int_equal(single_count(&f->redis, name), 3);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_false(java_trylock(f->ja, "lock", name, 0));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(java_trylock(f->ja, "lock", name, 0));
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

    ev = java_do(f->ja, "x", "unlock", "lock", name, NULL, PEER_MS);
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
    java_lock(f->ja, "x", "lock", name);
    before = lt_hash_dump(&f->redis, name);
    l = lt_get_lock(f->a, name);

    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    java_unlock(f->ja, "x", "lock", name);
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
    ev = java_do(f->ja, "f", "force", "lock", name, NULL, PEER_MS);
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
    java_lock(f->ja, "f1", "lock", name);
    jp_send(f->ja, "f2 lock lock %s", name);
    assert_true(jp_quiet(f->ja, "f2", 300));

    l = lt_get_lock(f->a, name);
    t0 = ct_wall_ms();
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    ev = jp_expect(f->ja, "f2", "lock", CT_WAKE_BOUND_MS);
    assert_true(np_int(ev, "t") - t0 < CT_WAKE_BOUND_MS);
    json_decref(ev);

    ev = java_do(f->ja, "f1", "unlock", "lock", name, NULL, PEER_MS);
    assert_false(np_bool(ev, "ok"));
    json_decref(ev);
    java_unlock(f->ja, "f2", "lock", name);
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
    c_lock held[6], probe[6];
    rlock_client *c;
    ct_locker waiter;
    rlock *wait;

    c = lt_connect(f->redis.url, rlock_config_set_watchdog_timeout,
                   SHORT_WATCHDOG);
    for (size_t k = 0; k < nkinds; k++) {
        snprintf(jname[k], sizeof(jname[k]), LT_SUITE ":watchdog:java:%s",
                 kinds[k]);
        snprintf(cname[k], sizeof(cname[k]), LT_SUITE ":watchdog:c:%s",
                 kinds[k]);
        snprintf(tid, sizeof(tid), "wd-%s", kinds[k]);
        java_lock(f->jb, tid, kinds[k], jname[k]);
        held[k] = c_get(c, kinds[k], cname[k]);
        assert_int_equal(rlock_lock(held[k].l), RLOCK_OK);
        probe[k] = c_get(f->a, excluded_by(kinds[k]), jname[k]);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", jname[k]) <=
                    SHORT_WATCHDOG);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", cname[k]) <=
                    SHORT_WATCHDOG);
    }
    wait = lt_get_lock(f->a, jname[0]);
    ct_locker_start(&waiter, wait, RLOCK_WAIT_FOREVER);
    jp_send(f->jb, "ww lock lock %s", cname[0]);

    assert_true(jp_quiet(f->jb, "ww", SHORT_WATCHDOG * 7 / 4));
    assert_false(ct_locker_wait(&waiter, 0));
    for (size_t k = 0; k < nkinds; k++) {
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", jname[k]) > 0);
        assert_true(rt_cmd_int(&f->redis, "PTTL %s", cname[k]) > 0);
        assert_int_equal(rlock_trylock(probe[k].l, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        assert_false(
            java_trylock(f->ja, excluded_by(kinds[k]), cname[k], 0));
    }

    java_unlock(f->jb, "wd-lock", "lock", jname[0]);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_int_equal(rlock_unlock(held[0].l), RLOCK_OK);
    json_decref(jp_expect(f->jb, "ww", "lock", CT_WAKE_BOUND_MS));
    java_unlock(f->jb, "ww", "lock", cname[0]);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    for (size_t k = 1; k < nkinds; k++) {
        snprintf(tid, sizeof(tid), "wd-%s", kinds[k]);
        java_unlock(f->jb, tid, kinds[k], jname[k]);
        assert_int_equal(rlock_unlock(held[k].l), RLOCK_OK);
    }
    for (size_t k = 0; k < nkinds; k++) {
        c_free(&held[k]);
        c_free(&probe[k]);
    }
    rlock_free(wait);
    rlock_client_free(c);
}

/* ---------------------------------------------------------- the latch */

/* calls of EVAL plus EVALSHA so far (INFO commandstats) */
static long long script_calls(rt_redis *r)
{
    char *info = rt_cmd_str(r, "INFO commandstats");
    long long n = 0;

    assert_non_null(info);
    for (const char *p = info; (p = strstr(p, "cmdstat_eval")) != NULL; p++) {
        const char *calls = strstr(p, "calls=");

        if (strncmp(p, "cmdstat_eval:", 13) == 0 ||
            strncmp(p, "cmdstat_evalsha:", 16) == 0)
            n += atoll(calls + 6);
    }
    free(info);
    return n;
}

#define PAUSE_MS 1500

/* Java holds name twice through a third JVM whose command timeout (300 ms)
 * is shorter than a CLIENT PAUSE WRITE that starts before Java's inner
 * unlock: the unlock's reply is lost to the timeout. Returns the unlock
 * event, once the pause is over and every copy of the script has run;
 * *calls is how many scripts ran meanwhile (INFO commandstats). */
static json_t *java_unlock_with_lost_reply(jt_fixture *f, const char *name,
                                           long long *calls)
{
    static const char *const opts[] = {"timeout=300", "retries=10",
                                       "retry_interval=100", NULL};
    jp_peer *jc = jp_start(VERSION, f->redis.url, opts);
    json_t *ev;
    long long before;
    int64_t paused;
    char *ok;

    assert_non_null(jc);
    assert_int_equal(jp_ready(jc, VERSION, JVM_START_MS), 0);
    java_lock(jc, "l", "lock", name);
    java_lock(jc, "l", "lock", name);
    assert_int_equal(single_count(&f->redis, name), 2);

    before = script_calls(&f->redis);
    paused = rt_now_ms();
    ok = rt_cmd_str(&f->redis, "CLIENT PAUSE %d WRITE", PAUSE_MS);
    assert_string_equal(ok, "OK");
    free(ok);
    ev = java_do(jc, "l", "unlock", "lock", name, NULL, PEER_MS);
    rt_sleep_ms(paused + PAUSE_MS + 300 - rt_now_ms());
    *calls = script_calls(&f->redis) - before;
    print_message("redisson %s: unlock with a lost reply: ok %d, %lld "
                  "script runs\n",
                  VERSION, np_bool(ev, "ok"), *calls);
    jp_free(jc);
    return ev;
}

/* 3.24 to 3.51 resend the unlock with the same request id, and the latch
 * makes every copy after the first answer as the first did. */
static void
test_java_resent_unlock_takes_one_hold_off_by_the_latch(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    long long calls;
    json_t *ev;

    LT_TEST_NAME(name);
    ev = java_unlock_with_lost_reply(f, name, &calls);
    assert_true(np_bool(ev, "ok"));
    json_decref(ev);
    assert_true(calls >= 2);
    assert_int_equal(single_count(&f->redis, name), 1);
}

/* 3.52 and 4.x send the unlock script without retries (evalWriteSynced-
 * NoRetry; the latch serves only their replica-sync retry): the caller gets
 * the timeout, and the one copy runs when the pause ends. */
static void test_java_unlock_with_lost_reply_is_not_resent(void **state)
{
    jt_fixture *f = *state;
    char name[128];
    long long calls;
    json_t *ev;

    LT_TEST_NAME(name);
    ev = java_unlock_with_lost_reply(f, name, &calls);
    assert_false(np_bool(ev, "ok"));
    assert_non_null(strstr(np_str(ev, "error"), "Timeout"));
    json_decref(ev);
    assert_int_equal(calls, 1);
    assert_int_equal(single_count(&f->redis, name), 1);
}

/* Before the latch (3.23 and older) a resent inner unlock runs again and
 * takes a second hold off: one unlock() call frees a lock held twice.
 * Redisson's bug, fixed by the latch; pinned so the README stays true. */
static void test_java_resent_unlock_without_latch_takes_two_holds_off(
    void **state)
{
    jt_fixture *f = *state;
    char name[128];
    long long calls;

    LT_TEST_NAME(name);
    json_decref(java_unlock_with_lost_reply(f, name, &calls));
    assert_true(calls >= 2);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
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

#define T(fn) \
    (struct CMUnitTest) cmocka_unit_test_setup_teardown(fn, setup, teardown)

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
#define KIND_T(kind)                                                   \
    do {                                                               \
        tests[n++] = T(test_##kind##_unlock_by_non_owner_is_refused_both_ways); \
        tests[n++] = T(test_##kind##_force_unlock_frees_the_other_side);       \
        tests[n++] = T(test_##kind##_nested_holds_are_exact_both_ways);        \
    } while (0)
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
            T(test_java_resent_unlock_without_latch_takes_two_holds_off);
    else if (version_at_least(3, 52))
        tests[n++] = T(test_java_unlock_with_lost_reply_is_not_resent);
    else
        tests[n++] = T(test_java_resent_unlock_takes_one_hold_off_by_the_latch);
    tests[n++] = T(test_c_and_java_threads_in_four_processes_lose_no_increment);

    rt_require_redis();
    jp_require_java(VERSION);
    return _cmocka_run_group_tests("test_java_peer_" VERSION, tests, n,
                                   group_setup, group_teardown);
}
