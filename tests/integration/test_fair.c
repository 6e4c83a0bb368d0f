/*
 * test_fair.c: the fair lock (REDISSON-PROTOCOL.md section 3).
 *
 * The acceptance test of the issue: 32 waiters, 8 threads in each of 4
 * processes and each thread with its own client, queue one after another
 * behind a holder; when the holder lets go they take the lock in exactly
 * the order in which they queued. Each waiter appends its arrival index to
 * a Redis list while it holds the lock, so the list is the order of
 * acquisition, and the test compares it with the order of arrival.
 *
 * Arrival is made certain by waiting, before starting the next waiter,
 * until the queue list redisson_lock_queue:{N} has grown by one. Children
 * are this same program started again (fork, then exec at once, so nothing
 * of the test's threads, clients or allocator state crosses over), told
 * what to do through a pipe on their stdin and reporting on their stdout;
 * they use no cmocka asserts.
 *
 * The other tests: reentry; a trylock without a wait does not queue; a
 * waiter whose wait runs out leaves the queue; a waiter killed while queued
 * holds the queue up for no longer than its wait plus the fair wait
 * timeout; blocking and async waiters share one queue; rlock_kind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "fair"

/* argv[1] of this program run as a child process of waiters */
#define CHILD_FLAG "--fair-waiters-child"

#define PROCS            4
#define THREADS_PER_PROC 8
#define WAITERS          (PROCS * THREADS_PER_PROC)
/* How long a waiter may take to appear in the queue once started. */
#define ENQUEUE_MS 10000
/* Nothing may hang: every waiter must report within this. */
#define HANG_MS 30000

/* The killed-waiter test: the dead waiter's slack and the holder's lease
 * (its watchdog timeout) bound how long it can stay at the head; the live
 * waiter re-checks often, so it notices the purge soon after. */
#define FAIR_WAIT_MS       1000
#define HOLDER_WATCHDOG_MS 1000
#define FAST_RECHECK_MS    500
#define PURGE_MARGIN_MS    3000

/* ------------------------------------------------------------- helpers */

/* Writes prefix(P, name) of REDISSON-PROTOCOL.md section 1.2. */
static void prefixed(char *buf, size_t n, const char *prefix, const char *name)
{
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "%s:%s", prefix, name);
    else
        snprintf(buf, n, "%s:{%s}", prefix, name);
}

/* The fair lock's queue list and timeout sorted set. */
typedef struct fair_keys {
    char queue[200];
    char timeout[200];
} fair_keys;

static void fair_keys_of(fair_keys *k, const char *name)
{
    prefixed(k->queue, sizeof(k->queue), "redisson_lock_queue", name);
    prefixed(k->timeout, sizeof(k->timeout), "redisson_lock_timeout", name);
}

/* Polls LLEN key until it equals want or timeout_ms passes; returns the last
 * value seen. */
static long long wait_llen(rt_redis *r, const char *key, long long want,
                           int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    long long n;

    while ((n = rt_cmd_int(r, "LLEN %s", key)) != want &&
           rt_now_ms() < deadline)
        rt_sleep_ms(2);
    return n;
}

/* Asserts that neither the queue nor the timeout set exists. */
static void assert_no_queue(rt_redis *r, const fair_keys *k)
{
    assert_int_equal(rt_cmd_int(r, "EXISTS %s", k->queue), 0);
    assert_int_equal(rt_cmd_int(r, "EXISTS %s", k->timeout), 0);
}

