/*
 * test_java_sentinel.c: rlock and the real Java Redisson both in Sentinel
 * mode on one group (tests/support/sentinel_fixture: a master, a replica,
 * three sentinels), with the newest Redisson of compat/java/versions.txt:
 * a JVM configured by sentinelServersConfig (the Driver's "sentinel" mode)
 * and a C client by redis+sentinel://. They exclude each other, wake each
 * other, and still do after a failover that both follow (Redisson by its
 * 1 s poll, rlock by +switch-master).
 *
 * Wake-ups must come from unlock messages: the C client re-checks a held
 * lock only every CT_RECHECK_MS, and a wake-up must come within
 * CT_WAKE_BOUND_MS of the unlock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_testing.h"
#include "harness.h"
#include "java_peer.h"
#include "java_testing.h"
#include "lock_testing.h"
#include "rlock.h"
#include "sentinel_fixture.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define LT_SUITE "java_sentinel"
#define VERSION RLOCK_JAVA_VERSION

typedef struct fixture {
    rt_sentinel_group group;
    jp_peer *java;
    rlock_client *c;
} fixture;

static rt_redis *master_of(fixture *f)
{
    rt_redis *m = rt_sentinel_master_node(&f->group);
    assert_non_null(m);
    return m;
}

/* Java holds, C waits and is woken by Java's unlock; then C holds and a
 * Java tryLock finds the lock taken until C unlocks. */
static void exclusion_and_wakeups(fixture *f, const char *name)
{
    ct_locker waiter;
    rlock *l = lt_get_lock(f->c, name);

    jt_java_lock(f->java, "h", "lock", name);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    assert_false(ct_locker_wait(&waiter, 300));
    jt_java_unlock(f->java, "h", "lock", name);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(rt_cmd_int(master_of(f), "HLEN %s", name) == 1);
    assert_false(jt_java_trylock(f->java, "lock", name, 0));
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    assert_true(jt_java_trylock(f->java, "lock", name, 0));
    rlock_free(l);
}

static void test_rlock_and_redisson_share_locks_through_sentinel(void **state)
{
    fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    exclusion_and_wakeups(f, name);
}

static void test_they_still_do_after_a_failover(void **state)
{
    fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rt_redis *from = master_of(f);
    rt_redis *to = from == &f->group.node[0] ? &f->group.node[1]
                                              : &f->group.node[0];
    assert_int_equal(rt_sentinel_failover(&f->group), 0);
    assert_int_equal(rt_sentinel_wait_master(&f->group, to, 10000), 0);
    /* Redisson polls every second: give it two */
    rt_sleep_ms(2500);
    exclusion_and_wakeups(f, name);
    assert_int_equal(rt_sentinel_settle(&f->group), 0);
}

static int group_setup(void **state)
{
    static fixture f;
    char url[256], addresses[256];
    rt_require_redis();
    jp_require_java(VERSION);
    if (rt_sentinel_group_start(&f.group, NULL) != 0)
        return -1;
    int n = snprintf(addresses, sizeof(addresses), "%s@", RT_SENTINEL_MASTER);
    for (int i = 0; i < RT_SENTINELS; i++)
        n += snprintf(addresses + n, sizeof(addresses) - (size_t)n,
                      "%sredis://127.0.0.1:%d", i ? "," : "",
                      rt_sentinel_port(&f.group.sentinel[i]));
    f.java = jp_start_mode(VERSION, "sentinel", addresses, NULL);
    if (f.java == NULL || jp_ready(f.java, VERSION, JT_JVM_START_MS) != 0)
        return -1;
    rt_sentinel_url(&f.group, NULL, url, sizeof(url));
    rlock_config *cfg;
    if (rlock_config_new(&cfg) != 0 ||
        rlock_config_set_recheck_interval(cfg, CT_RECHECK_MS) != 0 ||
        rlock_client_connect_with(&f.c, url, cfg) != 0)
        return -1;
    rlock_config_free(cfg);
    *state = &f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    rlock_client_free(f->c);
    jp_free(f->java);
    rt_sentinel_group_stop(&f->group);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rlock_and_redisson_share_locks_through_sentinel),
        cmocka_unit_test(test_they_still_do_after_a_failover),
    };
    return cmocka_run_group_tests_name("java_sentinel", tests, group_setup,
                                       group_teardown);
}
