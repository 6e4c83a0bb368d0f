/*
 * sentinel.c: finding the master through Redis Sentinel, and following it
 * (see sentinel.h for the why of each part).
 *
 * Design notes.
 *
 * What it owns: the sentinels (names, resolved addresses), the credentials
 * for those that ask, what it has learnt (the master's address, the config
 * epoch floor, whether sentinels want AUTH), and while watching: one
 * subscriber link (sub) and one command link (poll), each pointed at one
 * sentinel, and two timers.
 *
 * Threads. Discovery runs on the caller's thread before the watcher
 * starts; from rlock__sentinel_watch() on, everything runs on the loop's
 * thread. Nothing here locks: the two never overlap (sentinel.h says so).
 *
 * The watcher's links.
 *   - sub: SUBSCRIBE +switch-master once up. Liveness: a PING on it at each
 *     poll, and stale detection on the link, so that a sentinel gone silent
 *     is left within a command timeout. When it fails it is freed and the
 *     next sentinel is tried after a short pause; once every sentinel
 *     failed in a row, after a scan interval.
 *   - poll: every scan interval (or at once for check_now), GET-MASTER-
 *     ADDR-BY-NAME and SENTINEL MASTER pipelined: the address from the
 *     first, the config epoch from the second. A failed or refused poll
 *     moves to the next sentinel and polls again soon.
 *   - An answer of NOAUTH on either marks sentinels as wanting AUTH and
 *     reopens the link with the credentials.
 *
 * Callbacks run from link callbacks or timers; the user's callback may
 * call rlock__sentinel_unwatch() (the links are freed from inside their own
 * callbacks, which link.c allows), so every path re-checks `watching`
 * after calling out.
 */
#include "io/sentinel.h"
#include "io/io.h"
#include "proto/proto.h"

#include "rlock.h"

#include <ctype.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A sentinel tried again this soon after a failure, while others remain. */
#define RETRY_SOON_MS 50

typedef struct node {
    char *host;
    int port;
    rlock__link_addr addr;
    bool resolved;
} node;

/* One poll in flight: the two pipelined answers meet here. */
typedef struct poll_req {
    rlock__sentinel *s;
    rlock__link *link; /* the link it went out on */
    int answers;       /* replies in, of 2 */
    int addr_found;    /* 1 address, 0 nil, -1 unusable */
    rlock__sentinel_master addr;
    int64_t epoch;
    int status;      /* the first failure, or 0 */
    bool noauth;     /* a sentinel asked for AUTH */
    bool abandoned;  /* the watcher stopped or moved on */
    char why[160];
} poll_req;

struct rlock__sentinel {
    char *master_name;
    node *nodes;
    int n;
    char *user;
    char *password;
    struct rlock__tls_ctx *tls;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t scan_interval_ms;
    bool use_auth; /* a sentinel asked for AUTH */
    int first;     /* the sentinel discovery asks first */
    bool known;    /* current holds the master */
    rlock__sentinel_master current;
    int64_t epoch; /* answers older than this are stale; -1: no guard */

    /* the watcher (loop thread only) */
    struct ev_loop *loop;
    bool watching;
    rlock__sentinel_master_cb on_master;
    rlock__sentinel_note_cb note;
    void *arg;
    rlock__link *sub;
    int sub_i;
    int sub_failures; /* in a row */
    ev_timer sub_timer;
    rlock__link *poll;
    int poll_i;
    int poll_failures; /* in a row */
    ev_timer poll_timer;
    poll_req *asking; /* the poll in flight, or NULL */
    bool check_wanted; /* a check_now waits for the next answer */
    bool check_again;  /* one was asked for while a poll ran */
};

/* ------------------------------------------------------------ helpers */

static bool is_noauth(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, "NOAUTH", 6) == 0;
}

/* Fills o to greet sentinel i. */
static void node_opts(const rlock__sentinel *s, int i, int64_t stale_ms,
                      rlock__link_opts *o)
{
    rlock__link_opts_init(o);
    o->addr = s->nodes[i].addr;
    o->host = s->nodes[i].host;
    if (s->use_auth && s->password != NULL) {
        o->user = s->user;
        o->password = s->password;
    }
    o->connect_timeout_ms = s->connect_timeout_ms;
    o->stale_ms = stale_ms;
    o->tls = s->tls;
}

