/*
 * test_command.c: requests on the I/O thread's command connections
 * (src/core/request.c over src/io/conn.c), seen through the async API, whose
 * calls always go that way: every attempt has a deadline the transport
 * enforces, and an acquire that runs after its caller was told it timed
 * out is given back when its late reply comes.
 *
 * The server is SIGSTOPped (rt_redis_pause): the command reaches its
 * socket and runs when the server resumes, after the client gave up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "command"

#define COMMAND_MS 300
#define SLACK_MS 1500
#define LEASE_MS 60000 /* far longer than any test: only a release ends it */

/* An async acquire sent while the server is stopped completes with
 * RLOCK_ETIMEDOUT one command timeout after it was sent, though its wait
 * budget is far longer: the attempt's reply never came in time, as a
 * blocking call's round trip ends then too. */
static void test_async_attempt_on_a_stopped_server_times_out_in_one_command_timeout(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c =
        lt_connect(f->redis.url, rlock_config_set_command_timeout, COMMAND_MS);
    rlock *l = lt_get_lock(c, name);
    uint64_t owner = rlock_owner_new();

    rt_redis_pause(&f->redis);
    lt_completion done = {0};
    int64_t start = rt_now_ms();
    assert_int_equal(
        rlock_lock_async(l, owner, 10000, LEASE_MS, lt_on_done, &done), 0);
    int rc = lt_await_completion(&done, COMMAND_MS + SLACK_MS);
    int64_t took = rt_now_ms() - start;
    rt_redis_resume(&f->redis);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_true(took >= COMMAND_MS && took < COMMAND_MS + SLACK_MS);
    rlock_free(l);
    rlock_client_free(c);
}

/* The acquire of an async call that timed out runs once the server
 * resumes and takes the lock; its late reply makes the client give the
 * hold back at once (the release's unlock message says so), instead of
 * leaving a lock nobody knows it holds until its lease runs out. */
static void test_a_late_async_acquire_is_given_back(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    rlock_client *c =
        lt_connect(f->redis.url, rlock_config_set_command_timeout, COMMAND_MS);
    rlock *l = lt_get_lock(c, name);
    uint64_t owner = rlock_owner_new();
    rt_sub *sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);

    rt_redis_pause(&f->redis);
    lt_completion done = {0};
    assert_int_equal(
        rlock_lock_async(l, owner, 0, LEASE_MS, lt_on_done, &done), 0);
    int rc = lt_await_completion(&done, COMMAND_MS + SLACK_MS);
    rt_redis_resume(&f->redis);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    /* the acquire runs now; the give-back's release publishes */
    assert_int_equal(rt_sub_wait(sub, 1, 5000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "0");
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_is_locked(l), 0);
    rt_sub_stop(sub);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_async_attempt_on_a_stopped_server_times_out_in_one_command_timeout),
        cmocka_unit_test(test_a_late_async_acquire_is_given_back),
    };
    if (rt_require_redis() != 0)
        return 77;
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
