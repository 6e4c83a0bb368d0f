/*
 * worker_testing.h: running safety workers and checking their histories,
 * for the tests of the C worker (test_safety_worker.c) and of the Java
 * worker beside it (compat/test_java_safety_worker.c).
 *
 * The checks are those a run without faults must pass: every line has
 * the fields the checker reads; each actor's invoke is followed by its
 * completion (same id, same op) before its next invoke; every completion
 * is ok; no lost-lock line; each acknowledged write on a lock wrote the
 * value its holder read plus one, no value twice across all the
 * processes; and each counter in the store equals its lock's acknowledged
 * writes. A fenced run's lines carry the hold's token.
 *
 * The helpers fail the running cmocka test through its asserts.
 */
#ifndef RLOCK_SAFETY_WORKER_TESTING_H
#define RLOCK_SAFETY_WORKER_TESTING_H

#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define WT_MAX_PROCS 4
#define WT_MAX_THREADS 8
#define WT_NAMES 2           /* lock names per run */
#define WT_MAX_VALUES 100000 /* the most writes on one lock */

/* What the histories of one run showed. */
typedef struct wt_summary {
    int lines, acquires, writes_ok, lost;
    int acquires_of[WT_MAX_PROCS]; /* per process */
    int writes[WT_NAMES];          /* acknowledged writes per lock */
} wt_summary;

/* Starts argv[0] (a path, or a program on PATH) with argv (NULL-
 * terminated); returns its pid, or -1. */
pid_t wt_spawn(const char *const *argv);

/* Waits for pid; returns its exit status, or -1 if it did not exit. */
int wt_wait(pid_t pid);

/* Empties the store (FLUSHALL), so that counters count one run. */
void wt_empty_store(rt_redis *store);

/* Checks the histories of n processes (paths[i] written by procs[i]) of
 * one run of kind, against the counters on store. Returns what it saw
 * (static storage, valid until the next call). */
const wt_summary *wt_check_histories(int n, const char *const *paths,
                                     const char *const *procs,
                                     const char *kind, rt_redis *store);

#endif /* RLOCK_SAFETY_WORKER_TESTING_H */
