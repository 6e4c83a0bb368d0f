/*
 * test_version.c: the version macros agree with each other and with
 * rlock_version(); rlock_version_string() is the header's version, then,
 * when the build knew one, "+" and a build id: the configured
 * RLOCK_BUILD_ID, else "g" + 12 hex digits of the source tree's commit
 * (+ "-dirty"), else nothing (not a git tree of its own).
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rlock.h"

#ifndef RLOCK_SOURCE_DIR
#error "RLOCK_SOURCE_DIR must name the source tree"
#endif
#ifndef RLOCK_TEST_BUILD_ID
#error "RLOCK_TEST_BUILD_ID must be the configured RLOCK_BUILD_ID"
#endif

/* The build id, "" or starting with '+'. */
static const char *build_id(void)
{
    const char *v = rlock_version_string();
    size_t n = strlen(RLOCK_VERSION_STRING);
    assert_memory_equal(v, RLOCK_VERSION_STRING, n);
    return v + n;
}

/* Reads the first line git prints for args in the source tree into out;
 * returns false when git fails (no git, or not a git tree). */
static bool git_line(const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "git -C '%s' %s 2>/dev/null", RLOCK_SOURCE_DIR,
             args);
    FILE *p = popen(cmd, "r");
    if (p == NULL)
        return false;
    bool got = fgets(out, (int)len, p) != NULL;
    int rc = pclose(p);
    out[got ? strcspn(out, "\n") : 0] = '\0';
    return got && rc == 0;
}

/* The header's numbers, its hex form, its string and the library agree. */
static void test_the_version_macros_agree(void **state)
{
    (void)state;
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", RLOCK_VERSION_MAJOR,
             RLOCK_VERSION_MINOR, RLOCK_VERSION_PATCH);
    assert_string_equal(RLOCK_VERSION_STRING, want);
    assert_int_equal(RLOCK_VERSION_HEX, (RLOCK_VERSION_MAJOR << 16) |
                                            (RLOCK_VERSION_MINOR << 8) |
                                            RLOCK_VERSION_PATCH);
    assert_int_equal(rlock_version(), RLOCK_VERSION_HEX);
    /* the first stable release: the SONAME is librlock.so.1 from here */
    assert_true(RLOCK_VERSION_HEX >= 0x010000);
    assert_true(RLOCK_VERSION_MINOR < 256 && RLOCK_VERSION_PATCH < 256);
}

static void test_the_version_starts_with_the_headers(void **state)
{
    (void)state;
    const char *id = build_id();
    assert_true(id[0] == '\0' || id[0] == '+');
}

static void test_a_build_id_is_made_of_semver_build_characters(void **state)
{
    (void)state;
    const char *id = build_id();
    if (id[0] == '\0')
        return; /* no id: nothing follows the version */
    assert_true(strlen(id) > 1);
    for (const char *p = id + 1; *p != '\0'; p++)
        assert_non_null(strchr("0123456789abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-",
                               *p));
}

static void test_the_build_id_names_what_was_built(void **state)
{
    (void)state;
    const char *id = build_id();
    char top[4096], real_top[4096], real_src[4096], head[64];
    print_message("rlock_version_string(): %s\n", rlock_version_string());

    if (RLOCK_TEST_BUILD_ID[0] != '\0') { /* a packager's id wins */
        assert_int_equal(id[0], '+');
        assert_string_equal(id + 1, RLOCK_TEST_BUILD_ID);
        return;
    }
    bool own_tree = git_line("rev-parse --show-toplevel", top, sizeof(top)) &&
                    realpath(top, real_top) != NULL &&
                    realpath(RLOCK_SOURCE_DIR, real_src) != NULL &&
                    strcmp(real_top, real_src) == 0;
    if (!own_tree) {
        assert_string_equal(id, "");
        return;
    }
    assert_memory_equal(id, "+g", 2);
    assert_true(strcmp(id + 14, "") == 0 || strcmp(id + 14, "-dirty") == 0);
    /* The commit it names is HEAD's, or an ancestor of HEAD when commits
     * were made after the build (ctest run without rebuilding). */
    char abbrev[13], args[128], full[64];
    memcpy(abbrev, id + 2, 12);
    abbrev[12] = '\0';
    snprintf(args, sizeof(args), "rev-parse --verify --quiet %s^{commit}",
             abbrev);
    assert_true(git_line(args, full, sizeof(full)));
    assert_true(git_line("rev-parse HEAD", head, sizeof(head)));
    if (strcmp(full, head) != 0) {
        snprintf(args, sizeof(args),
                 "merge-base --is-ancestor %s HEAD && echo ancestor", full);
        assert_true(git_line(args, full, sizeof(full)));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_version_macros_agree),
        cmocka_unit_test(test_the_version_starts_with_the_headers),
        cmocka_unit_test(test_a_build_id_is_made_of_semver_build_characters),
        cmocka_unit_test(test_the_build_id_names_what_was_built),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
