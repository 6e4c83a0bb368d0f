/*
 * worker_async.c: the actors of --async, as explicit owners on one libev
 * loop (rlock_lock_async / rlock_unlock_async, completions on the loop).
 *
 * Each actor is a small state machine driven by its completions and one
 * timer: start -> acquire (async) -> read -> hold (timer) -> write ->
 * release (async) -> start. The store's commands are blocking hiredis
 * calls on the loop thread: the store is a local Redis that no fault
 * touches, so they cost the loop a fraction of a millisecond, and the
 * lock calls, which faults do touch, never block it.
 *
 * The loop runs until every actor has finished (deadline, --ops or the
 * stop flag, checked before each new operation), then detaches from the
 * client on its own thread, as rlock_client_attach_loop() requires.
 */
#include "worker.h"

#include <ev.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct loop_actor loop_actor;

struct loop_actor {
    actor *a;
    struct ev_loop *loop;
    ev_timer timer;             /* pauses: the hold, a back-off */
    void (*after)(loop_actor *); /* what the timer goes on with */
    unsigned long seq;          /* the call under way's id */
};

static void start_operation(loop_actor *la);
static void release_hold(loop_actor *la);

/* Goes on with next after ms (0: on the next loop iteration, which keeps
 * completions from recursing into each other). */
static void after_ms(loop_actor *la, int64_t ms, void (*next)(loop_actor *))
{
    la->after = next;
    ev_timer_set(&la->timer, (double)ms / 1000.0, 0.);
    ev_timer_start(la->loop, &la->timer);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    loop_actor *la = t->data;
    (void)loop;
    (void)revents;
    la->after(la);
}

static void on_released(rlock *l, uint64_t owner, int status, void *arg)
{
    loop_actor *la = arg;
    actor *a = la->a;
    (void)l;
    (void)owner;
    actor_complete_lock_op(a, "release", la->seq, status, 1);
    if (outcome_release_kept_hold(status) &&
        ++a->release_tries < WORKER_RELEASE_TRIES) {
        after_ms(la, WORKER_ERROR_PAUSE_MS, release_hold);
        return;
    }
    after_ms(la, 0, start_operation);
}

static void release_hold(loop_actor *la)
{
    actor *a = la->a;
    la->seq = actor_invoke(a, "release");
    int rc = rlock_unlock_async(worker_handle(a), a->owner_id, on_released,
                                la);
    if (rc != RLOCK_OK)
        on_released(worker_handle(a), a->owner_id, rc, la);
}

/* The hold is over: the write, then the release. */
static void end_hold(loop_actor *la)
{
    critical_write(la->a);
    release_hold(la);
}

static void on_acquired(rlock *l, uint64_t owner, int status, void *arg)
{
    loop_actor *la = arg;
    actor *a = la->a;
    (void)l;
    (void)owner;
    actor_complete_lock_op(a, "acquire", la->seq, status, 0);
    if (status != RLOCK_OK) {
        after_ms(la, status == RLOCK_ETIMEDOUT ? 0 : WORKER_ERROR_PAUSE_MS,
                 start_operation);
        return;
    }
    critical_read(a);
    after_ms(la, rand_r(&a->rng) % (a->w->opt.hold_ms + 1), end_hold);
}

static void start_operation(loop_actor *la)
{
    actor *a = la->a;
    worker *w = a->w;
    if (!worker_may_start(w, a)) {
        store_close(&a->store);
        worker_actor_done(w);
        if (atomic_load(&w->actors_done) == w->nactors)
            ev_break(la->loop, EVBREAK_ALL);
        return;
    }
    worker_pick(a);
    a->ops_done++;
    la->seq = actor_invoke(a, "acquire");
    int rc = rlock_lock_async(worker_handle(a), a->owner_id, w->opt.wait_ms,
                              w->opt.lease_ms, on_acquired, la);
    if (rc != RLOCK_OK)
        on_acquired(worker_handle(a), a->owner_id, rc, la);
}

void *worker_async_thread(void *arg)
{
    worker *w = arg;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    loop_actor *las = calloc((size_t)w->nactors, sizeof(*las));
    int rc = loop == NULL || las == NULL
                 ? RLOCK_ENOMEM
                 : rlock_client_attach_loop(w->clients[0], loop);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "safety_worker %s: loop: %s\n", w->opt.process,
                rlock_err_name(rc));
        for (int i = 0; i < w->nactors; i++)
            worker_actor_done(w);
        goto out;
    }
    for (int i = 0; i < w->nactors; i++) {
        loop_actor *la = &las[i];
        la->a = &w->actors[i];
        la->loop = loop;
        actor_set_owner(la->a, rlock_owner_new());
        ev_timer_init(&la->timer, on_timer, 0., 0.);
        la->timer.data = la;
        after_ms(la, 0, start_operation);
    }
    ev_run(loop, 0);
    rlock_client_attach_loop(w->clients[0], NULL);
out:
    free(las);
    if (loop != NULL)
        ev_loop_destroy(loop);
    return NULL;
}
