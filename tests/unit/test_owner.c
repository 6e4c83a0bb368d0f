/*
 * test_owner.c: owner identity and small process-wide helpers: thread ids
 * (owner.c), UUIDs and request ids, the monotonic clock, the error table
 * (error.c) and configuration validation (config.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>

#include "api/api.h"

/* ------------------------------------------------------------- thread ids */

static void *record_tid(void *arg)
{
    uint64_t *out = arg;

    out[0] = rlock__thread_id();
    out[1] = rlock__thread_id();
    return NULL;
}

static void test_thread_id_is_positive(void **state)
{
    (void)state;
    assert_true(rlock__thread_id() > 0);
}

static void test_thread_id_is_stable_within_a_thread(void **state)
{
    uint64_t first = rlock__thread_id();
    uint64_t ids[2] = {0, 0};
    pthread_t t;

    (void)state;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(rlock__thread_id(), first);
    /* Also in a second thread, for its own id. */
    assert_int_equal(pthread_create(&t, NULL, record_tid, ids), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(ids[0], ids[1]);
}

static void test_public_thread_id_matches_internal(void **state)
{
    (void)state;
    assert_int_equal(rlock_thread_id(), rlock__thread_id());
}

static void test_thread_id_differs_across_live_threads(void **state)
{
    uint64_t a[2], b[2];
    pthread_t ta, tb;

    (void)state;
    assert_int_equal(pthread_create(&ta, NULL, record_tid, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, record_tid, b), 0);
    assert_int_equal(pthread_join(ta, NULL), 0);
    assert_int_equal(pthread_join(tb, NULL), 0);
    assert_int_not_equal(a[0], b[0]);
    assert_int_not_equal(a[0], rlock__thread_id());
    assert_int_not_equal(b[0], rlock__thread_id());
}

/* The kernel recycles TIDs (and pthread_t values) of exited threads; rlock
 * must not, or a new thread could unlock a dead thread's lock. */
static void test_thread_id_not_reused_after_exit(void **state)
{
    enum { N = 100 };
    uint64_t ids[N + 1][2];
    pthread_t t;

    (void)state;
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_create(&t, NULL, record_tid, ids[i]), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(ids[i][0] > 0);
    }
    ids[N][0] = rlock__thread_id();
    for (int i = 0; i <= N; i++)
        for (int j = i + 1; j <= N; j++)
            assert_int_not_equal(ids[i][0], ids[j][0]);
}

/* ------------------------------------------------------------------ uuid4 */

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void assert_uuid4(const char *u)
{
    assert_int_equal(strlen(u), RLOCK__UUID_LEN);
    for (int i = 0; i < RLOCK__UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(u[i], '-');
        else if (!is_lower_hex(u[i]))
            fail_msg("uuid %s: character %d is not lowercase hex", u, i);
    }
    assert_int_equal(u[14], '4');           /* version */
    assert_non_null(strchr("89ab", u[19])); /* RFC 4122 variant */
}

static void test_uuid4_has_java_format(void **state)
{
    char u[RLOCK__UUID_LEN + 1];

    (void)state;
    /* Many draws, so that the random nibbles cover every hex digit and a
     * wrong version/variant mask shows. */
    for (int i = 0; i < 256; i++) {
        memset(u, 'X', sizeof(u));
        assert_int_equal(rlock__uuid4(u), RLOCK_OK);
        assert_uuid4(u);
    }
}

static void test_uuid4_variant_covers_8_to_b(void **state)
{
    char u[RLOCK__UUID_LEN + 1];
    int seen[4] = {0, 0, 0, 0};
    static const char variants[] = "89ab";
    const char *v;

    (void)state;
    for (int i = 0; i < 400; i++) {
        assert_int_equal(rlock__uuid4(u), RLOCK_OK);
        v = strchr(variants, u[19]);
        assert_true(v != NULL && *v != '\0');
        seen[v - variants] = 1;
    }
    /* Each has probability 1/4; missing one in 400 draws is ~1e-50. */
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
}

static void test_uuid4_two_calls_differ(void **state)
{
    char a[RLOCK__UUID_LEN + 1], b[RLOCK__UUID_LEN + 1];

    (void)state;
    assert_int_equal(rlock__uuid4(a), RLOCK_OK);
    assert_int_equal(rlock__uuid4(b), RLOCK_OK);
    assert_string_not_equal(a, b);
}

