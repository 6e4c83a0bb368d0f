/*
 * pubsub.c: the client's one subscriber connection and its channels.
 *
 * Design notes. Waiting threads never poll: they wait for an unlock message
 * on the lock's channel (Redisson's LockPubSub). All local waiters of one
 * lock share one entry, and an entry is in its channel while it has waiters
 * (lock.c asks for a sync on its first waiter and on its last). Several
 * entries can share a channel, because Redisson's name rule maps both "a" and
 * "{a}" to "redisson_lock__channel:{a}"; a channel is subscribed while any
 * entry is joined, and unsubscribed when the last leaves. Everything here runs
 * on the I/O thread, so the channel table needs no lock.
 *
 * A channel is IDLE (not subscribed, e.g. connection down), SUBSCRIBING,
 * SUBSCRIBED, UNSUBSCRIBING or REFUSED. A join during UNSUBSCRIBING waits
 * for the unsubscribe confirmation before subscribing again, so that the
 * channel's replies always come in the order its states expect.
 *
 * The subscriber holds lock channels only, so an ACL written for Redisson
 * (&redisson_lock__channel:*) is enough. hiredis 0.14.1 stays in
 * "subscribed mode" after an unsubscribe reply that counts zero channels
 * as long as a SUBSCRIBE it sent is still unanswered, so a SUBSCRIBE may
 * follow the last channel's UNSUBSCRIBE at once (test_pubsub_acl's
 * channels-coming-and-going test holds us to that); an idle subscriber
 * connection simply stays open, out of subscribed mode.
 *
 * Refusals. hiredis 0.14 cannot hand an error reply to a SUBSCRIBE to
 * anyone, so a refused SUBSCRIBE (a Redis 7 ACL user without the channel,
 * a renamed command) closes the connection, with the error as its reason
 * (conn.c). Replies come in order, so the refused one is the oldest
 * SUBSCRIBE still unanswered. That channel becomes REFUSED: its waiters
 * stop waiting for a subscription and re-check at the configured interval,
 * the log hook gets one warning per client, and no SUBSCRIBE for a channel
 * the server has not accepted before goes out for a hold-off (10 s,
 * doubling to 5 min), so that refusals cost a reconnect per hold-off at
 * most, never a loop. Channels the server accepted are subscribed again at
 * once. The reconnect back-off is reset by an accepted subscription, not
 * by a connection that merely opens.
 *
 * Messages (facts sheet 1.4): "0" wakes one waiter per entry, "1" wakes all.
 * When the connection drops, messages published meanwhile are lost, so on
 * resubscription every waiter is woken to re-try its acquire.
 */
#include "internal.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RLOCK__REFUSAL_HOLDOFF_MS     10000
#define RLOCK__REFUSAL_HOLDOFF_MAX_MS 300000

typedef enum {
    CH_IDLE,
    CH_SUBSCRIBING,
    CH_SUBSCRIBED,
    CH_UNSUBSCRIBING,
    CH_REFUSED,
} channel_state;

typedef struct channel {
    char *name;
    channel_state state;
    bool missed;  /* subscription was interrupted: messages may be lost */
    bool allowed; /* the server accepted its SUBSCRIBE before */
    bool pending; /* a SUBSCRIBE is out, unanswered */
    uint64_t seq; /* that SUBSCRIBE's place in the send order */
    int nentries;
    int cap;
    rlock__entry **entries;
} channel;

struct rlock__pubsub {
    rlock_client *client;
    rlock__conn conn;
    rlock__map channels; /* name -> channel */
    uint64_t next_seq;
    rlock__timer *retry;
    int64_t backoff_ms;
    bool retry_armed;
    int64_t retry_due_ms;
    int64_t refused_until_ms; /* no SUBSCRIBE of a new channel before */
    int64_t holdoff_ms;       /* the next refusal's hold-off */
    bool warned;              /* the refusal warning was given */
};

typedef struct membership_task {
    rlock__task task;
    rlock__pubsub *ps;
    rlock__entry *entry;
} membership_task;

static void retry_subscriptions(void *arg);
static void on_down(rlock__conn *cn);

