/*
 * core/pubsub.c: the client's one subscriber connection and its channels.
 *
 * Design notes. Waiting threads never poll: they wait for an unlock message
 * on the lock's channel (Redisson's LockPubSub). All local waiters of one
 * lock share one entry, and an entry is in its channel while it has waiters
 * (core/entry_waiters.c asks for a sync on its first waiter and on its
 * last, and keeps the flags this file sets on it). Several
 * entries can share a channel, because Redisson's name rule maps both "a" and
 * "{a}" to "redisson_lock__channel:{a}"; a channel is subscribed while any
 * entry is joined, and unsubscribed when the last leaves. Everything here runs
 * on the I/O thread, so the channel table needs no lock.
 *
 * The subscriber links and moves (cluster slots, a Sentinel switch) are
 * pubsub_links.c's, the server's answers, messages and refusals
 * pubsub_answers.c's; the state the three files share is in
 * pubsub_impl.h.
 *
 * In src/core: the channel table is tied to the entries (core/entry.c); it
 * drives subscriber links of src/io and reads replies through proto.
 */
#include "core/pubsub_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct membership_task {
    rlock__task task;
    rlock__pubsub *ps;
    rlock__entry *entry;
} membership_task;

static void end_lingering(void *arg);

/* Makes the subscriber (not yet connected). Returns 0 or RLOCK_ENOMEM. */
int rlock__pubsub_new(rlock__pubsub **out, rlock_client *c)
{
    rlock__pubsub *ps = rlock__calloc(1, sizeof(*ps));
    if (ps == NULL)
        return RLOCK_ENOMEM;
    ps->client = c;
    ps->holdoff_ms = RLOCK__REFUSAL_HOLDOFF_MS;
    ps->retry = rlock__timer_new(c->loop, rlock__pubsub_retry, ps);
    ps->linger = rlock__timer_new(c->loop, end_lingering, ps);
    if (ps->retry == NULL || ps->linger == NULL ||
        rlock__map_init(&ps->channels) != 0) {
        rlock__timer_free(ps->retry);
        rlock__timer_free(ps->linger);
        free(ps);
        return RLOCK_ENOMEM;
    }
    *out = ps;
    return RLOCK_OK;
}

static void free_channel(rlock__pubsub *ps, channel *ch)
{
    rlock__map_remove(&ps->channels, ch->name);
    free(ch->entries);
    free(ch->name);
    free(ch);
}

/* Frees ch if nothing needs it any more: no entry, no answer owed. Returns
 * true if it did. */
bool rlock__pubsub_drop_if_unused(rlock__pubsub *ps, channel *ch)
{
    if (ch->nentries > 0 || ch->inflight > 0)
        return false;
    free_channel(ps, ch);
    return true;
}

/* Tells a joined entry what its channel's state means for its waiters. */
static void show_state(const channel *ch, rlock__entry *e)
{
    if (ch->state == CH_SUBSCRIBED)
        rlock__entry_set_subscribed(e, true, false);
    else if (ch->state == CH_REFUSED)
        rlock__entry_set_unheard(e);
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
        ch->ps = ps;
        ch->on = -1;
    }
    if (ch->nentries == ch->cap) {
        int cap = ch->cap ? ch->cap * 2 : 2;
        rlock__entry **grown = rlock__realloc(ch->entries, sizeof(*grown) * cap);
        if (grown == NULL) {
            rlock__pubsub_drop_if_unused(ps, ch);
            return;
        }
        ch->entries = grown;
        ch->cap = cap;
    }
    rlock__entry_ref(e);
    ch->entries[ch->nentries++] = e;
    /* an UNSUBSCRIBE in flight need not be waited for: the server answers
     * in order, so the SUBSCRIBE's answer comes after it */
    if (ch->nentries == 1 &&
        (ch->state == CH_IDLE || ch->state == CH_UNSUBSCRIBING))
        rlock__pubsub_subscribe(ps, ch);
    else
        show_state(ch, e);
}

/* Returns e's index in ch's entries, or -1 when it has not joined. */
static int find_entry(const channel *ch, const rlock__entry *e)
{
    for (int i = 0; ch != NULL && i < ch->nentries; i++)
        if (ch->entries[i] == e)
            return i;
    return -1;
}

static void leave(rlock__pubsub *ps, rlock__entry *e)
{
    channel *ch = rlock__map_get(&ps->channels, e->channel);
    int i = find_entry(ch, e);
    if (i < 0)
        return;
    ch->entries[i] = ch->entries[--ch->nentries];
    rlock__entry_set_subscribed(e, false, false);
    rlock__entry_unref(e);
    if (ch->nentries == 0)
        rlock__pubsub_unsubscribe(ps, ch);
}

/* Brings e's channel membership in line with its waiter count. Acting on
 * the count rather than on "join" and "leave" requests in arrival order keeps
 * it right when a first waiter's request overtakes the last one's. */
