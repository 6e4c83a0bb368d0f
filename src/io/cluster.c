/*
 * cluster.c: the slot table and the per-node command connections of a
 * cluster client (see cluster.h).
 *
 * Design notes.
 *
 * A node is made once per address and kept: a MOVED may name a node the
 * table has not seen (a replica just promoted), and requests in flight
 * hold pointers to the node they went to. Its sockets are not kept: once
 * it serves no slot, the sweep after each table change drops its command
 * connections that owe nothing (cluster.h). Addresses in a cluster's replies
 * are IP addresses (cluster-announce-hostname aside), so a node made on
 * the I/O thread is resolved without blocking; a host name there is
 * refused, and the next refresh (which names nodes by IP) finds the node.
 *
 * The refresh asks one node CLUSTER SLOTS on one of its own command
 * connections (it is a command like any other: deadline, reconnect on
 * demand). A node that fails or answers what slot_table.c cannot read is
 * passed over for the next: masters of the current table first, then the
 * other nodes. A table that leaves slots unserved still replaces the old
 * one for the slots it serves; an unserved slot keeps its last owner,
 * whose MOVED or CLUSTERDOWN then tells the caller more than "no node"
 * would.
 *
 * owner[] is written on the I/O thread only, under mu, so that
 * rlock__cluster_owner and rlock__cluster_owner_addr may read it from any
 * thread (a caller-thread connection's node, the rlock tool's "which node
 * serves this lock"). A node's address and greeting never change once it
 * is made, so a thread that got it from owner[] under mu may read them.
 */
#include "io/cluster.h"
#include "io/io.h"
#include "proto/cluster.h"

#include "rlock.h"

#include <ev.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rlock__cnode {
    char *host;
    int port;
    char name[RLOCK__HOST_MAX + 8];
    rlock__link_opts opts;
    rlock__conn *conns;
    unsigned next;
};

typedef struct later {
    struct later *next;
    int64_t due_ms;
    void (*fn)(void *arg, int status);
    void *arg;
} later;

struct rlock__cluster {
    struct ev_loop *loop;
    rlock__cluster_opts o;
    rlock__link_opts base;
    pthread_mutex_t mu; /* owner[] for readers off the I/O thread */
    rlock__cnode *owner[RLOCK__SLOT_COUNT];
    rlock__cnode **nodes;
    size_t count, cap;

    ev_timer scan;
    bool started;
    bool closed;

    /* the refresh in flight */
    bool refreshing;
    bool refresh_again; /* asked for while one was in flight */
    int64_t last_refresh_ms;
    rlock__conn_cmd refresh_cmd;
    const char *refresh_argv[2];
    size_t refresh_lens[2];
    rlock__cnode *refresh_node;
    size_t refresh_tries;
    size_t refresh_next; /* rotation over the nodes */

    later *laters; /* sorted by due_ms */
    ev_timer later_timer;

    bool sweep_armed; /* a sweep is due (a later) */
};

/* ------------------------------------------------------------------ nodes */

static void node_free(rlock__cnode *n, int connections)
{
    if (n == NULL)
        return;
    (void)connections;
    free(n->conns);
    free(n->host);
    free(n);
}

