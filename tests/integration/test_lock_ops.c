/*
 * test_lock_ops.c: the blocking and the async API run one acquire and one
 * release (src/core/acquire.c, release.c). Where the two used to differ,
 * each now does what the better one did; these tests pin the behaviours one
 * of them gained:
 *   - an async attempt has a reply deadline (a stalled server used to keep
 *     an async lock with no wait budget pending forever);
 *   - an async unlock whose connection dropped is retried at once, as a
 *     blocking one is (it used to wait the retry interval);
 *   - an async fair waiter that gives up has left the queue when its
 *     callback runs (its give-up used to be sent behind the callback);
 *   - anti-barging for async calls: a new one waits its turn behind a
 *     waiting thread instead of taking a lock that just became free;
 *   - a new blocking acquire waits its turn behind a waiting async call
 *     (async waiters used to be invisible to it).
 * Each test that stalls or pauses a server starts its own.
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

#define LT_SUITE "lock-ops"

/* Added to every time bound: a loaded 2-core machine (or a sanitizer)
 * delays threads. */
#define MARGIN_MS 1500

/* A client with the given command timeout and retry interval, and one
 * command connection (so that a killed connection's retry goes out on a
 * new one, not on a second connection killed too). */
static rlock_client *connect_timed(const char *url, int64_t command_ms,
                                   int64_t interval_ms)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_connections(cfg, 1), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, command_ms),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, interval_ms),
                     RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

/* A test's own server, client (connect_timed) and lock. */
typedef struct own {
    rt_redis r;
    rlock_client *c;
    rlock *l;
    char name[128];
} own;

static void own_start(own *o, const char *name, int64_t command_ms,
                      int64_t interval_ms)
{
    snprintf(o->name, sizeof(o->name), "%s", name);
    assert_int_equal(rt_redis_start(&o->r), 0);
    o->c = connect_timed(o->r.url, command_ms, interval_ms);
    o->l = lt_get_lock(o->c, name);
}

static void own_stop(own *o)
{
    rlock_free(o->l);
    rlock_client_free(o->c);
    rt_redis_stop(&o->r);
}

/* Waits up to 5 s until the lock channel of name has n subscribers. */
static void await_numsub(rt_redis *r, const char *name, long long n)
{
    char channel[256];
    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rt_wait_numsub(r, channel, n, 5000), n);
}

/* Waits up to 5 s until key exists (1) or not (0). */
static void await_exists(rt_redis *r, const char *key, int want)
{
    int64_t until = rt_now_ms() + 5000;
    while (rt_cmd_int(r, "EXISTS %s", key) != want) {
        assert_true(rt_now_ms() < until);
        rt_sleep_ms(10);
    }
}

/* ---------------------------------------------------------------- tests */

/* A server stopped (SIGSTOP) while an async lock waits forever: the
 * attempt's reply is due within the command timeout, so the call ends with
 * RLOCK_ETIMEDOUT then, not when the server comes back; and what the
 * attempt took when the server did come back is given back. */
static void test_async_acquire_on_a_stalled_server_ends_by_its_deadline(
    void **state)
{
    (void)state;
    char name[128];
    LT_TEST_NAME(name);
    own o;
    own_start(&o, name, 400, 100);
    rlock *l = o.l;
    lt_completion done = {0};

    /* the connections are up and the scripts loaded */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_pause(&o.r);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_lock_async(l, rlock_owner_new(),
                                      RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, lt_on_done, &done),
                     RLOCK_OK);
    int status = lt_await_completion(&done, 400 + MARGIN_MS);
    int64_t took = rt_now_ms() - t0;
    rt_redis_resume(&o.r);
    print_message("async lock on a stopped server: %s after %lld ms\n",
                  rlock_err_name(status), (long long)took);
    assert_int_equal(status, RLOCK_ETIMEDOUT);
    assert_true(took >= 350);
    /* the attempt ran once the server came back, and was given back */
    await_exists(&o.r, name, 0);
    own_stop(&o);
}

/* An async unlock whose command connection is killed while Redis holds its
 * script back (CLIENT PAUSE WRITE): the script never ran, and the unlock is
 * sent again at once on a new connection, as a blocking unlock is, not
 * after the 3 s retry interval. */