/* ------------------------------------------------------------- request id */

static void test_request_id_is_32_lowercase_hex(void **state)
{
    char id[RLOCK__REQUEST_ID_LEN + 1];

    (void)state;
    for (int n = 0; n < 64; n++) {
        memset(id, 'X', sizeof(id));
        assert_int_equal(rlock__request_id(id), RLOCK_OK);
        assert_int_equal(strlen(id), 32);
        for (int i = 0; i < 32; i++)
            if (!is_lower_hex(id[i]))
                fail_msg("request id %s: character %d not lowercase hex", id,
                         i);
    }
}

static void test_request_id_two_calls_differ(void **state)
{
    char a[RLOCK__REQUEST_ID_LEN + 1], b[RLOCK__REQUEST_ID_LEN + 1];

    (void)state;
    assert_int_equal(rlock__request_id(a), RLOCK_OK);
    assert_int_equal(rlock__request_id(b), RLOCK_OK);
    assert_string_not_equal(a, b);
}

/* ------------------------------------------------------------------ clock */

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_now_ms_never_goes_back(void **state)
{
    int64_t prev = rlock__now_ms();

    (void)state;
    for (int i = 0; i < 100000; i++) {
        int64_t now = rlock__now_ms();
        assert_true(now >= prev);
        prev = now;
    }
}

static void test_now_ms_advances_with_sleep(void **state)
{
    struct timespec d = {0, 30 * 1000000L};
    int64_t before = rlock__now_ms();

    (void)state;
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &d) != 0)
        ;
    assert_true(rlock__now_ms() - before >= 30);
}

/* Milliseconds of CLOCK_MONOTONIC, not of the wall clock or seconds. */
static void test_now_ms_reads_monotonic_clock(void **state)
{
    int64_t a = mono_ms();
    int64_t now = rlock__now_ms();
    int64_t b = mono_ms();

    (void)state;
    assert_true(now >= a);
    assert_true(now <= b);
}

/* ----------------------------------------------------------------- errors */

static const struct {
    int code;
    const char *name;
} codes[] = {
    {RLOCK_OK, "RLOCK_OK"},
    {RLOCK_EINVAL, "RLOCK_EINVAL"},
    {RLOCK_ENOMEM, "RLOCK_ENOMEM"},
    {RLOCK_ECONN, "RLOCK_ECONN"},
    {RLOCK_ETIMEDOUT, "RLOCK_ETIMEDOUT"},
    {RLOCK_ENOTOWNER, "RLOCK_ENOTOWNER"},
    {RLOCK_ELOST, "RLOCK_ELOST"},
    {RLOCK_EPROTO, "RLOCK_EPROTO"},
    {RLOCK_EAUTH, "RLOCK_EAUTH"},
    {RLOCK_EDEADLK, "RLOCK_EDEADLK"},
    {RLOCK_ECLOSED, "RLOCK_ECLOSED"},
    {RLOCK_EFORKED, "RLOCK_EFORKED"},
    {RLOCK_ESERVER, "RLOCK_ESERVER"},
    {RLOCK_ECANCELED, "RLOCK_ECANCELED"},
    {RLOCK_ENOTSUP, "RLOCK_ENOTSUP"},
    {RLOCK_ENOTIFY, "RLOCK_ENOTIFY"},
    {RLOCK_ETLS, "RLOCK_ETLS"},
    {RLOCK_EREENTRY, "RLOCK_EREENTRY"},
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static void test_err_name_is_macro_name(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCODES; i++)
        assert_string_equal(rlock_err_name(codes[i].code), codes[i].name);
}

static void test_err_name_unknown_code(void **state)
{
    (void)state;
    assert_string_equal(rlock_err_name(-1), "RLOCK_E?");
    assert_string_equal(rlock_err_name(-100), "RLOCK_E?");
    assert_string_equal(rlock_err_name(-118), "RLOCK_E?");
    assert_string_equal(rlock_err_name(1), "RLOCK_E?");
}

