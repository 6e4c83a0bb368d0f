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
 * SUBSCRIBED or UNSUBSCRIBING. A join during UNSUBSCRIBING waits for the
 * unsubscribe confirmation before subscribing again: hiredis 0.14 drops a
 * channel's callback when an "unsubscribe" reply arrives, so a SUBSCRIBE sent
 * before that reply would lose its messages.
 *
 * hiredis 0.14 leaves "subscribed mode" when an unsubscribe reply reports
 * zero channels left, and then aborts on the reply to a SUBSCRIBE sent just
 * before that reply arrived (an assert in redisProcessCallbacks). A fresh
 * subscriber connection therefore first subscribes to an anchor channel of
 * its own ("rlock:anchor:<client uuid>", on which nobody publishes) and never
 * leaves it, so the count never reaches zero.
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

typedef enum {
    CH_IDLE,
    CH_SUBSCRIBING,
    CH_SUBSCRIBED,
    CH_UNSUBSCRIBING,
} channel_state;

typedef struct channel {
    char *name;
    channel_state state;
    bool missed; /* subscription was interrupted: messages may be lost */
    int nentries;
    int cap;
    rlock__entry **entries;
} channel;

struct rlock__pubsub {
    rlock_client *client;
    rlock__conn conn;
    rlock__map channels; /* name -> channel */
    rlock__timer *retry;
    int64_t backoff_ms;
    bool retry_armed;
    char anchor[64]; /* see the design notes */
};

typedef struct membership_task {
    rlock__task task;
    rlock__pubsub *ps;
    rlock__entry *entry;
} membership_task;

static void on_up(rlock__conn *cn);
static void on_down(rlock__conn *cn);
static void retry_subscriptions(void *arg);

/* Makes the subscriber (not yet connected). Returns 0 or RLOCK_ENOMEM. */
int rlock__pubsub_new(rlock__pubsub **out, rlock_client *c)
{
    rlock__pubsub *ps = rlock__calloc(1, sizeof(*ps));
    if (ps == NULL)
        return RLOCK_ENOMEM;
    ps->client = c;
    snprintf(ps->anchor, sizeof(ps->anchor), "rlock:anchor:%s", c->id);
    rlock__conn_init(&ps->conn, c);
    ps->conn.on_up = on_up;
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

static void set_subscribed(rlock__entry *e, bool subscribed, bool wake_all)
{
    pthread_mutex_lock(&e->mu);
    e->subscribed = subscribed;
    if (wake_all) {
        e->permits = e->waiters;
        pthread_cond_broadcast(&e->permit_cv);
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (subscribed)
        rlock__async_kick(e, true); /* closes the gap before subscribing */
}

static void free_channel(rlock__pubsub *ps, channel *ch)
{
    rlock__map_remove(&ps->channels, ch->name);
    free(ch->entries);
    free(ch->name);
    free(ch);
}

static void on_message(redisAsyncContext *ac, void *reply_, void *privdata);

/* Schedules one run of retry_subscriptions(), backing off from at once to
 * 1 s between failed attempts, so a waiter is resubscribed within about a
 * second of Redis coming back. */
static void arm_retry(rlock__pubsub *ps)
{
    if (ps->retry_armed || atomic_load(&ps->client->closing))
        return;
    ps->retry_armed = true;
    rlock__timer_start(ps->retry, ps->backoff_ms, 0);
    ps->backoff_ms = ps->backoff_ms < 50 ? 50 : ps->backoff_ms * 2;
    if (ps->backoff_ms > 1000)
        ps->backoff_ms = 1000;
}

/* Connects the subscriber if it is down, anchoring it (see the design
 * notes). Returns true when commands can be issued. */
static bool subscriber_ready(rlock__pubsub *ps)
{
    bool fresh = ps->conn.state == RLOCK__CONN_DOWN;
    if (rlock__conn_ensure(&ps->conn) != 0 || ps->conn.ac == NULL)
        return false;
    if (fresh) {
        const char *argv[2] = {"SUBSCRIBE", ps->anchor};
        if (redisAsyncCommandArgv(ps->conn.ac, on_message, ps, 2, argv, NULL) !=
            REDIS_OK)
            return false;
    }
    return true;
}

/* Sends SUBSCRIBE for ch, or leaves it IDLE for the retry timer if the
 * connection cannot be started. */
static void subscribe(rlock__pubsub *ps, channel *ch)
{
    if (subscriber_ready(ps)) {
        const char *argv[2] = {"SUBSCRIBE", ch->name};
        if (redisAsyncCommandArgv(ps->conn.ac, on_message, ps, 2, argv, NULL) ==
            REDIS_OK) {
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
    else if (ch->state == CH_SUBSCRIBED)
        set_subscribed(e, true, false);
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
    else if (ch->state == CH_IDLE)
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
        /* still joined: a new first waiter cleared the flag */
        channel *ch = rlock__map_get(&ps->channels, e->channel);
        if (ch != NULL && ch->state == CH_SUBSCRIBED)
            set_subscribed(e, true, false);
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
 * when it has none. e->subscribed becomes true once Redis confirms.
 * Returns 0 or RLOCK_ENOMEM. Any thread, without e->mu held. */
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
        if (ch->state != CH_SUBSCRIBING)
            return;
        ch->state = CH_SUBSCRIBED;
        for (int i = 0; i < ch->nentries; i++)
            set_subscribed(ch->entries[i], true, ch->missed);
        ch->missed = false;
    } else if (strcmp(kind, "unsubscribe") == 0) {
        if (ch->state != CH_UNSUBSCRIBING)
            return;
        if (ch->nentries > 0)
            subscribe(ps, ch);
        else
            free_channel(ps, ch);
    }
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

/* The subscriber connection dropped (or never connected): every channel
 * still wanted goes back to IDLE and is subscribed again by the timer. */
static void on_down(rlock__conn *cn)
{
    rlock__pubsub *ps =
        (rlock__pubsub *)((char *)cn - offsetof(rlock__pubsub, conn));
    size_t n;
    channel **list = all_channels(ps, &n);
    bool wanted = false;
    for (size_t i = 0; i < n; i++) {
        channel *ch = list[i];
        if (ch->nentries == 0) {
            free_channel(ps, ch);
            continue;
        }
        ch->state = CH_IDLE;
        ch->missed = true;
        wanted = true;
        for (int k = 0; k < ch->nentries; k++)
            set_subscribed(ch->entries[k], false, false);
    }
    free(list);
    if (wanted)
        arm_retry(ps);
}

static void on_up(rlock__conn *cn)
{
    rlock__pubsub *ps =
        (rlock__pubsub *)((char *)cn - offsetof(rlock__pubsub, conn));
    ps->backoff_ms = 0;
}

/* Timer: subscribes every wanted channel that is IDLE. */
static void retry_subscriptions(void *arg)
{
    rlock__pubsub *ps = arg;
    size_t n;
    ps->retry_armed = false;
    channel **list = all_channels(ps, &n);
    for (size_t i = 0; i < n; i++)
        if (list[i]->state == CH_IDLE && list[i]->nentries > 0)
            subscribe(ps, list[i]);
    free(list);
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
