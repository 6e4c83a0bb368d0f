/*
 * test_misuse.c: bad input and misuse of the public API, against real
 * servers and against fake ones that are not Redis.
 *
 * tests/integration/test_errors.c already covers NULL pointers, the empty
 * and the RLOCK_NAME_MAX+1 name, waits below -1, zero and negative leases,
 * common URI mistakes, a closed port, an HTTP answer, unlocks by non-owners
 * and wrong passwords at connect time. This file covers what is left:
 *
 *   - 1 MiB names, URIs, passwords and socket paths, and a socket path
 *     too long for a sockaddr_un;
 *   - names made of every byte 1..255, braces in every position, CR/LF,
 *     RESP and printf look-alikes: each must lock the key with exactly
 *     those bytes and publish on the channel Redisson derives from them;
 *   - the extremes of wait and lease (INT64_MAX, 2^50, 2^50+1, 1 ms);
 *   - config setters at the int64 extremes leave the config unchanged;
 *   - every URI mistake we could think of, the database index, passwords
 *     with reserved characters;
 *   - a password changed, and then restored, under a connected client;
 *   - fake servers (fake_server.c, a listener thread) that stay silent,
 *     close, send garbage, a banner, status or error replies to
 *     everything, a reply nested too deep, a bulk header with no body, or
 *     that trickle a never-ending reply; and one that passes the connect
 *     check and then stops speaking Redis on the I/O thread's connections;
 *   - every call on a client whose server has been stopped, then
 *     restarted.
 *
 * Every outcome is compared with the code the header documents, and every
 * call that a broken library could hang is made on a helper thread with a
 * deadline, so that a hang fails the test instead of the CTest timeout.
 *
 * Not tested: using a client after rlock_client_free(). The memory is gone,
 * so no outcome can be checked without undefined behaviour in the test
 * itself; the header documents it as misuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "fake_server.h"

#define LT_SUITE "misuse"

#define MIB      (1024 * 1024)
#define PASSWORD "p@ss:w/rd%x"

/* How long past its own budget a call may take before we call it a hang.
 * Generous, because valgrind runs this file too. */
#define SLACK_MS 3000

typedef struct fixture {
    rt_redis redis;
    rlock_client *client;
    rt_redis scratch; /* per-test server for tests that stop or reconfigure */
} fixture;

/* ------------------------------------------------------------- helpers */

/* A call on a helper thread, so that a hang can be detected. */
typedef struct bg_call {
    pthread_t thread;
    int (*fn)(void *arg);
    void *arg;
    int rc;
    int64_t elapsed_ms;
    atomic_int done;
} bg_call;

static void *bg_main(void *p)
{
    bg_call *b = p;
    int64_t t0 = rt_now_ms();

    b->rc = b->fn(b->arg);
    b->elapsed_ms = rt_now_ms() - t0;
    atomic_store(&b->done, 1);
    return NULL;
}

static void bg_start(bg_call *b, int (*fn)(void *), void *arg)
{
    memset(b, 0, sizeof(*b));
    b->fn = fn;
    b->arg = arg;
    atomic_init(&b->done, 0);
    assert_int_equal(pthread_create(&b->thread, NULL, bg_main, b), 0);
}

/* Waits up to timeout_ms for the call; returns 1 if it finished. */
static int bg_wait(bg_call *b, int64_t timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (!atomic_load(&b->done) && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    return atomic_load(&b->done);
}

static void bg_join(bg_call *b)
{
    assert_int_equal(pthread_join(b->thread, NULL), 0);
}

/* Fails unless rc is one of the n codes in want. */
static void assert_code_in(const char *what, int rc, const int *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rc == want[i])
            return;
    fail_msg("%s: got %s (%d), not one of the documented outcomes", what,
             rlock_err_name(rc), rc);
}

#define ASSERT_CODE_IN(what, rc, ...)                                        \
    do {                                                                     \
        const int want_[] = {__VA_ARGS__};                                   \
        assert_code_in((what), (rc), want_, sizeof(want_) / sizeof(*want_)); \
    } while (0)

/* A raw connection to r, authenticated with password when not NULL. */
static redisContext *raw_connect(const rt_redis *r, const char *password)
{
    struct timeval tv = {5, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *rep;

    assert_non_null(ctx);
    assert_int_equal(ctx->err, 0);
    redisSetTimeout(ctx, tv);
    if (password != NULL) {
        rep = redisCommand(ctx, "AUTH %s", password);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        freeReplyObject(rep);
    }
    return ctx;
}

/* Runs one command on ctx and returns its integer reply (fails the test on
 * anything else). */
static long long raw_int(redisContext *ctx, const char *fmt, ...)
{
    va_list ap;
    redisReply *rep;
    long long v;

    va_start(ap, fmt);
    rep = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    assert_non_null(rep);
    if (rep->type != REDIS_REPLY_INTEGER)
        fail_msg("expected an integer reply, got type %d (%s)", rep->type,
                 rep->str ? rep->str : "");
    v = rep->integer;
    freeReplyObject(rep);
    return v;
}

/* Runs one command on ctx and asserts a status reply "OK". */
static void raw_ok(redisContext *ctx, const char *fmt, ...)
{
    va_list ap;
    redisReply *rep;

    va_start(ap, fmt);
    rep = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    assert_non_null(rep);
    if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "OK") != 0)
        fail_msg("expected +OK, got type %d (%s)", rep->type,
                 rep->str ? rep->str : "");
    freeReplyObject(rep);
}

/* Connects with a config whose timeouts and retries are short. */
static int connect_short(rlock_client **out, const char *url,
                         int64_t command_ms)
{
    rlock_config *cfg = NULL;
    int rc;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, command_ms),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_connect_timeout(cfg, 1000), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 1), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 50), RLOCK_OK);
    rc = rlock_client_connect_with(out, url, cfg);
    rlock_config_free(cfg);
    return rc;
}

/* Returns the server's key count once it is 0, or after 3 s: an unlock's
 * latch is deleted right after its reply, without waiting. */
static long long settled_dbsize(rt_redis *r)
{
    int64_t deadline = rt_now_ms() + 3000;
    long long n;

    while ((n = rt_cmd_int(r, "DBSIZE")) != 0 && rt_now_ms() < deadline)
        rt_sleep_ms(10);
    return n;
}

