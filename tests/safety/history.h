/*
 * history.h: the safety worker's history file, JSON lines.
 *
 * Each line is one event of an operation: an invoke before the call, and a
 * completion (ok, fail or info) after it, sharing an id
 * "<process>-<thread>-<seq>"; a lost-lock signal is a lone info line. The
 * format is the contract with tests/safety/checker.py (and the Java worker
 * writes the same): see docs/SAFETY.md and the harness's design notes.
 *
 * The file is opened with O_APPEND and each line goes out in one write(2),
 * so lines of concurrent threads never interleave and a process killed
 * with -9 leaves at most its last line cut short.
 *
 * Thread-safety: history_write() from any thread once history_open() has
 * returned; open and close on one thread.
 */
#ifndef RLOCK_SAFETY_HISTORY_H
#define RLOCK_SAFETY_HISTORY_H

#include <stdint.h>

typedef struct history {
    int fd;
} history;

/* One line's fields. Strings are borrowed for the call; those that are NULL
 * are left out, as are token and value unless has_token / has_value. */
typedef struct hist_event {
    const char *proc;
    int thread;
    unsigned long seq;
    const char *type;  /* invoke | ok | fail | info */
    const char *op;    /* acquire | release | read | write | lost */
    const char *owner; /* "<uuid>:<thread or owner id>" */
    const char *lock;
    const char *kind;  /* lock | fair | rw | fenced | redlock */
    char mode;         /* 'x' exclusive, 'r' shared */
    int has_token;
    int64_t token;
    int has_value;
    int64_t value;
    const char *err;    /* why it failed, for fail and info */
    const char *reason; /* lost: RLOCK_LOST_* as a word */
    int64_t hold;       /* lost: the hold's id; 0: left out */
    int node;           /* lost, Redlock: which server; -1: left out */
} hist_event;

/* Opens (creating) path for appending. Returns 0, or -1 with errno. */
int history_open(history *h, const char *path);

/* Stamps e with mono_ns (CLOCK_MONOTONIC) and wall_ms (CLOCK_REALTIME) and
 * appends it as one line. Returns 0, or -1 when the line could not be
 * written whole. */
int history_write(history *h, const hist_event *e);

/* fsyncs and closes the file. */
void history_close(history *h);

#endif /* RLOCK_SAFETY_HISTORY_H */
