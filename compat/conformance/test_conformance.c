/*
 * test_conformance.c: after every lock operation, the exact Redis state and
 * the exact messages are those ../shared/REDISSON-PROTOCOL.md describes for
 * Redisson's RLock (sections 1 and 2), so that Java services running any
 * Redisson from 3.12 to 4.x share locks with rlock.
 *
 * What is compared, after each operation:
 * - keys: the whole keyspace (KEYS *), which is flushed before each test;
 * - types, hash fields and values, PTTL bounds;
 * - the unlock latch: its name, value and PX, seen in a MONITOR log because
 *   rlock deletes it right after the reply, as Redisson does;
 * - messages: every message published on any channel (PSUBSCRIBE *), in
 *   order. "Nothing else" is checked without sleeping: the test publishes a
 *   sentinel and reads up to it, since Redis delivers in order.
 * These readers live in compat/support/conformance_support.c, shared with
 * test_conformance_kinds.c.
 *
 * The expected key and channel names are written out literally below, for
 * every shape of name the brace rule (section 1.2) tells apart.
 *
 * Redisson 3.x: up to 3.21 the unlock script had no latch and a hard-coded
 * PUBLISH, and up to 3.12.2 the first acquire used HSET. Those scripts are
 * written here from the facts sheet and run by hand against locks rlock
 * holds and waits on, and rlock is run against locks they hold.
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
#include <strings.h>

#include "compat_testing.h"
#include "conformance_support.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"
#include "proto/scripts.h"

#define WATCHDOG_MS      30000 /* Redisson's default lockWatchdogTimeout */
#define SHORT_WATCHDOG   1500  /* renewed every 500 ms */
#define SHORT_WATCHDOG_S "1500"

/* A Redisson client that is not rlock: a UUID and a thread id. */
#define JAVA_OWNER   "0c9e7f7a-3d1b-4e8f-9a51-6b2d4c8e1f30:57"
#define JAVA_OWNER_2 "0c9e7f7a-3d1b-4e8f-9a51-6b2d4c8e1f30:58"

/* ------------------------------------------------------------------------ */
/* Redisson 3.x scripts, written from REDISSON-PROTOCOL.md sections 2 and 8 */
/* ------------------------------------------------------------------------ */

/* Acquire as 3.12.0-3.12.2 did: HSET to 1 on a free lock.
 * KEYS[1] N; ARGV[1] lease, ARGV[2] owner. */
static const char V3_12_ACQUIRE[] =
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "    redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "    redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Unlock as 3.12-3.21 did: no latch, PUBLISH hard-coded.
 * KEYS[1] N, KEYS[2] channel; ARGV[1] message, ARGV[2] lease, ARGV[3]
 * owner. */
static const char V3_PRE_LATCH_UNLOCK[] =
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then\n"
    "    return nil\n"
    "end\n"
    "local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)\n"
    "if left > 0 then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('publish', KEYS[2], ARGV[1])\n"
    "return 1\n";

/* ------------------------------------------------------------------------ */
/* Name shapes (section 1.2), with the names Redisson derives, spelled out  */
/* ------------------------------------------------------------------------ */

typedef struct naming {
    const char *name;
    const char *channel;
    const char *latch_prefix; /* the latch key is this + ":" + 32 hex */
} naming;

static const naming PLAIN = {"conf-plain",
                             "redisson_lock__channel:{conf-plain}",
                             "redisson_unlock_latch:{conf-plain}"};
static const naming LEADING_TAG = {"{conf}tagged",
                                   "redisson_lock__channel:{conf}tagged",
                                   "redisson_unlock_latch:{conf}tagged"};
static const naming INNER_TAG = {"head{conf}tail",
                                 "redisson_lock__channel:head{conf}tail",
                                 "redisson_unlock_latch:head{conf}tail"};
static const naming EMPTY_TAG = {"{}conf-empty",
                                 "redisson_lock__channel:{}conf-empty",
                                 "redisson_unlock_latch:{}conf-empty"};
