/*
 * test_stats.c: the counting core (core/stats.c) and the Prometheus text
 * (api/prometheus.c) without a server: which bucket a latency lands in,
 * what a histogram remembers, quantiles read off it, and the exposition's
 * shape. What real lock traffic counts is tests/integration/test_stats_scenarios.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "api/api.h" /* rlock__config_defaults, and core/core.h */

/* --------------------------------------------------------- growing safely */

/* rlock_stats may grow because its size comes first and says how much the
 * caller has; the histograms inside it never change shape (rlock.h). The
 * ABI check (abi/librlock.abi) pins every offset; these pin the rules. */
_Static_assert(offsetof(rlock_stats, size) == 0, "size must come first");
_Static_assert(sizeof(rlock_histogram) ==
                   (3 + RLOCK_STATS_BUCKETS) * sizeof(uint64_t),
               "rlock_histogram's layout is frozen");
_Static_assert(RLOCK_STATS_BUCKETS == 142, "the bucket count is frozen");

/* A caller whose struct is too short for the size field itself, or none,
 * gets RLOCK_EINVAL, before the client is looked at. */
static void test_stats_refuses_a_struct_without_its_size(void **state)
{
    (void)state;
    rlock_stats s = {.size = sizeof(s.size) - 1};
    assert_int_equal(rlock_client_stats(NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_client_stats(NULL, &s), RLOCK_EINVAL);
    rlock_stats init = RLOCK_STATS_INIT;
    assert_int_equal(init.size, sizeof(rlock_stats));
}

/* ---------------------------------------------------------------- buckets */

static void test_zero_lands_in_bucket_zero(void **state)
{
    (void)state;
    assert_int_equal(rlock__stats_bucket(0), 0);
    assert_int_equal(rlock_stats_bucket_le_us(0), 0);
}

/* Prometheus's rule: bucket i holds (le(i - 1), le(i)]. */
static void test_each_bucket_holds_the_values_up_to_its_bound(void **state)
{
    (void)state;
    for (int i = 1; i < RLOCK_STATS_BUCKETS - 1; i++) {
        uint64_t lo = rlock_stats_bucket_le_us(i - 1);
        uint64_t hi = rlock_stats_bucket_le_us(i);
        assert_true(hi > lo);
        assert_int_equal(rlock__stats_bucket(lo + 1), i);
        assert_int_equal(rlock__stats_bucket(hi), i);
        assert_int_equal(rlock__stats_bucket(hi + 1), i + 1);
    }
}

static void test_powers_of_two_are_bucket_bounds(void **state)
{
    (void)state;
    for (int p = 0; p <= 36; p++) {
        uint64_t v = (uint64_t)1 << p;
        int i = rlock__stats_bucket(v);
        assert_int_equal(rlock_stats_bucket_le_us(i), v);
    }
}

/* Four buckets per power of two: a value is known within a quarter. */
static void test_a_bucket_is_at_most_a_quarter_of_its_values_wide(
    void **state)
{
    (void)state;
    for (int i = 5; i < RLOCK_STATS_BUCKETS - 1; i++) {
        uint64_t lo = rlock_stats_bucket_le_us(i - 1);
        uint64_t hi = rlock_stats_bucket_le_us(i);
        assert_true((hi - lo) * 4 <= lo + 1);
    }
}

static void test_values_past_2_to_the_36_us_land_in_the_last_bucket(
    void **state)
{
    (void)state;
    uint64_t last_bound = (uint64_t)1 << 36;
    assert_int_equal(rlock__stats_bucket(last_bound), RLOCK_STATS_BUCKETS - 2);
    assert_int_equal(rlock__stats_bucket(last_bound + 1),
                     RLOCK_STATS_BUCKETS - 1);
    assert_int_equal(rlock__stats_bucket(UINT64_MAX), RLOCK_STATS_BUCKETS - 1);
    assert_true(rlock_stats_bucket_le_us(RLOCK_STATS_BUCKETS - 1) ==
                UINT64_MAX);
}

static void test_bucket_bound_out_of_range_is_zero(void **state)
{
    (void)state;
    assert_int_equal(rlock_stats_bucket_le_us(-1), 0);
    assert_int_equal(rlock_stats_bucket_le_us(RLOCK_STATS_BUCKETS), 0);
}

/* -------------------------------------------------------------- histograms */

static rlock_stats snapshot_of(const rlock__stats *s)
{
    rlock_stats out;
    rlock__stats_snapshot(s, &out);
    return out;
}

static void test_a_histogram_counts_sums_and_keeps_the_max(void **state)
{
    rlock__stats *s = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&s), 0);
    uint64_t values[] = {0, 1, 7, 1000, 250000, 3};
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
        rlock__stats_record(&s->wait, values[i]);
        sum += values[i];
    }
    rlock_stats snap = snapshot_of(s);
    assert_int_equal(snap.wait.count, 6);
    assert_int_equal(snap.wait.sum_us, sum);
    assert_int_equal(snap.wait.max_us, 250000);
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++)
        assert_true(snap.wait.buckets[rlock__stats_bucket(values[i])] >= 1);
    assert_int_equal(snap.hold.count, 0); /* the other one is untouched */
    rlock__stats_free(s);
}

