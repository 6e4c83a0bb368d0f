/*
 * test_sentinel_parse.c: what the Sentinel watcher reads from sentinels
 * (src/io/sentinel.h's pure helpers), on hand-made payloads and reply
 * trees: the +switch-master message, GET-MASTER-ADDR-BY-NAME's answer and
 * SENTINEL MASTER's config-epoch. No network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "io/sentinel.h"

/* ------------------------------------------------------ +switch-master */

static bool parse_switch(const char *payload, rlock__sentinel_master *m)
{
    return rlock__sentinel_parse_switch(payload, strlen(payload), "mymaster",
                                        m);
}

static void test_switch_gives_the_new_address(void **state)
{
    rlock__sentinel_master m;
    (void)state;
    assert_true(
        parse_switch("mymaster 127.0.0.1 17201 127.0.0.1 17202", &m));
    assert_string_equal(m.host, "127.0.0.1");
    assert_int_equal(m.port, 17202);
    assert_true(parse_switch("mymaster ::1 1 fe80::2 65535", &m));
    assert_string_equal(m.host, "fe80::2");
    assert_int_equal(m.port, 65535);
}

static void test_switch_of_another_master_is_not_ours(void **state)
{
    rlock__sentinel_master m;
    (void)state;
    assert_false(parse_switch("other 127.0.0.1 1 127.0.0.1 2", &m));
    assert_false(parse_switch("mymaster2 127.0.0.1 1 127.0.0.1 2", &m));
    assert_false(parse_switch("mymast 127.0.0.1 1 127.0.0.1 2", &m));
}

static void test_switch_malformed_is_refused(void **state)
{
    rlock__sentinel_master m;
    (void)state;
    assert_false(parse_switch("", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1 2 x", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1 0", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1 65536", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1 12a", &m));
    assert_false(parse_switch("mymaster 127.0.0.1 1 127.0.0.1 123456", &m));
    char long_host[400];
    memset(long_host, 'h', sizeof(long_host));
    memcpy(long_host, "mymaster a 1 ", 13);
    strcpy(long_host + sizeof(long_host) - 8, " 6379");
    assert_false(parse_switch(long_host, &m));
}

/* The payload is not NUL-terminated: only len bytes are read. */
static void test_switch_reads_only_its_length(void **state)
{
    rlock__sentinel_master m;
    const char text[] = "mymaster 127.0.0.1 1 127.0.0.1 2345678";
    (void)state;
    assert_true(rlock__sentinel_parse_switch(text, strlen(text) - 3,
                                             "mymaster", &m));
    assert_int_equal(m.port, 2345);
}

/* ------------------------------------------------------ replies */

/* Parses RESP text into a reply tree (the caller frees it). */
static redisReply *resp(const char *text)
{
    redisReader *r = redisReaderCreate();
    void *out = NULL;
    assert_int_equal(redisReaderFeed(r, text, strlen(text)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(r, &out), REDIS_OK);
    assert_non_null(out);
    redisReaderFree(r);
    return out;
}

static void test_addr_answer(void **state)
{
    rlock__sentinel_master m;
    (void)state;
    redisReply *r = resp("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n");
    assert_int_equal(rlock__sentinel_parse_addr(r, &m), 1);
    assert_string_equal(m.host, "127.0.0.1");
    assert_int_equal(m.port, 6380);
    freeReplyObject(r);

    r = resp("*-1\r\n"); /* RESP2's nil array: no such master */
    assert_int_equal(rlock__sentinel_parse_addr(r, &m), 0);
    freeReplyObject(r);
    r = resp("$-1\r\n");
    assert_int_equal(rlock__sentinel_parse_addr(r, &m), 0);
    freeReplyObject(r);
}

static void test_addr_answer_malformed(void **state)
{
    rlock__sentinel_master m;
    static const char *const bad[] = {
        "-NOAUTH Authentication required.\r\n",
        "*1\r\n$9\r\n127.0.0.1\r\n",
        "*2\r\n$9\r\n127.0.0.1\r\n$1\r\n0\r\n",
        "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n70000\r\n",
        "*2\r\n$9\r\n127.0.0.1\r\n$3\r\n1x2\r\n",
        "*2\r\n$0\r\n\r\n$4\r\n6379\r\n",
        "*2\r\n:1\r\n$4\r\n6379\r\n",
        "+OK\r\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        redisReply *r = resp(bad[i]);
        assert_int_equal(rlock__sentinel_parse_addr(r, &m), -1);
        freeReplyObject(r);
    }
    assert_int_equal(rlock__sentinel_parse_addr(NULL, &m), -1);
}

static void test_epoch_from_sentinel_master(void **state)
{
    (void)state;
    redisReply *r = resp("*6\r\n$4\r\nname\r\n$8\r\nmymaster\r\n"
                         "$2\r\nip\r\n$9\r\n127.0.0.1\r\n"
                         "$12\r\nconfig-epoch\r\n$2\r\n17\r\n");
    assert_int_equal(rlock__sentinel_parse_epoch(r), 17);
    freeReplyObject(r);
    /* a field named like a value is not read as one */
    r = resp("*4\r\n$4\r\nname\r\n$12\r\nconfig-epoch\r\n"
             "$2\r\nip\r\n$1\r\n5\r\n");
    assert_int_equal(rlock__sentinel_parse_epoch(r), -1);
    freeReplyObject(r);
    r = resp("-NOPERM this user has no permissions\r\n");
    assert_int_equal(rlock__sentinel_parse_epoch(r), -1);
    freeReplyObject(r);
    r = resp("*2\r\n$12\r\nconfig-epoch\r\n$2\r\n-3\r\n");
    assert_int_equal(rlock__sentinel_parse_epoch(r), -1);
    freeReplyObject(r);
    assert_int_equal(rlock__sentinel_parse_epoch(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_gives_the_new_address),
        cmocka_unit_test(test_switch_of_another_master_is_not_ours),
        cmocka_unit_test(test_switch_malformed_is_refused),
        cmocka_unit_test(test_switch_reads_only_its_length),
        cmocka_unit_test(test_addr_answer),
        cmocka_unit_test(test_addr_answer_malformed),
        cmocka_unit_test(test_epoch_from_sentinel_master),
    };
    return cmocka_run_group_tests_name("sentinel_parse", tests, NULL, NULL);
}
