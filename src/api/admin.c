/*
 * admin.c: the functions of admin.h, for the rlock tool.
 *
 * Design note. Each function here is a thin use of what the library
 * already has: the names come from proto's kind table
 * (rlock__kind_make_names, the one place a lock's names are made), the
 * URL from proto's parser, and a connection is the transport's blocking
 * link (src/io/link.h), opened with the client's own address, handshake
 * and TLS (rlock__client_sync_open), as the client's slots are. This file
 * may not name hiredis (scripts/check-layers): replies reach the tool as
 * proto's owned copies (admin_reply.h).
 *
 * A connection is used by one thread at a time; a pipeline is n appends
 * and n reads on it; a subscriber is the same connection after SUBSCRIBE,
 * its messages read as replies nobody asked for, waited for with ppoll()
 * so that the caller's stop signals are let in only while it waits.
 */
#include "api/admin.h"
#include "api/api.h"
#include "io/cluster.h"
#include "io/link.h"
#include "proto/cluster.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct rlock_admin_conn {
    rlock_client *client;
    rlock__link_sync *link;
    char error[160]; /* what the last failure said */
    /* a cluster: the master the link is to, "host:port" ("" before the
     * first command, and on a single server) */
    char node[RLOCK__HOST_MAX + 8];
    /* a cluster's lock subscriber: the slot of its lock, which the table
     * must go on giving to node (-1: none) */
    int slot;
};

/* How often a cluster's lock subscriber checks the client's table while
 * it waits for messages (rlock_admin_listen_many). */
#define TABLE_CHECK_MS 1000

/* ------------------------------------------------------------------ names */

/* The extra key names (aux) of lock name of kind, its channel dropped:
 * another kind names the same channel. Returns 0 or RLOCK_ENOMEM. */
static int extra_names(int kind, const char *name, char *aux[2])
{
    char *channel = NULL;
    int rc = rlock__kind_make_names(kind, name, NULL, &channel, aux);
    free(channel);
    return rc;
}

int rlock_admin_names_of(const char *name, rlock_admin_names *out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    memset(out, 0, sizeof(*out));
    if (name == NULL || *name == '\0')
        return RLOCK_EINVAL;
    char *fair[2] = {NULL, NULL}, *fenced[2] = {NULL, NULL};
    char *rw[2] = {NULL, NULL}, *lock[2] = {NULL, NULL};
    int rc = rlock__kind_make_names(RLOCK_KIND_FAIR, name, NULL, &out->channel,
                                    fair);
    out->fair_queue = fair[0];
    out->fair_timeouts = fair[1];
    if (rc == 0)
        rc = rlock__kind_make_names(RLOCK_KIND_READ, name, NULL,
                                    &out->rw_channel, rw);
    out->rw_timeout_prefix = rw[0];
    if (rc == 0)
        rc = extra_names(RLOCK_KIND_FENCED, name, fenced);
    out->fence_token = fenced[0];
    if (rc == 0)
        rc = extra_names(RLOCK_KIND_LOCK, name, lock);
    out->rlock_queue = lock[0];
    free(lock[1]);
    if (rc == 0) {
        out->latch_prefix = rlock__latch_name(name, "");
        if (out->latch_prefix == NULL)
            rc = RLOCK_ENOMEM;
    }
    char *permit[2] = {NULL, NULL};
    if (rc == 0)
        rc = rlock__sem_make_names(RLOCK__KIND_PERMIT_SEMAPHORE, name,
                                   &out->sem_channel, permit);
    out->permit_timeouts = permit[0];
    if (rc == 0) {
        out->countdown_channel = rlock__countdown_channel(name);
        if (out->countdown_channel == NULL)
            rc = RLOCK_ENOMEM;
    }
    if (rc != 0)
        rlock_admin_names_clear(out);
    return rc;
}

void rlock_admin_names_clear(rlock_admin_names *names)
{
    if (names == NULL)
        return;
    free(names->channel);
    free(names->rw_channel);
    free(names->fair_queue);
    free(names->fair_timeouts);
    free(names->fence_token);
    free(names->rlock_queue);
    free(names->rw_timeout_prefix);
    free(names->latch_prefix);
    free(names->sem_channel);
    free(names->permit_timeouts);
    free(names->countdown_channel);
    memset(names, 0, sizeof(*names));
}