/* Builds a config with the given values (0: default). Caller frees. */
static rlock_config *make_config(int64_t watchdog_ms, int64_t fair_wait_ms,
                                 int64_t recheck_ms)
{
    rlock_config *cfg = NULL;

    if (rlock_config_new(&cfg) != RLOCK_OK)
        return NULL;
    if ((watchdog_ms > 0 &&
         rlock_config_set_watchdog_timeout(cfg, watchdog_ms) != RLOCK_OK) ||
        (fair_wait_ms > 0 &&
         rlock_config_set_fair_wait_timeout(cfg, fair_wait_ms) != RLOCK_OK) ||
        (recheck_ms > 0 &&
         rlock_config_set_recheck_interval(cfg, recheck_ms) != RLOCK_OK)) {
        rlock_config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* Connects a client with make_config()'s settings; asserts success. */
static rlock_client *connect_with(const char *url, int64_t watchdog_ms,
                                  int64_t fair_wait_ms, int64_t recheck_ms)
{
    rlock_config *cfg = make_config(watchdog_ms, fair_wait_ms, recheck_ms);
    rlock_client *c = NULL;

    assert_non_null(cfg);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

static rlock *fair_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fair_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* -------------------------------------------- waiters in child processes */

/* A child process runs nslots waiter threads, each with its own client and
 * fair handle, created after the fork. The child reports an int (0, or the
 * first error) once they are all connected, then obeys go_cmd messages:
 * slot s takes the lock (rlock_lock), RPUSHes its arrival index onto
 * order_key while holding it, unlocks, and writes a waiter_report. A go_cmd
 * with slot -1 makes the child free everything and exit 0. */
typedef struct child_args {
    char url[128];
    char name[160];
    char order_key[200];
    int nslots;
    int64_t fair_wait_ms; /* 0: default */
} child_args;

typedef struct go_cmd {
    int slot;
    int index; /* arrival index */
} go_cmd;

typedef struct waiter_report {
    int index;
    int lock_rc;
    int push_rc; /* 0, or -1 when the RPUSH failed */
    int unlock_rc;
} waiter_report;

typedef struct slot {
    pthread_t thread;
    rlock_client *c;
    rlock *l;
    redisContext *redis;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int index; /* -1: not told yet; -2: quit without locking */
    int out_fd;
    const child_args *a;
} slot;

static void *slot_main(void *p)
{
    slot *s = p;
    waiter_report rep = {0};
    redisReply *r;

    pthread_mutex_lock(s->mu);
    while (s->index == -1)
        pthread_cond_wait(s->cv, s->mu);
    rep.index = s->index;
    pthread_mutex_unlock(s->mu);
    if (rep.index < 0)
        return NULL;
    rep.lock_rc = rlock_lock(s->l);
    if (rep.lock_rc == RLOCK_OK) {
        r = redisCommand(s->redis, "RPUSH %s %d", s->a->order_key, rep.index);
        rep.push_rc = r != NULL && r->type == REDIS_REPLY_INTEGER ? 0 : -1;
        freeReplyObject(r);
        rep.unlock_rc = rlock_unlock(s->l);
    }
    /* one small write(2) to a pipe is atomic: reports never interleave */
    if (ft_write_all(s->out_fd, &rep, sizeof(rep)) != 0)
        _exit(2);
    return NULL;
}

static int slot_open(slot *s, const child_args *a)
{
    rlock_config *cfg = make_config(0, a->fair_wait_ms, 0);
    struct timeval tv = {10, 0};
    int rc;

    if (cfg == NULL)
        return RLOCK_ENOMEM;
    rc = rlock_client_connect_with(&s->c, a->url, cfg);
    rlock_config_free(cfg);
    if (rc == RLOCK_OK)
        rc = rlock_fair_get(s->c, a->name, &s->l);
    if (rc != RLOCK_OK)
        return rc;
    s->redis = redisConnectWithTimeout("127.0.0.1",
                                       atoi(strrchr(a->url, ':') + 1), tv);
    if (s->redis == NULL || s->redis->err != 0)
        return -1;
    return 0;
}

static void waiters_child(int in_fd, int out_fd, void *arg)
{
    const child_args *a = arg;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    slot slots[THREADS_PER_PROC];
    int rc = 0, n = a->nslots;

    memset(slots, 0, sizeof(slots));
    for (int i = 0; i < n && rc == 0; i++) {
        slots[i].mu = &mu;
        slots[i].cv = &cv;
        slots[i].index = -1;
        slots[i].out_fd = out_fd;
        slots[i].a = a;
        rc = slot_open(&slots[i], a);
    }
    if (ft_write_all(out_fd, &rc, sizeof(rc)) != 0 || rc != 0)
        _exit(3);
    for (int i = 0; i < n; i++)
        if (pthread_create(&slots[i].thread, NULL, slot_main, &slots[i]) != 0)
            _exit(4);
    for (;;) {
        go_cmd cmd;

        if (ft_read_all(in_fd, &cmd, sizeof(cmd), -1) != 0)
            _exit(1); /* the test is gone */
        if (cmd.slot < 0 || cmd.slot >= n)
            break;
        pthread_mutex_lock(&mu);
        slots[cmd.slot].index = cmd.index;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    for (int i = 0; i < n; i++)
        if (slots[i].index == -1)
            slots[i].index = -2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++) {
        pthread_join(slots[i].thread, NULL);
        rlock_free(slots[i].l);
        rlock_client_free(slots[i].c);
        redisFree(slots[i].redis);
    }
    _exit(0);
}

/* Runs waiters_child() in a child process made from this program: reads
 * the child_args from stdin first. */
static int waiters_main(void)
{
    static child_args a;

    if (ft_read_all(0, &a, sizeof(a), 10000) != 0 || a.nslots < 1 ||
        a.nslots > THREADS_PER_PROC)
        return 2;
    waiters_child(0, 1, &a); /* exits */
    return 0;
}

/* Children still running, killed by the teardown if a test failed. */
static ft_child children[PROCS];
static int nchildren;

static void start_children(int n, const child_args *a)
{
    for (int i = 0; i < n; i++) {
        int rc = -1;

        assert_int_equal(ft_child_exec(&children[i], CHILD_FLAG), 0);
        nchildren = i + 1;
        assert_int_equal(ft_write_all(children[i].to_child, a, sizeof(*a)), 0);
        assert_int_equal(
            ft_read_all(children[i].from_child, &rc, sizeof(rc), ENQUEUE_MS),
            0);
        assert_int_equal(rc, 0);
    }
}

static void send_go(int child, int slot_no, int index)
{
    go_cmd cmd = {.slot = slot_no, .index = index};

    assert_int_equal(ft_write_all(children[child].to_child, &cmd, sizeof(cmd)),
                     0);
}

/* Tells every child to quit and asserts that each exits cleanly. */
static void stop_children(void)
{
    for (int i = 0; i < nchildren; i++) {
        send_go(i, -1, -1);
        assert_int_equal(ft_child_wait(&children[i], 20000), 0);
    }
    nchildren = 0;
}

static int teardown_children(void **state)
{
    (void)state;
    for (int i = 0; i < nchildren; i++) {
        kill(children[i].pid, SIGKILL);
        ft_child_wait(&children[i], 5000);
    }
    nchildren = 0;
    return 0;
}

/* --------------------------------------------------------------- tests */

/* 32 waiters in 4 processes queue one at a time behind a holder; when it
 * unlocks, they acquire in exactly their order of arrival, and nothing is
 * left of the queue afterwards. */
static void
test_waiters_from_many_processes_acquire_in_arrival_order(void **state)
{
    lt_fixture *f = *state;
    static child_args a;
    char name[128];
    fair_keys k;
    waiter_report reps[WAITERS];
    int seen[WAITERS] = {0};
    int64_t t_unlock, t_last = 0;
    redisReply *order;
    rlock *l;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    memset(&a, 0, sizeof(a));
    snprintf(a.url, sizeof(a.url), "%s", f->redis.url);
    snprintf(a.name, sizeof(a.name), "%s", name);
    snprintf(a.order_key, sizeof(a.order_key), "%s:order", name);
    a.nslots = THREADS_PER_PROC;
    start_children(PROCS, &a);

    l = fair_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    /* arrival k comes from process k % PROCS, so processes interleave */
    for (int i = 0; i < WAITERS; i++) {
        send_go(i % PROCS, i / PROCS, i);
        if (wait_llen(&f->redis, k.queue, i + 1, ENQUEUE_MS) != i + 1)
            fail_msg("waiter %d did not join the queue in %d ms", i,
                     ENQUEUE_MS);
    }
    assert_int_equal(rt_cmd_int(&f->redis, "ZCARD %s", k.timeout), WAITERS);
    rt_sleep_ms(200); /* all of them settled into waiting */
    assert_int_equal(rt_cmd_int(&f->redis, "LLEN %s", k.queue), WAITERS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", a.order_key), 0);

    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    for (int i = 0; i < WAITERS; i++) {
        int child = i % PROCS; /* each child reports THREADS_PER_PROC times */

        if (ft_read_all(children[child].from_child, &reps[i], sizeof(reps[i]),
                        HANG_MS) != 0)
            fail_msg("a waiter of process %d did not report in %d ms", child,
                     HANG_MS);
        t_last = rt_now_ms();
        assert_int_equal(reps[i].lock_rc, RLOCK_OK);
        assert_int_equal(reps[i].push_rc, 0);
        assert_int_equal(reps[i].unlock_rc, RLOCK_OK);
        assert_true(reps[i].index >= 0 && reps[i].index < WAITERS);
        assert_int_equal(seen[reps[i].index]++, 0);
    }
    print_message("%d waiters went through in %lld ms after the unlock\n",
                  WAITERS, (long long)(t_last - t_unlock));
    stop_children();

    order = rt_cmd(&f->redis, "LRANGE %s 0 -1", a.order_key);
    assert_non_null(order);
    assert_int_equal(order->type, REDIS_REPLY_ARRAY);
    assert_int_equal(order->elements, WAITERS);
    for (int i = 0; i < WAITERS; i++) {
        if (atoi(order->element[i]->str) != i) {
            char got[WAITERS * 4 + 1] = "";

            for (size_t j = 0; j < order->elements; j++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), " %s",
                         order->element[j]->str);
            freeReplyObject(order);
            fail_msg("acquired out of arrival order:%s", got);
        }
    }
    freeReplyObject(order);
    assert_no_queue(&f->redis, &k);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* The owner takes a fair lock again without queueing; the hash counts the
 * holds, and the last unlock deletes it. */
static void test_fair_lock_is_reentrant(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200];
    fair_keys k;
    rlock *l;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    lt_owner_field(field, sizeof(field), f->client);
    l = fair_lock(f->client, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 3);
    lt_assert_single_field(&f->redis, name, field, "3");
    assert_no_queue(&f->redis, &k);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 1);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    rlock_free(l);
}

/* A trylock with no wait on a fair lock that another thread holds fails at
 * once and leaves no trace in the queue. */
static void test_trylock_without_wait_does_not_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    static ft_holder h;
    fair_keys k;
    int64_t t0;
    rlock *l;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    l = fair_lock(f->client, name);
    ft_holder_start(&h, l, 1, 0);

    t0 = rt_now_ms();
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_true(rt_now_ms() - t0 < 2000);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_no_queue(&f->redis, &k);

    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* A waiter whose trylock wait runs out leaves the queue and the timeout
 * set, so the waiter queued behind it is next, and takes the lock as soon
 * as the holder unlocks. */
static void test_waiter_whose_wait_runs_out_leaves_the_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    static ft_holder h;
    static ft_call quitter;
    static ft_waiter next;
    rlock_client *c2 = connect_with(f->redis.url, 0, 0, 0);
    fair_keys k;
    int64_t t_unlock;
    rlock *l, *l2;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    l = fair_lock(f->client, name);
    l2 = fair_lock(c2, name);
    ft_holder_start(&h, l, 1, 0);

    ft_call_start(&quitter, l, FT_TRYLOCK, 1500, RLOCK_LEASE_WATCHDOG);
    assert_int_equal(wait_llen(&f->redis, k.queue, 1, ENQUEUE_MS), 1);
    memset(&next, 0, sizeof(next));
    ft_waiter_start(&next, l2);
    assert_int_equal(wait_llen(&f->redis, k.queue, 2, ENQUEUE_MS), 2);
    assert_int_equal(rt_cmd_int(&f->redis, "ZCARD %s", k.timeout), 2);

    assert_true(ft_call_wait(&quitter, HANG_MS));
    print_message("the trylock gave up after %lld ms\n",
                  (long long)quitter.elapsed_ms);
    assert_int_equal(quitter.rc, RLOCK_ETIMEDOUT);
    assert_true(quitter.elapsed_ms >= 1400);
    /* only the other waiter is left */
    assert_int_equal(rt_cmd_int(&f->redis, "LLEN %s", k.queue), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "ZCARD %s", k.timeout), 1);
    assert_int_equal(atomic_load(&next.done), 0);

    t_unlock = rt_now_ms();
    ft_holder_finish(&h, 1, 0);
    assert_int_equal(h.unlock_rc[0], RLOCK_OK);
    if (!ft_waiters_wait(&next, 1, HANG_MS))
        fail_msg("the waiter behind the one that gave up is stuck");
    print_message("the next waiter took it %lld ms after the unlock\n",
                  (long long)(next.acquired_ms - t_unlock));
    assert_int_equal(next.rc, RLOCK_OK);
    assert_int_equal(next.unlock_rc, RLOCK_OK);
    assert_true(next.acquired_ms - t_unlock < 1500);
    assert_no_queue(&f->redis, &k);
    rlock_free(l);
    rlock_free(l2);
    rlock_client_free(c2);
}

