/*
 * test_queue_keys.c: an RLock's queue (rlock_config_set_lock_queue) when
 * its keys are not what its waiters left there.
 *
 * The queue is two keys beside Redisson's lock hash: a list of owner tags
 * in arrival order, redisson_rlock_queue:{N}, and a sorted set of when
 * each goes stale, redisson_rlock_timeout:{N}. Either can vanish on its
 * own: Redis evicts keys with a TTL under a volatile-* maxmemory policy,
 * and an operator may delete one. Then the waiters must still get the
 * lock in turn, within a few of their re-check intervals: here a waiter
 * queued behind two loopers that take turns (each a client of its own,
 * holding the lock HOLD_MS at a time), with the list deleted or evicted
 * by Redis itself. (The sorted set deleted is not here: today's scripts
 * already drop the entries it no longer dates and queue each waiter
 * again at its next try.) And a waiter at the
 * head of the queue whose own stale-at has passed still takes the lock
 * before those behind it: only others may find it stale.
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

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "queue-keys"

/* The waiter's rlock_trylock() wait: with its queue intact it gets the
 * lock within a couple of seconds, even loaded. */
#define WAIT_MS 15000
/* The waiter's re-check interval: half the default, so that a waiter left
 * out of the queue finds out soon. */
#define WAITER_RECHECK_MS 1000
/* How soon after the holder's release the waiter must have the lock: a
 * few of its re-checks and the loopers' turns ahead of it, with room for
 * a loaded machine (today, with its list gone, a waiter gets it only by
 * trying in the instant between a looper's unlock and its next lock). */
#define BOUND_MS 8000
/* How long a looper holds the lock each time (a looper that takes the
 * lock straight back leaves it free for well under a ms between two). */
#define HOLD_MS 100

/* ------------------------------------------------------------- helpers */

static int set_recheck(rlock_config *cfg, int64_t ms)
{
    return rlock_config_set_recheck_interval(cfg, ms);
}

/* How many waiters' own channels of lock name have subscribers. */
static long long own_channels(rt_redis *r, const char *name)
{
    char channel[160];
    lt_channel_of(channel, sizeof(channel), name);
    redisReply *rep = rt_cmd(r, "PUBSUB CHANNELS %s:*", channel);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    long long n = (long long)rep->elements;
    freeReplyObject(rep);
    return n;
}

/* Waits up to 10 s until the head listens on the lock's channel and the
 * others behind it on their own (asserts it), then 100 ms more: each
 * waiter tries once more after its subscription, and that try is over
 * by then. */
static void await_settled(rt_redis *r, const char *name, long long behind)
{
    char channel[160];
    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_wait_numsub(r, channel, 1, 10000), 1);
    int64_t deadline = rt_now_ms() + 10000;
    while (own_channels(r, name) != behind && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    assert_int_equal(own_channels(r, name), behind);
    rt_sleep_ms(100);
}

/* A thread of its own client (re-check interval recheck_ms) that waits
 * for the lock with rlock_trylock(wait_ms, watchdog), notes when it got
 * it, holds it hold_ms and unlocks. */
typedef struct waiter {
    rlock_client *c;
    rlock *l;
    int64_t wait_ms;
    int64_t hold_ms;
    pthread_t thread;
    int rc;       /* the trylock's, or the unlock's if that failed */
    int64_t at_ms; /* rt_now_ms() when the trylock returned */
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    w->rc = rlock_trylock(w->l, w->wait_ms, RLOCK_LEASE_WATCHDOG);
    w->at_ms = rt_now_ms();
    if (w->rc != RLOCK_OK)
        return NULL;
    rt_sleep_ms(w->hold_ms);
    w->rc = rlock_unlock(w->l);
    return NULL;
}

static void waiter_start(waiter *w, const char *url, const char *name,
                         int64_t recheck_ms, int64_t wait_ms,
                         int64_t hold_ms)
{
    *w = (waiter){.wait_ms = wait_ms, .hold_ms = hold_ms};
    w->c = lt_connect(url, set_recheck, recheck_ms);
    w->l = lt_get_lock(w->c, name);
    assert_int_equal(pthread_create(&w->thread, NULL, waiter_main, w), 0);
}

static void waiter_join(waiter *w)
{
    assert_int_equal(pthread_join(w->thread, NULL), 0);
    rlock_free(w->l);
    rlock_client_free(w->c);
}

