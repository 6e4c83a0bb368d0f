/*
 * stats.h: a client's counters and latency histograms, private.
 *
 * The hot path counts with relaxed atomic additions and nothing else: no
 * lock, no allocation, no branch beyond "is counting on". Every function
 * takes the client's rlock__stats, which is NULL when the config turned
 * statistics off, and then does nothing (rlock__stats_clock() does not even
 * read the clock). So a call site is one line:
 *
 *     int64_t t0 = rlock__stats_clock(c->stats);
 *     ...
 *     rlock__stats_acquire_done(c->stats, rc, waited, t0);
 *
 * Relaxed ordering is enough: each counter is exact on its own, and a
 * reader (rlock__stats_snapshot) wants no ordering between counters, only
 * the values. A histogram keeps no count of its own: its count is the sum
 * of its buckets when read, so a snapshot's count always agrees with its
 * buckets (Prometheus requires _count == the +Inf bucket).
 */
#ifndef RLOCK_CORE_STATS_H
#define RLOCK_CORE_STATS_H

#include "rlock.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The counters, by what they count (rlock_stats names each). */
typedef enum rlock__stat {
    RLOCK__STAT_ACQUIRED_IMMEDIATELY,
    RLOCK__STAT_ACQUIRED_AFTER_WAIT,
    RLOCK__STAT_ACQUIRE_TIMEOUTS,
    RLOCK__STAT_ACQUIRE_ERRORS,
    RLOCK__STAT_RELEASES,
    RLOCK__STAT_UNLOCK_MESSAGES,
    RLOCK__STAT_UNLOCK_MESSAGES_UNUSED,
    RLOCK__STAT_RECHECKS_FOUND_FREE,
    RLOCK__STAT_RENEWALS_SENT,
    RLOCK__STAT_RENEWALS_FAILED,
    RLOCK__STAT_LOST_GONE,
    RLOCK__STAT_LOST_TAKEN,
    RLOCK__STAT_LOST_EXPIRED,
    RLOCK__STAT_LOST_ABANDONED,
    RLOCK__STAT_RECONNECTS,
    RLOCK__STAT_ROUND_TRIPS,
    RLOCK__STAT_SCRIPT_RELOADS,
    RLOCK__STAT_CLUSTER_MOVED,
    RLOCK__STAT_CLUSTER_ASK,
    RLOCK__STAT_CLUSTER_TRYAGAIN,
    RLOCK__STAT_COUNT
} rlock__stat;

typedef struct rlock__hist {
    _Atomic uint64_t sum_us;
    _Atomic uint64_t max_us;
    _Atomic uint64_t buckets[RLOCK_STATS_BUCKETS];
} rlock__hist;

typedef struct rlock__stats {
    _Atomic uint64_t counters[RLOCK__STAT_COUNT];
    _Atomic int64_t margin_min_ms; /* INT64_MAX: no renewal came back yet */
    rlock__hist wait;
    rlock__hist hold;
} rlock__stats;

int rlock__stats_new(rlock__stats **out);
void rlock__stats_free(rlock__stats *s);
void rlock__stats_snapshot(const rlock__stats *s, rlock_stats *out);
int rlock__stats_bucket(uint64_t us);
uint64_t rlock__stats_bucket_le_us(int i);
int64_t rlock__stats_quantile(const rlock_histogram *h, double q);
void rlock__stats_record(rlock__hist *h, uint64_t us);

/* Returns the monotonic clock in us when s counts, else 0 (and reads no
 * clock). */
static inline int64_t rlock__stats_clock(const rlock__stats *s)
{
    if (s == NULL)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Adds one to counter which. */
static inline void rlock__stats_count(rlock__stats *s, rlock__stat which)
{
    if (s != NULL)
        atomic_fetch_add_explicit(&s->counters[which], 1,
                                  memory_order_relaxed);
}

/* Adds n to counter which. */
static inline void rlock__stats_add(rlock__stats *s, rlock__stat which,
                                    uint64_t n)
{
    if (s != NULL)
        atomic_fetch_add_explicit(&s->counters[which], n,
                                  memory_order_relaxed);
}

/* Records the time since start_us (from rlock__stats_clock) in h. */
static inline void rlock__stats_since(rlock__stats *s, rlock__hist *h,
                                      int64_t start_us)
{
    if (s == NULL || start_us == 0)
        return;
    int64_t d = rlock__stats_clock(s) - start_us;
    rlock__stats_record(h, d > 0 ? (uint64_t)d : 0);
}

/* An acquire call that started at start_us ended with rc (0: held;
 * waited: after at least one failed try or a wait for its turn). */
static inline void rlock__stats_acquire_done(rlock__stats *s, int rc,
                                             bool waited, int64_t start_us)
{
    if (s == NULL)
        return;
    if (rc == RLOCK_OK) {
        rlock__stats_count(s, waited ? RLOCK__STAT_ACQUIRED_AFTER_WAIT
                                     : RLOCK__STAT_ACQUIRED_IMMEDIATELY);
        rlock__stats_since(s, &s->wait, start_us);
    } else {
        rlock__stats_count(s, rc == RLOCK_ETIMEDOUT
                                  ? RLOCK__STAT_ACQUIRE_TIMEOUTS
                                  : RLOCK__STAT_ACQUIRE_ERRORS);
    }
}

/* A hold taken at held_us (rlock__stats_clock, 0: not timed) was released
 * for good. */
static inline void rlock__stats_hold_done(rlock__stats *s, int64_t held_us)
{
    if (s != NULL)
        rlock__stats_since(s, &s->hold, held_us);
}

/* A hold was found lost for reason (RLOCK_LOST_*). */
void rlock__stats_lost(rlock__stats *s, int reason);

/* A renewal came back with margin_ms of the lease left. */
void rlock__stats_margin(rlock__stats *s, int64_t margin_ms);

#endif /* RLOCK_CORE_STATS_H */
