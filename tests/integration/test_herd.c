/*
 * test_herd.c: many processes on one RLock, and the setting
 * that gives Redisson's own waiting back (rlock_config_set_lock_barging).
 *
 * Each rlock_client stands for a process (its own uuid, its own subscriber
 * connection), one thread each. By default an RLock's waiters queue in
 * rlock's own keys beside Redisson's (rlock_config_set_lock_queue):
 * the queue tests below look at those keys and at who listens where. The figures of speed are the benchmark's
 * (scripts/bench); these tests check behaviour only, with margins wide
 * enough for a loaded machine and the sanitizer builds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "herd"

/* The contenders of the many-clients test, and how long they loop. */
#define CLIENTS 8
#define LOOP_MS 1500
/* The longest any of them may wait for one acquisition: far above what
 * the benchmark measures at 8 processes (about 1 s at worst, loaded), so
 * that only a waiter left behind for good fails it. */
#define WAIT_BOUND_MS 20000

/* ------------------------------------------------------------- helpers */

static int set_barging(rlock_config *cfg, int64_t on)
{
    return rlock_config_set_lock_barging(cfg, (int)on);
}

/* A client looping lock, a shared-counter check, unlock until a time. */
typedef struct contender {
    pthread_t thread;
    rlock *l;
    int64_t until_ms;
    atomic_int *inside;
    int acquired;
    int overlaps;
    int errors;
    int64_t max_wait_ms;
} contender;

static void *contender_main(void *p)
{
    contender *k = p;

    while (rt_now_ms() < k->until_ms) {
        int64_t t0 = rt_now_ms();
        if (rlock_lock(k->l) != RLOCK_OK) {
            k->errors++;
            return NULL;
        }
        if (rt_now_ms() - t0 > k->max_wait_ms)
            k->max_wait_ms = rt_now_ms() - t0;
        if (atomic_fetch_add(k->inside, 1) != 0)
            k->overlaps++;
        k->acquired++;
        atomic_fetch_sub(k->inside, 1);
        if (rlock_unlock(k->l) != RLOCK_OK)
            k->errors++;
    }
    return NULL;
}

/* Runs CLIENTS clients (barging on or off) on one lock for LOOP_MS, and
 * checks that every one of them got it, one at a time, within the bound. */
static void run_clients_on_one_lock(lt_fixture *f, int barging)
{
    char name[128];
    rlock_client *c[CLIENTS];
    contender k[CLIENTS];
    atomic_int inside;

    LT_TEST_NAME(name);
    atomic_init(&inside, 0);
    for (int i = 0; i < CLIENTS; i++) {
        c[i] = lt_connect(f->redis.url, set_barging, barging);
        k[i] = (contender){.l = lt_get_lock(c[i], name), .inside = &inside};
    }
    int64_t until = rt_now_ms() + LOOP_MS;
    for (int i = 0; i < CLIENTS; i++) {
        k[i].until_ms = until;
        assert_int_equal(
            pthread_create(&k[i].thread, NULL, contender_main, &k[i]), 0);
    }
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(pthread_join(k[i].thread, NULL), 0);
    int64_t worst = 0;
    for (int i = 0; i < CLIENTS; i++) {
        print_message("client %d: %d acquisitions, longest wait %lld ms\n", i,
                      k[i].acquired, (long long)k[i].max_wait_ms);
        assert_int_equal(k[i].errors, 0);
        assert_int_equal(k[i].overlaps, 0);
        assert_true(k[i].acquired >= 1);
        if (k[i].max_wait_ms > worst)
            worst = k[i].max_wait_ms;
    }
    assert_true(worst < WAIT_BOUND_MS);
    for (int i = 0; i < CLIENTS; i++) {
        rlock_free(k[i].l);
        rlock_client_free(c[i]);
    }
}

/* --------------------------------------------------------------- tests */

static void test_every_client_of_many_acquires(void **state)
{
    run_clients_on_one_lock(*state, 0);
}

static void test_every_client_of_many_acquires_when_barging(void **state)
{
    run_clients_on_one_lock(*state, 1);
}

/* Client a holds the lock while b's thread waits for it; a has seen the
 * lock taken (its own attempt failed), which is when rlock, by default,
 * makes a releaser wait its turn. With barging on, a's unlock followed at
 * once by a lock takes the lock straight back, ahead of b, as Redisson's
 * RLock does: in some of the rounds at least (b's wake-up races a's
 * attempt), where by default a first waits a few ms for b. */
typedef struct taker {
    pthread_t thread;
    rlock *l;
    int64_t acquired_ms;
    int rc;
} taker;

