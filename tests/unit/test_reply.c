/*
 * test_reply.c: reply.c's decoders over hand-built redisReply trees.
 *
 * Replies are made by hand (reply_builder.h), so no server and no hiredis
 * parser is involved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "proto/proto.h"
#include "reply_builder.h"

/* ------------------------------------------------------------ error_code */

static void test_error_code_null_reply_is_econn(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_error_code(NULL), RLOCK_ECONN);
}

static void test_error_code_integer_is_ok(void **state)
{
    redisReply *r = rb_int(5);

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    rb_free(r);
}

static void test_error_code_nil_is_ok(void **state)
{
    redisReply *r = rb_nil();

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    rb_free(r);
}

/* A status or string that merely reads like an error is not one. */
static void test_error_code_status_text_is_ok(void **state)
{
    redisReply *r = rb_status("NOAUTH but a status");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    rb_free(r);
}

static void test_error_code_wrongtype_is_eserver(void **state)
{
    redisReply *r = rb_err("WRONGTYPE Operation against a key holding the "
                           "wrong kind of value");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    rb_free(r);
}

static void test_error_code_generic_err_is_eserver(void **state)
{
    redisReply *r = rb_err("ERR unknown command");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    rb_free(r);
}

static void test_error_code_noscript_is_eserver(void **state)
{
    redisReply *r = rb_err("NOSCRIPT No matching script.");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    rb_free(r);
}

static void test_error_code_noauth_is_eauth(void **state)
{
    redisReply *r = rb_err("NOAUTH Authentication required.");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_EAUTH);
    rb_free(r);
}

static void test_error_code_wrongpass_is_eauth(void **state)
{
    redisReply *r = rb_err("WRONGPASS invalid username-password pair");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_EAUTH);
    rb_free(r);
}

static void test_error_code_loading_is_econn(void **state)
{
    redisReply *r = rb_err("LOADING Redis is loading the dataset in memory");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ECONN);
    rb_free(r);
}

/* The code is matched at the start: a message mentioning NOAUTH later on is
 * a plain server error. */
static void test_error_code_prefix_only_matches_at_start(void **state)
{
    redisReply *r = rb_err("ERR NOAUTH mentioned in passing");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    rb_free(r);
}

/* An error reply whose text is shorter than any known word (len counts, not
 * the NUL). */
static void test_error_code_short_error_is_eserver(void **state)
{
    redisReply *r = rb_err("NO");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    rb_free(r);
}

/* ----------------------------------------------------------- is_noscript */

static void test_is_noscript_true_for_noscript_error(void **state)
{
    redisReply *r = rb_err("NOSCRIPT No matching script. Please use EVAL.");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 1);
    rb_free(r);
}

static void test_is_noscript_false_for_other_error(void **state)
{
    redisReply *r = rb_err("WRONGTYPE Operation against a key");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 0);
    rb_free(r);
}

static void test_is_noscript_false_for_string(void **state)
{
    redisReply *r = rb_str("NOSCRIPT");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 0);
    rb_free(r);
}

static void test_is_noscript_false_for_null(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_is_noscript(NULL), 0);
}

/* ------------------------------------------------------------ error_text */

static void test_error_text_is_the_error_reply(void **state)
{
    redisReply *r = rb_err("NOPERM this user has no permissions");

    (void)state;
    assert_string_equal(rlock__reply_error_text(r),
                        "NOPERM this user has no permissions");
    rb_free(r);
}

static void test_error_text_empty_for_string_reply(void **state)
{
    redisReply *r = rb_str("NOPERM");

    (void)state;
    assert_string_equal(rlock__reply_error_text(r), "");
    rb_free(r);
}

static void test_error_text_empty_for_null(void **state)
{
    (void)state;
    assert_string_equal(rlock__reply_error_text(NULL), "");
}

/* ----------------------------------------------------------- is_readonly */

static void test_is_readonly_true_for_a_demoted_master(void **state)
{
    redisReply *r =
        rb_err("READONLY You can't write against a read only replica.");

    (void)state;
    assert_int_equal(rlock__reply_is_readonly(r), 1);
    rb_free(r);
}

