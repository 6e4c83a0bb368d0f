/*
 * test_cluster_direct.c: blocking calls on caller-thread connections in
 * cluster mode (src/core/direct_cluster.c) against a live Redis
 * Cluster of 3 masters and 3 replicas (cluster_fixture.h), one for the
 * whole program.
 *
 * How a caller-thread connection is told from the I/O thread's: a client
 * has one connection of each kind per node (rlock_config_set_connections
 * 1), and both carry the client's name. An async call opens the I/O
 * thread's connection to a node; a blocking call then opens a second one
 * there, and never a third. What a MOVED costs is read from the nodes'
 * INFO commandstats (a command refused with MOVED counts in rejected_calls
 * there); the table's periodic refresh is pushed out of the way (a scan
 * interval of a minute) so that the client's table stays stale until a
 * MOVED says otherwise.
 *
 * Cases run in order and share the cluster: those that change it (the
 * migration, the failover) come last, and each asks the fixture who serves
 * what now.
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

#include "cluster_fixture.h"
#include "harness.h"
#include "lock_testing.h"
#include "proto/cluster.h"
#include "proto/scripts.h"
#include "rlock.h"

#define HOST "127.0.0.1"
/* How long a close or a give-back may take to show on a loaded machine. */
#define SETTLE_MS 5000

static rt_cluster cluster;

/* ---------------------------------------------------------------- helpers */

static int slot_of(const char *key)
{
    return rlock__key_slot(key, strlen(key));
}

/* Writes into buf a lock name whose slot master m serves now. */
static void name_on(int m, const char *prefix, char *buf, size_t len)
{
    assert_int_equal(rt_cluster_name_on(&cluster, m, prefix, buf, len), 0);
}

/* A client of the cluster named name, with one connection of each kind
 * per node, the given command timeout and retries, and a scan interval of
 * a minute (its table changes only through what the nodes answer). */
