/*
 * async.c: the asynchronous API (rlock_lock_async, rlock_unlock_async,
 * rlock_cancel) for event-loop servers, whose locks belong to requests
 * (explicit owner ids) rather than threads.
 *
 * Design notes. An async call is a small state machine that lives on the
 * client's I/O thread: it never blocks a thread, not even while waiting.
 * An acquire tries; when the lock is taken it becomes one of the entry's
 * async waiters (which keeps the entry in its unlock channel, as blocking
 * waiters do) and sleeps on a timer until the first of: an unlock message
 * (lock.c hands it one, taking turns with blocking waiters), the reported
 * TTL, the re-check interval, or its wait budget. The subscription's
 * confirmation re-tries every async waiter, closing the gap between the
 * first try and the subscription. A message that arrives while an attempt
 * is in flight is kept (op->permit) so that it is not lost.
 *
 * Hiredis's async API has no reply timeout, so an attempt in flight is
 * given the budget plus one command timeout, as a blocking call is; then
 * the acquire ends with RLOCK_ETIMEDOUT, and if the attempt's reply still
 * says it took the lock, the hold is given back at once (as command.c does
 * for an abandoned blocking acquire).
 *
 * Completions run on the attached user loop (delivered through an ev_async
 * watcher and a queue) or, with none attached, on the I/O thread.
 *
 * The user-loop bridge is closed as libuv closes a handle (uv_close): on
 * the loop's thread, or while no thread runs the loop (rlock.h's rule for
 * detaching and for rlock_client_free()). Closing stops the watcher at
 * once, so the loop keeps nothing of the client's; when the close happens
 * inside one of the bridge's own callbacks (a completion that frees the
 * client or detaches), the bridge's memory is freed only once that
 * callback has returned into it.
 *
 * Ops are I/O-thread objects: their fields are touched only there. An op is
 * freed once it has finished and no request of it is in flight.
 */
#include "internal.h"

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ completions */

typedef struct done_item {
    struct done_item *next;
    rlock_done_cb cb;
    rlock *lock;
    uint64_t owner;
    int status;
    void *arg;
} done_item;

/* The watcher on the user's loop. Its fields are the loop thread's (or,
 * while the loop does not run, the closing thread's). */
struct rlock__user_loop {
    ev_async wake;
    struct ev_loop *ev;
    rlock_client *client; /* NULL once closed */
    int draining;         /* on_user_wake() calls in progress */
    bool closed;          /* stopped: the last on_user_wake() frees it */
};

/* Runs every queued completion (user loop thread, or the freeing thread). */
static void drain_done(rlock_client *c)
{
    pthread_mutex_lock(&c->done_mu);
    done_item *items = c->done_head;
    c->done_head = c->done_tail = NULL;
    pthread_mutex_unlock(&c->done_mu);
    while (items != NULL) {
        done_item *next = items->next;
        items->cb(items->lock, items->owner, items->status, items->arg);
        free(items);
        items = next;
    }
}

static void on_user_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    struct rlock__user_loop *ul = w->data;
    (void)ev;
    (void)revents;
    ul->draining++;
    drain_done(ul->client); /* touches the client only before any callback */
    ul->draining--;
    if (ul->closed && ul->draining == 0)
        free(ul); /* a callback closed it: it is ours to free now */
}

/* Closes the bridge: stops its watcher (which also drops a wake-up already
 * sent) and frees it, or leaves that to the on_user_wake() it is called
 * from. On the loop's thread, or while no thread runs the loop. */
static void close_user_loop(struct rlock__user_loop *ul)
{
    ev_async_stop(ul->ev, &ul->wake);
    ul->client = NULL;
    if (ul->draining > 0)
        ul->closed = true;
    else
        free(ul);
}

/* Hands a completion to its consumer: queued for the user loop if one is
 * attached, else run here, on the I/O thread. */
static void deliver(rlock_client *c, rlock_done_cb cb, rlock *lock,
                    uint64_t owner, int status, void *arg)
{
    pthread_mutex_lock(&c->done_mu);
    struct rlock__user_loop *ul = c->user_loop;
    if (ul != NULL) {
        done_item *it = rlock__calloc(1, sizeof(*it));
        if (it != NULL) {
            *it = (done_item){NULL, cb, lock, owner, status, arg};
            if (c->done_tail != NULL)
                c->done_tail->next = it;
            else
                c->done_head = it;
            c->done_tail = it;
            /* under the mutex: a detach may free ul once it is released */
            ev_async_send(ul->ev, &ul->wake);
            pthread_mutex_unlock(&c->done_mu);
            return;
        }
        /* out of memory: run it here rather than lose it */
    }
    pthread_mutex_unlock(&c->done_mu);
    cb(lock, owner, status, arg);
}

