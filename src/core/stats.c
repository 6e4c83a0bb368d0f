/*
 * stats.c: a client's counters and latency histograms (stats.h), and the
 * bucket arithmetic the public histogram functions share.
 *
 * Buckets. A latency histogram must cover a 50 us round trip and a lock
 * held for hours with a bounded error and a fixed size, so that recording
 * is one index computation and one atomic addition. The buckets are
 * log-linear, as HDR histograms are at their coarsest: below 4 us one per
 * microsecond, then four per power of two, so a value is known within a
 * quarter of itself. Bucket 0 holds 0; a value v >= 1 goes to bucket
 * 1 + g(v - 1), where g is the log-linear index; bucket i thus holds
 * (le(i - 1), le(i)], which is Prometheus's "le" rule, so cumulative counts
 * at any bucket bound are exact. Powers of two are bounds (le(12) = 16).
 */
#include "core/stats.h"

#include <stdlib.h>
#include <string.h>

#include "proto/proto.h" /* rlock__calloc */

/* The log-linear index of w: w itself below 4, else 4 per power of two. */
static int log_linear(uint64_t w)
{
    if (w < 4)
        return (int)w;
    int k = 63 - __builtin_clzll(w); /* 2^k <= w < 2^(k+1), k >= 2 */
    return 4 * (k - 1) + (int)((w >> (k - 2)) & 3);
}

/* Returns the bucket of a value of us microseconds. */
int rlock__stats_bucket(uint64_t us)
{
    if (us == 0)
        return 0;
    int i = 1 + log_linear(us - 1);
    return i < RLOCK_STATS_BUCKETS - 1 ? i : RLOCK_STATS_BUCKETS - 1;
}

/* Returns the largest value bucket i holds (UINT64_MAX for the last), or 0
 * when i is out of range. */
uint64_t rlock__stats_bucket_le_us(int i)
{
    if (i <= 0 || i >= RLOCK_STATS_BUCKETS)
        return 0;
    if (i == RLOCK_STATS_BUCKETS - 1)
        return UINT64_MAX;
    int j = i - 1; /* the log-linear index of the bucket's w = v - 1 */
    if (j < 4)
        return (uint64_t)j + 1;
    int k = j / 4 + 1, sub = j % 4;
    return (uint64_t)(4 + sub + 1) << (k - 2);
}

