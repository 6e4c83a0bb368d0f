/*
 * test_slots.c: CRC16, the hash-tag rule and the lock-name slot check
 * (src/proto/slots.c).
 *
 * Expected slots come from Redis itself (CLUSTER KEYSLOT on redis-server
 * 7.0.15, and the facts sheet's measurements in CLUSTER-SENTINEL.md 1.2);
 * test_cluster checks many more names against a live cluster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/cluster.h"

static int slot_of(const char *key)
{
    return rlock__key_slot(key, strlen(key));
}

/* ------------------------------------------------------------------ CRC16 */

/* The XMODEM check value: CRC16 of "123456789" is 0x31C3. */
static void test_crc16_is_xmodem(void **state)
{
    (void)state;
    assert_int_equal(rlock__crc16("123456789", 9), 0x31c3);
}

static void test_crc16_of_nothing_is_zero(void **state)
{
    (void)state;
    assert_int_equal(rlock__crc16("", 0), 0);
}

/* ------------------------------------------------------------------ slots */

static void test_slots_of_plain_keys_are_redis_s(void **state)
{
    (void)state;
    assert_int_equal(slot_of("foo"), 12182);
    assert_int_equal(slot_of("somekey"), 11058);
    assert_int_equal(slot_of("123456789"), 12739);
    assert_int_equal(slot_of(""), 0);
}

static void test_hash_tag_is_hashed_alone(void **state)
{
    (void)state;
    assert_int_equal(slot_of("user1000"), 3443);
    assert_int_equal(slot_of("{user1000}.following"), 3443);
    assert_int_equal(slot_of("x{user1000}y{z}"), 3443);
}

/* Only the first '{' counts, with the first '}' after it. */
static void test_first_brace_pair_decides(void **state)
{
    (void)state;
    assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    assert_int_equal(slot_of("a}b{c}"), slot_of("c"));
}

/* An empty or unclosed tag means the whole key is hashed (Redis does not
 * look for a later pair). */
static void test_empty_or_unclosed_tag_hashes_the_whole_key(void **state)
{
    (void)state;
    const char *whole[] = {"x{}y{z}", "{}x", "a{b", "a}b"};
    const int redis[] = {15453, 10595, 13340, 7866};

    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
        assert_int_equal(slot_of(whole[i]), redis[i]);
        assert_int_equal(slot_of(whole[i]),
                         rlock__crc16(whole[i], strlen(whole[i])) & 16383);
    }
}

/* Keys are bytes: a NUL inside the key is hashed like any other byte. */
static void test_key_bytes_after_a_nul_count(void **state)
{
    (void)state;
    assert_int_not_equal(rlock__key_slot("a\0b", 3), rlock__key_slot("a", 1));
    assert_int_equal(rlock__key_slot("{a\0b}c", 6),
                     rlock__key_slot("a\0b", 3));
}

/* ------------------------------------------------------- prefixes' slots */

/* A prefix whose tag closes keeps every key made from it in the tag's slot,
 * whatever (braceless) part follows. */
static void test_prefix_with_a_closed_tag_fixes_the_slot(void **state)
{
    (void)state;
    const char *fixed[] = {"redisson_unlock_latch:{orders}", "{orders}",
                           "x{orders}y{", "redisson_lock__channel:{orders}"};

    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        int slot = -1;

        assert_true(rlock__prefix_slot(fixed[i], strlen(fixed[i]), &slot));
        assert_int_equal(slot, slot_of("orders"));
    }
}

/* A prefix Redis would hash whole has no slot of its own. */
static void test_prefix_hashed_whole_has_no_slot(void **state)
{
    (void)state;
    const char *whole[] = {"redisson_unlock_latch:a{b", "redisson_rwlock:{}x",
                           "plain", "", "{", "}{"};

    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
        int slot = -7;

        assert_false(rlock__prefix_slot(whole[i], strlen(whole[i]), &slot));
        assert_int_equal(slot, -7);
    }
}

/* ------------------------------------------------------- a lock's names */

typedef struct {
    int kind;
    const char *keys[RLOCK__LOCK_KEYS_MAX];
    bool suffixed[RLOCK__LOCK_KEYS_MAX];
} kind_keys;

/* Each kind's names for lock "orders", as REDISSON-PROTOCOL.md gives them;
 * suffixed: calls append a request id or an owner tag. */
