/*
 * test_cluster_semaphore.c: both semaphores on a Redis Cluster (three
 * masters, three replicas: cluster_fixture.h). Every key and the channel
 * of a semaphore carry its name's hash tag, so its calls run on the
 * master of the name's slot; a release there wakes a waiter of another
 * client through the channel (SPUBLISH where the cluster has sharded
 * pub/sub, Redis 7+: the waiter then has a sharded subscription on that
 * master). Waiters here re-check every 60 s, so a wake-up within the
 * test is a message's.
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

#include "cluster_fixture.h"
#include "harness.h"
#include "lock_testing.h"
#include "proto/cluster.h"
#include "rlock.h"

#define HOST          "127.0.0.1"
#define NO_RECHECK_MS 60000
#define WAKE_BOUND_MS 3000

static rt_cluster cluster;
static rlock_client *client, *waiting_client;

/* ---------------------------------------------------------------- helpers */

static rlock_client *connect_cluster(int64_t recheck_ms)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    char uri[128];
    snprintf(uri, sizeof(uri), "redis+cluster://" HOST ":%d," HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    if (rlock_config_new(&cfg) != RLOCK_OK)
        return NULL;
    if (recheck_ms > 0)
        rlock_config_set_recheck_interval(cfg, recheck_ms);
    int rc = rlock_client_connect_with(&c, uri, cfg);
    rlock_config_free(cfg);
    return rc == RLOCK_OK ? c : NULL;
}

static int owner_of(const char *key)
{
    return rt_cluster_owner(&cluster, rlock__key_slot(key, strlen(key)));
}

static long long get_on(int node, const char *key)
{
    char *v = rt_cmd_str(&cluster.node[node], "GET %s", key);
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

static void test_every_master_serves_the_semaphores_of_its_slots(void **state)
{
    (void)state;
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char name[64];
        assert_int_equal(
            rt_cluster_name_on(&cluster, m, "sem", name, sizeof(name)), 0);
        rlock_semaphore *s = NULL;
        assert_int_equal(rlock_semaphore_get(client, name, &s), RLOCK_OK);
        assert_int_equal(rlock_semaphore_try_set_permits(s, 2, 0), 1);
        assert_int_equal(rlock_semaphore_acquire(s, 2, 0), RLOCK_OK);
        assert_int_equal(get_on(m, name), 0);
        assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
        assert_int_equal(get_on(m, name), 1);
        rlock_semaphore_free(s);
    }
}

static void test_a_release_wakes_another_clients_waiter(void **state)
{
    (void)state;
    const char *name = "sem-wake";
    int m = owner_of(name);
    char channel[64];
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    rlock_semaphore *s = NULL;
    static waiter w;
    memset(&w, 0, sizeof(w));
    assert_int_equal(rlock_semaphore_get(client, name, &s), RLOCK_OK);
    assert_int_equal(rlock_semaphore_get(waiting_client, name, &w.sem),
                     RLOCK_OK);

    assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
    if (rt_server_has_7_0())
        assert_true(rt_cluster_wait_shard_subscribers(&cluster, m, channel,
                                                      1, 5000) >= 0);
    else
        assert_int_equal(rt_wait_numsub(&cluster.node[m], channel, 1, 5000),
                         1);
    rt_sleep_ms(50);
    assert_false(atomic_load(&w.done));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
    pthread_join(w.thread, NULL);
    assert_int_equal(atomic_load(&w.rc), RLOCK_OK);
    int64_t latency = atomic_load(&w.done_at_ms) - t0;
    print_message("release to wake-up on the cluster: %lld ms\n",
                  (long long)latency);
    assert_true(latency < WAKE_BOUND_MS);
    rlock_semaphore_free(w.sem);
    rlock_semaphore_free(s);
}

static void test_a_permit_is_released_by_id_from_another_client(void **state)
{
    (void)state;
    const char *name = "psem-cluster";
    int m = owner_of(name);
    rlock_permit_semaphore *a = NULL, *b = NULL;
    char id[RLOCK_PERMIT_ID_SIZE];
    assert_int_equal(rlock_permit_semaphore_get(client, name, &a), RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_get(waiting_client, name, &b),
                     RLOCK_OK);
    assert_int_equal(rlock_permit_semaphore_try_set_permits(a, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(a, 0, 30000, id), 0);
    assert_int_equal(
        rt_cmd_int(&cluster.node[m], "ZCARD {%s}:timeout", name), 1);
    assert_int_equal(rlock_permit_semaphore_release(b, id), 1);
    assert_int_equal(
        rt_cmd_int(&cluster.node[m], "ZCARD {%s}:timeout", name), 0);
    assert_int_equal(get_on(m, name), 1);
    rlock_permit_semaphore_free(a);
    rlock_permit_semaphore_free(b);
}

/* ------------------------------------------------------------------- main */

static int group_setup(void **state)
{
    (void)state;
    if (rt_cluster_start(&cluster) != 0)
        return -1;
    client = connect_cluster(0);
    waiting_client = connect_cluster(NO_RECHECK_MS);
    return client != NULL && waiting_client != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rlock_client_free(client);
    rlock_client_free(waiting_client);
    rt_cluster_stop(&cluster);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_master_serves_the_semaphores_of_its_slots),
        cmocka_unit_test(test_a_release_wakes_another_clients_waiter),
        cmocka_unit_test(test_a_permit_is_released_by_id_from_another_client),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
