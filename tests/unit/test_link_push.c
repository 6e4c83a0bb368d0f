/*
 * test_link_push.c: how the subscriber link tells a reply from a push
 * (rlock__link_classify, src/io/push.c), on RESP bytes fed to hiredis's
 * redisReader as they would come off the socket. The pushes a single
 * server never sends of its own accord (an "unsubscribe" or
 * "punsubscribe" a Redis Cluster failover sends) are checked here;
 * test_link.c sees a real "sunsubscribe".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <string.h>

#include "io/link.h"

/* Parses one reply from RESP text. */
static redisReply *parse(const char *resp)
{
    redisReader *rd = redisReaderCreate();
    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
    void *r = NULL;
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    return r;
}

static void expect_text(const char *got, size_t len, const char *want)
{
    assert_non_null(got);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(got, want, len);
}

static void test_unsolicited_unsubscribe_is_a_notice_naming_its_channel(
    void **state)
{
    (void)state;
    redisReply *r =
        parse("*3\r\n$11\r\nunsubscribe\r\n$7\r\nlock:ch\r\n:0\r\n");
    rlock__push p;
    const char *verb = NULL;
    assert_int_equal(rlock__link_classify(r, &p, &verb), 2);
    assert_string_equal(verb, "unsubscribe");
    assert_int_equal(p.kind, RLOCK__PUSH_UNSUBSCRIBED);
    expect_text(p.channel, p.channel_len, "lock:ch");
    freeReplyObject(r);
}

static void test_punsubscribe_notice_names_its_pattern(void **state)
{
    (void)state;
    redisReply *r = parse("*3\r\n$12\r\npunsubscribe\r\n$6\r\nlock:*\r\n:1\r\n");
    rlock__push p;
    const char *verb = NULL;
    assert_int_equal(rlock__link_classify(r, &p, &verb), 2);
    assert_string_equal(verb, "punsubscribe");
    assert_int_equal(p.kind, RLOCK__PUSH_PUNSUBSCRIBED);
    expect_text(p.channel, p.channel_len, "lock:*");
    freeReplyObject(r);
}

static void test_pmessage_carries_pattern_channel_and_payload(void **state)
{
    (void)state;
    redisReply *r = parse("*4\r\n$8\r\npmessage\r\n$2\r\nl*\r\n$2\r\nlk\r\n"
                          "$1\r\n0\r\n");
    rlock__push p;
    const char *verb = NULL;
    assert_int_equal(rlock__link_classify(r, &p, &verb), 1);
    assert_int_equal(p.kind, RLOCK__PUSH_PMESSAGE);
    expect_text(p.pattern, p.pattern_len, "l*");
    expect_text(p.channel, p.channel_len, "lk");
    expect_text(p.payload, p.payload_len, "0");
    freeReplyObject(r);
}

static void test_replies_to_commands_are_not_pushes(void **state)
{
    (void)state;
    const char *replies[] = {
        "*2\r\n$4\r\npong\r\n$0\r\n\r\n",           /* PING, subscribed */
        "-NOPERM this user has no permissions\r\n", /* refused SUBSCRIBE */
        "+OK\r\n",
        "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n:1\r\n", /* payload not text */
        "*2\r\n$7\r\nmessage\r\n$1\r\nc\r\n",       /* too short */
    };
    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        redisReply *r = parse(replies[i]);
        rlock__push p;
        const char *verb = "unchanged";
        assert_int_equal(rlock__link_classify(r, &p, &verb), 0);
        assert_null(verb);
        freeReplyObject(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_unsolicited_unsubscribe_is_a_notice_naming_its_channel),
        cmocka_unit_test(test_punsubscribe_notice_names_its_pattern),
        cmocka_unit_test(test_pmessage_carries_pattern_channel_and_payload),
        cmocka_unit_test(test_replies_to_commands_are_not_pushes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
