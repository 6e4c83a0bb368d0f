/*
 * core/pubsub_answers.c: what the server says on a subscriber link
 * (pubsub_links.c keeps the links and sends the commands): the answers to
 * SUBSCRIBE and UNSUBSCRIBE, refusals and their hold-off, a cluster's
 * MOVED answer to SSUBSCRIBE, unlock messages and the server's own
 * unsubscribes. Split from pubsub_links.c at the link's callbacks:
 * everything here is called by a link (or, for a refusal known before any
 * SUBSCRIBE, by acl.c) and turns what came into a channel's state and its
 * waiters' wake-ups. I/O thread only.
 *
 * Redis answers in order, so a SUBSCRIBE may follow an UNSUBSCRIBE of the
 * same channel at once: a channel's state is that of the last command sent
 * for it, and only that command's answer (the one leaving `inflight` at
 * zero) changes it. A channel lives while it has entries or answers owed.
 *
 * Refusals. An error reply to a SUBSCRIBE (a Redis 7 ACL user without the
 * channel, a renamed command) refuses that channel alone; the connection
 * and the other channels stay. Its waiters stop waiting for a subscription
 * and re-check at the configured interval, the log hook gets one warning
 * per client, and no SUBSCRIBE for a channel the server has not accepted
 * before goes out for a hold-off (10 s, doubling to 5 min), when the timer
 * tries the refused channels again.
 *
 * The server's own unsubscribe (a Redis Cluster failover sends one) ends
 * the channel's subscription without our asking: messages may have been
 * missed, so its waiters are woken to try at once, and it is subscribed
 * again.
 *
 * Messages (facts sheet 1.4): "0" wakes one waiter per entry, "1" wakes all.
 * When the connection drops, messages published meanwhile are lost, so on
 * resubscription every waiter is woken to re-try its acquire.
 */
#include "core/pubsub_impl.h"
#include "io/cluster.h"
#include "proto/cluster.h"

#include <stdlib.h>
#include <string.h>

/* Marks ch REFUSED: its waiters re-check alone until the hold-off ends,
 * when the retry timer tries it again. */
void rlock__pubsub_refuse(rlock__pubsub *ps, channel *ch)
{
    ch->state = CH_REFUSED;
    ch->missed = true;
    ch->allowed = false;
    for (int i = 0; i < ch->nentries; i++)
        rlock__entry_set_unheard(ch->entries[i]);
    rlock__pubsub_arm_retry_in(ps, ps->refused_until_ms - rlock__now_ms());
}

/* The server refused ch's SUBSCRIBE with the error text why: starts (or
 * lengthens) the hold-off and warns, once per client. */
static void note_refusal(rlock__pubsub *ps, const channel *ch, const char *why)
{
    ps->refused_until_ms = rlock__now_ms() + ps->holdoff_ms;
    int64_t holdoff = ps->holdoff_ms;
    ps->holdoff_ms = holdoff * 2 > RLOCK__REFUSAL_HOLDOFF_MAX_MS
                         ? RLOCK__REFUSAL_HOLDOFF_MAX_MS
                         : holdoff * 2;
    int level = ps->warned ? RLOCK_LOG_INFO : RLOCK_LOG_WARN;
    ps->warned = true;
    rlock__log(ps->client, level,
               "SUBSCRIBE %s refused by the server (%s): waiters re-check "
               "every %lld ms instead of being woken; new channels are "
               "tried again in %lld ms (grant &redisson_lock__channel:* and "
               "&redisson_rwlock:*, as docs/acl.md says)",
               ch->name, why, (long long)ps->client->cfg.recheck_interval_ms,
               (long long)holdoff);
}

/* Connecting found that the server will refuse SUBSCRIBE on lock channels
 * and warned about it: no channel is tried before a first hold-off, and
 * the first refusal is not warned about again. I/O thread or before the
 * subscriber is used. */
void rlock__pubsub_assume_refused(rlock__pubsub *ps)
{
    ps->refused_until_ms = rlock__now_ms() + ps->holdoff_ms;
    ps->warned = true;
}

