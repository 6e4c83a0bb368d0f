/*
 * compat_testing.c: helpers the compat tests share (see the header).
 *
 * Built into rlock_compat_support, which does not link the library: each
 * test links rlock_objects, which resolves the rlock_* calls made here.
 */
#include "compat_testing.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ct_group_setup(void **state)
{
    ct_fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int ct_group_teardown(void **state)
{
    ct_fixture *f = *state;

    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

int ct_setup(void **state)
{
    ct_fixture *f = *state;

    f->a = ct_connect(&f->redis);
    f->b = ct_connect(&f->redis);
    return 0;
}

int ct_teardown(void **state)
{
    ct_fixture *f = *state;

    np_kill_all();
    rlock_client_free(f->a);
    rlock_client_free(f->b);
    f->a = f->b = NULL;
    return 0;
}

rlock_client *ct_connect(rt_redis *r)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, CT_RECHECK_MS),
                     RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, r->url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    assert_non_null(c);
    return c;
}

/* Returns the subscriber count PUBSUB NUMSUB reports for channel. */
static long long numsub(rt_redis *r, const char *channel)
{
    redisReply *rep = rt_cmd(r, "PUBSUB NUMSUB %s", channel);
    long long n;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_int_equal(rep->element[1]->type, REDIS_REPLY_INTEGER);
    n = rep->element[1]->integer;
    freeReplyObject(rep);
    return n;
}

void ct_wait_numsub(rt_redis *r, const char *channel, long long n,
                    int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    long long got;

    while ((got = numsub(r, channel)) < n) {
        if (rt_now_ms() >= deadline)
            fail_msg("%s has %lld subscribers, expected %lld within %d ms",
                     channel, got, n, timeout_ms);
        rt_sleep_ms(5);
    }
}

void ct_wait_queued(rt_redis *r, const char *name, long long n,
                    int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    char queue[256];
    long long got;

    snprintf(queue, sizeof(queue),
             strchr(name, '{') ? "redisson_rlock_queue:%s"
                               : "redisson_rlock_queue:{%s}",
             name);
    while ((got = rt_cmd_int(r, "LLEN %s", queue)) < n) {
        if (rt_now_ms() >= deadline)
            fail_msg("%s has %lld waiters, expected %lld within %d ms", queue,
                     got, n, timeout_ms);
        rt_sleep_ms(5);
    }
}

int64_t ct_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *locker_main(void *arg)
{
    ct_locker *k = arg;
    int rc = rlock_trylock(k->lock, k->wait_ms, RLOCK_LEASE_WATCHDOG);

    pthread_mutex_lock(&k->mu);
    k->acquired_rc = rc;
    k->done = 1;
    k->done_ms = rt_now_ms();
    pthread_cond_broadcast(&k->cv);
    while (!k->release)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    k->unlock_rc = rc == RLOCK_OK ? rlock_unlock(k->lock) : RLOCK_OK;
    return NULL;
}

void ct_locker_start(ct_locker *k, rlock *l, int64_t wait_ms)
{
    *k = (ct_locker){.lock = l, .wait_ms = wait_ms};
    assert_int_equal(pthread_mutex_init(&k->mu, NULL), 0);
    assert_int_equal(pthread_cond_init(&k->cv, NULL), 0);
    assert_int_equal(pthread_create(&k->thread, NULL, locker_main, k), 0);
}

int ct_locker_wait(ct_locker *k, int timeout_ms)
{
    struct timespec ts;
    int done;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->mu);
    while (!k->done && pthread_cond_timedwait(&k->cv, &k->mu, &ts) != ETIMEDOUT)
        ;
    done = k->done;
    pthread_mutex_unlock(&k->mu);
    return done;
}

int ct_locker_release(ct_locker *k)
{
    pthread_mutex_lock(&k->mu);
    k->release = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    assert_int_equal(pthread_join(k->thread, NULL), 0);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    return k->unlock_rc;
}

void ct_expect_peer_sees(rt_redis *r, const char *name, int locked,
                         int acquired)
{
    np_peer *p = np_start("probe", r->url, name, NULL);
    json_t *ev = np_expect(p, "probe", CT_PEER_MS);

    assert_int_equal(np_bool(ev, "locked"), locked);
    assert_int_equal(np_bool(ev, "acquired"), acquired);
    json_decref(ev);
    np_finish(p, CT_PEER_MS);
}

int ct_peer_trylock(rt_redis *r, const char *name, const char *wait_ms)
{
    np_peer *p =
        np_start("trylock", r->url, name, (const char *const[]){wait_ms, NULL});
    json_t *ev = np_expect(p, "trylock", CT_PEER_MS);
    int acquired = np_bool(ev, "acquired");

    json_decref(ev);
    if (acquired)
        json_decref(np_expect(p, "unlocked", CT_PEER_MS));
    np_finish(p, CT_PEER_MS);
    return acquired;
}

np_peer *ct_peer_hold(rt_redis *r, const char *name, char *field, size_t n)
{
    np_peer *p =
        np_start("hold", r->url, name, (const char *const[]){"-1", NULL});
    json_t *ev = np_expect(p, "locked", CT_PEER_MS);

    snprintf(field, n, "%s", np_str(ev, "field"));
    json_decref(ev);
    return p;
}

void ct_peer_release(np_peer *p)
{
    np_send(p, "unlock");
    json_decref(np_expect(p, "unlocked", CT_PEER_MS));
    np_finish(p, CT_PEER_MS);
}
