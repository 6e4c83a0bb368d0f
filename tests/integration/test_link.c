/*
 * test_link.c: the transport rlock owns (src/io/link.h), against
 * real redis-server processes: connect and handshake, deadlines, late
 * replies, pipelining, a killed connection, the subscriber link, and TLS
 * for both links. The blocking link's own tests are test_link_sync.c.
 *
 * Each test drives its own libev loop on the test's thread, so a callback's
 * effects are checked right after the loop iteration that ran it. Servers
 * are SIGSTOPped (rt_redis_pause) to make them silent without closing
 * anything: the kernel still accepts TCP connects for a stopped server, so
 * only the link's own deadlines can end a wait.
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
#include <unistd.h>

#include "harness.h"
#include "io/link.h"
#include "io/tls.h"
#include "tls_fixture.h"
#include "rlock.h"

/* The shared server's default user has no password (the harness's rt_cmd
 * does not AUTH), so the links log in as this ACL user. */
#define USER "link-user"
#define PASSWORD "pw-link-test"
/* Slack on a deadline before a test calls it missed (a loaded machine). */
#define SLACK_MS 1500

static rt_redis server;
static rt_tls_files tls_files;
static rt_redis tls_server; /* --tls-port, no client certificate asked */

/* ------------------------------------------------------------- helpers */

/* What a link told its test. */
typedef struct seen {
    int up;         /* on_up calls */
    int up_status;
    int closed;     /* on_closed calls */
    int closed_status;
    int64_t closed_at;
    int pushes;
    rlock__push_kind push_kind;
    char push_channel[64];
    char push_payload[64];
} seen;

static void on_up(rlock__link *l, int status, void *arg)
{
    (void)l;
    seen *s = arg;
    s->up++;
    s->up_status = status;
}

static void on_closed(rlock__link *l, int status, void *arg)
{
    (void)l;
    seen *s = arg;
    s->closed++;
    s->closed_status = status;
    s->closed_at = rt_now_ms();
}

static void on_push(rlock__link *l, const rlock__push *p, void *arg)
{
    (void)l;
    seen *s = arg;
    s->pushes++;
    s->push_kind = p->kind;
    snprintf(s->push_channel, sizeof(s->push_channel), "%.*s",
             (int)p->channel_len, p->channel ? p->channel : "");
    snprintf(s->push_payload, sizeof(s->push_payload), "%.*s",
             (int)p->payload_len, p->payload ? p->payload : "");
}

/* One request's outcome. */
typedef struct done {
    int calls;
    int status;
    int type; /* the reply's type, 0 if none */
    char text[128];
    int64_t at;
    int late_calls;
    char late_text[64];
} done;

static void on_reply(rlock__link *l, int status, redisReply *r, void *arg)
{
    (void)l;
    done *d = arg;
    d->calls++;
    d->status = status;
    d->at = rt_now_ms();
    d->type = r ? r->type : 0;
    if (r != NULL && r->str != NULL)
        snprintf(d->text, sizeof(d->text), "%s", r->str);
}

static void on_late(rlock__link *l, redisReply *r, void *arg)
{
    (void)l;
    done *d = arg;
    d->late_calls++;
    if (r != NULL && r->str != NULL)
        snprintf(d->late_text, sizeof(d->late_text), "%s", r->str);
}

/* Runs loop until *flag is non-zero or ms pass; returns *flag. */
static int run_until(struct ev_loop *loop, const int *flag, int64_t ms)
{
    int64_t end = rt_now_ms() + ms;
    while (*flag == 0 && rt_now_ms() < end)
        ev_run(loop, EVRUN_ONCE);
    return *flag;
}

/* A timer that keeps ev_run(EVRUN_ONCE) from blocking for long, so that
 * run_until checks its clock. */
static void tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

typedef struct fixture {
    struct ev_loop *loop;
    ev_timer ticker;
    seen seen;
    rlock__link *link;
} fixture;