static const naming OPEN_BRACE = {"conf{open",
                                  "redisson_lock__channel:conf{open",
                                  "redisson_unlock_latch:conf{open"};
static const naming CLOSE_BRACE = {"conf}close",
                                   "redisson_lock__channel:{conf}close}",
                                   "redisson_unlock_latch:{conf}close}"};

/* ------------------------------------------------------------------------ */
/* Fixture                                                                  */
/* ------------------------------------------------------------------------ */

static conf_fixture F;

/* ------------------------------------------------------------------------ */
/* Scripts run by hand                                                      */
/* ------------------------------------------------------------------------ */

/* Runs one of rlock's embedded scripts by EVALSHA (after SCRIPT LOAD, whose
 * reply must be the embedded SHA-1) with numkeys keys followed by args. */
static redisReply *run_rlock_script(const rlock__script *s, int numkeys,
                                    int argc, const char **argv)
{
    redisContext *c = conf_connect(&F.redis);
    const char *load[] = {"SCRIPT", "LOAD", (const char *)s->body};
    size_t load_len[] = {6, 4, s->len};
    redisReply *rep;

    rep = redisCommandArgv(c, 3, load, load_len);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, s->sha1);
    freeReplyObject(rep);
    redisFree(c);
    return conf_eval(&F.redis, "EVALSHA", s->sha1, numkeys, argc, argv);
}

/* Asserts that rep is nil (-1) or the integer want, then frees it. */
#define REPLY_NIL (-1000000LL)
static void expect_reply(redisReply *rep, long long want)
{
    if (want == REPLY_NIL) {
        assert_int_equal(rep->type, REDIS_REPLY_NIL);
    } else {
        if (rep->type != REDIS_REPLY_INTEGER)
            fail_msg("reply type %d (%s), expected integer %lld", rep->type,
                     rep->type == REDIS_REPLY_ERROR ? rep->str : "-", want);
        assert_int_equal(rep->integer, want);
    }
    freeReplyObject(rep);
}

/* A Redisson 3.12 client takes (or re-enters) N for owner with a lease;
 * returns the script's reply: REPLY_NIL when taken, else the PTTL. */
static long long java_v3_acquire(const char *name, const char *owner,
                                 const char *lease)
{
    const char *argv[] = {name, lease, owner};
    redisReply *rep = conf_eval(&F.redis, "EVAL", V3_12_ACQUIRE, 1, 3, argv);
    long long v = rep->type == REDIS_REPLY_NIL ? REPLY_NIL : rep->integer;

    assert_true(rep->type == REDIS_REPLY_NIL ||
                rep->type == REDIS_REPLY_INTEGER);
    freeReplyObject(rep);
    return v;
}

/* A pre-3.24 Redisson client (no latch) unlocks N for owner. */
static redisReply *java_v3_unlock(const naming *n, const char *owner)
{
    const char *argv[] = {n->name, n->channel, "0", "30000", owner};

    return conf_eval(&F.redis, "EVAL", V3_PRE_LATCH_UNLOCK, 2, 5, argv);
}

/* rlock's release script, as a Redisson 3.24+ client calls it: KEYS N,
 * channel, latch; ARGV 0, lease, owner, PUBLISH, latch PX. */
static redisReply *release_script(const naming *n, const char *owner,
                                  const char *request_id, const char *lease)
{
    char latch[512];

    snprintf(latch, sizeof(latch), "%s:%s", n->latch_prefix, request_id);
    const char *argv[] = {n->name, n->channel, latch,     "0",
                          lease,   owner,      "PUBLISH", "18000"};
    return run_rlock_script(&rlock__script_lock_release, 3, 8, argv);
}

/* ------------------------------------------------------------------------ */
/* Lock                                                                     */
/* ------------------------------------------------------------------------ */

