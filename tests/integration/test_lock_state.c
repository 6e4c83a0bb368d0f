/*
 * test_lock_state.c: the exact Redis state an RLock leaves behind
 * (REDISSON-PROTOCOL.md sections 1 and 2).
 *
 * A Java service running Redisson reads the same keys, so the hash layout,
 * the lease, the unlock channel and its payload, and the unlock latch are
 * checked byte for byte against a real redis-server, through a separate
 * connection (the harness's rt_cmd), never through the library.
 *
 * "No message" is checked without sleeping: after the operation the test
 * publishes a sentinel on the same channel itself. Redis delivers in order,
 * so a message the library published would arrive before the sentinel.
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

#define WATCHDOG_LEASE_MS 30000
#define SENTINEL          "sentinel"
#define LT_SUITE          "lock_state"

/* ------------------------------------------------------------- helpers */

/* Publishes the sentinel on channel and waits until sub has n messages,
 * the last of which must be the sentinel. */
static void expect_messages_then_sentinel(rt_redis *r, rt_sub *s,
                                          const char *channel, int n)
{
    assert_int_equal(rt_cmd_int(r, "PUBLISH %s %s", channel, SENTINEL), 1);
    assert_int_equal(rt_sub_wait(s, n, 5000), n);
    assert_string_equal(rt_sub_message(s, n - 1), SENTINEL);
}

/* Waits up to timeout_ms for no key to match pattern; returns how many
 * still match. */
static long long wait_no_keys(rt_redis *r, const char *pattern, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    redisReply *rep;
    long long n;

    for (;;) {
        rep = rt_cmd(r, "KEYS %s", pattern);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        n = (long long)rep->elements;
        freeReplyObject(rep);
        if (n == 0 || rt_now_ms() >= deadline)
            return n;
        rt_sleep_ms(20);
    }
}

/* Runs fn(arg) on a new thread and waits for it. */
static void run_in_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

/* --------------------------------------------------------------- lock */

