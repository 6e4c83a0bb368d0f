/*
 * core/pubsub_links.c: the subscriber links of the channel table
 * (pubsub.c): which link a channel is on, opening and losing links, the
 * retry timer, sending SUBSCRIBE and UNSUBSCRIBE, and channels following
 * their slot in a cluster or the master after a Sentinel switch. What the
 * server says back on a link (the answers, refusals, pushed messages) is
 * pubsub_answers.c's. The split falls at the link's callbacks: this file
 * decides where a channel's commands go and keeps the links that carry
 * them; that one decides what an answer or a push means for a channel.
 * I/O thread only.
 *
 * The connection is a subscriber rlock__link (src/io/link.h) on the I/O
 * thread's loop, opened when a channel is first wanted and kept while the
 * server keeps it, with the client's address (resolved once, at client
 * creation, on the caller's thread), handshake and TLS. The link answers
 * each SUBSCRIBE and UNSUBSCRIBE through its own callback, tells pushed
 * messages from its confirmations, and survives an error reply.
 *
 * A channel is IDLE (not subscribed, e.g. connection down), SUBSCRIBING,
 * SUBSCRIBED, UNSUBSCRIBING or REFUSED.
 *
 * A closed link (the server gone, killed, or silent for a command timeout
 * while it owes a reply) is reopened with a back-off from at once to 1 s,
 * reset by an accepted subscription; every wanted channel is subscribed
 * again.
 *
 * A cluster (CLUSTER-SENTINEL.md 6.4). A channel is subscribed
 * on the master serving its slot (io/cluster.h), one subscriber link per
 * node, kept in `links` by node (index 0 is the client's own server, a
 * cluster's being made as channels need them); with sharded pub/sub
 * (c->sharded) by SSUBSCRIBE, whose messages and server-sent unsubscribes
 * are the "s" kinds, and in the "both" mode by SUBSCRIBE too. A channel
 * follows its slot: a server's sunsubscribe (a failover or a migration
 * took the slot away), a MOVED answer to SSUBSCRIBE (those two come to
 * pubsub_answers.c), or a table change (the cluster's refresh, every scan
 * interval even with no traffic) that names another master moves it, and
 * every local waiter of it is woken at once to try again, since an unlock
 * may have been published meanwhile (Redisson waits for its next scan, up
 * to 5 s, and wakes nobody). The link to a node that serves no slot any
 * more is closed once no channel is on it (rlock__pubsub_node_unserved,
 * after each table change), so links do not pile up across failovers.
 */
#include "core/pubsub_impl.h"
#include "io/cluster.h"
#include "io/master.h"
#include "proto/cluster.h"

#include <string.h>

/* Makes sure rlock__pubsub_retry() runs within delay_ms. */
void rlock__pubsub_arm_retry_in(rlock__pubsub *ps, int64_t delay_ms)
{
    if (atomic_load(&ps->client->closing) || ps->stopping)
        return;
    if (delay_ms < 0)
        delay_ms = 0;
    int64_t due = rlock__now_ms() + delay_ms;
    if (ps->retry_armed && ps->retry_due_ms <= due)
        return;
    ps->retry_armed = true;
    ps->retry_due_ms = due;
    rlock__timer_stop(ps->retry);
    rlock__timer_start(ps->retry, delay_ms, 0);
}

/* Schedules a retry after a failure, backing off from at once to 1 s
 * between failed attempts, so a waiter is resubscribed within about a
 * second of Redis coming back. */
void rlock__pubsub_arm_retry(rlock__pubsub *ps)
{
    rlock__pubsub_arm_retry_in(ps, ps->backoff_ms);
    ps->backoff_ms = ps->backoff_ms < 50 ? 50 : ps->backoff_ms * 2;
    if (ps->backoff_ms > 1000)
        ps->backoff_ms = 1000;
}

static void on_closed(rlock__link *l, int status, void *arg);

/* The link is up: a first connect, or a reconnect after one was lost. */
static int link_index(const rlock__pubsub *ps, const rlock__link *l)
{
    for (int i = 0; i < ps->nlinks; i++)
        if (ps->links[i].link == l)
            return i;
    return -1;
}

static void on_up(rlock__link *l, int status, void *arg)
{
    rlock__pubsub *ps = arg;
    (void)status;
    int i = link_index(ps, l);
    if (i >= 0 && !ps->links[i].was_up) {
        ps->links[i].was_up = true;
        rlock__log(ps->client, RLOCK_LOG_DEBUG, "subscriber connected");
        return;
    }
    rlock__stats_count(ps->client->stats, RLOCK__STAT_RECONNECTS);
    rlock__log(ps->client, RLOCK_LOG_INFO,
               "subscriber reconnected: subscribing to %zu channel(s) again",
               ps->channels.count);
}

