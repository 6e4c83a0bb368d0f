/*
 * actor.c: one actor's operations as history lines, shared by the threads
 * of the blocking API (worker.c) and the owners on the loop
 * (worker_async.c).
 *
 * An actor's ids are "<process>-<actor>-<seq>", seq counting up from 1.
 * seq is atomic because the lost-lock callback (on rlock's notifier
 * thread) takes numbers from the same actor as its owner.
 */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t worker_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int worker_may_start(const worker *w, const actor *a)
{
    if (atomic_load(&w->stop))
        return 0;
    if (w->opt.ops > 0)
        return a->ops_done < w->opt.ops;
    return worker_mono_ns() < w->deadline_mono_ns;
}

void worker_pick(actor *a)
{
    a->name = rand_r(&a->rng) % a->w->opt.names;
    /* read-write: one operation in three is a write */
    char mode = 'x';
    if (a->w->opt.kind == KIND_RW && rand_r(&a->rng) % 3 != 0)
        mode = 'r';
    atomic_store(&a->mode, mode);
    a->token = 0;
    a->read_ok = 0;
    a->release_tries = 0;
}

rlock *worker_handle(actor *a)
{
    worker *w = a->w;
    if (w->opt.kind == KIND_RW)
        return atomic_load(&a->mode) == 'r' ? rlock_rw_read(w->rws[a->name])
                                            : rlock_rw_write(w->rws[a->name]);
    return w->locks[a->name];
}

void actor_event(const actor *a, hist_event *e, const char *op,
                 unsigned long seq)
{
    *e = (hist_event){
        .proc = a->w->opt.process,
        .thread = a->index,
        .seq = seq,
        .op = op,
        .owner = a->owner,
        .lock = a->w->names[a->name],
        .kind = a->w->opt.kind_name,
        .mode = atomic_load(&a->mode),
        .node = -1,
    };
}

unsigned long actor_invoke(actor *a, const char *op)
{
    unsigned long seq = atomic_fetch_add(&a->seq, 1);
    hist_event e;
    actor_event(a, &e, op, seq);
    e.type = "invoke";
    history_write(&a->w->hist, &e);
    return seq;
}

void actor_complete_lock_op(actor *a, const char *op, unsigned long seq,
                            int status, int is_release)
{
    hist_event e;
    actor_event(a, &e, op, seq);
    e.type = is_release ? outcome_of_release(status)
                        : outcome_of_acquire(status);
    if (status != RLOCK_OK)
        e.err = rlock_err_name(status);
    if (!is_release && status == RLOCK_OK && a->w->opt.kind == KIND_FENCED) {
        e.has_token = 1;
        e.token = a->token;
    }
    history_write(&a->w->hist, &e);
}

void actor_set_owner(actor *a, uint64_t owner_id)
{
    snprintf(a->owner, sizeof(a->owner), "%s:%llu",
             rlock_client_id(a->w->clients[0]), (unsigned long long)owner_id);
    atomic_store(&a->owner_id, owner_id);
}

void worker_actor_done(worker *w)
{
    atomic_fetch_add(&w->actors_done, 1);
}

void worker_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}
