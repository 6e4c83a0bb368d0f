/*
 * exposition_sample.c: writes one snapshot's Prometheus text (argv[1]) and
 * the same snapshot as JSON (argv[2]), for check_exposition.py, which
 * parses the text with the Prometheus client library's own parser and
 * checks it against the JSON. The snapshot is made by the counting core
 * from a fixed pseudo-random series, so every counter and many buckets
 * differ.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stats.h"

static json_t *histogram_json(const rlock_histogram *h)
{
    json_t *buckets = json_array();
    for (int i = 0; i < RLOCK_STATS_BUCKETS; i++) {
        json_t *b = json_pack("{s:I, s:I}", "le_us",
                              (json_int_t)(i == RLOCK_STATS_BUCKETS - 1
                                               ? -1
                                               : (json_int_t)
                                                     rlock_stats_bucket_le_us(
                                                         i)),
                              "n", (json_int_t)h->buckets[i]);
        json_array_append_new(buckets, b);
    }
    return json_pack("{s:I, s:I, s:I, s:o}", "count", (json_int_t)h->count,
                     "sum_us", (json_int_t)h->sum_us, "max_us",
                     (json_int_t)h->max_us, "buckets", buckets);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s EXPOSITION.txt SNAPSHOT.json\n", argv[0]);
        return 2;
    }
    rlock__stats *s = NULL;
    if (rlock__stats_new(&s) != 0)
        return 1;
    unsigned seed = 12345;
    for (int which = 0; which < RLOCK__STAT_COUNT; which++)
        rlock__stats_add(s, (rlock__stat)which, (uint64_t)rand_r(&seed) % 1000);
    for (int i = 0; i < 5000; i++) {
        /* log-spread: 1 us to about an hour */
        int bits = rand_r(&seed) % 32;
        uint64_t us = ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) &
                      (((uint64_t)1 << bits) - 1);
        rlock__stats_record(i % 3 == 0 ? &s->hold : &s->wait, us);
    }
    rlock__stats_margin(s, 12345);
    rlock_stats snap;
    rlock__stats_snapshot(s, &snap);
    rlock__stats_free(s);

    int n = rlock_stats_format(&snap, NULL, 0);
    char *text = malloc((size_t)n + 1);
    if (n < 0 || text == NULL ||
        rlock_stats_format(&snap, text, (size_t)n + 1) != n)
        return 1;
    FILE *f = fopen(argv[1], "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
        return 1;
    free(text);

    json_t *j = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I}",
        "acquired_immediately", (json_int_t)snap.acquired_immediately,
        "acquired_after_wait", (json_int_t)snap.acquired_after_wait,
        "acquire_timeouts", (json_int_t)snap.acquire_timeouts,
        "acquire_errors", (json_int_t)snap.acquire_errors, "releases",
        (json_int_t)snap.releases, "unlock_messages",
        (json_int_t)snap.unlock_messages, "unlock_messages_unused",
        (json_int_t)snap.unlock_messages_unused, "rechecks_found_free",
        (json_int_t)snap.rechecks_found_free, "renewals_sent",
        (json_int_t)snap.renewals_sent, "renewals_failed",
        (json_int_t)snap.renewals_failed, "lease_margin_min_ms",
        (json_int_t)snap.lease_margin_min_ms, "lost_gone",
        (json_int_t)snap.lost_gone, "lost_taken", (json_int_t)snap.lost_taken,
        "lost_expired", (json_int_t)snap.lost_expired, "lost_abandoned",
        (json_int_t)snap.lost_abandoned, "reconnects",
        (json_int_t)snap.reconnects, "round_trips",
        (json_int_t)snap.round_trips, "script_reloads",
        (json_int_t)snap.script_reloads, "wait", histogram_json(&snap.wait),
        "hold", histogram_json(&snap.hold), "cluster_moved",
        (json_int_t)snap.cluster_moved, "cluster_ask",
        (json_int_t)snap.cluster_ask, "cluster_tryagain",
        (json_int_t)snap.cluster_tryagain);
    if (j == NULL || json_dump_file(j, argv[2], JSON_INDENT(1)) != 0)
        return 1;
    json_decref(j);
    return 0;
}
