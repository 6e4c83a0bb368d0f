/*
 * test_direct.c: the blocking calls' own connections ("slots", src/core/direct.c)
 * when a reply is late: the slot stays usable, a late acquire's hold is
 * given back whoever reads it (the slot's next user, or the I/O thread
 * watching the idle slot), and a slot whose late reply is overdue (the
 * unlock latch's lifetime) is closed.
 *
 * Each client here has one command connection, so one slot, and a short
 * command timeout; the server is SIGSTOPped (rt_redis_pause) to make
 * replies late without closing anything.
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

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "direct"

#define COMMAND_MS 300
/* How long a give-back or a close may take to show on a loaded machine. */
#define SETTLE_MS 5000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* Resumes the server if a test failed while it was stopped. */
static int teardown(void **state)
{
    lt_fixture *f = *state;
    rt_redis_resume(&f->redis);
    return 0;
}

/* A client with one slot, the given command timeout and retry settings,
 * named name on the server. */
static rlock_client *one_slot_client(lt_fixture *f, int64_t command_ms,
                                     int retries, const char *name)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_connections(cfg, 1), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, command_ms), 0);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, retries), 0);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 100), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, name), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg), 0);
    rlock_config_free(cfg);
    return c;
}

/* The server's connections named name. */
static int connections_named(rt_redis *r, const char *name)
{
    char needle[96];
    snprintf(needle, sizeof(needle), " name=%s ", name);
    char *list = rt_cmd_str(r, "CLIENT LIST");
    assert_non_null(list);
    int n = 0;
    for (const char *p = list; (p = strstr(p, needle)) != NULL; p++)
        n++;
    free(list);
    return n;
}

/* Waits until the lock's hash field says count holds (count 0: the hash
 * is gone); returns the last count seen. */
static long long await_holds(rt_redis *r, const char *name,
                             const char *field, long long count)
{
    int64_t until = rt_now_ms() + SETTLE_MS;
    long long now;
    for (;;) {
        char *v = rt_cmd_str(r, "HGET %s %s", name, field);
        now = v != NULL ? atoll(v) : 0;
        free(v);
        if (now == count || rt_now_ms() >= until)
            return now;
        rt_sleep_ms(20);
    }
}

/* The idle slot's late acquire reply is read by the I/O thread as soon as
 * it comes, and the hold given back; the slot keeps its connection. */
static void test_late_acquire_on_an_idle_slot_is_given_back(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock_client *c = one_slot_client(f, COMMAND_MS, 3, "direct-idle");
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), c);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK); /* the slot is connected */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_pause(&f->redis);
    int rc = rlock_trylock(l, 0, 60000);
    rt_redis_resume(&f->redis);
    assert_int_equal(rc, RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_hold_count(l), 0);
    /* the acquire ran once the server resumed, and nobody calls again */
    assert_int_equal(await_holds(&f->redis, name, field, 0), 0);
    long long before = rt_connections_received(&f->redis);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* the slot kept its connection: the late reply left it usable */
    assert_int_equal(rt_connections_received(&f->redis), before + 1);
    rlock_free(l);
    rlock_client_free(c);
}

typedef struct resumer {
    rt_redis *redis;
    int64_t after_ms;
} resumer;

static void *resume_later(void *arg)
{
    resumer *r = arg;
    rt_sleep_ms(r->after_ms);
    rt_redis_resume(r->redis);
    return NULL;
}

/* The next call on the slot reads the late reply before its own, within
 * its own deadline, and the hold the late acquire took is given back:
 * the same thread's second acquire is a reentrant one, so the server ends
 * with the one hold the client knows of. */
static void test_next_call_reads_the_late_acquire_and_gives_it_back(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock_client *c = one_slot_client(f, COMMAND_MS, 3, "direct-next");
    pthread_t t;
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), c);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_redis_pause(&f->redis);
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_ETIMEDOUT);
    /* still stopped: the next call waits for the late reply and its own */
    resumer r = {&f->redis, COMMAND_MS / 3};
    assert_int_equal(pthread_create(&t, NULL, resume_later, &r), 0);
    int rc = rlock_trylock(l, 0, 60000);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(rc, RLOCK_OK);
    assert_int_equal(await_holds(&f->redis, name, field, 1), 1);
    assert_int_equal(rlock_hold_count(l), 1); /* Redis's count, as ours */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* A late reply that has not come within the unlock latch's lifetime
 * ((retries + 1) x (command timeout + retry interval): 300 ms here) gets
 * its slot closed, and the next call opens a new connection. */
static void test_slot_whose_late_reply_is_overdue_is_closed(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *c = one_slot_client(f, 200, 0, "direct-overdue");
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    int named = connections_named(&f->redis, "direct-overdue");
    rt_redis_pause(&f->redis);
    assert_int_equal(rlock_trylock(l, 0, 2000), RLOCK_ETIMEDOUT);
    rt_sleep_ms(1000); /* well past the latch's 300 ms */
    rt_redis_resume(&f->redis);
    int64_t until = rt_now_ms() + SETTLE_MS;
    while (connections_named(&f->redis, "direct-overdue") != named - 1 &&
           rt_now_ms() < until)
        rt_sleep_ms(20);
    assert_int_equal(connections_named(&f->redis, "direct-overdue"),
                     named - 1);
    /* the lease of the hold nobody gave back ends it */
    until = rt_now_ms() + SETTLE_MS;
    while (rt_cmd_int(&f->redis, "EXISTS %s", name) != 0 &&
           rt_now_ms() < until)
        rt_sleep_ms(50);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_late_acquire_on_an_idle_slot_is_given_back, teardown),
        cmocka_unit_test_teardown(
            test_next_call_reads_the_late_acquire_and_gives_it_back,
            teardown),
        cmocka_unit_test_teardown(
            test_slot_whose_late_reply_is_overdue_is_closed, teardown),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
