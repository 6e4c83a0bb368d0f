/*
 * acquire.c: one acquire, as a state machine written once for the blocking
 * and the async API (core.h says how drivers run it).
 *
 * Waiting (facts sheet 1.6): try; when someone else holds the lock, join
 * its channel, wait for the subscription (at most Redisson's
 * subscriptionTimeout), try again (closing the gap between the first try and
 * the subscription), then sleep until an unlock message's wake-up comes, or
 * until the TTL the holder's lease was reported to have, or the re-check
 * interval, whichever is first; try again, until the deadline. A wake-up
 * that arrives while a try is out is kept (entry_waiters.c), so none is
 * lost between a failed try and the next sleep. A spin lock has no
 * channel: it backs off between tries. A fair lock's waiter waits on its
 * own channel, and leaves the queue when it stops waiting without the
 * lock.
 *
 * An RLock's waiter (with rlock's queue) first tries Redisson's one-key
 * script, and goes through the queue's script once it found the lock
 * taken (busy_queued says where it then waits); TRYAGAIN for that script
 * (its slot migrating) sends it back to the one-key script.
 *
 * Anti-barging: a new acquire of a kind that lets anyone in may first wait
 * its turn (first_wait_ms); otherwise a thread that just unlocked would take
 * the lock straight back, ahead of the waiters its unlock message is waking.
 * rlock_config_set_lock_barging() turns it off: Redisson's own behaviour.
 *
 * Lost replies: an attempt whose connection dropped may or may not have run,
 * so before trying again the machine removes the hold it may have taken (a
 * phantom; send_drop), retrying at once, then every retry interval, at most
 * retry_attempts times. An attempt whose reply never came by its deadline
 * ends the acquire (RLOCK_ETIMEDOUT); the transport gives back what its late
 * reply took (request.c, direct_round_trip.c, and the async driver).
 *
 * The wait budget: an attempt's, a drop's and a fair waiter's leaving
 * carry the caller's deadline (send_by_ms), past which the transport waits
 * for nothing but a reply to what it already sent (in a cluster, route.c's
 * back-offs while a master fails over stop there). A phantom whose drop
 * could not get through by then is left to expire with its lease (the
 * acquire ends RLOCK_ECONN): a drop sent later could overtake the owner's
 * next acquire and remove a hold it really has.
 */
#include "core.h"

#include <stdlib.h>

/* Redisson's subscriptionTimeout: how long a waiter waits for its channel
 * subscription before carrying on with re-checks alone. */
#define RLOCK__SUBSCRIBE_WAIT_MS 7500

/* The anti-barging wait (first_wait_ms). */
#define RLOCK__YIELD_AFTER_RELEASE_MS 10
#define RLOCK__CONTENDED_WINDOW_MS    1000
#define RLOCK__YIELD_MS               2

/* How long a queued RLock waiter's own channel stays subscribed after its
 * wait, for its next one: a process looping on a contended lock queues
 * again within a few handoffs, and then needs no SUBSCRIBE. */
#define RLOCK__QUEUE_LINGER_MS 1000

/* How long after a head's grace a waiter behind it looks again. */
#define RLOCK__QUEUE_GRACE_SLACK_MS 20

enum {
    A_IDLE,
    A_ACQUIRING,   /* an attempt is out */
    A_DROPPING,    /* the drop of a phantom hold is out */
    A_PAUSING,     /* a retry pause, or a spin lock's back-off */
    A_QUEUED,      /* waiting its turn before its first try */
    A_SUBSCRIBING, /* waiting for its channel */
    A_WAITING,     /* for a wake-up, the TTL or the re-check */
    A_GIVING_UP,   /* a fair waiter's leaving the queue is out */
    A_GIVING_BACK, /* cancelled after it took the lock: giving it back */
    A_DONE,
};

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static rlock_client *client_of(const rlock__acquire *a)
{
    return a->entry->client;
}