static void *taker_main(void *p)
{
    taker *t = p;
    t->rc = rlock_lock(t->l);
    t->acquired_ms = rt_now_ms();
    if (t->rc == RLOCK_OK)
        t->rc = rlock_unlock(t->l);
    return NULL;
}

static void test_barging_lets_the_releaser_take_it_back(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *a = lt_connect(f->redis.url, set_barging, 1);
    rlock_client *b = lt_connect(f->redis.url, NULL, 0);
    int barged = 0;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    rlock *la = lt_get_lock(a, name), *lb = lt_get_lock(b, name);
    for (int round = 0; round < 10; round++) {
        /* a sees the lock taken, then holds it */
        assert_int_equal(rlock_lock(lb), RLOCK_OK);
        assert_int_equal(rlock_trylock(la, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        assert_int_equal(rlock_unlock(lb), RLOCK_OK);
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        /* b waits, subscribed */
        taker t = {.l = lb};
        assert_int_equal(pthread_create(&t.thread, NULL, taker_main, &t), 0);
        assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 10000), 1);
        rt_sleep_ms(20); /* b's attempt after its subscription is done */
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        int64_t took_back = rt_now_ms();
        rt_sleep_ms(5);
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
        assert_int_equal(pthread_join(t.thread, NULL), 0);
        assert_int_equal(t.rc, RLOCK_OK);
        if (took_back < t.acquired_ms)
            barged++;
    }
    print_message("the releaser took it back first in %d of 10 rounds\n",
                  barged);
    assert_true(barged >= 1);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

/* ---------------------------------------------------------- the queue */

static int set_recheck(rlock_config *cfg, int64_t ms)
{
    return rlock_config_set_recheck_interval(cfg, ms);
}

static int set_queue(rlock_config *cfg, int64_t on)
{
    return rlock_config_set_lock_queue(cfg, (int)on);
}

/* Waits up to 10 s for channel to have n subscribers; asserts it. */
static void await_numsub(rt_redis *r, const char *channel, long long n)
{
    assert_int_equal(rt_wait_numsub(r, channel, n, 10000), n);
}

/* How many waiters' own channels of the lock whose channel is channel
 * have subscribers (PUBSUB CHANNELS channel:*). */
static long long own_channels(rt_redis *r, const char *channel)
{
    redisReply *rep = rt_cmd(r, "PUBSUB CHANNELS %s:*", channel);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    long long n = (long long)rep->elements;
    freeReplyObject(rep);
    return n;
}

/* A thread of its own client that locks (or tries for wait_ms when
 * wait_ms >= 0), notes when and in which turn it got the lock, holds it
 * for hold_ms and unlocks. */
typedef struct turn {
    pthread_t thread;
    rlock *l;
    int64_t wait_ms; /* < 0: rlock_lock */
    int64_t hold_ms;
    atomic_int *order;
    int place; /* its turn: 0 first */
    int64_t acquired_ms;
    int rc;
} turn;

static void *turn_main(void *p)
{
    turn *t = p;
    t->rc = t->wait_ms < 0
                ? rlock_lock(t->l)
                : rlock_trylock(t->l, t->wait_ms, RLOCK_LEASE_WATCHDOG);
    t->acquired_ms = rt_now_ms();
    if (t->rc != RLOCK_OK)
        return NULL;
    t->place = atomic_fetch_add(t->order, 1);
    rt_sleep_ms(t->hold_ms);
    t->rc = rlock_unlock(t->l);
    return NULL;
}

static void start_turn(turn *t, rlock *l, atomic_int *order, int64_t wait_ms,
                       int64_t hold_ms)
{
    *t = (turn){.l = l, .wait_ms = wait_ms, .hold_ms = hold_ms,
                .order = order, .place = -1};
    assert_int_equal(pthread_create(&t->thread, NULL, turn_main, t), 0);
}

/* Up to three waiters, each a client of its own, behind a holder that is
 * a fourth: the crowd the queue's cases line up. */
#define CROWD_MAX 3
typedef struct crowd {
    int n;                             /* waiters */
    rlock_client *c[CROWD_MAX + 1];    /* c[n] holds */
    rlock *l[CROWD_MAX + 1];
    turn t[CROWD_MAX];
    atomic_int order;
} crowd;

/* Connects n waiters and a holder (set and arg configure each client, as
 * lt_connect), takes the lock with the holder and starts each waiter's
 * rlock_lock, holding hold_ms once it has the lock; with the queue on
 * (queued), one waiter at a time, each once the one before is queued, so
 * that the queue holds them in index order. */
static void crowd_line_up(lt_fixture *f, crowd *w, const char *name, int n,
                          int64_t hold_ms, int (*set)(rlock_config *, int64_t),
                          int64_t arg, bool queued)
{
    assert_true(n <= CROWD_MAX);
    w->n = n;
    atomic_init(&w->order, 0);
    for (int i = 0; i <= n; i++) {
        w->c[i] = lt_connect(f->redis.url, set, arg);
        w->l[i] = lt_get_lock(w->c[i], name);
    }
    assert_int_equal(rlock_lock(w->l[n]), RLOCK_OK);
    for (int i = 0; i < n; i++) {
        start_turn(&w->t[i], w->l[i], &w->order, -1, hold_ms);
        if (queued)
            lt_await_queued(&f->redis, name, i + 1);
    }
}

/* The holder unlocks; every waiter has the lock in its turn. */
static void crowd_release(crowd *w)
{
    assert_int_equal(rlock_unlock(w->l[w->n]), RLOCK_OK);
    for (int i = 0; i < w->n; i++) {
        assert_int_equal(pthread_join(w->t[i].thread, NULL), 0);
        assert_int_equal(w->t[i].rc, RLOCK_OK);
    }
}

static void crowd_free(crowd *w)
{
    for (int i = 0; i <= w->n; i++) {
        rlock_free(w->l[i]);
        rlock_client_free(w->c[i]);
    }
}

/* Three clients queue one after another while a fourth holds the lock:
 * they get it in the order they came. */
static void test_queued_waiters_take_the_lock_in_arrival_order(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    crowd w;

    LT_TEST_NAME(name);
    crowd_line_up(f, &w, name, 3, 20, NULL, 0, true);
    crowd_release(&w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(w.t[i].place, i);
    crowd_free(&w);
}

/* A client that unlocks and locks again at once, while another client's
 * waiter is queued, gets the lock only after that waiter. */
static void test_releaser_locks_again_behind_a_queued_waiter(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *a = lt_connect(f->redis.url, NULL, 0);
    rlock_client *b = lt_connect(f->redis.url, NULL, 0);
    atomic_int order;

    LT_TEST_NAME(name);
    atomic_init(&order, 0);
    rlock *la = lt_get_lock(a, name), *lb = lt_get_lock(b, name);
    for (int round = 0; round < 5; round++) {
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        turn t;
        start_turn(&t, lb, &order, -1, 0);
        lt_await_queued(&f->redis, name, 1);
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
        assert_int_equal(rlock_lock(la), RLOCK_OK);
        int64_t again = rt_now_ms();
        assert_int_equal(pthread_join(t.thread, NULL), 0);
        assert_int_equal(t.rc, RLOCK_OK);
        assert_true(t.acquired_ms <= again);
        assert_int_equal(rlock_unlock(la), RLOCK_OK);
    }
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

/* Of three queued clients only the head listens on Redisson's channel;
 * the others wait on channels of their own. */
static void test_only_the_head_listens_on_the_lock_channel(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    crowd w;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    crowd_line_up(f, &w, name, 3, 20, NULL, 0, true);
    await_numsub(&f->redis, channel, 1);
    rt_sleep_ms(200); /* nobody else joins it later */
    assert_int_equal(rt_numsub(&f->redis, channel), 1);
    assert_int_equal(own_channels(&f->redis, channel), 2);
    crowd_release(&w);
    /* and every channel is left once nobody waits */
    await_numsub(&f->redis, channel, 0);
    int64_t deadline = rt_now_ms() + 10000;
    while (own_channels(&f->redis, channel) != 0 && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    assert_int_equal(own_channels(&f->redis, channel), 0);
    crowd_free(&w);
}

/* A waiter that waited behind the head keeps its own channel for a while
 * after its turn came (for its next wait: no SUBSCRIBE then), and leaves
 * it once that while is over. */
static void test_own_channel_stays_a_while_after_the_wait(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    crowd w;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    crowd_line_up(f, &w, name, 2, 0, NULL, 0, true);
    crowd_release(&w);
    int64_t done = rt_now_ms();
    assert_int_equal(own_channels(&f->redis, channel), 1);
    while (own_channels(&f->redis, channel) != 0 &&
           rt_now_ms() - done < 10000)
        rt_sleep_ms(5);
    assert_int_equal(own_channels(&f->redis, channel), 0);
    crowd_free(&w);
}

/* With the queue off, every waiting client listens on Redisson's channel
 * and nothing is queued. */
static void test_queue_off_every_waiter_listens_on_the_channel(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160], queue[160];
    crowd w;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    lt_queue_of(queue, sizeof(queue), name);
    crowd_line_up(f, &w, name, 3, 20, set_queue, 0, false);
    await_numsub(&f->redis, channel, 3);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    crowd_release(&w);
    crowd_free(&w);
}

/* The server's clock in ms: the queue's scripts keep their times in it
 * (TIME), whatever the clients' clocks say. */
static long long server_ms(rt_redis *r)
{
    redisReply *rep = rt_cmd(r, "TIME");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    long long ms = atoll(rep->element[0]->str) * 1000 +
                   atoll(rep->element[1]->str) / 1000;
    freeReplyObject(rep);
    return ms;
}

/* A head that stopped trying (its process died, or it gave up while Redis
 * was stalled and its leaving never arrived) holds a free lock up for the
 * waiter behind it only for the head's grace (500 ms) and a little, not
 * until its entry would go stale (5 s here) nor for that waiter's whole
 * re-check interval; then the waiter takes the lock, and the dead entry is
 * gone. */
static void test_a_dead_head_holds_a_free_lock_up_only_for_its_grace(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160], stale_at[160];
    rlock_client *c = lt_connect(f->redis.url, set_recheck, 200);
    rlock_client *h = lt_connect(f->redis.url, NULL, 0);
    atomic_int order;

    LT_TEST_NAME(name);
    atomic_init(&order, 0);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    rlock *l = lt_get_lock(c, name), *lh = lt_get_lock(h, name);
    assert_int_equal(rlock_lock(lh), RLOCK_OK);
    rt_cmd_int(&f->redis, "RPUSH %s dead:1", queue);
    rt_cmd_int(&f->redis, "ZADD %s %lld dead:1", stale_at,
               server_ms(&f->redis) + 5000);
    turn t;
    start_turn(&t, l, &order, -1, 0);
    lt_await_queued(&f->redis, name, 2);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(lh), RLOCK_OK);
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.rc, RLOCK_OK);
    int64_t took = t.acquired_ms - t0;
    print_message("took the lock %lld ms after the unlock\n",
                  (long long)took);
    assert_true(took >= 400);  /* the head had its grace */
    assert_true(took < 3000); /* not its 5 s */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", stale_at), 0);
    rlock_free(l);
    rlock_free(lh);
    rlock_client_free(c);
    rlock_client_free(h);
}

