/*
 * test_cluster_tls.c: the cluster client over TLS, on its own
 * cluster of 3 masters and 3 replicas whose nodes talk TLS to clients, to
 * each other and to their replicas (rt_cluster_start_tls(), certificates
 * from tls_fixture.h).
 *
 * rediss+cluster:// names TLS seeds; every node the client then reaches
 * must be reached on its TLS port, which only the cluster's own answers
 * (CLUSTER SLOTS, MOVED) can give. So each case checks, besides what the
 * lock does, that every connection of the client's (found by its client
 * name in CLIENT LIST) arrived on a node's TLS port: lock and unlock on
 * every master, a waiter woken by the unlock, and a call that follows a
 * failover through MOVED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "lock_testing.h"
#include "proto/cluster.h"
#include "rlock.h"
#include "tls_fixture.h"

#define HOST        "127.0.0.1"
#define CLIENT_NAME "tls-cluster-test"
/* a waiter's rlock_trylock() */
#define WAIT_MS  15000
#define LEASE_MS 5000

static rt_tls_files files;
static rt_cluster cluster;
/* the nodes' TLS options: the server's, and the client certificate they
 * show each other on the bus and when replicating */
static const char *node_args[20];

/* ---------------------------------------------------------------- helpers */

static int slot_of(const char *key)
{
    return rlock__key_slot(key, strlen(key));
}

/* A client of the cluster by its TLS seeds, trusting the test CA, named
 * CLIENT_NAME; recheck_ms 0 keeps the default. */
static rlock_client *connect_tls(int64_t recheck_ms)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    char uri[128];
    snprintf(uri, sizeof(uri), "rediss+cluster://" HOST ":%d," HOST ":%d",
             cluster.node[0].tls_port, cluster.node[1].tls_port);
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, files.ca_crt), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, CLIENT_NAME), 0);
    if (recheck_ms > 0)
        assert_int_equal(rlock_config_set_recheck_interval(cfg, recheck_ms),
                         0);
    assert_int_equal(rlock_client_connect_with(&c, uri, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

/* Counts node i's connections named CLIENT_NAME, and of them those that
 * did not arrive on its TLS port (CLIENT LIST's laddr, the server's end). */
static void our_connections(int i, int *total, int *plain)
{
    char *list = rt_cmd_str(&cluster.node[i], "CLIENT LIST");
    char want[32];
    snprintf(want, sizeof(want), ":%d ", cluster.node[i].tls_port);
    *total = *plain = 0;
    assert_non_null(list);
    char *save = NULL;
    for (char *line = strtok_r(list, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, " name=" CLIENT_NAME " ") == NULL)
            continue;
        (*total)++;
        const char *laddr = strstr(line, " laddr=");
        const char *end = laddr ? strchr(laddr + 1, ' ') : NULL;
        const char *port = laddr ? strstr(laddr, want) : NULL;
        if (port == NULL || port + strlen(want) - 1 != end)
            (*plain)++;
    }
    free(list);
}

/* Every connection of ours, on every node, is on a TLS port; returns how
 * many there are. */
static int all_connections_are_tls(void)
{
    int sum = 0;
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        int total = 0, plain = 0;
        if (cluster.node[i].pid == 0)
            continue;
        our_connections(i, &total, &plain);
        assert_int_equal(plain, 0);
        sum += total;
    }
    return sum;
}

static long long exists_on(int i, const char *key)
{
    return rt_cmd_int(&cluster.node[i], "EXISTS %s", key);
}

/* ------------------------------------------------------------------ cases */

static void test_every_master_serves_its_locks_over_tls(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock_client *c = connect_tls(0);
    lt_lock_on_every_master(&cluster, c, "tls-routed");
    int n = all_connections_are_tls();
    print_message("%d connections of the client, all on TLS ports\n", n);
    assert_true(n >= RT_CLUSTER_MASTERS);
    rlock_client_free(c);
}

/* A waiter of another client, subscribed over TLS on the slot's master
 * (re-checks 30 s apart, so only the unlock message can wake it soon). */
static void test_a_waiter_is_woken_over_tls(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    const char *name = "tls-waited";
    const char *channel = "redisson_lock__channel:{tls-waited}";
    int owner = rt_cluster_owner(&cluster, slot_of(name));
    rlock_client *holder_c = connect_tls(0);
    rlock_client *waiter_c = connect_tls(30000);
    lt_handover h;
    lt_handover_hold(&h, holder_c, waiter_c, name, WAIT_MS, LEASE_MS);
    assert_true(rt_cluster_wait_shard_subscribers(&cluster, owner, channel,
                                                  1, 5000) >= 0);
    all_connections_are_tls(); /* the subscriber's too */
    lt_handover_unlock(&h, 1500);
    rlock_client_free(waiter_c);
    rlock_client_free(holder_c);
}

/* After CLUSTER FAILOVER the client's table names the old master, now a
 * replica: its MOVED must name the new master's TLS port. */
static void test_a_failover_is_followed_over_tls(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    const char *name = "tls-failover";
    rlock_client *c = connect_tls(0);
    rlock *l = NULL;
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK); /* the table as it was */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    int old = rt_cluster_owner(&cluster, slot_of(name));
    int now = rt_cluster_failover(&cluster, old);
    assert_true(now >= 0 && now != old);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(exists_on(now, name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(exists_on(now, name), 0);
    int total = 0, plain = 0;
    our_connections(now, &total, &plain);
    assert_true(total >= 1);
    assert_int_equal(plain, 0);
    all_connections_are_tls();
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ main */

static int group_setup(void **state)
{
    (void)state;
    if (rt_tls_make(&files) != 0)
        return -1;
    if (!rt_server_has_tls())
        return 0; /* each test skips */
    const char *const *server = rt_tls_server_args(&files, 0);
    int n = 0;
    while (server[n] != NULL && n < 15) {
        node_args[n] = server[n];
        n++;
    }
    node_args[n++] = "--tls-client-cert-file";
    node_args[n++] = files.client_crt;
    node_args[n++] = "--tls-client-key-file";
    node_args[n++] = files.client_key;
    node_args[n] = NULL;
    if (rt_cluster_start_tls(&cluster, node_args) != 0)
        return -1;
    print_message("TLS cluster of 6 nodes up in %lld ms\n",
                  (long long)cluster.start_ms);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_cluster_stop(&cluster);
    rt_tls_remove(&files);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_master_serves_its_locks_over_tls),
        cmocka_unit_test(test_a_waiter_is_woken_over_tls),
        cmocka_unit_test(test_a_failover_is_followed_over_tls),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