/* The lease a hold taken by a gets in Redis. */
static int64_t effective_lease(const rlock__acquire *a)
{
    return a->lease_ms == RLOCK_LEASE_WATCHDOG
               ? client_of(a)->cfg.watchdog_timeout_ms
               : a->lease_ms;
}

/* The time one round trip may take: a command timeout, and none past the
 * caller's deadline plus one command timeout (bounded: past the deadline),
 * however many steps (an attempt, a phantom's drop, a fair waiter's
 * leaving) come after it. */
static int64_t round_trip_ms(const rlock__acquire *a, bool bounded)
{
    int64_t t = client_of(a)->cfg.command_timeout_ms;
    if (a->deadline_ms <= INT64_MAX - t) {
        int64_t end = bounded ? a->deadline_ms : a->deadline_ms + t;
        int64_t left = end - rlock__now_ms();
        t = min64(t, left > 1 ? left : 1);
    }
    return t;
}

static int64_t call_timeout(const rlock__acquire *a)
{
    return round_trip_ms(a, a->bounded);
}

/* A request for spec s filled with result rc (0 or why it was not), or
 * NULL. */
static rlock__req *req_of(rlock_client *c, rlock__spec *s, int rc)
{
    if (rc != 0)
        return NULL;
    rlock__req *r = rlock__req_from_spec(c, s);
    rlock__spec_clear(s);
    return r;
}

static rlock__step done(rlock__acquire *a, int status)
{
    a->state = A_DONE;
    rlock__stats_acquire_done(client_of(a)->stats, status, a->waited,
                              a->started_us);
    return (rlock__step){.kind = RLOCK__STEP_DONE, .status = status};
}

static rlock__step finish(rlock__acquire *a, int status);

/* No back-off or resend of r waits past the caller's deadline (see the
 * file comment). */
static void send_by(const rlock__acquire *a, rlock__req *r)
{
    if (a->deadline_ms != INT64_MAX)
        r->send_by_ms = a->deadline_ms;
}

static rlock__step send(rlock__acquire *a, int state, rlock__req *r,
                        int64_t timeout_ms)
{
    if (r == NULL)
        return finish(a, RLOCK_ENOMEM);
    send_by(a, r);
    a->state = state;
    return (rlock__step){
        .kind = RLOCK__STEP_SEND, .req = r, .timeout_ms = timeout_ms};
}

static rlock__step wait_for(rlock__acquire *a, int state, int want,
                            int64_t until_ms)
{
    a->state = state;
    return (rlock__step){.kind = RLOCK__STEP_WAIT,
                         .waiter = want != RLOCK__WAIT_NONE ? &a->waiter
                                                            : NULL,
                         .want = want,
                         .until_ms = until_ms};
}

/* Whether a's waiters queue in rlock's own keys (lock_acquire_queued.lua):
 * an RLock's, unless barging or the queue is turned off, or the queue's
 * script cannot run while the lock's cluster slot migrates (a waits as
 * with the queue off then). */
static bool queued_kind(const rlock__acquire *a)
{
    const rlock_client *c = client_of(a);
    return a->entry->kind == RLOCK_KIND_LOCK && c->cfg.lock_queue &&
           !c->cfg.lock_barging && !a->queue_off;
}

/* Whether this client saw e contended within the last
 * RLOCK__CONTENDED_WINDOW_MS: an attempt found it taken, or its unlock was
 * heard by a waiter. An RLock acquire then goes through the queue's script
 * from its first try; otherwise a process looping on a contended lock
 * would take it back with the one-key try, ahead of the queue, every time
 * it unlocks. */
static bool contended_lately(const rlock__acquire *a, int64_t now)
{
    rlock__entry_view v;
    rlock__entry_look(a->entry, a->owner, &v);
    return v.contended_at_ms > 0 &&
           now - v.contended_at_ms < RLOCK__CONTENDED_WINDOW_MS;
}

