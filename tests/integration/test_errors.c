/*
 * test_errors.c: every way a call can fail, against real servers.
 *
 * Bad arguments and URIs, unreachable, password-protected, paused and
 * stopped servers, unlocks by non-owners, keys that are not locks, and the
 * error strings. Calls that could hang on a broken library are run on a
 * helper thread with a deadline, so a hang fails the test instead of the
 * CTest timeout.
 *
 * The password-protected server is started plainly and then given its
 * password with CONFIG SET: the harness reports a server up only once PING
 * answers without AUTH.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define PASSWORD "secret"

typedef struct fixture {
    rt_redis redis;
    rlock_client *client;
    rt_redis scratch; /* per-test server for pause/stop tests */
} fixture;

#define LT_SUITE "errors"

/* ------------------------------------------------------------- helpers */

static rlock_client *connect_with_timeout(const char *url, int64_t cmd_ms)
{
    return lt_connect(url, rlock_config_set_command_timeout, cmd_ms);
}

/* A lock call on a helper thread, so that a hang can be detected. */
typedef struct async_call {
    pthread_t thread;
    rlock *l;
    int64_t wait_ms; /* -2: rlock_lock(), else rlock_trylock(wait, lease) */
    int64_t lease_ms;
    int rc;
    int64_t elapsed_ms;
    atomic_int done;
} async_call;

static void *async_main(void *p)
{
    async_call *a = p;
    int64_t t0 = rt_now_ms();

    a->rc = a->wait_ms == -2 ? rlock_lock(a->l)
                             : rlock_trylock(a->l, a->wait_ms, a->lease_ms);
    a->elapsed_ms = rt_now_ms() - t0;
    atomic_store(&a->done, 1);
    return NULL;
}

static void async_start(async_call *a, rlock *l, int64_t wait_ms,
                        int64_t lease_ms)
{
    memset(a, 0, sizeof(*a));
    a->l = l;
    a->wait_ms = wait_ms;
    a->lease_ms = lease_ms;
    atomic_init(&a->done, 0);
    assert_int_equal(pthread_create(&a->thread, NULL, async_main, a), 0);
}

/* Waits up to timeout_ms for the call; returns 1 if it finished. */
static int async_wait(async_call *a, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (!atomic_load(&a->done) && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    return atomic_load(&a->done);
}

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || lt_start(&f->redis, &f->client, NULL) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;

    lt_stop(&f->redis, f->client);
    free(f);
    return 0;
}

static int scratch_setup(void **state)
{
    fixture *f = *state;

    return rt_redis_start(&f->scratch);
}

static int scratch_teardown(void **state)
{
    fixture *f = *state;

    rt_redis_stop(&f->scratch); /* resumes it first if it is paused */
    return 0;
}

/* Starts a server and sets requirepass on it. */
static int auth_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    char *ok;

    if (f == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    ok = rt_cmd_str(&f->redis, "CONFIG SET requirepass %s", PASSWORD);
    if (ok == NULL || strcmp(ok, "OK") != 0) {
        free(ok);
        rt_redis_stop(&f->redis);
        free(f);
        return -1;
    }
    free(ok);
    *state = f;
    return 0;
}

/* ------------------------------------------------------- bad arguments */