/* Makes the node host:port with addr resolved. Returns it or NULL. */
static rlock__cnode *node_new(rlock__cluster *cl, const char *host, int port,
                              const rlock__link_addr *addr)
{
    rlock__cnode *n = rlock__calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL;
    n->host = rlock__strdup(host);
    n->conns = rlock__calloc((size_t)cl->o.connections, sizeof(*n->conns));
    if (n->host == NULL || n->conns == NULL) {
        node_free(n, cl->o.connections);
        return NULL;
    }
    n->port = port;
    snprintf(n->name, sizeof(n->name),
             strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
    n->opts = cl->base;
    n->opts.addr = *addr;
    n->opts.host = n->host;
    for (int i = 0; i < cl->o.connections; i++)
        rlock__conn_init(&n->conns[i], cl->loop, &n->opts, cl->o.on_event,
                         cl->o.event_arg);
    return n;
}

static rlock__cnode *find(const rlock__cluster *cl, const char *host, int port)
{
    for (size_t i = 0; i < cl->count; i++)
        if (cl->nodes[i]->port == port && strcmp(cl->nodes[i]->host, host) == 0)
            return cl->nodes[i];
    return NULL;
}

/* Finds or makes host:port; blocking says whether a host name may be
 * resolved (a user thread) or only an IP address (the I/O thread). */
static rlock__cnode *get_node(rlock__cluster *cl, const char *host, int port,
                              bool blocking)
{
    rlock__cnode *n = find(cl, host, port);
    if (n != NULL)
        return n;
    rlock__link_addr addr;
    int rc = blocking ? rlock__link_resolve(host, port, NULL, &addr)
                      : rlock__link_resolve_numeric(host, port, &addr);
    if (rc != 0)
        return NULL;
    if (cl->count == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        rlock__cnode **grown =
            rlock__realloc(cl->nodes, sizeof(*grown) * cap);
        if (grown == NULL)
            return NULL;
        cl->nodes = grown;
        cl->cap = cap;
    }
    n = node_new(cl, host, port, &addr);
    if (n != NULL)
        cl->nodes[cl->count++] = n;
    return n;
}

/* Takes the owners table t gives (host: the node asked, for t's nodes
 * without an address). Returns how many slots t serves, or a negative code
 * when a node cannot be made. */
static int apply_table(rlock__cluster *cl, const rlock__slot_table *t,
                       bool blocking)
{
    rlock__cnode **made = rlock__calloc(t->count + 1, sizeof(*made));
    if (made == NULL)
        return RLOCK_ENOMEM;
    for (size_t i = 0; i < t->count; i++) {
        if (t->nodes[i].role != RLOCK__NODE_MASTER)
            continue;
        made[i] = get_node(cl, t->nodes[i].host, t->nodes[i].port, blocking);
        if (made[i] == NULL) {
            free(made);
            return RLOCK_ECONN;
        }
    }
    int served = 0;
    pthread_mutex_lock(&cl->mu);
    for (int s = 0; s < RLOCK__SLOT_COUNT; s++) {
        if (t->owner[s] == RLOCK__SLOT_UNSERVED)
            continue;
        cl->owner[s] = made[t->owner[s]];
        served++;
    }
    pthread_mutex_unlock(&cl->mu);
    free(made);
    return served;
}

/* ------------------------------------------------------------------ timers */

static void arm_later(rlock__cluster *cl)
{
    ev_timer_stop(cl->loop, &cl->later_timer);
    if (cl->laters == NULL || cl->closed)
        return;
    int64_t wait = cl->laters->due_ms - rlock__io_now_ms();
    ev_timer_set(&cl->later_timer, wait > 0 ? (double)wait / 1e3 : 0., 0.);
    ev_timer_start(cl->loop, &cl->later_timer);
}

static void on_later(struct ev_loop *loop, ev_timer *w, int revents)
{
    rlock__cluster *cl = w->data;
    (void)loop;
    (void)revents;
    int64_t now = rlock__io_now_ms();
    /* take the due ones off first: their callbacks may add more */
    later *due = NULL, **tail = &due;
    while (cl->laters != NULL && cl->laters->due_ms <= now) {
        later *l = cl->laters;
        cl->laters = l->next;
        l->next = NULL;
        *tail = l;
        tail = &l->next;
    }
    arm_later(cl);
    while (due != NULL) {
        later *l = due;
        due = l->next;
        l->fn(l->arg, 0);
        free(l);
    }
}

int rlock__cluster_later(rlock__cluster *cl, int64_t delay_ms,
                         void (*fn)(void *arg, int status), void *arg)
{
    later *l = rlock__calloc(1, sizeof(*l));
    if (l == NULL)
        return RLOCK_ENOMEM;
    l->due_ms = rlock__io_now_ms() + (delay_ms > 0 ? delay_ms : 0);
    l->fn = fn;
    l->arg = arg;
    later **p = &cl->laters;
    while (*p != NULL && (*p)->due_ms <= l->due_ms)
        p = &(*p)->next;
    l->next = *p;
    *p = l;
    if (cl->closed) { /* after close: at once, with the closing status */
        cl->laters = l->next;
        fn(arg, RLOCK_ECLOSED);
        free(l);
        return RLOCK_OK;
    }
    arm_later(cl);
    return RLOCK_OK;
}

static bool owns_a_slot(const rlock__cluster *cl, const rlock__cnode *n)
{
    for (int s = 0; s < RLOCK__SLOT_COUNT; s++)
        if (cl->owner[s] == n)
            return true;
    return false;
}

/* ------------------------------------------------------------------- sweep */

/* Drops the idle command connections of every node that serves no slot,
 * and tells the owner (see cluster.h). A later: never inside a link's
 * callback. */
static void sweep(void *arg, int status)
{
    rlock__cluster *cl = arg;
    cl->sweep_armed = false;
    if (status != 0 || cl->closed)
        return;
    for (size_t i = 0; i < cl->count; i++) {
        rlock__cnode *n = cl->nodes[i];
        if (owns_a_slot(cl, n))
            continue;
        int dropped = 0;
        for (int k = 0; k < cl->o.connections; k++)
            dropped += rlock__conn_drop_idle(&n->conns[k]);
        if (cl->o.on_sweep != NULL)
            cl->o.on_sweep(n, dropped, cl->o.change_arg);
    }
}

/* The table changed: the owner hears of it now, and a sweep follows. */
static void changed(rlock__cluster *cl)
{
    if (cl->o.on_change != NULL)
        cl->o.on_change(cl->o.change_arg);
    if (cl->sweep_armed || cl->closed)
        return;
    cl->sweep_armed = true;
    if (rlock__cluster_later(cl, 0, sweep, cl) != 0)
        cl->sweep_armed = false; /* out of memory: at the next change */
}

/* ----------------------------------------------------------------- refresh */

static void start_refresh(rlock__cluster *cl);

/* The next node to ask: the masters of the table first, then the rest. */
static rlock__cnode *next_to_ask(rlock__cluster *cl)
{
    size_t n = cl->count;
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < n; k++) {
            rlock__cnode *cand = cl->nodes[(cl->refresh_next + k) % n];
            if (owns_a_slot(cl, cand) == (pass == 0) &&
                cl->refresh_tries < n) {
                cl->refresh_next = (cl->refresh_next + k + 1) % n;
                return cand;
            }
        }
    }
    return NULL;
}

