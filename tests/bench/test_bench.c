/*
 * test_bench.c: rlock-bench behaves. Each scenario runs for
 * about a second against a redis-server of the test's own, and its JSON is
 * checked: one object, the field names, the embedded limit, no
 * lost increment under contention (threads and processes), no held lock
 * expired under the watchdog, renewals batched, async waiters all woken,
 * distinct names leaving no key behind. Speed is not asserted: the
 * figures depend on the machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"

#ifndef RLOCK_BENCH_EXE
#error "RLOCK_BENCH_EXE must name the rlock-bench binary"
#endif

static rt_redis redis;

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    return rt_redis_start(&redis) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_stop(&redis);
    return 0;
}

/* Runs rlock-bench with args against the test's server and returns its
 * parsed output (the caller frees it with json_decref), failing the test
 * unless it exits 0 and prints exactly one JSON object. */
static json_t *bench(const char *args)
{
    char cmd[1024], out[1 << 16];
    snprintf(cmd, sizeof(cmd), "'%s' --url %s %s", RLOCK_BENCH_EXE, redis.url,
             args);
    int status = rt_run_capture(cmd, out, sizeof(out));
    if (status != 0)
        fail_msg("'%s' failed (status %d): %s", cmd, status, out);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (j == NULL || !json_is_object(j))
        fail_msg("'%s' printed no JSON object (%s): %s", cmd, err.text, out);
    return j;
}

/* Fails unless obj has every named field as a number. */
static void assert_numbers(json_t *obj, const char *const *names)
{
    for (; *names != NULL; names++) {
        json_t *v = json_object_get(obj, *names);
        if (!json_is_number(v))
            fail_msg("field '%s' missing or not a number", *names);
    }
}

static const char *const common[] = {"workers", "seconds", NULL};
static const char *const limit_fields[] = {
    "ping_rtt_p50_us", "evalsha_rtt_p50_us", "evalsha_pipelined_per_s", NULL};

/* The fields every run has, and the embedded limit unless it is one. */
static void assert_common(json_t *j, const char *scenario)
{
    assert_string_equal(json_string_value(json_object_get(j, "scenario")),
                        scenario);
    assert_numbers(j, common);
    assert_true(json_is_true(json_object_get(j, "ok")));
    if (strcmp(scenario, "limit") == 0) {
        assert_numbers(j, limit_fields);
        return;
    }
    json_t *lim = json_object_get(j, "limit");
    assert_true(json_is_object(lim));
    assert_numbers(lim, limit_fields);
    assert_true(json_is_object(json_object_get(j, "vs_limit")));
}

static void test_limit(void **state)
{
    (void)state;
    json_t *j = bench("--scenario limit --seconds 1 --workers 2");
    assert_common(j, "limit");
    assert_true(json_number_value(json_object_get(j, "ping_rtt_p50_us")) > 0);
    json_decref(j);
}

static void check_cycles(const char *args, const char *scenario)
{
    static const char *const fields[] = {"cycles_per_s", "p50_us", "p99_us",
                                         NULL};
    json_t *j = bench(args);
    assert_common(j, scenario);
    assert_numbers(j, fields);
    assert_true(json_number_value(json_object_get(j, "cycles_per_s")) > 0);
    assert_numbers(json_object_get(j, "vs_limit"), fields);
    json_decref(j);
}

static void test_uncontended(void **state)
{
    (void)state;
    check_cycles("--scenario uncontended --seconds 1 --limit-seconds 0.3",
                 "uncontended");
}

static void test_parallel(void **state)
{
    (void)state;
    check_cycles("--scenario parallel --workers 4 --seconds 1 "
                 "--limit-seconds 0.3",
                 "parallel");
}

/* The per-command breakdown is there and adds up to redis_cmds_per_acq
 * (each entry rounded to three digits); returns the breakdown. */
