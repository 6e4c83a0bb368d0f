/*
 * core/direct_impl.h: a set of caller-thread connections ("slots"),
 * shared by the two files that make it up and private to them:
 * core/direct.c hands slots out, takes them back and looks after idle
 * ones on the I/O thread; core/direct_round_trip.c runs one request on a
 * slot it was handed. Nobody else sees these fields: the rest of the core
 * knows rlock__direct by the functions core/core.h declares.
 */
#ifndef RLOCK_CORE_DIRECT_IMPL_H
#define RLOCK_CORE_DIRECT_IMPL_H

#include "core/core.h"
#include "io/link.h"
#include "proto/cluster.h" /* RLOCK__HOST_MAX */

enum {
    SLOT_HELD = 1u,    /* a user thread or the I/O thread has the slot */
    SLOT_WATCHED = 2u, /* the I/O thread watches it, or is asked to */
};

typedef struct slot {
    atomic_uint state; /* SLOT_* */
    rlock__direct *direct;
    /* the holder's */
    rlock__link_sync *link; /* NULL: not connected */
    unsigned gen;           /* counts links: tells a new one from a watched */
    uint64_t master_gen;    /* the server's generation the link went to
                               (server_gen) */
    int64_t used_at_ms;     /* the last round trip's start */
    int64_t late_since_ms;  /* 0, or since when late replies are owed */
    const char *closed_why; /* why the last link closed (NULL: none yet):
                               the next connect is a reconnect */
    int replicas; /* the master's, for WAIT (core/sync.c); -1: not known */
    /* the I/O thread's */
    rlock__fdwatch *watch; /* on watch_fd */
    int watch_fd;          /* a duplicate of link gen watch_gen's socket */
    unsigned watch_gen;
    rlock__timer *expiry; /* the late replies are overdue */
    rlock__task watch_task;
} slot;

struct rlock__direct {
    rlock_client *client;
    /* a cluster node's set: how to reach it (NULL: the client's server),
     * and how many times it left the slot table */
    const rlock__link_opts *node;
    atomic_uint departures;
    char to[RLOCK__HOST_MAX + 16]; /* " to host:port" or "", for logs */
    atomic_uint next; /* where the next caller starts looking */
    int n;
    slot slots[];
};

/* Why a slot was closed, for its reconnect's log line (direct.c): its
 * late replies were overdue; its cluster node left the slot table. */
extern const char rlock__direct_overdue[];
extern const char rlock__direct_departed[];

/* direct.c: closes s's link (the holder). */
void rlock__direct_close_slot(slot *s, const char *why);
/* direct_round_trip.c: one request on s (held). */
int rlock__direct_round_trip(slot *s, rlock__req *r, int64_t timeout_ms);

#endif
