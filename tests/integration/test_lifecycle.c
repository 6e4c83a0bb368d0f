/*
 * test_lifecycle.c: the client's end of life and its threads.
 *
 * What must hold:
 *  - freeing a client with a libev loop attached leaves nothing of rlock's
 *    on that loop: ev_run() returns, and no wake-up fires into freed memory,
 *    also when the client is freed from one of its own completions;
 *  - handles left open when their client is freed are inert: every call on
 *    them says RLOCK_ECLOSED, and freeing them still frees them;
 *  - a client freed while threads exit holding its locks waits for their
 *    exit handlers instead of freeing what they walk;
 *  - in a forked child the hold queries answer RLOCK_EFORKED and never
 *    block on a mutex the fork copied locked;
 *  - once rlock_on_lost(l, NULL) or rlock_client_on_lost(c, NULL) returns,
 *    the old callback is not running and will not run.
 *
 * Run this program under ASan (build-asan) and TSan (build-tsan) too: a
 * freed client touched late is a crash or a report there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "lifecycle"

/* How long a loop may keep running before the test calls it stuck: far
 * beyond anything a loaded machine needs to run what is pending. */
#define LOOP_GUARD_S 5.0

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

static rlock_client *connect_default(lt_fixture *f)
{
    ft_timing t = {.retry_attempts = -1};

    return ft_connect(f->redis.url, t);
}

/* ------------------------------------------------------- user loop (7) */

/* A timer that ends ev_run() if the loop is still busy after LOOP_GUARD_S.
 * It does not keep the loop alive itself (ev_unref), so ev_run() returns
 * early exactly when no other watcher is active. */
typedef struct loop_guard {
    ev_timer timer;
    int fired;
} loop_guard;

static void on_guard(struct ev_loop *loop, ev_timer *w, int revents)
{
    loop_guard *g = w->data;
    (void)revents;
    g->fired = 1;
    ev_break(loop, EVBREAK_ALL);
}

/* Runs loop until it has nothing left to do, or the guard fires. Returns
 * 1 when ev_run() returned on its own. */
static int run_until_idle(struct ev_loop *loop)
{
    loop_guard g = {.fired = 0};

    ev_timer_init(&g.timer, on_guard, LOOP_GUARD_S, 0.);
    g.timer.data = &g;
    ev_timer_start(loop, &g.timer);
    ev_unref(loop);
    ev_run(loop, 0);
    ev_ref(loop);
    ev_timer_stop(loop, &g.timer);
    return !g.fired;
}

/* What an async completion saw. */
typedef struct completion {
    int calls;
    int status;
    pthread_t thread;
    rlock_client *free_client; /* freed from the callback when set */
} completion;

/* Records the completion, then frees the handle (and the client, when
 * asked): both are the callback's to free once it has run. */
static void on_done_free(rlock *l, uint64_t owner, int status, void *arg)
{
    completion *d = arg;
    (void)owner;
    d->calls++;
    d->status = status;
    d->thread = pthread_self();
    rlock_free(l);
    if (d->free_client != NULL)
        rlock_client_free(d->free_client);
}

/* Holds name through a second client, so that acquires on it wait. */
static rlock *hold_elsewhere(rlock_client *other, const char *name)
{
    rlock *l = lt_get_lock(other, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    return l;
}

static void release_elsewhere(rlock *l)
{
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_free_with_a_loop_attached_leaves_the_loop_nothing_to_run(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f), *other = connect_default(f);
    rlock *held = hold_elsewhere(other, name);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    completion d = {0};

    assert_non_null(loop);
    assert_int_equal(rlock_client_attach_loop(c, loop), RLOCK_OK);
    /* a waiting acquire: the free ends it with RLOCK_ECLOSED, which is
     * handed to the loop's wake-up on its way */
    rlock *l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock_async(l, rlock_owner_new(),
                                      RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG,
                                      on_done_free, &d),
                     RLOCK_OK);
    rlock_client_free(c);
    /* the free ran it here, on the loop's thread, as the loop is idle */
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, RLOCK_ECLOSED);
    assert_true(pthread_equal(d.thread, pthread_self()));

    /* nothing of the client is left on the loop: no wake-up runs into it,
     * and no watcher keeps ev_run() going */
    assert_true(run_until_idle(loop));
    assert_int_equal(d.calls, 1);
    ev_loop_destroy(loop);
    release_elsewhere(held);
    rlock_client_free(other);
}

