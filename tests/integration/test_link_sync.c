/*
 * test_link_sync.c: the blocking link (src/io/link.h, rlock__link_sync),
 * against a real redis-server: the handshake, round trips, deadlines and
 * late replies, commands whose replies nobody waits for, pipelines
 * (append, then read), a subscriber's messages read as replies nobody
 * asked for, and a broken connection. Its TLS is tested with the loop
 * link's, in test_link.c.
 *
 * The server is SIGSTOPped (rt_redis_pause) to make it silent without
 * closing anything, so only the link's own deadlines end a wait.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/link.h"
#include "rlock.h"

/* The server's default user has no password (the harness's rt_cmd does
 * not AUTH), so the links log in as this ACL user. */
#define USER "link-sync-user"
#define PASSWORD "pw-link-sync-test"
/* Slack on a deadline before a test calls it missed (a loaded machine). */
#define SLACK_MS 1500

static rt_redis server;

/* What a late callback heard. */
typedef struct late_seen {
    int late_calls;
    char late_text[64];
} late_seen;

static rlock__link_opts opts_for(rt_redis *r)
{
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve("127.0.0.1", r->port, NULL, &o.addr),
                     0);
    o.user = USER;
    o.password = PASSWORD;
    return o;
}

static bool client_list_has(const char *needle)
{
    char *list = rt_cmd_str(&server, "CLIENT LIST");
    bool has = list != NULL && strstr(list, needle) != NULL;
    free(list);
    return has;
}

/* Opens a link to the server as USER. */
static rlock__link_sync *open_link(void)
{
    rlock__link_opts o = opts_for(&server);
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    return s;
}

/* One command and its reply within 5 s; the reply's text (or "") is
 * copied into text. */
