/*
 * test_scripts.c: the Lua scripts embedded by cmake/embed_scripts.cmake.
 *
 * For each rlock__script: the body is byte for byte scripts/<name>.lua, and
 * ->sha1 is the SHA-1 of body[0..len), recomputed here by a small SHA-1 of
 * our own (FIPS 180-4), itself checked against the standard test vectors.
 *
 * The source tree is found, first match wins, through
 *   1. the compile definition RLOCK_SOURCE_DIR (a string),
 *   2. argv[1],
 *   3. the environment variable RLOCK_SOURCE_DIR,
 *   4. this file's own path (__FILE__, absolute in CMake builds).
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

/* ------------------------------------------------------------------ SHA-1 */

typedef struct sha1_ctx {
    uint32_t h[5];
    uint64_t total; /* bytes hashed so far */
    unsigned char block[64];
    size_t used; /* bytes waiting in block */
} sha1_ctx;

static uint32_t rol32(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(sha1_ctx *c, const unsigned char *p)
{
    uint32_t w[80], a, b, d, e, f, k, t, cc;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4];
    for (int i = 0; i < 80; i++) {
        if (i < 20)
            f = (b & cc) | (~b & d), k = 0x5a827999;
        else if (i < 40)
            f = b ^ cc ^ d, k = 0x6ed9eba1;
        else if (i < 60)
            f = (b & cc) | (b & d) | (cc & d), k = 0x8f1bbcdc;
        else
            f = b ^ cc ^ d, k = 0xca62c1d6;
        t = rol32(a, 5) + f + e + k + w[i];
        e = d, d = cc, cc = rol32(b, 30), b = a, a = t;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d, c->h[4] += e;
}

static void sha1_init(sha1_ctx *c)
{
    static const uint32_t iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe,
                                   0x10325476, 0xc3d2e1f0};

    memcpy(c->h, iv, sizeof(iv));
    c->total = 0;
    c->used = 0;
}

static void sha1_update(sha1_ctx *c, const void *data, size_t n)
{
    const unsigned char *p = data;

    c->total += n;
    while (n > 0) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->block + c->used, p, take);
        c->used += take, p += take, n -= take;
        if (c->used == 64) {
            sha1_block(c, c->block);
            c->used = 0;
        }
    }
}