static void test_async_unlock_on_a_dropped_connection_is_retried_at_once(
    void **state)
{
    (void)state;
    char name[128];
    LT_TEST_NAME(name);
    own o;
    own_start(&o, name, 5000, 3000);
    rlock *l = o.l;
    rt_redis *r = &o.r;
    uint64_t owner = rlock_owner_new();
    lt_completion locked = {0}, unlocked = {0};

    assert_int_equal(rlock_lock_async(l, owner, 0, 60000, lt_on_done,
                                      &locked),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&locked, 5000), RLOCK_OK);
    char *ok = rt_cmd_str(r, "CLIENT PAUSE 10000 WRITE");
    assert_non_null(ok);
    free(ok);
    assert_int_equal(rlock_unlock_async(l, owner, lt_on_done, &unlocked),
                     RLOCK_OK);
    rt_sleep_ms(200); /* the release script waits in Redis */
    assert_int_equal(atomic_load(&unlocked.done), 0);
    assert_true(rt_cmd_int(r, "CLIENT KILL TYPE normal SKIPME yes") >= 1);
    int64_t t0 = rt_now_ms();
    ok = rt_cmd_str(r, "CLIENT UNPAUSE");
    free(ok);
    int status = lt_await_completion(&unlocked, 5000);
    int64_t took = rt_now_ms() - t0;
    print_message("async unlock after its connection dropped: %s after %lld "
                  "ms\n",
                  rlock_err_name(status), (long long)took);
    assert_int_equal(status, RLOCK_OK);
    assert_true(took < 3000);
    assert_int_equal(rt_cmd_int(r, "EXISTS %s", name), 0);
    own_stop(&o);
}

/* What an async call's callback saw of the fair queue. */
typedef struct queue_seen {
    rt_redis *redis;
    char queue[192];
    atomic_int done;
    atomic_int status;
    atomic_llong queued;
} queue_seen;

static void note_queue(rlock *l, uint64_t owner, int status, void *arg)
{
    queue_seen *q = arg;
    (void)l;
    (void)owner;
    /* the test's own connection, not one of rlock's */
    atomic_store(&q->queued, rt_cmd_int(q->redis, "LLEN %s", q->queue));
    atomic_store(&q->status, status);
    atomic_store(&q->done, 1);
}

/* An async fair acquire that runs out of time leaves the queue before its
 * callback says so, as a blocking one does before it returns. */