/* Makes the subscriber (not yet connected). Returns 0 or RLOCK_ENOMEM. */
int rlock__pubsub_new(rlock__pubsub **out, rlock_client *c)
{
    rlock__pubsub *ps = rlock__calloc(1, sizeof(*ps));
    if (ps == NULL)
        return RLOCK_ENOMEM;
    ps->client = c;
    ps->holdoff_ms = RLOCK__REFUSAL_HOLDOFF_MS;
    rlock__conn_init(&ps->conn, c);
    ps->conn.on_down = on_down;
    ps->retry = rlock__timer_new(c->loop, retry_subscriptions, ps);
    if (ps->retry == NULL || rlock__map_init(&ps->channels) != 0) {
        rlock__timer_free(ps->retry);
        free(ps);
        return RLOCK_ENOMEM;
    }
    *out = ps;
    return RLOCK_OK;
}

/* Sets e's subscription flag (wake_all: and wakes every waiter to re-try,
 * as after an interruption); either way its waiters wait for a
 * subscription again, or stop waiting for one. */
static void set_subscribed(rlock__entry *e, bool subscribed, bool wake_all)
{
    pthread_mutex_lock(&e->mu);
    e->subscribed = subscribed;
    e->unheard = false;
    if (wake_all) {
        e->permits = e->waiters;
        pthread_cond_broadcast(&e->permit_cv);
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (subscribed)
        rlock__async_kick(e, true); /* closes the gap before subscribing */
}

/* Tells e's waiters that no subscription is coming: they re-check. */
static void set_unheard(rlock__entry *e)
{
    pthread_mutex_lock(&e->mu);
    e->subscribed = false;
    e->unheard = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

static void free_channel(rlock__pubsub *ps, channel *ch)
{
    rlock__map_remove(&ps->channels, ch->name);
    free(ch->entries);
    free(ch->name);
    free(ch);
}

static void on_message(redisAsyncContext *ac, void *reply_, void *privdata);

/* Makes sure retry_subscriptions() runs within delay_ms. */
static void arm_retry_in(rlock__pubsub *ps, int64_t delay_ms)
{
    if (atomic_load(&ps->client->closing))
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
static void arm_retry(rlock__pubsub *ps)
{
    arm_retry_in(ps, ps->backoff_ms);
    ps->backoff_ms = ps->backoff_ms < 50 ? 50 : ps->backoff_ms * 2;
    if (ps->backoff_ms > 1000)
        ps->backoff_ms = 1000;
}

/* Marks ch REFUSED: its waiters re-check alone until the hold-off ends,
 * when the retry timer tries it again. */
static void refuse(rlock__pubsub *ps, channel *ch)
{
    ch->state = CH_REFUSED;
    ch->missed = true;
    ch->allowed = false;
    for (int i = 0; i < ch->nentries; i++)
        set_unheard(ch->entries[i]);
    arm_retry_in(ps, ps->refused_until_ms - rlock__now_ms());
}

/* Sends SUBSCRIBE for ch; or, in a refusal hold-off, refuses it without
 * asking; or, if the connection cannot be started, leaves it IDLE for the
 * retry timer. */
static void subscribe(rlock__pubsub *ps, channel *ch)
{
    if (!ch->allowed && rlock__now_ms() < ps->refused_until_ms) {
        refuse(ps, ch);
        return;
    }
    if (rlock__conn_ensure(&ps->conn) == 0 && ps->conn.ac != NULL) {
        const char *argv[2] = {"SUBSCRIBE", ch->name};
        if (redisAsyncCommandArgv(ps->conn.ac, on_message, ps, 2, argv, NULL) ==
            REDIS_OK) {
            ch->pending = true;
            ch->seq = ps->next_seq++;
            ch->state = CH_SUBSCRIBING;
            return;
        }
    }
    ch->state = CH_IDLE;
    ch->missed = true;
    arm_retry(ps);
}

static void unsubscribe(rlock__pubsub *ps, channel *ch)
{
    const char *argv[2] = {"UNSUBSCRIBE", ch->name};
    if (ps->conn.ac != NULL && redisAsyncCommandArgv(ps->conn.ac, NULL, NULL, 2,
                                                     argv, NULL) == REDIS_OK)
        ch->state = CH_UNSUBSCRIBING;
    else
        free_channel(ps, ch);
}

/* Tells a joined entry what its channel's state means for its waiters. */
static void show_state(const channel *ch, rlock__entry *e)
{
    if (ch->state == CH_SUBSCRIBED)
        set_subscribed(e, true, false);
    else if (ch->state == CH_REFUSED)
        set_unheard(e);
}

static void join(rlock__pubsub *ps, rlock__entry *e)
{
    channel *ch = rlock__map_get(&ps->channels, e->channel);
    if (ch == NULL) {
        ch = rlock__calloc(1, sizeof(*ch));
        if (ch == NULL || (ch->name = rlock__strdup(e->channel)) == NULL ||
            rlock__map_put(&ps->channels, ch->name, ch) != 0) {
            if (ch != NULL)
                free(ch->name);
            free(ch);
            return; /* waiters fall back to the re-check interval */
        }
    }
    if (ch->nentries == ch->cap) {
        int cap = ch->cap ? ch->cap * 2 : 2;
        rlock__entry **grown = rlock__realloc(ch->entries, sizeof(*grown) * cap);
        if (grown == NULL) {
            if (ch->nentries == 0)
                free_channel(ps, ch);
            return;
        }
        ch->entries = grown;
        ch->cap = cap;
    }
    rlock__entry_ref(e);
    ch->entries[ch->nentries++] = e;
    e->joined = true;
    if (ch->state == CH_IDLE && ch->nentries == 1)
        subscribe(ps, ch);
    else
        show_state(ch, e);
}

static void leave(rlock__pubsub *ps, rlock__entry *e)
{
    channel *ch = rlock__map_get(&ps->channels, e->channel);
    if (!e->joined || ch == NULL)
        return;
    e->joined = false;
    for (int i = 0; i < ch->nentries; i++) {
        if (ch->entries[i] == e) {
            ch->entries[i] = ch->entries[--ch->nentries];
            break;
        }
    }
    set_subscribed(e, false, false);
    rlock__entry_unref(e);
    if (ch->nentries > 0)
        return;
    if (ch->state == CH_SUBSCRIBED || ch->state == CH_SUBSCRIBING)
        unsubscribe(ps, ch);
    else if (ch->state != CH_UNSUBSCRIBING)
        free_channel(ps, ch);
}

/* Brings e's channel membership in line with its waiter count. Acting on
 * the count rather than on "join" and "leave" requests in arrival order keeps
 * it right when a first waiter's request overtakes the last one's. */
static void sync_membership(rlock__pubsub *ps, rlock__entry *e)
{
    pthread_mutex_lock(&e->mu);
    bool wanted = e->waiters + e->async_waiters > 0;
    pthread_mutex_unlock(&e->mu);
    if (wanted && !e->joined) {
        join(ps, e);
    } else if (!wanted && e->joined) {
        leave(ps, e);
    } else if (wanted) {
        /* still joined: a new first waiter cleared the flags */
        channel *ch = rlock__map_get(&ps->channels, e->channel);
        if (ch != NULL)
            show_state(ch, e);
    }
}

static void run_membership(rlock__task *t, int status)
{
    membership_task *mt = (membership_task *)t;
    if (status == 0)
        sync_membership(mt->ps, mt->entry);
    rlock__entry_unref(mt->entry);
    free(mt);
}

/* Asks the I/O thread to make e's channel membership follow its waiter
 * count: joined (and subscribed) while it has waiters, out of the channel
 * when it has none. e->subscribed becomes true once Redis confirms, or
 * e->unheard once it refuses. Returns 0 or RLOCK_ENOMEM. Any thread,
 * without e->mu held. */
int rlock__pubsub_sync(rlock__entry *e)
{
    rlock_client *c = e->client;
    membership_task *mt = rlock__calloc(1, sizeof(*mt));
    if (mt == NULL)
        return RLOCK_ENOMEM;
    mt->task.run = run_membership;
    mt->ps = c->pubsub;
    mt->entry = e;
    rlock__entry_ref(e);
    rlock__loop_submit(c->loop, &mt->task);
    return RLOCK_OK;
}

static void collect_channel(const char *key, void *value, void *arg)
{
    channel ***cursor = arg;
    (void)key;
    *(*cursor)++ = value;
}

/* Returns a malloc'd array of every channel (the map must not change while
 * it is walked, and the callers free channels). */
static channel **all_channels(rlock__pubsub *ps, size_t *n)
{
    *n = ps->channels.count;
    channel **list = rlock__malloc(sizeof(*list) * (*n + 1));
    channel **cursor = list;
    if (list != NULL)
        rlock__map_foreach(&ps->channels, collect_channel, &cursor);
    else
        *n = 0;
    return list;
}

static void on_message(redisAsyncContext *ac, void *reply_, void *privdata)
{
    rlock__pubsub *ps = privdata;
    redisReply *r = reply_;
    (void)ac;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return; /* NULL: the connection is going; on_down handles it */
    const char *kind = r->element[0]->str;
    channel *ch = rlock__map_get(&ps->channels, r->element[1]->str);
    if (ch == NULL)
        return;
    if (strcmp(kind, "message") == 0) {
        const redisReply *payload = r->element[2];
        if (payload->type != REDIS_REPLY_STRING || ch->state != CH_SUBSCRIBED)
            return;
        bool all = strcmp(payload->str, "1") == 0;
        if (!all && strcmp(payload->str, "0") != 0)
            return; /* not a lock message: Redisson drops it too */
        for (int i = 0; i < ch->nentries; i++)
            rlock__entry_wake(ch->entries[i], all);
    } else if (strcmp(kind, "subscribe") == 0) {
        ch->pending = false;
        if (ch->state != CH_SUBSCRIBING)
            return;
        ch->state = CH_SUBSCRIBED;
        ch->allowed = true;
        ps->backoff_ms = 0; /* the connection works */
        for (int i = 0; i < ch->nentries; i++)
            set_subscribed(ch->entries[i], true, ch->missed);
        ch->missed = false;
    } else if (strcmp(kind, "unsubscribe") == 0) {
        if (ch->state != CH_UNSUBSCRIBING)
            return;
        if (ch->nentries > 0) {
            ch->state = CH_IDLE;
            subscribe(ps, ch);
        } else {
            free_channel(ps, ch);
        }
    }
}

/* Returns the channel whose SUBSCRIBE is the oldest unanswered one, or
 * NULL. */
static channel *oldest_pending(channel **list, size_t n)
{
    channel *oldest = NULL;
    for (size_t i = 0; i < n; i++)
        if (list[i]->pending && (oldest == NULL || list[i]->seq < oldest->seq))
            oldest = list[i];
    return oldest;
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
               "&redisson_rwlock:*, as the README's ACL section says)",
               ch->name, why, (long long)ps->client->cfg.recheck_interval_ms,
               (long long)holdoff);
}

/* The subscriber connection dropped (or never connected): every channel
 * still wanted goes back to IDLE and is subscribed again by the timer,
 * except one whose SUBSCRIBE the server refused (see the design notes). */
static void on_down(rlock__conn *cn)
{
    rlock__pubsub *ps =
        (rlock__pubsub *)((char *)cn - offsetof(rlock__pubsub, conn));
    size_t n;
    channel **list = all_channels(ps, &n);
    channel *refused = cn->refusal[0] != '\0' ? oldest_pending(list, n) : NULL;
    if (refused != NULL)
        note_refusal(ps, refused, cn->refusal);
    bool wanted = false;
    for (size_t i = 0; i < n; i++) {
        channel *ch = list[i];
        ch->pending = false;
        if (ch->nentries == 0) {
            free_channel(ps, ch);
        } else if (ch == refused || ch->state == CH_REFUSED) {
            refuse(ps, ch);
        } else {
            ch->state = CH_IDLE;
            ch->missed = true;
            wanted = true;
            for (int k = 0; k < ch->nentries; k++)
                set_subscribed(ch->entries[k], false, false);
        }
    }
    free(list);
    if (wanted)
        arm_retry(ps);
}

/* Timer: subscribes every wanted channel that is IDLE, or REFUSED and due
 * for another try. */
static void retry_subscriptions(void *arg)
{
    rlock__pubsub *ps = arg;
    size_t n;
    ps->retry_armed = false;
    channel **list = all_channels(ps, &n);
    for (size_t i = 0; i < n; i++)
        if ((list[i]->state == CH_IDLE || list[i]->state == CH_REFUSED) &&
            list[i]->nentries > 0)
            subscribe(ps, list[i]);
    free(list);
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

/* Closes the subscriber and forgets every channel. I/O thread, at stop. */
void rlock__pubsub_shutdown(rlock__pubsub *ps)
{
    rlock__timer_stop(ps->retry);
    rlock__conn_close(&ps->conn);
    size_t n;
    channel **list = all_channels(ps, &n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < list[i]->nentries; k++) {
            list[i]->entries[k]->joined = false;
            rlock__entry_unref(list[i]->entries[k]);
        }
        free_channel(ps, list[i]);
    }
    free(list);
}

/* Frees the subscriber after rlock__pubsub_shutdown(). */
void rlock__pubsub_free(rlock__pubsub *ps)
{
    if (ps == NULL)
        return;
    rlock__map_destroy(&ps->channels);
    rlock__timer_free(ps->retry);
    free(ps);
}
