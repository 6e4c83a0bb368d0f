/*
 * test_cluster.c: proto's cluster pieces (src/proto/cluster.h) against a
 * live Redis Cluster of 3 masters and 3 replicas (cluster_fixture.h), one
 * for the whole program.
 *
 * What the server says is the reference: our slot of a key is CLUSTER
 * KEYSLOT's; a lock name our check accepts has every key in one slot there,
 * one it refuses does not, and its unlock is refused with CROSSSLOT; our
 * tables from CLUSTER SLOTS and CLUSTER SHARDS agree with each other and
 * with the fixture's reading of CLUSTER NODES; a key asked on the wrong
 * node answers MOVED to where the table says; a migration answers ASK and
 * TRYAGAIN; after a failover the refreshed tables name the new master,
 * the old one redirects there, and the new one lacks the old one's
 * scripts (NOSCRIPT; Redis 6.2 replicated SCRIPT LOAD, so there it has
 * them). Where 6.2 answers otherwise, the case says what 6.2 does.
 *
 * Cases run in order and share the cluster: the migration and the failover
 * come last, and every case asks the fixture who serves what now.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "proto/cluster.h"
#include "proto/scripts.h"

#define HOST "127.0.0.1"

static rt_cluster cluster;

/* ---------------------------------------------------------------- helpers */

/* A connection to node i, for pipelines and ASKING; fails the test if
 * none. */
static redisContext *connect_node(int i)
{
    struct timeval tv = {5, 0};
    redisContext *c =
        redisConnectWithTimeout(HOST, cluster.node[i].port, tv);

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    return c;
}