static rlock_client *client_named(const char *name, int64_t command_ms,
                                  int retries)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    char uri[128];
    snprintf(uri, sizeof(uri), "redis+cluster://" HOST ":%d," HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_connections(cfg, 1), RLOCK_OK);
    assert_int_equal(rlock_config_set_command_timeout(cfg, command_ms), 0);
    assert_int_equal(rlock_config_set_retry_attempts(cfg, retries), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, name), RLOCK_OK);
    assert_int_equal(rlock_config_set_cluster_scan_interval(cfg, 60000), 0);
    assert_int_equal(rlock_client_connect_with(&c, uri, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

/* Node i's connections named name whose last command is cmd (NULL: any). */
static int connections_on(int i, const char *name, const char *cmd)
{
    char needle[96];
    snprintf(needle, sizeof(needle), " name=%s ", name);
    char *list = rt_cmd_str(&cluster.node[i], "CLIENT LIST");
    assert_non_null(list);
    int n = 0;
    for (char *line = strtok(list, "\n"); line != NULL;
         line = strtok(NULL, "\n")) {
        if (strstr(line, needle) == NULL)
            continue;
        char want[64];
        snprintf(want, sizeof(want), " cmd=%s ", cmd != NULL ? cmd : "");
        if (cmd == NULL || strstr(line, want) != NULL)
            n++;
    }
    free(list);
    return n;
}

/* Waits until node i has n connections named name (cmd as above). */
static int await_connections(int i, const char *name, const char *cmd, int n)
{
    int64_t until = rt_now_ms() + SETTLE_MS;
    int now;
    while ((now = connections_on(i, name, cmd)) != n && rt_now_ms() < until)
        rt_sleep_ms(20);
    return now;
}

/* The CLIENT LIST id of a connection of node i named name, other than
 * skip, whose line holds both of has and also (NULL: anything); -1 when
 * there is none. */
static long long connection_id(int i, const char *name, const char *has,
                               const char *also, long long skip)
{
    char needle[96];
    snprintf(needle, sizeof(needle), " name=%s ", name);
    char *list = rt_cmd_str(&cluster.node[i], "CLIENT LIST");
    assert_non_null(list);
    long long id = -1;
    for (char *line = strtok(list, "\n"); line != NULL && id < 0;
         line = strtok(NULL, "\n")) {
        long long this = atoll(line + strlen("id="));
        if (strstr(line, needle) != NULL && this != skip &&
            (has == NULL || strstr(line, has) != NULL) &&
            (also == NULL || strstr(line, also) != NULL))
            id = this;
    }
    free(list);
    return id;
}

/* The id of node i's connection named name on which an EVALSHA (an
 * acquire) waits out a CLIENT PAUSE, once there is one; -1 when none
 * shows within SETTLE_MS. */
static long long await_paused_evalsha(int i, const char *name)
{
    int64_t until = rt_now_ms() + SETTLE_MS;
    long long id;
    while ((id = connection_id(i, name, " cmd=evalsha ", " flags=b ", -1)) <
               0 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    return id;
}

/* Opens the I/O thread's connection to node i, the master of l's slot,
 * with one async lock and unlock of l (a client named name that has no
 * connection there yet), and returns its CLIENT LIST id. */
static long long io_thread_connection(rlock *l, int i, const char *name)
{
    lt_completion locked = {0}, unlocked = {0};
    assert_int_equal(rlock_lock_async(l, 1, 0, 30000, lt_on_done, &locked),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&locked, 5000), RLOCK_OK);
    assert_int_equal(rlock_unlock_async(l, 1, lt_on_done, &unlocked),
                     RLOCK_OK);
    assert_int_equal(lt_await_completion(&unlocked, 5000), RLOCK_OK);
    assert_int_equal(await_connections(i, name, NULL, 1), 1);
    return connection_id(i, name, NULL, NULL, -1);
}

/* The id of the caller-thread connection a blocking call just opened to
 * node i beside the I/O thread's (io_id), or -1. */
static long long caller_connection(int i, const char *name, long long io_id)
{
    assert_int_equal(await_connections(i, name, NULL, 2), 2);
    return connection_id(i, name, NULL, NULL, io_id);
}

/* Node i's count of EVALSHA from INFO commandstats: those that ran
 * without an error (a NOSCRIPT, which a new master answers once per
 * script, is one), plus those refused (a MOVED, an ASK) when rejected is
 * true. */
static long long evalsha_on(int i, bool rejected)
{
    char *info = rt_cmd_str(&cluster.node[i], "INFO commandstats");
    assert_non_null(info);
    long long calls = 0, refused = 0, failed = 0;
    const char *at = strstr(info, "cmdstat_evalsha:");
    if (at != NULL) {
        const char *c = strstr(at, "calls=");
        const char *r = strstr(at, "rejected_calls=");
        const char *f = strstr(at, "failed_calls=");
        calls = c != NULL ? atoll(c + strlen("calls=")) : 0;
        refused = r != NULL ? atoll(r + strlen("rejected_calls=")) : 0;
        failed = f != NULL ? atoll(f + strlen("failed_calls=")) : 0;
    }
    free(info);
    return calls - failed + (rejected ? refused : 0);
}

static long long exists_on(int i, const char *key)
{
    return rt_cmd_int(&cluster.node[i], "EXISTS %s", key);
}

/* EXISTS key on node i after ASKING: what an importing node holds. */
static long long exists_importing(int i, const char *key)
{
    long long v = rt_cluster_exists_asking(&cluster, i, key);
    assert_true(v != RT_CMD_ERROR);
    return v;
}

/* One lock and unlock of l on the calling thread. */
static void cycle(rlock *l)
{
    assert_int_equal(rlock_trylock(l, 0, 30000), RLOCK_OK);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
}

/* Two blocking cycles of name, whose slot the client's table gives to
 * master old while master now serves it: the first call's MOVED costs one
 * EVALSHA on old, and nothing else reaches old; both cycles run on now. */
static void moved_costs_one_round_trip(rlock_client *c, const char *name,
                                       int old, int now)
{
    rlock *l = NULL;
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    long long old_before = evalsha_on(old, true);
    long long now_before = evalsha_on(now, false);
    cycle(l);
    cycle(l);
    assert_int_equal(evalsha_on(old, true) - old_before, 1);
    assert_int_equal(evalsha_on(now, false) - now_before, 4);
    assert_int_equal(exists_on(now, name), 0);
    rlock_free(l);
}

typedef struct locker {
    rlock *l;
    bool hold; /* lock, then unlock once told to go */
    uint64_t owner; /* rlock_thread_id() of the locker's thread */
    int rc;
    atomic_int locked;
    atomic_int go;
    atomic_int done;
} locker;

static void *run_locker(void *arg)
{
    locker *k = arg;
    k->owner = rlock_thread_id();
    k->rc = rlock_trylock(k->l, 0, 30000);
    atomic_store(&k->locked, 1);
    if (k->hold && k->rc == RLOCK_OK) {
        while (!atomic_load(&k->go))
            rt_sleep_ms(5);
        k->rc = rlock_unlock(k->l);
    }
    atomic_store(&k->done, 1);
    return NULL;
}

typedef struct forcer {
    rlock *l;
    int rc;
    atomic_int done;
} forcer;

static void *run_forcer(void *arg)
{
    forcer *f = arg;
    f->rc = rlock_force_unlock(f->l);
    atomic_store(&f->done, 1);
    return NULL;
}

/* A MONITOR connection to node i: it sees every command the node runs,
 * a script's EVALSHA once it runs (not when a pause holds it), and never
 * one whose client was killed while the pause held it. */
static redisContext *monitor_on(int i)
{
    struct timeval tv = {.tv_sec = SETTLE_MS / 1000};
    redisContext *m = redisConnectWithTimeout(HOST, cluster.node[i].port, tv);
    assert_non_null(m);
    assert_int_equal(m->err, 0);
    assert_int_equal(redisSetTimeout(m, tv), REDIS_OK);
    redisReply *ok = redisCommand(m, "MONITOR");
    assert_non_null(ok);
    assert_int_equal(ok->type, REDIS_REPLY_STATUS);
    freeReplyObject(ok);
    return m;
}

/* How many EVALSHA of script on key node i ran since m began to monitor
 * it, read up to an ECHO sent now (the node runs commands in order, so
 * whatever ran before the ECHO shows before it); frees m. */
static int scripts_seen(redisContext *m, int i, const rlock__script *script,
                        const char *key)
{
    char mark[64], sha[64], quoted[96];
    snprintf(mark, sizeof(mark), "cd-mark-%lld", (long long)rt_now_ms());
    snprintf(sha, sizeof(sha), "\"%s\"", script->sha1);
    snprintf(quoted, sizeof(quoted), "\"%s\"", key);
    freeReplyObject(rt_cmd(&cluster.node[i], "ECHO %s", mark));
    int n = 0;
    for (;;) {
        redisReply *line = NULL;
        assert_int_equal(redisGetReply(m, (void **)&line), REDIS_OK);
        bool end = line->type == REDIS_REPLY_STATUS &&
                   strstr(line->str, mark) != NULL;
        if (line->type == REDIS_REPLY_STATUS && !end &&
            strstr(line->str, sha) != NULL && strstr(line->str, quoted))
            n++;
        freeReplyObject(line);
        if (end)
            break;
    }
    redisFree(m);
    return n;
}

/* ------------------------------------------------------------------ cases */

/* Blocking calls on every master go on one caller-thread connection per
 * node, beside the I/O thread's, and add no round trip: two EVALSHA per
 * cycle on the slot's master, as on a single server. */
static void test_blocking_calls_use_a_connection_to_the_slot_s_master(
    void **state)
{
    (void)state;
    rlock_client *c = client_named("cd-route", 5000, 3);
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char name[64];
        rlock *l = NULL;
        int node = rt_cluster_owner(&cluster, m * 5461 + 1);
        assert_true(node >= 0);
        name_on(node, "route", name, sizeof(name));
        assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
        /* the I/O thread's connection to the node, and only it */
        assert_true(io_thread_connection(l, node, "cd-route") >= 0);
        long long before = evalsha_on(node, true);
        for (int i = 0; i < 10; i++)
            cycle(l);
        /* a second connection there, the caller's */
        assert_int_equal(connections_on(node, "cd-route", NULL), 2);
        assert_int_equal(evalsha_on(node, true) - before, 20);
        assert_int_equal(exists_on(node, name), 0);
        rlock_free(l);
    }
    rlock_client_free(c);
}

/* An acquire sent on a caller-thread connection that is lost before its
 * reply is not sent again: with no retries the call fails with
 * RLOCK_ECONN once the hold it may have taken is dropped, and nobody
 * holds the lock. The node holds every script (CLIENT PAUSE WRITE) while
 * the test kills the connection the acquire waits on, which must be the
 * caller's, not the I/O thread's (whose lost acquire is not sent again
 * either). */
static void test_an_acquire_lost_on_its_connection_is_not_sent_again(
    void **state)
{
    (void)state;
    rlock_client *c = client_named("cd-lost", 5000, 0);
    int node = rt_cluster_owner(&cluster, 1);
    char name[64];
    rlock *l = NULL;
    pthread_t t;
    name_on(node, "lost", name, sizeof(name));
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    long long io_id = io_thread_connection(l, node, "cd-lost");
    assert_true(io_id >= 0);
    cycle(l); /* the caller-thread connection is open */
    long long caller_id = caller_connection(node, "cd-lost", io_id);
    assert_true(caller_id >= 0);
    redisReply *ok = rt_cmd(&cluster.node[node], "CLIENT PAUSE 10000 WRITE");
    assert_non_null(ok);
    freeReplyObject(ok);
    locker k = {.l = l};
    assert_int_equal(pthread_create(&t, NULL, run_locker, &k), 0);
    /* the acquire, held by the pause: a blocked connection of ours */
    long long id = await_paused_evalsha(node, "cd-lost");
    if (id >= 0)
        freeReplyObject(
            rt_cmd(&cluster.node[node], "CLIENT KILL ID %lld", id));
    rt_sleep_ms(200); /* whatever comes next is held by the pause too */
    freeReplyObject(rt_cmd(&cluster.node[node], "CLIENT UNPAUSE"));
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(id >= 0);
    assert_int_equal(id, caller_id); /* the caller's connection was lost */
    assert_int_equal(k.rc, RLOCK_ECONN);
    assert_int_equal(exists_on(node, name), 0);
    assert_int_equal(rlock_hold_count(l), 0);
    cycle(l); /* and the lock works again */
    rlock_free(l);
    rlock_client_free(c);
}

/* A force unlock sent on a caller-thread connection that is lost before
 * its reply is not sent again: a force release that had run and ran again
 * could delete a lock another client took meanwhile. The node holds every
 * script (CLIENT PAUSE WRITE) while B's force release waits on B's
 * caller-thread connection and C's trylock of the same lock waits behind
 * it; the test kills B's connection, then lifts the pause. Redis drops
 * the killed client's held command (it never runs), and runs the held
 * ones in the order they came: C takes the lock. Sent again, B's force
 * release would come after C's trylock (it is held too while the pause
 * lasts, and the test lifts the pause only once it shows) and delete C's
 * hold; not sent again, B hears RLOCK_ECONN, no force release runs on the
 * node, and C's hold outlasts every back-off of route.c. */
static void test_a_force_unlock_lost_on_its_connection_is_not_sent_again(
    void **state)
{
    (void)state;
    rlock_client *b = client_named("cd-force", 10000, 0);
    rlock_client *c = client_named("cd-taker", 10000, 0);
    int node = rt_cluster_owner(&cluster, 2 * 5461 + 1);
    char name[64];
    rlock *lb = NULL, *lc = NULL;
    pthread_t tb, tc;
    name_on(node, "force", name, sizeof(name));
    assert_int_equal(rlock_get(b, name, &lb), RLOCK_OK);
    assert_int_equal(rlock_get(c, name, &lc), RLOCK_OK);
    /* B's connections there, the I/O thread's and the caller's, and C's
     * caller-thread one, open before the pause */
    long long io_id = io_thread_connection(lb, node, "cd-force");
    assert_true(io_id >= 0);
    cycle(lb);
    long long caller_id = caller_connection(node, "cd-force", io_id);
    assert_true(caller_id >= 0);
    cycle(lc);
    assert_int_equal(await_connections(node, "cd-taker", NULL, 1), 1);
    /* the force release is loaded there: no NOSCRIPT, one EVALSHA a run */
    const rlock__script *force = &rlock__script_lock_force_release;
    char *sha = rt_cmd_str(&cluster.node[node], "SCRIPT LOAD %b",
                           force->body, force->len);
    assert_non_null(sha);
    assert_string_equal(sha, force->sha1);
    free(sha);
    redisContext *m = monitor_on(node);

    freeReplyObject(rt_cmd(&cluster.node[node], "CLIENT PAUSE 30000 WRITE"));
    forcer f = {.l = lb};
    assert_int_equal(pthread_create(&tb, NULL, run_forcer, &f), 0);
    long long lost = await_paused_evalsha(node, "cd-force");
    locker k = {.l = lc, .hold = true};
    assert_int_equal(pthread_create(&tc, NULL, run_locker, &k), 0);
    long long taker = await_paused_evalsha(node, "cd-taker");
    if (lost >= 0)
        freeReplyObject(
            rt_cmd(&cluster.node[node], "CLIENT KILL ID %lld", lost));
    /* B's call ends, or it sends the force release again, which the pause
     * holds on another connection of B's */
    int64_t until = rt_now_ms() + SETTLE_MS;
    long long again = -1;
    while (!atomic_load(&f.done) &&
           (again = connection_id(node, "cd-force", " cmd=evalsha ",
                                  " flags=b ", lost)) < 0 &&
           rt_now_ms() < until)
        rt_sleep_ms(10);
    freeReplyObject(rt_cmd(&cluster.node[node], "CLIENT UNPAUSE"));
    assert_int_equal(pthread_join(tb, NULL), 0);
    until = rt_now_ms() + SETTLE_MS;
    while (!atomic_load(&k.locked) && rt_now_ms() < until)
        rt_sleep_ms(10);
    /* well past route.c's back-offs (20 ms doubling to 200 ms) */
    rt_sleep_ms(1000);

    char field[96];
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)k.owner);
    char *count = rt_cmd_str(&cluster.node[node], "HGET %s %s", name, field);
    bool c_holds = count != NULL && strcmp(count, "1") == 0;
    free(count);
    int runs = scripts_seen(m, node, force, name);
    print_message("force release: \"%s\"; lost on connection %lld (the "
                  "caller's: %lld), sent again on %lld (the I/O thread's: "
                  "%lld); ran %d time(s) on the node; C's hold %s\n",
                  rlock_strerror(f.rc), lost, caller_id, again, io_id, runs,
                  c_holds ? "kept" : "deleted");
    atomic_store(&k.go, 1);
    assert_int_equal(pthread_join(tc, NULL), 0);

    assert_true(lost >= 0);
    assert_int_equal(lost, caller_id); /* the caller's connection was lost */
    assert_true(taker >= 0);           /* C's trylock waited behind it */
    assert_true(c_holds);
    assert_int_equal(runs, 0);
    assert_int_equal(f.rc, RLOCK_ECONN);
    assert_int_equal(again, -1);
    assert_int_equal(k.rc, RLOCK_OK); /* C's unlock found its hold */
    assert_int_equal(exists_on(node, name), 0);
    cycle(lb); /* and B's connections work again */
    rlock_free(lc);
    rlock_free(lb);
    rlock_client_free(c);
    rlock_client_free(b);
}

