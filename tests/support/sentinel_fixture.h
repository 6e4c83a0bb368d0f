/*
 * sentinel_fixture.h: a Redis Sentinel group for tests: one
 * master, one replica and three sentinels watching them under one name,
 * each a real redis-server on a free loopback port with its own temporary
 * directory (and a sentinel its own generated config file), all stopped
 * at exit by the harness.
 *
 * Timings (shared/CLUSTER-SENTINEL.md 7): down-after 2000 ms, so a killed
 * master is replaced within about 4 s; failover-timeout 4000 ms, the time
 * a demoted master stays a writable master before the sentinels turn it
 * into a replica, and the least time between two forced failovers. Start
 * one group per test program, not per test: they take about 3 s to know
 * each other.
 */
#ifndef RLOCK_TEST_SENTINEL_FIXTURE_H
#define RLOCK_TEST_SENTINEL_FIXTURE_H

#include "harness.h"
#include "tls_fixture.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_SENTINELS 3
#define RT_SENTINEL_MASTER "mymaster"

typedef struct rt_sentinel_opts {
    /* extra redis-server arguments of both data nodes, e.g.
     * {"--requirepass", "pw", "--masterauth", "pw", NULL}; borrowed */
    const char *const *data_args;
    /* a password the sentinels require (NULL: none) */
    const char *sentinel_password;
    /* the data nodes' password, for the sentinels (NULL: none) */
    const char *data_password;
    /* TLS everywhere (NULL: plain): the data nodes replicate over TLS and
     * the sentinels talk to them over TLS, so every address a sentinel
     * gives is a TLS port; the sentinels take TLS on tls_port too */
    rt_tls_files *tls;
    /* 1: the sentinels name the data nodes "localhost", not 127.0.0.1
     * (resolve-hostnames and announce-hostnames; the replica announces
     * itself by name), so clients get a host name to resolve */
    int hostnames;
} rt_sentinel_opts;

typedef struct rt_sentinel_group {
    rt_redis node[2]; /* the data nodes: node[0] starts as the master */
    rt_redis sentinel[RT_SENTINELS];
    rt_sentinel_opts opts;
    /* harness bookkeeping */
    const char *node_args[2][40];
    const char *sentinel_args[16];
    char conf[1024];
    char replicaof[16];
} rt_sentinel_group;

/* Starts the group and waits until the replica is in sync and every
 * sentinel knows it and the two other sentinels. o may be NULL. Returns 0,
 * or -1 after printing why (then what started is stopped). */
int rt_sentinel_group_start(rt_sentinel_group *g, const rt_sentinel_opts *o);

/* Stops every server of the group. */
void rt_sentinel_group_stop(rt_sentinel_group *g);

/* The port clients use on a node or sentinel: its TLS port with TLS. */
int rt_sentinel_port(const rt_redis *r);

/* Writes "redis+sentinel://127.0.0.1:P1,...:P3/mymaster" (rediss+ with
 * TLS), with first (a "host:port", may be NULL) listed before the group's
 * sentinels, into buf. */
void rt_sentinel_url(const rt_sentinel_group *g, const char *first, char *buf,
                     size_t len);

/* A loopback port nothing listens on (bound, then closed): a sentinel
 * that is down. */
int rt_sentinel_dead_port(void);

/* The data node the first live sentinel names as master, or NULL. */
rt_redis *rt_sentinel_master_node(rt_sentinel_group *g);

/* The data node that is not the master (NULL as above). */
rt_redis *rt_sentinel_replica_node(rt_sentinel_group *g);

/* SENTINEL FAILOVER on the first live sentinel. Returns 0 once it is
 * accepted (retrying while the sentinels refuse one too soon after the
 * last, up to 15 s), or -1. */
int rt_sentinel_failover(rt_sentinel_group *g);

/* Waits until every live sentinel names node as master (timeout_ms).
 * Returns 0 or -1. */
int rt_sentinel_wait_master(rt_sentinel_group *g, const rt_redis *node,
                            int timeout_ms);

/* After a failover: waits until the node that is not the master replicates
 * from it in sync and the sentinels see it so (a demoted master is turned
 * into a replica at once rather than at failover-timeout), so that the
 * next test starts from a healthy group. Returns 0 or -1. */
int rt_sentinel_settle(rt_sentinel_group *g);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_TEST_SENTINEL_FIXTURE_H */
