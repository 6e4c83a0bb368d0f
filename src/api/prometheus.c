/*
 * prometheus.c: rlock_stats_format, a snapshot as Prometheus text
 * exposition format 0.0.4, so a C server can serve its locks' numbers on
 * its own /metrics endpoint.
 *
 * The text is written as snprintf writes: into the caller's buffer as far
 * as it goes, always NUL-terminated, returning the length of the whole, so
 * a caller can measure first or retry with a larger buffer. Nothing is
 * allocated.
 *
 * Histograms. The snapshot's buckets are four per power of two; Prometheus
 * keeps one time series per bucket, so the exposition sums them into one
 * "le" per power of two, from 16 us (below a Redis round trip) to 2^36 us,
 * plus +Inf. Powers of two are bucket bounds (core/stats.c), so each
 * cumulative count is exact, not interpolated.
 */
#include "api/api.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The first and last power of two (in us) given an "le" of its own. */
#define LE_FIRST_POW2 4
#define LE_LAST_POW2  36

typedef struct out {
    char *buf;
    size_t len;  /* the buffer's size */
    size_t used; /* the length of the whole text so far */
} out;

static void put(out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends as snprintf would: what fits, NUL-terminated; counts it all. */
static void put(out *o, const char *fmt, ...)
{
    char *at = o->used < o->len ? o->buf + o->used : NULL;
    size_t room = o->used < o->len ? o->len - o->used : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

static void header(out *o, const char *name, const char *type,
                   const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(out *o, const char *name, const char *help, uint64_t v)
{
    header(o, name, "counter", help);
    put(o, "%s %llu\n", name, (unsigned long long)v);
}

/* Writes us as seconds, without trailing zeros ("0.000016", "16.384"). */
static void seconds(char *buf, size_t len, uint64_t us)
{
    snprintf(buf, len, "%llu.%06llu", (unsigned long long)(us / 1000000),
             (unsigned long long)(us % 1000000));
    char *end = buf + strlen(buf) - 1;
    while (*end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
}

static void histogram(out *o, const char *name, const char *help,
                      const rlock_histogram *h)
{
    char le[32];
    header(o, name, "histogram", help);
    uint64_t cumulative = 0;
    int b = 0;
    for (int p = LE_FIRST_POW2; p <= LE_LAST_POW2; p++) {
        uint64_t bound = (uint64_t)1 << p;
        while (b < RLOCK_STATS_BUCKETS - 1 &&
               rlock__stats_bucket_le_us(b) <= bound)
            cumulative += h->buckets[b++];
        seconds(le, sizeof(le), bound);
        put(o, "%s_bucket{le=\"%s\"} %llu\n", name, le,
            (unsigned long long)cumulative);
    }
    put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name,
        (unsigned long long)h->count);
    seconds(le, sizeof(le), h->sum_us);
    put(o, "%s_sum %s\n%s_count %llu\n", name, le, name,
        (unsigned long long)h->count);
}

/* Whether the caller's snapshot (of s->size bytes) has the field that
 * ends at offset end. */
#define HAS(s, field)                                                        \
    ((s)->size >= offsetof(rlock_stats, field) + sizeof((s)->field))

int rlock_stats_format(const rlock_stats *s, char *buf, size_t len)
{
    if (s == NULL || s->size < offsetof(rlock_stats, acquired_immediately) ||
        (buf == NULL && len > 0))
        return RLOCK_EINVAL;
    /* a snapshot from an older header: the fields it lacks read as 0 */
    rlock_stats v;
    memset(&v, 0, sizeof(v));
    memcpy(&v, s, s->size < sizeof(v) ? s->size : sizeof(v));
    if (!HAS(s, lease_margin_min_ms))
        v.lease_margin_min_ms = -1;
    out o = {.buf = buf, .len = len, .used = 0};
    if (len > 0)
        buf[0] = '\0';

    header(&o, "rlock_acquires_total", "counter",
           "Acquire calls that ended, by result: held at the first "
           "attempt, held after waiting, wait ran out, or another error.");
    put(&o,
        "rlock_acquires_total{result=\"immediate\"} %llu\n"
        "rlock_acquires_total{result=\"after_wait\"} %llu\n"
        "rlock_acquires_total{result=\"timeout\"} %llu\n"
        "rlock_acquires_total{result=\"error\"} %llu\n",
        (unsigned long long)v.acquired_immediately,
        (unsigned long long)v.acquired_after_wait,
        (unsigned long long)v.acquire_timeouts,
        (unsigned long long)v.acquire_errors);
    counter(&o, "rlock_releases_total", "Unlocks that released a hold.",
            v.releases);
    histogram(&o, "rlock_wait_seconds",
              "Time from an acquire call to holding the lock.", &v.wait);
    histogram(&o, "rlock_hold_seconds",
              "Time a lock was held, from taking it to its final unlock.",
              &v.hold);
    counter(&o, "rlock_unlock_messages_total",
            "Unlock messages heard on subscribed lock channels.",
            v.unlock_messages);
    counter(&o, "rlock_unlock_messages_unused_total",
            "Unlock messages that found no waiter to wake.",
            v.unlock_messages_unused);
    counter(&o, "rlock_rechecks_found_free_total",
            "Locks acquired by a timed re-check rather than an unlock "
            "message (a lost message, or an expired lease).",
            v.rechecks_found_free);
    counter(&o, "rlock_renewals_total", "Lease renewals sent by the watchdog.",
            v.renewals_sent);
    counter(&o, "rlock_renewals_failed_total",
            "Lease renewals whose call failed.", v.renewals_failed);
    header(&o, "rlock_lease_margin_min_seconds", "gauge",
           "The least lease left when a renewal came back (NaN: none yet).");
    if (v.lease_margin_min_ms < 0) {
        put(&o, "rlock_lease_margin_min_seconds NaN\n");
    } else {
        char margin[32];
        seconds(margin, sizeof(margin),
                (uint64_t)v.lease_margin_min_ms * 1000);
        put(&o, "rlock_lease_margin_min_seconds %s\n", margin);
    }
    header(&o, "rlock_locks_lost_total", "counter",
           "Holds found lost, by reason.");
    put(&o,
        "rlock_locks_lost_total{reason=\"gone\"} %llu\n"
        "rlock_locks_lost_total{reason=\"taken\"} %llu\n"
        "rlock_locks_lost_total{reason=\"expired\"} %llu\n"
        "rlock_locks_lost_total{reason=\"abandoned\"} %llu\n",
        (unsigned long long)v.lost_gone, (unsigned long long)v.lost_taken,
        (unsigned long long)v.lost_expired,
        (unsigned long long)v.lost_abandoned);
    counter(&o, "rlock_reconnects_total",
            "Connections opened again after one was lost.", v.reconnects);
    counter(&o, "rlock_round_trips_total", "Redis replies to rlock's calls.",
            v.round_trips);
    counter(&o, "rlock_script_reloads_total",
            "Scripts loaded again after NOSCRIPT.", v.script_reloads);
    header(&o, "rlock_cluster_redirects_total", "counter",
           "Redis Cluster answers that sent a call to another node: MOVED "
           "(a slot's new master) and ASK (a slot migrating).");
    put(&o,
        "rlock_cluster_redirects_total{kind=\"moved\"} %llu\n"
        "rlock_cluster_redirects_total{kind=\"ask\"} %llu\n",
        (unsigned long long)v.cluster_moved,
        (unsigned long long)v.cluster_ask);
    counter(&o, "rlock_cluster_tryagain_total",
            "Redis Cluster answers after which a call was tried again: "
            "TRYAGAIN, CLUSTERDOWN, MASTERDOWN, LOADING, READONLY.",
            v.cluster_tryagain);
    return o.used > INT32_MAX ? RLOCK_EINVAL : (int)o.used;
}