/* ----------------------------------------------------------------- config */

/* Writes "redis+sentinel://h1:p1,h2:p2/master" or
 * "redis+cluster://h1:p1,h2:p2" (no credentials) into buf, cut short if it
 * must be. */
static void describe_nodes(const rlock__uri *u, char *buf, size_t len)
{
    bool sentinel = u->master != NULL;
    const rlock__uri_node *nodes = sentinel ? u->sentinels : u->seeds;
    int n = sentinel ? u->nsentinels : u->nseeds;
    size_t at = (size_t)snprintf(
        buf, len, "%s%s://", u->tls ? "rediss" : "redis",
        sentinel ? "+sentinel" : "+cluster");
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at,
                               strchr(nodes[i].host, ':') ? "%s[%s]:%d"
                                                          : "%s%s:%d",
                               i ? "," : "", nodes[i].host, nodes[i].port);
    if (sentinel && at < len)
        snprintf(buf + at, len - at, "/%s", u->master);
}

int rlock_admin_server_of(const rlock_config *cfg, rlock_admin_server *out)
{
    rlock__uri u;
    if (out == NULL)
        return RLOCK_EINVAL;
    memset(out, 0, sizeof(*out));
    snprintf(out->text, sizeof(out->text), "(no server)");
    if (cfg == NULL || cfg->server == NULL ||
        rlock__uri_parse(cfg->server, &u) != 0)
        return RLOCK_EINVAL;
    int rc = rlock__config_apply_uri(cfg, &u);
    if (rc != 0) {
        rlock__uri_clear(&u);
        return rc;
    }
    int db = u.db;
    if (u.master != NULL || u.seeds != NULL)
        describe_nodes(&u, out->text, sizeof(out->text));
    else if (u.path != NULL)
        snprintf(out->text, sizeof(out->text), "unix://%s%s", u.path,
                 db ? "?db=" : "");
    else
        snprintf(out->text, sizeof(out->text),
                 strchr(u.host, ':') ? "%s://[%s]:%d" : "%s://%s:%d",
                 u.tls ? "rediss" : "redis", u.host, u.port);
    if (db != 0) {
        size_t n = strlen(out->text);
        snprintf(out->text + n, sizeof(out->text) - n, u.path ? "%d" : "/%d",
                 db);
    }
    out->database = db;
    out->password = u.password != NULL;
    out->tls = u.tls;
    rlock__uri_clear(&u);
    return RLOCK_OK;
}

/* True when the URL spells out a database ("/N", "?db=N"); the parser
 * reads a missing one as 0, which must not beat a config file's. */
static bool url_names_db(const char *url)
{
    if (strncasecmp(url, "unix://", 7) == 0)
        return strstr(url, "?db=") != NULL;
    const char *scheme_end = strstr(url, "://");
    const char *slash = scheme_end ? strchr(scheme_end + 3, '/') : NULL;
    /* schemes match whatever their case, as the URI parser's */
    bool sentinel = scheme_end != NULL && scheme_end - url >= 9 &&
                    strncasecmp(scheme_end - 9, "+sentinel", 9) == 0;
    if (slash != NULL && sentinel)
        slash = strchr(slash + 1, '/'); /* past "/master" */
    return slash != NULL && slash[1] != '\0';
}

