/*
 * test_kinds.c: the script calls proto/kinds.c builds for each kind of lock
 * carry exactly what their scripts read. A script reads KEYS[1..k] and
 * ARGV[1..a] by literal index; the call must pass numkeys = k and k + a
 * arguments, none NULL. A call that lost an argument (the old push()
 * dropped any past RLOCK__SPEC_ARGS without a word) or gained one fails
 * here; spec_overflow.c shows that one past the limit does not compile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api/api.h" /* rlock__config_defaults, and core/core.h */

/* Returns the highest literal N in "<array>[N]" in sc's body (0: none). */
static int highest_index(const rlock__script *sc, const char *array)
{
    size_t alen = strlen(array);
    int highest = 0;
    for (size_t i = 0; i + alen + 1 < sc->len; i++) {
        if (memcmp(sc->body + i, array, alen) != 0 ||
            sc->body[i + alen] != '[')
            continue;
        int n = 0;
        size_t j = i + alen + 1;
        while (j < sc->len && sc->body[j] >= '0' && sc->body[j] <= '9')
            n = n * 10 + (sc->body[j++] - '0');
        if (j < sc->len && sc->body[j] == ']' && n > highest)
            highest = n;
    }
    return highest;
}

static void assert_fits_script(const rlock__spec *s)
{
    assert_non_null(s->script);
    int keys = highest_index(s->script, "KEYS");
    int args = highest_index(s->script, "ARGV");
    print_message("%-20s KEYS %d ARGV %d\n", s->script->name, keys, args);
    assert_int_equal(s->numkeys, keys);
    assert_int_equal(s->argc, keys + args);
    for (int i = 0; i < s->argc; i++)
        assert_non_null(s->argv[i]);
}

typedef struct kinds_fixture {
    rlock_client client;
    rlock__entry entry;
} kinds_fixture;

static int setup_kind(kinds_fixture *f, int kind)
{
    memset(f, 0, sizeof(*f));
    rlock__config_defaults(&f->client.cfg);
    strcpy(f->client.id, "8c4a3f2e-1b7d-4e0a-9f6b-2d5c8e1a7b3f");
    f->client.latch_ms = 1000;
    f->entry.client = &f->client;
    f->entry.kind = kind;
    f->entry.name = "spec-lock";
    return rlock__kind_names(&f->entry, NULL);
}

static void teardown_kind(kinds_fixture *f)
{
    free(f->entry.channel);
    free(f->entry.aux[0]);
    free(f->entry.aux[1]);
    rlock__config_clear(&f->client.cfg);
}

/* Builds every call kind can make and checks each against its script. */
static void check_kind(int kind)
{
    kinds_fixture f;
    rlock__spec s;
    assert_int_equal(setup_kind(&f, kind), RLOCK_OK);

    assert_int_equal(rlock__spec_acquire(&s, &f.entry, 7, 30000, 0, false,
                                         false),
                     RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    /* a non-reentrant handle's acquire: the same script */
    assert_int_equal(rlock__spec_acquire(&s, &f.entry, 7, 30000, 0, true,
                                         true),
                     RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    /* a try without a wait; for an RLock, Redisson's one-key acquire */
    assert_int_equal(rlock__spec_acquire(&s, &f.entry, 7, 30000, 0, true,
                                         false),
                     RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    if (rlock__kind_has_one_key_release(kind)) {
        assert_int_equal(
            rlock__spec_release_one_key(&s, &f.entry, 7, 30000), RLOCK_OK);
        assert_int_equal(s.numkeys, 1);
        assert_fits_script(&s);
        rlock__spec_clear(&s);
    }

    assert_int_equal(
        rlock__spec_release(&s, &f.entry, 7, 30000, "latch-key"), RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    if (rlock__kind_has_drop(kind)) {
        assert_int_equal(rlock__spec_drop(&s, &f.entry, 7), RLOCK_OK);
        assert_fits_script(&s);
        rlock__spec_clear(&s);
    }

    assert_int_equal(rlock__spec_force(&s, &f.entry), RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    if (kind == RLOCK_KIND_FAIR || kind == RLOCK_KIND_LOCK) {
        assert_int_equal(rlock__spec_give_up(&s, &f.entry, 7, 0), RLOCK_OK);
        assert_fits_script(&s);
        rlock__spec_clear(&s);
    }
    if (kind == RLOCK_KIND_READ || kind == RLOCK_KIND_WRITE) {
        assert_int_equal(rlock__spec_is_locked(&s, &f.entry), RLOCK_OK);
        assert_fits_script(&s);
        rlock__spec_clear(&s);
    }
    teardown_kind(&f);
}

static void test_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_LOCK);
}

static void test_fair_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_FAIR);
}

static void test_read_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_READ);
}

static void test_write_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_WRITE);
}

static void test_fenced_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_FENCED);
}

