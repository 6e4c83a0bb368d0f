/*
 * test_fault_redlock.c: a Redlock over five servers while some of them
 * stall (SIGSTOP) or die.
 *
 * What must hold: a Redlock whose minority of servers is stopped
 * during the acquire still succeeds within its wait plus a margin, because
 * each server only gets its share of the wait, not a command timeout (the
 * command timeout here is far longer than wait + margin, so the two cannot
 * be confused); with a majority stopped it fails within the same bound and
 * keeps nothing. A stopped server runs the queued acquire once resumed: that
 * late hold must not stay ours (given back, or gone with its 2 x wait
 * lease; under the watchdog lease, whose 30 s outlast every margin here, only
 * the give-back can clear it). A server that dies while the Redlock is held
 * does not stop the unlock from succeeding on the majority.
 *
 * The Redlock runs on a helper thread (which must also be the one to
 * unlock), so that a hang fails the test instead of the CTest timeout.
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

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-redlock"

#define SERVERS    5
#define COMMAND_MS 8000 /* far beyond WAIT_MS + MARGIN_MS */
#define WAIT_MS    2000
#define LEASE_MS   10000
/* Added to every time bound, for a loaded 2-core machine. */
#define MARGIN_MS 1500
/* How long a resumed server may keep a late hold: its lease of 2 x wait
 * (or the give-back, sooner), plus the margin. */
#define LATE_HOLD_MS (2 * WAIT_MS + MARGIN_MS)
/* A late hold under the watchdog lease must be given back, well before the
 * 30 s lease. */
#define GIVE_BACK_MS 5000
#define HANG_MS      20000

