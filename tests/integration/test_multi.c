/*
 * test_multi.c: multi-locks and Redlocks (rlock_multi_*, REDISSON-PROTOCOL.md
 * section 7) against several real redis-server processes.
 *
 * The group starts five servers; each test connects one client per server
 * (so each sub-lock lives on its own server, as a Redlock's must) and frees
 * them at the end. A test that stops servers gets them restarted, empty, by
 * its teardown. Redis state is read through the harness's own connections,
 * never through the library: a multi-lock writes nothing of its own, so
 * each server must hold exactly the plain lock hash, with the owner field
 * of the client that took it.
 *
 * The clients use short command timeouts and retries, so that a stopped
 * server fails fast; every time bound is asserted with a wide margin.
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

#define LT_SUITE "multi"

#define SERVERS           5
#define WATCHDOG_LEASE_MS 30000
#define COMMAND_MS        1000
#define RETRY_INTERVAL_MS 100
/* Added to every time bound: a loaded 2-core machine can be slow. */
#define MARGIN_MS 2000

typedef struct fixture {
    rt_redis redis[SERVERS];
    rlock_client *client[SERVERS]; /* one per server, per test */
} fixture;

/* ------------------------------------------------------------- fixtures */

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    for (int i = 0; i < SERVERS; i++) {
        if (rt_redis_start(&f->redis[i]) != 0) {
            for (int j = 0; j < i; j++)
                rt_redis_stop(&f->redis[j]);
            free(f);
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;

    for (int i = 0; i < SERVERS; i++)
        rt_redis_stop(&f->redis[i]);
    free(f);
    return 0;
}

static rlock_client *connect_fast(rt_redis *r)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;

    if (rlock_config_new(&cfg) != RLOCK_OK)
        return NULL;
    if (rlock_config_set_command_timeout(cfg, COMMAND_MS) != RLOCK_OK ||
        rlock_config_set_retry_attempts(cfg, 1) != RLOCK_OK ||
        rlock_config_set_retry_interval(cfg, RETRY_INTERVAL_MS) != RLOCK_OK ||
        rlock_client_connect_with(&c, r->url, cfg) != RLOCK_OK)
        c = NULL;
    rlock_config_free(cfg);
    return c;
}

static int setup(void **state)
{
    fixture *f = *state;

    for (int i = 0; i < SERVERS; i++)
        if ((f->client[i] = connect_fast(&f->redis[i])) == NULL)
            return -1;
    return 0;
}