static void test_free_from_a_completion_on_the_loop_lets_ev_run_return(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f), *other = connect_default(f);
    rlock *held = hold_elsewhere(other, name);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    completion d = {0};

    assert_non_null(loop);
    assert_int_equal(rlock_client_attach_loop(c, loop), RLOCK_OK);
    d.free_client = c; /* an event server shutting down from a callback */
    rlock *l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock_async(l, rlock_owner_new(), 100,
                                      RLOCK_LEASE_WATCHDOG, on_done_free, &d),
                     RLOCK_OK);
    assert_true(run_until_idle(loop));
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.status, RLOCK_ETIMEDOUT);
    assert_true(pthread_equal(d.thread, pthread_self()));
    ev_loop_destroy(loop);
    release_elsewhere(held);
    rlock_client_free(other);
}

/* ------------------------------------------------------ open handles (8) */

static atomic_int g_unexpected_done;

static void on_done_unexpected(rlock *l, uint64_t owner, int status,
                               void *arg)
{
    (void)l;
    (void)owner;
    (void)status;
    (void)arg;
    atomic_fetch_add(&g_unexpected_done, 1);
}

static void on_lost_ignored(const char *name, uint64_t owner, uint64_t hold,
                            int reason, void *arg)
{
    (void)name;
    (void)owner;
    (void)hold;
    (void)reason;
    (void)arg;
}

/* Every call on a handle whose client was freed says RLOCK_ECLOSED; the
 * handle still knows its kind and name. */
static void assert_inert(rlock *l, int kind, const char *name)
{
    int64_t token = 0;
    uint64_t owner = rlock_owner_new();

    assert_int_equal(rlock_kind(l), kind);
    assert_string_equal(rlock_name(l), name);
    assert_int_equal(rlock_lock(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_ECLOSED);
    assert_int_equal(rlock_trylock(l, 10, 1000), RLOCK_ECLOSED);
    assert_int_equal(rlock_unlock(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_force_unlock(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_is_locked(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_is_held_by_me(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_hold_count(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_remaining_ttl(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_on_lost(l, on_lost_ignored, NULL), RLOCK_ECLOSED);
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_ECLOSED);
    assert_int_equal(rlock_lock_async(l, owner, 0, RLOCK_LEASE_WATCHDOG,
                                      on_done_unexpected, NULL),
                     RLOCK_ECLOSED);
    assert_int_equal(rlock_unlock_async(l, owner, on_done_unexpected, NULL),
                     RLOCK_ECLOSED);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_ECLOSED);
    assert_int_equal(rlock_owner_hold_count(l, owner), RLOCK_ECLOSED);
    assert_int_equal(rlock_hold_id(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_owner_hold_id(l, owner), RLOCK_ECLOSED);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_ECLOSED);
    assert_int_equal(rlock_fenced_trylock(l, 0, 1000, &token), RLOCK_ECLOSED);
    assert_int_equal(rlock_fenced_token(l), RLOCK_ECLOSED);
    assert_int_equal(rlock_spin_set_backoff(l, 1, 128, 2), RLOCK_ECLOSED);
    assert_int_equal(token, 0);
}

static void test_handles_left_open_answer_eclosed_after_client_free(
    void **state)
{
    lt_fixture *f = *state;
    char base[128], names[6][160];
    LT_TEST_NAME(base);
    const char *suffix[6] = {"held", "idle", "fair", "rw", "fenced", "spin"};
    for (int i = 0; i < 6; i++)
        snprintf(names[i], sizeof(names[i]), "%s:%s", base, suffix[i]);
    rlock_client *c = connect_default(f);
    rlock *held = lt_get_lock(c, names[0]);
    rlock *idle = lt_get_lock(c, names[1]);
    rlock *fair = NULL, *fenced = NULL, *spin = NULL;
    rlock_rw *rw = NULL;
    rlock_multi *multi = NULL;
    int64_t token = 0;

    assert_int_equal(rlock_fair_get(c, names[2], &fair), RLOCK_OK);
    assert_int_equal(rlock_rw_get(c, names[3], &rw), RLOCK_OK);
    assert_int_equal(rlock_fenced_get(c, names[4], &fenced), RLOCK_OK);
    assert_int_equal(rlock_spin_get(c, names[5], &spin), RLOCK_OK);
    rlock *both[2] = {idle, spin};
    assert_int_equal(rlock_multi_new(both, 2, &multi), RLOCK_OK);
    /* some held (one reentrantly), some not */
    assert_int_equal(rlock_lock(held), RLOCK_OK);
    assert_int_equal(rlock_lock(held), RLOCK_OK);
    assert_int_equal(rlock_lock(fair), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_fenced_lock(fenced, &token), RLOCK_OK);

    rlock_client_free(c); /* an error path that forgot its handles */

    /* the free released what was held, as it always did */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[0]), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[2]), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[3]), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[4]), 0);
    assert_inert(held, RLOCK_KIND_LOCK, names[0]);
    assert_inert(idle, RLOCK_KIND_LOCK, names[1]);
    assert_inert(fair, RLOCK_KIND_FAIR, names[2]);
    assert_inert(rlock_rw_read(rw), RLOCK_KIND_READ, names[3]);
    assert_inert(rlock_rw_write(rw), RLOCK_KIND_WRITE, names[3]);
    assert_inert(fenced, RLOCK_KIND_FENCED, names[4]);
    assert_inert(spin, RLOCK_KIND_SPIN, names[5]);
    assert_int_equal(rlock_multi_lock(multi, NULL), RLOCK_ECLOSED);
    assert_int_equal(rlock_multi_trylock(multi, 0, 1000, NULL), RLOCK_ECLOSED);
    assert_int_equal(rlock_multi_unlock(multi), RLOCK_ECLOSED);
    rlock_multi *again = NULL;
    assert_int_equal(rlock_multi_new(both, 2, &again), RLOCK_ECLOSED);
    assert_null(again);
    assert_int_equal(atomic_load(&g_unexpected_done), 0);
    /* and they are still freed (ASan and valgrind see no leak) */
    rlock_multi_free(multi);
    rlock_free(held);
    rlock_free(idle);
    rlock_free(fair);
    rlock_rw_free(rw);
    rlock_free(fenced);
    rlock_free(spin);
}