/* Returns a malloc'd string of n copies of ch. */
static char *filled(size_t n, char ch)
{
    char *s = malloc(n + 1);

    assert_non_null(s);
    memset(s, ch, n);
    s[n] = '\0';
    return s;
}

/* ------------------------------------------------------- group fixtures */

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

    memset(&f->scratch, 0, sizeof(f->scratch));
    return rt_redis_start(&f->scratch);
}

static int scratch_teardown(void **state)
{
    fixture *f = *state;

    rt_redis_stop(&f->scratch);
    return 0;
}

/* ========================================================== strings */

static void test_strings_of_any_code_are_never_null(void **state)
{
    static const int codes[] = {INT_MIN, INT_MIN + 1, -1000, -100, -2,
                                -1,      1,           2,     100,  INT_MAX};

    (void)state;
    for (size_t i = 0; i < sizeof(codes) / sizeof(*codes); i++) {
        assert_non_null(rlock_strerror(codes[i]));
        assert_string_equal(rlock_err_name(codes[i]), "RLOCK_E?");
    }
    /* RLOCK_ECANCELED is the newest code: it has a name and its own text */
    assert_string_equal(rlock_err_name(RLOCK_ECANCELED), "RLOCK_ECANCELED");
    assert_string_not_equal(rlock_strerror(RLOCK_ECANCELED),
                            rlock_strerror(-999));
    assert_string_not_equal(rlock_strerror(RLOCK_ECANCELED),
                            rlock_strerror(RLOCK_ESERVER));
    assert_memory_equal(rlock_version_string(), RLOCK_VERSION_STRING,
                        strlen(RLOCK_VERSION_STRING));
}

static void *thread_id_main(void *p)
{
    uint64_t *out = p;

    out[0] = rlock_thread_id();
    out[1] = rlock_thread_id();
    return NULL;
}

static void test_thread_ids_are_positive_stable_and_distinct(void **state)
{
    uint64_t other[2], mine = rlock_thread_id();
    pthread_t t;

    (void)state;
    assert_true(mine > 0);
    assert_int_equal(rlock_thread_id(), mine);
    assert_int_equal(pthread_create(&t, NULL, thread_id_main, other), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(other[0] > 0);
    assert_int_equal(other[0], other[1]);
    assert_true(other[0] != mine);
}

static void test_client_id_is_a_lowercase_uuid(void **state)
{
    fixture *f = *state;
    const char *id = rlock_client_id(f->client);

    assert_non_null(id);
    assert_int_equal(strlen(id), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(id[i], '-');
        else
            assert_non_null(strchr("0123456789abcdef", id[i]));
    }
}

/* ============================================================ names */

static void test_one_mib_name_is_einval(void **state)
{
    fixture *f = *state;
    char *name = filled(MIB, 'n');
    rlock *l = (rlock *)&l;

    assert_int_equal(rlock_get(f->client, name, &l), RLOCK_EINVAL);
    assert_null(l);
    /* the same with bytes >= 0x80 and braces */
    memset(name, 0xff, MIB);
    name[0] = '{';
    name[MIB - 1] = '}';
    l = (rlock *)&l;
    assert_int_equal(rlock_get(f->client, name, &l), RLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), 0);
    free(name);
}

/* Locks name twice, checks every query and the bytes of the key, the field
 * and the channel, then unlocks twice. */
static void check_name_round_trip(fixture *f, const char *name)
{
    size_t n = strlen(name);
    char field[128], *channel;
    rlock *l = lt_get_lock(f->client, name);
    redisReply *rep;
    int64_t ttl;
    rt_sub *sub;

    lt_owner_field(field, sizeof(field), f->client);
    channel = malloc(n + 64);
    assert_non_null(channel);
    lt_channel_of(channel, n + 64, name);
    sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);

    assert_memory_equal(rlock_name(l), name, n + 1);
    assert_int_equal(rlock_is_locked(l), 0);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rep = rt_cmd(&f->redis, "HGETALL %b", name, n);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, field);
    assert_string_equal(rep->element[1]->str, "2");
    freeReplyObject(rep);
    /* exactly one key: nothing was written under a mangled name */
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), 1);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_hold_count(l), 2);
    ttl = rlock_remaining_ttl(l);
    assert_true(ttl > 0 && ttl <= 30000);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %b", name, n), 0);
    assert_int_equal(rt_sub_wait(sub, 1, 5000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "0");
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    rt_sub_stop(sub);
    free(channel);
    rlock_free(l);
    assert_int_equal(settled_dbsize(&f->redis), 0);
}

static void test_odd_names_round_trip_to_the_same_key(void **state)
{
    static const char *const names[] = {
        "}{",
        "{}",
        "{{misuse}}",
        "misuse:}",
        "{misuse",
        "\xff",
        " ",
        "\r\n",
        "\t\v\f\x01\x1b[0m",
        "*1\r\n$4\r\nPING\r\n",        /* RESP look-alike */
        "misuse:%s%n%p%%",             /* printf look-alike */
        "misuse:\xc0\x80\xed\xa0\x80", /* invalid UTF-8 */
        "misuse:\xe2\x82\xac\xf0\x9f\x94\x92",
    };
    fixture *f = *state;

    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        check_name_round_trip(f, names[i]);
}

static void test_name_of_every_byte_round_trips(void **state)
{
    char name[256];

    for (int i = 1; i < 256; i++)
        name[i - 1] = (char)i;
    name[255] = '\0';
    check_name_round_trip(*state, name);
}

/* Names that differ in one high byte, or only in case, are different locks
 * held at the same time by the same thread. */
static void test_near_identical_names_are_distinct_locks(void **state)
{
    static const char *const names[] = {"misuse:\x80", "misuse:\x81",
                                        "misuse:A",    "misuse:a",
                                        "misuse:a ",   "misuse:a\n"};
    enum { N = sizeof(names) / sizeof(*names) };
    fixture *f = *state;
    rlock *l[N];

    for (int i = 0; i < N; i++) {
        l[i] = lt_get_lock(f->client, names[i]);
        assert_int_equal(rlock_lock(l[i]), RLOCK_OK);
    }
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(rlock_hold_count(l[i]), 1);
        assert_int_equal(rlock_unlock(l[i]), RLOCK_OK);
        /* the others are untouched */
        for (int j = i + 1; j < N; j++)
            assert_int_equal(
                rt_cmd_int(&f->redis, "EXISTS %b", names[j], strlen(names[j])),
                1);
        rlock_free(l[i]);
    }
    assert_int_equal(settled_dbsize(&f->redis), 0);
}