static void test_a_fresh_snapshot_is_zero_with_no_lease_margin(void **state)
{
    rlock__stats *s = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&s), 0);
    rlock_stats snap = snapshot_of(s);
    assert_int_equal(snap.size, sizeof(rlock_stats));
    assert_int_equal(snap.acquired_immediately, 0);
    assert_int_equal(snap.round_trips, 0);
    assert_int_equal(snap.lease_margin_min_ms, -1);
    rlock__stats_free(s);
}

static void test_the_lease_margin_keeps_the_smallest(void **state)
{
    rlock__stats *s = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&s), 0);
    rlock__stats_margin(s, 20000);
    rlock__stats_margin(s, 9000);
    rlock__stats_margin(s, 15000);
    assert_int_equal(snapshot_of(s).lease_margin_min_ms, 9000);
    rlock__stats_free(s);
}

static void test_an_acquire_is_counted_by_its_result(void **state)
{
    rlock__stats *s = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&s), 0);
    int64_t t0 = rlock__stats_clock(s);
    rlock__stats_acquire_done(s, RLOCK_OK, false, t0);
    rlock__stats_acquire_done(s, RLOCK_OK, true, t0);
    rlock__stats_acquire_done(s, RLOCK_OK, true, t0);
    rlock__stats_acquire_done(s, RLOCK_ETIMEDOUT, true, t0);
    rlock__stats_acquire_done(s, RLOCK_ECONN, false, t0);
    rlock__stats_acquire_done(s, RLOCK_ECANCELED, true, t0);
    rlock_stats snap = snapshot_of(s);
    assert_int_equal(snap.acquired_immediately, 1);
    assert_int_equal(snap.acquired_after_wait, 2);
    assert_int_equal(snap.acquire_timeouts, 1);
    assert_int_equal(snap.acquire_errors, 2);
    assert_int_equal(snap.wait.count, 3); /* acquisitions only */
    rlock__stats_free(s);
}

static void test_losses_are_counted_by_reason(void **state)
{
    rlock__stats *s = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&s), 0);
    rlock__stats_lost(s, RLOCK_LOST_GONE);
    rlock__stats_lost(s, RLOCK_LOST_TAKEN);
    rlock__stats_lost(s, RLOCK_LOST_TAKEN);
    rlock__stats_lost(s, RLOCK_LOST_EXPIRED);
    rlock__stats_lost(s, RLOCK_LOST_ABANDONED);
    rlock__stats_lost(s, 99); /* no such reason: nothing */
    rlock_stats snap = snapshot_of(s);
    assert_int_equal(snap.lost_gone, 1);
    assert_int_equal(snap.lost_taken, 2);
    assert_int_equal(snap.lost_expired, 1);
    assert_int_equal(snap.lost_abandoned, 1);
    rlock__stats_free(s);
}

