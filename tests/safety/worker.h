/*
 * worker.h: the safety harness's C worker, shared between its files.
 *
 * One worker process runs several actors (threads of the blocking API, or
 * owners on one libev loop with --async). Each actor loops: pick a lock
 * name, acquire it, and while it holds it do a read-modify-write of the
 * name's counter on the store Redis, then release it. Every step is
 * recorded as an invoke line and a completion line in the history file
 * (history.h), for tests/safety/checker.py to judge afterwards.
 *
 * Only rlock's public API (rlock.h) touches the locks; the store is plain
 * hiredis on a Redis that no fault touches.
 */
#ifndef RLOCK_SAFETY_WORKER_H
#define RLOCK_SAFETY_WORKER_H

#include <rlock.h>

#include <stdatomic.h>
#include <stdint.h>

#include "history.h"
#include "store.h"

/* Redlock takes one lock per independent master (rlock_redlock_new). */
#define WORKER_REDLOCK_NODES 5
/* The most --uri options (Redlock's five) and the most lock names. */
#define WORKER_MAX_URIS WORKER_REDLOCK_NODES
#define WORKER_MAX_NAMES 1024
#define WORKER_MAX_THREADS 256

typedef enum worker_kind {
    KIND_LOCK,
    KIND_FAIR,
    KIND_RW,
    KIND_FENCED,
    KIND_REDLOCK
} worker_kind;

/* The command line, as parsed (worker.c documents each option). */
typedef struct worker_options {
    const char *uris[WORKER_MAX_URIS];
    int nuris;
    const char *store_uri;
    const char *process;
    const char *kind_name;
    worker_kind kind;
    int threads;
    int names;
    int64_t seconds; /* 0: unset */
    int64_t ops;     /* per actor; 0: unset (run for seconds) */
    int64_t lease_ms;
    int64_t wait_ms;
    int64_t hold_ms;
    int64_t watchdog_ms; /* 0: rlock's default */
    int async;
    int queue;         /* -1: rlock's default */
    int sync_replicas; /* 0: off */
    const char *history_path;
    unsigned long seed;
    const char *fence_script_path;
} worker_options;

struct worker;

/* One actor: a thread of the blocking API, or an owner id on the loop. */
typedef struct actor {
    struct worker *w;
    int index;            /* the "thread" of its history lines */
    _Atomic uint64_t owner_id; /* rlock_thread_id() or rlock_owner_new() */
    char owner[80];       /* "<client uuid>:<owner_id>" */
    atomic_ulong seq;     /* next sequence number of its ids */
    unsigned int rng;     /* rand_r() state, from --seed */
    store_conn store;     /* its own connection to the store */
    int64_t ops_done;     /* acquires tried */
    /* the operation under way */
    int name;             /* index into the names */
    _Atomic char mode;    /* 'x' or 'r' (read by the lost-lock callback) */
    int64_t token;        /* fenced: the hold's token; else 0 */
    int64_t value;        /* the counter value read, when read_ok */
    int read_ok;
    int release_tries;
} actor;

/* The lost-lock callback's argument: which client (Redlock node) it is. */
typedef struct worker_node {
    struct worker *w;
    int node;
} worker_node;

/* The whole process. */
typedef struct worker {
    worker_options opt;
    history hist;
    rlock_client *clients[WORKER_MAX_URIS];
    worker_node nodes[WORKER_MAX_URIS];
    int nclients;
    char *fence_script; /* the fencing store's Lua text (fenced only) */
    char (*names)[64];  /* names[i]: "safety:<kind>:<i>" */
    /* lock handles per name (not Redlock: those are per actor) */
    rlock **locks;      /* lock, fair, fenced */
    rlock_rw **rws;     /* rw */
    actor *actors;
    int nactors;
    int64_t deadline_mono_ns; /* stop starting operations after it */
    atomic_int stop;          /* SIGTERM/SIGINT or deadline reached */
    atomic_int actors_done;
    atomic_ulong orphan_seq; /* ids of lost signals of no known actor */
} worker;

/* Sets a's owner string from its owner id and client 0's id. */
void actor_set_owner(actor *a, uint64_t owner_id);

/* Counts a finished actor. */
void worker_actor_done(worker *w);

/* Sleeps ms milliseconds. */
void worker_sleep_ms(int64_t ms);

/* After an acquire that failed at once (not a timeout): how long to pause,
 * so that a down server does not make an actor spin. */
#define WORKER_ERROR_PAUSE_MS 100
/* A release Redis refused (the hold kept) is tried this many times. */
#define WORKER_RELEASE_TRIES 3

/* Whether actor a may start another operation: not stopped, before the
 * deadline, and under --ops. */
int worker_may_start(const worker *w, const actor *a);

/* Picks the next operation's name and mode into a. */
void worker_pick(actor *a);

/* The handle an acquire or release of a's current operation goes through
 * (not for Redlock). */
rlock *worker_handle(actor *a);

/* Lines: fills e with a's current operation's common fields. */
void actor_event(const actor *a, hist_event *e, const char *op,
                 unsigned long seq);

/* Writes the invoke line of op for a's current operation and returns its
 * sequence number, for the completion. */
unsigned long actor_invoke(actor *a, const char *op);

/* Writes the completion of an acquire or release from rlock's status
 * (outcome.c maps codes to ok/fail/info). */
void actor_complete_lock_op(actor *a, const char *op, unsigned long seq,
                            int status, int is_release);

/* The critical section's store accesses (critical.c): the read, and for
 * exclusive holders the write of value + 1. */
void critical_read(actor *a);
void critical_write(actor *a);

/* The loop thread of --async (worker_async.c): runs every actor as an
 * explicit owner on one libev loop, through the async API, until each has
 * finished; arg is the worker. */
void *worker_async_thread(void *arg);

/* How an rlock status reads in the history (outcome.c): "ok", "fail" or
 * "info". */
const char *outcome_of_acquire(int status);
const char *outcome_of_release(int status);
/* Whether a failed release left the hold in place (Redis refused it), so
 * that the worker should release again. */
int outcome_release_kept_hold(int status);

/* CLOCK_MONOTONIC in ns. */
int64_t worker_mono_ns(void);

#endif /* RLOCK_SAFETY_WORKER_H */