/* rlock_get copies the name: the caller may reuse its buffer at once. */
static void test_name_buffer_may_be_reused_after_get(void **state)
{
    fixture *f = *state;
    char buf[64];
    rlock *l;

    snprintf(buf, sizeof(buf), "misuse:copied");
    l = lt_get_lock(f->client, buf);
    memset(buf, 'X', sizeof(buf) - 1);
    buf[sizeof(buf) - 1] = '\0';
    assert_string_equal(rlock_name(l), "misuse:copied");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS misuse:copied"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ================================================== waits and leases */

static void test_more_invalid_waits_and_leases_are_einval(void **state)
{
    static const int64_t bad_waits[] = {-1000, INT64_MIN + 1, -3};
    static const int64_t bad_leases[] = {-1000, INT64_MIN + 1,
                                         (INT64_C(1) << 50) + 1, INT64_MAX, -3};
    fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    for (size_t i = 0; i < sizeof(bad_waits) / sizeof(*bad_waits); i++) {
        assert_int_equal(rlock_trylock(l, bad_waits[i], RLOCK_LEASE_WATCHDOG),
                         RLOCK_EINVAL);
        assert_int_equal(rlock_trylock(l, bad_waits[i], 1000), RLOCK_EINVAL);
    }
    for (size_t i = 0; i < sizeof(bad_leases) / sizeof(*bad_leases); i++) {
        assert_int_equal(rlock_trylock(l, 0, bad_leases[i]), RLOCK_EINVAL);
        assert_int_equal(rlock_trylock(l, INT64_MAX, bad_leases[i]),
                         RLOCK_EINVAL);
        assert_int_equal(rlock_trylock(l, RLOCK_WAIT_FOREVER, bad_leases[i]),
                         RLOCK_EINVAL);
    }
    /* a bad lease is refused even while the thread holds the lock */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, INT64_MAX), RLOCK_EINVAL);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(settled_dbsize(&f->redis), 0);
    rlock_free(l);
}

static void test_extreme_valid_leases(void **state)
{
    fixture *f = *state;
    char name[128];
    int64_t ttl;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    /* the longest lease */
    assert_int_equal(rlock_trylock(l, INT64_MAX, INT64_C(1) << 50), RLOCK_OK);
    ttl = rlock_remaining_ttl(l);
    assert_true(ttl > (INT64_C(1) << 50) - 60000);
    assert_true(ttl <= INT64_C(1) << 50);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    /* the shortest: gone before the unlock, which says so once */
    assert_int_equal(rlock_trylock(l, 0, 1), RLOCK_OK);
    rt_sleep_ms(50);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_hold_count(l), 0);

    /* and the lock works normally afterwards */
    assert_int_equal(rlock_trylock(l, RLOCK_WAIT_FOREVER, 60000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

typedef struct waiter_arg {
    rlock *l;
    int64_t wait_ms;
    int64_t lease_ms;
    int unlock_rc;
} waiter_arg;

static int waiter_main(void *p)
{
    waiter_arg *w = p;
    int rc = rlock_trylock(w->l, w->wait_ms, w->lease_ms);

    w->unlock_rc = rc == RLOCK_OK ? rlock_unlock(w->l) : rc;
    return rc;
}

/* A huge wait budget on a held lock must wait (not overflow into "already
 * expired") and then take the lock once it is released. */
static void test_huge_wait_on_held_lock_waits_then_acquires(void **state)
{
    static const int64_t waits[] = {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2};
    fixture *f = *state;
    rlock_client *other = NULL;
    char name[128];
    rlock *mine, *theirs;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_client_connect(&other, f->redis.url), RLOCK_OK);
    mine = lt_get_lock(f->client, name);
    theirs = lt_get_lock(other, name);
    for (size_t i = 0; i < sizeof(waits) / sizeof(*waits); i++) {
        waiter_arg w = {mine, waits[i], 60000, 0};
        bg_call b;

        assert_int_equal(rlock_trylock(theirs, 0, 60000), RLOCK_OK);
        bg_start(&b, waiter_main, &w);
        rt_sleep_ms(300);
        if (atomic_load(&b.done)) {
            bg_join(&b);
            fail_msg("trylock(wait=%lld) returned %s while the lock was held",
                     (long long)waits[i], rlock_err_name(b.rc));
        }
        assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
        if (!bg_wait(&b, 5000)) {
            rlock_force_unlock(theirs);
            bg_wait(&b, 60000);
            fail_msg("waiter with wait=%lld not woken by the unlock",
                     (long long)waits[i]);
        }
        bg_join(&b);
        assert_int_equal(b.rc, RLOCK_OK);
        assert_int_equal(w.unlock_rc, RLOCK_OK);
    }
    assert_int_equal(rlock_is_locked(mine), 0);
    rlock_free(theirs);
    rlock_free(mine);
    rlock_client_free(other);
}

/* A hold count that is not a count (a corrupted or foreign field) is an
 * error, never a negative number that looks like an RLOCK_E* code or a
 * count. */
static void test_hold_count_of_corrupt_field_is_eproto(void **state)
{
    static const char *const values[] = {"abc", "99999999999", "-7", "-101"};
    fixture *f = *state;
    char name[128], field[128], failures[512] = "";
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    for (size_t i = 0; i < sizeof(values) / sizeof(*values); i++) {
        size_t used = strlen(failures);
        int rc;

        assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
        assert_int_equal(
            rt_cmd_int(&f->redis, "HSET %s %s %s", name, field, values[i]), 0);
        rc = rlock_hold_count(l);
        if (rc != RLOCK_EPROTO)
            snprintf(failures + used, sizeof(failures) - used,
                     " field \"%s\" gave %d (%s);", values[i], rc,
                     rlock_err_name(rc));
        assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    }
    rlock_free(l);
    if (failures[0] != '\0')
        fail_msg("hold count of a corrupt field, expected RLOCK_EPROTO:%s",
                 failures);
}

/* ============================================================ config */

/* Setters refuse the int64 extremes and leave the value as it was: the
 * watchdog lease set before them is the one the lock gets. */
static void test_config_extremes_leave_config_unchanged(void **state)
{
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    char name[128];
    long long pttl;
    rlock *l;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, 1000), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, INT64_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, INT64_MIN),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_command_timeout(cfg, INT64_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_command_timeout(cfg, INT64_MIN),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connect_timeout(cfg, INT64_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connect_timeout(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_interval(cfg, INT64_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_interval(cfg, INT64_MIN),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, INT64_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, INT_MAX),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, INT_MIN),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, INT_MAX), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, INT_MIN), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_connections(cfg, -1), RLOCK_EINVAL);
    /* the longest values accepted connect and work */
    assert_int_equal(rlock_config_set_command_timeout(cfg, INT32_MAX),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_connect_timeout(cfg, INT32_MAX),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, INT32_MAX), RLOCK_OK);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, INT32_MAX),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 100), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 0 && pttl <= 1000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