/* Counts a among the waiters of the entry it waits on: the lock's (own
 * false), or the one of its own channel (a fair waiter's, and a queued
 * RLock waiter's behind the head). *heard (if not NULL): whether that
 * entry was still in its channel, subscribed, from its last wait
 * (rlock__waiter_enter). Returns 0 or RLOCK_ENOMEM. */
static int enter(rlock__acquire *a, bool own, bool *heard)
{
    rlock__entry *to = a->entry;
    if (own) {
        if (a->wait_entry == NULL)
            a->wait_entry = rlock__fair_waiter_entry(a->entry, a->owner);
        if (a->wait_entry == NULL)
            return RLOCK_ENOMEM;
        to = a->wait_entry;
    }
    bool stayed = rlock__waiter_enter(to, &a->waiter, a->kick);
    if (heard != NULL)
        *heard = stayed;
    a->entered = true;
    return RLOCK_OK;
}

static void leave(rlock__acquire *a)
{
    if (a->entered)
        rlock__waiter_leave(&a->waiter);
    a->entered = false;
}

/* Ends the acquire with status. A fair waiter that may have queued and
 * goes without the lock first leaves the queue, so that those behind it
 * need not wait out its slack (not when the client is closing); so does a
 * queued RLock waiter, whose leaving as the head tells the next. */
static rlock__step finish(rlock__acquire *a, int status)
{
    leave(a);
    bool may_queue = a->entry->kind == RLOCK_KIND_FAIR ||
                     (queued_kind(a) && a->queued);
    if (may_queue && a->wait_ms != 0 &&
        status != RLOCK_OK && status != RLOCK_ECLOSED &&
        a->state != A_GIVING_UP) {
        rlock__spec spec;
        int64_t slack = a->wait_ms > 0 ? a->wait_ms : 0;
        rlock__req *r =
            req_of(client_of(a), &spec,
                   rlock__spec_give_up(&spec, a->entry, a->owner, slack));
        if (r != NULL) { /* else its place expires with its slack */
            send_by(a, r);
            /* in a migrating slot its place is left to expire */
            r->tryagain_ends = true;
            a->result = status;
            a->state = A_GIVING_UP;
            return (rlock__step){.kind = RLOCK__STEP_SEND,
                                 .req = r,
                                 .timeout_ms = round_trip_ms(a, false)};
        }
    }
    return done(a, status);
}

/* After an attempt whose reply was lost with its connection, the script
 * may or may not have run. Kinds with a drop script remove every hold in
 * the owner's field beyond those this client knows of, whichever kind took
 * them (lock_drop.lua; fair_drop.lua, and a write side's write_drop.lua in
 * its own field), so a phantom, even a reentrant one, is gone and another
 * kind's hold on the name stays. A read side gives one release (if the
 * owner held no hold before: a reentrant phantom cannot be told apart
 * there and is left to the lease). The reply is waited for, so that the
 * drop cannot overtake a retried acquire on another connection. */
static rlock__step send_drop(rlock__acquire *a)
{
    rlock__entry *e = a->entry;
    rlock__req *r;
    if (rlock__kind_has_drop(e->kind)) {
        rlock__spec spec;
        int known = rlock__owner_known_holds(e, a->owner);
        r = req_of(e->client, &spec,
                   rlock__spec_drop_phantom(&spec, e, a->owner, known));
    } else {
        r = rlock__release_req(e, a->owner, effective_lease(a), false);
    }
    return send(a, A_DROPPING, r, call_timeout(a));
}