static void test_spin_lock_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    check_kind(RLOCK_KIND_SPIN);
}

static int64_t fixed_wall_ms(void)
{
    return 1234567;
}

/* proto builds a call from a description alone, no client or entry: the
 * fair acquire carries the wall clock it is handed and the settings of
 * the description. */
/* The one-key release (a migrating slot's fallback) is lock_release.lua's
 * path without the latch: only for the kinds whose waiters hear Redisson's
 * RLock unlock message. A fair lock's waiters wait on channels of their
 * own and its queue needs its keys; a read-write lock has its own scripts. */
static void test_one_key_release_only_where_lock_release_is_the_release(
    void **state)
{
    (void)state;
    assert_true(rlock__kind_has_one_key_release(RLOCK_KIND_LOCK));
    assert_true(rlock__kind_has_one_key_release(RLOCK_KIND_FENCED));
    assert_true(rlock__kind_has_one_key_release(RLOCK_KIND_SPIN));
    assert_false(rlock__kind_has_one_key_release(RLOCK_KIND_FAIR));
    assert_false(rlock__kind_has_one_key_release(RLOCK_KIND_READ));
    assert_false(rlock__kind_has_one_key_release(RLOCK_KIND_WRITE));
}

static void test_fair_acquire_from_a_description_alone(void **state)
{
    rlock__lock_desc d = {
        .kind = RLOCK_KIND_FAIR,
        .name = "n",
        .channel = "redisson_lock__channel:{n}",
        .aux = {"redisson_lock_queue:{n}", "redisson_lock_timeout:{n}"},
        .client_id = "8c4a3f2e-1b7d-4e0a-9f6b-2d5c8e1a7b3f",
        .watchdog_ms = 30000,
        .fair_wait_ms = 5000,
        .latch_ms = 1000,
        .wall_ms = fixed_wall_ms,
    };
    rlock__spec s;

    (void)state;
    assert_int_equal(
        rlock__kind_acquire(&s, &d, 9, RLOCK_LEASE_WATCHDOG, 0, false),
        RLOCK_OK);
    assert_fits_script(&s);
    assert_string_equal(s.argv[3], "30000");
    assert_string_equal(s.argv[4], "8c4a3f2e-1b7d-4e0a-9f6b-2d5c8e1a7b3f:9");
    assert_string_equal(s.argv[5], "5000");
    assert_string_equal(s.argv[6], "1234567");
    assert_string_equal(s.argv[7], "0");
    rlock__spec_clear(&s);
}

/* ------------------------------------------------------------ semaphores */

static void test_semaphore_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    rlock__sem_desc d = {.name = "s",
                         .channel = "redisson_sc:{s}",
                         .publish = "PUBLISH"};
    rlock__spec s;
    assert_int_equal(rlock__sem_try_acquire(&s, &d, 2), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__sem_release(&s, &d, 1, true), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__sem_set_permits(&s, &d, 3, 1000), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__sem_add_permits(&s, &d, -2), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__sem_drain(&s, &d), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__sem_available(&s, &d), 0);
    assert_null(s.script);
    assert_string_equal(s.argv[0], "GET");
    assert_int_equal(rlock__sem_try_acquire(&s, &d, 0), RLOCK_EINVAL);
    assert_int_equal(rlock__sem_release(&s, &d, -1, false), RLOCK_EINVAL);
    assert_int_equal(rlock__sem_set_permits(&s, &d, 1, -1), RLOCK_EINVAL);
}

static void test_permit_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    rlock__sem_desc d = {.name = "p",
                         .channel = "redisson_sc:{p}",
                         .timeouts = "{p}:timeout",
                         .publish = "SPUBLISH"};
    const char *id = "0123456789abcdef0123456789ABCDEF";
    rlock__spec s;
    assert_int_equal(rlock__permit_acquire(&s, &d, id, 1000, 500), 0);
    /* the ids follow ARGV[5], read by a loop: one here */
    assert_int_equal(s.numkeys, highest_index(s.script, "KEYS"));
    assert_int_equal(s.argc, s.numkeys + highest_index(s.script, "ARGV") + 1);
    assert_string_equal(s.argv[s.numkeys + 1], "1500"); /* the lease end */
    assert_string_equal(s.argv[s.argc - 1], id);
    assert_int_equal(rlock__permit_acquire(&s, &d, id, 1000, -1), 0);
    assert_string_equal(s.argv[s.numkeys + 1], "922337203685477");
    assert_int_equal(rlock__permit_release(&s, &d, id, 1000), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__permit_update_lease(&s, &d, id, 1000, 10), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__permit_available(&s, &d, 1000), 0);
    assert_fits_script(&s);
    assert_int_equal(rlock__permit_add_permits(&s, &d, 4), 0);
    assert_fits_script(&s);
}