/* The next resolved sentinel after i (i itself when it is the only one). */
static int next_node(const rlock__sentinel *s, int i)
{
    for (int k = 1; k <= s->n; k++) {
        int j = (i + k) % s->n;
        if (s->nodes[j].resolved)
            return j;
    }
    return i;
}

static void say(char *err, size_t errlen, const char *fmt, const char *host,
                int port, const char *detail)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, fmt, host, port, detail);
}

/* ------------------------------------------------------------ parsing */

bool rlock__sentinel_parse_switch(const char *payload, size_t len,
                                  const char *name,
                                  rlock__sentinel_master *out)
{
    /* five words; the name is the first and has no spaces */
    const char *w[5];
    size_t wl[5];
    size_t i = 0;
    int k = 0;
    while (i < len && k < 5) {
        while (i < len && payload[i] == ' ')
            i++;
        if (i == len)
            break;
        w[k] = payload + i;
        while (i < len && payload[i] != ' ')
            i++;
        wl[k] = (size_t)(payload + i - w[k]);
        k++;
    }
    while (i < len && payload[i] == ' ')
        i++;
    if (k != 5 || i != len || wl[0] != strlen(name) ||
        memcmp(w[0], name, wl[0]) != 0 || wl[3] >= sizeof(out->host) ||
        wl[4] == 0 || wl[4] > 5)
        return false;
    int port = 0;
    for (size_t j = 0; j < wl[4]; j++) {
        if (!isdigit((unsigned char)w[4][j]))
            return false;
        port = port * 10 + (w[4][j] - '0');
    }
    if (port < 1 || port > 65535)
        return false;
    memcpy(out->host, w[3], wl[3]);
    out->host[wl[3]] = '\0';
    out->port = port;
    return true;
}

int rlock__sentinel_parse_addr(const redisReply *r,
                               rlock__sentinel_master *out)
{
    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[0]->len == 0 ||
        r->element[0]->len >= sizeof(out->host) ||
        strlen(r->element[0]->str) != r->element[0]->len)
        return -1;
    char *end = NULL;
    long port = strtol(r->element[1]->str, &end, 10);
    if (end == r->element[1]->str || *end != '\0' || port < 1 ||
        port > 65535)
        return -1;
    memcpy(out->host, r->element[0]->str, r->element[0]->len + 1);
    out->port = (int)port;
    return 1;
}

int64_t rlock__sentinel_parse_epoch(const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return -1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            strcmp(k->str, "config-epoch") != 0)
            continue;
        char *end = NULL;
        long long e = strtoll(v->str, &end, 10);
        return end != v->str && *end == '\0' && e >= 0 ? (int64_t)e : -1;
    }
    return -1;
}

/* ------------------------------------------------------------ new/free */

static char *dup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *d = rlock__strdup(s);
    if (d == NULL)
        *failed = true;
    return d;
}

int rlock__sentinel_new(const rlock__sentinel_opts *o, rlock__sentinel **out)
{
    if (out != NULL)
        *out = NULL;
    if (o == NULL || out == NULL || o->master_name == NULL ||
        *o->master_name == '\0' || o->n < 1 || o->hosts == NULL ||
        o->ports == NULL || o->connect_timeout_ms <= 0 ||
        o->command_timeout_ms <= 0 || o->scan_interval_ms <= 0 ||
        (o->user != NULL && o->password == NULL))
        return RLOCK_EINVAL;
    rlock__sentinel *s = rlock__calloc(1, sizeof(*s));
    if (s == NULL)
        return RLOCK_ENOMEM;
    bool failed = false;
    s->nodes = rlock__calloc((size_t)o->n, sizeof(*s->nodes));
    s->master_name = dup_or_null(o->master_name, &failed);
    s->user = dup_or_null(o->user, &failed);
    s->password = dup_or_null(o->password, &failed);
    int rc = s->nodes == NULL || failed ? RLOCK_ENOMEM : RLOCK_OK;
    int resolved = 0;
    for (int i = 0; rc == 0 && i < o->n; i++) {
        s->n = i + 1;
        s->nodes[i].port = o->ports[i];
        s->nodes[i].host = dup_or_null(o->hosts[i], &failed);
        if (failed || s->nodes[i].host == NULL) {
            rc = failed ? RLOCK_ENOMEM : RLOCK_EINVAL;
            break;
        }
        s->nodes[i].resolved =
            rlock__link_resolve(o->hosts[i], o->ports[i], NULL,
                                &s->nodes[i].addr) == 0;
        resolved += s->nodes[i].resolved;
    }
    if (rc == 0 && resolved == 0)
        rc = RLOCK_ECONN;
    if (rc != 0) {
        rlock__sentinel_free(s);
        return rc;
    }
    s->tls = o->tls;
    s->connect_timeout_ms = o->connect_timeout_ms;
    s->command_timeout_ms = o->command_timeout_ms;
    s->scan_interval_ms = o->scan_interval_ms;
    s->epoch = -1;
    s->first = next_node(s, s->n - 1);
    *out = s;
    return RLOCK_OK;
}