/* ============================================================== URIs */

static void test_more_bad_uris_are_einval(void **state)
{
    static const char *const bad[] = {
        "rediss://",                     /* TLS without a host (a good
                                            rediss:// URI connects:
                                            test_tls.c) */
        "redisss://127.0.0.1",           /* one s too many */
        "redis:/127.0.0.1",              /* one slash */
        "redis:127.0.0.1",               /* no slashes */
        "redis//127.0.0.1",              /* no colon */
        " redis://127.0.0.1",            /* leading space */
        "redis://127.0.0.1 ",            /* trailing space */
        "redis://127.0.0.1\n",           /* trailing newline */
        "redis://127.0.0.1\t:6379",      /* tab */
        "redis://h\xc3\xb6st",           /* non-ASCII host */
        "redis://127.0.0.1:-1",          /* negative port */
        "redis://127.0.0.1:+1",          /* signed port */
        "redis://127.0.0.1:65536",       /* port out of range */
        "redis://127.0.0.1:6379x",       /* trailing junk after the port */
        "redis://127.0.0.1:0x18eb",      /* hex port */
        "redis://127.0.0.1:00000006379", /* 11 digits */
        "redis://127.0.0.1:6379:6380",   /* two ports */
        "redis://127.0.0.1/-1",          /* negative db */
        "redis://127.0.0.1/2147483648",  /* db past INT32_MAX */
        "redis://127.0.0.1/99999999999",
        "redis://127.0.0.1/1/2",    /* path after the db */
        "redis://127.0.0.1/1?x=1",  /* query after the db */
        "redis://127.0.0.1?db=1",   /* unix-style query */
        "redis://127.0.0.1#frag",   /* fragment */
        "redis://:pw@",             /* no host */
        "redis://@127.0.0.1",       /* empty userinfo */
        "redis://u:@127.0.0.1",     /* empty password */
        "redis://:%zz@127.0.0.1",   /* bad escape */
        "redis://:%4@127.0.0.1",    /* short escape */
        "redis://:pw%@127.0.0.1",   /* lone percent */
        "redis://:%00pw@127.0.0.1", /* escaped NUL */
        "redis://%00:pw@127.0.0.1", /* escaped NUL in the user */
        "redis://a@b@127.0.0.1",    /* userinfo without a colon */
        "redis://:p/w@127.0.0.1",   /* raw slash in the password */
        "redis://[]",               /* empty IPv6 literal */
        "redis://[]:6379",
        "redis://[::1]x", /* junk after the literal */
        "redis://[::1]:", /* empty port */
        "redis://[::1]:99999",
        "redis://::1",        /* IPv6 without brackets */
        "redis://127.0.0.1:", /* empty port */
        "unix:",
        "unix:/",
        "unix://",
        "unix:///", /* path too short */
        "unix://?db=1",
        "unix:///tmp/x?db=",
        "unix:///tmp/x?db=-1",
        "unix:///tmp/x?db=1&y=2",
        "unix:///tmp/x?foo=1",
        "unix:///tmp/x?db=99999999999",
        "unix:///%zz",
        "unix:///tmp/%00x",
        "file:///tmp/redis.sock",
        "redis",
        "//127.0.0.1:6379",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        rlock_client *c = (rlock_client *)&c;
        int rc;

        rc = rlock_client_connect(&c, bad[i]);
        if (rc != RLOCK_EINVAL)
            fail_msg("\"%s\": %s, expected RLOCK_EINVAL", bad[i],
                     rlock_err_name(rc));
        assert_null(c);
    }
}

static void test_one_mib_uris_fail_cleanly(void **state)
{
    fixture *f = *state;
    rlock_client *c = (rlock_client *)&c;
    char *big = filled(MIB, 'a'), *uri = malloc(MIB + 128);
    int rc;

    assert_non_null(uri);
    /* 1 MiB of junk */
    assert_int_equal(rlock_client_connect(&c, big), RLOCK_EINVAL);
    assert_null(c);
    /* 1 MiB database number */
    memset(big, '7', MIB);
    snprintf(uri, MIB + 128, "redis://127.0.0.1:%d/%s", f->redis.port, big);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect(&c, uri), RLOCK_EINVAL);
    assert_null(c);
    /* 1 MiB port */
    snprintf(uri, MIB + 128, "redis://127.0.0.1:%s", big);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect(&c, uri), RLOCK_EINVAL);
    assert_null(c);
    /* 1 MiB password: parses, and the server refuses it (it has none) */
    memset(big, 'p', MIB);
    snprintf(uri, MIB + 128, "redis://:%s@127.0.0.1:%d", big, f->redis.port);
    c = (rlock_client *)&c;
    rc = rlock_client_connect(&c, uri);
    assert_int_equal(rc, RLOCK_EAUTH);
    assert_null(c);
    /* 1 MiB socket path: parses, names no socket */
    snprintf(uri, MIB + 128, "unix:///%s", big);
    c = (rlock_client *)&c;
    rc = rlock_client_connect(&c, uri);
    ASSERT_CODE_IN("1 MiB socket path", rc, RLOCK_ECONN, RLOCK_EINVAL);
    assert_null(c);
    free(uri);
    free(big);
}

