/*
 * lock_async.c: the asynchronous API (rlock_lock_async, rlock_unlock_async,
 * rlock_cancel) for event-loop servers, whose locks belong to requests
 * (explicit owner ids) rather than threads: the async driver of the core's
 * acquire and release machines (core/acquire.c, core/release.c), the same
 * machines the blocking API runs; and, with no owner, of the count-down
 * latch's await (core/countdown.c) and the semaphores' acquire
 * (core/semaphore.c).
 *
 * Design notes. An async call lives on the client's I/O thread and never
 * blocks it. Its machine's steps become: "send" a request whose reply
 * comes to on_reply, by its deadline (the command connection enforces it:
 * no reply in time is RLOCK_ETIMEDOUT); "wait" a timer, ended early by the
 * waiter's kick when an unlock message or the subscription comes
 * (core/entry_waiters.c); "done" the completion, delivered by
 * completions.c. A cancel or the client's closing is fed to the machine.
 *
 * A reply that comes after its call ended is late: the machine has moved
 * on, and if it says that an acquire took the lock, the hold is given back
 * at once (rlock__req_give_back). A reply after its deadline never comes
 * here: the transport gives back what it took (core/request.c).
 *
 * Calls are I/O-thread objects: their fields are touched only there. A call
 * is freed once it has finished and no request of it is in flight.
 */
#include "api/api.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct rlock__aop {
    struct rlock__aop *next, *prev; /* the client's pending calls */
    rlock__task task;               /* start, then cancel */
    rlock_client *client;
    rlock *lock;
    rlock__entry *entry; /* referenced */
    uint64_t owner;
    rlock_done_cb cb;
    void *arg;
    const rlock__op_class *cls;
    union {
        rlock__acquire acq;
        rlock__release rel;
        rlock__countdown_wait cw; /* a count-down latch's await */
        rlock__sem_acquire sa;    /* a semaphore's acquire */
    } m;
    bool acquire;
    bool countdown; /* m.cw: rlock__countdown_await_async */
    bool semaphore; /* m.sa: rlock__sem_acquire_async */
    /* a semaphore acquire's arguments, for its start on the I/O thread,
     * and where a permit's id goes before the completion is delivered */
    int sem_permits;
    int64_t sem_wait_ms, sem_lease_ms;
    char *sem_id_out;
    rlock__timer *timer;
    rlock__req *current;        /* the request the machine waits for */
    rlock__waiter *sleep_waiter; /* a wait's waiter, or NULL */
    bool sleeping;              /* a wait is armed */
    bool cancel_sent;
    bool defer_send; /* the next send goes through the I/O thread's queue */
    bool linked;
    bool finished;
    int inflight; /* requests sent and not yet answered */
};

static void drive(rlock__aop *op, rlock__step st);

static void op_free(rlock__aop *op)
{
    if (op->acquire)
        rlock__acquire_clear(&op->m.acq);
    else if (op->countdown)
        rlock__countdown_wait_clear(&op->m.cw);
    else if (op->semaphore)
        rlock__sem_acquire_clear(&op->m.sa);
    else
        rlock__release_clear(&op->m.rel);
    rlock__timer_free(op->timer);
    rlock__entry_unref(op->entry);
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
    rlock_client *c = op->client;
    op->prev = NULL;
    op->next = c->async_ops;
    if (c->async_ops != NULL)
        c->async_ops->prev = op;
    c->async_ops = op;
    op->linked = true;
}

static void unlink_op(rlock__aop *op)
{
    if (!op->linked)
        return;
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        op->client->async_ops = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    op->linked = false;
}

