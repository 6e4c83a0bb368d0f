/*
 * test_peer_contention.c: C threads and Redisson peer processes
 * (node-redisson 1.0.4) taking turns on one lock lose no update.
 *
 * Every contender repeats: take the lock, GET a counter, pause 1 ms, SET it
 * to the value + 1, note who held the lock in a log list, unlock, pause
 * THINK_MS (the lock is not fair, as Redisson's RLock is not: without a pause
 * between turns the releasing side takes it straight back). The
 * read-modify-write is not atomic, so only mutual exclusion across both
 * implementations keeps the final count exact. The log shows that the lock
 * really changed hands between the two sides while they contended, and a
 * calibration test runs the same loop without the lock and shows that it
 * does lose updates, so the count is a real witness.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_testing.h"
#include "harness.h"
#include "lock_testing.h"
#include "node_peer.h"
#include "rlock.h"

#define LT_SUITE      "peer_contention"
#define C_THREADS     3
#define C_ITERATIONS  40
#define PEERS         2
#define PEER_ITER     40
#define PEER_ITER_STR "40"
#define RUN_BUDGET_MS 60000
#define THINK_MS      6
#define THINK_MS_STR  "6"

/* One C contender: a thread with its own Redis connection for the counter. */
typedef struct contender {
    rt_redis *redis;
    pthread_barrier_t *start; /* NULL: start at once */
    rlock *lock;              /* NULL: no locking (calibration) */
    const char *counter;
    int iterations;
    int failures; /* lock/unlock/Redis calls that did not succeed */
    pthread_t thread;
} contender;

/* GET then SET counter + 1 on c, with a pause in between, then appends
 * "c" to the list counter:log. Returns 0 or -1. */
static int increment(redisContext *c, const char *counter)
{
    redisReply *rep = redisCommand(c, "GET %s", counter);
    long long value;

    if (rep == NULL)
        return -1;
    value = rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : 0;
    freeReplyObject(rep);
    rt_sleep_ms(1);
    rep = redisCommand(c, "SET %s %lld", counter, value + 1);
    if (rep == NULL)
        return -1;
    freeReplyObject(rep);
    rep = redisCommand(c, "RPUSH %s:log c", counter);
    if (rep == NULL)
        return -1;
    freeReplyObject(rep);
    return 0;
}

static void *contender_main(void *arg)
{
    contender *k = arg;
    redisContext *c = redisConnect("127.0.0.1", k->redis->port);

    if (k->start != NULL)
        pthread_barrier_wait(k->start);
    if (c == NULL || c->err) {
        k->failures = k->iterations;
        redisFree(c);
        return NULL;
    }
    for (int i = 0; i < k->iterations; i++) {
        if (k->lock != NULL && rlock_lock(k->lock) != RLOCK_OK) {
            k->failures++;
            continue;
        }
        if (increment(c, k->counter) != 0)
            k->failures++;
        if (k->lock != NULL && rlock_unlock(k->lock) != RLOCK_OK)
            k->failures++;
        rt_sleep_ms(THINK_MS);
    }
    redisFree(c);
    return NULL;
}

/* Returns how often the holder changed between a C thread ("c") and a peer
 * ("p") in the log list counter:log, and checks its length. */
static int side_changes(rt_redis *r, const char *counter, size_t expected)
{
    redisReply *rep = rt_cmd(r, "LRANGE %s:log 0 -1", counter);
    int changes = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, expected);
    for (size_t i = 1; i < rep->elements; i++)
        if (strcmp(rep->element[i]->str, rep->element[i - 1]->str) != 0)
            changes++;
    freeReplyObject(rep);
    return changes;
}

static long long counter_value(rt_redis *r, const char *counter)
{
    char *s = rt_cmd_str(r, "GET %s", counter);
    long long v;

    assert_non_null(s);
    v = atoll(s);
    free(s);
    return v;
}

/* ------------------------------------------------------------------ tests */

