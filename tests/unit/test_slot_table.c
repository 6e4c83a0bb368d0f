/*
 * test_slot_table.c: the slot table read from CLUSTER SLOTS and CLUSTER
 * SHARDS replies (src/proto/slot_table.c), built by hand in the shapes
 * Redis 7.0.15 sends (the fuzz corpus holds the real bytes, and
 * test_cluster reads a live cluster).
 *
 * The cluster of most cases: masters on ports 7000, 7001 and 7002 with
 * slots 0-5460, 5461-10922 and 10923-16383, and replicas on 7003, 7004
 * and 7005, all on 127.0.0.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/cluster.h"
#include "reply_builder.h"

#define HOST "127.0.0.1"

static const int lo[3] = {0, 5461, 10923};
/* What a result pointer holds before a call that must set it to NULL. */
static rlock__slot_table not_null;
static const int hi[3] = {5460, 10922, 16383};

/* Node p's id: 40 times one letter, 'a' for port 7000, 'b' for 7001, ... */
static const char *id_of(int port)
{
    static char ids[16][41];
    char *id = ids[port % 16];

    memset(id, 'a' + port % 16, 40);
    id[40] = '\0';
    return id;
}

/* ---------------------------------------------------------- CLUSTER SLOTS */

static redisReply *slots_node_at(redisReply *host, int port)
{
    return rb_arr(4, host, rb_int(port), rb_str(id_of(port)), rb_arr(0));
}

static redisReply *slots_node(int port)
{
    return slots_node_at(rb_str(HOST), port);
}

static redisReply *slots_range(int from, int to, int master, int replica)
{
    return rb_arr(4, rb_int(from), rb_int(to), slots_node(master),
                  slots_node(replica));
}

static redisReply *three_masters_slots(void)
{
    return rb_arr(3, slots_range(lo[0], hi[0], 7000, 7003),
                  slots_range(lo[1], hi[1], 7001, 7004),
                  slots_range(lo[2], hi[2], 7002, 7005));
}

/* Parses r as CLUSTER SLOTS (then frees it); returns the code. */
static int from_slots(redisReply *r, const char *asked,
                      rlock__slot_table **t)
{
    int rc = rlock__slot_table_from_slots(r, asked, t);

    rb_free(r);
    return rc;
}

/* Asserts that r (freed) is refused as CLUSTER SLOTS with code. */
static void assert_slots_refused(redisReply *r, int code)
{
    rlock__slot_table *t = &not_null; /* the parser must clear it */

    assert_int_equal(from_slots(r, HOST, &t), code);
    assert_null(t);
}

static void assert_master_port(const rlock__slot_table *t, int slot, int port)
{
    const rlock__cluster_node *n = rlock__slot_table_master(t, slot);

    assert_non_null(n);
    assert_int_equal(n->port, port);
    assert_string_equal(n->host, HOST);
    assert_int_equal(n->role, RLOCK__NODE_MASTER);
}

static void test_slots_give_each_slot_its_master(void **state)
{
    (void)state;
    rlock__slot_table *t;

    assert_int_equal(from_slots(three_masters_slots(), HOST, &t), RLOCK_OK);
    for (int m = 0; m < 3; m++) {
        assert_master_port(t, lo[m], 7000 + m);
        assert_master_port(t, (lo[m] + hi[m]) / 2, 7000 + m);
        assert_master_port(t, hi[m], 7000 + m);
    }
    assert_true(rlock__slot_table_covers_all(t));
    assert_int_equal(t->count, 6);
    rlock__slot_table_free(t);
}

