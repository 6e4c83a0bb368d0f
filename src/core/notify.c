/*
 * core/notify.c: lost-lock signalling. When a hold is found lost (by the
 * watchdog, a query, a force unlock, or its owning thread's exit),
 * core/hold.c marks it and queues an event here; the client's notifier thread runs the
 * callbacks. A user callback may be slow or may call back into rlock, so it
 * never runs on the I/O thread, where it would delay renewals and replies.
 *
 * The barrier. An event carries the lock's callback and argument as they
 * were when the hold was lost, so a changed callback could still be called
 * with the old argument, which its owner may have freed. So each setting of
 * a callback gets a registration number (never reused), events and the
 * running call carry it, and changing a callback (rlock_on_lost,
 * rlock_client_on_lost) strips the old registration from queued events and
 * then waits until no call of it is running. The notifier thread itself
 * never waits (the running call is the caller), nor does the I/O thread,
 * which a callback's blocking rlock call may need: there the change is
 * refused with RLOCK_EDEADLK when it would have to wait.
 *
 * Lock order: notifier->mu is the innermost lock, so an event may be queued
 * with any other lock held.
 *
 * In src/core: the hold's loss (core/hold.c) ends here, above the transport.
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct lost_event {
    struct lost_event *next;
    char *name;
    uint64_t owner;
    uint64_t hold; /* the hold's epoch: rlock_hold_id() */
    int reason;
    rlock_lost_cb lock_cb; /* the lock's callback when the hold was lost */
    void *lock_arg;
    uint64_t lock_reg; /* its registration; lock_cb NULL once cleared */
} lost_event;

struct rlock__notifier {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lost_event *head, *tail;
    bool stopping;
    rlock_lost_cb client_cb;
    void *client_arg;
    uint64_t client_reg;
    /* the registrations of the call running now (0: none), and the
     * condition a changed callback waits on until its old one is done */
    uint64_t running_lock_reg;
    uint64_t running_client_reg;
    pthread_cond_t idle;
};

/* Registration numbers of callbacks: unique in the process, so that an
 * entry freed and made again can never match an old event's. */
static atomic_uint_fast64_t next_reg = 1;

/* The notifier thread: runs each event's lock callback, then the
 * client-wide one as it is set at that moment. n->mu is held except
 * during the calls. */
static void *notifier_main(void *arg)
{
    rlock__notifier *n = arg;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (n->head == NULL && !n->stopping)
            pthread_cond_wait(&n->cv, &n->mu);
        if (n->stopping)
            break;
        lost_event *ev = n->head;
        n->head = ev->next;
        if (n->head == NULL)
            n->tail = NULL;
        if (ev->lock_cb != NULL) {
            n->running_lock_reg = ev->lock_reg;
            pthread_mutex_unlock(&n->mu);
            ev->lock_cb(ev->name, ev->owner, ev->hold, ev->reason,
                        ev->lock_arg);
            pthread_mutex_lock(&n->mu);
            n->running_lock_reg = 0;
            pthread_cond_broadcast(&n->idle);
        }
        rlock_lost_cb client_cb = n->client_cb;
        void *client_arg = n->client_arg;
        if (client_cb != NULL) {
            n->running_client_reg = n->client_reg;
            pthread_mutex_unlock(&n->mu);
            client_cb(ev->name, ev->owner, ev->hold, ev->reason, client_arg);
            pthread_mutex_lock(&n->mu);
            n->running_client_reg = 0;
            pthread_cond_broadcast(&n->idle);
        }
        free(ev->name);
        free(ev);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* Starts the notifier thread of a client. Returns 0 or RLOCK_ENOMEM. */
int rlock__notifier_new(rlock__notifier **out)
{
    rlock__notifier *n = rlock__calloc(1, sizeof(*n));
    if (n == NULL)
        return RLOCK_ENOMEM;
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    pthread_cond_init(&n->idle, NULL);
    if (pthread_create(&n->thread, NULL, notifier_main, n) != 0) {
        rlock__notifier_free(n);
        return RLOCK_ENOMEM;
    }
    n->started = true;
    *out = n;
    return RLOCK_OK;
}

/* Stops the thread and drops undelivered events: the client is going away
 * and its holds are being released anyway. Must not be called from a
 * callback. NULL is ignored. */
void rlock__notifier_free(rlock__notifier *n)
{
    if (n == NULL)
        return;
    if (n->started) {
        pthread_mutex_lock(&n->mu);
        n->stopping = true;
        pthread_cond_signal(&n->cv);
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->thread, NULL);
    }
    while (n->head != NULL) {
        lost_event *ev = n->head;
        n->head = ev->next;
        free(ev->name);
        free(ev);
    }
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    pthread_cond_destroy(&n->idle);
    free(n);
}

