/*
 * test_fenced.c: the fenced lock (REDISSON-PROTOCOL.md section 5).
 *
 * Every acquire, reentries included, draws the next value of the counter
 * redisson_lock_token:{N}, which has no expiry and survives unlocks. Tokens
 * therefore only grow: across threads, across clients, across reentries,
 * and through the plain rlock_lock/rlock_trylock calls too. The point of
 * it: a holder that paused past its lease carries a lower token than the
 * holder that took over.
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

#define LT_SUITE "fenced"

#define CLIENTS          2
#define THREADS_PER      2
#define ITERATIONS       25
#define TOKENS_PER_ROUND 2 /* a take and a reentry */
#define MAX_TOKENS       (CLIENTS * THREADS_PER * ITERATIONS * TOKENS_PER_ROUND)
/* The stale-holder test: A's lease, and how long A "pauses". */
#define SHORT_LEASE_MS 300
#define PAUSE_MS       700
/* The lease-runs-out test: a re-check interval far above the lease, so a
 * waiter that sleeps until it misses its chance by seconds. */
#define LONG_RECHECK_MS 10000
#define HELD_LEASE_MS   600
#define FIRST_WAIT_MS   200

/* ------------------------------------------------------------- helpers */

static rlock *fenced_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fenced_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

/* The token key: redisson_lock_token:{N}. */
static void token_key_of(char *buf, size_t n, const char *name)
{
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "redisson_lock_token:%s", name);
    else
        snprintf(buf, n, "redisson_lock_token:{%s}", name);
}

/* GET of the token key as a number (0 when missing). */
static long long stored_token(rt_redis *r, const char *name)
{
    char key[200];
    char *v;
    long long n;

    token_key_of(key, sizeof(key), name);
    v = rt_cmd_str(r, "GET %s", key);
    n = v != NULL ? atoll(v) : 0;
    free(v);
    return n;
}

/* ------------------------------------------------ tokens under contention */

typedef struct tokens {
    int64_t seen[MAX_TOKENS]; /* in order of acquisition */
    atomic_int n;
    atomic_int errors;
} tokens;

typedef struct token_thread {
    pthread_t thread;
    rlock *l;
    tokens *t;
} token_thread;

static void *token_main(void *p)
{
    token_thread *tt = p;
    tokens *t = tt->t;

    for (int i = 0; i < ITERATIONS; i++) {
        int64_t first = 0, again = 0;

        if (rlock_fenced_lock(tt->l, &first) != RLOCK_OK) {
            atomic_fetch_add(&t->errors, 1);
            return NULL;
        }
        /* the lock orders these appends: only the holder writes */
        t->seen[atomic_fetch_add(&t->n, 1)] = first;
        if (rlock_fenced_trylock(tt->l, 0, RLOCK_LEASE_WATCHDOG, &again) !=
            RLOCK_OK)
            atomic_fetch_add(&t->errors, 1);
        else
            t->seen[atomic_fetch_add(&t->n, 1)] = again;
        if (again != 0 && rlock_unlock(tt->l) != RLOCK_OK)
            atomic_fetch_add(&t->errors, 1);
        if (rlock_unlock(tt->l) != RLOCK_OK)
            atomic_fetch_add(&t->errors, 1);
    }
    return NULL;
}

/* Threads of two clients take the lock (and take it again inside) many
 * times: in the order the lock was held, every token is greater than the
 * one before, and the last is what Redis and rlock_fenced_token report. */