/* A socket path longer than a sockaddr_un holds (107 bytes) cannot be
 * connected to as written. It must be refused, not cut: cut to 107 bytes it
 * names another socket, here a live server's, and the client would connect
 * to that server instead of failing. (hiredis 0.14 copies the path with
 * strncpy into sun_path and leaves the last byte uninitialised.) */
static void test_overlong_socket_path_is_refused(void **state)
{
    char dir[] = "/tmp/rlock-misuse-XXXXXX", path[108], uri[256];
    const char *args[] = {"--unixsocket", path, NULL};
    rlock_client *c = (rlock_client *)&c;
    rt_redis server = {0};
    size_t n;
    int rc;

    (void)state;
    assert_non_null(mkdtemp(dir));
    n = (size_t)snprintf(path, sizeof(path), "%s/", dir);
    memset(path + n, 's', sizeof(path) - 1 - n);
    path[sizeof(path) - 1] = '\0';
    assert_int_equal(strlen(path), 107);
    assert_int_equal(rt_redis_start_args(&server, args), 0);
    snprintf(uri, sizeof(uri), "unix://%s-typo/else.sock", path);
    rc = rlock_client_connect(&c, uri);
    if (rc == RLOCK_OK)
        rlock_client_free(c);
    rt_redis_stop(&server);
    unlink(path);
    rmdir(dir);
    if (rc == RLOCK_OK)
        fail_msg("connected through a %zu-byte socket path that names no "
                 "socket (cut to the live one)",
                 strlen(uri) - 7);
    ASSERT_CODE_IN("over-long socket path", rc, RLOCK_EINVAL, RLOCK_ECONN);
    assert_null(c);
}

/* Upper-case schemes parse (as strncasecmp says); the client then works. */
static void test_upper_case_scheme_connects(void **state)
{
    fixture *f = *state;
    rlock_client *c = NULL;
    char url[96];

    snprintf(url, sizeof(url), "REDIS://127.0.0.1:%d", f->redis.port);
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_OK);
    rlock_client_free(c);
}

/* A database the server does not have is refused at connect time. */
static void test_database_out_of_server_range_is_eauth(void **state)
{
    fixture *f = *state;
    rlock_client *c = (rlock_client *)&c;
    char url[96];

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/16", f->redis.port);
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_EAUTH);
    assert_null(c);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/2147483647",
             f->redis.port);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_EAUTH);
    assert_null(c);
}

/* A lock taken through redis://host/15 lives in database 15 and nowhere
 * else, including its unlock latch. */
static void test_lock_lands_in_the_uri_database(void **state)
{
    fixture *f = *state;
    redisContext *ctx = raw_connect(&f->redis, NULL);
    long long keys_in_db0 = rt_cmd_int(&f->redis, "DBSIZE");
    rlock_client *c = NULL;
    char url[96], name[128];
    rlock *l;

    LT_TEST_NAME(name);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/15", f->redis.port);
    assert_int_equal(rlock_client_connect(&c, url), RLOCK_OK);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    raw_ok(ctx, "SELECT 15");
    assert_int_equal(raw_int(ctx, "EXISTS %s", name), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), keys_in_db0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(raw_int(ctx, "EXISTS %s", name), 0);
    rlock_free(l);
    rlock_client_free(c); /* waits for the latch DEL to drain */
    assert_int_equal(raw_int(ctx, "DBSIZE"), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), keys_in_db0);
    redisFree(ctx);
}

/* ========================================================= passwords */

/* Starts f->scratch with PASSWORD (which has '@', ':', '/' and '%'). */
static int password_setup(void **state)
{
    fixture *f = *state;
    char *ok;

    if (scratch_setup(state) != 0)
        return -1;
    ok = rt_cmd_str(&f->scratch, "CONFIG SET requirepass %s", PASSWORD);
    if (ok == NULL || strcmp(ok, "OK") != 0) {
        free(ok);
        rt_redis_stop(&f->scratch);
        return -1;
    }
    free(ok);
    return 0;
}

static void connect_password_uri(fixture *f, const char *userinfo, int want)
{
    char url[256];
    rlock_client *c = (rlock_client *)&c;
    int rc;

    snprintf(url, sizeof(url), "redis://%s127.0.0.1:%d", userinfo,
             f->scratch.port);
    rc = rlock_client_connect(&c, url);
    if (rc != want)
        fail_msg("%s: %s, expected %s", url, rlock_err_name(rc),
                 rlock_err_name(want));
    if (want == RLOCK_OK)
        rlock_client_free(c);
    else
        assert_null(c);
}

static void test_password_with_reserved_characters(void **state)
{
    fixture *f = *state;
    char *big = filled(MIB, 'x'), *uri = malloc(MIB + 128);
    rlock_client *c = (rlock_client *)&c;
    int rc;

    /* all escaped */
    connect_password_uri(f, ":p%40ss%3Aw%2Frd%25x@", RLOCK_OK);
    connect_password_uri(f, "default:p%40ss%3Aw%2Frd%25x@", RLOCK_OK);
    /* '@' and ':' may stay raw: the last '@' and the first ':' split */
    connect_password_uri(f, ":p@ss:w%2Frd%25x@", RLOCK_OK);
    /* a raw '/' ends the authority: the URI does not parse */
    connect_password_uri(f, ":p@ss:w/rd%25x@", RLOCK_EINVAL);
    /* an unescaped '%' is a malformed escape */
    connect_password_uri(f, ":p%40ss%3Aw%2Frd%x@", RLOCK_EINVAL);
    /* nearly right */
    connect_password_uri(f, ":p%40ss%3Aw%2Frd%25@", RLOCK_EAUTH);
    connect_password_uri(f, ":P%40ss%3Aw%2Frd%25x@", RLOCK_EAUTH);
    /* a 1 MiB wrong password: a server with a password refuses bulks over
     * 16 KiB before AUTH ("unauthenticated bulk length") and closes the
     * connection, so the client sees the refusal or the closed socket,
     * whichever comes first */
    assert_non_null(uri);
    snprintf(uri, MIB + 128, "redis://:%s@127.0.0.1:%d", big, f->scratch.port);
    rc = rlock_client_connect(&c, uri);
    ASSERT_CODE_IN("1 MiB wrong password", rc, RLOCK_EAUTH, RLOCK_ECONN);
    assert_null(c);
    free(uri);
    free(big);
}