static void test_strerror_covers_every_code(void **state)
{
    const char *unknown = rlock_strerror(-99999);

    (void)state;
    assert_non_null(unknown);
    for (size_t i = 0; i < NCODES; i++) {
        const char *s = rlock_strerror(codes[i].code);
        assert_non_null(s);
        assert_true(s[0] != '\0');
        assert_string_not_equal(s, unknown);
    }
}

static void test_strerror_texts_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < NCODES; i++)
        for (size_t j = i + 1; j < NCODES; j++)
            assert_string_not_equal(rlock_strerror(codes[i].code),
                                    rlock_strerror(codes[j].code));
}

static void test_strerror_unknown_code_has_text(void **state)
{
    const char *s = rlock_strerror(-1);

    (void)state;
    assert_non_null(s);
    assert_true(s[0] != '\0');
    assert_string_equal(s, rlock_strerror(12345));
}

/* Every code is below -100, so none collides with PTTL's -1 and -2. */
static void test_error_codes_are_below_minus_100(void **state)
{
    (void)state;
    for (size_t i = 1; i < NCODES; i++)
        assert_true(codes[i].code < -100);
}

/* ----------------------------------------------------------------- config */

static int config_setup(void **state)
{
    rlock_config *cfg = NULL;

    if (rlock_config_new(&cfg) != RLOCK_OK)
        return -1;
    *state = cfg;
    return 0;
}

static int config_teardown(void **state)
{
    rlock_config_free(*state);
    return 0;
}

static void test_config_new_rejects_null_out(void **state)
{
    (void)state;
    assert_int_equal(rlock_config_new(NULL), RLOCK_EINVAL);
}

static void test_config_free_null_is_ignored(void **state)
{
    (void)state;
    rlock_config_free(NULL);
}

static void test_config_new_has_redisson_defaults(void **state)
{
    rlock_config *cfg = *state;

    assert_int_equal(cfg->watchdog_timeout_ms, 30000);
    assert_int_equal(cfg->command_timeout_ms, 3000);
    assert_int_equal(cfg->connect_timeout_ms, 10000);
    assert_int_equal(cfg->retry_attempts, 3);
    assert_int_equal(cfg->retry_interval_ms, 1500);
    assert_int_equal(cfg->recheck_interval_ms, 2000);
    assert_int_equal(cfg->connections, 2);
}

static void test_config_latch_ms_default_is_18000(void **state)
{
    rlock_config cfg;

    (void)state;
    rlock__config_defaults(&cfg);
    assert_int_equal(rlock__config_latch_ms(&cfg), 18000);
}

static void test_config_latch_ms_follows_settings(void **state)
{
    rlock_config *cfg = *state;

    assert_int_equal(rlock_config_set_retry_attempts(cfg, 0), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 100), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 0), RLOCK_OK);
    assert_int_equal(rlock__config_latch_ms(cfg), 100);
}

/* A 64-bit setter: lo and INT32_MAX accepted; lo-1, 2^31, negatives and a
 * NULL config refused, and a refusal leaves the field as it was. */
typedef int (*set64_fn)(rlock_config *, int64_t);