static void test_tokens_increase_across_clients_and_reentries(void **state)
{
    lt_fixture *f = *state;
    static tokens t;
    token_thread threads[CLIENTS * THREADS_PER];
    rlock_client *clients[CLIENTS];
    rlock *locks[CLIENTS];
    char name[128];
    int n;

    LT_TEST_NAME(name);
    memset(&t, 0, sizeof(t));
    atomic_init(&t.n, 0);
    atomic_init(&t.errors, 0);
    clients[0] = f->client;
    clients[1] = lt_connect(f->redis.url, NULL, 0);
    for (int c = 0; c < CLIENTS; c++)
        locks[c] = fenced_lock(clients[c], name);
    for (int i = 0; i < CLIENTS * THREADS_PER; i++) {
        threads[i].l = locks[i % CLIENTS];
        threads[i].t = &t;
        assert_int_equal(
            pthread_create(&threads[i].thread, NULL, token_main, &threads[i]),
            0);
    }
    for (int i = 0; i < CLIENTS * THREADS_PER; i++)
        assert_int_equal(pthread_join(threads[i].thread, NULL), 0);

    assert_int_equal(atomic_load(&t.errors), 0);
    n = atomic_load(&t.n);
    assert_int_equal(n, MAX_TOKENS);
    assert_true(t.seen[0] >= 1);
    for (int i = 1; i < n; i++)
        if (t.seen[i] <= t.seen[i - 1])
            fail_msg("token %d is %lld, after %lld", i, (long long)t.seen[i],
                     (long long)t.seen[i - 1]);
    assert_int_equal(stored_token(&f->redis, name), t.seen[n - 1]);
    assert_int_equal(rlock_fenced_token(locks[0]), t.seen[n - 1]);
    assert_int_equal(rlock_fenced_token(locks[1]), t.seen[n - 1]);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    for (int c = 0; c < CLIENTS; c++)
        rlock_free(locks[c]);
    rlock_client_free(clients[1]);
}

/* ---------------------------------------------------------- single calls */

/* rlock_fenced_token reads the last token drawn: 0 before any, then the
 * token of each acquisition, kept (with no expiry) after the unlock. It is
 * not available on other kinds of lock. */