static void fixture_start(fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->loop);
    ev_timer_init(&f->ticker, tick, 0.05, 0.05);
    ev_timer_start(f->loop, &f->ticker);
}

static void fixture_stop(fixture *f)
{
    rlock__link_free(f->link);
    ev_timer_stop(f->loop, &f->ticker);
    ev_loop_destroy(f->loop);
}

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

/* Opens f->link with o and waits for it to come up. */
static void open_up(fixture *f, const rlock__link_opts *o, bool subscriber)
{
    rlock__link_cbs cbs = {on_up, on_closed, subscriber ? on_push : NULL,
                           &f->seen};
    assert_int_equal(rlock__link_open(f->loop, o, &cbs, &f->link), 0);
    assert_int_equal(run_until(f->loop, &f->seen.up, 5000), 1);
    assert_int_equal(f->seen.up_status, 0);
    assert_true(rlock__link_is_up(f->link));
}

static void send1(fixture *f, const char *a0, const char *a1, int64_t ms,
                  done *d, bool late)
{
    const char *argv[2] = {a0, a1};
    assert_int_equal(rlock__link_send(f->link, a1 ? 2 : 1, argv, NULL, ms,
                                      on_reply, late ? on_late : NULL, d),
                     0);
}

static bool client_list_has(const char *needle)
{
    char *list = rt_cmd_str(&server, "CLIENT LIST");
    bool has = list != NULL && strstr(list, needle) != NULL;
    free(list);
    return has;
}

/* ------------------------------------------------------------- connect */

static void test_handshake_sets_acl_user_db_and_name(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    redisReply *r = rt_cmd(&server, "ACL SETUSER link-alice on >alice-pw "
                                    "~* &* +@all");
    assert_non_null(r);
    freeReplyObject(r);
    rlock__link_opts o = opts_for(&server);
    o.user = "link-alice";
    o.password = "alice-pw";
    o.db = 3;
    o.client_name = "link-handshake";
    open_up(&f, &o, false);

    done d = {0};
    send1(&f, "CLIENT", "INFO", 2000, &d, false);
    assert_int_equal(run_until(f.loop, &d.calls, 5000), 1);
    assert_int_equal(d.status, 0);
    assert_non_null(strstr(d.text, "name=link-handshake"));
    /* and as a second connection sees it */
    assert_true(client_list_has("name=link-handshake"));
    char *list = rt_cmd_str(&server, "CLIENT LIST");
    assert_non_null(list);
    char *line = strstr(list, "name=link-handshake");
    assert_non_null(line);
    char *eol = strchr(line, '\n');
    if (eol != NULL)
        *eol = '\0';
    assert_non_null(strstr(line, " db=3 "));
    assert_non_null(strstr(line, " user=link-alice "));
    free(list);
    fixture_stop(&f);
}

static void test_wrong_password_fails_with_eauth(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    o.password = "not-the-password";
    o.client_name = "link-wrong-pw";
    rlock__link_cbs cbs = {on_up, on_closed, NULL, &f.seen};
    assert_int_equal(rlock__link_open(f.loop, &o, &cbs, &f.link), 0);
    done d = {0};
    send1(&f, "PING", NULL, 5000, &d, false);
    assert_int_equal(run_until(f.loop, &f.seen.closed, 5000), 1);
    assert_int_equal(f.seen.closed_status, RLOCK_EAUTH);
    assert_int_equal(f.seen.up, 0);
    /* the request queued behind the handshake gets the handshake's code */
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, RLOCK_EAUTH);
    assert_string_not_equal(rlock__link_error(f.link), "");
    fixture_stop(&f);
}

