/*
 * entry_waiters.c: who waits for an entry, and the wake-ups they get: the
 * waiting side of an entry, split from entry.c (the table of entries and
 * their references) because everything here works on one entry under its
 * own mu, never on the table (it only takes a reference, through entry.c,
 * to kick waiters from the I/O thread).
 *
 * Waiters. Every local acquire that waits for an entry, a blocked thread or
 * an async call, is one rlock__waiter in the entry's list, in the order they
 * came. An unlock message "0" hands one wake-up (a permit) to the first
 * waiter without one, preferring those asleep, and sends it to the back of
 * the list, so that the next message wakes another; "1" hands one to every
 * waiter. A permit that arrives while its waiter is busy trying is kept and
 * ends its next wait at once, so no message is lost between a failed try and
 * the next sleep; one still unused when its waiter leaves is passed on. A
 * blocked thread sleeps on its own condition variable; an async waiter is
 * woken by a call on the I/O thread (its kick), made once entry->mu is let
 * go, since the kick runs the waiter's machine, which takes it again, and
 * made through the I/O thread when a user thread hands the wake-up out.
 *
 * The first waiter makes the entry join its channel and the last one makes
 * it leave (pubsub.c, which then sets the subscription flags here).
 */
#include "entry_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- waiters */

static void unlink_waiter(entry *e, rlock__waiter *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        e->head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    else
        e->tail = w->prev;
    w->next = w->prev = NULL;
}

static void append_waiter(entry *e, rlock__waiter *w)
{
    w->next = NULL;
    w->prev = e->tail;
    if (e->tail != NULL)
        e->tail->next = w;
    else
        e->head = w;
    e->tail = w;
}

/* Whether w's wait for want is over. e->mu held. */
static bool wait_met(const entry *e, const rlock__waiter *w, int want)
{
    if (want == RLOCK__WAIT_PERMIT)
        return w->permit;
    return e->subscribed || e->unheard;
}

/* Wakes w if it sleeps for what just happened: a blocked thread at once;
 * an async waiter's kick must wait until e->mu is let go (deliver()), so
 * this only notes that one is due. e->mu held. */
static void wake_waiter(entry *e, rlock__waiter *w, bool *kick_due)
{
    if (w->want == RLOCK__WAIT_NONE || !wait_met(e, w, w->want))
        return;
    if (w->cv != NULL)
        pthread_cond_signal(w->cv);
    else if (w->kick != NULL)
        *kick_due = true;
}

/* Kicks, one by one, every async waiter whose wait is over, consuming its
 * wake-up. I/O thread, with no entry mutex held: a kick runs the waiter's
 * machine, which may take it, leave, or end another waiter's call; so each
 * is looked up afresh, never kept across a kick. */
static void kick_due_waiters(entry *e)
{
    for (;;) {
        rlock__waiter *w;
        pthread_mutex_lock(&e->mu);
        for (w = e->head; w != NULL; w = w->next)
            if (w->cv == NULL && w->kick != NULL &&
                w->want != RLOCK__WAIT_NONE && wait_met(e, w, w->want))
                break;
        if (w != NULL) {
            if (w->want == RLOCK__WAIT_PERMIT)
                w->permit = false;
            w->want = RLOCK__WAIT_NONE;
        }
        pthread_mutex_unlock(&e->mu);
        if (w == NULL)
            return;
        w->kick(w);
    }
}

typedef struct kick_task {
    rlock__task task;
    rlock__entry *entry; /* referenced */
} kick_task;

static void run_kicks(rlock__task *t, int status)
{
    kick_task *kt = (kick_task *)t;
    if (status == 0)
        kick_due_waiters(entry_of(kt->entry));
    rlock__entry_unref(kt->entry);
    free(kt);
}

/* Kicks the async waiters due, once e->mu is let go: here on the I/O
 * thread, else through it. Out of memory, such a waiter wakes at its next
 * re-check instead. */