/* Frees the clients, then brings back any server a test stopped. */
static int teardown(void **state)
{
    fixture *f = *state;

    for (int i = 0; i < SERVERS; i++) {
        rlock_client_free(f->client[i]);
        f->client[i] = NULL;
    }
    for (int i = 0; i < SERVERS; i++) {
        rt_redis_resume(&f->redis[i]);
        if (f->redis[i].pid == 0 && rt_redis_restart(&f->redis[i]) != 0)
            return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- helpers */

/* Handles to name (suffixed ":<i>" when distinct) on the first n clients. */
static void get_locks(fixture *f, const char *name, int n, int distinct,
                      rlock **out)
{
    for (int i = 0; i < n; i++) {
        char full[192];

        snprintf(full, sizeof(full), distinct ? "%s:%d" : "%s", name, i);
        out[i] = lt_get_lock(f->client[i], full);
    }
}

static void free_locks(rlock **locks, int n)
{
    for (int i = 0; i < n; i++)
        rlock_free(locks[i]);
}

/* Asserts that server i holds lock l exactly as a plain lock taken once by
 * the calling thread of client i. */
static void assert_held_by_us(fixture *f, int i, rlock *l)
{
    char field[128];

    lt_owner_field(field, sizeof(field), f->client[i]);
    lt_assert_single_field(&f->redis[i], rlock_name(l), field, "1");
}

static void assert_no_key(fixture *f, int i, rlock *l)
{
    assert_int_equal(rt_cmd_int(&f->redis[i], "EXISTS %s", rlock_name(l)), 0);
}

/* The same, once a late acquire's reply, which the library gives back when
 * it comes (a lock call that timed out does not wait for it), has had
 * within_ms to come. */
static void assert_no_key_within(fixture *f, int i, rlock *l, int within_ms)
{
    int64_t until = rt_now_ms() + within_ms;
    while (rt_cmd_int(&f->redis[i], "EXISTS %s", rlock_name(l)) != 0 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    assert_no_key(f, i, l);
}

/* A lock held by another owner on its own thread until told to let go. */
typedef struct holder {
    pthread_t thread;
    rlock *l;
    atomic_int state;        /* 0 taking, 1 held, 2 released */
    atomic_llong release_at; /* rt_now_ms() at which to unlock; 0: not yet */
    int lock_rc;
    int unlock_rc;
} holder;

static void *holder_main(void *p)
{
    holder *h = p;

    h->lock_rc = rlock_lock(h->l);
    atomic_store(&h->state, 1);
    if (h->lock_rc == RLOCK_OK) {
        long long at;
        while ((at = atomic_load(&h->release_at)) == 0 || rt_now_ms() < at)
            rt_sleep_ms(2);
        h->unlock_rc = rlock_unlock(h->l);
    }
    atomic_store(&h->state, 2);
    return NULL;
}

/* Starts h on l and returns once it holds the lock. */
static void holder_start(holder *h, rlock *l)
{
    memset(h, 0, sizeof(*h));
    h->l = l;
    atomic_init(&h->state, 0);
    atomic_init(&h->release_at, 0);
    assert_int_equal(pthread_create(&h->thread, NULL, holder_main, h), 0);
    while (atomic_load(&h->state) == 0)
        rt_sleep_ms(2);
    assert_int_equal(h->lock_rc, RLOCK_OK);
}

/* Tells h to unlock after_ms from now. */
static void holder_release(holder *h, int64_t after_ms)
{
    atomic_store(&h->release_at, (long long)(rt_now_ms() + after_ms));
}

static void holder_join(holder *h)
{
    if (atomic_load(&h->release_at) == 0)
        holder_release(h, 0);
    assert_int_equal(pthread_join(h->thread, NULL), 0);
    assert_int_equal(h->unlock_rc, RLOCK_OK);
}

static int is_failure(int rc)
{
    return rc == RLOCK_ETIMEDOUT || rc == RLOCK_ECONN;
}

/* ----------------------------------------------------------- multi-lock */

static void
test_multi_lock_takes_every_lock_with_the_plain_lock_state(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;
    int64_t validity = -1;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_lock(m, &validity), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        long long pttl;

        assert_held_by_us(f, i, locks[i]);
        pttl = rt_cmd_int(&f->redis[i], "PTTL %s", rlock_name(locks[i]));
        assert_true(pttl > WATCHDOG_LEASE_MS - MARGIN_MS);
        assert_true(pttl <= WATCHDOG_LEASE_MS);
    }
    assert_true(validity > 0);
    assert_true(validity <= WATCHDOG_LEASE_MS - (WATCHDOG_LEASE_MS / 100 + 2));
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_unlock_deletes_every_key(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_OK);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        assert_no_key(f, i, locks[i]);
        assert_int_equal(rlock_is_held_by_me(locks[i]), 0);
    }
    rlock_multi_free(m);
    free_locks(locks, 3);
}

/* All or nothing: the two free locks (before and after the busy one) are
 * given back when the middle one cannot be had. */
static void
test_multi_trylock_without_wait_keeps_nothing_when_one_is_held(void **state)
{
    fixture *f = *state;
    char name[128], other_field[128];
    rlock *locks[3], *theirs;
    rlock_client *other = lt_connect(f->redis[1].url, NULL, 0);
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    theirs = lt_get_lock(other, rlock_name(locks[1]));
    assert_int_equal(rlock_trylock(theirs, 0, 10000), RLOCK_OK);
    lt_owner_field(other_field, sizeof(other_field), other);

    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ETIMEDOUT);
    assert_no_key(f, 0, locks[0]);
    assert_no_key(f, 2, locks[2]);
    lt_assert_single_field(&f->redis[1], rlock_name(locks[1]), other_field,
                           "1");
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_hold_count(locks[i]), 0);

    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(theirs);
    rlock_client_free(other);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void
