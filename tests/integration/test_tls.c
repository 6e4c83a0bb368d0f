/*
 * test_tls.c: src/io/tls.c against real TLS redis-servers.
 *
 * Two servers share one certificate (signed by the fixture's CA, for
 * localhost and 127.0.0.1): one asks for no client certificate, the other
 * requires one signed by the same CA. Each test opens a plain non-blocking
 * socket, runs the handshake with poll(2) in between, sends PING as
 * hiredis formats it and reads the reply with hiredis's reader, so what is
 * tested is exactly what the transport will do with these functions.
 * The last tests connect the library itself (rediss://) to the same
 * servers: every connection of a client carries TLS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "lock_testing.h"
#include "api/api.h"
#include "io/io.h"
#include "io/tls.h"
#include "tls_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <hiredis/hiredis.h>

#define IO_BUDGET_MS 10000 /* generous: the machine may be loaded */

static rt_tls_files files;
static rt_redis server;        /* no client certificate asked for */
static rt_redis mutual_server; /* client certificate required */

/* One connection under test: the socket, its TLS and the last message. */
typedef struct conn {
    int fd;
    rlock__tls_ctx *ctx;
    rlock__tls_conn *tls;
    char err[256];
} conn;

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    if (rt_tls_make(&files) != 0)
        return -1;
    if (!rt_server_has_tls())
        return 0; /* the tests that need a server skip */
    if (rt_redis_start_tls(&server, rt_tls_server_args(&files, 0), NULL) != 0)
        return -1;
    /* the second server needs its own argument array: the fixture's is
     * rewritten by each rt_tls_server_args() call */
    static const char *mutual_args[12];
    memcpy(mutual_args, rt_tls_server_args(&files, 1), sizeof(mutual_args));
    return rt_redis_start_tls(&mutual_server, mutual_args, NULL);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_stop(&server);
    rt_redis_stop(&mutual_server);
    rt_tls_remove(&files);
    return 0;
}

/* Settings trusting the fixture's CA, verifying fully. */
static rlock__tls_settings trusting_ca(void)
{
    rlock__tls_settings s = {0};
    s.ca_file = files.ca_crt;
    s.verify = RLOCK__TLS_VERIFY_FULL;
    return s;
}

/* Waits until fd is ready for what want (RLOCK__IO_WANT_*) asks; returns 0,
 * or -1 once deadline_ms has passed. */
