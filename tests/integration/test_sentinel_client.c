/*
 * test_sentinel_client.c: the client in Sentinel mode, against
 * one group of real servers (tests/support/sentinel_fixture: a master, its
 * replica and three sentinels). The master wants a password (the URI's),
 * the sentinels another (rlock_config_set_sentinel_credentials), and the
 * sentinels name the data nodes "localhost" (announce-hostnames), so that
 * the client resolves a name at connect and after every move.
 *
 * What is checked: connecting through the sentinels with the first one
 * down; a forced failover followed within about 1.5 s; no lock command on
 * the old master once the client knows of the switch (MONITOR on it, during
 * the time it stays a writable master); waiters woken after the switch;
 * a hold the failover lost reported as soon as the client moves; a kill
 * -9 of the master under contention from two processes, with what
 * was lost in the window printed and bounded; the rlock tool on a Redisson
 * config file naming the sentinels.
 *
 * "The client knows" is the log line its move writes (master.c), caught by
 * the log hook with the wall-clock time, which MONITOR's timestamps share.
 * Tests that fail over leave the group settled around the new master.
 */
#define LT_SUITE "sentinel_client"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "sentinel_fixture.h"

#define SENTINEL_PW "sentinel-secret"
#define DATA_PW "data-secret"
#define SLACK_MS 1500

static rt_sentinel_group group;

/* ------------------------------------------------------------- helpers */

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* What a client's log hook saw of moves. */
typedef struct moves {
    atomic_int n;
    atomic_llong wall_ms; /* the last move's */
    atomic_llong mono_ms;
} moves;

static void on_log(int level, const char *line, void *arg)
{
    moves *m = arg;
    (void)level;
    if (getenv("SENTINEL_TEST_LOG"))
        fprintf(stderr, "log: %s\n", line);
    if (strstr(line, "moved to") != NULL) {
        atomic_store(&m->wall_ms, wall_ms());
        atomic_store(&m->mono_ms, rt_now_ms());
        atomic_fetch_add(&m->n, 1);
    }
}

/* The group's URI with the master's password, first (may be NULL) listed
 * before the sentinels. */
static void url_of(char *buf, size_t len, const char *first)
{
    char plain[256];
    rt_sentinel_url(&group, first, plain, sizeof(plain));
    const char *rest = strstr(plain, "://") + 3;
    snprintf(buf, len, "redis+sentinel://:%s@%s", DATA_PW, rest);
}

/* A client of the group, logging moves into m (may be NULL). */
static rlock_client *connect_client(moves *m, int64_t recheck_ms)
{
    rlock_config *cfg;
    rlock_client *c = NULL;
    char url[300];
    url_of(url, sizeof(url), NULL);
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_sentinel_credentials(cfg, NULL,
                                                           SENTINEL_PW),
                     0);
    if (m != NULL)
        assert_int_equal(rlock_config_set_log(cfg, RLOCK_LOG_INFO, on_log, m),
                         0);
    if (recheck_ms > 0)
        assert_int_equal(rlock_config_set_recheck_interval(cfg, recheck_ms),
                         0);
    int rc = rlock_client_connect_with(&c, url, cfg);
    rlock_config_free(cfg);
    if (rc != 0)
        fail_msg("connect: %s", rlock_err_name(rc));
    return c;
}

/* Waits until m has seen n moves; returns the last one's monotonic time. */
static int64_t wait_moves(moves *m, int n, int64_t within_ms)
{
    int64_t end = rt_now_ms() + within_ms;
    while (atomic_load(&m->n) < n && rt_now_ms() < end)
        rt_sleep_ms(5);
    assert_true(atomic_load(&m->n) >= n);
    return atomic_load(&m->mono_ms);
}

/* The data node the sentinels name as master now (failing the test when
 * none does). */
static rt_redis *master_now(void)
{
    rt_redis *m = rt_sentinel_master_node(&group);
    assert_non_null(m);
    return m;
}