test_multi_trylock_takes_a_lock_released_within_the_wait(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3], *theirs;
    rlock_client *other = lt_connect(f->redis[1].url, NULL, 0);
    rlock_multi *m;
    holder h;
    int64_t t0, elapsed;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    theirs = lt_get_lock(other, rlock_name(locks[1]));
    holder_start(&h, theirs);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);

    t0 = rt_now_ms();
    holder_release(&h, 800);
    assert_int_equal(rlock_multi_trylock(m, 5000, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_OK);
    elapsed = rt_now_ms() - t0;
    print_message("acquired %lld ms after the release was scheduled at 800\n",
                  (long long)elapsed);
    assert_true(elapsed >= 700);
    assert_true(elapsed < 5000);
    holder_join(&h);
    for (int i = 0; i < 3; i++)
        assert_held_by_us(f, i, locks[i]);

    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_free(theirs);
    rlock_client_free(other);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_trylock_times_out_while_one_stays_held(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3], *theirs;
    rlock_client *other = lt_connect(f->redis[2].url, NULL, 0);
    rlock_multi *m;
    int64_t t0, elapsed;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    theirs = lt_get_lock(other, rlock_name(locks[2]));
    assert_int_equal(rlock_trylock(theirs, 0, 10000), RLOCK_OK);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);

    t0 = rt_now_ms();
    assert_int_equal(rlock_multi_trylock(m, 1000, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ETIMEDOUT);
    elapsed = rt_now_ms() - t0;
    assert_true(elapsed >= 900);
    assert_true(elapsed < 1000 + MARGIN_MS);
    assert_no_key(f, 0, locks[0]);
    assert_no_key(f, 1, locks[1]);
    assert_int_equal(rlock_is_held_by_me(locks[2]), 0);

    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(theirs);
    rlock_client_free(other);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

/* wait and lease given: the locks are taken with 2 x wait, then every key
 * is set to the lease. */
static void test_multi_trylock_with_lease_sets_every_pttl_to_it(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 2000, 8000, NULL), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        long long pttl =
            rt_cmd_int(&f->redis[i], "PTTL %s", rlock_name(locks[i]));

        assert_held_by_us(f, i, locks[i]);
        assert_true(pttl > 0);
        assert_true(pttl <= 8000);
        /* not the 2 x wait = 4000 the locks were first taken with */
        assert_true(pttl > 8000 - MARGIN_MS);
    }
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void
test_multi_trylock_with_lease_and_no_wait_sets_that_lease(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 0, 5000, NULL), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        long long pttl =
            rt_cmd_int(&f->redis[i], "PTTL %s", rlock_name(locks[i]));

        assert_true(pttl > 5000 - MARGIN_MS);
        assert_true(pttl <= 5000);
    }
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_validity_is_at_most_lease_minus_drift(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;
    const int64_t lease = 10000, drift = lease / 100 + 2;
    int64_t validity = -1;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 1000, lease, &validity), RLOCK_OK);
    print_message("validity %lld ms of a %lld ms lease\n", (long long)validity,
                  (long long)lease);
    assert_true(validity > lease - drift - MARGIN_MS);
    assert_true(validity <= lease - drift);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_lock_waits_until_every_lock_is_free(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3], *theirs;
    rlock_client *other = lt_connect(f->redis[0].url, NULL, 0);
    rlock_multi *m;
    holder h;
    int64_t t0, elapsed;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    theirs = lt_get_lock(other, rlock_name(locks[0]));
    holder_start(&h, theirs);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);

    t0 = rt_now_ms();
    holder_release(&h, 1000);
    assert_int_equal(rlock_multi_lock(m, NULL), RLOCK_OK);
    elapsed = rt_now_ms() - t0;
    assert_true(elapsed >= 900);
    assert_true(elapsed < 1000 + MARGIN_MS);
    holder_join(&h);
    for (int i = 0; i < 3; i++)
        assert_held_by_us(f, i, locks[i]);

    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_free(theirs);
    rlock_client_free(other);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_lock_is_reentrant_for_its_thread(void **state)
{
    fixture *f = *state;
    char name[128], field[128];
    rlock *locks[2];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 2, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 2, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_lock(m, NULL), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_OK);
    for (int i = 0; i < 2; i++) {
        lt_owner_field(field, sizeof(field), f->client[i]);
        lt_assert_single_field(&f->redis[i], rlock_name(locks[i]), field, "2");
    }
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    for (int i = 0; i < 2; i++)
        assert_held_by_us(f, i, locks[i]);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    for (int i = 0; i < 2; i++)
        assert_no_key(f, i, locks[i]);
    rlock_multi_free(m);
    free_locks(locks, 2);
}