static void test_password_only_auth(void **state)
{
    (void)state;
    rt_redis pw = {0};
    assert_int_equal(rt_redis_start(&pw), 0);
    /* set after the start: the harness's readiness PING does not AUTH */
    redisReply *r = rt_cmd(&pw, "CONFIG SET requirepass only-pw");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve("127.0.0.1", pw.port, NULL, &o.addr),
                     0);
    o.password = "only-pw";
    fixture f;
    fixture_start(&f);
    open_up(&f, &o, false);
    done d = {0};
    send1(&f, "ECHO", "authed", 2000, &d, false);
    assert_int_equal(run_until(f.loop, &d.calls, 5000), 1);
    assert_string_equal(d.text, "authed");
    fixture_stop(&f);

    o.password = "not-only-pw";
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), RLOCK_EAUTH);
    rt_redis_stop(&pw);
}

static void test_refused_connect_fails_with_econn(void **state)
{
    (void)state;
    rt_redis gone = {0};
    assert_int_equal(rt_redis_start(&gone), 0);
    int port = gone.port;
    rt_redis_stop(&gone);
    fixture f;
    fixture_start(&f);
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve("127.0.0.1", port, NULL, &o.addr),
                     0);
    rlock__link_cbs cbs = {on_up, on_closed, NULL, &f.seen};
    assert_int_equal(rlock__link_open(f.loop, &o, &cbs, &f.link), 0);
    /* reported from the loop, never from inside open */
    assert_int_equal(f.seen.closed, 0);
    assert_int_equal(run_until(f.loop, &f.seen.closed, 5000), 1);
    assert_int_equal(f.seen.closed_status, RLOCK_ECONN);
    fixture_stop(&f);
}

static void test_handshake_deadline_fires_against_a_stopped_server(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    o.connect_timeout_ms = 400;
    rt_redis_pause(&server); /* TCP connects; nothing answers AUTH */
    rlock__link_cbs cbs = {on_up, on_closed, NULL, &f.seen};
    int64_t start = rt_now_ms();
    assert_int_equal(rlock__link_open(f.loop, &o, &cbs, &f.link), 0);
    run_until(f.loop, &f.seen.closed, 400 + SLACK_MS);
    rt_redis_resume(&server);
    assert_int_equal(f.seen.closed, 1);
    assert_int_equal(f.seen.closed_status, RLOCK_ETIMEDOUT);
    assert_true(f.seen.closed_at - start >= 400);
    assert_true(f.seen.closed_at - start < 400 + SLACK_MS);
    fixture_stop(&f);
}

static void test_unix_socket_link_comes_up(void **state)
{
    (void)state;
    rt_redis us = {0};
    char sock[300];
    const char *args[] = {"--unixsocket", "link.sock", "--unixsocketperm",
                          "700", NULL};
    assert_int_equal(rt_redis_start_args(&us, args), 0);
    snprintf(sock, sizeof(sock), "%s/link.sock", us.dir);
    fixture f;
    fixture_start(&f);
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve(NULL, 0, sock, &o.addr), 0);
    o.client_name = "link-unix";
    open_up(&f, &o, false);
    done d = {0};
    send1(&f, "ECHO", "over-unix", 2000, &d, false);
    assert_int_equal(run_until(f.loop, &d.calls, 5000), 1);
    assert_int_equal(d.status, 0);
    assert_string_equal(d.text, "over-unix");
    fixture_stop(&f);
    rt_redis_stop(&us);
}

/* ------------------------------------------------------------- requests */

static void test_request_deadline_fires_against_a_stopped_server(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, false);
    rt_redis_pause(&server);
    done d = {0};
    int64_t start = rt_now_ms();
    send1(&f, "PING", NULL, 300, &d, false);
    run_until(f.loop, &d.calls, 300 + SLACK_MS);
    rt_redis_resume(&server);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, RLOCK_ETIMEDOUT);
    assert_true(d.at - start >= 300);
    assert_true(d.at - start < 300 + SLACK_MS);
    /* a slow server is not a dead one: the link stays */
    assert_true(rlock__link_is_up(f.link));
    fixture_stop(&f);
}