int rlock_admin_config_set_url(rlock_config *cfg, const char *url,
                               bool beats_config)
{
    rlock__uri u;
    if (cfg == NULL || url == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__uri_parse(url, &u);
    if (rc != 0)
        return rc;
    if (beats_config && u.password != NULL)
        rc = rlock_config_set_credentials(cfg, u.user, u.password);
    if (rc == 0 && beats_config && url_names_db(url))
        rc = rlock_config_set_database(cfg, u.db);
    if (rc == 0)
        rc = rlock_config_set_server(cfg, url);
    rlock__uri_clear(&u);
    return rc;
}

/* ------------------------------------------------------------- connection */

int rlock_admin_open(rlock_client *c, rlock_admin_conn **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    int rc = rlock__client_check(c);
    if (rc != 0)
        return rc;
    rlock_admin_conn *a = rlock__calloc(1, sizeof(*a));
    if (a == NULL)
        return RLOCK_ENOMEM;
    a->client = c;
    a->slot = -1;
    rc = rlock__client_sync_open(c, c->cfg.connect_timeout_ms, &a->link,
                                 a->error, sizeof(a->error));
    if (rc != 0) {
        free(a);
        return rc;
    }
    *out = a;
    return RLOCK_OK;
}

void rlock_admin_close(rlock_admin_conn *a)
{
    if (a == NULL)
        return;
    rlock__link_sync_free(a->link);
    free(a);
}

const char *rlock_admin_error(const rlock_admin_conn *a)
{
    return a != NULL ? a->error : "";
}

void rlock_admin_reply_free(rlock_admin_reply *r)
{
    rlock__admin_reply_free(r);
}

const char *rlock_admin_node(const rlock_admin_conn *a)
{
    return a != NULL ? a->node : "";
}

/* The key a command names first, for its slot: EVAL's and EVALSHA's first
 * key, nothing for the commands about the server, else the first
 * argument. NULL: none. */
static const char *first_key(int argc, const char *const *argv)
{
    static const char *const keyless[] = {"PUBSUB", "PING",   "INFO",
                                          "CONFIG", "CLIENT", "SCRIPT",
                                          "ACL",    "CLUSTER"};
    if (argc < 2)
        return NULL;
    if (strcasecmp(argv[0], "EVAL") == 0 || strcasecmp(argv[0], "EVALSHA") == 0)
        return argc > 3 && strcmp(argv[2], "0") != 0 ? argv[3] : NULL;
    for (size_t i = 0; i < sizeof(keyless) / sizeof(keyless[0]); i++)
        if (strcasecmp(argv[0], keyless[i]) == 0)
            return NULL;
    return argv[1];
}

/* In a cluster, the master serving slot as the client's table says: its
 * host and port, and node its "host:port" as rlock_admin_node() gives it.
 * Returns false on a single server, or when the table names none. */
static bool owner_of(rlock_client *c, int slot, char *host, size_t hostlen,
                     int *port, char *node, size_t nodelen)
{
    if (c->cluster == NULL ||
        !rlock__cluster_owner_addr(c->cluster, slot, host, hostlen, port))
        return false;
    snprintf(node, nodelen, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
             *port);
    return true;
}

/* In a cluster, moves a's link to the master serving the slot of the
 * first key the n commands name (the tool's pipelines are about one lock,
 * whose keys share a slot), as the client's table says. Returns 0 or why
 * the new link could not be made. */
static int route(rlock_admin_conn *a, size_t n, const int *argc,
                 const char *const *const *argv)
{
    rlock_client *c = a->client;
    const char *key = NULL;
    for (size_t i = 0; key == NULL && i < n; i++)
        key = first_key(argc[i], argv[i]);
    char host[RLOCK__HOST_MAX], node[sizeof(a->node)];
    int port;
    if (key == NULL ||
        !owner_of(c, rlock__key_slot(key, strlen(key)), host, sizeof(host),
                  &port, node, sizeof(node)))
        return RLOCK_OK;
    if (strcmp(node, a->node) == 0)
        return RLOCK_OK;
    rlock__link_opts o = *c->link_opts;
    o.host = host;
    o.connect_timeout_ms = c->cfg.connect_timeout_ms;
    int rc = rlock__link_resolve_numeric(host, port, &o.addr);
    rlock__link_sync *s = NULL;
    if (rc == 0)
        rc = rlock__link_sync_open(&o, &s, a->error, sizeof(a->error));
    if (rc != 0)
        return rc;
    rlock__link_sync_free(a->link);
    a->link = s;
    snprintf(a->node, sizeof(a->node), "%s", node);
    return RLOCK_OK;
}

/* Says why a call failed, for rlock_admin_error(); returns rc. */
static int failed(rlock_admin_conn *a, int rc)
{
    if (rc == 0 || a->error[0] != '\0')
        return rc;
    if (rc == RLOCK_ETIMEDOUT)
        snprintf(a->error, sizeof(a->error),
                 "no reply within the command timeout");
    else
        snprintf(a->error, sizeof(a->error), "%s",
                 rlock__link_sync_error(a->link));
    return rc;
}

/* Reads one reply by deadline_ms into an owned copy. */
static int read_copy(rlock_admin_conn *a, int64_t deadline_ms,
                     rlock_admin_reply **out)
{
    struct redisReply *r = NULL;
    *out = NULL;
    int rc = rlock__link_sync_read(a->link, deadline_ms, &r);
    if (rc != 0)
        return rc;
    *out = rlock__admin_reply_copy(r);
    rlock__link_reply_free(r);
    return *out != NULL ? RLOCK_OK : RLOCK_ENOMEM;
}

int rlock_admin_pipeline(rlock_admin_conn *a, size_t n, const int *argc,
                         const char *const *const *argv,
                         rlock_admin_reply **out)
{
    if (a == NULL || argc == NULL || argv == NULL || out == NULL || n == 0)
        return RLOCK_EINVAL;
    memset(out, 0, n * sizeof(*out));
    a->error[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (argc[i] < 1 || argv[i] == NULL)
            return RLOCK_EINVAL;
    int rc = route(a, n, argc, argv);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = rlock__link_sync_append(a->link, argc[i],
                                     (const char **)argv[i], NULL);
    int64_t deadline = rlock__now_ms() + a->client->cfg.command_timeout_ms;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = read_copy(a, deadline, &out[i]);
    if (rc != 0) {
        /* the replies not read are dropped as they come, so that the next
         * command reads its own */
        rlock__link_sync_abandon(a->link);
        for (size_t i = 0; i < n; i++) {
            rlock__admin_reply_free(out[i]);
            out[i] = NULL;
        }
    }
    return failed(a, rc);
}

int rlock_admin_command(rlock_admin_conn *a, int argc, const char *const *argv,
                        rlock_admin_reply **out)
{
    if (out != NULL)
        *out = NULL;
    return rlock_admin_pipeline(a, 1, &argc, &argv, out);
}

/* ------------------------------------------------------------- subscriber */

/* Reads the confirmations of n (un)subscriptions: one each, or an error
 * reply. */
static int confirmations(rlock_admin_conn *a, size_t n, int64_t deadline_ms)
{
    for (size_t i = 0; i < n; i++) {
        rlock_admin_reply *r;
        int rc = read_copy(a, deadline_ms, &r);
        if (rc != 0)
            return rc;
        if (r->type == RLOCK_ADMIN_ERROR) {
            snprintf(a->error, sizeof(a->error), "%s", r->str);
            rlock__admin_reply_free(r);
            return RLOCK_ESERVER;
        }
        rlock__admin_reply_free(r);
    }
    return RLOCK_OK;
}

/* Sends "verb names[0..n)" unless n is 0. */
static int send_subscribe(rlock_admin_conn *a, const char *verb, size_t n,
                          const char *const *names)
{
    if (n == 0)
        return RLOCK_OK;
    if (names == NULL || n > 1u << 20)
        return RLOCK_EINVAL;
    const char **argv = rlock__calloc(n + 1, sizeof(*argv));
    if (argv == NULL)
        return RLOCK_ENOMEM;
    argv[0] = verb;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = names[i];
    int rc = RLOCK_OK;
    for (size_t i = 0; i < n; i++)
        if (names[i] == NULL)
            rc = RLOCK_EINVAL;
    if (rc == 0)
        rc = rlock__link_sync_append(a->link, (int)n + 1, argv, NULL);
    free(argv);
    return rc;
}

int rlock_admin_subscribe(rlock_admin_conn *a, size_t nchannels,
                          const char *const *channels, size_t npatterns,
                          const char *const *patterns)
{
    if (a == NULL || nchannels + npatterns == 0)
        return RLOCK_EINVAL;
    a->error[0] = '\0';
    int rc = send_subscribe(a, "SUBSCRIBE", nchannels, channels);
    if (rc == 0)
        rc = send_subscribe(a, "PSUBSCRIBE", npatterns, patterns);
    if (rc == 0)
        rc = confirmations(a, nchannels + npatterns,
                           rlock__now_ms() +
                               a->client->cfg.command_timeout_ms);
    return failed(a, rc);
}

/* The I/O thread's side of keep_table_fresh(). */
typedef struct scan_task {
    rlock__task task; /* first: the loop hands this back */
    rlock_client *client;
} scan_task;

static void run_scan(rlock__task *t, int status)
{
    scan_task *st = (scan_task *)t;
    if (status == 0)
        rlock__cluster_refresh(st->client->cluster);
    free(st);
}

/* Has the I/O thread refresh c's table now and every scan interval after:
 * its scan starts with the cluster's first use on that thread, which a
 * tool that only listens never makes. Out of memory, the table stays as
 * it is (a sharded subscriber is still told by the server). */
static void keep_table_fresh(rlock_client *c)
{
    scan_task *st = rlock__calloc(1, sizeof(*st));
    if (st == NULL)
        return;
    st->task.run = run_scan;
    st->client = c;
    rlock__loop_submit(c->loop, &st->task);
}

int rlock_admin_subscribe_lock(rlock_admin_conn *a, size_t nlock,
                               const char *const *lock, size_t nchannels,
                               const char *const *channels, size_t npatterns,
                               const char *const *patterns)
{
    if (a == NULL || nlock + nchannels + npatterns == 0 ||
        (nlock > 0 && lock == NULL) || (nchannels > 0 && channels == NULL))
        return RLOCK_EINVAL;
    a->error[0] = '\0';
    rlock_client *c = a->client;
    /* routed as a command naming the channel: its slot is the lock's */
    const char *by[2] = {"SUBSCRIBE", nlock > 0 ? lock[0] : NULL};
    if (by[1] == NULL && nchannels > 0)
        by[1] = channels[0];
    const char *const *argv = by;
    int argc = by[1] != NULL ? 2 : 1;
    int rc = route(a, 1, &argc, &argv);
    bool sharded = c->cluster != NULL && c->sub_sharded;
    if (rc == 0)
        rc = send_subscribe(a, sharded ? "SSUBSCRIBE" : "SUBSCRIBE", nlock,
                            lock);
    if (rc == 0)
        rc = send_subscribe(a, "SUBSCRIBE", nchannels, channels);
    if (rc == 0)
        rc = send_subscribe(a, "PSUBSCRIBE", npatterns, patterns);
    size_t n = nlock + nchannels + npatterns;
    if (rc == 0)
        rc = confirmations(a, n,
                           rlock__now_ms() + c->cfg.command_timeout_ms);
    if (rc == 0 && c->cluster != NULL && by[1] != NULL) {
        a->slot = rlock__key_slot(by[1], strlen(by[1]));
        keep_table_fresh(c);
    }
    return failed(a, rc);
}

/* Whether the client's table names another master for a's lock than the
 * one a listens on, saying so in a's error. The server tells a sharded
 * subscriber (sunsubscribe, below), but never a plain one (Redis 6.2,
 * which has no sharded pub/sub, or mode off): a plain subscriber would go
 * on hearing unlocks, published to every node, and miss the new master's
 * keyspace events. */
static bool slot_moved(rlock_admin_conn *a)
{
    char host[RLOCK__HOST_MAX], node[sizeof(a->node)];
    int port;
    if (a->slot < 0 ||
        !owner_of(a->client, a->slot, host, sizeof(host), &port, node,
                  sizeof(node)) ||
        strcmp(node, a->node) == 0)
        return false;
    snprintf(a->error, sizeof(a->error),
             "the cluster's table names %.80s for the lock: its slot "
             "moved to another node",
             node);
    return true;
}

/* Hands r to fn when it is a message; returns fn's answer, 0 for anything
 * else (confirmations), or RLOCK_ECONN when the server ended a sharded
 * subscription (its slot moved). */
static int deliver(rlock_admin_conn *a, const rlock_admin_reply *r,
                   rlock_admin_message_fn fn, void *arg)
{
    if (r->type != RLOCK_ADMIN_ARRAY || r->elements < 3)
        return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->str == NULL &&
            r->element[i]->type != RLOCK_ADMIN_INTEGER)
            return 0;
    const char *kind = r->element[0]->str;
    if (kind == NULL || r->element[1]->str == NULL)
        return 0;
    if ((strcmp(kind, "smessage") == 0 || strcmp(kind, "message") == 0) &&
        r->elements == 3 && r->element[2]->str != NULL)
        return fn(arg, NULL, r->element[1]->str, r->element[2]->str);
    if (strcmp(kind, "pmessage") == 0 && r->elements == 4 &&
        r->element[2]->str != NULL && r->element[3]->str != NULL)
        return fn(arg, r->element[1]->str, r->element[2]->str,
                  r->element[3]->str);
    if (strcmp(kind, "sunsubscribe") == 0) {
        snprintf(a->error, sizeof(a->error),
                 "the server ended the subscription to %s: its slot moved "
                 "to another node",
                 r->element[1]->str);
        return RLOCK_ECONN;
    }
    return 0;
}

/* Hands fn every message already received (read without waiting).
 * Returns 0 when none is left, fn's positive value, or a negative code. */
static int deliver_received(rlock_admin_conn *a, rlock_admin_message_fn fn,
                            void *arg)
{
    for (;;) {
        rlock_admin_reply *r;
        /* a deadline already past: what has come, without waiting */
        int rc = read_copy(a, 0, &r);
        if (rc == RLOCK_ETIMEDOUT)
            return RLOCK_OK;
        if (rc != 0)
            return failed(a, rc == RLOCK_EPROTO ? rc : RLOCK_ECONN);
        int stop = deliver(a, r, fn, arg);
        rlock__admin_reply_free(r);
        if (stop != 0)
            return stop;
    }
}

int rlock_admin_listen(rlock_admin_conn *a, const sigset_t *wait_mask,
                       rlock_admin_message_fn fn, void *arg)
{
    return rlock_admin_listen_many(&a, 1, wait_mask, fn, arg);
}

/* deliver_received() on each of a[0 .. n). */
static int deliver_all(rlock_admin_conn *const *a, size_t n,
                       rlock_admin_message_fn fn, void *arg)
{
    for (size_t i = 0; i < n; i++) {
        int rc = deliver_received(a[i], fn, arg);
        if (rc != 0)
            return rc;
    }
    return RLOCK_OK;
}

int rlock_admin_listen_many(rlock_admin_conn *const *a, size_t n,
                            const sigset_t *wait_mask,
                            rlock_admin_message_fn fn, void *arg)
{
    if (a == NULL || n == 0 || n > 4096 || fn == NULL)
        return RLOCK_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (a[i] == NULL)
            return RLOCK_EINVAL;
        a[i]->error[0] = '\0';
    }
    int rc = deliver_all(a, n, fn, arg);
    if (rc != 0)
        return rc;
    struct pollfd *pfd = rlock__calloc(n, sizeof(*pfd));
    if (pfd == NULL)
        return RLOCK_ENOMEM;
    bool check = false; /* a lock subscriber in a cluster: wake to check */
    for (size_t i = 0; i < n; i++) {
        pfd[i] = (struct pollfd){.fd = rlock__link_sync_fd(a[i]->link),
                                 .events = POLLIN};
        check = check || a[i]->slot >= 0;
    }
    struct timespec tick = {.tv_sec = TABLE_CHECK_MS / 1000,
                            .tv_nsec = TABLE_CHECK_MS % 1000 * 1000000L};
    int polled = ppoll(pfd, (nfds_t)n, check ? &tick : NULL, wait_mask);
    int err = errno;
    free(pfd);
    if (polled < 0) {
        if (err == EINTR)
            return RLOCK_OK;
        snprintf(a[0]->error, sizeof(a[0]->error), "poll: %s",
                 strerror(err));
        return RLOCK_ECONN;
    }
    rc = deliver_all(a, n, fn, arg);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (slot_moved(a[i]))
            rc = RLOCK_ECONN;
    return rc;
}
