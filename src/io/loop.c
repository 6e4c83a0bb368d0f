/*
 * io/loop.c: the client's I/O thread (layer io): its ev_loop, the submit
 * queue, timers and fd watchers (io/loop.h).
 *
 * Design notes. One thread per client runs a private ev_loop. It alone
 * touches the links (src/io) that run on that loop, so none of them needs
 * a lock. Other threads hand
 * it work by appending an rlock__task to a mutex-protected queue and calling
 * ev_async_send(). libev merges wake-ups, so every wake-up drains the whole
 * queue (the same contract as libuv's uv_async_t).
 *
 * Stopping: rlock__loop_stop() asks the thread to run on_stop (which closes
 * every connection, failing pending requests) and to leave ev_run; it then
 * joins the thread and fails whatever is still queued with RLOCK_ECLOSED.
 * A task submitted after that fails at once. Every task's run() is therefore
 * called exactly once.
 *
 * The thread blocks every signal: a SIGPIPE from a server that went away
 * must become EPIPE, not the death of the user's process (the links write
 * with MSG_NOSIGNAL already; a user's callback on this thread may not).
 */
#include "io/loop.h"
#include "proto/proto.h" /* rlock__calloc */

#include "rlock.h"

#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

struct rlock__loop {
    struct ev_loop *ev;
    ev_async wake;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu; /* guards the queue and the flags below */
    rlock__task *head;
    rlock__task *tail;
    bool stop_requested;
    bool stopped;
    void (*on_stop)(void *);
    void *arg;
};

struct rlock__timer {
    ev_timer w;
    rlock__loop *loop;
    void (*fn)(void *);
    void *arg;
};

/* Runs every queued task; on a stop request, shuts down and leaves ev_run. */
static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    rlock__loop *loop = w->data;
    (void)revents;
    for (;;) {
        pthread_mutex_lock(&loop->mu);
        rlock__task *batch = loop->head;
        loop->head = loop->tail = NULL;
        bool stop = loop->stop_requested;
        pthread_mutex_unlock(&loop->mu);
        if (batch == NULL) {
            if (stop) {
                loop->on_stop(loop->arg);
                ev_break(ev, EVBREAK_ALL);
            }
            return;
        }
        while (batch != NULL) {
            rlock__task *next = batch->next;
            batch->run(batch, RLOCK_OK);
            batch = next;
        }
    }
}

static void *thread_main(void *arg)
{
    rlock__loop *loop = arg;
    ev_run(loop->ev, 0);
    return NULL;
}

/* Creates the loop and starts its thread. on_stop(arg) runs on the I/O
 * thread when rlock__loop_stop() is called. Returns 0 or RLOCK_ENOMEM. */
int rlock__loop_start(rlock__loop **out, void (*on_stop)(void *), void *arg)
{
    rlock__loop *loop = rlock__calloc(1, sizeof(*loop));
    if (loop == NULL)
        return RLOCK_ENOMEM;
    /* poll(), not epoll: the loop watches duplicates of the caller-thread
     * connections' sockets (core/direct.c), and closing a duplicate leaves
     * its epoll registration alive while the original is open, so epoll
     * kept reporting the closed number, and libev's clean-up of it reached
     * whatever descriptor had taken that number since (seen by TSan). The
     * loop watches a handful of sockets, where poll() costs nothing. */
    loop->ev = ev_loop_new(EVBACKEND_POLL);
    if (loop->ev == NULL) {
        free(loop);
        return RLOCK_ENOMEM;
    }
    pthread_mutex_init(&loop->mu, NULL);
    loop->on_stop = on_stop;
    loop->arg = arg;
    ev_async_init(&loop->wake, on_wake);
    loop->wake.data = loop;
    ev_async_start(loop->ev, &loop->wake);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&loop->thread, NULL, thread_main, loop);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        loop->stopped = true;
        rlock__loop_free(loop);
        return RLOCK_ENOMEM;
    }
    loop->thread_started = true;
    *out = loop;
    return RLOCK_OK;
}

/* Queues t for the I/O thread, or fails it with RLOCK_ECLOSED at once if
 * the loop has stopped. Thread-safety: any thread. */
void rlock__loop_submit(rlock__loop *loop, rlock__task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&loop->mu);
    if (loop->stopped) {
        pthread_mutex_unlock(&loop->mu);
        t->run(t, RLOCK_ECLOSED);
        return;
    }
    if (loop->tail != NULL)
        loop->tail->next = t;
    else
        loop->head = t;
    loop->tail = t;
    pthread_mutex_unlock(&loop->mu);
    ev_async_send(loop->ev, &loop->wake);
}

