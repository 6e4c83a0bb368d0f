/*
 * test_scripts_reload.c: the script cache can vanish under the client.
 *
 * Scripts go out as EVALSHA; after SCRIPT FLUSH (or a server restart) Redis
 * answers NOSCRIPT, and the library must load the script again (SCRIPT
 * LOAD) and resend the EVALSHA, transparently, never EVAL. The SHA-1s are
 * the generated rlock__script_*.sha1 symbols (src/proto/scripts.h), reachable
 * because tests link the library's object files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "proto/scripts.h"

#define LT_SUITE "scripts"

static const rlock__script *const all_scripts[] = {
    &rlock__script_lock_acquire,       &rlock__script_lock_release,
    &rlock__script_lock_force_release, &rlock__script_lock_renew,
    &rlock__script_lock_release_owner, &rlock__script_lock_acquire_queued,
    &rlock__script_lock_give_up,
};
/* what rlock_lock() on a free RLock runs: Redisson's one-key acquire (the
 * queue's script is for a waiter that found it taken) */
#define LOCK_ACQUIRE (&rlock__script_lock_acquire)
#define NSCRIPTS (sizeof(all_scripts) / sizeof(*all_scripts))

/* ------------------------------------------------------------- helpers */

/* SCRIPT EXISTS for one script: 1 if cached, 0 if not. */
static long long script_cached(rt_redis *r, const rlock__script *s)
{
    redisReply *rep = rt_cmd(r, "SCRIPT EXISTS %s", s->sha1);
    long long v = -1;

    assert_non_null(rep);
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
        rep->element[0]->type == REDIS_REPLY_INTEGER)
        v = rep->element[0]->integer;
    freeReplyObject(rep);
    return v;
}

static void flush_scripts(rt_redis *r)
{
    char *ok = rt_cmd_str(r, "SCRIPT FLUSH");

    assert_non_null(ok);
    assert_string_equal(ok, "OK");
    free(ok);
    for (size_t i = 0; i < NSCRIPTS; i++)
        assert_int_equal(script_cached(r, all_scripts[i]), 0);
}

/* --------------------------------------------------------------- tests */

static void test_embedded_sha1_is_what_redis_computes(void **state)
{
    lt_fixture *f = *state;

    for (size_t i = 0; i < NSCRIPTS; i++) {
        const rlock__script *s = all_scripts[i];
        char *sha = rt_cmd_str(&f->redis, "SCRIPT LOAD %b", s->body, s->len);

        assert_non_null(sha);
        assert_int_equal(strlen(s->sha1), 40);
        assert_string_equal(sha, s->sha1);
        free(sha);
    }
}

static void test_connect_caches_every_script(void **state)
{
    lt_fixture *f = *state;
    rlock_client *c = NULL;

    flush_scripts(&f->redis);
    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    for (size_t i = 0; i < NSCRIPTS; i++)
        assert_int_equal(script_cached(&f->redis, all_scripts[i]), 1);
    rlock_client_free(c);
}

