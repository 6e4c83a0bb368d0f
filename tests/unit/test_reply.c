/*
 * test_reply.c: reply.c's decoders over hand-built redisReply trees.
 *
 * Replies are made here with calloc (type, integer, str, len, elements,
 * element set by hand) and freed by free_reply() below, so no server and no
 * hiredis parser is involved.
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

/* ---------------------------------------------------------------- builders */

static redisReply *mk(int type)
{
    redisReply *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    r->type = type;
    return r;
}

static redisReply *mk_nil(void)
{
    return mk(REDIS_REPLY_NIL);
}

static redisReply *mk_int(long long v)
{
    redisReply *r = mk(REDIS_REPLY_INTEGER);

    r->integer = v;
    return r;
}

/* A reply carrying text: REDIS_REPLY_STRING, _STATUS or _ERROR. */
static redisReply *mk_text(int type, const char *s)
{
    redisReply *r = mk(type);

    r->len = strlen(s);
    r->str = malloc(r->len + 1);
    assert_non_null(r->str);
    memcpy(r->str, s, r->len + 1);
    return r;
}

static redisReply *mk_err(const char *s)
{
    return mk_text(REDIS_REPLY_ERROR, s);
}

static redisReply *mk_str(const char *s)
{
    return mk_text(REDIS_REPLY_STRING, s);
}

/* An array of n elements, taking ownership of the n replies that follow. */
static redisReply *mk_array(size_t n, ...)
{
    redisReply *r = mk(REDIS_REPLY_ARRAY);
    va_list ap;

    r->elements = n;
    if (n > 0) {
        r->element = calloc(n, sizeof(*r->element));
        assert_non_null(r->element);
    }
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

static void free_reply(redisReply *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        free_reply(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* ------------------------------------------------------------ error_code */

static void test_error_code_null_reply_is_econn(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_error_code(NULL), RLOCK_ECONN);
}

static void test_error_code_integer_is_ok(void **state)
{
    redisReply *r = mk_int(5);

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    free_reply(r);
}

static void test_error_code_nil_is_ok(void **state)
{
    redisReply *r = mk_nil();

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    free_reply(r);
}

/* A status or string that merely reads like an error is not one. */
static void test_error_code_status_text_is_ok(void **state)
{
    redisReply *r = mk_text(REDIS_REPLY_STATUS, "NOAUTH but a status");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_OK);
    free_reply(r);
}

static void test_error_code_wrongtype_is_eserver(void **state)
{
    redisReply *r = mk_err("WRONGTYPE Operation against a key holding the "
                           "wrong kind of value");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    free_reply(r);
}

static void test_error_code_generic_err_is_eserver(void **state)
{
    redisReply *r = mk_err("ERR unknown command");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    free_reply(r);
}

static void test_error_code_noscript_is_eserver(void **state)
{
    redisReply *r = mk_err("NOSCRIPT No matching script.");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    free_reply(r);
}

static void test_error_code_noauth_is_eauth(void **state)
{
    redisReply *r = mk_err("NOAUTH Authentication required.");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_EAUTH);
    free_reply(r);
}

static void test_error_code_wrongpass_is_eauth(void **state)
{
    redisReply *r = mk_err("WRONGPASS invalid username-password pair");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_EAUTH);
    free_reply(r);
}

static void test_error_code_loading_is_econn(void **state)
{
    redisReply *r = mk_err("LOADING Redis is loading the dataset in memory");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ECONN);
    free_reply(r);
}

/* The code is matched at the start: a message mentioning NOAUTH later on is
 * a plain server error. */
static void test_error_code_prefix_only_matches_at_start(void **state)
{
    redisReply *r = mk_err("ERR NOAUTH mentioned in passing");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    free_reply(r);
}

/* An error reply whose text is shorter than any known word (len counts, not
 * the NUL). */
static void test_error_code_short_error_is_eserver(void **state)
{
    redisReply *r = mk_err("NO");

    (void)state;
    assert_int_equal(rlock__reply_error_code(r), RLOCK_ESERVER);
    free_reply(r);
}

/* ----------------------------------------------------------- is_noscript */

