/*
 * test_latch.c: the count-down latch (Redisson's RCountDownLatch;
 * docs/protocol-synchronizers.md).
 *
 * Its Redis state is a string key holding the count, deleted when it
 * reaches zero; its channel redisson_countdownlatch__channel__{name} hears
 * "1" when a count is set or the latch deleted and "0" when it opens.
 * Waiters wait on the channel: a count-down to zero wakes every one of
 * them at once; a delete (whose "1" wakes nobody, as in Redisson) is seen
 * at the next re-check; and a wait's budget holds while Redis is stopped.
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

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "latch"

/* The suite's clients re-check this often, so that a missed message is
 * found within a test. */
#define RECHECK_MS 300
/* How late a woken waiter may return (a round trip or two, on a loaded
 * machine), and how long a thread takes to be waiting for sure. */
#define WAKE_MS    1000
#define SETTLE_MS  300
#define WAITERS    3

static rlock_latch *latch(rlock_client *c, const char *name)
{
    rlock_latch *l = NULL;

    assert_int_equal(rlock_latch_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* A subscriber on name's channel. */
static rt_sub *listen(rt_redis *r, const char *name)
{
    char channel[200];
    rt_sub *sub;

    lt_latch_channel_of(channel, sizeof(channel), name);
    sub = rt_sub_start(r, channel);
    assert_non_null(sub);
    return sub;
}

/* A thread of its own client waiting on a latch: rlock_latch_await(). */
typedef struct awaiter {
    const char *url;
    const char *name;
    int64_t wait_ms;
    int rc;
    int64_t done_at_ms;
    pthread_t thread;
} awaiter;

static void *awaiter_main(void *p)
{
    awaiter *a = p;
    rlock_client *c =
        lt_connect(a->url, rlock_config_set_recheck_interval, RECHECK_MS);
    rlock_latch *l = latch(c, a->name);

    a->rc = rlock_latch_await(l, a->wait_ms);
    a->done_at_ms = rt_now_ms();
    rlock_latch_free(l);
    rlock_client_free(c);
    return NULL;
}

static void awaiter_start(awaiter *a)
{
    assert_int_equal(pthread_create(&a->thread, NULL, awaiter_main, a), 0);
}

static void awaiter_join(awaiter *a)
{
    assert_int_equal(pthread_join(a->thread, NULL), 0);
}

/* Sets latch name's count (a handle on the group's client comes back) and
 * starts n awaiters of wait_ms on it, returning once all are subscribed. */
static rlock_latch *closed_with_waiters(lt_fixture *f, const char *name,
                                        int64_t count, awaiter *a, int n,
                                        int64_t wait_ms)
{
    char channel[200];
    rlock_latch *l = latch(f->client, name);

    assert_int_equal(rlock_latch_try_set_count(l, count), 1);
    for (int i = 0; i < n; i++) {
        a[i] = (awaiter){.url = f->redis.url, .name = name,
                         .wait_ms = wait_ms};
        awaiter_start(&a[i]);
    }
    lt_latch_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, n, 5000), n);
    return l;
}

/* ------------------------------------------------------------ the state */

static void test_try_set_count_sets_once_and_says_new_count(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    rt_sub *sub;
    char *v;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    sub = listen(&f->redis, name);
    assert_int_equal(rlock_latch_try_set_count(l, 3), 1);
    assert_int_equal(rlock_latch_try_set_count(l, 5), 0);
    v = rt_cmd_str(&f->redis, "GET %s", name);
    assert_non_null(v);
    assert_string_equal(v, "3");
    free(v);
    assert_int_equal(rt_sub_wait(sub, 1, 2000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "1");
    rt_sleep_ms(100);
    assert_int_equal(rt_sub_count(sub), 1); /* the refused one said nothing */
    rt_sub_stop(sub);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

static void test_count_down_to_zero_deletes_and_says_zero(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    rt_sub *sub;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 2), 1);
    sub = listen(&f->redis, name);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rlock_latch_count(l), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rlock_latch_count(l), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rt_sub_wait(sub, 1, 2000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "0");
    rt_sub_stop(sub);
    rlock_latch_free(l);
}

static void test_count_down_of_open_latch_changes_nothing(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    rt_sub *sub;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    sub = listen(&f->redis, name);
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_latch_count(l), 0);
    rt_sleep_ms(100);
    assert_int_equal(rt_sub_count(sub), 0);
    rt_sub_stop(sub);
    rlock_latch_free(l);
}

static void test_delete_says_new_count_once(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    rt_sub *sub;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 2), 1);
    sub = listen(&f->redis, name);
    assert_int_equal(rlock_latch_delete(l), 1);
    assert_int_equal(rlock_latch_delete(l), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rt_sub_wait(sub, 1, 2000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "1");
    rt_sleep_ms(100);
    assert_int_equal(rt_sub_count(sub), 1);
    rt_sub_stop(sub);
    rlock_latch_free(l);
}

