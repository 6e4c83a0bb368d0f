/*
 * user_loop.c: a wake-up on the user's libev loop (user_loop.h).
 *
 * Closed as libuv closes a handle (uv_close): on the loop's thread, or while
 * no thread runs the loop. Closing stops the watcher at once, so the loop
 * keeps nothing of ours; when the close happens inside the wake-up's own
 * callback (a completion that frees the client or detaches the loop), the
 * memory is freed only once that callback has returned into us.
 */
#include "io/user_loop.h"
#include "proto/proto.h"
#include "rlock.h"

#include <ev.h>
#include <stdbool.h>
#include <stdlib.h>

struct rlock__user_loop {
    ev_async wake;
    struct ev_loop *ev;
    void (*fn)(void *arg);
    void *arg;
    int running; /* calls of fn in progress */
    bool closed; /* stopped: the last call to return frees it */
};

static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    rlock__user_loop *ul = w->data;
    (void)ev;
    (void)revents;
    ul->running++;
    ul->fn(ul->arg); /* may close ul */
    ul->running--;
    if (ul->closed && ul->running == 0)
        free(ul);
}

int rlock__user_loop_new(struct ev_loop *ev, void (*fn)(void *arg),
                         void *arg, rlock__user_loop **out)
{
    rlock__user_loop *ul = rlock__calloc(1, sizeof(*ul));
    if (ul == NULL)
        return RLOCK_ENOMEM;
    ul->ev = ev;
    ul->fn = fn;
    ul->arg = arg;
    ev_async_init(&ul->wake, on_wake);
    ul->wake.data = ul;
    ev_async_start(ev, &ul->wake);
    *out = ul;
    return RLOCK_OK;
}

void rlock__user_loop_wake(rlock__user_loop *ul)
{
    ev_async_send(ul->ev, &ul->wake);
}

void rlock__user_loop_close(rlock__user_loop *ul)
{
    ev_async_stop(ul->ev, &ul->wake);
    if (ul->running > 0)
        ul->closed = true;
    else
        free(ul);
}
