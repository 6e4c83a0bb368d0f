/*
 * test_misuse_new_api.c: bad input and misuse of the newer parts of the
 * API: lost-lock callbacks, the async API with explicit owners and libev
 * loops, the server settings of rlock_config, and Redisson JSON config
 * files. The older calls are in test_misuse.c.
 *
 * What tests/integration/test_async.c and test_lost_signal.c check already
 * (the plain NULL/zero-owner/NULL-callback refusals, the unlock of an owner
 * without a hold, a cleared callback) is not repeated here.
 *
 * Every call that a broken library could hang or call back twice is given
 * a deadline, and every callback is counted: an accepted async request
 * gets exactly one callback, a refused one none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "misuse_new"

#define MIB (1024 * 1024)
/* How long a callback may take to arrive before we call it lost. */
#define CALLBACK_WITHIN_MS 5000

typedef struct fixture {
    rt_redis redis;
    rlock_client *client;
    rt_redis scratch; /* per-test server for tests that stop or reconfigure */
    char dir[64];     /* per-group temp dir for config files */
} fixture;

/* ------------------------------------------------------------ helpers */

/* Completions of async calls, guarded by mu. */
typedef struct completions {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status[32];
    uint64_t owner[32];
    rlock *lock[32];
} completions;

static void completions_init(completions *c)
{
    pthread_condattr_t attr;

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &attr);
    pthread_condattr_destroy(&attr);
}

