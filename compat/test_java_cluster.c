/*
 * test_java_cluster.c: rlock and the real Java Redisson both in cluster
 * mode on one Redis Cluster of 3 masters and 3 replicas
 * (tests/support/cluster_fixture.h, loopback ports, one for the program),
 * with the newest Redisson of compat/java/versions.txt (RLOCK_JAVA_VERSION,
 * clusterServersConfig with its default shardedSubscriptionMode AUTO) and,
 * when the list has one, a Redisson from before sharded pub/sub
 * (RLOCK_JAVA_OLD_VERSION, 3.22-3.27). One JVM each for the whole program,
 * and one C client by redis+cluster:// in rlock's default mode (auto).
 *
 * They exclude each other on a lock of each master and see each other's
 * hold counts in the hash; they wake each other (SPUBLISH to SSUBSCRIBE
 * waiters on the slot's master), and open each other's count-down latch
 * waiters the same way; they share a counter; and they keep doing
 * so through a CLUSTER FAILOVER and a slot moved by hand, with a waiter on
 * each side across the failover and an rlock waiter across the move. The
 * old Redisson publishes and subscribes plain: an rlock waiter in mode both
 * hears its unlock, and its waiter hears rlock's in mode off, and in mode
 * both, whose unlock wakes the new Redisson's waiter too. The last case
 * pins what Redisson does with a waiter whose slot moves: it loses the
 * subscription, and later waits on that channel fail (compat/README.md);
 * the one before it shows that with shardedSubscriptionMode OFF (a third
 * JVM, of the newest version) the same waiter is woken.
 *
 * Wake-ups must come from unlock messages: the C clients re-check a held
 * lock only every CT_RECHECK_MS, a Java waiter only when its ttl (30 s)
 * runs out, and a wake-up must come within CT_WAKE_BOUND_MS of the unlock.
 * The JVMs scan the cluster every JAVA_SCAN_MS (Redisson's default is
 * 5000), so that waiting for Redisson to see a topology change costs
 * seconds, not tens of them.
 *
 * Cases run in order and share the cluster: the failover and the moves come
 * last, and each case asks the fixture who serves what now.
 *
 * On a server without sharded pub/sub (Redis 6.2) Redisson's AUTO and
 * rlock's auto both go plain, so the cases wait for plain subscriptions
 * (PUBSUB NUMSUB) instead; a plain subscription need not follow its slot,
 * since a plain PUBLISH reaches every node over the cluster bus. What
 * needs sharded pub/sub itself (rlock's mode both, Redisson's SSUBSCRIBE
 * waiter across a move) is skipped there, saying why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"
#include "compat_testing.h"
#include "harness.h"
#include "java_peer.h"
#include "java_testing.h"
#include "lock_testing.h"
#include "rlock.h"

#ifndef RLOCK_JAVA_VERSION
#error "RLOCK_JAVA_VERSION must name a Redisson version (compat/CMakeLists.txt)"
#endif

#define LT_SUITE "java_cluster"
#define VERSION  RLOCK_JAVA_VERSION
#define HOST     "127.0.0.1"

#define JAVA_SCAN_MS "1000" /* the JVMs' scanInterval, ms */
/* Redisson sees a topology change at its next scan: give it four */
#define JAVA_RESCAN_MS 4000
/* a re-subscription after a failover: Redisson's scan, on a loaded machine */
#define RESUBSCRIBE_MS 15000
/* how long a subscription Redisson moved must stay put before the test
 * counts on it: a scan interval, many times what its moves take */
#define JAVA_SETTLE_MS 1000

static rt_cluster cluster;
static jp_peer *java; /* VERSION, AUTO: sharded */
static jp_peer *old;  /* RLOCK_JAVA_OLD_VERSION: plain, or NULL */
static jp_peer *plain; /* VERSION with shardedSubscriptionMode OFF */
static rlock_client *client;

/* ---------------------------------------------------------------- helpers */

static rt_redis *node(int i)
{
    assert_true(i >= 0 && i < RT_CLUSTER_NODES);
    return &cluster.node[i];
}

/* The slot of key as the server computes it. */
static int slot_of(const char *key)
{
    long long s = rt_cmd_int(&cluster.node[0], "CLUSTER KEYSLOT %s", key);
    assert_true(s >= 0 && s < 16384);
    return (int)s;
}

/* The master serving key's slot now. */
static int owner_of(const char *key)
{
    int m = rt_cluster_owner(&cluster, slot_of(key));
    assert_true(m >= 0);
    return m;
}

/* The master that serves, now, the first slot of the range master m had
 * when the cluster was made. */
static int master_now(int m)
{
    int owner = rt_cluster_owner(&cluster, m * 5461 + 1);
    assert_true(owner >= 0);
    return owner;
}

/* Another master than m. */
static int other_master(int m)
{
    for (int r = 0; r < RT_CLUSTER_MASTERS; r++)
        if (master_now(r) != m)
            return master_now(r);
    fail_msg("no master other than %d", m);
    return -1;
}

/* Writes into buf a hash tag "{prefix-i}" whose slot master m serves. */
static void tag_on(int m, const char *prefix, char *buf, size_t len)
{
    for (int i = 0; i < 10000; i++) {
        snprintf(buf, len, "{%s-%d}", prefix, i);
        if (rt_cluster_owner(&cluster, slot_of(buf)) == m)
            return;
    }
    fail_msg("no tag of prefix %s lands on master %d", prefix, m);
}

/* For subscribers() and wait_subs(): every node of the cluster, summed. */
#define ANY_NODE (-1)

/* Subscribers of channel on node i (or ANY_NODE): PUBSUB SHARDNUMSUB
 * (sharded) or NUMSUB (plain, this node's own). */
