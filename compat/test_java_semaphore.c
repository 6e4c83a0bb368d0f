/*
 * test_java_semaphore.c: rlock's semaphore and the real Java Redisson's
 * RSemaphore (compat/java's Driver, KIND "sem") share one semaphore: each
 * sees the permits the other sets, takes and gives back; each side's
 * release wakes the other's waiter by its message (re-checks are 60 s
 * here, CT_RECHECK_MS), and under contention from both at once no more
 * hold permits than there are. The permit-expirable semaphore (KIND
 * "psem"): a permit taken on one side is released by id on the other,
 * a lease that ended on one side is reclaimed by a call of the other, and
 * a release by id wakes the other side's waiter.
 *
 * Built for the newest and the oldest version of compat/java/versions.txt
 * (their semaphores keep the same Redis state; trySetPermits with a TTL is
 * only tried from 3.29 on, the oldest listed version known to have it).
 * One JVM serves every test.
 * The wake-up tests print the latencies they measured; at least one round
 * each way must be under SEM_FAST_MS (the round's bound is the loaded
 * machine's CT_WAKE_BOUND_MS).
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
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define VERSION     RLOCK_JAVA_VERSION
#define SUITE       "java_semaphore"
#define WAKE_ROUNDS 5
#define SEM_FAST_MS 50
/* The contention test: rounds per thread, on each side, of 2 permits. */
#define CONTEND_PERMITS    2
#define CONTEND_ITERATIONS 40
#define CONTEND_C_THREADS  2

typedef struct sem_fixture {
    rt_redis redis;
    jp_peer *java;
    rlock_client *c; /* per test */
} sem_fixture;