static void round_trip(rlock__link_sync *s, const char *a0, const char *a1,
                       char *text, size_t len)
{
    const char *argv[2] = {a0, a1};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_call(s, a1 ? 2 : 1, argv, NULL,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    snprintf(text, len, "%s", r->str != NULL ? r->str : "");
    rlock__link_reply_free(r);
}

/* ---------------------------------------------------------- round trips */

static void test_blocking_link_round_trip(void **state)
{
    (void)state;
    rlock__link_opts o = opts_for(&server);
    o.client_name = "link-sync";
    o.db = 2;
    rlock__link_sync *s = NULL;
    char err[128];
    assert_int_equal(rlock__link_sync_open(&o, &s, err, sizeof(err)), 0);
    redisReply *r = NULL;
    const char *argv[2] = {"ECHO", "sync"};
    assert_int_equal(rlock__link_sync_call(s, 2, argv, NULL,
                                           rt_now_ms() + 2000, &r, NULL, NULL),
                     0);
    assert_string_equal(r->str, "sync");
    freeReplyObject(r);
    assert_true(client_list_has("name=link-sync"));
    rlock__link_sync_free(s);
}

static void test_blocking_link_drops_the_reply_of_a_fire_and_forget_send(
    void **state)
{
    (void)state;
    rlock__link_opts o = opts_for(&server);
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    const char *set[3] = {"SET", "link-sync-key", "sent-ahead"};
    assert_int_equal(rlock__link_sync_send(s, 3, set, NULL), 0);
    const char *get[2] = {"GET", "link-sync-key"};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_call(s, 2, get, NULL,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    assert_int_equal(r->type, REDIS_REPLY_STRING); /* not SET's +OK */
    assert_string_equal(r->str, "sent-ahead");
    freeReplyObject(r);
    rlock__link_sync_free(s);
}

static void on_sync_late(redisReply *r, void *arg)
{
    late_seen *d = arg;
    d->late_calls++;
    if (r != NULL && r->str != NULL)
        snprintf(d->late_text, sizeof(d->late_text), "%s", r->str);
}

static void test_blocking_link_hands_a_late_reply_to_its_late_callback(
    void **state)
{
    (void)state;
    rlock__link_opts o = opts_for(&server);
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    rt_redis_pause(&server);
    redisReply *r = NULL;
    late_seen first = {0}, never = {0};
    const char *argv[2] = {"ECHO", "late-one"};
    int rc = rlock__link_sync_call(s, 2, argv, NULL, rt_now_ms() + 200, &r,
                                   on_sync_late, &first);
    rt_redis_resume(&server);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_int_equal(first.late_calls, 0);
    /* no call needed: draining as the socket becomes readable settles it */
    int64_t end = rt_now_ms() + 5000;
    while ((rc = rlock__link_sync_drain(s)) > 0 && rt_now_ms() < end)
        rt_sleep_ms(10);
    assert_int_equal(rc, 0);
    assert_int_equal(first.late_calls, 1);
    assert_string_equal(first.late_text, "late-one");
    /* a late reply still owed when the link goes is settled with NULL */
    rt_redis_pause(&server);
    rc = rlock__link_sync_call(s, 2, argv, NULL, rt_now_ms() + 200, &r,
                               on_sync_late, &never);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    rlock__link_sync_free(s);
    rt_redis_resume(&server);
    assert_int_equal(never.late_calls, 1);
    assert_string_equal(never.late_text, "");
}

static void test_blocking_link_deadline_then_own_reply(void **state)
{
    (void)state;
    rlock__link_opts o = opts_for(&server);
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    rt_redis_pause(&server);
    redisReply *r = NULL;
    const char *first[2] = {"ECHO", "first"};
    int64_t start = rt_now_ms();
    int rc = rlock__link_sync_call(s, 2, first, NULL, start + 300, &r, NULL, NULL);
    int64_t took = rt_now_ms() - start;
    rt_redis_resume(&server);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_null(r);
    assert_true(took >= 300 && took < 300 + SLACK_MS);
    assert_false(rlock__link_sync_broken(s));
    const char *second[2] = {"ECHO", "second"};
    assert_int_equal(rlock__link_sync_call(s, 2, second, NULL,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    assert_string_equal(r->str, "second");
    freeReplyObject(r);
    rlock__link_sync_free(s);
}

static void test_blocking_link_wrong_password_and_connect_deadline(
    void **state)
{
    (void)state;
    rlock__link_opts o = opts_for(&server);
    o.password = "wrong";
    rlock__link_sync *s = (rlock__link_sync *)&o;
    char err[128];
    assert_int_equal(rlock__link_sync_open(&o, &s, err, sizeof(err)),
                     RLOCK_EAUTH);
    assert_null(s);
    assert_string_not_equal(err, "");
    o = opts_for(&server);
    o.connect_timeout_ms = 300;
    rt_redis_pause(&server);
    int64_t start = rt_now_ms();
    int rc = rlock__link_sync_open(&o, &s, err, sizeof(err));
    int64_t took = rt_now_ms() - start;
    rt_redis_resume(&server);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_true(took >= 300 && took < 300 + SLACK_MS);
}

/* ------------------------------------------------------------ pipelines */

static void test_appended_commands_are_read_back_in_order(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    const char *set[3] = {"SET", "link-sync-pipe", "piped"};
    const char *get[2] = {"GET", "link-sync-pipe"};
    const char *echo[2] = {"ECHO", "third"};
    assert_int_equal(rlock__link_sync_append(s, 3, set, NULL), 0);
    assert_int_equal(rlock__link_sync_append(s, 2, get, NULL), 0);
    assert_int_equal(rlock__link_sync_append(s, 2, echo, NULL), 0);
    const char *want[3] = {"OK", "piped", "third"};
    int64_t deadline = rt_now_ms() + 5000;
    for (int i = 0; i < 3; i++) {
        redisReply *r = NULL;
        assert_int_equal(rlock__link_sync_read(s, deadline, &r), 0);
        assert_string_equal(r->str, want[i]);
        rlock__link_reply_free(r);
    }
    rlock__link_sync_free(s);
}

/* A late reply owed from a timed-out call comes before an appended
 * command's: the read hands it to its callback and returns its own. */
static void test_read_settles_a_late_reply_before_its_own(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    late_seen late = {0};
    const char *first[2] = {"ECHO", "late"};
    redisReply *r = NULL;
    rt_redis_pause(&server);
    assert_int_equal(rlock__link_sync_call(s, 2, first, NULL,
                                           rt_now_ms() + 200, &r,
                                           on_sync_late, &late),
                     RLOCK_ETIMEDOUT);
    rt_redis_resume(&server);
    const char *second[2] = {"ECHO", "mine"};
    assert_int_equal(rlock__link_sync_append(s, 2, second, NULL), 0);
    assert_int_equal(rlock__link_sync_read(s, rt_now_ms() + 5000, &r), 0);
    assert_string_equal(r->str, "mine");
    rlock__link_reply_free(r);
    assert_int_equal(late.late_calls, 1);
    assert_string_equal(late.late_text, "late");
    rlock__link_sync_free(s);
}

static void test_read_with_a_past_deadline_does_not_wait(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    redisReply *r = (redisReply *)&r; /* must become NULL */
    int64_t start = rt_now_ms();
    assert_int_equal(rlock__link_sync_read(s, 0, &r), RLOCK_ETIMEDOUT);
    assert_null(r);
    assert_true(rt_now_ms() - start < SLACK_MS);
    assert_false(rlock__link_sync_broken(s));
    rlock__link_sync_free(s);
}

/* A pipeline given up after a timeout leaves the link in step: the replies
 * it did not read are dropped, and the next call gets its own. */
static void test_abandoned_replies_are_dropped_when_they_come(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    const char *first[2] = {"ECHO", "abandoned"};
    redisReply *r = NULL;
    rt_redis_pause(&server);
    assert_int_equal(rlock__link_sync_append(s, 2, first, NULL), 0);
    assert_int_equal(rlock__link_sync_read(s, rt_now_ms() + 200, &r),
                     RLOCK_ETIMEDOUT);
    rlock__link_sync_abandon(s);
    rt_redis_resume(&server);
    char text[64];
    round_trip(s, "ECHO", "next", text, sizeof(text));
    assert_string_equal(text, "next");
    rlock__link_sync_free(s);
}

/* ----------------------------------------------------------- subscriber */

static void test_subscriber_messages_are_read_as_unasked_replies(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    const char *sub[2] = {"SUBSCRIBE", "link-sync-ch"};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_append(s, 2, sub, NULL), 0);
    assert_int_equal(rlock__link_sync_read(s, rt_now_ms() + 5000, &r), 0);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY); /* the confirmation */
    assert_string_equal(r->element[0]->str, "subscribe");
    rlock__link_reply_free(r);
    assert_int_equal(rt_cmd_int(&server, "PUBLISH link-sync-ch hello"), 1);
    assert_int_equal(rlock__link_sync_read(s, rt_now_ms() + 5000, &r), 0);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "message");
    assert_string_equal(r->element[2]->str, "hello");
    rlock__link_reply_free(r);
    rlock__link_sync_free(s);
}

/* --------------------------------------------------------------- broken */

/* A call that fails because the connection broke tells its caller so;
 * its late callback, for a reply that timed out, is never called. */
static void test_broken_call_reports_econn_and_never_calls_late(void **state)
{
    (void)state;
    rlock__link_sync *s = open_link();
    const char *id[2] = {"CLIENT", "ID"};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_call(s, 2, id, NULL, rt_now_ms() + 5000,
                                           &r, NULL, NULL),
                     0);
    long long me = r->integer;
    rlock__link_reply_free(r);
    assert_int_equal(rt_cmd_int(&server, "CLIENT KILL ID %lld", me), 1);
    late_seen late = {0};
    const char *echo[2] = {"ECHO", "after-kill"};
    int rc = rlock__link_sync_call(s, 2, echo, NULL, rt_now_ms() + 5000, &r,
                                   on_sync_late, &late);
    assert_int_equal(rc, RLOCK_ECONN);
    assert_null(r);
    assert_true(rlock__link_sync_broken(s));
    assert_string_not_equal(rlock__link_sync_error(s), "");
    assert_int_equal(rlock__link_sync_fd(s), -1);
    rlock__link_sync_free(s);
    assert_int_equal(late.late_calls, 0);
}

static int group_setup(void **state)
{
    (void)state;
    if (rt_redis_start(&server) != 0)
        return -1;
    redisReply *r = rt_cmd(&server, "ACL SETUSER " USER " on >" PASSWORD
                                    " ~* &* +@all");
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_stop(&server);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocking_link_round_trip),
        cmocka_unit_test(
            test_blocking_link_drops_the_reply_of_a_fire_and_forget_send),
        cmocka_unit_test(test_blocking_link_deadline_then_own_reply),
        cmocka_unit_test(
            test_blocking_link_hands_a_late_reply_to_its_late_callback),
        cmocka_unit_test(
            test_blocking_link_wrong_password_and_connect_deadline),
        cmocka_unit_test(test_appended_commands_are_read_back_in_order),
        cmocka_unit_test(test_read_settles_a_late_reply_before_its_own),
        cmocka_unit_test(test_read_with_a_past_deadline_does_not_wait),
        cmocka_unit_test(test_abandoned_replies_are_dropped_when_they_come),
        cmocka_unit_test(
            test_subscriber_messages_are_read_as_unasked_replies),
        cmocka_unit_test(test_broken_call_reports_econn_and_never_calls_late),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