void rlock__sentinel_free(rlock__sentinel *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->nodes[i].host);
    free(s->nodes);
    free(s->master_name);
    free(s->user);
    if (s->password != NULL) {
        explicit_bzero(s->password, strlen(s->password));
        free(s->password);
    }
    free(s);
}

/* ------------------------------------------------------------ discovery */

/* One question to an open blocking link; *out is the reply or NULL. */
static int ask_sync(rlock__link_sync *l, int64_t timeout_ms, int argc,
                    const char **argv, redisReply **out)
{
    *out = NULL;
    return rlock__link_sync_call(l, argc, argv, NULL,
                                 rlock__io_now_ms() + timeout_ms, out, NULL,
                                 NULL);
}

/* What an answer to GET-MASTER-ADDR-BY-NAME means: 0 with *m set, or a
 * code with err set. */
static int read_where(const rlock__sentinel *s, const node *nd,
                      const redisReply *r, rlock__sentinel_master *m,
                      char *err, size_t errlen)
{
    int found = rlock__sentinel_parse_addr(r, m);
    if (found == 1)
        return RLOCK_OK;
    if (found == 0) {
        say(err, errlen, "sentinel %s:%d knows no master named %s", nd->host,
            nd->port, s->master_name);
        return RLOCK_ECONN;
    }
    bool error = r->type == REDIS_REPLY_ERROR;
    say(err, errlen, "sentinel %s:%d: %s", nd->host, nd->port,
        error ? r->str : "unexpected answer to GET-MASTER-ADDR-BY-NAME");
    if (error && (is_noauth(r) || strncmp(r->str, "NOPERM", 6) == 0))
        return RLOCK_EAUTH;
    return error ? RLOCK_ESERVER : RLOCK_EPROTO;
}

/* Asks sentinel i where the master is, and its config epoch (-1 when it
 * will not say). Returns 0 with *m and *epoch, or a code with err set. */
static int ask_sentinel(rlock__sentinel *s, int i, rlock__sentinel_master *m,
                        int64_t *epoch, char *err, size_t errlen)
{
    const node *nd = &s->nodes[i];
    const char *where[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                           s->master_name};
    const char *master[] = {"SENTINEL", "MASTER", s->master_name};
    for (;;) {
        rlock__link_opts o;
        rlock__link_sync *l = NULL;
        char why[160] = "";
        node_opts(s, i, 0, &o);
        int rc = rlock__link_sync_open(&o, &l, why, sizeof(why));
        if (rc != 0) {
            say(err, errlen, "sentinel %s:%d: %s", nd->host, nd->port, why);
            return rc;
        }
        redisReply *r = NULL;
        rc = ask_sync(l, s->command_timeout_ms, 3, where, &r);
        if (rc == 0 && is_noauth(r) && !s->use_auth && s->password != NULL) {
            s->use_auth = true; /* greet it again, with AUTH */
            freeReplyObject(r);
            rlock__link_sync_free(l);
            continue;
        }
        if (rc != 0)
            say(err, errlen, "sentinel %s:%d: %s", nd->host, nd->port,
                rc == RLOCK_ETIMEDOUT ? "no answer in time"
                                      : "connection lost");
        else
            rc = read_where(s, nd, r, m, err, errlen);
        freeReplyObject(r);
        if (rc == 0) {
            r = NULL;
            *epoch = ask_sync(l, s->command_timeout_ms, 3, master, &r) == 0
                         ? rlock__sentinel_parse_epoch(r)
                         : -1;
            freeReplyObject(r);
        }
        rlock__link_sync_free(l);
        return rc;
    }
}