static int group_setup(void **state)
{
    sem_fixture *f = calloc(1, sizeof(*f));
    jp_require_java(VERSION);
    if (f == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    f->java = jp_start(VERSION, f->redis.url, NULL);
    if (f->java == NULL || jp_ready(f->java, VERSION, JT_JVM_START_MS) != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    sem_fixture *f = *state;
    jp_free(f->java);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

static int setup(void **state)
{
    sem_fixture *f = *state;
    f->c = ct_connect(&f->redis);
    return 0;
}

static int teardown(void **state)
{
    sem_fixture *f = *state;
    rlock_client_free(f->c);
    f->c = NULL;
    return 0;
}

/* ------------------------------------------------------------- helpers */

static rlock_semaphore *sem_of(rlock_client *c, const char *name)
{
    rlock_semaphore *s = NULL;
    assert_int_equal(rlock_semaphore_get(c, name, &s), RLOCK_OK);
    return s;
}

static void channel_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "redisson_sc:{%s}", name);
}

/* The integer a string key holds (-1 when missing). */
static long long get_int(rt_redis *r, const char *key)
{
    char *v = rt_cmd_str(r, "GET %s", key);
    long long n = v != NULL ? atoll(v) : -1;
    free(v);
    return n;
}

/* The Java thread tid's answer to "tid op sem name args". */
static json_t *java(sem_fixture *f, const char *tid, const char *op,
                    const char *name, const char *args, int timeout_ms)
{
    return jt_java_do(f->java, tid, op, "sem", name, args, timeout_ms);
}

/* A C thread blocked in rlock_semaphore_acquire(). */
typedef struct sem_waiter {
    pthread_t thread;
    rlock_semaphore *sem;
    atomic_int done;
    atomic_int rc;
    _Atomic int64_t done_wall_ms;
} sem_waiter;

static void *waiter_main(void *p)
{
    sem_waiter *w = p;
    int rc = rlock_semaphore_acquire(w->sem, 1, RLOCK_WAIT_FOREVER);
    atomic_store(&w->done_wall_ms, ct_wall_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

static int waiter_await(sem_waiter *w, int64_t within_ms)
{
    int64_t until = rt_now_ms() + within_ms;
    while (!atomic_load(&w->done) && rt_now_ms() < until)
        rt_sleep_ms(1);
    return atomic_load(&w->done);
}

static long long least(const long long *ms, int n)
{
    long long m = ms[0];
    for (int i = 1; i < n; i++)
        m = ms[i] < m ? ms[i] : m;
    return m;
}

/* ------------------------------------------------------------- tests */

static void test_each_side_sees_the_others_permits(void **state)
{
    sem_fixture *f = *state;
    const char *name = SUITE ":sees";
    rlock_semaphore *s = sem_of(f->c, name);
    int64_t n = -1;
    json_t *ev;

    assert_int_equal(rlock_semaphore_try_set_permits(s, 3, 0), 1);
    ev = java(f, "t", "setpermits", name, "5", JT_PEER_MS);
    assert_false(np_bool(ev, "set")); /* set already, by C */
    json_decref(ev);
    ev = java(f, "t", "available", name, NULL, JT_PEER_MS);
    assert_int_equal(np_int(ev, "permits"), 3);
    json_decref(ev);

    ev = java(f, "t", "acquire", name, "2 0", JT_PEER_MS);
    assert_true(np_bool(ev, "acquired"));
    json_decref(ev);
    assert_int_equal(rlock_semaphore_available(s, &n), RLOCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(rlock_semaphore_acquire(s, 2, 0), RLOCK_ETIMEDOUT);

    ev = java(f, "t", "release", name, "2", JT_PEER_MS);
    json_decref(ev);
    assert_int_equal(rlock_semaphore_acquire(s, 3, 0), RLOCK_OK);
    ev = java(f, "t", "acquire", name, "1 0", JT_PEER_MS);
    assert_false(np_bool(ev, "acquired"));
    json_decref(ev);
    assert_int_equal(rlock_semaphore_release(s, 3), RLOCK_OK);
    ev = java(f, "t", "available", name, NULL, JT_PEER_MS);
    assert_int_equal(np_int(ev, "permits"), 3);
    json_decref(ev);
    rlock_semaphore_free(s);
}

static void test_java_ttl_variant_is_the_same_key(void **state)
{
    sem_fixture *f = *state;
    if (!jt_version_at_least(VERSION, 3, 29)) {
        print_message("skipped: Redisson %s has no trySetPermits(n, ttl)\n",
                      VERSION);
        skip();
    }
    const char *name = SUITE ":ttl";
    rlock_semaphore *s = sem_of(f->c, name);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 2, 60000), 1);
    long long c_ttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(c_ttl > 50000 && c_ttl <= 60000);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    json_t *ev = java(f, "t", "setpermits", name, "2 60000", JT_PEER_MS);
    assert_true(np_bool(ev, "set"));
    json_decref(ev);
    long long j_ttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(j_ttl > 50000 && j_ttl <= 60000);
    char *v = rt_cmd_str(&f->redis, "GET %s", name);
    assert_string_equal(v, "2");
    free(v);
    rlock_semaphore_free(s);
}

static void test_c_waiter_is_woken_by_java_release(void **state)
{
    sem_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160];
        static sem_waiter w;
        snprintf(name, sizeof(name), SUITE ":c_woken:%d", i);
        channel_of(channel, sizeof(channel), name);
        memset(&w, 0, sizeof(w));
        w.sem = sem_of(f->c, name);
        assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
        ct_wait_numsub(&f->redis, channel, 1, 5000);
        if (i == 0)
            assert_false(waiter_await(&w, 200));
        json_t *ev = java(f, "r", "release", name, "1", JT_PEER_MS);
        int64_t t0 = np_int(ev, "t0");
        json_decref(ev);
        assert_true(waiter_await(&w, CT_WAKE_BOUND_MS));
        pthread_join(w.thread, NULL);
        assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
        lat[i] = atomic_load(&w.done_wall_ms) - t0;
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        assert_int_equal(get_int(&f->redis, name), 0);
        rlock_semaphore_free(w.sem);
    }
    jt_report_latencies(VERSION, "Java release -> C semaphore waiter", lat,
                        WAKE_ROUNDS);
    assert_true(least(lat, WAKE_ROUNDS) < SEM_FAST_MS);
}