static void sync_membership(rlock__pubsub *ps, rlock__entry *e)
{
    bool wanted = rlock__entry_wants_channel(e);
    channel *ch = rlock__map_get(&ps->channels, e->channel);
    bool joined = find_entry(ch, e) >= 0;
    if (wanted && !joined)
        join(ps, e);
    else if (!wanted && joined)
        leave(ps, e);
    else if (wanted)
        show_state(ch, e); /* still joined: a new first waiter cleared the
                              flags */
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
    if (c->pubsub == NULL)
        return RLOCK_OK; /* a client with no subscriber has no channels
                            (the core's unit tests make such clients) */
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

/* Makes sure end_lingering() runs within delay_ms. */
static void arm_linger(rlock__pubsub *ps, int64_t delay_ms)
{
    if (atomic_load(&ps->client->closing) || ps->stopping)
        return;
    int64_t due = rlock__now_ms() + delay_ms;
    if (ps->linger_armed && ps->linger_due_ms <= due)
        return;
    ps->linger_armed = true;
    ps->linger_due_ms = due;
    rlock__timer_stop(ps->linger);
    rlock__timer_start(ps->linger, delay_ms, 0);
}

typedef struct linger_task {
    rlock__task task;
    rlock__pubsub *ps;
    rlock__entry *entry;
    int64_t ms;
} linger_task;

static void run_linger(rlock__task *t, int status)
{
    linger_task *lt = (linger_task *)t;
    if (status == 0) {
        sync_membership(lt->ps, lt->entry); /* joined: it stays */
        arm_linger(lt->ps, lt->ms);
    }
    rlock__entry_unref(lt->entry);
    free(lt);
}

/* e's last waiter left, and e stays in its channel for ms
 * (rlock__entry_set_linger): the I/O thread makes it leave after that,
 * unless a waiter comes back first. Returns 0, or RLOCK_ENOMEM (then it
 * leaves at once). Any thread, without e->mu held. */
int rlock__pubsub_linger(rlock__entry *e, int64_t ms)
{
    rlock_client *c = e->client;
    if (c->pubsub == NULL)
        return RLOCK_OK;
    linger_task *lt = rlock__calloc(1, sizeof(*lt));
    if (lt == NULL) {
        rlock__entry_set_linger(e, 0);
        return rlock__pubsub_sync(e);
    }
    lt->task.run = run_linger;
    lt->ps = c->pubsub;
    lt->entry = e;
    lt->ms = ms;
    rlock__entry_ref(e);
    rlock__loop_submit(c->loop, &lt->task);
    return RLOCK_OK;
}

/* Collects, referenced, the joined entries still lingering or due to
 * leave. */
typedef struct linger_walk {
    rlock__entry **list;
    size_t n, cap;
} linger_walk;

static void collect_lingering(const char *key, void *value, void *arg)
{
    channel *ch = value;
    linger_walk *w = arg;
    (void)key;
    for (int i = 0; i < ch->nentries; i++) {
        if (w->n == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 8;
            rlock__entry **grown =
                rlock__realloc(w->list, sizeof(*grown) * cap);
            if (grown == NULL)
                return; /* the rest wait for the next run */
            w->list = grown;
            w->cap = cap;
        }
        rlock__entry_ref(ch->entries[i]);
        w->list[w->n++] = ch->entries[i];
    }
}

/* Timer: every joined entry whose stay is over and has no waiter leaves
 * its channel; the timer comes back for those still lingering. */
static void end_lingering(void *arg)
{
    rlock__pubsub *ps = arg;
    linger_walk w = {NULL, 0, 0};
    int64_t next = 0;
    ps->linger_armed = false;
    rlock__map_foreach(&ps->channels, collect_lingering, &w);
    for (size_t i = 0; i < w.n; i++) {
        int64_t left = rlock__entry_linger_left(w.list[i]);
        if (left > 0 && (next == 0 || left < next))
            next = left;
        else if (rlock__entry_linger_over(w.list[i]))
            sync_membership(ps, w.list[i]); /* it leaves, or a waiter
                                               that came back keeps it */
        rlock__entry_unref(w.list[i]);
    }
    free(w.list);
    if (next > 0)
        arm_linger(ps, next);
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

/* Closes the subscriber and forgets every channel. I/O thread, at stop. */
void rlock__pubsub_shutdown(rlock__pubsub *ps)
{
    ps->stopping = true;
    rlock__timer_stop(ps->retry);
    rlock__timer_stop(ps->linger);
    for (int i = 0; i < ps->nlinks; i++) {
        rlock__link_free(ps->links[i].link); /* answers what is owed,
                                                with ECLOSED */
        ps->links[i].link = NULL;
    }
    size_t n;
    channel **list = all_channels(ps, &n);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < list[i]->nentries; k++)
            rlock__entry_unref(list[i]->entries[k]);
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
    rlock__timer_free(ps->linger);
    free(ps->links);
    free(ps);
}

