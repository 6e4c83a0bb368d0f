/*
 * evloop.c: a libev loop on a thread of its own, with an rlock client's
 * async completions attached to it, for the scenarios that drive rlock's
 * async API ("waiters", "names") as an event-loop server would.
 *
 * The client is attached before the thread runs the loop (rlock's rule: on
 * the loop's thread or while no thread runs it), and detached on the
 * loop's thread when bench_loop_stop() is called from anywhere: a
 * scenario's last completion, or the main thread giving up. Once detached,
 * and its own stop watcher stopped, the loop has nothing active and ev_run
 * returns, which ends the thread.
 */
#include "bench.h"

#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct bench_loop {
    struct ev_loop *loop;
    rlock_client *client;
    ev_async stop; /* on the loop thread: detaches the client */
    pthread_t tid;
};

static void on_stop(struct ev_loop *loop, ev_async *w, int revents)
{
    bench_loop *bl = w->data;
    (void)revents;
    rlock_client_attach_loop(bl->client, NULL);
    ev_async_stop(loop, w);
}

static void *loop_main(void *arg)
{
    bench_loop *bl = arg;
    ev_run(bl->loop, 0);
    return NULL;
}

bench_loop *bench_loop_start(rlock_client *c)
{
    bench_loop *bl = calloc(1, sizeof(*bl));
    if (bl == NULL)
        return NULL;
    bl->client = c;
    bl->loop = ev_loop_new(EVFLAG_AUTO);
    if (bl->loop == NULL)
        goto out_free;
    int rc = rlock_client_attach_loop(c, bl->loop);
    if (rc != 0) {
        fprintf(stderr, "rlock-bench: attach_loop: %s\n", rlock_strerror(rc));
        goto out_destroy;
    }
    ev_async_init(&bl->stop, on_stop);
    bl->stop.data = bl;
    ev_async_start(bl->loop, &bl->stop);
    if (pthread_create(&bl->tid, NULL, loop_main, bl) != 0) {
        ev_async_stop(bl->loop, &bl->stop);
        rlock_client_attach_loop(c, NULL);
        goto out_destroy;
    }
    return bl;
out_destroy:
    ev_loop_destroy(bl->loop);
out_free:
    free(bl);
    return NULL;
}

void bench_loop_stop(bench_loop *bl)
{
    ev_async_send(bl->loop, &bl->stop);
}

void bench_loop_join(bench_loop *bl)
{
    if (bl == NULL)
        return;
    pthread_join(bl->tid, NULL);
    ev_loop_destroy(bl->loop);
    free(bl);
}
