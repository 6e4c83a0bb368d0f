/*
 * test_fault_unlock_retry.c: an unlock's reply is lost and the unlock is
 * retried (Redisson's unlock latch, REDISSON-PROTOCOL.md section 1.8).
 *
 * How a reply gets lost here: Redis is told to hold back every write for a
 * while (CLIENT PAUSE <ms> WRITE: scripts wait, reads and pub/sub do not),
 * and the client's command timeout (300 ms) is shorter than that. The
 * client gives up waiting for its first release script and sends it again
 * with the same request id, and again; none has run yet. When the pause
 * ends Redis runs every copy in order: the first releases, each later one
 * finds the latch and answers as the first did. INFO commandstats proves
 * the script really ran more than once; a subscriber on the lock channel
 * proves only one unlock message went out. Had a retry used a new request
 * id, it would have found the hold gone and the unlock would have reported
 * RLOCK_ELOST (or taken a nested hold down twice).
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
#include "proto/scripts.h"

#define LT_SUITE "faults-unlockretry"

#define COMMAND_MS  300
#define INTERVAL_MS 100
#define LEASE_MS    60000 /* explicit: no watchdog scripts to count */
#define MARGIN_MS   2000
#define HANG_MS     20000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

static int teardown(void **state)
{
    lt_fixture *f = *state;
    char *ok = rt_cmd_str(&f->redis, "CLIENT UNPAUSE");

    free(ok);
    return 0;
}

/* ------------------------------------------------------------- helpers */

/* Runs a command (hiredis format) that must answer +OK. */
#define OK_CMD(r, ...)                            \
    do {                                          \
        char *ok_ = rt_cmd_str((r), __VA_ARGS__); \
        assert_non_null(ok_);                     \
        assert_string_equal(ok_, "OK");           \
        free(ok_);                                \
    } while (0)

/* Number of unlock latch keys of name in Redis. */
static long long latch_keys(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "KEYS redisson_unlock_latch:{%s}:*", name);
    long long n;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    n = (long long)rep->elements;
    freeReplyObject(rep);
    return n;
}

/* The state of one test: a client with short timeouts, a lock held by a
 * holder thread (count holds), and a subscriber on its channel. */
typedef struct setup {
    char name[128];
    char channel[160];
    char field[200];
    rlock_client *c;
    rlock *l;
    ft_holder h;
    rt_sub *sub;
} setup;

static void setup_begin(lt_fixture *f, setup *s, const char *name, int attempts,
                        int holds)
{
    ft_timing t = {.command_ms = COMMAND_MS,
                   .retry_interval_ms = INTERVAL_MS,
                   .retry_attempts = attempts};

    snprintf(s->name, sizeof(s->name), "%s", name);
    lt_channel_of(s->channel, sizeof(s->channel), name);
    s->c = ft_connect(f->redis.url, t);
    s->l = lt_get_lock(s->c, name);
    /* scripts cached, both command connections open */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rlock_trylock(s->l, 0, LEASE_MS), RLOCK_OK);
        assert_int_equal(rlock_unlock(s->l), RLOCK_OK);
    }
    ft_holder_start(&s->h, s->l, holds, LEASE_MS);
    snprintf(s->field, sizeof(s->field), "%s:%llu", rlock_client_id(s->c),
             (unsigned long long)s->h.tid);
    s->sub = rt_sub_start(&f->redis, s->channel);
    assert_non_null(s->sub);
    OK_CMD(&f->redis, "CONFIG RESETSTAT");
}

static void setup_end(setup *s)
{
    rt_sub_stop(s->sub);
    rlock_free(s->l);
    rlock_client_free(s->c);
}

/* --------------------------------------------------------------- tests */

/* The final unlock's first reply is lost (pause 1000 ms > timeout 300 ms);
 * the retry succeeds: unlock returns 0, the release script ran at least
 * twice, the lock is gone, exactly one "0" was published, and the latch is
 * left to expire, since a copy of an earlier attempt may still come. */