/* Connects to the master a sentinel named and asks ROLE. Returns 0 when it
 * says master (or may not be asked: a user without +role), else a code
 * with err set; *addr is its resolved address. */
static int check_master(const rlock__sentinel *s,
                        const rlock__link_opts *data,
                        const rlock__sentinel_master *m,
                        rlock__link_addr *addr, char *err, size_t errlen)
{
    char why[160] = "";
    if (rlock__link_resolve(m->host, m->port, NULL, addr) != 0) {
        say(err, errlen, "master %s:%d: %s", m->host, m->port,
            "the name does not resolve");
        return RLOCK_ECONN;
    }
    rlock__link_opts o = *data;
    o.addr = *addr;
    o.host = m->host;
    rlock__link_sync *l = NULL;
    int rc = rlock__link_sync_open(&o, &l, why, sizeof(why));
    if (rc != 0) {
        say(err, errlen, "master %s:%d: %s", m->host, m->port, why);
        return rc;
    }
    const char *role[] = {"ROLE"};
    redisReply *r = NULL;
    rc = ask_sync(l, s->command_timeout_ms, 1, role, &r);
    if (rc != 0) {
        say(err, errlen, "master %s:%d: %s", m->host, m->port,
            "no answer to ROLE");
        rc = RLOCK_ECONN;
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* a user without +role: the sentinel's word stands */
        if (strncmp(r->str, "NOPERM", 6) != 0) {
            say(err, errlen, "master %s:%d: ROLE: %s", m->host, m->port,
                r->str);
            rc = RLOCK_ECONN;
        }
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
               r->element[0]->type != REDIS_REPLY_STRING ||
               strcmp(r->element[0]->str, "master") != 0) {
        say(err, errlen, "%s:%d, which a sentinel named, is %s", m->host,
            m->port, "not a master (ROLE)");
        rc = RLOCK_ECONN;
    }
    freeReplyObject(r);
    rlock__link_sync_free(l);
    return rc;
}

/* One sentinel's answer during discovery. */
typedef struct answer {
    int node;
    rlock__sentinel_master m;
    int64_t epoch;
} answer;

int rlock__sentinel_discover(rlock__sentinel *s, const rlock__link_opts *data,
                             rlock__sentinel_master *out,
                             rlock__link_addr *addr, char *err,
                             size_t errlen)
{
    if (s == NULL || data == NULL || out == NULL || addr == NULL ||
        s->watching)
        return RLOCK_EINVAL;
    answer *got = rlock__calloc((size_t)s->n, sizeof(*got));
    if (got == NULL)
        return RLOCK_ENOMEM;
    /* every sentinel is asked: the newest configuration wins, so that one
     * that has not heard of a failover yet cannot send us to a demoted
     * master (which answers ROLE as a master for a while) */
    int worst = RLOCK_ECONN, n = 0, rc = RLOCK_OK;
    for (int k = 0, i = s->first; k < s->n; k++, i = (i + 1) % s->n) {
        if (!s->nodes[i].resolved)
            continue;
        got[n].node = i;
        rc = ask_sentinel(s, i, &got[n].m, &got[n].epoch, err, errlen);
        if (rc == 0)
            n++;
        else if (rc == RLOCK_ENOMEM)
            goto out;
        else if (rc == RLOCK_EAUTH || rc == RLOCK_ETLS)
            worst = rc; /* unreachable sentinels say less */
    }
    rc = worst;
    /* newest first; among equals, the order asked */
    for (int tried = 0; tried < n; tried++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (got[j].node >= 0 &&
                (best < 0 || got[j].epoch > got[best].epoch))
                best = j;
        answer a = got[best];
        got[best].node = -1;
        rc = check_master(s, data, &a.m, addr, err, errlen);
        if (rc == 0) {
            s->first = a.node;
            s->current = a.m;
            s->known = true;
            s->epoch = a.epoch;
            *out = a.m;
            goto out;
        }
        /* the master's own refusals are the same whoever named it */
        if (rc == RLOCK_EAUTH || rc == RLOCK_ETLS || rc == RLOCK_ENOMEM)
            goto out;
    }
    if (n > 0)
        rc = RLOCK_ECONN;
out:
    free(got);
    return rc;
}

