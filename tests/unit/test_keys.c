/*
 * test_keys.c: the Redis names derived from a lock name (keys.c) and the
 * owner tag (proto/ids.c), checked against Redisson's rules in
 * REDISSON-PROTOCOL.md sections 1.1 and 1.2: a derived name wraps N in
 * braces unless N contains a '{' anywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/proto.h"

/* Asserts that got (malloc'd, may be NULL) equals want, then frees it. */
static void assert_name(char *got, const char *want)
{
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* ---------------------------------------------------------------- channel */

static void test_channel_plain_name_is_braced(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("foo"), "redisson_lock__channel:{foo}");
}

static void test_channel_name_with_hash_tag_is_kept(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("{foo}bar"),
                "redisson_lock__channel:{foo}bar");
}

static void test_channel_unclosed_brace_is_kept(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("a{b"), "redisson_lock__channel:a{b");
}

static void test_channel_empty_braces_are_kept(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("{}x"), "redisson_lock__channel:{}x");
}

/* Only '{' decides; a lone '}' still gets wrapped. */
static void test_channel_close_brace_alone_is_braced(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("a}b"), "redisson_lock__channel:{a}b}");
}

static void test_channel_colons_and_spaces_are_copied(void **state)
{
    (void)state;
    assert_name(rlock__channel_name("my lock:1"),
                "redisson_lock__channel:{my lock:1}");
}

static void test_channel_long_name_is_complete(void **state)
{
    size_t n = 70000;
    char *name = malloc(n + 1);
    char *want = malloc(n + 64);
    char *got;

    (void)state;
    assert_non_null(name);
    assert_non_null(want);
    memset(name, 'x', n);
    name[n] = '\0';
    strcpy(want, "redisson_lock__channel:{");
    strcat(want, name);
    strcat(want, "}");
    got = rlock__channel_name(name);
    assert_non_null(got);
    assert_int_equal(strlen(got), strlen(want));
    assert_string_equal(got, want);
    free(got);
    free(want);
    free(name);
}

/* ------------------------------------------------------------------ latch */

static void test_latch_plain_name(void **state)
{
    (void)state;
    assert_name(rlock__latch_name("foo", "0123456789abcdef0123456789abcdef"),
                "redisson_unlock_latch:{foo}:"
                "0123456789abcdef0123456789abcdef");
}

static void test_latch_name_with_hash_tag(void **state)
{
    (void)state;
    assert_name(rlock__latch_name("{foo}bar", "id"),
                "redisson_unlock_latch:{foo}bar:id");
}

static void test_latch_unclosed_brace(void **state)
{
    (void)state;
    assert_name(rlock__latch_name("a{b", "id"), "redisson_unlock_latch:a{b:id");
}

/* --------------------------------------------------------------- prefixed */

static void test_prefixed_plain_name(void **state)
{
    (void)state;
    assert_name(rlock__prefixed_name("P", "n"), "P:{n}");
}

static void test_prefixed_tagged_name(void **state)
{
    (void)state;
    assert_name(rlock__prefixed_name("P", "x{n}"), "P:x{n}");
}

static void test_prefixed_brace_at_end(void **state)
{
    (void)state;
    assert_name(rlock__prefixed_name("P", "n{"), "P:n{");
}

/* ------------------------------------------------------------- owner tag */

static const char uuid[] = "9f1c2c4e-3b8a-4c57-9a44-0d2a4e6c1b7e";

static void test_owner_tag_uuid_colon_tid(void **state)
{
    char out[RLOCK__OWNER_MAX];

    (void)state;
    rlock__owner_tag(out, uuid, 57);
    assert_string_equal(out, "9f1c2c4e-3b8a-4c57-9a44-0d2a4e6c1b7e:57");
}

static void test_owner_tag_tid_one_has_no_padding(void **state)
{
    char out[RLOCK__OWNER_MAX];

    (void)state;
    rlock__owner_tag(out, uuid, 1);
    assert_string_equal(out, "9f1c2c4e-3b8a-4c57-9a44-0d2a4e6c1b7e:1");
}

/* The largest tid has 20 digits and must fit RLOCK__OWNER_MAX whole. */
static void test_owner_tag_largest_tid_fits(void **state)
{
    char out[RLOCK__OWNER_MAX + 8];

    (void)state;
    memset(out, 'Z', sizeof(out));
    rlock__owner_tag(out, uuid, UINT64_MAX);
    assert_string_equal(out, "9f1c2c4e-3b8a-4c57-9a44-0d2a4e6c1b7e:"
                             "18446744073709551615");
    assert_int_equal(strlen(out) + 1, RLOCK__OWNER_MAX);
    assert_int_equal(out[RLOCK__OWNER_MAX], 'Z'); /* no write past the end */
}

/* ------------------------------------------------------ uuids and hex ids */

/* The version (4) and variant (10xx) bits are set whatever the random
 * bytes say, and the rest of the bytes show through unchanged. */
static void test_uuid4_format_sets_version_and_variant_bits(void **state)
{
    unsigned char ones[16], zeros[16];
    char out[RLOCK__UUID_LEN + 1];

    (void)state;
    memset(ones, 0xff, sizeof(ones));
    memset(zeros, 0, sizeof(zeros));
    rlock__uuid4_format(out, ones);
    assert_string_equal(out, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    rlock__uuid4_format(out, zeros);
    assert_string_equal(out, "00000000-0000-4000-8000-000000000000");
}

static void test_hex_writes_two_lowercase_digits_per_byte(void **state)
{
    const unsigned char in[] = {0x00, 0x0f, 0xa5, 0xff};
    char out[2 * sizeof(in) + 1];

    (void)state;
    rlock__hex(out, in, sizeof(in));
    assert_string_equal(out, "000fa5ff");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_channel_plain_name_is_braced),
        cmocka_unit_test(test_channel_name_with_hash_tag_is_kept),
        cmocka_unit_test(test_channel_unclosed_brace_is_kept),
        cmocka_unit_test(test_channel_empty_braces_are_kept),
        cmocka_unit_test(test_channel_close_brace_alone_is_braced),
        cmocka_unit_test(test_channel_colons_and_spaces_are_copied),
        cmocka_unit_test(test_channel_long_name_is_complete),
        cmocka_unit_test(test_latch_plain_name),
        cmocka_unit_test(test_latch_name_with_hash_tag),
        cmocka_unit_test(test_latch_unclosed_brace),
        cmocka_unit_test(test_prefixed_plain_name),
        cmocka_unit_test(test_prefixed_tagged_name),
        cmocka_unit_test(test_prefixed_brace_at_end),
        cmocka_unit_test(test_owner_tag_uuid_colon_tid),
        cmocka_unit_test(test_owner_tag_tid_one_has_no_padding),
        cmocka_unit_test(test_owner_tag_largest_tid_fits),
        cmocka_unit_test(test_uuid4_format_sets_version_and_variant_bits),
        cmocka_unit_test(test_hex_writes_two_lowercase_digits_per_byte),
    };

    return cmocka_run_group_tests_name("keys", tests, NULL, NULL);
}
