/*
 * notify.c: lost-lock signalling. When a hold is found lost (by the
 * watchdog, a query, a force unlock, or its owning thread's exit), the
 * finder queues an event here; the client's notifier thread runs the
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
 */
#include "internal.h"

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

/* Sets e's lost callback (rlock_on_lost) behind the barrier: when it
 * returns 0, the old callback is neither running nor queued. Setting the
 * same callback and argument again changes nothing. Returns 0, or
 * RLOCK_EDEADLK on the I/O thread while the old callback runs (nothing is
 * changed then). */
int rlock__notifier_set_lock_cb(rlock__entry *e, rlock_lost_cb cb, void *arg)
{
    rlock__notifier *n = e->client->notifier;
    if (cb == NULL)
        arg = NULL;
    pthread_mutex_lock(&e->mu);
    pthread_mutex_lock(&n->mu);
    uint64_t old = e->lost_reg;
    if (cb == e->lost_cb && arg == e->lost_arg) {
        pthread_mutex_unlock(&n->mu);
        pthread_mutex_unlock(&e->mu);
        return RLOCK_OK;
    }
    if (must_not_wait(e->client, old, n->running_lock_reg)) {
        pthread_mutex_unlock(&n->mu);
        pthread_mutex_unlock(&e->mu);
        return RLOCK_EDEADLK;
    }
    e->lost_cb = cb;
    e->lost_arg = arg;
    e->lost_reg = cb != NULL ? atomic_fetch_add(&next_reg, 1) : 0;
    /* a loss is queued under e->mu, so every event of the old setting is
     * in the queue by now; the client-wide callback still runs for them */
    for (lost_event *ev = n->head; old != 0 && ev != NULL; ev = ev->next)
        if (ev->lock_reg == old)
            ev->lock_cb = NULL;
    /* no lock of the caller's may be held while the old call finishes: it
     * may take them (an unlock from the callback takes e->mu) */
    pthread_mutex_unlock(&e->mu);
    wait_not_running(n, old, &n->running_lock_reg);
    pthread_mutex_unlock(&n->mu);
    return RLOCK_OK;
}

/* Why a hold was lost, for the log line. */
static const char *lost_why(int reason)
{
    switch (reason) {
    case RLOCK_LOST_GONE:
        return "the lock or its holder's field vanished (expired, deleted "
               "or force-unlocked)";
    case RLOCK_LOST_TAKEN:
        return "another owner holds it now";
    case RLOCK_LOST_EXPIRED:
        return "renewals failed for a whole lease, so it has run out";
    case RLOCK_LOST_ABANDONED:
        return "its owning thread exited holding it";
    default:
        return "unknown reason";
    }
}

/* Counts h's loss for reason and logs it. Also for a loss found by the
 * owner's own unlock, which is told by RLOCK_ELOST rather than a callback.
 * e->mu held, which the log hook may need: the line goes through the I/O
 * thread's queue. */
void rlock__hold_note_lost(rlock__entry *e, const rlock__holder *h,
                           int reason)
{
    rlock__stats_lost(e->client->stats, reason);
    rlock__log_later(e->client, RLOCK_LOG_WARN,
                     "lock %s lost by owner %llu (hold %llu): %s", e->name,
                     (unsigned long long)h->tid, (unsigned long long)h->epoch,
                     lost_why(reason));
}

/* Marks h lost for reason and queues the callbacks, once per hold: a hold
 * already lost is left alone. While its owner is unlocking it, the loss is
 * only noted: a renewal that raced the unlock's own DEL finds the key gone,
 * and only the unlock's outcome (rlock__release_settle) tells a released
 * hold from a lost one. e->mu held. */
void rlock__hold_lost(rlock__entry *e, rlock__holder *h, int reason)
{
    if (h->lost)
        return;
    if (h->releasing > 0) {
        if (h->loss_pending == 0)
            h->loss_pending = reason;
        return;
    }
    h->lost = true;
    rlock__hold_note_lost(e, h, reason);
    rlock__notifier *n = e->client->notifier;
    lost_event *ev = rlock__calloc(1, sizeof(*ev));
    if (ev == NULL || (ev->name = rlock__strdup(e->name)) == NULL) {
        free(ev); /* the hold is still marked: unlock reports RLOCK_ELOST */
        return;
    }
    ev->owner = h->tid;
    ev->hold = h->epoch;
    ev->reason = reason;
    ev->lock_cb = e->lost_cb;
    ev->lock_arg = e->lost_arg;
    ev->lock_reg = e->lost_reg;
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