static void test_slots_replicas_follow_their_masters(void **state)
{
    (void)state;
    rlock__slot_table *t;

    assert_int_equal(from_slots(three_masters_slots(), HOST, &t), RLOCK_OK);
    for (int m = 0; m < 3; m++) {
        int r = rlock__slot_table_find(t, HOST, 7003 + m);
        int master = rlock__slot_table_find(t, HOST, 7000 + m);

        assert_true(r >= 0 && master >= 0);
        assert_int_equal(t->nodes[r].role, RLOCK__NODE_REPLICA);
        assert_int_equal(t->nodes[r].master, master);
        assert_int_equal(t->nodes[master].master, -1);
        assert_string_equal(t->nodes[r].id, id_of(7003 + m));
        assert_true(t->nodes[r].online);
    }
    rlock__slot_table_free(t);
}

/* A master listed once per range (after a slot moved to it) is one node,
 * with its replica once. */
static void test_master_with_several_ranges_is_one_node(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(4, slots_range(0, 99, 7000, 7003),
                           slots_range(100, 100, 7001, 7004),
                           slots_range(101, 5460, 7000, 7003),
                           slots_range(5461, 16383, 7001, 7004));

    assert_int_equal(from_slots(r, HOST, &t), RLOCK_OK);
    assert_int_equal(t->count, 4);
    assert_master_port(t, 99, 7000);
    assert_master_port(t, 100, 7001);
    assert_master_port(t, 101, 7000);
    assert_true(rlock__slot_table_covers_all(t));
    rlock__slot_table_free(t);
}

/* nil, "" and "?" are Redis's "unknown endpoint": the host asked. */
static void test_unknown_endpoint_is_the_host_asked(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(
        3,
        rb_arr(3, rb_int(0), rb_int(10), slots_node_at(rb_nil(), 7000)),
        rb_arr(3, rb_int(11), rb_int(20), slots_node_at(rb_str(""), 7001)),
        rb_arr(3, rb_int(21), rb_int(30), slots_node_at(rb_str("?"), 7002)));

    assert_int_equal(from_slots(r, "seed.example", &t), RLOCK_OK);
    for (int s = 0; s <= 30; s += 10)
        assert_string_equal(rlock__slot_table_master(t, s)->host,
                            "seed.example");
    assert_int_equal(rlock__slot_table_master(t, 30)->port, 7002);
    rlock__slot_table_free(t);
}

static void test_unknown_endpoint_without_a_host_asked_is_eproto(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(
        1, rb_arr(3, rb_int(0), rb_int(10), slots_node_at(rb_nil(), 7000)));

    assert_int_equal(from_slots(r, NULL, &t), RLOCK_EPROTO);
    assert_null(t);
}

static void test_unserved_slots_leave_the_table_incomplete(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(1, slots_range(lo[0], hi[0], 7000, 7003));

    assert_int_equal(from_slots(r, HOST, &t), RLOCK_OK);
    assert_false(rlock__slot_table_covers_all(t));
    assert_master_port(t, hi[0], 7000);
    assert_null(rlock__slot_table_master(t, lo[1]));
    assert_null(rlock__slot_table_master(t, -1));
    assert_null(rlock__slot_table_master(t, RLOCK__SLOT_COUNT));
    rlock__slot_table_free(t);
}

/* An empty CLUSTER SLOTS (no slot assigned yet) is a table of nothing. */
static void test_empty_slots_reply_serves_nothing(void **state)
{
    (void)state;
    rlock__slot_table *t;

    assert_int_equal(from_slots(rb_arr(0), HOST, &t), RLOCK_OK);
    assert_int_equal(t->count, 0);
    assert_false(rlock__slot_table_covers_all(t));
    rlock__slot_table_free(t);
}

static void test_slot_bounds_given_as_strings_are_read(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(1, rb_arr(3, rb_str("5"), rb_str("16383"),
                                     slots_node(7000)));

    assert_int_equal(from_slots(r, HOST, &t), RLOCK_OK);
    assert_null(rlock__slot_table_master(t, 4));
    assert_master_port(t, 5, 7000);
    assert_master_port(t, 16383, 7000);
    rlock__slot_table_free(t);
}