static void completions_destroy(completions *c)
{
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

static void on_done(rlock *l, uint64_t owner, int status, void *arg)
{
    completions *c = arg;

    pthread_mutex_lock(&c->mu);
    if (c->calls < 32) {
        c->status[c->calls] = status;
        c->owner[c->calls] = owner;
        c->lock[c->calls] = l;
    }
    c->calls++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static int calls_of(completions *c)
{
    int n;

    pthread_mutex_lock(&c->mu);
    n = c->calls;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* Waits until c has n calls or timeout_ms passed; returns the count. */
static int await_calls(completions *c, int n, int64_t timeout_ms)
{
    int64_t until = rt_now_ms() + timeout_ms;
    struct timespec ts = {(time_t)(until / 1000),
                          (long)(until % 1000) * 1000000L};
    int got;

    pthread_mutex_lock(&c->mu);
    while (c->calls < n && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0)
        ;
    got = c->calls;
    pthread_mutex_unlock(&c->mu);
    return got;
}

static int status_of(completions *c, int i)
{
    int s;

    pthread_mutex_lock(&c->mu);
    s = c->status[i];
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* Starts an async acquire and waits for its one callback; returns its
 * status. */
static int lock_sync(rlock *l, uint64_t owner, int64_t wait_ms,
                     int64_t lease_ms)
{
    completions c;
    int status;

    completions_init(&c);
    assert_int_equal(rlock_lock_async(l, owner, wait_ms, lease_ms, on_done, &c),
                     RLOCK_OK);
    /* a budget past a minute is "forever" here: the lock must be free */
    assert_int_equal(
        await_calls(&c, 1,
                    CALLBACK_WITHIN_MS + (wait_ms > 60000 ? 0 : wait_ms)),
        1);
    status = status_of(&c, 0);
    rt_sleep_ms(20);
    assert_int_equal(calls_of(&c), 1); /* exactly once */
    completions_destroy(&c);
    return status;
}

static int unlock_sync(rlock *l, uint64_t owner)
{
    completions c;
    int status;

    completions_init(&c);
    assert_int_equal(rlock_unlock_async(l, owner, on_done, &c), RLOCK_OK);
    assert_int_equal(await_calls(&c, 1, CALLBACK_WITHIN_MS), 1);
    status = status_of(&c, 0);
    rt_sleep_ms(20);
    assert_int_equal(calls_of(&c), 1);
    completions_destroy(&c);
    return status;
}

static char *filled(size_t n, char ch)
{
    char *s = malloc(n + 1);

    assert_non_null(s);
    memset(s, ch, n);
    s[n] = '\0';
    return s;
}

/* Writes len bytes of text to dir/file and returns the malloc'd path. */
static char *write_file(const fixture *f, const char *file, const void *text,
                        size_t len)
{
    size_t n = strlen(f->dir) + strlen(file) + 2;
    char *path = malloc(n);
    FILE *out;

    assert_non_null(path);
    snprintf(path, n, "%s/%s", f->dir, file);
    out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(text, 1, len, out), len);
    assert_int_equal(fclose(out), 0);
    return path;
}

/* write_file() for a string literal (which may hold NUL bytes). */
#define WRITE_LITERAL(f, file, lit) \
    write_file((f), (file), (lit), sizeof(lit) - 1)

/* A raw, authenticated (password not NULL) connection to r. */
static redisContext *raw_connect(const rt_redis *r, const char *password)
{
    struct timeval tv = {5, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", r->port, tv);

    assert_non_null(ctx);
    assert_int_equal(ctx->err, 0);
    if (password != NULL) {
        redisReply *rep = redisCommand(ctx, "AUTH %s", password);

        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        freeReplyObject(rep);
    }
    return ctx;
}

/* ------------------------------------------------------------ fixtures */

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || lt_start(&f->redis, &f->client, NULL) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->dir, sizeof(f->dir), "/tmp/rlock-misuse-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        lt_stop(&f->redis, f->client);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];

    lt_stop(&f->redis, f->client);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->dir);
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

/* ===================================================== lost callbacks */

typedef struct lost_seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    char name[512];
    size_t name_len;
    uint64_t owner;
    int reason;
    /* for the callback that clears callbacks from inside itself */
    rlock_client *client;
    rlock *lock;
    int clear_rc[2];
} lost_seen;

static void lost_init(lost_seen *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void lost_destroy(lost_seen *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

static void on_lost(const char *name, uint64_t owner, uint64_t hold,
                    int reason, void *arg)
{
    lost_seen *s = arg;
    (void)hold;

    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->name_len = strlen(name);
    if (s->name_len < sizeof(s->name))
        memcpy(s->name, name, s->name_len + 1);
    s->owner = owner;
    s->reason = reason;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Clears both callbacks from inside a callback: must not deadlock. */
static void on_lost_clearing(const char *name, uint64_t owner,
                             uint64_t hold, int reason, void *arg)
{
    lost_seen *s = arg;

    s->clear_rc[0] = rlock_client_on_lost(s->client, NULL, NULL);
    s->clear_rc[1] = rlock_on_lost(s->lock, NULL, NULL);
    on_lost(name, owner, hold, reason, arg);
}

static int lost_wait(lost_seen *s, int n)
{
    int64_t deadline = rt_now_ms() + CALLBACK_WITHIN_MS;
    int calls;

    for (;;) {
        pthread_mutex_lock(&s->mu);
        calls = s->calls;
        pthread_mutex_unlock(&s->mu);
        if (calls >= n || rt_now_ms() >= deadline)
            return calls;
        rt_sleep_ms(5);
    }
}

static void test_lost_setters_refuse_null_handles(void **state)
{
    lost_seen s;

    (void)state;
    lost_init(&s);
    assert_int_equal(rlock_client_on_lost(NULL, on_lost, &s), RLOCK_EINVAL);
    assert_int_equal(rlock_client_on_lost(NULL, NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_on_lost(NULL, on_lost, &s), RLOCK_EINVAL);
    assert_int_equal(rlock_on_lost(NULL, NULL, NULL), RLOCK_EINVAL);
    lost_destroy(&s);
}

/* Losing the hold of a lock whose name has every byte 1..255 (found by a
 * query after a raw DEL): the callbacks get the name byte for byte, the
 * replaced client callback is not called, and clearing callbacks from
 * inside a callback neither deadlocks nor fails. */
static void test_lost_callbacks_replaced_and_cleared_from_inside(void **state)
{
    fixture *f = *state;
    lost_seen replaced, client_seen, lock_seen;
    char name[256];
    rlock *l;

    for (int i = 1; i < 256; i++)
        name[i - 1] = (char)i;
    name[255] = '\0';
    lost_init(&replaced);
    lost_init(&client_seen);
    lost_init(&lock_seen);
    l = lt_get_lock(f->client, name);
    client_seen.client = f->client;
    client_seen.lock = l;
    client_seen.clear_rc[0] = client_seen.clear_rc[1] = 1;

    assert_int_equal(rlock_client_on_lost(f->client, on_lost, &replaced),
                     RLOCK_OK);
    assert_int_equal(
        rlock_client_on_lost(f->client, on_lost_clearing, &client_seen),
        RLOCK_OK);
    assert_int_equal(rlock_on_lost(l, on_lost, &lock_seen), RLOCK_OK);
    /* setting the same callback twice is no different from once */
    assert_int_equal(rlock_on_lost(l, on_lost, &lock_seen), RLOCK_OK);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %b", name, (size_t)255), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(lost_wait(&client_seen, 1), 1);
    assert_int_equal(lost_wait(&lock_seen, 1), 1);
    rt_sleep_ms(100);
    assert_int_equal(lost_wait(&client_seen, 2), 1); /* once only */
    assert_int_equal(lost_wait(&lock_seen, 2), 1);
    assert_int_equal(replaced.calls, 0);
    assert_int_equal(client_seen.clear_rc[0], RLOCK_OK);
    assert_int_equal(client_seen.clear_rc[1], RLOCK_OK);
    assert_int_equal(lock_seen.name_len, 255);
    assert_memory_equal(lock_seen.name, name, 256);
    assert_memory_equal(client_seen.name, name, 256);
    assert_int_equal(lock_seen.owner, rlock_thread_id());
    assert_int_equal(lock_seen.reason, RLOCK_LOST_GONE);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);

    /* cleared: a second loss calls nobody */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %b", name, (size_t)255), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    rt_sleep_ms(300);
    assert_int_equal(lost_wait(&client_seen, 2), 1);
    assert_int_equal(lost_wait(&lock_seen, 2), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
    lost_destroy(&replaced);
    lost_destroy(&client_seen);
    lost_destroy(&lock_seen);
}

/* A lock callback set through a handle that is then freed stays while the
 * hold exists ("kept while a handle to the name or a hold on it exists"). */
static void test_lock_callback_outlives_its_freed_handle(void **state)
{
    fixture *f = *state;
    const char *name = "misuse_new:cb \xc3\xa9\n{x}";
    lost_seen seen;
    rlock *l, *again;

    lost_init(&seen);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_on_lost(l, on_lost, &seen), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rlock_free(l);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    again = lt_get_lock(f->client, name);
    assert_int_equal(rlock_is_held_by_me(again), 0);
    assert_int_equal(lost_wait(&seen, 1), 1);
    assert_string_equal(seen.name, name);
    assert_int_equal(rlock_unlock(again), RLOCK_ELOST);
    rlock_free(again);
    lost_destroy(&seen);
}

/* ========================================================= async API */

static void *thread_id_main(void *p)
{
    *(uint64_t *)p = rlock_thread_id();
    return NULL;
}

static void test_owner_ids_are_distinct_across_threads(void **state)
{
    enum { N = 2000 };
    uint64_t *ids = malloc(sizeof(*ids) * N);
    uint64_t tid = rlock_thread_id();

    (void)state;
    assert_non_null(ids);
    for (int i = 0; i < N; i++) {
        ids[i] = rlock_owner_new();
        assert_true(ids[i] != 0);
        assert_true(ids[i] != tid);
        for (int j = 0; j < i; j++)
            assert_true(ids[j] != ids[i]);
    }
    /* a thread id given out after them is none of them either */
    {
        uint64_t later = 0;
        pthread_t t;

        assert_int_equal(pthread_create(&t, NULL, thread_id_main, &later), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(later != 0);
        for (int i = 0; i < N; i++)
            assert_true(ids[i] != later);
    }
    free(ids);
}

static void test_async_extreme_arguments_are_einval(void **state)
{
    static const int64_t bad_waits[] = {-2, -1000, INT64_MIN, INT64_MIN + 1};
    static const int64_t bad_leases[] = {0, -2, INT64_MIN,
                                         (INT64_C(1) << 50) + 1, INT64_MAX};
    fixture *f = *state;
    uint64_t owner = rlock_owner_new();
    completions c;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    completions_init(&c);
    l = lt_get_lock(f->client, name);
    for (size_t i = 0; i < sizeof(bad_waits) / sizeof(*bad_waits); i++)
        assert_int_equal(rlock_lock_async(l, owner, bad_waits[i],
                                          RLOCK_LEASE_WATCHDOG, on_done, &c),
                         RLOCK_EINVAL);
    for (size_t i = 0; i < sizeof(bad_leases) / sizeof(*bad_leases); i++)
        assert_int_equal(
            rlock_lock_async(l, owner, INT64_MAX, bad_leases[i], on_done, &c),
            RLOCK_EINVAL);
    assert_int_equal(rlock_unlock_async(NULL, owner, on_done, &c),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_unlock_async(l, 0, on_done, &c), RLOCK_EINVAL);
    assert_int_equal(rlock_owner_hold_count(NULL, owner), RLOCK_EINVAL);
    assert_int_equal(rlock_owner_hold_count(l, owner), 0);
    assert_int_equal(rlock_owner_hold_count(l, UINT64_MAX), 0);
    /* none of the refused calls calls back, and Redis is untouched */
    rt_sleep_ms(100);
    assert_int_equal(calls_of(&c), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
    completions_destroy(&c);
}

/* The extreme valid values: wait INT64_MAX, lease 2^50 and 1 ms, owner
 * UINT64_MAX; more async unlocks than locks. */
static void test_async_extreme_valid_values(void **state)
{
    fixture *f = *state;
    char name[128], field[128];
    int64_t ttl;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(lock_sync(l, UINT64_MAX, INT64_MAX, INT64_C(1) << 50),
                     RLOCK_OK);
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(f->client),
             (unsigned long long)UINT64_MAX);
    lt_assert_single_field(&f->redis, name, field, "1");
    ttl = rlock_remaining_ttl(l);
    assert_true(ttl > (INT64_C(1) << 50) - 60000);
    assert_int_equal(lock_sync(l, UINT64_MAX, 0, 1000), RLOCK_OK);
    assert_int_equal(rlock_owner_hold_count(l, UINT64_MAX), 2);
    assert_int_equal(unlock_sync(l, UINT64_MAX), RLOCK_OK);
    assert_int_equal(unlock_sync(l, UINT64_MAX), RLOCK_OK);
    assert_int_equal(unlock_sync(l, UINT64_MAX), RLOCK_ENOTOWNER);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);

    /* a 1 ms lease runs out before the unlock */
    assert_int_equal(lock_sync(l, UINT64_MAX, 0, 1), RLOCK_OK);
    rt_sleep_ms(50);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(unlock_sync(l, UINT64_MAX), RLOCK_ELOST);
    assert_int_equal(rlock_owner_hold_count(l, UINT64_MAX), 0);
    rlock_free(l);
}

/* An INT64_MAX wait on a held lock waits (no overflow into "expired") and
 * gets the lock when it is released. */
static void test_async_huge_wait_on_held_lock(void **state)
{
    fixture *f = *state;
    uint64_t owner = rlock_owner_new();
    completions c;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    completions_init(&c);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, owner, INT64_MAX, 60000, on_done, &c),
                     RLOCK_OK);
    rt_sleep_ms(300);
    assert_int_equal(calls_of(&c), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(await_calls(&c, 1, CALLBACK_WITHIN_MS), 1);
    assert_int_equal(status_of(&c, 0), RLOCK_OK);
    assert_int_equal(rlock_owner_hold_count(l, owner), 1);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    rt_sleep_ms(20);
    assert_int_equal(calls_of(&c), 1);
    rlock_free(l);
    completions_destroy(&c);
}

/* Cancelling with nothing pending does nothing; cancelling a pending
 * acquire twice still completes it exactly once. */
static void test_cancel_is_idempotent(void **state)
{
    fixture *f = *state;
    uint64_t owner = rlock_owner_new();
    completions c;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    completions_init(&c);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
    assert_int_equal(rlock_cancel(l, 0), RLOCK_OK);
    assert_int_equal(rlock_cancel(l, UINT64_MAX), RLOCK_OK);

    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, on_done, &c),
                     RLOCK_OK);
    rt_sleep_ms(100);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
    assert_int_equal(await_calls(&c, 1, CALLBACK_WITHIN_MS), 1);
    assert_int_equal(status_of(&c, 0), RLOCK_ECANCELED);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
    rt_sleep_ms(200);
    assert_int_equal(calls_of(&c), 1);
    assert_int_equal(rlock_owner_hold_count(l, owner), 0);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    completions_destroy(&c);
}

/* An async lock on a name of every byte 1..255 writes that key, with the
 * owner's field. */
static void test_async_odd_name_round_trips(void **state)
{
    fixture *f = *state;
    uint64_t owner = rlock_owner_new();
    char name[256], field[128];
    redisReply *rep;
    rlock *l;

    for (int i = 1; i < 256; i++)
        name[i - 1] = (char)(256 - i);
    name[255] = '\0';
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(f->client),
             (unsigned long long)owner);
    l = lt_get_lock(f->client, name);
    assert_int_equal(lock_sync(l, owner, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    rep = rt_cmd(&f->redis, "HGETALL %b", name, (size_t)255);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, field);
    assert_string_equal(rep->element[1]->str, "1");
    freeReplyObject(rep);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %b", name, (size_t)255), 0);
    rlock_free(l);
}

/* Async calls on a client whose server is gone complete once, with a
 * connection error, within their budget; the client works again after a
 * restart. */
static void test_async_on_stopped_server(void **state)
{
    fixture *f = *state;
    uint64_t owner = rlock_owner_new();
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    int64_t t0;
    rlock *l;
    int rc;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 500), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 1), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 50), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->scratch.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    l = lt_get_lock(c, "misuse_new:stopped");
    assert_int_equal(lock_sync(l, owner, 0, 60000), RLOCK_OK);
    rt_redis_stop(&f->scratch);

    t0 = rt_now_ms();
    rc = unlock_sync(l, owner);
    if (rc != RLOCK_ECONN && rc != RLOCK_ETIMEDOUT)
        fail_msg("unlock_async on a stopped server: %s", rlock_err_name(rc));
    rc = lock_sync(l, rlock_owner_new(), 1000, RLOCK_LEASE_WATCHDOG);
    if (rc != RLOCK_ECONN && rc != RLOCK_ETIMEDOUT)
        fail_msg("lock_async on a stopped server: %s", rlock_err_name(rc));
    assert_true(rt_now_ms() - t0 < 2 * (2 * 500 + 50) + 1000 + 3000);

    assert_int_equal(rt_redis_restart(&f->scratch), 0);
    assert_int_equal(lock_sync(l, owner, 2000, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

/* Loops: attaching NULL with none attached, replacing one loop by another,
 * and detaching with a completion queued for a loop that never ran: the
 * completion still comes, exactly once. */
static void test_attach_detach_and_replace_loops(void **state)
{
    fixture *f = *state;
    struct ev_loop *one = ev_loop_new(EVFLAG_AUTO);
    struct ev_loop *two = ev_loop_new(EVFLAG_AUTO);
    uint64_t owner = rlock_owner_new();
    int64_t deadline;
    completions c;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    assert_non_null(one);
    assert_non_null(two);
    completions_init(&c);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_client_attach_loop(f->client, NULL), RLOCK_OK);
    assert_int_equal(rlock_client_attach_loop(f->client, one), RLOCK_OK);
    assert_int_equal(rlock_client_attach_loop(f->client, two), RLOCK_OK);

    /* completes on loop two, which does not run: no callback yet */
    assert_int_equal(rlock_lock_async(l, owner, 0, 60000, on_done, &c),
                     RLOCK_OK);
    deadline = rt_now_ms() + CALLBACK_WITHIN_MS;
    while (rt_cmd_int(&f->redis, "EXISTS %s", name) != 1 &&
           rt_now_ms() < deadline)
        rt_sleep_ms(10);
    rt_sleep_ms(100);
    assert_int_equal(calls_of(&c), 0);
    ev_run(one, EVRUN_NOWAIT); /* the replaced loop delivers nothing */
    assert_int_equal(calls_of(&c), 0);

    /* detached: the completion comes (at once or from the I/O thread) */
    assert_int_equal(rlock_client_attach_loop(f->client, NULL), RLOCK_OK);
    assert_int_equal(await_calls(&c, 1, CALLBACK_WITHIN_MS), 1);
    assert_int_equal(status_of(&c, 0), RLOCK_OK);
    ev_run(two, EVRUN_NOWAIT);
    rt_sleep_ms(50);
    assert_int_equal(calls_of(&c), 1);

    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    ev_loop_destroy(one);
    ev_loop_destroy(two);
    rlock_free(l);
    completions_destroy(&c);
}

/* ==================================================== server settings */

static void test_set_server_refuses_what_connect_refuses(void **state)
{
    static const char *const bad[] = {
        "",        "http://x",    "redis://", "redis://h:0", "redis://:%zz@h",
        "unix://", "redis://h /1"};
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = (rlock_client *)&c;
    char *big = filled(MIB, 'a');

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_server(NULL, f->redis.url), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_server(cfg, NULL), RLOCK_EINVAL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (rlock_config_set_server(cfg, bad[i]) != RLOCK_EINVAL)
            fail_msg("set_server(\"%s\") accepted", bad[i]);
    assert_int_equal(rlock_config_set_server(cfg, big), RLOCK_EINVAL);
    /* no server anywhere: connect refuses */
    assert_int_equal(rlock_client_connect_with(&c, NULL, cfg), RLOCK_EINVAL);
    assert_null(c);
    /* the refused values left nothing behind: a good one works */
    assert_int_equal(rlock_config_set_server(cfg, f->redis.url), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, NULL, cfg), RLOCK_OK);
    rlock_client_free(c);
    rlock_config_free(cfg);
    free(big);
}

static void test_set_credentials_misuse(void **state)
{
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = (rlock_client *)&c;
    char *big = filled(MIB, 'p');
    int rc;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_credentials(NULL, NULL, "pw"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, "user", NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, "", "pw"), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, ""), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, NULL), RLOCK_OK);
    /* a 1 MiB password is a valid argument; the server (which has none)
     * refuses it */
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, big), RLOCK_OK);
    rc = rlock_client_connect_with(&c, f->redis.url, cfg);
    assert_int_equal(rc, RLOCK_EAUTH);
    assert_null(c);
    rlock_config_free(cfg);
    free(big);
}