static const kind_keys orders_keys[] = {
    {RLOCK_KIND_LOCK, /* with rlock's own queue (lock_acquire_queued.lua) */
     {"orders", "redisson_lock__channel:{orders}",
      "redisson_unlock_latch:{orders}", "redisson_lock__channel:{orders}",
      "redisson_rlock_queue:{orders}", "redisson_rlock_timeout:{orders}"},
     {false, false, true, true, false, false}},
    {RLOCK_KIND_SPIN,
     {"orders", "redisson_lock__channel:{orders}",
      "redisson_unlock_latch:{orders}"},
     {false, false, true}},
    {RLOCK_KIND_FAIR,
     {"orders", "redisson_lock__channel:{orders}",
      "redisson_unlock_latch:{orders}", "redisson_lock__channel:{orders}",
      "redisson_lock_queue:{orders}", "redisson_lock_timeout:{orders}"},
     {false, false, true, true, false, false}},
    {RLOCK_KIND_FENCED,
     {"orders", "redisson_lock__channel:{orders}",
      "redisson_unlock_latch:{orders}", "redisson_lock_token:{orders}"},
     {false, false, true, false}},
    {RLOCK_KIND_READ,
     {"orders", "redisson_rwlock:{orders}", "redisson_unlock_latch:{orders}",
      "{orders}"},
     {false, false, true, true}},
    {RLOCK_KIND_WRITE,
     {"orders", "redisson_rwlock:{orders}", "redisson_unlock_latch:{orders}",
      "{orders}"},
     {false, false, true, true}},
};

static void test_each_kind_lists_redisson_s_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(orders_keys) / sizeof(orders_keys[0]);
         i++) {
        const kind_keys *want = &orders_keys[i];
        rlock__lock_keys k;
        size_t n = 0;

        while (n < RLOCK__LOCK_KEYS_MAX && want->keys[n] != NULL)
            n++;
        assert_int_equal(rlock__lock_keys_make(want->kind, "orders", &k),
                         RLOCK_OK);
        assert_int_equal(k.count, n);
        for (size_t j = 0; j < n; j++) {
            assert_string_equal(k.key[j], want->keys[j]);
            assert_int_equal(k.suffixed[j], want->suffixed[j]);
        }
        rlock__lock_keys_clear(&k);
        rlock__lock_keys_clear(&k); /* twice is harmless */
    }
}

/* A fair waiter's lock is the fair lock: the same names. */
static void test_fair_waiter_lists_the_fair_lock_s_names(void **state)
{
    (void)state;
    rlock__lock_keys a, b;

    assert_int_equal(rlock__lock_keys_make(RLOCK_KIND_FAIR, "q", &a),
                     RLOCK_OK);
    assert_int_equal(rlock__lock_keys_make(RLOCK__KIND_FAIR_WAIT, "q", &b),
                     RLOCK_OK);
    assert_int_equal(a.count, b.count);
    for (size_t j = 0; j < a.count; j++)
        assert_string_equal(a.key[j], b.key[j]);
    rlock__lock_keys_clear(&a);
    rlock__lock_keys_clear(&b);
}

/* ----------------------------------------------------------- a lock's slot */

static const int kinds[] = {RLOCK_KIND_LOCK,   RLOCK_KIND_FAIR,
                            RLOCK_KIND_READ,   RLOCK_KIND_WRITE,
                            RLOCK_KIND_FENCED, RLOCK_KIND_SPIN};

static void test_ordinary_name_is_one_slot_for_every_kind(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        int slot = -1;

        assert_int_equal(rlock__lock_slot(kinds[i], "orders", &slot),
                         RLOCK_OK);
        assert_int_equal(slot, slot_of("orders"));
    }
}

/* Redisson's own names for a lock N (REDISSON-PROTOCOL.md): each is in
 * slot(N), which is why one EVAL may name them together. */
static void test_redisson_names_of_a_lock_share_its_slot(void **state)
{
    (void)state;
    const char *names[] = {
        "redisson_lock__channel:{orders}",
        "redisson_unlock_latch:{orders}:0123456789abcdef0123456789abcdef",
        "redisson_lock_queue:{orders}",
        "redisson_lock_timeout:{orders}",
        ("redisson_lock__channel:{orders}:"
         "5b1f2c9e-8d3a-4e7b-9c1d-2f3a4b5c6d7e:42"),
        "redisson_rwlock:{orders}",
        "{orders}:5b1f2c9e-8d3a-4e7b-9c1d-2f3a4b5c6d7e:42:rwlock_timeout:3",
        "redisson_lock_token:{orders}",
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_int_equal(slot_of(names[i]), slot_of("orders"));
}

/* A name with its own hash tag lives in the tag's slot, and so do the
 * names derived from it (they keep N as it is). */
static void test_name_with_a_tag_is_in_the_tag_s_slot(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        int slot = -1;

        assert_int_equal(rlock__lock_slot(kinds[i], "{user1000}.lock", &slot),
                         RLOCK_OK);
        assert_int_equal(slot, 3443);
        assert_int_equal(rlock__lock_slot(kinds[i], "a}b{c}", &slot),
                         RLOCK_OK);
        assert_int_equal(slot, slot_of("c"));
    }
}