static int wait_for(int fd, long want, int64_t deadline_ms)
{
    struct pollfd p = {.fd = fd};
    p.events = want == RLOCK__IO_WANT_WRITE ? POLLOUT : POLLIN;
    for (;;) {
        int64_t left = deadline_ms - rt_now_ms();
        if (left <= 0)
            return -1;
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* Connects to 127.0.0.1:port and runs the handshake with s, checking the
 * certificate against host. Returns the handshake's result: 0, or its
 * negative code with c->err set. */
static int tls_open(conn *c, const rlock__tls_settings *s, int port,
                    const char *host)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int64_t deadline = rt_now_ms() + IO_BUDGET_MS;
    int rc;

    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
    assert_true(rc == 0 || errno == EINPROGRESS);
    assert_int_equal(wait_for(c->fd, RLOCK__IO_WANT_WRITE, deadline), 0);
    assert_int_equal(rlock__tls_ctx_new(s, &c->ctx, c->err, sizeof(c->err)),
                     0);
    assert_int_equal(rlock__tls_conn_new(c->ctx, c->fd, host, &c->tls), 0);
    for (;;) {
        rc = rlock__tls_handshake(c->tls, c->err, sizeof(c->err));
        if (rc <= 0)
            return rc;
        assert_int_equal(wait_for(c->fd, rc, deadline), 0);
    }
}

static void tls_close(conn *c)
{
    rlock__tls_conn_free(c->tls);
    rlock__tls_ctx_free(c->ctx);
    if (c->fd >= 0)
        close(c->fd);
}

/* Sends PING and reads the reply. Returns 0 when it is PONG, else the
 * negative code of the read or write (c->err holds its message). */
static int ping(conn *c)
{
    int64_t deadline = rt_now_ms() + IO_BUDGET_MS;
    char *cmd = NULL;
    int len = redisFormatCommand(&cmd, "PING");
    size_t sent = 0, n;
    redisReader *reader = redisReaderCreate();
    void *reply = NULL;
    int rc, result;

    assert_true(len > 0);
    assert_non_null(reader);
    while (sent < (size_t)len) {
        rc = rlock__tls_write(c->tls, cmd + sent, (size_t)len - sent, &n);
        if (rc < 0) {
            result = rc;
            goto out_error;
        }
        if (rc > 0)
            assert_int_equal(wait_for(c->fd, rc, deadline), 0);
        sent += n;
    }
    while (reply == NULL) {
        char buf[512];
        rc = rlock__tls_read(c->tls, buf, sizeof(buf), &n);
        if (rc < 0) {
            result = rc;
            goto out_error;
        }
        if (rc > 0) {
            assert_int_equal(wait_for(c->fd, rc, deadline), 0);
            continue;
        }
        if (n == 0) {
            result = RLOCK_ECONN;
            goto out_error;
        }
        assert_int_equal(redisReaderFeed(reader, buf, n), REDIS_OK);
        assert_int_equal(redisReaderGetReply(reader, &reply), REDIS_OK);
    }
    redisReply *r = reply;
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(reply);
    result = 0;
    goto out;
out_error:
    snprintf(c->err, sizeof(c->err), "%s", rlock__tls_conn_error(c->tls));
out:
    redisReaderFree(reader);
    redisFreeCommand(cmd);
    return result;
}

/* Asserts that text starts with prefix, printing text if not. */
static void assert_starts_with(const char *text, const char *prefix)
{
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("expected a message starting \"%s\", got \"%s\"", prefix,
                 text);
}

/* ------------------------------------------------------------------------ */
/* Verified connections                                                     */
/* ------------------------------------------------------------------------ */

static void test_server_verified_by_ca_file_answers_ping(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"), 0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

static void test_host_name_is_checked_against_the_dns_names(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "localhost"), 0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

static void test_server_verified_by_ca_directory_answers_ping(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = {.ca_dir = files.ca_dir};
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"), 0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

static void test_mutual_tls_with_client_certificate_answers_ping(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    s.cert_file = files.client_crt;
    s.key_file = files.client_key;
    conn c;
    assert_int_equal(tls_open(&c, &s, mutual_server.tls_port, "127.0.0.1"),
                     0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

/* Redisson's sslKeystore maps to one PEM file holding both the certificate
 * and its key. */
static void test_mutual_tls_with_certificate_and_key_in_one_file(void **st)
{
    RT_SKIP_WITHOUT_TLS();
    (void)st;
    rlock__tls_settings s = trusting_ca();
    s.cert_file = files.client_pem;
    s.key_file = files.client_pem;
    conn c;
    assert_int_equal(tls_open(&c, &s, mutual_server.tls_port, "127.0.0.1"),
                     0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

/* ------------------------------------------------------------------------ */
/* Refusals, each with its reason                                           */
/* ------------------------------------------------------------------------ */

/* Reads until something other than a WANT comes; returns it (0 with no
 * bytes read is the end of the stream), with c->err set on failure. */
static int read_once(conn *c)
{
    int64_t deadline = rt_now_ms() + IO_BUDGET_MS;
    char buf[512];
    size_t n;
    int rc;
    while ((rc = rlock__tls_read(c->tls, buf, sizeof(buf), &n)) > 0)
        assert_int_equal(wait_for(c->fd, rc, deadline), 0);
    snprintf(c->err, sizeof(c->err), "%s", rlock__tls_conn_error(c->tls));
    return rc;
}

/* With TLS 1.3 the server checks the client's certificate after the client
 * has finished its side of the handshake, so the refusal may come with the
 * first read instead. The test reads before writing anything: a write that
 * meets the server's close makes it reset the connection, and the reset
 * may then arrive before its alert is read (RLOCK_ECONN, "Connection reset
 * by peer"), which is all a real client can learn then. */
static void test_mutual_tls_without_client_certificate_is_refused(void **st)
{
    RT_SKIP_WITHOUT_TLS();
    (void)st;
    rlock__tls_settings s = trusting_ca();
    conn c;
    int rc = tls_open(&c, &s, mutual_server.tls_port, "127.0.0.1");
    if (rc == 0)
        rc = read_once(&c);
    assert_int_equal(rc, RLOCK_ETLS);
    assert_starts_with(c.err, "client certificate required: ");
    tls_close(&c);
}

static void test_untrusted_ca_fails_naming_the_wrong_ca(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    s.ca_file = files.other_ca_crt;
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"),
                     RLOCK_ETLS);
    assert_starts_with(c.err, "wrong CA: ");
    tls_close(&c);
}

static void test_other_server_name_fails_as_hostname_mismatch(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    s.server_name = "redis.example.com";
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"),
                     RLOCK_ETLS);
    assert_starts_with(c.err, "hostname mismatch: ");
    assert_non_null(strstr(c.err, "redis.example.com"));
    tls_close(&c);
}

/* An IP literal is checked against the certificate's IP addresses, never
 * its DNS names. */
static void test_other_ip_address_fails_as_hostname_mismatch(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    s.server_name = "127.0.0.2";
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"),
                     RLOCK_ETLS);
    assert_starts_with(c.err, "hostname mismatch: ");
    tls_close(&c);
}

/* ------------------------------------------------------------------------ */
/* Weaker verification, when asked for                                      */
/* ------------------------------------------------------------------------ */

static void test_verify_none_accepts_an_untrusted_server(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = {.ca_file = files.other_ca_crt,
                             .verify = RLOCK__TLS_VERIFY_NONE};
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"), 0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

static void test_verify_ca_only_accepts_another_name(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = trusting_ca();
    s.verify = RLOCK__TLS_VERIFY_CA_ONLY;
    s.server_name = "redis.example.com";
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"), 0);
    assert_int_equal(ping(&c), 0);
    tls_close(&c);
}

static void test_verify_ca_only_still_refuses_an_untrusted_ca(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock__tls_settings s = {.ca_file = files.other_ca_crt,
                             .verify = RLOCK__TLS_VERIFY_CA_ONLY};
    conn c;
    assert_int_equal(tls_open(&c, &s, server.tls_port, "127.0.0.1"),
                     RLOCK_ETLS);
    assert_starts_with(c.err, "wrong CA: ");
    tls_close(&c);
}

/* ------------------------------------------------------------------------ */
/* Settings that cannot make a context                                      */
/* ------------------------------------------------------------------------ */

static int ctx_error(const rlock__tls_settings *s, char *err, size_t len)
{
    rlock__tls_ctx *ctx = (rlock__tls_ctx *)&ctx; /* must become NULL */
    int rc = rlock__tls_ctx_new(s, &ctx, err, len);
    assert_null(ctx);
    return rc;
}

static void test_missing_ca_file_is_named_unreadable(void **state)
{
    (void)state;
    char path[RT_TLS_PATH + 16], err[256];
    snprintf(path, sizeof(path), "%s/absent.crt", files.dir);
    rlock__tls_settings s = {.ca_file = path};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_ETLS);
    assert_starts_with(err, "file unreadable: CA file ");
    assert_non_null(strstr(err, path));
}

static void test_missing_ca_directory_is_named_unreadable(void **state)
{
    (void)state;
    char path[RT_TLS_PATH + 16], err[256];
    snprintf(path, sizeof(path), "%s/absent", files.dir);
    rlock__tls_settings s = {.ca_dir = path};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_ETLS);
    assert_starts_with(err, "file unreadable: CA directory ");
}

static void test_ca_file_without_certificate_is_refused(void **state)
{
    (void)state;
    char err[256];
    rlock__tls_settings s = {.ca_file = files.client_key};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_ETLS);
    assert_starts_with(err, "bad certificate or key: CA file ");
}

static void test_key_of_another_certificate_is_refused(void **state)
{
    (void)state;
    char err[256];
    rlock__tls_settings s = {.ca_file = files.ca_crt,
                             .cert_file = files.client_crt,
                             .key_file = files.server_key};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_ETLS);
    assert_starts_with(err, "bad certificate or key: ");
    assert_non_null(strstr(err, "does not match"));
}

/* rlock takes no key password: an encrypted key is refused, naming what
 * it takes. (tls.c also keeps OpenSSL from asking a terminal for the pass
 * phrase; a test has no terminal, so that part is not checked here.) */
static void test_encrypted_key_is_refused_as_not_unencrypted_pem(void **state)
{
    (void)state;
    char err[256];
    rlock__tls_settings s = {.ca_file = files.ca_crt,
                             .cert_file = files.client_crt,
                             .key_file = files.client_key_encrypted};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_ETLS);
    assert_starts_with(err, "bad certificate or key: ");
    assert_non_null(strstr(err, "unencrypted PEM key"));
}

