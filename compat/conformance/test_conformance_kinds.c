/*
 * test_conformance_kinds.c: after every operation on a fair, read-write,
 * fenced or spin lock, the exact Redis state and the exact messages are
 * those ../shared/REDISSON-PROTOCOL.md describes for Redisson's namesakes
 * (sections 1, 3, 4, 5 and 6), so that Java services share them with rlock.
 *
 * What is compared, with the readers test_conformance.c uses for the plain
 * lock (compat/support/conformance_support.c):
 * - keys: the whole keyspace (KEYS *), flushed before each test; types,
 *   hash fields and values, string values, list and sorted-set contents,
 *   PTTL bounds;
 * - the unlock latch, in a MONITOR log (rlock deletes it right after the
 *   reply, as Redisson does);
 * - messages: every message published on any channel (PSUBSCRIBE * on a
 *   connection of its own), in order, read up to a sentinel the test
 *   publishes, so "nothing else" needs no sleep;
 * - subscriptions: PUBSUB CHANNELS while a waiter waits.
 *
 * Redisson's fair and read-write acquire, and their unlocks, are written
 * here from the facts sheet's tables (our own Lua, not Redisson's text) and
 * run by hand with EVAL as a Java client would, interleaved with rlock on
 * the same name, to check exclusion and wake-ups both ways.
 *
 * Time: the fair lock's scores are wall-clock deadlines, so they are checked
 * against CLOCK_REALTIME with a slack of SCORE_SLACK_MS; gaps between scores
 * are exact.
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
#include <time.h>

#include "compat_testing.h"
#include "conformance_support.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define WATCHDOG_MS       30000 /* Redisson's default lockWatchdogTimeout */
#define FAIR_WAIT_DEFAULT 5000  /* rlock's default fair wait timeout */
#define SCORE_SLACK_MS    500   /* wall clock vs. a fair score */
#define LONG_WAIT_MS      10000 /* a waiter's budget that never runs out */

/* A Redisson client that is not rlock: a UUID and thread ids. */
#define JAVA_OWNER   "0c9e7f7a-3d1b-4e8f-9a51-6b2d4c8e1f30:57"
#define JAVA_OWNER_2 "0c9e7f7a-3d1b-4e8f-9a51-6b2d4c8e1f30:58"
/* The request id of every unlock the simulated Java client makes. */
#define JAVA_REQUEST_ID "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"

/* ------------------------------------------------------------------------ */
/* Names (section 1.2), spelled out for each shape the brace rule separates */
/* ------------------------------------------------------------------------ */

typedef struct kind_names {
    const char *name;
    const char *channel;      /* lock channel; a fair waiter's is + ":owner" */
    const char *latch_prefix; /* the latch key is this + ":" + 32 hex */
    const char *queue;        /* fair queue list */
    const char *zset;         /* fair timeout sorted set */
    const char *token;        /* fenced token counter */
    const char *rw_channel;   /* read-write channel */
    const char *rw_prefix;    /* keyPrefix of read timeout keys */
} kind_names;

static const kind_names PLAIN = {
    "kinds",
    "redisson_lock__channel:{kinds}",
    "redisson_unlock_latch:{kinds}",
    "redisson_lock_queue:{kinds}",
    "redisson_lock_timeout:{kinds}",
    "redisson_lock_token:{kinds}",
    "redisson_rwlock:{kinds}",
    "{kinds}",
};
static const kind_names LEADING_TAG = {
    "{a}b",
    "redisson_lock__channel:{a}b",
    "redisson_unlock_latch:{a}b",
    "redisson_lock_queue:{a}b",
    "redisson_lock_timeout:{a}b",
    "redisson_lock_token:{a}b",
    "redisson_rwlock:{a}b",
    "{a}b",
};
static const kind_names INNER_TAG = {
    "x{a}y",
    "redisson_lock__channel:x{a}y",
    "redisson_unlock_latch:x{a}y",
    "redisson_lock_queue:x{a}y",
    "redisson_lock_timeout:x{a}y",
    "redisson_lock_token:x{a}y",
    "redisson_rwlock:x{a}y",
    "x{a}y",
};

/* Writes a fair waiter's own channel: the lock channel + ":" + owner. */
static void fair_channel(char *buf, size_t n, const kind_names *k,
                         const char *owner)
{
    snprintf(buf, n, "%s:%s", k->channel, owner);
}

/* Writes the k-th read timeout key of owner (section 4). */
static void rw_timeout_key(char *buf, size_t n, const kind_names *k,
                           const char *owner, int i)
{
    snprintf(buf, n, "%s:%s:rwlock_timeout:%d", k->rw_prefix, owner, i);
}

/* ------------------------------------------------------------------------ */
/* Redisson's scripts, written from REDISSON-PROTOCOL.md sections 3 and 4   */
/* ------------------------------------------------------------------------ */

/* Purge: drop queue heads whose deadline (zset score) is <= now. */
#define FAIR_PURGE_LUA(now)                                                 \
    "while true do\n"                                                       \
    "    local head = redis.call('lindex', KEYS[2], 0)\n"                   \
    "    if head == false then break end\n"                                 \
    "    local s = redis.call('zscore', KEYS[3], head)\n"                   \
    "    if s == false or tonumber(s) > tonumber(" now ") then break end\n" \
    "    redis.call('zrem', KEYS[3], head)\n"                               \
    "    redis.call('lpop', KEYS[2])\n"                                     \
    "end\n"

/* The Free and Re-entry steps; ARGV[1] lease, ARGV[2] owner. */
#define FAIR_TAKE_LUA(wait)                                                  \
    "if redis.call('exists', KEYS[1]) == 0 and\n"                            \
    "   (redis.call('exists', KEYS[2]) == 0 or\n"                            \
    "    redis.call('lindex', KEYS[2], 0) == ARGV[2]) then\n"                \
    "    redis.call('lpop', KEYS[2])\n"                                      \
    "    redis.call('zrem', KEYS[3], ARGV[2])\n"                             \
    "    local rest = redis.call('zrange', KEYS[3], 0, -1)\n"                \
    "    for i = 1, #rest do\n"                                              \
    "        redis.call('zincrby', KEYS[3], -tonumber(" wait "), rest[i])\n" \
    "    end\n"                                                              \
    "    redis.call('hset', KEYS[1], ARGV[2], 1)\n"                          \
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"                          \
    "    return nil\n"                                                       \
    "end\n"                                                                  \
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"                 \
    "    redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"                       \
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"                          \
    "    return nil\n"                                                       \
    "end\n"

/* Fair acquire, waiting form. KEYS N, queue, zset; ARGV lease, owner, wait,
 * now. */
/* clang-format off */
static const char FAIR_ACQUIRE[] =
    FAIR_PURGE_LUA("ARGV[4]") FAIR_TAKE_LUA("ARGV[3]")
    "if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then\n"
    "    local p = redis.call('pttl', KEYS[1])\n"
    "    if p < 0 then return 0 end\n"
    "    return p\n"
    "end\n"
    "local last = redis.call('lindex', KEYS[2], -1)\n"
    "local base\n"
    "if last ~= false and last ~= ARGV[2] and\n"
    "   redis.call('zscore', KEYS[3], last) ~= false then\n"
    "    base = tonumber(redis.call('zscore', KEYS[3], last)) -\n"
    "           tonumber(ARGV[4])\n"
    "else\n"
    "    base = redis.call('pttl', KEYS[1])\n"
    "end\n"
    "local score = base + tonumber(ARGV[3]) + tonumber(ARGV[4])\n"
    "if redis.call('zadd', KEYS[3], score, ARGV[2]) == 1 then\n"
    "    redis.call('rpush', KEYS[2], ARGV[2])\n"
    "end\n"
    "return base\n";
/* clang-format on */

/* Fair acquire, try-once form. KEYS N, queue, zset; ARGV lease, owner, now,
 * wait. */
static const char FAIR_TRY_ONCE[] =
    FAIR_PURGE_LUA("ARGV[3]") FAIR_TAKE_LUA("ARGV[4]") "return 1\n";

/* Fair unlock. KEYS N, queue, zset, channel, latch; ARGV 0, lease, owner,
 * now, publish command, latch PX. */
/* clang-format off */
static const char FAIR_UNLOCK[] =
    "local latch = redis.call('get', KEYS[5])\n"
    "if latch ~= false then return tonumber(latch) end\n"
    FAIR_PURGE_LUA("ARGV[4]")
    "if redis.call('exists', KEYS[1]) == 0 then\n"
    "    local head = redis.call('lindex', KEYS[2], 0)\n"
    "    if head ~= false then\n"
    "        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])\n"
    "    end\n"
    "    redis.call('set', KEYS[5], '1', 'px', ARGV[6])\n"
    "    return 1\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)\n"
    "if left > 0 then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    redis.call('set', KEYS[5], '0', 'px', ARGV[6])\n"
    "    return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call('set', KEYS[5], '1', 'px', ARGV[6])\n"
    "local first = redis.call('lindex', KEYS[2], 0)\n"
    "if first ~= false then\n"
    "    redis.call(ARGV[5], KEYS[4] .. ':' .. first, ARGV[1])\n"
    "end\n"
    "return 1\n";
/* clang-format on */

