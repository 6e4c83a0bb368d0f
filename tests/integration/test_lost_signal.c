/*
 * test_lost_signal.c: the lost-lock callbacks (rlock_client_on_lost,
 * rlock_on_lost): which reason each kind of loss reports, the order of the
 * two callbacks, the thread they run on, and that they may call rlock.
 *
 * The client runs with a 1500 ms watchdog timeout (renewal every 500 ms),
 * so a loss is seen within about half a second.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define WATCHDOG_MS 1500
#define LT_SUITE    "lost"
/* generous: a loss is seen within one renewal period (500 ms) */
#define SEEN_WITHIN_MS 5000

/* What the callbacks saw, guarded by mu. */
typedef struct seen {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    char order[8]; /* 'L' lock callback, 'C' client callback */
    char name[256];
    uint64_t owner;
    int reason;
    pthread_t thread;
    rlock *unlock_from_cb; /* if set, the callback unlocks it */
    int unlock_rc;
} seen;

static seen g_seen = {.mu = PTHREAD_MUTEX_INITIALIZER,
                      .cv = PTHREAD_COND_INITIALIZER};

static void record(char who, const char *name, uint64_t owner, int reason)
{
    pthread_mutex_lock(&g_seen.mu);
    if (g_seen.calls < (int)sizeof(g_seen.order) - 1)
        g_seen.order[g_seen.calls] = who;
    g_seen.calls++;
    snprintf(g_seen.name, sizeof(g_seen.name), "%s", name);
    g_seen.owner = owner;
    g_seen.reason = reason;
    g_seen.thread = pthread_self();
    pthread_cond_broadcast(&g_seen.cv);
    pthread_mutex_unlock(&g_seen.mu);
}

static void on_client_lost(const char *name, uint64_t owner, uint64_t hold,
                           int reason, void *arg)
{
    (void)hold;
    (void)arg;
    record('C', name, owner, reason);
}

static void on_lock_lost(const char *name, uint64_t owner, uint64_t hold,
                         int reason, void *arg)
{
    (void)hold;
    rlock *l = arg;
    if (l != NULL)
        g_seen.unlock_rc = rlock_is_locked(l); /* a call back into rlock */
    record('L', name, owner, reason);
}

/* Waits until the callbacks ran n times in all; returns the count. */
static int wait_calls(int n)
{
    int64_t until = rt_now_ms() + SEEN_WITHIN_MS;
    pthread_mutex_lock(&g_seen.mu);
    while (g_seen.calls < n && rt_now_ms() < until) {
        pthread_mutex_unlock(&g_seen.mu);
        rt_sleep_ms(10);
        pthread_mutex_lock(&g_seen.mu);
    }
    int calls = g_seen.calls;
    pthread_mutex_unlock(&g_seen.mu);
    return calls;
}

static int reset_seen(void **state)
{
    lt_fixture *f = *state;
    pthread_mutex_lock(&g_seen.mu);
    g_seen.calls = 0;
    memset(g_seen.order, 0, sizeof(g_seen.order));
    g_seen.name[0] = '\0';
    g_seen.owner = 0;
    g_seen.reason = 0;
    g_seen.unlock_rc = 0;
    pthread_mutex_unlock(&g_seen.mu);
    return rlock_client_on_lost(f->client, on_client_lost, NULL);
}

static int group_setup(void **state)
{
    return lt_group_setup_with_watchdog(state, WATCHDOG_MS);
}

