/*
 * test_harness.c: smoke test for tests/support/harness.c.
 *
 * Starts a real redis-server, runs commands, subscribes and publishes,
 * pauses and resumes it, restarts it on the same port and stops it.  Every
 * other integration test relies on these helpers behaving.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <cmocka.h>

#include "harness.h"

/* Group fixture: one server shared by the tests below. */
static int group_setup(void **state)
{
    rt_redis *r = calloc(1, sizeof(*r));

    if (r == NULL || rt_redis_start(r) != 0) {
        free(r);
        return -1;
    }
    *state = r;
    return 0;
}

static int group_teardown(void **state)
{
    rt_redis *r = *state;

    rt_redis_stop(r);
    free(r);
    return 0;
}

static void test_start_fills_fields(void **state)
{
    rt_redis *r = *state;
    char url[128];

    assert_true(r->port > 0);
    assert_int_not_equal(r->port, 6379);
    assert_true(r->pid > 0);
    assert_int_equal(kill(r->pid, 0), 0);
    assert_true(r->dir[0] != '\0');
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", r->port);
    assert_string_equal(r->url, url);
}

static void test_commands(void **state)
{
    rt_redis *r = *state;
    redisReply *reply;
    char *s;

    reply = rt_cmd(r, "SET %s %s", "harness:key", "value");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    freeReplyObject(reply);

    s = rt_cmd_str(r, "GET %s", "harness:key");
    assert_non_null(s);
    assert_string_equal(s, "value");
    free(s);

    assert_null(rt_cmd_str(r, "GET %s", "harness:missing"));
    assert_int_equal(rt_cmd_int(r, "INCRBY %s %d", "harness:n", 41), 41);
    assert_int_equal(rt_cmd_int(r, "INCR %s", "harness:n"), 42);
    /* Not an integer reply. */
    assert_int_equal(rt_cmd_int(r, "GET %s", "harness:key"), RT_CMD_ERROR);

    /* Error replies come back as error replies. */
    reply = rt_cmd(r, "NOSUCHCOMMAND");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_ERROR);
    freeReplyObject(reply);
}

static void test_pubsub(void **state)
{
    rt_redis *r = *state;
    rt_sub *s = rt_sub_start(r, "redisson_lock__channel:{harness}");
    int i;

    assert_non_null(s);
    assert_int_equal(rt_sub_count(s), 0);
    assert_null(rt_sub_message(s, 0));
    for (i = 0; i < 3; i++) {
        assert_int_equal(rt_cmd_int(r, "PUBLISH %s %d",
                                    "redisson_lock__channel:{harness}", i),
                         1);
    }
    /* Other channels are not recorded. */
    assert_int_equal(rt_cmd_int(r, "PUBLISH %s %s", "other", "x"), 0);
    assert_int_equal(rt_sub_wait(s, 3, 5000), 3);
    assert_string_equal(rt_sub_message(s, 0), "0");
    assert_string_equal(rt_sub_message(s, 2), "2");
    assert_null(rt_sub_message(s, 3));

    /* Timing out returns what arrived. */
    {
        int64_t t0 = rt_now_ms();

        assert_int_equal(rt_sub_wait(s, 4, 100), 3);
        assert_true(rt_now_ms() - t0 >= 90);
    }
    rt_sub_stop(s);
    rt_sub_stop(NULL);
}

static void test_pause_resume(void **state)
{
    rt_redis *r = *state;
    int64_t t0;

    rt_redis_pause(r);
    rt_redis_pause(r); /* idempotent */
    t0 = rt_now_ms();
    /* rt_cmd times out (5 s I/O timeout) rather than hanging. */
    assert_null(rt_cmd(r, "PING"));
    assert_true(rt_now_ms() - t0 >= 4000);
    rt_redis_resume(r);
    rt_redis_resume(r); /* idempotent */
    assert_int_equal(rt_cmd_int(r, "EXISTS %s", "harness:key"), 1);
}

static void test_restart(void **state)
{
    rt_redis *r = *state;
    int port = r->port;
    pid_t old = r->pid;
    rt_sub *s = rt_sub_start(r, "restart-chan");
    char *v;

    assert_non_null(s);
    rt_redis_stop(r);
    assert_int_equal(r->pid, 0);
    assert_null(rt_cmd(r, "PING"));
    assert_int_equal(rt_cmd_int(r, "DBSIZE"), RT_CMD_ERROR);
    /* The subscriber notices the server went away. */
    assert_int_equal(rt_sub_wait(s, 1, 2000), 0);
    rt_sub_stop(s);

    assert_int_equal(rt_redis_restart(r), 0);
    assert_int_equal(r->port, port);
    assert_true(r->pid > 0 && r->pid != old);
    /* No persistence: the data set starts empty. */
    assert_int_equal(rt_cmd_int(r, "DBSIZE"), 0);
    v = rt_cmd_str(r, "PING");
    assert_non_null(v);
    assert_string_equal(v, "PONG");
    free(v);

    /* Restart while running stops first. */
    old = r->pid;
    assert_int_equal(rt_redis_restart(r), 0);
    assert_true(r->pid != old);
}

static void test_extra_args_and_two_servers(void **state)
{
    static const char *const extra[] = {"--databases", "3", NULL};
    rt_redis a, b;
    redisReply *reply;
    char dir[256];

    (void)state;
    assert_int_equal(rt_redis_start_args(&a, extra), 0);
    assert_int_equal(rt_redis_start(&b), 0);
    assert_int_not_equal(a.port, b.port);

    reply = rt_cmd(&a, "SELECT 5");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_ERROR);
    freeReplyObject(reply);
    reply = rt_cmd(&b, "SELECT 5");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STATUS);
    freeReplyObject(reply);

    /* Restart keeps the extra arguments. */
    assert_int_equal(rt_redis_restart(&a), 0);
    reply = rt_cmd(&a, "SELECT 5");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_ERROR);
    freeReplyObject(reply);

    snprintf(dir, sizeof(dir), "%s", a.dir);
    rt_redis_stop(&a);
    rt_redis_stop(&a); /* idempotent */
    rt_redis_stop(&b);
    {
        FILE *f = fopen(dir, "r");

        assert_null(f); /* temp dir removed */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_fills_fields),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_pubsub),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_extra_args_and_two_servers),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