/* In a cluster, an error answer to ch's SSUBSCRIBE that is no refusal:
 * MOVED (our table was stale: it takes the new owner, and ch is
 * subscribed there at once), or a cluster not able to serve the slot now
 * (ch is tried again by the retry timer, after a refresh). Returns true
 * when reply was one of those. */
static bool cluster_moved_it(rlock__pubsub *ps, channel *ch,
                             const struct redisReply *reply)
{
    rlock__cluster *cl = ps->client->cluster;
    rlock__redirect red;
    if (cl == NULL)
        return false;
    switch (rlock__redirect_parse(reply, &red) == 0 ? red.kind
                                                    : RLOCK__REDIR_NONE) {
    case RLOCK__REDIR_MOVED: {
        rlock__stats_count(ps->client->stats, RLOCK__STAT_CLUSTER_MOVED);
        struct rlock__cnode *n =
            red.host[0] != '\0' || ps->links[ch->on].node == NULL
                ? rlock__cluster_node_at(cl, red.host, red.port)
                : rlock__cluster_node_at(
                      cl, rlock__cnode_host(ps->links[ch->on].node),
                      red.port);
        if (n != NULL)
            rlock__cluster_moved(cl, red.slot, n);
        ch->state = CH_IDLE;
        ch->missed = true;
        if (n != NULL && ch->inflight == 0)
            rlock__pubsub_subscribe(ps, ch);
        else
            rlock__pubsub_arm_retry(ps);
        return true;
    }
    case RLOCK__REDIR_ASK:
    case RLOCK__REDIR_TRYAGAIN:
    case RLOCK__REDIR_CLUSTERDOWN:
    case RLOCK__REDIR_MASTERDOWN:
    case RLOCK__REDIR_LOADING:
        rlock__cluster_refresh(cl);
        ch->state = CH_IDLE;
        ch->missed = true;
        rlock__pubsub_arm_retry(ps);
        return true;
    default:
        return false;
    }
}

/* The answer to ch's SUBSCRIBE: confirmed (reply NULL), refused (an error
 * reply), or none (status: the link failed, or the deadline passed). */
void rlock__pubsub_on_subscribe_reply(rlock__link *l, int status,
                               struct redisReply *reply, void *arg)
{
    channel *ch = arg;
    rlock__pubsub *ps = ch->ps;
    (void)l;
    ch->inflight--;
    if (ps->stopping || rlock__pubsub_drop_if_unused(ps, ch) || ch->inflight > 0 ||
        ch->state != CH_SUBSCRIBING)
        return; /* a later command for ch decides its state */
    if (status == RLOCK_OK && reply == NULL) {
        ch->state = CH_SUBSCRIBED;
        ch->allowed = true;
        ps->backoff_ms = 0; /* the connection works */
        for (int i = 0; i < ch->nentries; i++)
            rlock__entry_set_subscribed(ch->entries[i], true, ch->missed);
        ch->missed = false;
    } else if (status == RLOCK_OK && cluster_moved_it(ps, ch, reply)) {
        return;
    } else if (status == RLOCK_OK) {
        note_refusal(ps, ch, rlock__reply_error_text(reply));
        rlock__pubsub_refuse(ps, ch);
    } else {
        /* a closed link is retried from on_closed, which comes next; a
         * mere timeout keeps the link (its late answer is dropped) */
        ch->state = CH_IDLE;
        ch->missed = true;
        if (status == RLOCK_ETIMEDOUT)
            rlock__pubsub_arm_retry(ps);
    }
}

void rlock__pubsub_on_unsubscribe_reply(rlock__link *l, int status,
                                 struct redisReply *reply, void *arg)
{
    channel *ch = arg;
    (void)l;
    (void)status;
    (void)reply;
    ch->inflight--;
    if (!ch->ps->stopping)
        rlock__pubsub_drop_if_unused(ch->ps, ch);
}

/* Finds the channel a push names (not NUL-terminated there). */
static channel *find_channel(rlock__pubsub *ps, const rlock__push *p)
{
    char small[256];
    if (p->channel == NULL)
        return NULL;
    char *name = p->channel_len < sizeof(small)
                     ? small
                     : rlock__malloc(p->channel_len + 1);
    if (name == NULL)
        return NULL; /* the waiters' re-checks make up for it */
    memcpy(name, p->channel, p->channel_len);
    name[p->channel_len] = '\0';
    channel *ch = rlock__map_get(&ps->channels, name);
    if (name != small)
        free(name);
    return ch;
}

