/*
 * user_loop.h: a wake-up on a libev loop the user owns, for the async API's
 * completions (rlock_client_attach_loop). The only part of it that names
 * libev, which src/io alone may include.
 */
#ifndef RLOCK_IO_USER_LOOP_H
#define RLOCK_IO_USER_LOOP_H

struct ev_loop;
typedef struct rlock__user_loop rlock__user_loop;

/* Starts a watcher on ev whose wake-up calls fn(arg) on ev's thread.
 * Returns 0 or RLOCK_ENOMEM. On ev's thread, or while no thread runs it. */
int rlock__user_loop_new(struct ev_loop *ev, void (*fn)(void *arg),
                         void *arg, rlock__user_loop **out);

/* Makes fn run soon on ev's thread; wake-ups are merged. Any thread, while
 * ul is open. */
void rlock__user_loop_wake(rlock__user_loop *ul);

/* Stops the watcher (a wake-up already sent is dropped) and frees ul, or,
 * when called from inside its own fn, leaves the free to the moment fn
 * returns (libuv's uv_close). On ev's thread, or while no thread runs it. */
void rlock__user_loop_close(rlock__user_loop *ul);

#endif
