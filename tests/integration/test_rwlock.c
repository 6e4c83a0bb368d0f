/*
 * test_rwlock.c: the read-write lock (REDISSON-PROTOCOL.md section 4).
 *
 * Readers share the lock and writers have it alone. To see that from the
 * outside, threads keep "readers in" and "writers in" counters in Redis
 * (INCR on entry, DECR on exit) on their own plain hiredis connections, and
 * check the other side's counter while they hold the lock.
 *
 * Also: reentrancy on both sides, a writer taking the read lock and
 * dropping the two in either order, a reader refused the write lock, a
 * write unlock waking every waiting reader at once, the watchdog renewing
 * read holds (their per-hold timeout keys), rlock_is_locked and
 * rlock_force_unlock for each side.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "rwlock"

#define OVERLAP_READERS 6
/* The mixed run: per client, this many writer and reader threads. */
#define MIX_WRITERS    1
#define MIX_READERS    2
#define MIX_CLIENTS    2
#define MIX_ITERATIONS 100
/* Re-check interval of "pub/sub only" waiters: longer than any margin. */
#define SLOW_RECHECK_MS 30000
/* A wake-up through the unlock message, with margin (the lease is 30 s). */
#define WAKE_MS 2500
/* The short watchdog of the renewal test: renewed every 200 ms. */
#define SHORT_WATCHDOG_MS 600
#define HANG_MS           30000

/* ------------------------------------------------------------- helpers */

static rlock_rw *rw_get(rlock_client *c, const char *name)
{
    rlock_rw *rw = NULL;

    assert_int_equal(rlock_rw_get(c, name, &rw), RLOCK_OK);
    assert_non_null(rw);
    assert_non_null(rlock_rw_read(rw));
    assert_non_null(rlock_rw_write(rw));
    return rw;
}

/* The channel of both sides: redisson_rwlock:{N}. */
static void rw_channel_of(char *buf, size_t n, const char *name)
{
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "redisson_rwlock:%s", name);
    else
        snprintf(buf, n, "redisson_rwlock:{%s}", name);
}

/* The timeout key of read hold k of the calling thread of c:
 * {N}:<uuid>:<tid>:rwlock_timeout:<k>. */
static void read_timeout_key(char *buf, size_t n, rlock_client *c,
                             const char *name, int k)
{
    char owner[128];

    lt_owner_field(owner, sizeof(owner), c);
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "%s:%s:rwlock_timeout:%d", name, owner, k);
    else
        snprintf(buf, n, "{%s}:%s:rwlock_timeout:%d", name, owner, k);
}

static redisContext *plain_connect(rt_redis *r)
{
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);

    if (c != NULL && c->err != 0) {
        redisFree(c);
        c = NULL;
    }
    return c;
}

/* The integer reply of a command on c, or LLONG_MIN. */
static long long int_cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *rep;
    long long v = LLONG_MIN;

    va_start(ap, fmt);
    rep = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (rep == NULL)
        return v;
    if (rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else if (rep->type == REDIS_REPLY_NIL)
        v = 0;
    else if (rep->type == REDIS_REPLY_STRING)
        v = atoll(rep->str);
    freeReplyObject(rep);
    return v;
}

/* HGET name field as a number (0 when missing). */
static long long hget_int(rt_redis *r, const char *name, const char *field)
{
    char *v = rt_cmd_str(r, "HGET %s %s", name, field);
    long long n = v != NULL ? atoll(v) : 0;

    free(v);
    return n;
}

static void assert_mode(rt_redis *r, const char *name, const char *mode)
{
    char *v = rt_cmd_str(r, "HGET %s mode", name);

    assert_non_null(v);
    assert_string_equal(v, mode);
    free(v);
}

/* ------------------------------------------------- readers overlapping */

typedef struct overlap {
    rt_redis *redis;
    rlock *read;
    const char *counter;
    pthread_barrier_t start;
    atomic_int max_in;
    atomic_int errors;
} overlap;

