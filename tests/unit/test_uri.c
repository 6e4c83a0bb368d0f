/*
 * test_uri.c: rlock__uri_parse() against the grammar of
 * rlock_client_connect() (include/rlock.h):
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://...   (the same, with TLS)
 *   unix:///path/to/redis.sock[?db=N]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]
 *   rediss+sentinel://...   (the same, with TLS)
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...][/]
 *   rediss+cluster://...    (the same, with TLS)
 *
 * and every redis scheme spelled valkey (valkey://, valkeys+sentinel://,
 * ...), which must parse exactly as its redis spelling does.
 *
 * Each accepted URI is one named test that checks every field of the result;
 * each refused URI is one named test that checks RLOCK_EINVAL and an output
 * left with nothing to free (run under ASan/LSan, a leak fails the test).
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

#include "proto/proto.h"

/* ------------------------------------------------------------------------ */
/* Accepted URIs                                                            */
/* ------------------------------------------------------------------------ */

typedef struct uri_case {
    const char *text;
    const char *host; /* NULL: expect NULL */
    int port;
    const char *path;
    const char *user;
    const char *password;
    int db;
    bool tls; /* rediss:// */
} uri_case;

static void assert_field(const char *got, const char *want)
{
    if (want == NULL)
        assert_null(got);
    else {
        assert_non_null(got);
        assert_string_equal(got, want);
    }
}

static void test_parses(void **state)
{
    const uri_case *c = *state;
    rlock__uri u;

    memset(&u, 0xa5, sizeof(u)); /* the parser must not read stale fields */
    assert_int_equal(rlock__uri_parse(c->text, &u), RLOCK_OK);
    assert_field(u.host, c->host);
    assert_int_equal(u.port, c->port);
    assert_field(u.path, c->path);
    assert_field(u.user, c->user);
    assert_field(u.password, c->password);
    assert_int_equal(u.db, c->db);
    assert_int_equal(u.tls, c->tls);
    rlock__uri_clear(&u);
    assert_null(u.host);
    assert_null(u.path);
    assert_null(u.user);
    assert_null(u.password);
}

/* PARSES(test name, text, host, port, path, user, password, db), and
 * PARSES_TLS for a rediss:// URI */
/* clang-format off */
#define PARSES(name, ...)                                                     \
    {"parses_" name, test_parses, NULL, NULL,                                 \
     (void *)&(uri_case){__VA_ARGS__, false}}
#define PARSES_TLS(name, ...)                                                 \
    {"parses_" name, test_parses, NULL, NULL,                                 \
     (void *)&(uri_case){__VA_ARGS__, true}}
/* clang-format on */

/* ------------------------------------------------------------------------ */
/* Sentinel URIs                                                            */
/* ------------------------------------------------------------------------ */

typedef struct sentinel_case {
    const char *text;
    const char *master;
    int n;                /* sentinels */
    const char *hosts[3]; /* the first n */
    int ports[3];
    const char *user;
    const char *password;
    int db;
    bool tls;
} sentinel_case;

static void test_parses_sentinel(void **state)
{
    const sentinel_case *c = *state;
    rlock__uri u;

    memset(&u, 0xa5, sizeof(u));
    assert_int_equal(rlock__uri_parse(c->text, &u), RLOCK_OK);
    assert_field(u.master, c->master);
    assert_int_equal(u.nsentinels, c->n);
    for (int i = 0; i < c->n; i++) {
        assert_field(u.sentinels[i].host, c->hosts[i]);
        assert_int_equal(u.sentinels[i].port, c->ports[i]);
    }
    /* the master's address is a sentinel's to tell */
    assert_null(u.host);
    assert_int_equal(u.port, 0);
    assert_null(u.path);
    assert_field(u.user, c->user);
    assert_field(u.password, c->password);
    assert_int_equal(u.db, c->db);
    assert_int_equal(u.tls, c->tls);
    rlock__uri_clear(&u);
    assert_null(u.master);
    assert_null(u.sentinels);
    assert_int_equal(u.nsentinels, 0);
}

