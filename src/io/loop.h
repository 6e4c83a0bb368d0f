/*
 * io/loop.h: the client's I/O thread (io/loop.c): its libev loop, the
 * queue other threads hand it work through, its timers and fd watchers.
 * The layers above reach the I/O thread only through this header: none of
 * them includes <ev.h>.
 *
 * Threads. The I/O thread alone touches what runs on its loop (the links of
 * src/io, the channel table, the watchdog timer). User threads talk to it by
 * submitting tasks (rlock__loop_submit).
 */
#ifndef RLOCK_IO_LOOP_H
#define RLOCK_IO_LOOP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rlock__loop rlock__loop;
typedef struct rlock__timer rlock__timer;
typedef struct rlock__fdwatch rlock__fdwatch;

/* A unit of work for the I/O thread. run() is called once: on the I/O thread
 * with status 0, or, when the loop has stopped, with RLOCK_ECLOSED on
 * whichever thread submitted or stopped. */
typedef struct rlock__task {
    struct rlock__task *next;
    void (*run)(struct rlock__task *t, int status);
} rlock__task;

int rlock__loop_start(rlock__loop **out, void (*on_stop)(void *), void *arg);
void rlock__loop_submit(rlock__loop *loop, rlock__task *t);
void rlock__loop_stop(rlock__loop *loop);
void rlock__loop_free(rlock__loop *loop);
bool rlock__loop_on_thread(const rlock__loop *loop);
struct ev_loop;
struct ev_loop *rlock__loop_ev(rlock__loop *loop);

rlock__timer *rlock__timer_new(rlock__loop *loop, void (*fn)(void *),
                               void *arg);
void rlock__timer_start(rlock__timer *t, int64_t after_ms, int64_t repeat_ms);
void rlock__timer_stop(rlock__timer *t);
void rlock__timer_free(rlock__timer *t);

rlock__fdwatch *rlock__fdwatch_new(rlock__loop *loop, int fd,
                                   void (*fn)(void *), void *arg);
void rlock__fdwatch_start(rlock__fdwatch *fw);
void rlock__fdwatch_stop(rlock__fdwatch *fw);
void rlock__fdwatch_free(rlock__fdwatch *fw);

#endif /* RLOCK_IO_LOOP_H */