/* Writes the digest as 40 lowercase hex digits and a NUL. */
static void sha1_hex(sha1_ctx *c, char out[41])
{
    uint64_t bits = c->total * 8;
    unsigned char pad = 0x80, len[8];

    sha1_update(c, &pad, 1);
    pad = 0;
    while (c->used != 56)
        sha1_update(c, &pad, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(c, len, 8);
    for (int i = 0; i < 20; i++)
        snprintf(out + 2 * i, 3, "%02x",
                 (unsigned)(c->h[i / 4] >> (24 - 8 * (i % 4))) & 0xffu);
}

static void sha1_of(const void *data, size_t n, char out[41])
{
    sha1_ctx c;

    sha1_init(&c);
    sha1_update(&c, data, n);
    sha1_hex(&c, out);
}

/* ------------------------------------------------------------ source dir */

static char source_dir[4096];

static int is_source_dir(const char *dir)
{
    char path[4200];
    FILE *f;

    snprintf(path, sizeof(path), "%s/scripts/lock_acquire.lua", dir);
    f = fopen(path, "rb");
    if (f != NULL)
        fclose(f);
    return f != NULL;
}

static int try_source_dir(const char *dir)
{
    if (dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof(source_dir) ||
        !is_source_dir(dir))
        return 0;
    strcpy(source_dir, dir);
    return 1;
}

static int find_source_dir(int argc, char **argv)
{
    static const char suffix[] = "/tests/unit/test_scripts.c";
    static const char file[] = __FILE__;
    char here[sizeof(source_dir)];
    size_t n = strlen(file), s = strlen(suffix);

#ifdef RLOCK_SOURCE_DIR
    if (try_source_dir(RLOCK_SOURCE_DIR))
        return 1;
#endif
    if (argc > 1 && try_source_dir(argv[1]))
        return 1;
    if (try_source_dir(getenv("RLOCK_SOURCE_DIR")))
        return 1;
    if (n > s && n - s < sizeof(here) && strcmp(&file[n - s], suffix) == 0) {
        memcpy(here, file, n - s);
        here[n - s] = '\0';
        if (try_source_dir(here))
            return 1;
    }
    return 0;
}

/* Reads scripts/<name>.lua whole; the caller frees *out. */
static void read_script_file(const char *name, unsigned char **out, size_t *len)
{
    char path[sizeof(source_dir) + 256];
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;
    FILE *f;

    snprintf(path, sizeof(path), "%s/scripts/%s.lua", source_dir, name);
    f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    do {
        if (n == cap) {
            unsigned char *p = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (p == NULL) {
                free(buf);
                fclose(f);
                fail_msg("out of memory reading %s", path);
            }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    assert_int_equal(ferror(f), 0);
    fclose(f);
    *out = buf;
    *len = n;
}

/* ------------------------------------------------------------ SHA-1 itself */

static void test_sha1_of_empty_input(void **state)
{
    char hex[41];

    (void)state;
    sha1_of("", 0, hex);
    assert_string_equal(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

static void test_sha1_of_abc(void **state)
{
    char hex[41];

    (void)state;
    sha1_of("abc", 3, hex);
    assert_string_equal(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
}

/* 56 bytes: the length no longer fits the first block's padding. */
static void test_sha1_of_two_block_message(void **state)
{
    static const char msg[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char hex[41];

    (void)state;
    sha1_of(msg, strlen(msg), hex);
    assert_string_equal(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void test_sha1_of_million_a_in_pieces(void **state)
{
    char chunk[1001], hex[41];
    sha1_ctx c;

    (void)state;
    memset(chunk, 'a', sizeof(chunk));
    sha1_init(&c);
    for (int i = 0; i < 1000; i++)
        sha1_update(&c, chunk, i % 2 ? 999 : 1001); /* uneven pieces */
    sha1_hex(&c, hex);
    assert_string_equal(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

/* ------------------------------------------------------ embedded scripts */

static const rlock__script *const scripts[] = {
    &rlock__script_lock_acquire,       &rlock__script_lock_release,
    &rlock__script_lock_force_release, &rlock__script_lock_renew,
    &rlock__script_lock_release_owner,
};
static const char *const script_names[] = {
    "lock_acquire", "lock_release",       "lock_force_release",
    "lock_renew",   "lock_release_owner",
};
#define NSCRIPTS (sizeof(scripts) / sizeof(scripts[0]))

static void assert_sha1_matches_body(const rlock__script *s)
{
    char hex[41];

    assert_non_null(s->body);
    assert_true(s->len > 0);
    sha1_of(s->body, s->len, hex);
    assert_non_null(s->sha1);
    assert_string_equal(s->sha1, hex);
}

static void assert_body_matches_file(const rlock__script *s)
{
    unsigned char *file;
    size_t len;

    read_script_file(s->name, &file, &len);
    assert_int_equal(s->len, len);
    assert_memory_equal(s->body, file, len);
    free(file);
}

static void test_names_match_files(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSCRIPTS; i++) {
        assert_non_null(scripts[i]->name);
        assert_string_equal(scripts[i]->name, script_names[i]);
    }
}

static void test_sha1_fields_are_40_lowercase_hex(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSCRIPTS; i++) {
        const char *h = scripts[i]->sha1;
        assert_int_equal(strlen(h), 40);
        for (size_t j = 0; j < 40; j++)
            assert_non_null(strchr("0123456789abcdef", h[j]));
    }
}

static void test_scripts_are_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSCRIPTS; i++)
        for (size_t j = i + 1; j < NSCRIPTS; j++)
            assert_string_not_equal(scripts[i]->sha1, scripts[j]->sha1);
}

#define SCRIPT_TESTS(name)                                    \
    static void test_##name##_sha1_matches_body(void **state) \
    {                                                         \
        (void)state;                                          \
        assert_sha1_matches_body(&rlock__script_##name);      \
    }                                                         \
    static void test_##name##_body_matches_file(void **state) \
    {                                                         \
        (void)state;                                          \
        assert_body_matches_file(&rlock__script_##name);      \
    }

SCRIPT_TESTS(lock_acquire)
SCRIPT_TESTS(lock_release)
SCRIPT_TESTS(lock_force_release)
SCRIPT_TESTS(lock_renew)
SCRIPT_TESTS(lock_release_owner)

#define SCRIPT_ENTRIES(name)                           \
    cmocka_unit_test(test_##name##_sha1_matches_body), \
        cmocka_unit_test(test_##name##_body_matches_file)

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_of_empty_input),
        cmocka_unit_test(test_sha1_of_abc),
        cmocka_unit_test(test_sha1_of_two_block_message),
        cmocka_unit_test(test_sha1_of_million_a_in_pieces),
        cmocka_unit_test(test_names_match_files),
        cmocka_unit_test(test_sha1_fields_are_40_lowercase_hex),
        cmocka_unit_test(test_scripts_are_distinct),
        SCRIPT_ENTRIES(lock_acquire),
        SCRIPT_ENTRIES(lock_release),
        SCRIPT_ENTRIES(lock_force_release),
        SCRIPT_ENTRIES(lock_renew),
        SCRIPT_ENTRIES(lock_release_owner),
    };

    if (!find_source_dir(argc, argv)) {
        fprintf(stderr, "test_scripts: cannot find the source tree; pass it "
                        "as argv[1] or in RLOCK_SOURCE_DIR\n");
        return 1;
    }
    return cmocka_run_group_tests_name("scripts", tests, NULL, NULL);
}