/* clang-format off */
#define PARSES_SENTINEL(name, ...)                                            \
    {"parses_sentinel_" name, test_parses_sentinel, NULL, NULL,               \
     (void *)&(sentinel_case){__VA_ARGS__}}
/* clang-format on */

/* The most sentinels a URI may list parse; one more is refused. */
static void test_sentinel_count_limit(void **state)
{
    char text[1024] = "redis+sentinel://";
    rlock__uri u;

    (void)state;
    for (int i = 0; i < RLOCK__URI_SENTINELS_MAX; i++) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof(text) - n, "%ss%d:%d", i ? "," : "", i,
                 26379 + i);
    }
    size_t n = strlen(text);
    snprintf(text + n, sizeof(text) - n, "/m");
    assert_int_equal(rlock__uri_parse(text, &u), RLOCK_OK);
    assert_int_equal(u.nsentinels, RLOCK__URI_SENTINELS_MAX);
    assert_string_equal(u.sentinels[RLOCK__URI_SENTINELS_MAX - 1].host,
                        "s31");
    rlock__uri_clear(&u);

    char *slash = strrchr(text, '/');
    memmove(slash + 6, slash, strlen(slash) + 1);
    memcpy(slash, ",s99:1", 6);
    assert_int_equal(rlock__uri_parse(text, &u), RLOCK_EINVAL);
    assert_null(u.sentinels);
    assert_int_equal(u.nsentinels, 0);
}

/* ------------------------------------------------------------------------ */
/* Cluster URIs                                                             */
/* ------------------------------------------------------------------------ */

typedef struct cluster_case {
    const char *text;
    int n;                /* seeds */
    const char *hosts[3]; /* the first n */
    int ports[3];
    const char *user;
    const char *password;
    bool tls;
} cluster_case;

static void test_parses_cluster(void **state)
{
    const cluster_case *c = *state;
    rlock__uri u;

    memset(&u, 0xa5, sizeof(u));
    assert_int_equal(rlock__uri_parse(c->text, &u), RLOCK_OK);
    assert_int_equal(u.nseeds, c->n);
    for (int i = 0; i < c->n; i++) {
        assert_field(u.seeds[i].host, c->hosts[i]);
        assert_int_equal(u.seeds[i].port, c->ports[i]);
    }
    /* the node for each lock is the cluster's to tell */
    assert_null(u.host);
    assert_null(u.master);
    assert_null(u.sentinels);
    assert_field(u.user, c->user);
    assert_field(u.password, c->password);
    assert_int_equal(u.db, 0);
    assert_int_equal(u.tls, c->tls);
    rlock__uri_clear(&u);
    assert_null(u.seeds);
    assert_int_equal(u.nseeds, 0);
}

/* clang-format off */
#define PARSES_CLUSTER(name, ...)                                             \
    {"parses_cluster_" name, test_parses_cluster, NULL, NULL,                 \
     (void *)&(cluster_case){__VA_ARGS__}}
/* clang-format on */

/* The most seeds a URI may list parse; one more is refused. */
static void test_cluster_seed_limit(void **state)
{
    char text[1024] = "redis+cluster://";
    rlock__uri u;

    (void)state;
    for (int i = 0; i < RLOCK__URI_SEEDS_MAX; i++) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof(text) - n, "%sn%d:%d", i ? "," : "", i,
                 7000 + i);
    }
    assert_int_equal(rlock__uri_parse(text, &u), RLOCK_OK);
    assert_int_equal(u.nseeds, RLOCK__URI_SEEDS_MAX);
    rlock__uri_clear(&u);
    size_t n = strlen(text);
    snprintf(text + n, sizeof(text) - n, ",n99:1");
    assert_int_equal(rlock__uri_parse(text, &u), RLOCK_EINVAL);
    assert_null(u.seeds);
    assert_int_equal(u.nseeds, 0);
}