/* Read acquire. KEYS N, timeout prefix; ARGV lease, R, W. */
static const char READ_ACQUIRE[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "    redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "    redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "    redis.call('set', KEYS[2] .. ':1', 1)\n"
    "    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return nil\n"
    "end\n"
    "if mode == 'read' or (mode == 'write' and\n"
    "   redis.call('hexists', KEYS[1], ARGV[3]) == 1) then\n"
    "    local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "    local key = KEYS[2] .. ':' .. count\n"
    "    redis.call('set', key, 1)\n"
    "    redis.call('pexpire', key, ARGV[1])\n"
    "    local left = redis.call('pttl', KEYS[1])\n"
    "    redis.call('pexpire', KEYS[1], math.max(left, tonumber(ARGV[1])))\n"
    "    return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Read unlock. KEYS N, channel, timeout prefix, key prefix, latch; ARGV 0,
 * R, publish command, latch PX. */
static const char READ_UNLOCK[] =
    "local latch = redis.call('get', KEYS[5])\n"
    "if latch ~= false then return tonumber(latch) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "    redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "    redis.call('set', KEYS[5], '1', 'px', ARGV[4])\n"
    "    return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end\n"
    "local count = redis.call('hincrby', KEYS[1], ARGV[2], -1)\n"
    "if count == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end\n"
    "redis.call('del', KEYS[3] .. ':' .. (count + 1))\n"
    "if redis.call('hlen', KEYS[1]) > 1 then\n"
    "    local longest = -3\n"
    "    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do\n"
    "        local n = tonumber(redis.call('hget', KEYS[1], field))\n"
    "        if type(n) == 'number' then\n"
    "            for i = n, 1, -1 do\n"
    "                local t = redis.call('pttl', KEYS[4] .. ':' .. field ..\n"
    "                                     ':rwlock_timeout:' .. i)\n"
    "                longest = math.max(longest, t)\n"
    "            end\n"
    "        end\n"
    "    end\n"
    "    if longest > 0 then\n"
    "        redis.call('pexpire', KEYS[1], longest)\n"
    "        redis.call('set', KEYS[5], '0', 'px', ARGV[4])\n"
    "        return 0\n"
    "    end\n"
    "    if mode == 'write' then\n"
    "        redis.call('set', KEYS[5], '0', 'px', ARGV[4])\n"
    "        return 0\n"
    "    end\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[3], KEYS[2], ARGV[1])\n"
    "redis.call('set', KEYS[5], '1', 'px', ARGV[4])\n"
    "return 1\n";

/* Write acquire. KEYS N; ARGV lease, W. */
static const char WRITE_ACQUIRE[] =
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "    redis.call('hset', KEYS[1], 'mode', 'write')\n"
    "    redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "    redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "    return nil\n"
    "end\n"
    "if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 "
    "then\n"
    "    redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "    local left = redis.call('pttl', KEYS[1])\n"
    "    redis.call('pexpire', KEYS[1], left + tonumber(ARGV[1]))\n"
    "    return nil\n"
    "end\n"
    "return redis.call('pttl', KEYS[1])\n";

/* Write unlock. KEYS N, channel, latch; ARGV 1, lease, W, publish command,
 * latch PX. */
static const char WRITE_UNLOCK[] =
    "local latch = redis.call('get', KEYS[3])\n"
    "if latch ~= false then return tonumber(latch) end\n"
    "local mode = redis.call('hget', KEYS[1], 'mode')\n"
    "if mode == false then\n"
    "    redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "    redis.call('set', KEYS[3], '1', 'px', ARGV[5])\n"
    "    return nil\n"
    "end\n"
    "if mode ~= 'write' then return nil end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)\n"
    "if count > 0 then\n"
    "    redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "    redis.call('set', KEYS[3], '0', 'px', ARGV[5])\n"
    "    return 0\n"
    "end\n"
    "redis.call('hdel', KEYS[1], ARGV[3])\n"
    "if redis.call('hlen', KEYS[1]) == 1 then\n"
    "    redis.call('del', KEYS[1])\n"
    "    redis.call(ARGV[4], KEYS[2], ARGV[1])\n"
    "else\n"
    "    redis.call('hset', KEYS[1], 'mode', 'read')\n"
    "end\n"
    "redis.call('set', KEYS[3], '1', 'px', ARGV[5])\n"
    "return 1\n";

/* ------------------------------------------------------------------------ */
/* Fixture                                                                  */
/* ------------------------------------------------------------------------ */

static conf_fixture F;

/* ------------------------------------------------------------------------ */
/* MONITOR: the commands scripts and clients ran                            */
/* ------------------------------------------------------------------------ */

/* Counts the scripts (EVAL/EVALSHA) clients sent with key as KEYS[1]. */
static int count_scripts_on(const conf_monitor *m, const char *key)
{
    int n = 0;

    for (int i = 0; i < m->n; i++) {
        const conf_mon_cmd *c = &m->cmds[i];

        if (!c->lua && c->argc >= 4 &&
            (strcasecmp(c->argv[0], "evalsha") == 0 ||
             strcasecmp(c->argv[0], "eval") == 0) &&
            strcmp(c->argv[3], key) == 0)
            n++;
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

/* Asserts that key is a string holding value. */
static void expect_str_key(const char *key, const char *value)
{
    char *got;

    conf_expect_type(&F.redis, key, "string");
    got = rt_cmd_str(&F.redis, "GET %s", key);
    assert_non_null(got);
    assert_string_equal(got, value);
    free(got);
}

/* Asserts that the list queue holds exactly the NULL-terminated owners, in
 * order. */
static void expect_queue(const char *queue, const char *const *owners)
{
    redisReply *rep = rt_cmd(&F.redis, "LRANGE %s 0 -1", queue);
    size_t n = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    while (owners[n] != NULL)
        n++;
    if (rep->elements != n)
        for (size_t i = 0; i < rep->elements; i++)
            print_error("queued: %s\n", rep->element[i]->str);
    assert_int_equal(rep->elements, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(rep->element[i]->str, owners[i]);
    freeReplyObject(rep);
    conf_expect_type(&F.redis, queue, "list");
}

/* Returns the score of member in zset, asserting that it has one. */
static long long zscore(const char *zset, const char *member)
{
    char *s = rt_cmd_str(&F.redis, "ZSCORE %s %s", zset, member);
    long long v;

    if (s == NULL)
        fail_msg("%s has no member %s", zset, member);
    v = atoll(s);
    free(s);
    return v;
}

/* Asserts that the fair lock k's zset holds exactly n members, one of them
 * owner with the deadline a waiter enqueued behind the holder gets: the
 * lock's expiry (now + PTTL) + wait, on the wall clock. */
static void expect_fair_deadline(const kind_names *k, const char *owner,
                                 long long wait, long long n)
{
    long long score = zscore(k->zset, owner);
    long long pttl = rt_cmd_int(&F.redis, "PTTL %s", k->name);
    long long want = ct_wall_ms() + pttl + wait;

    conf_expect_type(&F.redis, k->zset, "zset");
    assert_int_equal(rt_cmd_int(&F.redis, "ZCARD %s", k->zset), n);
    if (score < want - SCORE_SLACK_MS || score > want + SCORE_SLACK_MS)
        fail_msg("score of %s is %lld, expected now + PTTL + %lld = %lld",
                 owner, score, wait, want);
}

/* Waits until the fair queue of k has n entries (3 s at most). */
static void wait_queue_len(const kind_names *k, long long n)
{
    int64_t deadline = rt_now_ms() + 3000;
    long long got;

    while ((got = rt_cmd_int(&F.redis, "LLEN %s", k->queue)) != n) {
        if (rt_now_ms() >= deadline)
            fail_msg("%s has %lld entries, expected %lld", k->queue, got, n);
        rt_sleep_ms(5);
    }
}

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

static rlock *fair_get(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fair_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

static rlock *fenced_get(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fenced_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

static rlock *spin_get(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_spin_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

static rlock_rw *rw_get(rlock_client *c, const char *name)
{
    rlock_rw *rw = NULL;

    assert_int_equal(rlock_rw_get(c, name, &rw), RLOCK_OK);
    assert_non_null(rw);
    assert_non_null(rlock_rw_read(rw));
    assert_non_null(rlock_rw_write(rw));
    return rw;
}

/* ------------------------------------------------------------------------ */
/* A thread that takes a lock and holds it until told                       */
/* ------------------------------------------------------------------------ */

typedef struct worker {
    rlock_client *client;
    rlock *l;
    int64_t wait_ms;  /* RLOCK_WAIT_FOREVER with a watchdog lease: lock() */
    int64_t lease_ms; /* RLOCK_LEASE_WATCHDOG or a lease */
    int fenced;       /* take it with the token-returning calls */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char field[128]; /* "<client uuid>:<thread id>" of the thread */
    int ready, done, release;
    int rc, unlock_rc;
    int64_t token, done_ms;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    int64_t token = -77;
    int rc;

    pthread_mutex_lock(&w->mu);
    snprintf(w->field, sizeof(w->field), "%s:%llu", rlock_client_id(w->client),
             (unsigned long long)rlock_thread_id());
    w->ready = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);

    if (w->wait_ms == RLOCK_WAIT_FOREVER && w->lease_ms == RLOCK_LEASE_WATCHDOG)
        rc = w->fenced ? rlock_fenced_lock(w->l, &token) : rlock_lock(w->l);
    else if (w->fenced)
        rc = rlock_fenced_trylock(w->l, w->wait_ms, w->lease_ms, &token);
    else
        rc = rlock_trylock(w->l, w->wait_ms, w->lease_ms);

    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->token = token;
    w->done = 1;
    w->done_ms = rt_now_ms();
    pthread_cond_broadcast(&w->cv);
    while (!w->release)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    w->unlock_rc = rc == RLOCK_OK ? rlock_unlock(w->l) : RLOCK_OK;
    return NULL;
}

/* Starts a thread of client c that takes l (waiting wait_ms, with lease_ms)
 * and holds it until worker_release(); returns once w->field is set. */
static void worker_start_ex(worker *w, rlock_client *c, rlock *l,
                            int64_t wait_ms, int64_t lease_ms, int fenced)
{
    memset(w, 0, sizeof(*w));
    w->client = c;
    w->l = l;
    w->wait_ms = wait_ms;
    w->lease_ms = lease_ms;
    w->fenced = fenced;
    assert_int_equal(pthread_mutex_init(&w->mu, NULL), 0);
    assert_int_equal(pthread_cond_init(&w->cv, NULL), 0);
    assert_int_equal(pthread_create(&w->thread, NULL, worker_main, w), 0);
    pthread_mutex_lock(&w->mu);
    while (!w->ready)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void worker_start(worker *w, rlock_client *c, rlock *l, int64_t wait_ms)
{
    worker_start_ex(w, c, l, wait_ms, RLOCK_LEASE_WATCHDOG, 0);
}

/* Waits up to timeout_ms for the thread's acquire to return. Returns 1 if
 * it has, 0 if it is still waiting. */
static int worker_wait(worker *w, int timeout_ms)
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
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0)
        ;
    done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

/* Asserts that the thread acquired within timeout_ms. */
static void worker_expect_acquired(worker *w, int timeout_ms)
{
    if (!worker_wait(w, timeout_ms))
        fail_msg("the waiter did not return within %d ms", timeout_ms);
    if (w->rc != RLOCK_OK)
        fail_msg("the waiter got %s", rlock_err_name(w->rc));
}

/* Lets the thread unlock (if it acquired), joins it and returns the
 * unlock's result (RLOCK_OK when it never acquired). */
static int worker_release(worker *w)
{
    pthread_mutex_lock(&w->mu);
    w->release = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    assert_int_equal(pthread_join(w->thread, NULL), 0);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return w->unlock_rc;
}

/* ------------------------------------------------------------------------ */
/* Redisson's scripts run by hand: a simulated Java client                  */
/* ------------------------------------------------------------------------ */

#define REPLY_NIL (-1000000LL)

/* Runs Lua text by EVAL; returns REPLY_NIL for a nil reply, else the
 * integer reply (anything else fails the test). */
static long long run_lua(const char *lua, int numkeys, int argc,
                         const char **argv)
{
    redisReply *rep = conf_eval(&F.redis, "EVAL", lua, numkeys, argc, argv);
    long long v = 0;

    if (rep->type == REDIS_REPLY_NIL)
        v = REPLY_NIL;
    else if (rep->type == REDIS_REPLY_INTEGER)
        v = rep->integer;
    else
        fail_msg("script reply type %d: %s", rep->type,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "-");
    freeReplyObject(rep);
    return v;
}

/* The Java client deletes its latch after the reply, as Redisson does. */
static void java_drop_latch(const char *latch)
{
    freeReplyObject(rt_cmd(&F.redis, "DEL %s", latch));
}

/* Fair acquire, waiting form, with the given "now". */
static long long java_fair_acquire_at(const kind_names *k, const char *owner,
                                      long long wait, long long now)
{
    char wait_s[32], now_s[32];
    const char *argv[] = {k->name, k->queue, k->zset, "30000",
                          owner,   wait_s,   now_s};

    snprintf(wait_s, sizeof(wait_s), "%lld", wait);
    snprintf(now_s, sizeof(now_s), "%lld", now);
    return run_lua(FAIR_ACQUIRE, 3, 7, argv);
}

static long long java_fair_acquire(const kind_names *k, const char *owner,
                                   long long wait)
{
    return java_fair_acquire_at(k, owner, wait, ct_wall_ms());
}

/* Fair acquire, try-once form (tryLock() with no wait). */
static long long java_fair_try_once(const kind_names *k, const char *owner)
{
    char now_s[32];
    const char *argv[] = {k->name, k->queue, k->zset, "30000",
                          owner,   now_s,    "5000"};

    snprintf(now_s, sizeof(now_s), "%lld", (long long)ct_wall_ms());
    return run_lua(FAIR_TRY_ONCE, 3, 7, argv);
}

/* Fair unlock by owner; returns its reply. */
static long long java_fair_unlock(const kind_names *k, const char *owner)
{
    char latch[256], now_s[32];
    const char *argv[] = {k->name, k->queue, k->zset, k->channel, latch,  "0",
                          "30000", owner,    now_s,   "PUBLISH",  "18000"};
    long long v;

    snprintf(latch, sizeof(latch), "%s:%s", k->latch_prefix, JAVA_REQUEST_ID);
    snprintf(now_s, sizeof(now_s), "%lld", (long long)ct_wall_ms());
    v = run_lua(FAIR_UNLOCK, 5, 11, argv);
    java_drop_latch(latch);
    return v;
}

/* Read acquire by owner with a lease. */
static long long java_read_acquire(const kind_names *k, const char *owner,
                                   const char *lease)
{
    char prefix[256], w[160];
    const char *argv[] = {k->name, prefix, lease, owner, w};

    snprintf(prefix, sizeof(prefix), "%s:%s:rwlock_timeout", k->rw_prefix,
             owner);
    snprintf(w, sizeof(w), "%s:write", owner);
    return run_lua(READ_ACQUIRE, 2, 5, argv);
}

/* Read unlock by owner. */
static long long java_read_unlock(const kind_names *k, const char *owner)
{
    char prefix[256], latch[256];
    const char *argv[] = {k->name,      k->rw_channel, prefix,
                          k->rw_prefix, latch,         "0",
                          owner,        "PUBLISH",     "18000"};
    long long v;

    snprintf(prefix, sizeof(prefix), "%s:%s:rwlock_timeout", k->rw_prefix,
             owner);
    snprintf(latch, sizeof(latch), "%s:%s", k->latch_prefix, JAVA_REQUEST_ID);
    v = run_lua(READ_UNLOCK, 5, 9, argv);
    java_drop_latch(latch);
    return v;
}

/* Write acquire by owner with a lease. */
static long long java_write_acquire(const kind_names *k, const char *owner,
                                    const char *lease)
{
    char w[160];
    const char *argv[] = {k->name, lease, w};

    snprintf(w, sizeof(w), "%s:write", owner);
    return run_lua(WRITE_ACQUIRE, 1, 3, argv);
}

/* Write unlock by owner. */
static long long java_write_unlock(const kind_names *k, const char *owner)
{
    char w[160], latch[256];
    const char *argv[] = {k->name, k->rw_channel, latch,  "1", "30000",
                          w,       "PUBLISH",     "18000"};
    long long v;

    snprintf(w, sizeof(w), "%s:write", owner);
    snprintf(latch, sizeof(latch), "%s:%s", k->latch_prefix, JAVA_REQUEST_ID);
    v = run_lua(WRITE_UNLOCK, 3, 8, argv);
    java_drop_latch(latch);
    return v;
}

/* ------------------------------------------------------------------------ */
/* Kinds                                                                    */
/* ------------------------------------------------------------------------ */

static void test_every_handle_reports_its_kind(void **state)
{
    rlock *plain = lt_get_lock(F.c, PLAIN.name);
    rlock *fair = fair_get(F.c, PLAIN.name);
    rlock *fenced = fenced_get(F.c, PLAIN.name);
    rlock *spin = spin_get(F.c, PLAIN.name);
    rlock_rw *rw = rw_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_kind(plain), RLOCK_KIND_LOCK);
    assert_int_equal(rlock_kind(fair), RLOCK_KIND_FAIR);
    assert_int_equal(rlock_kind(rlock_rw_read(rw)), RLOCK_KIND_READ);
    assert_int_equal(rlock_kind(rlock_rw_write(rw)), RLOCK_KIND_WRITE);
    assert_int_equal(rlock_kind(fenced), RLOCK_KIND_FENCED);
    assert_int_equal(rlock_kind(spin), RLOCK_KIND_SPIN);
    assert_int_equal(rlock_kind(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_fenced_token(plain), RLOCK_ENOTSUP);
    assert_int_equal(rlock_spin_set_backoff(plain, 1, 128, 2), RLOCK_ENOTSUP);
    assert_int_equal(rlock_spin_set_backoff(spin, 0, 128, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 10, 5, 2), RLOCK_EINVAL);
    assert_int_equal(rlock_spin_set_backoff(spin, 1, 128, 17), RLOCK_EINVAL);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_rw_free(rw);
    rlock_free(spin);
    rlock_free(fenced);
    rlock_free(fair);
    rlock_free(plain);
}

/* ------------------------------------------------------------------------ */
/* Fair lock (section 3)                                                    */
/* ------------------------------------------------------------------------ */

static void test_fair_lock_of_free_lock_writes_owner_field_only(void **state)
{
    rlock *l = fair_get(F.c, PLAIN.name);
    char field[128];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* no queue, no timeout zset */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_owner_shape(field);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_fair_reentry_counts_in_the_same_field(void **state)
{
    rlock *l = fair_get(F.c, PLAIN.name);
    char field[128];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "2");
    rt_sleep_ms(600);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* the inner unlock resets the lease and says nothing */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 500, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(l);
}

static void
test_fair_last_unlock_without_waiters_publishes_nothing(void **state)
{
    rlock *l = fair_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    /* no queue head to notify: no message at all */
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
}

static void test_fair_trylock_without_wait_does_not_queue(void **state)
{
    rlock *mine = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char *before, *after;
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_monitor_finish(&m);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(
        &F.redis, CONF_KEYS(PLAIN.name)); /* the try-once form queues nobody */
    conf_expect_scripts_only_read(&m);
    conf_expect_no_latch(&m, PLAIN.latch_prefix);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    conf_monitor_free(&m);
    free(before);
    free(after);
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

/* A holder (the test's thread, client F.c) and one waiter (a thread of
 * F.other, trylock with LONG_WAIT_MS) queued behind it, subscribed. */
typedef struct fair_scene {
    const kind_names *k;
    rlock *holder;
    rlock *theirs;
    worker w;
    char channel[256]; /* the waiter's own channel */
} fair_scene;

static void fair_scene_start(fair_scene *s, const kind_names *k)
{
    memset(s, 0, sizeof(*s));
    s->k = k;
    s->holder = fair_get(F.c, k->name);
    s->theirs = fair_get(F.other, k->name);
    assert_int_equal(rlock_lock(s->holder), RLOCK_OK);
    worker_start(&s->w, F.other, s->theirs, LONG_WAIT_MS);
    wait_queue_len(k, 1);
    fair_channel(s->channel, sizeof(s->channel), k, s->w.field);
    conf_expect_channels(&F.redis, CONF_KEYS(s->channel), 2000);
    conf_expect_nothing_published(&F.log);
}

static void fair_scene_finish(fair_scene *s)
{
    assert_int_equal(worker_release(&s->w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);
    rlock_free(s->holder);
    rlock_free(s->theirs);
}

static void test_fair_waiter_is_queued_with_deadline_score(void **state)
{
    char holder_field[128];
    fair_scene s;

    (void)state;
    lt_owner_field(holder_field, sizeof(holder_field), F.c);
    fair_scene_start(&s, &PLAIN);
    conf_expect_owner_shape(s.w.field);
    assert_memory_equal(s.w.field, rlock_client_id(F.other), 36);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    conf_expect_hash(&F.redis, PLAIN.name, holder_field, "1");
    expect_queue(PLAIN.queue, CONF_KEYS(s.w.field));
    expect_fair_deadline(&PLAIN, s.w.field, LONG_WAIT_MS, 1);
    conf_expect_pttl(&F.redis, PLAIN.queue, -1, -1);
    conf_expect_pttl(&F.redis, PLAIN.zset, -1, -1);
    assert_int_equal(rlock_unlock(s.holder), RLOCK_OK);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    conf_msglog_collect(&F.log);
    fair_scene_finish(&s);
}

static void test_fair_waiter_is_notified_on_its_own_channel(void **state)
{
    fair_scene s;
    int64_t released;

    (void)state;
    fair_scene_start(&s, &PLAIN);
    released = rt_now_ms();
    assert_int_equal(rlock_unlock(s.holder), RLOCK_OK);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    assert_true(s.w.done_ms - released < CT_WAKE_BOUND_MS);
    /* "0" on the head's channel, nothing on the plain lock channel */
    conf_expect_published(&F.log, s.channel, "0");
    fair_scene_finish(&s);
}

static void test_fair_woken_waiter_holds_lock_with_queue_gone(void **state)
{
    fair_scene s;

    (void)state;
    fair_scene_start(&s, &PLAIN);
    assert_int_equal(rlock_unlock(s.holder), RLOCK_OK);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, s.w.field, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    /* it left its own channel */
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);
    conf_msglog_collect(&F.log);
    fair_scene_finish(&s);
}

/* Unlocks l once and checks what the facts sheet (1.8) says of the
 * latch: written with the unlock's reply (latch "0" or "1") and deleted
 * right after, leaving exactly the keys keys_after. */
static void unlock_expecting_latch(rlock *l, const char *const *keys_after,
                                   const char *latch)
{
    conf_monitor m;

    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    /* the key check also waits for the latch DEL */
    conf_expect_keys(&F.redis, keys_after);
    conf_monitor_finish(&m);
    conf_expect_latch(&m, PLAIN.latch_prefix, latch);
    conf_monitor_free(&m);
}

static void test_fair_unlock_writes_latch_then_deletes_it(void **state)
{
    rlock *l = fair_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    unlock_expecting_latch(l, CONF_KEYS(PLAIN.name), "0");
    unlock_expecting_latch(l, CONF_NO_KEYS, "1");
    rlock_free(l);
}

static void
test_fair_lock_without_wait_queues_with_default_fair_wait(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    worker w;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w, F.other, theirs, RLOCK_WAIT_FOREVER); /* rlock_lock */
    wait_queue_len(&PLAIN, 1);
    expect_queue(PLAIN.queue, CONF_KEYS(w.field));
    expect_fair_deadline(&PLAIN, w.field, FAIR_WAIT_DEFAULT, 1);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_fair_wait_timeout_setting_is_the_queue_slack(void **state)
{
    rlock_client *c7 =
        lt_connect(F.redis.url, rlock_config_set_fair_wait_timeout, 7000);
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(c7, PLAIN.name);
    worker w;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w, c7, theirs, RLOCK_WAIT_FOREVER);
    wait_queue_len(&PLAIN, 1);
    expect_queue(PLAIN.queue, CONF_KEYS(w.field));
    expect_fair_deadline(&PLAIN, w.field, 7000, 1);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(theirs);
    rlock_client_free(c7);
}

static void test_fair_second_waiter_score_is_first_plus_wait(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    worker w1, w2;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w1, F.other, theirs, 8000);
    wait_queue_len(&PLAIN, 1);
    worker_start(&w2, F.other, theirs, 8000);
    wait_queue_len(&PLAIN, 2);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    expect_queue(PLAIN.queue, CONF_KEYS(w1.field, w2.field));
    expect_fair_deadline(&PLAIN, w1.field, 8000, 2);
    assert_int_equal(
        zscore(PLAIN.zset, w2.field) - zscore(PLAIN.zset, w1.field), 8000);

    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    worker_expect_acquired(&w1, CT_WAKE_BOUND_MS);
    assert_int_equal(worker_release(&w1), RLOCK_OK);
    worker_expect_acquired(&w2, CT_WAKE_BOUND_MS);
    assert_int_equal(worker_release(&w2), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_fair_waiters_take_the_lock_in_queue_order(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char ch1[256], ch2[256];
    long long score2;
    worker w1, w2;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w1, F.other, theirs, LONG_WAIT_MS);
    wait_queue_len(&PLAIN, 1);
    worker_start(&w2, F.other, theirs, LONG_WAIT_MS);
    wait_queue_len(&PLAIN, 2);
    fair_channel(ch1, sizeof(ch1), &PLAIN, w1.field);
    fair_channel(ch2, sizeof(ch2), &PLAIN, w2.field);
    conf_expect_channels(&F.redis, CONF_KEYS(ch1, ch2), 2000);
    score2 = zscore(PLAIN.zset, w2.field);
    conf_expect_nothing_published(&F.log);

    /* the head is told and takes it; the second stays queued, its
     * deadline moved forward by the head's wait */
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    worker_expect_acquired(&w1, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, ch1, "0");
    assert_false(worker_wait(&w2, 300));
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    conf_expect_hash(&F.redis, PLAIN.name, w1.field, "1");
    expect_queue(PLAIN.queue, CONF_KEYS(w2.field));
    assert_int_equal(zscore(PLAIN.zset, w2.field), score2 - LONG_WAIT_MS);

    /* then the second */
    assert_int_equal(worker_release(&w1), RLOCK_OK);
    worker_expect_acquired(&w2, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, ch2, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, w2.field, "1");
    assert_int_equal(worker_release(&w2), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_fair_waiter_whose_wait_runs_out_leaves_queue(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char holder_field[128], ch[256];
    worker w;

    (void)state;
    lt_owner_field(holder_field, sizeof(holder_field), F.c);
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w, F.other, theirs, 1500);
    wait_queue_len(&PLAIN, 1);
    fair_channel(ch, sizeof(ch), &PLAIN, w.field);
    conf_expect_channels(&F.redis, CONF_KEYS(ch), 1000);
    assert_true(worker_wait(&w, 5000));
    assert_int_equal(w.rc, RLOCK_ETIMEDOUT);
    assert_int_equal(worker_release(&w), RLOCK_OK);

    /* LREM and ZREM: both gone, the holder untouched */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, holder_field, "1");
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    rlock_free(holder);
    rlock_free(theirs);
}

static void
test_fair_waiter_that_gives_up_moves_later_deadlines_forward(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    long long before;
    worker quitter, stayer;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&quitter, F.other, theirs, 2000);
    wait_queue_len(&PLAIN, 1);
    worker_start(&stayer, F.other, theirs, LONG_WAIT_MS);
    wait_queue_len(&PLAIN, 2);
    before = zscore(PLAIN.zset, stayer.field);
    assert_int_equal(before - zscore(PLAIN.zset, quitter.field), LONG_WAIT_MS);

    assert_true(worker_wait(&quitter, 6000));
    assert_int_equal(quitter.rc, RLOCK_ETIMEDOUT);
    /* every entry after the leaver: ZINCRBY -(its wait) */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    expect_queue(PLAIN.queue, CONF_KEYS(stayer.field));
    assert_int_equal(rt_cmd_int(&F.redis, "ZCARD %s", PLAIN.zset), 1);
    assert_int_equal(zscore(PLAIN.zset, stayer.field), before - 2000);
    assert_int_equal(worker_release(&quitter), RLOCK_OK);

    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    worker_expect_acquired(&stayer, CT_WAKE_BOUND_MS);
    assert_int_equal(worker_release(&stayer), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_fair_expired_queue_head_is_purged(void **state)
{
    rlock *mine = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char field[128];

    (void)state;
    assert_int_equal(rlock_lock(theirs), RLOCK_OK);
    /* a Java waiter that died long ago: its deadline has passed */
    assert_in_range(
        java_fair_acquire_at(&PLAIN, JAVA_OWNER, 5000, ct_wall_ms() - 100000),
        WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    assert_true(zscore(PLAIN.zset, JAVA_OWNER) < ct_wall_ms());

    /* the next script purges it */
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    assert_int_equal(rlock_unlock(theirs), RLOCK_OK);
    conf_expect_nothing_published(&F.log);

    /* and a dead head of a free lock does not keep it from a newcomer */
    {
        char past[32];

        snprintf(past, sizeof(past), "%lld", (long long)ct_wall_ms() - 1000);
        assert_int_equal(
            rt_cmd_int(&F.redis, "RPUSH %s %s", PLAIN.queue, JAVA_OWNER_2), 1);
        assert_int_equal(rt_cmd_int(&F.redis, "ZADD %s %s %s", PLAIN.zset, past,
                                    JAVA_OWNER_2),
                         1);
    }
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

static void test_fair_force_unlock_notifies_queue_head(void **state)
{
    rlock *forcer;
    fair_scene s;

    (void)state;
    fair_scene_start(&s, &PLAIN);
    forcer = fair_get(F.c, PLAIN.name);
    assert_int_equal(rlock_force_unlock(forcer), RLOCK_OK);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, s.channel, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, s.w.field, "1");
    /* the forced-out holder's unlock finds its hold gone */
    assert_int_equal(rlock_unlock(s.holder), RLOCK_ELOST);
    conf_expect_hash(&F.redis, PLAIN.name, s.w.field, "1");
    conf_msglog_collect(&F.log);
    fair_scene_finish(&s);
    rlock_free(forcer);
}

static void
test_fair_force_unlock_without_waiters_publishes_nothing(void **state)
{
    rlock *holder = fair_get(F.other, PLAIN.name);
    rlock *forcer = fair_get(F.c, PLAIN.name);
    conf_monitor m;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_force_unlock(forcer), RLOCK_OK);
    conf_monitor_finish(&m);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    conf_expect_no_latch(&m, PLAIN.latch_prefix);
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(holder), RLOCK_ELOST);
    rlock_free(holder);
    rlock_free(forcer);
}

/* The queue, zset and per-waiter channel of a name with a hash tag. */
static void check_fair_names(const kind_names *k)
{
    fair_scene s;

    fair_scene_start(&s, k);
    conf_expect_keys(&F.redis, CONF_KEYS(k->name, k->queue, k->zset));
    expect_queue(k->queue, CONF_KEYS(s.w.field));
    expect_fair_deadline(k, s.w.field, LONG_WAIT_MS, 1);
    assert_int_equal(rlock_unlock(s.holder), RLOCK_OK);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, s.channel, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(k->name));
    fair_scene_finish(&s);
}

static void test_fair_names_with_leading_hash_tag_are_used_as_is(void **state)
{
    (void)state;
    check_fair_names(&LEADING_TAG);
}

static void test_fair_names_with_inner_hash_tag_are_used_as_is(void **state)
{
    (void)state;
    check_fair_names(&INNER_TAG);
}

/* ------------------------------------------------------------------------ */
/* Read-write lock (section 4)                                              */
/* ------------------------------------------------------------------------ */

static void test_read_lock_writes_mode_owner_and_timeout_key(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "1"));
    expect_str_key(tk1, "1");
    conf_expect_pttl(&F.redis, tk1, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void test_read_lock_with_lease_sets_that_lease(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_trylock(rlock_rw_read(rw), 0, 7000), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_pttl(&F.redis, tk1, 6000, 7000);
    conf_expect_pttl(&F.redis, PLAIN.name, 6000, 7000);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void test_second_read_counts_two_with_second_timeout_key(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256], tk2[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    rw_timeout_key(tk2, sizeof(tk2), &PLAIN, field, 2);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1, tk2));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "2"));
    expect_str_key(tk2, "1");
    conf_expect_pttl(&F.redis, tk2, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void
test_read_unlock_deletes_highest_timeout_key_and_publishes_nothing(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "1"));
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void test_last_read_unlock_deletes_hash_and_publishes_0(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(rw);
}

static void
test_read_unlock_while_other_reader_holds_publishes_nothing(void **state)
{
    rlock_rw *mine = rw_get(F.c, PLAIN.name);
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    char field[128], tk_mine[256], tk_theirs[256];
    worker w;

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk_mine, sizeof(tk_mine), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_read(mine)), RLOCK_OK);
    worker_start(&w, F.other, rlock_rw_read(theirs), 0);
    worker_expect_acquired(&w, 2000);
    rw_timeout_key(tk_theirs, sizeof(tk_theirs), &PLAIN, w.field, 1);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk_mine, tk_theirs));
    conf_expect_hash_exact(
        &F.redis, PLAIN.name,
        CONF_FIELDS("mode", "read", field, "1", w.field, "1"));

    assert_int_equal(rlock_unlock(rlock_rw_read(mine)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk_theirs));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", w.field, "1"));
    conf_expect_nothing_published(&F.log);

    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(mine);
    rlock_rw_free(theirs);
}