/* A late acquire reply on a node's caller-thread connection is read by
 * the I/O thread while the connection is idle, and the hold it took is
 * given back; the next call works. The I/O thread's own connection there
 * would give back a late acquire too (request.c), so the case first tells
 * the two connections apart and checks that the acquire the pause holds
 * waits on the caller's. */
static void test_a_late_acquire_on_a_node_s_connection_is_given_back(
    void **state)
{
    (void)state;
    rlock_client *c = client_named("cd-late", 300, 3);
    int node = rt_cluster_owner(&cluster, 5461 + 1);
    char name[64];
    rlock *l = NULL;
    name_on(node, "late", name, sizeof(name));
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    long long io_id = io_thread_connection(l, node, "cd-late");
    assert_true(io_id >= 0);
    cycle(l); /* and the caller's, the other one */
    long long caller_id = caller_connection(node, "cd-late", io_id);
    assert_true(caller_id >= 0);
    long long before = evalsha_on(node, false);
    /* the node runs no script for 2 s (time to look at the acquire it
     * holds), then runs the acquire */
    int64_t paused = rt_now_ms();
    freeReplyObject(rt_cmd(&cluster.node[node], "CLIENT PAUSE 2000 WRITE"));
    assert_int_equal(rlock_trylock(l, 0, 60000), RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_hold_count(l), 0);
    long long waiting = await_paused_evalsha(node, "cd-late");
    print_message("the paused acquire waits on connection %lld (the "
                  "caller's: %lld, the I/O thread's: %lld)\n",
                  waiting, caller_id, io_id);
    assert_int_equal(waiting, caller_id);
    int64_t left = 2000 - (rt_now_ms() - paused);
    if (left > 0)
        rt_sleep_ms(left);
    /* the acquire ran, and its hold (a lease of a minute) is given back:
     * two EVALSHA, the acquire's and the give-back's */
    int64_t until = rt_now_ms() + SETTLE_MS;
    while ((exists_on(node, name) != 0 ||
            evalsha_on(node, false) < before + 2) &&
           rt_now_ms() < until)
        rt_sleep_ms(20);
    long long ran = evalsha_on(node, false) - before;
    long long held = exists_on(node, name);
    print_message("after the pause: %lld EVALSHA, and the lock %s\n", ran,
                  held ? "still held" : "free");
    assert_true(ran >= 2);
    assert_int_equal(held, 0);
    cycle(l);
    rlock_free(l);
    rlock_client_free(c);
}