static long long subscribers(int i, const char *kind, const char *channel)
{
    if (i == ANY_NODE) {
        long long sum = 0;
        for (int n = 0; n < RT_CLUSTER_NODES; n++)
            sum += subscribers(n, kind, channel);
        return sum;
    }
    redisReply *r = rt_cmd(node(i), "PUBSUB %s %s", kind, channel);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

static long long shard_subs(int i, const char *channel)
{
    return subscribers(i, "SHARDNUMSUB", channel);
}

static long long plain_subs(int i, const char *channel)
{
    return subscribers(i, "NUMSUB", channel);
}

/* Whether the server has sharded pub/sub (Redis 7.0 on, any Valkey).
 * Without it (Redis 6.2) Redisson's AUTO and rlock's auto both go plain,
 * and a plain PUBLISH in a cluster reaches every node over the cluster
 * bus, so a plain subscriber anywhere hears it. */
static int has_sharded(void)
{
    return rt_server_has_7_0();
}

/* The subscriptions AUTO (Redisson's, rlock's auto) makes, as PUBSUB
 * counts them: sharded where the server has it, else plain. */
static const char *auto_kind(void)
{
    return has_sharded() ? "SHARDNUMSUB" : "NUMSUB";
}

/* Asserts that channel has no subscriber of the kind AUTO did not choose
 * on node i: no plain one where AUTO went sharded. Without sharded pub/sub
 * there is no other kind to count. */
static void assert_only_auto_kind(int i, const char *channel)
{
    if (has_sharded())
        assert_int_equal(plain_subs(i, channel), 0);
}

/* Skips a case that needs sharded pub/sub itself (rlock's modes on and
 * both, SSUBSCRIBE's behaviour), saying why. */
#define SKIP_WITHOUT_SHARDED(why)                                              \
    RT_SKIP_BEFORE_7_0("sharded pub/sub (" why ")")

/* Waits until channel has n subscribers of kind on node i, asserting that
 * it happens within timeout_ms; returns how long it took. */
static int64_t wait_subs(int i, const char *kind, const char *channel,
                         long long n, int timeout_ms)
{
    int64_t start = rt_now_ms();
    while (subscribers(i, kind, channel) != n) {
        if (rt_now_ms() - start > timeout_ms)
            fail_msg("%s %s on node %d: not %lld within %d ms", kind, channel,
                     i, n, timeout_ms);
        rt_sleep_ms(20);
    }
    return rt_now_ms() - start;
}

/* After wait_subs() saw n: waits until channel has had n subscribers of
 * kind on node i at every look for settle_ms (a look every 20 ms),
 * asserting that it happens within timeout_ms. For a Redisson still
 * moving a subscription: a count it passes through is not yet where it
 * listens. */
static void wait_subs_settled(int i, const char *kind, const char *channel,
                              long long n, int settle_ms, int timeout_ms)
{
    int64_t start = rt_now_ms(), since = start;
    while (rt_now_ms() - since < settle_ms) {
        if (rt_now_ms() - start > timeout_ms)
            fail_msg("%s %s on node %d: not %lld for %d ms within %d ms",
                     kind, channel, i, n, settle_ms, timeout_ms);
        if (subscribers(i, kind, channel) != n)
            since = rt_now_ms();
        rt_sleep_ms(20);
    }
}

/* The node channel has a subscriber of kind on (the first), or -1. */
static int subscribed_on(const char *kind, const char *channel)
{
    for (int i = 0; i < RT_CLUSTER_NODES; i++)
        if (subscribers(i, kind, channel) > 0)
            return i;
    return -1;
}

/* After a failover or a slot move took channel's slot to master to: waits
 * until channel has its one subscriber again, on to when it is sharded
 * (which must follow its slot), or anywhere in the cluster when it is
 * plain (which hears every node's PUBLISH wherever it is: rlock's follows
 * its slot all the same, Redisson's need not), and returns how long that
 * took. */
static int64_t wait_resubscribed(int to, const char *channel, int timeout_ms)
{
    if (has_sharded())
        return wait_subs(to, "SHARDNUMSUB", channel, 1, timeout_ms);
    return wait_subs(ANY_NODE, "NUMSUB", channel, 1, timeout_ms);
}

/* Whether node i holds key (CLUSTER GETKEYSINSLOT, which a replica
 * answers too). */
static int node_has_key(int i, const char *key)
{
    int found = 0;
    redisReply *r = rt_cmd(node(i), "CLUSTER GETKEYSINSLOT %d 1000",
                           slot_of(key));
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    for (size_t k = 0; k < r->elements; k++)
        found |= strcmp(r->element[k]->str, key) == 0;
    freeReplyObject(r);
    return found;
}

/* After a CLUSTER FAILOVER from master `from` to `to`: waits until from,
 * now to's replica, has applied a write made on to (in tag's slot),
 * asserting that it happens within timeout_ms; returns how long it took.
 * Redisson 4 follows each lock script with WAIT 1 and releases and
 * retries a lock no replica acknowledged. Redis 6.2 keeps a master it
 * fails over manually paused for writes for 10 s (7.0 lifts the pause
 * when the failover ends), its new master's stream included: a script's
 * writes, replicated in MULTI, stay unacknowledged until then, and no
 * Redisson lock on that shard sticks. */
static int64_t wait_demoted_master_applies(int from, int to, const char *tag,
                                           int timeout_ms)
{
    char key[64];
    int64_t start = rt_now_ms();
    snprintf(key, sizeof(key), "%s:applied", tag);
    char *v = rt_cmd_str(node(to), "SET %s 1", key);
    assert_non_null(v);
    free(v);
    while (!node_has_key(from, key)) {
        if (rt_now_ms() - start > timeout_ms)
            fail_msg("node %d: a write on node %d not applied within %d ms",
                     from, to, timeout_ms);
        rt_sleep_ms(50);
    }
    assert_int_equal(rt_cmd_int(node(to), "DEL %s", key), 1);
    return rt_now_ms() - start;
}

/* The hold count in field of hash name on node i (0 if none). */
static long long hold_count(int i, const char *name, const char *field)
{
    char *v = rt_cmd_str(node(i), "HGET %s %s", name, field);
    long long n = v != NULL ? atoll(v) : 0;
    free(v);
    return n;
}

/* Redisson's field: "<client uuid>:<thread id>", the uuid 36 characters
 * with dashes, the thread id decimal. */
static void assert_redisson_field(const char *field)
{
    const char *colon = strrchr(field, ':');
    assert_non_null(colon);
    assert_int_equal(colon - field, 36);
    assert_true(field[8] == '-' && field[13] == '-' && field[18] == '-' &&
                field[23] == '-');
    assert_true(colon[1] != '\0');
    for (const char *p = colon + 1; *p != '\0'; p++)
        assert_true(isdigit((unsigned char)*p));
}

/* The Java thread tid takes name (no wait expected); returns the hash
 * field Redisson counts its holds in (caller frees). */
static char *java_lock(jp_peer *p, const char *tid, const char *name)
{
    json_t *ev = jt_java_do(p, tid, "lock", "lock", name, NULL, JT_PEER_MS);
    const char *f = np_str(ev, "field");
    assert_non_null(f);
    char *field = strdup(f);
    assert_non_null(field);
    json_decref(ev);
    assert_redisson_field(field);
    return field;
}

/* A client of the cluster in sharded mode `mode`, whose waiters wake only
 * on messages. */
static rlock_client *connect_mode(int mode)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    char uri[128];
    snprintf(uri, sizeof(uri), "redis+cluster://" HOST ":%d," HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    assert_int_equal(rlock_config_set_recheck_interval(cfg, CT_RECHECK_MS),
                     RLOCK_OK);
    assert_int_equal(rlock_config_set_cluster_sharded(cfg, mode), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, uri, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    return c;
}

/* A Java waiter (thread tid of p) blocked on name, which rlock holds by l,
 * wakes within CT_WAKE_BOUND_MS of rlock's unlock. Returns the latency. The
 * caller has seen the waiter's subscription. */
static long long java_woken_by_rlock(jp_peer *p, const char *tid, rlock *l)
{
    int64_t t0 = ct_wall_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    json_t *ev = jp_expect(p, tid, "lock", CT_WAKE_BOUND_MS);
    long long lat = np_int(ev, "t") - t0;
    json_decref(ev);
    assert_true(lat < CT_WAKE_BOUND_MS);
    return lat;
}

/* An rlock waiter blocked on name, which Java thread tid of p holds, wakes
 * within CT_WAKE_BOUND_MS of Java's unlock, and holds it. Returns the
 * latency. */
static long long rlock_woken_by_java(jp_peer *p, const char *tid,
                                     const char *name, ct_locker *waiter)
{
    int64_t offset = ct_wall_ms() - rt_now_ms();
    json_t *ev = jt_java_do(p, tid, "unlock", "lock", name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "ok"));
    int64_t t0 = np_int(ev, "t0");
    json_decref(ev);
    assert_true(ct_locker_wait(waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter->acquired_rc, RLOCK_OK);
    long long lat = waiter->done_ms + offset - t0;
    assert_true(lat < CT_WAKE_BOUND_MS);
    return lat;
}

/* On name (on master owner): Java holds, rlock's trylock fails, an rlock
 * waiter is woken by Java's unlock; then rlock holds, Java's tryLock fails,
 * a Java waiter is woken by rlock's unlock. */
static void take_turns(const char *name, const char *when)
{
    char channel[160];
    ct_locker waiter;
    int owner = owner_of(name);
    rlock *l = lt_get_lock(client, name);
    rlock *w = lt_get_lock(client, name);
    lt_channel_of(channel, sizeof(channel), name);

    free(java_lock(java, "t", name));
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    ct_locker_start(&waiter, w, RLOCK_WAIT_FOREVER);
    wait_subs(owner, auto_kind(), channel, 1, 5000);
    assert_false(ct_locker_wait(&waiter, 100));
    long long to_c = rlock_woken_by_java(java, "t", name, &waiter);
    assert_false(jt_java_trylock(java, "lock", name, 0));
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    /* rlock's waiter has left the channel: the next subscriber is Java's */
    wait_subs(owner, auto_kind(), channel, 0, 5000);

    assert_int_equal(rlock_lock(l), RLOCK_OK);
    assert_false(jt_java_trylock(java, "lock", name, 0));
    jp_send(java, "t lock lock %s", name);
    wait_subs(owner, auto_kind(), channel, 1, JT_PEER_MS);
    assert_true(jp_quiet(java, "t", 100));
    long long to_java = java_woken_by_rlock(java, "t", l);
    jt_java_unlock(java, "t", "lock", name);
    assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
    print_message("%s: Java unlock -> rlock waiter %lld ms, rlock unlock -> "
                  "Java waiter %lld ms\n",
                  when, to_c, to_java);
    rlock_free(w);
    rlock_free(l);
}

/* ------------------------------------------------- exclusion, wake-ups */

static void test_each_side_keeps_the_other_out_on_every_master(void **state)
{
    (void)state;
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char tag[32], name[64], cfield[128];
        int owner = master_now(m);
        tag_on(owner, "excl", tag, sizeof(tag));
        snprintf(name, sizeof(name), "%s:lock", tag);
        rlock *l = lt_get_lock(client, name);
        lt_owner_field(cfield, sizeof(cfield), client);

        /* rlock holds twice: one field counting 2, and Java stays out */
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rt_cmd_int(node(owner), "HLEN %s", name), 1);
        assert_int_equal(hold_count(owner, name, cfield), 2);
        assert_false(jt_java_trylock(java, "lock", name, 0));
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(hold_count(owner, name, cfield), 1);
        assert_false(jt_java_trylock(java, "lock", name, 0));
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);

        /* Java holds three times: one field of Redisson's shape counting
         * 3, and rlock stays out until the third unlock */
        char *jfield = java_lock(java, "h", name);
        for (int i = 0; i < 2; i++) {
            char *again = java_lock(java, "h", name);
            assert_string_equal(again, jfield);
            free(again);
        }
        assert_int_equal(rt_cmd_int(node(owner), "HLEN %s", name), 1);
        assert_int_equal(hold_count(owner, name, jfield), 3);
        assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        jt_java_unlock(java, "h", "lock", name);
        jt_java_unlock(java, "h", "lock", name);
        assert_int_equal(hold_count(owner, name, jfield), 1);
        assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG),
                         RLOCK_ETIMEDOUT);
        jt_java_unlock(java, "h", "lock", name);
        assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
        assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        free(jfield);
        rlock_free(l);
    }
}

