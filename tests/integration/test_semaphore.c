/*
 * test_semaphore.c: the semaphore (rlock.h "semaphores";
 * docs/protocol-synchronizers.md "Semaphore"), against a real server.
 *
 * What Redis holds and what is published are checked with the harness's
 * own connections (rt_cmd, rt_sub), never through rlock: the key is the
 * permit count, and every change that frees permits publishes the new
 * count on "redisson_sc:{N}". Waiting is checked with threads blocked in
 * rlock_semaphore_acquire(): woken by a release (quickly, with a re-check
 * interval far longer than the test), woken only as many as the permits
 * serve, found by the re-check when the message never comes, ending
 * within its budget when Redis is gone, and still woken after Redis
 * restarted under it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "proto/proto.h" /* rlock__alloc_fail_after */
#include "rlock.h"

#define LT_SUITE "semaphore"

/* A re-check interval far longer than any test here: a waiter that wakes
 * within a test was woken by a message. */
#define NO_RECHECK_MS 60000
/* The wake-up a message must give, and what a loaded machine may add. */
#define WAKE_MS      50
#define LOAD_SLACK_MS 450
/* How long a waiter must stay blocked to count as not woken. */
#define QUIET_MS 300
#define HANG_MS  20000

/* ------------------------------------------------------------- helpers */

static rlock_semaphore *sem_of(rlock_client *c, const char *name)
{
    rlock_semaphore *s = NULL;
    assert_int_equal(rlock_semaphore_get(c, name, &s), RLOCK_OK);
    assert_non_null(s);
    return s;
}

/* prefix("redisson_sc", name), the semaphore's channel. */
static void channel_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, strchr(name, '{') ? "redisson_sc:%s" : "redisson_sc:{%s}",
             name);
}

static long long permits_in_redis(rt_redis *r, const char *name)
{
    char *v = rt_cmd_str(r, "GET %s", name);
    long long n = v != NULL ? atoll(v) : -1;
    free(v);
    return n;
}

/* Script calls the server has run since its last CONFIG RESETSTAT
 * (EVAL and EVALSHA): counts the tries waiters make. */
static long long script_calls(rt_redis *r)
{
    redisReply *rep = rt_cmd(r, "INFO commandstats");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    long long total = 0;
    const char *names[] = {"cmdstat_eval:calls=", "cmdstat_evalsha:calls="};
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(rep->str, names[i]);
        if (at != NULL)
            total += atoll(at + strlen(names[i]));
    }
    freeReplyObject(rep);
    return total;
}

static void reset_stats(rt_redis *r)
{
    char *ok = rt_cmd_str(r, "CONFIG RESETSTAT");
    assert_non_null(ok);
    free(ok);
}

/* A thread blocked in rlock_semaphore_acquire(). */
typedef struct waiter {
    pthread_t thread;
    rlock_semaphore *sem;
    int permits;
    int64_t wait_ms;
    atomic_int done;
    atomic_int rc;
    _Atomic int64_t done_at_ms;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    int rc = rlock_semaphore_acquire(w->sem, w->permits, w->wait_ms);
    atomic_store(&w->done_at_ms, rt_now_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

static void waiter_start(waiter *w, rlock_semaphore *s, int permits,
                         int64_t wait_ms)
{
    memset(w, 0, sizeof(*w));
    w->sem = s;
    w->permits = permits;
    w->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

/* Waits up to within_ms for w to return; returns whether it did. */
static int waiter_await(waiter *w, int64_t within_ms)
{
    int64_t until = rt_now_ms() + within_ms;
    while (!atomic_load(&w->done) && rt_now_ms() < until)
        rt_sleep_ms(1);
    return atomic_load(&w->done);
}

static void waiter_join(waiter *w)
{
    assert_true(waiter_await(w, HANG_MS));
    pthread_join(w->thread, NULL);
}

/* Waits until the semaphore's channel has n subscribers (the waiters are
 * asleep on it). */
static void await_subscribed(rt_redis *r, const char *name, long long n)
{
    char channel[200];
    channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_wait_numsub(r, channel, n, 5000), n);
}

/* --------------------------------------------------------- the state */

static void test_try_set_permits_sets_only_once(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 3, 0), 1);
    assert_int_equal(permits_in_redis(&f->redis, name), 3);
    assert_int_equal(rt_cmd_int(&f->redis, "PTTL %s", name), -1);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 7, 0), 0);
    assert_int_equal(permits_in_redis(&f->redis, name), 3);
    rlock_semaphore_free(s);
}