/* Ends op with status and delivers its completion. */
static void finish(rlock__aop *op, int status)
{
    op->finished = true;
    op->sleeping = false;
    rlock__timer_stop(op->timer);
    unlink_op(op);
    if (op->semaphore && status == 0 && op->sem_id_out != NULL)
        memcpy(op->sem_id_out, op->m.sa.id, sizeof(op->m.sa.id));
    rlock__deliver(op->client, op->cb, op->lock, op->owner, status, op->arg);
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

static void on_reply(rlock__req *r)
{
    rlock__aop *op = r->ctx;
    op->inflight--;
    if (r != op->current) {
        /* late: its call ended */
        if (r->kind == RLOCK__REPLY_ACQUIRE && r->status == 0)
            rlock__req_undo_late(r, r->nil);
        maybe_free(op);
        return;
    }
    op->current = NULL;
    /* the latch has done its job once the reply is in (core/release.c) */
    if (r->latch_del != NULL && r->status == 0 &&
        r->value != RLOCK__UNLOCK_NOT_HELD) {
        const char *del[] = {"DEL", r->latch_del};
        rlock__send_ignored(op->client, NULL, 0, 2, del);
    }
    /* a send the reply calls for goes out once this reply is done with:
     * a connection that just dropped is still being taken down here, and
     * a request written to it now would fail at once too */
    op->defer_send = true;
    drive(op, op->cls->reply(&op->m, r, r->status));
}

static void on_timer(void *arg)
{
    rlock__aop *op = arg;
    if (op->finished || !op->sleeping)
        return;
    op->sleeping = false;
    if (op->sleep_waiter != NULL)
        rlock__waiter_stop(op->sleep_waiter);
    drive(op, op->cls->wake(&op->m, false));
}

/* The waiter's wake-up came (core/entry_waiters.c, on the I/O thread). */
static void kicked(rlock__aop *op, rlock__waiter *w)
{
    /* a closing client ends its calls; none starts a new try */
    if (!op->sleeping || op->sleep_waiter != w ||
        atomic_load(&op->client->closing))
        return;
    op->sleeping = false;
    rlock__timer_stop(op->timer);
    drive(op, op->cls->wake(&op->m, true));
}

static void on_kick(rlock__waiter *w)
{
    kicked((rlock__aop *)((char *)w - offsetof(rlock__aop, m.acq.waiter)), w);
}

static void on_countdown_kick(rlock__waiter *w)
{
    kicked((rlock__aop *)((char *)w - offsetof(rlock__aop, m.cw.waiter)), w);
}

static void on_sem_kick(rlock__waiter *w)
{
    kicked((rlock__aop *)((char *)w - offsetof(rlock__aop, m.sa.waiter)), w);
}

/* A semaphore acquire's first step: its start, here on the I/O thread
 * (it builds the first try), with the driver's kick set before any wait. */
static rlock__step sem_start(rlock__aop *op)
{
    rlock__step st = rlock__sem_acquire_start(&op->m.sa, op->entry,
                                              op->sem_permits,
                                              op->sem_wait_ms,
                                              op->sem_lease_ms);
    op->m.sa.kick = on_sem_kick;
    return st;
}

/* Sends r for op, its reply due within timeout_ms (RLOCK_ETIMEDOUT then):
 * at once, or through the I/O thread's queue when op->defer_send. op may be
 * gone when this returns: the reply can come at once (a connection that
 * cannot be made), and end the call. */
static void send(rlock__aop *op, rlock__req *r, int64_t timeout_ms)
{
    bool defer = op->defer_send;
    op->defer_send = false;
    r->on_reply = on_reply;
    r->ctx = op;
    r->deadline_ms = rlock__now_ms() + timeout_ms;
    op->current = r;
    op->inflight++;
    if (defer) {
        rlock__req_send(r);
        rlock__req_unref(r);
        return;
    }
    rlock__req_dispatch(r); /* takes our reference */
}

/* Takes the machine's steps until one waits for an event. */
static void drive(rlock__aop *op, rlock__step st)
{
    for (;;) {
        switch (st.kind) {
        case RLOCK__STEP_SEND:
            send(op, st.req, st.timeout_ms);
            return;
        case RLOCK__STEP_WAIT:
            if (st.waiter != NULL && rlock__waiter_take(st.waiter, st.want)) {
                st = op->cls->wake(&op->m, true); /* over already */
                continue;
            }
            op->sleeping = true;
            op->sleep_waiter = st.waiter;
            op->defer_send = false;
            arm(op, st.until_ms);
            return;
        case RLOCK__STEP_DONE:
            finish(op, st.status);
            return;
        default:
            op->defer_send = false;
            return;
        }
    }
}

/* Feeds a cancel (or the client's closing) to op's machine. */
static void cancel_op(rlock__aop *op, int why)
{
    if (op->sleeping) {
        op->sleeping = false;
        rlock__timer_stop(op->timer);
        if (op->sleep_waiter != NULL)
            rlock__waiter_stop(op->sleep_waiter);
    }
    rlock__step st = op->cls->cancel(&op->m, why);
    if (why == RLOCK_ECLOSED && st.kind != RLOCK__STEP_DONE)
        st = (rlock__step){.kind = RLOCK__STEP_DONE, .status = why};
    if (why == RLOCK_ECLOSED)
        op->current = NULL; /* its reply, if any, is late */
    drive(op, st);
}

/* ------------------------------------------------------------------ start */

static void run_start(rlock__task *t, int status)
{
    rlock__aop *op = (rlock__aop *)((char *)t - offsetof(rlock__aop, task));
    if (status != 0) {
        /* the loop has stopped: the client is being freed */
        op->finished = true;
        rlock__deliver(op->client, op->cb, op->lock, op->owner, status,
                       op->arg);
        op_free(op);
        return;
    }
    link_op(op);
    drive(op, op->acquire     ? rlock__acquire_start(&op->m.acq)
              : op->countdown ? rlock__countdown_wait_start(&op->m.cw)
              : op->semaphore ? sem_start(op)
                              : rlock__release_start(&op->m.rel));
}

static int op_new(rlock *l, uint64_t owner, rlock_done_cb cb, void *arg,
                  rlock__aop **out)
{
    if (l == NULL || cb == NULL || owner == 0)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__aop *op = rlock__calloc(1, sizeof(*op));
    if (op == NULL)
        return RLOCK_ENOMEM;
    op->client = l->client;
    op->lock = l;
    op->owner = owner;
    op->cb = cb;
    op->arg = arg;
    op->task.run = run_start;
    op->timer = rlock__timer_new(l->client->loop, on_timer, op);
    if (op->timer == NULL) {
        free(op);
        return RLOCK_ENOMEM;
    }
    rlock__entry_ref(l->entry);
    op->entry = l->entry;
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
    int rc = op_new(l, owner, cb, arg, &op);
    if (rc != 0)
        return rc;
    op->acquire = true;
    op->cls = &rlock__acquire_class;
    rc = rlock__acquire_init(&op->m.acq, op->entry, owner, wait_ms, lease_ms);
    if (rc != 0) {
        op_free(op);
        return rc;
    }
    op->m.acq.kick = on_kick;
    op->m.acq.spin_initial_ms = l->spin_initial_ms;
    op->m.acq.spin_max_ms = l->spin_max_ms;
    op->m.acq.spin_multiplier = l->spin_multiplier;
    op->m.acq.non_reentrant = l->non_reentrant;
    rlock__loop_submit(l->client->loop, &op->task);
    return RLOCK_OK;
}

int rlock_unlock_async(rlock *l, uint64_t owner, rlock_done_cb cb, void *arg)
{
    rlock__aop *op = NULL;
    int rc = op_new(l, owner, cb, arg, &op);
    if (rc != 0)
        return rc;
    op->cls = &rlock__release_class;
    rlock__release_init(&op->m.rel, op->entry, owner);
    rlock__loop_submit(l->client->loop, &op->task);
    return RLOCK_OK;
}

/* Starts waiting up to wait_ms for the count-down latch of handle h
 * (api/latch.c's, kind RLOCK__KIND_COUNTDOWN); cb runs once with 0,
 * RLOCK_ETIMEDOUT or an error, as rlock_latch_await() returns them. A
 * latch's wait belongs to no owner: the call carries owner 1, which no
 * lock call sees (rlock_cancel() never matches it). */
int rlock__countdown_await_async(rlock *h, int64_t wait_ms, rlock_done_cb cb,
                                 void *arg)
{
    if (wait_ms < RLOCK_WAIT_FOREVER)
        return RLOCK_EINVAL;
    rlock__aop *op = NULL;
    int rc = op_new(h, 1, cb, arg, &op);
    if (rc != 0)
        return rc;
    op->countdown = true;
    op->cls = &rlock__countdown_wait_class;
    rlock__countdown_wait_init(&op->m.cw, op->entry, wait_ms);
    op->m.cw.kick = on_countdown_kick;
    rlock__loop_submit(h->client->loop, &op->task);
    return RLOCK_OK;
}

/* Starts taking permits (> 0) of the semaphore of handle h (kind
 * RLOCK__KIND_SEMAPHORE, or RLOCK__KIND_PERMIT_SEMAPHORE with lease_ms:
 * one permit under a new id, copied into id_out before cb runs with 0),
 * waiting up to wait_ms; cb runs once with what rlock__sem_acquire_on()
 * would return. As a latch's wait, it carries owner 1: rlock_cancel()
 * never matches it, and only the client's closing ends it early. */
int rlock__sem_acquire_async(rlock *h, int permits, int64_t wait_ms,
                             int64_t lease_ms, char *id_out,
                             rlock_done_cb cb, void *arg)
{
    if (permits <= 0 || (wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER))
        return RLOCK_EINVAL;
    rlock__aop *op = NULL;
    int rc = op_new(h, 1, cb, arg, &op);
    if (rc != 0)
        return rc;
    op->semaphore = true;
    op->cls = &rlock__sem_acquire_class;
    op->sem_permits = permits;
    op->sem_wait_ms = wait_ms;
    op->sem_lease_ms = lease_ms;
    op->sem_id_out = id_out;
    rlock__loop_submit(h->client->loop, &op->task);
    return RLOCK_OK;
}

/* ----------------------------------------------------------------- cancel */

typedef struct cancel_task {
    rlock__task task;
    rlock_client *client;
    rlock__entry *entry; /* referenced */
    uint64_t owner;
} cancel_task;

/* Returns owner's first pending acquire of entry not yet told to cancel,
 * or NULL. A cancel can end other calls (a wake-up passed on), so the list
 * is searched again after each. */
static rlock__aop *next_to_cancel(const cancel_task *ct)
{
    for (rlock__aop *op = ct->client->async_ops; op != NULL; op = op->next)
        if (op->acquire && !op->finished && !op->cancel_sent &&
            op->entry == ct->entry && op->owner == ct->owner)
            return op;
    return NULL;
}

static void run_cancel(rlock__task *t, int status)
{
    cancel_task *ct = (cancel_task *)t;
    rlock__aop *op;
    while (status == 0 && (op = next_to_cancel(ct)) != NULL) {
        op->cancel_sent = true;
        cancel_op(op, RLOCK_ECANCELED);
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
    ct->client = l->client;
    ct->owner = owner;
    rlock__entry_ref(l->entry);
    ct->entry = l->entry;
    rlock__loop_submit(l->client->loop, &ct->task);
    return RLOCK_OK;
}

/* --------------------------------------------------------------- shutdown */

/* The loop is stopping: every pending call ends with RLOCK_ECLOSED. Calls
 * with requests in flight are freed when those fail, as the connections
 * close. I/O thread, before the connections are closed. */
void rlock__async_shutdown(rlock_client *c)
{
    while (c->async_ops != NULL)
        cancel_op(c->async_ops, RLOCK_ECLOSED); /* unlinks it */
}

/* Returns owner's hold count as remembered (0 when not held or lost). */
int rlock_owner_hold_count(rlock *l, uint64_t owner)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    return rlock__hold_count(l->entry, owner);
}

int64_t rlock_owner_hold_id(rlock *l, uint64_t owner)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    return rlock__hold_id(l->entry, owner);
}
