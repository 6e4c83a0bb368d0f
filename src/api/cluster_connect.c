/*
 * api/cluster_connect.c: connecting to a Redis Cluster: the
 * seeds of a redis+cluster:// URI are tried in order, and the first that
 * answers CLUSTER SLOTS with a table serving all 16384 slots becomes the
 * node the client checks (client.c's check_server: credentials, scripts,
 * ACL) and keeps its address for, as a single server's.
 *
 * Design note. A table with unserved slots is refused, as Redisson's
 * checkSlotsCoverage (on by default) refuses to start: a lock whose slot
 * nobody serves could neither be taken nor released, and that is better
 * said at connect time. A seed that is not a cluster node (CLUSTER SLOTS
 * refused: "cluster support disabled") is RLOCK_ESERVER unless another
 * seed answers; a seed that cannot be reached, or refuses the credentials,
 * gives its own code likewise. The last failure is the one returned. A seed
 * that describes the cluster but then cannot be checked (client.c's
 * check_seeds: it stalls or goes away) gives way to the next that does.
 *
 * The table read here is handed to io/cluster.c once the I/O thread's loop
 * exists (rlock__cluster_attach); from then on the I/O thread owns it.
 */
#include "api/api.h"
#include "io/cluster.h"
#include "io/link.h"
#include "proto/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How waiters and unlocks use pub/sub (rlock_config_set_cluster_sharded).
 * Every mode but OFF asks the seed s PUBSUB SHARDNUMSUB 0, as Redisson
 * 3.50+ probes (3.28-3.49 sent it without the 0, which hung one managed
 * Redis): any reply but an error means the server has sharded pub/sub.
 * An error reply is not read for its text: INFO server's version says
 * whether the server lacks it (before Redis 7.0) or only refused the user
 * the probe (an ACL). AUTO then falls back to plain pub/sub, as Redisson
 * does; ON and BOTH (whose unlocks SPUBLISH, which a server without it
 * refuses, failing every unlock) are refused unless the version says the
 * server has it. Returns 0, RLOCK_ENOTSUP, or a connection error. */
static int choose_pubsub(rlock_client *c, rlock__link_sync *s,
                         const char *host)
{
    int mode = c->cfg.cluster_sharded;
    bool sharded = false;
    c->pubsub_why[0] = '\0';
    if (mode != RLOCK_SHARDED_OFF) {
        const char *argv[3] = {"PUBSUB", "SHARDNUMSUB", "0"};
        struct redisReply *reply = NULL;
        int64_t deadline = rlock__now_ms() + c->cfg.command_timeout_ms;
        int rc = rlock__link_sync_call(s, 3, argv, NULL, deadline, &reply,
                                       NULL, NULL);
        if (rc != 0)
            return rc;
        char why[128];
        snprintf(why, sizeof(why), "%s", rlock__reply_error_text(reply));
        sharded = rlock__reply_error_code(reply) == 0;
        rlock__link_reply_free(reply);
        if (!sharded) {
            char name[80];
            int version =
                rlock__cluster_seed_version(s, deadline, name, sizeof(name));
            bool lacks = version < 700; /* unknown counts as lacking */
            if (mode != RLOCK_SHARDED_AUTO && lacks)
                return RLOCK_ENOTSUP;
            sharded = mode != RLOCK_SHARDED_AUTO;
            const char *then = sharded ? "sharded pub/sub as configured"
                                       : "waiters SUBSCRIBE, unlocks PUBLISH";
            c->pubsub_why_level = lacks ? RLOCK_LOG_DEBUG : RLOCK_LOG_INFO;
            if (lacks)
                snprintf(c->pubsub_why, sizeof(c->pubsub_why),
                         "cluster: seed %s runs %s, not sharded pub/sub "
                         "(Redis 7.0+): %s",
                         host, name, then);
            else
                snprintf(c->pubsub_why, sizeof(c->pubsub_why),
                         "cluster: seed %s runs %s but refused PUBSUB "
                         "SHARDNUMSUB (%.60s): %s",
                         host, name, why, then);
        }
    }
    c->sub_sharded = sharded || mode == RLOCK_SHARDED_BOTH;
    c->sub_plain = !c->sub_sharded || mode == RLOCK_SHARDED_BOTH;
    /* both: the scripts publish once each way, so that a waiter of
     * either kind hears every unlock (CLUSTER-SENTINEL.md 6.4) */
    if (mode == RLOCK_SHARDED_BOTH)
        c->publish = "SPUBLISH PUBLISH";
    else
        c->publish = sharded ? "SPUBLISH" : NULL;
    return RLOCK_OK;
}