/* A hand-driven migration seen from the caller's thread: a new name's
 * acquire gets ASK and runs on the importing node; a held lock's unlock
 * gets TRYAGAIN until the slot is settled; once it is, the client's stale
 * table costs one MOVED, and the next calls go straight to the new
 * owner. */
static void test_a_migration_asks_tries_again_then_moves(void **state)
{
    (void)state;
    rlock_client *c = client_named("cd-migrate", 5000, 3);
    const char *held_name = "{cd-migrating}:held";
    const char *fresh_name = "{cd-migrating}:fresh";
    const char *after_name = "{cd-migrating}:after";
    int slot = slot_of(held_name);
    int from = rt_cluster_owner(&cluster, slot);
    int to = rt_cluster_owner(&cluster, (slot + 5461) % 16384);
    assert_true(to >= 0 && to != from);
    rlock *held = NULL, *fresh = NULL;
    pthread_t t;
    assert_int_equal(rlock_get(c, held_name, &held), RLOCK_OK);
    assert_int_equal(rlock_get(c, fresh_name, &fresh), RLOCK_OK);
    /* held by a thread of its own, which unlocks when told */
    locker k = {.l = held, .hold = true};
    assert_int_equal(pthread_create(&t, NULL, run_locker, &k), 0);
    while (!atomic_load(&k.locked))
        rt_sleep_ms(5);
    assert_int_equal(k.rc, RLOCK_OK);
    assert_int_equal(rt_cluster_migrate_begin(&cluster, slot, to), 0);
    assert_int_equal(rt_cluster_migrate_keys(&cluster, slot, to), 0);
    assert_int_equal(rlock_trylock(fresh, 0, 30000), RLOCK_OK);
    assert_int_equal(exists_importing(to, fresh_name), 1);
    /* the held lock's keys moved but its latch's would be new: TRYAGAIN
     * for the latched release, then the release that names the lock hash
     * alone, through ASK: the unlock is done with the slot still open */
    atomic_store(&k.go, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(k.rc, RLOCK_OK);
    assert_int_equal(exists_importing(to, held_name), 0);
    assert_int_equal(rt_cluster_migrate_end(&cluster, slot, to), 0);
    assert_int_equal(exists_on(to, held_name), 0);
    assert_int_equal(rlock_unlock(fresh), RLOCK_OK);
    assert_int_equal(exists_on(to, fresh_name), 0);
    rlock_free(fresh);
    rlock_free(held);
    rlock_client_free(c);
    /* a client whose table was read before the move */
    c = client_named("cd-moved", 5000, 3);
    assert_int_equal(rt_cluster_migrate_slot(&cluster, slot, from), 0);
    moved_costs_one_round_trip(c, after_name, to, from);
    rlock_client_free(c);
}

/* After CLUSTER FAILOVER the table names a replica: the first call's
 * MOVED costs one round trip, the next go to the new master, and the
 * caller-thread connection to the old one closes once the table is read
 * again (the old master serves no slot any more). */
static void test_a_failover_costs_one_moved_and_closes_the_old_link(
    void **state)
{
    (void)state;
    rlock_client *c = client_named("cd-failover", 5000, 3);
    int old = rt_cluster_owner(&cluster, 10923 + 1);
    char name[64];
    rlock *l = NULL;
    name_on(old, "failover", name, sizeof(name));
    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    cycle(l); /* a caller-thread connection to old, whose last is DEL */
    assert_int_equal(await_connections(old, "cd-failover", "del", 1), 1);
    int now = rt_cluster_failover(&cluster, old);
    assert_true(now >= 0 && now != old);
    moved_costs_one_round_trip(c, name, old, now);
    /* the I/O thread may keep one there (the table's refresh asks any
     * node); the caller's, whose last was the refused EVALSHA, closes */
    assert_int_equal(await_connections(old, "cd-failover", "evalsha", 0), 0);
    assert_int_equal(connections_on(old, "cd-failover", "del"), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------ main */

static int group_setup(void **state)
{
    (void)state;
    return rt_cluster_start(&cluster) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_cluster_stop(&cluster);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_blocking_calls_use_a_connection_to_the_slot_s_master),
        cmocka_unit_test(
            test_an_acquire_lost_on_its_connection_is_not_sent_again),
        cmocka_unit_test(
            test_a_force_unlock_lost_on_its_connection_is_not_sent_again),
        cmocka_unit_test(
            test_a_late_acquire_on_a_node_s_connection_is_given_back),
        cmocka_unit_test(test_a_migration_asks_tries_again_then_moves),
        cmocka_unit_test(
            test_a_failover_costs_one_moved_and_closes_the_old_link),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