/* A message on a semaphore's channel: the permits there are now, which
 * wake as many of its waiters as they can serve (entry_waiters.c). */
static void on_permits(channel *ch, const rlock__push *p)
{
    int64_t permits;
    if (!rlock__sem_message_permits(p->payload, p->payload_len, &permits))
        return; /* not a count: Redisson drops it too */
    rlock__stats *stats = ch->ps->client->stats;
    rlock__stats_count(stats, RLOCK__STAT_UNLOCK_MESSAGES);
    bool woke = false;
    for (int i = 0; i < ch->nentries && permits > 0; i++)
        woke = rlock__entry_wake_permits(ch->entries[i], permits) || woke;
    if (!woke)
        rlock__stats_count(stats, RLOCK__STAT_UNLOCK_MESSAGES_UNUSED);
}

static void on_message(channel *ch, const rlock__push *p)
{
    if (ch->state == CH_SUBSCRIBED && ch->nentries > 0 &&
        RLOCK__KIND_IS_SEMAPHORE(ch->entries[0]->kind)) {
        on_permits(ch, p);
        return;
    }
    if (ch->state != CH_SUBSCRIBED || p->payload_len != 1)
        return;
    if (ch->nentries > 0 && ch->entries[0]->kind == RLOCK__KIND_COUNTDOWN) {
        /* a count-down latch's channel is its alone (countdown.c) */
        for (int i = 0; i < ch->nentries; i++)
            rlock__countdown_heard(ch->entries[i], p->payload,
                                   p->payload_len);
        return;
    }
    bool all = p->payload[0] == '1';
    if (!all && p->payload[0] != '0')
        return; /* not a lock message: Redisson drops it too */
    rlock__stats *stats = ch->ps->client->stats;
    rlock__stats_count(stats, RLOCK__STAT_UNLOCK_MESSAGES);
    bool woke = false;
    for (int i = 0; i < ch->nentries; i++)
        woke = rlock__entry_wake(ch->entries[i], all) || woke;
    if (!woke)
        rlock__stats_count(stats, RLOCK__STAT_UNLOCK_MESSAGES_UNUSED);
}

/* The server ended ch's subscription on its own: an unlock message may
 * have been missed meanwhile, so every waiter tries at once, and the
 * channel is subscribed again (its confirmation wakes them once more, for
 * what was published before it). An unsubscribe of a channel we are
 * leaving, or not yet in, is nothing to us (link.h). */
static void on_server_unsubscribe(rlock__pubsub *ps, channel *ch)
{
    if (ch->state != CH_SUBSCRIBED || ch->nentries == 0)
        return;
    rlock__log(ps->client, RLOCK_LOG_INFO,
               "the server unsubscribed %s: subscribing again", ch->name);
    ch->state = CH_IDLE;
    ch->missed = true;
    for (int i = 0; i < ch->nentries; i++)
        rlock__entry_set_subscribed(ch->entries[i], false, true);
    rlock__pubsub_subscribe(ps, ch);
}

void rlock__pubsub_on_push(rlock__link *l, const rlock__push *p, void *arg)
{
    rlock__pubsub *ps = arg;
    bool message = p->kind == RLOCK__PUSH_MESSAGE ||
                   p->kind == RLOCK__PUSH_SMESSAGE;
    if (!message && p->kind != RLOCK__PUSH_UNSUBSCRIBED &&
        p->kind != RLOCK__PUSH_SUNSUBSCRIBED)
        return; /* we use no patterns */
    channel *ch = find_channel(ps, p);
    if (ch == NULL)
        return;
    if (message) {
        on_message(ch, p); /* from wherever: a plain PUBLISH reaches all */
        return;
    }
    /* an unsubscribe from a link ch has left (it moved) is nothing */
    if (ch->on < 0 || ps->links[ch->on].link != l)
        return;
    if (p->kind == RLOCK__PUSH_SUNSUBSCRIBED && ps->client->cluster != NULL)
        rlock__cluster_refresh(ps->client->cluster); /* the slot moved */
    on_server_unsubscribe(ps, ch);
}