static void test_certificate_without_key_is_invalid(void **state)
{
    (void)state;
    char err[256];
    rlock__tls_settings s = {.cert_file = files.client_crt};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_EINVAL);
    s.cert_file = NULL;
    s.key_file = files.client_key;
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_EINVAL);
}

static void test_unknown_verify_mode_is_invalid(void **state)
{
    (void)state;
    char err[256];
    rlock__tls_settings s = {.verify = 7};
    assert_int_equal(ctx_error(&s, err, sizeof(err)), RLOCK_EINVAL);
}

/* ------------------------------------------------------------------------ */
/* The library's connections over TLS (rediss://), end to end                */
/* ------------------------------------------------------------------------ */

/* Connects a client to the TLS port of r (by the name "localhost", which
 * the server's certificate holds) with cfg's TLS settings; returns what
 * connecting returned. */
static int connect_tls(rt_redis *r, rlock_config *cfg, rlock_client **c)
{
    char uri[64];
    snprintf(uri, sizeof(uri), "rediss://localhost:%d", r->tls_port);
    return rlock_client_connect_with(c, uri, cfg);
}

static rlock_config *config_trusting(const char *ca_file)
{
    rlock_config *cfg = NULL;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, ca_file), 0);
    return cfg;
}

typedef struct waiter {
    rlock *l;
    int rc;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = rlock_trylock(w->l, 10000, RLOCK_LEASE_WATCHDOG);
    if (w->rc == RLOCK_OK)
        rlock_unlock(w->l);
    return NULL;
}