static json_t *assert_breakdown_adds_up(json_t *j)
{
    json_t *by = json_object_get(j, "redis_cmds_by_command");
    const char *name;
    json_t *v;
    double sum = 0;
    assert_true(json_is_object(by));
    json_object_foreach(by, name, v)
    {
        assert_true(json_is_number(v));
        sum += json_number_value(v);
    }
    double total = json_number_value(json_object_get(j, "redis_cmds_per_acq"));
    if (sum < total - 0.1 || sum > total + 0.1)
        fail_msg("breakdown adds up to %.3f, not %.3f", sum, total);
    return by;
}

static void check_contended(const char *args, const char *kind)
{
    static const char *const fields[] = {
        "acq_per_s",      "lost_increments",    "handoff_p50_us",
        "handoff_p99_us", "max_wait_ms",        "min_acq",
        "max_acq",        "redis_cmds_per_acq", NULL};
    json_t *j = bench(args);
    assert_common(j, "contended");
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "lost_increments")),
                     0);
    assert_true(json_integer_value(json_object_get(j, "max_acq")) > 0);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), kind);
    json_t *by = assert_breakdown_adds_up(j);
    /* every acquisition ends in an unlock script: at least one a hand-over */
    assert_true(json_number_value(json_object_get(by, "evalsha")) >= 1);
    json_decref(j);
}

static void test_contended_threads(void **state)
{
    (void)state;
    check_contended("--scenario contended --workers 4 --seconds 1 "
                    "--limit-seconds 0.3",
                    "lock");
}

static void test_contended_procs(void **state)
{
    (void)state;
    check_contended("--scenario contended --procs --workers 4 --seconds 1 "
                    "--limit-seconds 0.3",
                    "lock");
}

static void test_contended_fair_procs(void **state)
{
    (void)state;
    check_contended("--scenario contended --procs --workers 4 --seconds 1 "
                    "--kind fair --limit-seconds 0.3",
                    "fair");
}

static void test_contended_procs_barging(void **state)
{
    (void)state;
    json_t *j = bench("--scenario contended --procs --workers 4 --seconds 1 "
                      "--barging on --limit-seconds 0.3");
    assert_common(j, "contended");
    assert_true(json_is_true(json_object_get(j, "barging")));
    assert_int_equal(json_integer_value(json_object_get(j, "lost_increments")),
                     0);
    json_decref(j);
}

/* Every unlock message reaches every listener, and the lone worker runs. */
static void test_fanout(void **state)
{
    static const char *const fields[] = {"acq_per_s", "listeners",
                                         "messages_per_acq",
                                         "redis_cmds_per_acq", NULL};
    (void)state;
    json_t *j = bench("--scenario fanout --workers 4 --seconds 1 "
                      "--limit-seconds 0.3");
    assert_common(j, "fanout");
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "listeners")), 3);
    assert_true(json_number_value(json_object_get(j, "acq_per_s")) > 0);
    assert_true(json_number_value(json_object_get(j, "messages_per_acq")) ==
                1);
    json_decref(j);
}

/* The ring hands the lock on in turn: every process gets its turns (one
 * apart at most), no increment is lost, and a hand-over costs Redisson's
 * two scripts, the latch DEL and nothing else. */
static void test_ring(void **state)
{
    static const char *const fields[] = {"acq_per_s", "min_acq", "max_acq",
                                         "redis_cmds_per_acq",
                                         "redis_reads_per_acq", NULL};
    (void)state;
    json_t *j = bench("--scenario ring --workers 4 --seconds 1 "
                      "--limit-seconds 0.3");
    assert_common(j, "ring");
    assert_numbers(j, fields);
    long long lo = json_integer_value(json_object_get(j, "min_acq"));
    long long hi = json_integer_value(json_object_get(j, "max_acq"));
    assert_true(lo > 0);
    assert_true(hi - lo <= 1);
    assert_int_equal(json_integer_value(json_object_get(j, "lost_increments")),
                     0);
    /* per hand-over: the two EVALSHAs with the 3 + 6 commands their scripts
     * run, and the latch DEL: 12 commands in 3 batches */
    assert_true(json_number_value(json_object_get(j, "redis_cmds_per_acq")) <
                12.5);
    assert_true(json_number_value(json_object_get(j, "redis_reads_per_acq")) <
                3.5);
    json_t *by = assert_breakdown_adds_up(j);
    double scripts = json_number_value(json_object_get(by, "evalsha"));
    assert_true(scripts > 1.9 && scripts < 2.1);
    json_decref(j);
}