static void test_multi_lock_over_a_freed_client_touches_no_lock(void **state)
{
    lt_fixture *f = *state;
    char a_name[160], b_name[160];
    snprintf(a_name, sizeof(a_name), "%s:%s:a", LT_SUITE, __func__);
    snprintf(b_name, sizeof(b_name), "%s:%s:b", LT_SUITE, __func__);
    rlock_client *live = connect_default(f), *gone = connect_default(f);
    rlock *a = lt_get_lock(live, a_name), *b = lt_get_lock(gone, b_name);
    rlock *both[2] = {a, b};
    rlock_multi *m = NULL;

    assert_int_equal(rlock_multi_new(both, 2, &m), RLOCK_OK);
    rlock_client_free(gone);
    /* the live client's lock is not taken for a round that cannot win */
    assert_int_equal(rlock_multi_trylock(m, 0, 1000, NULL), RLOCK_ECLOSED);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", a_name), 0);
    assert_int_equal(rlock_hold_count(a), 0);
    rlock_multi_free(m);
    rlock_free(a);
    rlock_free(b);
    rlock_client_free(live);
}

/* ---------------------------------------------------- exiting threads (9) */

#define EXIT_THREADS     16
#define EXIT_LOCKS_EACH  8
#define EXIT_ROUNDS      60

typedef struct exit_round {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int holding;  /* threads that took their locks */
    int failed;   /* lock calls that did not return 0 */
    int go;       /* the main thread is freeing: exit now */
    atomic_int exited;
} exit_round;

typedef struct exiter {
    exit_round *round;
    rlock *locks[EXIT_LOCKS_EACH];
    unsigned delay_us;
} exiter;

/* Takes its locks, says so, waits for the go, then exits holding them:
 * its exit runs the client's thread-exit handler. */