/* Reads the slot table from node i's CLUSTER SLOTS or CLUSTER SHARDS. */
static rlock__slot_table *table_from(int i, bool shards)
{
    redisReply *r =
        rt_cmd(&cluster.node[i], shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS");
    rlock__slot_table *t = NULL;
    int rc = shards ? rlock__slot_table_from_shards(r, HOST, &t)
                    : rlock__slot_table_from_slots(r, HOST, &t);

    freeReplyObject(r);
    assert_int_equal(rc, RLOCK_OK);
    return t;
}

/* Node i's table from CLUSTER SHARDS once it lists every node of the
 * cluster. Right after the cluster forms, a replica can still be shown as a
 * shard of its own with no master (Valkey carries a node's shard id in its
 * gossip, so the others learn that the replica joined its master's shard a
 * little later): CLUSTER SLOTS is right by then, CLUSTER SHARDS not yet.
 * Waits up to 10 s for that to settle. */
static rlock__slot_table *settled_shards_table(int i)
{
    int64_t deadline = rt_now_ms() + 10000;
    bool said = false;
    for (;;) {
        redisReply *r = rt_cmd(&cluster.node[i], "CLUSTER SHARDS");
        rlock__slot_table *t = NULL;
        int rc = rlock__slot_table_from_shards(r, HOST, &t);
        freeReplyObject(r);
        if (rc == RLOCK_OK && t->count == RT_CLUSTER_NODES)
            return t;
        if (!said) /* what it was, for the log */
            fprintf(stderr, "  node %d's CLUSTER SHARDS not settled yet "
                            "(%d, %zu nodes): waiting\n",
                    i, rc, t != NULL ? t->count : 0);
        said = true;
        rlock__slot_table_free(t);
        if (rt_now_ms() >= deadline) {
            fail_msg("node %d's CLUSTER SHARDS did not list the %d nodes in "
                     "10 s (last: %d)",
                     i, RT_CLUSTER_NODES, rc);
        }
        rt_sleep_ms(100);
    }
}

/* How many forms of the table the server gives: CLUSTER SLOTS's, and from
 * 7.0 CLUSTER SHARDS's (table_from's shards, for form 1). */
static int table_forms(void)
{
    return rt_server_has_7_0() ? 2 : 1;
}

/* The port of the master the table says serves slot. */
static int table_owner_port(const rlock__slot_table *t, int slot)
{
    const rlock__cluster_node *n = rlock__slot_table_master(t, slot);

    assert_non_null(n);
    assert_string_equal(n->host, HOST);
    return n->port;
}

/* Classifies r (then frees it), expecting kind; returns the result. */
static rlock__redirect classify(redisReply *r, rlock__redir_kind kind)
{
    rlock__redirect out;

    assert_non_null(r);
    assert_int_equal(rlock__redirect_parse(r, &out), RLOCK_OK);
    if (out.kind != kind)
        print_message("  want %s, the server said: %s\n",
                      kind == RLOCK__REDIR_NONE ? "no error"
                                                : rlock__redirect_name(kind),
                      r->type == REDIS_REPLY_ERROR ? r->str : "(no error)");
    freeReplyObject(r);
    assert_int_equal(out.kind, kind);
    return out;
}

static int slot_of(const char *key)
{
    return rlock__key_slot(key, strlen(key));
}

/* xorshift64: names that are the same in every run. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------------ slots */

#define RANDOM_NAMES 2000
#define NAME_MAX_LEN 48

typedef struct {
    char bytes[NAME_MAX_LEN];
    size_t len;
} name_bytes;

/* Every single byte but NUL, the edge cases of the hash-tag rule, and
 * random names over an alphabet heavy in braces, with NUL and high bytes. */
static size_t make_names(name_bytes *out, size_t cap)
{
    static const char *edges[] = {
        "", "foo", "{", "}", "{}", "}{", "{}x", "a{b", "a}b", "a}b{c}",
        "{user1000}.following", "foo{{bar}}zap", "x{}y{z}", "{{}}", "{a}{b}",
        "redisson_lock__channel:{orders}",
        ("zamek-\xc5\x82\xc3\xb3" "d\xc5\xba"), "\xff\xfe{\x80}"};
    static const char alphabet[] = "{{}}ab:-_\x01\xff\x80 Zz09";
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    size_t n = 0;

    for (int b = 1; b < 256 && n < cap; b++, n++) {
        out[n].bytes[0] = (char)b;
        out[n].len = 1;
    }
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]) && n < cap;
         i++, n++) {
        out[n].len = strlen(edges[i]);
        memcpy(out[n].bytes, edges[i], out[n].len);
    }
    /* NULs inside a key are bytes like the others */
    memcpy(out[n].bytes, "{a\0b}c", 6);
    out[n++].len = 6;
    for (int i = 0; i < RANDOM_NAMES && n < cap; i++, n++) {
        out[n].len = 1 + next_random(&seed) % (NAME_MAX_LEN - 1);
        for (size_t k = 0; k < out[n].len; k++) {
            uint64_t r = next_random(&seed);

            /* one byte in eight a NUL */
            out[n].bytes[k] =
                r % 8 == 0 ? '\0' : alphabet[r % (sizeof(alphabet) - 1)];
        }
    }
    return n;
}

static void test_our_slot_is_cluster_keyslot_for_many_names(void **state)
{
    (void)state;
    static name_bytes names[255 + 32 + RANDOM_NAMES];
    size_t n = make_names(names, sizeof(names) / sizeof(names[0]));
    redisContext *c = connect_node(0);
    size_t agreed = 0;

    for (size_t i = 0; i < n; i++)
        redisAppendCommand(c, "CLUSTER KEYSLOT %b", names[i].bytes,
                           names[i].len);
    for (size_t i = 0; i < n; i++) {
        void *raw = NULL;
        redisReply *r;

        assert_int_equal(redisGetReply(c, &raw), REDIS_OK);
        r = raw;
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        if (r->integer != rlock__key_slot(names[i].bytes, names[i].len))
            print_message("  name %zu (%zu bytes): ours %d, Redis %lld\n", i,
                          names[i].len,
                          rlock__key_slot(names[i].bytes, names[i].len),
                          r->integer);
        agreed += r->integer == rlock__key_slot(names[i].bytes, names[i].len);
        freeReplyObject(r);
    }
    redisFree(c);
    print_message("  %zu names, %zu agreed with CLUSTER KEYSLOT\n", n, agreed);
    assert_int_equal(agreed, n);
}

/* ------------------------------------------------------- a lock's names */

static const int kinds[] = {RLOCK_KIND_LOCK,   RLOCK_KIND_FAIR,
                            RLOCK_KIND_READ,   RLOCK_KIND_WRITE,
                            RLOCK_KIND_FENCED, RLOCK_KIND_SPIN};