static void test_contended_spin_threads(void **state)
{
    (void)state;
    check_contended("--scenario contended --workers 4 --seconds 1 "
                    "--kind spin --limit-seconds 0.3",
                    "spin");
}

static void test_held(void **state)
{
    static const char *const fields[] = {
        "locks",          "expired",           "renew_roundtrips_per_tick",
        "bytes_per_lock", "setup_s",           "redis_cpu_us_per_s",
        "renew_script_us_per_s", "lease_margin_min_ms", NULL};
    (void)state;
    /* a lease long enough for sanitizer builds, where taking the locks
     * alone can take a second */
    json_t *j = bench("--scenario held --locks 500 --watchdog-ms 2000 "
                      "--seconds 1 --limit-seconds 0.3");
    assert_common(j, "held");
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "locks")), 500);
    assert_int_equal(json_integer_value(json_object_get(j, "expired")), 0);
    /* renewals are batched: far fewer round trips than locks per tick */
    double rt =
        json_number_value(json_object_get(j, "renew_roundtrips_per_tick"));
    assert_true(rt > 0);
    assert_true(rt < 500 / 10);
    json_decref(j);
}

/* 100 async waiters on 10 names all get the lock in turn once the holder
 * lets go, none before; the wake-up figures and the server's
 * subscriptions are reported. */
static void test_waiters(void **state)
{
    static const char *const fields[] = {
        "waiters",         "completed",     "failed",
        "wake_p50_us",     "wake_p99_us",   "bytes_per_waiter",
        "subscriptions",   "lock_channel_subscribers", NULL};
    (void)state;
    json_t *j = bench("--scenario waiters --names 10 --waiters 100 "
                      "--seconds 0.2 --limit-seconds 0.2");
    assert_common(j, "waiters");
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 100);
    assert_int_equal(json_integer_value(json_object_get(j, "failed")), 0);
    assert_int_equal(
        json_integer_value(json_object_get(j, "woken_before_unlock")), 0);
    /* the one client listens on each name's channel once at most */
    assert_int_equal(
        json_integer_value(json_object_get(j, "lock_channel_subscribers")), 1);
    assert_true(json_integer_value(json_object_get(j, "subscriptions")) >= 10);
    json_decref(j);
}

/* Distinct names locked once each leave no key behind. */
static void test_names(void **state)
{
    static const char *const fields[] = {"names", "completed", "failed",
                                         "cycles_per_s", "heap_growth_per_name",
                                         "keys_left", NULL};
    (void)state;
    json_t *j = bench("--scenario names --names 2000 --limit-seconds 0.2");
    assert_common(j, "names");
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "completed")), 2000);
    assert_int_equal(json_integer_value(json_object_get(j, "failed")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "keys_left")), 0);
    assert_int_equal(
        json_array_size(json_object_get(j, "heap_samples_bytes")), 10);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_uncontended),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_contended_threads),
        cmocka_unit_test(test_contended_procs),
        cmocka_unit_test(test_contended_fair_procs),
        cmocka_unit_test(test_contended_procs_barging),
        cmocka_unit_test(test_fanout),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_contended_spin_threads),
        cmocka_unit_test(test_held),
        cmocka_unit_test(test_waiters),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests_name("bench", tests, group_setup,
                                       group_teardown);
}
