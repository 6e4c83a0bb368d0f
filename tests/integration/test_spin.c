/*
 * test_spin.c: the spin lock (REDISSON-PROTOCOL.md section 6).
 *
 * A spin lock is the plain lock's hash, taken by polling with a back-off
 * instead of waiting on pub/sub. So: threads still exclude each other (a
 * counter kept with a non-atomic GET then SET loses no update), a waiter
 * subscribes to nothing and the unlock publishes nothing, the back-off
 * setter checks its ranges, and a constant back-off bounds how late a
 * waiter notices a release.
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

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "spin"

#define THREADS    6
#define ITERATIONS 100
/* The constant back-off test: pause between attempts, and the margin on
 * top of it for a release to be noticed (a round trip or two, on a loaded
 * machine). */
#define CONSTANT_MS      50
#define NOTICE_MARGIN_MS 350
#define HANG_MS          30000

/* ------------------------------------------------------------- helpers */

static rlock *spin_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_spin_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* Asserts that no channel whose name contains the lock name has a
 * subscriber. */
static void assert_no_channel_of(rt_redis *r, const char *name)
{
    char channel[200];
    redisReply *rep;

    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_numsub(r, channel), 0);
    rep = rt_cmd(r, "PUBSUB CHANNELS *%s*", name);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    if (rep->elements != 0) {
        char first[200];

        snprintf(first, sizeof(first), "%s", rep->element[0]->str);
        freeReplyObject(rep);
        fail_msg("a channel of the lock is subscribed: %s", first);
    }
    freeReplyObject(rep);
}

/* --------------------------------------------------------- exclusion */

typedef struct counter_run {
    rt_redis *redis;
    rlock *l;
    const char *key;
    atomic_int inside;
    atomic_int overlaps;
    atomic_int errors;
} counter_run;

static void *counter_main(void *p)
{
    counter_run *s = p;
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->redis->port, tv);

    if (c == NULL || c->err != 0) {
        atomic_fetch_add(&s->errors, 1);
        redisFree(c);
        return NULL;
    }
    for (int i = 0; i < ITERATIONS; i++) {
        redisReply *rep;
        long long v = -1;

        if (rlock_lock(s->l) != RLOCK_OK) {
            atomic_fetch_add(&s->errors, 1);
            break;
        }
        if (atomic_fetch_add(&s->inside, 1) != 0)
            atomic_fetch_add(&s->overlaps, 1);
        rep = redisCommand(c, "GET %s", s->key);
        if (rep != NULL && rep->type == REDIS_REPLY_NIL)
            v = 0;
        else if (rep != NULL && rep->type == REDIS_REPLY_STRING)
            v = atoll(rep->str);
        freeReplyObject(rep);
        rep = v >= 0 ? redisCommand(c, "SET %s %lld", s->key, v + 1) : NULL;
        if (rep == NULL || rep->type != REDIS_REPLY_STATUS)
            atomic_fetch_add(&s->errors, 1);
        freeReplyObject(rep);
        atomic_fetch_sub(&s->inside, 1);
        if (rlock_unlock(s->l) != RLOCK_OK) {
            atomic_fetch_add(&s->errors, 1);
            break;
        }
    }
    redisFree(c);
    return NULL;
}

/* Threads increment a counter with GET then SET under the spin lock: no
 * increment is lost, and no two threads are ever inside at once. */
static void test_threads_exclude_each_other(void **state)
{
    lt_fixture *f = *state;
    pthread_t threads[THREADS];
    char name[128], key[160];
    counter_run s = {.redis = &f->redis};
    int64_t t0 = rt_now_ms();
    char *final;

    LT_TEST_NAME(name);
    snprintf(key, sizeof(key), "%s:counter", name);
    s.l = spin_lock(f->client, name);
    s.key = key;
    atomic_init(&s.inside, 0);
    atomic_init(&s.overlaps, 0);
    atomic_init(&s.errors, 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, counter_main, &s),
                         0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    print_message("%d threads x %d iterations: %lld ms\n", THREADS, ITERATIONS,
                  (long long)(rt_now_ms() - t0));

    assert_int_equal(atomic_load(&s.errors), 0);
    assert_int_equal(atomic_load(&s.overlaps), 0);
    final = rt_cmd_str(&f->redis, "GET %s", key);
    assert_non_null(final);
    assert_int_equal(atoll(final), THREADS * ITERATIONS);
    free(final);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(s.l);
}

/* A spin lock and a plain lock of the same name share the hash, so each
 * keeps the other out. */