/* Redis's slot of key, or of key + ":" + suffix when suffix is given. */
static long long keyslot(const char *key, const char *suffix)
{
    char buf[4096];

    snprintf(buf, sizeof(buf), "%s%s%s", key, suffix ? ":" : "",
             suffix ? suffix : "");
    return rt_cmd_int(&cluster.node[1], "CLUSTER KEYSLOT %s", buf);
}

/* The part calls append: a request id, an owner tag. */
static const char *const suffixes[] = {
    "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210",
    "5b1f2c9e-8d3a-4e7b-9c1d-2f3a4b5c6d7e:42"};

static void test_accepted_names_have_every_key_in_one_slot_on_the_server(
    void **state)
{
    (void)state;
    const char *names[] = {"orders", "{user1000}.lock", "a}b{c}",
                           ("zamek-\xc5\x82\xc3\xb3" "d\xc5\xba"), "x:y:z",
                           "{tag}x{other}"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            rlock__lock_keys keys;
            int slot = -1;

            assert_int_equal(rlock__lock_slot(kinds[k], names[i], &slot),
                             RLOCK_OK);
            assert_int_equal(rlock__lock_keys_make(kinds[k], names[i], &keys),
                             RLOCK_OK);
            for (size_t j = 0; j < keys.count; j++) {
                if (!keys.suffixed[j]) {
                    assert_int_equal(keyslot(keys.key[j], NULL), slot);
                    continue;
                }
                for (size_t s = 0; s < 3; s++)
                    assert_int_equal(keyslot(keys.key[j], suffixes[s]), slot);
            }
            rlock__lock_keys_clear(&keys);
        }
    }
}

/* Each refused name has, for some kind, two names that Redis puts in
 * different slots. */
static void test_refused_names_span_slots_on_the_server(void **state)
{
    (void)state;
    const char *names[] = {"a{b", "a}b", "{}x", "x{}y{z}", "}{", "}x"};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rlock__lock_keys keys;
        long long first;
        bool spans = false;
        int slot;

        assert_int_equal(rlock__lock_slot(RLOCK_KIND_LOCK, names[i], &slot),
                         RLOCK_EINVAL);
        assert_int_equal(
            rlock__lock_keys_make(RLOCK_KIND_LOCK, names[i], &keys),
            RLOCK_OK);
        first = keyslot(keys.key[0], NULL);
        for (size_t j = 1; j < keys.count; j++) {
            for (size_t s = 0; s < (keys.suffixed[j] ? 3 : 1); s++)
                spans |= keyslot(keys.key[j], keys.suffixed[j] ? suffixes[s]
                                                               : NULL) != first;
        }
        rlock__lock_keys_clear(&keys);
        assert_true(spans);
    }
}

static int64_t wall_ms(void)
{
    return 0;
}

/* Sends the release of lock name (kind lock) to the owner of its slot as
 * the library builds it; returns the reply. */
static redisReply *send_release(const char *name)
{
    char *channel = NULL, *aux[2] = {NULL, NULL};
    char *latch = rlock__latch_name(name, suffixes[0]);
    rlock__lock_desc d = {0};
    rlock__spec s;
    const char *argv[4 + RLOCK__SPEC_ARGS];
    size_t lens[4 + RLOCK__SPEC_ARGS];
    char numkeys[8];
    int argc = 0;
    int owner = rt_cluster_owner(&cluster, slot_of(name));
    redisContext *c;
    redisReply *r;

    assert_true(owner >= 0);
    assert_non_null(latch);
    assert_int_equal(
        rlock__kind_make_names(RLOCK_KIND_LOCK, name, NULL, &channel, aux),
        RLOCK_OK);
    d.kind = RLOCK_KIND_LOCK;
    d.name = name;
    d.channel = channel;
    d.client_id = "5b1f2c9e-8d3a-4e7b-9c1d-2f3a4b5c6d7e";
    d.latch_ms = 1000;
    d.wall_ms = wall_ms;
    assert_int_equal(rlock__kind_release(&s, &d, 42, 30000, latch), RLOCK_OK);
    snprintf(numkeys, sizeof(numkeys), "%d", s.numkeys);
    argv[argc++] = "EVAL";
    argv[argc++] = (const char *)s.script->body;
    argv[argc++] = numkeys;
    for (int i = 0; i < s.argc; i++)
        argv[argc++] = s.argv[i];
    for (int i = 0; i < argc; i++)
        lens[i] = i == 1 ? s.script->len : strlen(argv[i]);
    c = connect_node(owner);
    r = redisCommandArgv(c, argc, argv, lens);
    redisFree(c);
    rlock__spec_clear(&s);
    free(channel);
    free(aux[0]); /* an RLock's queue keys */
    free(aux[1]);
    free(latch);
    return r;
}