/* Passwords and user names are bytes: spaces, newlines and bytes >= 0x80
 * work, and credentials set on the config win over the URI's. */
static void test_credentials_with_odd_bytes_win_over_uri(void **state)
{
    static const char password[] = "p w\n\xc3\xa9\xff:@/%";
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    redisContext *ctx;
    redisReply *rep;
    char url[128];
    rlock *l;

    rep = rt_cmd(&f->scratch, "CONFIG SET requirepass %b", password,
                 sizeof(password) - 1);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, password),
                     RLOCK_OK);
    snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", f->scratch.port);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    l = lt_get_lock(c, "misuse_new:creds");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);

    /* the same with a user holding odd bytes */
    ctx = raw_connect(&f->scratch, password);
    rep = redisCommand(ctx, "ACL SETUSER %s on >%s ~* &* +@all",
                       "\xc3\xa9\xffu", "second");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(ctx);
    assert_int_equal(
        rlock_config_set_credentials(cfg, "\xc3\xa9\xffu", "second"), RLOCK_OK);
    c = NULL;
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    rlock_client_free(c);
    assert_int_equal(rlock_config_set_credentials(cfg, "\xc3\xa9\xffu", "nope"),
                     RLOCK_OK);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_EAUTH);
    assert_null(c);
    rlock_config_free(cfg);
}

