/*
 * test_unlock_state.c: what an unlock leaves behind: a hold being
 * released is never reported lost, an unlock the server refused leaves
 * the hold as it was, an unlock whose message was refused still reports
 * the release, one kind's phantom drop leaves another kind's hold on the
 * same name alone, and a last unlock that finds holds its client never
 * knew of (a lost acquire's) drops them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "proto/scripts.h"
#include "rlock.h"

#define LT_SUITE "unlock-state"

/* ------------------------------------------- item 1: racing the watchdog */

/* The shortest watchdog the config takes: a renewal every 10 ms, so that
 * renewals keep landing between an unlock's script and its reply. A lease
 * that short can also run out for real on a loaded machine (the unlock then
 * says RLOCK_ELOST), so the test counts the callbacks about holds whose
 * unlock returned 0: those are the false ones. */
#define RACE_WATCHDOG_MS 30
#define RACE_THREADS     8
#define RACE_CYCLES      500

/* Hold ids the lost-lock callback was called with. */
static struct {
    pthread_mutex_t mu;
    int n;
    uint64_t holds[RACE_THREADS * RACE_CYCLES];
} g_race_lost = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void note_lost(const char *name, uint64_t owner, uint64_t hold,
                      int reason, void *arg)
{
    (void)name;
    (void)owner;
    (void)reason;
    (void)arg;
    pthread_mutex_lock(&g_race_lost.mu);
    if (g_race_lost.n < RACE_THREADS * RACE_CYCLES)
        g_race_lost.holds[g_race_lost.n++] = hold;
    pthread_mutex_unlock(&g_race_lost.mu);
}

typedef struct racer {
    rlock_client *client;
    int index;
    int failures;  /* lock calls, and unlocks other than 0 or RLOCK_ELOST */
    int expired;   /* unlocks that found the lease had run out */
    int released;  /* unlocks that returned 0 */
    uint64_t released_holds[RACE_CYCLES];
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    char name[128];
    snprintf(name, sizeof(name), LT_SUITE ":race:%d", r->index);
    rlock *l = NULL;
    if (rlock_get(r->client, name, &l) != RLOCK_OK) {
        r->failures = RACE_CYCLES;
        return NULL;
    }
    for (int i = 0; i < RACE_CYCLES; i++) {
        if (rlock_lock(l) != RLOCK_OK) {
            r->failures++;
            continue;
        }
        int64_t hold = rlock_hold_id(l);
        int rc = rlock_unlock(l);
        if (rc == RLOCK_OK && hold > 0)
            r->released_holds[r->released++] = (uint64_t)hold;
        else if (rc == RLOCK_ELOST)
            r->expired++;
        else
            r->failures++;
    }
    rlock_free(l);
    return NULL;
}

static void test_unlock_racing_renewals_reports_no_loss(void **state)
{
    lt_fixture *f = *state;
    rlock_config *cfg = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_watchdog_timeout(cfg, RACE_WATCHDOG_MS),
                     RLOCK_OK);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    rlock_config_free(cfg);
    g_race_lost.n = 0;
    assert_int_equal(rlock_client_on_lost(c, note_lost, NULL), RLOCK_OK);

    pthread_t threads[RACE_THREADS];
    static racer racers[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        racers[i] = (racer){.client = c, .index = i};
        assert_int_equal(
            pthread_create(&threads[i], NULL, race_main, &racers[i]), 0);
    }
    int failures = 0, expired = 0, released = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(threads[i], NULL);
        failures += racers[i].failures;
        expired += racers[i].expired;
        released += racers[i].released;
    }
    rt_sleep_ms(200); /* renewals still in flight report what they found */
    rlock_client_free(c);

    int false_losses = 0;
    for (int k = 0; k < g_race_lost.n; k++)
        for (int i = 0; i < RACE_THREADS; i++)
            for (int j = 0; j < racers[i].released; j++)
                if (racers[i].released_holds[j] == g_race_lost.holds[k])
                    false_losses++;
    printf("# %d cycles: %d released, %d expired, %d failed; %d lost "
           "callbacks, %d of them about released holds\n",
           RACE_THREADS * RACE_CYCLES, released, expired, failures,
           g_race_lost.n, false_losses);
    assert_int_equal(failures, 0);
    assert_int_equal(false_losses, 0);
}

