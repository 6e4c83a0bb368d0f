/*
 * test_mutex.c: mutual exclusion under contention.
 *
 * Many threads share one client and increment a counter kept in Redis with
 * a non-atomic GET then SET, each on the thread's own plain hiredis
 * connection (not the library's). Without mutual exclusion updates are lost
 * and the final count falls short. An in-process "inside" counter also
 * catches two threads in the critical section at once.
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

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define THREADS           16
#define ITERATIONS        1000
#define NESTED_THREADS    8
#define NESTED_ITERATIONS 250

typedef struct shared {
    lt_fixture *f;
    const char *lock_name;
    const char *counter_key;
    int iterations;
    int nested;
    atomic_int inside;   /* threads in the critical section right now */
    atomic_int overlaps; /* times a thread found another one inside */
    atomic_int errors;   /* failed library or Redis calls */
    char first_error[160];
    pthread_mutex_t error_mu;
} shared;

static void record_error(shared *s, const char *what, int rc)
{
    if (atomic_fetch_add(&s->errors, 1) == 0) {
        pthread_mutex_lock(&s->error_mu);
        snprintf(s->first_error, sizeof(s->first_error), "%s: %d (%s)", what,
                 rc, rlock_err_name(rc));
        pthread_mutex_unlock(&s->error_mu);
    }
}

/* GET key on c; returns the number (0 when missing) or -1. */
static long long get_counter(redisContext *c, const char *key)
{
    redisReply *rep = redisCommand(c, "GET %s", key);
    long long v = -1;

    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_NIL)
        v = 0;
    else if (rep->type == REDIS_REPLY_STRING)
        v = atoll(rep->str);
    freeReplyObject(rep);
    return v;
}

static int set_counter(redisContext *c, const char *key, long long v)
{
    redisReply *rep = redisCommand(c, "SET %s %lld", key, v);
    int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;

    freeReplyObject(rep);
    return ok ? 0 : -1;
}

static void *worker(void *p)
{
    shared *s = p;
    rlock *l = NULL;
    redisContext *c;
    int rc;

    c = redisConnect("127.0.0.1", s->f->redis.port);
    if (c == NULL || c->err != 0) {
        record_error(s, "redisConnect", -1);
        redisFree(c);
        return NULL;
    }
    rc = rlock_get(s->f->client, s->lock_name, &l);
    if (rc != RLOCK_OK) {
        record_error(s, "rlock_get", rc);
        redisFree(c);
        return NULL;
    }
    for (int i = 0; i < s->iterations; i++) {
        long long v;

        if ((rc = rlock_lock(l)) != RLOCK_OK) {
            record_error(s, "rlock_lock", rc);
            break;
        }
        if (s->nested && (rc = rlock_lock(l)) != RLOCK_OK) {
            record_error(s, "nested rlock_lock", rc);
            rlock_unlock(l);
            break;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0)
            atomic_fetch_add(&s->overlaps, 1);
        v = get_counter(c, s->counter_key);
        if (v < 0)
            record_error(s, "GET", -1);
        /* nested: release the inner hold between the read and the write,
         * so a broken inner unlock that frees the lock loses updates */
        if (s->nested && (rc = rlock_unlock(l)) != RLOCK_OK)
            record_error(s, "inner rlock_unlock", rc);
        if (v >= 0 && set_counter(c, s->counter_key, v + 1) != 0)
            record_error(s, "SET", -1);
        atomic_fetch_sub(&s->inside, 1);
        if ((rc = rlock_unlock(l)) != RLOCK_OK) {
            record_error(s, "rlock_unlock", rc);
            break;
        }
    }
    rlock_free(l);
    redisFree(c);
    return NULL;
}

/* Runs nthreads workers and checks the final counter. */
static void run_contention(lt_fixture *f, const char *lock_name,
                           const char *counter_key, int nthreads,
                           int iterations, int nested)
{
    pthread_t threads[THREADS];
    shared s = {.f = f,
                .lock_name = lock_name,
                .counter_key = counter_key,
                .iterations = iterations,
                .nested = nested};
    int64_t t0 = rt_now_ms();
    char *final;

    pthread_mutex_init(&s.error_mu, NULL);
    atomic_init(&s.inside, 0);
    atomic_init(&s.overlaps, 0);
    atomic_init(&s.errors, 0);
    assert_true(nthreads <= THREADS);
    for (int i = 0; i < nthreads; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &s), 0);
    for (int i = 0; i < nthreads; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    print_message("%d threads x %d iterations%s: %lld ms\n", nthreads,
                  iterations, nested ? " (nested)" : "",
                  (long long)(rt_now_ms() - t0));
    pthread_mutex_destroy(&s.error_mu);

    if (atomic_load(&s.errors) != 0)
        fail_msg("%d failed calls, first: %s", atomic_load(&s.errors),
                 s.first_error);
    assert_int_equal(atomic_load(&s.overlaps), 0);
    final = rt_cmd_str(&f->redis, "GET %s", counter_key);
    assert_non_null(final);
    assert_int_equal(atoll(final), (long long)nthreads * iterations);
    free(final);
    /* nothing left behind */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", lock_name), 0);
}

static void test_threads_increment_counter_under_lock(void **state)
{
    run_contention(*state, "mutex:flat", "mutex:flat:counter", THREADS,
                   ITERATIONS, 0);
}

static void test_nested_holds_keep_mutual_exclusion(void **state)
{
    run_contention(*state, "mutex:nested", "mutex:nested:counter",
                   NESTED_THREADS, NESTED_ITERATIONS, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_increment_counter_under_lock),
        cmocka_unit_test(test_nested_holds_keep_mutual_exclusion),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