static void
test_lock_creates_hash_with_one_owner_field_counting_one(void **state)
{
    char field[128];
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_owner_shape(field);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_lock_sets_lease_to_watchdog_timeout(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_trylock_with_lease_sets_that_lease(void **state)
{
    char field[128];
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_trylock(l, 0, 7000), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, 6000, 7000);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Nested lock                                                              */
/* ------------------------------------------------------------------------ */

static void test_nested_lock_counts_in_the_same_field(void **state)
{
    char field[128];
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "3");
    conf_expect_nothing_published(&F.log);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_nested_lock_resets_lease(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_trylock(l, 0, 10000), RLOCK_OK);
    rt_sleep_ms(600);
    conf_expect_pttl(&F.redis, PLAIN.name, 1, 9500);
    assert_int_equal(rlock_trylock(l, 0, 10000), RLOCK_OK);
    conf_expect_pttl(&F.redis, PLAIN.name, 9500, 10000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Trylock that loses                                                       */
/* ------------------------------------------------------------------------ */

static void test_losing_trylock_changes_nothing(void **state)
{
    rlock *mine = lt_get_lock(F.c, PLAIN.name);
    rlock *theirs = lt_get_lock(F.other, PLAIN.name);
    char *before, *after;
    long long pttl;
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    pttl = rt_cmd_int(&F.redis, "PTTL %s", PLAIN.name);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_monitor_finish(&m);

    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_pttl(&F.redis, PLAIN.name, 1, pttl);
    conf_expect_scripts_only_read(&m);
    conf_expect_no_latch(&m, PLAIN.latch_prefix);
    conf_expect_nothing_published(&F.log);
    conf_monitor_free(&m);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

static void
test_waiting_trylock_listens_on_lock_channel_then_leaves_it(void **state)
{
    rlock *mine = lt_get_lock(F.c, PLAIN.name);
    rlock *theirs = lt_get_lock(F.other, PLAIN.name);
    ct_locker waiter;
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    ct_locker_start(&waiter, mine, 1200);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.channel), 1000);
    assert_true(ct_locker_wait(&waiter, 5000));
    assert_int_equal(waiter.acquired_rc, RLOCK_ETIMEDOUT);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);

    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

/* ------------------------------------------------------------------------ */
/* Unlock                                                                   */
/* ------------------------------------------------------------------------ */

static void
test_inner_unlock_takes_one_from_field_and_publishes_nothing(void **state)
{
    char field[128];
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);

    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_resets_lease_to_acquire_lease(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_trylock(l, 0, 10000), RLOCK_OK);
    assert_int_equal(rlock_trylock(l, 0, 10000), RLOCK_OK);
    rt_sleep_ms(600);
    conf_expect_pttl(&F.redis, PLAIN.name, 1, 9500);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_pttl(&F.redis, PLAIN.name, 9500, 10000);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_resets_lease_to_watchdog_timeout(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    rt_sleep_ms(600);
    conf_expect_pttl(&F.redis, PLAIN.name, 1, WATCHDOG_MS - 500);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 500, WATCHDOG_MS);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_inner_unlock_writes_latch_0_then_deletes_it(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* waits for the latch DEL */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_monitor_finish(&m);
    conf_expect_latch(&m, PLAIN.latch_prefix, "0");
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_last_unlock_deletes_the_hash(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(l);
}

static void test_last_unlock_publishes_0_once_on_lock_channel(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    rlock_free(l);
}

static void test_last_unlock_writes_latch_1_then_deletes_it(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_monitor_finish(&m);
    conf_expect_latch(&m, PLAIN.latch_prefix, "1");
    conf_monitor_free(&m);
    rlock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Unlock by a non-owner                                                    */
/* ------------------------------------------------------------------------ */

static void test_unlock_by_non_owner_changes_nothing(void **state)
{
    rlock *mine = lt_get_lock(F.c, PLAIN.name);
    rlock *theirs = lt_get_lock(F.other, PLAIN.name);
    char *before, *after;
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(mine), RLOCK_ENOTOWNER);
    conf_monitor_finish(&m);

    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_scripts_only_read(&m);
    conf_expect_no_latch(&m, PLAIN.latch_prefix);
    conf_expect_nothing_published(&F.log);
    conf_monitor_free(&m);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

static void
test_release_script_for_non_owner_replies_nil_writes_no_latch(void **state)
{
    rlock *theirs = lt_get_lock(F.other, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    expect_reply(release_script(&PLAIN, JAVA_OWNER,
                                "00112233445566778899aabbccddeeff", "30000"),
                 REPLY_NIL);

    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name)); /* no latch key */
    conf_expect_nothing_published(&F.log);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(theirs);
}

/* ------------------------------------------------------------------------ */
/* Force unlock                                                             */
/* ------------------------------------------------------------------------ */

static void test_force_unlock_deletes_held_lock_and_publishes_0(void **state)
{
    rlock *mine = lt_get_lock(F.c, PLAIN.name);
    rlock *theirs = lt_get_lock(F.other, PLAIN.name);
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_force_unlock(mine), RLOCK_OK);
    conf_monitor_finish(&m);

    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    conf_expect_no_latch(&m, PLAIN.latch_prefix);
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(theirs), RLOCK_ELOST);
    rlock_free(mine);
    rlock_free(theirs);
}

static void test_force_unlock_of_free_lock_publishes_nothing(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Watchdog                                                                 */
/* ------------------------------------------------------------------------ */

/* Connects a client whose watchdog lease is SHORT_WATCHDOG ms. */
static rlock_client *connect_short_watchdog(void)
{
    return lt_connect(F.redis.url, rlock_config_set_watchdog_timeout,
                      SHORT_WATCHDOG);
}

/* Counts Lua PEXPIREs of key to ms in m. */
static int count_pexpire(const conf_monitor *m, const char *key, const char *ms)
{
    int n = 0;

    for (int i = 0; i < m->n; i++) {
        const conf_mon_cmd *c = &m->cmds[i];

        if (c->lua && c->argc == 3 && strcasecmp(c->argv[0], "pexpire") == 0 &&
            strcmp(c->argv[1], key) == 0 && strcmp(c->argv[2], ms) == 0)
            n++;
    }
    return n;
}

static void test_watchdog_renews_lease_to_watchdog_timeout(void **state)
{
    rlock_client *wd = connect_short_watchdog();
    rlock *l = lt_get_lock(wd, PLAIN.name);
    char field[128];
    conf_monitor m;

    (void)state;
    lt_owner_field(field, sizeof(field), wd);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* over two and a half leases: the key lives on only through renewals */
    for (int i = 0; i < 8; i++) {
        rt_sleep_ms(SHORT_WATCHDOG / 3);
        conf_expect_pttl(&F.redis, PLAIN.name, 1, SHORT_WATCHDOG);
    }
    conf_monitor_finish(&m);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    /* the acquire's PEXPIRE plus one per third of a lease (about 8) */
    assert_true(count_pexpire(&m, PLAIN.name, SHORT_WATCHDOG_S) >= 1 + 5);
    conf_expect_nothing_published(&F.log);
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(wd);
}

static void test_watchdog_leaves_alone_lock_whose_field_is_gone(void **state)
{
    rlock_client *wd = connect_short_watchdog();
    rlock *l = lt_get_lock(wd, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* someone else's hold replaces ours behind the client's back */
    assert_int_equal(rt_cmd_int(&F.redis, "DEL %s", PLAIN.name), 1);
    assert_int_equal(
        rt_cmd_int(&F.redis, "HSET %s %s 1", PLAIN.name, JAVA_OWNER), 1);
    assert_int_equal(rt_cmd_int(&F.redis, "PEXPIRE %s 5000", PLAIN.name), 1);
    rt_sleep_ms(SHORT_WATCHDOG * 6 / 5); /* over three renewal periods */

    /* neither raised back to the watchdog lease nor renewed */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, SHORT_WATCHDOG + 100,
                     5000 - SHORT_WATCHDOG);
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
    rlock_client_free(wd);
}

/* ------------------------------------------------------------------------ */
/* Repeated unlock after a lost reply (the unlock latch)                     */
/* ------------------------------------------------------------------------ */

static void
test_release_repeated_with_same_request_id_answers_from_latch(void **state)
{
    static const char id1[] = "0123456789abcdef0123456789abcdef";
    static const char id2[] = "fedcba9876543210fedcba9876543210";
    const char *acquire[] = {PLAIN.name, "30000", JAVA_OWNER};
    char latch1[256], latch2[256];
    char *v;

    (void)state;
    snprintf(latch1, sizeof(latch1), "%s:%s", PLAIN.latch_prefix, id1);
    snprintf(latch2, sizeof(latch2), "%s:%s", PLAIN.latch_prefix, id2);
    for (int i = 0; i < 2; i++)
        expect_reply(
            run_rlock_script(&rlock__script_lock_acquire, 1, 3, acquire),
            REPLY_NIL);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "2");

    /* the inner unlock, then its retry: answered "0" from the latch */
    expect_reply(release_script(&PLAIN, JAVA_OWNER, id1, "30000"), 0);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    v = rt_cmd_str(&F.redis, "GET %s", latch1);
    assert_non_null(v);
    assert_string_equal(v, "0");
    free(v);
    conf_expect_pttl(&F.redis, latch1, 17000, 18000);
    expect_reply(release_script(&PLAIN, JAVA_OWNER, id1, "30000"), 0);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    conf_expect_nothing_published(&F.log);

    /* the last unlock, then its retry: answered "1", published once */
    expect_reply(release_script(&PLAIN, JAVA_OWNER, id2, "30000"), 1);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    expect_reply(release_script(&PLAIN, JAVA_OWNER, id2, "30000"), 1);
    conf_expect_nothing_published(&F.log);
    v = rt_cmd_str(&F.redis, "GET %s", latch2);
    assert_non_null(v);
    assert_string_equal(v, "1");
    free(v);
    conf_expect_pttl(&F.redis, latch2, 17000, 18000);
    /* nobody deleted the latches: the client that ran the script does */
    conf_expect_keys(&F.redis, CONF_KEYS(latch1, latch2));
}

/* The owner thread of the lost-reply test: it takes the lock twice, then
 * unlocks once when told, then once more when told, meeting the test's
 * thread at a barrier between the steps. */
typedef struct unlock_job {
    rlock *l;
    pthread_barrier_t step;
    int rc_lock, rc_first, rc_last;
} unlock_job;

static void *unlock_job_main(void *arg)
{
    unlock_job *j = arg;

    j->rc_lock = rlock_lock(j->l);
    if (j->rc_lock == RLOCK_OK)
        j->rc_lock = rlock_lock(j->l);
    pthread_barrier_wait(&j->step); /* 1: held twice */
    pthread_barrier_wait(&j->step); /* 2: Redis is paused */
    j->rc_first = rlock_unlock(j->l);
    pthread_barrier_wait(&j->step); /* 3: first unlock returned */
    pthread_barrier_wait(&j->step); /* 4: state checked */
    j->rc_last = rlock_unlock(j->l);
    return NULL;
}

static void test_unlock_retried_after_lost_reply_releases_one_hold(void **state)
{
    rlock_config *cfg = NULL;
    rlock_client *slow = NULL;
    unlock_job job;
    pthread_t t;
    conf_monitor m;
    redisReply *rep;
    char field_prefix[64];

    (void)state;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, 300), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, 5), RLOCK_OK);
    assert_int_equal(rlock_config_set_retry_interval(cfg, 100), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&slow, F.redis.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    memset(&job, 0, sizeof(job));
    job.l = lt_get_lock(slow, PLAIN.name);
    assert_int_equal(pthread_barrier_init(&job.step, NULL, 2), 0);
    assert_int_equal(pthread_create(&t, NULL, unlock_job_main, &job), 0);

    pthread_barrier_wait(&job.step); /* 1 */
    assert_int_equal(job.rc_lock, RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    /* Redis stops answering while the unlock is sent: the reply is lost
     * to the command timeout and the call is retried. */
    rt_redis_pause(&F.redis);
    pthread_barrier_wait(&job.step); /* 2 */
    rt_sleep_ms(800);
    rt_redis_resume(&F.redis);
    pthread_barrier_wait(&job.step); /* 3 */
    assert_int_equal(job.rc_first, RLOCK_OK);
    rt_sleep_ms(300); /* a latch DEL sent after the reply would be in */
    conf_monitor_finish(&m);
    conf_latch_use u = conf_latch_usage(&m, PLAIN.latch_prefix);
    /* after a retry the latch is left to expire, not deleted: a copy of an
     * earlier attempt that Redis runs late must still find it */
    assert_int_equal(u.deleted, 0);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, u.key));
    assert_true(rt_cmd_int(&F.redis, "PTTL %s", u.key) > 0);

    /* one hold of two was released, however many times the script ran */
    rep = rt_cmd(&F.redis, "HGETALL %s", PLAIN.name);
    assert_non_null(rep);
    assert_int_equal(rep->elements, 2);
    snprintf(field_prefix, sizeof(field_prefix), "%s:", rlock_client_id(slow));
    assert_memory_equal(rep->element[0]->str, field_prefix,
                        strlen(field_prefix));
    assert_string_equal(rep->element[1]->str, "1");
    freeReplyObject(rep);
    conf_expect_nothing_published(&F.log);

    /* the retry really happened, with the same latch key, and the script
     * wrote that latch once */
    {
        int runs = 0;

        assert_int_equal(u.sets, 1);
        assert_string_equal(u.value, "0");
        for (int i = 0; i < m.n; i++)
            for (int a = 1; a < m.cmds[i].argc; a++)
                if (!m.cmds[i].lua && strcmp(m.cmds[i].argv[a], u.key) == 0 &&
                    (strcasecmp(m.cmds[i].argv[0], "evalsha") == 0 ||
                     strcasecmp(m.cmds[i].argv[0], "eval") == 0))
                    runs++;
        print_message("release script ran %d times for one unlock\n", runs);
        assert_true(runs >= 2);
    }
    conf_monitor_free(&m);

    pthread_barrier_wait(&job.step); /* 4 */
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(job.rc_last, RLOCK_OK);
    /* the first unlock's latch runs out with its lifetime, (5 + 1) x
     * (300 + 100) ms here */
    {
        int64_t deadline = rt_now_ms() + 2400 + 3000;
        while (rt_cmd_int(&F.redis, "EXISTS %s", u.key) != 0 &&
               rt_now_ms() < deadline)
            rt_sleep_ms(20);
    }
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    pthread_barrier_destroy(&job.step);
    rlock_free(job.l);
    rlock_client_free(slow);
}