static void test_lost_unlock_reply_is_retried_and_releases_once(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    const int attempts = 5, pause = 1000;
    static setup s;
    long long runs;
    int64_t elapsed;

    LT_TEST_NAME(name);
    setup_begin(f, &s, name, attempts, 1);
    OK_CMD(&f->redis, "CLIENT PAUSE %d WRITE", pause);
    ft_holder_release(&s.h, 2, 0);
    ft_holder_join(&s.h, HANG_MS);
    elapsed = s.h.unlocked_ms - s.h.unlock_started_ms;
    runs = ft_script_calls(&f->redis);
    print_message("unlock: %s after %lld ms; release script ran %lld times\n",
                  rlock_err_name(s.h.unlock_rc[0]), (long long)elapsed, runs);
    assert_int_equal(s.h.is_held_rc, 1);
    assert_int_equal(s.h.unlock_rc[0], RLOCK_OK);
    assert_int_equal(s.h.unlock_rc[1], RLOCK_ENOTOWNER);
    /* the first attempt timed out: the reply that counted was a retry's */
    assert_true(elapsed >= COMMAND_MS);
    assert_true(elapsed <
                (attempts + 1) * (COMMAND_MS + INTERVAL_MS) + MARGIN_MS);
    assert_true(runs >= 2);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rt_sub_wait(s.sub, 1, 2000), 1);
    rt_sleep_ms(500); /* room for a second message, if one were coming */
    assert_int_equal(rt_sub_count(s.sub), 1);
    assert_string_equal(rt_sub_message(s.sub, 0), "0");
    /* the one latch all attempts shared stays, with its lifetime */
    rt_sleep_ms(300); /* a DEL sent after the reply would be in by now */
    assert_int_equal(latch_keys(&f->redis, name), 1);
    setup_end(&s);
}

/* The name of name's one unlock latch key (malloc'd). */
static char *the_latch(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "KEYS redisson_unlock_latch:{%s}:*", name);
    char *key = NULL;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    key = strdup(rep->element[0]->str);
    freeReplyObject(rep);
    assert_non_null(key);
    return key;
}

/* A nested hold (count 2) whose inner unlock needed a retry: a copy of its
 * first attempt that Redis runs only after the retry's reply (a slow or
 * retransmitted packet) must find the latch and answer as the first run
 * did, not take the outer hold off too. The late copy is that attempt's
 * exact script call, replayed by hand with the unlock's latch key. */
static void test_late_copy_of_a_retried_unlock_is_answered_by_the_latch(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], lease[24], latch_ms[24], *count;
    const int attempts = 5;
    static setup s;

    LT_TEST_NAME(name);
    setup_begin(f, &s, name, attempts, 2);
    OK_CMD(&f->redis, "CLIENT PAUSE 1000 WRITE");
    ft_holder_release(&s.h, 1, 0);
    ft_holder_join(&s.h, HANG_MS);
    assert_int_equal(s.h.unlock_rc[0], RLOCK_OK);
    /* the first attempt timed out: the reply that counted was a retry's */
    assert_true(s.h.unlocked_ms - s.h.unlock_started_ms >= COMMAND_MS);
    rt_sleep_ms(300); /* a DEL sent after the reply would be in by now */

    char *latch = the_latch(&f->redis, name);
    snprintf(lease, sizeof(lease), "%d", LEASE_MS);
    snprintf(latch_ms, sizeof(latch_ms), "%d", 60000);
    redisReply *late = rt_cmd(
        &f->redis, "EVALSHA %s 3 %s %s %s %s %s %s %s %s",
        rlock__script_lock_release.sha1, name, s.channel, latch, "0", lease,
        s.field, "PUBLISH", latch_ms);
    assert_non_null(late);
    assert_int_equal(late->type, REDIS_REPLY_INTEGER);
    assert_int_equal(late->integer, 0); /* "still held", as the first run */
    freeReplyObject(late);
    free(latch);
    count = rt_cmd_str(&f->redis, "HGET %s %s", name, s.field);
    assert_non_null(count);
    assert_string_equal(count, "1");
    free(count);
    assert_int_equal(rt_sub_count(s.sub), 0);
    /* the holder thread has exited holding its last hold: drop it */
    assert_int_equal(rlock_force_unlock(s.l), RLOCK_OK);
    assert_int_equal(rt_sub_wait(s.sub, 1, 2000), 1);
    setup_end(&s);
}