/* What the check refuses is what a cluster would refuse at unlock time
 * (CLUSTER-SENTINEL.md 1.2); what it accepts, the cluster runs. */
static void test_release_of_a_refused_name_is_crossslot(void **state)
{
    (void)state;
    redisReply *r;

    classify(send_release("a{b"), RLOCK__REDIR_CROSSSLOT);
    classify(send_release("{}x"), RLOCK__REDIR_CROSSSLOT);
    r = send_release("orders");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL); /* ran: "not held" */
    freeReplyObject(r);
}

/* ------------------------------------------------------------ slot tables */

static void test_slots_and_shards_agree_on_every_node(void **state)
{
    RT_SKIP_BEFORE_7_0("CLUSTER SHARDS");
    (void)state;
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        rlock__slot_table *b = settled_shards_table(i);
        rlock__slot_table *a = table_from(i, false);

        assert_true(rlock__slot_table_covers_all(a));
        assert_true(rlock__slot_table_covers_all(b));
        assert_int_equal(a->count, RT_CLUSTER_NODES);
        assert_int_equal(b->count, RT_CLUSTER_NODES);
        for (int s = 0; s < RLOCK__SLOT_COUNT; s++)
            assert_int_equal(table_owner_port(a, s), table_owner_port(b, s));
        for (size_t k = 0; k < a->count; k++) {
            const rlock__cluster_node *x = &a->nodes[k];
            int j = rlock__slot_table_find(b, x->host, x->port);

            assert_true(j >= 0);
            assert_int_equal(b->nodes[j].role, x->role);
            assert_string_equal(b->nodes[j].id, x->id);
            assert_true(b->nodes[j].online);
            if (x->role == RLOCK__NODE_REPLICA)
                assert_int_equal(b->nodes[b->nodes[j].master].port,
                                 a->nodes[x->master].port);
        }
        rlock__slot_table_free(a);
        rlock__slot_table_free(b);
    }
}

/* The fixture reads CLUSTER NODES; our table must say the same. */
static void test_table_matches_cluster_nodes(void **state)
{
    (void)state;
    rlock__slot_table *t = table_from(2, false);

    for (int s = 0; s < RLOCK__SLOT_COUNT; s += 61) {
        int owner = rt_cluster_owner(&cluster, s);

        assert_true(owner >= 0);
        assert_int_equal(table_owner_port(t, s), cluster.node[owner].port);
    }
    for (size_t k = 0; k < t->count; k++) {
        const rlock__cluster_node *n = &t->nodes[k];
        int i = rt_cluster_find(&cluster, n->port);

        assert_true(i >= 0);
        assert_string_equal(n->id, cluster.id[i]);
        if (n->role == RLOCK__NODE_REPLICA) {
            int m = rt_cluster_find(&cluster, t->nodes[n->master].port);

            assert_int_equal(rt_cluster_replica_of(&cluster, m), i);
        }
    }
    rlock__slot_table_free(t);
}

/* A key lives on the master the table names; every other node, masters
 * and replicas, answers MOVED to it, and the classifier reads the same
 * slot and address. */