static void refresh_done(rlock__cluster *cl)
{
    cl->refreshing = false;
    cl->last_refresh_ms = rlock__io_now_ms();
    if (cl->refresh_again) {
        cl->refresh_again = false;
        rlock__cluster_refresh(cl);
    }
}

static void on_slots(rlock__conn_cmd *cmd, int status,
                     struct redisReply *reply)
{
    rlock__cluster *cl =
        (rlock__cluster *)((char *)cmd - offsetof(rlock__cluster, refresh_cmd));
    if (cl->closed || status == RLOCK_ECLOSED) {
        cl->refreshing = false;
        return;
    }
    rlock__slot_table *t = NULL;
    int served = -1;
    if (status == RLOCK_OK &&
        rlock__slot_table_from_slots(reply, cl->refresh_node->host, &t) == 0)
        served = apply_table(cl, t, false);
    rlock__slot_table_free(t);
    if (served > 0) {
        refresh_done(cl);
        changed(cl);
        return;
    }
    cl->refresh_tries++;
    start_refresh(cl); /* the next node, or give up until the next scan */
}

static void start_refresh(rlock__cluster *cl)
{
    rlock__cnode *n = next_to_ask(cl);
    if (n == NULL) {
        refresh_done(cl);
        return;
    }
    cl->refreshing = true;
    cl->refresh_node = n;
    cl->refresh_argv[0] = "CLUSTER";
    cl->refresh_argv[1] = "SLOTS";
    cl->refresh_lens[0] = 7;
    cl->refresh_lens[1] = 5;
    cl->refresh_cmd = (rlock__conn_cmd){
        .argc = 2,
        .argv = cl->refresh_argv,
        .lens = cl->refresh_lens,
        .deadline_ms = rlock__io_now_ms() + cl->o.command_timeout_ms,
        .done = on_slots,
    };
    if (rlock__conn_send(&n->conns[0], &cl->refresh_cmd) != 0) {
        cl->refresh_tries++;
        start_refresh(cl);
    }
}

