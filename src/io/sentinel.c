/*
 * sentinel.c: finding the master through Redis Sentinel (discovery), and
 * the state the watcher (sentinel_watch.c) shares with it; see sentinel.h
 * for the why of each part.
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
 * The watcher's links and its callbacks: sentinel_watch.c.
 */
#include "io/sentinel_impl.h"
#include "proto/proto.h"

#include "rlock.h"

#include <ctype.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ helpers */

bool rlock__sentinel_is_noauth(const redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           strncmp(r->str, "NOAUTH", 6) == 0;
}

void rlock__sentinel_node_opts(const rlock__sentinel *s, int i,
                               int64_t stale_ms, rlock__link_opts *o)
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

int rlock__sentinel_next_node(const rlock__sentinel *s, int i)
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
    s->first = rlock__sentinel_next_node(s, s->n - 1);
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
    if (error && (rlock__sentinel_is_noauth(r) || strncmp(r->str, "NOPERM", 6) == 0))
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
        rlock__sentinel_node_opts(s, i, 0, &o);
        int rc = rlock__link_sync_open(&o, &l, why, sizeof(why));
        if (rc != 0) {
            say(err, errlen, "sentinel %s:%d: %s", nd->host, nd->port, why);
            return rc;
        }
        redisReply *r = NULL;
        rc = ask_sync(l, s->command_timeout_ms, 3, where, &r);
        if (rc == 0 && rlock__sentinel_is_noauth(r) && !s->use_auth && s->password != NULL) {
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