int rlock_client_attach_loop(rlock_client *c, struct ev_loop *loop)
{
    int rc = rlock__client_check(c);
    if (rc != 0)
        return rc;
    struct rlock__user_loop *ul = NULL;
    if (loop != NULL) {
        ul = rlock__calloc(1, sizeof(*ul));
        if (ul == NULL)
            return RLOCK_ENOMEM;
        ul->ev = loop;
        ul->client = c;
        ev_async_init(&ul->wake, on_user_wake);
        ul->wake.data = ul;
        ev_async_start(loop, &ul->wake);
    }
    pthread_mutex_lock(&c->done_mu);
    struct rlock__user_loop *old = c->user_loop;
    c->user_loop = ul;
    pthread_mutex_unlock(&c->done_mu);
    if (old != NULL)
        close_user_loop(old); /* documented: on the old loop's thread */
    drain_done(c); /* what was queued for the old loop runs now, here */
    return RLOCK_OK;
}

/* Called by rlock_client_free() once the I/O thread has stopped: closes
 * the bridge (rlock.h: the caller is on the loop's thread, or the loop is
 * not running) and runs what is still queued, here. */
void rlock__async_client_free(rlock_client *c)
{
    pthread_mutex_lock(&c->done_mu);
    struct rlock__user_loop *ul = c->user_loop;
    c->user_loop = NULL;
    pthread_mutex_unlock(&c->done_mu);
    if (ul != NULL)
        close_user_loop(ul);
    drain_done(c);
}

/* --------------------------------------------------------------- acquires */

typedef enum { OP_ACQUIRE, OP_UNLOCK } op_kind;

struct rlock__aop {
    struct rlock__aop *next, *prev; /* the entry's ops */
    rlock__task task;               /* start, then cancel */
    op_kind kind;
    rlock_client *client;
    rlock *lock;
    rlock__entry *entry; /* referenced */
    rlock__entry *wait_entry; /* referenced: where it waits and is linked
                                 (a fair waiter's own entry, else entry) */
    uint64_t owner;
    int64_t lease_ms;    /* acquire: as given; unlock: the hold's */
    int64_t deadline_ms; /* acquire: the wait budget */
    int64_t fair_wait_ms; /* acquire: a fair waiter's slack (0: default) */
    bool try_once;        /* acquire: a fair attempt that must not queue */
    int64_t spin_delay_ms; /* acquire: a spin lock's next back-off */
    int spin_failures;
    rlock_done_cb cb;
    void *arg;
    rlock__timer *timer;
    int inflight;   /* requests of this op not yet answered */
    int attempts;   /* connection retries so far */
    bool linked;    /* in the entry's list */
    bool waiting;   /* counted in entry->async_waiters */
    bool permit;    /* an unlock message came during an attempt */
    bool unknown;   /* a lost attempt may have taken the lock */
    bool canceled;
    bool finished;
    bool waited;    /* acquire: a try found the lock taken (statistics) */
    bool by_timer;  /* acquire: this try is a re-check, not a message's */
    int64_t started_us; /* acquire: rlock__stats_clock() at the call */
    rlock__holder *spare; /* acquire: the hold's record, allocated early */
    /* unlock */
    uint64_t epoch;
    char *latch;
    char request_id[RLOCK__REQUEST_ID_LEN + 1];
};

static void attempt(rlock__aop *op);
static void op_timer(void *arg);

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static void op_free(rlock__aop *op)
{
    rlock__timer_free(op->timer);
    if (op->wait_entry != op->entry)
        rlock__entry_unref(op->wait_entry);
    rlock__entry_unref(op->entry);
    free(op->spare);
    free(op->latch);
    free(op);
}

/* Frees op if nothing refers to it any more. */
static void maybe_free(rlock__aop *op)
{
    if (op->finished && op->inflight == 0)
        op_free(op);
}