/* Statistics off: every call is a no-op on NULL, the clock is not read. */
static void test_counting_into_null_does_nothing(void **state)
{
    (void)state;
    assert_int_equal(rlock__stats_clock(NULL), 0);
    rlock__stats_count(NULL, RLOCK__STAT_ROUND_TRIPS);
    rlock__stats_add(NULL, RLOCK__STAT_RENEWALS_SENT, 3);
    rlock__stats_acquire_done(NULL, RLOCK_OK, true, 1);
    rlock__stats_hold_done(NULL, 1);
    rlock__stats_lost(NULL, RLOCK_LOST_GONE);
    rlock__stats_margin(NULL, 5);
}

/* ----------------------------------------------------- unlock messages */

/* An entry with n blocking waiters (never woken: neither a thread nor a
 * kick) of a client that has only an entry table: no I/O thread, no
 * subscriber. */
#define MAX_WAITERS 4

typedef struct waiting {
    rlock_client client;
    rlock__entry *entry;
    rlock__waiter w[MAX_WAITERS];
    int n;
} waiting;

static waiting *entry_with_waiters(int n)
{
    waiting *wt = calloc(1, sizeof(*wt));
    assert_non_null(wt);
    rlock__config_defaults(&wt->client.cfg);
    pthread_mutex_init(&wt->client.entries_mu, NULL);
    assert_int_equal(rlock__map_init(&wt->client.entries), 0);
    wt->entry = rlock__entry_get(&wt->client, RLOCK_KIND_LOCK, "stats", NULL);
    assert_non_null(wt->entry);
    for (wt->n = 0; wt->n < n; wt->n++)
        rlock__waiter_enter(wt->entry, &wt->w[wt->n], NULL);
    return wt;
}

/* How many of its waiters have a wake-up. */
static int permits(const waiting *wt)
{
    int n = 0;
    for (int i = 0; i < wt->n; i++)
        n += wt->w[i].permit;
    return n;
}

static void entry_free(waiting *wt)
{
    for (int i = 0; i < wt->n; i++)
        rlock__waiter_leave(&wt->w[i]);
    rlock__entry_unref(wt->entry);
    rlock__map_destroy(&wt->client.entries);
    pthread_mutex_destroy(&wt->client.entries_mu);
    rlock__config_clear(&wt->client.cfg);
    free(wt);
}

/* What rlock_stats' unlock_messages_unused counts: a message that gives no
 * waiter a permit it did not have. */
static void test_a_message_wakes_a_waiter_until_each_has_a_permit(
    void **state)
{
    (void)state;
    waiting *wt = entry_with_waiters(2);
    rlock__entry *e = wt->entry;
    assert_true(rlock__entry_wake(e, false));  /* first waiter */
    assert_true(rlock__entry_wake(e, false));  /* second */
    assert_false(rlock__entry_wake(e, false)); /* nobody left */
    assert_false(rlock__entry_wake(e, true));
    assert_int_equal(permits(wt), 2);
    entry_free(wt);
}

static void test_a_wake_all_message_wakes_whoever_has_no_permit(void **state)
{
    (void)state;
    waiting *wt = entry_with_waiters(3);
    rlock__entry *e = wt->entry;
    assert_true(rlock__entry_wake(e, false));
    assert_true(rlock__entry_wake(e, true)); /* two more */
    assert_int_equal(permits(wt), 3);
    assert_false(rlock__entry_wake(e, true));
    entry_free(wt);
}

static void test_a_message_for_an_entry_without_waiters_wakes_nobody(
    void **state)
{
    (void)state;
    waiting *wt = entry_with_waiters(0);
    rlock__entry *e = wt->entry;
    assert_false(rlock__entry_wake(e, false));
    assert_false(rlock__entry_wake(e, true));
    entry_free(wt);
}

/* --------------------------------------------------------------- quantiles */

