/*
 * countdown.c: waiting for a count-down latch to open (Redisson's
 * RCountDownLatch.await), as one state machine written once for the
 * blocking and the async API, driven like the acquire machine (core.h).
 *
 * Waiting: read the count (GET); while it is above zero, join the latch's
 * channel, read it again once subscribed (closing the gap between the
 * first read and the subscription), then sleep until the "0" message's
 * wake-up, the re-check interval or the deadline, whichever is first, and
 * read it again. The re-check bounds what a lost message costs (a
 * subscription dropped, or a delete, whose "1" wakes nobody), so nothing
 * polls faster than the re-check interval.
 *
 * The wait budget holds when Redis is down: every read carries the
 * caller's deadline (send_by_ms) and a timeout cut to it, a read lost with
 * its connection is retried retry_attempts times, retry_interval apart,
 * never past the deadline.
 *
 * Also the message rule of a latch's channel: "0" (opened) wakes every
 * waiter of the entry, "1" (a new count, or deleted) none.
 */
#include "core.h"

/* As the acquire's (Redisson's subscriptionTimeout). */
#define SUBSCRIBE_WAIT_MS 7500

enum {
    W_IDLE,
    W_READING,     /* a GET is out */
    W_PAUSING,     /* before a read's retry */
    W_SUBSCRIBING, /* waiting for its channel */
    W_WAITING,     /* for the "0" message, or the re-check */
    W_DONE,
};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static rlock_client *client_of(const rlock__countdown_wait *w)
{
    return w->entry->client;
}

void rlock__countdown_describe(rlock__countdown_desc *d,
                               const rlock__entry *e)
{
    d->name = e->name;
    d->channel = e->channel;
    d->publish = e->client->publish;
    d->count = 0;
}

/* Whether a message on a latch entry's channel wakes its waiters (all of
 * them). I/O thread. */
bool rlock__countdown_heard(rlock__entry *e, const char *payload, size_t len)
{
    if (rlock__countdown_message(payload, len) != RLOCK__COUNTDOWN_OPENED)
        return false;
    return rlock__entry_wake(e, true);
}

static void leave(rlock__countdown_wait *w)
{
    if (w->entered)
        rlock__waiter_leave(&w->waiter);
    w->entered = false;
}

static rlock__step done(rlock__countdown_wait *w, int status)
{
    leave(w);
    w->state = W_DONE;
    return (rlock__step){.kind = RLOCK__STEP_DONE, .status = status};
}

static rlock__step wait_for(rlock__countdown_wait *w, int state, int want,
                            int64_t until_ms)
{
    w->state = state;
    return (rlock__step){.kind = RLOCK__STEP_WAIT,
                         .waiter = want != RLOCK__WAIT_NONE ? &w->waiter
                                                            : NULL,
                         .want = want,
                         .until_ms = until_ms};
}

/* One read of the count, whose round trip ends by the deadline. */
static rlock__step read_count(rlock__countdown_wait *w)
{
    rlock_client *c = client_of(w);
    rlock__countdown_desc d;
    rlock__spec s;
    rlock__countdown_describe(&d, w->entry);
    rlock__countdown_get(&s, &d);
    rlock__req *r = rlock__req_from_spec(c, &s);
    if (r == NULL)
        return done(w, RLOCK_ENOMEM);
    int64_t timeout = c->cfg.command_timeout_ms;
    if (w->deadline_ms != INT64_MAX) {
        r->send_by_ms = w->deadline_ms;
        int64_t left = w->deadline_ms - rlock__now_ms();
        timeout = min64(timeout, left > 1 ? left : 1);
    }
    w->state = W_READING;
    return (rlock__step){
        .kind = RLOCK__STEP_SEND, .req = r, .timeout_ms = timeout};
}

static rlock__step on_count(rlock__countdown_wait *w, rlock__req *r,
                            int status)
{
    rlock_client *c = client_of(w);
    int64_t now = rlock__now_ms();
    if (status == RLOCK_ECONN || status == RLOCK_ETIMEDOUT) {
        /* Redis unreachable or slow: retry while the budget lasts */
        if (w->attempts >= c->cfg.retry_attempts ||
            now + c->cfg.retry_interval_ms >= w->deadline_ms)
            return done(w, status);
        w->attempts++;
        return wait_for(w, W_PAUSING, RLOCK__WAIT_NONE,
                        now + c->cfg.retry_interval_ms);
    }
    if (status != 0)
        return done(w, status);
    w->attempts = 0;
    w->count = r->nil ? 0 : r->value;
    if (w->count <= 0)
        return done(w, RLOCK_OK);
    if (w->wait_ms == 0 || now >= w->deadline_ms)
        return done(w, RLOCK_ETIMEDOUT);
    if (!w->entered) {
        rlock__waiter_enter(w->entry, &w->waiter, w->kick);
        w->entered = true;
        return wait_for(w, W_SUBSCRIBING, RLOCK__WAIT_SUBSCRIBED,
                        min64(w->deadline_ms, now + SUBSCRIBE_WAIT_MS));
    }
    return wait_for(w, W_WAITING, RLOCK__WAIT_PERMIT,
                    min64(w->deadline_ms,
                          now + c->cfg.recheck_interval_ms));
}

static rlock__step countdown_reply(void *op, rlock__req *r, int status)
{
    rlock__countdown_wait *w = op;
    if (w->state != W_READING)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    return on_count(w, r, status);
}

static rlock__step countdown_wake(void *op, bool woken)
{
    rlock__countdown_wait *w = op;
    switch (w->state) {
    case W_SUBSCRIBING:
    case W_WAITING:
        if (!woken && rlock__now_ms() >= w->deadline_ms)
            return done(w, RLOCK_ETIMEDOUT);
        return read_count(w);
    case W_PAUSING:
        return read_count(w);
    default:
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    }
}

/* Cancelled or closing: nothing is held, so it ends at once (a read still
 * out is the driver's to drop). */
static rlock__step countdown_cancel(void *op, int why)
{
    rlock__countdown_wait *w = op;
    if (w->state == W_DONE)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    return done(w, why);
}

const rlock__op_class rlock__countdown_wait_class = {
    countdown_reply, countdown_wake, countdown_cancel};

/* Sets w up to wait wait_ms (RLOCK_WAIT_FOREVER: no deadline) for latch
 * entry e, which the caller keeps referenced while w lives. */
void rlock__countdown_wait_init(rlock__countdown_wait *w, rlock__entry *e,
                                int64_t wait_ms)
{
    *w = (rlock__countdown_wait){
        .entry = e, .wait_ms = wait_ms, .deadline_ms = INT64_MAX};
    int64_t now = rlock__now_ms();
    if (wait_ms != RLOCK_WAIT_FOREVER && wait_ms <= INT64_MAX - now)
        w->deadline_ms = now + wait_ms;
}

rlock__step rlock__countdown_wait_start(rlock__countdown_wait *w)
{
    return read_count(w);
}

/* Frees what w still has; after its DONE step. */
void rlock__countdown_wait_clear(rlock__countdown_wait *w)
{
    leave(w);
}
