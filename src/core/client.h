/*
 * core/client.h: the client as the core sees it (layer core). The
 * rlock_client object is made, connected and freed by src/api/client.c, and
 * its settings (struct rlock_config) by src/api/config.c; the core reads
 * both and owns most of what the client holds (the entry table, the
 * subscriber, the watchdog, the notifier, the direct connections), so the
 * definitions live here, below the api, where every file of the core can
 * read them. The parts owned above the core (the async calls, the user
 * loop's completions, the open handles) are opaque to it.
 *
 * Threads. A client has one I/O thread (src/io/loop.c) that alone touches
 * its links (src/io), the channel table and the watchdog timer. User threads
 * talk to it by submitting tasks (rlock__loop_submit) and, for blocking
 * calls, waiting on the request's condition variable (core/request.c).
 *
 * Locks, outermost first (never take them in another order):
 *   client->entries_mu  the name -> entry table and every entry's refs
 *   entry->mu           an entry's holders, waiter count, permits, flags
 *   req->mu             one request's completion
 *   loop->mu            the submit queue
 *   client->threads_mu  registered owner threads (thread_exit.c)
 *   rec->mu             one registration's client pointer (thread_exit.c)
 *   notifier->mu        the lost-lock event queue (notify.c)
 * No lock is held across a Redis round trip.
 */
#ifndef RLOCK_CORE_CLIENT_H
#define RLOCK_CORE_CLIENT_H

#include "core/stats.h"
#include "io/conn.h"
#include "io/loop.h"
#include "proto/proto.h"

#include "rlock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The settings (rlock_config_* in api/config.c make and copy them). */
struct rlock_config {
    int64_t watchdog_timeout_ms;
    int64_t command_timeout_ms;
    int64_t connect_timeout_ms;
    int retry_attempts;
    int64_t retry_interval_ms;
    int64_t recheck_interval_ms;
    int connections;
    int64_t fair_wait_timeout_ms;

    /* server settings; every string is owned (NULL: not set) */
    char *server;         /* URI used when connect gets none */
    char *user;           /* with credentials_set: NULL = no user */
    char *password;       /* with credentials_set: NULL = no AUTH */
    bool credentials_set; /* user/password replace the URI's */
    int database;
    bool database_set; /* database replaces the URI's /db */
    char *client_name; /* CLIENT SETNAME on every connection */

    /* Sentinel mode (a redis+sentinel:// server) */
    char *sentinel_user;     /* with sentinel_credentials_set */
    char *sentinel_password; /* with sentinel_credentials_set */
    bool sentinel_credentials_set; /* else the data nodes' are used */
    int64_t sentinel_scan_interval_ms; /* the poll of the master's address */

    /* cluster mode (a redis+cluster:// server) */
    int64_t cluster_scan_interval_ms; /* the slot table's refresh */
    int cluster_sharded; /* RLOCK_SHARDED_*: how waiters are woken */

    /* cluster and Sentinel modes: WAIT after lock scripts (core/sync.c) */
    bool sync_replicas;      /* Redisson's checkLockSyncedSlaves; off */
    int64_t sync_timeout_ms; /* Redisson's slavesSyncTimeout */

    /* TLS, for a rediss:// server; every string is owned (NULL: not set) */
    char *tls_ca_file;
    char *tls_ca_dir;
    char *tls_cert_file; /* set together with tls_key_file, or neither */
    char *tls_key_file;
    char *tls_server_name;
    int tls_verify; /* RLOCK_TLS_VERIFY_* */

    rlock_log_cb log_cb; /* NULL: no logging */
    void *log_arg;       /* borrowed */
    int log_level;       /* RLOCK_LOG_*: the least severe line passed on */
    bool stats;          /* count (rlock_client_stats); default on */
    bool lock_barging;   /* Redisson's barging waiters; default off */
    bool lock_queue;     /* RLock waiters queue in rlock's keys (when
                            not barging); default on */
};