/* A queued waiter whose process is killed keeps its place at the head for
 * at most the wait it was told (the holder's lease) plus the fair wait
 * timeout; then it is purged, and the waiter behind it takes the lock. */
static void test_killed_queued_waiter_does_not_stall_the_queue(void **state)
{
    lt_fixture *f = *state;
    static child_args a;
    static ft_waiter w;
    char name[128];
    rlock_client *hc, *wc;
    fair_keys k;
    int64_t t_unlock, bound;
    rlock *hl, *wl;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    hc = connect_with(f->redis.url, HOLDER_WATCHDOG_MS, 0, 0);
    wc = connect_with(f->redis.url, 0, FAIR_WAIT_MS, FAST_RECHECK_MS);
    hl = fair_lock(hc, name);
    wl = fair_lock(wc, name);
    assert_int_equal(rlock_lock(hl), RLOCK_OK);

    memset(&a, 0, sizeof(a));
    snprintf(a.url, sizeof(a.url), "%s", f->redis.url);
    snprintf(a.name, sizeof(a.name), "%s", name);
    snprintf(a.order_key, sizeof(a.order_key), "%s:order", name);
    a.nslots = 1;
    a.fair_wait_ms = FAIR_WAIT_MS;
    start_children(1, &a);
    send_go(0, 0, 0);
    assert_int_equal(wait_llen(&f->redis, k.queue, 1, ENQUEUE_MS), 1);
    memset(&w, 0, sizeof(w));
    ft_waiter_start(&w, wl);
    assert_int_equal(wait_llen(&f->redis, k.queue, 2, ENQUEUE_MS), 2);

    kill(children[0].pid, SIGKILL);
    assert_int_equal(ft_child_wait(&children[0], 5000), -1);
    nchildren = 0;

    t_unlock = rt_now_ms();
    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    bound =
        FAIR_WAIT_MS + HOLDER_WATCHDOG_MS + FAST_RECHECK_MS + PURGE_MARGIN_MS;
    if (!ft_waiters_wait(&w, 1, HANG_MS))
        fail_msg("the queue stalled behind a dead waiter for %d ms", HANG_MS);
    print_message("the live waiter took it %lld ms after the unlock "
                  "(bound %lld ms)\n",
                  (long long)(w.acquired_ms - t_unlock), (long long)bound);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms - t_unlock < bound);
    assert_no_queue(&f->redis, &k);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(hc);
    rlock_client_free(wc);
}