/* Adds one value to h: its bucket, the sum, and the maximum. */
void rlock__stats_record(rlock__hist *h, uint64_t us)
{
    atomic_fetch_add_explicit(&h->buckets[rlock__stats_bucket(us)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
    uint64_t max = atomic_load_explicit(&h->max_us, memory_order_relaxed);
    /* a new maximum is rare after warm-up: one load, no write */
    while (us > max &&
           !atomic_compare_exchange_weak_explicit(&h->max_us, &max, us,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void rlock__stats_lost(rlock__stats *s, int reason)
{
    static const rlock__stat by_reason[] = {
        [RLOCK_LOST_GONE] = RLOCK__STAT_LOST_GONE,
        [RLOCK_LOST_TAKEN] = RLOCK__STAT_LOST_TAKEN,
        [RLOCK_LOST_EXPIRED] = RLOCK__STAT_LOST_EXPIRED,
        [RLOCK_LOST_ABANDONED] = RLOCK__STAT_LOST_ABANDONED,
    };
    if (reason >= RLOCK_LOST_GONE && reason <= RLOCK_LOST_ABANDONED)
        rlock__stats_count(s, by_reason[reason]);
}

void rlock__stats_margin(rlock__stats *s, int64_t margin_ms)
{
    if (s == NULL)
        return;
    int64_t min = atomic_load_explicit(&s->margin_min_ms,
                                       memory_order_relaxed);
    while (margin_ms < min &&
           !atomic_compare_exchange_weak_explicit(&s->margin_min_ms, &min,
                                                  margin_ms,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* Makes a client's statistics, all zero. Returns 0 or RLOCK_ENOMEM. */
int rlock__stats_new(rlock__stats **out)
{
    rlock__stats *s = rlock__calloc(1, sizeof(*s));
    if (s == NULL)
        return RLOCK_ENOMEM;
    for (int i = 0; i < RLOCK__STAT_COUNT; i++)
        atomic_init(&s->counters[i], 0);
    atomic_init(&s->margin_min_ms, INT64_MAX);
    *out = s;
    return RLOCK_OK;
}

void rlock__stats_free(rlock__stats *s)
{
    free(s);
}

static void copy_hist(const rlock__hist *from, rlock_histogram *to)
{
    to->count = 0;
    for (int i = 0; i < RLOCK_STATS_BUCKETS; i++) {
        to->buckets[i] = atomic_load_explicit(&from->buckets[i],
                                              memory_order_relaxed);
        to->count += to->buckets[i];
    }
    to->sum_us = atomic_load_explicit(&from->sum_us, memory_order_relaxed);
    to->max_us = atomic_load_explicit(&from->max_us, memory_order_relaxed);
}

/* Copies s into a whole rlock_stats of this library's size (the public
 * function trims it to the caller's). */
void rlock__stats_snapshot(const rlock__stats *s, rlock_stats *out)
{
    uint64_t v[RLOCK__STAT_COUNT];
    for (int i = 0; i < RLOCK__STAT_COUNT; i++)
        v[i] = atomic_load_explicit(&s->counters[i], memory_order_relaxed);
    memset(out, 0, sizeof(*out));
    out->size = sizeof(*out);
    out->acquired_immediately = v[RLOCK__STAT_ACQUIRED_IMMEDIATELY];
    out->acquired_after_wait = v[RLOCK__STAT_ACQUIRED_AFTER_WAIT];
    out->acquire_timeouts = v[RLOCK__STAT_ACQUIRE_TIMEOUTS];
    out->acquire_errors = v[RLOCK__STAT_ACQUIRE_ERRORS];
    out->releases = v[RLOCK__STAT_RELEASES];
    out->unlock_messages = v[RLOCK__STAT_UNLOCK_MESSAGES];
    out->unlock_messages_unused = v[RLOCK__STAT_UNLOCK_MESSAGES_UNUSED];
    out->rechecks_found_free = v[RLOCK__STAT_RECHECKS_FOUND_FREE];
    out->renewals_sent = v[RLOCK__STAT_RENEWALS_SENT];
    out->renewals_failed = v[RLOCK__STAT_RENEWALS_FAILED];
    int64_t margin =
        atomic_load_explicit(&s->margin_min_ms, memory_order_relaxed);
    out->lease_margin_min_ms = margin == INT64_MAX ? -1 : margin;
    out->lost_gone = v[RLOCK__STAT_LOST_GONE];
    out->lost_taken = v[RLOCK__STAT_LOST_TAKEN];
    out->lost_expired = v[RLOCK__STAT_LOST_EXPIRED];
    out->lost_abandoned = v[RLOCK__STAT_LOST_ABANDONED];
    out->reconnects = v[RLOCK__STAT_RECONNECTS];
    out->round_trips = v[RLOCK__STAT_ROUND_TRIPS];
    out->script_reloads = v[RLOCK__STAT_SCRIPT_RELOADS];
    copy_hist(&s->wait, &out->wait);
    copy_hist(&s->hold, &out->hold);
    out->cluster_moved = v[RLOCK__STAT_CLUSTER_MOVED];
    out->cluster_ask = v[RLOCK__STAT_CLUSTER_ASK];
    out->cluster_tryagain = v[RLOCK__STAT_CLUSTER_TRYAGAIN];
}

/* The q-quantile of h (see rlock_stats_quantile in rlock.h). */
int64_t rlock__stats_quantile(const rlock_histogram *h, double q)
{
    if (h == NULL || !(q >= 0.0 && q <= 1.0))
        return RLOCK_EINVAL;
    if (h->count == 0)
        return -1;
    if (q == 1.0)
        return (int64_t)h->max_us;
    /* the rank of the value wanted, 1-based: at least the first */
    uint64_t rank = (uint64_t)(q * (double)h->count);
    if ((double)rank < q * (double)h->count)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < RLOCK_STATS_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t le = rlock__stats_bucket_le_us(i);
            return (int64_t)(le < h->max_us ? le : h->max_us);
        }
    }
    return (int64_t)h->max_us; /* count disagreed with the buckets */
}