/* ------------------------------------------------------------ watcher */

static void note(rlock__sentinel *s, int level, const char *fmt,
                 const char *host, int port, const char *detail)
{
    if (s->note == NULL)
        return;
    char line[320];
    snprintf(line, sizeof(line), fmt, host, port, detail);
    s->note(level, line, s->arg);
}

/* What a sentinel said: the master is at m, with config epoch epoch (-1:
 * unknown; switched: it comes from +switch-master). Acts on a new address
 * unless the answer is older than the newest acted on; returns true if it
 * did (the callback ran). */
static bool learn(rlock__sentinel *s, const rlock__sentinel_master *m,
                  int64_t epoch, bool switched)
{
    bool same = s->known && s->current.port == m->port &&
                strcmp(s->current.host, m->host) == 0;
    if (!switched && s->epoch >= 0 && epoch >= 0 && epoch < s->epoch) {
        if (!same)
            note(s, RLOCK_LOG_DEBUG,
                 "sentinel: ignored %s:%d, from a sentinel behind the "
                 "others (%s)",
                 m->host, m->port, "older config epoch");
        return false;
    }
    if (same) {
        if (epoch > s->epoch)
            s->epoch = epoch;
        return false;
    }
    /* a failover raises the epoch by at least one */
    if (s->epoch >= 0)
        s->epoch = epoch > s->epoch + 1 ? epoch : s->epoch + 1;
    s->current = *m;
    s->known = true;
    s->check_wanted = false;
    note(s, RLOCK_LOG_DEBUG, "sentinel: the master is now %s:%d (%s)",
         m->host, m->port, switched ? "+switch-master" : "poll");
    s->on_master(m->host, m->port, true, s->arg);
    return true;
}

/* ---- the subscriber link ---- */

static void sub_open(rlock__sentinel *s);

static void sub_failed(rlock__sentinel *s, const char *why)
{
    if (s->sub != NULL) {
        rlock__link_free(s->sub);
        s->sub = NULL;
    }
    note(s, RLOCK_LOG_DEBUG, "sentinel: %s:%d left for +switch-master: %s",
         s->nodes[s->sub_i].host, s->nodes[s->sub_i].port, why);
    s->sub_i = next_node(s, s->sub_i);
    s->sub_failures++;
    int64_t delay =
        s->sub_failures < s->n ? RETRY_SOON_MS : s->scan_interval_ms;
    if (s->sub_failures >= s->n)
        s->sub_failures = 0;
    ev_timer_set(&s->sub_timer, (double)delay / 1000.0, 0.0);
    ev_timer_start(s->loop, &s->sub_timer);
}

static void on_sub_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    sub_open(t->data);
}

static void on_subscribed(rlock__link *l, int status, redisReply *reply,
                          void *arg)
{
    rlock__sentinel *s = arg;
    (void)l;
    if (status != 0 || !s->watching)
        return; /* a failed link: on_sub_closed follows */
    if (reply != NULL) { /* refused */
        if (is_noauth(reply) && !s->use_auth && s->password != NULL)
            s->use_auth = true;
        sub_failed(s, reply->str);
        return;
    }
    s->sub_failures = 0;
}

static void on_sub_push(rlock__link *l, const rlock__push *p, void *arg)
{
    rlock__sentinel *s = arg;
    rlock__sentinel_master m;
    (void)l;
    if (p->kind == RLOCK__PUSH_MESSAGE && p->channel_len == 14 &&
        memcmp(p->channel, "+switch-master", 14) == 0 &&
        rlock__sentinel_parse_switch(p->payload, p->payload_len,
                                     s->master_name, &m))
        learn(s, &m, -1, true);
    else if (p->kind == RLOCK__PUSH_UNSUBSCRIBED)
        sub_failed(s, "unsubscribed by the server");
}

static void on_sub_closed(rlock__link *l, int status, void *arg)
{
    rlock__sentinel *s = arg;
    (void)status;
    if (l == s->sub)
        sub_failed(s, rlock__link_error(l)[0] ? rlock__link_error(l)
                                              : "connection lost");
}

static void on_sub_up(rlock__link *l, int status, void *arg)
{
    rlock__sentinel *s = arg;
    const char *chan[] = {"+switch-master"};
    (void)status;
    int rc = rlock__link_subscribe(l, "SUBSCRIBE", 1, chan, NULL,
                                   s->command_timeout_ms, on_subscribed, s);
    if (rc != 0)
        sub_failed(s, rlock_strerror(rc));
}