/* Any kind of lock can be part of a multi-lock: each is taken as it would
 * be on its own, and given the multi-lock's lease. */
static void test_multi_lock_takes_locks_of_other_kinds(void **state)
{
    fixture *f = *state;
    char name[128], full[3][160];
    rlock *locks[3];
    rlock_rw *rw = NULL;
    rlock_multi *m;

    LT_TEST_NAME(name);
    for (int i = 0; i < 3; i++)
        snprintf(full[i], sizeof(full[i]), "%s:%d", name, i);
    assert_int_equal(rlock_fair_get(f->client[0], full[0], &locks[0]),
                     RLOCK_OK);
    assert_int_equal(rlock_rw_get(f->client[1], full[1], &rw), RLOCK_OK);
    locks[1] = rlock_rw_write(rw);
    assert_non_null(locks[1]);
    assert_int_equal(rlock_spin_get(f->client[2], full[2], &locks[2]),
                     RLOCK_OK);

    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 1000, 6000, NULL), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        long long pttl = rt_cmd_int(&f->redis[i], "PTTL %s", full[i]);

        assert_int_equal(rlock_is_held_by_me(locks[i]), 1);
        assert_true(pttl > 6000 - MARGIN_MS);
        assert_true(pttl <= 6000);
    }
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_is_locked(locks[i]), 0);

    rlock_multi_free(m);
    rlock_free(locks[0]);
    rlock_rw_free(rw);
    rlock_free(locks[2]);
}

/* No lock could be tried at all: the caller learns why, not "timed out". */
static void
test_multi_with_first_server_down_returns_the_connection_error(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 1, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    rt_redis_stop(&f->redis[0]);
    assert_int_equal(rlock_multi_trylock(m, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ECONN);
    assert_no_key(f, 1, locks[1]);
    assert_no_key(f, 2, locks[2]);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_ENOTOWNER);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_multi_unlock_without_holding_returns_enotowner(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m, *r;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 0, locks);
    assert_int_equal(rlock_multi_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_redlock_new(locks, 3, &r), RLOCK_OK);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_multi_unlock(r), RLOCK_ENOTOWNER);
    rlock_multi_free(m);
    rlock_multi_free(r);
    free_locks(locks, 3);
}

/* -------------------------------------------------------------- Redlock */

/* Takes a Redlock on the first n servers with every one up; checks each
 * holds the plain lock hash with the right owner field, then unlocks. */
static void redlock_takes_all(fixture *f, const char *name, int n)
{
    rlock *locks[SERVERS];
    rlock_multi *m;
    int64_t validity = -1;

    get_locks(f, name, n, 0, locks);
    assert_int_equal(rlock_redlock_new(locks, (size_t)n, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 2000, 10000, &validity), RLOCK_OK);
    assert_true(validity > 0);
    assert_true(validity <= 10000 - 102);
    for (int i = 0; i < n; i++) {
        long long pttl = rt_cmd_int(&f->redis[i], "PTTL %s", name);

        assert_held_by_us(f, i, locks[i]);
        assert_true(pttl > 0 && pttl <= 10000);
    }
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    rlock_multi_free(m);
    free_locks(locks, n);
}

static void test_redlock_takes_all_of_three_servers(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    redlock_takes_all(*state, name, 3);
}

static void test_redlock_takes_all_of_five_servers(void **state)
{
    char name[128];

    LT_TEST_NAME(name);
    redlock_takes_all(*state, name, 5);
}

static void test_redlock_unlock_deletes_every_key(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[SERVERS];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, SERVERS, 0, locks);
    assert_int_equal(rlock_redlock_new(locks, SERVERS, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_lock(m, NULL), RLOCK_OK);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    for (int i = 0; i < SERVERS; i++)
        assert_no_key(f, i, locks[i]);
    rlock_multi_free(m);
    free_locks(locks, SERVERS);
}

/* Stops the servers listed in down[] (after the clients connected), takes
 * a Redlock over the first n servers with wait_ms and checks the outcome:
 * a majority held by us on the servers still up, or nothing at all. */