static void test_is_readonly_false_for_other_replies(void **state)
{
    redisReply *e = rb_err("NOSCRIPT No matching script.");
    redisReply *s = rb_str("READONLY");

    (void)state;
    assert_int_equal(rlock__reply_is_readonly(e), 0);
    assert_int_equal(rlock__reply_is_readonly(s), 0);
    assert_int_equal(rlock__reply_is_readonly(NULL), 0);
    rb_free(e);
    rb_free(s);
}

/* --------------------------------------------------------------- acquire */

static void test_fenced_acquire_taken_gives_token(void **state)
{
    redisReply *r = rb_arr(2, rb_int(-1), rb_int(7));
    int64_t ttl = -12345, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, &token), 1);
    assert_int_equal(token, 7);
    assert_int_equal(ttl, -12345);
    rb_free(r);
}

static void test_fenced_acquire_busy_gives_ttl(void **state)
{
    redisReply *r = rb_arr(2, rb_int(29000), rb_int(-1));
    int64_t ttl = 0, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, &token), 0);
    assert_int_equal(ttl, 29000);
    assert_int_equal(token, 0);
    rb_free(r);
}

static void test_fenced_acquire_other_shapes_are_eproto(void **state)
{
    redisReply *nil = rb_nil();
    redisReply *zero_token = rb_arr(2, rb_int(-1), rb_int(0));
    redisReply *both = rb_arr(2, rb_int(-1), rb_int(-1));
    redisReply *one = rb_arr(1, rb_int(-1));
    int64_t ttl = 0, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(nil, &ttl, &token), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(zero_token, &ttl, &token),
                     RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(both, &ttl, &token), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(one, &ttl, &token), RLOCK_EPROTO);
    rb_free(nil);
    rb_free(zero_token);
    rb_free(both);
    rb_free(one);
}

static void test_acquire_nil_is_acquired(void **state)
{
    redisReply *r = rb_nil();
    int64_t ttl = -12345;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 1);
    assert_int_equal(ttl, -12345); /* untouched */
    rb_free(r);
}

static void test_acquire_integer_is_busy_with_ttl(void **state)
{
    redisReply *r = rb_int(29876);
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 0);
    assert_int_equal(ttl, 29876);
    rb_free(r);
}

static void test_acquire_large_ttl_keeps_64_bits(void **state)
{
    redisReply *r = rb_int(INT64_MAX);
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 0);
    assert_true(ttl == INT64_MAX);
    rb_free(r);
}

static void test_acquire_null_reply_is_econn(void **state)
{
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(NULL, &ttl, NULL), RLOCK_ECONN);
}

static void test_acquire_wrongtype_is_eserver(void **state)
{
    redisReply *r = rb_err("WRONGTYPE Operation against a key");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_ESERVER);
    rb_free(r);
}

static void test_acquire_noauth_is_eauth(void **state)
{
    redisReply *r = rb_err("NOAUTH Authentication required.");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EAUTH);
    rb_free(r);
}

static void test_acquire_loading_is_econn(void **state)
{
    redisReply *r = rb_err("LOADING Redis is loading");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_ECONN);
    rb_free(r);
}

static void test_acquire_string_is_eproto(void **state)
{
    redisReply *r = rb_str("100");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    rb_free(r);
}

static void test_acquire_status_is_eproto(void **state)
{
    redisReply *r = rb_status("OK");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    rb_free(r);
}

static void test_acquire_array_is_eproto(void **state)
{
    redisReply *r = rb_arr(1, rb_int(1));
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    rb_free(r);
}

/* ---------------------------------------------------------------- unlock */

static void test_unlock_nil_is_not_held(void **state)
{
    redisReply *r = rb_nil();

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_NOT_HELD);
    rb_free(r);
}

static void test_unlock_zero_is_still_held(void **state)
{
    redisReply *r = rb_int(0);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_STILL_HELD);
    rb_free(r);
}

static void test_unlock_one_is_released(void **state)
{
    redisReply *r = rb_int(1);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_RELEASED);
    rb_free(r);
}

/* 5: released, and a subscriber heard the unlock message (someone waits) */
static void test_unlock_five_is_released_and_heard(void **state)
{
    redisReply *r = rb_int(5);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_HEARD);
    rb_free(r);
}

static void test_unlock_two_is_eproto(void **state)
{
    redisReply *r = rb_int(2);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    rb_free(r);
}

