/*
 * test_redirect.c: the cluster error classifier (src/proto/redirect.c) on
 * hand-built error replies, worded as Redis 7.0 words them (test_cluster
 * sees the same errors come from a live cluster).
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

/* Classifies r (then frees it) into *out; returns the parser's code. */
static int parse_free(redisReply *r, rlock__redirect *out)
{
    int rc = rlock__redirect_parse(r, out);

    rb_free(r);
    return rc;
}

/* Asserts that error text e is a MOVED or ASK the parser refuses, leaving
 * no address behind. */
static void assert_refused(const char *e, rlock__redir_kind kind)
{
    rlock__redirect out;

    assert_int_equal(parse_free(rb_err(e), &out), RLOCK_EPROTO);
    assert_int_equal(out.kind, kind);
    assert_int_equal(out.slot, -1);
    assert_string_equal(out.host, "");
    assert_int_equal(out.port, 0);
}

/* ---------------------------------------------------------- MOVED and ASK */

static void test_moved_gives_slot_host_and_port(void **state)
{
    (void)state;
    rlock__redirect out;

    assert_int_equal(parse_free(rb_err("MOVED 3999 127.0.0.1:6381"), &out),
                     RLOCK_OK);
    assert_int_equal(out.kind, RLOCK__REDIR_MOVED);
    assert_int_equal(out.slot, 3999);
    assert_string_equal(out.host, "127.0.0.1");
    assert_int_equal(out.port, 6381);
}

static void test_ask_gives_slot_host_and_port(void **state)
{
    (void)state;
    rlock__redirect out;

    assert_int_equal(parse_free(rb_err("ASK 0 10.0.0.7:30001"), &out),
                     RLOCK_OK);
    assert_int_equal(out.kind, RLOCK__REDIR_ASK);
    assert_int_equal(out.slot, 0);
    assert_string_equal(out.host, "10.0.0.7");
    assert_int_equal(out.port, 30001);
}

/* Redis does not bracket an IPv6 address: the port follows the last ':'. */
static void test_ipv6_host_keeps_its_colons(void **state)
{
    (void)state;
    rlock__redirect out;

    assert_int_equal(parse_free(rb_err("MOVED 16383 fe80::1:7000"), &out),
                     RLOCK_OK);
    assert_int_equal(out.slot, 16383);
    assert_string_equal(out.host, "fe80::1");
    assert_int_equal(out.port, 7000);
}

static void test_hostname_is_taken_as_given(void **state)
{
    (void)state;
    rlock__redirect out;

    assert_int_equal(
        parse_free(rb_err("MOVED 12 redis-1.cache.example:6379"), &out),
        RLOCK_OK);
    assert_string_equal(out.host, "redis-1.cache.example");
}

/* Redis 7's unknown endpoint: "the host you asked", kept as "". */
static void test_empty_host_means_the_host_asked(void **state)
{
    (void)state;
    rlock__redirect out;

    assert_int_equal(parse_free(rb_err("MOVED 3999 :6380"), &out), RLOCK_OK);
    assert_int_equal(out.kind, RLOCK__REDIR_MOVED);
    assert_string_equal(out.host, "");
    assert_int_equal(out.port, 6380);
}