static void *overlap_reader(void *p)
{
    overlap *o = p;
    redisContext *c = plain_connect(o->redis);
    long long in;

    pthread_barrier_wait(&o->start);
    if (c == NULL || rlock_lock(o->read) != RLOCK_OK) {
        atomic_fetch_add(&o->errors, 1);
        pthread_barrier_wait(&o->start); /* keep the others going */
        redisFree(c);
        return NULL;
    }
    in = int_cmd(c, "INCR %s", o->counter);
    for (int cur = atomic_load(&o->max_in); in > cur;)
        if (atomic_compare_exchange_weak(&o->max_in, &cur, (int)in))
            break;
    /* every reader is in before any leaves */
    pthread_barrier_wait(&o->start);
    if (int_cmd(c, "DECR %s", o->counter) == LLONG_MIN)
        atomic_fetch_add(&o->errors, 1);
    if (rlock_unlock(o->read) != RLOCK_OK)
        atomic_fetch_add(&o->errors, 1);
    redisFree(c);
    return NULL;
}

/* Several threads hold the read lock at the same time: each one, once in,
 * waits at a barrier for all the others to be in too. */
static void test_readers_hold_the_lock_together(void **state)
{
    lt_fixture *f = *state;
    pthread_t threads[OVERLAP_READERS];
    char name[128], counter[160];
    overlap o = {.redis = &f->redis};
    rlock_rw *rw;

    LT_TEST_NAME(name);
    snprintf(counter, sizeof(counter), "%s:readers_in", name);
    rw = rw_get(f->client, name);
    o.read = rlock_rw_read(rw);
    o.counter = counter;
    atomic_init(&o.max_in, 0);
    atomic_init(&o.errors, 0);
    pthread_barrier_init(&o.start, NULL, OVERLAP_READERS);
    for (int i = 0; i < OVERLAP_READERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, overlap_reader, &o),
                         0);
    for (int i = 0; i < OVERLAP_READERS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&o.start);

    assert_int_equal(atomic_load(&o.errors), 0);
    print_message("%d readers in at once\n", atomic_load(&o.max_in));
    assert_true(atomic_load(&o.max_in) > 1);
    assert_int_equal(atomic_load(&o.max_in), OVERLAP_READERS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* ----------------------------------------------- writers exclude everyone */

typedef struct mix {
    rt_redis *redis;
    const char *readers_in;
    const char *writers_in;
    atomic_int violations;
    atomic_int errors;
    atomic_int max_readers;
    char first[160];
    pthread_mutex_t mu;
} mix;

typedef struct mix_thread {
    pthread_t thread;
    mix *m;
    rlock *l;
    int writer;
} mix_thread;

static void mix_violation(mix *m, const char *what, long long v)
{
    if (atomic_fetch_add(&m->violations, 1) == 0) {
        pthread_mutex_lock(&m->mu);
        snprintf(m->first, sizeof(m->first), "%s (%lld)", what, v);
        pthread_mutex_unlock(&m->mu);
    }
}

static void *mix_main(void *p)
{
    mix_thread *t = p;
    mix *m = t->m;
    redisContext *c = plain_connect(m->redis);

    if (c == NULL) {
        atomic_fetch_add(&m->errors, 1);
        return NULL;
    }
    for (int i = 0; i < MIX_ITERATIONS; i++) {
        long long v;

        if (rlock_lock(t->l) != RLOCK_OK) {
            atomic_fetch_add(&m->errors, 1);
            break;
        }
        if (t->writer) {
            if ((v = int_cmd(c, "INCR %s", m->writers_in)) != 1)
                mix_violation(m, "writers in with a writer", v);
            if ((v = int_cmd(c, "GET %s", m->readers_in)) != 0)
                mix_violation(m, "readers in with a writer", v);
            if ((v = int_cmd(c, "DECR %s", m->writers_in)) != 0)
                mix_violation(m, "writers in after the writer", v);
        } else {
            v = int_cmd(c, "INCR %s", m->readers_in);
            for (int cur = atomic_load(&m->max_readers); v > cur;)
                if (atomic_compare_exchange_weak(&m->max_readers, &cur, (int)v))
                    break;
            if ((v = int_cmd(c, "GET %s", m->writers_in)) != 0)
                mix_violation(m, "writers in with a reader", v);
            if (int_cmd(c, "DECR %s", m->readers_in) == LLONG_MIN)
                atomic_fetch_add(&m->errors, 1);
        }
        if (rlock_unlock(t->l) != RLOCK_OK) {
            atomic_fetch_add(&m->errors, 1);
            break;
        }
        /* readers leave gaps, so writers are not starved for long */
        if (!t->writer)
            rt_sleep_ms(2);
    }
    redisFree(c);
    return NULL;
}

/* Writers and readers of two clients run a few hundred times through the
 * lock: while a writer holds it, no reader and no other writer is in. */
static void test_writer_excludes_readers_and_writers(void **state)
{
    lt_fixture *f = *state;
    enum { PER_CLIENT = MIX_WRITERS + MIX_READERS };
    mix_thread threads[MIX_CLIENTS * PER_CLIENT];
    char name[128], readers_in[160], writers_in[160];
    rlock_client *clients[MIX_CLIENTS];
    rlock_rw *rws[MIX_CLIENTS];
    mix m = {.redis = &f->redis};
    int64_t t0 = rt_now_ms();

    LT_TEST_NAME(name);
    snprintf(readers_in, sizeof(readers_in), "%s:readers_in", name);
    snprintf(writers_in, sizeof(writers_in), "%s:writers_in", name);
    m.readers_in = readers_in;
    m.writers_in = writers_in;
    atomic_init(&m.violations, 0);
    atomic_init(&m.errors, 0);
    atomic_init(&m.max_readers, 0);
    pthread_mutex_init(&m.mu, NULL);
    clients[0] = f->client;
    clients[1] = lt_connect(f->redis.url, NULL, 0);
    for (int c = 0; c < MIX_CLIENTS; c++) {
        rws[c] = rw_get(clients[c], name);
        for (int i = 0; i < PER_CLIENT; i++) {
            mix_thread *t = &threads[c * PER_CLIENT + i];

            t->m = &m;
            t->writer = i < MIX_WRITERS;
            t->l = t->writer ? rlock_rw_write(rws[c]) : rlock_rw_read(rws[c]);
        }
    }
    for (int i = 0; i < MIX_CLIENTS * PER_CLIENT; i++)
        assert_int_equal(
            pthread_create(&threads[i].thread, NULL, mix_main, &threads[i]), 0);
    for (int i = 0; i < MIX_CLIENTS * PER_CLIENT; i++)
        assert_int_equal(pthread_join(threads[i].thread, NULL), 0);
    print_message("%d writers and %d readers x %d iterations: %lld ms, up to "
                  "%d readers in at once\n",
                  MIX_CLIENTS * MIX_WRITERS, MIX_CLIENTS * MIX_READERS,
                  MIX_ITERATIONS, (long long)(rt_now_ms() - t0),
                  atomic_load(&m.max_readers));
    pthread_mutex_destroy(&m.mu);

    assert_int_equal(atomic_load(&m.errors), 0);
    if (atomic_load(&m.violations) != 0)
        fail_msg("%d violations, first: %s", atomic_load(&m.violations),
                 m.first);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    for (int c = 0; c < MIX_CLIENTS; c++)
        rlock_rw_free(rws[c]);
    rlock_client_free(clients[1]);
}

/* ----------------------------------------------------------- reentrancy */

/* A reader takes the read lock three times: three holds, one timeout key
 * per hold, and each unlock gives one back. */
static void test_read_lock_is_reentrant(void **state)
{
    lt_fixture *f = *state;
    char name[128], owner[128], key[300];
    rlock_rw *rw;
    rlock *r;

    LT_TEST_NAME(name);
    lt_owner_field(owner, sizeof(owner), f->client);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);

    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_trylock(r, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 3);
    assert_int_equal(rlock_hold_count(rlock_rw_write(rw)), 0);
    assert_mode(&f->redis, name, "read");
    assert_int_equal(hget_int(&f->redis, name, owner), 3);
    for (int k = 1; k <= 3; k++) {
        read_timeout_key(key, sizeof(key), f->client, name, k);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", key), 1);
    }

    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 2);
    read_timeout_key(key, sizeof(key), f->client, name, 3);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", key), 0);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 1);
    assert_int_equal(rlock_is_locked(r), 1);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    read_timeout_key(key, sizeof(key), f->client, name, 1);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", key), 0);
    assert_int_equal(rlock_unlock(r), RLOCK_ENOTOWNER);
    rlock_rw_free(rw);
}

