/*
 * test_map.c: the string-keyed hash table of map.c (put, get, replace,
 * remove, foreach, growth). Each test gets a fresh map from its setup and
 * the teardown destroys it; values are pointers into static arrays, which
 * the map never owns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/proto.h"

#define MANY 10000

static int values[MANY];

static int map_setup(void **state)
{
    rlock__map *m = calloc(1, sizeof(*m));

    if (m == NULL || rlock__map_init(m) != RLOCK_OK) {
        free(m);
        return -1;
    }
    *state = m;
    return 0;
}

static int map_teardown(void **state)
{
    rlock__map *m = *state;

    rlock__map_destroy(m);
    free(m);
    return 0;
}

static void key_of(char *buf, size_t n, int i)
{
    snprintf(buf, n, "lock:%d", i);
}

/* ------------------------------------------------------------------ basic */

static void test_new_map_is_empty(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(m->count, 0);
    assert_true(m->nbuckets > 0);
    assert_null(rlock__map_get(m, "a"));
    assert_null(rlock__map_get(m, ""));
}

static void test_put_then_get_returns_value(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_ptr_equal(rlock__map_get(m, "a"), &values[1]);
    assert_int_equal(m->count, 1);
}

static void test_get_missing_key_is_null(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_null(rlock__map_get(m, "b"));
    assert_null(rlock__map_get(m, "A"));
}

static void test_put_copies_key(void **state)
{
    rlock__map *m = *state;
    char key[] = "mutable";

    assert_int_equal(rlock__map_put(m, key, &values[1]), RLOCK_OK);
    key[0] = 'X';
    assert_ptr_equal(rlock__map_get(m, "mutable"), &values[1]);
    assert_null(rlock__map_get(m, key));
}

static void test_put_existing_key_replaces_value(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_int_equal(rlock__map_put(m, "a", &values[2]), RLOCK_OK);
    assert_ptr_equal(rlock__map_get(m, "a"), &values[2]);
    assert_int_equal(m->count, 1);
}

static void test_remove_returns_value_and_forgets_key(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_ptr_equal(rlock__map_remove(m, "a"), &values[1]);
    assert_null(rlock__map_get(m, "a"));
    assert_int_equal(m->count, 0);
}

static void test_remove_missing_key_is_null(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_null(rlock__map_remove(m, "b"));
    assert_int_equal(m->count, 1);
    assert_ptr_equal(rlock__map_get(m, "a"), &values[1]);
}

static void test_removed_key_can_be_put_again(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "a", &values[1]), RLOCK_OK);
    assert_non_null(rlock__map_remove(m, "a"));
    assert_int_equal(rlock__map_put(m, "a", &values[3]), RLOCK_OK);
    assert_ptr_equal(rlock__map_get(m, "a"), &values[3]);
    assert_int_equal(m->count, 1);
}

/* More keys than buckets, so chains hold several nodes: removing every
 * other key must leave the rest of each chain intact. */
static void test_remove_keeps_rest_of_chain(void **state)
{
    rlock__map *m = *state;
    char key[32];
    int n = (int)m->nbuckets * 3;

    for (int i = 0; i < n; i++) {
        key_of(key, sizeof(key), i);
        assert_int_equal(rlock__map_put(m, key, &values[i]), RLOCK_OK);
    }
    for (int i = 0; i < n; i += 2) {
        key_of(key, sizeof(key), i);
        assert_ptr_equal(rlock__map_remove(m, key), &values[i]);
    }
    for (int i = 0; i < n; i++) {
        key_of(key, sizeof(key), i);
        if (i % 2 == 0)
            assert_null(rlock__map_get(m, key));
        else
            assert_ptr_equal(rlock__map_get(m, key), &values[i]);
    }
    assert_int_equal(m->count, (size_t)(n / 2));
}

/* ---------------------------------------------------------------- foreach */

typedef struct visit {
    unsigned char seen[MANY];
    size_t calls;
    int bad;
} visit;