/* The completion of one async call, waited for by the test. */
typedef struct async_done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
    int64_t at_ms;
} async_done;

static void async_done_init(async_done *d)
{
    memset(d, 0, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
}

static void async_done_destroy(async_done *d)
{
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
}

static void on_async_done(rlock *l, uint64_t owner, int status, void *arg)
{
    async_done *d = arg;

    (void)l;
    (void)owner;
    pthread_mutex_lock(&d->mu);
    d->calls++;
    d->status = status;
    d->at_ms = rt_now_ms();
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Waits up to timeout_ms for the callback; returns how many ran. */
static int async_wait(async_done *d, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int calls;

    for (;;) {
        pthread_mutex_lock(&d->mu);
        calls = d->calls;
        pthread_mutex_unlock(&d->mu);
        if (calls > 0 || rt_now_ms() >= deadline)
            return calls;
        rt_sleep_ms(2);
    }
}

/* A blocking waiter, an async owner and another blocking waiter (of a
 * second client) queue in that order; they get the lock in that order,
 * each only once the one before has let go. */
static void test_blocking_and_async_waiters_share_one_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c2 = connect_with(f->redis.url, 0, 0, 0);
    static ft_waiter first, third;
    async_done second, second_unlock;
    uint64_t owner = rlock_owner_new();
    fair_keys k;
    int64_t t_unlock_asked;
    rlock *l, *l2;

    LT_TEST_NAME(name);
    fair_keys_of(&k, name);
    async_done_init(&second);
    async_done_init(&second_unlock);
    l = fair_lock(f->client, name);
    l2 = fair_lock(c2, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    memset(&first, 0, sizeof(first));
    memset(&third, 0, sizeof(third));
    first.hold_ms = 200;
    ft_waiter_start(&first, l);
    assert_int_equal(wait_llen(&f->redis, k.queue, 1, ENQUEUE_MS), 1);
    assert_int_equal(rlock_lock_async(l, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, on_async_done,
                                      &second),
                     RLOCK_OK);
    assert_int_equal(wait_llen(&f->redis, k.queue, 2, ENQUEUE_MS), 2);
    ft_waiter_start(&third, l2);
    assert_int_equal(wait_llen(&f->redis, k.queue, 3, ENQUEUE_MS), 3);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    if (!ft_waiters_wait(&first, 1, HANG_MS))
        fail_msg("the first waiter never got the lock");
    assert_int_equal(first.rc, RLOCK_OK);
    assert_int_equal(first.unlock_rc, RLOCK_OK);
    assert_int_equal(async_wait(&second, HANG_MS), 1);
    assert_int_equal(second.status, RLOCK_OK);
    assert_true(second.at_ms >= first.acquired_ms + first.hold_ms);
    assert_int_equal(rlock_owner_hold_count(l, owner), 1);

    /* the third waits for the async owner, however long it holds */
    rt_sleep_ms(300);
    assert_int_equal(atomic_load(&third.done), 0);
    t_unlock_asked = rt_now_ms();
    assert_int_equal(
        rlock_unlock_async(l, owner, on_async_done, &second_unlock), RLOCK_OK);
    assert_int_equal(async_wait(&second_unlock, HANG_MS), 1);
    assert_int_equal(second_unlock.status, RLOCK_OK);
    if (!ft_waiters_wait(&third, 1, HANG_MS))
        fail_msg("the third waiter never got the lock");
    print_message("turns: second %lld ms after the first's, third %lld ms "
                  "after the second's unlock was asked for\n",
                  (long long)(second.at_ms - first.acquired_ms),
                  (long long)(third.acquired_ms - t_unlock_asked));
    assert_int_equal(third.rc, RLOCK_OK);
    assert_int_equal(third.unlock_rc, RLOCK_OK);
    assert_true(third.acquired_ms >= t_unlock_asked);
    assert_true(third.acquired_ms - t_unlock_asked < 1500);

    assert_int_equal(second.calls, 1);
    assert_int_equal(second_unlock.calls, 1);
    assert_no_queue(&f->redis, &k);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    async_done_destroy(&second);
    async_done_destroy(&second_unlock);
    rlock_free(l);
    rlock_free(l2);
    rlock_client_free(c2);
}

/* rlock_kind tells a fair handle from a plain one. */
static void test_kind_of_fair_lock_is_fair(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *fair, *plain;

    LT_TEST_NAME(name);
    fair = fair_lock(f->client, name);
    plain = lt_get_lock(f->client, name);
    assert_int_equal(rlock_kind(fair), RLOCK_KIND_FAIR);
    assert_int_equal(rlock_kind(plain), RLOCK_KIND_LOCK);
    assert_int_equal(rlock_kind(NULL), RLOCK_EINVAL);
    assert_string_equal(rlock_name(fair), name);
    rlock_free(fair);
    rlock_free(plain);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], CHILD_FLAG) == 0)
        return waiters_main();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_waiters_from_many_processes_acquire_in_arrival_order,
            teardown_children),
        cmocka_unit_test(test_fair_lock_is_reentrant),
        cmocka_unit_test(test_trylock_without_wait_does_not_queue),
        cmocka_unit_test(test_waiter_whose_wait_runs_out_leaves_the_queue),
        cmocka_unit_test_teardown(
            test_killed_queued_waiter_does_not_stall_the_queue,
            teardown_children),
        cmocka_unit_test(test_blocking_and_async_waiters_share_one_queue),
        cmocka_unit_test(test_kind_of_fair_lock_is_fair),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