/* One attempt, or, after a lost one, the drop of its phantom first. */
static rlock__step try_once(rlock__acquire *a)
{
    rlock__entry *e = a->entry;
    if (a->unknown) {
        if (rlock__kind_has_drop(e->kind) ||
            !rlock__hold_valid(e, a->owner, NULL))
            return send_drop(a);
        a->unknown = false; /* a reentrant phantom: left to the lease */
    }
    /* an RLock's try goes through the queue's script only once it found
     * the lock taken (in_turn); else it is Redisson's one-key script, which
     * a migrating slot serves too */
    bool in_queue = a->wait_ms != 0 && queued_kind(a) && a->in_turn;
    bool one_key = a->wait_ms == 0 ||
                   (e->kind == RLOCK_KIND_LOCK && !in_queue);
    rlock__spec spec;
    rlock__req *r = req_of(e->client, &spec,
                           rlock__spec_acquire(&spec, e, a->owner,
                                               a->lease_ms,
                                               a->wait_ms > 0 ? a->wait_ms
                                                              : 0,
                                               one_key, a->non_reentrant));
    if (r != NULL && in_queue) {
        /* queued from its send on: a reply lost or late still leaves a
         * place to give up */
        a->queued = true;
        r->tryagain_ends = true;
    }
    if (r != NULL) {
        /* a hold its late reply takes is given back (see the file
         * comment): the request says whose it is */
        rlock__entry_ref(e);
        r->lock_entry = e;
        r->lock_owner = a->owner;
        r->lock_lease_ms = effective_lease(a);
    }
    return send(a, A_ACQUIRING, r, call_timeout(a));
}

/* How long a new acquire first waits for its turn before it tries, or 0
 * to try at once (Redisson's RLock barges, and its waiters then wait for
 * seconds under contention):
 * - behind local waiters already waiting (subscribed), it waits for a
 *   wake-up like them, or until the lease their last try was told of ends;
 * - other processes cannot be seen waiting, so when this client released
 *   the lock moments ago and its own attempts found it taken within the
 *   last second, it gives them RLOCK__YIELD_MS (or until the next message).
 * Never for an owner that holds it (reentry). */
static int64_t first_wait_ms(const rlock__acquire *a, int64_t now)
{
    if (client_of(a)->cfg.lock_barging || queued_kind(a))
        return 0; /* Redisson's; or the queue's script decides */
    rlock__entry_view v;
    rlock__entry_look(a->entry, a->owner, &v);
    if (v.holds)
        return 0;
    if (v.queue) {
        /* not past the lease the last try was told: with no unlock
         * message (the holder's lease ran out), the waiters try again
         * then, and so does this one */
        int64_t wait = client_of(a)->cfg.recheck_interval_ms;
        if (v.free_by_ms > 0)
            wait = min64(wait, v.free_by_ms > now ? v.free_by_ms - now : 1);
        return wait;
    }
    if (v.released_at_ms > 0 &&
        now - v.released_at_ms < RLOCK__YIELD_AFTER_RELEASE_MS &&
        v.contended_at_ms > 0 &&
        now - v.contended_at_ms < RLOCK__CONTENDED_WINDOW_MS)
        return RLOCK__YIELD_MS;
    return 0;
}

/* The next back-off of a spin lock after failures failed tries: the pause
 * grows by multiplier plus a random 0..failures-1 ms, up to max_ms (facts
 * sheet section 6). */
int64_t rlock__spin_next_delay(int64_t delay_ms, int failures,
                               int64_t max_ms, int multiplier,
                               unsigned *seed)
{
    int64_t next = delay_ms * multiplier +
                   (failures > 0 ? rand_r(seed) % failures : 0);
    return min64(next, max_ms);
}

/* Sleeps until a wake-up, the TTL last replied, the re-check interval or
 * the deadline, whichever is first. */
static rlock__step sleep_until_retry(rlock__acquire *a, int64_t now)
{
    int64_t until = now + client_of(a)->cfg.recheck_interval_ms;
    if (a->ttl_ms >= 0)
        until = min64(until, now + (a->ttl_ms > 0 ? a->ttl_ms : 1));
    else if (a->ttl_ms == RLOCK__QUEUE_BEHIND_FREE)
        /* behind a head that left the lock free: once its grace is over,
         * this try drops it if it is dead */
        until = min64(until, now + RLOCK__QUEUE_HEAD_GRACE_MS +
                                 RLOCK__QUEUE_GRACE_SLACK_MS);
    if (now >= a->deadline_ms)
        return finish(a, RLOCK_ETIMEDOUT);
    return wait_for(a, A_WAITING, RLOCK__WAIT_PERMIT,
                    min64(until, a->deadline_ms));
}

