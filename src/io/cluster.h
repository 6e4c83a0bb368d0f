/*
 * cluster.h: the nodes of a Redis Cluster as the I/O thread sees them
 * (shared/CLUSTER-SENTINEL.md 6.2 and 6.3): which master serves
 * each slot, and each node's command connections.
 *
 * Design note. The single-server client has one set of command
 * connections (conn.h); a cluster client has one such set per node, made
 * when the node is first heard of and opened on demand like any conn, so a
 * node nobody sends to costs no socket. Nodes are never forgotten while
 * the client lives (a failover turns a master into a replica and back),
 * so a node pointer handed out stays valid until rlock__cluster_free; only
 * the connections of a node that serves no slot are closed (below).
 *
 * The table is the I/O thread's alone and needs no lock. It starts from
 * the CLUSTER SLOTS that connecting read (on the caller's thread, before
 * the loop runs), and is read again from a node (masters first, then the
 * others) every scan interval, after a MOVED (whose slot is set at once)
 * and when a caller asks (an error that says the cluster changed).
 * Refreshes are coalesced and at least RLOCK__CLUSTER_REFRESH_GAP_MS apart.
 *
 * A node is never freed, but its sockets are: after each table change (so
 * every scan interval too), on a timer of its own rather than inside the
 * callback that changed the table, every node that serves no slot has its
 * idle command connections dropped (rlock__conn_drop_idle: none with a
 * command pending, so no caller is told anything), and the owner hears of
 * it (on_sweep) to close its own links to the node (the subscriber's).
 * A connection still owing a reply is tried again at the next change. A
 * node used again (a MOVED or ASK names it, a refresh asks it) opens links
 * on demand, as at first.
 *
 * Which node serves a request is the caller's decision (rlock__cluster_node_for
 * for a slot); this file only answers it, which keeps the hook narrow: a
 * slot in, a node's connections out.
 */
#ifndef RLOCK_IO_CLUSTER_H
#define RLOCK_IO_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/conn.h"
#include "io/link.h"

struct ev_loop;
struct rlock__slot_table;

#define RLOCK__CLUSTER_REFRESH_GAP_MS 100

typedef struct rlock__cluster rlock__cluster;
typedef struct rlock__cnode rlock__cnode;

typedef struct rlock__cluster_opts {
    /* every node's greeting: credentials, name, TLS, timeouts (addr and
     * host are each node's own); strings borrowed, must outlive the
     * cluster */
    const rlock__link_opts *base;
    int connections;             /* command connections per node, >= 1 */
    int64_t scan_interval_ms;    /* the periodic refresh; > 0 */
    int64_t command_timeout_ms;  /* a refresh's CLUSTER SLOTS */
    rlock__conn_event_cb on_event; /* every node's conns' events; may be
                                      NULL */
    void *event_arg;
    /* after the table changed (a refresh or a MOVED), on the I/O thread;
     * may be NULL */
    void (*on_change)(void *arg);
    void *change_arg;
    /* after a table change, on a timer of the I/O thread (outside every
     * link's callbacks): n serves no slot, and dropped of its idle command
     * connections were just closed; the owner closes its own links to n
     * that nothing uses. Called for every such node at every sweep, with
     * change_arg; may be NULL. */
    void (*on_sweep)(rlock__cnode *n, int dropped, void *arg);
} rlock__cluster_opts;

/* Makes the cluster from table (borrowed; as CLUSTER SLOTS on host said),
 * resolving its nodes' addresses (may block: call on a user thread, before
 * the loop uses it). Returns 0, RLOCK_ECONN (a node's address does not
 * resolve), RLOCK_EINVAL or RLOCK_ENOMEM. */
int rlock__cluster_new(struct ev_loop *loop, const rlock__cluster_opts *o,
                       const struct rlock__slot_table *table,
                       rlock__cluster **out);

/* What a seed's server is, asked on s (a connection being checked, on
 * the caller's thread) with INFO server by deadline_ms: writes "Redis
 * 6.2.5" or "Valkey 9.1.2" into name (namelen bytes) and returns the Redis
 * version it is compatible with as major * 100 + minor (redis_version,
 * which Valkey keeps at 7.2 for clients: 702), or -1 when the server
 * would not say (INFO refused, or no redis_version line). */
int rlock__cluster_seed_version(rlock__link_sync *s,
                                int64_t deadline_ms, char *name,
                                size_t namelen);

/* The master serving slot (-1: any node that serves a slot), or NULL when
 * the table knows none. I/O thread. */
rlock__cnode *rlock__cluster_node_for(rlock__cluster *cl, int slot);

/* The node at host:port, made if new (a MOVED or ASK target). NULL when
 * host is not an IP address or out of memory. I/O thread. */
rlock__cnode *rlock__cluster_node_at(rlock__cluster *cl, const char *host,
                                     int port);

/* The next of n's command connections (round robin). I/O thread. */
rlock__conn *rlock__cluster_conn(rlock__cluster *cl, rlock__cnode *n);

/* The master serving slot, or NULL when the table knows none. Any
 * thread: read under the cluster's own lock (a caller-thread connection's
 * choice, core/direct_cluster.c); the node stays valid until
 * rlock__cluster_free, but may have stopped serving the slot by the time
 * the caller uses it (its MOVED then says where the slot went). */
rlock__cnode *rlock__cluster_owner(rlock__cluster *cl, int slot);

/* Whether the table names n as the master of some slot. I/O thread. */
bool rlock__cluster_serves(const rlock__cluster *cl, const rlock__cnode *n);

/* How to reach and greet n (for a subscriber link, or a caller-thread
 * connection): fixed when n is made, so any thread may read it once it
 * has n; valid until rlock__cluster_free. */
const rlock__link_opts *rlock__cnode_opts(const rlock__cnode *n);

/* "host:port", for log lines. Any thread, as rlock__cnode_opts. */
const char *rlock__cnode_name(const rlock__cnode *n);

/* n's host, as the cluster named it. */
const char *rlock__cnode_host(const rlock__cnode *n);

/* A MOVED said n serves slot now: the table says so at once, and a refresh
 * follows. I/O thread. */
void rlock__cluster_moved(rlock__cluster *cl, int slot, rlock__cnode *n);

/* Asks for a refresh of the table (coalesced). I/O thread. */
void rlock__cluster_refresh(rlock__cluster *cl);

/* Runs fn(arg, 0) after delay_ms on the I/O thread, or fn(arg,
 * RLOCK_ECLOSED) from rlock__cluster_close if it comes first. Returns 0 or
 * RLOCK_ENOMEM (fn is then never called). I/O thread. */
int rlock__cluster_later(rlock__cluster *cl, int64_t delay_ms,
                         void (*fn)(void *arg, int status), void *arg);

/* Copies the host (into host[0..len)) and port of the master serving
 * slot; false when none. Any thread: a copy taken under the cluster's own
 * lock (the rlock tool's "which node serves this lock"). */
bool rlock__cluster_owner_addr(rlock__cluster *cl, int slot, char *host,
                               size_t len, int *port);

/* Closes every connection (pending commands end with RLOCK_ECLOSED) and
 * stops the timers. I/O thread, when the loop stops. */
void rlock__cluster_close(rlock__cluster *cl);

/* Frees the cluster after rlock__cluster_close (or when the loop never
 * ran). NULL: no-op. */
void rlock__cluster_free(rlock__cluster *cl);

#endif /* RLOCK_IO_CLUSTER_H */
