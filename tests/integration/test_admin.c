/*
 * test_admin.c: the admin functions the rlock tool uses (src/api/admin.h):
 * a lock's names, what a config says about its server, raw commands and a
 * subscriber on a connection made by the client's own handshake, against
 * a real redis-server with a password (CONFIG SET, as the harness only
 * reports a server up while PING needs no AUTH).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/admin.h"
#include "harness.h"
#include "rlock.h"

#define PASSWORD "adm1n-pw"

typedef struct fixture {
    rt_redis redis;
    rlock_client *client; /* password, database 3, client name */
} fixture;

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    rlock_config *cfg = NULL;
    char *ok = NULL;

    if (f == NULL || rt_redis_start(&f->redis) != 0)
        return -1;
    ok = rt_cmd_str(&f->redis, "CONFIG SET requirepass %s", PASSWORD);
    int rc = ok != NULL && strcmp(ok, "OK") == 0 ? 0 : -1;
    free(ok);
    if (rc == 0)
        rc = rlock_config_new(&cfg);
    if (rc == 0)
        rc = rlock_config_set_server(cfg, f->redis.url);
    if (rc == 0)
        rc = rlock_config_set_credentials(cfg, NULL, PASSWORD);
    if (rc == 0)
        rc = rlock_config_set_database(cfg, 3);
    if (rc == 0)
        rc = rlock_config_set_client_name(cfg, "admin-test");
    if (rc == 0)
        rc = rlock_client_connect_with(&f->client, NULL, cfg);
    rlock_config_free(cfg);
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", rlock_strerror(rc));
        rt_redis_stop(&f->redis);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    rlock_client_free(f->client);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

static rlock_admin_conn *open_conn(fixture *f)
{
    rlock_admin_conn *a = NULL;
    assert_int_equal(rlock_admin_open(f->client, &a), RLOCK_OK);
    assert_non_null(a);
    return a;
}

/* Runs a command of up to 4 words that must succeed; returns its reply. */
static rlock_admin_reply *run(rlock_admin_conn *a, int argc, const char *w0,
                              const char *w1, const char *w2, const char *w3)
{
    const char *argv[4] = {w0, w1, w2, w3};
    rlock_admin_reply *r = NULL;
    assert_int_equal(rlock_admin_command(a, argc, argv, &r), RLOCK_OK);
    assert_non_null(r);
    return r;
}

/* ------------------------------------------------------------------ names */

static void test_names_wrap_the_lock_name_in_a_hash_tag(void **state)
{
    rlock_admin_names n;
    (void)state;
    assert_int_equal(rlock_admin_names_of("job", &n), RLOCK_OK);
    assert_string_equal(n.channel, "redisson_lock__channel:{job}");
    assert_string_equal(n.rw_channel, "redisson_rwlock:{job}");
    assert_string_equal(n.fair_queue, "redisson_lock_queue:{job}");
    assert_string_equal(n.fair_timeouts, "redisson_lock_timeout:{job}");
    assert_string_equal(n.fence_token, "redisson_lock_token:{job}");
    assert_string_equal(n.rw_timeout_prefix, "{job}");
    assert_string_equal(n.latch_prefix, "redisson_unlock_latch:{job}:");
    rlock_admin_names_clear(&n);
}

static void test_names_keep_a_name_that_has_a_brace(void **state)
{
    rlock_admin_names n;
    (void)state;
    assert_int_equal(rlock_admin_names_of("a{b}", &n), RLOCK_OK);
    assert_string_equal(n.channel, "redisson_lock__channel:a{b}");
    assert_string_equal(n.rw_timeout_prefix, "a{b}");
    rlock_admin_names_clear(&n);
}

static void test_names_of_an_empty_or_missing_name_are_einval(void **state)
{
    rlock_admin_names n;
    (void)state;
    assert_int_equal(rlock_admin_names_of("", &n), RLOCK_EINVAL);
    assert_null(n.channel);
    assert_int_equal(rlock_admin_names_of(NULL, &n), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_names_of("x", NULL), RLOCK_EINVAL);
}

/* ----------------------------------------------------------------- config */