static void test_unlock_negative_is_eproto(void **state)
{
    redisReply *r = rb_int(-1);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    rb_free(r);
}

static void test_unlock_string_is_eproto(void **state)
{
    redisReply *r = rb_str("1");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    rb_free(r);
}

static void test_unlock_null_reply_is_econn(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_unlock(NULL), RLOCK_ECONN);
}

static void test_unlock_wrongtype_is_not_a_lock(void **state)
{
    redisReply *r = rb_err("WRONGTYPE Operation against a key");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_NOT_A_LOCK);
    rb_free(r);
}

/* Redis 6.2 wraps a script's WRONGTYPE in its own error text */
static void test_unlock_wrongtype_wrapped_by_6_2_is_not_a_lock(void **state)
{
    redisReply *r = rb_err("ERR Error running script (call to "
                           "f_f08c4502460cd51df7ed74b0b4424c8b73ccc8dc): "
                           "@user_script:21: WRONGTYPE Operation against a "
                           "key holding the wrong kind of value");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_NOT_A_LOCK);
    rb_free(r);
}

/* ... but only there: another script error that names WRONGTYPE later in
 * its text is a plain server error */
static void test_unlock_other_script_error_is_eserver(void **state)
{
    redisReply *r = rb_err("ERR Error running script (call to f_0123): "
                           "@user_script:3: user_script:3: Script attempted "
                           "to access nonexistent global variable "
                           "'WRONGTYPE'");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_ESERVER);
    rb_free(r);
}

static void test_unlock_oom_is_eserver(void **state)
{
    redisReply *r = rb_err("OOM command not allowed when used memory > "
                           "'maxmemory'. script: 3e34b03b, on @user_script:1.");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_ESERVER);
    rb_free(r);
}

static void test_unlock_three_is_released_unannounced(void **state)
{
    redisReply *r = rb_int(3);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_UNANNOUNCED);
    rb_free(r);
}

static void test_unlock_wrongpass_is_eauth(void **state)
{
    redisReply *r = rb_err("WRONGPASS invalid username-password pair");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EAUTH);
    rb_free(r);
}

/* ------------------------------------------------------ connected_slaves */

static void test_connected_slaves_is_read_from_info_replication(void **state)
{
    redisReply *r = rb_str("# Replication\r\nrole:master\r\n"
                           "connected_slaves:2\r\nslave0:ip=1\r\n");
    (void)state;
    assert_int_equal(rlock__reply_connected_slaves(r), 2);
    rb_free(r);
}

static void test_connected_slaves_missing_is_eproto(void **state)
{
    redisReply *r = rb_str("# Replication\r\nrole:slave\r\n");
    redisReply *e = rb_err("NOPERM no rights");
    redisReply *bad = rb_str("connected_slaves:\r\n");
    (void)state;
    assert_int_equal(rlock__reply_connected_slaves(r), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_connected_slaves(e), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_connected_slaves(bad), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_connected_slaves(NULL), RLOCK_EPROTO);
    rb_free(r);
    rb_free(e);
    rb_free(bad);
}

/* --------------------------------------------------------------- integer */

static void test_integer_reply_is_returned(void **state)
{
    redisReply *r = rb_int(-2);
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, -2);
    rb_free(r);
}

static void test_integer_nil_is_zero_and_untouched(void **state)
{
    redisReply *r = rb_nil();
    int64_t v = 77;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 0);
    assert_int_equal(v, 77);
    rb_free(r);
}

static void test_integer_decimal_string_is_parsed(void **state)
{
    redisReply *r = rb_str("12345");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, 12345);
    rb_free(r);
}

static void test_integer_negative_string_is_parsed(void **state)
{
    redisReply *r = rb_str("-42");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, -42);
    rb_free(r);
}

static void test_integer_large_string_is_parsed(void **state)
{
    redisReply *r = rb_str("9223372036854775799");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_true(v == INT64_C(9223372036854775799));
    rb_free(r);
}