static void test_async_fair_waiter_has_left_the_queue_when_told(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = NULL;
    assert_int_equal(rlock_fair_get(f->client, name, &l), RLOCK_OK);
    queue_seen q = {.redis = &f->redis};
    snprintf(q.queue, sizeof(q.queue), "redisson_lock_queue:{%s}", name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, rlock_owner_new(), 300,
                                      RLOCK_LEASE_WATCHDOG, note_queue, &q),
                     RLOCK_OK);
    int64_t until = rt_now_ms() + 5000;
    while (!atomic_load(&q.done) && rt_now_ms() < until)
        rt_sleep_ms(5);
    assert_int_equal(atomic_load(&q.done), 1);
    assert_int_equal(atomic_load(&q.status), RLOCK_ETIMEDOUT);
    assert_int_equal(atomic_load(&q.queued), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* The anti-barging rule both APIs now share: while local waiters wait
 * for a lock (subscribed), a new acquire does not take it ahead of them,
 * even when it is free; it waits its turn. The lock is first held by
 * "another process" (a raw hash field with a long lease), so that the
 * waiter sleeps until its re-check (RECHECK_MS); then the key is deleted
 * without an unlock message, and the newcomer comes: before, it took the
 * free lock at once. */
#define RECHECK_MS 500

static void hold_elsewhere(rt_redis *r, const char *name)
{
    assert_int_equal(rt_cmd_int(r, "HSET %s other-process:1 1", name), 1);
    assert_int_equal(rt_cmd_int(r, "PEXPIRE %s 60000", name), 1);
}

/* A thread blocked in rlock_lock(), which records when it got the lock and
 * gives it back after hold_ms. */
typedef struct blocked {
    pthread_t thread;
    rlock *l;
    atomic_int rc;
    atomic_llong got_ms;
    int64_t hold_ms;
} blocked;

static void *blocked_main(void *arg)
{
    blocked *b = arg;
    int rc = rlock_lock(b->l);
    atomic_store(&b->got_ms, rt_now_ms());
    atomic_store(&b->rc, rc);
    if (rc == RLOCK_OK) {
        rt_sleep_ms(b->hold_ms);
        rlock_unlock(b->l);
    }
    return NULL;
}

/* An async acquire that records when it got the lock and gives it back at
 * once. Its callbacks run on the I/O thread: no assertion there. */
typedef struct async_turn {
    uint64_t owner;
    lt_completion got;
    lt_completion released;
    atomic_llong got_ms;
    atomic_int unlock_rc;
} async_turn;

static void on_turn(rlock *l, uint64_t owner, int status, void *arg)
{
    async_turn *t = arg;
    atomic_store(&t->got_ms, rt_now_ms());
    lt_on_done(l, owner, status, &t->got);
    if (status == RLOCK_OK)
        atomic_store(&t->unlock_rc, rlock_unlock_async(l, owner, lt_on_done,
                                                       &t->released));
}

/* A thread waits; an async call comes while the lock is free. */
static void test_async_acquire_waits_behind_a_waiting_thread(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(f->redis.url,
                                 rlock_config_set_recheck_interval,
                                 RECHECK_MS);
    rlock *l = lt_get_lock(c, name);
    blocked b = {.l = l, .hold_ms = 100};
    async_turn t = {.owner = rlock_owner_new()};
    atomic_init(&b.rc, 1);
    atomic_init(&t.unlock_rc, 1);

    hold_elsewhere(&f->redis, name);
    assert_int_equal(pthread_create(&b.thread, NULL, blocked_main, &b), 0);
    await_numsub(&f->redis, name, 1);
    rt_sleep_ms(100); /* it tried again and sleeps until its re-check */
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(rlock_lock_async(l, t.owner, 10000, RLOCK_LEASE_WATCHDOG,
                                      on_turn, &t),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&t.got, 10000), RLOCK_OK);
    assert_int_equal(lt_await_completion(&t.released, 5000), RLOCK_OK);
    assert_int_equal(atomic_load(&t.unlock_rc), RLOCK_OK);
    pthread_join(b.thread, NULL);
    assert_int_equal(atomic_load(&b.rc), RLOCK_OK);
    print_message("the thread got it at +0, the async call at %+lld ms\n",
                  (long long)(atomic_load(&t.got_ms) -
                              atomic_load(&b.got_ms)));
    assert_true(atomic_load(&b.got_ms) < atomic_load(&t.got_ms));
    rlock_free(l);
    rlock_client_free(c);
}

/* An async call waits; a thread comes while the lock is free. */
static void test_blocking_acquire_waits_behind_a_waiting_async_call(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(f->redis.url,
                                 rlock_config_set_recheck_interval,
                                 RECHECK_MS);
    rlock *l = lt_get_lock(c, name);
    async_turn t = {.owner = rlock_owner_new()};
    atomic_init(&t.unlock_rc, 1);

    hold_elsewhere(&f->redis, name);
    assert_int_equal(rlock_lock_async(l, t.owner, 10000, RLOCK_LEASE_WATCHDOG,
                                      on_turn, &t),
                     RLOCK_OK);
    await_numsub(&f->redis, name, 1);
    rt_sleep_ms(100); /* it tried again and sleeps until its re-check */
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(rlock_trylock(l, 10000, 30000), RLOCK_OK);
    int64_t thread_got = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(lt_await_completion(&t.got, 10000), RLOCK_OK);
    assert_int_equal(lt_await_completion(&t.released, 5000), RLOCK_OK);
    assert_int_equal(atomic_load(&t.unlock_rc), RLOCK_OK);
    print_message("the async call got it at +0, the thread at %+lld ms\n",
                  (long long)(thread_got - atomic_load(&t.got_ms)));
    assert_true(atomic_load(&t.got_ms) <= thread_got);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_async_acquire_on_a_stalled_server_ends_by_its_deadline),
        cmocka_unit_test(
            test_async_unlock_on_a_dropped_connection_is_retried_at_once),
        cmocka_unit_test(test_async_fair_waiter_has_left_the_queue_when_told),
        cmocka_unit_test(test_async_acquire_waits_behind_a_waiting_thread),
        cmocka_unit_test(
            test_blocking_acquire_waits_behind_a_waiting_async_call),
    };
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
