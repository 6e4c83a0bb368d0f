/*
 * compat_testing.c: C-side helpers for the compat tests (see the header).
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
#include <time.h>

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