static void *exit_holding(void *p)
{
    exiter *x = p;
    exit_round *r = x->round;
    int failed = 0;

    for (int i = 0; i < EXIT_LOCKS_EACH; i++)
        if (rlock_trylock(x->locks[i], 0, RLOCK_LEASE_WATCHDOG) != RLOCK_OK)
            failed++;
    pthread_mutex_lock(&r->mu);
    r->failed += failed;
    r->holding++;
    pthread_cond_broadcast(&r->cv);
    while (!r->go)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (x->delay_us > 0)
        usleep(x->delay_us);
    atomic_fetch_add(&r->exited, 1);
    return NULL;
}

static void test_free_waits_for_threads_exiting_with_holds(void **state)
{
    lt_fixture *f = *state;
    unsigned seed = (unsigned)rt_now_ms();
    /* how long a free takes here, measured each round: the exits are
     * spread over twice that, so that some fall inside it */
    int64_t free_us = 3000;

    for (int round = 0; round < rt_scaled(EXIT_ROUNDS, 6); round++) {
        rlock_client *c = connect_default(f);
        exit_round r = {.holding = 0};
        exiter xs[EXIT_THREADS];
        pthread_attr_t attr;

        pthread_mutex_init(&r.mu, NULL);
        pthread_cond_init(&r.cv, NULL);
        atomic_init(&r.exited, 0);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (int t = 0; t < EXIT_THREADS; t++) {
            xs[t].round = &r;
            xs[t].delay_us = (unsigned)(rand_r(&seed) % (2 * free_us + 1));
            for (int i = 0; i < EXIT_LOCKS_EACH; i++) {
                char name[160];
                snprintf(name, sizeof(name), "%s:%s:%d:%d:%d", LT_SUITE,
                         __func__, round, t, i);
                xs[t].locks[i] = lt_get_lock(c, name);
            }
            pthread_t th;
            assert_int_equal(pthread_create(&th, &attr, exit_holding, &xs[t]),
                             0);
        }
        pthread_attr_destroy(&attr);
        pthread_mutex_lock(&r.mu);
        while (r.holding < EXIT_THREADS)
            pthread_cond_wait(&r.cv, &r.mu);
        pthread_mutex_unlock(&r.mu);
        assert_int_equal(r.failed, 0);
        /* a hold outlives its handle: the handles go first */
        for (int t = 0; t < EXIT_THREADS; t++)
            for (int i = 0; i < EXIT_LOCKS_EACH; i++)
                rlock_free(xs[t].locks[i]);
        pthread_mutex_lock(&r.mu);
        r.go = 1;
        pthread_cond_broadcast(&r.cv);
        pthread_mutex_unlock(&r.mu);
        int64_t t0 = rt_now_ms();
        rlock_client_free(c); /* while the threads exit */
        free_us = (rt_now_ms() - t0) * 1000 + 500;

        /* the detached threads use r until they are gone */
        for (int64_t deadline = rt_now_ms() + 10000;
             atomic_load(&r.exited) < EXIT_THREADS;) {
            assert_true(rt_now_ms() < deadline);
            rt_sleep_ms(5);
        }
        rt_sleep_ms(20); /* past their last touch of r */
        pthread_mutex_destroy(&r.mu);
        pthread_cond_destroy(&r.cv);
    }
}

/* -------------------------------------------------------------- fork (10) */

#define FORKS          400
#define QUERIERS       2
/* a child needs microseconds; this is for a loaded machine */
#define CHILD_LIMIT_MS 3000

typedef struct querier {
    rlock *l;
    atomic_int stop;
    long calls;
} querier;

/* Asks for its hold count as fast as it can: the entry's mutex is locked
 * a good share of the time, so forks often copy it locked. */
static void *query_in_a_loop(void *p)
{
    querier *q = p;

    while (!atomic_load(&q->stop)) {
        rlock_hold_count(q->l);
        rlock_is_held_by_me(q->l);
        q->calls++;
    }
    return NULL;
}

/* The child's part: both queries on the inherited handle. */
static void child_queries(int in_fd, int out_fd, void *arg)
{
    rlock *l = arg;
    (void)in_fd;
    (void)out_fd;
    int a = rlock_hold_count(l);
    int b = rlock_is_held_by_me(l);
    _exit(a == RLOCK_EFORKED && b == RLOCK_EFORKED ? 0 : 1);
}