typedef struct fixture {
    rt_redis redis[SERVERS];
    rlock_client *client[SERVERS];
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

/* One client per server, with a long command timeout and fast retries;
 * each client's connections are used once before a test stalls anything. */
static int setup(void **state)
{
    fixture *f = *state;

    for (int i = 0; i < SERVERS; i++) {
        rlock_config *cfg = NULL;
        rlock *l = NULL;
        int rc;

        if (rlock_config_new(&cfg) != RLOCK_OK)
            return -1;
        rc = rlock_config_set_command_timeout(cfg, COMMAND_MS);
        if (rc == 0)
            rc = rlock_config_set_retry_attempts(cfg, 1);
        if (rc == 0)
            rc = rlock_config_set_retry_interval(cfg, 100);
        if (rc == 0)
            rc = rlock_client_connect_with(&f->client[i], f->redis[i].url, cfg);
        rlock_config_free(cfg);
        if (rc == 0)
            rc = rlock_get(f->client[i], LT_SUITE ":warm-up", &l);
        if (rc == 0)
            rc = rlock_lock(l);
        if (rc == 0)
            rc = rlock_unlock(l);
        rlock_free(l);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Resumes stopped servers and restarts dead ones, then frees the clients. */
static int teardown(void **state)
{
    fixture *f = *state;

    for (int i = 0; i < SERVERS; i++) {
        rt_redis_resume(&f->redis[i]);
        if (f->redis[i].pid == 0 && rt_redis_restart(&f->redis[i]) != 0)
            return -1;
    }
    for (int i = 0; i < SERVERS; i++) {
        rlock_client_free(f->client[i]);
        f->client[i] = NULL;
    }
    return 0;
}

/* ----------------------------------------------------- Redlock on a thread */

/* Takes m with rlock_multi_trylock(wait_ms, lease_ms), reports, waits for
 * the go-ahead, unlocks, reports. */
typedef struct redlocker {
    pthread_t thread;
    rlock_multi *m;
    int64_t wait_ms;
    int64_t lease_ms;
    pthread_mutex_t mu;
    int state; /* 0 taking, 1 taken or failed, 2 asked to unlock, 3 done */
    int rc;
    int64_t validity_ms;
    int64_t elapsed_ms; /* of the trylock */
    uint64_t tid;
    int unlock_rc;
    int64_t unlock_ms;
} redlocker;

static int rl_state(redlocker *r)
{
    pthread_mutex_lock(&r->mu);
    int s = r->state;
    pthread_mutex_unlock(&r->mu);
    return s;
}

/* States only move forward: the go-ahead must not undo "done". */
static void rl_set_state(redlocker *r, int s)
{
    pthread_mutex_lock(&r->mu);
    if (s > r->state)
        r->state = s;
    pthread_mutex_unlock(&r->mu);
}

static void *rl_main(void *p)
{
    redlocker *r = p;
    int64_t t0 = rt_now_ms();

    r->tid = rlock_thread_id();
    r->rc = rlock_multi_trylock(r->m, r->wait_ms, r->lease_ms, &r->validity_ms);
    r->elapsed_ms = rt_now_ms() - t0;
    rl_set_state(r, 1);
    if (r->rc == RLOCK_OK) {
        while (rl_state(r) != 2)
            rt_sleep_ms(2);
        t0 = rt_now_ms();
        r->unlock_rc = rlock_multi_unlock(r->m);
        r->unlock_ms = rt_now_ms() - t0;
    }
    rl_set_state(r, 3);
    return NULL;
}

/* Waits up to HANG_MS for r to reach state s; fails the test if it hangs
 * (resuming every server first, so that the thread can finish). */
static void rl_wait(fixture *f, redlocker *r, int s, const char *what)
{
    int64_t deadline = rt_now_ms() + HANG_MS;

    while (rl_state(r) < s) {
        if (rt_now_ms() >= deadline) {
            for (int i = 0; i < SERVERS; i++)
                rt_redis_resume(&f->redis[i]);
            fail_msg("the Redlock's %s did not return in %d ms", what, HANG_MS);
        }
        rt_sleep_ms(2);
    }
}

/* Starts the Redlock and returns once its trylock has returned. */
static void rl_start(fixture *f, redlocker *r, rlock_multi *m, int64_t wait_ms,
                     int64_t lease_ms)
{
    memset(r, 0, sizeof(*r));
    r->m = m;
    r->wait_ms = wait_ms;
    r->lease_ms = lease_ms;
    r->validity_ms = -1;
    pthread_mutex_init(&r->mu, NULL);
    assert_int_equal(pthread_create(&r->thread, NULL, rl_main, r), 0);
    rl_wait(f, r, 1, "trylock");
    print_message("trylock(%lld, %lld): %s after %lld ms, validity %lld\n",
                  (long long)wait_ms, (long long)lease_ms,
                  rlock_err_name(r->rc), (long long)r->elapsed_ms,
                  (long long)r->validity_ms);
}

/* Has the thread unlock (if it holds), then joins it. */
static void rl_finish(fixture *f, redlocker *r)
{
    rl_set_state(r, 2);
    rl_wait(f, r, 3, "unlock");
    assert_int_equal(pthread_join(r->thread, NULL), 0);
    pthread_mutex_destroy(&r->mu);
    if (r->rc == RLOCK_OK)
        print_message("unlock: %s after %lld ms\n",
                      rlock_err_name(r->unlock_rc), (long long)r->unlock_ms);
}

/* -------------------------------------------------------------- helpers */

static void get_locks(fixture *f, const char *name, rlock **out)
{
    for (int i = 0; i < SERVERS; i++)
        out[i] = lt_get_lock(f->client[i], name);
}

static void free_locks(rlock **locks)
{
    for (int i = 0; i < SERVERS; i++)
        rlock_free(locks[i]);
}

/* The owner field of thread tid of client c. */
static void field_of(char *buf, size_t n, rlock_client *c, uint64_t tid)
{
    snprintf(buf, n, "%s:%llu", rlock_client_id(c), (unsigned long long)tid);
}

/* Returns 1 if the field of thread tid of client i is in the hash. */
static int has_our_field(fixture *f, int i, const char *name, uint64_t tid)
{
    char field[128];

    field_of(field, sizeof(field), f->client[i], tid);
    return rt_cmd_int(&f->redis[i], "HEXISTS %s %s", name, field) == 1;
}

/* Polls server i until no field of ours is left in name, at most
 * timeout_ms; returns how long that took, or -1. */
static int64_t wait_ours_gone(fixture *f, int i, const char *name, uint64_t tid,
                              int timeout_ms)
{
    int64_t t0 = rt_now_ms();

    while (has_our_field(f, i, name, tid)) {
        if (rt_now_ms() - t0 >= timeout_ms)
            return -1;
        rt_sleep_ms(20);
    }
    return rt_now_ms() - t0;
}

/* --------------------------------------------------------------- tests */

/* Pauses the servers in paused[], takes the Redlock with lease_ms, resumes
 * them, and checks that every late hold is gone within gone_ms. */
static void paused_minority(fixture *f, const char *name, const int *paused,
                            int npaused, int64_t lease_ms, int gone_ms)
{
    rlock *locks[SERVERS];
    rlock_multi *m;
    redlocker r;
    int is_paused[SERVERS] = {0}, held = 0;

    get_locks(f, name, locks);
    assert_int_equal(rlock_redlock_new(locks, SERVERS, &m), RLOCK_OK);
    for (int i = 0; i < npaused; i++) {
        rt_redis_pause(&f->redis[paused[i]]);
        is_paused[paused[i]] = 1;
    }
    rl_start(f, &r, m, WAIT_MS, lease_ms);
    assert_int_equal(r.rc, RLOCK_OK);
    assert_true(r.elapsed_ms < WAIT_MS + MARGIN_MS);
    assert_true(r.validity_ms > 0);
    for (int i = 0; i < SERVERS; i++) {
        if (is_paused[i])
            continue;
        char field[128];
        field_of(field, sizeof(field), f->client[i], r.tid);
        lt_assert_single_field(&f->redis[i], name, field, "1");
        long long pttl = rt_cmd_int(&f->redis[i], "PTTL %s", name);
        assert_true(pttl > 0);
        assert_true(pttl <= (lease_ms > 0 ? lease_ms : 30000));
        held++;
    }
    assert_true(held >= SERVERS / 2 + 1);

    for (int i = 0; i < npaused; i++)
        rt_redis_resume(&f->redis[paused[i]]);
    for (int i = 0; i < npaused; i++) {
        int64_t t = wait_ours_gone(f, paused[i], name, r.tid, gone_ms);
        print_message("late hold on resumed server %d gone after %lld ms\n",
                      paused[i], (long long)t);
        assert_true(t >= 0);
    }
    /* the late holds never became ours locally: they are not renewed and
     * unlock does not count them */
    rl_finish(f, &r);
    assert_int_equal(r.unlock_rc, RLOCK_OK);
    for (int i = 0; i < SERVERS; i++)
        assert_int_equal(rt_cmd_int(&f->redis[i], "EXISTS %s", name), 0);
    rlock_multi_free(m);
    free_locks(locks);
}

static void test_redlock_with_two_paused_succeeds_within_the_wait(void **state)
{
    char name[128];
    const int paused[] = {1, 3};

    LT_TEST_NAME(name);
    paused_minority(*state, name, paused, 2, LEASE_MS, LATE_HOLD_MS);
}

static void
test_redlock_with_first_paused_succeeds_within_the_wait(void **state)
{
    char name[128];
    const int paused[] = {0};

    LT_TEST_NAME(name);
    paused_minority(*state, name, paused, 1, LEASE_MS, LATE_HOLD_MS);
}

/* Under the watchdog lease a late hold would live 30 s (or for ever, if it
 * were renewed): only the give-back clears it within GIVE_BACK_MS. */
static void
test_redlock_late_watchdog_hold_on_resumed_server_is_given_back(void **state)
{
    char name[128];
    const int paused[] = {0, 4};

    LT_TEST_NAME(name);
    paused_minority(*state, name, paused, 2, RLOCK_LEASE_WATCHDOG,
                    GIVE_BACK_MS);
}

static void
test_redlock_with_majority_paused_fails_within_the_wait(void **state)
{
    fixture *f = *state;
    char name[128];
    const int paused[] = {0, 2, 4};
    rlock *locks[SERVERS];
    rlock_multi *m;
    redlocker r;

    LT_TEST_NAME(name);
    get_locks(f, name, locks);
    assert_int_equal(rlock_redlock_new(locks, SERVERS, &m), RLOCK_OK);
    for (int i = 0; i < 3; i++)
        rt_redis_pause(&f->redis[paused[i]]);
    rl_start(f, &r, m, WAIT_MS, LEASE_MS);
    assert_true(r.rc == RLOCK_ETIMEDOUT || r.rc == RLOCK_ECONN);
    assert_true(r.elapsed_ms < WAIT_MS + MARGIN_MS);
    assert_int_equal(rt_cmd_int(&f->redis[1], "EXISTS %s", name), 0);
    assert_int_equal(rt_cmd_int(&f->redis[3], "EXISTS %s", name), 0);

    for (int i = 0; i < 3; i++)
        rt_redis_resume(&f->redis[paused[i]]);
    for (int i = 0; i < 3; i++) {
        int64_t t = wait_ours_gone(f, paused[i], name, r.tid, LATE_HOLD_MS);
        print_message("late hold on resumed server %d gone after %lld ms\n",
                      paused[i], (long long)t);
        assert_true(t >= 0);
    }
    rl_finish(f, &r);
    rlock_multi_free(m);
    free_locks(locks);
}

/* One server dies while the Redlock holds all five: the unlock gives back
 * the other four and succeeds. */
static void
test_redlock_unlock_succeeds_for_the_majority_after_a_kill(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[SERVERS];
    rlock_multi *m;
    redlocker r;

    LT_TEST_NAME(name);
    get_locks(f, name, locks);
    assert_int_equal(rlock_redlock_new(locks, SERVERS, &m), RLOCK_OK);
    rl_start(f, &r, m, WAIT_MS, LEASE_MS);
    assert_int_equal(r.rc, RLOCK_OK);
    for (int i = 0; i < SERVERS; i++)
        assert_true(has_our_field(f, i, name, r.tid));

    rt_redis_stop(&f->redis[2]);
    rl_finish(f, &r);
    assert_int_equal(r.unlock_rc, RLOCK_OK);
    for (int i = 0; i < SERVERS; i++)
        if (i != 2)
            assert_int_equal(rt_cmd_int(&f->redis[i], "EXISTS %s", name), 0);
    for (int i = 0; i < SERVERS; i++)
        assert_int_equal(rlock_hold_count(locks[i]), 0);
    rlock_multi_free(m);
    free_locks(locks);
}

/* Three servers die: what is left cannot be a majority, and the unlock
 * says so, after still releasing the two it can reach. */
static void
test_redlock_unlock_reports_an_error_when_a_majority_died(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock *locks[SERVERS];
    rlock_multi *m;
    redlocker r;

    LT_TEST_NAME(name);
    get_locks(f, name, locks);
    assert_int_equal(rlock_redlock_new(locks, SERVERS, &m), RLOCK_OK);
    rl_start(f, &r, m, WAIT_MS, LEASE_MS);
    assert_int_equal(r.rc, RLOCK_OK);
    rt_redis_stop(&f->redis[0]);
    rt_redis_stop(&f->redis[1]);
    rt_redis_stop(&f->redis[3]);
    rl_finish(f, &r);
    assert_true(r.unlock_rc == RLOCK_ECONN || r.unlock_rc == RLOCK_ETIMEDOUT);
    assert_int_equal(rt_cmd_int(&f->redis[2], "EXISTS %s", name), 0);
    assert_int_equal(rt_cmd_int(&f->redis[4], "EXISTS %s", name), 0);
    rlock_multi_free(m);
    free_locks(locks);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_redlock_with_two_paused_succeeds_within_the_wait),
        T(test_redlock_with_first_paused_succeeds_within_the_wait),
        T(test_redlock_late_watchdog_hold_on_resumed_server_is_given_back),
        T(test_redlock_with_majority_paused_fails_within_the_wait),
        T(test_redlock_unlock_succeeds_for_the_majority_after_a_kill),
        T(test_redlock_unlock_reports_an_error_when_a_majority_died),
    };
#undef T

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