/* A count Redisson wrote (a Java peer's trySetCount) reads as a count. */
static void test_count_reads_a_count_written_by_a_peer(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    char *v;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    v = rt_cmd_str(&f->redis, "SET %s 7", name);
    assert_non_null(v);
    free(v);
    assert_int_equal(rlock_latch_count(l), 7);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* --------------------------------------------------------------- await */

static void test_await_of_open_latch_returns_at_once(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    rlock_latch *l;
    int64_t t0;

    LT_TEST_NAME(name);
    lt_latch_channel_of(channel, sizeof(channel), name);
    l = latch(f->client, name);
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await(l, RLOCK_WAIT_FOREVER), RLOCK_OK);
    assert_int_equal(rlock_latch_await(l, 0), RLOCK_OK);
    assert_true(rt_now_ms() - t0 < WAKE_MS);
    assert_int_equal(rt_numsub(&f->redis, channel), 0);
    rlock_latch_free(l);
}

static void test_await_without_wait_only_looks(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    int64_t t0;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await(l, 0), RLOCK_ETIMEDOUT);
    assert_true(rt_now_ms() - t0 < WAKE_MS);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

static void test_await_budget_runs_out_on_a_closed_latch(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    rlock_latch *l;
    int64_t t0, took;

    LT_TEST_NAME(name);
    lt_latch_channel_of(channel, sizeof(channel), name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await(l, 700), RLOCK_ETIMEDOUT);
    took = rt_now_ms() - t0;
    print_message("await(700) gave up after %lld ms\n", (long long)took);
    assert_true(took >= 700);
    assert_true(took < 700 + WAKE_MS);
    /* it left the channel */
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 0, 2000), 0);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* Every waiter, on other clients, is woken by the count-down to zero,
 * well before a re-check would find it. */
static void test_count_down_wakes_every_waiter(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    awaiter a[WAITERS];
    rlock_latch *l;
    int64_t t0;

    LT_TEST_NAME(name);
    l = closed_with_waiters(f, name, 1, a, WAITERS, RLOCK_WAIT_FOREVER);
    rt_sleep_ms(SETTLE_MS); /* past their read after subscribing */
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
    for (int i = 0; i < WAITERS; i++) {
        awaiter_join(&a[i]);
        print_message("waiter %d returned %lld ms after the count-down\n", i,
                      (long long)(a[i].done_at_ms - t0));
        assert_int_equal(a[i].rc, RLOCK_OK);
        /* the message, not the re-check */
        assert_true(a[i].done_at_ms - t0 < RECHECK_MS);
    }
    rlock_latch_free(l);
}

/* A delete's "1" wakes nobody (as Redisson's); the waiter finds the latch
 * open at its re-check. */
static void test_await_finds_a_deleted_latch_open_at_recheck(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    awaiter a;
    rlock_latch *l;
    int64_t t0;

    LT_TEST_NAME(name);
    l = closed_with_waiters(f, name, 4, &a, 1, 10000);
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_delete(l), 1);
    awaiter_join(&a);
    print_message("waiter returned %lld ms after the delete\n",
                  (long long)(a.done_at_ms - t0));
    assert_int_equal(a.rc, RLOCK_OK);
    assert_true(a.done_at_ms - t0 < RECHECK_MS + WAKE_MS);
    rlock_latch_free(l);
}