/* A client verifying the server by the fixture's CA locks and unlocks over
 * TLS on each of its connections: a blocking round trip (the caller's own
 * connection), a waiter woken by the unlock message (the subscriber) and
 * an async lock and unlock (the I/O thread's command connections); the
 * plain port shows what the lock wrote. */
static void test_client_locks_over_tls_verified_by_its_ca(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock_config *cfg = config_trusting(files.ca_crt);
    rlock_client *c = NULL;
    assert_int_equal(connect_tls(&server, cfg, &c), 0);
    rlock_config_free(cfg);
    rlock *l = NULL;
    assert_int_equal(rlock_get(c, "tls:lock", &l), 0);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&server, "HLEN tls:lock"), 1);
    waiter w = {.l = l, .rc = 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    rt_sleep_ms(200); /* the waiter subscribes and waits */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(w.rc, RLOCK_OK);

    uint64_t owner = rlock_owner_new();
    lt_completion locked = {0}, unlocked = {0};
    assert_int_equal(
        rlock_lock_async(l, owner, 5000, 30000, lt_on_done, &locked), 0);
    assert_int_equal(lt_await_completion(&locked, IO_BUDGET_MS), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&server, "EXISTS tls:lock"), 1);
    assert_int_equal(rlock_unlock_async(l, owner, lt_on_done, &unlocked), 0);
    assert_int_equal(lt_await_completion(&unlocked, IO_BUDGET_MS), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&server, "EXISTS tls:lock"), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* A server that requires client certificates takes the client's. */