static void link_op(rlock__aop *op)
{
    rlock__entry *e = op->wait_entry;
    op->prev = NULL;
    op->next = e->async_ops;
    if (e->async_ops != NULL)
        e->async_ops->prev = op;
    e->async_ops = op;
    op->linked = true;
}

static void unlink_op(rlock__aop *op)
{
    rlock__entry *e = op->wait_entry;
    if (!op->linked)
        return;
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        e->async_ops = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    op->linked = false;
}

static void set_waiting(rlock__aop *op, bool waiting)
{
    if (op->waiting == waiting)
        return;
    rlock__entry *e = op->wait_entry;
    op->waiting = waiting;
    pthread_mutex_lock(&e->mu);
    e->async_waiters += waiting ? 1 : -1;
    bool sync = waiting ? e->async_waiters + e->waiters == 1
                        : e->async_waiters + e->waiters == 0;
    pthread_mutex_unlock(&e->mu);
    if (sync)
        rlock__pubsub_sync(e); /* first waiter joins, last one leaves */
}

/* A fair acquire that ends without the lock leaves the queue (lock.c's
 * fair_give_up); nobody waits for the reply. */
static void fair_give_up(rlock__aop *op)
{
    rlock__spec spec;
    if (rlock__spec_give_up(&spec, op->entry, op->owner, op->fair_wait_ms) ==
        0)
        rlock__send_ignored(op->client, spec.script, spec.numkeys, spec.argc,
                            spec.argv);
}

/* Ends op with status and delivers its completion. */
static void finish(rlock__aop *op, int status)
{
    if (op->kind == OP_ACQUIRE && status != RLOCK_OK && !op->finished &&
        op->entry->kind == RLOCK_KIND_FAIR && status != RLOCK_ECLOSED)
        fair_give_up(op);
    if (op->kind == OP_ACQUIRE && !op->finished)
        rlock__stats_acquire_done(op->client->stats, status, op->waited,
                                  op->started_us);
    op->finished = true;
    rlock__timer_stop(op->timer);
    set_waiting(op, false);
    unlink_op(op);
    deliver(op->client, op->cb, op->lock, op->owner, status, op->arg);
    maybe_free(op);
}

/* Arms op's timer to fire at the monotonic time at_ms. */
static void arm(rlock__aop *op, int64_t at_ms)
{
    int64_t after = at_ms - rlock__now_ms();
    if (after < 0)
        after = 0;
    if (after > (int64_t)1 << 40) /* forever, in practice */
        after = (int64_t)1 << 40;
    rlock__timer_start(op->timer, after, 0);
}

/* Sends request r (NULL: out of memory) for op with reply handler fn. */
static void send_req(rlock__aop *op, rlock__req *r, void (*fn)(rlock__req *))
{
    if (r == NULL) {
        finish(op, RLOCK_ENOMEM);
        return;
    }
    r->on_reply = fn;
    r->ctx = op;
    op->inflight++;
    rlock__req_dispatch(r); /* may call fn at once */
}

/* A connection error: retry at once, then every retry interval, up to the
 * configured attempts and within the budget. */
static void retry_later(rlock__aop *op, int status)
{
    rlock_client *c = op->client;
    int64_t pause = op->attempts == 0 ? 0 : c->cfg.retry_interval_ms;
    if (op->attempts++ >= c->cfg.retry_attempts ||
        (pause > 0 && rlock__now_ms() + pause >= op->deadline_ms)) {
        finish(op, status);
        return;
    }
    arm(op, rlock__now_ms() + pause);
}

static void on_phantom_dropped(rlock__req *r)
{
    rlock__aop *op = r->ctx;
    op->inflight--;
    if (op->finished) {
        maybe_free(op);
        return;
    }
    if (op->canceled) {
        finish(op, RLOCK_ECANCELED);
        return;
    }
    if (r->status == 0) {
        /* the connections work again: the acquire is retried at once */
        op->unknown = false;
        attempt(op);
        return;
    }
    if (r->status != RLOCK_ECONN) {
        finish(op, r->status);
        return;
    }
    retry_later(op, RLOCK_ECONN);
}

static void on_given_back(rlock__req *r)
{
    rlock__aop *op = r->ctx;
    op->inflight--;
    if (op->finished)
        maybe_free(op);
    else
        finish(op, RLOCK_ECANCELED);
}

