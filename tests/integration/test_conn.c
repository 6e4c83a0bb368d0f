/*
 * test_conn.c: the I/O thread's command connection (src/io/conn.h, issue
 * 13) against real redis-server processes: a link opened on demand and
 * replaced when it fails, deadlines and late replies, the connect's
 * deadline told from the command's, NOSCRIPT answered by loading the
 * script, a link retired after a permission refusal, closing, and TLS.
 *
 * As in test_link.c, each test drives its own libev loop on the test's
 * thread, and servers are SIGSTOPped (rt_redis_pause) to make them silent
 * without closing anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/conn.h"
#include "io/link.h"
#include "io/tls.h"
#include "proto/scripts.h"
#include "rlock.h"
#include "tls_fixture.h"

/* Slack on a deadline before a test calls it missed (a loaded machine). */
#define SLACK_MS 1500

static rt_redis server;
static rt_tls_files tls_files;
static rt_redis tls_server;

/* ------------------------------------------------------------- helpers */

/* One command and what became of it. cmd comes first: the callbacks get
 * it and find the rest. */
typedef struct call {
    rlock__conn_cmd cmd;
    const char *argv[4];
    int calls;
    int status;
    int type; /* the reply's type, 0 if none */
    long long integer;
    char text[128];
    int64_t at;
    int late_calls;
    bool late_null;
    char late_text[64];
} call;

static void on_done(rlock__conn_cmd *cmd, int status, redisReply *r)
{
    call *c = (call *)cmd;
    c->calls++;
    c->status = status;
    c->at = rt_now_ms();
    c->type = r ? r->type : 0;
    c->integer = r ? r->integer : 0;
    if (r != NULL && r->str != NULL)
        snprintf(c->text, sizeof(c->text), "%s", r->str);
}

static void on_late(rlock__conn_cmd *cmd, redisReply *r)
{
    call *c = (call *)cmd;
    c->late_calls++;
    c->late_null = r == NULL;
    if (r != NULL && r->str != NULL)
        snprintf(c->late_text, sizeof(c->late_text), "%s", r->str);
}

/* Lays out c as argv (up to 3 words, NULL-terminated) with a deadline ms
 * from now and a late callback. */
static void call_init(call *c, int64_t ms, const char *a0, const char *a1,
                      const char *a2)
{
    memset(c, 0, sizeof(*c));
    c->argv[0] = a0;
    c->argv[1] = a1;
    c->argv[2] = a2;
    c->cmd.argc = a2 ? 3 : a1 ? 2 : 1;
    c->cmd.argv = c->argv;
    c->cmd.deadline_ms = rt_now_ms() + ms;
    c->cmd.done = on_done;
    c->cmd.late = on_late;
}

static void tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

typedef struct fixture {
    struct ev_loop *loop;
    ev_timer ticker;
    rlock__link_opts opts;
    rlock__conn cn;
} fixture;

/* Runs the loop until *flag is non-zero or ms pass; returns *flag. */
static int run_until(fixture *f, const int *flag, int64_t ms)
{
    int64_t end = rt_now_ms() + ms;
    while (*flag == 0 && rt_now_ms() < end)
        ev_run(f->loop, EVRUN_ONCE);
    return *flag;
}

static void run_for(fixture *f, int64_t ms)
{
    int never = 0;
    run_until(f, &never, ms);
}

/* A fixture whose connection reaches 127.0.0.1:port as the default
 * user. */
static void fixture_start(fixture *f, int port)
{
    memset(f, 0, sizeof(*f));
    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->loop);
    ev_timer_init(&f->ticker, tick, 0.05, 0.05);
    ev_timer_start(f->loop, &f->ticker);
    rlock__link_opts_init(&f->opts);
    assert_int_equal(
        rlock__link_resolve("127.0.0.1", port, NULL, &f->opts.addr), 0);
    f->opts.host = "127.0.0.1";
    f->opts.connect_timeout_ms = 2000;
}