/* Waits up to ms for the child; kills it if it is still running. Returns
 * its exit status, or -1 when it had to be killed. */
static int reap_within(pid_t pid, int64_t ms)
{
    int64_t deadline = rt_now_ms() + ms;
    int status = 0;

    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (rt_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rt_sleep_ms(1);
    }
}

static void test_forked_child_queries_answer_eforked_without_hanging(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name);
    querier q[QUERIERS];
    pthread_t th[QUERIERS];
    int forks = 0, hung = 0, wrong = 0;
    /* Under valgrind (RLOCK_TEST_LIGHT) threads run one at a time and a
     * fork costs seconds: one fork without queriers still checks the
     * child's path for memory errors; the race is the other passes'. */
    int queriers = rt_scaled(QUERIERS, 0);

    for (int i = 0; i < queriers; i++) {
        q[i] = (querier){.l = l, .calls = 0};
        atomic_init(&q[i].stop, 0);
        assert_int_equal(pthread_create(&th[i], NULL, query_in_a_loop, &q[i]),
                         0);
    }
    rt_sleep_ms(50);
    /* one hung child is enough to fail: stop there */
    for (; forks < rt_scaled(FORKS, 1) && hung == 0; forks++) {
        ft_child ch = {0};
        assert_int_equal(ft_child_start(&ch, child_queries, l), 0);
        close(ch.to_child);
        close(ch.from_child);
        int st = reap_within(ch.pid, CHILD_LIMIT_MS);
        if (st < 0)
            hung++;
        else if (st != 0)
            wrong++;
    }
    for (int i = 0; i < queriers; i++) {
        atomic_store(&q[i].stop, 1);
        pthread_join(th[i], NULL);
    }
    print_message("%d forks: %d children hung, %d answered wrongly\n", forks,
                  hung, wrong);
    assert_int_equal(hung, 0);
    assert_int_equal(wrong, 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* ----------------------------------------------- lost-lock barrier (11) */

#define SLOW_CB_MS 400

/* The argument of a lost callback: what it saw, and whether it was still
 * in use when the test thought it could be freed. */
typedef struct cb_arg {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;
    int finished;
    int after_release; /* calls that began after the test let go of it */
    int released;      /* the test considers the argument freed */
    int slow;          /* sleep SLOW_CB_MS inside the call */
    int gated;         /* wait inside the call until the gate opens */
    int gate_open;
    rlock *clear_lock;          /* the callback clears this lock's callback */
    rlock_client *clear_client; /* ... or the client-wide one */
    int clear_rc;
} cb_arg;

static void cb_arg_init(cb_arg *a, int slow)
{
    memset(a, 0, sizeof(*a));
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->slow = slow;
    a->clear_rc = 1;
}

static void cb_arg_destroy(cb_arg *a)
{
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
}

static void on_lost_tracked(const char *name, uint64_t owner, uint64_t hold,
                            int reason, void *arg)
{
    cb_arg *a = arg;
    (void)name;
    (void)owner;
    (void)hold;
    (void)reason;
    pthread_mutex_lock(&a->mu);
    a->started++;
    if (a->released)
        a->after_release++;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->slow)
        rt_sleep_ms(SLOW_CB_MS);
    pthread_mutex_lock(&a->mu);
    while (a->gated && !a->gate_open)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    int rc = 1;
    if (a->clear_lock != NULL)
        rc = rlock_on_lost(a->clear_lock, NULL, NULL);
    if (a->clear_client != NULL)
        rc = rlock_client_on_lost(a->clear_client, NULL, NULL);
    pthread_mutex_lock(&a->mu);
    a->clear_rc = rc;
    a->finished++;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Waits up to 10 s until the callback has started n times. */
static void await_started(cb_arg *a, int n)
{
    int64_t deadline = rt_now_ms() + 10000;

    pthread_mutex_lock(&a->mu);
    while (a->started < n && rt_now_ms() < deadline) {
        pthread_mutex_unlock(&a->mu);
        rt_sleep_ms(2);
        pthread_mutex_lock(&a->mu);
    }
    int started = a->started;
    pthread_mutex_unlock(&a->mu);
    assert_true(started >= n);
}

/* Waits up to 10 s until the callback has finished n times. */
static void await_finished(cb_arg *a, int n)
{
    int64_t deadline = rt_now_ms() + 10000;

    pthread_mutex_lock(&a->mu);
    while (a->finished < n && rt_now_ms() < deadline) {
        pthread_mutex_unlock(&a->mu);
        rt_sleep_ms(2);
        pthread_mutex_lock(&a->mu);
    }
    int finished = a->finished;
    pthread_mutex_unlock(&a->mu);
    assert_true(finished >= n);
}

/* The test is done with the argument: from now on no call may begin, and
 * none may still be running. Returns how many were running. */
static int release_arg(cb_arg *a)
{
    pthread_mutex_lock(&a->mu);
    a->released = 1;
    int running = a->started - a->finished;
    pthread_mutex_unlock(&a->mu);
    return running;
}

/* Takes l on the calling thread and makes the hold lost at once
 * (rlock_force_unlock voids local holds: a GONE event is queued). */
static void lose_now(rlock *l)
{
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
}

static void test_clearing_a_lock_callback_waits_for_the_running_call(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name);
    cb_arg a;

    cb_arg_init(&a, 1);
    assert_int_equal(rlock_on_lost(l, on_lost_tracked, &a), RLOCK_OK);
    lose_now(l);
    await_started(&a, 1);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    int64_t waited = rt_now_ms() - t0;
    assert_int_equal(release_arg(&a), 0);
    print_message("rlock_on_lost(NULL) waited %lld ms for the running call\n",
                  (long long)waited);
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(a.after_release, 0);
    cb_arg_destroy(&a);
}