static void test_malformed_slots_replies_are_eproto(void **state)
{
    (void)state;
    char long_id[42];
    static const char nul_host[] = "127.0.0.1\0.evil";

    memset(long_id, 'f', 41);
    long_id[41] = '\0';
    /* two ranges claim slot 5460 */
    assert_slots_refused(rb_arr(2, slots_range(0, 5460, 7000, 7003),
                                slots_range(5460, 16383, 7001, 7004)),
                         RLOCK_EPROTO);
    /* backwards, and out of range */
    assert_slots_refused(rb_arr(1, slots_range(10, 9, 7000, 7003)),
                         RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, slots_range(0, 16384, 7000, 7003)),
                         RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, slots_range(-1, 5, 7000, 7003)),
                         RLOCK_EPROTO);
    /* ports out of range */
    assert_slots_refused(rb_arr(1, slots_range(0, 5, 0, 7003)),
                         RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, slots_range(0, 5, 7000, 65536)),
                         RLOCK_EPROTO);
    /* a node that is a master in one range and a replica in another */
    assert_slots_refused(rb_arr(2, slots_range(0, 5, 7000, 7003),
                                slots_range(6, 9, 7003, 7004)),
                         RLOCK_EPROTO);
    /* a replica of two masters */
    assert_slots_refused(rb_arr(2, slots_range(0, 5, 7000, 7003),
                                slots_range(6, 9, 7001, 7003)),
                         RLOCK_EPROTO);
    /* shapes */
    assert_slots_refused(rb_int(3), RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, rb_arr(2, rb_int(0), rb_int(5))),
                         RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, rb_arr(3, rb_int(0), rb_int(5),
                                          rb_str("127.0.0.1:7000"))),
                         RLOCK_EPROTO);
    assert_slots_refused(rb_arr(1, rb_arr(3, rb_str("zero"), rb_int(5),
                                          slots_node(7000))),
                         RLOCK_EPROTO);
    assert_slots_refused(
        rb_arr(1, rb_arr(3, rb_int(0), rb_int(5),
                         rb_arr(3, rb_str(HOST), rb_int(7000),
                                rb_str(long_id)))),
        RLOCK_EPROTO);
    assert_slots_refused(
        rb_arr(1, rb_arr(3, rb_int(0), rb_int(5),
                         slots_node_at(rb_text(REDIS_REPLY_STRING, nul_host,
                                               sizeof(nul_host) - 1),
                                       7000))),
        RLOCK_EPROTO);
}

static void test_error_reply_gives_its_code(void **state)
{
    (void)state;
    rlock__slot_table *t;

    assert_slots_refused(rb_err("ERR This instance has cluster support "
                                "disabled"),
                         RLOCK_ESERVER);
    assert_int_equal(rlock__slot_table_from_slots(NULL, HOST, &t),
                     RLOCK_ECONN);
    assert_null(t);
    assert_int_equal(rlock__slot_table_from_shards(NULL, HOST, &t),
                     RLOCK_ECONN);
    assert_null(t);
}

/* --------------------------------------------------------- CLUSTER SHARDS */

/* A node map as 7.0.15 sends it; endpoint NULL leaves the field out. */
static redisReply *shard_node(int port, const char *endpoint,
                              const char *role, const char *health)
{
    if (endpoint == NULL)
        return rb_arr(12, rb_str("id"), rb_str(id_of(port)), rb_str("port"),
                      rb_int(port), rb_str("ip"), rb_str(HOST),
                      rb_str("role"), rb_str(role),
                      rb_str("replication-offset"), rb_int(70),
                      rb_str("health"), rb_str(health));
    return rb_arr(14, rb_str("id"), rb_str(id_of(port)), rb_str("port"),
                  rb_int(port), rb_str("ip"), rb_str(HOST),
                  rb_str("endpoint"), rb_str(endpoint), rb_str("role"),
                  rb_str(role), rb_str("replication-offset"), rb_int(70),
                  rb_str("health"), rb_str(health));
}