static void test_java_waiter_is_woken_by_c_release(void **state)
{
    sem_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160];
        snprintf(name, sizeof(name), SUITE ":java_woken:%d", i);
        channel_of(channel, sizeof(channel), name);
        rlock_semaphore *s = sem_of(f->c, name);
        jp_send(f->java, "w acquire sem %s 1 -1", name);
        ct_wait_numsub(&f->redis, channel, 1, JT_PEER_MS);
        if (i == 0)
            assert_true(jp_quiet(f->java, "w", 200));
        int64_t t0 = ct_wall_ms();
        assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
        json_t *ev = jp_expect(f->java, "w", "acquire", CT_WAKE_BOUND_MS);
        assert_true(np_bool(ev, "acquired"));
        lat[i] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        assert_int_equal(get_int(&f->redis, name), 0);
        rlock_semaphore_free(s);
    }
    jt_report_latencies(VERSION, "C release -> Java semaphore waiter", lat,
                        WAKE_ROUNDS);
    assert_true(least(lat, WAKE_ROUNDS) < SEM_FAST_MS);
}

/* C threads run the Driver's semcontend loop on their side: INCR the
 * shared counter while holding a permit, note it when above the permits. */
typedef struct contend_arg {
    pthread_t thread;
    sem_fixture *f;
    rlock_semaphore *sem;
    const char *counter;
    atomic_int errors;
} contend_arg;

static void *contend_main(void *p)
{
    contend_arg *a = p;
    for (int i = 0; i < CONTEND_ITERATIONS; i++) {
        if (rlock_semaphore_acquire(a->sem, 1, 20000) != RLOCK_OK) {
            atomic_fetch_add(&a->errors, 1);
            return NULL;
        }
        if (rt_cmd_int(&a->f->redis, "INCR %s", a->counter) > CONTEND_PERMITS)
            rt_cmd_int(&a->f->redis, "RPUSH %s:over c", a->counter);
        rt_sleep_ms(1);
        rt_cmd_int(&a->f->redis, "DECR %s", a->counter);
        if (rlock_semaphore_release(a->sem, 1) != RLOCK_OK)
            atomic_fetch_add(&a->errors, 1);
    }
    return NULL;
}

static void test_never_more_holders_than_permits_across_c_and_java(
    void **state)
{
    sem_fixture *f = *state;
    const char *name = SUITE ":contend", *counter = SUITE ":contend:inside";
    rlock_semaphore *s = sem_of(f->c, name);
    rlock_client *c2 = ct_connect(&f->redis);
    rlock_semaphore *s2 = sem_of(c2, name);
    static contend_arg args[CONTEND_C_THREADS];
    char jargs[96];

    assert_int_equal(rlock_semaphore_try_set_permits(s, CONTEND_PERMITS, 0),
                     1);
    snprintf(jargs, sizeof(jargs), "%s %d %d", counter, CONTEND_ITERATIONS,
             CONTEND_PERMITS);
    jp_send(f->java, "j1 semcontend sem %s %s", name, jargs);
    jp_send(f->java, "j2 semcontend sem %s %s", name, jargs);
    for (int i = 0; i < CONTEND_C_THREADS; i++) {
        memset(&args[i], 0, sizeof(args[i]));
        args[i].f = f;
        args[i].sem = i % 2 ? s2 : s;
        args[i].counter = counter;
        assert_int_equal(
            pthread_create(&args[i].thread, NULL, contend_main, &args[i]), 0);
    }
    for (int i = 0; i < CONTEND_C_THREADS; i++) {
        pthread_join(args[i].thread, NULL);
        assert_int_equal(atomic_load(&args[i].errors), 0);
    }
    json_decref(jp_expect(f->java, "j1", "semcontend", 60000));
    json_decref(jp_expect(f->java, "j2", "semcontend", 60000));
    assert_int_equal(rt_cmd_int(&f->redis, "LLEN %s:over", counter), 0);
    assert_int_equal(get_int(&f->redis, counter), 0);
    assert_int_equal(get_int(&f->redis, name), CONTEND_PERMITS);
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
    rlock_client_free(c2);
}

