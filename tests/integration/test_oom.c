/*
 * test_oom.c: running out of memory (STYLE.md 3.4). The Nth allocation
 * rlock makes is failed, for N = 0, 1, 2, ... until a whole session of
 * calls (connect, get, lock, nested lock, trylock, async lock and unlock,
 * unlock, queries, free) gets through without one. Every call must then
 * answer 0 or RLOCK_ENOMEM, never crash or hang, and no lock may stay held
 * in Redis once the client is freed; ASan's leak check, in the sanitizer
 * pass, adds "and nothing leaks". The same holds for rlock_client_free()
 * itself, and for the allocations of one function at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "proto/proto.h"
#include "lock_testing.h"

#define LT_SUITE "oom"
/* far more allocations than a session makes: the loop must end before */
#define MAX_STEPS 2000

static int ok_or_enomem(int rc)
{
    return rc == RLOCK_OK || rc == RLOCK_ENOMEM;
}

typedef struct done {
    pthread_mutex_t mu;
    int calls;
    int status;
} done;

static void on_done(rlock *l, uint64_t owner, int status, void *arg)
{
    done *d = arg;
    (void)l;
    (void)owner;
    pthread_mutex_lock(&d->mu);
    d->calls++;
    d->status = status;
    pthread_mutex_unlock(&d->mu);
}

static int await_done(done *d)
{
    int64_t until = rt_now_ms() + 10000;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        int calls = d->calls, status = d->status;
        pthread_mutex_unlock(&d->mu);
        if (calls > 0)
            return status;
        if (rt_now_ms() > until)
            return 1;
        rt_sleep_ms(1);
    }
}

/* One session with allocations failing after the first n. Returns true
 * when nothing failed. */
static bool session(rt_redis *r, const char *name, long n)
{
    rlock_client *c = NULL;
    rlock *l = NULL;
    bool clean = true;
    int rc;

    rlock__alloc_fail_after(n);
    rc = rlock_client_connect(&c, r->url);
    assert_true(ok_or_enomem(rc));
    if (rc != RLOCK_OK) {
        assert_null(c);
        rlock__alloc_fail_after(-1);
        return false;
    }
    rc = rlock_get(c, name, &l);
    assert_true(ok_or_enomem(rc));
    if (rc == RLOCK_OK) {
        int held = 0;
        rc = rlock_lock(l);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        held += rc == RLOCK_OK;
        rc = rlock_trylock(l, 100, 5000);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        held += rc == RLOCK_OK;
        rc = rlock_hold_count(l);
        assert_true(rc == held || rc == RLOCK_ENOMEM);
        clean &= rc == held;

        uint64_t owner = rlock_owner_new();
        done d = {.mu = PTHREAD_MUTEX_INITIALIZER};
        rc = rlock_lock_async(l, owner, 50, RLOCK_LEASE_WATCHDOG, on_done,
                              &d);
        assert_true(ok_or_enomem(rc));
        clean &= rc == RLOCK_OK;
        if (rc == RLOCK_OK) {
            /* held by this thread: the async owner must time out */
            rc = await_done(&d);
            assert_true(rc == RLOCK_ETIMEDOUT || rc == RLOCK_ENOMEM ||
                        (rc == RLOCK_OK && held == 0));
            clean &= rc == RLOCK_ETIMEDOUT;
            if (rc == RLOCK_OK) {
                done u = {.mu = PTHREAD_MUTEX_INITIALIZER};
                if (rlock_unlock_async(l, owner, on_done, &u) == RLOCK_OK)
                    await_done(&u);
            }
        }
        for (; held > 0; held--) {
            rc = rlock_unlock(l);
            assert_true(ok_or_enomem(rc));
            clean &= rc == RLOCK_OK;
        }
        rc = rlock_is_locked(l);
        assert_true(rc == 0 || rc == 1 || rc == RLOCK_ENOMEM);
        rlock_free(l);
    } else {
        clean = false;
    }
    /* the release-everything path is tried with memory back, so that what
     * a failed unlock left behind is cleaned up */
    rlock__alloc_fail_after(-1);
    rlock_client_free(c);
    return clean;
}