static void test_a_java_waiter_is_woken_by_an_rlock_unlock(void **state)
{
    (void)state;
    long long lat[RT_CLUSTER_MASTERS];
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char tag[32], name[64], channel[160];
        int owner = master_now(m);
        tag_on(owner, "jwake", tag, sizeof(tag));
        snprintf(name, sizeof(name), "%s:lock", tag);
        lt_channel_of(channel, sizeof(channel), name);
        rlock *l = lt_get_lock(client, name);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        jp_send(java, "w lock lock %s", name);
        /* Redisson's AUTO chose sharded where the server has it
         * (SSUBSCRIBE), else plain, on the slot's master */
        wait_subs(owner, auto_kind(), channel, 1, JT_PEER_MS);
        assert_only_auto_kind(owner, channel);
        assert_true(jp_quiet(java, "w", 200));
        /* well before the lease (30 s, the watchdog's) runs out */
        assert_true(rt_cmd_int(node(owner), "PTTL %s", name) > 20000);
        lat[m] = java_woken_by_rlock(java, "w", l);
        jt_java_unlock(java, "w", "lock", name);
        assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
        rlock_free(l);
    }
    jt_report_latencies(VERSION, "cluster: rlock unlock -> Java waiter", lat,
                        RT_CLUSTER_MASTERS);
}