static void on_acquire_reply(rlock__req *r)
{
    rlock__aop *op = r->ctx;
    bool acquired = r->status == 0 && r->nil;
    op->inflight--;
    if (op->finished) {
        if (acquired) /* a late attempt took it: give it back */
            rlock__req_give_back(r);
        maybe_free(op);
        return;
    }
    if (op->canceled) {
        /* the callback says cancelled once nothing is held any more */
        rlock__req *back = acquired ? rlock__give_back_new(r) : NULL;
        if (back == NULL) {
            finish(op, RLOCK_ECANCELED);
            return;
        }
        back->on_reply = on_given_back;
        back->ctx = op;
        op->inflight++;
        rlock__req_dispatch(back);
        return;
    }
    if (acquired) {
        rlock__entry_add_hold(op->entry, op->owner, op->lease_ms, op->spare);
        op->spare = NULL;
        if (op->by_timer && op->waited)
            rlock__stats_count(op->client->stats,
                               RLOCK__STAT_RECHECKS_FOUND_FREE);
        finish(op, RLOCK_OK);
        return;
    }
    if (r->status == RLOCK_ECONN) {
        op->unknown = true;
        retry_later(op, RLOCK_ECONN);
        return;
    }
    if (r->status != 0) {
        finish(op, r->status);
        return;
    }
    int64_t now = rlock__now_ms(), ttl = r->value;
    op->waited = true;
    if (now >= op->deadline_ms) {
        finish(op, RLOCK_ETIMEDOUT);
        return;
    }
    op->attempts = 0;
    if (op->entry->kind == RLOCK_KIND_SPIN) {
        /* no channel: back off and try again (lock.c's spin_acquire) */
        int64_t delay = op->spin_delay_ms;
        op->spin_failures++;
        op->spin_delay_ms = min64(
            op->spin_delay_ms * op->lock->spin_multiplier +
                (int64_t)(rlock__now_ms() % op->spin_failures),
            op->lock->spin_max_ms);
        arm(op, min64(now + delay, op->deadline_ms));
        return;
    }
    if (!op->waiting) {
        set_waiting(op, true); /* the subscription's confirmation re-tries */
    } else if (op->permit) {
        op->permit = false;
        attempt(op);
        return;
    }
    int64_t until = now + op->client->cfg.recheck_interval_ms;
    if (ttl >= 0)
        until = min64(until, now + (ttl > 0 ? ttl : 1));
    arm(op, min64(until, op->deadline_ms));
}

static void on_phantom_dropped(rlock__req *r);

/* Removes the hold a lost attempt may have taken (lock.c's drop_phantom):
 * the owner's holds beyond those known, or one release for kinds with no
 * such script. */
static void send_phantom_drop(rlock__aop *op)
{
    rlock__entry *e = op->entry;
    rlock__spec spec;
    rlock__req *r = NULL;
    if (rlock__spec_drop_phantom(&spec, e, op->owner,
                                 rlock__owner_known_holds(e, op->owner)) ==
        0) {
        r = rlock__req_from_spec(op->client, &spec);
    } else {
        char id[RLOCK__REQUEST_ID_LEN + 1];
        char *latch = rlock__request_id(id) == 0
                          ? rlock__latch_name(e->name, id)
                          : NULL;
        int64_t lease = op->lease_ms == RLOCK_LEASE_WATCHDOG
                            ? op->client->cfg.watchdog_timeout_ms
                            : op->lease_ms;
        if (latch != NULL &&
            rlock__spec_release(&spec, e, op->owner, lease, latch) == 0) {
            r = rlock__req_from_spec(op->client, &spec);
            rlock__spec_clear(&spec);
        }
        if (r != NULL)
            r->latch_del = latch;
        else
            free(latch);
    }
    send_req(op, r, on_phantom_dropped);
}

/* One acquire attempt (or, after a lost one, the drop of its possible
 * phantom hold first; see lock.c's drop_phantom). */
