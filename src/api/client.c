/*
 * api/client.c: the public client object's lifecycle (layer api): connect,
 * free, and the fork check. Connecting checks the server once,
 * synchronously, so that a wrong address, password or database fails at
 * connect time with a clear code; then the I/O thread takes over with its
 * command connections, the subscriber and the watchdog.
 *
 * What every connection of the client shares is made here, once, on the
 * caller's thread: c->link_opts, the server's address (resolved so that no
 * reconnect on the I/O thread waits for a name server), the credentials,
 * database and name, and for rediss:// the TLS context (src/io/tls.h:
 * read-only once made, so any thread may connect with it). Every
 * connection's handshake (src/io/link.h) starts from it.
 *
 * The object's definition is core/client.h's, since the core reads most of
 * it; what the core needs to do with a client (the fork check, a blocking
 * connection) is core/client.c's.
 */
#include "api/api.h"
#include "io/cluster.h"
#include "io/link.h"
#include "io/tls.h"
#include "proto/cluster.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the next reply of check_server's pipeline by deadline_ms: PING's
 * (sha1 NULL) or a SCRIPT LOAD's. Returns 0 or why not. */
static int check_reply(rlock__link_sync *s, int64_t deadline_ms,
                       const char *sha1)
{
    struct redisReply *r = NULL;
    int rc = rlock__link_sync_read(s, deadline_ms, &r);
    if (rc == 0)
        rc = sha1 != NULL ? rlock__reply_script_loaded(r, sha1)
                          : rlock__reply_pong(r);
    rlock__link_reply_free(r);
    return rc;
}

/* Connects once, synchronously: AUTH, SELECT, PING and SCRIPT LOAD of every
 * script (checking that Redis names it by the SHA-1 we computed), in one
 * pipeline, then the user's permissions (acl.c), whose warnings go into
 * acl. */
static int check_server(rlock_client *c, rlock__acl *acl)
{
    rlock__link_sync *s = NULL;
    int rc = rlock__client_sync_open(c, c->cfg.connect_timeout_ms, &s, NULL,
                                     0);
    if (rc != 0)
        return rc;
    const char *ping[1] = {"PING"};
    rc = rlock__link_sync_append(s, 1, ping, NULL);
    const rlock__script *const *scripts = rlock__all_scripts;
    for (size_t i = 0; rc == 0 && i < rlock__all_scripts_count; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD",
                               (const char *)scripts[i]->body};
        size_t lens[3] = {6, 4, scripts[i]->len};
        rc = rlock__link_sync_append(s, 3, argv, lens);
    }
    int64_t deadline = rlock__now_ms() + c->cfg.command_timeout_ms;
    if (rc == 0)
        rc = check_reply(s, deadline, NULL);
    for (size_t i = 0; rc == 0 && i < rlock__all_scripts_count; i++)
        rc = check_reply(s, deadline, scripts[i]->sha1);
    if (rc == 0)
        rc = rlock__acl_check(c, s, acl);
    rlock__link_sync_free(s);
    return rc;
}

/* Cluster mode: check_server() on the seed that described the cluster
 * (seed, an index of c's URI, whose table is *table), and while that
 * fails for want of an answer, on the next seed that describes it: a
 * seed may answer CLUSTER SLOTS and then stall (Redis 6.2's old master
 * holds SCRIPT LOAD and EVALSHA for 10 s after CLUSTER FAILOVER) or go
 * away. A refusal (credentials, ACL) is every node's, and is returned at
 * once; otherwise the first seed's failure is. */
static int check_seeds(rlock_client *c, rlock__acl *acl,
                       rlock__slot_table **table, int seed)
{
    int first = check_server(c, acl), rc = first;
    while ((rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN) &&
           seed + 1 < c->uri.nseeds) {
        rlock__slot_table *next = NULL;
        if (rlock__cluster_find_seed(c, c->link_opts, seed + 1, &seed,
                                     &next) != 0)
            return first;
        rlock__slot_table_free(*table);
        *table = next;
        rc = check_server(c, acl);
    }
    return rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN ? first : rc;
}

/* Makes c->link_opts, how every link reaches and greets the server: the
 * address is resolved here, on the caller's thread, so that no reconnect
 * on the I/O thread ever waits for a name server; a rediss:// server gets
 * the client's one TLS context. Returns 0, RLOCK_ECONN (the name does not
 * resolve), RLOCK_EINVAL, RLOCK_ETLS or RLOCK_ENOMEM. */
