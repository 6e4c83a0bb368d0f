/*
 * core/entry_impl.h: an entry's state, private to entry.c,
 * entry_waiters.c and hold.c (the files that own it; nobody else sees
 * these fields).
 *
 * An rlock__entry (core/core.h) is the first member of the entry.c's
 * struct, whose mutable part only these files can reach, as jansson's
 * json_object_t embeds the public json_t.
 *
 * Locks: client->entries_mu (the table and every entry's refs) is taken
 * before entry->mu (everything else of an entry).
 */
#ifndef RLOCK_CORE_ENTRY_IMPL_H
#define RLOCK_CORE_ENTRY_IMPL_H

#include "core.h"

struct rlock__holder {
    struct rlock__holder *next;
    uint64_t tid;          /* the owner: a thread, or an async owner id */
    uint64_t epoch;        /* unique per hold; guards late replies */
    int count;             /* reentrant holds */
    int64_t lease_ms;      /* restored by an inner unlock */
    bool watchdog;         /* renewed by the watchdog */
    bool lost;             /* found gone: unlock answers RLOCK_ELOST */
    int64_t renewed_at_ms; /* CLOCK_MONOTONIC of the last known lease */
    int releasing;         /* unlocks in flight: a loss found meanwhile
                              waits for their outcome (mark_lost) */
    int loss_pending;      /* RLOCK_LOST_* found while releasing, or 0 */
    int64_t held_at_us;    /* rlock__stats_clock() when taken; 0: untimed */
};

typedef struct entry {
    rlock__entry pub; /* first: what every file may read */
    char *key;        /* in the client's table: kind, waiter and name */
    int refs;         /* under client->entries_mu */

    pthread_mutex_t mu;
    rlock__holder *holders;
    rlock__waiter *head, *tail; /* waiting acquires, in turn */
    int nwaiters;
    int64_t contended_at_ms; /* an attempt last found it taken */
    int64_t free_by_ms;      /* when that holder's lease ends (0: not known) */
    int64_t released_at_ms;  /* this client last released it */
    bool subscribed; /* the channel subscription is confirmed */
    bool unheard;    /* its channel's SUBSCRIBE was refused: waiters
                        re-check without waiting for a subscription */
    int64_t linger_ms;       /* how long it stays in its channel after its
                                last waiter (a queued RLock waiter's own
                                entry); 0: it leaves at once */
    int64_t linger_until_ms; /* while lingering: when it leaves */
    bool banked; /* a wake-up came while lingering: the next waiter's */
    rlock_lost_cb lost_cb; /* rlock_on_lost() */
    void *lost_arg;
    uint64_t lost_reg;     /* which setting of it (notify.c); 0: none */
} entry;

static inline entry *entry_of(rlock__entry *e)
{
    return (entry *)e;
}

/* entry.c, for hold.c: an entry's key in the table (malloc'd, or NULL),
 * the table walk, and freeing a hold record. */
char *rlock__entry_key(int kind, const char *name, const char *waiter);
void rlock__entries_walk(rlock_client *c, void (*fn)(entry *e, void *arg),
                         void *arg);
void rlock__holder_remove(entry *e, rlock__holder *h);

#endif