static void attempt(rlock__aop *op)
{
    rlock__entry *e = op->entry;
    op->permit = false;
    if (op->deadline_ms != INT64_MAX) /* the budget holds while in flight */
        arm(op, op->deadline_ms + op->client->cfg.command_timeout_ms);
    else
        rlock__timer_stop(op->timer);
    rlock__spec spec;
    if (op->unknown) {
        bool holds = false; /* a reentrant phantom is left to the lease */
        if (!rlock__kind_has_drop(e->kind)) {
            pthread_mutex_lock(&e->mu);
            rlock__holder *h = rlock__entry_find_holder(e, op->owner);
            holds = h != NULL && !h->lost;
            pthread_mutex_unlock(&e->mu);
        }
        if (!holds) {
            send_phantom_drop(op);
            return;
        }
        op->unknown = false;
    }
    if (rlock__spec_acquire(&spec, e, op->owner, op->lease_ms,
                            op->fair_wait_ms, op->try_once) != 0) {
        finish(op, RLOCK_ENOMEM);
        return;
    }
    rlock__req *r = rlock__req_from_spec(op->client, &spec);
    rlock__spec_clear(&spec);
    if (r != NULL) {
        /* a late reply that took the lock is given back (on_acquire_reply) */
        rlock__entry_ref(e);
        r->lock_entry = e;
        r->lock_owner = op->owner;
        r->lock_lease_ms = op->lease_ms == RLOCK_LEASE_WATCHDOG
                               ? op->client->cfg.watchdog_timeout_ms
                               : op->lease_ms;
    }
    send_req(op, r, on_acquire_reply);
}

static void acquire_timer(rlock__aop *op)
{
    if (op->finished)
        return;
    if (op->inflight > 0) {
        /* the reply is a command timeout late: finish now; if the attempt
         * still takes the lock, its reply gives it back */
        finish(op, RLOCK_ETIMEDOUT);
        return;
    }
    if (rlock__now_ms() >= op->deadline_ms) {
        finish(op, RLOCK_ETIMEDOUT);
    } else {
        /* a spin lock's back-off is its way of waiting, not a re-check */
        op->by_timer = op->waiting && op->entry->kind != RLOCK_KIND_SPIN;
        attempt(op);
    }
}

/* An unlock message (or the subscription's confirmation, all true) for
 * e's async waiters: one waiter re-tries, or all. Returns false when no
 * waiter was there to be woken. I/O thread. */
bool rlock__async_kick(rlock__entry *e, bool all)
{
    bool woke = false;
    rlock__aop *next;
    for (rlock__aop *op = e->async_ops; op != NULL; op = next) {
        next = op->next; /* attempt() may finish and free op */
        if (op->kind != OP_ACQUIRE || !op->waiting || op->finished)
            continue;
        woke = true;
        op->by_timer = false;
        if (op->inflight > 0) {
            op->permit = true;
        } else {
            /* the list is walked from the head, so a kicked op goes to the
             * tail: the next message wakes another waiter */
            if (!all && op->next != NULL) {
                rlock__aop *tail = op;
                while (tail->next != NULL)
                    tail = tail->next;
                unlink_op(op);
                op->linked = true;
                op->prev = tail;
                op->next = NULL;
                tail->next = op;
            }
            attempt(op);
        }
        if (!all)
            return woke;
    }
    return woke;
}

/* ---------------------------------------------------------------- unlocks */

static void on_unlock_reply(rlock__req *r);

static void send_unlock(rlock__aop *op)
{
    rlock__spec spec;
    rlock__req *r = NULL;
    if (rlock__spec_release(&spec, op->entry, op->owner, op->lease_ms,
                            op->latch) == 0) {
        r = rlock__req_from_spec(op->client, &spec);
        rlock__spec_clear(&spec);
    }
    /* hiredis has no reply timeout: the timer bounds each attempt */
    rlock__timer_start(op->timer, op->client->cfg.command_timeout_ms, 0);
    send_req(op, r, on_unlock_reply);
}

/* Ends an unlock. Its latch is deleted only when the first attempt
 * answered: after a retry, an earlier attempt may still run and must find
 * it (lock.c's release), so it is left to expire. */
static void unlock_done(rlock__aop *op, int rc)
{
    if (rc >= 0 && rc != RLOCK__UNLOCK_NOT_HELD && op->attempts == 0) {
        const char *del[] = {"DEL", op->latch};
        rlock__send_ignored(op->client, NULL, 0, 2, del); /* sent at once */
    }
    finish(op, rlock__release_settle(op->entry, op->owner, op->epoch, rc));
}

/* A failed attempt (connection lost or no reply in time): the same call,
 * with the same latch, is sent again after the retry interval. */