/* The gap between two refreshes is over: the one asked for meanwhile. */
static void refresh_later_gap(void *arg, int status)
{
    rlock__cluster *cl = arg;
    cl->refreshing = false;
    cl->refresh_again = false;
    if (status != 0)
        return;
    cl->refresh_tries = 0;
    start_refresh(cl);
}

static void start(rlock__cluster *cl)
{
    if (cl->started || cl->closed)
        return;
    cl->started = true;
    ev_timer_start(cl->loop, &cl->scan);
}

void rlock__cluster_refresh(rlock__cluster *cl)
{
    start(cl);
    if (cl->closed)
        return;
    if (cl->refreshing) {
        cl->refresh_again = true;
        return;
    }
    int64_t gap = rlock__io_now_ms() - cl->last_refresh_ms;
    if (cl->last_refresh_ms != 0 && gap < RLOCK__CLUSTER_REFRESH_GAP_MS) {
        cl->refreshing = true; /* held until the gap is over */
        if (rlock__cluster_later(cl, RLOCK__CLUSTER_REFRESH_GAP_MS - gap,
                                 refresh_later_gap, cl) != 0)
            cl->refreshing = false;
        return;
    }
    cl->refresh_tries = 0;
    start_refresh(cl);
}

static void on_scan(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    rlock__cluster_refresh(w->data);
}

/* ------------------------------------------------------------------ public */

int rlock__cluster_new(struct ev_loop *loop, const rlock__cluster_opts *o,
                       const rlock__slot_table *table, rlock__cluster **out)
{
    *out = NULL;
    if (o->connections < 1 || o->scan_interval_ms <= 0 || table == NULL)
        return RLOCK_EINVAL;
    rlock__cluster *cl = rlock__calloc(1, sizeof(*cl));
    if (cl == NULL)
        return RLOCK_ENOMEM;
    cl->loop = loop;
    cl->o = *o;
    cl->base = *o->base;
    pthread_mutex_init(&cl->mu, NULL);
    ev_timer_init(&cl->scan, on_scan, (double)o->scan_interval_ms / 1e3,
                  (double)o->scan_interval_ms / 1e3);
    cl->scan.data = cl;
    ev_timer_init(&cl->later_timer, on_later, 0., 0.);
    cl->later_timer.data = cl;
    int rc = apply_table(cl, table, true);
    if (rc <= 0) {
        rlock__cluster_free(cl);
        return rc < 0 ? rc : RLOCK_EINVAL;
    }
    *out = cl;
    return RLOCK_OK;
}

rlock__cnode *rlock__cluster_node_for(rlock__cluster *cl, int slot)
{
    start(cl);
    if (slot >= 0 && slot < RLOCK__SLOT_COUNT)
        return cl->owner[slot];
    for (size_t i = 0; i < cl->count; i++)
        if (owns_a_slot(cl, cl->nodes[i]))
            return cl->nodes[i];
    return cl->count > 0 ? cl->nodes[0] : NULL;
}

rlock__cnode *rlock__cluster_owner(rlock__cluster *cl, int slot)
{
    if (slot < 0 || slot >= RLOCK__SLOT_COUNT)
        return NULL;
    pthread_mutex_lock(&cl->mu);
    rlock__cnode *n = cl->owner[slot];
    pthread_mutex_unlock(&cl->mu);
    return n;
}

bool rlock__cluster_serves(const rlock__cluster *cl, const rlock__cnode *n)
{
    return owns_a_slot(cl, n);
}

rlock__cnode *rlock__cluster_node_at(rlock__cluster *cl, const char *host,
                                     int port)
{
    return get_node(cl, host, port, false);
}

rlock__conn *rlock__cluster_conn(rlock__cluster *cl, rlock__cnode *n)
{
    return &n->conns[n->next++ % (unsigned)cl->o.connections];
}