static void kill_normal_clients(rt_redis *r, const char *password)
{
    redisContext *ctx = raw_connect(r, password);
    redisReply *rep = redisCommand(ctx, "CLIENT KILL TYPE normal SKIPME yes");

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
    freeReplyObject(rep);
    redisFree(ctx);
}

typedef struct lock_op {
    rlock *l;
    int op; /* 0 trylock(0), 1 is_locked, 2 lock, 3 trylock(1000) */
} lock_op;

static int lock_op_main(void *p)
{
    lock_op *o = p;

    switch (o->op) {
    case 0:
        return rlock_trylock(o->l, 0, RLOCK_LEASE_WATCHDOG);
    case 1:
        return rlock_is_locked(o->l);
    case 2:
        return rlock_lock(o->l);
    default:
        return rlock_trylock(o->l, 1000, RLOCK_LEASE_WATCHDOG);
    }
}

/* Runs op on l on a helper thread; fails the test if it takes longer than
 * budget_ms + SLACK_MS (leaving the thread and its state behind: it may
 * never return). Returns its result. */
#define OP_HUNG INT_MIN
static int bounded_op_or_stop(rlock *l, int op, int64_t budget_ms,
                              const char *what, fake_server *s);

static int bounded_op(rlock *l, int op, int64_t budget_ms, const char *what)
{
    return bounded_op_or_stop(l, op, budget_ms, what, NULL);
}

/* Connects c to the password-protected scratch server and checks that a
 * lock works; returns the handle. */
static rlock *connect_with_password(fixture *f, rlock_client **c,
                                    const char *name)
{
    char url[256];
    rlock *l;

    snprintf(url, sizeof(url), "redis://:p%%40ss%%3Aw%%2Frd%%25x@127.0.0.1:%d",
             f->scratch.port);
    assert_int_equal(connect_short(c, url, 1000), RLOCK_OK);
    l = lt_get_lock(*c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    return l;
}

/* Sets the scratch server's password from old to new (both not NULL). */
static void change_password(fixture *f, const char *old, const char *new)
{
    redisContext *ctx = raw_connect(&f->scratch, old);

    raw_ok(ctx, "CONFIG SET requirepass %s", new);
    redisFree(ctx);
}

/* The password changed on the server under a connected client, and its
 * connections dropped: new connections are refused and every call says
 * RLOCK_EAUTH at once; the same client works again once the password is
 * back and the connections are dropped again. */
static void test_password_changed_under_connected_client(void **state)
{
    fixture *f = *state;
    rlock_client *c = NULL;
    char name[128];
    rlock *l;
    int rc;

    LT_TEST_NAME(name);
    l = connect_with_password(f, &c, name);
    change_password(f, PASSWORD, "another");
    kill_normal_clients(&f->scratch, "another");
    rc = bounded_op(l, 0, 1000, "trylock, password changed");
    ASSERT_CODE_IN("trylock, password changed", rc, RLOCK_EAUTH);
    /* a query is not retried: it may meet its connection closing */
    rc = bounded_op(l, 1, 1000, "is_locked, password changed");
    ASSERT_CODE_IN("is_locked, password changed", rc, RLOCK_EAUTH, RLOCK_ECONN);
    rc = bounded_op(l, 2, 1000, "lock, password changed");
    ASSERT_CODE_IN("lock, password changed", rc, RLOCK_EAUTH);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);

    change_password(f, "another", PASSWORD);
    kill_normal_clients(&f->scratch, PASSWORD);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

/* As above, but nothing drops the connections after the password is put
 * back. A connection whose AUTH was refused stays unauthenticated for good,
 * so unless the client drops a connection that answers NOAUTH (and
 * authenticates afresh on the next one), it answers RLOCK_EAUTH forever,
 * though its password is right again. */
static void test_client_recovers_when_password_is_restored(void **state)
{
    fixture *f = *state;
    rlock_client *c = NULL;
    char name[128];
    rlock *l;
    int rc = RLOCK_EAUTH;

    LT_TEST_NAME(name);
    l = connect_with_password(f, &c, name);
    change_password(f, PASSWORD, "another");
    kill_normal_clients(&f->scratch, "another");
    /* every command connection meets the new password (a call may still
     * find its old connection closing, which is RLOCK_ECONN) */
    for (int i = 0; i < 8; i++) {
        rc = rlock_is_locked(l);
        ASSERT_CODE_IN("is_locked, password changed", rc, RLOCK_EAUTH,
                       RLOCK_ECONN);
    }
    assert_int_equal(rlock_is_locked(l), RLOCK_EAUTH);
    rc = RLOCK_EAUTH;

    change_password(f, "another", PASSWORD);
    /* one more refusal per connection is tolerated, then it must work */
    for (int i = 0; i < 4 && rc == RLOCK_EAUTH; i++)
        rc = rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG);
    if (rc == RLOCK_OK)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
    if (rc != RLOCK_OK)
        fail_msg("password restored, the client still answers %s",
                 rlock_err_name(rc));
}

/* ====================================================== fake servers */

/* Runs op on l on a helper thread and returns its result. A call that
 * takes longer than budget_ms + SLACK_MS fails the test; but if s is not
 * NULL, s is stopped first (closing every connection to it, which gives
 * the thread back) and OP_HUNG is returned, so that the caller can clean up
 * and fail. Without s a hung thread and its state are left behind. */