/* A queued RLock waiter (lock_acquire_queued.lua) that did not get the
 * lock. The head of the queue waits on the lock's own channel, for
 * Redisson's unlock message (whoever unlocks, rlock or Redisson); the
 * others wait on a channel of their own, which hears only that their turn
 * came (the head before them took the lock or left), and re-check to keep
 * their place. A waiter whose place changed moves to the other channel,
 * and tries again once it is subscribed there, for what it missed
 * meanwhile. */
static rlock__step busy_queued(rlock__acquire *a, int64_t now)
{
    bool head = a->ttl_ms >= 0;
    bool in_place = a->entered && (a->waiter.entry == a->entry) == head;
    if (a->wait_ms == 0)
        return finish(a, RLOCK_ETIMEDOUT); /* it was not queued */
    if (in_place)
        return sleep_until_retry(a, now);
    leave(a);
    bool heard = false;
    int rc = enter(a, !head, &heard);
    if (rc != 0)
        return finish(a, rc);
    if (!head) {
        /* its own channel stays a while after it (RLOCK__QUEUE_LINGER_MS),
         * keeping for it a turn told meanwhile: when it was still there,
         * subscribed, as it came back, no try is needed for what was told
         * before. Not when it joined afresh, however soon the subscription
         * is confirmed: its turn may have been told between its try and
         * the SUBSCRIBE, and nobody tells it again */
        rlock__entry_set_linger(a->wait_entry, RLOCK__QUEUE_LINGER_MS);
        if (heard)
            return sleep_until_retry(a, now);
    }
    return wait_for(a, A_SUBSCRIBING, RLOCK__WAIT_SUBSCRIBED,
                    min64(a->deadline_ms,
                          now + min64(RLOCK__SUBSCRIBE_WAIT_MS,
                                      client_of(a)->cfg.recheck_interval_ms)));
}

/* The lock is someone else's (an attempt answered with its TTL): wait. */
static rlock__step busy(rlock__acquire *a)
{
    rlock__entry *e = a->entry;
    int64_t now = rlock__now_ms();
    a->waited = true;
    if (e->kind == RLOCK_KIND_SPIN) {
        /* no channel: back off (facts sheet section 6) */
        if (now >= a->deadline_ms)
            return finish(a, RLOCK_ETIMEDOUT);
        int64_t pause = min64(a->spin_delay_ms, a->deadline_ms - now);
        a->spin_delay_ms = rlock__spin_next_delay(
            a->spin_delay_ms, ++a->spin_failures, a->spin_max_ms,
            a->spin_multiplier, &a->seed);
        return wait_for(a, A_PAUSING, RLOCK__WAIT_NONE, now + pause);
    }
    rlock__entry_note_contended(e, a->ttl_ms);
    if (queued_kind(a) && !a->in_turn) {
        /* the one-key try found it taken: join the queue at once */
        if (a->wait_ms == 0)
            return finish(a, RLOCK_ETIMEDOUT);
        a->in_turn = true;
        return try_once(a);
    }
    if (queued_kind(a))
        return busy_queued(a, now);
    if (!a->entered) {
        if (a->wait_ms == 0)
            return finish(a, RLOCK_ETIMEDOUT);
        int rc = enter(a, e->kind == RLOCK_KIND_FAIR, NULL);
        if (rc != 0)
            return finish(a, rc);
        return wait_for(a, A_SUBSCRIBING, RLOCK__WAIT_SUBSCRIBED,
                        min64(a->deadline_ms, now + RLOCK__SUBSCRIBE_WAIT_MS));
    }
    return sleep_until_retry(a, now);
}