static void fixture_connect(fixture *f)
{
    rlock__conn_init(&f->cn, f->loop, &f->opts, NULL, NULL);
}

static void fixture_stop(fixture *f)
{
    rlock__conn_close(&f->cn);
    ev_timer_stop(f->loop, &f->ticker);
    ev_loop_destroy(f->loop);
}

/* Sends CLIENT ID and returns the connection's id. */
static long long client_id(fixture *f)
{
    call c;
    call_init(&c, 2000, "CLIENT", "ID", NULL);
    assert_int_equal(rlock__conn_send(&f->cn, &c.cmd), 0);
    assert_int_equal(run_until(f, &c.calls, 5000), 1);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.type, REDIS_REPLY_INTEGER);
    return c.integer;
}

/* True while the server has a client with this id. */
static bool server_has_client(rt_redis *r, long long id)
{
    char *list = rt_cmd_str(r, "CLIENT LIST ID %lld", id);
    bool has = list != NULL && strstr(list, "id=") != NULL;
    free(list);
    return has;
}

/* ------------------------------------------------------------- on demand */

/* Nothing is opened until a command needs it; a link the server kills is
 * freed when it reports its failure, and the next command opens another. */
static void test_a_killed_link_is_replaced_by_the_next_command(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, server.port);
    fixture_connect(&f);
    assert_null(f.cn.link);
    long long first = client_id(&f);
    assert_non_null(f.cn.link);
    assert_int_equal(rt_cmd_int(&server, "CLIENT KILL ID %lld", first), 1);
    int64_t end = rt_now_ms() + 5000;
    while (f.cn.link != NULL && rt_now_ms() < end)
        ev_run(f.loop, EVRUN_ONCE);
    assert_null(f.cn.link); /* freed on its failure */
    long long second = client_id(&f);
    assert_true(second != first);
    fixture_stop(&f);
}

/* A command whose deadline has passed is refused at once, unsent: no link
 * is opened for it and neither callback runs. */
static void test_a_command_past_its_deadline_is_not_sent(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, server.port);
    fixture_connect(&f);
    call c;
    call_init(&c, -1, "PING", NULL, NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), RLOCK_ETIMEDOUT);
    assert_null(f.cn.link);
    run_for(&f, 100);
    assert_int_equal(c.calls, 0);
    assert_int_equal(c.late_calls, 0);
    fixture_stop(&f);
}

/* ------------------------------------------------------------- deadlines */

/* The server stops: the command completes with RLOCK_ETIMEDOUT at its
 * deadline; the server resumes: its reply comes to the late callback, and
 * the same link serves the next command. */
static void test_a_stopped_server_times_out_the_command_and_the_late_reply_follows(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, server.port);
    fixture_connect(&f);
    long long id = client_id(&f);
    rt_redis_pause(&server);
    call c;
    /* before the deadline is set, so that it is at least start + 300 */
    int64_t start = rt_now_ms();
    call_init(&c, 300, "ECHO", "late-echo", NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), 0);
    run_until(&f, &c.calls, 300 + SLACK_MS);
    rt_redis_resume(&server);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.status, RLOCK_ETIMEDOUT);
    assert_true(c.at - start >= 300 && c.at - start < 300 + SLACK_MS);
    assert_int_equal(c.late_calls, 0);
    assert_int_equal(run_until(&f, &c.late_calls, 5000), 1);
    assert_false(c.late_null);
    assert_string_equal(c.late_text, "late-echo");
    assert_int_equal(c.calls, 1);
    assert_int_equal(client_id(&f), id);
    fixture_stop(&f);
}

/* The server takes the TCP connect but answers nothing, so the handshake
 * (its CLIENT SETNAME) cannot finish: the connect's deadline fails the
 * command with RLOCK_ECONN (it never ran), not with RLOCK_ETIMEDOUT, and no
 * late callback follows. */