/* The index of the link to node (NULL: the client's server), made if
 * new; -1 when out of memory. */
static int link_to(rlock__pubsub *ps, struct rlock__cnode *node)
{
    for (int i = 0; i < ps->nlinks; i++)
        if (ps->links[i].node == node)
            return i;
    if (ps->nlinks == ps->caplinks) {
        int cap = ps->caplinks ? ps->caplinks * 2 : 4;
        sublink *grown = rlock__realloc(ps->links, sizeof(*grown) * cap);
        if (grown == NULL)
            return -1;
        ps->links = grown;
        ps->caplinks = cap;
    }
    ps->links[ps->nlinks] = (sublink){.node = node};
    return ps->nlinks++;
}

/* The link ch belongs on now: in a cluster, the one to the master serving
 * its slot as the table says; else the client's server's. -1: none (no
 * node serves the slot, or out of memory). */
static int link_for(rlock__pubsub *ps, const channel *ch)
{
    rlock_client *c = ps->client;
    if (c->cluster == NULL)
        return link_to(ps, NULL);
    int slot = rlock__key_slot(ch->name, strlen(ch->name));
    struct rlock__cnode *n = rlock__cluster_node_for(c->cluster, slot);
    return n != NULL ? link_to(ps, n) : -1;
}

/* Opens link i if it is not open. Returns 0 or a negative code (the link
 * could not even start: the caller retries later). */
static int ensure_link(rlock__pubsub *ps, int i)
{
    if (i < 0)
        return RLOCK_ECONN;
    if (ps->links[i].link != NULL)
        return RLOCK_OK;
    rlock_client *c = ps->client;
    if (atomic_load(&c->closing) || ps->stopping)
        return RLOCK_ECLOSED;
    /* the server's (or the node's) address, credentials, database
     * (meaningless for pub/sub, but the server checks it), name and TLS */
    rlock__link_opts o = ps->links[i].node != NULL
                             ? *rlock__cnode_opts(ps->links[i].node)
                             : *c->link_opts;
    /* a subscriber owes nothing while idle; one that has not answered a
     * SUBSCRIBE in a command timeout is taken for gone */
    o.stale_ms = c->cfg.command_timeout_ms;
    rlock__link_cbs cbs = {.on_up = on_up, .on_closed = on_closed,
                           .on_push = rlock__pubsub_on_push, .arg = ps};
    return rlock__link_open(rlock__loop_ev(c->loop), &o, &cbs,
                            &ps->links[i].link);
}

/* Sends verb for ch on link ch->on. Returns 0 or a negative code. */
static int send_verb(rlock__pubsub *ps, channel *ch, const char *verb,
                     rlock__link_reply_cb cb)
{
    int rc = ensure_link(ps, ch->on);
    if (rc == RLOCK_OK) {
        const char *name = ch->name;
        rc = rlock__link_subscribe(ps->links[ch->on].link, verb, 1, &name,
                                   NULL, ps->client->cfg.command_timeout_ms,
                                   cb, ch);
    }
    if (rc == RLOCK_OK)
        ch->inflight++;
    return rc;
}

/* Sends ch's (un)subscribe command(s) as the client's pub/sub mode says:
 * plain, sharded, or both (the sharded last, so that its answer, the last
 * to come, decides the channel's state). */
static int send_verbs(rlock__pubsub *ps, channel *ch, bool subscribing)
{
    rlock_client *c = ps->client;
    rlock__link_reply_cb cb = subscribing
                                  ? rlock__pubsub_on_subscribe_reply
                                  : rlock__pubsub_on_unsubscribe_reply;
    int rc = RLOCK_OK;
    if (c->sub_plain)
        rc = send_verb(ps, ch, subscribing ? "SUBSCRIBE" : "UNSUBSCRIBE", cb);
    if (rc == RLOCK_OK && c->sub_sharded)
        rc = send_verb(ps, ch, subscribing ? "SSUBSCRIBE" : "SUNSUBSCRIBE",
                       cb);
    return rc;
}

/* Sends SUBSCRIBE for ch; or, in a refusal hold-off, refuses it without
 * asking; or, if the link cannot take it, leaves it IDLE for the retry
 * timer. */