static redisReply *shard(redisReply *slots, redisReply *nodes)
{
    return rb_arr(4, rb_str("slots"), slots, rb_str("nodes"), nodes);
}

static redisReply *plain_shard(int m)
{
    return shard(rb_arr(2, rb_int(lo[m]), rb_int(hi[m])),
                 rb_arr(2, shard_node(7000 + m, HOST, "master", "online"),
                        shard_node(7003 + m, HOST, "replica", "online")));
}

/* 7.0.15 lists the shards in no slot order: here 1, 2, 0 as measured. */
static redisReply *three_masters_shards(void)
{
    return rb_arr(3, plain_shard(1), plain_shard(2), plain_shard(0));
}

static int from_shards(redisReply *r, const char *asked,
                       rlock__slot_table **t)
{
    int rc = rlock__slot_table_from_shards(r, asked, t);

    rb_free(r);
    return rc;
}

static void assert_shards_refused(redisReply *r)
{
    rlock__slot_table *t = &not_null;

    assert_int_equal(from_shards(r, HOST, &t), RLOCK_EPROTO);
    assert_null(t);
}

/* Both replies of one cluster make the same table (node order aside). */
static void test_shards_and_slots_give_the_same_table(void **state)
{
    (void)state;
    rlock__slot_table *a, *b;

    assert_int_equal(from_slots(three_masters_slots(), HOST, &a), RLOCK_OK);
    assert_int_equal(from_shards(three_masters_shards(), HOST, &b), RLOCK_OK);
    assert_int_equal(a->count, b->count);
    for (int s = 0; s < RLOCK__SLOT_COUNT; s++)
        assert_int_equal(rlock__slot_table_master(a, s)->port,
                         rlock__slot_table_master(b, s)->port);
    for (size_t i = 0; i < a->count; i++) {
        const rlock__cluster_node *x = &a->nodes[i];
        int j = rlock__slot_table_find(b, x->host, x->port);

        assert_true(j >= 0);
        assert_int_equal(b->nodes[j].role, x->role);
        assert_string_equal(b->nodes[j].id, x->id);
        if (x->role == RLOCK__NODE_REPLICA)
            assert_int_equal(b->nodes[b->nodes[j].master].port,
                             a->nodes[x->master].port);
    }
    rlock__slot_table_free(a);
    rlock__slot_table_free(b);
}

/* Some 7.0 builds sent the bounds as strings (CLUSTER-SENTINEL.md 2.2);
 * a shard may also hold several ranges. */
static void test_shards_slot_bounds_as_strings_and_several_ranges(
    void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(
        1, shard(rb_arr(4, rb_str("0"), rb_str("99"), rb_int(200),
                        rb_int(16383)),
                 rb_arr(1, shard_node(7000, HOST, "master", "online"))));

    assert_int_equal(from_shards(r, HOST, &t), RLOCK_OK);
    assert_master_port(t, 0, 7000);
    assert_master_port(t, 99, 7000);
    assert_null(rlock__slot_table_master(t, 100));
    assert_master_port(t, 200, 7000);
    rlock__slot_table_free(t);
}

/* After a crash failover a shard can list the failed old master beside
 * the promoted one: the online master serves the slots. */
static void test_failed_old_master_beside_the_new_one_serves_nothing(
    void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *r = rb_arr(
        1, shard(rb_arr(2, rb_int(0), rb_int(16383)),
                 rb_arr(3, shard_node(7000, HOST, "master", "failed"),
                        shard_node(7003, HOST, "master", "online"),
                        shard_node(7004, HOST, "replica", "loading"))));

    assert_int_equal(from_shards(r, HOST, &t), RLOCK_OK);
    assert_master_port(t, 0, 7003);
    int old = rlock__slot_table_find(t, HOST, 7000);
    int replica = rlock__slot_table_find(t, HOST, 7004);
    assert_true(old >= 0 && replica >= 0);
    assert_false(t->nodes[old].online);
    assert_int_equal(t->nodes[old].role, RLOCK__NODE_MASTER);
    assert_false(t->nodes[replica].online);
    assert_int_equal(t->nodes[t->nodes[replica].master].port, 7003);
    rlock__slot_table_free(t);
}