static void redlock_with_servers_down(fixture *f, const char *name, int n,
                                      const int *down, int ndown, int expect_ok)
{
    rlock *locks[SERVERS];
    rlock_multi *m;
    const int64_t wait = 2000;
    int64_t t0, elapsed, validity = -1;
    int is_down[SERVERS] = {0}, held = 0, rc;

    get_locks(f, name, n, 0, locks);
    assert_int_equal(rlock_redlock_new(locks, (size_t)n, &m), RLOCK_OK);
    for (int i = 0; i < ndown; i++) {
        rt_redis_stop(&f->redis[down[i]]);
        is_down[down[i]] = 1;
    }
    t0 = rt_now_ms();
    rc = rlock_multi_trylock(m, wait, RLOCK_LEASE_WATCHDOG, &validity);
    elapsed = rt_now_ms() - t0;
    print_message("%d of %d down: %s after %lld ms\n", ndown, n,
                  rlock_err_name(rc), (long long)elapsed);
    assert_true(elapsed < wait + MARGIN_MS);
    if (expect_ok) {
        assert_int_equal(rc, RLOCK_OK);
        assert_true(validity > 0);
    } else {
        assert_true(is_failure(rc));
    }
    for (int i = 0; i < n; i++) {
        if (is_down[i])
            continue;
        if (expect_ok) {
            assert_held_by_us(f, i, locks[i]);
            held++;
        } else {
            assert_no_key_within(f, i, locks[i], 3000);
            assert_int_equal(rlock_hold_count(locks[i]), 0);
        }
    }
    if (expect_ok) {
        assert_true(held >= n / 2 + 1);
        assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
        for (int i = 0; i < n; i++)
            if (!is_down[i])
                assert_no_key(f, i, locks[i]);
    }
    rlock_multi_free(m);
    free_locks(locks, n);
}

static void test_redlock_with_one_of_three_down_holds_a_majority(void **state)
{
    char name[128];
    const int down[] = {1};

    LT_TEST_NAME(name);
    redlock_with_servers_down(*state, name, 3, down, 1, 1);
}

static void test_redlock_with_two_of_five_down_holds_a_majority(void **state)
{
    char name[128];
    const int down[] = {0, 3};

    LT_TEST_NAME(name);
    redlock_with_servers_down(*state, name, 5, down, 2, 1);
}

static void
test_redlock_with_two_of_three_down_fails_and_keeps_nothing(void **state)
{
    char name[128];
    const int down[] = {0, 2};

    LT_TEST_NAME(name);
    redlock_with_servers_down(*state, name, 3, down, 2, 0);
}

static void
test_redlock_with_three_of_five_down_fails_and_keeps_nothing(void **state)
{
    char name[128];
    const int down[] = {1, 2, 4};

    LT_TEST_NAME(name);
    redlock_with_servers_down(*state, name, 5, down, 3, 0);
}

static void
test_redlock_with_every_server_down_returns_the_connection_error(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 0, locks);
    assert_int_equal(rlock_redlock_new(locks, 3, &m), RLOCK_OK);
    for (int i = 0; i < 3; i++)
        rt_redis_stop(&f->redis[i]);
    assert_int_equal(rlock_multi_trylock(m, 1000, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ECONN);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_redlock_fails_when_another_holds_a_majority(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[3], *theirs[2];
    rlock_client *others[2];
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 0, locks);
    for (int i = 0; i < 2; i++) {
        others[i] = lt_connect(f->redis[i].url, NULL, 0);
        theirs[i] = lt_get_lock(others[i], name);
        assert_int_equal(rlock_trylock(theirs[i], 0, 10000), RLOCK_OK);
    }
    assert_int_equal(rlock_redlock_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 600, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_ETIMEDOUT);
    assert_no_key(f, 2, locks[2]);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rlock_unlock(theirs[i]), RLOCK_OK);
        rlock_free(theirs[i]);
        rlock_client_free(others[i]);
    }
    rlock_multi_free(m);
    free_locks(locks, 3);
}

