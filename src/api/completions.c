/*
 * completions.c: where async completions run (rlock_client_attach_loop):
 * on the attached user loop, delivered through a wake-up there
 * (src/io/user_loop.c) and a queue, or, with none attached, on the I/O
 * thread. Every accepted async call gets exactly one completion.
 */
#include "api/api.h"
#include "io/user_loop.h"

#include <stdlib.h>

typedef struct done_item {
    struct done_item *next;
    rlock_done_cb cb;
    rlock *lock;
    uint64_t owner;
    int status;
    void *arg;
} done_item;

/* Runs every queued completion (the user loop's thread, or the freeing
 * thread). Touches the client only before the first callback, which may
 * free it. */
static void drain_done(void *arg)
{
    rlock_client *c = arg;
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

void rlock__deliver(rlock_client *c, rlock_done_cb cb, rlock *lock,
                    uint64_t owner, int status, void *arg)
{
    pthread_mutex_lock(&c->done_mu);
    rlock__user_loop *ul = c->user_loop;
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
            rlock__user_loop_wake(ul);
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
    rlock__user_loop *ul = NULL;
    if (loop != NULL) {
        rc = rlock__user_loop_new(loop, drain_done, c, &ul);
        if (rc != 0)
            return rc;
    }
    pthread_mutex_lock(&c->done_mu);
    rlock__user_loop *old = c->user_loop;
    c->user_loop = ul;
    pthread_mutex_unlock(&c->done_mu);
    if (old != NULL)
        rlock__user_loop_close(old); /* documented: on the old loop's thread */
    drain_done(c); /* what was queued for the old loop runs now, here */
    return RLOCK_OK;
}

/* Called by rlock_client_free() once the I/O thread has stopped: closes
 * the bridge (rlock.h: the caller is on the loop's thread, or the loop is
 * not running) and runs what is still queued, here. */
void rlock__async_client_free(rlock_client *c)
{
    pthread_mutex_lock(&c->done_mu);
    rlock__user_loop *ul = c->user_loop;
    c->user_loop = NULL;
    pthread_mutex_unlock(&c->done_mu);
    if (ul != NULL)
        rlock__user_loop_close(ul);
    drain_done(c);
}