/* ------------------------------------------------------------------------ */
/* Redisson 3.x peers that know no latch                                    */
/* ------------------------------------------------------------------------ */

/* Asserts that key is a hash with one field, owned by client c (any thread
 * of it), holding value. */
static void expect_hash_owned_by(const char *key, rlock_client *c,
                                 const char *value)
{
    redisReply *rep = rt_cmd(&F.redis, "HGETALL %s", key);
    size_t n = strlen(rlock_client_id(c));

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_memory_equal(rep->element[0]->str, rlock_client_id(c), n);
    assert_int_equal(rep->element[0]->str[n], ':');
    conf_expect_owner_shape(rep->element[0]->str);
    assert_string_equal(rep->element[1]->str, value);
    freeReplyObject(rep);
}

static void
test_redisson_3x_unlock_without_latch_wakes_rlock_waiter(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    ct_locker waiter;
    int64_t released;

    (void)state;
    /* a 3.12 client holds twice (its first hold written with HSET) */
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER, "30000"),
                     REPLY_NIL);
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER, "30000"),
                     REPLY_NIL);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "2");
    assert_int_equal(rlock_is_locked(l), 1);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);

    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.channel), 2000);

    /* its inner unlock: no message, the waiter keeps waiting */
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER), 0);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_false(ct_locker_wait(&waiter, 200));

    /* its last unlock: DEL and "0" on the channel wake rlock's waiter */
    released = rt_now_ms();
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER), 1);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    assert_true(waiter.done_ms - released < CT_WAKE_BOUND_MS);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    expect_hash_owned_by(PLAIN.name, F.c, "1");
    conf_expect_published(&F.log, PLAIN.channel, "0");

    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    rlock_free(l);
}