static void sub_open(rlock__sentinel *s)
{
    rlock__link_opts o;
    rlock__link_cbs cbs = {.on_up = on_sub_up,
                           .on_closed = on_sub_closed,
                           .on_push = on_sub_push,
                           .arg = s};
    node_opts(s, s->sub_i, s->command_timeout_ms, &o);
    int rc = rlock__link_open(s->loop, &o, &cbs, &s->sub);
    if (rc != 0) {
        s->sub = NULL;
        sub_failed(s, rlock_strerror(rc));
    }
}

/* A PING on the subscriber link: a sentinel gone silent is left (the link's
 * stale detection closes it; a late answer closes it here). */
static void on_sub_pong(rlock__link *l, int status, redisReply *reply,
                        void *arg)
{
    rlock__sentinel *s = arg;
    (void)reply;
    if (status == RLOCK_ETIMEDOUT && s->watching && l == s->sub)
        sub_failed(s, "no answer to PING");
}

/* ---- the poll ---- */

static void poll_start(rlock__sentinel *s);

static void schedule_poll(rlock__sentinel *s, int64_t delay_ms)
{
    ev_timer_stop(s->loop, &s->poll_timer);
    ev_timer_set(&s->poll_timer, (double)delay_ms / 1000.0, 0.0);
    ev_timer_start(s->loop, &s->poll_timer);
}

static void poll_link_drop(rlock__sentinel *s)
{
    if (s->poll != NULL) {
        rlock__link_free(s->poll);
        s->poll = NULL;
    }
}

/* Both answers of the poll are in (or the poll failed): acts on them. */
static void poll_done(rlock__sentinel *s, poll_req *q)
{
    s->asking = NULL;
    const node *nd = &s->nodes[s->poll_i];
    bool failed = q->status != 0 || q->addr_found != 1;
    if (failed) {
        if (q->noauth && !s->use_auth && s->password != NULL)
            s->use_auth = true; /* reopen with AUTH, same sentinel */
        else {
            note(s, RLOCK_LOG_DEBUG, "sentinel: %s:%d, asked where the "
                 "master is: %s", nd->host, nd->port,
                 q->why[0] ? q->why : rlock_strerror(q->status));
            s->poll_i = next_node(s, s->poll_i);
            s->poll_failures++;
        }
        poll_link_drop(s);
    } else {
        s->poll_failures = 0;
        bool wanted = s->check_wanted;
        s->check_wanted = false;
        bool moved = learn(s, &q->addr, q->epoch, false);
        /* a check that found nothing new still answers its asker */
        if (s->watching && wanted && !moved)
            s->on_master(s->current.host, s->current.port, false, s->arg);
        if (!s->watching)
            return;
    }
    if (s->check_again) {
        s->check_again = false;
        s->check_wanted = true;
        schedule_poll(s, 0);
    } else if (failed && s->poll_failures < s->n) {
        schedule_poll(s, RETRY_SOON_MS);
    } else {
        if (failed)
            s->poll_failures = 0;
        schedule_poll(s, s->scan_interval_ms);
    }
}

static void on_poll_addr(rlock__link *l, int status, redisReply *reply,
                         void *arg)
{
    poll_req *q = arg;
    (void)l;
    if (status != 0 && q->status == 0)
        q->status = status;
    if (status == 0) {
        q->addr_found = rlock__sentinel_parse_addr(reply, &q->addr);
        q->noauth = is_noauth(reply);
        if (q->addr_found == 0)
            snprintf(q->why, sizeof(q->why), "knows no master named %s",
                     q->s->master_name);
        else if (q->addr_found < 0 && reply->type == REDIS_REPLY_ERROR)
            snprintf(q->why, sizeof(q->why), "%s", reply->str);
    }
}

static void on_poll_epoch(rlock__link *l, int status, redisReply *reply,
                          void *arg)
{
    poll_req *q = arg;
    (void)l;
    if (status != 0 && q->status == 0)
        q->status = status;
    q->epoch = status == 0 ? rlock__sentinel_parse_epoch(reply) : -1;
    if (!q->abandoned && q->s->asking == q)
        poll_done(q->s, q);
    free(q);
}

