/*
 * test_semaphore_async.c: the semaphores' async acquires
 * (rlock_semaphore_acquire_async, rlock_permit_semaphore_acquire_async),
 * against a real server.
 *
 * Each call is checked as its blocking twin is, through its completion: a
 * release by another client completes a pending acquire (by its message:
 * the re-check interval is far longer than any test), a wait budget that
 * runs out completes it with RLOCK_ETIMEDOUT, freeing the client completes
 * pending ones with RLOCK_ECLOSED, and bad arguments are refused at the
 * call, with no completion. Redis is read with the harness's own
 * connection, never through rlock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "semaphore_async"

/* A re-check interval far longer than any test: a completion that comes
 * within a test was brought by a message. */
#define NO_RECHECK_MS 60000
/* How long a completion may take once due, on a loaded machine. */
#define DUE_MS 3000
/* How long a pending call must stay pending to count as waiting. */
#define QUIET_MS 200
#define BUDGET_MS 300

/* ------------------------------------------------------------- helpers */

/* An async acquire's completion: status and (permit semaphores) the id,
 * once done is set; at_ms is when it ran. */
typedef struct sem_completion {
    atomic_int done;
    atomic_int status;
    _Atomic int64_t at_ms;
    atomic_int calls;
    char id[RLOCK_PERMIT_ID_SIZE]; /* written before done is set */
    atomic_int id_null;
} sem_completion;

static void record(sem_completion *c, int status)
{
    atomic_store(&c->status, status);
    atomic_store(&c->at_ms, rt_now_ms());
    atomic_fetch_add(&c->calls, 1);
    atomic_store(&c->done, 1);
}

static void on_sem_done(rlock_semaphore *s, int status, void *arg)
{
    (void)s;
    record(arg, status);
}

static void on_permit_done(rlock_permit_semaphore *s, int status,
                           const char *id, void *arg)
{
    sem_completion *c = arg;
    (void)s;
    atomic_store(&c->id_null, id == NULL);
    if (id != NULL)
        snprintf(c->id, sizeof(c->id), "%s", id);
    record(c, status);
}

/* Waits up to within_ms for c (failing the test after that); returns its
 * status. */
static int await_completion(sem_completion *c, int64_t within_ms)
{
    int64_t end = rt_now_ms() + within_ms;
    while (!atomic_load(&c->done) && rt_now_ms() < end)
        rt_sleep_ms(2);
    assert_true(atomic_load(&c->done));
    return atomic_load(&c->status);
}

static rlock_semaphore *sem_of(rlock_client *c, const char *name)
{
    rlock_semaphore *s = NULL;
    assert_int_equal(rlock_semaphore_get(c, name, &s), RLOCK_OK);
    return s;
}

static rlock_permit_semaphore *psem_of(rlock_client *c, const char *name)
{
    rlock_permit_semaphore *s = NULL;
    assert_int_equal(rlock_permit_semaphore_get(c, name, &s), RLOCK_OK);
    return s;
}

/* Waits until the semaphore's channel, "redisson_sc:{name}", has n
 * subscribers: the pending calls sleep on it. */
static void await_subscribed(rt_redis *r, const char *name, long long n)
{
    char channel[200];
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    assert_int_equal(rt_wait_numsub(r, channel, n, 5000), n);
}

static long long int_in_redis(rt_redis *r, const char *key)
{
    char *v = rt_cmd_str(r, "GET %s", key);
    long long n = v != NULL ? atoll(v) : -1;
    free(v);
    return n;
}

/* Whether Redis holds a lease for permit id (hex) of name: its sorted
 * set's member is the id's raw bytes. */
static bool lease_in_redis(rt_redis *r, const char *name, const char *id)
{
    char key[200];
    unsigned char raw[16];
    snprintf(key, sizeof(key), "{%s}:timeout", name);
    assert_int_equal(strlen(id), 32);
    for (int i = 0; i < 16; i++) {
        unsigned v;
        assert_int_equal(sscanf(id + 2 * i, "%2x", &v), 1);
        raw[i] = (unsigned char)v;
    }
    redisReply *rep = rt_cmd(r, "ZSCORE %s %b", key, raw, sizeof(raw));
    assert_non_null(rep);
    bool there = rep->type == REDIS_REPLY_STRING;
    freeReplyObject(rep);
    return there;
}