static void test_is_noscript_true_for_noscript_error(void **state)
{
    redisReply *r = mk_err("NOSCRIPT No matching script. Please use EVAL.");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 1);
    free_reply(r);
}

static void test_is_noscript_false_for_other_error(void **state)
{
    redisReply *r = mk_err("WRONGTYPE Operation against a key");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 0);
    free_reply(r);
}

static void test_is_noscript_false_for_string(void **state)
{
    redisReply *r = mk_str("NOSCRIPT");

    (void)state;
    assert_int_equal(rlock__reply_is_noscript(r), 0);
    free_reply(r);
}

static void test_is_noscript_false_for_null(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_is_noscript(NULL), 0);
}

/* --------------------------------------------------------------- acquire */

static void test_fenced_acquire_taken_gives_token(void **state)
{
    redisReply *r = mk_array(2, mk_int(-1), mk_int(7));
    int64_t ttl = -12345, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, &token), 1);
    assert_int_equal(token, 7);
    assert_int_equal(ttl, -12345);
    free_reply(r);
}

static void test_fenced_acquire_busy_gives_ttl(void **state)
{
    redisReply *r = mk_array(2, mk_int(29000), mk_int(-1));
    int64_t ttl = 0, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, &token), 0);
    assert_int_equal(ttl, 29000);
    assert_int_equal(token, 0);
    free_reply(r);
}

static void test_fenced_acquire_other_shapes_are_eproto(void **state)
{
    redisReply *nil = mk_nil();
    redisReply *zero_token = mk_array(2, mk_int(-1), mk_int(0));
    redisReply *both = mk_array(2, mk_int(-1), mk_int(-1));
    redisReply *one = mk_array(1, mk_int(-1));
    int64_t ttl = 0, token = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(nil, &ttl, &token), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(zero_token, &ttl, &token),
                     RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(both, &ttl, &token), RLOCK_EPROTO);
    assert_int_equal(rlock__reply_acquire(one, &ttl, &token), RLOCK_EPROTO);
    free_reply(nil);
    free_reply(zero_token);
    free_reply(both);
    free_reply(one);
}

static void test_acquire_nil_is_acquired(void **state)
{
    redisReply *r = mk_nil();
    int64_t ttl = -12345;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 1);
    assert_int_equal(ttl, -12345); /* untouched */
    free_reply(r);
}

static void test_acquire_integer_is_busy_with_ttl(void **state)
{
    redisReply *r = mk_int(29876);
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 0);
    assert_int_equal(ttl, 29876);
    free_reply(r);
}

static void test_acquire_large_ttl_keeps_64_bits(void **state)
{
    redisReply *r = mk_int(INT64_MAX);
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), 0);
    assert_true(ttl == INT64_MAX);
    free_reply(r);
}

static void test_acquire_null_reply_is_econn(void **state)
{
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(NULL, &ttl, NULL), RLOCK_ECONN);
}

static void test_acquire_wrongtype_is_eserver(void **state)
{
    redisReply *r = mk_err("WRONGTYPE Operation against a key");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_ESERVER);
    free_reply(r);
}

static void test_acquire_noauth_is_eauth(void **state)
{
    redisReply *r = mk_err("NOAUTH Authentication required.");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EAUTH);
    free_reply(r);
}

static void test_acquire_loading_is_econn(void **state)
{
    redisReply *r = mk_err("LOADING Redis is loading");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_ECONN);
    free_reply(r);
}

static void test_acquire_string_is_eproto(void **state)
{
    redisReply *r = mk_str("100");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    free_reply(r);
}

static void test_acquire_status_is_eproto(void **state)
{
    redisReply *r = mk_text(REDIS_REPLY_STATUS, "OK");
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    free_reply(r);
}

static void test_acquire_array_is_eproto(void **state)
{
    redisReply *r = mk_array(1, mk_int(1));
    int64_t ttl = 0;

    (void)state;
    assert_int_equal(rlock__reply_acquire(r, &ttl, NULL), RLOCK_EPROTO);
    free_reply(r);
}

/* ---------------------------------------------------------------- unlock */

static void test_unlock_nil_is_not_held(void **state)
{
    redisReply *r = mk_nil();

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_NOT_HELD);
    free_reply(r);
}