static rlock__step on_attempt(rlock__acquire *a, rlock__req *r, int status)
{
    bool acquired = status == 0 && r->nil;
    if (acquired && a->canceled) {
        /* the caller is told once nothing is held any more */
        a->result = RLOCK_ECANCELED;
        rlock__req *back = rlock__release_req(r->lock_entry, r->lock_owner,
                                              r->lock_lease_ms, true);
        if (back == NULL)
            return done(a, RLOCK_ECANCELED); /* expires with its lease */
        a->state = A_GIVING_BACK;
        return (rlock__step){
            .kind = RLOCK__STEP_SEND,
            .req = back,
            .timeout_ms = client_of(a)->cfg.command_timeout_ms};
    }
    if (acquired) {
        if (a->rechecking) /* a message was missed, or never sent */
            rlock__stats_count(client_of(a)->stats,
                               RLOCK__STAT_RECHECKS_FOUND_FREE);
        rlock__hold_add(a->entry, a->owner, a->lease_ms, a->spare);
        a->spare = NULL;
        a->token = r->token;
        return finish(a, RLOCK_OK);
    }
    if (a->canceled)
        return finish(a, RLOCK_ECANCELED);
    if (status == RLOCK_ECONN) {
        a->unknown = true;
        return try_once(a); /* the drop, at once */
    }
    if (status != 0 && r->tryagain && queued_kind(a)) {
        /* the queue's keys and the lock's are not all on one node while
         * its slot migrates: this acquire waits as with the queue off,
         * on the lock's channel (its place in the queue expires) */
        a->queue_off = true;
        a->queued = false;
        leave(a);
        return try_once(a);
    }
    if (status != 0)
        return finish(a, status);
    a->ttl_ms = r->value;
    a->attempts = 0;
    return busy(a);
}

static rlock__step on_dropped(rlock__acquire *a, int status)
{
    rlock_client *c = client_of(a);
    if (a->canceled)
        return finish(a, RLOCK_ECANCELED);
    if (status == 0)
        a->unknown = false;
    else if (status != RLOCK_ECONN)
        return finish(a, status);
    /* at once after the first failure, or when the drop got through (the
     * connections work again); else after the retry interval */
    int64_t pause =
        a->attempts == 0 || status == 0 ? 0 : c->cfg.retry_interval_ms;
    int64_t now = rlock__now_ms();
    if (a->attempts >= c->cfg.retry_attempts ||
        (pause > 0 && now + pause >= a->deadline_ms))
        return finish(a, RLOCK_ECONN);
    a->attempts++;
    if (pause == 0)
        return try_once(a);
    return wait_for(a, A_PAUSING, RLOCK__WAIT_NONE, now + pause);
}

static rlock__step acquire_reply(void *op, rlock__req *r, int status)
{
    rlock__acquire *a = op;
    switch (a->state) {
    case A_ACQUIRING:
        return on_attempt(a, r, status);
    case A_DROPPING:
        return on_dropped(a, status);
    case A_GIVING_UP:
    case A_GIVING_BACK:
        return done(a, a->result);
    default:
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    }
}

static rlock__step acquire_wake(void *op, bool woken)
{
    rlock__acquire *a = op;
    /* a wait for a wake-up that ran out: the next try is a re-check */
    a->rechecking = a->state == A_WAITING && !woken;
    if (a->state == A_WAITING && woken && queued_kind(a) && a->entered &&
        a->waiter.entry != a->entry) {
        /* a queued waiter's own channel says that it heads the queue now:
         * it joins the lock's channel and then tries (a try first would
         * only be told so) */
        a->ttl_ms = 0;
        return busy_queued(a, rlock__now_ms());
    }
    switch (a->state) {
    case A_QUEUED:
    case A_PAUSING:
    case A_SUBSCRIBING:
    case A_WAITING:
        return try_once(a);
    default:
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    }
}

/* Cancelled (RLOCK_ECANCELED) or closing (RLOCK_ECLOSED). With a request
 * out, a cancel waits for its reply, which gives back what it took; a close
 * ends at once (the late reply is the driver's to give back). */