static void test_an_rlock_waiter_is_woken_by_a_java_unlock(void **state)
{
    (void)state;
    long long lat[RT_CLUSTER_MASTERS];
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char tag[32], name[64], channel[160];
        ct_locker waiter;
        int owner = master_now(m);
        tag_on(owner, "cwake", tag, sizeof(tag));
        snprintf(name, sizeof(name), "%s:lock", tag);
        lt_channel_of(channel, sizeof(channel), name);
        free(java_lock(java, "h", name));
        rlock *l = lt_get_lock(client, name);
        ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
        /* rlock's auto mode chose as Redisson's did */
        wait_subs(owner, auto_kind(), channel, 1, 5000);
        assert_only_auto_kind(owner, channel);
        assert_false(ct_locker_wait(&waiter, 200));
        assert_true(rt_cmd_int(node(owner), "PTTL %s", name) > 20000);
        lat[m] = rlock_woken_by_java(java, "h", name, &waiter);
        assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
        assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
        rlock_free(l);
    }
    jt_report_latencies(VERSION, "cluster: Java unlock -> rlock waiter", lat,
                        RT_CLUSTER_MASTERS);
}

/* ------------------------------------------------- count-down latch */

/* Writes into buf a latch name "prefix-i" whose slot master m serves. A
 * latch's channel is "redisson_countdownlatch__channel__{N}" whatever N
 * holds, so only a name without braces keeps key and channel in one slot. */
static void latch_name_on(int m, const char *prefix, char *buf, size_t len)
{
    for (int i = 0; i < 10000; i++) {
        snprintf(buf, len, "%s-%d", prefix, i);
        if (rt_cluster_owner(&cluster, slot_of(buf)) == m)
            return;
    }
    fail_msg("no latch name of prefix %s lands on master %d", prefix, m);
}

/* A C thread waiting on a latch; done_wall_ms is when its await returned. */
typedef struct latch_waiter {
    rlock_latch *l;
    int rc;
    int64_t done_wall_ms;
    pthread_t thread;
} latch_waiter;

static void *latch_waiter_main(void *arg)
{
    latch_waiter *w = arg;
    w->rc = rlock_latch_await(w->l, RLOCK_WAIT_FOREVER);
    w->done_wall_ms = ct_wall_ms();
    return NULL;
}

/* On a latch of each master, Java's countDown() opens an rlock waiter,
 * which waits SSUBSCRIBEd on the slot's master (rlock's auto mode): the
 * count-down's "0" goes out with SPUBLISH. */
static void test_an_rlock_latch_waiter_is_opened_by_a_java_count_down(
    void **state)
{
    RT_SKIP_BEFORE_7_0("PUBSUB SHARDNUMSUB");
    (void)state;
    long long lat[RT_CLUSTER_MASTERS];
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char name[64], channel[160];
        latch_waiter w = {.l = NULL};
        int owner = master_now(m);
        latch_name_on(owner, "clatch", name, sizeof(name));
        lt_latch_channel_of(channel, sizeof(channel), name);
        assert_int_equal(rlock_latch_get(client, name, &w.l), RLOCK_OK);
        json_t *ev =
            jt_java_do(java, "d", "setcount", "latch", name, "1", JT_PEER_MS);
        assert_true(np_bool(ev, "set"));
        json_decref(ev);
        assert_int_equal(
            pthread_create(&w.thread, NULL, latch_waiter_main, &w), 0);
        wait_subs(owner, "SHARDNUMSUB", channel, 1, 5000);
        assert_int_equal(plain_subs(owner, channel), 0);
        ev = jt_java_do(java, "d", "countdown", "latch", name, NULL,
                        JT_PEER_MS);
        int64_t t0 = np_int(ev, "t0");
        json_decref(ev);
        assert_int_equal(pthread_join(w.thread, NULL), 0);
        assert_int_equal(w.rc, RLOCK_OK);
        lat[m] = w.done_wall_ms - t0;
        assert_true(lat[m] < CT_WAKE_BOUND_MS);
        assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
        rlock_latch_free(w.l);
    }
    jt_report_latencies(VERSION, "cluster: Java countDown -> rlock latch",
                        lat, RT_CLUSTER_MASTERS);
}

/* And rlock's count-down opens a Java waiter, SSUBSCRIBEd by Redisson. */
static void test_a_java_latch_waiter_is_opened_by_an_rlock_count_down(
    void **state)
{
    RT_SKIP_BEFORE_7_0("PUBSUB SHARDNUMSUB");
    (void)state;
    long long lat[RT_CLUSTER_MASTERS];
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char name[64], channel[160];
        rlock_latch *l;
        int owner = master_now(m);
        latch_name_on(owner, "jlatch", name, sizeof(name));
        lt_latch_channel_of(channel, sizeof(channel), name);
        assert_int_equal(rlock_latch_get(client, name, &l), RLOCK_OK);
        assert_int_equal(rlock_latch_try_set_count(l, 1), 1);
        jp_send(java, "w await latch %s", name);
        wait_subs(owner, "SHARDNUMSUB", channel, 1, JT_PEER_MS);
        assert_true(jp_quiet(java, "w", 200));
        int64_t t0 = ct_wall_ms();
        assert_int_equal(rlock_latch_count_down(l), RLOCK_OK);
        json_t *ev = jp_expect(java, "w", "await", CT_WAKE_BOUND_MS);
        assert_true(np_bool(ev, "opened"));
        lat[m] = np_int(ev, "t") - t0;
        json_decref(ev);
        assert_true(lat[m] < CT_WAKE_BOUND_MS);
        rlock_latch_free(l);
    }
    jt_report_latencies(VERSION, "cluster: rlock countDown -> Java latch",
                        lat, RT_CLUSTER_MASTERS);
}