static void test_unlock_zero_is_still_held(void **state)
{
    redisReply *r = mk_int(0);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_STILL_HELD);
    free_reply(r);
}

static void test_unlock_one_is_released(void **state)
{
    redisReply *r = mk_int(1);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_RELEASED);
    free_reply(r);
}

static void test_unlock_two_is_eproto(void **state)
{
    redisReply *r = mk_int(2);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    free_reply(r);
}

static void test_unlock_negative_is_eproto(void **state)
{
    redisReply *r = mk_int(-1);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    free_reply(r);
}

static void test_unlock_string_is_eproto(void **state)
{
    redisReply *r = mk_str("1");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EPROTO);
    free_reply(r);
}

static void test_unlock_null_reply_is_econn(void **state)
{
    (void)state;
    assert_int_equal(rlock__reply_unlock(NULL), RLOCK_ECONN);
}

static void test_unlock_wrongtype_is_not_a_lock(void **state)
{
    redisReply *r = mk_err("WRONGTYPE Operation against a key");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_NOT_A_LOCK);
    free_reply(r);
}

static void test_unlock_oom_is_eserver(void **state)
{
    redisReply *r = mk_err("OOM command not allowed when used memory > "
                           "'maxmemory'. script: 3e34b03b, on @user_script:1.");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_ESERVER);
    free_reply(r);
}

static void test_unlock_three_is_released_unannounced(void **state)
{
    redisReply *r = mk_int(3);

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK__UNLOCK_UNANNOUNCED);
    free_reply(r);
}

static void test_unlock_wrongpass_is_eauth(void **state)
{
    redisReply *r = mk_err("WRONGPASS invalid username-password pair");

    (void)state;
    assert_int_equal(rlock__reply_unlock(r), RLOCK_EAUTH);
    free_reply(r);
}

/* --------------------------------------------------------------- integer */

static void test_integer_reply_is_returned(void **state)
{
    redisReply *r = mk_int(-2);
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, -2);
    free_reply(r);
}

static void test_integer_nil_is_zero_and_untouched(void **state)
{
    redisReply *r = mk_nil();
    int64_t v = 77;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 0);
    assert_int_equal(v, 77);
    free_reply(r);
}

static void test_integer_decimal_string_is_parsed(void **state)
{
    redisReply *r = mk_str("12345");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, 12345);
    free_reply(r);
}

static void test_integer_negative_string_is_parsed(void **state)
{
    redisReply *r = mk_str("-42");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_int_equal(v, -42);
    free_reply(r);
}

static void test_integer_large_string_is_parsed(void **state)
{
    redisReply *r = mk_str("9223372036854775799");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), 1);
    assert_true(v == INT64_C(9223372036854775799));
    free_reply(r);
}

static void test_integer_overflowing_string_is_eproto(void **state)
{
    redisReply *r = mk_str("99999999999999999999"); /* 20 digits */
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_empty_string_is_eproto(void **state)
{
    redisReply *r = mk_str("");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_lone_minus_is_eproto(void **state)
{
    redisReply *r = mk_str("-");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_non_digit_string_is_eproto(void **state)
{
    redisReply *r = mk_str("12a");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_status_is_eproto(void **state)
{
    redisReply *r = mk_text(REDIS_REPLY_STATUS, "12");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_array_is_eproto(void **state)
{
    redisReply *r = mk_array(0);
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_EPROTO);
    free_reply(r);
}

static void test_integer_null_reply_is_econn(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(NULL, &v), RLOCK_ECONN);
}

static void test_integer_error_reply_is_eserver(void **state)
{
    redisReply *r = mk_err("WRONGTYPE Operation against a key");
    int64_t v = 0;

    (void)state;
    assert_int_equal(rlock__reply_integer(r, &v), RLOCK_ESERVER);
    free_reply(r);
}

/* ----------------------------------------------------------------- renew */

static void test_renew_array_of_flags_is_decoded(void **state)
{
    redisReply *r = mk_array(3, mk_int(1), mk_int(0), mk_int(1));
    unsigned char renewed[3] = {9, 9, 9};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 3, renewed), RLOCK_OK);
    assert_int_equal(renewed[0], 1);
    assert_int_equal(renewed[1], 0);
    assert_int_equal(renewed[2], 1);
    free_reply(r);
}

static void test_renew_empty_array_for_zero_keys(void **state)
{
    redisReply *r = mk_array(0);
    unsigned char renewed[1] = {9};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 0, renewed), RLOCK_OK);
    assert_int_equal(renewed[0], 9);
    free_reply(r);
}