/* A count set again (the latch closed) keeps a waiter waiting. */
static void test_new_count_keeps_waiters_waiting(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    awaiter a;
    rlock_latch *l;

    LT_TEST_NAME(name);
    l = closed_with_waiters(f, name, 1, &a, 1, 1500);
    assert_int_equal(rlock_latch_delete(l), 1);
    assert_int_equal(rlock_latch_try_set_count(l, 2), 1);
    awaiter_join(&a);
    assert_int_equal(a.rc, RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* With Redis stopped (SIGSTOP: no reply, no error), an await still ends
 * within its budget and a command timeout. */
static void test_await_budget_holds_while_redis_is_stopped(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    int64_t t0, took;
    int rc;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    rt_redis_pause(&f->redis);
    t0 = rt_now_ms();
    rc = rlock_latch_await(l, 800);
    took = rt_now_ms() - t0;
    rt_redis_resume(&f->redis);
    print_message("await(800) with Redis stopped: %s after %lld ms\n",
                  rlock_err_name(rc), (long long)took);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_true(took < 800 + WAKE_MS);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* ---------------------------------------------------------- async await */

/* An async await's completion: status, once done is set. */
typedef struct latch_completion {
    atomic_int done;
    atomic_int status;
    atomic_llong at_ms;
} latch_completion;

static void on_latch_done(rlock_latch *l, int status, void *arg)
{
    latch_completion *c = arg;

    (void)l;
    atomic_store(&c->status, status);
    atomic_store(&c->at_ms, rt_now_ms());
    atomic_store(&c->done, 1);
}

/* Waits up to within_ms for c; returns its status (fails the test after
 * that). */
static int await_completion(latch_completion *c, int64_t within_ms)
{
    int64_t end = rt_now_ms() + within_ms;

    while (!atomic_load(&c->done) && rt_now_ms() < end)
        rt_sleep_ms(5);
    assert_true(atomic_load(&c->done));
    return atomic_load(&c->status);
}

static void test_async_await_is_completed_by_count_down(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[200];
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);
    rlock_latch *l, *counter;
    latch_completion done = {0};
    int64_t t0;

    LT_TEST_NAME(name);
    lt_latch_channel_of(channel, sizeof(channel), name);
    l = latch(f->client, name);
    counter = latch(other, name);
    assert_int_equal(rlock_latch_try_set_count(counter, 1), 1);
    assert_int_equal(rlock_latch_await_async(l, RLOCK_WAIT_FOREVER,
                                             on_latch_done, &done),
                     RLOCK_OK);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(SETTLE_MS);
    assert_false(atomic_load(&done.done));
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_count_down(counter), RLOCK_OK);
    assert_int_equal(await_completion(&done, WAKE_MS), RLOCK_OK);
    assert_true(atomic_load(&done.at_ms) - t0 < RECHECK_MS);
    rlock_latch_free(counter);
    rlock_latch_free(l);
    rlock_client_free(other);
}

static void test_async_await_budget_runs_out(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l;
    latch_completion done = {0};
    int64_t t0;

    LT_TEST_NAME(name);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    t0 = rt_now_ms();
    assert_int_equal(rlock_latch_await_async(l, 400, on_latch_done, &done),
                     RLOCK_OK);
    assert_int_equal(await_completion(&done, 400 + WAKE_MS),
                     RLOCK_ETIMEDOUT);
    assert_true(atomic_load(&done.at_ms) - t0 >= 400);
    assert_int_equal(rlock_latch_delete(l), 1);
    rlock_latch_free(l);
}

/* Freeing the client ends a pending async await with RLOCK_ECLOSED. */
static void test_async_await_ends_closed_when_client_is_freed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    rlock_latch *l;
    latch_completion done = {0};

    LT_TEST_NAME(name);
    l = latch(c, name);
    assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
    assert_int_equal(rlock_latch_await_async(l, RLOCK_WAIT_FOREVER,
                                             on_latch_done, &done),
                     RLOCK_OK);
    rt_sleep_ms(100);
    rlock_client_free(c);
    assert_int_equal(await_completion(&done, WAKE_MS), RLOCK_ECLOSED);
    rlock_latch_free(l);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
}

static void test_bad_arguments_are_refused(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_latch *l = NULL;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_latch_get(NULL, name, &l), RLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(rlock_latch_get(f->client, "", &l), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_get(f->client, name, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_count(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_await(NULL, 0), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_count_down(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_delete(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_try_set_count(NULL, 1), RLOCK_EINVAL);
    l = latch(f->client, name);
    assert_int_equal(rlock_latch_try_set_count(l, -1), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_await(l, -2), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_await_async(l, -2, on_latch_done, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_latch_await_async(l, 0, NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_latch_await_async(NULL, 0, on_latch_done, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_latch_free(l);
    rlock_latch_free(NULL);
}

/* A handle outlives its client: its calls then answer RLOCK_ECLOSED. */
static void test_handle_of_a_freed_client_is_closed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    rlock_latch *l;

    LT_TEST_NAME(name);
    l = latch(c, name);
    rlock_client_free(c);
    assert_int_equal(rlock_latch_count(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_latch_await(l, 0), RLOCK_ECLOSED);
    rlock_latch_free(l);
}

static int setup(void **state)
{
    rlock_config *cfg = NULL;
    int rc;

    if (rlock_config_new(&cfg) != RLOCK_OK ||
        rlock_config_set_recheck_interval(cfg, RECHECK_MS) != RLOCK_OK ||
        rlock_config_set_command_timeout(cfg, 500) != RLOCK_OK) {
        rlock_config_free(cfg);
        return -1;
    }
    rc = lt_group_setup_with(state, cfg);
    rlock_config_free(cfg);
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_try_set_count_sets_once_and_says_new_count),
        cmocka_unit_test(test_count_down_to_zero_deletes_and_says_zero),
        cmocka_unit_test(test_count_down_of_open_latch_changes_nothing),
        cmocka_unit_test(test_delete_says_new_count_once),
        cmocka_unit_test(test_count_reads_a_count_written_by_a_peer),
        cmocka_unit_test(test_await_of_open_latch_returns_at_once),
        cmocka_unit_test(test_await_without_wait_only_looks),
        cmocka_unit_test(test_await_budget_runs_out_on_a_closed_latch),
        cmocka_unit_test(test_count_down_wakes_every_waiter),
        cmocka_unit_test(test_await_finds_a_deleted_latch_open_at_recheck),
        cmocka_unit_test(test_new_count_keeps_waiters_waiting),
        cmocka_unit_test(test_await_budget_holds_while_redis_is_stopped),
        cmocka_unit_test(test_async_await_is_completed_by_count_down),
        cmocka_unit_test(test_async_await_budget_runs_out),
        cmocka_unit_test(test_async_await_ends_closed_when_client_is_freed),
        cmocka_unit_test(test_bad_arguments_are_refused),
        cmocka_unit_test(test_handle_of_a_freed_client_is_closed),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, setup, lt_group_teardown);
}