static void test_late_reply_is_dropped_and_the_next_request_gets_its_own(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, false);
    rt_redis_pause(&server);
    done first = {0}, second = {0};
    send1(&f, "ECHO", "first", 200, &first, false);
    assert_int_equal(run_until(f.loop, &first.calls, 200 + SLACK_MS), 1);
    assert_int_equal(first.status, RLOCK_ETIMEDOUT);
    rt_redis_resume(&server);
    send1(&f, "ECHO", "second", 5000, &second, false);
    assert_int_equal(run_until(f.loop, &second.calls, 5000), 1);
    assert_int_equal(second.status, 0);
    assert_string_equal(second.text, "second");
    assert_int_equal(first.calls, 1); /* exactly once */
    assert_int_equal(rlock__link_pending(f.link), 0);
    fixture_stop(&f);
}

static void test_late_callback_gets_the_late_reply(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, false);
    rt_redis_pause(&server);
    done first = {0};
    send1(&f, "ECHO", "first", 200, &first, true);
    assert_int_equal(run_until(f.loop, &first.calls, 200 + SLACK_MS), 1);
    assert_int_equal(first.status, RLOCK_ETIMEDOUT);
    rt_redis_resume(&server);
    assert_int_equal(run_until(f.loop, &first.late_calls, 5000), 1);
    assert_string_equal(first.late_text, "first");
    assert_int_equal(first.calls, 1);
    fixture_stop(&f);
}

#define PIPELINED 1000

typedef struct order {
    int next;  /* the index the next reply must carry */
    int wrong; /* replies out of order or failed */
} order;

static void on_ordered(rlock__link *l, int status, redisReply *r, void *arg)
{
    (void)l;
    order *o = arg;
    char want[16];
    snprintf(want, sizeof(want), "%d", o->next);
    if (status != 0 || r == NULL || r->str == NULL ||
        strcmp(r->str, want) != 0)
        o->wrong++;
    o->next++;
}

static void test_pipelined_requests_complete_in_order(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, false);
    order ord = {0};
    for (int i = 0; i < PIPELINED; i++) {
        char n[16];
        snprintf(n, sizeof(n), "%d", i);
        const char *argv[2] = {"ECHO", n};
        assert_int_equal(rlock__link_send(f.link, 2, argv, NULL, 10000,
                                          on_ordered, NULL, &ord),
                         0);
    }
    assert_int_equal(rlock__link_pending(f.link), PIPELINED);
    int64_t end = rt_now_ms() + 10000;
    while (ord.next < PIPELINED && rt_now_ms() < end)
        ev_run(f.loop, EVRUN_ONCE);
    assert_int_equal(ord.next, PIPELINED);
    assert_int_equal(ord.wrong, 0);
    fixture_stop(&f);
}

#define BLOCKED 20

static void test_killed_connection_completes_every_pending_request_once(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    o.client_name = "link-killed";
    open_up(&f, &o, false);
    /* the first BLPOP blocks; Redis holds the others behind it */
    done d[BLOCKED];
    memset(d, 0, sizeof(d));
    for (int i = 0; i < BLOCKED; i++) {
        const char *argv[3] = {"BLPOP", "link-nothing", "0"};
        assert_int_equal(rlock__link_send(f.link, 3, argv, NULL, 30000,
                                          on_reply, NULL, &d[i]),
                         0);
    }
    for (int i = 0; i < 5; i++)
        ev_run(f.loop, EVRUN_NOWAIT);
    redisReply *r = rt_cmd(&server, "CLIENT LIST");
    assert_non_null(r);
    char *at = strstr(r->str, "name=link-killed");
    assert_non_null(at);
    while (at > r->str && at[-1] != '\n')
        at--;
    long long id = strtoll(at + 3, NULL, 10); /* "id=" */
    freeReplyObject(r);
    assert_int_equal(rt_cmd_int(&server, "CLIENT KILL ID %lld", id), 1);
    assert_int_equal(run_until(f.loop, &f.seen.closed, 5000), 1);
    assert_int_equal(f.seen.closed_status, RLOCK_ECONN);
    for (int i = 0; i < 10; i++)
        ev_run(f.loop, EVRUN_NOWAIT); /* nothing may complete twice */
    for (int i = 0; i < BLOCKED; i++) {
        assert_int_equal(d[i].calls, 1);
        assert_int_equal(d[i].status, RLOCK_ECONN);
    }
    assert_int_equal(f.seen.closed, 1);
    done after = {0};
    const char *ping[1] = {"PING"};
    assert_int_equal(rlock__link_send(f.link, 1, ping, NULL, 1000, on_reply,
                                      NULL, &after),
                     RLOCK_ECONN);
    fixture_stop(&f);
}