/* ------------------------------------------------- item 1: which hold */

/* The group's client renews every 500 ms, so a loss is seen quickly. */
#define WATCHDOG_MS    1500
#define SEEN_WITHIN_MS 5000

typedef struct lost_seen {
    pthread_mutex_t mu;
    int calls;
    uint64_t owner;
    uint64_t hold;
    int reason;
} lost_seen;

static void record_lost(const char *name, uint64_t owner, uint64_t hold,
                        int reason, void *arg)
{
    lost_seen *s = arg;
    (void)name;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->owner = owner;
    s->hold = hold;
    s->reason = reason;
    pthread_mutex_unlock(&s->mu);
}

/* Waits until s saw n calls; returns the count. */
static int wait_lost(lost_seen *s, int n)
{
    int64_t until = rt_now_ms() + SEEN_WITHIN_MS;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int calls = s->calls;
        pthread_mutex_unlock(&s->mu);
        if (calls >= n || rt_now_ms() >= until)
            return calls;
        rt_sleep_ms(10);
    }
}

static void test_lost_event_carries_the_id_of_the_lost_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(rlock_on_lost(l, record_lost, &seen), RLOCK_OK);

    assert_int_equal(rlock_hold_id(l), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    int64_t first = rlock_hold_id(l);
    assert_true(first > 0);
    assert_int_equal(rlock_lock(l), RLOCK_OK); /* reentry: the same hold */
    assert_int_equal(rlock_hold_id(l), first);
    assert_int_equal(rt_cmd_int(&f->redis, "DEL %s", name), 1);
    assert_int_equal(wait_lost(&seen, 1), 1);
    assert_int_equal(seen.hold, (uint64_t)first);
    assert_int_equal(seen.owner, rlock_thread_id());
    assert_int_equal(seen.reason, RLOCK_LOST_GONE);
    assert_int_equal(rlock_hold_id(l), first); /* until its unlock */
    assert_int_equal(rlock_unlock(l), RLOCK_ELOST);
    assert_int_equal(rlock_hold_id(l), RLOCK_ENOTOWNER);

    /* the owner's next hold on the name is another hold */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    int64_t second = rlock_hold_id(l);
    assert_true(second > 0);
    assert_true(second != first);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    rlock_free(l);
}