static void unlock_retry(rlock__aop *op, int status)
{
    if (op->attempts++ >= op->client->cfg.retry_attempts) {
        unlock_done(op, status);
        return;
    }
    op->unknown = true; /* the timer resends */
    rlock__timer_start(op->timer, op->client->cfg.retry_interval_ms, 0);
}

static void on_unlock_reply(rlock__req *r)
{
    rlock__aop *op = r->ctx;
    op->inflight--;
    if (op->finished) {
        maybe_free(op);
        return;
    }
    if (r->status == RLOCK_ECONN) {
        if (!op->unknown) /* not already waiting to resend */
            unlock_retry(op, RLOCK_ECONN);
        return;
    }
    unlock_done(op, r->status != 0 ? r->status : (int)r->value);
}

static void unlock_timer(rlock__aop *op)
{
    if (op->finished)
        return;
    if (op->unknown) {
        op->unknown = false;
        send_unlock(op);
    } else {
        unlock_retry(op, RLOCK_ETIMEDOUT); /* no reply in time */
    }
}

static void op_timer(void *arg)
{
    rlock__aop *op = arg;
    if (op->kind == OP_ACQUIRE)
        acquire_timer(op);
    else
        unlock_timer(op);
}

/* ------------------------------------------------------------------ start */

static void run_start(rlock__task *t, int status)
{
    rlock__aop *op = (rlock__aop *)((char *)t - offsetof(rlock__aop, task));
    if (status != 0) {
        /* the loop has stopped: the client is being freed */
        op->finished = true;
        deliver(op->client, op->cb, op->lock, op->owner, status, op->arg);
        op_free(op);
        return;
    }
    link_op(op);
    if (op->kind == OP_ACQUIRE) {
        attempt(op);
        return;
    }
    int64_t lease = 0;
    int rc = rlock__release_begin(op->entry, op->owner, &op->epoch, &lease);
    if (rc != 0) {
        finish(op, rc);
        return;
    }
    op->lease_ms = lease;
    send_unlock(op);
}

static int op_new(rlock *l, op_kind kind, uint64_t owner, rlock_done_cb cb,
                  void *arg, rlock__aop **out)
{
    if (l == NULL || cb == NULL || owner == 0)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__aop *op = rlock__calloc(1, sizeof(*op));
    if (op == NULL)
        return RLOCK_ENOMEM;
    op->kind = kind;
    op->client = l->client;
    op->lock = l;
    op->owner = owner;
    op->cb = cb;
    op->arg = arg;
    op->deadline_ms = INT64_MAX;
    op->task.run = run_start;
    op->timer = rlock__timer_new(l->client->loop, op_timer, op);
    if (op->timer == NULL) {
        free(op);
        return RLOCK_ENOMEM;
    }
    rlock__entry_ref(l->entry);
    op->entry = l->entry;
    op->wait_entry = l->entry;
    *out = op;
    return RLOCK_OK;
}

