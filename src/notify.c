/*
 * notify.c: lost-lock signalling. When a hold is found lost (by the
 * watchdog, a query, a force unlock, or its owning thread's exit), the
 * finder queues an event here; the client's notifier thread runs the
 * callbacks. A user callback may be slow or may call back into rlock, so it
 * never runs on the I/O thread, where it would delay renewals and replies.
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
};

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
        rlock_lost_cb client_cb = n->client_cb;
        void *client_arg = n->client_arg;
        pthread_mutex_unlock(&n->mu);
        if (ev->lock_cb != NULL)
            ev->lock_cb(ev->name, ev->owner, ev->hold, ev->reason,
                        ev->lock_arg);
        if (client_cb != NULL)
            client_cb(ev->name, ev->owner, ev->hold, ev->reason, client_arg);
        free(ev->name);
        free(ev);
        pthread_mutex_lock(&n->mu);
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
    free(n);
}

/* Returns true on the notifier thread (where freeing the client would
 * deadlock). */
bool rlock__notifier_on_thread(const rlock__notifier *n)
{
    return n != NULL && n->started && pthread_equal(n->thread, pthread_self());
}

void rlock__notifier_set_client_cb(rlock__notifier *n, rlock_lost_cb cb,
                                   void *arg)
{
    pthread_mutex_lock(&n->mu);
    n->client_cb = cb;
    n->client_arg = arg;
    pthread_mutex_unlock(&n->mu);
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
    rlock__notifier_set_client_cb(c->notifier, cb, arg);
    return RLOCK_OK;
}