static void record(const char *key, void *value, void *arg)
{
    visit *v = arg;
    int i = (int)((int *)value - values);
    char want[32];

    v->calls++;
    if (i < 0 || i >= MANY) {
        v->bad++;
        return;
    }
    key_of(want, sizeof(want), i);
    if (strcmp(key, want) != 0)
        v->bad++;
    v->seen[i]++;
}

static void test_foreach_on_empty_map_calls_nothing(void **state)
{
    rlock__map *m = *state;
    visit *v = calloc(1, sizeof(*v));

    assert_non_null(v);
    rlock__map_foreach(m, record, v);
    assert_int_equal(v->calls, 0);
    free(v);
}

static void test_foreach_visits_every_pair_once(void **state)
{
    rlock__map *m = *state;
    visit *v = calloc(1, sizeof(*v));
    char key[32];

    assert_non_null(v);
    for (int i = 0; i < 100; i++) {
        key_of(key, sizeof(key), i);
        assert_int_equal(rlock__map_put(m, key, &values[i]), RLOCK_OK);
    }
    assert_non_null(rlock__map_remove(m, "lock:50"));
    rlock__map_foreach(m, record, v);
    assert_int_equal(v->calls, 99);
    assert_int_equal(v->bad, 0);
    for (int i = 0; i < 100; i++)
        assert_int_equal(v->seen[i], i == 50 ? 0 : 1);
    free(v);
}

static void test_foreach_passes_arg_through(void **state)
{
    rlock__map *m = *state;
    visit *v = calloc(1, sizeof(*v));

    assert_non_null(v);
    assert_int_equal(rlock__map_put(m, "lock:7", &values[7]), RLOCK_OK);
    rlock__map_foreach(m, record, v);
    assert_int_equal(v->calls, 1);
    assert_int_equal(v->seen[7], 1);
    free(v);
}

/* ----------------------------------------------------------------- growth */

static void test_grows_to_10000_keys(void **state)
{
    rlock__map *m = *state;
    size_t start = m->nbuckets;
    char key[32];

    for (int i = 0; i < MANY; i++) {
        key_of(key, sizeof(key), i);
        assert_int_equal(rlock__map_put(m, key, &values[i]), RLOCK_OK);
    }
    assert_int_equal(m->count, MANY);
    /* Load factor at most 1, buckets a power of two (masking needs it). */
    assert_true(m->nbuckets >= MANY);
    assert_true(m->nbuckets > start);
    assert_int_equal(m->nbuckets & (m->nbuckets - 1), 0);
    for (int i = 0; i < MANY; i++) {
        key_of(key, sizeof(key), i);
        assert_ptr_equal(rlock__map_get(m, key), &values[i]);
    }
}

static void test_foreach_after_growth_sees_all_keys(void **state)
{
    rlock__map *m = *state;
    visit *v = calloc(1, sizeof(*v));
    char key[32];

    assert_non_null(v);
    for (int i = 0; i < MANY; i++) {
        key_of(key, sizeof(key), i);
        assert_int_equal(rlock__map_put(m, key, &values[i]), RLOCK_OK);
    }
    rlock__map_foreach(m, record, v);
    assert_int_equal(v->calls, MANY);
    assert_int_equal(v->bad, 0);
    for (int i = 0; i < MANY; i++)
        assert_int_equal(v->seen[i], 1);
    free(v);
}

static void test_remove_all_after_growth_empties_map(void **state)
{
    rlock__map *m = *state;
    char key[32];

    for (int i = 0; i < MANY; i++) {
        key_of(key, sizeof(key), i);
        assert_int_equal(rlock__map_put(m, key, &values[i]), RLOCK_OK);
    }
    for (int i = MANY - 1; i >= 0; i--) {
        key_of(key, sizeof(key), i);
        assert_ptr_equal(rlock__map_remove(m, key), &values[i]);
    }
    assert_int_equal(m->count, 0);
    for (int i = 0; i < MANY; i += 97) {
        key_of(key, sizeof(key), i);
        assert_null(rlock__map_get(m, key));
    }
}