static void test_clearing_a_lock_callback_drops_its_queued_calls(void **state)
{
    lt_fixture *f = *state;
    char first[160], second[160];
    snprintf(first, sizeof(first), "%s:%s:first", LT_SUITE, __func__);
    snprintf(second, sizeof(second), "%s:%s:second", LT_SUITE, __func__);
    rlock_client *c = connect_default(f);
    rlock *busy = lt_get_lock(c, first), *l = lt_get_lock(c, second);
    cb_arg slow, queued;

    cb_arg_init(&slow, 1);
    cb_arg_init(&queued, 0);
    assert_int_equal(rlock_on_lost(busy, on_lost_tracked, &slow), RLOCK_OK);
    assert_int_equal(rlock_on_lost(l, on_lost_tracked, &queued), RLOCK_OK);
    lose_now(busy);
    await_started(&slow, 1); /* the notifier is busy with the first loss */
    lose_now(l);             /* so this one waits in the queue */
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    assert_int_equal(release_arg(&queued), 0);
    await_finished(&slow, 1);
    /* a later loss of the other lock goes through: the queue moved on */
    cb_arg later;
    cb_arg_init(&later, 0);
    assert_int_equal(rlock_on_lost(busy, on_lost_tracked, &later), RLOCK_OK);
    lose_now(busy);
    await_finished(&later, 1);
    assert_int_equal(queued.started, 0);
    cb_arg_destroy(&later);
    rlock_free(busy);
    rlock_free(l);
    rlock_client_free(c);
    cb_arg_destroy(&slow);
    cb_arg_destroy(&queued);
}

static void test_clearing_the_client_callback_waits_for_the_running_call(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name);
    cb_arg a;

    cb_arg_init(&a, 1);
    assert_int_equal(rlock_client_on_lost(c, on_lost_tracked, &a), RLOCK_OK);
    lose_now(l);
    await_started(&a, 1);
    assert_int_equal(rlock_client_on_lost(c, NULL, NULL), RLOCK_OK);
    assert_int_equal(release_arg(&a), 0);
    lose_now(l); /* cleared: nobody is called */
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(a.after_release, 0);
    cb_arg_destroy(&a);
}