static void deliver(entry *e, bool kick_due)
{
    if (!kick_due)
        return;
    if (rlock__loop_on_thread(e->pub.client->loop)) {
        kick_due_waiters(e);
        return;
    }
    kick_task *kt = rlock__calloc(1, sizeof(*kt));
    if (kt == NULL)
        return;
    kt->task.run = run_kicks;
    rlock__entry_ref(&e->pub);
    kt->entry = &e->pub;
    rlock__loop_submit(e->pub.client->loop, &kt->task);
}

/* Hands one wake-up out: to the first waiter asleep for one, else to the
 * first busy waiter without one; it goes to the back of the list. Returns
 * false when every waiter already has one. e->mu held. */
static bool give_permit(entry *e, bool *kick_due)
{
    rlock__waiter *busy = NULL, *w;
    for (w = e->head; w != NULL; w = w->next) {
        if (w->permit)
            continue;
        if (w->want == RLOCK__WAIT_PERMIT)
            break;
        if (busy == NULL)
            busy = w;
    }
    if (w == NULL)
        w = busy;
    if (w == NULL)
        return false;
    w->permit = true;
    unlink_waiter(e, w);
    append_waiter(e, w);
    wake_waiter(e, w, kick_due);
    return true;
}

static void give_all(entry *e, bool *kick_due)
{
    for (rlock__waiter *w = e->head; w != NULL; w = w->next) {
        w->permit = true;
        wake_waiter(e, w, kick_due);
    }
}

/* Counts w among e's waiters, joining the channel if it is the first.
 * kick: how to wake an async waiter (NULL for a blocked thread); w->need
 * is the only field the caller sets (0 for a lock's waiter). Returns
 * true when w came back to e while it lingered in its channel, subscribed:
 * e has heard every message since its last waiter left (one that came
 * meanwhile is w's wake-up now). Else whatever e's subscription flag says
 * later tells nothing of what was published before w came: the I/O thread
 * may confirm a new SUBSCRIBE, or a stay the linger timer just ended,
 * before w's thread looks at it. */
bool rlock__waiter_enter(rlock__entry *pub, rlock__waiter *w,
                         void (*kick)(rlock__waiter *w))
{
    entry *e = entry_of(pub);
    int need = w->need; /* the caller's, set before it enters */
    memset(w, 0, sizeof(*w));
    w->entry = pub;
    w->kick = kick;
    w->need = need;
    pthread_mutex_lock(&e->mu);
    append_waiter(e, w);
    bool first = e->nwaiters++ == 0;
    /* a lingering entry is still in its channel: nothing to join */
    bool joined = first && e->linger_until_ms != 0 && e->subscribed;
    e->linger_until_ms = 0;
    if (first && !joined) {
        e->subscribed = false;
        e->unheard = false;
    }
    if (e->banked) {
        w->permit = true;
        e->banked = false;
    }
    pthread_mutex_unlock(&e->mu);
    if (first && !joined)
        rlock__pubsub_sync(pub); /* on failure: re-checks alone */
    return joined;
}

/* Makes e stay in its channel for ms after its last waiter leaves (0: it
 * leaves at once), keeping a wake-up that comes meanwhile for the next
 * waiter: a queued RLock waiter's own channel, which only that waiter's
 * turn is published on, between one wait and the next. */
void rlock__entry_set_linger(rlock__entry *pub, int64_t ms)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    e->linger_ms = ms;
    pthread_mutex_unlock(&e->mu);
}

/* Ends e's stay in its channel if it is over and no waiter came back:
 * from now on a new waiter joins the channel afresh. Returns true if it
 * did. I/O thread. */
bool rlock__entry_linger_over(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    bool over = e->nwaiters == 0 && e->linger_until_ms != 0 &&
                rlock__now_ms() >= e->linger_until_ms;
    if (over) {
        e->linger_until_ms = 0;
        e->subscribed = false;
        e->banked = false;
    }
    pthread_mutex_unlock(&e->mu);
    return over;
}