struct rlock__link_opts;
struct rlock__link_sync;
struct rlock__tls_ctx;
struct rlock__pubsub;
struct rlock__watchdog;
struct rlock__direct;
struct rlock__direct_cluster;
struct rlock__notifier;
struct rlock__thread_rec;
struct rlock__aop;       /* src/api/lock_async.c's */
struct rlock__user_loop; /* src/io/user_loop.h */
struct done_item;        /* src/api/completions.c's */
struct rlock;            /* src/api/api.h's handle */

struct rlock_client {
    char id[RLOCK__UUID_LEN + 1];
    pid_t pid; /* the process that created it (fork check) */
    rlock_config cfg;
    rlock__uri uri;
    int64_t latch_ms;

    /* how every link reaches and greets the server (src/io/link.h): the
     * address resolved and the TLS context built at creation, on the
     * caller's thread; strings borrowed from uri and cfg. Owned; a pointer
     * so that this header need not bring in the socket headers. */
    struct rlock__link_opts *link_opts;
    struct rlock__tls_ctx *tls; /* rediss:// only, else NULL */
    /* redis+sentinel:// only, else NULL: where the master is
     * (io/master.h) and what moves with it (core/follow.c) */
    struct rlock__master *master;
    struct rlock__follow *follow;

    rlock__loop *loop;
    /* redis+cluster:// only (io/cluster.h), else NULL: the nodes and their
     * command connections, used instead of conns */
    struct rlock__cluster *cluster;
    /* how waiters subscribe and unlocks publish, set when connecting:
     * plain SUBSCRIBE and PUBLISH on one server and by default; in a
     * cluster with sharded pub/sub SSUBSCRIBE and SPUBLISH, and in the
     * "both" mode both subscriptions (core/pubsub.c) */
    bool sub_plain;
    bool sub_sharded;
    /* NULL: PUBLISH; "SPUBLISH", or both (proto's rlock__lock_desc) */
    const char *publish;
    /* cluster mode: why the seed's pub/sub was chosen, logged at level
     * pubsub_why_level once the I/O thread runs (api/cluster_connect.c) */
    char pubsub_why[320];
    int pubsub_why_level;
    rlock__conn *conns; /* cfg.connections command connections */
    unsigned next_conn; /* I/O thread: round robin */
    struct rlock__pubsub *pubsub;
    struct rlock__watchdog *watchdog;
    struct rlock__direct *direct; /* connections used on the caller's thread
                                     (NULL in cluster mode) */
    /* cluster mode's: those connections, per node (core/direct_cluster.c) */
    struct rlock__direct_cluster *dcluster;

    struct rlock__notifier *notifier;
    rlock__stats *stats; /* NULL: statistics off (core/stats.h) */
    /* the api's: async completions for the user loop, pending async calls
     * (I/O thread) */
    pthread_mutex_t done_mu;
    struct rlock__user_loop *user_loop;
    struct done_item *done_head, *done_tail;
    struct rlock__aop *async_ops;
    bool threads_made; /* owner threads' exits (thread_exit.c) */
    pthread_mutex_t threads_mu;
    pthread_cond_t threads_cv; /* an exit handler finished with us */
    struct rlock__thread_rec *threads;

    pthread_mutex_t entries_mu;
    rlock__map entries; /* name -> rlock__entry */
    struct rlock *handles; /* open handles (entries_mu; the api's) */
    atomic_uint_fast64_t next_epoch;
    atomic_bool closing;
    atomic_bool unannounced_warned; /* a refused unlock PUBLISH was logged */
    pthread_condattr_t condattr; /* CLOCK_MONOTONIC */
};

int rlock__client_check(const rlock_client *c);
int rlock__client_sync_open(rlock_client *c, int64_t connect_ms,
                            struct rlock__link_sync **out, char *err,
                            size_t errlen);

#endif /* RLOCK_CORE_CLIENT_H */