static void test_shard_without_one_live_master_is_eproto(void **state)
{
    (void)state;
    /* two online masters */
    assert_shards_refused(rb_arr(
        1, shard(rb_arr(2, rb_int(0), rb_int(5)),
                 rb_arr(2, shard_node(7000, HOST, "master", "online"),
                        shard_node(7003, HOST, "master", "online")))));
    /* no master at all */
    assert_shards_refused(rb_arr(
        1, shard(rb_arr(2, rb_int(0), rb_int(5)),
                 rb_arr(1, shard_node(7003, HOST, "replica", "online")))));
}

/* A TLS-only node gives only tls-port: that is its port then. */
static void test_tls_port_alone_is_the_port(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *node = rb_arr(
        10, rb_str("id"), rb_str(id_of(7000)), rb_str("tls-port"),
        rb_int(7443), rb_str("ip"), rb_str(HOST), rb_str("role"),
        rb_str("master"), rb_str("health"), rb_str("online"));
    redisReply *r =
        rb_arr(1, shard(rb_arr(2, rb_int(0), rb_int(16383)), rb_arr(1, node)));

    assert_int_equal(from_shards(r, HOST, &t), RLOCK_OK);
    assert_int_equal(rlock__slot_table_master(t, 0)->port, 7443);
    assert_int_equal(rlock__slot_table_master(t, 0)->tls_port, 7443);
    rlock__slot_table_free(t);
}

/* The endpoint is the address to use; "?" or none falls back to the ip,
 * and an unknown ip to the host asked. */
static void test_shards_endpoint_then_ip_then_host_asked(void **state)
{
    (void)state;
    rlock__slot_table *t;
    redisReply *no_ip = rb_arr(
        10, rb_str("id"), rb_str(id_of(7002)), rb_str("port"), rb_int(7002),
        rb_str("ip"), rb_str("?"), rb_str("role"), rb_str("master"),
        rb_str("health"), rb_str("online"));
    redisReply *r = rb_arr(
        3,
        shard(rb_arr(2, rb_int(0), rb_int(0)),
              rb_arr(1, shard_node(7000, "redis-a.example", "master",
                                   "online"))),
        shard(rb_arr(2, rb_int(1), rb_int(1)),
              rb_arr(1, shard_node(7001, "?", "master", "online"))),
        shard(rb_arr(2, rb_int(2), rb_int(2)), rb_arr(1, no_ip)));

    assert_int_equal(from_shards(r, "seed.example", &t), RLOCK_OK);
    assert_string_equal(rlock__slot_table_master(t, 0)->host,
                        "redis-a.example");
    assert_string_equal(rlock__slot_table_master(t, 1)->host, HOST);
    assert_string_equal(rlock__slot_table_master(t, 2)->host, "seed.example");
    rlock__slot_table_free(t);
}

static void test_malformed_shards_replies_are_eproto(void **state)
{
    (void)state;
    /* a map with an odd number of elements */
    assert_shards_refused(
        rb_arr(1, rb_arr(3, rb_str("slots"), rb_arr(0), rb_str("nodes"))));
    /* no nodes */
    assert_shards_refused(
        rb_arr(1, rb_arr(2, rb_str("slots"), rb_arr(2, rb_int(0),
                                                     rb_int(5)))));
    /* an unknown role */
    assert_shards_refused(rb_arr(
        1, shard(rb_arr(2, rb_int(0), rb_int(5)),
                 rb_arr(1, shard_node(7000, HOST, "leader", "online")))));
    /* slot bounds out of range, and an odd count of them */
    assert_shards_refused(rb_arr(
        1, shard(rb_arr(2, rb_int(0), rb_int(16384)),
                 rb_arr(1, shard_node(7000, HOST, "master", "online")))));
    assert_shards_refused(rb_arr(
        1, shard(rb_arr(3, rb_int(0), rb_int(5), rb_int(9)),
                 rb_arr(1, shard_node(7000, HOST, "master", "online")))));
    /* one node in two shards */
    assert_shards_refused(rb_arr(
        2,
        shard(rb_arr(2, rb_int(0), rb_int(5)),
              rb_arr(2, shard_node(7000, HOST, "master", "online"),
                     shard_node(7003, HOST, "replica", "online"))),
        shard(rb_arr(2, rb_int(6), rb_int(9)),
              rb_arr(2, shard_node(7001, HOST, "master", "online"),
                     shard_node(7003, HOST, "replica", "online")))));
    assert_shards_refused(rb_str("not shards"));
}