/* A histogram with values 1..n us, one each. */
static rlock_histogram uniform(uint64_t n)
{
    rlock_histogram h;
    memset(&h, 0, sizeof(h));
    for (uint64_t v = 1; v <= n; v++) {
        h.buckets[rlock__stats_bucket(v)]++;
        h.count++;
        h.sum_us += v;
        h.max_us = v;
    }
    return h;
}

static void test_quantiles_are_within_a_quarter_above_the_truth(void **state)
{
    (void)state;
    rlock_histogram h = uniform(10000);
    double qs[] = {0.01, 0.25, 0.5, 0.9, 0.99, 0.999};
    for (size_t i = 0; i < sizeof(qs) / sizeof(*qs); i++) {
        double truth = qs[i] * 10000;
        int64_t got = rlock_stats_quantile(&h, qs[i]);
        assert_true((double)got >= truth);
        assert_true((double)got <= truth * 1.25 + 1);
    }
}

static void test_quantile_one_is_the_max_and_zero_the_first(void **state)
{
    (void)state;
    rlock_histogram h = uniform(1000);
    assert_int_equal(rlock_stats_quantile(&h, 1.0), 1000);
    assert_int_equal(rlock_stats_quantile(&h, 0.0), 1);
}

static void test_quantile_never_exceeds_the_max(void **state)
{
    rlock_histogram h;
    (void)state;
    memset(&h, 0, sizeof(h));
    h.buckets[rlock__stats_bucket(1100)] = 1; /* bucket (1024, 1280] */
    h.count = 1;
    h.max_us = 1100;
    assert_int_equal(rlock_stats_quantile(&h, 0.5), 1100);
}

static void test_quantile_of_an_empty_histogram_is_minus_one(void **state)
{
    rlock_histogram h;
    (void)state;
    memset(&h, 0, sizeof(h));
    assert_int_equal(rlock_stats_quantile(&h, 0.5), -1);
}

static void test_quantile_refuses_bad_arguments(void **state)
{
    rlock_histogram h = uniform(10);
    (void)state;
    assert_int_equal(rlock_stats_quantile(NULL, 0.5), RLOCK_EINVAL);
    assert_int_equal(rlock_stats_quantile(&h, -0.1), RLOCK_EINVAL);
    assert_int_equal(rlock_stats_quantile(&h, 1.5), RLOCK_EINVAL);
    assert_int_equal(rlock_stats_quantile(&h, NAN), RLOCK_EINVAL);
}

/* -------------------------------------------------------------- exposition */

/* A snapshot with every counter different, and a few latencies. */
static rlock_stats sample(void)
{
    rlock__stats *s = NULL;
    assert_int_equal(rlock__stats_new(&s), 0);
    for (int which = 0; which < RLOCK__STAT_COUNT; which++)
        rlock__stats_add(s, (rlock__stat)which, (uint64_t)(which + 1) * 10);
    rlock__stats_record(&s->wait, 5);       /* below the first le */
    rlock__stats_record(&s->wait, 100);     /* (64, 128] */
    rlock__stats_record(&s->wait, 3000000); /* 3 s */
    rlock__stats_record(&s->hold, 40000);
    rlock__stats_margin(s, 19500);
    rlock_stats snap = snapshot_of(s);
    rlock__stats_free(s);
    return snap;
}