static int link_opts_init(rlock_client *c, rlock__slot_table **table,
                          int *seed)
{
    rlock__link_opts *o = rlock__malloc(sizeof(*o));
    if (o == NULL)
        return RLOCK_ENOMEM;
    c->link_opts = o;
    rlock__link_opts_init(o);
    o->host = c->uri.host;
    o->user = c->uri.user;
    o->password = c->uri.password;
    o->db = c->uri.db;
    o->client_name = c->cfg.client_name;
    o->connect_timeout_ms = c->cfg.connect_timeout_ms;
    /* A command link owing a reply and hearing nothing for this long is
     * taken for half-open and replaced. Closing it loses its late replies,
     * and with them the give-back of an acquire that ran after its caller
     * gave up (a stopped or paused server looks half-open too), so it is
     * the longer of an unlock latch's life and a watchdog timeout: the
     * scale at which Redisson's connection ping gives up too. */
    o->stale_ms = c->latch_ms > c->cfg.watchdog_timeout_ms
                      ? c->latch_ms
                      : c->cfg.watchdog_timeout_ms;
    if (c->uri.tls) {
        rlock__tls_settings ts;
        rlock__config_tls(&c->cfg, &ts);
        int rc = rlock__tls_ctx_new(&ts, &c->tls, NULL, 0);
        if (rc != 0)
            return rc;
        o->tls = c->tls;
    }
    /* a cluster: the first seed that describes it (api/cluster_connect.c)
     * is the node connecting checks */
    if (c->uri.seeds != NULL)
        return rlock__cluster_find_seed(c, o, 0, seed, table);
    /* in Sentinel mode the address is discovery's (core/follow.c) */
    if (c->uri.master != NULL)
        return RLOCK_OK;
    return rlock__link_resolve(c->uri.host, c->uri.port, c->uri.path,
                               &o->addr);
}

/* Runs on the I/O thread when the loop stops: nothing may touch a link
 * after this. */
static void on_loop_stop(void *arg)
{
    rlock_client *c = arg;
    /* any of these may be missing when connecting failed half-way */
    rlock__follow_shutdown(c); /* no move from here on */
    rlock__async_shutdown(c);
    rlock__direct_shutdown(c->direct);
    rlock__direct_cluster_shutdown(c->dcluster);
    if (c->watchdog != NULL)
        rlock__watchdog_shutdown(c->watchdog);
    if (c->pubsub != NULL)
        rlock__pubsub_shutdown(c->pubsub);
    for (int i = 0; c->conns != NULL && i < c->cfg.connections; i++)
        rlock__conn_close(&c->conns[i]);
    rlock__cluster_close(c->cluster);
}

static void destroy(rlock_client *c)
{
    /* first: no thread's exit handler may walk what is freed below */
    rlock__threads_close(c);
    if (c->loop != NULL) {
        atomic_store(&c->closing, true);
        rlock__loop_stop(c->loop);
    }
    rlock__watchdog_free(c->watchdog);
    rlock__pubsub_free(c->pubsub);
    rlock__follow_free(c); /* before the loop it may post to */
    rlock__loop_free(c->loop);
    rlock__direct_cluster_free(c->dcluster); /* its links use the nodes' */
    rlock__cluster_free(c->cluster);
    rlock__direct_free(c->direct);
    rlock__tls_ctx_free(c->tls); /* after every link */
    free(c->link_opts);
    rlock__notifier_free(c->notifier);
    rlock__threads_destroy(c);
    rlock__async_client_free(c);
    pthread_mutex_destroy(&c->done_mu);
    free(c->conns);
    if (c->entries.buckets != NULL) {
        /* after the last completion: one may still free its handle */
        rlock__handles_close(c);
        rlock__entries_sweep(c);
        rlock__map_destroy(&c->entries);
    }
    pthread_mutex_destroy(&c->entries_mu);
    pthread_condattr_destroy(&c->condattr);
    rlock__uri_clear(&c->uri);
    rlock__config_clear(&c->cfg);
    rlock__stats_free(c->stats);
    free(c);
}