/* ------------------------------------------------------------------ reads */

static void test_find_knows_host_and_port(void **state)
{
    (void)state;
    rlock__slot_table *t;

    assert_int_equal(from_slots(three_masters_slots(), HOST, &t), RLOCK_OK);
    int i = rlock__slot_table_find(t, HOST, 7004);
    assert_true(i >= 0);
    assert_int_equal(t->nodes[i].port, 7004);
    assert_int_equal(rlock__slot_table_find(t, HOST, 7999), -1);
    assert_int_equal(rlock__slot_table_find(t, "localhost", 7004), -1);
    rlock__slot_table_free(t);
    rlock__slot_table_free(NULL);
}

/* Each allocation of either parser can fail: RLOCK_ENOMEM, no table, no
 * leak (the ASan pass checks the leaks). */
static void test_out_of_memory_is_enomem_for_both_forms(void **state)
{
    (void)state;
    for (int form = 0; form < 2; form++) {
        redisReply *r = form ? three_masters_shards() : three_masters_slots();

        for (long n = 0;; n++) {
            rlock__slot_table *t = &not_null;
            int rc;

            rlock__alloc_fail_after(n);
            rc = form ? rlock__slot_table_from_shards(r, HOST, &t)
                      : rlock__slot_table_from_slots(r, HOST, &t);
            rlock__alloc_fail_after(-1);
            if (rc == RLOCK_OK) {
                assert_true(n > 0);
                assert_int_equal(t->count, 6);
                rlock__slot_table_free(t);
                break;
            }
            assert_int_equal(rc, RLOCK_ENOMEM);
            assert_null(t);
        }
        rb_free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_give_each_slot_its_master),
        cmocka_unit_test(test_slots_replicas_follow_their_masters),
        cmocka_unit_test(test_master_with_several_ranges_is_one_node),
        cmocka_unit_test(test_unknown_endpoint_is_the_host_asked),
        cmocka_unit_test(test_unknown_endpoint_without_a_host_asked_is_eproto),
        cmocka_unit_test(test_unserved_slots_leave_the_table_incomplete),
        cmocka_unit_test(test_empty_slots_reply_serves_nothing),
        cmocka_unit_test(test_slot_bounds_given_as_strings_are_read),
        cmocka_unit_test(test_malformed_slots_replies_are_eproto),
        cmocka_unit_test(test_error_reply_gives_its_code),
        cmocka_unit_test(test_shards_and_slots_give_the_same_table),
        cmocka_unit_test(test_shards_slot_bounds_as_strings_and_several_ranges),
        cmocka_unit_test(
            test_failed_old_master_beside_the_new_one_serves_nothing),
        cmocka_unit_test(test_shard_without_one_live_master_is_eproto),
        cmocka_unit_test(test_tls_port_alone_is_the_port),
        cmocka_unit_test(test_shards_endpoint_then_ip_then_host_asked),
        cmocka_unit_test(test_malformed_shards_replies_are_eproto),
        cmocka_unit_test(test_find_knows_host_and_port),
        cmocka_unit_test(test_out_of_memory_is_enomem_for_both_forms),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