static void test_lock_after_flush_succeeds_and_recaches(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    flush_scripts(&f->redis);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(script_cached(&f->redis, LOCK_ACQUIRE), 1);
    /* and the next call goes through the cache again */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_unlock_after_flush_succeeds_and_recaches(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    flush_scripts(&f->redis);
    /* inner unlock */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(script_cached(&f->redis, &rlock__script_lock_release), 1);
    flush_scripts(&f->redis);
    /* last unlock */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(script_cached(&f->redis, &rlock__script_lock_release), 1);
    assert_int_equal(rlock_hold_count(l), 0);
    rlock_free(l);
}

static void test_lock_unlock_cycles_survive_repeated_flushes(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    for (int i = 0; i < 5; i++) {
        flush_scripts(&f->redis);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        flush_scripts(&f->redis);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    }
    assert_int_equal(script_cached(&f->redis, LOCK_ACQUIRE),
                     0); /* flushed after the last lock */
    assert_int_equal(script_cached(&f->redis, &rlock__script_lock_release), 1);
    rlock_free(l);
}

static void test_losing_trylock_after_flush_still_times_out(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:1"), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 30000", name), 1);
    l = lt_get_lock(f->client, name);
    flush_scripts(&f->redis);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(script_cached(&f->redis, &rlock__script_lock_acquire), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "HLEN %s", name), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_force_unlock_after_flush_succeeds(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    flush_scripts(&f->redis);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(
        script_cached(&f->redis, &rlock__script_lock_force_release), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rlock_free(l);
}

static void test_watchdog_renews_after_flush(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c = NULL;
    rlock *l;

    LT_TEST_NAME(name);
    c = lt_connect(f->redis.url, rlock_config_set_watchdog_timeout, 600);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    flush_scripts(&f->redis);
    /* several leases: alive only if renewals kept working */
    rt_sleep_ms(1500);
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > 0);
    assert_int_equal(script_cached(&f->redis, &rlock__script_lock_renew), 1);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

static void test_client_free_releases_after_flush(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock_client *c = NULL;
    rt_sub *s;
    rlock *l;

    LT_TEST_NAME(name);
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rlock_free(l);
    flush_scripts(&f->redis);
    rlock_client_free(c);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(
        script_cached(&f->redis, &rlock__script_lock_release_owner), 1);
    assert_int_equal(rt_sub_wait(s, 1, 5000), 1);
    assert_string_equal(rt_sub_message(s, 0), "0");
    rt_sub_stop(s);
}

/* A restarted server has lost its scripts and dropped every connection. */
static void test_lock_after_server_restart_succeeds(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_redis_restart(&f->redis), 0);
    for (size_t i = 0; i < NSCRIPTS; i++)
        assert_int_equal(script_cached(&f->redis, all_scripts[i]), 0);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(script_cached(&f->redis, LOCK_ACQUIRE), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* ------------------------------------------- a server with EVAL renamed */

/* An operator may rename EVAL away (rename-command EVAL "" in the server's
 * config file) and leave EVALSHA and SCRIPT LOAD: after SCRIPT FLUSH the
 * client must load its script again and resend EVALSHA, never fall back to
 * EVAL. */

typedef struct done_flag {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int status;
    bool done;
} done_flag;

static void on_done(rlock *l, uint64_t owner, int status, void *arg)
{
    done_flag *d = arg;

    (void)l;
    (void)owner;
    pthread_mutex_lock(&d->mu);
    d->status = status;
    d->done = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Waits (up to 10 s) for an async call's completion; returns its status. */
static int wait_done(done_flag *d)
{
    int64_t deadline = rt_now_ms() + 10000;

    pthread_mutex_lock(&d->mu);
    while (!d->done && rt_now_ms() < deadline) {
        pthread_mutex_unlock(&d->mu);
        rt_sleep_ms(5);
        pthread_mutex_lock(&d->mu);
    }
    int rc = d->done ? d->status : RLOCK_ETIMEDOUT;
    d->done = false;
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static void test_lock_after_flush_without_eval_reloads_the_script(void **state)
{
    char dir[] = "/tmp/rlock-noeval-XXXXXX", conf[64], name[128];
    done_flag d = {.mu = PTHREAD_MUTEX_INITIALIZER,
                   .cv = PTHREAD_COND_INITIALIZER};
    rt_redis r = {0};

    (void)state;
    LT_TEST_NAME(name);
    assert_non_null(mkdtemp(dir));
    snprintf(conf, sizeof(conf), "%s/no-eval.conf", dir);
    FILE *fp = fopen(conf, "w");
    assert_non_null(fp);
    fputs("rename-command EVAL \"\"\n", fp);
    fclose(fp);
    const char *const args[] = {"--include", conf, NULL};
    assert_int_equal(rt_redis_start_args(&r, args), 0);
    redisReply *rep = rt_cmd(&r, "EVAL %s 0", "return 1");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ERROR); /* EVAL is gone */
    freeReplyObject(rep);

    rlock_client *c = lt_connect(r.url, NULL, 0);
    rlock *l = lt_get_lock(c, name);
    /* on the calling thread (a direct connection) */
    flush_scripts(&r);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(script_cached(&r, LOCK_ACQUIRE), 1);
    flush_scripts(&r);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&r, "EXISTS %s", name), 0);
    /* through the I/O thread */
    uint64_t owner = rlock_owner_new();
    flush_scripts(&r);
    assert_int_equal(rlock_lock_async(l, owner, 0, RLOCK_LEASE_WATCHDOG,
                                      on_done, &d),
                     RLOCK_OK);
    assert_int_equal(wait_done(&d), RLOCK_OK);
    flush_scripts(&r);
    assert_int_equal(rlock_unlock_async(l, owner, on_done, &d), RLOCK_OK);
    assert_int_equal(wait_done(&d), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&r, "EXISTS %s", name), 0);
    rlock_free(l);
    rlock_client_free(c);
    rt_redis_stop(&r);
    unlink(conf);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_sha1_is_what_redis_computes),
        cmocka_unit_test(test_connect_caches_every_script),
        cmocka_unit_test(test_lock_after_flush_succeeds_and_recaches),
        cmocka_unit_test(test_unlock_after_flush_succeeds_and_recaches),
        cmocka_unit_test(test_lock_unlock_cycles_survive_repeated_flushes),
        cmocka_unit_test(test_losing_trylock_after_flush_still_times_out),
        cmocka_unit_test(test_force_unlock_after_flush_succeeds),
        cmocka_unit_test(test_watchdog_renews_after_flush),
        cmocka_unit_test(test_client_free_releases_after_flush),
        cmocka_unit_test(test_lock_after_server_restart_succeeds),
        cmocka_unit_test(test_lock_after_flush_without_eval_reloads_the_script),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