static void test_try_set_permits_with_ttl_expires_the_key(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 2, 60000), 1);
    long long pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 50000 && pttl <= 60000);
    rlock_semaphore_free(s);
}

static void test_try_set_permits_publishes_the_count(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    LT_TEST_NAME(name);
    channel_of(channel, sizeof(channel), name);
    rt_sub *sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 4, 0), 1);
    assert_int_equal(rt_sub_wait(sub, 1, 5000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "4");
    rt_sub_stop(sub);
    rlock_semaphore_free(s);
}

static void test_acquire_takes_permits_when_enough(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 3, 0), 1);
    assert_int_equal(rlock_semaphore_acquire(s, 2, 0), RLOCK_OK);
    assert_int_equal(permits_in_redis(&f->redis, name), 1);
    rlock_semaphore_free(s);
}

static void test_acquire_without_enough_permits_times_out_untouched(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_acquire(s, 1, 0), RLOCK_ETIMEDOUT);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, 0), 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_semaphore_acquire(s, 2, 200), RLOCK_ETIMEDOUT);
    assert_true(rt_now_ms() - t0 >= 190);
    assert_int_equal(permits_in_redis(&f->redis, name), 1);
    rlock_semaphore_free(s);
}

static void test_release_adds_permits_and_publishes_the_count(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    LT_TEST_NAME(name);
    channel_of(channel, sizeof(channel), name);
    rlock_semaphore *s = sem_of(f->client, name);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, 0), 1);
    rt_sub *sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);

    assert_int_equal(rlock_semaphore_release(s, 2), RLOCK_OK);
    assert_int_equal(permits_in_redis(&f->redis, name), 3);
    assert_int_equal(rt_sub_wait(sub, 1, 5000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "3");
    rt_sub_stop(sub);
    rlock_semaphore_free(s);
}

static void test_release_if_exists_leaves_a_missing_semaphore_missing(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);

    assert_int_equal(rlock_semaphore_release_if_exists(s, 1), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 0, 0), 1);
    assert_int_equal(rlock_semaphore_release_if_exists(s, 2), 1);
    assert_int_equal(permits_in_redis(&f->redis, name), 2);
    rlock_semaphore_free(s);
}

static void test_available_reads_the_count_or_zero(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);
    int64_t n = -1;

    assert_int_equal(rlock_semaphore_available(s, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    char *ok = rt_cmd_str(&f->redis, "SET %s 5", name);
    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
    assert_int_equal(rlock_semaphore_available(s, &n), RLOCK_OK);
    assert_int_equal(n, 5);
    rlock_semaphore_free(s);
}

static void test_drain_takes_every_permit_and_drops_the_ttl(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);
    int64_t n = -1;

    assert_int_equal(rlock_semaphore_drain(s, &n), RLOCK_OK);
    assert_int_equal(n, 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 6, 60000), 1);
    assert_int_equal(rlock_semaphore_drain(s, &n), RLOCK_OK);
    assert_int_equal(n, 6);
    assert_int_equal(permits_in_redis(&f->redis, name), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "PTTL %s", name), -1);
    rlock_semaphore_free(s);
}

static void test_add_permits_creates_adds_and_subtracts(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    LT_TEST_NAME(name);
    channel_of(channel, sizeof(channel), name);
    rt_sub *sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    rlock_semaphore *s = sem_of(f->client, name);
    int64_t n = -1;

    assert_int_equal(rlock_semaphore_add_permits(s, 4, &n), RLOCK_OK);
    assert_int_equal(n, 4);
    assert_int_equal(rlock_semaphore_add_permits(s, -6, &n), RLOCK_OK);
    assert_int_equal(n, -2);
    assert_int_equal(permits_in_redis(&f->redis, name), -2);
    assert_int_equal(rt_sub_wait(sub, 2, 5000), 2);
    assert_string_equal(rt_sub_message(sub, 0), "4");
    assert_string_equal(rt_sub_message(sub, 1), "-2");
    rt_sub_stop(sub);
    rlock_semaphore_free(s);
}