static void test_silent_server_is_taken_for_half_open_and_closed(
    void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    o.stale_ms = 600;
    open_up(&f, &o, false);
    rt_redis_pause(&server);
    done d = {0};
    int64_t start = rt_now_ms();
    send1(&f, "PING", NULL, 200, &d, false);
    run_until(f.loop, &f.seen.closed, 600 + SLACK_MS);
    rt_redis_resume(&server);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, RLOCK_ETIMEDOUT);
    assert_int_equal(f.seen.closed, 1);
    assert_int_equal(f.seen.closed_status, RLOCK_ECONN);
    assert_true(f.seen.closed_at - start >= 600);
    assert_true(f.seen.closed_at - start < 600 + SLACK_MS);
    fixture_stop(&f);
}

static void free_from_callback(rlock__link *l, int status, redisReply *r,
                               void *arg)
{
    (void)r;
    done *d = arg;
    d->calls++;
    d->status = status;
    rlock__link_free(l);
}

static void test_free_completes_pending_requests_with_eclosed(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, false);
    done a = {0}, b = {0};
    const char *ping[1] = {"PING"};
    /* a frees the link from its callback; b is still pending then */
    assert_int_equal(rlock__link_send(f.link, 1, ping, NULL, 5000,
                                      free_from_callback, NULL, &a),
                     0);
    send1(&f, "PING", NULL, 5000, &b, false);
    assert_int_equal(run_until(f.loop, &a.calls, 5000), 1);
    assert_int_equal(a.status, 0);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.status, RLOCK_ECLOSED);
    assert_int_equal(f.seen.closed, 0); /* freeing is not a failure */
    f.link = NULL;
    fixture_stop(&f);
}

static void test_bad_arguments_are_einval(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    rlock__link_cbs cbs = {NULL, NULL, NULL, NULL};
    rlock__link *l = (rlock__link *)&f; /* must be overwritten */
    o.connect_timeout_ms = 0;
    assert_int_equal(rlock__link_open(f.loop, &o, &cbs, &l), RLOCK_EINVAL);
    assert_null(l);
    rlock__link_opts empty;
    rlock__link_opts_init(&empty);
    assert_int_equal(rlock__link_open(f.loop, &empty, &cbs, &l),
                     RLOCK_EINVAL);
    assert_int_equal(rlock__link_resolve("127.0.0.1", 0, NULL, &o.addr),
                     RLOCK_EINVAL);
    assert_int_equal(rlock__link_resolve("no-such-host.invalid", 6000, NULL,
                                         &o.addr),
                     RLOCK_ECONN);
    o = opts_for(&server);
    open_up(&f, &o, false);
    const char *ch[1] = {"x"};
    assert_int_equal(rlock__link_subscribe(f.link, "SUBSCRIBE", 1, ch, NULL,
                                           1000, on_reply, NULL),
                     RLOCK_EINVAL); /* not a subscriber link */
    assert_int_equal(rlock__link_send(f.link, 0, ch, NULL, 1000, on_reply,
                                      NULL, NULL),
                     RLOCK_EINVAL);
    fixture_stop(&f);
}

/* ----------------------------------------------------------- subscriber */

static void subscribe1(fixture *f, const char *verb, const char *channel,
                       done *d)
{
    const char *ch[1] = {channel};
    assert_int_equal(rlock__link_subscribe(f->link, verb, 1, ch, NULL, 5000,
                                           on_reply, d),
                     0);
    assert_int_equal(run_until(f->loop, &d->calls, 5000), 1);
}

