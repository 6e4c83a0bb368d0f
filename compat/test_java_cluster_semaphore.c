/*
 * test_java_cluster_semaphore.c: rlock's semaphore and the newest Java
 * Redisson's RSemaphore on one Redis Cluster (3 masters, 3 replicas:
 * cluster_fixture.h), both with sharded pub/sub where the servers have it
 * (Redisson's default shardedSubscriptionMode AUTO; rlock's auto mode):
 * each side's release is an SPUBLISH on the slot's master, and wakes the
 * other side's waiter. rlock's client re-checks every 60 s, so its wake-up
 * is a message's; the latencies are printed.
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
#include "compat_testing.h"
#include "harness.h"
#include "java_peer.h"
#include "java_testing.h"
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define VERSION RLOCK_JAVA_VERSION
#define HOST    "127.0.0.1"

static rt_cluster cluster;
static jp_peer *java;
static rlock_client *client;

/* Waits until the master of name's slot has one subscriber of its
 * channel: a sharded one where the servers have sharded pub/sub (both
 * sides then use SSUBSCRIBE and SPUBLISH), else a plain one. */
static void await_waiter_subscribed(const char *name)
{
    char channel[128];
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    long long slot = rt_cmd_int(&cluster.node[0], "CLUSTER KEYSLOT %s", name);
    int m = rt_cluster_owner(&cluster, (int)slot);
    assert_true(m >= 0);
    if (rt_server_has_7_0())
        assert_true(rt_cluster_wait_shard_subscribers(&cluster, m, channel, 1,
                                                      JT_PEER_MS) >= 0);
    else
        assert_int_equal(
            rt_wait_numsub(&cluster.node[m], channel, 1, JT_PEER_MS), 1);
}

typedef struct waiter {
    pthread_t thread;
    rlock_semaphore *sem;
    atomic_int done;
    atomic_int rc;
    _Atomic int64_t done_wall_ms;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    int rc = rlock_semaphore_acquire(w->sem, 1, RLOCK_WAIT_FOREVER);
    atomic_store(&w->done_wall_ms, ct_wall_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

#define ROUNDS 3

/* ROUNDS rounds on one name: the first also pays for connecting to the
 * slot's master. */
static void test_c_waiter_is_woken_by_java_release(void **state)
{
    (void)state;
    const char *name = "jcsem-c-woken";
    long long lat[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        static waiter w;
        memset(&w, 0, sizeof(w));
        assert_int_equal(rlock_semaphore_get(client, name, &w.sem), RLOCK_OK);
        assert_int_equal(pthread_create(&w.thread, NULL, waiter_main, &w), 0);
        await_waiter_subscribed(name);
        assert_false(atomic_load(&w.done));
        json_t *ev = jt_java_do(java, "r", "release", "sem", name, "1",
                                JT_PEER_MS);
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
        rlock_semaphore_free(w.sem);
        rt_sleep_ms(100); /* its subscription gone: the next one is new */
    }
    jt_report_latencies(VERSION, "cluster: Java release -> C semaphore waiter",
                        lat, ROUNDS);
}

static void test_java_waiter_is_woken_by_c_release(void **state)
{
    (void)state;
    const char *name = "jcsem-java-woken";
    long long lat[ROUNDS];
    rlock_semaphore *s = NULL;
    assert_int_equal(rlock_semaphore_get(client, name, &s), RLOCK_OK);
    for (int i = 0; i < ROUNDS; i++) {
        jp_send(java, "w acquire sem %s 1 -1", name);
        await_waiter_subscribed(name);
        assert_true(jp_quiet(java, "w", 100));
        int64_t t0 = ct_wall_ms();
        assert_int_equal(rlock_semaphore_release(s, 1), RLOCK_OK);
        json_t *ev = jp_expect(java, "w", "acquire", CT_WAKE_BOUND_MS);
        assert_true(np_bool(ev, "acquired"));
        lat[i] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[i] < CT_WAKE_BOUND_MS);
        rt_sleep_ms(100); /* Java's unsubscribe */
    }
    jt_report_latencies(VERSION, "cluster: C release -> Java semaphore waiter",
                        lat, ROUNDS);
    rlock_semaphore_free(s);
}

static int group_setup(void **state)
{
    char seeds[256], uri[128];
    (void)state;
    jp_require_java(VERSION);
    if (rt_cluster_start(&cluster) != 0)
        return -1;
    snprintf(seeds, sizeof(seeds), "redis://" HOST ":%d,redis://" HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    java = jp_start_mode(VERSION, "cluster", seeds, NULL);
    if (java == NULL || jp_ready(java, VERSION, JT_JVM_START_MS) != 0)
        return -1;
    rlock_config *cfg = NULL;
    if (rlock_config_new(&cfg) != RLOCK_OK)
        return -1;
    rlock_config_set_recheck_interval(cfg, CT_RECHECK_MS);
    snprintf(uri, sizeof(uri), "redis+cluster://" HOST ":%d," HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    int rc = rlock_client_connect_with(&client, uri, cfg);
    rlock_config_free(cfg);
    return rc == RLOCK_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rlock_client_free(client);
    jp_free(java);
    rt_cluster_stop(&cluster);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c_waiter_is_woken_by_java_release),
        cmocka_unit_test(test_java_waiter_is_woken_by_c_release),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