/* ------------------------------------------------- expirable permits */

static rlock_permit_semaphore *psem_of(rlock_client *c, const char *name)
{
    rlock_permit_semaphore *s = NULL;
    assert_int_equal(rlock_permit_semaphore_get(c, name, &s), RLOCK_OK);
    return s;
}

/* The Java thread tid's permit, taken without a wait; its id copied into
 * id (which must have room for RLOCK_PERMIT_ID_SIZE bytes). */
static void java_permit(sem_fixture *f, const char *name, const char *lease,
                        char *id)
{
    char args[64];
    snprintf(args, sizeof(args), "0 %s", lease);
    json_t *ev = jt_java_do(f->java, "p", "acquire", "psem", name, args,
                            JT_PEER_MS);
    const char *got = json_string_value(json_object_get(ev, "id"));
    assert_non_null(got);
    assert_int_equal(strlen(got), RLOCK_PERMIT_ID_SIZE - 1);
    memcpy(id, got, RLOCK_PERMIT_ID_SIZE);
    json_decref(ev);
}

static long long java_available(sem_fixture *f, const char *name)
{
    json_t *ev = jt_java_do(f->java, "p", "available", "psem", name, NULL,
                            JT_PEER_MS);
    long long n = np_int(ev, "permits");
    json_decref(ev);
    return n;
}

static void test_java_releases_a_c_permit_by_id(void **state)
{
    sem_fixture *f = *state;
    const char *name = SUITE ":psem_c_to_java";
    rlock_permit_semaphore *s = psem_of(f->c, name);
    char id[RLOCK_PERMIT_ID_SIZE];

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(
        rlock_permit_semaphore_acquire(s, 0, RLOCK_PERMIT_LEASE_NONE, id), 0);
    assert_int_equal(java_available(f, name), 0);
    json_t *ev = jt_java_do(f->java, "p", "release", "psem", name, id,
                            JT_PEER_MS);
    assert_true(np_bool(ev, "released"));
    json_decref(ev);
    assert_int_equal(get_int(&f->redis, name), 1);
    assert_int_equal(rlock_permit_semaphore_release(s, id), 0);
    rlock_permit_semaphore_free(s);
}

static void test_c_releases_a_java_permit_by_id(void **state)
{
    sem_fixture *f = *state;
    const char *name = SUITE ":psem_java_to_c";
    rlock_permit_semaphore *s = psem_of(f->c, name);
    char id[RLOCK_PERMIT_ID_SIZE];
    int64_t n = -1;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    java_permit(f, name, "30000", id);
    assert_int_equal(rlock_permit_semaphore_available(s, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_permit_semaphore_release(s, id), 1);
    assert_int_equal(java_available(f, name), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "ZCARD {%s}:timeout", name), 0);
    rlock_permit_semaphore_free(s);
}

static void test_each_side_reclaims_the_others_ended_lease(void **state)
{
    sem_fixture *f = *state;
    const char *name = SUITE ":psem_reclaim";
    rlock_permit_semaphore *s = psem_of(f->c, name);
    char id[RLOCK_PERMIT_ID_SIZE];
    int64_t n = -1;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    java_permit(f, name, "100", id);
    rt_sleep_ms(200);
    assert_int_equal(rlock_permit_semaphore_available(s, &n), 0);
    assert_int_equal(n, 1); /* C gave Java's ended lease back */

    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 100, id), 0);
    rt_sleep_ms(200);
    assert_int_equal(java_available(f, name), 1); /* and Java C's */
    rlock_permit_semaphore_free(s);
}