void rlock__pubsub_subscribe(rlock__pubsub *ps, channel *ch)
{
    if (!ch->allowed && rlock__now_ms() < ps->refused_until_ms) {
        rlock__pubsub_refuse(ps, ch);
        return;
    }
    ch->on = link_for(ps, ch);
    if (send_verbs(ps, ch, true) == RLOCK_OK) {
        ch->state = CH_SUBSCRIBING;
        return;
    }
    ch->state = CH_IDLE;
    ch->missed = true;
    rlock__pubsub_arm_retry(ps);
}

/* ch has no entry left: leaves the channel on the server if we are in it
 * (or on our way), else forgets ch once nothing is owed. */
void rlock__pubsub_unsubscribe(rlock__pubsub *ps, channel *ch)
{
    if ((ch->state == CH_SUBSCRIBED || ch->state == CH_SUBSCRIBING) &&
        send_verbs(ps, ch, false) == RLOCK_OK) {
        ch->state = CH_UNSUBSCRIBING;
        return;
    }
    ch->state = CH_IDLE;
    rlock__pubsub_drop_if_unused(ps, ch);
}

/* The link failed: ch, unless refused, waits for the timer to subscribe
 * it on a new link. Every answer owed was given (with the failure) before
 * on_closed, so a channel without entries is already gone; nothing is
 * freed here, which lets the table be walked. */
typedef struct reset_walk {
    int link;    /* the link that closed (an index of ps->links) */
    bool wake;   /* every waiter tries at once */
    bool wanted; /* out: a channel is to be subscribed again */
} reset_walk;

static void reset_channel(const char *key, void *value, void *arg)
{
    channel *ch = value;
    reset_walk *w = arg;
    (void)key;
    if (ch->state == CH_REFUSED || ch->on != w->link)
        return;
    ch->state = CH_IDLE;
    if (ch->nentries == 0)
        return;
    ch->missed = true;
    w->wanted = true;
    for (int k = 0; k < ch->nentries; k++)
        rlock__entry_set_subscribed(ch->entries[k], false, w->wake);
}

/* Forgets link i (freed by the caller) and marks every channel on it to
 * be subscribed again, waking every waiter with wake; returns true when any
 * channel is wanted. */
static bool forget_link(rlock__pubsub *ps, int i, bool wake)
{
    if (i < 0)
        return false;
    ps->links[i].link = NULL;
    reset_walk w = {.link = i, .wake = wake, .wanted = false};
    rlock__map_foreach(&ps->channels, reset_channel, &w);
    return w.wanted;
}

static void on_closed(rlock__link *l, int status, void *arg)
{
    rlock__pubsub *ps = arg;
    /* said once per outage: while the server stays away, every failed
     * reconnect would repeat it */
    rlock__log(ps->client, ps->backoff_ms == 0 ? RLOCK_LOG_INFO
                                               : RLOCK_LOG_DEBUG,
               "subscriber connection closed (%s; %s): reconnecting",
               rlock_strerror(status), rlock__link_error(l));
    int i = link_index(ps, l);
    rlock__link_free(l);
    if (ps->client->cluster != NULL)
        rlock__cluster_refresh(ps->client->cluster); /* a node gone? */
    if (forget_link(ps, i, false))
        rlock__pubsub_arm_retry(ps);
    rlock__master_suspect(ps->client->master);
}

/* The master moved (core/follow.c): the subscriber leaves the old one as
 * if its connection were lost and subscribes every wanted channel again on
 * the new one at once. Every waiter tries at once (the holder it waits for
 * may be gone with the old master, and unlock messages may have been
 * missed), and again when its channel is confirmed. I/O thread. */
void rlock__pubsub_move(rlock__pubsub *ps)
{
    if (ps == NULL || ps->stopping)
        return;
    ps->backoff_ms = 0;
    bool wanted = false;
    for (int i = 0; i < ps->nlinks; i++) {
        rlock__link *l = ps->links[i].link;
        /* forgotten first: the free answers what is owed with ECLOSED */
        wanted = forget_link(ps, i, true) || wanted;
        rlock__link_free(l);
    }
    if (wanted)
        rlock__pubsub_arm_retry_in(ps, 0);
}

static void retry_channel(const char *key, void *value, void *arg)
{
    channel *ch = value;
    (void)key;
    if ((ch->state == CH_IDLE || ch->state == CH_REFUSED) &&
        ch->nentries > 0)
        rlock__pubsub_subscribe(arg, ch); /* never frees a channel */
}