/* An idle poll link that failed (a sentinel restarted) is reopened by the
 * next poll; one that failed while asking is the poll's to handle. */
static void on_poll_closed(rlock__link *l, int status, void *arg)
{
    rlock__sentinel *s = arg;
    (void)status;
    if (l == s->poll && s->asking == NULL)
        poll_link_drop(s);
}

static void poll_start(rlock__sentinel *s)
{
    if (s->asking != NULL)
        return;
    /* the subscriber's liveness rides on the poll's rhythm */
    if (s->sub != NULL && rlock__link_is_up(s->sub) &&
        rlock__link_pending(s->sub) == 0) {
        const char *ping[] = {"PING"};
        rlock__link_send(s->sub, 1, ping, NULL, s->command_timeout_ms,
                         on_sub_pong, NULL, s);
    }
    if (s->poll == NULL) {
        rlock__link_opts o;
        rlock__link_cbs cbs = {.on_closed = on_poll_closed, .arg = s};
        node_opts(s, s->poll_i, s->command_timeout_ms, &o);
        if (rlock__link_open(s->loop, &o, &cbs, &s->poll) != 0) {
            s->poll = NULL;
            schedule_poll(s, s->scan_interval_ms);
            return;
        }
    }
    poll_req *q = rlock__calloc(1, sizeof(*q));
    if (q == NULL) {
        schedule_poll(s, s->scan_interval_ms);
        return;
    }
    q->s = s;
    q->link = s->poll;
    q->addr_found = -1;
    q->epoch = -1;
    const char *where[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                           s->master_name};
    const char *master[] = {"SENTINEL", "MASTER", s->master_name};
    /* behind the handshake when the link is new */
    int64_t budget = s->connect_timeout_ms + s->command_timeout_ms;
    int rc = rlock__link_send(s->poll, 3, where, NULL, budget, on_poll_addr,
                              NULL, q);
    if (rc == 0) {
        s->asking = q;
        rc = rlock__link_send(s->poll, 3, master, NULL, budget, on_poll_epoch,
                              NULL, q);
        if (rc != 0) {
            /* the first is out: it completes when the link goes */
            q->abandoned = true;
            s->asking = NULL;
            poll_link_drop(s);
            free(q);
            schedule_poll(s, RETRY_SOON_MS);
        }
        return;
    }
    free(q);
    poll_link_drop(s);
    s->poll_i = next_node(s, s->poll_i);
    schedule_poll(s, RETRY_SOON_MS);
}

static void on_poll_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    poll_start(t->data);
}

int rlock__sentinel_watch(rlock__sentinel *s, struct ev_loop *loop,
                          rlock__sentinel_master_cb master,
                          rlock__sentinel_note_cb note_cb, void *arg)
{
    if (s == NULL || loop == NULL || master == NULL || s->watching ||
        !s->known)
        return RLOCK_EINVAL;
    s->loop = loop;
    s->on_master = master;
    s->note = note_cb;
    s->arg = arg;
    s->watching = true;
    s->sub_i = s->first;
    s->poll_i = s->first;
    ev_timer_init(&s->sub_timer, on_sub_timer, 0.0, 0.0);
    s->sub_timer.data = s;
    ev_timer_init(&s->poll_timer, on_poll_timer, 0.0, 0.0);
    s->poll_timer.data = s;
    sub_open(s);
    schedule_poll(s, s->scan_interval_ms);
    return RLOCK_OK;
}

void rlock__sentinel_check_now(rlock__sentinel *s)
{
    if (s == NULL || !s->watching)
        return;
    if (s->asking != NULL) {
        s->check_again = true;
        return;
    }
    s->check_wanted = true;
    schedule_poll(s, 0);
}

void rlock__sentinel_unwatch(rlock__sentinel *s)
{
    if (s == NULL || !s->watching)
        return;
    s->watching = false;
    ev_timer_stop(s->loop, &s->sub_timer);
    ev_timer_stop(s->loop, &s->poll_timer);
    if (s->asking != NULL) {
        s->asking->abandoned = true; /* freed by its own callback below */
        s->asking = NULL;
    }
    if (s->sub != NULL) {
        rlock__link_free(s->sub);
        s->sub = NULL;
    }
    poll_link_drop(s);
    s->loop = NULL;
}