/* How long e still lingers in its channel with no waiter (ms), or 0. */
int64_t rlock__entry_linger_left(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    int64_t left = e->nwaiters == 0 && e->linger_until_ms != 0
                       ? e->linger_until_ms - rlock__now_ms()
                       : 0;
    pthread_mutex_unlock(&e->mu);
    return left > 0 ? left : 0;
}

/* Takes w out of its entry's waiters; a wake-up it did not use goes to
 * another. The last waiter leaves the channel. Thread-safety: an async
 * waiter's on the I/O thread. */
void rlock__waiter_leave(rlock__waiter *w)
{
    entry *e = entry_of(w->entry);
    bool kick_due = false;
    pthread_mutex_lock(&e->mu);
    unlink_waiter(e, w);
    bool last = --e->nwaiters == 0;
    bool linger = last && e->linger_ms > 0 && e->subscribed;
    if (linger)
        e->linger_until_ms = rlock__now_ms() + e->linger_ms;
    if (w->permit && !last)
        give_permit(e, &kick_due);
    w->permit = false;
    w->want = RLOCK__WAIT_NONE;
    pthread_mutex_unlock(&e->mu);
    deliver(e, kick_due);
    if (linger)
        rlock__pubsub_linger(w->entry, e->linger_ms);
    else if (last)
        rlock__pubsub_sync(w->entry);
}

/* Returns true, consuming the permit, when w's wait for want is already
 * over; else notes that w sleeps for it (its wake-up will come) and
 * returns false. For the async driver: it arms its timer on false. */
bool rlock__waiter_take(rlock__waiter *w, int want)
{
    entry *e = entry_of(w->entry);
    pthread_mutex_lock(&e->mu);
    bool met = wait_met(e, w, want);
    if (met && want == RLOCK__WAIT_PERMIT)
        w->permit = false;
    w->want = met ? RLOCK__WAIT_NONE : want;
    pthread_mutex_unlock(&e->mu);
    return met;
}

/* w no longer sleeps (its timer ended the wait): no wake-up is handed to
 * it as to a sleeper until it waits again. */
void rlock__waiter_stop(rlock__waiter *w)
{
    entry *e = entry_of(w->entry);
    pthread_mutex_lock(&e->mu);
    w->want = RLOCK__WAIT_NONE;
    pthread_mutex_unlock(&e->mu);
}

/* Blocks the calling thread until w's wait for want is over or until_ms,
 * on cv (the thread's own, made with the client's monotonic clock).
 * Returns true when the wait ended because it was over (woken), false at
 * until_ms. A permit is consumed even after a timeout: it was meant for
 * this thread. */
bool rlock__waiter_block(rlock__waiter *w, int want, int64_t until_ms,
                         pthread_cond_t *cv)
{
    entry *e = entry_of(w->entry);
    struct timespec ts;
    rlock__abs_timespec(until_ms, &ts);
    pthread_mutex_lock(&e->mu);
    w->cv = cv;
    w->want = want;
    while (!wait_met(e, w, want) &&
           pthread_cond_timedwait(cv, &e->mu, &ts) != ETIMEDOUT)
        ;
    bool woken = wait_met(e, w, want);
    if (want == RLOCK__WAIT_PERMIT)
        w->permit = false;
    w->want = RLOCK__WAIT_NONE;
    w->cv = NULL;
    pthread_mutex_unlock(&e->mu);
    return woken;
}

/* ------------------------------------------------------------ subscriber */

/* Whether e should be in its channel: it has waiters, or lingers. */
bool rlock__entry_wants_channel(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    bool wanted = e->nwaiters > 0 || (e->linger_until_ms != 0 &&
                                      rlock__now_ms() < e->linger_until_ms);
    pthread_mutex_unlock(&e->mu);
    return wanted;
}