static void test_redisson_3x_waiter_sees_rlock_hold_and_release(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    char field[128];
    long long ttl;

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    /* the 3.x acquire is told the lock is busy for about a lease */
    ttl = java_v3_acquire(PLAIN.name, JAVA_OWNER, "30000");
    assert_in_range(ttl, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_hash(&F.redis, PLAIN.name, field, "2");

    /* rlock's inner unlock leaves no latch behind and says nothing */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    ttl = java_v3_acquire(PLAIN.name, JAVA_OWNER, "30000");
    assert_in_range(ttl, WATCHDOG_MS - 1000, WATCHDOG_MS);

    /* its last unlock publishes what a 3.x waiter listens for, and then
     * the 3.x client takes the lock */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER, "30000"),
                     REPLY_NIL);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER), 1);
    rlock_free(l);
}

static void test_redisson_3x_unlock_of_rlock_hold_changes_nothing(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER), REPLY_NIL);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    free(before);
    free(after);
    rlock_free(l);
}

static void test_rlock_unlock_of_redisson_3x_hold_changes_nothing(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER_2, "30000"),
                     REPLY_NIL);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    /* the 3.x holder still owns it */
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER_2), 1);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    free(before);
    free(after);
    rlock_free(l);
}

static void test_rlock_force_unlock_breaks_redisson_3x_hold(void **state)
{
    rlock *l = lt_get_lock(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER_2, "30000"),
                     REPLY_NIL);
    assert_int_equal(java_v3_acquire(PLAIN.name, JAVA_OWNER_2, "30000"),
                     REPLY_NIL);
    assert_int_equal(rlock_force_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    /* the 3.x holder's own unlock now finds nothing (Java would throw
     * IllegalMonitorStateException) */
    expect_reply(java_v3_unlock(&PLAIN, JAVA_OWNER_2), REPLY_NIL);
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
}