static void test_integer_overflowing_string_is_eproto(void **state)
{
    redisReply *r = rb_str("99999999999999999999"); /* 20 digits */
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_empty_string_is_eproto(void **state)
{
    redisReply *r = rb_str("");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_lone_minus_is_eproto(void **state)
{
    redisReply *r = rb_str("-");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_non_digit_string_is_eproto(void **state)
{
    redisReply *r = rb_str("12a");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_status_is_eproto(void **state)
{
    redisReply *r = rb_status("12");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_array_is_eproto(void **state)
{
    redisReply *r = rb_arr(0);
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    rb_free(r);
}

static void test_integer_null_reply_is_econn(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(NULL, &v), RLOCK_ECONN);
}

static void test_integer_error_reply_is_eserver(void **state)
{
    redisReply *r = rb_err("WRONGTYPE Operation against a key");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_ESERVER);
    rb_free(r);
}

/* ----------------------------------------------------------------- renew */

static void test_renew_array_of_flags_is_decoded(void **state)
{
    redisReply *r = rb_arr(3, rb_int(1), rb_int(0), rb_int(1));
    unsigned char renewed[3] = {9, 9, 9};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 3, renewed), RLOCK_OK);
    assert_int_equal(renewed[0], 1);
    assert_int_equal(renewed[1], 0);
    assert_int_equal(renewed[2], 1);
    rb_free(r);
}

static void test_renew_empty_array_for_zero_keys(void **state)
{
    redisReply *r = rb_arr(0);
    unsigned char renewed[1] = {9};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 0, renewed), RLOCK_OK);
    assert_int_equal(renewed[0], 9);
    rb_free(r);
}