/* ---------------------------------------------------------- semaphore */

static void test_acquire_async_completes_when_another_client_releases(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);
    rlock_semaphore *s = sem_of(f->client, name);
    rlock_semaphore *releaser = sem_of(other, name);
    sem_completion done = {0};

    assert_int_equal(rlock_semaphore_try_set_permits(releaser, 1, 0), 1);
    assert_int_equal(rlock_semaphore_acquire_async(s, 2, RLOCK_WAIT_FOREVER,
                                                   on_sem_done, &done),
                     RLOCK_OK);
    await_subscribed(&f->redis, name, 1);
    rt_sleep_ms(QUIET_MS);
    assert_false(atomic_load(&done.done)); /* one permit is not two */
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(releaser, 1), RLOCK_OK);
    assert_int_equal(await_completion(&done, DUE_MS), RLOCK_OK);
    assert_true(atomic_load(&done.at_ms) - t0 < NO_RECHECK_MS);
    assert_int_equal(int_in_redis(&f->redis, name), 0);
    rt_sleep_ms(QUIET_MS);
    assert_int_equal(atomic_load(&done.calls), 1);
    rlock_semaphore_free(releaser);
    rlock_semaphore_free(s);
    rlock_client_free(other);
}

static void test_acquire_async_budget_ends_with_etimedout(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);
    sem_completion done = {0};

    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, 0), 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(
        rlock_semaphore_acquire_async(s, 2, BUDGET_MS, on_sem_done, &done),
        RLOCK_OK);
    assert_int_equal(await_completion(&done, BUDGET_MS + DUE_MS),
                     RLOCK_ETIMEDOUT);
    assert_true(atomic_load(&done.at_ms) - t0 >= BUDGET_MS);
    assert_int_equal(int_in_redis(&f->redis, name), 1); /* untouched */
    rlock_semaphore_free(s);
}

static void test_client_free_ends_pending_acquires_with_eclosed(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    rlock_semaphore *s = sem_of(c, name);
    sem_completion one = {0}, two = {0};

    assert_int_equal(rlock_semaphore_acquire_async(s, 1, RLOCK_WAIT_FOREVER,
                                                   on_sem_done, &one),
                     RLOCK_OK);
    assert_int_equal(rlock_semaphore_acquire_async(s, 3, RLOCK_WAIT_FOREVER,
                                                   on_sem_done, &two),
                     RLOCK_OK);
    await_subscribed(&f->redis, name, 1);
    rlock_client_free(c);
    assert_int_equal(await_completion(&one, DUE_MS), RLOCK_ECLOSED);
    assert_int_equal(await_completion(&two, DUE_MS), RLOCK_ECLOSED);
    assert_int_equal(rlock_semaphore_acquire_async(s, 1, 0, on_sem_done,
                                                   &one),
                     RLOCK_ECLOSED);
    rlock_semaphore_free(s);
}

static void test_acquire_async_refuses_bad_arguments(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);
    sem_completion done = {0};

    assert_int_equal(rlock_semaphore_acquire_async(NULL, 1, 0, on_sem_done,
                                                   &done),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire_async(s, 1, 0, NULL, &done),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire_async(s, 0, 0, on_sem_done,
                                                   &done),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire_async(s, -1, 0, on_sem_done,
                                                   &done),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire_async(s, 1, -2, on_sem_done,
                                                   &done),
                     RLOCK_EINVAL);
    rt_sleep_ms(QUIET_MS);
    assert_false(atomic_load(&done.done));
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_semaphore_free(s);
}

/* ------------------------------------------- permit-expirable semaphore */