/* ------------------------------------------------------------------------ */
/* Lock names with braces: every derived name follows the brace rule        */
/* ------------------------------------------------------------------------ */

/* Runs a whole life cycle on n and checks every name Redis sees: the hash
 * at exactly n->name, latches under n->latch_prefix, waiting on and
 * publishing to exactly n->channel. */
static void check_life_cycle_names(const naming *n)
{
    rlock *mine = lt_get_lock(F.c, n->name);
    rlock *theirs = lt_get_lock(F.other, n->name);
    char field[128];
    ct_locker waiter;
    conf_monitor m;

    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(mine), RLOCK_OK);
    assert_int_equal(rlock_lock(mine), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(n->name));
    conf_expect_hash(&F.redis, n->name, field, "2");
    conf_expect_nothing_published(&F.log);

    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(n->name));
    conf_monitor_finish(&m);
    conf_expect_latch(&m, n->latch_prefix, "0");
    conf_monitor_free(&m);
    conf_expect_nothing_published(&F.log);

    ct_locker_start(&waiter, theirs, 10000);
    conf_expect_channels(&F.redis, CONF_KEYS(n->channel), 2000);

    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(n->name));
    conf_monitor_finish(&m);
    conf_expect_latch(&m, n->latch_prefix, "1");
    conf_monitor_free(&m);
    conf_expect_published(&F.log, n->channel, "0");
    expect_hash_owned_by(n->name, F.other, "1");

    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, n->channel, "0");
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);
    rlock_free(mine);
    rlock_free(theirs);
}