static void test_subscriber_gets_messages(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, true);
    done d = {0};
    const char *ch[2] = {"link-ch-a", "link-ch-b"};
    assert_int_equal(rlock__link_subscribe(f.link, "SUBSCRIBE", 2, ch, NULL,
                                           5000, on_reply, &d),
                     0);
    assert_int_equal(run_until(f.loop, &d.calls, 5000), 1);
    assert_int_equal(d.status, 0);
    assert_int_equal(d.type, 0); /* confirmed: no reply to hand over */
    assert_int_equal(rt_cmd_int(&server, "PUBLISH link-ch-b hello"), 1);
    assert_int_equal(run_until(f.loop, &f.seen.pushes, 5000), 1);
    assert_int_equal(f.seen.push_kind, RLOCK__PUSH_MESSAGE);
    assert_string_equal(f.seen.push_channel, "link-ch-b");
    assert_string_equal(f.seen.push_payload, "hello");
    /* PING on a subscriber link answers its request, not the pushes */
    done pong = {0};
    send1(&f, "PING", NULL, 5000, &pong, false);
    assert_int_equal(run_until(f.loop, &pong.calls, 5000), 1);
    assert_int_equal(pong.status, 0);
    assert_int_equal(f.seen.pushes, 1);
    fixture_stop(&f);
}

static void test_own_unsubscribe_is_a_confirmation_not_a_push(void **state)
{
    (void)state;
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    open_up(&f, &o, true);
    done sub = {0}, unsub = {0};
    subscribe1(&f, "SUBSCRIBE", "link-ch-u", &sub);
    subscribe1(&f, "UNSUBSCRIBE", "link-ch-u", &unsub);
    assert_int_equal(unsub.status, 0);
    assert_int_equal(f.seen.pushes, 0);
    assert_int_equal(rt_cmd_int(&server, "PUBLISH link-ch-u gone"), 0);
    fixture_stop(&f);
}

static void test_refused_subscribe_is_reported_and_the_link_survives(
    void **state)
{
    (void)state;
    redisReply *r = rt_cmd(&server, "ACL SETUSER link-bob on >bob-pw ~* "
                                    "resetchannels &link-ok +@all");
    assert_non_null(r);
    freeReplyObject(r);
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = opts_for(&server);
    o.user = "link-bob";
    o.password = "bob-pw";
    open_up(&f, &o, true);
    done ok = {0}, refused = {0};
    subscribe1(&f, "SUBSCRIBE", "link-ok", &ok);
    assert_int_equal(ok.status, 0);
    subscribe1(&f, "SUBSCRIBE", "link-forbidden", &refused);
    assert_int_equal(refused.status, 0);
    assert_int_equal(refused.type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(refused.text, "NOPERM"));
    assert_true(rlock__link_is_up(f.link));
    assert_int_equal(rt_cmd_int(&server, "PUBLISH link-ok still-here"), 1);
    assert_int_equal(run_until(f.loop, &f.seen.pushes, 5000), 1);
    assert_string_equal(f.seen.push_payload, "still-here");
    assert_int_equal(f.seen.closed, 0);
    fixture_stop(&f);
}

/* A one-node cluster that owns every slot drops the shard channels of a
 * slot it deletes and tells their subscribers with "sunsubscribe", as a
 * failover does: the push a server sends of its own accord. */