static void test_spin_and_plain_lock_exclude_each_other(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    static ft_holder h;
    rlock *spin, *plain;

    LT_TEST_NAME(name);
    spin = spin_lock(f->client, name);
    plain = lt_get_lock(f->client, name);

    ft_holder_start(&h, plain, 1, 0);
    assert_int_equal(rlock_trylock(spin, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_trylock(spin, 200, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);

    ft_holder_start(&h, spin, 1, 0);
    assert_int_equal(rlock_trylock(plain, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(spin);
    rlock_free(plain);
}

/* -------------------------------------------------------- no pub/sub */

/* A waiter polls: for the whole wait no channel of the lock has a
 * subscriber, and the holder's unlock publishes nothing; the waiter still
 * takes the lock after the release. */
static void test_waiting_uses_no_pubsub(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    rlock_client *c2 = lt_connect(f->redis.url, NULL, 0);
    static ft_holder h;
    static ft_waiter w;
    rt_sub *sub;
    rlock *l, *l2;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = spin_lock(f->client, name);
    l2 = spin_lock(c2, name);

    ft_holder_start(&h, l, 1, 0);
    memset(&w, 0, sizeof(w));
    ft_waiter_start(&w, l2);
    for (int i = 0; i < 20; i++) {
        rt_sleep_ms(50);
        assert_no_channel_of(&f->redis, name);
    }
    assert_int_equal(atomic_load(&w.done), 0);

    /* from here on, listen for any message on the lock channel */
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    if (!ft_waiters_wait(&w, 1, HANG_MS))
        fail_msg("the spinning waiter never took the lock");
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    rt_sleep_ms(100);
    assert_int_equal(rt_sub_count(sub), 0); /* neither unlock published */
    rt_sub_stop(sub);
    rlock_free(l);
    rlock_free(l2);
    rlock_client_free(c2);
}

/* ----------------------------------------------------------- back-off */

/* rlock_spin_set_backoff takes 1 <= initial <= max < 2^31 and a multiplier
 * of 1 to 16, and only on a spin lock. */
static void test_set_backoff_checks_its_arguments(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *spin, *plain, *fair;

    LT_TEST_NAME(name);
    spin = spin_lock(f->client, name);
    plain = lt_get_lock(f->client, name);
    assert_int_equal(rlock_fair_get(f->client, name, &fair), RLOCK_OK);

    assert_int_equal(rlock_spin_set_backoff(spin, 1, 128, 2), RLOCK_OK);
    assert_int_equal(rlock_spin_set_backoff(spin, 50, 50, 1), RLOCK_OK);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, INT32_MAX, 16), RLOCK_OK);

    assert_int_equal(rlock_spin_set_backoff(NULL, 1, 128, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 0, 128, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, -1, 128, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 129, 128, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, (int64_t)INT32_MAX + 1, 2),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, 128, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, 128, -2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, 128, 17), RLOCK_EINVAL);

    assert_int_equal(rlock_spin_set_backoff(plain, 1, 128, 2), RLOCK_ENOTSUP);
    assert_int_equal(rlock_spin_set_backoff(fair, 1, 128, 2), RLOCK_ENOTSUP);
    rlock_free(spin);
    rlock_free(plain);
    rlock_free(fair);
}

/* With a constant back-off of 50 ms, a waiter polls about 20 times a
 * second, and takes the lock within 50 ms (plus a margin) of its release. */
static void test_constant_backoff_notices_release_within_the_pause(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c2 = lt_connect(f->redis.url, NULL, 0);
    static ft_holder h;
    static ft_waiter w;
    long long calls_before, calls;
    int64_t t_unlock, late;
    rlock *l, *l2;

    LT_TEST_NAME(name);
    l = spin_lock(f->client, name);
    l2 = spin_lock(c2, name);
    assert_int_equal(rlock_spin_set_backoff(l2, CONSTANT_MS, CONSTANT_MS, 1),
                     RLOCK_OK);
    ft_holder_start(&h, l, 1, 0);

    memset(&w, 0, sizeof(w));
    calls_before = ft_script_calls(&f->redis);
    ft_waiter_start(&w, l2);
    rt_sleep_ms(1000);
    calls = ft_script_calls(&f->redis) - calls_before;
    print_message("%lld attempts in 1 s of waiting\n", calls);
    /* 20 on an idle machine; a gate run at a load average of 12 saw 5 */
    assert_true(calls >= 1000 / CONSTANT_MS / 5);
    assert_true(calls <= 1000 / CONSTANT_MS * 2);

    t_unlock = rt_now_ms();
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    if (!ft_waiters_wait(&w, 1, HANG_MS))
        fail_msg("the spinning waiter never took the lock");
    late = w.acquired_ms - t_unlock;
    print_message("took the lock %lld ms after the unlock began\n",
                  (long long)late);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(late < CONSTANT_MS + NOTICE_MARGIN_MS);
    rlock_free(l);
    rlock_free(l2);
    rlock_client_free(c2);
}

/* ------------------------------------------------------- other calls */

/* A spin lock is reentrant, writes the plain lock's hash field, and says
 * it is a spin lock. */
static void test_spin_lock_is_reentrant_and_reports_its_kind(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = spin_lock(f->client, name);
    assert_int_equal(rlock_kind(l), RLOCK_KIND_SPIN);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 2);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_exclude_each_other),
        cmocka_unit_test(test_spin_and_plain_lock_exclude_each_other),
        cmocka_unit_test(test_waiting_uses_no_pubsub),
        cmocka_unit_test(test_set_backoff_checks_its_arguments),
        cmocka_unit_test(
            test_constant_backoff_notices_release_within_the_pause),
        cmocka_unit_test(test_spin_lock_is_reentrant_and_reports_its_kind),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