static void
test_read_unlock_sets_hash_ttl_to_longest_remaining_read_hold(void **state)
{
    rlock_rw *mine = rw_get(F.c, PLAIN.name);
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    worker w;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_read(mine)), RLOCK_OK);
    worker_start_ex(&w, F.other, rlock_rw_read(theirs), 0, 10000, 0);
    worker_expect_acquired(&w, 2000);
    /* the hash keeps the longer lease of the two */
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_int_equal(rlock_unlock(rlock_rw_read(mine)), RLOCK_OK);
    /* now only the 10 s read hold is left: the hash follows it */
    conf_expect_pttl(&F.redis, PLAIN.name, 9000, 10000);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_rw_free(mine);
    rlock_rw_free(theirs);
}

static void test_write_lock_writes_mode_write_and_write_field(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], wfield[160];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void test_write_reentry_adds_the_lease_to_the_ttl(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], wfield[160];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "2"));
    /* PTTL + lease: about 60 000 after two takes */
    conf_expect_pttl(&F.redis, PLAIN.name, 2 * WATCHDOG_MS - 1500,
                     2 * WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void
test_write_inner_unlock_resets_lease_and_publishes_nothing(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], wfield[160];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    rlock_rw_free(rw);
}

static void test_write_unlock_publishes_1(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rlock_rw_free(rw);
}