/* ------------------------------------------------------------- odd bytes */

static const char *const odd_keys[] = {
    "",                  /* empty */
    "\xff",              /* high byte alone */
    "\xff\xfe\x80",      /* bytes >= 0x80 (signed char pitfalls) */
    "\x01\x02\x1f",      /* control bytes */
    "{a}:b c",           /* braces, colon, space */
    "a",                 /* prefix of "ab" and "abc" */
    "ab",                /* prefix of "abc" */
    "abc",               /* extends "ab" by one byte */
    "abd",               /* differs from "abc" in the last byte */
    "%00",               /* looks like an escape, is not */
    "\\0",               /* looks like an escape, is not */
    "\xc3\xa9t\xc3\xa9", /* UTF-8 */
};
#define NODD (sizeof(odd_keys) / sizeof(odd_keys[0]))

static void test_odd_byte_keys_are_distinct(void **state)
{
    rlock__map *m = *state;

    for (size_t i = 0; i < NODD; i++)
        assert_int_equal(rlock__map_put(m, odd_keys[i], &values[i]), RLOCK_OK);
    assert_int_equal(m->count, NODD);
    for (size_t i = 0; i < NODD; i++)
        assert_ptr_equal(rlock__map_get(m, odd_keys[i]), &values[i]);
}

static void test_odd_byte_keys_remove_one_at_a_time(void **state)
{
    rlock__map *m = *state;

    for (size_t i = 0; i < NODD; i++)
        assert_int_equal(rlock__map_put(m, odd_keys[i], &values[i]), RLOCK_OK);
    for (size_t i = 0; i < NODD; i++) {
        assert_ptr_equal(rlock__map_remove(m, odd_keys[i]), &values[i]);
        for (size_t j = i + 1; j < NODD; j++)
            assert_ptr_equal(rlock__map_get(m, odd_keys[j]), &values[j]);
    }
    assert_int_equal(m->count, 0);
}

static void test_empty_key_is_a_key(void **state)
{
    rlock__map *m = *state;

    assert_int_equal(rlock__map_put(m, "", &values[5]), RLOCK_OK);
    assert_ptr_equal(rlock__map_get(m, ""), &values[5]);
    assert_null(rlock__map_get(m, "x"));
    assert_ptr_equal(rlock__map_remove(m, ""), &values[5]);
    assert_null(rlock__map_get(m, ""));
}

static void test_long_key(void **state)
{
    rlock__map *m = *state;
    size_t n = 70000;
    char *key = malloc(n + 1);

    assert_non_null(key);
    memset(key, 'k', n);
    key[n] = '\0';
    assert_int_equal(rlock__map_put(m, key, &values[9]), RLOCK_OK);
    assert_ptr_equal(rlock__map_get(m, key), &values[9]);
    key[n - 1] = 'j';
    assert_null(rlock__map_get(m, key));
    free(key);
}

#define T(f) cmocka_unit_test_setup_teardown(f, map_setup, map_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_new_map_is_empty),
        T(test_put_then_get_returns_value),
        T(test_get_missing_key_is_null),
        T(test_put_copies_key),
        T(test_put_existing_key_replaces_value),
        T(test_remove_returns_value_and_forgets_key),
        T(test_remove_missing_key_is_null),
        T(test_removed_key_can_be_put_again),
        T(test_remove_keeps_rest_of_chain),
        T(test_foreach_on_empty_map_calls_nothing),
        T(test_foreach_visits_every_pair_once),
        T(test_foreach_passes_arg_through),
        T(test_grows_to_10000_keys),
        T(test_foreach_after_growth_sees_all_keys),
        T(test_remove_all_after_growth_empties_map),
        T(test_odd_byte_keys_are_distinct),
        T(test_odd_byte_keys_remove_one_at_a_time),
        T(test_empty_key_is_a_key),
        T(test_long_key),
    };

    return cmocka_run_group_tests_name("map", tests, NULL, NULL);
}