/* The same with a nested hold (count 2): the retried inner unlock takes
 * exactly one hold off, publishes nothing, and the lock stays ours. */
static void test_lost_inner_unlock_reply_takes_one_hold_off(void **state)
{
    lt_fixture *f = *state;
    char name[128], *count;
    const int attempts = 5;
    static setup s;
    long long runs;

    LT_TEST_NAME(name);
    setup_begin(f, &s, name, attempts, 2);
    lt_assert_single_field(&f->redis, name, s.field, "2");
    OK_CMD(&f->redis, "CLIENT PAUSE 1000 WRITE");
    ft_holder_release(&s.h, 1, 0);
    ft_holder_join(&s.h, HANG_MS);
    runs = ft_script_calls(&f->redis);
    print_message("inner unlock: %s after %lld ms; script ran %lld times\n",
                  rlock_err_name(s.h.unlock_rc[0]),
                  (long long)(s.h.unlocked_ms - s.h.unlock_started_ms), runs);
    assert_int_equal(s.h.unlock_rc[0], RLOCK_OK);
    assert_true(runs >= 2);
    count = rt_cmd_str(&f->redis, "HGET %s %s", name, s.field);
    assert_non_null(count);
    assert_string_equal(count, "1");
    free(count);
    /* the inner unlock resets the lease to the hold's own */
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) > LEASE_MS - 5000);
    rt_sleep_ms(300);
    assert_int_equal(rt_sub_count(s.sub), 0);
    /* the holder thread has exited holding its last hold: drop it */
    assert_int_equal(rlock_force_unlock(s.l), RLOCK_OK);
    assert_int_equal(rt_sub_wait(s.sub, 1, 2000), 1);
    setup_end(&s);
}

/* The same through rlock_unlock_async(): its retry leaves the latch too. */
static void test_late_copy_of_a_retried_async_unlock_is_answered_by_the_latch(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], field[200], lease[24], *count;
    ft_timing t = {.command_ms = COMMAND_MS,
                   .retry_interval_ms = INTERVAL_MS,
                   .retry_attempts = 5};

    LT_TEST_NAME(name);
    rlock_client *c = ft_connect(f->redis.url, t);
    rlock *l = lt_get_lock(c, name);
    uint64_t owner = rlock_owner_new();
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)owner);
    for (int i = 0; i < 2; i++) {
        lt_completion locked = {0};
        assert_int_equal(
            rlock_lock_async(l, owner, 0, LEASE_MS, lt_on_done, &locked), 0);
        assert_int_equal(lt_await_completion(&locked, HANG_MS), RLOCK_OK);
    }
    OK_CMD(&f->redis, "CLIENT PAUSE 1000 WRITE");
    lt_completion unlocked = {0};
    int64_t started = rt_now_ms();
    assert_int_equal(rlock_unlock_async(l, owner, lt_on_done, &unlocked), 0);
    assert_int_equal(lt_await_completion(&unlocked, HANG_MS), RLOCK_OK);
    assert_true(rt_now_ms() - started >= COMMAND_MS); /* a retry answered */
    rt_sleep_ms(300); /* a DEL sent after the reply would be in by now */

    char *latch = the_latch(&f->redis, name);
    char channel[160];
    lt_channel_of(channel, sizeof(channel), name);
    snprintf(lease, sizeof(lease), "%d", LEASE_MS);
    redisReply *late = rt_cmd(
        &f->redis, "EVALSHA %s 3 %s %s %s %s %s %s %s %s",
        rlock__script_lock_release.sha1, name, channel, latch, "0", lease,
        field, "PUBLISH", "60000");
    assert_non_null(late);
    assert_int_equal(late->type, REDIS_REPLY_INTEGER);
    assert_int_equal(late->integer, 0);
    freeReplyObject(late);
    free(latch);
    count = rt_cmd_str(&f->redis, "HGET %s %s", name, field);
    assert_non_null(count);
    assert_string_equal(count, "1");
    free(count);
    lt_completion last = {0};
    assert_int_equal(rlock_unlock_async(l, owner, lt_on_done, &last), 0);
    assert_int_equal(lt_await_completion(&last, HANG_MS), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* Every attempt's reply is lost (writes held back for 2500 ms, longer
 * than 4 attempts of 300 ms, 100 ms apart) on a nested hold (count 2):
 * unlock reports RLOCK_ETIMEDOUT or RLOCK_ECONN within its budget, and
 * whatever Redis later does with the copies it had queued (run them all
 * when the pause ends, or drop them with a connection the client gave up
 * on), the hold count goes down by one at most: never two holds off, never
 * the lock released, never an unlock message. */