static void test_a_callback_may_clear_itself(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name);
    cb_arg mine, client_wide;

    cb_arg_init(&mine, 0);
    cb_arg_init(&client_wide, 0);
    mine.clear_lock = l;
    client_wide.clear_client = c;
    assert_int_equal(rlock_on_lost(l, on_lost_tracked, &mine), RLOCK_OK);
    assert_int_equal(rlock_client_on_lost(c, on_lost_tracked, &client_wide),
                     RLOCK_OK);
    lose_now(l);
    /* neither waits for itself on the notifier thread */
    await_finished(&mine, 1);
    await_finished(&client_wide, 1);
    assert_int_equal(mine.clear_rc, RLOCK_OK);
    assert_int_equal(client_wide.clear_rc, RLOCK_OK);
    lose_now(l); /* both cleared themselves */
    rlock_free(l);
    rlock_client_free(c);
    assert_int_equal(mine.started, 1);
    assert_int_equal(client_wide.started, 1);
    cb_arg_destroy(&mine);
    cb_arg_destroy(&client_wide);
}

/* An argument runs only the tests whose names match it (a cmocka filter
 * pattern), e.g. to repeat one under a sanitizer. */
/* An async completion on the I/O thread (no loop attached) that clears
 * a lock's lost callback, and what that returned. */
typedef struct clear_from_io {
    rlock *clear;
    atomic_int rc;
    atomic_int done;
} clear_from_io;

static void on_done_clear(rlock *l, uint64_t owner, int status, void *arg)
{
    clear_from_io *x = arg;
    (void)l;
    (void)owner;
    (void)status;
    atomic_store(&x->rc, rlock_on_lost(x->clear, NULL, NULL));
    atomic_store(&x->done, 1);
}

static void test_clearing_on_the_io_thread_while_the_old_call_runs_is_edeadlk(
    void **state)
{
    lt_fixture *f = *state;
    char name[160], other_name[160];
    snprintf(name, sizeof(name), "%s:%s", LT_SUITE, __func__);
    snprintf(other_name, sizeof(other_name), "%s:%s:other", LT_SUITE,
             __func__);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name), *other = lt_get_lock(c, other_name);
    cb_arg a;
    clear_from_io x = {.clear = l};

    cb_arg_init(&a, 0);
    a.gated = 1; /* the old callback runs until the test opens the gate */
    atomic_init(&x.rc, 1);
    atomic_init(&x.done, 0);
    assert_int_equal(rlock_on_lost(l, on_lost_tracked, &a), RLOCK_OK);
    lose_now(l);
    await_started(&a, 1);
    /* waiting there could deadlock: a callback's blocking call may need
     * the I/O thread; so it is refused, and nothing changes */
    assert_int_equal(rlock_lock_async(other, rlock_owner_new(), 0,
                                      RLOCK_LEASE_WATCHDOG, on_done_clear, &x),
                     RLOCK_OK);
    for (int64_t deadline = rt_now_ms() + 10000; !atomic_load(&x.done);) {
        assert_true(rt_now_ms() < deadline);
        rt_sleep_ms(2);
    }
    assert_int_equal(atomic_load(&x.rc), RLOCK_EDEADLK);
    pthread_mutex_lock(&a.mu);
    a.gate_open = 1;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    await_finished(&a, 1);
    /* the callback was kept: the next loss still calls it */
    lose_now(l);
    await_finished(&a, 2);
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    assert_int_equal(release_arg(&a), 0);
    rlock_free(l);
    rlock_free(other);
    rlock_client_free(c);
    cb_arg_destroy(&a);
}

int main(int argc, char **argv)
{
    if (rt_require_redis() != 0)
        return 77;
    if (argc == 2)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_free_with_a_loop_attached_leaves_the_loop_nothing_to_run),
        cmocka_unit_test(
            test_free_from_a_completion_on_the_loop_lets_ev_run_return),
        cmocka_unit_test(
            test_handles_left_open_answer_eclosed_after_client_free),
        cmocka_unit_test(test_multi_lock_over_a_freed_client_touches_no_lock),
        cmocka_unit_test(test_free_waits_for_threads_exiting_with_holds),
        cmocka_unit_test(
            test_forked_child_queries_answer_eforked_without_hanging),
        cmocka_unit_test(
            test_clearing_a_lock_callback_waits_for_the_running_call),
        cmocka_unit_test(test_clearing_a_lock_callback_drops_its_queued_calls),
        cmocka_unit_test(
            test_clearing_the_client_callback_waits_for_the_running_call),
        cmocka_unit_test(test_a_callback_may_clear_itself),
        cmocka_unit_test(
            test_clearing_on_the_io_thread_while_the_old_call_runs_is_edeadlk),
    };
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