static void test_server_text_leaves_out_the_credentials(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_server(cfg, "redis://u:pw@h.example:7/4"),
                     RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_string_equal(s.text, "redis://h.example:7/4");
    assert_int_equal(s.database, 4);
    assert_true(s.password);
    assert_false(s.tls);
    assert_int_equal(rlock_config_set_server(cfg, "unix:///tmp/r.sock?db=2"),
                     RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_string_equal(s.text, "unix:///tmp/r.sock?db=2");
    assert_false(s.password);
    rlock_config_free(cfg);
}

/* A sentinel server reads as its sentinels and the master's name, and
 * only a "/db" after the name counts as a database. */
static void test_server_text_of_a_sentinel_url(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_database(cfg, 2), RLOCK_OK);
    assert_int_equal(rlock_admin_config_set_url(
                         cfg, "rediss+sentinel://:pw@a:1,[::1]/my%20m", true),
                     RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_string_equal(s.text, "rediss+sentinel://a:1,[::1]:26379/my m/2");
    assert_int_equal(s.database, 2);
    assert_true(s.password);
    assert_true(s.tls);
    assert_int_equal(
        rlock_admin_config_set_url(cfg, "redis+sentinel://a/m/5", true),
        RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_int_equal(s.database, 5);
    assert_string_equal(s.text, "redis+sentinel://a:26379/m/5");
    rlock_config_free(cfg);
}

/* A sentinel URL's scheme in capitals, or spelled valkey, is a sentinel
 * URL still: its master's name is not read as a database, which would
 * replace the configured one with 0. */
static void test_a_capital_sentinel_scheme_keeps_the_database(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_database(cfg, 2), RLOCK_OK);
    assert_int_equal(
        rlock_admin_config_set_url(cfg, "REDIS+SENTINEL://a/m", true),
        RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_int_equal(s.database, 2);
    assert_int_equal(
        rlock_admin_config_set_url(cfg, "valkey+sentinel://a/m", true),
        RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_int_equal(s.database, 2);
    rlock_config_free(cfg);
}

static void test_server_of_a_config_without_one_is_einval(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_EINVAL);
    assert_string_equal(s.text, "(no server)");
    assert_int_equal(rlock_admin_server_of(NULL, &s), RLOCK_EINVAL);
    rlock_config_free(cfg);
}

static void test_url_beats_the_configs_password_and_database(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_database(cfg, 2), RLOCK_OK);
    assert_int_equal(rlock_admin_config_set_url(cfg, "redis://:pw@h:1/5", true),
                     RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_int_equal(s.database, 5);
    assert_true(s.password);
    rlock_config_free(cfg);
}

static void test_url_without_a_database_keeps_the_configs(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_database(cfg, 2), RLOCK_OK);
    assert_int_equal(rlock_admin_config_set_url(cfg, "redis://h:1", true),
                     RLOCK_OK);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_OK);
    assert_int_equal(s.database, 2);
    assert_string_equal(s.text, "redis://h:1/2");
    rlock_config_free(cfg);
}

static void test_a_url_that_is_not_redis_is_einval(void **state)
{
    rlock_config *cfg = NULL;
    rlock_admin_server s;
    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_admin_config_set_url(cfg, "http://h", false),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_admin_server_of(cfg, &s), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_config_set_url(NULL, "redis://h", false),
                     RLOCK_EINVAL);
    rlock_config_free(cfg);
}

/* ------------------------------------------------------------- connection */

static void test_open_does_the_clients_handshake(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *a = open_conn(f);
    rlock_admin_reply *r = run(a, 2, "CLIENT", "INFO", NULL, NULL);
    assert_int_equal(r->type, RLOCK_ADMIN_STRING);
    /* authenticated (or CLIENT INFO would be NOAUTH), SELECT, SETNAME */
    assert_non_null(strstr(r->str, " name=admin-test "));
    assert_non_null(strstr(r->str, " db=3 "));
    rlock_admin_reply_free(r);
    rlock_admin_close(a);
}

static void test_pipeline_gives_one_reply_per_command_in_order(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *a = open_conn(f);
    const char *multi[] = {"MULTI"}, *set[] = {"SET", "adm:k", "41"};
    const char *incr[] = {"INCR", "adm:k"}, *exec[] = {"EXEC"};
    const char *const *argv[4] = {multi, set, incr, exec};
    const int argc[4] = {1, 3, 2, 1};
    rlock_admin_reply *out[4];
    assert_int_equal(rlock_admin_pipeline(a, 4, argc, argv, out), RLOCK_OK);
    assert_string_equal(out[0]->str, "OK");
    assert_string_equal(out[1]->str, "QUEUED");
    assert_string_equal(out[2]->str, "QUEUED");
    assert_int_equal(out[3]->type, RLOCK_ADMIN_ARRAY);
    assert_int_equal(out[3]->elements, 2);
    assert_int_equal(out[3]->element[1]->integer, 42);
    for (int i = 0; i < 4; i++)
        rlock_admin_reply_free(out[i]);
    rlock_admin_close(a);
}

static void test_an_error_reply_is_a_reply_not_a_failure(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *a = open_conn(f);
    rlock_admin_reply *r = run(a, 1, "NOSUCHCOMMAND", NULL, NULL, NULL);
    assert_int_equal(r->type, RLOCK_ADMIN_ERROR);
    assert_non_null(strstr(r->str, "unknown command"));
    rlock_admin_reply_free(r);
    r = run(a, 1, "PING", NULL, NULL, NULL); /* still usable */
    assert_string_equal(r->str, "PONG");
    rlock_admin_reply_free(r);
    rlock_admin_close(a);
}