static void
test_unlock_with_every_reply_lost_takes_at_most_one_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128], *count;
    const int attempts = 3;
    const int64_t budget = (attempts + 1) * COMMAND_MS + attempts * INTERVAL_MS;
    static setup s;
    long long runs;
    int64_t elapsed;

    LT_TEST_NAME(name);
    setup_begin(f, &s, name, attempts, 2);
    OK_CMD(&f->redis, "CLIENT PAUSE 2500 WRITE");
    ft_holder_release(&s.h, 1, 0);
    ft_holder_join(&s.h, HANG_MS);
    elapsed = s.h.unlocked_ms - s.h.unlock_started_ms;
    print_message("unlock: %s after %lld ms (budget %lld ms)\n",
                  rlock_err_name(s.h.unlock_rc[0]), (long long)elapsed,
                  (long long)budget);
    assert_true(s.h.unlock_rc[0] == RLOCK_ETIMEDOUT ||
                s.h.unlock_rc[0] == RLOCK_ECONN);
    assert_true(elapsed < budget + MARGIN_MS);
    /* let the pause end and whatever was queued run */
    rt_sleep_ms(2500 - elapsed + 1000);
    runs = ft_script_calls(&f->redis);
    count = rt_cmd_str(&f->redis, "HGET %s %s", name, s.field);
    print_message("release script ran %lld times; hold count now %s\n", runs,
                  count != NULL ? count : "(none)");
    assert_non_null(count);
    assert_true(strcmp(count, "1") == 0 || strcmp(count, "2") == 0);
    assert_true(runs <= attempts + 1);
    if (runs > 0)
        assert_string_equal(count, "1"); /* it ran: exactly one hold off */
    free(count);
    assert_int_equal(rt_sub_count(s.sub), 0);
    /* the holder thread has exited holding the rest: drop it */
    assert_int_equal(rlock_force_unlock(s.l), RLOCK_OK);
    assert_int_equal(rt_sub_wait(s.sub, 1, 2000), 1);
    setup_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_lost_unlock_reply_is_retried_and_releases_once, teardown),
        cmocka_unit_test_teardown(
            test_lost_inner_unlock_reply_takes_one_hold_off, teardown),
        cmocka_unit_test_teardown(
            test_late_copy_of_a_retried_unlock_is_answered_by_the_latch,
            teardown),
        cmocka_unit_test_teardown(
            test_late_copy_of_a_retried_async_unlock_is_answered_by_the_latch,
            teardown),
        cmocka_unit_test_teardown(
            test_unlock_with_every_reply_lost_takes_at_most_one_hold, teardown),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