/* --------------------------------------------------------- contention */

#define CONTEND_ITER     25
#define CONTEND_THINK_MS 4
#define CONTEND_THREADS  2

typedef struct contender {
    rlock *lock;
    int port; /* the master of the counter's slot */
    const char *counter;
    int failures;
    pthread_t thread;
} contender;

static void *contender_main(void *arg)
{
    contender *k = arg;
    redisContext *c = redisConnect(HOST, k->port);

    if (c == NULL || c->err) {
        k->failures = CONTEND_ITER;
        redisFree(c);
        return NULL;
    }
    for (int i = 0; i < CONTEND_ITER; i++) {
        if (rlock_lock(k->lock) != RLOCK_OK) {
            k->failures++;
            continue;
        }
        redisReply *rep = redisCommand(c, "GET %s", k->counter);
        long long v = rep != NULL && rep->type == REDIS_REPLY_STRING
                          ? atoll(rep->str)
                          : 0;
        freeReplyObject(rep);
        rt_sleep_ms(1);
        rep = redisCommand(c, "SET %s %lld", k->counter, v + 1);
        if (rep == NULL || rep->type != REDIS_REPLY_STATUS)
            k->failures++;
        freeReplyObject(rep);
        freeReplyObject(redisCommand(c, "RPUSH %s:log c", k->counter));
        if (rlock_unlock(k->lock) != RLOCK_OK)
            k->failures++;
        rt_sleep_ms(CONTEND_THINK_MS);
    }
    redisFree(c);
    return NULL;
}

/* Two rlock threads and two Java threads repeat lock, GET, SET + 1,
 * unlock on one counter in the lock's slot. GET and SET are separate
 * commands, so only mutual exclusion keeps the count exact; the log shows
 * the lock changed hands between the sides. */
static void test_both_sides_increment_one_counter_and_lose_none(void **state)
{
    (void)state;
    char tag[32], name[64], counter[64], args[128];
    contender k[CONTEND_THREADS];
    int changes = 0, failures = 0;
    int owner = master_now(1);
    tag_on(owner, "counter", tag, sizeof(tag));
    snprintf(name, sizeof(name), "%s:lock", tag);
    snprintf(counter, sizeof(counter), "%s:n", tag);
    snprintf(args, sizeof(args), "%s %d %d", counter, CONTEND_ITER,
             CONTEND_THINK_MS);

    for (int t = 0; t < CONTEND_THREADS; t++)
        jp_send(java, "c%d contend lock %s %s", t, name, args);
    for (int i = 0; i < CONTEND_THREADS; i++) {
        k[i] = (contender){.lock = lt_get_lock(client, name),
                           .port = cluster.node[owner].port,
                           .counter = counter};
        assert_int_equal(pthread_create(&k[i].thread, NULL, contender_main,
                                        &k[i]),
                         0);
    }
    for (int i = 0; i < CONTEND_THREADS; i++) {
        pthread_join(k[i].thread, NULL);
        failures += k[i].failures;
        rlock_free(k[i].lock);
    }
    for (int t = 0; t < CONTEND_THREADS; t++) {
        char tid[8];
        snprintf(tid, sizeof(tid), "c%d", t);
        json_decref(jp_expect(java, tid, "contend", 60000));
    }
    assert_int_equal(failures, 0);

    int total = 2 * CONTEND_THREADS * CONTEND_ITER;
    char *value = rt_cmd_str(node(owner), "GET %s", counter);
    assert_non_null(value);
    assert_int_equal(atoll(value), total);
    free(value);
    redisReply *rep = rt_cmd(node(owner), "LRANGE %s:log 0 -1", counter);
    assert_non_null(rep);
    assert_int_equal(rep->elements, (size_t)total);
    for (size_t i = 1; i < rep->elements; i++)
        changes += strcmp(rep->element[i]->str, rep->element[i - 1]->str) != 0;
    freeReplyObject(rep);
    print_message("redisson %s: %d increments, the lock changed sides %d "
                  "times\n",
                  VERSION, total, changes);
    assert_true(changes >= 2);
    assert_int_equal(rt_cmd_int(node(owner), "EXISTS %s", name), 0);
}

/* ------------------------------------------ Redisson before sharding */

#ifdef RLOCK_JAVA_OLD_VERSION

/* The old Redisson's probe (SPUBLISH "" "" on its first seed, which does
 * not serve slot 0) failed: it holds and unlocks with PUBLISH, which an
 * rlock waiter in mode both hears on its slot's master. */
static void test_old_redisson_unlock_wakes_an_rlock_waiter_in_mode_both(
    void **state)
{
    SKIP_WITHOUT_SHARDED("rlock's mode both");
    (void)state;
    char tag[32], name[64], channel[160];
    ct_locker waiter;
    rlock_client *both = connect_mode(RLOCK_SHARDED_BOTH);
    int owner = master_now(2);
    tag_on(owner, "oldpub", tag, sizeof(tag));
    snprintf(name, sizeof(name), "%s:lock", tag);
    lt_channel_of(channel, sizeof(channel), name);

    free(java_lock(old, "h", name));
    rlock *l = lt_get_lock(both, name);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    /* mode both: SUBSCRIBE and SSUBSCRIBE, on the slot's master */
    wait_subs(owner, "SHARDNUMSUB", channel, 1, 5000);
    wait_subs(owner, "NUMSUB", channel, 1, 5000);
    assert_false(ct_locker_wait(&waiter, 200));
    long long lat = rlock_woken_by_java(old, "h", name, &waiter);
    print_message("redisson %s: plain unlock -> rlock waiter (mode both) %lld "
                  "ms\n",
                  RLOCK_JAVA_OLD_VERSION, lat);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    rlock_free(l);
    rlock_client_free(both);
}