static void test_writer_taking_read_adds_read_field_in_write_mode(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], wfield[160], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(
        &F.redis, PLAIN.name,
        CONF_FIELDS("mode", "write", wfield, "1", field, "1"));
    expect_str_key(tk1, "1");
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    /* the read unlock under a write hold keeps write mode, silently */
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rlock_rw_free(rw);
}

static void
test_write_unlock_with_own_read_left_switches_to_read_silently(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "1"));
    conf_expect_nothing_published(&F.log); /* the downgrade quirk */
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(rw);
}

static void test_reader_cannot_take_write(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256], *before, *after;
    conf_monitor m;

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_trylock(rlock_rw_write(rw), 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_monitor_finish(&m);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_scripts_only_read(&m);
    conf_expect_nothing_published(&F.log);
    conf_monitor_free(&m);
    assert_int_equal(rlock_hold_count(rlock_rw_write(rw)), 0);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    free(before);
    free(after);
    rlock_rw_free(rw);
}

static void test_other_writer_blocks_reader_and_writer(void **state)
{
    rlock_rw *mine = rw_get(F.c, PLAIN.name);
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(theirs)), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    assert_int_equal(
        rlock_trylock(rlock_rw_read(mine), 0, RLOCK_LEASE_WATCHDOG),
        RLOCK_ETIMEDOUT);
    assert_int_equal(
        rlock_trylock(rlock_rw_write(mine), 0, RLOCK_LEASE_WATCHDOG),
        RLOCK_ETIMEDOUT);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(theirs)), RLOCK_OK);
    free(before);
    free(after);
    rlock_rw_free(mine);
    rlock_rw_free(theirs);
}

