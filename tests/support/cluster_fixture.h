/*
 * cluster_fixture.h: a Redis Cluster of 3 masters and 3 replicas for
 * integration tests, made of the harness's redis-server
 * processes (harness.h) on free loopback ports, never 6379.
 *
 * Start one per test program, not per case (CLUSTER-SENTINEL.md 7): cases
 * share it and ask it who serves what now, since a failover or a slot
 * migration in one case changes the roles for the next. Each node runs in
 * its own temporary directory (its nodes.conf and redis.log), with its
 * cluster bus on a second free port (cluster-port, so that port + 10000
 * need not be free); like every harness server it dies with the test
 * process and is stopped at exit.
 *
 * The fixture reads the cluster through CLUSTER NODES, CLUSTER INFO and
 * INFO replication text, never through rlock's own parsers: the tests
 * compare those parsers with it.
 *
 * Not thread-safe: drive a cluster from one thread.
 */
#ifndef RLOCK_TEST_CLUSTER_FIXTURE_H
#define RLOCK_TEST_CLUSTER_FIXTURE_H

#include "harness.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_CLUSTER_MASTERS 3
#define RT_CLUSTER_NODES   6
#define RT_CLUSTER_ID_LEN  40

typedef struct rt_cluster {
    /* node[i] and node[i + 3] start as master i and its replica; roles
     * change with failovers (ask rt_cluster_owner() and _replica_of()). */
    rt_redis node[RT_CLUSTER_NODES];
    char id[RT_CLUSTER_NODES][RT_CLUSTER_ID_LEN + 1];
    int64_t start_ms; /* how long rt_cluster_start() took */
    /* Fixture bookkeeping; leave alone. */
    char bus_port[RT_CLUSTER_NODES][12];
    const char *args[RT_CLUSTER_NODES][24];
    const char *const *tls_args;
} rt_cluster;

/* Starts six nodes, gives masters 0, 1 and 2 the slots 0-5460, 5461-10922
 * and 10923-16383 (as redis-cli --cluster create does), joins them and
 * makes node i + 3 master i's replica, and returns once the cluster is
 * settled (rt_cluster_settled()). Returns 0, or -1 after printing why
 * (with everything it started stopped). */
int rt_cluster_start(rt_cluster *c);

/* As rt_cluster_start(), with TLS everywhere: each node also listens on
 * node[i].tls_port with tls_args (borrowed: keep them alive while the
 * cluster runs), and the nodes talk TLS to each other on the bus and for
 * replication (--tls-cluster, --tls-replication), so what CLUSTER SLOTS
 * names to a TLS client are TLS ports. The bus asks every node for a
 * client certificate whatever --tls-auth-clients says, so tls_args must
 * give one (rt_tls_server_args() and --tls-client-cert-file/-key-file;
 * a server certificate without clientAuth is refused). The plain ports
 * stay open on loopback for the fixture and the tests' rt_cmd(). */
int rt_cluster_start_tls(rt_cluster *c, const char *const *tls_args);

/* Stops every node; no-op for nodes not running. */
void rt_cluster_stop(rt_cluster *c);

/* Returns 1 when every node says cluster_state:ok, all six agree on the
 * roles and on which master serves which slot, no node is flagged failing
 * or in handshake, every replica's link to its master is up, and every
 * node lists every other as CLUSTER SHARDS "online" and in CLUSTER SLOTS
 * (a replica appears there only once synced); 0 otherwise. */
int rt_cluster_settled(rt_cluster *c);

/* Waits up to timeout_ms for rt_cluster_settled(). Returns 0, or -1 after
 * printing each node's view. */
int rt_cluster_wait_settled(rt_cluster *c, int timeout_ms);

/* Returns the index of the master serving slot as node 0 sees it (ask
 * when settled), or -1. */
int rt_cluster_owner(rt_cluster *c, int slot);
/* The same as node sees it (gossip may not have reached it yet). */
int rt_cluster_owner_seen_by(rt_cluster *c, int node, int slot);

/* Writes into buf (len bytes) a name "<prefix>-<n>" whose slot, as node 0
 * computes it (CLUSTER KEYSLOT), master (an index) serves now. Returns 0,
 * or -1 when none of the first 100000 does. */
int rt_cluster_name_on(rt_cluster *c, int master, const char *prefix,
                       char *buf, size_t len);

/* EXISTS key on node i after ASKING (what an importing node holds), or
 * RT_CMD_ERROR. */
long long rt_cluster_exists_asking(rt_cluster *c, int i, const char *key);

/* Waits up to within_ms for node i to have want sharded subscribers of
 * channel (rt_shardnumsub()). Returns how long that took, or -1. */
int64_t rt_cluster_wait_shard_subscribers(rt_cluster *c, int i,
                                          const char *channel, long long want,
                                          int64_t within_ms);

/* Returns the index of master's replica as node 0 sees it, or -1. */
int rt_cluster_replica_of(rt_cluster *c, int master);

/* Returns the index of the node listening on port, or -1. */
int rt_cluster_find(const rt_cluster *c, int port);

/* Manual failover of master (an index): CLUSTER FAILOVER on its replica,
 * then waits until the cluster is settled with the roles swapped. Returns
 * the index of the new master, or -1. Fail a shard back only after some
 * while: a replica asked again seconds after it won an election (Redis
 * 7.0 seen) counts that election's votes, says it won, and the others
 * turn it down, so no failover happens. */
int rt_cluster_failover(rt_cluster *c, int master);

/* Moves slot from its owner to master to, by hand as redis-cli's reshard
 * does, in three steps a test can hold apart:
 *   _begin: IMPORTING on to, MIGRATING on the owner (the keys stay);
 *   _keys:  MIGRATE each of the slot's keys from the owner to to;
 *   _end:   SETSLOT NODE on to, the old owner and the other master, then
 *           waits until the cluster is settled with to serving slot.
 * rt_cluster_migrate_slot() does all three. Each returns 0, or -1 after
 * printing why. */
int rt_cluster_migrate_begin(rt_cluster *c, int slot, int to);
int rt_cluster_migrate_keys(rt_cluster *c, int slot, int to);
int rt_cluster_migrate_end(rt_cluster *c, int slot, int to);
int rt_cluster_migrate_slot(rt_cluster *c, int slot, int to);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_TEST_CLUSTER_FIXTURE_H */