/* A writer takes the write lock twice; the :write field counts the holds. */
static void test_write_lock_is_reentrant(void **state)
{
    lt_fixture *f = *state;
    char name[128], owner[128], wfield[160];
    rlock_rw *rw;
    rlock *w;

    LT_TEST_NAME(name);
    lt_owner_field(owner, sizeof(owner), f->client);
    snprintf(wfield, sizeof(wfield), "%s:write", owner);
    rw = rw_get(f->client, name);
    w = rlock_rw_write(rw);

    assert_int_equal(rlock_lock(w), RLOCK_OK);
    assert_int_equal(rlock_trylock(w, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 2);
    assert_int_equal(rlock_hold_count(rlock_rw_read(rw)), 0);
    assert_mode(&f->redis, name, "write");
    assert_int_equal(hget_int(&f->redis, name, wfield), 2);

    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 1);
    assert_int_equal(hget_int(&f->redis, name, wfield), 1);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(w), RLOCK_ENOTOWNER);
    rlock_rw_free(rw);
}

/* A writer takes the read lock too; unlocking the write side first leaves
 * the lock in read mode, held by the same thread. */
static void test_writer_takes_read_lock_and_drops_write_first(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_rw *rw;
    rlock *r, *w;

    LT_TEST_NAME(name);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);
    w = rlock_rw_write(rw);

    assert_int_equal(rlock_lock(w), RLOCK_OK);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 1);
    assert_int_equal(rlock_hold_count(r), 1);
    assert_mode(&f->redis, name, "write");

    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 0);
    assert_int_equal(rlock_hold_count(r), 1);
    assert_mode(&f->redis, name, "read");
    assert_int_equal(rlock_is_locked(r), 1);
    assert_int_equal(rlock_is_locked(w), 0);

    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* The same, dropping the read side first: the write lock stays as it was. */