static void test_server_sent_sunsubscribe_is_seen(void **state)
{
    (void)state;
    RT_SKIP_BEFORE_7_0("sharded pub/sub");
    rt_redis cl = {0};
    /* a bus port of its own, as every cluster node of the harness has */
    char bus[16];
    snprintf(bus, sizeof(bus), "%d", rt_free_port());
    const char *args[] = {"--cluster-enabled", "yes", "--cluster-port", bus,
                          NULL};
    assert_int_equal(rt_redis_start_args(&cl, args), 0);
    redisReply *r = rt_cmd(&cl, "CLUSTER ADDSLOTSRANGE 0 16383");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    int64_t end = rt_now_ms() + 10000;
    char *info = NULL;
    while (rt_now_ms() < end) {
        free(info);
        info = rt_cmd_str(&cl, "CLUSTER INFO");
        if (info != NULL && strstr(info, "cluster_state:ok") != NULL)
            break;
        rt_sleep_ms(50);
    }
    assert_non_null(strstr(info, "cluster_state:ok"));
    free(info);
    long long slot = rt_cmd_int(&cl, "CLUSTER KEYSLOT link-shard");
    assert_true(slot >= 0);

    fixture f;
    fixture_start(&f);
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve("127.0.0.1", cl.port, NULL, &o.addr),
                     0);
    open_up(&f, &o, true);
    done sub = {0};
    subscribe1(&f, "SSUBSCRIBE", "link-shard", &sub);
    assert_int_equal(sub.status, 0);
    assert_int_equal(sub.type, 0);
    assert_int_equal(rt_cmd_int(&cl, "SPUBLISH link-shard one"), 1);
    assert_int_equal(run_until(f.loop, &f.seen.pushes, 5000), 1);
    assert_int_equal(f.seen.push_kind, RLOCK__PUSH_SMESSAGE);

    r = rt_cmd(&cl, "CLUSTER DELSLOTS %lld", slot);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    f.seen.pushes = 0;
    assert_int_equal(run_until(f.loop, &f.seen.pushes, 5000), 1);
    assert_int_equal(f.seen.push_kind, RLOCK__PUSH_SUNSUBSCRIBED);
    assert_string_equal(f.seen.push_channel, "link-shard");
    assert_true(rlock__link_is_up(f.link));
    fixture_stop(&f);
    rt_redis_stop(&cl);
}

/* ----------------------------------------------------------------- TLS */

static rlock__tls_ctx *tls_trusting(const char *ca_file)
{
    rlock__tls_settings ts = {0};
    ts.ca_file = ca_file;
    ts.verify = RLOCK__TLS_VERIFY_FULL;
    rlock__tls_ctx *ctx = NULL;
    assert_int_equal(rlock__tls_ctx_new(&ts, &ctx, NULL, 0), 0);
    return ctx;
}

static rlock__link_opts tls_opts(rlock__tls_ctx *ctx)
{
    rlock__link_opts o;
    rlock__link_opts_init(&o);
    assert_int_equal(rlock__link_resolve("localhost", tls_server.tls_port,
                                         NULL, &o.addr),
                     0);
    o.host = "localhost";
    o.tls = ctx;
    o.client_name = "link-tls";
    return o;
}