/* Whether the read-write lock name is held for mode on node. */
static bool mode_is(rt_redis *node, const char *name, const char *mode)
{
    char *got = rt_cmd_str(node, "HGET %s mode", name);
    bool is = got != NULL && strcmp(got, mode) == 0;
    free(got);
    return is;
}

/* 1 when the lock hash name has a field on node. */
static int held_on(rt_redis *node, const char *name)
{
    return rt_cmd_int(node, "HLEN %s", name) > 0;
}

static rt_redis *other(rt_redis *node)
{
    return node == &group.node[0] ? &group.node[1] : &group.node[0];
}

/* ------------------------------------------------------------- connecting */

static void test_connects_through_the_sentinels_first_one_down(void **state)
{
    rlock_config *cfg;
    rlock_client *c = NULL;
    rlock *l;
    char url[300], first[32], name[96];
    (void)state;
    LT_TEST_NAME(name);
    snprintf(first, sizeof(first), "127.0.0.1:%d", rt_sentinel_dead_port());
    url_of(url, sizeof(url), first);
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(
        rlock_config_set_sentinel_credentials(cfg, NULL, SENTINEL_PW), 0);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), 0);
    rlock_config_free(cfg);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
    assert_true(held_on(master_now(), name));
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_the_sentinels_password_is_their_own(void **state)
{
    rlock_config *cfg;
    rlock_client *c = NULL;
    char url[300];
    (void)state;
    url_of(url, sizeof(url), NULL);
    assert_int_equal(rlock_config_new(&cfg), 0);
    /* without sentinel credentials the master's are tried: refused */
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_EAUTH);
    assert_null(c);
    assert_int_equal(rlock_config_set_sentinel_credentials(cfg, NULL, "no"),
                     0);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_EAUTH);
    rlock_config_free(cfg);
}

/* ------------------------------------------------------------- the API */

/* Every lock kind takes its hold on the master the sentinels name, the
 * same as on a single server. */
static void test_every_lock_kind_holds_on_the_master(void **state)
{
    char name[96], key[128];
    rlock *l;
    rlock_rw *rw;
    int64_t token = 0;
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(NULL, 0);
    rt_redis *m = master_now();
    int (*getters[])(rlock_client *, const char *, rlock **) = {
        rlock_get, rlock_fair_get, rlock_spin_get, rlock_nonreentrant_get,
        rlock_nonreentrant_fair_get};
    for (size_t i = 0; i < sizeof(getters) / sizeof(*getters); i++) {
        snprintf(key, sizeof(key), "%s:%zu", name, i);
        assert_int_equal(getters[i](c, key, &l), 0);
        assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
        assert_true(held_on(m, key));
        assert_int_equal(rlock_unlock(l), 0);
        assert_false(held_on(m, key));
        rlock_free(l);
    }
    snprintf(key, sizeof(key), "%s:fenced", name);
    assert_int_equal(rlock_fenced_get(c, key, &l), 0);
    assert_int_equal(rlock_fenced_trylock(l, 0, RLOCK_LEASE_WATCHDOG, &token),
                     0);
    assert_true(token >= 1);
    assert_true(held_on(m, key));
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    snprintf(key, sizeof(key), "%s:rw", name);
    assert_int_equal(rlock_rw_get(c, key, &rw), 0);
    assert_int_equal(rlock_trylock(rlock_rw_read(rw), 0, RLOCK_LEASE_WATCHDOG),
                     0);
    assert_true(mode_is(m, key, "read"));
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), 0);
    assert_int_equal(
        rlock_trylock(rlock_rw_write(rw), 0, RLOCK_LEASE_WATCHDOG), 0);
    assert_true(mode_is(m, key, "write"));
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), 0);
    rlock_rw_free(rw);
    rlock_client_free(c);
}

