/*
 * test_async.c: the asynchronous API (rlock_lock_async, rlock_unlock_async,
 * rlock_cancel, rlock_client_attach_loop): explicit owners, reentrancy per
 * owner, wake-ups through the unlock channel, budgets and cancellation that
 * leave nothing behind, and one libev loop serving many lock requests
 * without a thread per waiter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "async"

/* ------------------------------------------------------ one completion */

typedef struct completion {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
    uint64_t owner;
    rlock *lock;
} completion;

static void completion_init(completion *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->status = 1; /* no status yet */
}

static void completion_destroy(completion *c)
{
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
}

static void on_done(rlock *l, uint64_t owner, int status, void *arg)
{
    completion *c = arg;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    c->status = status;
    c->owner = owner;
    c->lock = l;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Waits up to timeout_ms for the completion; returns its status, or 1 if
 * it never came. */
static int await(completion *c, int64_t timeout_ms)
{
    int64_t until = rt_now_ms() + timeout_ms;
    pthread_mutex_lock(&c->mu);
    while (c->calls == 0 && rt_now_ms() < until) {
        pthread_mutex_unlock(&c->mu);
        rt_sleep_ms(5);
        pthread_mutex_lock(&c->mu);
    }
    int status = c->calls > 0 ? c->status : 1;
    pthread_mutex_unlock(&c->mu);
    return status;
}

static int calls_of(completion *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->calls;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static int lock_sync(rlock *l, uint64_t owner, int64_t wait_ms)
{
    completion c;
    completion_init(&c);
    int rc = rlock_lock_async(l, owner, wait_ms, RLOCK_LEASE_WATCHDOG,
                              on_done, &c);
    if (rc == 0)
        rc = await(&c, wait_ms < 0 ? 10000 : wait_ms + 5000);
    completion_destroy(&c);
    return rc;
}

static int unlock_sync(rlock *l, uint64_t owner)
{
    completion c;
    completion_init(&c);
    int rc = rlock_unlock_async(l, owner, on_done, &c);
    if (rc == 0)
        rc = await(&c, 5000);
    completion_destroy(&c);
    return rc;
}

static void owner_field(char *buf, size_t n, rlock_client *c, uint64_t owner)
{
    snprintf(buf, n, "%s:%llu", rlock_client_id(c), (unsigned long long)owner);
}

/* Subscribers of the lock channel of name. */
static long long numsub(rt_redis *r, const char *name)
{
    char channel[256];
    lt_channel_of(channel, sizeof(channel), name);
    return rt_numsub(r, channel);
}

/* Waits until the lock channel has n subscribers; returns the last count. */
static long long await_numsub(rt_redis *r, const char *name, long long n)
{
    char channel[256];
    lt_channel_of(channel, sizeof(channel), name);
    return rt_wait_numsub(r, channel, n, 3000);
}

/* ---------------------------------------------------------------- tests */

static void test_owner_ids_are_fresh_and_unlike_thread_ids(void **state)
{
    (void)state;
    uint64_t a = rlock_owner_new(), b = rlock_owner_new();
    assert_true(a != 0 && b != 0 && a != b);
    assert_true(a != rlock_thread_id() && b != rlock_thread_id());
}

static void test_async_lock_writes_owner_field(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock_async(l, owner, 0, RLOCK_LEASE_WATCHDOG,
                                      on_done, &c),
                     RLOCK_OK);
    assert_int_equal(await(&c, 5000), RLOCK_OK);
    assert_int_equal(c.owner, owner);
    assert_ptr_equal(c.lock, l);
    owner_field(field, sizeof(field), f->client, owner);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_owner_hold_count(l, owner), 1);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_owner_hold_count(l, owner), 0);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_async_lock_is_reentrant_per_owner(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();

    assert_int_equal(lock_sync(l, owner, 0), RLOCK_OK);
    assert_int_equal(lock_sync(l, owner, 0), RLOCK_OK);
    owner_field(field, sizeof(field), f->client, owner);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_another_owner_on_the_same_thread_is_excluded(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t a = rlock_owner_new(), b = rlock_owner_new();

    assert_int_equal(lock_sync(l, a, 0), RLOCK_OK);
    assert_int_equal(lock_sync(l, b, 0), RLOCK_ETIMEDOUT);
    assert_int_equal(lock_sync(l, b, 200), RLOCK_ETIMEDOUT);
    /* nor may b, or the calling thread, release a's hold */
    assert_int_equal(unlock_sync(l, b), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(unlock_sync(l, a), RLOCK_OK);
    rlock_free(l);
}

static void test_async_waiter_is_woken_by_a_blocking_unlock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock(l), RLOCK_OK); /* lease 30 s */
    assert_int_equal(rlock_lock_async(l, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, on_done, &c),
                     RLOCK_OK);
    assert_int_equal(await_numsub(&f->redis, name, 1), 1);
    rt_sleep_ms(100);
    assert_int_equal(calls_of(&c), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* woken by the message, not by the 30 s TTL nor the 2 s re-check */
    assert_int_equal(await(&c, 5000), RLOCK_OK);
    assert_true(rt_now_ms() - t0 < 1500);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(await_numsub(&f->redis, name, 0), 0);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_async_wait_budget_leaves_nothing_behind(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    int64_t t0 = rt_now_ms();
    assert_int_equal(lock_sync(l, owner, 300), RLOCK_ETIMEDOUT);
    int64_t took = rt_now_ms() - t0;
    assert_true(took >= 250 && took < 3000);
    assert_int_equal(rlock_owner_hold_count(l, owner), 0);
    assert_int_equal(await_numsub(&f->redis, name, 0), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_cancel_ends_a_pending_acquire(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, owner, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, on_done, &c),
                     RLOCK_OK);
    assert_int_equal(await_numsub(&f->redis, name, 1), 1);
    assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
    assert_int_equal(await(&c, 5000), RLOCK_ECANCELED);
    assert_int_equal(await_numsub(&f->redis, name, 0), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* the cancelled owner took nothing afterwards */
    rt_sleep_ms(100);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(calls_of(&c), 1);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_cancel_right_after_start_holds_nothing(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    /* the attempt may be in flight, or done, when the cancel lands: either
     * the callback says cancelled and nothing is held, or it says 0 and
     * the owner holds it */
    for (int i = 0; i < 50; i++) {
        uint64_t owner = rlock_owner_new();
        completion c;
        completion_init(&c);
        assert_int_equal(rlock_lock_async(l, owner, 1000,
                                          RLOCK_LEASE_WATCHDOG, on_done, &c),
                         RLOCK_OK);
        assert_int_equal(rlock_cancel(l, owner), RLOCK_OK);
        int status = await(&c, 5000);
        if (status == RLOCK_OK) {
            assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
        } else {
            /* a hold the attempt took is given back before the
             * callback says so */
            assert_int_equal(status, RLOCK_ECANCELED);
        }
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
        completion_destroy(&c);
    }
    rlock_free(l);
}

static void test_unlock_of_owner_without_hold_is_enotowner(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);

    assert_int_equal(unlock_sync(l, rlock_owner_new()), RLOCK_ENOTOWNER);
    rlock_free(l);
}

static void test_bad_arguments_are_einval(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock_async(NULL, 1, 0, -1, on_done, &c),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_lock_async(l, 0, 0, -1, on_done, &c),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_lock_async(l, 1, 0, -1, NULL, &c), RLOCK_EINVAL);
    assert_int_equal(rlock_lock_async(l, 1, -2, -1, on_done, &c),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_lock_async(l, 1, 0, 0, on_done, &c),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_unlock_async(l, 1, NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_cancel(NULL, 1), RLOCK_EINVAL);
    assert_int_equal(rlock_client_attach_loop(NULL, NULL), RLOCK_EINVAL);
    assert_int_equal(calls_of(&c), 0);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_async_and_blocking_owners_exclude_each_other(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();

    assert_int_equal(lock_sync(l, owner, 0), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(lock_sync(l, owner, 0), RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------------- one loop, many requests */

#define REQUESTS 1000
#define NAMES    10

typedef struct server {
    struct ev_loop *loop;
    rlock_client *client;
    rt_redis *redis;
    rlock *locks[NAMES];
    int inside[NAMES];  /* requests inside each lock right now */
    int overlaps;       /* times two requests were inside one lock */
    int finished;
    int failed;
    pthread_t loop_thread;
    int wrong_thread;   /* completions that ran off the loop's thread */
    ev_timer work[REQUESTS];
    struct request *reqs;
} server;

typedef struct request {
    server *srv;
    int index;
    int name;
    uint64_t owner;
} request;

static void on_unlocked(rlock *l, uint64_t owner, int status, void *arg)
{
    request *rq = arg;
    server *srv = rq->srv;
    (void)l;
    (void)owner;
    if (!pthread_equal(pthread_self(), srv->loop_thread))
        srv->wrong_thread++;
    if (status != RLOCK_OK)
        srv->failed++;
    if (++srv->finished == REQUESTS)
        rlock_client_attach_loop(srv->client, NULL); /* lets ev_run end */
}

static void on_work_done(struct ev_loop *loop, ev_timer *w, int revents)
{
    request *rq = w->data;
    server *srv = rq->srv;
    (void)loop;
    (void)revents;
    srv->inside[rq->name]--;
    if (rlock_unlock_async(srv->locks[rq->name], rq->owner, on_unlocked,
                           rq) != RLOCK_OK) {
        srv->failed++;
        srv->finished++;
    }
}

static void on_locked(rlock *l, uint64_t owner, int status, void *arg)
{
    request *rq = arg;
    server *srv = rq->srv;
    (void)l;
    (void)owner;
    if (!pthread_equal(pthread_self(), srv->loop_thread))
        srv->wrong_thread++;
    if (status != RLOCK_OK) {
        srv->failed++;
        if (++srv->finished == REQUESTS)
            rlock_client_attach_loop(srv->client, NULL);
        return;
    }
    if (srv->inside[rq->name]++ > 0)
        srv->overlaps++;
    /* "work": a short timer on the same loop, no thread blocked */
    ev_timer *t = &srv->work[rq->index];
    ev_timer_init(t, on_work_done, 0.0005, 0.);
    t->data = rq;
    ev_timer_start(srv->loop, t);
}

static int count_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int max_threads;

static void on_sample(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    int n = count_threads();
    if (n > max_threads)
        max_threads = n;
}

static void test_one_loop_serves_many_lock_requests(void **state)
{
    lt_fixture *f = *state;
    server *srv = calloc(1, sizeof(*srv));
    request *reqs = calloc(REQUESTS, sizeof(*reqs));
    char name[128];
    assert_non_null(srv);
    assert_non_null(reqs);

    srv->loop = ev_loop_new(EVFLAG_AUTO);
    srv->client = f->client;
    srv->redis = &f->redis;
    srv->loop_thread = pthread_self();
    for (int i = 0; i < NAMES; i++) {
        snprintf(name, sizeof(name), LT_SUITE ":server:%d", i);
        srv->locks[i] = lt_get_lock(f->client, name);
    }
    int threads_before = count_threads();
    max_threads = threads_before;
    assert_int_equal(rlock_client_attach_loop(f->client, srv->loop),
                     RLOCK_OK);
    for (int i = 0; i < REQUESTS; i++) {
        reqs[i] = (request){srv, i, i % NAMES, rlock_owner_new()};
        assert_int_equal(rlock_lock_async(srv->locks[reqs[i].name],
                                          reqs[i].owner, 60000,
                                          RLOCK_LEASE_WATCHDOG, on_locked,
                                          &reqs[i]),
                         RLOCK_OK);
    }
    ev_timer sample;
    ev_timer_init(&sample, on_sample, 0.01, 0.05);
    ev_timer_start(srv->loop, &sample);
    ev_unref(srv->loop); /* the sampler does not keep the loop alive */
    int64_t t0 = rt_now_ms();
    ev_run(srv->loop, 0);
    int64_t took = rt_now_ms() - t0;
    ev_ref(srv->loop);
    ev_timer_stop(srv->loop, &sample);

    print_message("1000 requests on 10 locks: %lld ms, threads %d -> max %d\n",
                  (long long)took, threads_before, max_threads);
    assert_int_equal(srv->finished, REQUESTS);
    assert_int_equal(srv->failed, 0);
    assert_int_equal(srv->overlaps, 0);
    assert_int_equal(srv->wrong_thread, 0);
    /* no thread per waiter: the client's threads were there before */
    assert_int_equal(max_threads, threads_before);
    for (int i = 0; i < NAMES; i++) {
        const char *n = rlock_name(srv->locks[i]);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", n), 0);
        assert_int_equal(await_numsub(&f->redis, n, 0), 0);
        rlock_free(srv->locks[i]);
    }
    ev_loop_destroy(srv->loop);
    free(reqs);
    free(srv);
}


/* ------------------------------------------------------ other lock kinds */

/* Waits until the list key has n entries; returns the last length. */
static long long await_llen(rt_redis *r, const char *key, long long n)
{
    int64_t until = rt_now_ms() + 3000;
    long long seen;
    while ((seen = rt_cmd_int(r, "LLEN %s", key)) != n && rt_now_ms() < until)
        rt_sleep_ms(5);
    return seen;
}

typedef struct fair_order {
    pthread_mutex_t mu;
    uint64_t owners[8];
    int n;
} fair_order;

static void on_fair_locked(rlock *l, uint64_t owner, int status, void *arg)
{
    fair_order *o = arg;
    (void)l;
    pthread_mutex_lock(&o->mu);
    if (status == RLOCK_OK && o->n < 8)
        o->owners[o->n++] = owner;
    pthread_mutex_unlock(&o->mu);
}

static int fair_taken(fair_order *o)
{
    pthread_mutex_lock(&o->mu);
    int n = o->n;
    pthread_mutex_unlock(&o->mu);
    return n;
}

static void test_async_fair_owners_get_the_lock_in_queue_order(void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[192];
    LT_TEST_NAME(name);
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    rlock *l = NULL;
    assert_int_equal(rlock_fair_get(f->client, name, &l), RLOCK_OK);
    fair_order order = {.n = 0};
    pthread_mutex_init(&order.mu, NULL);
    uint64_t owners[4];

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    for (int i = 0; i < 4; i++) {
        owners[i] = rlock_owner_new();
        assert_int_equal(rlock_lock_async(l, owners[i], RLOCK_WAIT_FOREVER,
                                          RLOCK_LEASE_WATCHDOG, on_fair_locked,
                                          &order),
                         RLOCK_OK);
        assert_int_equal(await_llen(&f->redis, queue, i + 1), i + 1);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    for (int i = 0; i < 4; i++) {
        int64_t until = rt_now_ms() + 5000;
        while (fair_taken(&order) <= i && rt_now_ms() < until)
            rt_sleep_ms(2);
        assert_int_equal(fair_taken(&order), i + 1);
        /* the turn of the next one comes only with this unlock */
        assert_true(order.owners[i] == owners[i]);
        assert_int_equal(unlock_sync(l, owners[i]), RLOCK_OK);
    }
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    assert_int_equal(
        rt_cmd_int(&f->redis, "EXISTS redisson_lock_timeout:{%s}", name), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    pthread_mutex_destroy(&order.mu);
    rlock_free(l);
}

static void test_async_fair_budget_or_cancel_leaves_the_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128], queue[192];
    LT_TEST_NAME(name);
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    rlock *l = NULL;
    assert_int_equal(rlock_fair_get(f->client, name, &l), RLOCK_OK);
    uint64_t timed = rlock_owner_new(), canceled = rlock_owner_new();
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(lock_sync(l, timed, 300), RLOCK_ETIMEDOUT);
    assert_int_equal(await_llen(&f->redis, queue, 0), 0);
    assert_int_equal(rlock_lock_async(l, canceled, RLOCK_WAIT_FOREVER,
                                      RLOCK_LEASE_WATCHDOG, on_done, &c),
                     RLOCK_OK);
    assert_int_equal(await_llen(&f->redis, queue, 1), 1);
    assert_int_equal(rlock_cancel(l, canceled), RLOCK_OK);
    assert_int_equal(await(&c, 5000), RLOCK_ECANCELED);
    assert_int_equal(await_llen(&f->redis, queue, 0), 0);
    assert_int_equal(
        rt_cmd_int(&f->redis, "ZCARD redisson_lock_timeout:{%s}", name), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_async_spin_waiter_backs_off_without_a_channel(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = NULL;
    assert_int_equal(rlock_spin_get(f->client, name, &l), RLOCK_OK);
    assert_int_equal(rlock_spin_set_backoff(l, 20, 20, 1), RLOCK_OK);
    uint64_t owner = rlock_owner_new();
    completion c;
    completion_init(&c);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock_async(l, owner, 10000, RLOCK_LEASE_WATCHDOG,
                                      on_done, &c),
                     RLOCK_OK);
    rt_sleep_ms(200);
    assert_int_equal(calls_of(&c), 0);
    assert_int_equal(numsub(&f->redis, name), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(await(&c, 5000), RLOCK_OK);
    /* within a back-off step (20 ms) and a round trip, not a re-check */
    assert_true(rt_now_ms() - t0 < 1000);
    assert_int_equal(rlock_owner_hold_count(l, owner), 1);
    assert_int_equal(unlock_sync(l, owner), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    completion_destroy(&c);
    rlock_free(l);
}

static void test_async_read_owners_share_and_exclude_a_writer(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_rw *rw = NULL;
    assert_int_equal(rlock_rw_get(f->client, name, &rw), RLOCK_OK);
    rlock *rd = rlock_rw_read(rw), *wr = rlock_rw_write(rw);
    uint64_t r1 = rlock_owner_new(), r2 = rlock_owner_new();
    uint64_t w = rlock_owner_new();

    assert_int_equal(lock_sync(rd, r1, 0), RLOCK_OK);
    assert_int_equal(lock_sync(rd, r2, 0), RLOCK_OK);
    assert_int_equal(lock_sync(wr, w, 0), RLOCK_ETIMEDOUT);
    assert_int_equal(unlock_sync(rd, r1), RLOCK_OK);
    assert_int_equal(unlock_sync(rd, r2), RLOCK_OK);
    assert_int_equal(lock_sync(wr, w, 1000), RLOCK_OK);
    char field[128];
    owner_field(field, sizeof(field), f->client, w);
    assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s:write", name, field),
                     1);
    assert_int_equal(unlock_sync(wr, w), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_ids_are_fresh_and_unlike_thread_ids),
        cmocka_unit_test(test_async_lock_writes_owner_field),
        cmocka_unit_test(test_async_lock_is_reentrant_per_owner),
        cmocka_unit_test(test_another_owner_on_the_same_thread_is_excluded),
        cmocka_unit_test(test_async_waiter_is_woken_by_a_blocking_unlock),
        cmocka_unit_test(test_async_wait_budget_leaves_nothing_behind),
        cmocka_unit_test(test_cancel_ends_a_pending_acquire),
        cmocka_unit_test(test_cancel_right_after_start_holds_nothing),
        cmocka_unit_test(test_unlock_of_owner_without_hold_is_enotowner),
        cmocka_unit_test(test_bad_arguments_are_einval),
        cmocka_unit_test(test_async_and_blocking_owners_exclude_each_other),
        cmocka_unit_test(test_one_loop_serves_many_lock_requests),
        cmocka_unit_test(test_async_fair_owners_get_the_lock_in_queue_order),
        cmocka_unit_test(test_async_fair_budget_or_cancel_leaves_the_queue),
        cmocka_unit_test(test_async_spin_waiter_backs_off_without_a_channel),
        cmocka_unit_test(test_async_read_owners_share_and_exclude_a_writer),
    };
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