static void test_the_connect_deadline_is_econn_not_the_commands_timeout(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, server.port);
    f.opts.connect_timeout_ms = 300;
    f.opts.client_name = "conn-deadline";
    fixture_connect(&f);
    rt_redis_pause(&server);
    call c;
    call_init(&c, 10000, "PING", NULL, NULL);
    int64_t start = rt_now_ms();
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), 0);
    run_until(&f, &c.calls, 300 + SLACK_MS);
    rt_redis_resume(&server);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.status, RLOCK_ECONN);
    assert_true(c.at - start >= 300 && c.at - start < 300 + SLACK_MS);
    assert_null(f.cn.link); /* freed: the next command opens another */
    run_for(&f, 200);
    assert_int_equal(c.late_calls, 0);
    assert_true(client_id(&f) > 0);
    fixture_stop(&f);
}

/* Closing completes what is pending with RLOCK_ECLOSED (no late callback:
 * it was not a timeout) and refuses every later command. */
static void test_close_fails_pending_commands_and_refuses_more(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f, server.port);
    fixture_connect(&f);
    (void)client_id(&f);
    rt_redis_pause(&server);
    call c;
    call_init(&c, 5000, "PING", NULL, NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), 0);
    rlock__conn_close(&f.cn);
    rt_redis_resume(&server);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.status, RLOCK_ECLOSED);
    assert_int_equal(c.late_calls, 0);
    call after;
    call_init(&after, 5000, "PING", NULL, NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &after.cmd), RLOCK_ECLOSED);
    run_for(&f, 100);
    assert_int_equal(after.calls, 0);
    fixture_stop(&f);
}

/* -------------------------------------------------------------- NOSCRIPT */

/* The server lost its scripts: the EVALSHA is answered NOSCRIPT, so the
 * connection loads the script and sends the EVALSHA again, and the caller
 * hears only the script's result. */
static void test_noscript_loads_the_script_and_sends_it_again(void **state)
{
    (void)state;
    static const char body[] = "return 'ran-after-reload'";
    char *sha = rt_cmd_str(&server, "SCRIPT LOAD %s", body);
    assert_non_null(sha);
    rlock__script script = {"test", (const unsigned char *)body,
                            sizeof(body) - 1, sha};
    char *ok = rt_cmd_str(&server, "SCRIPT FLUSH");
    assert_string_equal(ok, "OK");
    free(ok);
    ok = rt_cmd_str(&server, "CONFIG RESETSTAT");
    assert_string_equal(ok, "OK");
    free(ok);

    fixture f;
    fixture_start(&f, server.port);
    fixture_connect(&f);
    call c;
    call_init(&c, 5000, "EVALSHA", sha, "0");
    c.cmd.script = &script;
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), 0);
    assert_int_equal(run_until(&f, &c.calls, 5000), 1);
    assert_int_equal(c.status, 0);
    assert_int_equal(c.type, REDIS_REPLY_STRING);
    assert_string_equal(c.text, "ran-after-reload");
    /* it was loaded, and not by EVAL */
    redisReply *r = rt_cmd(&server, "SCRIPT EXISTS %s", sha);
    assert_non_null(r);
    assert_int_equal(r->element[0]->integer, 1);
    freeReplyObject(r);
    char *stats = rt_cmd_str(&server, "INFO commandstats");
    assert_non_null(stats);
    assert_null(strstr(stats, "cmdstat_eval:"));
    /* before 7.0, subcommands share their command's line: the load and
     * the SCRIPT EXISTS above */
    if (!rt_server_has_7_0())
        assert_non_null(strstr(stats, "cmdstat_script:calls=2,"));
    else
        assert_non_null(strstr(stats, "cmdstat_script|load:calls=1,"));
    free(stats);
    fixture_stop(&f);
    free(sha);
}

/* ------------------------------------------------------------ retirement */

/* A command refused for the link's credentials (NOPERM here; NOAUTH and
 * WRONGPASS alike) retires the link: what was already sent on it still
 * gets its own reply, the link is then closed, and the next command goes
 * on a new link, which authenticates afresh. */