static int bounded_op_or_stop(rlock *l, int op, int64_t budget_ms,
                              const char *what, fake_server *s)
{
    struct {
        bg_call b;
        lock_op o;
    } *h = calloc(1, sizeof(*h));
    int rc;

    assert_non_null(h);
    h->o.l = l;
    h->o.op = op;
    bg_start(&h->b, lock_op_main, &h->o);
    if (!bg_wait(&h->b, budget_ms + SLACK_MS)) {
        print_message("%s: no answer after %lld ms\n", what,
                      (long long)(budget_ms + SLACK_MS));
        if (s != NULL) {
            fs_stop(s);
            if (bg_wait(&h->b, 10000)) {
                bg_join(&h->b);
                free(h);
                return OP_HUNG;
            }
        }
        pthread_detach(h->b.thread);
        fail_msg("%s: no answer after %lld ms", what,
                 (long long)(budget_ms + SLACK_MS));
    }
    bg_join(&h->b);
    print_message("%s: %s after %lld ms\n", what, rlock_err_name(h->b.rc),
                  (long long)h->b.elapsed_ms);
    rc = h->b.rc;
    free(h);
    return rc;
}

typedef struct connect_arg {
    const char *url;
    int64_t command_ms;
    rlock_client *client;
} connect_arg;

static int connect_main(void *p)
{
    connect_arg *a = p;

    return connect_short(&a->client, a->url, a->command_ms);
}

/* Connects to a fake server in mode; expects one of the codes in want
 * within the command timeout (500 ms) plus slack. */
static void check_fake_connect(fs_mode mode, const char *what, const int *want,
                               size_t nwant)
{
    fake_server *s = fs_start(mode, 0);
    connect_arg a = {fs_url(s), 500, (rlock_client *)&a};
    bg_call b;

    bg_start(&b, connect_main, &a);
    if (!bg_wait(&b, 500 + SLACK_MS)) {
        /* closing the server's side ends the read; then fail */
        fs_stop(s);
        bg_wait(&b, 10000);
        bg_join(&b);
        rlock_client_free(a.client);
        fail_msg("%s: connect hung for more than %d ms (then returned %s)",
                 what, 500 + SLACK_MS, rlock_err_name(b.rc));
    }
    bg_join(&b);
    fs_stop(s);
    print_message("%s: %s after %lld ms\n", what, rlock_err_name(b.rc),
                  (long long)b.elapsed_ms);
    assert_code_in(what, b.rc, want, nwant);
    assert_null(a.client);
}

#define CHECK_FAKE_CONNECT(mode, ...)                       \
    do {                                                    \
        const int want_[] = {__VA_ARGS__};                  \
        check_fake_connect((mode), #mode, want_,            \
                           sizeof(want_) / sizeof(*want_)); \
    } while (0)

static void test_connect_to_silent_server_times_out(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_SILENT, RLOCK_ETIMEDOUT);
}

static void test_connect_to_closing_server_is_econn(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_CLOSE, RLOCK_ECONN, RLOCK_EPROTO);
}

static void test_connect_to_garbage_server_is_eproto(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_GARBAGE, RLOCK_EPROTO);
}

static void test_connect_to_ssh_server_is_eproto(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_BANNER, RLOCK_EPROTO);
}

static void test_connect_to_ok_to_everything_server_is_eproto(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_STATUS_OK, RLOCK_EPROTO);
}

static void test_connect_to_error_to_everything_server_fails(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_ERR, RLOCK_EPROTO, RLOCK_ESERVER);
}

static void test_connect_to_noauth_server_is_eauth(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_NOAUTH, RLOCK_EAUTH);
}

static void test_connect_to_deeply_nested_reply_is_eproto(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_DEEP, RLOCK_EPROTO);
}

static void test_connect_to_bulk_without_body_times_out(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_HUGE_BULK, RLOCK_ETIMEDOUT);
}

/* A reply that never ends but always has a next byte: no single read waits
 * a whole command timeout, yet the command timeout must still hold. */
static void test_connect_to_trickling_server_times_out(void **state)
{
    (void)state;
    CHECK_FAKE_CONNECT(FS_TRICKLE, RLOCK_ETIMEDOUT);
}

/* A server that passes the connect check (PING, SCRIPT LOAD) and then
 * misbehaves on every connection the I/O thread opens: each call returns a
 * documented code within its budget, nothing is held, and the client frees
 * without hanging. */
static int free_client_main(void *p)
{
    rlock_client_free(p);
    return 0;
}