/* Returns true on the notifier thread (where freeing the client would
 * deadlock). */
bool rlock__notifier_on_thread(const rlock__notifier *n)
{
    return n != NULL && n->started && pthread_equal(n->thread, pthread_self());
}

/* Returns true when a change of the callback of registration reg would
 * have to wait for its running call but must not: the I/O thread may be
 * what that call needs to return. n->mu held. */
static bool must_not_wait(rlock_client *c, uint64_t reg, uint64_t running)
{
    return reg != 0 && running == reg && rlock__loop_on_thread(c->loop);
}

/* Waits until no call of registration reg runs, unless on the notifier
 * thread, where the running call is the caller's own. n->mu held. */
static void wait_not_running(rlock__notifier *n, uint64_t reg,
                             const uint64_t *running)
{
    if (reg == 0 || rlock__notifier_on_thread(n))
        return;
    while (*running == reg)
        pthread_cond_wait(&n->idle, &n->mu);
}

/* Returns a new registration number for a lock callback. */
uint64_t rlock__notifier_new_reg(void)
{
    return atomic_fetch_add(&next_reg, 1);
}

/* First half of replacing a lock callback whose registration is old (see
 * the barrier above; core/hold.c holds the entry's mutex across it): returns
 * 0 with n->mu held and old's queued events stripped of their lock
 * callback, or RLOCK_EDEADLK, with nothing changed, on the I/O thread while
 * old's call runs. */
int rlock__notifier_replace_begin(rlock__notifier *n, rlock_client *c,
                                  uint64_t old)
{
    pthread_mutex_lock(&n->mu);
    if (must_not_wait(c, old, n->running_lock_reg)) {
        pthread_mutex_unlock(&n->mu);
        return RLOCK_EDEADLK;
    }
    for (lost_event *ev = n->head; old != 0 && ev != NULL; ev = ev->next)
        if (ev->lock_reg == old)
            ev->lock_cb = NULL;
    return RLOCK_OK;
}

/* Second half, once the caller let go of its own locks: waits until no
 * call of old runs and lets go of n->mu. */
void rlock__notifier_replace_end(rlock__notifier *n, uint64_t old)
{
    wait_not_running(n, old, &n->running_lock_reg);
    pthread_mutex_unlock(&n->mu);
}

/* Queues the callbacks for a hold found lost: the lock's callback as it
 * was then (cb, arg, of registration reg), and the client-wide one as it is
 * when the event runs. Out of memory, the event is dropped (the hold is
 * still marked: its unlock reports RLOCK_ELOST). */
void rlock__notifier_post(rlock__notifier *n, const char *name,
                          uint64_t owner, uint64_t hold, int reason,
                          rlock_lost_cb cb, void *arg, uint64_t reg)
{
    lost_event *ev = rlock__calloc(1, sizeof(*ev));
    if (ev == NULL || (ev->name = rlock__strdup(name)) == NULL) {
        free(ev);
        return;
    }
    ev->owner = owner;
    ev->hold = hold;
    ev->reason = reason;
    ev->lock_cb = cb;
    ev->lock_arg = arg;
    ev->lock_reg = reg;
    pthread_mutex_lock(&n->mu);
    if (n->tail != NULL)
        n->tail->next = ev;
    else
        n->head = ev;
    n->tail = ev;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
}

int rlock_client_on_lost(rlock_client *c, rlock_lost_cb cb, void *arg)
{
    int rc = rlock__client_check(c);
    if (rc != 0)
        return rc;
    rlock__notifier *n = c->notifier;
    if (cb == NULL)
        arg = NULL;
    pthread_mutex_lock(&n->mu);
    uint64_t old = n->client_reg;
    if (cb == n->client_cb && arg == n->client_arg) {
        rc = RLOCK_OK; /* the same: nothing to wait for */
    } else if (must_not_wait(c, old, n->running_client_reg)) {
        rc = RLOCK_EDEADLK;
    } else {
        /* events read the client-wide callback when they run: only a
         * running call can still have the old one */
        n->client_cb = cb;
        n->client_arg = arg;
        n->client_reg = cb != NULL ? atomic_fetch_add(&next_reg, 1) : 0;
        wait_not_running(n, old, &n->running_client_reg);
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}