static void test_renew_shorter_array_is_eproto(void **state)
{
    redisReply *r = mk_array(2, mk_int(1), mk_int(1));
    unsigned char renewed[3] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 3, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_longer_array_is_eproto(void **state)
{
    redisReply *r = mk_array(3, mk_int(1), mk_int(1), mk_int(1));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_value_two_means_taken(void **state)
{
    redisReply *r = mk_array(2, mk_int(1), mk_int(2));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_OK);
    assert_int_equal(renewed[1], RLOCK__RENEW_TAKEN);
    free_reply(r);
}

static void test_renew_value_three_is_eproto(void **state)
{
    redisReply *r = mk_array(2, mk_int(1), mk_int(3));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_negative_value_is_eproto(void **state)
{
    redisReply *r = mk_array(1, mk_int(-1));
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_string_element_is_eproto(void **state)
{
    redisReply *r = mk_array(2, mk_int(1), mk_str("1"));
    unsigned char renewed[2] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 2, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_nil_element_is_eproto(void **state)
{
    redisReply *r = mk_array(1, mk_nil());
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_integer_instead_of_array_is_eproto(void **state)
{
    redisReply *r = mk_int(1);
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_nil_is_eproto(void **state)
{
    redisReply *r = mk_nil();
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_EPROTO);
    free_reply(r);
}

static void test_renew_null_reply_is_econn(void **state)
{
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(NULL, 1, renewed), RLOCK_ECONN);
}

static void test_renew_noscript_error_is_eserver(void **state)
{
    redisReply *r = mk_err("NOSCRIPT No matching script.");
    unsigned char renewed[1] = {0};

    (void)state;
    assert_int_equal(rlock__reply_renew(r, 1, renewed), RLOCK_ESERVER);
    free_reply(r);
}

/* ------------------------------------------------------------ admin copy */

static void test_admin_copy_keeps_every_type_and_value(void **state)
{
    redisReply *r = mk_array(5, mk_str("hash"), mk_int(-7), mk_nil(),
                             mk_text(REDIS_REPLY_STATUS, "QUEUED"),
                             mk_array(1, mk_err("ERR no")));

    (void)state;
    rlock_admin_reply *c = rlock__admin_reply_copy(r);
    free_reply(r); /* the copy owns nothing of the original */
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
    redisReply *r = mk_str("a");

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
    free_reply(r);
}

static void test_admin_copy_of_an_empty_array_has_no_elements(void **state)
{
    redisReply *r = mk_array(0);

    (void)state;
    rlock_admin_reply *c = rlock__admin_reply_copy(r);
    assert_non_null(c);
    assert_int_equal(c->type, RLOCK_ADMIN_ARRAY);
    assert_int_equal(c->elements, 0);
    rlock__admin_reply_free(c);
    free_reply(r);
}

static void test_admin_copy_out_of_memory_anywhere_is_null(void **state)
{
    redisReply *r = mk_array(2, mk_str("message"),
                             mk_array(2, mk_str("ch"), mk_int(1)));

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
    free_reply(r);
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
        cmocka_unit_test(test_unlock_two_is_eproto),
        cmocka_unit_test(test_unlock_negative_is_eproto),
        cmocka_unit_test(test_unlock_string_is_eproto),
        cmocka_unit_test(test_unlock_null_reply_is_econn),
        cmocka_unit_test(test_unlock_wrongtype_is_not_a_lock),
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
        cmocka_unit_test(test_admin_copy_keeps_every_type_and_value),
        cmocka_unit_test(test_admin_copy_keeps_bytes_after_a_nul),
        cmocka_unit_test(test_admin_copy_of_an_empty_array_has_no_elements),
        cmocka_unit_test(test_admin_copy_out_of_memory_anywhere_is_null),
    };

    return cmocka_run_group_tests_name("reply", tests, NULL, NULL);
}