/* ------------------------------------------------------------------------ */
/* valkey spellings                                                         */
/* ------------------------------------------------------------------------ */

static void assert_same_nodes(const rlock__uri_node *a, int na,
                              const rlock__uri_node *b, int nb)
{
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++) {
        assert_field(a[i].host, b[i].host);
        assert_int_equal(a[i].port, b[i].port);
    }
}

/* state: {valkey spelling, redis spelling}; both parse to the same result */
static void test_valkey_same_as_redis(void **state)
{
    const char **pair = *state;
    rlock__uri v, r;

    memset(&v, 0xa5, sizeof(v));
    assert_int_equal(rlock__uri_parse(pair[0], &v), RLOCK_OK);
    assert_int_equal(rlock__uri_parse(pair[1], &r), RLOCK_OK);
    assert_field(v.host, r.host);
    assert_int_equal(v.port, r.port);
    assert_field(v.path, r.path);
    assert_field(v.user, r.user);
    assert_field(v.password, r.password);
    assert_int_equal(v.db, r.db);
    assert_int_equal(v.tls, r.tls);
    assert_field(v.master, r.master);
    assert_same_nodes(v.sentinels, v.nsentinels, r.sentinels, r.nsentinels);
    assert_same_nodes(v.seeds, v.nseeds, r.seeds, r.nseeds);
    rlock__uri_clear(&v);
    rlock__uri_clear(&r);
}

/* clang-format off */
#define VALKEY_SAME(name, valkey, redis)                                      \
    {"valkey_same_as_redis_" name, test_valkey_same_as_redis, NULL, NULL,     \
     (void *)(const char *[]){valkey, redis}}
/* clang-format on */

/* ------------------------------------------------------------------------ */
/* Refused URIs                                                             */
/* ------------------------------------------------------------------------ */

static void assert_rejected(const char *text)
{
    rlock__uri u;

    memset(&u, 0xa5, sizeof(u));
    assert_int_equal(rlock__uri_parse(text, &u), RLOCK_EINVAL);
    /* Nothing to free: every pointer NULL (and the rest zeroed). */
    assert_null(u.host);
    assert_null(u.path);
    assert_null(u.user);
    assert_null(u.password);
    assert_int_equal(u.port, 0);
    assert_int_equal(u.db, 0);
    assert_false(u.tls);
    assert_null(u.master);
    assert_null(u.sentinels);
    assert_int_equal(u.nsentinels, 0);
    assert_null(u.seeds);
    assert_int_equal(u.nseeds, 0);
}

static void test_rejects(void **state)
{
    assert_rejected(*state);
}

#define REJECTS(name, text)                                       \
    {                                                             \
        "rejects_" name, test_rejects, NULL, NULL, (void *)(text) \
    }

/* A NULL text is refused before out is touched: out keeps what the caller
 * put there (here nothing), so there is still nothing to free. */
static void test_rejects_null_text(void **state)
{
    rlock__uri u = {0};

    (void)state;
    assert_int_equal(rlock__uri_parse(NULL, &u), RLOCK_EINVAL);
    assert_null(u.host);
    assert_null(u.path);
    assert_null(u.user);
    assert_null(u.password);
}

static void test_rejects_null_out(void **state)
{
    (void)state;
    assert_int_equal(rlock__uri_parse("redis://localhost", NULL), RLOCK_EINVAL);
}

/* A rejected parse leaves out reusable: a later good parse fills it. */
static void test_out_reusable_after_rejection(void **state)
{
    rlock__uri u;

    (void)state;
    assert_int_equal(rlock__uri_parse("redis://u:pw@h:0", &u), RLOCK_EINVAL);
    assert_int_equal(rlock__uri_parse("redis://u:pw@h:7", &u), RLOCK_OK);
    assert_string_equal(u.host, "h");
    assert_int_equal(u.port, 7);
    assert_string_equal(u.user, "u");
    assert_string_equal(u.password, "pw");
    rlock__uri_clear(&u);
}