static void test_write_unlock_1_wakes_every_waiting_reader(void **state)
{
    rlock_rw *mine = rw_get(F.c, PLAIN.name);
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    worker readers[3];
    int64_t released;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(mine)), RLOCK_OK);
    for (int i = 0; i < 3; i++)
        worker_start(&readers[i], F.other, rlock_rw_read(theirs), LONG_WAIT_MS);
    /* one subscription per client, on the read-write channel */
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.rw_channel), 2000);
    ct_wait_numsub(&F.redis, PLAIN.rw_channel, 1, 2000);
    rt_sleep_ms(200);
    for (int i = 0; i < 3; i++)
        assert_false(worker_wait(&readers[i], 0));
    conf_expect_nothing_published(&F.log);

    released = rt_now_ms();
    assert_int_equal(rlock_unlock(rlock_rw_write(mine)), RLOCK_OK);
    for (int i = 0; i < 3; i++) {
        worker_expect_acquired(&readers[i], CT_WAKE_BOUND_MS);
        assert_true(readers[i].done_ms - released < CT_WAKE_BOUND_MS);
    }
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    {
        char tk[3][256];

        for (int i = 0; i < 3; i++)
            rw_timeout_key(tk[i], sizeof(tk[i]), &PLAIN, readers[i].field, 1);
        conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk[0], tk[1], tk[2]));
        conf_expect_hash_exact(&F.redis, PLAIN.name,
                               CONF_FIELDS("mode", "read", readers[0].field,
                                           "1", readers[1].field, "1",
                                           readers[2].field, "1"));
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(worker_release(&readers[i]), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(mine);
    rlock_rw_free(theirs);
}

static void test_last_read_unlock_0_wakes_waiting_writer(void **state)
{
    rlock_rw *mine = rw_get(F.c, PLAIN.name);
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    char wfield[160];
    int64_t released;
    worker w;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_read(mine)), RLOCK_OK);
    worker_start(&w, F.other, rlock_rw_write(theirs), LONG_WAIT_MS);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.rw_channel), 2000);
    rt_sleep_ms(200);
    assert_false(worker_wait(&w, 0));
    released = rt_now_ms();
    assert_int_equal(rlock_unlock(rlock_rw_read(mine)), RLOCK_OK);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_true(w.done_ms - released < CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    snprintf(wfield, sizeof(wfield), "%s:write", w.field);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 1000);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rlock_rw_free(mine);
    rlock_rw_free(theirs);
}

static void test_read_unlock_writes_latch_then_deletes_it(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    rlock *r = rlock_rw_read(rw);
    char field[128], tk1[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    assert_int_equal(rlock_lock(r), RLOCK_OK);
    unlock_expecting_latch(r, CONF_KEYS(PLAIN.name, tk1), "0");
    unlock_expecting_latch(r, CONF_NO_KEYS, "1");
    rlock_rw_free(rw);
}

static void test_write_unlock_writes_latch_then_deletes_it(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    rlock *w = rlock_rw_write(rw);

    (void)state;
    assert_int_equal(rlock_lock(w), RLOCK_OK);
    assert_int_equal(rlock_lock(w), RLOCK_OK);
    unlock_expecting_latch(w, CONF_KEYS(PLAIN.name), "0");
    unlock_expecting_latch(w, CONF_NO_KEYS, "1");
    rlock_rw_free(rw);
}

static void test_read_force_unlock_deletes_read_lock_publishes_0(void **state)
{
    rlock_rw *holder = rw_get(F.other, PLAIN.name);
    rlock_rw *forcer = rw_get(F.c, PLAIN.name);
    char *tk;
    redisReply *rep;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_read(holder)), RLOCK_OK);
    rep = rt_cmd(&F.redis, "KEYS *rwlock_timeout*");
    assert_non_null(rep);
    assert_int_equal(rep->elements, 1);
    tk = strdup(rep->element[0]->str);
    freeReplyObject(rep);
    assert_int_equal(rlock_force_unlock(rlock_rw_read(forcer)), RLOCK_OK);
    /* DEL of the hash only: the timeout key is left to expire */
    conf_expect_keys(&F.redis, CONF_KEYS(tk));
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    assert_int_equal(rlock_unlock(rlock_rw_read(holder)), RLOCK_ELOST);
    free(tk);
    rlock_rw_free(holder);
    rlock_rw_free(forcer);
}

static void test_write_force_unlock_deletes_write_lock_publishes_1(void **state)
{
    rlock_rw *holder = rw_get(F.other, PLAIN.name);
    rlock_rw *forcer = rw_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(holder)), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(rlock_rw_write(forcer)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    assert_int_equal(rlock_unlock(rlock_rw_write(holder)), RLOCK_ELOST);
    rlock_rw_free(holder);
    rlock_rw_free(forcer);
}

static void test_read_force_unlock_leaves_write_lock_alone(void **state)
{
    rlock_rw *holder = rw_get(F.other, PLAIN.name);
    rlock_rw *forcer = rw_get(F.c, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(holder)), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    assert_int_equal(rlock_force_unlock(rlock_rw_read(forcer)), RLOCK_OK);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_write(holder)), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    free(before);
    free(after);
    rlock_rw_free(holder);
    rlock_rw_free(forcer);
}

#define SHORT_WATCHDOG 1500 /* renewed every 500 ms */

static void test_read_watchdog_renews_every_own_timeout_key(void **state)
{
    rlock_client *wd = lt_connect(
        F.redis.url, rlock_config_set_watchdog_timeout, SHORT_WATCHDOG);
    rlock_rw *rw = rw_get(wd, PLAIN.name);
    char field[128], tk1[256], tk2[256];

    (void)state;
    lt_owner_field(field, sizeof(field), wd);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    rw_timeout_key(tk2, sizeof(tk2), &PLAIN, field, 2);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    /* over two leases: the keys live on only through renewals */
    for (int i = 0; i < 6; i++) {
        rt_sleep_ms(SHORT_WATCHDOG / 3);
        conf_expect_pttl(&F.redis, PLAIN.name, 1, SHORT_WATCHDOG);
        conf_expect_pttl(&F.redis, tk1, 1, SHORT_WATCHDOG);
        conf_expect_pttl(&F.redis, tk2, 1, SHORT_WATCHDOG);
    }
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1, tk2));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "2"));
    /* so a Java reader's unlock still finds the hold alive */
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"), REPLY_NIL);
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 0);
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "2"));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_rw_free(rw);
    rlock_client_free(wd);
}

static void test_write_watchdog_renews_the_hash(void **state)
{
    rlock_client *wd = lt_connect(
        F.redis.url, rlock_config_set_watchdog_timeout, SHORT_WATCHDOG);
    rlock_rw *rw = rw_get(wd, PLAIN.name);
    char field[128], wfield[160];

    (void)state;
    lt_owner_field(field, sizeof(field), wd);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    for (int i = 0; i < 6; i++) {
        rt_sleep_ms(SHORT_WATCHDOG / 3);
        /* PEXPIRE to the watchdog timeout, not PTTL + lease */
        conf_expect_pttl(&F.redis, PLAIN.name, 1, SHORT_WATCHDOG);
    }
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rlock_rw_free(rw);
    rlock_client_free(wd);
}

/* Read and write life cycle on a name with a hash tag: timeout keys
 * "<name>:<owner>:rwlock_timeout:<k>", channel "redisson_rwlock:<name>". */
static void check_rw_names(const kind_names *k)
{
    rlock_rw *rw = rw_get(F.c, k->name);
    char field[128], wfield[160], tk1[256], tk2[256];
    conf_monitor m;

    lt_owner_field(field, sizeof(field), F.c);
    snprintf(wfield, sizeof(wfield), "%s:write", field);
    rw_timeout_key(tk1, sizeof(tk1), k, field, 1);
    rw_timeout_key(tk2, sizeof(tk2), k, field, 2);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(k->name, tk1, tk2));
    conf_expect_hash_exact(&F.redis, k->name,
                           CONF_FIELDS("mode", "read", field, "2"));
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(k->name, tk1));
    conf_monitor_finish(&m);
    conf_expect_latch(&m, k->latch_prefix, "0");
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, k->rw_channel, "0");

    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(k->name));
    conf_expect_hash_exact(&F.redis, k->name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, k->rw_channel, "1");
    rlock_rw_free(rw);
}

