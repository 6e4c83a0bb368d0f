/*
 * test_sentinel_semaphore.c: both semaphores behind Redis Sentinel (one
 * master, one replica, three sentinels: sentinel_fixture.h). The calls go
 * to the master the sentinels name, and a release there wakes another
 * client's waiter through the channel (plain PUBLISH, as Redisson in
 * Sentinel mode). The waiting client re-checks every 60 s, so its wake-up
 * within the test is a message's.
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
#include "sentinel_fixture.h"

#define NO_RECHECK_MS 60000
#define WAKE_BOUND_MS 3000

static rt_sentinel_group group;
static rlock_client *client, *waiting_client;

/* ---------------------------------------------------------------- helpers */

static rlock_client *connect_group(int64_t recheck_ms)
{
    char url[300];
    rlock_client *c = NULL;
    rt_sentinel_url(&group, NULL, url, sizeof(url));
    rlock_config *cfg = NULL;
    if (rlock_config_new(&cfg) != RLOCK_OK)
        return NULL;
    if (recheck_ms > 0)
        rlock_config_set_recheck_interval(cfg, recheck_ms);
    int rc = rlock_client_connect_with(&c, url, cfg);
    rlock_config_free(cfg);
    return rc == RLOCK_OK ? c : NULL;
}

static long long get_on(rt_redis *node, const char *key)
{
    char *v = rt_cmd_str(node, "GET %s", key);
    long long n = v != NULL ? atoll(v) : -1;
    free(v);
    return n;
}

typedef struct waiter {
    pthread_t thread;
    rlock_semaphore *sem;
    atomic_int done;
    atomic_int rc;
    _Atomic int64_t done_at_ms;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    int rc = rlock_semaphore_acquire(w->sem, 1, RLOCK_WAIT_FOREVER);
    atomic_store(&w->done_at_ms, rt_now_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

/* ------------------------------------------------------------------ tests */

static void test_a_semaphore_lives_on_the_master(void **state)
{
    (void)state;
    const char *name = "sentinel-sem";
    rt_redis *master = rt_sentinel_master_node(&group);
    assert_non_null(master);
    rlock_semaphore *s = NULL;
    assert_int_equal(rlock_semaphore_get(client, name, &s), RLOCK_OK);
    assert_int_equal(rlock_semaphore_try_set_permits(s, 2, 0), 1);
    assert_int_equal(rlock_semaphore_acquire(s, 1, 0), RLOCK_OK);
    assert_int_equal(get_on(master, name), 1);
    rlock_semaphore_free(s);
}

static void test_a_release_wakes_another_clients_waiter(void **state)
{
    (void)state;
    const char *name = "sentinel-sem-wake";
    rt_redis *master = rt_sentinel_master_node(&group);
    assert_non_null(master);
    rlock_semaphore *s = NULL;
    static waiter w;
    memset(&w, 0, sizeof(w));
    assert_int_equal(rlock_semaphore_get(client, name, &s), RLOCK_OK);
    assert_int_equal(rlock_semaphore_get(waiting_client, name, &w.sem),
                     RLOCK_OK);

    assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
    assert_int_equal(rt_wait_numsub(master, "redisson_sc:{sentinel-sem-wake}",
                                    1, 5000),
                     1);
    rt_sleep_ms(50);
    assert_false(atomic_load(&w.done));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    int64_t latency = atomic_load(&w.done_at_ms) - t0;
    print_message("release to wake-up behind Sentinel: %lld ms\n",
                  (long long)latency);
    assert_true(latency < WAKE_BOUND_MS);
    rlock_semaphore_free(w.sem);
    rlock_semaphore_free(s);
}

static void test_a_permit_is_released_by_id_from_another_client(void **state)
{
    (void)state;
    const char *name = "sentinel-psem";
    rt_redis *master = rt_sentinel_master_node(&group);
    assert_non_null(master);
    rlock_permit_semaphore *a = NULL, *b = NULL;
    char id[RLOCK_PERMIT_ID_SIZE];
    assert_int_equal(rlock_permit_semaphore_get(client, name, &a), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_get(waiting_client, name, &b),
                     RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_try_set_permits(a, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(a, 0, 30000, id), 0);
    assert_int_equal(rt_cmd_int(master, "ZCARD {%s}:timeout", name), 1);
    assert_int_equal(rlock_permit_semaphore_release(b, id), 1);
    assert_int_equal(rt_cmd_int(master, "ZCARD {%s}:timeout", name), 0);
    assert_int_equal(get_on(master, name), 1);
    rlock_permit_semaphore_free(a);
    rlock_permit_semaphore_free(b);
}

/* ------------------------------------------------------------------- main */

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    if (rt_sentinel_group_start(&group, NULL) != 0)
        return -1;
    client = connect_group(0);
    waiting_client = connect_group(NO_RECHECK_MS);
    return client != NULL && waiting_client != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rlock_client_free(client);
    rlock_client_free(waiting_client);
    rt_sentinel_group_stop(&group);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_semaphore_lives_on_the_master),
        cmocka_unit_test(test_a_release_wakes_another_clients_waiter),
        cmocka_unit_test(test_a_permit_is_released_by_id_from_another_client),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