static void test_null_pointers_are_einval(void **state)
{
    fixture *f = *state;
    rlock_client *c = (rlock_client *)&c; /* poison: must become NULL */
    rlock *l = (rlock *)&l;

    assert_int_equal(rlock_get(NULL, "x", &l), RLOCK_EINVAL);
    assert_null(l);
    l = (rlock *)&l;
    assert_int_equal(rlock_get(f->client, NULL, &l), RLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(rlock_get(f->client, "x", NULL), RLOCK_EINVAL);

    assert_int_equal(rlock_lock(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_trylock(NULL, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_unlock(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_force_unlock(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_is_locked(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_is_held_by_me(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_hold_count(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_remaining_ttl(NULL), RLOCK_EINVAL);
    assert_null(rlock_name(NULL));
    assert_null(rlock_client_id(NULL));

    assert_int_equal(rlock_client_connect(NULL, f->redis.url), RLOCK_EINVAL);
    assert_int_equal(rlock_client_connect(&c, NULL), RLOCK_EINVAL);
    assert_null(c);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_with(&c, NULL, NULL), RLOCK_EINVAL);
    assert_null(c);
    assert_int_equal(rlock_client_connect_with(NULL, f->redis.url, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_new(NULL), RLOCK_EINVAL);

    /* freeing NULL is a no-op */
    rlock_free(NULL);
    rlock_client_free(NULL);
    rlock_config_free(NULL);
}

static void test_empty_name_is_einval(void **state)
{
    fixture *f = *state;
    rlock *l = (rlock *)&l;

    assert_int_equal(rlock_get(f->client, "", &l), RLOCK_EINVAL);
    assert_null(l);
}

static void test_name_longer_than_max_is_einval(void **state)
{
    fixture *f = *state;
    char *name = malloc(RLOCK_NAME_MAX + 2);
    rlock *l = (rlock *)&l;

    assert_non_null(name);
    memset(name, 'n', RLOCK_NAME_MAX + 1);
    name[RLOCK_NAME_MAX + 1] = '\0';
    assert_int_equal(rlock_get(f->client, name, &l), RLOCK_EINVAL);
    assert_null(l);
    free(name);
}

static void test_name_of_max_length_works(void **state)
{
    fixture *f = *state;
    char *name = malloc(RLOCK_NAME_MAX + 1);
    rlock *l;

    assert_non_null(name);
    memset(name, 'm', RLOCK_NAME_MAX);
    name[RLOCK_NAME_MAX] = '\0';
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
    free(name);
}

static void test_wait_below_minus_one_is_einval(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, -2, RLOCK_LEASE_WATCHDOG), RLOCK_EINVAL);
    assert_int_equal(rlock_trylock(l, INT64_MIN, 1000), RLOCK_EINVAL);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    rlock_free(l);
}

static void test_bad_lease_is_einval(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_trylock(l, 0, -2), RLOCK_EINVAL);
    assert_int_equal(rlock_trylock(l, 100, INT64_MIN), RLOCK_EINVAL);
    assert_int_equal(rlock_trylock(l, RLOCK_WAIT_FOREVER, 0), RLOCK_EINVAL);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    rlock_free(l);
}

static void test_config_values_out_of_range_are_einval(void **state)
{
    rlock_config *cfg = NULL;

    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, 29), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, 30), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, INT64_C(1) << 31),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connect_timeout(cfg, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 101), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 0), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 0), RLOCK_OK);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, 65), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, 64), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(NULL, 1000),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_command_timeout(NULL, 1000),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connect_timeout(NULL, 1000),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(NULL, 1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_interval(NULL, 1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_recheck_interval(NULL, 1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(NULL, 1), RLOCK_EINVAL);
    rlock_config_free(cfg);
}

/* ---------------------------------------------------------------- URIs */

static void test_bad_uris_are_einval(void **state)
{
    static const char *const bad[] = {
        "",
        "http://x",
        "redis://",
        "redis://host:0",
        "redis://host:99999",
        "redis://h:p",
        "redis://user@host",
        "unix://",
        "redis://host:",
        "redis://:@host",
        "redis://host/db",
        "redis://ho st",
        "redis://[::1",
        "unix://relative/path",
        "127.0.0.1:6379",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        rlock_client *c = (rlock_client *)&c;
        int rc = rlock_client_connect(&c, bad[i]);

        if (rc != RLOCK_EINVAL)
            fail_msg("\"%s\": %s, expected RLOCK_EINVAL", bad[i],
                     rlock_err_name(rc));
        assert_null(c);
        c = (rlock_client *)&c;
        assert_int_equal(rlock_client_connect_with(&c, bad[i], NULL),
                         RLOCK_EINVAL);
        assert_null(c);
    }
}

static void test_connect_to_closed_port_is_econn(void **state)
{
    char url[64];
    rlock_client *c = (rlock_client *)&c;
    int64_t t0;

    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", rt_free_port());
    t0 = rt_now_ms();
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_ECONN);
    assert_null(c);
    assert_true(rt_now_ms() - t0 < 3000);
}