static void test_writer_takes_read_lock_and_drops_read_first(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_rw *rw;
    rlock *r, *w;

    LT_TEST_NAME(name);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);
    w = rlock_rw_write(rw);

    assert_int_equal(rlock_lock(w), RLOCK_OK);
    assert_int_equal(rlock_trylock(r, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);

    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_hold_count(r), 0);
    assert_int_equal(rlock_hold_count(w), 1);
    assert_mode(&f->redis, name, "write");
    assert_int_equal(rlock_is_locked(w), 1);

    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    assert_int_equal(rlock_hold_count(w), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* A reader may not upgrade: asking for the write lock fails at once with
 * no wait, and runs out its wait otherwise; the read hold is untouched. */
static void test_reader_cannot_take_the_write_lock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t t0, elapsed;
    rlock_rw *rw;
    rlock *r, *w;

    LT_TEST_NAME(name);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);
    w = rlock_rw_write(rw);

    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_trylock(w, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    t0 = rt_now_ms();
    assert_int_equal(rlock_trylock(w, 500, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    elapsed = rt_now_ms() - t0;
    print_message("the write trylock gave up after %lld ms\n",
                  (long long)elapsed);
    assert_true(elapsed >= 450);
    assert_true(elapsed < 5000);

    assert_int_equal(rlock_hold_count(w), 0);
    assert_int_equal(rlock_hold_count(r), 1);
    assert_mode(&f->redis, name, "read");
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* ---------------------------------------------------------- wake-ups */

/* Readers of two clients wait behind a writer; its unlock (message "1")
 * wakes them all at once, not one per message, long before the 30 s lease
 * or their 30 s re-check would. */
static void test_write_unlock_wakes_every_waiting_reader(void **state)
{
    lt_fixture *f = *state;
    enum { PER_CLIENT = 3, N = 2 * PER_CLIENT };
    char name[128], channel[160];
    rlock_client *c[2];
    rlock_rw *rws[2], *rw;
    static ft_waiter ws[N];
    int64_t t_unlock, last = 0;
    rlock *w;

    LT_TEST_NAME(name);
    rw_channel_of(channel, sizeof(channel), name);
    rw = rw_get(f->client, name);
    w = rlock_rw_write(rw);
    assert_int_equal(rlock_lock(w), RLOCK_OK);

    memset(ws, 0, sizeof(ws));
    for (int k = 0; k < 2; k++) {
        c[k] = lt_connect(f->redis.url, rlock_config_set_recheck_interval,
                          SLOW_RECHECK_MS);
        rws[k] = rw_get(c[k], name);
        for (int i = 0; i < PER_CLIENT; i++) {
            ws[k * PER_CLIENT + i].hold_ms = 500;
            ft_waiter_start(&ws[k * PER_CLIENT + i], rlock_rw_read(rws[k]));
        }
    }
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 2, 5000), 2);
    rt_sleep_ms(300); /* every reader has tried and sleeps */
    for (int i = 0; i < N; i++)
        assert_int_equal(atomic_load(&ws[i].done), 0);

    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    if (!ft_waiters_wait(ws, N, HANG_MS))
        fail_msg("a reader slept through the write unlock");
    for (int i = 0; i < N; i++) {
        assert_int_equal(ws[i].rc, RLOCK_OK);
        assert_int_equal(ws[i].unlock_rc, RLOCK_OK);
        if (ws[i].acquired_ms - t_unlock > last)
            last = ws[i].acquired_ms - t_unlock;
    }
    print_message("all %d readers in within %lld ms of the write unlock\n", N,
                  (long long)last);
    assert_true(last < WAKE_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    for (int k = 0; k < 2; k++) {
        rlock_rw_free(rws[k]);
        rlock_client_free(c[k]);
    }
    rlock_rw_free(rw);
}

/* ---------------------------------------------------------- watchdog */

/* Read holds under the watchdog outlive several leases: the hash and each
 * hold's timeout key are renewed. */
static void test_watchdog_renews_read_holds(void **state)
{
    lt_fixture *f = *state;
    char name[128], key[300];
    rlock_client *c = lt_connect(
        f->redis.url, rlock_config_set_watchdog_timeout, SHORT_WATCHDOG_MS);
    rlock_rw *rw;
    rlock *r;

    LT_TEST_NAME(name);
    rw = rw_get(c, name);
    r = rlock_rw_read(rw);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) <= SHORT_WATCHDOG_MS);

    for (int lease = 0; lease < 5; lease++) {
        rt_sleep_ms(SHORT_WATCHDOG_MS);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
        for (int k = 1; k <= 2; k++) {
            long long pttl;

            read_timeout_key(key, sizeof(key), c, name, k);
            pttl = rt_cmd_int(&f->redis, "PTTL %s", key);
            if (pttl <= 0)
                fail_msg("after %d leases, %s has PTTL %lld", lease + 1, key,
                         pttl);
            assert_true(pttl <= SHORT_WATCHDOG_MS);
        }
    }
    assert_int_equal(rlock_is_locked(r), 1);
    assert_int_equal(rlock_is_held_by_me(r), 1);
    assert_int_equal(rlock_hold_count(r), 2);

    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
    rlock_client_free(c);
}