static void test_every_allocation_failure_is_survived(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long n;
    LT_TEST_NAME(name);

    for (n = 0; n < MAX_STEPS; n++) {
        /* a name per session: a waiter whose leaving the queue failed for
         * want of memory stays queued until its entry goes stale, and
         * would hold the next session's lock() up for the head's grace */
        char step[160];
        snprintf(step, sizeof(step), "%s:%ld", name, n);
        bool clean = session(&f->redis, step, n);
        /* whatever failed, nothing may stay held, and nothing stays for
         * good: the queue's keys, if left, expire */
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", step), 0);
        assert_int_not_equal(rt_cmd_int(&f->redis,
                                    "PTTL redisson_rlock_queue:{%s}", step),
                         -1);
        assert_int_not_equal(rt_cmd_int(&f->redis,
                                    "PTTL redisson_rlock_timeout:{%s}", step),
                         -1);
        if (clean)
            break;
    }
    print_message("a session needs %ld allocations\n", n);
    assert_true(n > 10); /* the hook really failed some */
    assert_true(n < MAX_STEPS);
}

/* A lock left behind by a failed release must still end with its lease:
 * a key without a TTL would be held forever. */
static void assert_held_at_most_for_its_lease(rt_redis *r, const char *name)
{
    long long ttl = rt_cmd_int(r, "PTTL %s", name);
    assert_true(ttl == -2 || ttl > 0);
    rt_cmd_int(r, "DEL %s", name);
}

static void test_a_client_whose_own_allocation_fails_is_not_made(void **state)
{
    lt_fixture *f = *state;
    rlock_client *c = NULL;

    /* the client struct, then its connection table: the first two
     * allocations rlock_client_connect_with() makes itself */
    for (long n = 0; n < 2; n++) {
        rlock__alloc_fail_in("rlock_client_connect_with");
        rlock__alloc_fail_after(n);
        int rc = rlock_client_connect(&c, f->redis.url);
        long failed = rlock__alloc_failures();
        rlock__alloc_fail_in(NULL);
        rlock__alloc_fail_after(-1);
        assert_int_equal(rc, RLOCK_ENOMEM);
        assert_null(c);
        assert_int_equal(failed, 1);
    }
}

static void test_a_client_freed_while_its_release_list_cannot_grow(
    void **state)
{
    lt_fixture *f = *state;
    rlock_client *c = NULL;
    rlock *l = NULL;
    char name[128];
    LT_TEST_NAME(name);

    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rlock_free(l);
    rlock__alloc_fail_in("send_tracked");
    rlock__alloc_fail_after(0);
    rlock_client_free(c);
    long failed = rlock__alloc_failures();
    rlock__alloc_fail_in(NULL);
    rlock__alloc_fail_after(-1);
    assert_true(failed > 0);
    assert_held_at_most_for_its_lease(&f->redis, name);
}

/* Freeing a client, with a hold of each depth left to give back, survives
 * the Nth allocation failing for every N. */
static void test_every_allocation_failure_while_freeing_is_survived(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    long n;
    LT_TEST_NAME(name);

    for (n = 0; n < MAX_STEPS; n++) {
        rlock_client *c = NULL;
        rlock *l = NULL;
        assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
        assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
        rlock_free(l);
        rlock__alloc_fail_after(n);
        rlock_client_free(c);
        long failed = rlock__alloc_failures();
        rlock__alloc_fail_after(-1);
        assert_held_at_most_for_its_lease(&f->redis, name);
        if (failed == 0)
            break;
    }
    print_message("freeing a client needs %ld allocations\n", n);
    assert_true(n > 0);
    assert_true(n < MAX_STEPS);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_failure_is_survived),
        cmocka_unit_test(test_a_client_whose_own_allocation_fails_is_not_made),
        cmocka_unit_test(
            test_a_client_freed_while_its_release_list_cannot_grow),
        cmocka_unit_test(
            test_every_allocation_failure_while_freeing_is_survived),
    };
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