static char *format(const rlock_stats *s)
{
    int n = rlock_stats_format(s, NULL, 0);
    assert_true(n > 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(rlock_stats_format(s, buf, (size_t)n + 1), n);
    assert_int_equal(strlen(buf), n);
    return buf;
}

/* Returns the value on the sample line that starts with prefix (a name
 * with its labels, then a space), failing when there is none. */
static double value_of(const char *text, const char *prefix)
{
    size_t len = strlen(prefix);
    for (const char *line = text; *line != '\0';) {
        if (strncmp(line, prefix, len) == 0 && line[len] == ' ')
            return strtod(line + len + 1, NULL);
        const char *nl = strchr(line, '\n');
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    fail_msg("no line for %s", prefix);
    return 0;
}

static void test_exposition_has_help_and_type_before_each_family(
    void **state)
{
    rlock_stats s = sample();
    (void)state;
    char *text = format(&s);
    const char *families[] = {
        "rlock_acquires_total",        "rlock_releases_total",
        "rlock_wait_seconds",          "rlock_hold_seconds",
        "rlock_unlock_messages_total", "rlock_unlock_messages_unused_total",
        "rlock_rechecks_found_free_total", "rlock_renewals_total",
        "rlock_renewals_failed_total", "rlock_lease_margin_min_seconds",
        "rlock_locks_lost_total",      "rlock_reconnects_total",
        "rlock_round_trips_total",     "rlock_script_reloads_total",
        "rlock_cluster_redirects_total", "rlock_cluster_tryagain_total"};
    for (size_t i = 0; i < sizeof(families) / sizeof(*families); i++) {
        char help[128], type[128];
        snprintf(help, sizeof(help), "# HELP %s ", families[i]);
        snprintf(type, sizeof(type), "\n# TYPE %s ", families[i]);
        const char *h = strstr(text, help), *t = strstr(text, type);
        assert_non_null(h);
        assert_non_null(t);
        assert_true(h < t);
    }
    free(text);
}

static void test_exposition_counters_carry_the_snapshots_values(void **state)
{
    rlock_stats s = sample();
    (void)state;
    char *text = format(&s);
    assert_true(value_of(text, "rlock_acquires_total{result=\"immediate\"}") ==
                (double)s.acquired_immediately);
    assert_true(value_of(text, "rlock_acquires_total{result=\"after_wait\"}") ==
                (double)s.acquired_after_wait);
    assert_true(value_of(text, "rlock_acquires_total{result=\"timeout\"}") ==
                (double)s.acquire_timeouts);
    assert_true(value_of(text, "rlock_acquires_total{result=\"error\"}") ==
                (double)s.acquire_errors);
    assert_true(value_of(text, "rlock_releases_total") == (double)s.releases);
    assert_true(value_of(text, "rlock_unlock_messages_unused_total") ==
                (double)s.unlock_messages_unused);
    assert_true(value_of(text, "rlock_locks_lost_total{reason=\"taken\"}") ==
                (double)s.lost_taken);
    assert_true(value_of(text, "rlock_round_trips_total") ==
                (double)s.round_trips);
    assert_true(value_of(text, "rlock_script_reloads_total") ==
                (double)s.script_reloads);
    assert_true(value_of(text,
                         "rlock_cluster_redirects_total{kind=\"moved\"}") ==
                (double)s.cluster_moved);
    assert_true(value_of(text,
                         "rlock_cluster_redirects_total{kind=\"ask\"}") ==
                (double)s.cluster_ask);
    assert_true(value_of(text, "rlock_cluster_tryagain_total") ==
                (double)s.cluster_tryagain);
    assert_true(value_of(text, "rlock_lease_margin_min_seconds") == 19.5);
    free(text);
}

static void test_exposition_histograms_are_cumulative_in_seconds(void **state)
{
    rlock_stats s = sample();
    (void)state;
    char *text = format(&s);
    /* 5 us is below the first le (16 us), 100 us within 128 us */
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"0.000016\"}") ==
                1);
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"0.000064\"}") ==
                1);
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"0.000128\"}") ==
                2);
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"2.097152\"}") ==
                2);
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"4.194304\"}") ==
                3);
    assert_true(value_of(text, "rlock_wait_seconds_bucket{le=\"+Inf\"}") == 3);
    assert_true(value_of(text, "rlock_wait_seconds_count") == 3);
    assert_true(value_of(text, "rlock_wait_seconds_sum") == 3.000105);
    assert_true(value_of(text, "rlock_hold_seconds_count") == 1);
    free(text);
}

static void test_lease_margin_is_nan_before_any_renewal(void **state)
{
    rlock__stats *st = NULL;
    (void)state;
    assert_int_equal(rlock__stats_new(&st), 0);
    rlock_stats s = snapshot_of(st);
    rlock__stats_free(st);
    char *text = format(&s);
    assert_non_null(strstr(text, "\nrlock_lease_margin_min_seconds NaN\n"));
    free(text);
}

