/*
 * test_sentinel_sync.c: WAIT after lock scripts (rlock_config_set_sync_
 * replicas, Redisson's checkLockSyncedSlaves) in
 * Sentinel mode, against one group of real servers (tests/support/
 * sentinel_fixture: a master, its replica and three sentinels).
 *
 * What is checked: off (the default), no WAIT reaches the master; on, the
 * blocking calls (caller-thread connections, core/direct.c) and the async
 * ones (the I/O thread, core/request.c) each follow their script with
 * WAIT; with the replica stopped (SIGSTOP: it stays connected, so the
 * master still counts it), an acquire fails after about the sync timeout
 * and leaves no hold in Redis, on both paths.
 *
 * WAITs are counted by the master's INFO commandstats (cmdstat_wait), which
 * the group's own traffic never touches; the tests run one at a time.
 */
#define LT_SUITE "sentinel_sync"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "sentinel_fixture.h"

#define SYNC_MS 300

static rt_sentinel_group group;

/* A client of the group; sync_ms > 0 turns WAIT on with that timeout. */
static rlock_client *connect_client(int64_t sync_ms)
{
    rlock_config *cfg;
    rlock_client *c = NULL;
    char url[256];
    rt_sentinel_url(&group, NULL, url, sizeof(url));
    assert_int_equal(rlock_config_new(&cfg), 0);
    if (sync_ms > 0)
        assert_int_equal(rlock_config_set_sync_replicas(cfg, 1, sync_ms), 0);
    int rc = rlock_client_connect_with(&c, url, cfg);
    rlock_config_free(cfg);
    if (rc != 0)
        fail_msg("connect: %s", rlock_err_name(rc));
    return c;
}

/* How many WAITs the master has run. */
static long long waits_on(rt_redis *node)
{
    char *info = rt_cmd_str(node, "INFO commandstats");
    assert_non_null(info);
    const char *at = strstr(info, "cmdstat_wait:calls=");
    long long n = at ? atoll(at + strlen("cmdstat_wait:calls=")) : 0;
    free(info);
    return n;
}

static bool held_on(rt_redis *node, const char *name)
{
    return rt_cmd_int(node, "HLEN %s", name) > 0;
}

/* Waits up to within_ms for name to be free on node. */
static bool freed_within(rt_redis *node, const char *name, int64_t within_ms)
{
    int64_t end = rt_now_ms() + within_ms;
    while (held_on(node, name) && rt_now_ms() < end)
        rt_sleep_ms(10);
    return !held_on(node, name);
}

/* ------------------------------------------------------------- on, off */

static void test_off_by_default_no_wait_is_sent(void **state)
{
    char name[96];
    rlock *l;
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(0);
    rt_redis *m = rt_sentinel_master_node(&group);
    long long before = waits_on(m);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
    assert_int_equal(rlock_unlock(l), 0);
    assert_int_equal(waits_on(m), before);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_on_a_blocking_lock_and_unlock_each_wait(void **state)
{
    char name[96];
    rlock *l;
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(SYNC_MS);
    rt_redis *m = rt_sentinel_master_node(&group);
    long long before = waits_on(m);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_trylock(l, 0, 30000), 0);
    assert_int_equal(waits_on(m), before + 1);
    assert_int_equal(rlock_unlock(l), 0);
    assert_int_equal(waits_on(m), before + 2);
    assert_false(held_on(m, name));
    rlock_free(l);
    rlock_client_free(c);
}

static void test_on_an_async_lock_and_unlock_each_wait(void **state)
{
    char name[96];
    rlock *l;
    lt_completion done = {0}, undone = {0};
    (void)state;
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(SYNC_MS);
    rt_redis *m = rt_sentinel_master_node(&group);
    long long before = waits_on(m);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(rlock_lock_async(l, 7, 0, 30000, lt_on_done, &done), 0);
    assert_int_equal(lt_await_completion(&done, 5000), 0);
    assert_int_equal(waits_on(m), before + 1);
    assert_true(held_on(m, name));
    assert_int_equal(rlock_unlock_async(l, 7, lt_on_done, &undone), 0);
    assert_int_equal(lt_await_completion(&undone, 5000), 0);
    assert_int_equal(waits_on(m), before + 2);
    assert_false(held_on(m, name));
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------ no replica acknowledges */

/* Acquires a new lock (blocking, or async when async is set) while the
 * replica is stopped, and checks what the issue asks: the acquire fails
 * with RLOCK_ETIMEDOUT after about the WAIT timeout and leaves no hold. */
static void acquire_with_the_replica_stopped_is_undone(bool async)
{
    char name[96];
    rlock *l;
    lt_completion done = {0};
    LT_TEST_NAME(name);
    rlock_client *c = connect_client(SYNC_MS);
    rt_redis *m = rt_sentinel_master_node(&group);
    rt_redis *replica = rt_sentinel_replica_node(&group);
    assert_int_equal(rlock_get(c, name, &l), 0);
    assert_int_equal(kill(replica->pid, SIGSTOP), 0);
    int64_t start = rt_now_ms();
    int rc;
    if (async) {
        assert_int_equal(rlock_lock_async(l, 7, 0, 30000, lt_on_done, &done),
                         0);
        rc = lt_await_completion(&done, 10000);
    } else {
        rc = rlock_trylock(l, 0, 30000);
    }
    int64_t took = rt_now_ms() - start;
    bool freed = freed_within(m, name, 3000);
    assert_int_equal(kill(replica->pid, SIGCONT), 0);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_true(took >= SYNC_MS - 20);
    assert_true(took < SYNC_MS + 3000);
    assert_true(freed);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_a_blocking_acquire_no_replica_acks_is_undone(void **state)
{
    (void)state;
    acquire_with_the_replica_stopped_is_undone(false);
}

static void test_an_async_acquire_no_replica_acks_is_undone(void **state)
{
    (void)state;
    acquire_with_the_replica_stopped_is_undone(true);
}

/* ------------------------------------------------------------- setup */

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    rt_sentinel_opts o = {0};
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
        cmocka_unit_test(test_off_by_default_no_wait_is_sent),
        cmocka_unit_test(test_on_a_blocking_lock_and_unlock_each_wait),
        cmocka_unit_test(test_on_an_async_lock_and_unlock_each_wait),
        cmocka_unit_test(test_a_blocking_acquire_no_replica_acks_is_undone),
        cmocka_unit_test(test_an_async_acquire_no_replica_acks_is_undone),
    };
    return cmocka_run_group_tests_name("sentinel_sync", tests, group_setup,
                                       group_teardown);
}