static void test_a_multi_lock_holds_all_on_the_master(void **state)
{
    char name[96], key[2][128];
    rlock *ls[2];
    rlock_multi *mu;
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(NULL, 0);
    rt_redis *m = master_now();
    for (int i = 0; i < 2; i++) {
        snprintf(key[i], sizeof(key[i]), "%s:%d", name, i);
        assert_int_equal(rlock_get(c, key[i], &ls[i]), 0);
    }
    assert_int_equal(rlock_multi_new(ls, 2, &mu), 0);
    assert_int_equal(rlock_multi_trylock(mu, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     0);
    assert_true(held_on(m, key[0]) && held_on(m, key[1]));
    assert_int_equal(rlock_multi_unlock(mu), 0);
    assert_false(held_on(m, key[0]) || held_on(m, key[1]));
    rlock_multi_free(mu);
    for (int i = 0; i < 2; i++)
        rlock_free(ls[i]);
    rlock_client_free(c);
}

static void test_the_async_api_holds_on_the_master(void **state)
{
    char name[96];
    rlock *l;
    lt_completion done = {0}, undone = {0};
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(NULL, 0);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(
        rlock_lock_async(l, 7, 0, RLOCK_LEASE_WATCHDOG, lt_on_done, &done), 0);
    assert_int_equal(lt_await_completion(&done, 5000), 0);
    assert_true(held_on(master_now(), name));
    assert_int_equal(rlock_unlock_async(l, 7, lt_on_done, &undone), 0);
    assert_int_equal(lt_await_completion(&undone, 5000), 0);
    assert_false(held_on(master_now(), name));
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------------------- following */

static void test_follows_a_failover_within_about_1500_ms(void **state)
{
    moves mv = {0};
    rlock *l;
    char name[96];
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(&mv, 0);
    rt_redis *from = master_now();
    rt_sleep_ms(300); /* the watcher subscribed */
    int64_t t0 = rt_now_ms();
    assert_int_equal(rt_sentinel_failover(&group), 0);
    int64_t t1 = wait_moves(&mv, 1, 1500 + SLACK_MS);
    print_message("moved %lld ms after SENTINEL FAILOVER\n",
                  (long long)(t1 - t0));
    assert_true(t1 - t0 <= 1500 + SLACK_MS);
    /* the next lock is on the new master */
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 5000, RLOCK_LEASE_WATCHDOG), 0);
    assert_true(held_on(other(from), name));
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* MONITOR on the old master, read on a thread: every lock command's
 * server time. */
typedef struct monitor {
    redisContext *ctx;
    pthread_t thread;
    int64_t times[4096]; /* wall ms of lock commands seen */
    atomic_int n;
} monitor;

static void *monitor_main(void *arg)
{
    monitor *m = arg;
    for (;;) {
        redisReply *r = NULL;
        if (redisGetReply(m->ctx, (void **)&r) != REDIS_OK)
            break; /* monitor_stop shut it down, or the server closed it */
        if (r->type == REDIS_REPLY_STATUS &&
            (strstr(r->str, "\"EVALSHA\"") || strstr(r->str, "\"EVAL\""))) {
            int n = atomic_load(&m->n);
            if (n < 4096) {
                m->times[n] = (int64_t)(atof(r->str) * 1000.0);
                atomic_store(&m->n, n + 1);
            }
        }
        freeReplyObject(r);
    }
    return NULL;
}

static void monitor_start(monitor *m, rt_redis *node)
{
    memset(m, 0, sizeof(*m));
    m->ctx = redisConnect("127.0.0.1", node->port);
    assert_non_null(m->ctx);
    assert_int_equal(m->ctx->err, 0);
    redisReply *r = redisCommand(m->ctx, "AUTH %s", DATA_PW);
    freeReplyObject(r);
    r = redisCommand(m->ctx, "MONITOR");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(pthread_create(&m->thread, NULL, monitor_main, m), 0);
}

static void monitor_stop(monitor *m)
{
    shutdown(m->ctx->fd, SHUT_RDWR); /* ends the thread's read */
    pthread_join(m->thread, NULL);
    redisFree(m->ctx);
}

typedef struct worker {
    rlock_client *c;
    atomic_int stop;
    atomic_int ok; /* lock+unlock cycles that succeeded */
    atomic_int after; /* of them, after the move */
    moves *mv;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    rlock *l;
    char name[96];
    int i = 0;
    while (!atomic_load(&w->stop)) {
        snprintf(name, sizeof(name), LT_SUITE ":monitor:%d", i++ % 8);
        if (rlock_get(w->c, name, &l) != 0)
            continue;
        if (rlock_trylock(l, 200, RLOCK_LEASE_WATCHDOG) == 0 &&
            rlock_unlock(l) == 0) {
            atomic_fetch_add(&w->ok, 1);
            if (atomic_load(&w->mv->n) > 0)
                atomic_fetch_add(&w->after, 1);
        }
        rlock_free(l);
        rt_sleep_ms(2);
    }
    return NULL;
}

/* The old master stays a writable master for the failover timeout after
 * the switch (4 s here): once the client knows of the switch, none of its
 * lock commands may reach it. A command already on its way when the switch
 * became known (written a moment before, or by a caller-thread connection
 * that checked for a move just before it) may still run there, within
 * IN_FLIGHT_MS by the server's clock; any later one would be a command
 * sent to a master known to be old. */
#define IN_FLIGHT_MS 50
static void test_no_lock_command_reaches_the_old_master(void **state)
{
    moves mv = {0};
    monitor mon;
    worker w = {0};
    pthread_t t;
    (void)state;
    rt_redis *from = master_now();
    w.c = connect_client(&mv, 0);
    w.mv = &mv;
    monitor_start(&mon, from);
    assert_int_equal(pthread_create(&t, NULL, worker_main, &w), 0);
    rt_sleep_ms(500);
    assert_int_equal(rt_sentinel_failover(&group), 0);
    wait_moves(&mv, 1, 1500 + SLACK_MS);
    int64_t known = atomic_load(&mv.wall_ms);
    rt_sleep_ms(1500); /* well inside the old master's writable window */
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    monitor_stop(&mon);
    int before = 0, in_flight = 0, late = 0;
    int64_t last = 0;
    for (int i = 0; i < atomic_load(&mon.n); i++) {
        int64_t after = mon.times[i] - known;
        before += after <= 0;
        in_flight += after > 0 && after <= IN_FLIGHT_MS;
        late += after > IN_FLIGHT_MS;
        if (after > 0)
            last = after;
    }
    print_message("old master: %d lock commands before the switch was known, "
                  "%d in flight (the last %lld ms after), %d later; %d "
                  "cycles after, on the new master\n",
                  before, in_flight, (long long)last, late,
                  atomic_load(&w.after));
    assert_true(before > 0);                /* MONITOR did see them */
    assert_int_equal(late, 0);
    assert_true(atomic_load(&w.after) > 0); /* and the client went on */
    rlock_client_free(w.c);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

typedef struct waiter {
    rlock_client *c;
    const char *name;
    int rc;
    atomic_llong got_at; /* 0 until its trylock returned */
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    rlock *l;
    assert_int_equal(rlock_get(w->c, w->name, &l), 0);
    w->rc = rlock_trylock(l, 30000, RLOCK_LEASE_WATCHDOG);
    w->got_at = rt_now_ms();
    if (w->rc == 0)
        rlock_unlock(l);
    rlock_free(l);
    return NULL;
}

/* Client a holds name for lease_ms while client b (re-checking only every
 * minute) waits for it on a thread; both log their moves. */
typedef struct contest {
    moves ma, mb;
    rlock_client *a, *b;
    rlock *l; /* a's */
    waiter w; /* b's */
    pthread_t t;
} contest;

static void contest_start(contest *k, const char *name, int64_t lease_ms)
{
    memset(k, 0, sizeof(*k));
    k->a = connect_client(&k->ma, 0);
    k->b = connect_client(&k->mb, 60000);
    assert_int_equal(rlock_get(k->a, name, &k->l), 0);
    assert_int_equal(rlock_trylock(k->l, 0, lease_ms), 0);
    k->w.c = k->b;
    k->w.name = name;
    assert_int_equal(pthread_create(&k->t, NULL, waiter_main, &k->w), 0);
    rt_sleep_ms(500); /* b waits, subscribed */
}

static void contest_end(contest *k)
{
    rlock_free(k->l);
    rlock_client_free(k->a);
    rlock_client_free(k->b);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* A waiter subscribed on the old master hears the unlock made on the new
 * one: it re-checks only every minute, so only a wake-up is fast. */
static void test_waiters_are_woken_after_the_switch(void **state)
{
    contest k;
    char name[96];
    (void)state;
    LT_TEST_NAME(name);
    contest_start(&k, name, RLOCK_LEASE_WATCHDOG);
    rt_redis *from = master_now();
    assert_int_equal(rt_sentinel_failover(&group), 0);
    wait_moves(&k.ma, 1, 1500 + SLACK_MS);
    wait_moves(&k.mb, 1, 1500 + SLACK_MS);
    assert_true(held_on(other(from), name)); /* replicated before */
    rt_sleep_ms(200); /* b subscribed again on the new master */
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(k.l), 0);
    pthread_join(k.t, NULL);
    assert_int_equal(k.w.rc, 0);
    print_message("waiter took the lock %lld ms after the unlock\n",
                  (long long)(k.w.got_at - t0));
    assert_true(k.w.got_at - t0 < 1000);
    contest_end(&k);
}

/* A count-down latch waiter subscribed on the old master is opened by a
 * count-down made on the new one: it re-checks only every minute, so only
 * the message (heard after it subscribed again) is fast. */
typedef struct latch_waiter {
    rlock_latch *l;
    int rc;
    atomic_llong done_at; /* 0 until its await returned */
} latch_waiter;

static void *latch_waiter_main(void *arg)
{
    latch_waiter *w = arg;
    w->rc = rlock_latch_await(w->l, 30000);
    atomic_store(&w->done_at, rt_now_ms());
    return NULL;
}

static void test_a_latch_waiter_is_opened_after_the_switch(void **state)
{
    moves ma = {0}, mb = {0};
    char name[96];
    rlock_latch *la, *lb;
    latch_waiter w = {.l = NULL};
    pthread_t t;
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *a = connect_client(&ma, 0);
    rlock_client *b = connect_client(&mb, 60000);
    assert_int_equal(rlock_latch_get(a, name, &la), 0);
    assert_int_equal(rlock_latch_get(b, name, &lb), 0);
    assert_int_equal(rlock_latch_try_set_count(la, 1), 1);
    w.l = lb;
    assert_int_equal(pthread_create(&t, NULL, latch_waiter_main, &w), 0);
    rt_sleep_ms(500); /* b waits, subscribed */
    rt_redis *from = master_now();
    assert_int_equal(rt_sentinel_failover(&group), 0);
    wait_moves(&ma, 1, 1500 + SLACK_MS);
    wait_moves(&mb, 1, 1500 + SLACK_MS);
    assert_int_equal(rt_cmd_int(other(from), "EXISTS %s", name), 1);
    rt_sleep_ms(200); /* b subscribed again on the new master */
    assert_int_equal(atomic_load(&w.done_at), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(la), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    print_message("latch waiter returned %lld ms after the count-down\n",
                  (long long)(atomic_load(&w.done_at) - t0));
    assert_true(atomic_load(&w.done_at) - t0 < 1000);
    rlock_latch_free(la);
    rlock_latch_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* A waiter whose holder is gone without an unlock message (here its hold
 * is deleted by hand, as a failover that lost it would) is not left to its
 * re-check (a minute) or the lease (30 s): the switch wakes it to try at
 * once on the new master. */
static void test_a_waiter_tries_at_once_after_the_switch(void **state)
{
    contest k;
    char name[96];
    (void)state;
    LT_TEST_NAME(name);
    contest_start(&k, name, 30000);
    rt_redis *from = master_now();
    assert_int_equal(rt_cmd_int(from, "DEL %s", name), 1); /* no message */
    rt_sleep_ms(300);
    assert_int_equal(atomic_load(&k.w.got_at), 0); /* b did not notice */
    assert_int_equal(rt_sentinel_failover(&group), 0);
    int64_t moved = wait_moves(&k.mb, 1, 1500 + SLACK_MS);
    pthread_join(k.t, NULL);
    assert_int_equal(k.w.rc, 0);
    print_message("waiter took the lock %lld ms after its client moved\n",
                  (long long)(k.w.got_at - moved));
    assert_true(k.w.got_at - moved < 1000);
    contest_end(&k); /* a's hold is gone: nothing to unlock */
}

/* When a client-wide lost-lock callback ran (monotonic ms, 0: never). */
typedef struct loss {
    atomic_int n;
    atomic_llong at_ms;
    atomic_int reason;
} loss;

static void note_loss(const char *name, uint64_t owner, uint64_t hold,
                      int reason, void *arg)
{
    loss *ls = arg;
    (void)name;
    (void)owner;
    (void)hold;
    atomic_store(&ls->reason, reason);
    atomic_store(&ls->at_ms, rt_now_ms());
    atomic_fetch_add(&ls->n, 1);
}

/* Within this of the move, a hold the new master lacks is reported lost:
 * a round trip and a loaded machine's slack, far from the watchdog's next
 * renewal (a third of its default 30 s timeout). */
#define LOSS_FOUND_MS 2000

/* A hold the failover lost (here deleted on the replica alone, which then
 * becomes the master, as asynchronous replication may lose it) is checked
 * on the new master as soon as the client moves, not at the watchdog's
 * next renewal. */
static void test_a_hold_lost_in_the_failover_is_reported_at_once(
    void **state)
{
    moves mv = {0};
    loss ls = {0};
    rlock *l;
    char name[96];
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(&mv, 0);
    assert_int_equal(rlock_client_on_lost(c, note_loss, &ls), 0);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
    rt_redis *from = master_now();
    rt_redis *to = other(from);
    int64_t end = rt_now_ms() + 2000;
    while (!held_on(to, name) && rt_now_ms() < end)
        rt_sleep_ms(10);
    assert_true(held_on(to, name)); /* replicated */
    /* the replica alone forgets it: a write there is not propagated */
    char *ok = rt_cmd_str(to, "CONFIG SET replica-read-only no");
    assert_non_null(ok);
    free(ok);
    assert_int_equal(rt_cmd_int(to, "DEL %s", name), 1);
    ok = rt_cmd_str(to, "CONFIG SET replica-read-only yes");
    assert_non_null(ok);
    free(ok);
    assert_true(held_on(from, name));
    rt_sleep_ms(300); /* the watcher subscribed */
    assert_int_equal(rt_sentinel_failover(&group), 0);
    int64_t moved = wait_moves(&mv, 1, 1500 + SLACK_MS);
    end = moved + 15000; /* past the watchdog's next renewal */
    while (atomic_load(&ls.n) == 0 && rt_now_ms() < end)
        rt_sleep_ms(10);
    assert_int_equal(atomic_load(&ls.n), 1);
    int64_t after = atomic_load(&ls.at_ms) - moved;
    print_message("hold reported lost (reason %d) %lld ms after the move\n",
                  atomic_load(&ls.reason), (long long)after);
    assert_int_equal(atomic_load(&ls.reason), RLOCK_LOST_GONE);
    assert_true(after <= LOSS_FOUND_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* ----------------------------------------------- kill -9 under contention */

/* Shared by the two worker processes (mmap'd before fork). */
typedef struct arena {
    atomic_int stop;
    atomic_int inside; /* threads between lock and unlock */
    atomic_int cycles;
    atomic_int overlaps; /* a thread found another inside */
    atomic_llong overlap_ms[64];
    atomic_int errors;
    atomic_int lost;     /* lost-lock callbacks */
    atomic_int moved;    /* processes that followed the move */
} arena;

static void on_lost(const char *name, uint64_t owner, uint64_t hold,
                    int reason, void *arg)
{
    arena *a = arg;
    (void)name;
    (void)owner;
    (void)hold;
    (void)reason;
    atomic_fetch_add(&a->lost, 1);
}

static void on_child_log(int level, const char *line, void *arg)
{
    arena *a = arg;
    (void)level;
    if (strstr(line, "moved to") != NULL)
        atomic_fetch_add(&a->moved, 1);
}

typedef struct contender {
    rlock_client *c;
    arena *a;
} contender;

static void *contend_main(void *arg)
{
    contender *k = arg;
    rlock *l;
    if (rlock_get(k->c, LT_SUITE ":contended", &l) != 0)
        return NULL;
    while (!atomic_load(&k->a->stop)) {
        int rc = rlock_trylock(l, 500, RLOCK_LEASE_WATCHDOG);
        if (rc == RLOCK_ETIMEDOUT)
            continue;
        if (rc != 0) {
            atomic_fetch_add(&k->a->errors, 1);
            rt_sleep_ms(20);
            continue;
        }
        if (atomic_fetch_add(&k->a->inside, 1) != 0) {
            int n = atomic_fetch_add(&k->a->overlaps, 1);
            if (n < 64)
                atomic_store(&k->a->overlap_ms[n], wall_ms());
        }
        rt_sleep_ms(1);
        atomic_fetch_sub(&k->a->inside, 1);
        atomic_fetch_add(&k->a->cycles, 1);
        rlock_unlock(l); /* RLOCK_ELOST after a lost hold: fine */
    }
    rlock_free(l);
    return NULL;
}

static void run_child(arena *a)
{
    char url[300];
    rlock_config *cfg;
    rlock_client *c = NULL;
    url_of(url, sizeof(url), NULL);
    if (rlock_config_new(&cfg) != 0 ||
        rlock_config_set_sentinel_credentials(cfg, NULL, SENTINEL_PW) != 0 ||
        rlock_config_set_watchdog_timeout(cfg, 3000) != 0 ||
        rlock_config_set_log(cfg, RLOCK_LOG_INFO, on_child_log, a) != 0 ||
        rlock_client_connect_with(&c, url, cfg) != 0)
        _exit(2);
    rlock_config_free(cfg);
    rlock_client_on_lost(c, on_lost, a);
    contender k = {c, a};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, contend_main, &k);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    rlock_client_free(c);
    _exit(0);
}

/* kill -9 of the master while two processes of two threads each take turns
 * on one lock: the sentinels promote the replica (about 4 s here) and both
 * processes go on there. A hold granted by the dead master and not yet
 * replicated is lost (asynchronous replication): two holders may then
 * overlap, only in the window between the kill and the move. */
static void test_kill_9_of_the_master_under_contention(void **state)
{
    (void)state;
    arena *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED);
    memset(a, 0, sizeof(*a));
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0)
            run_child(a);
    }
    rt_sleep_ms(1500);
    rt_redis *from = master_now();
    rt_redis *to = other(from);
    int before = atomic_load(&a->cycles);
    int64_t killed = wall_ms();
    kill(from->pid, SIGKILL);
    assert_int_equal(rt_sentinel_wait_master(&group, to, 30000), 0);
    int64_t promoted = wall_ms();
    int64_t end = rt_now_ms() + 10000;
    while (atomic_load(&a->moved) < 2 && rt_now_ms() < end)
        rt_sleep_ms(20);
    int64_t moved = wall_ms();
    int at_move = atomic_load(&a->cycles);
    rt_sleep_ms(2000);
    atomic_store(&a->stop, 1);
    for (int i = 0; i < 2; i++) {
        int status;
        waitpid(kids[i], &status, 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    int after = atomic_load(&a->cycles) - at_move;
    print_message("kill -9: %d cycles before; promoted after %lld ms, both "
                  "processes moved %lld ms after the kill; %d cycles after; "
                  "%d overlaps, %d holds reported lost, %d errors\n",
                  before, (long long)(promoted - killed),
                  (long long)(moved - killed), after,
                  atomic_load(&a->overlaps), atomic_load(&a->lost),
                  atomic_load(&a->errors));
    assert_int_equal(atomic_load(&a->moved), 2);
    assert_true(before > 0);
    assert_true(after > 0);
    /* exclusion may only fail in the window the kill opened */
    for (int i = 0; i < atomic_load(&a->overlaps) && i < 64; i++)
        assert_true(a->overlap_ms[i] >= killed &&
                    a->overlap_ms[i] <= moved + SLACK_MS);
    munmap(a, sizeof(*a));
    /* the old master comes back empty, and is made a replica */
    assert_int_equal(rt_redis_restart(from), 0);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* ------------------------------------------------------------- the tool */

#ifdef RLOCK_CLI_PATH
/* Runs the rlock tool with args (a shell command line after the binary),
 * its stdout into out; returns its exit status. */
static int run_tool(const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", RLOCK_CLI_PATH, args);
    return rt_run_capture(cmd, out, len);
}

/* The rlock tool on a Redisson config file naming the sentinels: it finds
 * the master and sees a lock held there. */
static void test_the_rlock_tool_reads_a_sentinel_config(void **state)
{
    char path[] = "/tmp/rlock-sentinel-XXXXXX.json", name[64], args[512];
    char out[4096];
    rlock *l;
    (void)state;
    LT_TEST_NAME(name);
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"sentinelServersConfig\": {\"masterName\": \"%s\",\n"
               " \"sentinelAddresses\": [",
            RT_SENTINEL_MASTER);
    for (int i = 0; i < RT_SENTINELS; i++)
        fprintf(f, "%s\"redis://127.0.0.1:%d\"", i ? ", " : "",
                rt_sentinel_port(&group.sentinel[i]));
    fprintf(f, "],\n \"password\": \"%s\", \"sentinelPassword\": \"%s\"}}\n",
            DATA_PW, SENTINEL_PW);
    fclose(f);

    rlock_client *c = connect_client(NULL, 0);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
    snprintf(args, sizeof(args), "info --json --config %s %s", path, name);
    int rc = run_tool(args, out, sizeof(out));
    if (rc != 0)
        fail_msg("rlock info: exit %d: %s", rc, out);
    assert_non_null(strstr(out, "\"held\": true"));
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);

    snprintf(args, sizeof(args), "exec --config %s --wait 0 %s -- true", path,
             name);
    assert_int_equal(run_tool(args, out, sizeof(out)), 0);
    unlink(path);
}
#endif

/* ------------------------------------------------------------- setup */

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    /* the sentinels name the master "localhost": the client resolves a
     * name at connect, and after each move off its I/O thread */
    rt_sentinel_opts o = {.sentinel_password = SENTINEL_PW,
                          .data_password = DATA_PW,
                          .hostnames = 1};
    return rt_sentinel_group_start(&group, &o);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_sentinel_group_stop(&group);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connects_through_the_sentinels_first_one_down),
        cmocka_unit_test(test_the_sentinels_password_is_their_own),
        cmocka_unit_test(test_every_lock_kind_holds_on_the_master),
        cmocka_unit_test(test_a_multi_lock_holds_all_on_the_master),
        cmocka_unit_test(test_the_async_api_holds_on_the_master),
        cmocka_unit_test(test_follows_a_failover_within_about_1500_ms),
        cmocka_unit_test(test_no_lock_command_reaches_the_old_master),
        cmocka_unit_test(test_waiters_are_woken_after_the_switch),
        cmocka_unit_test(test_a_waiter_tries_at_once_after_the_switch),
        cmocka_unit_test(test_a_latch_waiter_is_opened_after_the_switch),
        cmocka_unit_test(
            test_a_hold_lost_in_the_failover_is_reported_at_once),
        cmocka_unit_test(test_kill_9_of_the_master_under_contention),
#ifdef RLOCK_CLI_PATH
        cmocka_unit_test(test_the_rlock_tool_reads_a_sentinel_config),
#endif
    };
    return cmocka_run_group_tests_name("sentinel_client", tests, group_setup,
                                       group_teardown);
}