/* ----------------------------------------------------- queries and force */

/* rlock_is_locked answers for its own side: the read side for read mode
 * (or a writer that also reads), the write side for write mode. */
static void test_is_locked_reports_each_side(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_rw *rw;
    rlock *r, *w;

    LT_TEST_NAME(name);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);
    w = rlock_rw_write(rw);

    assert_int_equal(rlock_is_locked(r), 0);
    assert_int_equal(rlock_is_locked(w), 0);

    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_is_locked(r), 1);
    assert_int_equal(rlock_is_locked(w), 0);
    assert_int_equal(rlock_is_held_by_me(r), 1);
    assert_int_equal(rlock_is_held_by_me(w), 0);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);

    assert_int_equal(rlock_lock(w), RLOCK_OK);
    assert_int_equal(rlock_is_locked(w), 1);
    assert_int_equal(rlock_is_locked(r), 0);
    assert_int_equal(rlock_is_held_by_me(w), 1);
    assert_int_equal(rlock_is_held_by_me(r), 0);

    assert_int_equal(rlock_lock(r), RLOCK_OK); /* the writer reads too */
    assert_int_equal(rlock_is_locked(w), 1);
    assert_int_equal(rlock_is_locked(r), 1);
    assert_int_equal(rlock_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);

    assert_int_equal(rlock_is_locked(r), 0);
    assert_int_equal(rlock_is_locked(w), 0);
    rlock_rw_free(rw);
}