/* A TCP server that answers with something that is not RESP. */
static void *not_redis_main(void *p)
{
    int lfd = *(int *)p;
    int fd = accept(lfd, NULL, NULL);

    if (fd >= 0) {
        char buf[256];
        const char *junk = "HTTP/1.1 400 Bad Request\r\n\r\n";

        (void)!read(fd, buf, sizeof(buf));
        (void)!write(fd, junk, strlen(junk));
        rt_sleep_ms(200);
        close(fd);
    }
    return NULL;
}

static void test_connect_to_non_redis_server_fails(void **state)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    rlock_client *c = (rlock_client *)&c;
    pthread_t t;
    char url[64];
    int lfd, rc;

    (void)state;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(pthread_create(&t, NULL, not_redis_main, &lfd), 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ntohs(sa.sin_port));
    rc = rlock_client_connect(&c, url);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(lfd);
    assert_null(c);
    assert_int_equal(rc, RLOCK_EPROTO);
}

/* ------------------------------------------------------------ ownership */

static void test_unlock_of_never_locked_lock_is_enotowner(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_more_unlocks_than_locks_is_enotowner(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    /* and it can be taken again normally */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

typedef struct unlock_arg {
    rlock *l;
    int rc;
} unlock_arg;

static void *unlock_thread(void *p)
{
    unlock_arg *a = p;

    a->rc = rlock_unlock(a->l);
    return NULL;
}

static void test_unlock_from_other_thread_is_enotowner(void **state)
{
    fixture *f = *state;
    char name[128], field[128], *before, *after;
    unlock_arg a = {0};
    pthread_t t;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    before = lt_hash_dump(&f->redis, name);
    a.l = l;
    assert_int_equal(pthread_create(&t, NULL, unlock_thread, &a), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(a.rc, RLOCK_ENOTOWNER);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) <= 10000);
    assert_int_equal(rlock_hold_count(l), 1);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ----------------------------------------------------- not a lock hash */

static void test_lock_on_string_key_fails_without_hanging(void **state)
{
    fixture *f = *state;
    char name[128], *v;
    async_call a;
    rlock *l;

    LT_TEST_NAME(name);
    v = rt_cmd_str(&f->redis, "SET %s %s", name, "x");
    assert_non_null(v);
    free(v);
    l = lt_get_lock(f->client, name);
    async_start(&a, l, -2, RLOCK_LEASE_WATCHDOG);
    if (!async_wait(&a, 10000)) {
        /* hung: free the thread, then fail */
        rt_cmd_int(&f->redis, "DEL %s", name);
        pthread_join(a.thread, NULL);
        fail_msg("rlock_lock on a string key did not return in 10 s");
    }
    assert_int_equal(pthread_join(a.thread, NULL), 0);
    assert_int_equal(a.rc, RLOCK_ESERVER);
    v = rt_cmd_str(&f->redis, "GET %s", name);
    assert_non_null(v);
    assert_string_equal(v, "x");
    free(v);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_trylock_on_string_key_fails_at_once(void **state)
{
    fixture *f = *state;
    char name[128], *v;
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    v = rt_cmd_str(&f->redis, "SET %s %s", name, "x");
    assert_non_null(v);
    free(v);
    l = lt_get_lock(f->client, name);
    t0 = rt_now_ms();
    assert_int_equal(rlock_trylock(l, 3000, 5000), RLOCK_ESERVER);
    assert_true(rt_now_ms() - t0 < 2000);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_ESERVER);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* Overwritten, the lock is gone as surely as if it had been deleted; an
 * RLOCK_ESERVER would say the hold is kept (a refused unlock). */
static void test_unlock_after_key_became_string_is_lost(void **state)
{
    fixture *f = *state;
    char name[128], *v;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    v = rt_cmd_str(&f->redis, "SET %s %s", name, "x");
    assert_non_null(v);
    free(v);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    v = rt_cmd_str(&f->redis, "GET %s", name);
    assert_non_null(v);
    assert_string_equal(v, "x");
    free(v);
    /* the hold is forgotten */
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* ---------------------------------------------------------- odd names */

static void check_round_trip(fixture *f, const char *name)
{
    char field[128];
    size_t n = strlen(name);
    rlock *l = lt_get_lock(f->client, name);
    redisReply *rep;

    lt_owner_field(field, sizeof(field), f->client);
    assert_string_equal(rlock_name(l), name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* the key is the name, byte for byte */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %b", name, n), 1);
    rep = rt_cmd(&f->redis, "HGETALL %b", name, n);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, field);
    assert_string_equal(rep->element[1]->str, "1");
    freeReplyObject(rep);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %b", name, n), 0);
    rlock_free(l);
}

static void test_names_with_spaces_newlines_and_high_bytes_work(void **state)
{
    fixture *f = *state;
    static const char *const names[] = {
        "errors:with space",
        "errors:new\nline\r\n",
        "errors:\xc3\xa9t\xc3\xa9 \xff\x80\xfe",
        "errors:quote\"'\\ %s %d",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        check_round_trip(f, names[i]);
    /* no latch is left behind; the unlock latch is deleted right after the
     * unlock's reply, without waiting, so give that DEL a moment */
    int64_t deadline = rt_now_ms() + 3000;
    long long latches;
    for (;;) {
        redisReply *rep = rt_cmd(&f->redis, "KEYS redisson_unlock_latch:*");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        latches = (long long)rep->elements;
        freeReplyObject(rep);
        if (latches == 0 || rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(10);
    }
    assert_int_equal(latches, 0);
}

static void test_unusual_name_unlock_publishes_on_its_channel(void **state)
{
    fixture *f = *state;
    const char *name = "errors:sp ace\xc3\xa9";
    rt_sub *s = rt_sub_start(&f->redis,
                             "redisson_lock__channel:{errors:sp ace\xc3\xa9}");
    rlock *l = lt_get_lock(f->client, name);

    assert_non_null(s);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_sub_wait(s, 1, 5000), 1);
    assert_string_equal(rt_sub_message(s, 0), "0");
    rt_sub_stop(s);
    rlock_free(l);
}

/* ------------------------------------------------ paused / stopped Redis */

static void test_trylock_against_paused_server_keeps_budget(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c = connect_with_timeout(f->scratch.url, 500);
    async_call a;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    /* warm the connections up first */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_pause(&f->scratch);
    async_start(&a, l, 1500, RLOCK_LEASE_WATCHDOG);
    if (!async_wait(&a, 1500 + 500 + 2000)) {
        rt_redis_resume(&f->scratch);
        pthread_join(a.thread, NULL);
        fail_msg("trylock(1500) on a paused server did not return in 4 s");
    }
    rt_redis_resume(&f->scratch);
    assert_int_equal(pthread_join(a.thread, NULL), 0);
    print_message("returned %s after %lld ms\n", rlock_err_name(a.rc),
                  (long long)a.elapsed_ms);
    assert_true(a.rc == RLOCK_ETIMEDOUT || a.rc == RLOCK_ECONN);
    assert_true(a.elapsed_ms < 1500 + 500 + 2000);
    assert_int_equal(rlock_hold_count(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_lock_against_paused_server_times_out(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c = connect_with_timeout(f->scratch.url, 500);
    async_call a;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    rt_redis_pause(&f->scratch);
    async_start(&a, l, -2, RLOCK_LEASE_WATCHDOG);
    if (!async_wait(&a, 500 + 2000)) {
        rt_redis_resume(&f->scratch);
        pthread_join(a.thread, NULL);
        fail_msg("rlock_lock on a paused server did not return in 2.5 s");
    }
    rt_redis_resume(&f->scratch);
    assert_int_equal(pthread_join(a.thread, NULL), 0);
    assert_true(a.rc == RLOCK_ETIMEDOUT || a.rc == RLOCK_ECONN);
    rlock_free(l);
    rlock_client_free(c);
}

/* An acquire that reached Redis after its caller gave up must not leave a
 * lock nobody knows it holds: once the server resumes, the key goes. */
static void test_acquire_abandoned_during_pause_is_given_back(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c = connect_with_timeout(f->scratch.url, 300);
    int64_t deadline;
    long long exists;
    rlock *l;
    int rc;

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_pause(&f->scratch);
    rc = rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG);
    rt_redis_resume(&f->scratch);
    assert_true(rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN);
    deadline = rt_now_ms() + 3000;
    while ((exists = rt_cmd_int(&f->scratch, "EXISTS %s", name)) != 0 &&
           rt_now_ms() < deadline)
        rt_sleep_ms(20);
    assert_int_equal(exists, 0);
    /* and the client works again */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

/* A refused connection is retried (retry_attempts times, retry_interval
 * apart) and then reported; with a 100 ms interval and a 5 s command
 * timeout, "promptly" means well under the command timeout. */
static void test_trylock_against_stopped_server_fails_promptly(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    async_call a;
    rlock *l;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 5000), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 100), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 3), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->scratch.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_stop(&f->scratch);

    async_start(&a, l, 2000, RLOCK_LEASE_WATCHDOG);
    if (!async_wait(&a, 10000)) {
        fail_msg("trylock on a stopped server did not return in 10 s");
    }
    assert_int_equal(pthread_join(a.thread, NULL), 0);
    print_message("trylock: %s after %lld ms\n", rlock_err_name(a.rc),
                  (long long)a.elapsed_ms);
    assert_int_equal(a.rc, RLOCK_ECONN);
    assert_true(a.elapsed_ms < 2000);

    async_start(&a, l, -2, RLOCK_LEASE_WATCHDOG);
    if (!async_wait(&a, 10000)) {
        fail_msg("rlock_lock on a stopped server did not return in 10 s");
    }
    assert_int_equal(pthread_join(a.thread, NULL), 0);
    print_message("lock: %s after %lld ms\n", rlock_err_name(a.rc),
                  (long long)a.elapsed_ms);
    assert_int_equal(a.rc, RLOCK_ECONN);
    assert_true(a.elapsed_ms < 2000);
    assert_int_equal(rlock_hold_count(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* Redis drops every command connection of the client while it holds a
 * lock: the unlock still goes through (reconnecting, retrying if needed). */
static void test_unlock_after_connections_killed_succeeds(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c = NULL;
    rlock *l;

    LT_TEST_NAME(name);
    c = lt_connect(f->scratch.url, rlock_config_set_retry_interval, 100);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_true(rt_cmd_int(&f->scratch, "CLIENT KILL TYPE normal") >= 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->scratch, "EXISTS %s", name), 1);
    assert_true(rt_cmd_int(&f->scratch, "CLIENT KILL TYPE normal") >= 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->scratch, "EXISTS %s", name), 0);
    /* and taking it again works as well */
    assert_true(rt_cmd_int(&f->scratch, "CLIENT KILL TYPE normal") >= 1);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

/* An unlock sent to a paused server times out and is retried (same request
 * id) until the attempts run out. When the server resumes it runs every
 * copy; the latch must make all but the first a no-op, so a nested hold
 * goes down by exactly one. */
static void test_unlock_retried_across_pause_releases_once(void **state)
{
    fixture *f = *state;
    char name[128], field[128], *v;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    int64_t t0, elapsed, deadline;
    rlock *l;
    int rc;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 300), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 3), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 100), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->scratch.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    lt_owner_field(field, sizeof(field), c);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);

    rt_redis_pause(&f->scratch);
    t0 = rt_now_ms();
    rc = rlock_unlock(l);
    elapsed = rt_now_ms() - t0;
    rt_redis_resume(&f->scratch);
    print_message("unlock on a paused server: %s after %lld ms\n",
                  rlock_err_name(rc), (long long)elapsed);
    assert_true(rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN);
    /* 4 attempts of 300 ms, 100 ms apart */
    assert_true(elapsed < 4 * 300 + 3 * 100 + 2000);

    /* let every buffered copy run */
    deadline = rt_now_ms() + 3000;
    for (;;) {
        int changed;

        v = rt_cmd_str(&f->scratch, "HGET %s %s", name, field);
        changed = v == NULL || strcmp(v, "3") != 0;
        free(v);
        if (changed || rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(20);
    }
    rt_sleep_ms(500);
    v = rt_cmd_str(&f->scratch, "HGET %s %s", name, field);
    assert_non_null(v);
    assert_string_equal(v, "2");
    free(v);
    /* the two holds left are still ours */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->scratch, "EXISTS %s", name), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* With the default retry settings (3 attempts, 1500 ms apart) a refused
 * connection still cannot stretch a trylock past its wait budget plus one
 * command timeout. */
static void test_trylock_budget_holds_with_server_stopped(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c = NULL;
    int64_t t0, elapsed;
    rlock *l;
    int rc;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_client_connect(&c, f->scratch.url), RLOCK_OK);
    l = lt_get_lock(c, name);
    rt_redis_stop(&f->scratch);
    t0 = rt_now_ms();
    rc = rlock_trylock(l, 1000, RLOCK_LEASE_WATCHDOG);
    elapsed = rt_now_ms() - t0;
    print_message("trylock(1000): %s after %lld ms\n", rlock_err_name(rc),
                  (long long)elapsed);
    assert_true(rc == RLOCK_ECONN || rc == RLOCK_ETIMEDOUT);
    assert_true(elapsed < 1000 + 3000);
    rlock_free(l);
    rlock_client_free(c);
}

/* A forked child may not use its parent's client: every call says
 * RLOCK_EFORKED, and the parent's lock is left alone. */
static void test_calls_in_forked_child_are_eforked(void **state)
{
    fixture *f = *state;
    char name[128], field[128], *before, *after;
    int status = -1;
    pid_t pid;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    before = lt_hash_dump(&f->redis, name);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rlock *other = NULL;
        int bad = 0;

        bad |= rlock_lock(l) != RLOCK_EFORKED;
        bad |= rlock_trylock(l, 0, 1000) != RLOCK_EFORKED;
        bad |= rlock_unlock(l) != RLOCK_EFORKED;
        bad |= rlock_force_unlock(l) != RLOCK_EFORKED;
        bad |= rlock_is_locked(l) != RLOCK_EFORKED;
        bad |= rlock_is_held_by_me(l) != RLOCK_EFORKED;
        bad |= rlock_hold_count(l) != RLOCK_EFORKED;
        bad |= rlock_remaining_ttl(l) != RLOCK_EFORKED;
        bad |= rlock_get(f->client, "errors:other", &other) != RLOCK_EFORKED;
        bad |= other != NULL;
        /* the inherited client still reports the parent's id */
        bad |= strncmp(rlock_client_id(f->client), field, 36) != 0;
        _exit(bad ? 1 : 0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    assert_int_equal(rlock_hold_count(l), 1);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------------------------------- strings */

static void test_error_strings_are_distinct(void **state)
{
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
    };
    const size_t n = sizeof(codes) / sizeof(*codes);
    const char *unknown_text = rlock_strerror(-999);

    (void)state;
    assert_non_null(unknown_text);
    assert_string_equal(rlock_err_name(-999), "RLOCK_E?");
    assert_string_equal(rlock_err_name(1), "RLOCK_E?");
    assert_non_null(rlock_strerror(-1));
    for (size_t i = 0; i < n; i++) {
        const char *text = rlock_strerror(codes[i].code);
        const char *name = rlock_err_name(codes[i].code);

        assert_non_null(text);
        assert_non_null(name);
        assert_true(text[0] != '\0');
        assert_string_equal(name, codes[i].name);
        assert_string_not_equal(text, unknown_text);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(text, rlock_strerror(codes[j].code));
            assert_string_not_equal(name, rlock_err_name(codes[j].code));
        }
    }
}

/* ---------------------------------------------------------------- auth */

static void connect_expecting(fixture *f, const char *userinfo, int want)
{
    char url[160];
    rlock_client *c = (rlock_client *)&c;
    int rc;

    snprintf(url, sizeof(url), "redis://%s127.0.0.1:%d", userinfo,
             f->redis.port);
    rc = rlock_client_connect(&c, url);
    if (rc != want)
        fail_msg("%s: %s, expected %s", url, rlock_err_name(rc),
                 rlock_err_name(want));
    if (want != RLOCK_OK)
        assert_null(c);
    else
        rlock_client_free(c);
}

static void test_wrong_password_is_eauth(void **state)
{
    connect_expecting(*state, ":wrong@", RLOCK_EAUTH);
}

static void test_missing_password_is_eauth(void **state)
{
    connect_expecting(*state, "", RLOCK_EAUTH);
}

static void test_wrong_user_is_eauth(void **state)
{
    connect_expecting(*state, "nobody:" PASSWORD "@", RLOCK_EAUTH);
}

static void test_right_password_connects_and_locks(void **state)
{
    fixture *f = *state;
    char url[160], name[128];
    rlock_client *c = NULL;
    rlock *l;

    LT_TEST_NAME(name);
    snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d", PASSWORD,
             f->redis.port);
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_OK);
    /* the I/O thread's own connections authenticate too */
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_is_locked(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_user_and_password_connect(void **state)
{
    connect_expecting(*state, "default:" PASSWORD "@", RLOCK_OK);
}

static void test_percent_escaped_password_connects(void **state)
{
    /* %73 is 's' */
    connect_expecting(*state, ":%73ecret@", RLOCK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_pointers_are_einval),
        cmocka_unit_test(test_empty_name_is_einval),
        cmocka_unit_test(test_name_longer_than_max_is_einval),
        cmocka_unit_test(test_name_of_max_length_works),
        cmocka_unit_test(test_wait_below_minus_one_is_einval),
        cmocka_unit_test(test_bad_lease_is_einval),
        cmocka_unit_test(test_config_values_out_of_range_are_einval),
        cmocka_unit_test(test_bad_uris_are_einval),
        cmocka_unit_test(test_connect_to_closed_port_is_econn),
        cmocka_unit_test(test_connect_to_non_redis_server_fails),
        cmocka_unit_test(test_unlock_of_never_locked_lock_is_enotowner),
        cmocka_unit_test(test_more_unlocks_than_locks_is_enotowner),
        cmocka_unit_test(test_unlock_from_other_thread_is_enotowner),
        cmocka_unit_test(test_lock_on_string_key_fails_without_hanging),
        cmocka_unit_test(test_trylock_on_string_key_fails_at_once),
        cmocka_unit_test(test_unlock_after_key_became_string_is_lost),
        cmocka_unit_test(test_names_with_spaces_newlines_and_high_bytes_work),
        cmocka_unit_test(test_unusual_name_unlock_publishes_on_its_channel),
        cmocka_unit_test_setup_teardown(
            test_trylock_against_paused_server_keeps_budget, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_lock_against_paused_server_times_out, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_acquire_abandoned_during_pause_is_given_back, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_trylock_against_stopped_server_fails_promptly, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_trylock_budget_holds_with_server_stopped, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_unlock_after_connections_killed_succeeds, scratch_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_unlock_retried_across_pause_releases_once, scratch_setup,
            scratch_teardown),
        cmocka_unit_test(test_calls_in_forked_child_are_eforked),
        cmocka_unit_test(test_error_strings_are_distinct),
    };
    const struct CMUnitTest auth_tests[] = {
        cmocka_unit_test(test_wrong_password_is_eauth),
        cmocka_unit_test(test_missing_password_is_eauth),
        cmocka_unit_test(test_wrong_user_is_eauth),
        cmocka_unit_test(test_right_password_connects_and_locks),
        cmocka_unit_test(test_user_and_password_connect),
        cmocka_unit_test(test_percent_escaped_password_connects),
    };
    int failed;

    rt_require_redis();
    failed = cmocka_run_group_tests_name("errors", tests, group_setup,
                                         group_teardown);
    failed += cmocka_run_group_tests_name("auth", auth_tests, auth_group_setup,
                                          group_teardown);
    return failed;
}
