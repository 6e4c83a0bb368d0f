/*
 * test_fault_latch.c: faults under a count-down latch's waiters, and under
 * a non-reentrant lock's holder.
 *
 * What must hold: a latch waiter whose subscription is killed while the
 * latch opens (its "0" message lost) finds it open once it is subscribed
 * again; a waiter outlives a Redis restart, which loses the latch (an open
 * latch to Redisson and rlock alike), and returns; neither waits for its
 * re-check, which the waiters here put far beyond every margin. A
 * non-reentrant hold nobody renews frees the lock within its lease, and the
 * next waiter takes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-latch"

/* Waiters re-check this rarely: only a message or a resubscription can
 * wake them within the margins. */
#define SLOW_RECHECK_MS 30000
/* A resubscription and its re-read after a dropped connection or a
 * restart (reconnection back-off, retry interval 1.5 s), with margin. */
#define RESUBSCRIBE_MARGIN_MS 8000
#define LEASE_MS              1000
/* An await's budget while Redis is gone, and how late it may end: a
 * command timeout (3 s by default) at most, on a loaded machine. */
#define BUDGET_MS       800
#define BUDGET_SLACK_MS 3500
#define EXPIRY_MARGIN_MS      3000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* A thread of its own client (re-checking every SLOW_RECHECK_MS) waiting
 * up to twice that on a latch. */
typedef struct awaiter {
    const char *url;
    const char *name;
    rlock_client *c;
    rlock_latch *l;
    atomic_int done;
    int rc;
    int64_t done_at_ms;
    pthread_t thread;
} awaiter;

static void *awaiter_main(void *p)
{
    awaiter *a = p;

    a->rc = rlock_latch_await(a->l, 2 * SLOW_RECHECK_MS);
    a->done_at_ms = rt_now_ms();
    atomic_store(&a->done, 1);
    return NULL;
}

static void awaiter_start(awaiter *a, rt_redis *r, const char *name)
{
    char channel[200];

    a->c = ft_connect(r->url, (ft_timing){.recheck_ms = SLOW_RECHECK_MS,
                                          .retry_attempts = -1});
    assert_int_equal(rlock_latch_get(a->c, name, &a->l), RLOCK_OK);
    assert_int_equal(pthread_create(&a->thread, NULL, awaiter_main, a), 0);
    lt_latch_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_wait_numsub(r, channel, 1, 5000), 1);
}

/* Joins a (which must be done within within_ms of since_ms) and frees it. */
static void awaiter_finish(awaiter *a, int64_t since_ms, int64_t within_ms,
                           const char *what)
{
    while (!atomic_load(&a->done) && rt_now_ms() - since_ms < within_ms)
        rt_sleep_ms(10);
    assert_true(atomic_load(&a->done));
    assert_int_equal(pthread_join(a->thread, NULL), 0);
    print_message("the waiter returned %lld ms after %s\n",
                  (long long)(a->done_at_ms - since_ms), what);
    assert_int_equal(a->rc, RLOCK_OK);
    rlock_latch_free(a->l);
    rlock_client_free(a->c);
}

/* Kills the subscriber connections ids and opens latch name as a count
 * down does (DEL, then "0" on its channel), in one transaction on one
 * connection: no resubscription can come between, so the opening's message
 * is lost for certain. Returns the time of the opening. */
static int64_t open_latch_unheard(rt_redis *r, const char *name,
                                  const long long *ids, int n)
{
    char channel[200];
    redisContext *c = redisConnect("127.0.0.1", r->port);
    redisReply *rep;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    lt_latch_channel_of(channel, sizeof(channel), name);
    redisAppendCommand(c, "MULTI");
    for (int i = 0; i < n; i++)
        redisAppendCommand(c, "CLIENT KILL ID %lld", ids[i]);
    redisAppendCommand(c, "DEL %s", name);
    redisAppendCommand(c, "PUBLISH %s 0", channel);
    redisAppendCommand(c, "EXEC");
    int64_t opened = rt_now_ms();
    for (int i = 0; i < n + 3; i++) { /* OK, then QUEUED for each */
        assert_int_equal(redisGetReply(c, (void **)&rep), REDIS_OK);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        freeReplyObject(rep);
    }
    assert_int_equal(redisGetReply(c, (void **)&rep), REDIS_OK);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, (size_t)n + 2);
    for (int i = 0; i < n; i++)
        assert_int_equal(rep->element[i]->integer, 1); /* killed */
    assert_int_equal(rep->element[n]->integer, 1);     /* deleted */
    assert_int_equal(rep->element[n + 1]->integer, 0); /* heard by none */
    freeReplyObject(rep);
    redisFree(c);
    return opened;
}