static void test_tls_link_verifies_the_server_and_round_trips(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_ctx *ctx = tls_trusting(tls_files.ca_crt);
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = tls_opts(ctx);
    open_up(&f, &o, false);
    done d = {0};
    send1(&f, "ECHO", "over-tls", 5000, &d, false);
    assert_int_equal(run_until(f.loop, &d.calls, 5000), 1);
    assert_int_equal(d.status, 0);
    assert_string_equal(d.text, "over-tls");
    fixture_stop(&f);

    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    const char *argv[2] = {"ECHO", "sync-tls"};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_call(s, 2, argv, NULL,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    assert_string_equal(r->str, "sync-tls");
    freeReplyObject(r);
    rlock__link_sync_free(s);
    rlock__tls_ctx_free(ctx);
}

/* A reply bigger than one read (the stream's buffer, a TLS record) comes
 * whole to the blocking link, which waits on the socket only when the
 * stream holds nothing more. */
static void test_blocking_tls_link_reads_a_reply_larger_than_one_read(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_ctx *ctx = tls_trusting(tls_files.ca_crt);
    rlock__link_opts o = tls_opts(ctx);
    rlock__link_sync *s = NULL;
    assert_int_equal(rlock__link_sync_open(&o, &s, NULL, 0), 0);
    size_t len = 200000;
    char *big = malloc(len);
    assert_non_null(big);
    for (size_t i = 0; i < len; i++)
        big[i] = (char)('a' + i % 26);
    const char *set[3] = {"SET", "link-tls-big", big};
    size_t set_lens[3] = {3, 12, len};
    redisReply *r = NULL;
    assert_int_equal(rlock__link_sync_call(s, 3, set, set_lens,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    freeReplyObject(r);
    const char *get[2] = {"GET", "link-tls-big"};
    assert_int_equal(rlock__link_sync_call(s, 2, get, NULL,
                                           rt_now_ms() + 5000, &r, NULL, NULL),
                     0);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, len);
    assert_memory_equal(r->str, big, len);
    freeReplyObject(r);
    free(big);
    rlock__link_sync_free(s);
    rlock__tls_ctx_free(ctx);
}

static void test_tls_link_to_a_server_of_another_ca_fails_with_etls(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_ctx *ctx = tls_trusting(tls_files.other_ca_crt);
    fixture f;
    fixture_start(&f);
    rlock__link_opts o = tls_opts(ctx);
    rlock__link_cbs cbs = {on_up, on_closed, NULL, &f.seen};
    assert_int_equal(rlock__link_open(f.loop, &o, &cbs, &f.link), 0);
    assert_int_equal(run_until(f.loop, &f.seen.closed, 5000), 1);
    assert_int_equal(f.seen.closed_status, RLOCK_ETLS);
    assert_int_equal(f.seen.up, 0);
    assert_non_null(strstr(rlock__link_error(f.link), "wrong CA"));
    fixture_stop(&f);

    rlock__link_sync *s = NULL;
    char err[256];
    assert_int_equal(rlock__link_sync_open(&o, &s, err, sizeof(err)),
                     RLOCK_ETLS);
    assert_non_null(strstr(err, "wrong CA"));
    rlock__tls_ctx_free(ctx);
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
    if (!ok || rt_tls_make(&tls_files) != 0)
        return -1;
    if (!rt_server_has_tls())
        return 0; /* the TLS tests skip */
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
        cmocka_unit_test(test_handshake_sets_acl_user_db_and_name),
        cmocka_unit_test(test_wrong_password_fails_with_eauth),
        cmocka_unit_test(test_password_only_auth),
        cmocka_unit_test(test_refused_connect_fails_with_econn),
        cmocka_unit_test(
            test_handshake_deadline_fires_against_a_stopped_server),
        cmocka_unit_test(test_unix_socket_link_comes_up),
        cmocka_unit_test(test_request_deadline_fires_against_a_stopped_server),
        cmocka_unit_test(
            test_late_reply_is_dropped_and_the_next_request_gets_its_own),
        cmocka_unit_test(test_late_callback_gets_the_late_reply),
        cmocka_unit_test(test_pipelined_requests_complete_in_order),
        cmocka_unit_test(
            test_killed_connection_completes_every_pending_request_once),
        cmocka_unit_test(test_silent_server_is_taken_for_half_open_and_closed),
        cmocka_unit_test(test_free_completes_pending_requests_with_eclosed),
        cmocka_unit_test(test_bad_arguments_are_einval),
        cmocka_unit_test(test_subscriber_gets_messages),
        cmocka_unit_test(test_own_unsubscribe_is_a_confirmation_not_a_push),
        cmocka_unit_test(
            test_refused_subscribe_is_reported_and_the_link_survives),
        cmocka_unit_test(test_server_sent_sunsubscribe_is_seen),
        cmocka_unit_test(test_tls_link_verifies_the_server_and_round_trips),
        cmocka_unit_test(
            test_blocking_tls_link_reads_a_reply_larger_than_one_read),
        cmocka_unit_test(
            test_tls_link_to_a_server_of_another_ca_fails_with_etls),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