static void test_lock_writes_hash_with_one_field_count_one(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    char *type = rt_cmd_str(&f->redis, "TYPE %s", name);
    assert_non_null(type);
    assert_string_equal(type, "hash");
    free(type);
    lt_assert_single_field(&f->redis, name, field, "1");
    /* the field is "<36-char uuid>:<decimal thread id>" */
    assert_int_equal(strlen(rlock_client_id(f->client)), 36);
    assert_true(rlock_thread_id() > 0);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_lock_sets_watchdog_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;
    long long pttl;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > WATCHDOG_LEASE_MS - 1000);
    assert_true(pttl <= WATCHDOG_LEASE_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_trylock_with_lease_sets_that_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;
    long long pttl;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 4000);
    assert_true(pttl <= 5000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_nested_lock_counts_holds_in_one_field(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "3");
    assert_int_equal(rlock_hold_count(l), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_second_handle_to_same_name_shares_holds(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *a, *b;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    a = lt_get_lock(f->client, name);
    b = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(a), RLOCK_OK);
    assert_int_equal(rlock_trylock(b, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(rlock_unlock(a), RLOCK_OK);
    assert_int_equal(rlock_unlock(b), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(a);
    rlock_free(b);
}

/* -------------------------------------------------------------- unlock */

static void test_inner_unlock_decrements_count(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "2");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_resets_watchdog_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;
    long long pttl;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* pretend time passed: the inner unlock must restore the full lease */
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 7000", name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > WATCHDOG_LEASE_MS - 1000);
    assert_true(pttl <= WATCHDOG_LEASE_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_resets_explicit_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;
    long long pttl;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 2000", name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 4000);
    assert_true(pttl <= 5000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_publishes_nothing(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock *l;
    rt_sub *s;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(f->client, name);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_messages_then_sentinel(&f->redis, s, channel, 1);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_sub_stop(s);
    rlock_free(l);
}

static void test_last_unlock_deletes_key(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_last_unlock_publishes_one_zero_on_channel(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock *l;
    rt_sub *s;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    assert_string_equal(channel, "redisson_lock__channel:{lock_state:"
                                 "test_last_unlock_publishes_one_zero_on_"
                                 "channel}");
    l = lt_get_lock(f->client, name);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_messages_then_sentinel(&f->redis, s, channel, 2);
    assert_string_equal(rt_sub_message(s, 0), "0");
    rt_sub_stop(s);
    rlock_free(l);
}

/* Returns 1 if key is "redisson_unlock_latch:<tagged name>:<32 hex>". */
static int is_latch_of(const char *key, const char *tagged_name)
{
    char prefix[256];
    size_t plen;

    snprintf(prefix, sizeof(prefix), "redisson_unlock_latch:%s:", tagged_name);
    plen = strlen(prefix);
    if (strncmp(key, prefix, plen) != 0 || strlen(key) != plen + 32)
        return 0;
    for (size_t i = plen; i < plen + 32; i++) {
        if (strchr("0123456789abcdef", key[i]) == NULL)
            return 0;
    }
    return 1;
}

/* Locks and unlocks name (with nested holds when depth > 1) while watching
 * key events, and checks that every unlock wrote a latch key of the exact
 * form under tagged_name and deleted it again. */
static void check_latches(lt_fixture *f, const char *name,
                          const char *tagged_name, int depth)
{
    rt_sub *sets, *dels;
    rlock *l = lt_get_lock(f->client, name);
    const char *set_key;
    char *ok;
    int found;

    /* an earlier test's latch DEL is sent without waiting for its reply:
     * let it land before counting events */
    assert_int_equal(wait_no_keys(&f->redis, "redisson_unlock_latch:*", 3000),
                     0);
    ok = rt_cmd_str(&f->redis, "CONFIG SET notify-keyspace-events %s", "E$g");
    assert_non_null(ok);
    free(ok);
    sets = rt_sub_start(&f->redis, "__keyevent@0__:set");
    dels = rt_sub_start(&f->redis, "__keyevent@0__:del");
    assert_non_null(sets);
    assert_non_null(dels);

    for (int i = 0; i < depth; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);
    for (int i = 0; i < depth; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);

    /* one latch SET per unlock, each with a fresh request id */
    assert_int_equal(rt_sub_wait(sets, depth, 5000), depth);
    for (int i = 0; i < depth; i++) {
        set_key = rt_sub_message(sets, i);
        assert_true(is_latch_of(set_key, tagged_name));
        for (int j = 0; j < i; j++)
            assert_string_not_equal(set_key, rt_sub_message(sets, j));
    }
    /* the lock key and every latch are deleted: depth + 1 DELs */
    assert_int_equal(rt_sub_wait(dels, depth + 1, 5000), depth + 1);
    for (int i = 0; i < depth; i++) {
        set_key = rt_sub_message(sets, i);
        found = 0;
        for (int j = 0; j < rt_sub_count(dels); j++)
            found |= strcmp(rt_sub_message(dels, j), set_key) == 0;
        assert_true(found);
    }
    found = 0;
    for (int j = 0; j < rt_sub_count(dels); j++)
        found |= strcmp(rt_sub_message(dels, j), name) == 0;
    assert_true(found);
    assert_int_equal(wait_no_keys(&f->redis, "redisson_unlock_latch:*", 1000),
                     0);

    rt_sub_stop(sets);
    rt_sub_stop(dels);
    ok = rt_cmd_str(&f->redis, "CONFIG SET notify-keyspace-events %s", "");
    assert_non_null(ok);
    free(ok);
    rlock_free(l);
}

static void test_unlock_writes_latch_and_deletes_it(void **state)
{
    lt_fixture *f = *state;
    char name[128], tagged[160];

    LT_TEST_NAME(name);
    snprintf(tagged, sizeof(tagged), "{%s}", name);
    check_latches(f, name, tagged, 1);
}

static void test_inner_and_last_unlock_latches_are_deleted(void **state)
{
    lt_fixture *f = *state;
    char name[128], tagged[160];

    LT_TEST_NAME(name);
    snprintf(tagged, sizeof(tagged), "{%s}", name);
    check_latches(f, name, tagged, 3);
}

static void test_no_latch_key_remains_after_unlock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    }
    assert_int_equal(wait_no_keys(&f->redis, "redisson_unlock_latch:*", 1000),
                     0);
    rlock_free(l);
}

/* MONITOR on a plain connection: every command Redis runs, scripts' own
 * calls included ("[0 lua] ..."), as one line each. */
static redisContext *monitor_start(rt_redis *r)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    redisReply *rep;

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    rep = redisCommand(c, "MONITOR");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    return c;
}

/* Sends a marker command and returns every monitored line up to it, as
 * one malloc'd string of lines. Frees the monitor connection. */
static char *monitor_collect(redisContext *c, rt_redis *r)
{
    const char *marker = "itest-monitor-end";
    size_t len = 0, cap = 4096;
    char *out = malloc(cap);
    char *echo;

    assert_non_null(out);
    out[0] = '\0';
    echo = rt_cmd_str(r, "ECHO %s", marker);
    assert_non_null(echo);
    free(echo);
    for (;;) {
        void *raw = NULL;
        redisReply *rep;
        int done;

        assert_int_equal(redisGetReply(c, &raw), REDIS_OK);
        rep = raw;
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        done = strstr(rep->str, marker) != NULL;
        while (len + rep->len + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
        memcpy(out + len, rep->str, rep->len);
        len += rep->len;
        out[len++] = '\n';
        out[len] = '\0';
        freeReplyObject(rep);
        if (done)
            break;
    }
    redisFree(c);
    return out;
}

/* Finds the n-th (0-based) latch SET for tagged_name in monitor output and
 * returns its value ('0' or '1') and PX; returns 0 if there is none. */
static int find_latch_set(const char *log, const char *tagged_name, int n,
                          char *value, long long *px)
{
    char needle[256];
    const char *p = log;

    snprintf(needle, sizeof(needle),
             "\"set\" \"redisson_unlock_latch:%s:", tagged_name);
    for (int i = 0;; i++) {
        const char *end;

        p = strstr(p, needle);
        if (p == NULL)
            return 0;
        p += strlen(needle);
        end = strchr(p, '"'); /* end of the key: 32 hex then a quote */
        if (end == NULL || end - p != 32)
            return 0;
        if (i == n)
            return sscanf(end + 1, " \"%c\" \"px\" \"%lld\"", value, px) == 2;
    }
}

static void test_unlock_latch_holds_reply_with_px(void **state)
{
    lt_fixture *f = *state;
    char name[128], tagged[160], value = 0, *log;
    long long px = 0;
    redisContext *mon;
    rlock *l;

    LT_TEST_NAME(name);
    snprintf(tagged, sizeof(tagged), "{%s}", name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    mon = monitor_start(&f->redis);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    log = monitor_collect(mon, &f->redis);

    /* inner unlock: "0"; last unlock: "1"; both with the latch lifetime
     * (retry_attempts + 1) x (timeout + interval) = 4 x 4500 by default */
    assert_true(find_latch_set(log, tagged, 0, &value, &px));
    assert_int_equal(value, '0');
    assert_int_equal(px, 18000);
    assert_true(find_latch_set(log, tagged, 1, &value, &px));
    assert_int_equal(value, '1');
    assert_int_equal(px, 18000);
    assert_false(find_latch_set(log, tagged, 2, &value, &px));
    free(log);
    rlock_free(l);
}

/* -------------------------------------------------------------- braces */

static void test_name_with_braces_uses_it_as_channel_tag(void **state)
{
    lt_fixture *f = *state;
    const char *name = "{tag}x";
    rt_sub *right, *wrong;
    rlock *l;

    l = lt_get_lock(f->client, name);
    right = rt_sub_start(&f->redis, "redisson_lock__channel:{tag}x");
    wrong = rt_sub_start(&f->redis, "redisson_lock__channel:{{tag}x}");
    assert_non_null(right);
    assert_non_null(wrong);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", "{tag}x"), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_messages_then_sentinel(&f->redis, right,
                                  "redisson_lock__channel:{tag}x", 2);
    assert_string_equal(rt_sub_message(right, 0), "0");
    expect_messages_then_sentinel(&f->redis, wrong,
                                  "redisson_lock__channel:{{tag}x}", 1);
    rt_sub_stop(right);
    rt_sub_stop(wrong);
    rlock_free(l);
}

static void test_name_with_braces_uses_it_as_latch_tag(void **state)
{
    lt_fixture *f = *state;

    check_latches(f, "{tag}latch", "{tag}latch", 2);
}

static void test_name_with_open_brace_only_is_not_wrapped(void **state)
{
    lt_fixture *f = *state;
    const char *name = "half{open";
    rt_sub *s;
    rlock *l;

    l = lt_get_lock(f->client, name);
    s = rt_sub_start(&f->redis, "redisson_lock__channel:half{open");
    assert_non_null(s);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    expect_messages_then_sentinel(&f->redis, s,
                                  "redisson_lock__channel:half{open", 2);
    assert_string_equal(rt_sub_message(s, 0), "0");
    rt_sub_stop(s);
    rlock_free(l);
}

/* ----------------------------------------------------- losing a trylock */

typedef struct try_arg {
    rlock *l;
    int rc;
    int held_by_me;
    int hold_count;
    int is_locked;
    char field[128];
} try_arg;

static void *try_once_thread(void *p)
{
    try_arg *a = p;

    a->rc = rlock_trylock(a->l, 0, RLOCK_LEASE_WATCHDOG);
    return NULL;
}

static void test_losing_trylock_times_out_and_leaves_hash(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128], *before, *after;
    try_arg a = {0};
    rlock *l;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    before = lt_hash_dump(&f->redis, name);

    a.l = l;
    run_in_thread(try_once_thread, &a);
    assert_int_equal(a.rc, RLOCK_ETIMEDOUT);

    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(before, after);
    /* the loser must not have touched the lease either */
    assert_true(rt_cmd_int(&f->redis, "PTTL %s", name) <= 10000);
    lt_assert_single_field(&f->redis, name, field, "1");
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_losing_trylock_from_other_client_times_out(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    rlock_client *other = NULL;
    rlock *mine, *theirs;

    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    assert_int_equal(rlock_client_connect(&other, f->redis.url), RLOCK_OK);
    assert_string_not_equal(rlock_client_id(other), rlock_client_id(f->client));
    mine = lt_get_lock(f->client, name);
    theirs = lt_get_lock(other, name);
    assert_int_equal(rlock_lock(mine), RLOCK_OK);
    /* same thread id, other client uuid: a different owner */
    assert_int_equal(rlock_trylock(theirs, 0, 5000), RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_trylock(theirs, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    assert_int_equal(rlock_trylock(theirs, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    lt_owner_field(field, sizeof(field), other);
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
    rlock_client_free(other);
}

typedef struct exiting_arg {
    rlock *l;
    uint64_t tid;
    int lock_rc;
    int try_rc;
    int unlock_rc;
} exiting_arg;

static void *lock_and_exit_thread(void *p)
{
    exiting_arg *a = p;

    a->tid = rlock_thread_id();
    a->lock_rc = rlock_lock(a->l);
    return NULL; /* exits still holding the lock */
}

static void *later_thread(void *p)
{
    exiting_arg *a = p;

    a->tid = rlock_thread_id();
    a->try_rc = rlock_trylock(a->l, 0, RLOCK_LEASE_WATCHDOG);
    a->unlock_rc = rlock_unlock(a->l);
    return NULL;
}

/* Thread ids are never reused: threads created after the owner exited do
 * not become the owner. */
static void test_exited_owner_is_not_inherited_by_new_threads(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[160];
    exiting_arg first = {0};
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    first.l = l;
    run_in_thread(lock_and_exit_thread, &first);
    assert_int_equal(first.lock_rc, RLOCK_OK);
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(f->client),
             (unsigned long long)first.tid);
    for (int i = 0; i < 5; i++) {
        exiting_arg later = {.l = l};

        run_in_thread(later_thread, &later);
        assert_true(later.tid != first.tid);
        assert_true(later.tid != rlock_thread_id());
        assert_int_equal(later.try_rc, RLOCK_ETIMEDOUT);
        assert_int_equal(later.unlock_rc, RLOCK_ENOTOWNER);
    }
    lt_assert_single_field(&f->redis, name, field, "1");
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* -------------------------------------------------------------- queries */

static void test_queries_on_free_lock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_string_equal(rlock_name(l), name);
    assert_int_equal(rlock_is_locked(l), 0);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rlock_remaining_ttl(l), -2);
    rlock_free(l);
}

static void test_queries_on_held_lock(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t ttl;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_hold_count(l), 1);
    ttl = rlock_remaining_ttl(l);
    assert_true(ttl > WATCHDOG_LEASE_MS - 1000);
    assert_true(ttl <= WATCHDOG_LEASE_MS);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 2);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_is_locked(l), 0);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_int_equal(rlock_remaining_ttl(l), -2);
    rlock_free(l);
}

static void test_remaining_ttl_follows_explicit_lease(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    int64_t ttl;
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
    ttl = rlock_remaining_ttl(l);
    assert_true(ttl > 4000);
    assert_true(ttl <= 5000);
    assert_int_equal(rt_cmd_int(&f->redis, "PERSIST %s", name), 1);
    assert_int_equal(rlock_remaining_ttl(l), -1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void *query_thread(void *p)
{
    try_arg *a = p;

    a->is_locked = rlock_is_locked(a->l);
    a->held_by_me = rlock_is_held_by_me(a->l);
    a->hold_count = rlock_hold_count(a->l);
    return NULL;
}

static void test_queries_from_other_thread(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    try_arg a = {0};
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    a.l = l;
    run_in_thread(query_thread, &a);
    assert_int_equal(a.is_locked, 1);
    assert_int_equal(a.held_by_me, 0);
    assert_int_equal(a.hold_count, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_queries_see_foreign_holder(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:1"), 1);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 20000", name), 1);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    assert_true(rlock_remaining_ttl(l) > 19000);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* --------------------------------------------------------- force unlock */

static void test_force_unlock_deletes_and_publishes_zero(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock *l;
    rt_sub *s;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(f->client, name);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    expect_messages_then_sentinel(&f->redis, s, channel, 2);
    assert_string_equal(rt_sub_message(s, 0), "0");
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    rt_sub_stop(s);
    rlock_free(l);
}

static void test_force_unlock_of_free_lock_returns_zero(void **state)
{
    lt_fixture *f = *state;
    char name[128], channel[160];
    rlock *l;
    rt_sub *s;

    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    l = lt_get_lock(f->client, name);
    s = rt_sub_start(&f->redis, channel);
    assert_non_null(s);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    expect_messages_then_sentinel(&f->redis, s, channel, 1);
    rt_sub_stop(s);
    rlock_free(l);
}

static void test_force_unlock_of_foreign_lock_deletes_it(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 2", name, "other-uuid:7"), 1);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_unlock_after_force_unlock_is_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock *l;

    LT_TEST_NAME(name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_is_held_by_me(l), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    /* the hold is forgotten: a second unlock is plain misuse */
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    rlock_free(l);
}

static void test_unlock_after_force_unlock_by_other_client_is_lost(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *admin = NULL;
    rlock *mine, *theirs;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_client_connect(&admin, f->redis.url), RLOCK_OK);
    mine = lt_get_lock(f->client, name);
    theirs = lt_get_lock(admin, name);
    assert_int_equal(rlock_lock(mine), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(theirs), RLOCK_OK);
    assert_int_equal(rlock_unlock(mine), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(mine), RLOCK_ENOTOWNER);
    /* and the lock can be taken again afterwards */
    assert_int_equal(rlock_lock(mine), RLOCK_OK);
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
    rlock_client_free(admin);
}

/* ---------------------------------------------- held by a Redisson peer */

/* Makes name look held by a Java client: HSET N "other-uuid:1" 1. */
static void hold_as_foreign_client(rt_redis *r, const char *name)
{
    assert_int_equal(rt_cmd_int(r, "HSET %s %s 1", name, "other-uuid:1"), 1);
    assert_int_equal(rt_cmd_int(r, "PEXPIRE %s 30000", name), 1);
}

static void test_foreign_holder_makes_trylock_time_out(void **state)
{
    lt_fixture *f = *state;
    char name[128], *before, *after;
    rlock *l;

    LT_TEST_NAME(name);
    hold_as_foreign_client(&f->redis, name);
    before = lt_hash_dump(&f->redis, name);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_ETIMEDOUT);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(before, "other-uuid:1=1;");
    assert_string_equal(after, before);
    assert_int_equal(rlock_hold_count(l), 0);
    free(before);
    free(after);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

static void test_foreign_holder_makes_unlock_enotowner(void **state)
{
    lt_fixture *f = *state;
    char name[128], *after;
    rlock *l;
    long long pttl;

    LT_TEST_NAME(name);
    hold_as_foreign_client(&f->redis, name);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 10000", name), 1);
    l = lt_get_lock(f->client, name);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, "other-uuid:1=1;");
    pttl = rt_cmd_int(&f->redis, "PTTL %s", name);
    assert_true(pttl > 0);
    assert_true(pttl <= 10000);
    free(after);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    rlock_free(l);
}

/* ------------------------------------------------------- client free */

static void test_client_free_releases_every_held_lock(void **state)
{
    lt_fixture *f = *state;
    static const char *const names[] = {
        "lock_state:free:a", "lock_state:free:b", "lock_state:free:c"};
    rlock_client *c = NULL;
    rt_sub *subs[3];
    char channel[160];

    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        rlock *l = lt_get_lock(c, names[i]);

        lt_channel_of(channel, sizeof(channel), names[i]);
        subs[i] = rt_sub_start(&f->redis, channel);
        assert_non_null(subs[i]);
        /* a plain hold, a nested one, one with an explicit lease */
        if (i == 2) {
            assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_OK);
        } else {
            for (int k = 0; k <= i; k++)
                assert_int_equal(rlock_lock(l), RLOCK_OK);
        }
        rlock_free(l); /* a freed handle does not unlock */
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[i]), 1);
    }
    rlock_client_free(c);
    for (int i = 0; i < 3; i++) {
        lt_channel_of(channel, sizeof(channel), names[i]);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", names[i]), 0);
        expect_messages_then_sentinel(&f->redis, subs[i], channel, 2);
        assert_string_equal(rt_sub_message(subs[i], 0), "0");
        rt_sub_stop(subs[i]);
    }
}

static void test_client_free_leaves_other_owners_locks(void **state)
{
    lt_fixture *f = *state;
    char name[128], *dump;
    rlock_client *c = NULL;
    rlock *l;

    LT_TEST_NAME(name);
    assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rlock_free(l);
    /* taken away behind the client's back, and now someone else's */
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(
        rt_cmd_int(&f->redis, "HSET %s %s 1", name, "other-uuid:3"), 1);
    rlock_client_free(c);
    dump = lt_hash_dump(&f->redis, name);
    assert_string_equal(dump, "other-uuid:3=1;");
    free(dump);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
}

static void test_client_free_right_after_unlock_leaves_no_latch(void **state)
{
    lt_fixture *f = *state;

    for (int round = 0; round < 10; round++) {
        char name[128];
        rlock_client *c = NULL;
        rlock *l;

        snprintf(name, sizeof(name), "lock_state:free_latch:%d", round);
        assert_int_equal(rlock_client_connect(&c, f->redis.url), RLOCK_OK);
        l = lt_get_lock(c, name);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        rlock_free(l);
        rlock_client_free(c); /* the latch DEL must not be dropped */
    }
    assert_int_equal(wait_no_keys(&f->redis, "redisson_unlock_latch:*", 500),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_writes_hash_with_one_field_count_one),
        cmocka_unit_test(test_lock_sets_watchdog_lease),
        cmocka_unit_test(test_trylock_with_lease_sets_that_lease),
        cmocka_unit_test(test_nested_lock_counts_holds_in_one_field),
        cmocka_unit_test(test_second_handle_to_same_name_shares_holds),
        cmocka_unit_test(test_inner_unlock_decrements_count),
        cmocka_unit_test(test_inner_unlock_resets_watchdog_lease),
        cmocka_unit_test(test_inner_unlock_resets_explicit_lease),
        cmocka_unit_test(test_inner_unlock_publishes_nothing),
        cmocka_unit_test(test_last_unlock_deletes_key),
        cmocka_unit_test(test_last_unlock_publishes_one_zero_on_channel),
        cmocka_unit_test(test_unlock_writes_latch_and_deletes_it),
        cmocka_unit_test(test_inner_and_last_unlock_latches_are_deleted),
        cmocka_unit_test(test_no_latch_key_remains_after_unlock),
        cmocka_unit_test(test_unlock_latch_holds_reply_with_px),
        cmocka_unit_test(test_name_with_braces_uses_it_as_channel_tag),
        cmocka_unit_test(test_name_with_braces_uses_it_as_latch_tag),
        cmocka_unit_test(test_name_with_open_brace_only_is_not_wrapped),
        cmocka_unit_test(test_losing_trylock_times_out_and_leaves_hash),
        cmocka_unit_test(test_losing_trylock_from_other_client_times_out),
        cmocka_unit_test(test_exited_owner_is_not_inherited_by_new_threads),
        cmocka_unit_test(test_queries_on_free_lock),
        cmocka_unit_test(test_queries_on_held_lock),
        cmocka_unit_test(test_remaining_ttl_follows_explicit_lease),
        cmocka_unit_test(test_queries_from_other_thread),
        cmocka_unit_test(test_queries_see_foreign_holder),
        cmocka_unit_test(test_force_unlock_deletes_and_publishes_zero),
        cmocka_unit_test(test_force_unlock_of_free_lock_returns_zero),
        cmocka_unit_test(test_force_unlock_of_foreign_lock_deletes_it),
        cmocka_unit_test(test_unlock_after_force_unlock_is_lost),
        cmocka_unit_test(
            test_unlock_after_force_unlock_by_other_client_is_lost),
        cmocka_unit_test(test_foreign_holder_makes_trylock_time_out),
        cmocka_unit_test(test_foreign_holder_makes_unlock_enotowner),
        cmocka_unit_test(test_client_free_releases_every_held_lock),
        cmocka_unit_test(test_client_free_leaves_other_owners_locks),
        cmocka_unit_test(test_client_free_right_after_unlock_leaves_no_latch),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