static void test_bad_arguments_are_refused(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_semaphore *s = sem_of(f->client, name);
    rlock_semaphore *none = NULL;
    int64_t n;

    assert_int_equal(rlock_semaphore_get(f->client, "", &none), RLOCK_EINVAL);
    assert_null(none);
    assert_int_equal(rlock_semaphore_get(NULL, name, &none), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire(s, 0, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire(s, 1, -5), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_release(s, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_release_if_exists(s, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_try_set_permits(s, -1, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_available(s, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_acquire(NULL, 1, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_semaphore_available(NULL, &n), RLOCK_EINVAL);
    assert_null(rlock_semaphore_name(NULL));
    assert_string_equal(rlock_semaphore_name(s), name);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_semaphore_free(s);
    rlock_semaphore_free(NULL);
}

/* ----------------------------------------------------------- waiting */

static void test_release_wakes_a_waiter_at_once(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_semaphore *s = sem_of(f->client, name), *s2 = sem_of(c2, name);
    static waiter w;

    waiter_start(&w, s2, 1, RLOCK_WAIT_FOREVER);
    await_subscribed(&f->redis, name, 1);
    assert_false(waiter_await(&w, 50));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    waiter_join(&w);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    int64_t latency = atomic_load(&w.done_at_ms) - t0;
    print_message("release to wake-up: %lld ms\n", (long long)latency);
    assert_true(latency < WAKE_MS + LOAD_SLACK_MS);
    assert_int_equal(permits_in_redis(&f->redis, name), 0);
    rlock_semaphore_free(s);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_one_permit_wakes_one_of_two_waiters(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_semaphore *s = sem_of(f->client, name), *s2 = sem_of(c2, name);
    static waiter a, b;

    waiter_start(&a, s2, 1, RLOCK_WAIT_FOREVER);
    waiter_start(&b, s2, 1, RLOCK_WAIT_FOREVER);
    await_subscribed(&f->redis, name, 1); /* one subscription per client */
    rt_sleep_ms(100); /* both asleep */
    reset_stats(&f->redis);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    int64_t until = rt_now_ms() + HANG_MS;
    while (!atomic_load(&a.done) && !atomic_load(&b.done) &&
           rt_now_ms() < until)
        rt_sleep_ms(1);
    waiter *first = atomic_load(&a.done) ? &a : &b;
    waiter *second = first == &a ? &b : &a;
    assert_true(atomic_load(&first->done));
    assert_int_equal(atomic_load(&first->rc), RLOCK_OK);
    assert_false(waiter_await(second, QUIET_MS));
    /* the release and one try: the permit woke nobody else */
    assert_int_equal(script_calls(&f->redis), 2);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    waiter_join(second);
    assert_int_equal(atomic_load(&second->rc), RLOCK_OK);
    pthread_join(first->thread, NULL);
    rlock_semaphore_free(s);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_waiter_for_two_sleeps_through_one_permit(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_semaphore *s = sem_of(f->client, name), *s2 = sem_of(c2, name);
    static waiter w;

    waiter_start(&w, s2, 2, RLOCK_WAIT_FOREVER);
    await_subscribed(&f->redis, name, 1);
    rt_sleep_ms(50); /* past its try after the subscription */
    reset_stats(&f->redis);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    assert_false(waiter_await(&w, QUIET_MS));
    /* the release alone: one permit does not wake a waiter for two */
    assert_int_equal(script_calls(&f->redis), 1);
    assert_int_equal(permits_in_redis(&f->redis, name), 1);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    waiter_join(&w);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    assert_int_equal(permits_in_redis(&f->redis, name), 0);
    rlock_semaphore_free(s);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_recheck_finds_permits_no_message_announced(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval, 200);
    rlock_semaphore *s2 = sem_of(c2, name);
    static waiter w;

    waiter_start(&w, s2, 1, RLOCK_WAIT_FOREVER);
    await_subscribed(&f->redis, name, 1);
    assert_int_equal(rt_cmd_int(&f->redis, "INCRBY %s 1", name), 1);
    assert_true(waiter_await(&w, 200 + 2000));
    waiter_join(&w);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_wait_budget_holds_while_redis_is_paused(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_command_timeout, 500);
    rlock_semaphore *s2 = sem_of(c2, name);

    rt_redis_pause(&f->redis);
    int64_t t0 = rt_now_ms();
    int rc = rlock_semaphore_acquire(s2, 1, 300);
    int64_t took = rt_now_ms() - t0;
    rt_redis_resume(&f->redis);
    print_message("acquire with Redis paused: %s after %lld ms\n",
                  rlock_err_name(rc), (long long)took);
    assert_true(rc < 0);
    assert_true(took < 300 + 500 + 1000);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_waiter_survives_a_redis_restart(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_semaphore *s = sem_of(f->client, name), *s2 = sem_of(c2, name);
    static waiter w;

    waiter_start(&w, s2, 1, RLOCK_WAIT_FOREVER);
    await_subscribed(&f->redis, name, 1);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    /* the waiter subscribes again on its new connection */
    await_subscribed(&f->redis, name, 1);
    assert_false(waiter_await(&w, 100));
    int rc;
    int64_t until = rt_now_ms() + 10000;
    do { /* the releasing client reconnects too */
        rc = rlock_semaphore_release(s, 1);
        if (rc != RLOCK_OK)
            rt_sleep_ms(50);
    } while (rc != RLOCK_OK && rt_now_ms() < until);
    assert_int_equal(rc, RLOCK_OK);
    assert_true(waiter_await(&w, 5000));
    waiter_join(&w);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    rlock_semaphore_free(s);
    rlock_semaphore_free(s2);
    rlock_client_free(c2);
}

/* ------------------------------------------------------ out of memory */

static int ok_or_enomem(int rc)
{
    return rc >= 0 || rc == RLOCK_ENOMEM;
}

/* One session of both semaphores' calls with allocations failing after
 * the first n (STYLE.md 3.4). Returns true when nothing failed. */
static bool oom_session(rlock_client *c, const char *name, long n)
{
    rlock_semaphore *s = NULL;
    rlock_permit_semaphore *p = NULL;
    char id[RLOCK_PERMIT_ID_SIZE];
    int64_t count;
    bool clean = true;
    int rc;

    rlock__alloc_fail_after(n);
    rc = rlock_semaphore_get(c, name, &s);
    assert_true(ok_or_enomem(rc));
    clean &= rc == RLOCK_OK;
    if (rc == RLOCK_OK) {
        rc = rlock_semaphore_add_permits(s, 1, NULL);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        rc = rlock_semaphore_acquire(s, 1, 0);
        assert_true(ok_or_enomem(rc) || rc == RLOCK_ETIMEDOUT);
        clean &= rc == RLOCK_OK;
        rc = rlock_semaphore_available(s, &count);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        rlock_semaphore_free(s);
    }
    rc = rlock_permit_semaphore_get(c, name, &p);
    assert_true(ok_or_enomem(rc));
    clean &= rc == RLOCK_OK;
    if (rc == RLOCK_OK) {
        rc = rlock_permit_semaphore_add_permits(p, 1, NULL);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        rc = rlock_permit_semaphore_acquire(p, 0, 1000, id);
        assert_true(ok_or_enomem(rc) || rc == RLOCK_ETIMEDOUT);
        clean &= rc == RLOCK_OK;
        if (rc == RLOCK_OK) {
            rc = rlock_permit_semaphore_release(p, id);
            assert_true(ok_or_enomem(rc));
            clean &= rc == 1;
        }
        rlock_permit_semaphore_free(p);
    }
    rlock__alloc_fail_after(-1);
    return clean;
}

static void test_every_allocation_failure_is_survived(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long n;
    LT_TEST_NAME(name);

    for (n = 0; n < 1000; n++) {
        char step[160];
        snprintf(step, sizeof(step), "%s:%ld", name, n);
        if (oom_session(f->client, step, n))
            break;
    }
    print_message("a semaphore session needs %ld allocations\n", n);
    assert_true(n > 5); /* the hook really failed some */
    assert_true(n < 1000);
}

/* Threads of two clients take one permit each of 2, many times: never more
 * than 2 inside at once, and no permit lost or made. */
typedef struct cap_run {
    atomic_int inside;
    atomic_int most;
    atomic_int errors;
} cap_run;

typedef struct cap_thread {
    pthread_t thread;
    cap_run *run;
    rlock_semaphore *sem; /* its client's handle */
} cap_thread;

#define CAP_THREADS    4
#define CAP_ITERATIONS 40

static void *cap_main(void *p)
{
    cap_thread *t = p;
    cap_run *r = t->run;
    for (int i = 0; i < CAP_ITERATIONS; i++) {
        if (rlock_semaphore_acquire(t->sem, 1, HANG_MS) != RLOCK_OK) {
            atomic_fetch_add(&r->errors, 1);
            return NULL;
        }
        int now = atomic_fetch_add(&r->inside, 1) + 1;
        int most = atomic_load(&r->most);
        while (now > most &&
               !atomic_compare_exchange_weak(&r->most, &most, now))
            ;
        rt_sleep_ms(1);
        atomic_fetch_sub(&r->inside, 1);
        if (rlock_semaphore_release(t->sem, 1) != RLOCK_OK)
            atomic_fetch_add(&r->errors, 1);
    }
    return NULL;
}

static void test_never_more_holders_than_permits(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url, NULL, 0);
    rlock_semaphore *s = sem_of(f->client, name), *s2 = sem_of(c2, name);
    static cap_run run;
    static cap_thread threads[CAP_THREADS];

    memset(&run, 0, sizeof(run));
    assert_int_equal(rlock_semaphore_try_set_permits(s, 2, 0), 1);
    for (int i = 0; i < CAP_THREADS; i++) {
        threads[i] = (cap_thread){.run = &run, .sem = i % 2 ? s2 : s};
        assert_int_equal(
            pthread_create(&threads[i].thread, NULL, cap_main, &threads[i]),
            0);
    }
    for (int i = 0; i < CAP_THREADS; i++)
        pthread_join(threads[i].thread, NULL);
    assert_int_equal(atomic_load(&run.errors), 0);
    assert_true(atomic_load(&run.most) >= 1);
    assert_true(atomic_load(&run.most) <= 2);
    assert_int_equal(permits_in_redis(&f->redis, name), 2);
    rlock_semaphore_free(s2);
    rlock_semaphore_free(s);
    rlock_client_free(c2);
}

/* A semaphore's acquires count in the client's statistics as a lock's do:
 * at once, after a wait, or timed out. */
static void test_acquires_count_in_the_client_statistics(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    rlock_semaphore *s = sem_of(c, name);
    rlock_stats before = RLOCK_STATS_INIT, after = RLOCK_STATS_INIT;
    assert_int_equal(rlock_client_stats(c, &before), RLOCK_OK);

    assert_int_equal(rlock_semaphore_try_set_permits(s, 1, 0), 1);
    assert_int_equal(rlock_semaphore_acquire(s, 1, 0), RLOCK_OK);
    assert_int_equal(rlock_semaphore_acquire(s, 1, 0), RLOCK_ETIMEDOUT);
    waiter w;
    waiter_start(&w, s, 1, 5000);
    await_subscribed(&f->redis, name, 1);
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    waiter_join(&w);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);

    assert_int_equal(rlock_client_stats(c, &after), RLOCK_OK);
    assert_int_equal(after.acquired_immediately - before.acquired_immediately,
                     1);
    assert_int_equal(after.acquired_after_wait - before.acquired_after_wait,
                     1);
    assert_int_equal(after.acquire_timeouts - before.acquire_timeouts, 1);
    rlock_semaphore_free(s);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_try_set_permits_sets_only_once),
        cmocka_unit_test(test_acquires_count_in_the_client_statistics),
        cmocka_unit_test(test_try_set_permits_with_ttl_expires_the_key),
        cmocka_unit_test(test_try_set_permits_publishes_the_count),
        cmocka_unit_test(test_acquire_takes_permits_when_enough),
        cmocka_unit_test(
            test_acquire_without_enough_permits_times_out_untouched),
        cmocka_unit_test(test_release_adds_permits_and_publishes_the_count),
        cmocka_unit_test(
            test_release_if_exists_leaves_a_missing_semaphore_missing),
        cmocka_unit_test(test_available_reads_the_count_or_zero),
        cmocka_unit_test(test_drain_takes_every_permit_and_drops_the_ttl),
        cmocka_unit_test(test_add_permits_creates_adds_and_subtracts),
        cmocka_unit_test(test_bad_arguments_are_refused),
        cmocka_unit_test(test_release_wakes_a_waiter_at_once),
        cmocka_unit_test(test_one_permit_wakes_one_of_two_waiters),
        cmocka_unit_test(test_waiter_for_two_sleeps_through_one_permit),
        cmocka_unit_test(test_recheck_finds_permits_no_message_announced),
        cmocka_unit_test(test_wait_budget_holds_while_redis_is_paused),
        cmocka_unit_test(test_waiter_survives_a_redis_restart),
        cmocka_unit_test(test_never_more_holders_than_permits),
        cmocka_unit_test(test_every_allocation_failure_is_survived),
    };
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