static void check_ms_setter(rlock_config *cfg, set64_fn set,
                            const int64_t *field, int64_t lo)
{
    int64_t before;

    assert_int_equal(set(cfg, lo), RLOCK_OK);
    assert_int_equal(*field, lo);
    assert_int_equal(set(cfg, INT32_MAX), RLOCK_OK);
    assert_int_equal(*field, INT32_MAX);
    before = *field;
    assert_int_equal(set(cfg, lo - 1), RLOCK_EINVAL);
    assert_int_equal(set(cfg, (int64_t)INT32_MAX + 1), RLOCK_EINVAL);
    assert_int_equal(set(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(set(cfg, INT64_MIN), RLOCK_EINVAL);
    assert_int_equal(set(cfg, INT64_MAX), RLOCK_EINVAL);
    assert_int_equal(*field, before);
    assert_int_equal(set(NULL, lo), RLOCK_EINVAL);
}

static void test_config_watchdog_timeout_range(void **state)
{
    rlock_config *cfg = *state;

    check_ms_setter(cfg, rlock_config_set_watchdog_timeout,
                    &cfg->watchdog_timeout_ms, 30);
}

static void test_config_command_timeout_range(void **state)
{
    rlock_config *cfg = *state;

    check_ms_setter(cfg, rlock_config_set_command_timeout,
                    &cfg->command_timeout_ms, 1);
}

static void test_config_connect_timeout_range(void **state)
{
    rlock_config *cfg = *state;

    check_ms_setter(cfg, rlock_config_set_connect_timeout,
                    &cfg->connect_timeout_ms, 1);
}

static void test_config_retry_interval_range(void **state)
{
    rlock_config *cfg = *state;

    check_ms_setter(cfg, rlock_config_set_retry_interval,
                    &cfg->retry_interval_ms, 0);
}

static void test_config_recheck_interval_range(void **state)
{
    rlock_config *cfg = *state;

    check_ms_setter(cfg, rlock_config_set_recheck_interval,
                    &cfg->recheck_interval_ms, 1);
}

static void test_config_retry_attempts_range(void **state)
{
    rlock_config *cfg = *state;

    assert_int_equal(rlock_config_set_retry_attempts(cfg, 0), RLOCK_OK);
    assert_int_equal(cfg->retry_attempts, 0);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 100), RLOCK_OK);
    assert_int_equal(cfg->retry_attempts, 100);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 101), RLOCK_EINVAL);
    assert_int_equal(cfg->retry_attempts, 100);
    assert_int_equal(rlock_config_set_retry_attempts(NULL, 1), RLOCK_EINVAL);
}

static void test_config_connections_range(void **state)
{
    rlock_config *cfg = *state;

    assert_int_equal(rlock_config_set_connections(cfg, 1), RLOCK_OK);
    assert_int_equal(cfg->connections, 1);
    assert_int_equal(rlock_config_set_connections(cfg, 64), RLOCK_OK);
    assert_int_equal(cfg->connections, 64);
    assert_int_equal(rlock_config_set_connections(cfg, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, 65), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(cfg->connections, 64);
    assert_int_equal(rlock_config_set_connections(NULL, 2), RLOCK_EINVAL);
}

#define T_CFG(f) \
    cmocka_unit_test_setup_teardown(f, config_setup, config_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_id_is_positive),
        cmocka_unit_test(test_thread_id_is_stable_within_a_thread),
        cmocka_unit_test(test_public_thread_id_matches_internal),
        cmocka_unit_test(test_thread_id_differs_across_live_threads),
        cmocka_unit_test(test_thread_id_not_reused_after_exit),
        cmocka_unit_test(test_uuid4_has_java_format),
        cmocka_unit_test(test_uuid4_variant_covers_8_to_b),
        cmocka_unit_test(test_uuid4_two_calls_differ),
        cmocka_unit_test(test_request_id_is_32_lowercase_hex),
        cmocka_unit_test(test_request_id_two_calls_differ),
        cmocka_unit_test(test_now_ms_never_goes_back),
        cmocka_unit_test(test_now_ms_advances_with_sleep),
        cmocka_unit_test(test_now_ms_reads_monotonic_clock),
        cmocka_unit_test(test_err_name_is_macro_name),
        cmocka_unit_test(test_err_name_unknown_code),
        cmocka_unit_test(test_strerror_covers_every_code),
        cmocka_unit_test(test_strerror_texts_are_distinct),
        cmocka_unit_test(test_strerror_unknown_code_has_text),
        cmocka_unit_test(test_error_codes_are_below_minus_100),
        cmocka_unit_test(test_config_new_rejects_null_out),
        cmocka_unit_test(test_config_free_null_is_ignored),
        T_CFG(test_config_new_has_redisson_defaults),
        cmocka_unit_test(test_config_latch_ms_default_is_18000),
        T_CFG(test_config_latch_ms_follows_settings),
        T_CFG(test_config_watchdog_timeout_range),
        T_CFG(test_config_command_timeout_range),
        T_CFG(test_config_connect_timeout_range),
        T_CFG(test_config_retry_interval_range),
        T_CFG(test_config_recheck_interval_range),
        T_CFG(test_config_retry_attempts_range),
        T_CFG(test_config_connections_range),
    };

    return cmocka_run_group_tests_name("owner", tests, NULL, NULL);
}