static void test_deleted_lock_reports_gone(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_cmd_int(&f->redis, "DEL %s", name);
    assert_int_equal(wait_calls(1), 1);
    assert_int_equal(g_seen.reason, RLOCK_LOST_GONE);
    assert_string_equal(g_seen.name, name);
    assert_int_equal(g_seen.owner, rlock_thread_id());
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_lock_taken_by_another_owner_reports_taken(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_cmd_int(&f->redis, "DEL %s", name);
    rt_cmd_int(&f->redis, "HSET %s other-client:1 1", name);
    assert_int_equal(wait_calls(1), 1);
    assert_int_equal(g_seen.reason, RLOCK_LOST_TAKEN);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    /* the other owner's hold is untouched */
    char *count = rt_cmd_str(&f->redis, "HGET %s other-client:1", name);
    assert_non_null(count);
    assert_string_equal(count, "1");
    free(count);
    rt_cmd_int(&f->redis, "DEL %s", name);
    rlock_free(l);
}

static void test_force_unlock_reports_gone_to_local_holder(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(wait_calls(1), 1);
    assert_int_equal(g_seen.reason, RLOCK_LOST_GONE);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_lock_callback_runs_before_client_callback(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_on_lost(l, on_lock_lost, NULL), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_cmd_int(&f->redis, "DEL %s", name);
    assert_int_equal(wait_calls(2), 2);
    assert_memory_equal(g_seen.order, "LC", 2);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_callback_runs_off_the_caller_and_may_call_rlock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_client_on_lost(f->client, NULL, NULL), RLOCK_OK);
    assert_int_equal(rlock_on_lost(l, on_lock_lost, l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_cmd_int(&f->redis, "DEL %s", name);
    assert_int_equal(wait_calls(1), 1);
    rt_sleep_ms(200); /* a second call would be a bug: only one hold */
    assert_int_equal(wait_calls(0), 1);
    assert_false(pthread_equal(g_seen.thread, pthread_self()));
    assert_int_equal(g_seen.unlock_rc, 0); /* rlock_is_locked worked: 0 */
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_cleared_callback_is_not_called(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(rlock_client_on_lost(f->client, NULL, NULL), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_cmd_int(&f->redis, "DEL %s", name);
    /* the loss is seen (unlock says so) but nobody is called */
    rt_sleep_ms(WATCHDOG_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(wait_calls(0), 0);
    rlock_free(l);
}

typedef struct exiting_owner {
    rlock *lock;
    int rc;
    uint64_t tid;
} exiting_owner;

static void *lock_and_exit(void *arg)
{
    exiting_owner *o = arg;
    o->rc = rlock_lock(o->lock);
    o->tid = rlock_thread_id();
    return NULL; /* exits holding the lock */
}

static void test_thread_exiting_with_a_hold_abandons_it(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    exiting_owner o = {.lock = l};
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, lock_and_exit, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.rc, RLOCK_OK);
    assert_int_equal(wait_calls(1), 1);
    assert_int_equal(g_seen.reason, RLOCK_LOST_ABANDONED);
    assert_int_equal(g_seen.owner, o.tid);
    /* nobody renews it any more: the lease runs out */
    int64_t until = rt_now_ms() + 3 * WATCHDOG_MS;
    while (rt_cmd_int(&f->redis, "EXISTS %s", name) == 1 &&
           rt_now_ms() < until)
        rt_sleep_ms(50);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_thread_exiting_without_holds_reports_nothing(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    exiting_owner o = {.lock = l};
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, lock_and_exit, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(wait_calls(1), 1); /* the first thread: abandoned */
    rt_cmd_int(&f->redis, "DEL %s", name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_sleep_ms(WATCHDOG_MS); /* this thread holds nothing now */
    assert_int_equal(wait_calls(0), 1);
    rlock_free(l);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_deleted_lock_reports_gone, reset_seen),
        cmocka_unit_test_setup(test_lock_taken_by_another_owner_reports_taken,
                               reset_seen),
        cmocka_unit_test_setup(test_force_unlock_reports_gone_to_local_holder,
                               reset_seen),
        cmocka_unit_test_setup(test_lock_callback_runs_before_client_callback,
                               reset_seen),
        cmocka_unit_test_setup(
            test_callback_runs_off_the_caller_and_may_call_rlock, reset_seen),
        cmocka_unit_test_setup(test_cleared_callback_is_not_called,
                               reset_seen),
        cmocka_unit_test_setup(test_thread_exiting_with_a_hold_abandons_it,
                               reset_seen),
        cmocka_unit_test_setup(
            test_thread_exiting_without_holds_reports_nothing, reset_seen),
    };
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