/* Timer: subscribes every wanted channel that is IDLE, or REFUSED and due
 * for another try. */
void rlock__pubsub_retry(void *arg)
{
    rlock__pubsub *ps = arg;
    ps->retry_armed = false;
    rlock__map_foreach(&ps->channels, retry_channel, ps);
}

static void on_left(rlock__link *l, int status, struct redisReply *reply,
                    void *arg)
{
    (void)l;
    (void)status;
    (void)reply;
    (void)arg; /* the old node's answer: nothing depends on it */
}

/* A subscribed channel whose slot another master serves now moves there:
 * left on the old node (its answer matters to nobody: the channel's state
 * follows the new node's), its waiters woken, subscribed on the new. */
static void follow_slot(const char *key, void *value, void *arg)
{
    channel *ch = value;
    rlock__pubsub *ps = arg;
    (void)key;
    if (ch->state != CH_SUBSCRIBED || ch->nentries == 0 || ch->on < 0)
        return;
    int now = link_for(ps, ch);
    if (now < 0 || now == ch->on)
        return;
    rlock__link *old = ps->links[ch->on].link;
    const char *name = ch->name;
    if (old != NULL && ps->client->sub_sharded)
        rlock__link_subscribe(old, "SUNSUBSCRIBE", 1, &name, NULL,
                              ps->client->cfg.command_timeout_ms, on_left,
                              NULL);
    if (old != NULL && ps->client->sub_plain)
        rlock__link_subscribe(old, "UNSUBSCRIBE", 1, &name, NULL,
                              ps->client->cfg.command_timeout_ms, on_left,
                              NULL);
    rlock__log(ps->client, RLOCK_LOG_INFO,
               "%s moved to %s: subscribing there, waiters try again",
               ch->name, rlock__cnode_name(ps->links[now].node));
    ch->state = CH_IDLE;
    ch->missed = true;
    for (int i = 0; i < ch->nentries; i++)
        rlock__entry_set_subscribed(ch->entries[i], false, true);
    rlock__pubsub_subscribe(ps, ch); /* never frees a channel */
}

/* The cluster's table changed (io/cluster.h's on_change): every
 * subscribed channel is checked against its slot's master. A plain
 * subscription moves too, though it would hear every node's PUBLISH where
 * it is: left there, it would keep a link open to a node that may serve
 * no slot any more (a demoted master, which Redis 6.2 clusters, lacking
 * sharded pub/sub, leave plain subscribers on), and the sweep closes only
 * links no channel is on. Its waiters try again, as a sharded one's do,
 * for an unlock published while it moves. I/O thread. */
void rlock__pubsub_topology_changed(rlock__pubsub *ps)
{
    if (ps == NULL || ps->stopping)
        return;
    rlock__map_foreach(&ps->channels, follow_slot, ps);
}

/* Whether a channel keeps link w->link open: one on it that is subscribed
 * or on its way in or out, or is owed an answer there. */
typedef struct use_walk {
    int link;
    bool used;
} use_walk;

static void link_use(const char *key, void *value, void *arg)
{
    const channel *ch = value;
    use_walk *w = arg;
    (void)key;
    if (ch->on == w->link &&
        (ch->inflight > 0 ||
         (ch->state != CH_IDLE && ch->state != CH_REFUSED)))
        w->used = true;
}

/* The cluster's node n serves no slot (io/cluster.h's on_sweep): its
 * subscriber link is closed unless a channel is still on it (one that
 * could not move: its slot unserved, or its subscription unanswered).
 * What it still owes (a channel's leaving, after the channel moved) is
 * answered with RLOCK_ECLOSED, which nobody waits for. The link's entry
 * stays, with nothing open, for a channel that comes back to n. Returns 1
 * if a link was closed, else 0. I/O thread, outside the link's callbacks. */
int rlock__pubsub_node_unserved(rlock__pubsub *ps, struct rlock__cnode *n)
{
    if (ps == NULL || ps->stopping || n == NULL)
        return 0;
    for (int i = 0; i < ps->nlinks; i++) {
        if (ps->links[i].node != n || ps->links[i].link == NULL)
            continue;
        use_walk w = {.link = i, .used = false};
        rlock__map_foreach(&ps->channels, link_use, &w);
        if (w.used)
            return 0;
        rlock__link *l = ps->links[i].link;
        ps->links[i].link = NULL;
        ps->links[i].was_up = false;
        rlock__link_free(l);
        return 1;
    }
    return 0;
}