static void test_wrong_node_answers_moved_to_the_table_s_owner(void **state)
{
    (void)state;
    rlock__slot_table *t = table_from(0, false);
    char key[32];

    for (int k = 0; k < 24; k++) {
        int slot, port, owner;

        snprintf(key, sizeof(key), "moved:%d", k);
        slot = slot_of(key);
        port = table_owner_port(t, slot);
        owner = rt_cluster_find(&cluster, port);
        assert_true(owner >= 0);
        classify(rt_cmd(&cluster.node[owner], "SET %s v%d", key, k),
                 RLOCK__REDIR_NONE);
        for (int i = 0; i < RT_CLUSTER_NODES; i++) {
            rlock__redirect out;

            if (i == owner)
                continue;
            out = classify(rt_cmd(&cluster.node[i], "GET %s", key),
                           RLOCK__REDIR_MOVED);
            assert_int_equal(out.slot, slot);
            assert_string_equal(out.host, HOST);
            assert_int_equal(out.port, port);
        }
    }
    rlock__slot_table_free(t);
}

/* ------------------------------------------------------------- migration */

/* A slot held open between two masters: a missing key answers ASK to the
 * target (where ASKING + the command is served), a multi-key call over a
 * present and a missing key TRYAGAIN (on the source from 7.0, on the
 * target after 6.2's ASK); once moved, the source answers MOVED and a
 * fresh table names the target. */
static void test_migration_answers_ask_and_tryagain_then_moved(void **state)
{
    (void)state;
    int slot = slot_of("{mig}");
    int from = rt_cluster_owner(&cluster, slot);
    int to = rt_cluster_owner(&cluster, (slot + 5461) % RLOCK__SLOT_COUNT);
    rlock__redirect out;
    redisContext *c;
    redisReply *r;

    assert_true(from >= 0 && to >= 0 && from != to);
    classify(rt_cmd(&cluster.node[from], "SET {mig}here 1"),
             RLOCK__REDIR_NONE);
    assert_int_equal(rt_cluster_migrate_begin(&cluster, slot, to), 0);

    out = classify(rt_cmd(&cluster.node[from], "GET {mig}absent"),
                   RLOCK__REDIR_ASK);
    assert_int_equal(out.slot, slot);
    assert_int_equal(out.port, cluster.node[to].port);
    assert_string_equal(out.host, HOST);
    /* a multi-key call with some keys here and some gone: from 7.0 the
     * source answers TRYAGAIN itself; 6.2's source sends it on with ASK,
     * and the target says TRYAGAIN after ASKING (below) */
    out = classify(rt_cmd(&cluster.node[from], "MGET {mig}here {mig}absent"),
                   rt_server_has_7_0() ? RLOCK__REDIR_TRYAGAIN
                                       : RLOCK__REDIR_ASK);
    if (!rt_server_has_7_0())
        assert_int_equal(out.port, cluster.node[to].port);
    /* the target serves the slot only after ASKING, on that connection */
    out = classify(rt_cmd(&cluster.node[to], "GET {mig}absent"),
                   RLOCK__REDIR_MOVED);
    assert_int_equal(out.port, cluster.node[from].port);
    c = connect_node(to);
    r = redisCommand(c, "ASKING");
    classify(r, RLOCK__REDIR_NONE);
    r = redisCommand(c, "GET {mig}absent");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    /* the target lacks {mig}here: the call that has a key on each side
     * cannot be served anywhere until the keys have moved */
    classify(redisCommand(c, "ASKING"), RLOCK__REDIR_NONE);
    classify(redisCommand(c, "MGET {mig}here {mig}absent"),
             RLOCK__REDIR_TRYAGAIN);
    redisFree(c);

    assert_int_equal(rt_cluster_migrate_keys(&cluster, slot, to), 0);
    assert_int_equal(rt_cluster_migrate_end(&cluster, slot, to), 0);
    out = classify(rt_cmd(&cluster.node[from], "GET {mig}here"),
                   RLOCK__REDIR_MOVED);
    assert_int_equal(out.slot, slot);
    assert_int_equal(out.port, cluster.node[to].port);
    for (int form = 0; form < table_forms(); form++) {
        rlock__slot_table *t = table_from(from, form);

        assert_int_equal(table_owner_port(t, slot), cluster.node[to].port);
        assert_int_equal(table_owner_port(t, slot + 1),
                         cluster.node[from].port);
        rlock__slot_table_free(t);
    }
    r = rt_cmd(&cluster.node[to], "GET {mig}here");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
}

/* -------------------------------------------------------------- failover */