static void test_redlock_succeeds_when_another_holds_a_minority(void **state)
{
    fixture *f = *state;
    char name[128], other_field[128];
    rlock *locks[3], *theirs;
    rlock_client *other = lt_connect(f->redis[0].url, NULL, 0);
    rlock_multi *m;

    LT_TEST_NAME(name);
    get_locks(f, name, 3, 0, locks);
    theirs = lt_get_lock(other, name);
    assert_int_equal(rlock_trylock(theirs, 0, 10000), RLOCK_OK);
    lt_owner_field(other_field, sizeof(other_field), other);
    assert_int_equal(rlock_redlock_new(locks, 3, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, 900, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_OK);
    lt_assert_single_field(&f->redis[0], name, other_field, "1");
    assert_held_by_us(f, 1, locks[1]);
    assert_held_by_us(f, 2, locks[2]);
    assert_int_equal(rlock_multi_unlock(m), RLOCK_OK);
    lt_assert_single_field(&f->redis[0], name, other_field, "1");
    assert_no_key(f, 1, locks[1]);
    assert_no_key(f, 2, locks[2]);

    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(theirs);
    rlock_client_free(other);
    rlock_multi_free(m);
    free_locks(locks, 3);
}

/* ------------------------------------------------------------ arguments */

static void test_bad_arguments_return_einval(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[SERVERS], *many[65], *with_null[2];
    rlock_multi *m = (rlock_multi *)&m; /* must be reset to NULL */

    LT_TEST_NAME(name);
    get_locks(f, name, 2, 1, locks);
    for (int i = 0; i < 65; i++)
        many[i] = locks[0];
    with_null[0] = locks[0];
    with_null[1] = NULL;

    assert_int_equal(rlock_multi_new(NULL, 2, &m), RLOCK_EINVAL);
    assert_null(m);
    assert_int_equal(rlock_multi_new(locks, 0, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_new(many, 65, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_new(with_null, 2, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_new(locks, 2, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_redlock_new(NULL, 2, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_redlock_new(locks, 0, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_redlock_new(many, 65, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_redlock_new(with_null, 2, &m), RLOCK_EINVAL);
    assert_int_equal(rlock_redlock_new(locks, 2, NULL), RLOCK_EINVAL);
    assert_null(m);

    assert_int_equal(rlock_multi_lock(NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_trylock(NULL, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_multi_unlock(NULL), RLOCK_EINVAL);
    rlock_multi_free(NULL);

    /* 64 locks is the limit, not beyond it */
    assert_int_equal(rlock_multi_new(many, 64, &m), RLOCK_OK);
    rlock_multi_free(m);
    assert_int_equal(rlock_multi_new(locks, 2, &m), RLOCK_OK);
    assert_int_equal(rlock_multi_trylock(m, -2, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_multi_trylock(m, 0, 0, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_trylock(m, 0, -2, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_multi_trylock(m, 0, (int64_t)1 << 51, NULL),
                     RLOCK_EINVAL);
    /* nothing was taken by the refused calls */
    for (int i = 0; i < 2; i++)
        assert_no_key(f, i, locks[i]);
    rlock_multi_free(m);
    free_locks(locks, 2);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_multi_lock_takes_every_lock_with_the_plain_lock_state),
        T(test_multi_unlock_deletes_every_key),
        T(test_multi_trylock_without_wait_keeps_nothing_when_one_is_held),
        T(test_multi_trylock_takes_a_lock_released_within_the_wait),
        T(test_multi_trylock_times_out_while_one_stays_held),
        T(test_multi_trylock_with_lease_sets_every_pttl_to_it),
        T(test_multi_trylock_with_lease_and_no_wait_sets_that_lease),
        T(test_multi_validity_is_at_most_lease_minus_drift),
        T(test_multi_lock_waits_until_every_lock_is_free),
        T(test_multi_lock_is_reentrant_for_its_thread),
        T(test_multi_lock_takes_locks_of_other_kinds),
        T(test_multi_with_first_server_down_returns_the_connection_error),
        T(test_multi_unlock_without_holding_returns_enotowner),
        T(test_redlock_takes_all_of_three_servers),
        T(test_redlock_takes_all_of_five_servers),
        T(test_redlock_unlock_deletes_every_key),
        T(test_redlock_with_one_of_three_down_holds_a_majority),
        T(test_redlock_with_two_of_five_down_holds_a_majority),
        T(test_redlock_with_two_of_three_down_fails_and_keeps_nothing),
        T(test_redlock_with_three_of_five_down_fails_and_keeps_nothing),
        T(test_redlock_with_every_server_down_returns_the_connection_error),
        T(test_redlock_fails_when_another_holds_a_majority),
        T(test_redlock_succeeds_when_another_holds_a_minority),
        T(test_bad_arguments_return_einval),
    };
#undef T

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