/* Stops the I/O thread (see the design notes) and waits for it.
 * Thread-safety: any thread but the I/O thread; call once. */
void rlock__loop_stop(rlock__loop *loop)
{
    pthread_mutex_lock(&loop->mu);
    loop->stop_requested = true;
    pthread_mutex_unlock(&loop->mu);
    ev_async_send(loop->ev, &loop->wake);
    if (loop->thread_started)
        pthread_join(loop->thread, NULL);
    loop->thread_started = false;

    pthread_mutex_lock(&loop->mu);
    loop->stopped = true;
    rlock__task *rest = loop->head;
    loop->head = loop->tail = NULL;
    pthread_mutex_unlock(&loop->mu);
    while (rest != NULL) {
        rlock__task *next = rest->next;
        rest->run(rest, RLOCK_ECLOSED);
        rest = next;
    }
}

/* Frees a stopped loop. */
void rlock__loop_free(rlock__loop *loop)
{
    if (loop == NULL)
        return;
    ev_async_stop(loop->ev, &loop->wake);
    ev_loop_destroy(loop->ev);
    pthread_mutex_destroy(&loop->mu);
    free(loop);
}

/* Returns true when called on the loop's own I/O thread. */
bool rlock__loop_on_thread(const rlock__loop *loop)
{
    return loop != NULL && loop->thread_started &&
           pthread_equal(pthread_self(), loop->thread);
}

/* The libev loop, for the links (src/io/link.h) that run on it. Their
 * functions are I/O thread only. */
struct ev_loop *rlock__loop_ev(rlock__loop *loop)
{
    return loop->ev;
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    rlock__timer *t = w->data;
    (void)ev;
    (void)revents;
    t->fn(t->arg);
}

/* Makes a stopped timer that will call fn(arg) on the I/O thread.
 * Returns NULL when out of memory. */
rlock__timer *rlock__timer_new(rlock__loop *loop, void (*fn)(void *), void *arg)
{
    rlock__timer *t = rlock__calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->loop = loop;
    t->fn = fn;
    t->arg = arg;
    ev_timer_init(&t->w, on_timer, 0., 0.);
    t->w.data = t;
    return t;
}

/* (Re)starts t to fire after after_ms, then every repeat_ms (0: once).
 * Thread-safety: I/O thread only. */
void rlock__timer_start(rlock__timer *t, int64_t after_ms, int64_t repeat_ms)
{
    ev_timer_stop(t->loop->ev, &t->w);
    ev_now_update(t->loop->ev);
    ev_timer_set(&t->w, (double)after_ms / 1000.0, (double)repeat_ms / 1000.0);
    ev_timer_start(t->loop->ev, &t->w);
}

/* Stops t; harmless when it is not running. I/O thread only. */
void rlock__timer_stop(rlock__timer *t)
{
    if (t != NULL)
        ev_timer_stop(t->loop->ev, &t->w);
}

/* Frees a stopped timer. */
void rlock__timer_free(rlock__timer *t)
{
    free(t);
}

struct rlock__fdwatch {
    ev_io w;
    rlock__loop *loop;
    void (*fn)(void *);
    void *arg;
};

static void on_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    rlock__fdwatch *fw = w->data;
    (void)ev;
    (void)revents;
    fw->fn(fw->arg);
}

/* Makes a stopped watcher that calls fn(arg) on the I/O thread whenever fd
 * is readable. Returns NULL when out of memory. */
rlock__fdwatch *rlock__fdwatch_new(rlock__loop *loop, int fd,
                                   void (*fn)(void *), void *arg)
{
    rlock__fdwatch *fw = rlock__calloc(1, sizeof(*fw));
    if (fw == NULL)
        return NULL;
    fw->loop = loop;
    fw->fn = fn;
    fw->arg = arg;
    ev_io_init(&fw->w, on_readable, fd, EV_READ);
    fw->w.data = fw;
    return fw;
}

/* Starts or stops fw. I/O thread only. */
void rlock__fdwatch_start(rlock__fdwatch *fw)
{
    ev_io_start(fw->loop->ev, &fw->w);
}

void rlock__fdwatch_stop(rlock__fdwatch *fw)
{
    if (fw != NULL)
        ev_io_stop(fw->loop->ev, &fw->w);
}

/* Frees a stopped watcher; NULL is ignored. */
void rlock__fdwatch_free(rlock__fdwatch *fw)
{
    free(fw);
}