static void test_token_reports_last_token_drawn(void **state)
{
    lt_fixture *f = *state;
    char name[128], key[200];
    int64_t t1 = 0, t2 = 0;
    rlock *l, *plain;

    LT_TEST_NAME(name);
    token_key_of(key, sizeof(key), name);
    l = fenced_lock(f->client, name);
    plain = lt_get_lock(f->client, name);
    assert_int_equal(rlock_fenced_token(l), 0);
    assert_int_equal(rlock_fenced_token(plain), RLOCK_ENOTSUP);
    assert_int_equal(rlock_fenced_lock(l, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_fenced_trylock(l, 0, RLOCK_LEASE_WATCHDOG, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_hold_count(l), 0);

    assert_int_equal(rlock_fenced_lock(l, &t1), RLOCK_OK);
    assert_true(t1 >= 1);
    assert_int_equal(rlock_fenced_token(l), t1);
    assert_int_equal(stored_token(&f->redis, name), t1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    /* the counter outlives the lock and never expires */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "PTTL %s", key), -1);
    assert_int_equal(rlock_fenced_token(l), t1);

    assert_int_equal(rlock_fenced_trylock(l, 1000, 5000, &t2), RLOCK_OK);
    assert_true(t2 > t1);
    assert_int_equal(rlock_fenced_token(l), t2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_kind(l), RLOCK_KIND_FENCED);
    rlock_free(l);
    rlock_free(plain);
}

/* The plain lock calls on a fenced handle draw tokens too: each take and
 * each reentry through rlock_lock or rlock_trylock advances the counter. */
static void test_plain_lock_calls_advance_the_token(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t before, after_lock, after_try, after_retry, t = 0;
    rlock *l;

    LT_TEST_NAME(name);
    l = fenced_lock(f->client, name);
    assert_int_equal(rlock_fenced_lock(l, &before), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    after_lock = rlock_fenced_token(l);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    after_try = rlock_fenced_token(l);
    assert_int_equal(rlock_trylock(l, 100, 10000), RLOCK_OK);
    after_retry = rlock_fenced_token(l);
    assert_int_equal(rlock_hold_count(l), 3);
    assert_int_equal(after_lock, before + 1);
    assert_int_equal(after_try, before + 2);
    assert_int_equal(after_retry, before + 3);
    assert_int_equal(stored_token(&f->redis, name), after_retry);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);

    assert_int_equal(rlock_fenced_lock(l, &t), RLOCK_OK);
    assert_int_equal(t, before + 4);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* Client A takes the lock with a short lease and pauses past it; client B
 * takes it over. B's token is higher than A's, so a store that checks
 * tokens would refuse A's late write; A's unlock finds the hold lost. */
static void test_stale_holder_has_lower_token_than_next_holder(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *b = lt_connect(f->redis.url, NULL, 0);
    int64_t ta = 0, tb = 0;
    rlock *la, *lb;

    LT_TEST_NAME(name);
    la = fenced_lock(f->client, name);
    lb = fenced_lock(b, name);
    assert_int_equal(rlock_fenced_trylock(la, 0, SHORT_LEASE_MS, &ta),
                     RLOCK_OK);
    assert_int_equal(rlock_fenced_trylock(lb, 0, RLOCK_LEASE_WATCHDOG, &tb),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(tb, 0); /* left unchanged on failure */

    rt_sleep_ms(PAUSE_MS); /* A "pauses" past its lease */
    assert_int_equal(rlock_fenced_trylock(lb, 2000, RLOCK_LEASE_WATCHDOG, &tb),
                     RLOCK_OK);
    print_message("stale holder's token %lld, next holder's %lld\n",
                  (long long)ta, (long long)tb);
    assert_true(tb > ta);
    assert_int_equal(rlock_fenced_token(la), tb);

    assert_int_equal(rlock_unlock(la), RLOCK_ELOST);
    assert_int_equal(rlock_is_locked(lb), 1);
    assert_int_equal(rlock_unlock(lb), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(la);
    rlock_free(lb);
    rlock_client_free(b);
}

/* A new acquire that finds local waiters waiting first waits with them for
 * an unlock message; when none comes because the holder's lease runs out,
 * it tries when that lease ends (which the waiters' try was told), not a
 * re-check interval later. */
static void test_a_new_waiter_behind_waiters_tries_when_the_lease_ends(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *holder = lt_connect(f->redis.url, NULL, 0);
    rlock_client *c = lt_connect(f->redis.url,
                                 rlock_config_set_recheck_interval,
                                 LONG_RECHECK_MS);
    rlock *held, *first, *second;
    lt_waiter w = {0};
    int64_t token = 0;

    LT_TEST_NAME(name);
    held = fenced_lock(holder, name);
    first = fenced_lock(c, name);
    second = fenced_lock(c, name);
    int64_t taken_at = rt_now_ms();
    assert_int_equal(rlock_fenced_trylock(held, 0, HELD_LEASE_MS, &token),
                     RLOCK_OK);
    /* a waiter that gives up before the lease ends, so no unlock message
     * and no try of its own comes after it */
    w.l = first;
    w.wait_ms = FIRST_WAIT_MS;
    w.lease_ms = RLOCK_LEASE_WATCHDOG;
    lt_waiter_start(&w);
    rt_sleep_ms(FIRST_WAIT_MS / 2);
    assert_int_equal(rlock_trylock(second, 5 * HELD_LEASE_MS, 5000),
                     RLOCK_OK);
    int64_t got_after = rt_now_ms() - taken_at;
    lt_waiter_join(&w);
    print_message("the lease ended after %d ms; the second waiter got the "
                  "lock after %lld ms\n",
                  HELD_LEASE_MS, (long long)got_after);
    assert_int_equal(w.rc, RLOCK_ETIMEDOUT);
    assert_true(got_after >= HELD_LEASE_MS - 50);
    assert_true(got_after < 5 * HELD_LEASE_MS);
    assert_int_equal(rlock_unlock(second), RLOCK_OK);
    rlock_free(held);
    rlock_free(first);
    rlock_free(second);
    rlock_client_free(c);
    rlock_client_free(holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_increase_across_clients_and_reentries),
        cmocka_unit_test(test_token_reports_last_token_drawn),
        cmocka_unit_test(test_plain_lock_calls_advance_the_token),
        cmocka_unit_test(test_stale_holder_has_lower_token_than_next_holder),
        cmocka_unit_test(
            test_a_new_waiter_behind_waiters_tries_when_the_lease_ends),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