static void test_rw_names_with_leading_hash_tag_are_used_as_is(void **state)
{
    (void)state;
    check_rw_names(&LEADING_TAG);
}

static void test_rw_names_with_inner_hash_tag_are_used_as_is(void **state)
{
    (void)state;
    check_rw_names(&INNER_TAG);
}

/* ------------------------------------------------------------------------ */
/* Fenced lock (section 5)                                                  */
/* ------------------------------------------------------------------------ */

static void test_fenced_token_counts_take_and_reentries(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    char field[128], want[8];
    int64_t token;

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    for (int i = 1; i <= 3; i++) {
        token = -77;
        assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
        assert_int_equal(token, i);
        snprintf(want, sizeof(want), "%d", i);
        conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.token));
        expect_str_key(PLAIN.token, want);
        conf_expect_pttl(&F.redis, PLAIN.token, -1, -1);
        conf_expect_hash(&F.redis, PLAIN.name, field, want);
    }
    conf_expect_nothing_published(&F.log);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_fenced_hash_is_the_plain_locks(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    char field[128];
    int64_t token;

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_owner_shape(field);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_fenced_unlock_keeps_token_and_publishes_0(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    int64_t token;

    (void)state;
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.token));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.token));
    expect_str_key(PLAIN.token, "2");
    conf_expect_pttl(&F.redis, PLAIN.token, -1, -1);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    rlock_free(l);
}

static void test_fenced_token_reads_the_counter(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    int64_t token;

    (void)state;
    assert_int_equal(rlock_fenced_token(l), 0);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(rlock_fenced_token(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_fenced_token(l), 1);
    /* it reads Redis: a counter moved by someone else shows */
    freeReplyObject(rt_cmd(&F.redis, "SET %s 41", PLAIN.token));
    assert_int_equal(rlock_fenced_token(l), 41);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 42);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void
test_fenced_trylock_continues_the_count_in_other_client(void **state)
{
    rlock *mine = fenced_get(F.c, PLAIN.name);
    rlock *theirs = fenced_get(F.other, PLAIN.name);
    int64_t token = -77;
    worker w;

    (void)state;
    assert_int_equal(rlock_fenced_lock(mine, &token), RLOCK_OK);
    assert_int_equal(token, 1);
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    worker_start_ex(&w, F.other, theirs, 0, 5000, 1);
    worker_expect_acquired(&w, 2000);
    assert_int_equal(w.token, 2);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.token));
    conf_expect_hash(&F.redis, PLAIN.name, w.field, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, 4000, 5000);
    expect_str_key(PLAIN.token, "2");
    assert_int_equal(worker_release(&w), RLOCK_OK);
    rlock_free(mine);
    rlock_free(theirs);
}

static void test_fenced_failed_trylock_draws_no_token(void **state)
{
    rlock *mine = fenced_get(F.c, PLAIN.name);
    rlock *theirs = fenced_get(F.other, PLAIN.name);
    char *before, *after;
    int64_t token = -77;
    worker w;

    (void)state;
    worker_start_ex(&w, F.other, theirs, 0, RLOCK_LEASE_WATCHDOG, 1);
    worker_expect_acquired(&w, 2000);
    assert_int_equal(w.token, 1);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    assert_int_equal(
        rlock_fenced_trylock(mine, 0, RLOCK_LEASE_WATCHDOG, &token),
        RLOCK_ETIMEDOUT);
    assert_int_equal(token, -77);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    expect_str_key(PLAIN.token, "1");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.token));
    conf_expect_nothing_published(&F.log);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    free(before);
    free(after);
    rlock_free(mine);
    rlock_free(theirs);
}

static void test_fenced_plain_lock_call_draws_a_token(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    int64_t token;

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    expect_str_key(PLAIN.token, "1");
    assert_int_equal(rlock_trylock(l, 0, 5000), RLOCK_OK);
    expect_str_key(PLAIN.token, "2");
    assert_int_equal(rlock_fenced_trylock(l, 0, RLOCK_LEASE_WATCHDOG, &token),
                     RLOCK_OK);
    assert_int_equal(token, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.token));
    rlock_free(l);
}

static void test_fenced_waiter_is_woken_by_0_on_lock_channel(void **state)
{
    rlock *mine = fenced_get(F.c, PLAIN.name);
    rlock *theirs = fenced_get(F.other, PLAIN.name);
    int64_t token, released;
    worker w;

    (void)state;
    assert_int_equal(rlock_fenced_lock(mine, &token), RLOCK_OK);
    worker_start_ex(&w, F.other, theirs, LONG_WAIT_MS, RLOCK_LEASE_WATCHDOG, 1);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.channel), 2000);
    rt_sleep_ms(100);
    assert_false(worker_wait(&w, 0));
    expect_str_key(PLAIN.token, "1"); /* failed attempts draw nothing */
    released = rt_now_ms();
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_true(w.done_ms - released < CT_WAKE_BOUND_MS);
    assert_int_equal(w.token, 2);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.token));
    conf_expect_hash(&F.redis, PLAIN.name, w.field, "1");
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.channel, "0");
    rlock_free(mine);
    rlock_free(theirs);
}

static void test_fenced_unlock_writes_latch_then_deletes_it(void **state)
{
    rlock *l = fenced_get(F.c, PLAIN.name);
    int64_t token;

    (void)state;
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    unlock_expecting_latch(l, CONF_KEYS(PLAIN.name, PLAIN.token), "0");
    unlock_expecting_latch(l, CONF_KEYS(PLAIN.token), "1");
    rlock_free(l);
}

static void test_fenced_and_plain_lock_exclude_each_other(void **state)
{
    rlock *fenced = fenced_get(F.c, PLAIN.name);
    rlock *plain = lt_get_lock(F.other, PLAIN.name);
    int64_t token;

    (void)state;
    assert_int_equal(rlock_fenced_lock(fenced, &token), RLOCK_OK);
    assert_int_equal(rlock_trylock(plain, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_unlock(fenced), RLOCK_OK);
    assert_int_equal(rlock_trylock(plain, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(
        rlock_fenced_trylock(fenced, 0, RLOCK_LEASE_WATCHDOG, &token),
        RLOCK_ETIMEDOUT);
    expect_str_key(PLAIN.token, "1");
    assert_int_equal(rlock_unlock(plain), RLOCK_OK);
    rlock_free(fenced);
    rlock_free(plain);
}

static void check_fenced_names(const kind_names *k)
{
    rlock *l = fenced_get(F.c, k->name);
    int64_t token;

    assert_int_equal(rlock_fenced_lock(l, &token), RLOCK_OK);
    assert_int_equal(token, 1);
    conf_expect_keys(&F.redis, CONF_KEYS(k->name, k->token));
    expect_str_key(k->token, "1");
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(k->token));
    conf_expect_published(&F.log, k->channel, "0");
    rlock_free(l);
}

static void test_fenced_names_with_hash_tag_are_used_as_is(void **state)
{
    (void)state;
    check_fenced_names(&LEADING_TAG);
    freeReplyObject(rt_cmd(&F.redis, "FLUSHALL"));
    check_fenced_names(&INNER_TAG);
}

static void test_watchdog_renews_fair_fenced_and_spin_locks(void **state)
{
    rlock_client *wd = lt_connect(
        F.redis.url, rlock_config_set_watchdog_timeout, SHORT_WATCHDOG);
    rlock *fair = fair_get(wd, "kinds-fair");
    rlock *fenced = fenced_get(wd, "kinds-fenced");
    rlock *spin = spin_get(wd, "kinds-spin");
    char field[128];

    (void)state;
    lt_owner_field(field, sizeof(field), wd);
    assert_int_equal(rlock_lock(fair), RLOCK_OK);
    assert_int_equal(rlock_lock(fenced), RLOCK_OK);
    assert_int_equal(rlock_lock(spin), RLOCK_OK);
    for (int i = 0; i < 6; i++) {
        rt_sleep_ms(SHORT_WATCHDOG / 3);
        conf_expect_pttl(&F.redis, "kinds-fair", 1, SHORT_WATCHDOG);
        conf_expect_pttl(&F.redis, "kinds-fenced", 1, SHORT_WATCHDOG);
        conf_expect_pttl(&F.redis, "kinds-spin", 1, SHORT_WATCHDOG);
    }
    conf_expect_keys(&F.redis,
                     CONF_KEYS("kinds-fair", "kinds-fenced", "kinds-spin",
                               "redisson_lock_token:{kinds-fenced}"));
    conf_expect_hash(&F.redis, "kinds-fair", field, "1");
    conf_expect_hash(&F.redis, "kinds-fenced", field, "1");
    conf_expect_hash(&F.redis, "kinds-spin", field, "1");
    expect_str_key("redisson_lock_token:{kinds-fenced}", "1");
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(fair), RLOCK_OK);
    assert_int_equal(rlock_unlock(fenced), RLOCK_OK);
    assert_int_equal(rlock_unlock(spin), RLOCK_OK);
    rlock_free(fair);
    rlock_free(fenced);
    rlock_free(spin);
    rlock_client_free(wd);
}

/* ------------------------------------------------------------------------ */
/* Spin lock (section 6)                                                    */
/* ------------------------------------------------------------------------ */

static void test_spin_lock_writes_the_plain_locks_hash(void **state)
{
    rlock *l = spin_get(F.c, PLAIN.name);
    char field[128];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_owner_shape(field);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    conf_expect_hash(&F.redis, PLAIN.name, field, "2");
    assert_int_equal(rlock_trylock(l, 0, 7000), RLOCK_OK);
    conf_expect_hash(&F.redis, PLAIN.name, field, "3");
    conf_expect_pttl(&F.redis, PLAIN.name, 6000, 7000);
    conf_expect_nothing_published(&F.log);
    conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

static void test_spin_unlocks_publish_nothing(void **state)
{
    rlock *l = spin_get(F.c, PLAIN.name);
    char field[128];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, field, "1");
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
}

static void test_spin_force_unlock_publishes_nothing(void **state)
{
    rlock *holder = spin_get(F.other, PLAIN.name);
    rlock *forcer = spin_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    assert_int_equal(rlock_force_unlock(forcer), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_force_unlock(forcer), RLOCK_OK); /* free lock */
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(holder), RLOCK_ELOST);
    conf_expect_nothing_published(&F.log);
    rlock_free(holder);
    rlock_free(forcer);
}