const rlock__link_opts *rlock__cnode_opts(const rlock__cnode *n)
{
    return &n->opts;
}

const char *rlock__cnode_name(const rlock__cnode *n)
{
    return n->name;
}

const char *rlock__cnode_host(const rlock__cnode *n)
{
    return n->host;
}

void rlock__cluster_moved(rlock__cluster *cl, int slot, rlock__cnode *n)
{
    if (slot >= 0 && slot < RLOCK__SLOT_COUNT && cl->owner[slot] != n) {
        pthread_mutex_lock(&cl->mu);
        cl->owner[slot] = n;
        pthread_mutex_unlock(&cl->mu);
        changed(cl);
    }
    rlock__cluster_refresh(cl);
}

bool rlock__cluster_owner_addr(rlock__cluster *cl, int slot, char *host,
                               size_t len, int *port)
{
    bool found = false;
    if (cl == NULL || slot < 0 || slot >= RLOCK__SLOT_COUNT || len == 0)
        return false;
    pthread_mutex_lock(&cl->mu);
    if (cl->owner[slot] != NULL) {
        snprintf(host, len, "%s", cl->owner[slot]->host);
        *port = cl->owner[slot]->port;
        found = true;
    }
    pthread_mutex_unlock(&cl->mu);
    return found;
}

void rlock__cluster_close(rlock__cluster *cl)
{
    if (cl == NULL || cl->closed)
        return;
    cl->closed = true;
    ev_timer_stop(cl->loop, &cl->scan);
    ev_timer_stop(cl->loop, &cl->later_timer);
    for (size_t i = 0; i < cl->count; i++)
        for (int k = 0; k < cl->o.connections; k++)
            rlock__conn_close(&cl->nodes[i]->conns[k]);
    while (cl->laters != NULL) {
        later *l = cl->laters;
        cl->laters = l->next;
        l->fn(l->arg, RLOCK_ECLOSED);
        free(l);
    }
}

void rlock__cluster_free(rlock__cluster *cl)
{
    if (cl == NULL)
        return;
    for (size_t i = 0; i < cl->count; i++)
        node_free(cl->nodes[i], cl->o.connections);
    free(cl->nodes);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
}

/* The value of field (with its colon) in INFO text [p, end), copied into
 * out (outlen bytes); returns false when no line has it. */
static bool info_field(const char *p, const char *end, const char *field,
                       char *out, size_t outlen)
{
    size_t flen = strlen(field);
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > flen && memcmp(p, field, flen) == 0) {
            const char *v = p + flen;
            size_t n = (size_t)(eol - v);
            while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == ' '))
                n--;
            snprintf(out, outlen, "%.*s", (int)(n < 64 ? n : 64), v);
            return true;
        }
        p = eol + 1;
    }
    return false;
}

int rlock__cluster_seed_version(rlock__link_sync *s, int64_t deadline_ms,
                                char *name, size_t namelen)
{
    const char *argv[2] = {"INFO", "server"};
    redisReply *r = NULL;
    snprintf(name, namelen, "a server of unknown version");
    if (rlock__link_sync_call(s, 2, argv, NULL, deadline_ms, &r, NULL,
                              NULL) != 0)
        return -1;
    int version = -1;
    char redis[72], valkey[72];
    /* a reply of another type (an error: INFO refused by the ACL) says
     * nothing about the version */
    if (r->type == REDIS_REPLY_STRING) {
        const char *end = r->str + r->len;
        if (info_field(r->str, end, "redis_version:", redis,
                       sizeof(redis))) {
            int major = 0, minor = 0;
            if (sscanf(redis, "%d.%d", &major, &minor) == 2 && major >= 0 &&
                minor >= 0 && minor < 100)
                version = major * 100 + minor;
            if (info_field(r->str, end, "valkey_version:", valkey,
                           sizeof(valkey)))
                snprintf(name, namelen, "Valkey %s", valkey);
            else
                snprintf(name, namelen, "Redis %s", redis);
        }
    }
    rlock__link_reply_free(r);
    return version;
}