static void test_a_refused_credential_retires_the_link_after_its_replies(
    void **state)
{
    (void)state;
    char *ok = rt_cmd_str(&server, "ACL SETUSER conn-carol on >carol-pw ~* "
                                   "&* +@all");
    assert_string_equal(ok, "OK");
    free(ok);
    fixture f;
    fixture_start(&f, server.port);
    f.opts.user = "conn-carol";
    f.opts.password = "carol-pw";
    fixture_connect(&f);
    long long first = client_id(&f);
    ok = rt_cmd_str(&server, "ACL SETUSER conn-carol -get");
    assert_string_equal(ok, "OK");
    free(ok);

    call refused, behind;
    call_init(&refused, 5000, "GET", "conn-key", NULL);
    call_init(&behind, 5000, "CLIENT", "ID", NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &refused.cmd), 0);
    assert_int_equal(rlock__conn_send(&f.cn, &behind.cmd), 0);
    assert_int_equal(run_until(&f, &behind.calls, 5000), 1);
    assert_int_equal(refused.calls, 1);
    assert_int_equal(refused.status, 0);
    assert_int_equal(refused.type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(refused.text, "NOPERM"));
    assert_int_equal(behind.status, 0);
    assert_int_equal(behind.integer, first); /* the same link answered */

    ok = rt_cmd_str(&server, "ACL SETUSER conn-carol +get");
    assert_string_equal(ok, "OK");
    free(ok);
    long long second = client_id(&f);
    assert_true(second != first);
    run_for(&f, 100);
    assert_false(server_has_client(&server, first));
    assert_true(server_has_client(&server, second));
    fixture_stop(&f);
}

/* ------------------------------------------------------------------- TLS */

/* A connection whose options carry a TLS context talks TLS. */
static void test_a_tls_connection_round_trips(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings ts = {0};
    ts.ca_file = tls_files.ca_crt;
    ts.verify = RLOCK__TLS_VERIFY_FULL;
    rlock__tls_ctx *ctx = NULL;
    assert_int_equal(rlock__tls_ctx_new(&ts, &ctx, NULL, 0), 0);
    fixture f;
    fixture_start(&f, tls_server.tls_port);
    f.opts.host = "localhost";
    f.opts.tls = ctx;
    /* The TLS handshake is the slow part under valgrind on a busy machine:
     * the connect deadline is generous, the test is about the round trip. */
    f.opts.connect_timeout_ms = 15000;
    fixture_connect(&f);
    call c;
    call_init(&c, 5000, "ECHO", "conn-over-tls", NULL);
    assert_int_equal(rlock__conn_send(&f.cn, &c.cmd), 0);
    assert_int_equal(run_until(&f, &c.calls, 5000), 1);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.text, "conn-over-tls");
    fixture_stop(&f);
    rlock__tls_ctx_free(ctx);
}

static int group_setup(void **state)
{
    (void)state;
    if (rt_redis_start(&server) != 0 || rt_tls_make(&tls_files) != 0)
        return -1;
    if (!rt_server_has_tls())
        return 0; /* the TLS test skips */
    return rt_redis_start_tls(&tls_server, rt_tls_server_args(&tls_files, 0),
                              NULL);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_stop(&server);
    rt_redis_stop(&tls_server);
    rt_tls_remove(&tls_files);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_killed_link_is_replaced_by_the_next_command),
        cmocka_unit_test(test_a_command_past_its_deadline_is_not_sent),
        cmocka_unit_test(
            test_a_stopped_server_times_out_the_command_and_the_late_reply_follows),
        cmocka_unit_test(
            test_the_connect_deadline_is_econn_not_the_commands_timeout),
        cmocka_unit_test(test_close_fails_pending_commands_and_refuses_more),
        cmocka_unit_test(test_noscript_loads_the_script_and_sends_it_again),
        cmocka_unit_test(
            test_a_refused_credential_retires_the_link_after_its_replies),
        cmocka_unit_test(test_a_tls_connection_round_trips),
    };
    if (rt_require_redis() != 0)
        return 77;
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