/* The old Redisson's waiter subscribes plain (SUBSCRIBE on the slot's
 * master, no SSUBSCRIBE anywhere), and rlock in mode off wakes it. */
static void test_old_redisson_waiter_is_woken_by_rlock_in_mode_off(
    void **state)
{
    (void)state;
    char tag[32], name[64], channel[160];
    rlock_client *off = connect_mode(RLOCK_SHARDED_OFF);
    int owner = master_now(0);
    tag_on(owner, "oldsub", tag, sizeof(tag));
    snprintf(name, sizeof(name), "%s:lock", tag);
    lt_channel_of(channel, sizeof(channel), name);

    rlock *l = lt_get_lock(off, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    jp_send(old, "w lock lock %s", name);
    wait_subs(owner, "NUMSUB", channel, 1, JT_PEER_MS);
    for (int i = 0; has_sharded() && i < RT_CLUSTER_NODES; i++)
        assert_int_equal(shard_subs(i, channel), 0);
    assert_true(jp_quiet(old, "w", 200));
    long long lat = java_woken_by_rlock(old, "w", l);
    print_message("redisson %s: rlock unlock (mode off) -> plain waiter %lld "
                  "ms\n",
                  RLOCK_JAVA_OLD_VERSION, lat);
    jt_java_unlock(old, "w", "lock", name);
    rlock_free(l);
    rlock_client_free(off);
}

/* In mode both rlock's unlock publishes both ways: the old Redisson's
 * plain waiter and the new one's sharded waiter each hear it. */
static void test_rlock_in_mode_both_wakes_plain_and_sharded_java_waiters(
    void **state)
{
    SKIP_WITHOUT_SHARDED("rlock's mode both, Redisson's sharded waiter");
    (void)state;
    rlock_client *both = connect_mode(RLOCK_SHARDED_BOTH);
    jp_peer *peers[2] = {old, java};
    const char *versions[2] = {RLOCK_JAVA_OLD_VERSION, VERSION};
    const char *kinds[2] = {"NUMSUB", "SHARDNUMSUB"};
    for (int i = 0; i < 2; i++) {
        char tag[32], name[64], channel[160];
        int owner = master_now(i + 1);
        tag_on(owner, "bothpub", tag, sizeof(tag));
        snprintf(name, sizeof(name), "%s:lock", tag);
        lt_channel_of(channel, sizeof(channel), name);
        rlock *l = lt_get_lock(both, name);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        jp_send(peers[i], "wb lock lock %s", name);
        wait_subs(owner, kinds[i], channel, 1, JT_PEER_MS);
        assert_int_equal(subscribers(owner, kinds[1 - i], channel), 0);
        assert_true(jp_quiet(peers[i], "wb", 200));
        long long lat = java_woken_by_rlock(peers[i], "wb", l);
        print_message("redisson %s: rlock unlock (mode both) -> %s waiter "
                      "%lld ms\n",
                      versions[i], i == 0 ? "plain" : "sharded", lat);
        jt_java_unlock(peers[i], "wb", "lock", name);
        rlock_free(l);
    }
    rlock_client_free(both);
}

#endif /* RLOCK_JAVA_OLD_VERSION */

/* ----------------------------------------------- failover, resharding */

/* Before a CLUSTER FAILOVER of a lock's master, rlock holds x with a Java
 * waiter on it, and Java holds y (same slot) with an rlock waiter on it.
 * The holds come across to the new master; both sides subscribe again
 * there (rlock when the old master pushes sunsubscribe, Redisson at its
 * next scan; plain subscriptions, without sharded pub/sub, anywhere);
 * each unlock wakes the other side's waiter; and a fresh exchange on the
 * new master works both ways. */
static void test_through_a_failover_both_exclude_and_wake_each_other(
    void **state)
{
    (void)state;
    char tag[32], x[64], y[64], z[64], chx[160], chy[160], cfield[128];
    ct_locker waiter;
    int from = master_now(0);
    tag_on(from, "failover", tag, sizeof(tag));
    snprintf(x, sizeof(x), "%s:x", tag);
    snprintf(y, sizeof(y), "%s:y", tag);
    snprintf(z, sizeof(z), "%s:z", tag);
    lt_channel_of(chx, sizeof(chx), x);
    lt_channel_of(chy, sizeof(chy), y);
    lt_owner_field(cfield, sizeof(cfield), client);

    rlock *lx = lt_get_lock(client, x), *ly = lt_get_lock(client, y);
    rlock *ly2 = lt_get_lock(client, y);
    assert_int_equal(rlock_lock(lx), RLOCK_OK);
    jp_send(java, "wf lock lock %s", x);
    wait_subs(from, auto_kind(), chx, 1, JT_PEER_MS);
    char *jfield = java_lock(java, "hf", y);
    ct_locker_start(&waiter, ly, RLOCK_WAIT_FOREVER);
    wait_subs(from, auto_kind(), chy, 1, 5000);

    int64_t start = rt_now_ms();
    int to = rt_cluster_failover(&cluster, from);
    assert_true(to >= 0 && to != from);
    int64_t took = rt_now_ms() - start;

    /* the holds came across */
    assert_int_equal(hold_count(to, x, cfield), 1);
    assert_int_equal(hold_count(to, y, jfield), 1);
    /* both subscribe again on the new master (plain: anywhere), Redisson
     * once it has scanned */
    if (!has_sharded())
        rt_sleep_ms(JAVA_RESCAN_MS);
    int64_t c_again = wait_resubscribed(to, chy, 5000);
    int64_t j_again = wait_resubscribed(to, chx, RESUBSCRIBE_MS);
    /* Redisson's locks need the new master's replica (the old master) */
    int64_t synced = wait_demoted_master_applies(from, to, tag,
                                                 RESUBSCRIBE_MS);
    print_message("failover: node %d to %d, %lld ms until settled; then "
                  "rlock's waiter subscribed (%s) on node %d within %lld ms, "
                  "Redisson's on node %d within %lld ms; node %d applied the "
                  "new master's writes within %lld ms\n",
                  from, to, (long long)took, auto_kind(),
                  subscribed_on(auto_kind(), chy), (long long)c_again,
                  subscribed_on(auto_kind(), chx), (long long)j_again, from,
                  (long long)synced);
    /* and still exclude each other */
    assert_false(jt_java_trylock(java, "lock", x, 0));
    assert_int_equal(rlock_trylock(ly2, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_false(ct_locker_wait(&waiter, 0));
    assert_true(jp_quiet(java, "wf", 0));

    /* the waiters from before the failover wake on the unlocks */
    long long to_java = java_woken_by_rlock(java, "wf", lx);
    long long to_c = rlock_woken_by_java(java, "hf", y, &waiter);
    print_message("across the failover: rlock unlock -> Java waiter %lld ms, "
                  "Java unlock -> rlock waiter %lld ms\n",
                  to_java, to_c);
    assert_int_equal(hold_count(to, x, cfield), 0);
    jt_java_unlock(java, "wf", "lock", x);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    assert_int_equal(rt_cmd_int(node(to), "EXISTS %s", y), 0);

    take_turns(z, "after the failover");
    free(jfield);
    rlock_free(ly2);
    rlock_free(ly);
    rlock_free(lx);
}

/* Java holds a with an rlock waiter on it while a's slot moves to another
 * master by hand (IMPORTING, MIGRATING, MIGRATE, SETSLOT NODE on all). The
 * hold comes across, rlock's waiter subscribes again on the new master
 * (a plain one too) and Java's unlock wakes it; then, once
 * Redisson has scanned, a fresh exchange in the moved slot works both
 * ways. */
static void test_through_a_slot_move_both_exclude_and_wake_each_other(
    void **state)
{
    (void)state;
    char tag[32], a[64], b[64], cha[160];
    ct_locker waiter;
    int from = master_now(1);
    tag_on(from, "moved", tag, sizeof(tag));
    snprintf(a, sizeof(a), "%s:a", tag);
    snprintf(b, sizeof(b), "%s:b", tag);
    lt_channel_of(cha, sizeof(cha), a);
    int slot = slot_of(a);
    int to = other_master(from);

    char *jfield = java_lock(java, "ha", a);
    rlock *la = lt_get_lock(client, a), *la2 = lt_get_lock(client, a);
    ct_locker_start(&waiter, la, RLOCK_WAIT_FOREVER);
    wait_subs(from, auto_kind(), cha, 1, 5000);

    int64_t start = rt_now_ms();
    assert_int_equal(rt_cluster_migrate_slot(&cluster, slot, to), 0);
    int64_t took = rt_now_ms() - start;
    assert_int_equal(owner_of(a), to);
    assert_int_equal(hold_count(to, a, jfield), 1);
    int64_t c_again = wait_resubscribed(to, cha, 5000);
    print_message("slot %d moved from node %d to %d in %lld ms; rlock's "
                  "waiter subscribed (%s) on node %d within %lld ms\n",
                  slot, from, to, (long long)took, auto_kind(),
                  subscribed_on(auto_kind(), cha), (long long)c_again);
    rt_sleep_ms(JAVA_RESCAN_MS);
    assert_int_equal(rlock_trylock(la2, 0, RLOCK_LEASE_WATCHDOG),
                     RLOCK_ETIMEDOUT);
    assert_false(ct_locker_wait(&waiter, 0));
    long long to_c = rlock_woken_by_java(java, "ha", a, &waiter);
    print_message("across the move: Java unlock -> rlock waiter %lld ms\n",
                  to_c);
    assert_false(jt_java_trylock(java, "lock", a, 0));
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    assert_int_equal(rt_cmd_int(node(to), "EXISTS %s", a), 0);

    take_turns(b, "after the move");
    free(jfield);
    rlock_free(la2);
    rlock_free(la);
}

/* With shardedSubscriptionMode OFF, Redisson subscribes plain on the
 * slot's master and moves that subscription at its next scan after the
 * slot moves: its waiter across the move is woken by rlock's unlock (mode
 * off), and a later wait on the name subscribes and is woken too. */
static void test_with_sharding_off_a_java_waiter_across_a_slot_move_wakes(
    void **state)
{
    (void)state;
    char tag[32], e[64], che[160];
    rlock_client *off = connect_mode(RLOCK_SHARDED_OFF);
    int from = master_now(0);
    tag_on(from, "plainmove", tag, sizeof(tag));
    snprintf(e, sizeof(e), "%s:e", tag);
    lt_channel_of(che, sizeof(che), e);
    int to = other_master(from);

    rlock *l = lt_get_lock(off, e);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    jp_send(plain, "wo lock lock %s", e);
    wait_subs(from, "NUMSUB", che, 1, JT_PEER_MS);
    assert_int_equal(rt_cluster_migrate_slot(&cluster, slot_of(e), to), 0);
    int64_t again = wait_subs(to, "NUMSUB", che, 1, RESUBSCRIBE_MS);
    /* Redisson subscribes on the new master, unsubscribes there and
     * subscribes again within tens of ms: an unlock in between reaches
     * nobody */
    wait_subs_settled(to, "NUMSUB", che, 1, JAVA_SETTLE_MS, RESUBSCRIBE_MS);
    assert_int_equal(plain_subs(from, che), 0);
    print_message("redisson %s (OFF): its plain waiter subscribed on the new "
                  "master %lld ms after the move\n",
                  VERSION, (long long)again);
    assert_true(jp_quiet(plain, "wo", 0));
    long long lat = java_woken_by_rlock(plain, "wo", l);
    jt_java_unlock(plain, "wo", "lock", e);
    /* a later wait on the name, in the moved slot */
    wait_subs(to, "NUMSUB", che, 0, JT_PEER_MS);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    jp_send(plain, "wo lock lock %s", e);
    wait_subs(to, "NUMSUB", che, 1, JT_PEER_MS);
    assert_true(jp_quiet(plain, "wo", 100));
    long long later = java_woken_by_rlock(plain, "wo", l);
    jt_java_unlock(plain, "wo", "lock", e);
    print_message("redisson %s (OFF): rlock unlock (mode off) -> Java waiter "
                  "%lld ms across the move, %lld ms after it\n",
                  VERSION, lat, later);
    rlock_free(l);
    rlock_client_free(off);
}

/* What Redisson does with a waiter whose slot moves (pinned here, and in
 * compat/README.md): both old owners push sunsubscribe, which Redisson
 * ignores, and its scan's re-subscription for the moved slot does not
 * subscribe the channel anywhere, so the waiter misses rlock's unlock and
 * would get the lock only when its ttl wait ends. The channel then stays
 * stuck in that JVM: a second lock() waiting on it fails after the
 * subscription timeout (7.5 s) with "Unable to acquire subscription lock".
 * When a Redisson release fixes this, this test fails: then make it expect
 * the wake-up. Last: the Java thread stays blocked. */
static void test_redisson_loses_a_waiter_s_subscription_when_its_slot_moves(
    void **state)
{
    /* without it Redisson's waiter is plain, as in the case before */
    SKIP_WITHOUT_SHARDED("what Redisson does with an SSUBSCRIBE waiter");
    (void)state;
    char tag[32], d[64], chd[160];
    int from = master_now(2);
    tag_on(from, "lost", tag, sizeof(tag));
    snprintf(d, sizeof(d), "%s:d", tag);
    lt_channel_of(chd, sizeof(chd), d);
    int to = other_master(from);

    rlock *l = lt_get_lock(client, d);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    jp_send(java, "wm lock lock %s", d);
    wait_subs(from, "SHARDNUMSUB", chd, 1, JT_PEER_MS);
    assert_int_equal(rt_cluster_migrate_slot(&cluster, slot_of(d), to), 0);
    rt_sleep_ms(JAVA_RESCAN_MS);
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        assert_int_equal(shard_subs(i, chd), 0);
        assert_int_equal(plain_subs(i, chd), 0);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_true(jp_quiet(java, "wm", CT_WAKE_BOUND_MS));
    print_message("redisson %s: its waiter across the slot move was not "
                  "subscribed anywhere and missed the unlock\n",
                  VERSION);
    /* and the channel stays stuck: another wait on it cannot subscribe */
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    int64_t start = rt_now_ms();
    jp_send(java, "wm2 lock lock %s", d);
    json_t *ev = jp_expect(java, "wm2", "error", 7500 + JT_PEER_MS);
    print_message("redisson %s: a second waiter failed after %lld ms: %s\n",
                  VERSION, (long long)(rt_now_ms() - start),
                  np_str(ev, "error"));
    assert_non_null(
        strstr(np_str(ev, "error"), "Unable to acquire subscription lock"));
    json_decref(ev);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    rlock_free(l);
}

/* ------------------------------------------------------------------ main */

static int group_setup(void **state)
{
    static const char *const opts[] = {"scan=" JAVA_SCAN_MS, NULL};
    static const char *const plain_opts[] = {"scan=" JAVA_SCAN_MS,
                                             "sharded=OFF", NULL};
    char seeds[256];
    (void)state;
    jp_require_java(VERSION);
    if (rt_cluster_start(&cluster) != 0)
        return -1;
    /* both JVMs start at once: each takes seconds. The new one's first seed
     * is node 0, the old one's node 1: the old Redisson probes sharding on
     * its first seed with SPUBLISH "" "", which only the master of slot 0
     * (node 0) accepts, so it goes plain. */
    snprintf(seeds, sizeof(seeds), "redis://" HOST ":%d,redis://" HOST ":%d",
             cluster.node[0].port, cluster.node[1].port);
    java = jp_start_mode(VERSION, "cluster", seeds, opts);
    plain = jp_start_mode(VERSION, "cluster", seeds, plain_opts);
#ifdef RLOCK_JAVA_OLD_VERSION
    jp_require_java(RLOCK_JAVA_OLD_VERSION);
    snprintf(seeds, sizeof(seeds), "redis://" HOST ":%d,redis://" HOST ":%d",
             cluster.node[1].port, cluster.node[2].port);
    old = jp_start_mode(RLOCK_JAVA_OLD_VERSION, "cluster", seeds, opts);
    if (old == NULL ||
        jp_ready(old, RLOCK_JAVA_OLD_VERSION, JT_JVM_START_MS) != 0)
        return -1;
#endif
    if (java == NULL || jp_ready(java, VERSION, JT_JVM_START_MS) != 0 ||
        plain == NULL || jp_ready(plain, VERSION, JT_JVM_START_MS) != 0)
        return -1;
    client = connect_mode(RLOCK_SHARDED_AUTO);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rlock_client_free(client);
    jp_free(java);
    jp_free(plain);
    jp_free(old);
    rt_cluster_stop(&cluster);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_side_keeps_the_other_out_on_every_master),
        cmocka_unit_test(test_a_java_waiter_is_woken_by_an_rlock_unlock),
        cmocka_unit_test(test_an_rlock_waiter_is_woken_by_a_java_unlock),
        cmocka_unit_test(
            test_an_rlock_latch_waiter_is_opened_by_a_java_count_down),
        cmocka_unit_test(
            test_a_java_latch_waiter_is_opened_by_an_rlock_count_down),
        cmocka_unit_test(test_both_sides_increment_one_counter_and_lose_none),
#ifdef RLOCK_JAVA_OLD_VERSION
        cmocka_unit_test(
            test_old_redisson_unlock_wakes_an_rlock_waiter_in_mode_both),
        cmocka_unit_test(
            test_old_redisson_waiter_is_woken_by_rlock_in_mode_off),
        cmocka_unit_test(
            test_rlock_in_mode_both_wakes_plain_and_sharded_java_waiters),
#endif
        cmocka_unit_test(
            test_through_a_failover_both_exclude_and_wake_each_other),
        cmocka_unit_test(
            test_through_a_slot_move_both_exclude_and_wake_each_other),
        cmocka_unit_test(
            test_with_sharding_off_a_java_waiter_across_a_slot_move_wakes),
        cmocka_unit_test(
            test_redisson_loses_a_waiter_s_subscription_when_its_slot_moves),
    };

    rt_require_redis();
    return cmocka_run_group_tests_name("java_cluster", tests, group_setup,
                                       group_teardown);
}