static void test_spin_waiter_never_subscribes(void **state)
{
    rlock *holder = spin_get(F.c, PLAIN.name);
    rlock *theirs = spin_get(F.other, PLAIN.name);
    int64_t until, released;
    worker w;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    worker_start(&w, F.other, theirs, LONG_WAIT_MS);
    until = rt_now_ms() + 1000;
    while (rt_now_ms() < until) {
        conf_expect_channels(&F.redis, CONF_NO_KEYS, 0);
        /* only the message log's PSUBSCRIBE * */
        assert_int_equal(rt_cmd_int(&F.redis, "PUBSUB NUMPAT"), 1);
        rt_sleep_ms(50);
    }
    assert_false(worker_wait(&w, 0));
    released = rt_now_ms();
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    /* no message: the next poll (128 ms apart at most) finds it free */
    worker_expect_acquired(&w, 2000);
    assert_true(w.done_ms - released < 1000);
    conf_expect_hash(&F.redis, PLAIN.name, w.field, "1");
    conf_expect_nothing_published(&F.log);
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_spin_waiter_backs_off_exponentially(void **state)
{
    rlock *holder = spin_get(F.c, PLAIN.name);
    rlock *theirs = spin_get(F.other, PLAIN.name);
    int64_t start;
    conf_monitor m;
    int tries;

    (void)state;
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    start = rt_now_ms();
    assert_int_equal(rlock_trylock(theirs, 1500, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_true(rt_now_ms() - start >= 1500);
    conf_monitor_finish(&m);
    tries = count_scripts_on(&m, PLAIN.name);
    print_message("spin waiter: %d attempts in 1500 ms\n", tries);
    /* 1, ~2, ~4 ... capped at 128 ms: about 18 attempts, not hundreds */
    assert_in_range(tries, 8, 40);
    for (int i = 0; i < m.n; i++)
        if (!m.cmds[i].lua && strcasestr(m.cmds[i].argv[0], "subscribe"))
            fail_msg("the spin waiter sent %s", m.cmds[i].argv[0]);
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_spin_constant_backoff_polls_at_that_pace(void **state)
{
    rlock *holder = spin_get(F.c, PLAIN.name);
    rlock *theirs = spin_get(F.other, PLAIN.name);
    conf_monitor m;
    int tries;

    (void)state;
    assert_int_equal(rlock_spin_set_backoff(theirs, 100, 100, 1), RLOCK_OK);
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_trylock(theirs, 1000, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_monitor_finish(&m);
    tries = count_scripts_on(&m, PLAIN.name);
    print_message("spin waiter: %d attempts in 1000 ms at 100 ms\n", tries);
    assert_in_range(tries, 6, 14);
    conf_monitor_free(&m);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_spin_unlock_writes_latch_then_deletes_it(void **state)
{
    rlock *l = spin_get(F.c, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    unlock_expecting_latch(l, CONF_KEYS(PLAIN.name), "0");
    unlock_expecting_latch(l, CONF_NO_KEYS, "1");
    rlock_free(l);
}

static void test_spin_and_plain_lock_exclude_each_other(void **state)
{
    rlock *spin = spin_get(F.c, PLAIN.name);
    rlock *plain = lt_get_lock(F.other, PLAIN.name);

    (void)state;
    assert_int_equal(rlock_lock(spin), RLOCK_OK);
    assert_int_equal(rlock_trylock(plain, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_unlock(spin), RLOCK_OK);
    assert_int_equal(rlock_trylock(plain, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_trylock(spin, 300, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_unlock(plain), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.channel,
                          "0"); /* the plain lock's own unlock */
    rlock_free(spin);
    rlock_free(plain);
}

/* ------------------------------------------------------------------------ */
/* Redisson's fair scripts by hand, beside rlock                            */
/* ------------------------------------------------------------------------ */

static void
test_java_fair_waiter_behind_rlock_holder_is_told_on_its_channel(void **state)
{
    rlock *l = fair_get(F.c, PLAIN.name);
    char java_channel[256];
    long long base;

    (void)state;
    fair_channel(java_channel, sizeof(java_channel), &PLAIN, JAVA_OWNER);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    base = java_fair_acquire(&PLAIN, JAVA_OWNER, 5000);
    assert_in_range(base, WATCHDOG_MS - 1000, WATCHDOG_MS);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, PLAIN.queue, PLAIN.zset));
    expect_queue(PLAIN.queue, CONF_KEYS(JAVA_OWNER));
    expect_fair_deadline(&PLAIN, JAVA_OWNER, 5000, 1);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    conf_expect_published(&F.log, java_channel, "0");
    conf_expect_keys(
        &F.redis,
        CONF_KEYS(PLAIN.queue, PLAIN.zset)); /* the head keeps its turn */

    assert_int_equal(java_fair_acquire(&PLAIN, JAVA_OWNER, 5000), REPLY_NIL);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    assert_int_equal(java_fair_unlock(&PLAIN, JAVA_OWNER), 1);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_nothing_published(&F.log);
    rlock_free(l);
}

static void test_rlock_fair_trylock_does_not_overtake_java_head(void **state)
{
    rlock *holder = fair_get(F.other, PLAIN.name);
    rlock *mine = fair_get(F.c, PLAIN.name);
    char java_channel[256];
    conf_monitor m;

    (void)state;
    fair_channel(java_channel, sizeof(java_channel), &PLAIN, JAVA_OWNER);
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    assert_in_range(java_fair_acquire(&PLAIN, JAVA_OWNER, 5000),
                    WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    conf_expect_published(&F.log, java_channel, "0");

    /* the lock is free, but the Java client is first in line */
    conf_monitor_start(&m, &F.redis);
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_monitor_finish(&m);
    conf_expect_scripts_only_read(&m);
    conf_monitor_free(&m);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.queue, PLAIN.zset));
    expect_queue(PLAIN.queue, CONF_KEYS(JAVA_OWNER));

    assert_int_equal(java_fair_acquire(&PLAIN, JAVA_OWNER, 5000), REPLY_NIL);
    assert_int_equal(java_fair_unlock(&PLAIN, JAVA_OWNER), 1);
    assert_int_equal(rlock_trylock(mine, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
    assert_int_equal(rlock_unlock(mine), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(mine);
}

static void
test_rlock_fair_waiter_behind_java_holder_woken_by_java_unlock(void **state)
{
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char ch[256];
    int64_t released;
    worker w;

    (void)state;
    assert_int_equal(java_fair_acquire(&PLAIN, JAVA_OWNER, 5000), REPLY_NIL);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    worker_start(&w, F.other, theirs, LONG_WAIT_MS);
    wait_queue_len(&PLAIN, 1);
    expect_queue(PLAIN.queue, CONF_KEYS(w.field));
    expect_fair_deadline(&PLAIN, w.field, LONG_WAIT_MS, 1);
    fair_channel(ch, sizeof(ch), &PLAIN, w.field);
    conf_expect_channels(&F.redis, CONF_KEYS(ch), 2000);

    released = rt_now_ms();
    assert_int_equal(java_fair_unlock(&PLAIN, JAVA_OWNER), 1);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_true(w.done_ms - released < CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, ch, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, w.field, "1");
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(theirs);
}

static void test_fair_queue_order_holds_across_java_and_rlock(void **state)
{
    rlock *holder = fair_get(F.c, PLAIN.name);
    rlock *theirs = fair_get(F.other, PLAIN.name);
    char java_channel[256], ch[256];
    long long score;
    worker w;

    (void)state;
    fair_channel(java_channel, sizeof(java_channel), &PLAIN, JAVA_OWNER);
    assert_int_equal(rlock_lock(holder), RLOCK_OK);
    assert_in_range(java_fair_acquire(&PLAIN, JAVA_OWNER, LONG_WAIT_MS),
                    WATCHDOG_MS - 1000, WATCHDOG_MS);
    worker_start(&w, F.other, theirs, LONG_WAIT_MS);
    wait_queue_len(&PLAIN, 2);
    fair_channel(ch, sizeof(ch), &PLAIN, w.field);
    conf_expect_channels(&F.redis, CONF_KEYS(ch), 2000);
    expect_queue(PLAIN.queue, CONF_KEYS(JAVA_OWNER, w.field));
    score = zscore(PLAIN.zset, w.field);
    assert_int_equal(score - zscore(PLAIN.zset, JAVA_OWNER), LONG_WAIT_MS);

    /* rlock's unlock tells the Java head, not rlock's own waiter */
    assert_int_equal(rlock_unlock(holder), RLOCK_OK);
    conf_expect_published(&F.log, java_channel, "0");
    assert_false(worker_wait(&w, 300));
    assert_int_equal(java_fair_acquire(&PLAIN, JAVA_OWNER, LONG_WAIT_MS),
                     REPLY_NIL);
    conf_expect_hash(&F.redis, PLAIN.name, JAVA_OWNER, "1");
    expect_queue(PLAIN.queue, CONF_KEYS(w.field));
    assert_int_equal(zscore(PLAIN.zset, w.field), score - LONG_WAIT_MS);
    assert_false(worker_wait(&w, 100));

    /* the Java unlock tells rlock's waiter */
    assert_int_equal(java_fair_unlock(&PLAIN, JAVA_OWNER), 1);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, ch, "0");
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash(&F.redis, PLAIN.name, w.field, "1");
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_free(holder);
    rlock_free(theirs);
}

static void test_java_fair_try_once_respects_rlock_queue(void **state)
{
    fair_scene s;

    (void)state;
    fair_scene_start(&s, &PLAIN);
    /* held: "1", and the Java client is not queued */
    assert_int_equal(java_fair_try_once(&PLAIN, JAVA_OWNER), 1);
    expect_queue(PLAIN.queue, CONF_KEYS(s.w.field));
    assert_int_equal(rt_cmd_int(&F.redis, "ZCARD %s", PLAIN.zset), 1);

    /* released: rlock's waiter is first in line (or already holds it), so
     * the Java client still gets "1" */
    assert_int_equal(rlock_unlock(s.holder), RLOCK_OK);
    assert_int_equal(java_fair_try_once(&PLAIN, JAVA_OWNER), 1);
    worker_expect_acquired(&s.w, CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, s.channel, "0");
    conf_expect_hash(&F.redis, PLAIN.name, s.w.field, "1");
    fair_scene_finish(&s);
}

/* ------------------------------------------------------------------------ */
/* Redisson's read-write scripts by hand, beside rlock                      */
/* ------------------------------------------------------------------------ */

static void test_java_reader_blocks_rlock_writer_until_read_unlock(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char jtk[256], wfield[160];
    int64_t released;
    worker w;

    (void)state;
    rw_timeout_key(jtk, sizeof(jtk), &PLAIN, JAVA_OWNER, 1);
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"), REPLY_NIL);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, jtk));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", JAVA_OWNER, "1"));
    assert_int_equal(rlock_trylock(rlock_rw_write(rw), 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", JAVA_OWNER, "1"));

    worker_start(&w, F.c, rlock_rw_write(rw), LONG_WAIT_MS);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.rw_channel), 2000);
    rt_sleep_ms(100);
    assert_false(worker_wait(&w, 0));
    released = rt_now_ms();
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 1);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_true(w.done_ms - released < CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    snprintf(wfield, sizeof(wfield), "%s:write", w.field);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", wfield, "1"));
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rlock_rw_free(rw);
}

static void test_rlock_writer_blocks_java_reader_and_writer(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char *before, *after;

    (void)state;
    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    before = lt_hash_dump(&F.redis, PLAIN.name);
    assert_in_range(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"),
                    WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_in_range(java_write_acquire(&PLAIN, JAVA_OWNER, "30000"),
                    WATCHDOG_MS - 1000, WATCHDOG_MS);
    after = lt_hash_dump(&F.redis, PLAIN.name);
    assert_string_equal(after, before);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name));
    conf_expect_nothing_published(&F.log);

    /* rlock's write unlock sends what Java waiters wait for: "1" */
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"), REPLY_NIL);
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 1);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    free(before);
    free(after);
    rlock_rw_free(rw);
}

static void test_java_read_unlock_finds_rlock_timeout_keys(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char field[128], tk1[256], jtk[256];

    (void)state;
    lt_owner_field(field, sizeof(field), F.c);
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, field, 1);
    rw_timeout_key(jtk, sizeof(jtk), &PLAIN, JAVA_OWNER, 1);
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"), REPLY_NIL);
    assert_int_equal(rlock_trylock(rlock_rw_read(rw), 0, 20000), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1, jtk));
    conf_expect_hash_exact(
        &F.redis, PLAIN.name,
        CONF_FIELDS("mode", "read", JAVA_OWNER, "1", field, "1"));

    /* Java's unlock finds rlock's hold alive through its timeout key, so
     * the lock stays, with rlock's lease */
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 0);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", field, "1"));
    conf_expect_pttl(&F.redis, PLAIN.name, 19000, 20000);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(rw);
}

static void test_rlock_read_unlock_finds_java_timeout_keys(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char jtk[256];

    (void)state;
    rw_timeout_key(jtk, sizeof(jtk), &PLAIN, JAVA_OWNER, 1);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "10000"), REPLY_NIL);
    conf_expect_pttl(&F.redis, PLAIN.name, WATCHDOG_MS - 1000, WATCHDOG_MS);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, jtk));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", JAVA_OWNER, "1"));
    conf_expect_pttl(&F.redis, PLAIN.name, 9000, 10000);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 1);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(rw);
}