/* A waiter whose wait runs out leaves the queue. */
static void test_waiter_that_gives_up_leaves_the_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160], stale_at[160];
    rlock_client *a = lt_connect(f->redis.url, NULL, 0);
    rlock_client *b = lt_connect(f->redis.url, NULL, 0);
    atomic_int order;

    LT_TEST_NAME(name);
    atomic_init(&order, 0);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    rlock *la = lt_get_lock(a, name), *lb = lt_get_lock(b, name);
    assert_int_equal(rlock_lock(la), RLOCK_OK);
    turn t;
    start_turn(&t, lb, &order, 1500, 0);
    lt_await_queued(&f->redis, name, 1);
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.rc, RLOCK_ETIMEDOUT);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", stale_at), 0);
    assert_int_equal(rlock_unlock(la), RLOCK_OK);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

/* A Redisson client's unlock (its hash field deleted, its message on
 * Redisson's channel) wakes the queued head at once: its lease (30 s) and
 * its re-check interval (60 s) are far away. */
static void test_redisson_unlock_wakes_the_queued_head(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = lt_connect(f->redis.url, set_recheck, 60000);
    atomic_int order;

    LT_TEST_NAME(name);
    atomic_init(&order, 0);
    lt_channel_of(channel, sizeof(channel), name);
    rlock *l = lt_get_lock(c, name);
    rt_cmd_int(&f->redis, "HSET %s 4b1f3a6e-0000-4000-8000-00000000java:1 1",
               name);
    rt_cmd_int(&f->redis, "PEXPIRE %s 30000", name);
    turn t;
    start_turn(&t, l, &order, -1, 0);
    lt_await_queued(&f->redis, name, 1);
    await_numsub(&f->redis, channel, 1);
    rt_sleep_ms(100); /* its try after the subscription is done */
    int64_t t0 = rt_now_ms();
    rt_cmd_int(&f->redis, "DEL %s", name);
    assert_int_equal(rt_cmd_int(&f->redis, "PUBLISH %s 0", channel), 1);
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.rc, RLOCK_OK);
    print_message("woken after %lld ms\n", (long long)(t.acquired_ms - t0));
    assert_true(t.acquired_ms - t0 < 10000);
    rlock_free(l);
    rlock_client_free(c);
}