static void
test_plain_name_is_wrapped_in_braces_for_channel_and_latch(void **state)
{
    (void)state;
    check_life_cycle_names(&PLAIN);
}

static void test_name_with_leading_hash_tag_is_used_as_is(void **state)
{
    (void)state;
    check_life_cycle_names(&LEADING_TAG);
}

static void test_name_with_inner_hash_tag_is_used_as_is(void **state)
{
    (void)state;
    check_life_cycle_names(&INNER_TAG);
}

static void test_name_with_empty_braces_is_used_as_is(void **state)
{
    (void)state;
    check_life_cycle_names(&EMPTY_TAG);
}

static void test_name_with_open_brace_only_is_used_as_is(void **state)
{
    (void)state;
    check_life_cycle_names(&OPEN_BRACE);
}

static void test_name_with_close_brace_only_is_wrapped(void **state)
{
    (void)state;
    check_life_cycle_names(&CLOSE_BRACE);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, conf_setup, conf_teardown)
    const struct CMUnitTest tests[] = {
        /* lock */
        T(test_lock_creates_hash_with_one_owner_field_counting_one),
        T(test_lock_sets_lease_to_watchdog_timeout),
        T(test_trylock_with_lease_sets_that_lease),
        /* nested lock */
        T(test_nested_lock_counts_in_the_same_field),
        T(test_nested_lock_resets_lease),
        /* trylock that loses */
        T(test_losing_trylock_changes_nothing),
        T(test_waiting_trylock_listens_on_lock_channel_then_leaves_it),
        /* unlock and last unlock */
        T(test_inner_unlock_takes_one_from_field_and_publishes_nothing),
        T(test_inner_unlock_resets_lease_to_acquire_lease),
        T(test_inner_unlock_resets_lease_to_watchdog_timeout),
        T(test_inner_unlock_writes_latch_0_then_deletes_it),
        T(test_last_unlock_deletes_the_hash),
        T(test_last_unlock_publishes_0_once_on_lock_channel),
        T(test_last_unlock_writes_latch_1_then_deletes_it),
        /* unlock by a non-owner */
        T(test_unlock_by_non_owner_changes_nothing),
        T(test_release_script_for_non_owner_replies_nil_writes_no_latch),
        /* force unlock */
        T(test_force_unlock_deletes_held_lock_and_publishes_0),
        T(test_force_unlock_of_free_lock_publishes_nothing),
        /* watchdog */
        T(test_watchdog_renews_lease_to_watchdog_timeout),
        T(test_watchdog_leaves_alone_lock_whose_field_is_gone),
        /* repeated unlock after a lost reply */
        T(test_release_repeated_with_same_request_id_answers_from_latch),
        T(test_unlock_retried_after_lost_reply_releases_one_hold),
        /* Redisson 3.x without the latch */
        T(test_redisson_3x_unlock_without_latch_wakes_rlock_waiter),
        T(test_redisson_3x_waiter_sees_rlock_hold_and_release),
        T(test_redisson_3x_unlock_of_rlock_hold_changes_nothing),
        T(test_rlock_unlock_of_redisson_3x_hold_changes_nothing),
        T(test_rlock_force_unlock_breaks_redisson_3x_hold),
        /* names */
        T(test_plain_name_is_wrapped_in_braces_for_channel_and_latch),
        T(test_name_with_leading_hash_tag_is_used_as_is),
        T(test_name_with_inner_hash_tag_is_used_as_is),
        T(test_name_with_empty_braces_is_used_as_is),
        T(test_name_with_open_brace_only_is_used_as_is),
        T(test_name_with_close_brace_only_is_wrapped),
    };
#undef T

    rt_require_redis();
    return conf_run_suite(tests, sizeof(tests) / sizeof(tests[0]), &F);
}