static void check_fake_after_handshake(fs_mode mode, const char *what)
{
    /* call, budget: retries are 1 attempt more, 50 ms apart, each at most
     * one 500 ms command timeout; trylock(1000) adds its wait */
    static const struct {
        int op;
        int64_t budget_ms;
    } calls[] = {
        {0, 2 * 500 + 50}, {3, 1000 + 500}, {2, 2 * 500 + 50}, {1, 500}};
    fake_server *s = fs_start(mode, 1);
    rlock_client *c = NULL;
    bg_call b;
    rlock *l;
    int rc;

    assert_int_equal(connect_short(&c, fs_url(s), 500), RLOCK_OK);
    l = lt_get_lock(c, "misuse:fake");
    for (size_t i = 0; i < sizeof(calls) / sizeof(*calls); i++) {
        rc = bounded_op_or_stop(l, calls[i].op, calls[i].budget_ms, what, s);
        if (rc == OP_HUNG) {
            rlock_free(l);
            rlock_client_free(c); /* the server is gone by now */
            fail_msg("%s: call %zu hung past its budget of %lld ms", what, i,
                     (long long)calls[i].budget_ms);
        }
        ASSERT_CODE_IN(what, rc, RLOCK_ETIMEDOUT, RLOCK_ECONN, RLOCK_EPROTO);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    rlock_free(l);

    /* freeing waits at most one command timeout for the drain */
    bg_start(&b, free_client_main, c);
    if (!bg_wait(&b, 500 + SLACK_MS)) {
        fs_stop(s); /* closing the server's side may unblock it */
        bg_wait(&b, 10000);
        fail_msg("%s: rlock_client_free did not return in %d ms", what,
                 500 + SLACK_MS);
    }
    bg_join(&b);
    fs_stop(s);
}

static void test_server_silent_after_handshake(void **state)
{
    (void)state;
    check_fake_after_handshake(FS_SILENT, "silent after handshake");
}

static void test_server_garbage_after_handshake(void **state)
{
    (void)state;
    check_fake_after_handshake(FS_GARBAGE, "garbage after handshake");
}

static void test_server_closing_after_handshake(void **state)
{
    (void)state;
    check_fake_after_handshake(FS_CLOSE, "closing after handshake");
}

static void test_server_trickling_after_handshake(void **state)
{
    (void)state;
    check_fake_after_handshake(FS_TRICKLE, "trickling after handshake");
}

/* ==================================================== stopped server */

/* Every call on a client whose server is gone answers a documented code
 * within its budget; after a restart on the same port the same client
 * works again; freeing it with a hold while the server is down does not
 * hang. */
static void test_every_call_on_stopped_server(void **state)
{
    fixture *f = *state;
    rlock_client *c = NULL;
    rlock *a, *b, *fresh = NULL;
    int64_t t0, ttl;
    int rc;

    assert_int_equal(connect_short(&c, f->scratch.url, 500), RLOCK_OK);
    a = lt_get_lock(c, "misuse:stopped:a");
    b = lt_get_lock(c, "misuse:stopped:b");
    assert_int_equal(rlock_lock(a), RLOCK_OK);
    assert_int_equal(rlock_trylock(b, 0, 60000), RLOCK_OK);
    rt_redis_stop(&f->scratch);

    /* no traffic: works */
    assert_int_equal(rlock_get(c, "misuse:stopped:fresh", &fresh), RLOCK_OK);
    assert_string_equal(rlock_client_id(c), rlock_client_id(c));

    t0 = rt_now_ms();
    rc = rlock_is_locked(a);
    ASSERT_CODE_IN("is_locked", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    rc = rlock_is_held_by_me(a);
    ASSERT_CODE_IN("is_held_by_me", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    rc = rlock_hold_count(a);
    ASSERT_CODE_IN("hold_count", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    ttl = rlock_remaining_ttl(a);
    ASSERT_CODE_IN("remaining_ttl", (int)ttl, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    rc = rlock_force_unlock(b);
    ASSERT_CODE_IN("force_unlock", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    rc = rlock_trylock(fresh, 0, 1000);
    ASSERT_CODE_IN("trylock", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    rc = rlock_unlock(a);
    ASSERT_CODE_IN("unlock", rc, RLOCK_ECONN, RLOCK_ETIMEDOUT);
    /* the failed unlock forgot the hold */
    assert_int_equal(rlock_unlock(a), RLOCK_ENOTOWNER);
    /* seven calls, each at most two attempts of 500 ms, 50 ms apart */
    assert_true(rt_now_ms() - t0 < 7 * (2 * 500 + 50) + SLACK_MS);

    /* same port, empty data set: the client reconnects by itself */
    assert_int_equal(rt_redis_restart(&f->scratch), 0);
    assert_int_equal(rlock_trylock(fresh, 2000, RLOCK_LEASE_WATCHDOG),
                     RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->scratch, "EXISTS misuse:stopped:fresh"), 1);
    assert_int_equal(rlock_unlock(fresh), RLOCK_OK);
    assert_int_equal(rlock_lock(a), RLOCK_OK);
    rlock_free(fresh);
    rlock_free(b);
    rlock_free(a);

    /* a hold left, the server gone, and the client freed */
    rt_redis_stop(&f->scratch);
    t0 = rt_now_ms();
    rlock_client_free(c);
    assert_true(rt_now_ms() - t0 < 500 + SLACK_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_of_any_code_are_never_null),
        cmocka_unit_test(test_thread_ids_are_positive_stable_and_distinct),
        cmocka_unit_test(test_client_id_is_a_lowercase_uuid),
        cmocka_unit_test(test_one_mib_name_is_einval),
        cmocka_unit_test(test_odd_names_round_trip_to_the_same_key),
        cmocka_unit_test(test_name_of_every_byte_round_trips),
        cmocka_unit_test(test_near_identical_names_are_distinct_locks),
        cmocka_unit_test(test_name_buffer_may_be_reused_after_get),
        cmocka_unit_test(test_more_invalid_waits_and_leases_are_einval),
        cmocka_unit_test(test_extreme_valid_leases),
        cmocka_unit_test(test_huge_wait_on_held_lock_waits_then_acquires),
        cmocka_unit_test(test_hold_count_of_corrupt_field_is_eproto),
        cmocka_unit_test(test_config_extremes_leave_config_unchanged),
        cmocka_unit_test(test_more_bad_uris_are_einval),
        cmocka_unit_test(test_one_mib_uris_fail_cleanly),
        cmocka_unit_test(test_overlong_socket_path_is_refused),
        cmocka_unit_test(test_upper_case_scheme_connects),
        cmocka_unit_test(test_database_out_of_server_range_is_eauth),
        cmocka_unit_test(test_lock_lands_in_the_uri_database),
        cmocka_unit_test_setup_teardown(test_password_with_reserved_characters,
                                        password_setup, scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_password_changed_under_connected_client, password_setup,
            scratch_teardown),
        cmocka_unit_test_setup_teardown(
            test_client_recovers_when_password_is_restored, password_setup,
            scratch_teardown),
        cmocka_unit_test(test_connect_to_silent_server_times_out),
        cmocka_unit_test(test_connect_to_closing_server_is_econn),
        cmocka_unit_test(test_connect_to_garbage_server_is_eproto),
        cmocka_unit_test(test_connect_to_ssh_server_is_eproto),
        cmocka_unit_test(test_connect_to_ok_to_everything_server_is_eproto),
        cmocka_unit_test(test_connect_to_error_to_everything_server_fails),
        cmocka_unit_test(test_connect_to_noauth_server_is_eauth),
        cmocka_unit_test(test_connect_to_deeply_nested_reply_is_eproto),
        cmocka_unit_test(test_connect_to_bulk_without_body_times_out),
        cmocka_unit_test(test_connect_to_trickling_server_times_out),
        cmocka_unit_test(test_server_silent_after_handshake),
        cmocka_unit_test(test_server_garbage_after_handshake),
        cmocka_unit_test(test_server_closing_after_handshake),
        cmocka_unit_test(test_server_trickling_after_handshake),
        cmocka_unit_test_setup_teardown(test_every_call_on_stopped_server,
                                        scratch_setup, scratch_teardown),
    };

    rt_require_redis();
    return cmocka_run_group_tests_name("misuse", tests, group_setup,
                                       group_teardown);
}