/* CLUSTER FAILOVER on the replica of a key's master: a table read before is
 * stale, the old master (now a replica) answers MOVED to the new one, a
 * refreshed table from either reply names it, and the new master does not
 * have the scripts loaded on the old one (from 7.0; 6.2 replicated them). */
static void test_failover_moves_the_master_and_a_refreshed_table_says_so(
    void **state)
{
    (void)state;
    const rlock__script *script = &rlock__script_lock_release;
    int slot = slot_of("failover:key");
    int old = rt_cluster_owner(&cluster, slot);
    int replica = rt_cluster_replica_of(&cluster, old);
    rlock__slot_table *before = table_from(old, false);
    int64_t t0;
    int promoted;
    char *sha;

    assert_true(old >= 0 && replica >= 0);
    classify(rt_cmd(&cluster.node[old], "SET failover:key 1"),
             RLOCK__REDIR_NONE);
    sha = rt_cmd_str(&cluster.node[old], "SCRIPT LOAD %b", script->body,
                     script->len);
    assert_non_null(sha);
    assert_string_equal(sha, script->sha1);
    free(sha);

    t0 = rt_now_ms();
    promoted = rt_cluster_failover(&cluster, old);
    print_message("  failover of node %d to node %d settled in %lld ms\n", old,
                  promoted, (long long)(rt_now_ms() - t0));
    assert_int_equal(promoted, replica);

    /* the stale table still names the old master; it redirects */
    assert_int_equal(table_owner_port(before, slot), cluster.node[old].port);
    rlock__redirect out = classify(
        rt_cmd(&cluster.node[old], "GET failover:key"), RLOCK__REDIR_MOVED);
    assert_int_equal(out.slot, slot);
    assert_int_equal(out.port, cluster.node[promoted].port);
    for (int form = 0; form < table_forms(); form++) {
        /* node i and node i + 3 are one shard: ask another shard */
        int other = (old % RT_CLUSTER_MASTERS + 1) % RT_CLUSTER_MASTERS;
        rlock__slot_table *t = table_from(other, form);
        int o = rlock__slot_table_find(t, HOST, cluster.node[old].port);

        assert_int_equal(table_owner_port(t, slot),
                         cluster.node[promoted].port);
        assert_true(o >= 0);
        assert_int_equal(t->nodes[o].role, RLOCK__NODE_REPLICA);
        assert_int_equal(t->nodes[t->nodes[o].master].port,
                         cluster.node[promoted].port);
        rlock__slot_table_free(t);
    }
    if (rt_server_has_7_0()) {
        classify(rt_cmd(&cluster.node[promoted], "EVALSHA %s 0",
                        script->sha1),
                 RLOCK__REDIR_NOSCRIPT);
    } else {
        /* before 7.0 a master replicated SCRIPT LOAD: 6.2's new master
         * has the old one's scripts */
        redisReply *r = rt_cmd(&cluster.node[promoted], "SCRIPT EXISTS %s",
                               script->sha1);

        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 1);
        assert_int_equal(r->element[0]->integer, 1);
        freeReplyObject(r);
    }
    rlock__slot_table_free(before);
}

/* ------------------------------------------------------------------ main */

static int group_setup(void **state)
{
    (void)state;
    if (rt_cluster_start(&cluster) != 0)
        return -1;
    print_message("cluster of %d nodes up in %lld ms\n", RT_CLUSTER_NODES,
                  (long long)cluster.start_ms);
    return 0;
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
        cmocka_unit_test(test_our_slot_is_cluster_keyslot_for_many_names),
        cmocka_unit_test(
            test_accepted_names_have_every_key_in_one_slot_on_the_server),
        cmocka_unit_test(test_refused_names_span_slots_on_the_server),
        cmocka_unit_test(test_release_of_a_refused_name_is_crossslot),
        cmocka_unit_test(test_slots_and_shards_agree_on_every_node),
        cmocka_unit_test(test_table_matches_cluster_nodes),
        cmocka_unit_test(test_wrong_node_answers_moved_to_the_table_s_owner),
        cmocka_unit_test(test_migration_answers_ask_and_tryagain_then_moved),
        cmocka_unit_test(
            test_failover_moves_the_master_and_a_refreshed_table_says_so),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