static void test_java_write_unlock_1_wakes_rlock_reader(void **state)
{
    rlock_rw *theirs = rw_get(F.other, PLAIN.name);
    char jw[160], tk1[256];
    int64_t released;
    worker w;

    (void)state;
    snprintf(jw, sizeof(jw), "%s:write", JAVA_OWNER);
    assert_int_equal(java_write_acquire(&PLAIN, JAVA_OWNER, "30000"),
                     REPLY_NIL);
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "write", jw, "1"));
    worker_start(&w, F.other, rlock_rw_read(theirs), LONG_WAIT_MS);
    conf_expect_channels(&F.redis, CONF_KEYS(PLAIN.rw_channel), 2000);
    rt_sleep_ms(100);
    assert_false(worker_wait(&w, 0));
    released = rt_now_ms();
    assert_int_equal(java_write_unlock(&PLAIN, JAVA_OWNER), 1);
    worker_expect_acquired(&w, CT_WAKE_BOUND_MS);
    assert_true(w.done_ms - released < CT_WAKE_BOUND_MS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "1");
    rw_timeout_key(tk1, sizeof(tk1), &PLAIN, w.field, 1);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, tk1));
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", w.field, "1"));
    assert_int_equal(worker_release(&w), RLOCK_OK);
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    rlock_rw_free(theirs);
}

static void test_java_writer_may_read_under_its_write_beside_rlock(void **state)
{
    rlock_rw *rw = rw_get(F.c, PLAIN.name);
    char jw[160], jtk[256];

    (void)state;
    snprintf(jw, sizeof(jw), "%s:write", JAVA_OWNER);
    rw_timeout_key(jtk, sizeof(jtk), &PLAIN, JAVA_OWNER, 1);
    assert_int_equal(java_write_acquire(&PLAIN, JAVA_OWNER, "30000"),
                     REPLY_NIL);
    assert_int_equal(java_read_acquire(&PLAIN, JAVA_OWNER, "30000"), REPLY_NIL);
    conf_expect_keys(&F.redis, CONF_KEYS(PLAIN.name, jtk));
    /* rlock sees a write-locked hash and takes neither side */
    assert_int_equal(rlock_trylock(rlock_rw_read(rw), 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_trylock(rlock_rw_write(rw), 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    conf_expect_hash_exact(
        &F.redis, PLAIN.name,
        CONF_FIELDS("mode", "write", jw, "1", JAVA_OWNER, "1"));
    /* the downgrade: mode=read, no message; rlock may now read */
    assert_int_equal(java_write_unlock(&PLAIN, JAVA_OWNER), 1);
    conf_expect_nothing_published(&F.log);
    conf_expect_hash_exact(&F.redis, PLAIN.name,
                           CONF_FIELDS("mode", "read", JAVA_OWNER, "1"));
    assert_int_equal(rlock_trylock(rlock_rw_read(rw), 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_OK);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    conf_expect_nothing_published(&F.log);
    assert_int_equal(java_read_unlock(&PLAIN, JAVA_OWNER), 1);
    conf_expect_published(&F.log, PLAIN.rw_channel, "0");
    conf_expect_keys(&F.redis, CONF_NO_KEYS);
    rlock_rw_free(rw);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, conf_setup, conf_teardown)
    const struct CMUnitTest tests[] = {
        T(test_every_handle_reports_its_kind),
        /* fair */
        T(test_fair_lock_of_free_lock_writes_owner_field_only),
        T(test_fair_reentry_counts_in_the_same_field),
        T(test_fair_last_unlock_without_waiters_publishes_nothing),
        T(test_fair_trylock_without_wait_does_not_queue),
        T(test_fair_waiter_is_queued_with_deadline_score),
        T(test_fair_waiter_is_notified_on_its_own_channel),
        T(test_fair_woken_waiter_holds_lock_with_queue_gone),
        T(test_fair_unlock_writes_latch_then_deletes_it),
        T(test_fair_lock_without_wait_queues_with_default_fair_wait),
        T(test_fair_wait_timeout_setting_is_the_queue_slack),
        T(test_fair_second_waiter_score_is_first_plus_wait),
        T(test_fair_waiters_take_the_lock_in_queue_order),
        T(test_fair_waiter_whose_wait_runs_out_leaves_queue),
        T(test_fair_waiter_that_gives_up_moves_later_deadlines_forward),
        T(test_fair_expired_queue_head_is_purged),
        T(test_fair_force_unlock_notifies_queue_head),
        T(test_fair_force_unlock_without_waiters_publishes_nothing),
        T(test_fair_names_with_leading_hash_tag_are_used_as_is),
        T(test_fair_names_with_inner_hash_tag_are_used_as_is),
        /* read-write */
        T(test_read_lock_writes_mode_owner_and_timeout_key),
        T(test_read_lock_with_lease_sets_that_lease),
        T(test_second_read_counts_two_with_second_timeout_key),
        T(test_read_unlock_deletes_highest_timeout_key_and_publishes_nothing),
        T(test_last_read_unlock_deletes_hash_and_publishes_0),
        T(test_read_unlock_while_other_reader_holds_publishes_nothing),
        T(test_read_unlock_sets_hash_ttl_to_longest_remaining_read_hold),
        T(test_write_lock_writes_mode_write_and_write_field),
        T(test_write_reentry_adds_the_lease_to_the_ttl),
        T(test_write_inner_unlock_resets_lease_and_publishes_nothing),
        T(test_write_unlock_publishes_1),
        T(test_writer_taking_read_adds_read_field_in_write_mode),
        T(test_write_unlock_with_own_read_left_switches_to_read_silently),
        T(test_reader_cannot_take_write),
        T(test_other_writer_blocks_reader_and_writer),
        T(test_write_unlock_1_wakes_every_waiting_reader),
        T(test_last_read_unlock_0_wakes_waiting_writer),
        T(test_read_unlock_writes_latch_then_deletes_it),
        T(test_write_unlock_writes_latch_then_deletes_it),
        T(test_read_force_unlock_deletes_read_lock_publishes_0),
        T(test_write_force_unlock_deletes_write_lock_publishes_1),
        T(test_read_force_unlock_leaves_write_lock_alone),
        T(test_read_watchdog_renews_every_own_timeout_key),
        T(test_write_watchdog_renews_the_hash),
        T(test_rw_names_with_leading_hash_tag_are_used_as_is),
        T(test_rw_names_with_inner_hash_tag_are_used_as_is),
        /* fenced */
        T(test_fenced_token_counts_take_and_reentries),
        T(test_fenced_hash_is_the_plain_locks),
        T(test_fenced_unlock_keeps_token_and_publishes_0),
        T(test_fenced_token_reads_the_counter),
        T(test_fenced_trylock_continues_the_count_in_other_client),
        T(test_fenced_failed_trylock_draws_no_token),
        T(test_fenced_plain_lock_call_draws_a_token),
        T(test_fenced_waiter_is_woken_by_0_on_lock_channel),
        T(test_fenced_unlock_writes_latch_then_deletes_it),
        T(test_fenced_and_plain_lock_exclude_each_other),
        T(test_fenced_names_with_hash_tag_are_used_as_is),
        T(test_watchdog_renews_fair_fenced_and_spin_locks),
        /* spin */
        T(test_spin_lock_writes_the_plain_locks_hash),
        T(test_spin_unlocks_publish_nothing),
        T(test_spin_force_unlock_publishes_nothing),
        T(test_spin_waiter_never_subscribes),
        T(test_spin_waiter_backs_off_exponentially),
        T(test_spin_constant_backoff_polls_at_that_pace),
        T(test_spin_unlock_writes_latch_then_deletes_it),
        T(test_spin_and_plain_lock_exclude_each_other),
        /* Redisson's fair scripts by hand */
        T(test_java_fair_waiter_behind_rlock_holder_is_told_on_its_channel),
        T(test_rlock_fair_trylock_does_not_overtake_java_head),
        T(test_rlock_fair_waiter_behind_java_holder_woken_by_java_unlock),
        T(test_fair_queue_order_holds_across_java_and_rlock),
        T(test_java_fair_try_once_respects_rlock_queue),
        /* Redisson's read-write scripts by hand */
        T(test_java_reader_blocks_rlock_writer_until_read_unlock),
        T(test_rlock_writer_blocks_java_reader_and_writer),
        T(test_java_read_unlock_finds_rlock_timeout_keys),
        T(test_rlock_read_unlock_finds_java_timeout_keys),
        T(test_java_write_unlock_1_wakes_rlock_reader),
        T(test_java_writer_may_read_under_its_write_beside_rlock),
    };
#undef T

    rt_require_redis();
    return conf_run_suite(tests, sizeof(tests) / sizeof(tests[0]), &F);
}