/* As snprintf: cut where the buffer ends, NUL-terminated, whole length
 * returned. */
static void test_a_short_buffer_gets_a_terminated_prefix(void **state)
{
    rlock_stats s = sample();
    char small[100];
    (void)state;
    char *whole = format(&s);
    memset(small, 'x', sizeof(small));
    int n = rlock_stats_format(&s, small, sizeof(small));
    assert_int_equal(n, strlen(whole));
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_memory_equal(small, whole, sizeof(small) - 1);
    free(whole);
}

/* A snapshot from an older, shorter struct: what it lacks reads as 0. */
static void test_a_shorter_snapshot_formats_what_it_has(void **state)
{
    rlock_stats s = sample();
    (void)state;
    s.size = offsetof(rlock_stats, unlock_messages);
    char *text = format(&s);
    assert_true(value_of(text, "rlock_releases_total") == (double)s.releases);
    assert_true(value_of(text, "rlock_unlock_messages_total") == 0);
    assert_true(value_of(text, "rlock_wait_seconds_count") == 0);
    assert_non_null(strstr(text, "\nrlock_lease_margin_min_seconds NaN\n"));
    free(text);
}

static void test_format_refuses_bad_arguments(void **state)
{
    rlock_stats s = sample();
    char buf[8];
    (void)state;
    assert_int_equal(rlock_stats_format(NULL, buf, sizeof(buf)), RLOCK_EINVAL);
    assert_int_equal(rlock_stats_format(&s, NULL, 8), RLOCK_EINVAL);
    s.size = 1;
    assert_int_equal(rlock_stats_format(&s, buf, sizeof(buf)), RLOCK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_refuses_a_struct_without_its_size),
        cmocka_unit_test(test_zero_lands_in_bucket_zero),
        cmocka_unit_test(test_each_bucket_holds_the_values_up_to_its_bound),
        cmocka_unit_test(test_powers_of_two_are_bucket_bounds),
        cmocka_unit_test(
            test_a_bucket_is_at_most_a_quarter_of_its_values_wide),
        cmocka_unit_test(
            test_values_past_2_to_the_36_us_land_in_the_last_bucket),
        cmocka_unit_test(test_bucket_bound_out_of_range_is_zero),
        cmocka_unit_test(test_a_histogram_counts_sums_and_keeps_the_max),
        cmocka_unit_test(test_a_fresh_snapshot_is_zero_with_no_lease_margin),
        cmocka_unit_test(test_the_lease_margin_keeps_the_smallest),
        cmocka_unit_test(test_an_acquire_is_counted_by_its_result),
        cmocka_unit_test(test_losses_are_counted_by_reason),
        cmocka_unit_test(test_counting_into_null_does_nothing),
        cmocka_unit_test(
            test_a_message_wakes_a_waiter_until_each_has_a_permit),
        cmocka_unit_test(test_a_wake_all_message_wakes_whoever_has_no_permit),
        cmocka_unit_test(
            test_a_message_for_an_entry_without_waiters_wakes_nobody),
        cmocka_unit_test(test_quantiles_are_within_a_quarter_above_the_truth),
        cmocka_unit_test(test_quantile_one_is_the_max_and_zero_the_first),
        cmocka_unit_test(test_quantile_never_exceeds_the_max),
        cmocka_unit_test(test_quantile_of_an_empty_histogram_is_minus_one),
        cmocka_unit_test(test_quantile_refuses_bad_arguments),
        cmocka_unit_test(test_exposition_has_help_and_type_before_each_family),
        cmocka_unit_test(test_exposition_counters_carry_the_snapshots_values),
        cmocka_unit_test(test_exposition_histograms_are_cumulative_in_seconds),
        cmocka_unit_test(test_lease_margin_is_nan_before_any_renewal),
        cmocka_unit_test(test_a_short_buffer_gets_a_terminated_prefix),
        cmocka_unit_test(test_a_shorter_snapshot_formats_what_it_has),
        cmocka_unit_test(test_format_refuses_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