static void test_hold_id_of_an_async_owner(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();

    assert_int_equal(rlock_owner_hold_id(l, owner), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_owner_hold_id(NULL, owner), RLOCK_EINVAL);
    assert_int_equal(rlock_hold_id(NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    /* a thread's hold is not another owner's */
    assert_int_equal(rlock_owner_hold_id(l, owner), RLOCK_ENOTOWNER);
    assert_int_equal(rlock_owner_hold_id(l, rlock_thread_id()),
                     rlock_hold_id(l));
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------ item 2: an unlock Redis refused */

/* Far below what any server uses: with the default noeviction policy,
 * every write that may grow memory is refused with OOM, while reads and
 * PEXPIRE (the watchdog's renewals) still run. */
static void refuse_writes(lt_fixture *f, bool refuse)
{
    redisReply *r = rt_cmd(&f->redis, "CONFIG SET maxmemory %s",
                           refuse ? "1" : "0");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* Longer than a lease: a hold no longer renewed would be gone by then. */
#define PAST_A_LEASE_MS (WATCHDOG_MS + WATCHDOG_MS / 2)

static void test_refused_final_unlock_keeps_the_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(rlock_on_lost(l, record_lost, &seen), RLOCK_OK);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    refuse_writes(f, true);
    int rc = rlock_unlock(l);
    refuse_writes(f, false);
    assert_int_equal(rc, RLOCK_ESERVER);
    /* as it was: held here and in Redis, and still renewed */
    assert_int_equal(rlock_owner_hold_count(l, rlock_thread_id()), 1);
    assert_int_equal(rlock_hold_count(l), 1);
    rt_sleep_ms(PAST_A_LEASE_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_is_held_by_me(l), 1);
    /* and unlockable once Redis takes writes again */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    assert_int_equal(seen.calls, 0);
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    rlock_free(l);
}

static void test_refused_inner_unlock_keeps_both_holds(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    assert_int_equal(rlock_on_lost(l, record_lost, &seen), RLOCK_OK);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    refuse_writes(f, true);
    int rc = rlock_unlock(l);
    refuse_writes(f, false);
    assert_int_equal(rc, RLOCK_ESERVER);
    assert_int_equal(rlock_owner_hold_count(l, rlock_thread_id()), 2);
    assert_int_equal(rlock_hold_count(l), 2);
    /* the inner unlock that works leaves the outer hold renewed */
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rt_sleep_ms(PAST_A_LEASE_MS);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(seen.calls, 0);
    assert_int_equal(rlock_on_lost(l, NULL, NULL), RLOCK_OK);
    rlock_free(l);
}

/* Runs rlock_unlock_async() for owner and returns its status. */
static int unlock_async_and_wait(rlock *l, uint64_t owner)
{
    lt_completion c = {0};
    int rc = rlock_unlock_async(l, owner, lt_on_done, &c);
    return rc != 0 ? rc : lt_await_completion(&c, SEEN_WITHIN_MS);
}

static void test_refused_async_unlock_keeps_the_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = lt_get_lock(f->client, name);
    uint64_t owner = rlock_owner_new();
    lt_completion locked = {0};

    assert_int_equal(rlock_lock_async(l, owner, 0, RLOCK_LEASE_WATCHDOG,
                                      lt_on_done, &locked),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&locked, SEEN_WITHIN_MS), RLOCK_OK);
    refuse_writes(f, true);
    int rc = unlock_async_and_wait(l, owner);
    refuse_writes(f, false);
    assert_int_equal(rc, RLOCK_ESERVER);
    assert_int_equal(rlock_owner_hold_count(l, owner), 1);
    rt_sleep_ms(PAST_A_LEASE_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(unlock_async_and_wait(l, owner), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

/* ------------------------------ item 3: a release whose message failed */

/* Unlocks l, held once, on a server that refuses its PUBLISH, while a
 * subscriber of another connection listens on the lock's channel. */
static void check_unannounced_release(rt_redis *redis, rlock *l,
                                      const char *name)
{
    char channel[256];
    lt_channel_of(channel, sizeof(channel), name);
    rt_sub *sub = rt_sub_start(redis, channel);
    assert_non_null(sub);

    assert_int_equal(rlock_unlock(l), RLOCK_ENOTIFY);
    /* released: the hash is gone here and in Redis */
    assert_int_equal(rt_cmd_int(redis, "EXISTS %s", name), 0);
    assert_int_equal(rlock_owner_hold_count(l, rlock_thread_id()), 0);
    assert_int_equal(rlock_unlock(l), RLOCK_ENOTOWNER);
    /* and nobody was told */
    assert_int_equal(rt_sub_wait(sub, 1, 300), 0);
    rt_sub_stop(sub);
}

static void test_release_with_publish_refused_by_acl_is_enotify(void **state)
{
    lt_fixture *f = *state;
    char name[128], url[256];
    LT_TEST_NAME(name);
    redisReply *r = rt_cmd(&f->redis,
                           "ACL SETUSER nopublish on >pw ~* &* +@all -publish");
    assert_non_null(r);
    freeReplyObject(r);
    snprintf(url, sizeof(url), "redis://nopublish:pw@127.0.0.1:%d",
             f->redis.port);
    rlock_client *c = lt_connect(url, NULL, 0);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    check_unannounced_release(&f->redis, l, name);
    rlock_free(l);
    rlock_client_free(c);
}

/* A client shutting down gives back every hold with one script
 * (lock_release_owner.lua). Under a user who may not PUBLISH it must still
 * report the release it made, as every other release script does, rather
 * than fail after its DEL. Run by hand, since a closing client ignores the
 * reply. */
static void test_release_owner_with_publish_refused_by_acl_reports_it(
    void **state)
{
    lt_fixture *f = *state;
    const rlock__script *s = &rlock__script_lock_release_owner;
    char name[128], channel[256];
    LT_TEST_NAME(name);
    lt_channel_of(channel, sizeof(channel), name);
    redisReply *r = rt_cmd(&f->redis,
                           "ACL SETUSER nopublish on >pw ~* &* +@all -publish");
    assert_non_null(r);
    freeReplyObject(r);
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s owner:1 2", name), 1);

    redisContext *ctx = redisConnect("127.0.0.1", f->redis.port);
    assert_non_null(ctx);
    assert_int_equal(ctx->err, 0);
    r = redisCommand(ctx, "AUTH nopublish pw");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(ctx, "EVAL %b 2 %s %s 0 owner:1 publish", s->body,
                     s->len, name, channel);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR)
        print_message("script failed: %s\n", r->str);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    redisFree(ctx);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
}

static void test_release_with_publish_renamed_away_is_enotify(void **state)
{
    (void)state;
    static const char *const args[] = {"--rename-command", "PUBLISH", "",
                                       NULL};
    rt_redis redis = {0};
    assert_int_equal(rt_redis_start_args(&redis, args), 0);
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(redis.url, NULL, 0);
    rlock *l = lt_get_lock(c, name);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    check_unannounced_release(&redis, l, name);
    rlock_free(l);
    rlock_client_free(c);
    rt_redis_stop(&redis);
}

/* Log lines at RLOCK_LOG_WARN or above that name PUBLISH. */
static atomic_int g_publish_warnings;

static void count_publish_warnings(int level, const char *message, void *arg)
{
    (void)arg;
    if (level <= RLOCK_LOG_WARN && strstr(message, "PUBLISH") != NULL)
        atomic_fetch_add(&g_publish_warnings, 1);
}

/* The operator hears of it once through the log hook, not on every unlock. */
static void test_release_with_publish_refused_warns_once(void **state)
{
    (void)state;
    static const char *const args[] = {"--rename-command", "PUBLISH", "",
                                       NULL};
    rt_redis redis = {0};
    assert_int_equal(rt_redis_start_args(&redis, args), 0);
    char name[128];
    LT_TEST_NAME(name);
    rlock_config *cfg = NULL;
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_log(cfg, RLOCK_LOG_WARN,
                                          count_publish_warnings, NULL),
                     RLOCK_OK);
    rlock_client *c = NULL;
    assert_int_equal(rlock_client_connect_with(&c, redis.url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    rlock *l = lt_get_lock(c, name);
    atomic_store(&g_publish_warnings, 0);

    for (int i = 0; i < 3; i++) {
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_ENOTIFY);
    }
    int64_t until = rt_now_ms() + SEEN_WITHIN_MS;
    while (atomic_load(&g_publish_warnings) == 0 && rt_now_ms() < until)
        rt_sleep_ms(10);
    rt_sleep_ms(200); /* room for a second warning, if one were coming */
    assert_int_equal(atomic_load(&g_publish_warnings), 1);
    rlock_free(l);
    rlock_client_free(c);
    rt_redis_stop(&redis);
}

typedef struct fair_waiter {
    pthread_t thread;
    rlock *l;
    int lock_rc;
    int unlock_rc;
} fair_waiter;

static void *fair_waiter_main(void *arg)
{
    fair_waiter *w = arg;
    w->lock_rc = rlock_trylock(w->l, 10000, RLOCK_LEASE_WATCHDOG);
    w->unlock_rc = w->lock_rc == 0 ? rlock_unlock(w->l) : w->lock_rc;
    return NULL;
}

/* A fair lock tells only the head of its queue, on the head's channel: a
 * refused message there is RLOCK_ENOTIFY too, and the head still gets the
 * lock when it re-checks. */
static void test_fair_release_with_publish_renamed_away_is_enotify(
    void **state)
{
    (void)state;
    static const char *const args[] = {"--rename-command", "PUBLISH", "",
                                       NULL};
    rt_redis redis = {0};
    assert_int_equal(rt_redis_start_args(&redis, args), 0);
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(redis.url, NULL, 0);
    rlock *fair = NULL;
    assert_int_equal(rlock_fair_get(c, name, &fair), RLOCK_OK);

    assert_int_equal(rlock_lock(fair), RLOCK_OK);
    fair_waiter w = {.l = fair};
    assert_int_equal(pthread_create(&w.thread, NULL, fair_waiter_main, &w),
                     0);
    int64_t until = rt_now_ms() + SEEN_WITHIN_MS;
    while (rt_cmd_int(&redis, "LLEN redisson_lock_queue:{%s}", name) != 1 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    assert_int_equal(rt_cmd_int(&redis, "LLEN redisson_lock_queue:{%s}", name),
                     1);
    assert_int_equal(rlock_unlock(fair), RLOCK_ENOTIFY);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.lock_rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK); /* nobody queued behind it */

    /* forced, with the head queued */
    assert_int_equal(rlock_lock(fair), RLOCK_OK);
    w = (fair_waiter){.l = fair};
    assert_int_equal(pthread_create(&w.thread, NULL, fair_waiter_main, &w),
                     0);
    until = rt_now_ms() + SEEN_WITHIN_MS;
    while (rt_cmd_int(&redis, "LLEN redisson_lock_queue:{%s}", name) != 1 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    assert_int_equal(rlock_force_unlock(fair), RLOCK_ENOTIFY);
    pthread_join(w.thread, NULL);
    assert_int_equal(w.lock_rc, RLOCK_OK);
    assert_int_equal(rlock_unlock(fair), RLOCK_ELOST);
    rlock_free(fair);
    rlock_client_free(c);
    rt_redis_stop(&redis);
}

/* A forced unlock is a release too: deleted, and said so, though nobody
 * could be told. Each kind's force script, on a server without PUBLISH. */
static void test_force_unlock_with_publish_renamed_away_is_enotify(
    void **state)
{
    (void)state;
    static const char *const args[] = {"--rename-command", "PUBLISH", "",
                                       NULL};
    rt_redis redis = {0};
    assert_int_equal(rt_redis_start_args(&redis, args), 0);
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = lt_connect(redis.url, NULL, 0);
    rlock *plain = lt_get_lock(c, name);
    rlock *fair = NULL;
    rlock_rw *rw = NULL;
    assert_int_equal(rlock_fair_get(c, name, &fair), RLOCK_OK);
    assert_int_equal(rlock_rw_get(c, name, &rw), RLOCK_OK);
    rlock *kinds[] = {plain, fair, rlock_rw_write(rw), rlock_rw_read(rw)};
    /* a fair lock tells only the head of its queue, and nobody queues */
    int want[] = {RLOCK_ENOTIFY, RLOCK_OK, RLOCK_ENOTIFY, RLOCK_ENOTIFY};

    for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
        assert_int_equal(rlock_lock(kinds[i]), RLOCK_OK);
        assert_int_equal(rlock_force_unlock(kinds[i]), want[i]);
        assert_int_equal(rt_cmd_int(&redis, "EXISTS %s", name), 0);
        assert_int_equal(rlock_unlock(kinds[i]), RLOCK_ELOST);
        /* nothing to delete: nothing to announce */
        assert_int_equal(rlock_force_unlock(kinds[i]), RLOCK_OK);
    }
    rlock_rw_free(rw);
    rlock_free(fair);
    rlock_free(plain);
    rlock_client_free(c);
    rt_redis_stop(&redis);
}

/* ------------------------ item 5: one kind's phantom and another's hold */

/* Cuts the connection of the first script call that CLIENT PAUSE WRITE
 * holds back, so that its caller sees RLOCK_ECONN without the script having
 * run, then lets writes through again for what comes next. */
typedef struct cutter {
    pthread_t thread;
    rt_redis *redis;
    long long blocked; /* the connection that was cut, or -1 */
} cutter;

static void *cut_main(void *arg)
{
    cutter *k = arg;
    k->blocked = ft_wait_blocked(k->redis, "evalsha", 5000);
    if (k->blocked >= 0) {
        /* every command connection: a renewal may be held back as well */
        long long ids[32];
        int n = ft_client_ids(k->redis, "normal", ids, 32);
        ft_kill_ids(k->redis, ids, n);
    }
    rt_sleep_ms(100);
    redisReply *r = rt_cmd(k->redis, "CLIENT UNPAUSE");
    if (r != NULL)
        freeReplyObject(r);
    return NULL;
}

static void test_fenced_phantom_drop_keeps_the_plain_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    rlock *plain = lt_get_lock(f->client, name);
    rlock *fenced = NULL;
    assert_int_equal(rlock_fenced_get(f->client, name, &fenced), RLOCK_OK);

    assert_int_equal(rlock_lock(plain), RLOCK_OK);
    redisReply *r = rt_cmd(&f->redis, "CLIENT PAUSE 10000 WRITE");
    assert_non_null(r);
    freeReplyObject(r);
    cutter k = {.redis = &f->redis, .blocked = -1};
    assert_int_equal(pthread_create(&k.thread, NULL, cut_main, &k), 0);
    /* its first attempt is cut, so it drops what that attempt may have
     * taken before trying again */
    int64_t token = 0;
    int rc = rlock_fenced_lock(fenced, &token);
    pthread_join(k.thread, NULL);
    assert_true(k.blocked >= 0);
    assert_int_equal(rc, RLOCK_OK);

    /* both holds are in the one field: the plain one survived the drop */
    char *count = rt_cmd_str(&f->redis, "HGET %s %s", name, field);
    assert_non_null(count);
    assert_string_equal(count, "2");
    free(count);
    assert_int_equal(rlock_unlock(fenced), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    assert_int_equal(rlock_unlock(plain), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(fenced);
    rlock_free(plain);
}

/* --------------------------- a lost acquire's hold found by the last unlock */

/* Locks l (lock name, of f's client), adds a lost acquire's hold beside
 * it and unlocks: the lock must be free, not left held by a hold nobody
 * will release. Frees l. */
static void assert_last_unlock_frees(lt_fixture *f, rlock *l,
                                     const char *name)
{
    char field[128];
    lt_owner_field(field, sizeof(field), f->client);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(l);
}

static void test_last_unlock_drops_a_lost_acquires_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    assert_last_unlock_frees(f, lt_get_lock(f->client, name), name);
}

/* The owner's own re-entries renew a lost acquire's hold with every lease,
 * so it never expires: an owner looping lock/unlock then kept the lock from
 * everyone else for as long as it looped. The waiter's budget ends well
 * within the loop; a hand-over takes milliseconds. */
#define LOOP_MS        3000
#define LOOP_WAIT_MS   2000 /* the waiter's budget */
#define LOOP_HOLD_MS   5
#define LOOP_LEASE_MS  10000 /* no hold expires during the test */

static void test_looping_owner_with_a_lost_hold_lets_a_waiter_in(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    rlock *l = lt_get_lock(f->client, name);
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);

    assert_int_equal(rlock_trylock(l, RLOCK_WAIT_FOREVER, LOOP_LEASE_MS),
                     RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    lt_waiter w = {.l = lt_get_lock(other, name),
                   .wait_ms = LOOP_WAIT_MS,
                   .lease_ms = LOOP_LEASE_MS};
    lt_loop_beside_waiter(l, &w, LOOP_MS, LOOP_HOLD_MS, 0, LOOP_LEASE_MS);
    assert_int_equal(w.rc, RLOCK_OK);
    rlock_free(w.l);
    rlock_free(l);
    rlock_client_free(other);
}

/* The fair lock's: its last unlock, answered "still held" by a lost
 * acquire's hold, removes that hold too and frees the lock. */
static void test_fair_last_unlock_drops_a_lost_acquires_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock *l = NULL;
    assert_int_equal(rlock_fair_get(f->client, name, &l), RLOCK_OK);
    assert_last_unlock_frees(f, l, name);
}

/* A fair waiter queued behind the owner is woken on its own channel when
 * that drop frees the lock, as by an unlock: not by its re-check, nor by
 * the end of the lease that a hold nobody releases would leave it to. */
#define FAIR_DROP_LEASE_MS   15000
#define FAIR_DROP_WAIT_MS    20000
#define FAIR_DROP_WOKEN_MS   5000 /* well below the two below */
#define FAIR_DROP_RECHECK_MS 10000

static void test_fair_drop_of_a_lost_hold_wakes_the_queue(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[128];
    LT_TEST_NAME(name);
    lt_owner_field(field, sizeof(field), f->client);
    rlock *l = NULL;
    assert_int_equal(rlock_fair_get(f->client, name, &l), RLOCK_OK);
    rlock_client *other = lt_connect(f->redis.url, rlock_config_set_recheck_interval,
                                     FAIR_DROP_RECHECK_MS);
    lt_waiter w = {.wait_ms = FAIR_DROP_WAIT_MS, .lease_ms = 30000};
    assert_int_equal(rlock_fair_get(other, name, &w.l), RLOCK_OK);

    assert_int_equal(rlock_trylock(l, 0, FAIR_DROP_LEASE_MS), RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    lt_waiter_start(&w);
    char queue[160];
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    int64_t until = rt_now_ms() + 5000;
    while (rt_cmd_int(&f->redis, "LLEN %s", queue) < 1 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    assert_int_equal(rt_cmd_int(&f->redis, "LLEN %s", queue), 1);
    rt_sleep_ms(200); /* its subscription, after its queued try */

    int64_t unlocked = rt_now_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_waiter_join(&w);
    lt_waiter_assert_woken(&w, unlocked, "drop", FAIR_DROP_WOKEN_MS);
    rlock_free(w.l);
    rlock_free(l);
    rlock_client_free(other);
}

static int group_setup(void **state)
{
    return lt_group_setup_with_watchdog(state, WATCHDOG_MS);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlock_racing_renewals_reports_no_loss),
        cmocka_unit_test(test_lost_event_carries_the_id_of_the_lost_hold),
        cmocka_unit_test(test_hold_id_of_an_async_owner),
        cmocka_unit_test(test_refused_final_unlock_keeps_the_hold),
        cmocka_unit_test(test_refused_inner_unlock_keeps_both_holds),
        cmocka_unit_test(test_refused_async_unlock_keeps_the_hold),
        cmocka_unit_test(test_release_with_publish_refused_by_acl_is_enotify),
        cmocka_unit_test(
            test_release_owner_with_publish_refused_by_acl_reports_it),
        cmocka_unit_test(test_release_with_publish_renamed_away_is_enotify),
        cmocka_unit_test(test_release_with_publish_refused_warns_once),
        cmocka_unit_test(
            test_fair_release_with_publish_renamed_away_is_enotify),
        cmocka_unit_test(
            test_force_unlock_with_publish_renamed_away_is_enotify),
        cmocka_unit_test(test_fenced_phantom_drop_keeps_the_plain_hold),
        cmocka_unit_test(test_last_unlock_drops_a_lost_acquires_hold),
        cmocka_unit_test(
            test_looping_owner_with_a_lost_hold_lets_a_waiter_in),
        cmocka_unit_test(test_fair_last_unlock_drops_a_lost_acquires_hold),
        cmocka_unit_test(test_fair_drop_of_a_lost_hold_wakes_the_queue),
    };
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