static rlock__step acquire_cancel(void *op, int why)
{
    rlock__acquire *a = op;
    switch (a->state) {
    case A_ACQUIRING:
    case A_DROPPING:
        if (why == RLOCK_ECLOSED)
            return finish(a, why);
        a->canceled = true;
        leave(a);
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    case A_GIVING_UP:
    case A_GIVING_BACK:
        return why == RLOCK_ECLOSED ? done(a, a->result)
                                    : (rlock__step){.kind = RLOCK__STEP_NONE};
    case A_DONE:
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    default:
        return finish(a, why);
    }
}

const rlock__op_class rlock__acquire_class = {
    acquire_reply, acquire_wake, acquire_cancel};

/* Sets a up for owner's acquire of e (the caller keeps e referenced while
 * a lives), with a spin lock's default back-off. Returns 0, or
 * RLOCK_ENOMEM before anything is sent. */
int rlock__acquire_init(rlock__acquire *a, rlock__entry *e, uint64_t owner,
                        int64_t wait_ms, int64_t lease_ms)
{
    *a = (rlock__acquire){.entry = e,
                          .owner = owner,
                          .lease_ms = lease_ms,
                          .wait_ms = wait_ms,
                          .deadline_ms = INT64_MAX,
                          /* Redisson's exponential back-off (facts 1.9) */
                          .spin_initial_ms = 1,
                          .spin_max_ms = 128,
                          .spin_multiplier = 2,
                          .ttl_ms = -1};
    int64_t now = rlock__now_ms();
    if (wait_ms != RLOCK_WAIT_FOREVER && wait_ms <= INT64_MAX - now)
        a->deadline_ms = now + wait_ms;
    a->seed = (unsigned)(owner ^ (uint64_t)now);
    a->started_us = rlock__stats_clock(e->client->stats);
    a->spare = rlock__hold_spare();
    if (a->spare != NULL)
        return RLOCK_OK;
    rlock__stats_acquire_done(e->client->stats, RLOCK_ENOMEM, false,
                              a->started_us);
    return RLOCK_ENOMEM;
}

/* The first step: try at once, or wait its turn first. */
rlock__step rlock__acquire_start(rlock__acquire *a)
{
    rlock__entry *e = a->entry;
    a->spin_delay_ms = a->spin_initial_ms;
    /* a second acquire by the holder of a non-reentrant lock would wait
     * for itself: refused without a round trip (a lost hold may be taken
     * again) */
    if (a->non_reentrant && rlock__hold_check(e, a->owner) == RLOCK_OK)
        return done(a, RLOCK_EREENTRY);
    if (e->kind == RLOCK_KIND_SPIN)
        return try_once(a);
    /* for kinds that let anyone in: the fair lock's queue orders its
     * waiters, and readers share */
    bool barges = e->kind == RLOCK_KIND_LOCK || e->kind == RLOCK_KIND_FENCED ||
                  e->kind == RLOCK_KIND_WRITE;
    int64_t now = rlock__now_ms();
    if (queued_kind(a) && a->wait_ms != 0)
        a->in_turn = contended_lately(a, now);
    int64_t first = a->wait_ms != 0 && barges ? first_wait_ms(a, now) : 0;
    if (first == 0)
        return try_once(a);
    int rc = enter(a, false, NULL);
    if (rc != 0)
        return finish(a, rc);
    a->waited = true;
    if (now >= a->deadline_ms)
        return finish(a, RLOCK_ETIMEDOUT);
    return wait_for(a, A_QUEUED, RLOCK__WAIT_PERMIT,
                    min64(now + first, a->deadline_ms));
}

/* Frees what a still has; after its DONE step. */
void rlock__acquire_clear(rlock__acquire *a)
{
    leave(a);
    rlock__hold_spare_free(a->spare);
    a->spare = NULL;
    if (a->wait_entry != NULL && a->wait_entry != a->entry)
        rlock__entry_unref(a->wait_entry);
    a->wait_entry = NULL;
}