/* A holder, two loopers queued behind it and a waiter behind them. */
typedef struct line {
    rt_redis *r;
    const char *name;
    rlock_client *holder_c;
    rlock *holder;
    atomic_int taken;
    lt_looper k[2];
    waiter w;
} line;

/* Lines up ln on server r for lock name: the holder takes the lock, then
 * each looper and the waiter queue, one after another, and each has
 * settled where it listens. */
static void line_up(line *ln, rt_redis *r, const char *name)
{
    ln->r = r;
    ln->name = name;
    atomic_init(&ln->taken, 0);
    ln->holder_c = lt_connect(r->url, NULL, 0);
    ln->holder = lt_get_lock(ln->holder_c, name);
    assert_int_equal(rlock_lock(ln->holder), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        ln->k[i] = (lt_looper){.url = r->url, .name = name,
                               .hold_ms = HOLD_MS, .taken = &ln->taken};
        lt_looper_start(&ln->k[i]);
        lt_await_queued(r, name, i + 1);
    }
    waiter_start(&ln->w, r->url, name, WAITER_RECHECK_MS, WAIT_MS, 0);
    lt_await_queued(r, name, 3);
    await_settled(r, name, 2);
}

/* The holder unlocks; the waiter must get the lock within BOUND_MS, while
 * the loopers go on taking turns. Prints how long it took and how often
 * the loopers took the lock meanwhile; frees everything. */
static void release_and_assert_the_waiter_gets_it(line *ln)
{
    assert_int_equal(rlock_unlock(ln->holder), RLOCK_OK);
    int64_t released = rt_now_ms();
    assert_int_equal(pthread_join(ln->w.thread, NULL), 0);
    int meanwhile = atomic_load(&ln->taken);
    for (int i = 0; i < 2; i++)
        lt_looper_stop(&ln->k[i]);
    print_message("the waiter's trylock returned %s %lld ms after the "
                  "release; the loopers took the lock %d times meanwhile\n",
                  rlock_err_name(ln->w.rc),
                  (long long)(ln->w.at_ms - released), meanwhile);
    rlock_free(ln->w.l);
    rlock_client_free(ln->w.c);
    rlock_free(ln->holder);
    rlock_client_free(ln->holder_c);
    assert_int_equal(ln->w.rc, RLOCK_OK);
    assert_true(ln->w.at_ms - released < BOUND_MS);
}

/* --------------------------------------------------- a key deleted */

/* Control: nothing happens to the queue. */
static void test_a_waiter_behind_loopers_gets_its_turn(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    line ln;

    LT_TEST_NAME(name);
    line_up(&ln, &f->redis, name);
    release_and_assert_the_waiter_gets_it(&ln);
}

static void test_a_waiter_whose_queue_list_is_deleted_gets_its_turn(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160];
    line ln;

    LT_TEST_NAME(name);
    lt_queue_of(queue, sizeof(queue), name);
    line_up(&ln, &f->redis, name);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", queue), 1);
    release_and_assert_the_waiter_gets_it(&ln);
}

/* --------------------------------------------------- a key evicted */

/* INFO field of section (a number), or -1. */
static long long info_number(rt_redis *r, const char *section,
                             const char *field)
{
    char *info = rt_cmd_str(r, "INFO %s", section);
    long long v = -1;
    char key[64];
    snprintf(key, sizeof(key), "\n%s:", field);
    if (info != NULL) {
        const char *at = strstr(info, key);
        if (at != NULL)
            v = strtoll(at + strlen(key), NULL, 10);
    }
    free(info);
    return v;
}

/* Redis evicts the queue's list under maxmemory-policy volatile-ttl
 * (which takes the key nearest its expiry first). Keys with a TTL: the
 * list (at most a waiter's keep, 5 s), a filler of 512 kB expiring in
 * 12 s, the lock hash (the watchdog's 30 s lease) and the sorted set (the
 * test sets 10 minutes; a waiter's try never shortens a TTL). With
 * maxmemory set 64 kB under the memory in use, Redis evicts the list, is
 * still over, and evicts the filler: then it is far under. The limit is
 * lifted at once. */
