/*
 * test_herd.c: many processes on one RLock (issue 17), and the setting
 * that gives Redisson's own waiting back (rlock_config_set_lock_barging).
 *
 * Each rlock_client stands for a process (its own uuid, its own subscriber
 * connection), one thread each. The figures of speed are the benchmark's
 * (scripts/bench); these tests check behaviour only, with margins wide
 * enough for a loaded machine and the sanitizer builds.
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

#define LT_SUITE "herd"

/* The contenders of the many-clients test, and how long they loop. */
#define CLIENTS 8
#define LOOP_MS 1500
/* The longest any of them may wait for one acquisition: far above what
 * the benchmark measures at 8 processes (about 1 s at worst, loaded), so
 * that only a waiter left behind for good fails it. */
#define WAIT_BOUND_MS 20000

/* ------------------------------------------------------------- helpers */

static int set_barging(rlock_config *cfg, int64_t on)
{
    return rlock_config_set_lock_barging(cfg, (int)on);
}

/* A client looping lock, a shared-counter check, unlock until a time. */
typedef struct contender {
    pthread_t thread;
    rlock *l;
    int64_t until_ms;
    atomic_int *inside;
    int acquired;
    int overlaps;
    int errors;
    int64_t max_wait_ms;
} contender;

static void *contender_main(void *p)
{
    contender *k = p;

    while (rt_now_ms() < k->until_ms) {
        int64_t t0 = rt_now_ms();
        if (rlock_lock(k->l) != RLOCK_OK) {
            k->errors++;
            return NULL;
        }
        if (rt_now_ms() - t0 > k->max_wait_ms)
            k->max_wait_ms = rt_now_ms() - t0;
        if (atomic_fetch_add(k->inside, 1) != 0)
            k->overlaps++;
        k->acquired++;
        atomic_fetch_sub(k->inside, 1);
        if (rlock_unlock(k->l) != RLOCK_OK)
            k->errors++;
    }
    return NULL;
}

/* Runs CLIENTS clients (barging on or off) on one lock for LOOP_MS, and
 * checks that every one of them got it, one at a time, within the bound. */
static void run_clients_on_one_lock(lt_fixture *f, int barging)
{
    char name[128];
    rlock_client *c[CLIENTS];
    contender k[CLIENTS];
    atomic_int inside;

    LT_TEST_NAME(name);
    atomic_init(&inside, 0);
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = lt_connect(f->redis.url, set_barging, barging);
        k[i] = (contender){.l = lt_get_lock(c[i], name), .inside = &inside};
    }
    int64_t until = rt_now_ms() + LOOP_MS;
    for (int i = 0; i < CLIENTS; i++) {
        k[i].until_ms = until;
        assert_int_equal(
            pthread_create(&k[i].thread, NULL, contender_main, &k[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_join(k[i].thread, NULL), 0);
    int64_t worst = 0;
    for (int i = 0; i < CLIENTS; i++) {
        print_message("client %d: %d acquisitions, longest wait %lld ms\n", i,
                      k[i].acquired, (long long)k[i].max_wait_ms);
        assert_int_equal(k[i].errors, 0);
        assert_int_equal(k[i].overlaps, 0);
        assert_true(k[i].acquired >= 1);
        if (k[i].max_wait_ms > worst)
            worst = k[i].max_wait_ms;
    }
    assert_true(worst < WAIT_BOUND_MS);
    for (int i = 0; i < CLIENTS; i++) {
        rlock_free(k[i].l);
        rlock_client_free(c[i]);
    }
}

/* --------------------------------------------------------------- tests */

static void test_every_client_of_many_acquires(void **state)
{
    run_clients_on_one_lock(*state, 0);
}

static void test_every_client_of_many_acquires_when_barging(void **state)
{
    run_clients_on_one_lock(*state, 1);
}

/* Client a holds the lock while b's thread waits for it; a has seen the
 * lock taken (its own attempt failed), which is when rlock, by default,
 * makes a releaser wait its turn. With barging on, a's unlock followed at
 * once by a lock takes the lock straight back, ahead of b, as Redisson's
 * RLock does: in some of the rounds at least (b's wake-up races a's
 * attempt), where by default a first waits a few ms for b. */
typedef struct taker {
    pthread_t thread;
    rlock *l;
    int64_t acquired_ms;
    int rc;
} taker;

static void *taker_main(void *p)
{
    taker *t = p;
    t->rc = rlock_lock(t->l);
    t->acquired_ms = rt_now_ms();
    if (t->rc == RLOCK_OK)
        t->rc = rlock_unlock(t->l);
    return NULL;
}

static void test_barging_lets_the_releaser_take_it_back(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *a = lt_connect(f->redis.url, set_barging, 1);
    rlock_client *b = lt_connect(f->redis.url, NULL, 0);
    int barged = 0;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    rlock *la = lt_get_lock(a, name), *lb = lt_get_lock(b, name);
    for (int round = 0; round < 10; round++) {
        /* a sees the lock taken, then holds it */
        assert_int_equal(rlock_lock(lb), RLOCK_OK);
        assert_int_equal(rlock_trylock(la, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        assert_int_equal(rlock_unlock(lb), RLOCK_OK);
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        /* b waits, subscribed */
        taker t = {.l = lb};
        assert_int_equal(pthread_create(&t.thread, NULL, taker_main, &t), 0);
        assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 10000), 1);
        rt_sleep_ms(20); /* b's attempt after its subscription is done */
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        int64_t took_back = rt_now_ms();
        rt_sleep_ms(5);
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
        assert_int_equal(pthread_join(t.thread, NULL), 0);
        assert_int_equal(t.rc, RLOCK_OK);
        if (took_back < t.acquired_ms)
            barged++;
    }
    print_message("the releaser took it back first in %d of 10 rounds\n",
                  barged);
    assert_true(barged >= 1);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_client_of_many_acquires),
        cmocka_unit_test(test_every_client_of_many_acquires_when_barging),
        cmocka_unit_test(test_barging_lets_the_releaser_take_it_back),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