int rlock_lock_async(rlock *l, uint64_t owner, int64_t wait_ms,
                     int64_t lease_ms, rlock_done_cb cb, void *arg)
{
    if (wait_ms < RLOCK_WAIT_FOREVER || lease_ms == 0 ||
        lease_ms < RLOCK_LEASE_WATCHDOG || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    rlock__aop *op = NULL;
    int rc = op_new(l, OP_ACQUIRE, owner, cb, arg, &op);
    if (rc != 0)
        return rc;
    op->lease_ms = lease_ms;
    op->fair_wait_ms = wait_ms > 0 ? wait_ms : 0;
    op->try_once = wait_ms == 0;
    op->spin_delay_ms = l->spin_initial_ms;
    if (l->entry->kind == RLOCK_KIND_FAIR) {
        /* a fair waiter is woken on its own channel (lock.c) */
        op->wait_entry = rlock__fair_waiter_entry(l->entry, owner);
        if (op->wait_entry == NULL) {
            op->wait_entry = op->entry;
            op_free(op);
            return RLOCK_ENOMEM;
        }
    }
    op->spare = rlock__malloc(sizeof(*op->spare));
    if (op->spare == NULL) {
        op_free(op);
        return RLOCK_ENOMEM;
    }
    op->started_us = rlock__stats_clock(l->client->stats);
    int64_t now = rlock__now_ms();
    if (wait_ms != RLOCK_WAIT_FOREVER && wait_ms <= INT64_MAX - now)
        op->deadline_ms = now + wait_ms;
    rlock__loop_submit(l->client->loop, &op->task);
    return RLOCK_OK;
}

int rlock_unlock_async(rlock *l, uint64_t owner, rlock_done_cb cb, void *arg)
{
    rlock__aop *op = NULL;
    int rc = op_new(l, OP_UNLOCK, owner, cb, arg, &op);
    if (rc != 0)
        return rc;
    rc = rlock__request_id(op->request_id);
    if (rc == 0) {
        op->latch = rlock__latch_name(l->entry->name, op->request_id);
        if (op->latch == NULL)
            rc = RLOCK_ENOMEM;
    }
    if (rc != 0) {
        op_free(op);
        return rc;
    }
    rlock__loop_submit(l->client->loop, &op->task);
    return RLOCK_OK;
}

/* ----------------------------------------------------------------- cancel */

typedef struct cancel_task {
    rlock__task task;
    rlock__entry *entry; /* referenced */
    uint64_t owner;
} cancel_task;

static void run_cancel(rlock__task *t, int status)
{
    cancel_task *ct = (cancel_task *)t;
    rlock__aop *op = status == 0 ? ct->entry->async_ops : NULL;
    while (op != NULL) {
        rlock__aop *next = op->next;
        if (op->kind == OP_ACQUIRE && op->owner == ct->owner &&
            !op->finished) {
            if (op->inflight > 0) {
                /* its reply gives back what it took, then finishes it */
                op->canceled = true;
                set_waiting(op, false);
            } else {
                finish(op, RLOCK_ECANCELED);
            }
        }
        op = next;
    }
    rlock__entry_unref(ct->entry);
    free(ct);
}

int rlock_cancel(rlock *l, uint64_t owner)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    cancel_task *ct = rlock__calloc(1, sizeof(*ct));
    if (ct == NULL)
        return RLOCK_ENOMEM;
    ct->task.run = run_cancel;
    ct->owner = owner;
    if (l->entry->kind == RLOCK_KIND_FAIR) {
        /* its acquires are linked on the waiter's own entry */
        ct->entry = rlock__fair_waiter_entry(l->entry, owner);
        if (ct->entry == NULL) {
            free(ct);
            return RLOCK_ENOMEM;
        }
    } else {
        rlock__entry_ref(l->entry);
        ct->entry = l->entry;
    }
    rlock__loop_submit(l->client->loop, &ct->task);
    return RLOCK_OK;
}

/* --------------------------------------------------------------- shutdown */

static void collect_ops(const char *key, void *value, void *arg)
{
    rlock__entry *e = value;
    rlock__aop ***cursor = arg;
    (void)key;
    for (rlock__aop *op = e->async_ops; op != NULL; op = op->next)
        *(*cursor)++ = op;
}

static void count_ops(const char *key, void *value, void *arg)
{
    rlock__entry *e = value;
    size_t *n = arg;
    (void)key;
    for (rlock__aop *op = e->async_ops; op != NULL; op = op->next)
        (*n)++;
}

/* The loop is stopping: every pending op ends with RLOCK_ECLOSED. Ops with
 * requests in flight are freed when those fail, as the connections close.
 * I/O thread, before the connections are closed. */
void rlock__async_shutdown(rlock_client *c)
{
    size_t n = 0;
    pthread_mutex_lock(&c->entries_mu);
    rlock__map_foreach(&c->entries, count_ops, &n);
    rlock__aop **ops = rlock__malloc(sizeof(*ops) * (n + 1));
    rlock__aop **cursor = ops;
    if (ops != NULL)
        rlock__map_foreach(&c->entries, collect_ops, &cursor);
    pthread_mutex_unlock(&c->entries_mu);
    if (ops == NULL)
        return;
    for (rlock__aop **p = ops; p < cursor; p++)
        finish(*p, RLOCK_ECLOSED);
    free(ops);
}

/* Returns owner's hold count as remembered (0 when not held or lost). */
int rlock_owner_hold_count(rlock *l, uint64_t owner)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__entry *e = l->entry;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, owner);
    int count = h != NULL && !h->lost ? h->count : 0;
    pthread_mutex_unlock(&e->mu);
    return count;
}

int64_t rlock_owner_hold_id(rlock *l, uint64_t owner)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    return rlock__entry_hold_id(l->entry, owner);
}