static void test_renew_shorter_array_is_eproto(void **state)
{
    redisReply *r = rb_arr(2, rb_int(1), rb_int(1));
    unsigned char renewed[3] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 3, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_longer_array_is_eproto(void **state)
{
    redisReply *r = rb_arr(3, rb_int(1), rb_int(1), rb_int(1));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_value_two_means_taken(void **state)
{
    redisReply *r = rb_arr(2, rb_int(1), rb_int(2));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_OK);
    assert_int_equal(renewed[1], RLOCK__RENEW_TAKEN);
    rb_free(r);
}

static void test_renew_value_three_is_eproto(void **state)
{
    redisReply *r = rb_arr(2, rb_int(1), rb_int(3));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_negative_value_is_eproto(void **state)
{
    redisReply *r = rb_arr(1, rb_int(-1));
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_string_element_is_eproto(void **state)
{
    redisReply *r = rb_arr(2, rb_int(1), rb_str("1"));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_nil_element_is_eproto(void **state)
{
    redisReply *r = rb_arr(1, rb_nil());
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_integer_instead_of_array_is_eproto(void **state)
{
    redisReply *r = rb_int(1);
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_nil_is_eproto(void **state)
{
    redisReply *r = rb_nil();
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    rb_free(r);
}

static void test_renew_null_reply_is_econn(void **state)
{
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(NULL, 1, renewed), RLOCK_ECONN);
}

static void test_renew_noscript_error_is_eserver(void **state)
{
    redisReply *r = rb_err("NOSCRIPT No matching script.");
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_ESERVER);
    rb_free(r);
}

/* ------------------------------------------------------ connect checks */

#define SHA_OF_SCRIPT "1f3c8f0e5b2a4d6c7e9f0a1b2c3d4e5f60718293"

static void test_pong_status_is_ok(void **state)
{
    redisReply *r = rb_status("PONG");

    (void)state;
    assert_int_equal(rlock__reply_pong(r), 0);
    rb_free(r);
}

static void test_pong_noauth_is_eauth(void **state)
{
    redisReply *r = rb_err("NOAUTH Authentication required.");

    (void)state;
    assert_int_equal(rlock__reply_pong(r), RLOCK_EAUTH);
    rb_free(r);
}

static void test_pong_other_error_or_type_is_eproto(void **state)
{
    redisReply *err = rb_err("ERR unknown command 'PING'");
    redisReply *num = rb_int(1);

    (void)state;
    assert_int_equal(rlock__reply_pong(err), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_pong(num), RLOCK_EPROTO);
    rb_free(err);
    rb_free(num);
}

static void test_script_loaded_same_sha_in_any_case_is_ok(void **state)
{
    redisReply *lower = rb_str(SHA_OF_SCRIPT);
    redisReply *upper = rb_str("1F3C8F0E5B2A4D6C7E9F0A1B2C3D4E5F60718293");

    (void)state;
    assert_int_equal(rlock__reply_script_loaded(lower, SHA_OF_SCRIPT), 0);
    assert_int_equal(rlock__reply_script_loaded(upper, SHA_OF_SCRIPT), 0);
    rb_free(lower);
    rb_free(upper);
}

static void test_script_loaded_other_sha_or_prefix_is_eproto(void **state)
{
    redisReply *other = rb_str("0000000000000000000000000000000000000000");
    redisReply *prefix = rb_str("1f3c8f0e");
    redisReply *num = rb_int(1);

    (void)state;
    assert_int_equal(rlock__reply_script_loaded(other, SHA_OF_SCRIPT),
                     RLOCK_EPROTO);
    assert_int_equal(rlock__reply_script_loaded(prefix, SHA_OF_SCRIPT),
                     RLOCK_EPROTO);
    assert_int_equal(rlock__reply_script_loaded(num, SHA_OF_SCRIPT),
                     RLOCK_EPROTO);
    rb_free(other);
    rb_free(prefix);
    rb_free(num);
}

static void test_script_loaded_error_keeps_its_code(void **state)
{
    redisReply *noperm = rb_err("NOPERM this user has no permissions");
    redisReply *other = rb_err("ERR Error compiling script");

    (void)state;
    assert_int_equal(rlock__reply_script_loaded(noperm, SHA_OF_SCRIPT),
                     RLOCK_EAUTH);
    assert_int_equal(rlock__reply_script_loaded(other, SHA_OF_SCRIPT),
                     RLOCK_ESERVER);
    rb_free(noperm);
    rb_free(other);
}

static void test_is_noperm_only_for_a_noperm_error(void **state)
{
    redisReply *noperm = rb_err("NOPERM this user has no permissions");
    redisReply *noscript = rb_err("NOSCRIPT No matching script.");
    redisReply *text = rb_str("NOPERM");

    (void)state;
    assert_int_equal(rlock__reply_is_noperm(noperm), 1);
    assert_int_equal(rlock__reply_is_noperm(noscript), 0);
    assert_int_equal(rlock__reply_is_noperm(text), 0);
    rb_free(noperm);
    rb_free(noscript);
    rb_free(text);
}

static void test_dryrun_bulk_string_is_a_refusal_with_its_reason(void **st)
{
    redisReply *r = rb_str("User alice has no permissions to run 'publish'");
    char why[16];

    (void)st;
    assert_int_equal(rlock__reply_dryrun_refused(r, why, sizeof(why)), 1);
    assert_string_equal(why, "User alice has "); /* cut to fit */
    rb_free(r);
}

static void test_dryrun_ok_or_error_is_no_refusal(void **state)
{
    redisReply *ok = rb_status("OK");
    redisReply *err = rb_err("NOPERM this user has no permissions to run "
                             "the 'acl|dryrun' command");
    char why[64] = "untouched";

    (void)state;
    assert_int_equal(rlock__reply_dryrun_refused(ok, why, sizeof(why)), 0);
    assert_int_equal(rlock__reply_dryrun_refused(err, why, sizeof(why)), 0);
    assert_string_equal(why, "untouched");
    rb_free(ok);
    rb_free(err);
}

/* ------------------------------------------------------------ admin copy */

static void test_admin_copy_keeps_every_type_and_value(void **state)
{
    redisReply *r = rb_arr(5, rb_str("hash"), rb_int(-7), rb_nil(),
                             rb_status("QUEUED"),
                             rb_arr(1, rb_err("ERR no")));

    (void)state;
    rlock_admin_reply *c = rlock__admin_reply_copy(r);
    rb_free(r); /* the copy owns nothing of the original */
    assert_non_null(c);
    assert_int_equal(c->type, RLOCK_ADMIN_ARRAY);
    assert_int_equal(c->elements, 5);
    assert_int_equal(c->element[0]->type, RLOCK_ADMIN_STRING);
    assert_string_equal(c->element[0]->str, "hash");
    assert_int_equal(c->element[0]->len, 4);
    assert_int_equal(c->element[1]->type, RLOCK_ADMIN_INTEGER);
    assert_int_equal(c->element[1]->integer, -7);
    assert_int_equal(c->element[2]->type, RLOCK_ADMIN_NIL);
    assert_null(c->element[2]->str);
    assert_int_equal(c->element[3]->type, RLOCK_ADMIN_STATUS);
    assert_string_equal(c->element[3]->str, "QUEUED");
    assert_int_equal(c->element[4]->element[0]->type, RLOCK_ADMIN_ERROR);
    assert_string_equal(c->element[4]->element[0]->str, "ERR no");
    rlock__admin_reply_free(c);
}

static void test_admin_copy_keeps_bytes_after_a_nul(void **state)
{
    redisReply *r = rb_str("a");

    (void)state;
    free(r->str);
    r->str = malloc(3);
    assert_non_null(r->str);
    memcpy(r->str, "a\0b", 3);
    r->len = 3;
    rlock_admin_reply *c = rlock__admin_reply_copy(r);
    assert_non_null(c);
    assert_int_equal(c->len, 3);
    assert_memory_equal(c->str, "a\0b", 3);
    assert_int_equal(c->str[3], '\0');
    rlock__admin_reply_free(c);
    rb_free(r);
}

static void test_admin_copy_of_an_empty_array_has_no_elements(void **state)
{
    redisReply *r = rb_arr(0);

    (void)state;
    rlock_admin_reply *c = rlock__admin_reply_copy(r);
    assert_non_null(c);
    assert_int_equal(c->type, RLOCK_ADMIN_ARRAY);
    assert_int_equal(c->elements, 0);
    rlock__admin_reply_free(c);
    rb_free(r);
}

static void test_admin_copy_out_of_memory_anywhere_is_null(void **state)
{
    redisReply *r = rb_arr(2, rb_str("message"),
                             rb_arr(2, rb_str("ch"), rb_int(1)));

    (void)state;
    for (long n = 0;; n++) {
        rlock__alloc_fail_after(n);
        rlock_admin_reply *c = rlock__admin_reply_copy(r);
        rlock__alloc_fail_after(-1);
        if (c != NULL) {
            assert_true(n > 0);
            assert_string_equal(c->element[1]->element[0]->str, "ch");
            rlock__admin_reply_free(c);
            break;
        }
    }
    rb_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_code_null_reply_is_econn),
        cmocka_unit_test(test_error_code_integer_is_ok),
        cmocka_unit_test(test_error_code_nil_is_ok),
        cmocka_unit_test(test_error_code_status_text_is_ok),
        cmocka_unit_test(test_error_code_wrongtype_is_eserver),
        cmocka_unit_test(test_error_code_generic_err_is_eserver),
        cmocka_unit_test(test_error_code_noscript_is_eserver),
        cmocka_unit_test(test_error_code_noauth_is_eauth),
        cmocka_unit_test(test_error_code_wrongpass_is_eauth),
        cmocka_unit_test(test_error_code_loading_is_econn),
        cmocka_unit_test(test_error_code_prefix_only_matches_at_start),
        cmocka_unit_test(test_error_code_short_error_is_eserver),
        cmocka_unit_test(test_is_noscript_true_for_noscript_error),
        cmocka_unit_test(test_is_noscript_false_for_other_error),
        cmocka_unit_test(test_is_noscript_false_for_string),
        cmocka_unit_test(test_is_noscript_false_for_null),
        cmocka_unit_test(test_error_text_is_the_error_reply),
        cmocka_unit_test(test_error_text_empty_for_string_reply),
        cmocka_unit_test(test_error_text_empty_for_null),
        cmocka_unit_test(test_is_readonly_true_for_a_demoted_master),
        cmocka_unit_test(test_is_readonly_false_for_other_replies),
        cmocka_unit_test(test_acquire_nil_is_acquired),
        cmocka_unit_test(test_acquire_integer_is_busy_with_ttl),
        cmocka_unit_test(test_acquire_large_ttl_keeps_64_bits),
        cmocka_unit_test(test_acquire_null_reply_is_econn),
        cmocka_unit_test(test_acquire_wrongtype_is_eserver),
        cmocka_unit_test(test_acquire_noauth_is_eauth),
        cmocka_unit_test(test_fenced_acquire_taken_gives_token),
        cmocka_unit_test(test_fenced_acquire_busy_gives_ttl),
        cmocka_unit_test(test_fenced_acquire_other_shapes_are_eproto),
        cmocka_unit_test(test_acquire_loading_is_econn),
        cmocka_unit_test(test_acquire_string_is_eproto),
        cmocka_unit_test(test_acquire_status_is_eproto),
        cmocka_unit_test(test_acquire_array_is_eproto),
        cmocka_unit_test(test_unlock_nil_is_not_held),
        cmocka_unit_test(test_unlock_zero_is_still_held),
        cmocka_unit_test(test_unlock_one_is_released),
        cmocka_unit_test(test_unlock_five_is_released_and_heard),
        cmocka_unit_test(test_unlock_two_is_eproto),
        cmocka_unit_test(test_unlock_negative_is_eproto),
        cmocka_unit_test(test_unlock_string_is_eproto),
        cmocka_unit_test(test_unlock_null_reply_is_econn),
        cmocka_unit_test(test_unlock_wrongtype_is_not_a_lock),
        cmocka_unit_test(test_unlock_wrongtype_wrapped_by_6_2_is_not_a_lock),
        cmocka_unit_test(test_unlock_other_script_error_is_eserver),
        cmocka_unit_test(test_unlock_oom_is_eserver),
        cmocka_unit_test(test_unlock_three_is_released_unannounced),
        cmocka_unit_test(test_unlock_wrongpass_is_eauth),
        cmocka_unit_test(test_integer_reply_is_returned),
        cmocka_unit_test(test_integer_nil_is_zero_and_untouched),
        cmocka_unit_test(test_integer_decimal_string_is_parsed),
        cmocka_unit_test(test_integer_negative_string_is_parsed),
        cmocka_unit_test(test_integer_large_string_is_parsed),
        cmocka_unit_test(test_integer_overflowing_string_is_eproto),
        cmocka_unit_test(test_integer_empty_string_is_eproto),
        cmocka_unit_test(test_integer_lone_minus_is_eproto),
        cmocka_unit_test(test_integer_non_digit_string_is_eproto),
        cmocka_unit_test(test_integer_status_is_eproto),
        cmocka_unit_test(test_integer_array_is_eproto),
        cmocka_unit_test(test_integer_null_reply_is_econn),
        cmocka_unit_test(test_integer_error_reply_is_eserver),
        cmocka_unit_test(test_renew_array_of_flags_is_decoded),
        cmocka_unit_test(test_renew_empty_array_for_zero_keys),
        cmocka_unit_test(test_renew_shorter_array_is_eproto),
        cmocka_unit_test(test_renew_longer_array_is_eproto),
        cmocka_unit_test(test_renew_value_two_means_taken),
        cmocka_unit_test(test_renew_value_three_is_eproto),
        cmocka_unit_test(test_renew_negative_value_is_eproto),
        cmocka_unit_test(test_renew_string_element_is_eproto),
        cmocka_unit_test(test_renew_nil_element_is_eproto),
        cmocka_unit_test(test_renew_integer_instead_of_array_is_eproto),
        cmocka_unit_test(test_renew_nil_is_eproto),
        cmocka_unit_test(test_renew_null_reply_is_econn),
        cmocka_unit_test(test_renew_noscript_error_is_eserver),
        cmocka_unit_test(test_pong_status_is_ok),
        cmocka_unit_test(test_pong_noauth_is_eauth),
        cmocka_unit_test(test_pong_other_error_or_type_is_eproto),
        cmocka_unit_test(test_script_loaded_same_sha_in_any_case_is_ok),
        cmocka_unit_test(test_script_loaded_other_sha_or_prefix_is_eproto),
        cmocka_unit_test(test_script_loaded_error_keeps_its_code),
        cmocka_unit_test(test_is_noperm_only_for_a_noperm_error),
        cmocka_unit_test(test_dryrun_bulk_string_is_a_refusal_with_its_reason),
        cmocka_unit_test(test_dryrun_ok_or_error_is_no_refusal),
        cmocka_unit_test(test_admin_copy_keeps_every_type_and_value),
        cmocka_unit_test(test_admin_copy_keeps_bytes_after_a_nul),
        cmocka_unit_test(test_admin_copy_of_an_empty_array_has_no_elements),
        cmocka_unit_test(test_admin_copy_out_of_memory_anywhere_is_null),
        cmocka_unit_test(test_connected_slaves_is_read_from_info_replication),
        cmocka_unit_test(test_connected_slaves_missing_is_eproto),
    };

    return cmocka_run_group_tests_name("reply", tests, NULL, NULL);
}