int rlock_client_connect_with(rlock_client **out, const char *uri,
                              const rlock_config *cfg)
{
    if (out != NULL)
        *out = NULL;
    if (uri == NULL && cfg != NULL)
        uri = cfg->server; /* rlock_config_set_server() */
    if (out == NULL || uri == NULL)
        return RLOCK_EINVAL;
    rlock__acl acl;
    rlock__slot_table *table = NULL; /* cluster mode: as the seed said */
    int seed = 0;                    /* and which seed that was */
    rlock_client *c = rlock__calloc(1, sizeof(*c));
    if (c == NULL)
        return RLOCK_ENOMEM;
    int copied = RLOCK_OK;
    if (cfg != NULL)
        copied = rlock__config_copy(&c->cfg, cfg); /* owns its strings */
    else
        rlock__config_defaults(&c->cfg);
    pthread_mutex_init(&c->entries_mu, NULL);
    pthread_mutex_init(&c->done_mu, NULL);
    pthread_condattr_init(&c->condattr);
    pthread_condattr_setclock(&c->condattr, CLOCK_MONOTONIC);
    atomic_init(&c->next_epoch, 1);
    atomic_init(&c->closing, false);
    atomic_init(&c->unannounced_warned, false);
    c->pid = getpid();
    c->sub_plain = true; /* a cluster's seed may say otherwise */
    c->latch_ms = rlock__config_latch_ms(&c->cfg);

    int rc = copied;
    if (rc == 0)
        rc = rlock__uri_parse(uri, &c->uri);
    if (rc == 0) /* the config's credentials and database win */
        rc = rlock__config_apply_uri(&c->cfg, &c->uri);
    if (rc == 0 && c->uri.seeds != NULL && c->uri.db != 0)
        rc = RLOCK_EINVAL; /* a cluster has database 0 only */
    if (rc == 0 && c->cfg.stats)
        rc = rlock__stats_new(&c->stats);
    if (rc == 0)
        rc = link_opts_init(c, &table, &seed);
    if (rc == 0 && c->uri.master != NULL) /* Sentinel finds the master */
        rc = rlock__follow_new(c);
    if (rc == 0)
        rc = rlock__uuid4(c->id);
    if (rc == 0)
        rc = rlock__map_init(&c->entries);
    if (rc == 0)
        rc = rlock__threads_init(c);
    if (rc == 0)
        rc = table != NULL ? check_seeds(c, &acl, &table, seed)
                           : check_server(c, &acl);
    if (rc == 0)
        rc = rlock__notifier_new(&c->notifier);
    if (rc == 0)
        rc = rlock__loop_start(&c->loop, on_loop_stop, c);
    if (rc == 0) {
        c->conns = rlock__calloc((size_t)c->cfg.connections, sizeof(*c->conns));
        rc = c->conns ? RLOCK_OK : RLOCK_ENOMEM;
        for (int i = 0; rc == 0 && i < c->cfg.connections; i++)
            rlock__conn_init(&c->conns[i], rlock__loop_ev(c->loop),
                             c->link_opts, rlock__req_conn_event, c);
    }
    /* caller-thread connections: per node in a cluster (made before the
     * table's changes can reach them), else to the one server */
    if (rc == 0 && table != NULL)
        rc = rlock__direct_cluster_new(&c->dcluster, c);
    if (rc == 0 && table != NULL)
        rc = rlock__cluster_attach(c, table);
    rlock__slot_table_free(table);
    if (rc == 0 && c->dcluster == NULL)
        rc = rlock__direct_new(&c->direct, c, c->cfg.connections);
    if (rc == 0)
        rc = rlock__pubsub_new(&c->pubsub, c);
    if (rc == 0)
        rc = rlock__watchdog_new(&c->watchdog, c);
    if (rc != 0) {
        destroy(c);
        return rc;
    }
    rlock__watchdog_start(c->watchdog);
    rlock__follow_start(c);
    rlock__acl_report(c, &acl);
    *out = c;
    return RLOCK_OK;
}

int rlock_client_connect(rlock_client **out, const char *uri)
{
    return rlock_client_connect_with(out, uri, NULL);
}

typedef struct release_all {
    rlock_client *c;
    rlock__req **reqs;
    size_t n;
    size_t cap;
} release_all;

/* Sends r and keeps it in ra to be awaited; drops it if ra cannot grow. */
static void send_tracked(release_all *ra, rlock__req *r)
{
    if (r == NULL)
        return;
    if (ra->n == ra->cap) {
        size_t cap = ra->cap ? ra->cap * 2 : 16;
        rlock__req **grown = rlock__realloc(ra->reqs, sizeof(*grown) * cap);
        if (grown == NULL) {
            rlock__req_unref(r); /* that hold expires with its lease */
            return;
        }
        ra->reqs = grown;
        ra->cap = cap;
    }
    rlock__req_send(r);
    ra->reqs[ra->n++] = r;
}

static void track(rlock__req *r, void *arg)
{
    send_tracked(arg, r);
}

/* Gives back one owner's holds on e (core/release.c says how). Under the
 * table's lock, from rlock__holds_foreach. */
static void release_hold(rlock__entry *e, uint64_t owner, int count,
                         int64_t lease_ms, void *arg)
{
    rlock__give_back_all(e, owner, count, lease_ms, track, arg);
}

/* Releases every hold of the client, then lets every command connection
 * drain (a PING behind the fire-and-forget commands, such as the latch DEL
 * after an unlock), waiting at most one command timeout in all. */
static void release_everything(rlock_client *c)
{
    release_all ra = {.c = c};
    rlock__holds_foreach(c, release_hold, &ra);
    for (int i = 0; i < c->cfg.connections; i++) {
        const char *argv[] = {"PING"};
        rlock__req *r =
            rlock__req_new(c, NULL, RLOCK__REPLY_IGNORE, 0, 1, argv);
        if (r != NULL)
            r->conn = i;
        send_tracked(&ra, r);
    }
    int64_t deadline = rlock__now_ms() + c->cfg.command_timeout_ms;
    for (size_t i = 0; i < ra.n; i++) {
        rlock__req_wait(ra.reqs[i], deadline);
        rlock__req_unref(ra.reqs[i]);
    }
    free(ra.reqs);
}

void rlock_client_free(rlock_client *c)
{
    if (c == NULL)
        return;
    if (getpid() != c->pid)
        return; /* the parent's I/O thread does not exist here */
    if (rlock__loop_on_thread(c->loop) ||
        rlock__notifier_on_thread(c->notifier))
        return; /* documented misuse: freeing from a callback */
    release_everything(c);
    destroy(c);
}

const char *rlock_client_id(const rlock_client *c)
{
    return c ? c->id : NULL;
}