/* rlock_force_unlock of one side deletes the lock only when it is held in
 * that side's mode; the holder's unlock then reports the hold lost. */
static void test_force_unlock_acts_on_its_own_side(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    static ft_holder h;
    rlock_rw *rw;
    rlock *r, *w;

    LT_TEST_NAME(name);
    rw = rw_get(f->client, name);
    r = rlock_rw_read(rw);
    w = rlock_rw_write(rw);

    /* a reader in another thread */
    ft_holder_start(&h, r, 1, 0);
    assert_int_equal(rlock_force_unlock(w), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_mode(&f->redis, name, "read");
    assert_int_equal(rlock_force_unlock(r), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.is_held_rc, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_ELOST);

    /* a writer in another thread */
    ft_holder_start(&h, w, 1, 0);
    assert_int_equal(rlock_force_unlock(r), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_mode(&f->redis, name, "write");
    assert_int_equal(rlock_force_unlock(w), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.is_held_rc, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_ELOST);

    /* on a free lock it is a no-op */
    assert_int_equal(rlock_force_unlock(r), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(w), RLOCK_OK);
    rlock_rw_free(rw);
}

/* The two sides report their kinds and the shared name; bad arguments are
 * refused. */
static void test_sides_report_their_kinds(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_rw *rw = NULL;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_rw_get(NULL, name, &rw), RLOCK_EINVAL);
    assert_int_equal(rlock_rw_get(f->client, NULL, &rw), RLOCK_EINVAL);
    assert_int_equal(rlock_rw_get(f->client, "", &rw), RLOCK_EINVAL);
    assert_int_equal(rlock_rw_get(f->client, name, NULL), RLOCK_EINVAL);
    rlock_rw_free(NULL);

    rw = rw_get(f->client, name);
    assert_int_equal(rlock_kind(rlock_rw_read(rw)), RLOCK_KIND_READ);
    assert_int_equal(rlock_kind(rlock_rw_write(rw)), RLOCK_KIND_WRITE);
    assert_string_equal(rlock_name(rlock_rw_read(rw)), name);
    assert_string_equal(rlock_name(rlock_rw_write(rw)), name);
    rlock_rw_free(rw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_hold_the_lock_together),
        cmocka_unit_test(test_writer_excludes_readers_and_writers),
        cmocka_unit_test(test_read_lock_is_reentrant),
        cmocka_unit_test(test_write_lock_is_reentrant),
        cmocka_unit_test(test_writer_takes_read_lock_and_drops_write_first),
        cmocka_unit_test(test_writer_takes_read_lock_and_drops_read_first),
        cmocka_unit_test(test_reader_cannot_take_the_write_lock),
        cmocka_unit_test(test_write_unlock_wakes_every_waiting_reader),
        cmocka_unit_test(test_watchdog_renews_read_holds),
        cmocka_unit_test(test_is_locked_reports_each_side),
        cmocka_unit_test(test_force_unlock_acts_on_its_own_side),
        cmocka_unit_test(test_sides_report_their_kinds),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