static void test_client_with_a_certificate_locks_over_mutual_tls(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock_config *cfg = config_trusting(files.ca_crt);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, files.client_crt,
                                                      files.client_key),
                     0);
    rlock_client *c = NULL;
    assert_int_equal(connect_tls(&mutual_server, cfg, &c), 0);
    rlock_config_free(cfg);
    rlock *l = NULL;
    assert_int_equal(rlock_get(c, "tls:mutual", &l), 0);
    assert_int_equal(rlock_trylock(l, 0, 30000), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&mutual_server, "EXISTS tls:mutual"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&mutual_server, "EXISTS tls:mutual"), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* Trusting another CA than the server's: connecting fails with RLOCK_ETLS
 * and makes no client. */
static void test_client_trusting_another_ca_fails_to_connect_with_etls(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock_config *cfg = config_trusting(files.other_ca_crt);
    rlock_client *c = (rlock_client *)&c; /* must become NULL */
    assert_int_equal(connect_tls(&server, cfg, &c), RLOCK_ETLS);
    assert_null(c);
    rlock_config_free(cfg);
}

/* A server that requires a client certificate refuses a client without
 * one: RLOCK_ETLS at connect. */
static void test_client_without_a_required_certificate_fails_with_etls(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    rlock_config *cfg = config_trusting(files.ca_crt);
    rlock_client *c = (rlock_client *)&c;
    assert_int_equal(connect_tls(&mutual_server, cfg, &c), RLOCK_ETLS);
    assert_null(c);
    rlock_config_free(cfg);
}

/* An unreadable CA file is found when the client is made: RLOCK_ETLS, and
 * the server is not even asked. */
static void test_client_with_an_unreadable_ca_file_fails_with_etls(
    void **state)
{
    RT_SKIP_WITHOUT_TLS();
    (void)state;
    char missing[RT_TLS_PATH + 16];
    snprintf(missing, sizeof(missing), "%s/missing.crt", files.dir);
    rlock_config *cfg = config_trusting(missing);
    rlock_client *c = (rlock_client *)&c;
    long long before = rt_connections_received(&server);
    assert_int_equal(connect_tls(&server, cfg, &c), RLOCK_ETLS);
    assert_null(c);
    rlock_config_free(cfg);
    /* one more: the INFO of rt_connections_received() itself */
    assert_int_equal(rt_connections_received(&server), before + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_verified_by_ca_file_answers_ping),
        cmocka_unit_test(test_host_name_is_checked_against_the_dns_names),
        cmocka_unit_test(test_server_verified_by_ca_directory_answers_ping),
        cmocka_unit_test(test_mutual_tls_with_client_certificate_answers_ping),
        cmocka_unit_test(test_mutual_tls_with_certificate_and_key_in_one_file),
        cmocka_unit_test(test_mutual_tls_without_client_certificate_is_refused),
        cmocka_unit_test(test_untrusted_ca_fails_naming_the_wrong_ca),
        cmocka_unit_test(test_other_server_name_fails_as_hostname_mismatch),
        cmocka_unit_test(test_other_ip_address_fails_as_hostname_mismatch),
        cmocka_unit_test(test_verify_none_accepts_an_untrusted_server),
        cmocka_unit_test(test_verify_ca_only_accepts_another_name),
        cmocka_unit_test(test_verify_ca_only_still_refuses_an_untrusted_ca),
        cmocka_unit_test(test_missing_ca_file_is_named_unreadable),
        cmocka_unit_test(test_missing_ca_directory_is_named_unreadable),
        cmocka_unit_test(test_ca_file_without_certificate_is_refused),
        cmocka_unit_test(test_key_of_another_certificate_is_refused),
        cmocka_unit_test(test_encrypted_key_is_refused_as_not_unencrypted_pem),
        cmocka_unit_test(test_certificate_without_key_is_invalid),
        cmocka_unit_test(test_unknown_verify_mode_is_invalid),
        cmocka_unit_test(test_client_locks_over_tls_verified_by_its_ca),
        cmocka_unit_test(test_client_with_a_certificate_locks_over_mutual_tls),
        cmocka_unit_test(
            test_client_trusting_another_ca_fails_to_connect_with_etls),
        cmocka_unit_test(
            test_client_without_a_required_certificate_fails_with_etls),
        cmocka_unit_test(
            test_client_with_an_unreadable_ca_file_fails_with_etls),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