/* While a waiter is queued, both queue keys expire within the time a
 * waiter keeps its place (twice the re-check interval and 1 s), so that
 * they vanish when nobody refreshes them. */
static void test_queue_keys_expire_when_nobody_refreshes_them(void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160], stale_at[160];
    rlock_client *a = lt_connect(f->redis.url, NULL, 0);
    rlock_client *b = lt_connect(f->redis.url, set_recheck, 200);
    atomic_int order;

    LT_TEST_NAME(name);
    atomic_init(&order, 0);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    rlock *la = lt_get_lock(a, name), *lb = lt_get_lock(b, name);
    assert_int_equal(rlock_lock(la), RLOCK_OK);
    turn t;
    start_turn(&t, lb, &order, -1, 0);
    lt_await_queued(&f->redis, name, 1);
    long long q = rt_cmd_int(&f->redis, "PTTL %s", queue);
    long long z = rt_cmd_int(&f->redis, "PTTL %s", stale_at);
    print_message("PTTL queue %lld, stale-at %lld\n", q, z);
    assert_true(q > 0 && q <= 1400);
    assert_true(z > 0 && z <= 1400);
    assert_int_equal(rlock_unlock(la), RLOCK_OK);
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.rc, RLOCK_OK);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(a);
    rlock_client_free(b);
}