static void test_a_waiter_whose_queue_list_is_evicted_gets_its_turn(
    void **state)
{
    (void)state;
    static const char *const args[] = {"--maxmemory-policy", "volatile-ttl",
                                       "--maxmemory-samples", "10", NULL};
    rt_redis r = {0};
    char name[128], queue[160], stale_at[160];
    line ln;

    LT_TEST_NAME(name);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    assert_int_equal(rt_redis_start_args(&r, args), 0);
    line_up(&ln, &r, name);

    redisReply *ok = rt_cmd(&r, "EVAL %s 0",
                            "redis.call('set', 'filler', "
                            "string.rep('x', 524288), 'px', 12000)");
    assert_non_null(ok);
    assert_int_not_equal(ok->type, REDIS_REPLY_ERROR);
    freeReplyObject(ok);
    assert_int_equal(rt_cmd_int(&r, "PEXPIRE %s 600000", stale_at), 1);
    long long used = info_number(&r, "memory", "used_memory");
    assert_true(used > 524288);
    char *set = rt_cmd_str(&r, "CONFIG SET maxmemory %lld", used - 65536);
    char *lifted = rt_cmd_str(&r, "CONFIG SET maxmemory 0");
    assert_string_equal(set, "OK");
    assert_string_equal(lifted, "OK");
    free(set);
    free(lifted);
    long long list = rt_cmd_int(&r, "EXISTS %s", queue);
    long long zset = rt_cmd_int(&r, "EXISTS %s", stale_at);
    long long hash = rt_cmd_int(&r, "EXISTS %s", name);
    long long filler = rt_cmd_int(&r, "EXISTS filler");
    print_message("evicted %lld keys: list %s, sorted set %s, lock %s, "
                  "filler %s\n",
                  info_number(&r, "stats", "evicted_keys"),
                  list ? "stayed" : "went", zset ? "stayed" : "went",
                  hash ? "stayed" : "went", filler ? "stayed" : "went");
    assert_int_equal(list, 0);
    assert_int_equal(zset, 1);
    assert_int_equal(hash, 1);

    release_and_assert_the_waiter_gets_it(&ln);
    rt_redis_stop(&r);
}

/* ------------------------------------ never stale to itself */

/* Two waiters queue behind a holder, each re-checking only once a minute
 * (so that each tries only when woken); the test moves the head's
 * stale-at far into the past. The holder's unlock wakes the head, whose
 * try must take the lock: the one behind gets it after. */
static void test_a_head_past_its_stale_at_takes_the_lock_first(void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[160], stale_at[160];
    waiter w[2];

    LT_TEST_NAME(name);
    lt_queue_of(queue, sizeof(queue), name);
    lt_stale_at_of(stale_at, sizeof(stale_at), name);
    rlock_client *hc = lt_connect(f->redis.url, NULL, 0);
    rlock *h = lt_get_lock(hc, name);
    assert_int_equal(rlock_lock(h), RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        waiter_start(&w[i], f->redis.url, name, 60000, WAIT_MS, 50);
        lt_await_queued(&f->redis, name, i + 1);
    }
    await_settled(&f->redis, name, 1);
    char *head = rt_cmd_str(&f->redis, "LINDEX %s 0", queue);
    assert_non_null(head);
    assert_int_equal(rt_cmd_int(&f->redis, "ZADD %s XX CH 1 %s", stale_at,
                                head),
                     1);
    free(head);
    assert_int_equal(rlock_unlock(h), RLOCK_OK);
    for (int i = 0; i < 2; i++)
        waiter_join(&w[i]);
    print_message("the head got the lock %s (%s), the one behind %s (%s), "
                  "%lld ms apart\n",
                  w[0].at_ms <= w[1].at_ms ? "first" : "second",
                  rlock_err_name(w[0].rc),
                  w[0].at_ms <= w[1].at_ms ? "second" : "first",
                  rlock_err_name(w[1].rc),
                  (long long)(w[1].at_ms - w[0].at_ms));
    assert_int_equal(w[0].rc, RLOCK_OK);
    assert_int_equal(w[1].rc, RLOCK_OK);
    assert_true(w[0].at_ms < w[1].at_ms);
    rlock_free(h);
    rlock_client_free(hc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_waiter_behind_loopers_gets_its_turn),
        cmocka_unit_test(
            test_a_waiter_whose_queue_list_is_deleted_gets_its_turn),
        cmocka_unit_test(
            test_a_waiter_whose_queue_list_is_evicted_gets_its_turn),
        cmocka_unit_test(test_a_head_past_its_stale_at_takes_the_lock_first),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
