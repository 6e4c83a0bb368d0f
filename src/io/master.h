/*
 * io/master.h: where the data master is in Sentinel mode, as
 * every connection of a client must see it: discovered at connect, then
 * followed on the I/O thread's loop (src/io/sentinel.c does the asking).
 *
 * Why a layer of its own over sentinel.c: the client's links open from one
 * shared rlock__link_opts, and user threads open blocking links from it
 * while the I/O thread moves it. This file owns that shared address: it
 * changes under a mutex with a generation count, so that a connection made
 * for an older master is told from a current one, and it takes the
 * suspicions of any thread (a READONLY reply, a lost connection) to the
 * loop. What else moves with the master (command links, the subscriber,
 * the waiters) is the caller's, told through the moved callback.
 */
#ifndef RLOCK_IO_MASTER_H
#define RLOCK_IO_MASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/link.h"
#include "io/sentinel.h"

struct ev_loop;

typedef struct rlock__master rlock__master;

/* The master moved to host:port (host borrowed for the call): the shared
 * options already name it. On the loop's thread. */
typedef void (*rlock__master_moved_cb)(const char *host, int port, void *arg);

/* Makes m for the sentinels of so and finds the master (BLOCKS: a user
 * thread), greeting it as data says. data is the client's shared options:
 * its addr and host are set here and after every move (m keeps data's
 * pointer; data must outlive m). note (may be NULL) gets lines for the
 * log, moved the moves; both run on the loop's thread, with arg. Returns 0,
 * or the codes of rlock__sentinel_new() and rlock__sentinel_discover(),
 * err (may be NULL) saying why. */
int rlock__master_new(const rlock__sentinel_opts *so, rlock__link_opts *data,
                      rlock__master_moved_cb moved,
                      rlock__sentinel_note_cb note, void *arg,
                      rlock__master **out, char *err, size_t errlen);

/* Starts following the master on loop. Loop thread only. Returns 0,
 * RLOCK_EINVAL or RLOCK_ENOMEM. */
int rlock__master_watch(rlock__master *m, struct ev_loop *loop);

/* The master may have moved (a READONLY reply, a lost connection): a
 * sentinel is asked now rather than at the next poll. Any thread; m may be
 * NULL (not Sentinel mode): nothing then. */
void rlock__master_suspect(rlock__master *m);

/* How many times the master moved: a connection opened for an older count
 * must not be used. Any thread; 0 for NULL. */
uint64_t rlock__master_gen(const rlock__master *m);

/* The master's port now (its name is the shared options' host). Any
 * thread. */
int rlock__master_port(const rlock__master *m);

/* Copies the shared options as they are now into o, for a connection a
 * user thread opens: the master's name goes into host (o->host points to
 * it), its generation into *gen (may be NULL). Any thread; m NULL: a plain
 * copy of shared. */
#define RLOCK__MASTER_HOST_MAX RLOCK__SENTINEL_HOST_MAX
void rlock__master_opts(const rlock__master *m, const rlock__link_opts *shared,
                        rlock__link_opts *o,
                        char host[RLOCK__MASTER_HOST_MAX], uint64_t *gen);

/* Stops following: no callback runs after it returns. Loop thread (or the
 * loop no longer runs); no-op when not watching. */
void rlock__master_unwatch(rlock__master *m);

/* Frees m (unwatched first); NULL is a no-op. */
void rlock__master_free(rlock__master *m);

#endif /* RLOCK_IO_MASTER_H */