/* The facts sheet's measured names: their keys span slots in a cluster,
 * so every kind refuses them. */
static void test_unbalanced_braces_are_refused_for_every_kind(void **state)
{
    (void)state;
    const char *bad[] = {"a{b", "a}b", "{}x", "x{}y{z}", "}{", "{"};

    assert_int_not_equal(slot_of("a{b"), slot_of("redisson_lock__channel:a{b"));
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            int slot = -7;

            assert_int_equal(rlock__lock_slot(kinds[k], bad[i], &slot),
                             RLOCK_EINVAL);
            assert_int_equal(slot, -7);
        }
    }
}

/* "x{" and 2478 more bytes: a length at which CRC16 gives the name and its
 * channel one slot (CRC is linear: slot(P+N) = slot(N) for every N of one
 * length, or for none). The latch, hashed whole with each request id,
 * still moves, so the name is refused all the same. */
static void test_whole_hashed_name_is_refused_though_its_channel_agrees(
    void **state)
{
    (void)state;
    char name[2481], channel[2600];
    int slot = -1;

    memset(name, 'a', sizeof(name) - 1);
    name[0] = 'x';
    name[1] = '{';
    name[sizeof(name) - 1] = '\0';
    snprintf(channel, sizeof(channel), "redisson_lock__channel:%s", name);
    assert_int_equal(slot_of(name), slot_of(channel));
    assert_int_equal(rlock__lock_slot(RLOCK_KIND_LOCK, name, &slot),
                     RLOCK_EINVAL);
}

static void test_fair_waiter_sees_the_fair_lock_s_slot(void **state)
{
    (void)state;
    int slot = -1;

    assert_int_equal(rlock__lock_slot(RLOCK__KIND_FAIR_WAIT, "orders", &slot),
                     RLOCK_OK);
    assert_int_equal(slot, slot_of("orders"));
    assert_int_equal(rlock__lock_slot(RLOCK__KIND_FAIR_WAIT, "a}b", &slot),
                     RLOCK_EINVAL);
}

static void test_empty_or_missing_name_is_einval(void **state)
{
    (void)state;
    int slot;

    assert_int_equal(rlock__lock_slot(RLOCK_KIND_LOCK, "", &slot),
                     RLOCK_EINVAL);
    assert_int_equal(rlock__lock_slot(RLOCK_KIND_LOCK, NULL, &slot),
                     RLOCK_EINVAL);
}

/* Each allocation the check makes can fail: RLOCK_ENOMEM, nothing leaked
 * (the ASan pass checks the leaks). */
static void test_lock_slot_out_of_memory_is_enomem(void **state)
{
    (void)state;
    for (long n = 0;; n++) {
        int slot = -1, rc;

        rlock__alloc_fail_after(n);
        rc = rlock__lock_slot(RLOCK_KIND_FAIR, "orders", &slot);
        rlock__alloc_fail_after(-1);
        if (rc == RLOCK_OK) {
            assert_true(n > 0);
            assert_int_equal(slot, slot_of("orders"));
            break;
        }
        assert_int_equal(rc, RLOCK_ENOMEM);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_is_xmodem),
        cmocka_unit_test(test_crc16_of_nothing_is_zero),
        cmocka_unit_test(test_slots_of_plain_keys_are_redis_s),
        cmocka_unit_test(test_hash_tag_is_hashed_alone),
        cmocka_unit_test(test_first_brace_pair_decides),
        cmocka_unit_test(test_empty_or_unclosed_tag_hashes_the_whole_key),
        cmocka_unit_test(test_key_bytes_after_a_nul_count),
        cmocka_unit_test(test_prefix_with_a_closed_tag_fixes_the_slot),
        cmocka_unit_test(test_prefix_hashed_whole_has_no_slot),
        cmocka_unit_test(test_each_kind_lists_redisson_s_names),
        cmocka_unit_test(test_fair_waiter_lists_the_fair_lock_s_names),
        cmocka_unit_test(test_ordinary_name_is_one_slot_for_every_kind),
        cmocka_unit_test(test_redisson_names_of_a_lock_share_its_slot),
        cmocka_unit_test(test_name_with_a_tag_is_in_the_tag_s_slot),
        cmocka_unit_test(test_unbalanced_braces_are_refused_for_every_kind),
        cmocka_unit_test(
            test_whole_hashed_name_is_refused_though_its_channel_agrees),
        cmocka_unit_test(test_fair_waiter_sees_the_fair_lock_s_slot),
        cmocka_unit_test(test_empty_or_missing_name_is_einval),
        cmocka_unit_test(test_lock_slot_out_of_memory_is_enomem),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
