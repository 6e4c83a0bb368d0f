/*
 * test_java_bench.c: rlock-bench's mixed-java scenario runs, with one rlock
 * process and one JVM of the newest Java Redisson on one lock for a
 * second: its JSON has each side's figures, both sides acquired the lock,
 * and no increment of the counter they share was lost. Speed is not
 * asserted. Skipped (77) without java or the driver built by scripts/deps.
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
#include "java_peer.h"

#ifndef RLOCK_BENCH_EXE
#error "RLOCK_BENCH_EXE must name the rlock-bench binary"
#endif

static rt_redis redis;

static int group_setup(void **state)
{
    (void)state;
    jp_require_java(RLOCK_JAVA_VERSION);
    rt_require_redis();
    return rt_redis_start(&redis) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_stop(&redis);
    return 0;
}

/* Runs rlock-bench with args against the test's server; returns its exit
 * status and its output in out. */
static int run_bench(const char *args, char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s' --url %s %s 2>&1", RLOCK_BENCH_EXE,
             redis.url, args);
    return rt_run_capture(cmd, out, len);
}

/* Fails unless obj has every named field as a number. */
static void assert_numbers(json_t *obj, const char *const *names)
{
    for (; *names != NULL; names++)
        if (!json_is_number(json_object_get(obj, *names)))
            fail_msg("field '%s' missing or not a number", *names);
}

/* One side's figures: there, one worker, and at least one acquisition;
 * returns its acquisitions. */
static json_int_t assert_side(json_t *j, const char *side)
{
    static const char *const fields[] = {
        "procs",       "acquisitions", "acq_per_s",   "min_acq", "max_acq",
        "max_wait_ms", "wait_p50_us",  "wait_p99_us", NULL};
    json_t *s = json_object_get(j, side);
    if (!json_is_object(s))
        fail_msg("no '%s' object", side);
    assert_numbers(s, fields);
    assert_int_equal(json_integer_value(json_object_get(s, "procs")), 1);
    assert_int_equal(json_array_size(json_object_get(s, "acq")), 1);
    json_int_t acquired = json_integer_value(json_object_get(s, "acquisitions"));
    if (acquired < 1)
        fail_msg("the %s side never acquired the lock", side);
    assert_true(json_integer_value(json_object_get(s, "min_acq")) >= 1);
    return acquired;
}

static void test_mixed_java_reports_both_sides_acquiring(void **state)
{
    static const char *const fields[] = {"acq_per_s", "redis_cmds_per_acq",
                                         "lost_increments", NULL};
    char args[1024], out[1 << 16];
    (void)state;
    snprintf(args, sizeof(args),
             "--scenario mixed-java --workers 1 --java-procs 1 --seconds 1 "
             "--java-warmup 1 --limit-seconds 0 --java-driver %s/build/%s",
             RLOCK_COMPAT_JAVA_DIR, RLOCK_JAVA_VERSION);
    int rc = run_bench(args, out, sizeof(out));
    if (rc != 0)
        fail_msg("rlock-bench exited %d: %s", rc, out);
    /* the JSON is the last line; the JVMs' logger may write before it */
    char *line = strstr(out, "{\"scenario\"");
    json_error_t err;
    json_t *j = line != NULL ? json_loads(line, JSON_DISABLE_EOF_CHECK, &err)
                             : NULL;
    if (j == NULL)
        fail_msg("no JSON object in: %s", out);
    assert_string_equal(json_string_value(json_object_get(j, "scenario")),
                        "mixed-java");
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_string_equal(
        json_string_value(json_object_get(j, "redisson_version")),
        RLOCK_JAVA_VERSION);
    assert_numbers(j, fields);
    assert_int_equal(json_integer_value(json_object_get(j, "lost_increments")),
                     0);
    json_int_t both = assert_side(j, "rlock") + assert_side(j, "java");
    assert_int_equal(json_integer_value(json_object_get(j, "acquisitions")),
                     both);
    json_decref(j);
}

static void test_mixed_java_without_a_driver_is_a_usage_error(void **state)
{
    char out[4096];
    (void)state;
    assert_int_equal(run_bench("--scenario mixed-java --java-procs 1", out,
                               sizeof(out)),
                     2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_java_reports_both_sides_acquiring),
        cmocka_unit_test(test_mixed_java_without_a_driver_is_a_usage_error),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