static void test_c_threads_and_peers_lose_no_increment(void **state)
{
    ct_fixture *f = *state;
    char name[128], counter[160];
    rlock_client *a, *b;
    rlock *la, *lb;
    contender c[C_THREADS];
    np_peer *peers[PEERS];
    pthread_barrier_t go;
    int64_t start = rt_now_ms();
    int changes;

    LT_TEST_NAME(name);
    snprintf(counter, sizeof(counter), "%s:counter", name);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s %s:log", counter, counter),
                     0);
    a = ct_connect(&f->redis);
    b = ct_connect(&f->redis);
    la = lt_get_lock(a, name);
    lb = lt_get_lock(b, name);

    for (int i = 0; i < PEERS; i++)
        peers[i] = np_start(
            "contend", f->redis.url, name,
            (const char *const[]){counter, PEER_ITER_STR, THINK_MS_STR, NULL});
    for (int i = 0; i < PEERS; i++)
        json_decref(np_expect(peers[i], "ready", 10000));
    /* two threads share client a, the third is alone in client b; all
     * start together with the peers */
    assert_int_equal(pthread_barrier_init(&go, NULL, C_THREADS + 1), 0);
    for (int i = 0; i < C_THREADS; i++) {
        c[i] = (contender){.redis = &f->redis,
                           .start = &go,
                           .lock = i < 2 ? la : lb,
                           .counter = counter,
                           .iterations = C_ITERATIONS};
        assert_int_equal(
            pthread_create(&c[i].thread, NULL, contender_main, &c[i]), 0);
    }
    for (int i = 0; i < PEERS; i++)
        np_send(peers[i], "go");
    pthread_barrier_wait(&go);

    for (int i = 0; i < PEERS; i++) {
        json_t *ev = np_expect(peers[i], "done", RUN_BUDGET_MS);

        assert_int_equal(np_int(ev, "iterations"), PEER_ITER);
        json_decref(ev);
        np_finish(peers[i], 10000);
    }
    for (int i = 0; i < C_THREADS; i++) {
        assert_int_equal(pthread_join(c[i].thread, NULL), 0);
        assert_int_equal(c[i].failures, 0);
    }
    pthread_barrier_destroy(&go);

    assert_int_equal(counter_value(&f->redis, counter),
                     C_THREADS * C_ITERATIONS + PEERS * PEER_ITER);
    /* the lock went back and forth between the sides, not one side's
     * whole run after the other's (about 70 changes are usual) */
    changes = side_changes(&f->redis, counter,
                           C_THREADS * C_ITERATIONS + PEERS * PEER_ITER);
    print_message("holder changed sides %d times\n", changes);
    assert_true(changes >= 20);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_true(rt_now_ms() - start < RUN_BUDGET_MS);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

static void test_counter_without_lock_does_lose_increments(void **state)
{
    ct_fixture *f = *state;
    char counter[160];
    contender c[C_THREADS + 1];

    snprintf(counter, sizeof(counter), "%s:calibration", LT_SUITE);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", counter), 0);
    for (int i = 0; i < C_THREADS + 1; i++) {
        c[i] = (contender){.redis = &f->redis,
                           .lock = NULL,
                           .counter = counter,
                           .iterations = C_ITERATIONS};
        assert_int_equal(
            pthread_create(&c[i].thread, NULL, contender_main, &c[i]), 0);
    }
    for (int i = 0; i < C_THREADS + 1; i++) {
        assert_int_equal(pthread_join(c[i].thread, NULL), 0);
        assert_int_equal(c[i].failures, 0);
    }
    /* overlapping GET ... SET pairs overwrite each other */
    assert_true(counter_value(&f->redis, counter) <
                (C_THREADS + 1) * C_ITERATIONS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_c_threads_and_peers_lose_no_increment,
                                  np_teardown),
        cmocka_unit_test(test_counter_without_lock_does_lose_increments),
    };

    rt_require_redis();
    np_require_node();
    return cmocka_run_group_tests(tests, ct_group_setup, ct_group_teardown);
}
