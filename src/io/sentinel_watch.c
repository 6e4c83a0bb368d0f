/*
 * sentinel_watch.c: following the master through Redis Sentinel once
 * discovery (sentinel.c) has found it: one subscriber link for
 * +switch-master and one poll link, on the loop's thread.
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
#include "io/sentinel_impl.h"
#include "proto/proto.h"

#include "rlock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    s->sub_i = rlock__sentinel_next_node(s, s->sub_i);
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
        if (rlock__sentinel_is_noauth(reply) && !s->use_auth && s->password != NULL)
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
    rlock__sentinel_node_opts(s, s->sub_i, s->command_timeout_ms, &o);
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
            s->poll_i = rlock__sentinel_next_node(s, s->poll_i);
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
        q->noauth = rlock__sentinel_is_noauth(reply);
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
        rlock__sentinel_node_opts(s, s->poll_i, s->command_timeout_ms, &o);
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
    s->poll_i = rlock__sentinel_next_node(s, s->poll_i);
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