static void test_java_permit_waiter_is_woken_by_c_release(void **state)
{
    sem_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160], id[RLOCK_PERMIT_ID_SIZE];
        snprintf(name, sizeof(name), SUITE ":psem_woken:%d", i);
        channel_of(channel, sizeof(channel), name);
        rlock_permit_semaphore *s = psem_of(f->c, name);
        assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
        assert_int_equal(rlock_permit_semaphore_acquire(
                             s, 0, RLOCK_PERMIT_LEASE_NONE, id),
                         0);
        jp_send(f->java, "w acquire psem %s 20000 30000", name);
        ct_wait_numsub(&f->redis, channel, 1, JT_PEER_MS);
        int64_t t0 = ct_wall_ms();
        assert_int_equal(rlock_permit_semaphore_release(s, id), 1);
        json_t *ev = jp_expect(f->java, "w", "acquire", CT_WAKE_BOUND_MS);
        assert_non_null(json_string_value(json_object_get(ev, "id")));
        lat[i] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        rlock_permit_semaphore_free(s);
    }
    jt_report_latencies(VERSION, "C release by id -> Java permit waiter", lat,
                        WAKE_ROUNDS);
    assert_true(least(lat, WAKE_ROUNDS) < SEM_FAST_MS);
}

/* A C thread blocked in rlock_permit_semaphore_acquire(). */
typedef struct psem_waiter {
    pthread_t thread;
    rlock_permit_semaphore *sem;
    char id[RLOCK_PERMIT_ID_SIZE];
    atomic_int done;
    atomic_int rc;
    _Atomic int64_t done_wall_ms;
} psem_waiter;

static void *psem_waiter_main(void *p)
{
    psem_waiter *w = p;
    int rc = rlock_permit_semaphore_acquire(w->sem, RLOCK_WAIT_FOREVER,
                                            30000, w->id);
    atomic_store(&w->done_wall_ms, ct_wall_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_c_permit_waiter_is_woken_by_java_release(void **state)
{
    sem_fixture *f = *state;
    long long lat[WAKE_ROUNDS];

    for (int i = 0; i < WAKE_ROUNDS; i++) {
        char name[128], channel[160], id[RLOCK_PERMIT_ID_SIZE];
        static psem_waiter w;
        snprintf(name, sizeof(name), SUITE ":psem_c_woken:%d", i);
        channel_of(channel, sizeof(channel), name);
        rlock_permit_semaphore *s = psem_of(f->c, name);
        assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
        java_permit(f, name, "-1", id);
        memset(&w, 0, sizeof(w));
        w.sem = s;
        assert_int_equal(
            pthread_create(&w.thread, NULL, psem_waiter_main, &w), 0);
        ct_wait_numsub(&f->redis, channel, 1, 5000);
        json_t *ev = jt_java_do(f->java, "p", "release", "psem", name, id,
                                JT_PEER_MS);
        assert_true(np_bool(ev, "released"));
        int64_t t0 = np_int(ev, "t0");
        json_decref(ev);
        int64_t until = rt_now_ms() + CT_WAKE_BOUND_MS;
        while (!atomic_load(&w.done) && rt_now_ms() < until)
            rt_sleep_ms(1);
        assert_true(atomic_load(&w.done));
        pthread_join(w.thread, NULL);
        assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
        lat[i] = atomic_load(&w.done_wall_ms) - t0;
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        rlock_permit_semaphore_free(s);
    }
    jt_report_latencies(VERSION, "Java release by id -> C permit waiter",
                        lat, WAKE_ROUNDS);
    assert_true(least(lat, WAKE_ROUNDS) < SEM_FAST_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_each_side_sees_the_others_permits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_java_ttl_variant_is_the_same_key,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_c_waiter_is_woken_by_java_release, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_java_waiter_is_woken_by_c_release, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_never_more_holders_than_permits_across_c_and_java, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_java_releases_a_c_permit_by_id,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_c_releases_a_java_permit_by_id,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_each_side_reclaims_the_others_ended_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_java_permit_waiter_is_woken_by_c_release, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_c_permit_waiter_is_woken_by_java_release, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