static void test_malformed_moved_is_eproto(void **state)
{
    (void)state;
    const char *bad[] = {
        "MOVED",           "MOVED ",           "MOVED 3999",
        "MOVED 3999 h",    "MOVED 16384 h:1",  "MOVED -1 h:1",
        "MOVED 0399 h:1",  "MOVED 1 h:0",      "MOVED 1 h:65536",
        "MOVED 1 h:1 x",   "MOVED 1 h:1x",     "MOVED  1 h:1",
        "MOVED 1 h:",      "MOVED 1 h:01",     "MOVED 123456 h:1",
        "MOVED x h:1",     "MOVED 1 h\t:1",    "MOVED 1 h:+1",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_refused(bad[i], RLOCK__REDIR_MOVED);
    assert_refused("ASK 1 nowhere", RLOCK__REDIR_ASK);
}

/* The host becomes a C string: a NUL inside it would name another host. */
static void test_host_with_a_nul_is_eproto(void **state)
{
    (void)state;
    static const char e[] = "MOVED 1 evil\0.example:1";
    rlock__redirect out;

    assert_int_equal(
        parse_free(rb_text(REDIS_REPLY_ERROR, e, sizeof(e) - 1), &out),
        RLOCK_EPROTO);
    assert_string_equal(out.host, "");
}

static void test_host_longer_than_the_buffer_is_eproto(void **state)
{
    (void)state;
    char e[400];
    char host[RLOCK__HOST_MAX + 1];
    rlock__redirect out;

    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(e, sizeof(e), "ASK 9 %s:7000", host);
    assert_int_equal(parse_free(rb_err(e), &out), RLOCK_EPROTO);
    /* one byte shorter fits */
    snprintf(e, sizeof(e), "ASK 9 %s:7000", host + 1);
    assert_int_equal(parse_free(rb_err(e), &out), RLOCK_OK);
    assert_int_equal(strlen(out.host), RLOCK__HOST_MAX - 1);
}

/* ------------------------------------------------------- the other kinds */

static void test_each_cluster_error_word_has_its_kind(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        rlock__redir_kind kind;
    } cases[] = {
        {"TRYAGAIN Multiple keys request during rehashing of slot",
         RLOCK__REDIR_TRYAGAIN},
        {"CLUSTERDOWN Hash slot not served", RLOCK__REDIR_CLUSTERDOWN},
        {"CLUSTERDOWN The cluster is down", RLOCK__REDIR_CLUSTERDOWN},
        {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data "
         "is set to 'no'.",
         RLOCK__REDIR_MASTERDOWN},
        {"LOADING Redis is loading the dataset in memory",
         RLOCK__REDIR_LOADING},
        {"READONLY You can't write against a read only replica.",
         RLOCK__REDIR_READONLY},
        {"NOSCRIPT No matching script. Please use EVAL.",
         RLOCK__REDIR_NOSCRIPT},
        {"CROSSSLOT Keys in request don't hash to the same slot",
         RLOCK__REDIR_CROSSSLOT},
        {"TRYAGAIN", RLOCK__REDIR_TRYAGAIN},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rlock__redirect out;

        assert_int_equal(parse_free(rb_err(cases[i].text), &out), RLOCK_OK);
        assert_int_equal(out.kind, cases[i].kind);
        assert_int_equal(out.slot, -1);
        assert_int_equal(out.port, 0);
        /* the kind's name is the error's first word */
        size_t word = strcspn(cases[i].text, " ");
        assert_int_equal(strlen(rlock__redirect_name(out.kind)), word);
        assert_memory_equal(rlock__redirect_name(out.kind), cases[i].text,
                            word);
    }
}

/* The word must be the whole first word, in Redis's capitals. */
static void test_other_errors_are_other(void **state)
{
    (void)state;
    const char *other[] = {"ERR unknown command", "MOVEDX 1 h:1",
                           "moved 1 h:1",         "ERR MOVED 1 h:1",
                           "WRONGTYPE Operation", "",
                           "ASKING"};

    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        rlock__redirect out;

        assert_int_equal(parse_free(rb_err(other[i]), &out), RLOCK_OK);
        assert_int_equal(out.kind, RLOCK__REDIR_OTHER);
        assert_int_equal(out.slot, -1);
    }
}

static void test_a_reply_that_is_no_error_is_none(void **state)
{
    (void)state;
    redisReply *replies[] = {
        rb_str("MOVED 1 127.0.0.1:7000"),
        rb_text(REDIS_REPLY_STATUS, "OK", 2),
        rb_nil(),
        rb_int(1),
        rb_arr(1, rb_err("MOVED 1 127.0.0.1:7000")),
    };
    rlock__redirect out;

    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        assert_int_equal(parse_free(replies[i], &out), RLOCK_OK);
        assert_int_equal(out.kind, RLOCK__REDIR_NONE);
    }
    assert_int_equal(rlock__redirect_parse(NULL, &out), RLOCK_OK);
    assert_int_equal(out.kind, RLOCK__REDIR_NONE);
}

static void test_kind_names_are_the_error_words(void **state)
{
    (void)state;
    assert_string_equal(rlock__redirect_name(RLOCK__REDIR_MOVED), "MOVED");
    assert_string_equal(rlock__redirect_name(RLOCK__REDIR_ASK), "ASK");
    assert_string_equal(rlock__redirect_name(RLOCK__REDIR_CROSSSLOT),
                        "CROSSSLOT");
    assert_string_equal(rlock__redirect_name(RLOCK__REDIR_NONE), "");
    assert_string_equal(rlock__redirect_name(RLOCK__REDIR_OTHER), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_gives_slot_host_and_port),
        cmocka_unit_test(test_ask_gives_slot_host_and_port),
        cmocka_unit_test(test_ipv6_host_keeps_its_colons),
        cmocka_unit_test(test_hostname_is_taken_as_given),
        cmocka_unit_test(test_empty_host_means_the_host_asked),
        cmocka_unit_test(test_malformed_moved_is_eproto),
        cmocka_unit_test(test_host_with_a_nul_is_eproto),
        cmocka_unit_test(test_host_longer_than_the_buffer_is_eproto),
        cmocka_unit_test(test_each_cluster_error_word_has_its_kind),
        cmocka_unit_test(test_other_errors_are_other),
        cmocka_unit_test(test_a_reply_that_is_no_error_is_none),
        cmocka_unit_test(test_kind_names_are_the_error_words),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