static void test_semaphore_names_follow_redissons_rules(void **state)
{
    (void)state;
    char *channel = NULL, *aux[2] = {NULL, NULL};
    assert_int_equal(rlock__kind_make_names(RLOCK__KIND_PERMIT_SEMAPHORE,
                                            "jobs", NULL, &channel, aux),
                     0);
    assert_string_equal(channel, "redisson_sc:{jobs}");
    assert_string_equal(aux[0], "{jobs}:timeout");
    free(channel);
    free(aux[0]);
    aux[0] = NULL;
    assert_int_equal(rlock__kind_make_names(RLOCK__KIND_PERMIT_SEMAPHORE,
                                            "{t}jobs", NULL, &channel, aux),
                     0);
    assert_string_equal(channel, "redisson_sc:{t}jobs");
    assert_string_equal(aux[0], "{t}jobs:timeout");
    free(channel);
    free(aux[0]);
    aux[0] = NULL;
    assert_int_equal(rlock__kind_make_names(RLOCK__KIND_SEMAPHORE, "jobs",
                                            NULL, &channel, aux),
                     0);
    assert_string_equal(channel, "redisson_sc:{jobs}");
    assert_null(aux[0]);
    free(channel);
}

static void test_permit_ids_are_32_hex_digits(void **state)
{
    (void)state;
    assert_true(rlock__permit_id_valid("0123456789abcdefABCDEF0123456789"));
    assert_false(rlock__permit_id_valid(NULL));
    assert_false(rlock__permit_id_valid(""));
    assert_false(rlock__permit_id_valid("0123456789abcdef0123456789abcde"));
    assert_false(rlock__permit_id_valid("0123456789abcdef0123456789abcdef0"));
    assert_false(rlock__permit_id_valid("0123456789abcdef0123456789abcdeg"));
}

static void test_permit_messages_are_decimal_counts(void **state)
{
    (void)state;
    int64_t n = 0;
    assert_true(rlock__sem_message_permits("12", 2, &n));
    assert_int_equal(n, 12);
    assert_true(rlock__sem_message_permits("-3", 2, &n));
    assert_int_equal(n, -3);
    assert_false(rlock__sem_message_permits("", 0, &n));
    assert_false(rlock__sem_message_permits("-", 1, &n));
    assert_false(rlock__sem_message_permits("1.5", 3, &n));
    assert_false(rlock__sem_message_permits("99999999999999999999", 20, &n));
}

/* The count-down latch's calls (proto/countdown.c) carry what their
 * scripts read, and its channel is Redisson's, braced whatever the name
 * holds. */
static void test_countdown_calls_carry_what_their_scripts_read(void **state)
{
    (void)state;
    char *channel = rlock__countdown_channel("a{b}c");
    assert_string_equal(channel, "redisson_countdownlatch__channel__{a{b}c}");
    rlock__countdown_desc d = {.name = "a{b}c", .channel = channel,
                               .count = 3};
    rlock__spec s;

    rlock__countdown_try_set(&s, &d);
    assert_fits_script(&s);
    assert_string_equal(s.argv[2], "1"); /* NEW_COUNT_MESSAGE */
    assert_string_equal(s.argv[3], "3");
    assert_string_equal(s.argv[4], "PUBLISH");
    rlock__countdown_count_down(&s, &d);
    assert_fits_script(&s);
    assert_string_equal(s.argv[2], "0"); /* ZERO_COUNT_MESSAGE */
    d.publish = "SPUBLISH";
    rlock__countdown_delete(&s, &d);
    assert_fits_script(&s);
    assert_string_equal(s.argv[2], "1");
    assert_string_equal(s.argv[3], "SPUBLISH");
    rlock__countdown_get(&s, &d);
    assert_null(s.script);
    assert_int_equal(s.argc, 2);
    assert_string_equal(s.argv[0], "GET");
    assert_int_equal(rlock__countdown_message("0", 1),
                     RLOCK__COUNTDOWN_OPENED);
    assert_int_equal(rlock__countdown_message("1", 1), RLOCK__COUNTDOWN_OTHER);
    assert_int_equal(rlock__countdown_message("00", 2),
                     RLOCK__COUNTDOWN_OTHER);
    free(channel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_fair_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_read_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_write_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(
            test_fenced_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_spin_lock_calls_carry_what_their_scripts_read),
        cmocka_unit_test(
            test_one_key_release_only_where_lock_release_is_the_release),
        cmocka_unit_test(test_fair_acquire_from_a_description_alone),
        cmocka_unit_test(test_semaphore_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_permit_calls_carry_what_their_scripts_read),
        cmocka_unit_test(test_semaphore_names_follow_redissons_rules),
        cmocka_unit_test(test_permit_ids_are_32_hex_digits),
        cmocka_unit_test(test_permit_messages_are_decimal_counts),
        cmocka_unit_test(test_countdown_calls_carry_what_their_scripts_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