/* A command that timed out leaves the connection in step: its reply,
 * when it comes, is dropped, and the next command reads its own. */
static void test_a_command_after_a_timed_out_one_gets_its_own_reply(
    void **state)
{
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, PASSWORD), 0);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 300), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg), 0);
    rlock_config_free(cfg);
    rlock_admin_conn *a = NULL;
    assert_int_equal(rlock_admin_open(c, &a), RLOCK_OK);
    const char *late[] = {"ECHO", "too-late"};
    rlock_admin_reply *r = NULL;
    rt_redis_pause(&f->redis);
    int rc = rlock_admin_command(a, 2, late, &r);
    rt_redis_resume(&f->redis);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_null(r);
    assert_string_not_equal(rlock_admin_error(a), "");
    r = run(a, 2, "ECHO", "on-time", NULL, NULL);
    assert_string_equal(r->str, "on-time");
    rlock_admin_reply_free(r);
    rlock_admin_close(a);
    rlock_client_free(c);
}

static void test_bad_arguments_are_einval(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *a = NULL;
    rlock_admin_reply *r = NULL;
    const char *argv[1] = {"PING"};
    assert_int_equal(rlock_admin_open(NULL, &a), RLOCK_EINVAL);
    assert_null(a);
    a = open_conn(f);
    assert_int_equal(rlock_admin_open(f->client, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_command(NULL, 1, argv, &r), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_command(a, 0, argv, &r), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_command(a, 1, NULL, &r), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_command(a, 1, argv, NULL), RLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(rlock_admin_subscribe(a, 0, NULL, 0, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_admin_listen(a, NULL, NULL, NULL), RLOCK_EINVAL);
    rlock_admin_close(a);
}

/* ------------------------------------------------------------- subscriber */

typedef struct heard {
    int n;
    char pattern[2][64], channel[2][64], payload[2][64];
    int stop_after; /* 0: never */
} heard;

static int on_message(void *arg, const char *pattern, const char *channel,
                      const char *payload)
{
    heard *h = arg;
    if (h->n < 2) {
        snprintf(h->pattern[h->n], 64, "%s", pattern ? pattern : "(none)");
        snprintf(h->channel[h->n], 64, "%s", channel);
        snprintf(h->payload[h->n], 64, "%s", payload);
    }
    h->n++;
    return h->stop_after != 0 && h->n >= h->stop_after ? 7 : 0;
}

/* Listens until h has want messages: the callback stops the listening
 * then, as listen would otherwise wait for the next message. */
static void listen_for(rlock_admin_conn *sub, heard *h, int want)
{
    h->stop_after = want;
    while (h->n < want)
        assert_true(rlock_admin_listen(sub, NULL, on_message, h) >= 0);
}

static void test_subscriber_hands_each_message_to_the_callback(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *sub = open_conn(f), *pub = open_conn(f);
    const char *channels[] = {"adm:ch"}, *patterns[] = {"adm:p:*"};
    heard h = {0};
    assert_int_equal(rlock_admin_subscribe(sub, 1, channels, 1, patterns),
                     RLOCK_OK);
    rlock_admin_reply_free(run(pub, 3, "PUBLISH", "adm:ch", "one", NULL));
    rlock_admin_reply_free(run(pub, 3, "PUBLISH", "adm:p:x", "two", NULL));
    listen_for(sub, &h, 2);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.pattern[0], "(none)");
    assert_string_equal(h.channel[0], "adm:ch");
    assert_string_equal(h.payload[0], "one");
    assert_string_equal(h.pattern[1], "adm:p:*");
    assert_string_equal(h.channel[1], "adm:p:x");
    assert_string_equal(h.payload[1], "two");
    rlock_admin_close(pub);
    rlock_admin_close(sub);
}

static void test_listen_returns_the_callbacks_stop_value(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *sub = open_conn(f), *pub = open_conn(f);
    const char *channels[] = {"adm:stop"};
    heard h = {.stop_after = 1};
    assert_int_equal(rlock_admin_subscribe(sub, 1, channels, 0, NULL),
                     RLOCK_OK);
    rlock_admin_reply_free(run(pub, 3, "PUBLISH", "adm:stop", "a", NULL));
    rlock_admin_reply_free(run(pub, 3, "PUBLISH", "adm:stop", "b", NULL));
    int rc = 0;
    int64_t until = rt_now_ms() + 10000;
    while (rc == 0 && rt_now_ms() < until)
        rc = rlock_admin_listen(sub, NULL, on_message, &h);
    assert_int_equal(rc, 7);
    assert_int_equal(h.n, 1); /* "b" waits for the next call */
    listen_for(sub, &h, 2);
    assert_string_equal(h.payload[1], "b");
    rlock_admin_close(pub);
    rlock_admin_close(sub);
}

static void test_a_refused_subscribe_is_eserver_with_the_reason(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *a = open_conn(f), *sub = open_conn(f);
    const char *channels[] = {"adm:denied"};
    rlock_admin_reply_free(run(a, 4, "ACL", "SETUSER", "default",
                               "resetchannels"));
    int rc = rlock_admin_subscribe(sub, 1, channels, 0, NULL);
    rlock_admin_reply_free(run(a, 4, "ACL", "SETUSER", "default",
                               "allchannels"));
    assert_int_equal(rc, RLOCK_ESERVER);
    assert_non_null(strstr(rlock_admin_error(sub), "NOPERM"));
    rlock_admin_close(sub);
    rlock_admin_close(a);
}

static void test_listen_reports_a_killed_connection_as_econn(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *sub = open_conn(f), *killer = open_conn(f);
    const char *channels[] = {"adm:kill"};
    heard h = {0};
    rlock_admin_reply *id = run(sub, 2, "CLIENT", "ID", NULL, NULL);
    char text[32];
    snprintf(text, sizeof(text), "%lld", id->integer);
    rlock_admin_reply_free(id);
    assert_int_equal(rlock_admin_subscribe(sub, 1, channels, 0, NULL),
                     RLOCK_OK);
    rlock_admin_reply_free(run(killer, 4, "CLIENT", "KILL", "ID", text));
    int rc = 0;
    int64_t until = rt_now_ms() + 10000;
    while (rc == 0 && rt_now_ms() < until)
        rc = rlock_admin_listen(sub, NULL, on_message, &h);
    assert_int_equal(rc, RLOCK_ECONN);
    assert_int_equal(h.n, 0);
    rlock_admin_close(killer);
    rlock_admin_close(sub);
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static void *send_usr1_later(void *arg)
{
    rt_sleep_ms(200);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

static void test_listen_returns_when_a_let_in_signal_arrives(void **state)
{
    fixture *f = *state;
    rlock_admin_conn *sub = open_conn(f);
    const char *channels[] = {"adm:quiet"};
    heard h = {0};
    sigset_t usr1, wait_mask;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, &wait_mask);
    sigdelset(&wait_mask, SIGUSR1);
    assert_int_equal(rlock_admin_subscribe(sub, 1, channels, 0, NULL),
                     RLOCK_OK);
    pthread_t self = pthread_self(), t;
    assert_int_equal(pthread_create(&t, NULL, send_usr1_later, &self), 0);
    int64_t t0 = rt_now_ms();
    int rc = rlock_admin_listen(sub, &wait_mask, on_message, &h);
    int64_t waited = rt_now_ms() - t0;
    pthread_join(t, NULL);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
    assert_int_equal(rc, RLOCK_OK);
    assert_true(got_usr1);
    assert_int_equal(h.n, 0);
    assert_true(waited >= 150 && waited < 8000);
    rlock_admin_close(sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_wrap_the_lock_name_in_a_hash_tag),
        cmocka_unit_test(test_names_keep_a_name_that_has_a_brace),
        cmocka_unit_test(test_names_of_an_empty_or_missing_name_are_einval),
        cmocka_unit_test(test_server_text_leaves_out_the_credentials),
        cmocka_unit_test(test_server_text_of_a_sentinel_url),
        cmocka_unit_test(test_a_capital_sentinel_scheme_keeps_the_database),
        cmocka_unit_test(test_server_of_a_config_without_one_is_einval),
        cmocka_unit_test(test_url_beats_the_configs_password_and_database),
        cmocka_unit_test(test_url_without_a_database_keeps_the_configs),
        cmocka_unit_test(test_a_url_that_is_not_redis_is_einval),
        cmocka_unit_test(test_open_does_the_clients_handshake),
        cmocka_unit_test(test_pipeline_gives_one_reply_per_command_in_order),
        cmocka_unit_test(test_an_error_reply_is_a_reply_not_a_failure),
        cmocka_unit_test(
            test_a_command_after_a_timed_out_one_gets_its_own_reply),
        cmocka_unit_test(test_bad_arguments_are_einval),
        cmocka_unit_test(test_subscriber_hands_each_message_to_the_callback),
        cmocka_unit_test(test_listen_returns_the_callbacks_stop_value),
        cmocka_unit_test(test_a_refused_subscribe_is_eserver_with_the_reason),
        cmocka_unit_test(test_listen_reports_a_killed_connection_as_econn),
        cmocka_unit_test(test_listen_returns_when_a_let_in_signal_arrives),
    };
    rt_require_redis();
    return cmocka_run_group_tests_name("admin", tests, group_setup,
                                       group_teardown);
}