/* Asks one seed (o's address) for the table. */
static int ask_seed(rlock_client *c, const rlock__link_opts *o,
                    rlock__slot_table **out)
{
    rlock__link_sync *s = NULL;
    int rc = rlock__link_sync_open(o, &s, NULL, 0);
    if (rc != 0)
        return rc;
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    struct redisReply *reply = NULL;
    rc = rlock__link_sync_call(s, 2, argv, NULL,
                               rlock__now_ms() + c->cfg.command_timeout_ms,
                               &reply, NULL, NULL);
    if (rc == 0 && rlock__reply_error_code(reply) != 0) {
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "seed %s refused CLUSTER SLOTS (%s): not a "
                         "cluster node?",
                         o->host, rlock__reply_error_text(reply));
        rc = RLOCK_ESERVER;
    }
    if (rc == 0)
        rc = rlock__slot_table_from_slots(reply, o->host, out);
    if (rc == 0)
        rc = choose_pubsub(c, s, o->host);
    if (rc == 0 && !rlock__slot_table_covers_all(*out)) {
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "seed %s says some slots have no master: the "
                         "cluster is not ready",
                         o->host);
        rlock__slot_table_free(*out);
        *out = NULL;
        rc = RLOCK_ESERVER;
    }
    rlock__link_reply_free(reply);
    rlock__link_sync_free(s);
    if (rc != 0) {
        rlock__slot_table_free(*out);
        *out = NULL;
    }
    return rc;
}

int rlock__cluster_find_seed(rlock_client *c, rlock__link_opts *o,
                             int first, int *used, rlock__slot_table **out)
{
    int rc = RLOCK_ECONN;
    *out = NULL;
    for (int i = first; i < c->uri.nseeds; i++) {
        const rlock__uri_node *seed = &c->uri.seeds[i];
        rc = rlock__link_resolve(seed->host, seed->port, NULL, &o->addr);
        o->host = seed->host;
        if (rc == 0)
            rc = ask_seed(c, o, out);
        if (rc == 0) {
            *used = i;
            return RLOCK_OK;
        }
    }
    return rc;
}

static void on_topology(void *arg)
{
    rlock_client *c = arg;
    rlock__direct_cluster_changed(c->dcluster);
    rlock__pubsub_topology_changed(c->pubsub);
}

/* After a table change (a timer of the I/O thread): n serves no slot, and
 * dropped of its idle command connections were closed; its subscriber
 * link follows when no channel is on it. Its caller-thread connections
 * were retired at the change (core/direct_cluster.c). */
static void on_sweep(rlock__cnode *n, int dropped, void *arg)
{
    rlock_client *c = arg;
    int closed = dropped + rlock__pubsub_node_unserved(c->pubsub, n);
    if (closed > 0)
        rlock__log(c, RLOCK_LOG_INFO,
                   "cluster: %s serves no slot: %d idle connection(s) to it "
                   "closed",
                   rlock__cnode_name(n), closed);
}

int rlock__cluster_attach(rlock_client *c, const rlock__slot_table *t)
{
    rlock__cluster_opts o = {
        .base = c->link_opts,
        .connections = c->cfg.connections,
        .scan_interval_ms = c->cfg.cluster_scan_interval_ms,
        .command_timeout_ms = c->cfg.command_timeout_ms,
        .on_event = rlock__req_conn_event,
        .event_arg = c,
        .on_change = on_topology,
        .change_arg = c,
        .on_sweep = on_sweep,
    };
    if (c->pubsub_why[0] != '\0')
        rlock__log_later(c, c->pubsub_why_level, "%s", c->pubsub_why);
    return rlock__cluster_new(rlock__loop_ev(c->loop), &o, t, &c->cluster);
}