static void test_permit_acquire_async_gets_an_id_when_another_releases(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], held[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    rlock_permit_semaphore *holder = psem_of(other, name);
    sem_completion done = {0};

    assert_int_equal(rlock_permit_semaphore_try_set_permits(holder, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(
                         holder, 0, RLOCK_PERMIT_LEASE_NONE, held),
                     RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         s, RLOCK_WAIT_FOREVER, 60000, on_permit_done, &done),
                     RLOCK_OK);
    await_subscribed(&f->redis, name, 1);
    rt_sleep_ms(QUIET_MS);
    assert_false(atomic_load(&done.done));
    assert_int_equal(rlock_permit_semaphore_release(holder, held), 1);
    assert_int_equal(await_completion(&done, DUE_MS), RLOCK_OK);
    assert_false(atomic_load(&done.id_null));
    assert_string_not_equal(done.id, held);
    assert_true(lease_in_redis(&f->redis, name, done.id));
    assert_false(lease_in_redis(&f->redis, name, held));
    assert_int_equal(rlock_permit_semaphore_release(holder, done.id), 1);
    rlock_permit_semaphore_free(holder);
    rlock_permit_semaphore_free(s);
    rlock_client_free(other);
}

static void test_permit_acquire_async_budget_ends_with_etimedout(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    sem_completion done = {0};

    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         s, BUDGET_MS, 60000, on_permit_done, &done),
                     RLOCK_OK);
    assert_int_equal(await_completion(&done, BUDGET_MS + DUE_MS),
                     RLOCK_ETIMEDOUT);
    assert_true(atomic_load(&done.at_ms) - t0 >= BUDGET_MS);
    assert_true(atomic_load(&done.id_null));
    rlock_permit_semaphore_free(s);
}

static void test_client_free_ends_pending_permit_acquires_with_eclosed(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    rlock_permit_semaphore *s = psem_of(c, name);
    sem_completion done = {0};

    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         s, RLOCK_WAIT_FOREVER, RLOCK_PERMIT_LEASE_NONE,
                         on_permit_done, &done),
                     RLOCK_OK);
    await_subscribed(&f->redis, name, 1);
    rlock_client_free(c);
    assert_int_equal(await_completion(&done, DUE_MS), RLOCK_ECLOSED);
    assert_true(atomic_load(&done.id_null));
    rlock_permit_semaphore_free(s);
}

static void test_permit_acquire_async_refuses_bad_arguments(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    sem_completion done = {0};

    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         NULL, 0, 1000, on_permit_done, &done),
                     RLOCK_EINVAL);
    assert_int_equal(
        rlock_permit_semaphore_acquire_async(s, 0, 1000, NULL, &done),
        RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         s, -2, 1000, on_permit_done, &done),
                     RLOCK_EINVAL);
    assert_int_equal(
        rlock_permit_semaphore_acquire_async(s, 0, 0, on_permit_done, &done),
        RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire_async(
                         s, 0, -2, on_permit_done, &done),
                     RLOCK_EINVAL);
    rt_sleep_ms(QUIET_MS);
    assert_false(atomic_load(&done.done));
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_permit_semaphore_free(s);
}

static int setup(void **state)
{
    rlock_config *cfg = NULL;
    if (rlock_config_new(&cfg) != RLOCK_OK ||
        rlock_config_set_recheck_interval(cfg, NO_RECHECK_MS) != RLOCK_OK) {
        rlock_config_free(cfg);
        return -1;
    }
    int rc = lt_group_setup_with(state, cfg);
    rlock_config_free(cfg);
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_acquire_async_completes_when_another_client_releases),
        cmocka_unit_test(test_acquire_async_budget_ends_with_etimedout),
        cmocka_unit_test(test_client_free_ends_pending_acquires_with_eclosed),
        cmocka_unit_test(test_acquire_async_refuses_bad_arguments),
        cmocka_unit_test(
            test_permit_acquire_async_gets_an_id_when_another_releases),
        cmocka_unit_test(test_permit_acquire_async_budget_ends_with_etimedout),
        cmocka_unit_test(
            test_client_free_ends_pending_permit_acquires_with_eclosed),
        cmocka_unit_test(test_permit_acquire_async_refuses_bad_arguments),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, setup, lt_group_teardown);
}