/* ------------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* text, host, port, path, user, password, db */
        PARSES("host_only_with_defaults", "redis://localhost", "localhost",
               6379, NULL, NULL, NULL, 0),
        PARSES("ipv4_port_and_db", "redis://127.0.0.1:6380/3", "127.0.0.1",
               6380, NULL, NULL, NULL, 3),
        PARSES("password_without_user", "redis://:pw@h", "h", 6379, NULL, NULL,
               "pw", 0),
        PARSES("user_password_port_db", "redis://user:pw@h:1/2", "h", 1, NULL,
               "user", "pw", 2),
        PARSES("percent_escaped_password", "redis://:p%40ss@h", "h", 6379, NULL,
               NULL, "p@ss", 0),
        PARSES("percent_escape_upper_and_lower_hex", "redis://%4a%4B:p%3a%3A@h",
               "h", 6379, NULL, "JK", "p::", 0),
        PARSES("percent_escaped_user", "redis://us%65r:pw@h", "h", 6379, NULL,
               "user", "pw", 0),
        PARSES("password_with_colon", "redis://u:a:b@h", "h", 6379, NULL, "u",
               "a:b", 0),
        PARSES("ipv6_with_port", "redis://[::1]:6380", "::1", 6380, NULL, NULL,
               NULL, 0),
        PARSES("ipv6_without_port", "redis://[::1]", "::1", 6379, NULL, NULL,
               NULL, 0),
        PARSES("ipv6_with_userinfo_and_db", "redis://:pw@[fe80::1]:7/4",
               "fe80::1", 7, NULL, NULL, "pw", 4),
        PARSES("highest_port", "redis://h:65535", "h", 65535, NULL, NULL, NULL,
               0),
        PARSES("highest_db", "redis://h/2147483647", "h", 6379, NULL, NULL,
               NULL, 2147483647),
        PARSES("hostname_with_dash_dot_underscore", "redis://my-host_1.ex",
               "my-host_1.ex", 6379, NULL, NULL, NULL, 0),
        PARSES("unix_socket", "unix:///tmp/r.sock", NULL, 0, "/tmp/r.sock",
               NULL, NULL, 0),
        PARSES("unix_socket_with_db", "unix:///tmp/r.sock?db=2", NULL, 0,
               "/tmp/r.sock", NULL, NULL, 2),
        PARSES("scheme_case_insensitively", "ReDiS://h:1/1", "h", 1, NULL, NULL,
               NULL, 1),
        PARSES("unix_scheme_case_insensitively", "UNIX:///s", NULL, 0, "/s",
               NULL, NULL, 0),
        PARSES_TLS("tls_host_only_with_defaults", "rediss://localhost",
               "localhost", 6379, NULL, NULL, NULL, 0),
        PARSES_TLS("tls_user_password_port_db", "rediss://u:pw@h:6380/2", "h",
               6380, NULL, "u", "pw", 2),
        PARSES_TLS("tls_ipv6_with_port", "rediss://[::1]:6380", "::1", 6380, NULL,
               NULL, NULL, 0),
        PARSES_TLS("tls_scheme_case_insensitively", "REDISS://h", "h", 6379, NULL,
               NULL, NULL, 0),

        /* text, master, n, hosts, ports, user, password, db, tls */
        PARSES_SENTINEL("one_with_default_port", "redis+sentinel://s1/mymaster",
                        "mymaster", 1, {"s1"}, {26379}, NULL, NULL, 0, false),
        PARSES_SENTINEL("three_in_order", "redis+sentinel://a:1,b,c:3/m",
                        "m", 3, {"a", "b", "c"}, {1, 26379, 3}, NULL, NULL, 0,
                        false),
        PARSES_SENTINEL("userinfo_is_the_masters_and_db",
                        "redis+sentinel://app:pw@10.0.0.1:5000/m/7", "m", 1,
                        {"10.0.0.1"}, {5000}, "app", "pw", 7, false),
        PARSES_SENTINEL("password_only", "redis+sentinel://:pw@h/m", "m", 1,
                        {"h"}, {26379}, NULL, "pw", 0, false),
        PARSES_SENTINEL("ipv6_sentinels", "redis+sentinel://[::1]:5,[fe80::2]/m",
                        "m", 2, {"::1", "fe80::2"}, {5, 26379}, NULL, NULL, 0,
                        false),
        PARSES_SENTINEL("escaped_master_name",
                        "redis+sentinel://h/my%20master%2F1", "my master/1", 1,
                        {"h"}, {26379}, NULL, NULL, 0, false),
        PARSES_SENTINEL("tls", "rediss+sentinel://h:7/m/1", "m", 1, {"h"},
                        {7}, NULL, NULL, 1, true),
        PARSES_SENTINEL("scheme_case_insensitively", "Redis+Sentinel://h/m",
                        "m", 1, {"h"}, {26379}, NULL, NULL, 0, false),
        cmocka_unit_test(test_sentinel_count_limit),
        /* text, n, hosts, ports, user, password, tls */
        PARSES_CLUSTER("one_with_default_port", "redis+cluster://n1", 1,
                       {"n1"}, {6379}, NULL, NULL, false),
        PARSES_CLUSTER("three_in_order", "redis+cluster://a:7000,b,c:7002",
                       3, {"a", "b", "c"}, {7000, 6379, 7002}, NULL, NULL,
                       false),
        PARSES_CLUSTER("trailing_slash", "redis+cluster://a:1/", 1, {"a"},
                       {1}, NULL, NULL, false),
        PARSES_CLUSTER("userinfo_is_every_node_s", "redis+cluster://u:pw@a,b",
                       2, {"a", "b"}, {6379, 6379}, "u", "pw", false),
        PARSES_CLUSTER("ipv6_seeds", "redis+cluster://[::1]:7000,[fe80::2]", 2,
                       {"::1", "fe80::2"}, {7000, 6379}, NULL, NULL, false),
        PARSES_CLUSTER("tls", "rediss+cluster://:pw@h:7", 1, {"h"}, {7}, NULL,
                       "pw", true),
        PARSES_CLUSTER("scheme_case_insensitively", "Redis+Cluster://h", 1,
                       {"h"}, {6379}, NULL, NULL, false),
        cmocka_unit_test(test_cluster_seed_limit),

        PARSES("valkey_scheme", "valkey://u:pw@h:6380/2", "h", 6380, NULL,
               "u", "pw", 2),
        PARSES_TLS("valkey_tls_scheme", "valkeys://h", "h", 6379, NULL, NULL,
                   NULL, 0),
        PARSES_TLS("valkey_tls_scheme_case_insensitively", "VALKEYS://h:1",
                   "h", 1, NULL, NULL, NULL, 0),
        PARSES_SENTINEL("valkey_tls", "valkeys+sentinel://h:7/m/1", "m", 1,
                        {"h"}, {7}, NULL, NULL, 1, true),
        PARSES_CLUSTER("valkey_tls", "valkeys+cluster://:pw@h:7", 1, {"h"},
                       {7}, NULL, "pw", true),
        VALKEY_SAME("plain", "valkey://u:pw@[::1]:7/3",
                    "redis://u:pw@[::1]:7/3"),
        VALKEY_SAME("tls", "valkeys://:pw@h/1", "rediss://:pw@h/1"),
        VALKEY_SAME("sentinel", "valkey+sentinel://u:pw@a:1,b/my%20m/2",
                    "redis+sentinel://u:pw@a:1,b/my%20m/2"),
        VALKEY_SAME("sentinel_tls", "valkeys+sentinel://a,b:2/m",
                    "rediss+sentinel://a,b:2/m"),
        VALKEY_SAME("cluster", "valkey+cluster://u:pw@a:7000,b/",
                    "redis+cluster://u:pw@a:7000,b/"),
        VALKEY_SAME("cluster_tls", "valkeys+cluster://a,[::1]:7001",
                    "rediss+cluster://a,[::1]:7001"),
        VALKEY_SAME("mixed_case", "VaLkEyS+ClUsTeR://a", "rediss+cluster://a"),

        cmocka_unit_test(test_rejects_null_text),
        cmocka_unit_test(test_rejects_null_out),
        REJECTS("empty", ""),
        REJECTS("other_scheme", "http://h"),
        REJECTS("scheme_without_slashes", "redis:h"),
        REJECTS("missing_host", "redis://"),
        REJECTS("missing_host_after_userinfo", "redis://:pw@"),
        REJECTS("port_zero", "redis://h:0"),
        REJECTS("port_above_65535", "redis://h:65536"),
        REJECTS("port_not_a_number", "redis://h:x"),
        REJECTS("empty_port", "redis://h:"),
        REJECTS("signed_port", "redis://h:+1"),
        REJECTS("huge_port", "redis://h:99999999999"),
        REJECTS("user_without_password", "redis://user@h"),
        REJECTS("empty_password", "redis://:@h"),
        REJECTS("db_not_a_number", "redis://h/x"),
        REJECTS("negative_db", "redis://h/-1"),
        REJECTS("db_above_int32", "redis://h/2147483648"),
        REJECTS("db_with_trailing_path", "redis://h/1/2"),
        REJECTS("query_on_redis_uri", "redis://h?db=1"),
        REJECTS("tls_without_host", "rediss://"),
        REJECTS("tls_unix_socket_path", "rediss:///tmp/r.sock"),
        REJECTS("tls_file_query", "rediss://h?ca=/etc/ca.pem"),
        REJECTS("tls_bad_port", "rediss://h:0"),
        REJECTS("scheme_with_two_s", "redisss://h"),
        REJECTS("valkey_scheme_with_two_s", "valkeyss://h"),
        REJECTS("valkey_sentinel_with_two_s", "valkeyss+sentinel://h/m"),
        REJECTS("valkey_misspelt", "valky://h"),
        REJECTS("valkey_without_slashes", "valkey:h"),
        REJECTS("valkey_both_families", "valkeyredis://h"),
        REJECTS("valkey_unknown_mode", "valkey+tls://h"),
        REJECTS("valkey_plural_mode", "valkey+sentinels://h/m"),
        REJECTS("valkey_uds", "valkey+uds:///tmp/r.sock"),
        REJECTS("valkey_tls_without_host", "valkeys://"),
        REJECTS("valkey_sentinel_without_master", "valkey+sentinel://h"),
        REJECTS("valkey_cluster_with_a_database", "valkeys+cluster://h/1"),
        REJECTS("unix_without_path", "unix://"),
        REJECTS("unix_root_only", "unix:///"),
        REJECTS("unix_relative_path", "unix://relative"),
        REJECTS("unix_empty_db", "unix:///tmp/r.sock?db="),
        REJECTS("unix_db_not_a_number", "unix:///tmp/r.sock?db=x"),
        REJECTS("unix_unknown_query", "unix:///tmp/r.sock?x=1"),
        REJECTS("space_in_host", "redis://h h"),
        REJECTS("leading_space", " redis://h"),
        REJECTS("control_character", "redis://h\t"),
        REJECTS("non_ascii_byte", "redis://h\xc3\xa9"),
        REJECTS("unclosed_ipv6_bracket", "redis://[::1"),
        REJECTS("empty_ipv6_brackets", "redis://[]"),
        REJECTS("junk_after_ipv6_bracket", "redis://[::1]x"),
        REJECTS("junk_between_ipv6_bracket_and_port", "redis://[::1]x6380"),
        REJECTS("truncated_escape_in_host", "redis://p%4"),
        REJECTS("truncated_escape_in_password", "redis://:p%4@h"),
        REJECTS("non_hex_escape_in_password", "redis://:p%zz@h"),
        REJECTS("nul_escape_without_colon", "redis://p%00@h"),
        REJECTS("nul_escape_in_password", "redis://:p%00@h"),
        REJECTS("nul_escape_in_user", "redis://u%00:pw@h"),
        REJECTS("nul_escape_in_unix_path", "unix:///tmp/a%00b"),
        /* These fail after user/password/host were allocated: the parser
         * must free them (LSan checks). */
        REJECTS("bad_password_after_user", "redis://u:p%4@h"),
        REJECTS("bad_port_after_userinfo", "redis://u:pw@h:0"),
        REJECTS("bad_db_after_host", "redis://u:pw@h:1/x"),
        REJECTS("sentinel_without_master", "redis+sentinel://h"),
        REJECTS("sentinel_empty_master", "redis+sentinel://h/"),
        REJECTS("sentinel_master_empty_before_db", "redis+sentinel://h//1"),
        REJECTS("sentinel_without_hosts", "redis+sentinel:///m"),
        REJECTS("sentinel_userinfo_without_hosts", "redis+sentinel://:pw@/m"),
        REJECTS("sentinel_empty_host_in_list", "redis+sentinel://a,,b/m"),
        REJECTS("sentinel_trailing_comma", "redis+sentinel://a,/m"),
        REJECTS("sentinel_leading_comma", "redis+sentinel://,a/m"),
        REJECTS("sentinel_bad_port_in_list", "redis+sentinel://a:1,b:0/m"),
        REJECTS("sentinel_db_not_a_number", "redis+sentinel://h/m/x"),
        REJECTS("sentinel_db_with_trailing_path", "redis+sentinel://h/m/1/2"),
        REJECTS("sentinel_query", "redis+sentinel://h/m?db=1"),
        REJECTS("sentinel_fragment", "redis+sentinel://h/m#x"),
        REJECTS("sentinel_nul_escape_in_master", "redis+sentinel://h/m%00"),
        REJECTS("sentinel_bad_escape_in_master", "redis+sentinel://h/m%4"),
        REJECTS("sentinel_user_without_password", "redis+sentinel://u@h/m"),
        REJECTS("sentinel_unix_socket", "redis+sentinel:///tmp/s.sock"),
        REJECTS("cluster_with_a_path", "redis+cluster://h/m"),
        REJECTS("cluster_with_a_database", "redis+cluster://h/1"),
        REJECTS("cluster_with_database_zero", "redis+cluster://h/0"),
        REJECTS("cluster_without_hosts", "redis+cluster://"),
        REJECTS("cluster_empty_host_in_list", "redis+cluster://a,,b"),
        REJECTS("cluster_trailing_comma", "redis+cluster://a,"),
        REJECTS("cluster_bad_port_in_list", "redis+cluster://a:1,b:0"),
        REJECTS("cluster_user_without_password", "redis+cluster://u@h"),
        REJECTS("cluster_unix_socket", "redis+cluster:///tmp/s.sock"),
        REJECTS("cluster_bad_second_host_after_first",
                "redis+cluster://u:pw@a,b!"),
        /* after the sentinels and the userinfo were allocated */
        REJECTS("sentinel_bad_db_after_hosts",
                "redis+sentinel://u:pw@a,b,c/m/-1"),
        REJECTS("sentinel_bad_second_host_after_first",
                "redis+sentinel://a,b!/m"),
        cmocka_unit_test(test_out_reusable_after_rejection),
    };

    return cmocka_run_group_tests_name("uri", tests, NULL, NULL);
}