/* A holder that got the lock through the queue: the lock hash is
 * Redisson's, its one field (the owner tag) at 1 with the watchdog's
 * lease, and nothing of the queue is left. */
typedef struct holder {
    pthread_t thread;
    rlock_client *c;
    rlock *l;
    char field[128];
    atomic_int stage; /* 1: holds it; 2: may unlock */
    int rc;
} holder;

static void *holder_main(void *p)
{
    holder *h = p;
    h->rc = rlock_lock(h->l);
    lt_owner_field(h->field, sizeof(h->field), h->c);
    atomic_store(&h->stage, 1);
    while (atomic_load(&h->stage) != 2)
        rt_sleep_ms(5);
    if (h->rc == RLOCK_OK)
        h->rc = rlock_unlock(h->l);
    return NULL;
}

static void test_queued_acquire_writes_the_lock_hash_as_redisson(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160], stale_at[160];
    rlock_client *a = lt_connect(f->redis.url, NULL, 0);
    holder h = {.c = lt_connect(f->redis.url, NULL, 0)};

    LT_TEST_NAME(name);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    rlock *la = lt_get_lock(a, name);
    h.l = lt_get_lock(h.c, name);
    atomic_init(&h.stage, 0);
    assert_int_equal(rlock_lock(la), RLOCK_OK);
    assert_int_equal(pthread_create(&h.thread, NULL, holder_main, &h), 0);
    lt_await_queued(&f->redis, name, 1);
    assert_int_equal(rlock_unlock(la), RLOCK_OK);
    int64_t deadline = rt_now_ms() + 10000;
    while (atomic_load(&h.stage) != 1 && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    assert_int_equal(atomic_load(&h.stage), 1);
    assert_int_equal(h.rc, RLOCK_OK);
    lt_assert_single_field(&f->redis, name, h.field, "1");
    long long ttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(ttl > 20000 && ttl <= 30000);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", stale_at), 0);
    atomic_store(&h.stage, 2);
    assert_int_equal(pthread_join(h.thread, NULL), 0);
    assert_int_equal(h.rc, RLOCK_OK);
    rlock_free(la);
    rlock_free(h.l);
    rlock_client_free(a);
    rlock_client_free(h.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_client_of_many_acquires),
        cmocka_unit_test(test_every_client_of_many_acquires_when_barging),
        cmocka_unit_test(test_barging_lets_the_releaser_take_it_back),
        cmocka_unit_test(test_queued_waiters_take_the_lock_in_arrival_order),
        cmocka_unit_test(test_releaser_locks_again_behind_a_queued_waiter),
        cmocka_unit_test(test_only_the_head_listens_on_the_lock_channel),
        cmocka_unit_test(test_own_channel_stays_a_while_after_the_wait),
        cmocka_unit_test(test_queue_off_every_waiter_listens_on_the_channel),
        cmocka_unit_test(
            test_a_dead_head_holds_a_free_lock_up_only_for_its_grace),
        cmocka_unit_test(test_waiter_that_gives_up_leaves_the_queue),
        cmocka_unit_test(test_redisson_unlock_wakes_the_queued_head),
        cmocka_unit_test(test_queue_keys_expire_when_nobody_refreshes_them),
        cmocka_unit_test(
            test_queued_acquire_writes_the_lock_hash_as_redisson),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
