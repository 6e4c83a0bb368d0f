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

    assert_int_equal(rlock__spec_acquire(&s, &f.entry, 7, 30000, 0, false),
                     RLOCK_OK);
    assert_fits_script(&s);
    rlock__spec_clear(&s);

    /* a try without a wait; for an RLock, Redisson's one-key acquire */
    assert_int_equal(rlock__spec_acquire(&s, &f.entry, 7, 30000, 0, true),
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
        cmocka_unit_test(test_fair_acquire_from_a_description_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