static void test_set_database_misuse(void **state)
{
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = (rlock_client *)&c;
    redisContext *ctx;
    redisReply *rep;
    char url[96];
    rlock *l;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_database(NULL, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_database(cfg, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_database(cfg, INT_MIN), RLOCK_EINVAL);
    /* valid for rlock, refused by a server with 16 databases */
    assert_int_equal(rlock_config_set_database(cfg, INT_MAX), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_EAUTH);
    assert_null(c);
    /* the config's database wins over the URI's */
    assert_int_equal(rlock_config_set_database(cfg, 14), RLOCK_OK);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/3", f->redis.port);
    c = NULL;
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    l = lt_get_lock(c, "misuse_new:db");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    ctx = raw_connect(&f->redis, NULL);
    rep = redisCommand(ctx, "SELECT 14");
    freeReplyObject(rep);
    rep = redisCommand(ctx, "EXISTS misuse_new:db");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    rep = redisCommand(ctx, "SELECT 3");
    freeReplyObject(rep);
    rep = redisCommand(ctx, "DBSIZE");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 0);
    freeReplyObject(rep);
    redisFree(ctx);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
    rlock_config_free(cfg);
}

/* Counts the server's clients named name. */
static int clients_named(rt_redis *r, const char *name)
{
    char *list = rt_cmd_str(r, "CLIENT LIST");
    char pattern[160];
    int n = 0;

    assert_non_null(list);
    snprintf(pattern, sizeof(pattern), " name=%s ", name);
    for (const char *p = list; (p = strstr(p, pattern)) != NULL; p++)
        n++;
    free(list);
    return n;
}