/* The "0" is published while the waiter's subscriber connection is gone:
 * lost. The waiter subscribes again and reads the latch open. */
static void test_latch_opened_while_the_waiter_is_unsubscribed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long long ids[16];
    awaiter a = {.url = NULL};
    int n;
    int64_t t0;
    char *ok;

    LT_TEST_NAME(name);
    ok = rt_cmd_str(&f->redis, "SET %s 1", name);
    assert_non_null(ok);
    free(ok);
    awaiter_start(&a, &f->redis, name);
    n = ft_client_ids(&f->redis, "pubsub", ids, 16);
    assert_true(n >= 1);
    t0 = open_latch_unheard(&f->redis, name, ids, n);
    awaiter_finish(&a, t0, RESUBSCRIBE_MARGIN_MS, "the unheard opening");
}

/* A restart loses the latch's key: the waiter reconnects, subscribes
 * again and reads the latch open. */
static void test_latch_waiter_outlives_a_redis_restart(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    awaiter a = {.url = NULL};
    redisReply *rep;
    int64_t t0;
    char *ok;

    LT_TEST_NAME(name);
    ok = rt_cmd_str(&f->redis, "SET %s 2", name);
    assert_non_null(ok);
    free(ok);
    awaiter_start(&a, &f->redis, name);
    rep = rt_cmd(&f->redis, "SHUTDOWN NOSAVE");
    if (rep != NULL)
        freeReplyObject(rep);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    t0 = rt_now_ms();
    awaiter_finish(&a, t0, RESUBSCRIBE_MARGIN_MS, "the restart");
}

/* With the server gone (connections refused), an await with a budget
 * ends RLOCK_ECONN within it: no retry fits. */
static void test_latch_await_with_redis_gone_ends_within_budget(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c;
    rlock_latch *l;
    int64_t t0, took;
    int rc;
    char *ok;

    LT_TEST_NAME(name);
    c = ft_connect(f->redis.url, (ft_timing){.retry_attempts = -1});
    assert_int_equal(rlock_latch_get(c, name, &l), RLOCK_OK);
    ok = rt_cmd_str(&f->redis, "SET %s 1", name);
    assert_non_null(ok);
    free(ok);
    rt_redis_stop(&f->redis);
    t0 = rt_now_ms();
    rc = rlock_latch_await(l, BUDGET_MS);
    took = rt_now_ms() - t0;
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    print_message("await(%d) with Redis gone: %s after %lld ms\n", BUDGET_MS,
                  rlock_err_name(rc), (long long)took);
    assert_true(rc == RLOCK_ECONN || rc == RLOCK_ETIMEDOUT);
    assert_true(took <= BUDGET_MS + BUDGET_SLACK_MS);
    rlock_latch_free(l);
    rlock_client_free(c);
}

/* A non-reentrant hold nobody renews or releases (a holder gone with an
 * explicit lease, as a crashed process leaves it) frees itself within its
 * lease, and a waiter of another client, told the lock's TTL, takes it
 * then, long before its re-check. */
static void test_nonreentrant_hold_left_to_expire_passes_on(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *holder, *waiter;
    rlock *h, *w;
    int64_t t0;

    LT_TEST_NAME(name);
    holder = ft_connect(f->redis.url, (ft_timing){.retry_attempts = -1});
    waiter = ft_connect(f->redis.url, (ft_timing){.recheck_ms = SLOW_RECHECK_MS,
                                                  .retry_attempts = -1});
    assert_int_equal(rlock_nonreentrant_get(holder, name, &h), RLOCK_OK);
    assert_int_equal(rlock_nonreentrant_get(waiter, name, &w), RLOCK_OK);
    assert_int_equal(rlock_trylock(h, 0, LEASE_MS), RLOCK_OK);
    t0 = rt_now_ms();
    assert_int_equal(rlock_trylock(w, 2 * SLOW_RECHECK_MS,
                                   RLOCK_LEASE_WATCHDOG),
                     RLOCK_OK);
    print_message("the waiter took the abandoned lock after %lld ms\n",
                  (long long)(rt_now_ms() - t0));
    assert_true(rt_now_ms() - t0 < LEASE_MS + EXPIRY_MARGIN_MS);
    /* the holder's client learns its hold is gone */
    assert_int_equal(rlock_unlock(h), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(w), RLOCK_OK);
    rlock_free(h);
    rlock_free(w);
    rlock_client_free(holder);
    rlock_client_free(waiter);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latch_opened_while_the_waiter_is_unsubscribed),
        cmocka_unit_test(test_latch_waiter_outlives_a_redis_restart),
        cmocka_unit_test(test_latch_await_with_redis_gone_ends_within_budget),
        cmocka_unit_test(test_nonreentrant_hold_left_to_expire_passes_on),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