/* Whether e's channel subscription is confirmed. */
bool rlock__entry_subscribed(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    bool subscribed = e->subscribed;
    pthread_mutex_unlock(&e->mu);
    return subscribed;
}

/* Sets e's subscription flag (wake_all: and wakes every waiter to re-try,
 * as after an interruption); either way its waiters wait for a
 * subscription again, or stop waiting for one. I/O thread. */
void rlock__entry_set_subscribed(rlock__entry *pub, bool subscribed,
                                 bool wake_all)
{
    entry *e = entry_of(pub);
    bool kick_due = false;
    pthread_mutex_lock(&e->mu);
    e->subscribed = subscribed;
    e->unheard = false;
    if (wake_all)
        give_all(e, &kick_due);
    if (wake_all && e->nwaiters == 0 && e->linger_until_ms != 0)
        e->banked = true; /* messages may have been missed meanwhile */
    for (rlock__waiter *w = e->head; w != NULL; w = w->next)
        if (w->want == RLOCK__WAIT_SUBSCRIBED)
            wake_waiter(e, w, &kick_due);
    pthread_mutex_unlock(&e->mu);
    deliver(e, kick_due);
}

/* Tells e's waiters that no subscription is coming: they re-check. I/O
 * thread. */
void rlock__entry_set_unheard(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    bool kick_due = false;
    pthread_mutex_lock(&e->mu);
    e->subscribed = false;
    e->unheard = true;
    for (rlock__waiter *w = e->head; w != NULL; w = w->next)
        if (w->want == RLOCK__WAIT_SUBSCRIBED)
            wake_waiter(e, w, &kick_due);
    pthread_mutex_unlock(&e->mu);
    deliver(e, kick_due);
}

/* An unlock message arrived: one more waiter may try (all, for "1").
 * Returns false when the message found nobody to wake (no waiter, or every
 * one has a wake-up already). I/O thread. */
bool rlock__entry_wake(rlock__entry *pub, bool all)
{
    entry *e = entry_of(pub);
    bool kick_due = false, woke;
    pthread_mutex_lock(&e->mu);
    if (all) {
        woke = false;
        for (rlock__waiter *w = e->head; w != NULL && !woke; w = w->next)
            woke = !w->permit;
        give_all(e, &kick_due);
    } else {
        woke = give_permit(e, &kick_due);
    }
    if (!woke && e->nwaiters == 0 && e->linger_until_ms != 0) {
        e->banked = true; /* for its next waiter */
        woke = true;
    }
    pthread_mutex_unlock(&e->mu);
    deliver(e, kick_due);
    return woke;
}

/* A semaphore's channel said that permits are available now: wakes, in
 * turn, waiters whose wants those permits cover, as many as could succeed
 * (Redisson wakes min(waiters, permits), whatever each wants), preferring
 * those asleep. Returns false when it woke nobody. I/O thread. */
bool rlock__entry_wake_permits(rlock__entry *pub, int64_t permits)
{
    entry *e = entry_of(pub);
    bool kick_due = false, woke = false;
    pthread_mutex_lock(&e->mu);
    for (int pass = 0; pass < e->nwaiters && permits > 0; pass++) {
        rlock__waiter *pick = NULL;
        for (rlock__waiter *w = e->head; w != NULL; w = w->next) {
            int64_t need = w->need > 0 ? w->need : 1;
            if (w->permit || need > permits)
                continue;
            if (pick == NULL || (w->want == RLOCK__WAIT_PERMIT &&
                                 pick->want != RLOCK__WAIT_PERMIT))
                pick = w;
        }
        if (pick == NULL)
            break;
        permits -= pick->need > 0 ? pick->need : 1;
        pick->permit = true;
        unlink_waiter(e, pick);
        append_waiter(e, pick);
        wake_waiter(e, pick, &kick_due);
        woke = true;
    }
    pthread_mutex_unlock(&e->mu);
    deliver(e, kick_due);
    return woke;
}