static void test_set_client_name_misuse(void **state)
{
    static const char *const bad[] = {"",         "a b",  "a\nb",
                                      "\xc3\xa9", "\x7f", "tab\t"};
    fixture *f = *state;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock *l;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_client_name(NULL, "x"), RLOCK_EINVAL);
    /* names Redis would refuse are refused here, and change nothing */
    assert_int_equal(rlock_config_set_client_name(cfg, "misuse-client"),
                     RLOCK_OK);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (rlock_config_set_client_name(cfg, bad[i]) != RLOCK_EINVAL)
            fail_msg("client name \"%s\" accepted", bad[i]);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    l = lt_get_lock(c, "misuse_new:named");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_true(clients_named(&f->redis, "misuse-client") >= 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
    /* NULL clears it */
    assert_int_equal(rlock_config_set_client_name(cfg, NULL), RLOCK_OK);
    c = NULL;
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    l = lt_get_lock(c, "misuse_new:named");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(clients_named(&f->redis, "misuse-client"), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
    rlock_config_free(cfg);
}

/* ======================================================= config files */

/* Loads path and expects RLOCK_EINVAL, no config, and a message naming
 * the file. */
static void expect_bad_file(const char *path, const char *what)
{
    rlock_config *cfg = (rlock_config *)&cfg;
    char err[512];
    int rc = rlock_config_load_file(&cfg, path, err, sizeof(err));

    if (rc != RLOCK_EINVAL)
        fail_msg("%s: %s, expected RLOCK_EINVAL", what, rlock_err_name(rc));
    assert_null(cfg);
    if (strlen(path) < 200 && strstr(err, path) == NULL)
        fail_msg("%s: message \"%s\" does not name the file", what, err);
    print_message("%s: %s\n", what, err);
}

static void test_load_file_argument_misuse(void **state)
{
    fixture *f = *state;
    char err[64], *big = filled(MIB, 'd');
    rlock_config *cfg = (rlock_config *)&cfg;
    rlock_client *c = (rlock_client *)&c;
    char *path;

    path = WRITE_LITERAL(f, "ok.json", "{}");
    assert_int_equal(rlock_config_load_file(NULL, path, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_load_file(&cfg, NULL, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_null(cfg);
    /* no message buffer, or one of length 0 or 1 */
    assert_int_equal(
        rlock_config_load_file(&cfg, "/nonexistent/x.json", NULL, 100),
        RLOCK_EINVAL);
    memset(err, 'z', sizeof(err));
    assert_int_equal(
        rlock_config_load_file(&cfg, "/nonexistent/x.json", err, 0),
        RLOCK_EINVAL);
    assert_int_equal(err[0], 'z');
    assert_int_equal(
        rlock_config_load_file(&cfg, "/nonexistent/x.json", err, 1),
        RLOCK_EINVAL);
    assert_int_equal(err[0], '\0');
    assert_int_equal(err[1], 'z');
    /* a long message is cut, not overflowed */
    assert_int_equal(rlock_config_load_file(&cfg, big, err, 16), RLOCK_EINVAL);
    assert_int_equal(strlen(err), 15);
    assert_int_equal(err[16], 'z');
    expect_bad_file("", "empty path");
    /* an empty object is a valid config */
    assert_int_equal(rlock_config_load_file(&cfg, path, NULL, 0), RLOCK_OK);
    rlock_config_free(cfg);

    assert_int_equal(rlock_client_connect_config(NULL, path), RLOCK_EINVAL);
    assert_int_equal(rlock_client_connect_config(&c, NULL), RLOCK_EINVAL);
    assert_null(c);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_config(&c, "/nonexistent/x.json"),
                     RLOCK_EINVAL);
    assert_null(c);
    free(path);
    free(big);
}

static void test_load_pathological_files(void **state)
{
    fixture *f = *state;
    char *path, *text;
    size_t n;

    expect_bad_file(f->dir, "a directory");
    expect_bad_file("/dev/zero", "/dev/zero (endless zeros)");
    expect_bad_file("/dev/urandom", "/dev/urandom (endless noise)");
    path = WRITE_LITERAL(f, "empty.json", "");
    expect_bad_file(path, "empty file");
    free(path);
    path = WRITE_LITERAL(f, "nul.json", "{\"a\0\": 1}");
    expect_bad_file(path, "NUL byte");
    free(path);
    path = WRITE_LITERAL(f, "utf8.json", "{\"\xc3\x28\": 1}");
    expect_bad_file(path, "invalid UTF-8");
    free(path);
    path = WRITE_LITERAL(f, "cut.json", "{\"singleServerConfig\": {\"addr");
    expect_bad_file(path, "truncated");
    free(path);
    path = WRITE_LITERAL(f, "array.json", "[]");
    expect_bad_file(path, "top-level array");
    free(path);
    path = WRITE_LITERAL(f, "dup.json", "{\"threads\": 1, \"threads\": 2}");
    expect_bad_file(path, "duplicate key");
    free(path);
    /* 100000 nested arrays */
    n = 200000;
    text = malloc(n);
    assert_non_null(text);
    memset(text, '[', n / 2);
    memset(text + n / 2, ']', n / 2);
    path = write_file(f, "deep.json", text, n);
    expect_bad_file(path, "deep nesting");
    free(path);
    /* a 3 MiB file of valid JSON whitespace */
    free(text);
    n = 3 * MIB;
    text = malloc(n);
    assert_non_null(text);
    memset(text, ' ', n);
    text[0] = '{';
    text[n - 1] = '}';
    path = write_file(f, "huge.json", text, n);
    expect_bad_file(path, "3 MiB file");
    free(path);
    free(text);
    /* out-of-range numbers and wrong types */
    path = WRITE_LITERAL(f, "range.json",
                         "{\"singleServerConfig\": {\"timeout\": 1e400}}");
    expect_bad_file(path, "1e400");
    free(path);
    path = WRITE_LITERAL(f, "neg.json",
                         "{\"singleServerConfig\": {\"timeout\": -1}}");
    expect_bad_file(path, "negative timeout");
    free(path);
    path = WRITE_LITERAL(f, "type.json",
                         "{\"singleServerConfig\": {\"database\": \"0\"}}");
    expect_bad_file(path, "string database");
    free(path);
    path = WRITE_LITERAL(f, "big.json",
                         "{\"lockWatchdogTimeout\": 99999999999999999999}");
    expect_bad_file(path, "20-digit number");
    free(path);
}

/* A file naming a server that answers, and one naming a port nothing
 * listens on. */
static void test_connect_config_reaches_its_server(void **state)
{
    fixture *f = *state;
    rlock_client *c = NULL;
    char text[256], *path;
    rlock *l;
    int n;

    n = snprintf(text, sizeof(text),
                 "{\"singleServerConfig\": {\"address\": "
                 "\"redis://127.0.0.1:%d\", \"database\": 2}}",
                 f->redis.port);
    path = write_file(f, "good.json", text, (size_t)n);
    assert_int_equal(rlock_client_connect_config(&c, path), RLOCK_OK);
    free(path);
    l = lt_get_lock(c, "misuse_new:config");
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS misuse_new:config"), 0);
    {
        redisContext *ctx = raw_connect(&f->redis, NULL);
        redisReply *rep = redisCommand(ctx, "SELECT 2");

        freeReplyObject(rep);
        rep = redisCommand(ctx, "EXISTS misuse_new:config");
        assert_non_null(rep);
        assert_int_equal(rep->integer, 1);
        freeReplyObject(rep);
        redisFree(ctx);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);

    rt_redis_stop(&f->scratch);
    n = snprintf(text, sizeof(text),
                 "{\"singleServerConfig\": {\"address\": "
                 "\"redis://127.0.0.1:%d\"}}",
                 f->scratch.port);
    path = write_file(f, "down.json", text, (size_t)n);
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_config(&c, path), RLOCK_ECONN);
    assert_null(c);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lost_setters_refuse_null_handles),
        cmocka_unit_test(test_lost_callbacks_replaced_and_cleared_from_inside),
        cmocka_unit_test(test_lock_callback_outlives_its_freed_handle),
        cmocka_unit_test(test_owner_ids_are_distinct_across_threads),
        cmocka_unit_test(test_async_extreme_arguments_are_einval),
        cmocka_unit_test(test_async_extreme_valid_values),
        cmocka_unit_test(test_async_huge_wait_on_held_lock),
        cmocka_unit_test(test_cancel_is_idempotent),
        cmocka_unit_test(test_async_odd_name_round_trips),
        cmocka_unit_test_setup_teardown(test_async_on_stopped_server,
                                        scratch_setup, scratch_teardown),
        cmocka_unit_test(test_attach_detach_and_replace_loops),
        cmocka_unit_test(test_set_server_refuses_what_connect_refuses),
        cmocka_unit_test(test_set_credentials_misuse),
        cmocka_unit_test_setup_teardown(
            test_credentials_with_odd_bytes_win_over_uri, scratch_setup,
            scratch_teardown),
        cmocka_unit_test(test_set_database_misuse),
        cmocka_unit_test(test_set_client_name_misuse),
        cmocka_unit_test(test_load_file_argument_misuse),
        cmocka_unit_test(test_load_pathological_files),
        cmocka_unit_test_setup_teardown(test_connect_config_reaches_its_server,
                                        scratch_setup, scratch_teardown),
    };

    rt_require_redis();
    return cmocka_run_group_tests_name("misuse_new_api", tests, group_setup,
                                       group_teardown);
}
