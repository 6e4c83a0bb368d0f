/*
 * conformance_support.c: the Redis readers of the conformance suites (see
 * the header).
 *
 * Every reader has a connection of its own (the PSUBSCRIBE and MONITOR
 * connections can run nothing else), and each closes its log with a
 * sentinel sent on the suite's rt_redis, so that "up to now" needs no sleep.
 */
#include "conformance_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compat_testing.h"

#define SENTINEL_CHANNEL "conformance:sentinel"

/* ------------------------------------------------------------------------ */
/* Suite fixture                                                            */
/* ------------------------------------------------------------------------ */

/* cmocka's group setup gets no state in, so conf_run_suite() hands the
 * fixture over here. */
static conf_fixture *suite;

static int group_setup(void **state)
{
    *state = suite;
    return rt_redis_start(&suite->redis) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    conf_fixture *f = *state;

    rt_redis_stop(&f->redis);
    return 0;
}

int conf_run_suite(const struct CMUnitTest *tests, size_t n, conf_fixture *f)
{
    int rc;

    suite = f;
    rc =
        _cmocka_run_group_tests("tests", tests, n, group_setup, group_teardown);
    suite = NULL;
    return rc;
}

int conf_setup(void **state)
{
    conf_fixture *f = *state;

    freeReplyObject(rt_cmd(&f->redis, "FLUSHALL"));
    assert_int_equal(rt_cmd_int(&f->redis, "DBSIZE"), 0);
    f->c = ct_connect(&f->redis);
    f->other = ct_connect(&f->redis);
    conf_msglog_start(&f->log, &f->redis);
    return 0;
}

int conf_teardown(void **state)
{
    conf_fixture *f = *state;

    conf_msglog_stop(&f->log);
    rlock_client_free(f->c);
    rlock_client_free(f->other);
    f->c = f->other = NULL;
    return 0;
}

redisContext *conf_connect(rt_redis *r)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);

    assert_non_null(c);
    assert_int_equal(c->err, 0);
    assert_int_equal(redisSetTimeout(c, tv), REDIS_OK);
    return c;
}

redisReply *conf_eval(rt_redis *r, const char *cmd, const char *script,
                      int numkeys, int argc, const char **argv)
{
    redisContext *c = conf_connect(r);
    const char *args[24];
    size_t lens[24];
    char nk[8];
    redisReply *rep;

    assert_true(argc + 3 <= 24);
    snprintf(nk, sizeof(nk), "%d", numkeys);
    args[0] = cmd;
    args[1] = script;
    args[2] = nk;
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    for (int i = 0; i < argc + 3; i++)
        lens[i] = strlen(args[i]);
    rep = redisCommandArgv(c, argc + 3, args, lens);
    assert_non_null(rep);
    redisFree(c);
    return rep;
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

void conf_msglog_start(conf_msglog *l, rt_redis *r)
{
    redisReply *rep;

    memset(l, 0, sizeof(*l));
    l->redis = r;
    l->c = conf_connect(r);
    rep = redisCommand(l->c, "PSUBSCRIBE *");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    freeReplyObject(rep);
}

static void msglog_clear(conf_msglog *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->msgs[i].channel);
        free(l->msgs[i].payload);
    }
    l->n = 0;
}

void conf_msglog_stop(conf_msglog *l)
{
    msglog_clear(l);
    if (l->c != NULL)
        redisFree(l->c);
    l->c = NULL;
}

void conf_msglog_collect(conf_msglog *l)
{
    char token[32];

    msglog_clear(l);
    snprintf(token, sizeof(token), "%d", ++l->seq);
    assert_int_equal(
        rt_cmd_int(l->redis, "PUBLISH %s %s", SENTINEL_CHANNEL, token), 1);
    for (;;) {
        redisReply *rep = NULL;

        assert_int_equal(redisGetReply(l->c, (void **)&rep), REDIS_OK);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        assert_int_equal(rep->elements, 4);
        assert_string_equal(rep->element[0]->str, "pmessage");
        if (strcmp(rep->element[2]->str, SENTINEL_CHANNEL) == 0 &&
            strcmp(rep->element[3]->str, token) == 0) {
            freeReplyObject(rep);
            return;
        }
        assert_true(l->n < CONF_MAX_MESSAGES);
        l->msgs[l->n].channel = strdup(rep->element[2]->str);
        l->msgs[l->n].payload = strdup(rep->element[3]->str);
        l->n++;
        freeReplyObject(rep);
    }
}

void conf_expect_nothing_published(conf_msglog *l)
{
    conf_msglog_collect(l);
    for (int i = 0; i < l->n; i++)
        print_error("unexpected message %s: %s\n", l->msgs[i].channel,
                    l->msgs[i].payload);
    assert_int_equal(l->n, 0);
}

void conf_expect_published(conf_msglog *l, const char *channel,
                           const char *payload)
{
    conf_msglog_collect(l);
    if (l->n != 1)
        for (int i = 0; i < l->n; i++)
            print_error("published %s: %s\n", l->msgs[i].channel,
                        l->msgs[i].payload);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->msgs[0].channel, channel);
    assert_string_equal(l->msgs[0].payload, payload);
}

/* ------------------------------------------------------------------------ */
/* MONITOR                                                                  */
/* ------------------------------------------------------------------------ */

/* Parses the quoted arguments of one MONITOR line into cmd. Returns 0, or
 * -1 if the line is not a command line. An argument longer than the buffer
 * is cut short but read to its end, so the arguments after it still count
 * (a script body comes before its keys). */
static int parse_monitor_line(const char *line, conf_mon_cmd *cmd)
{
    const char *p = strchr(line, '[');
    const char *end = p != NULL ? strchr(p, ']') : NULL;

    memset(cmd, 0, sizeof(*cmd));
    if (p == NULL || end == NULL)
        return -1;
    /* "[<db> lua]" for a command a script ran, "[<db> <addr>]" otherwise */
    cmd->lua = end - p >= 4 && strncmp(end - 4, " lua", 4) == 0;
    p = end + 1;
    while (*p == ' ')
        p++;
    while (*p == '"' && cmd->argc < 16) {
        char buf[1024];
        size_t n = 0;

        p++;
        while (*p != '\0' && *p != '"') {
            char ch;

            if (*p == '\\' && p[1] != '\0') {
                p++;
                if (*p == 'x' && p[1] != '\0' && p[2] != '\0') {
                    char hex[3] = {p[1], p[2], 0};

                    ch = (char)strtol(hex, NULL, 16);
                    p += 3;
                } else {
                    ch = *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p;
                    p++;
                }
            } else {
                ch = *p++;
            }
            if (n < sizeof(buf) - 1)
                buf[n++] = ch;
        }
        buf[n] = '\0';
        cmd->argv[cmd->argc++] = strdup(buf);
        if (*p == '"')
            p++;
        while (*p == ' ')
            p++;
    }
    return cmd->argc > 0 ? 0 : -1;
}

void conf_monitor_start(conf_monitor *m, rt_redis *r)
{
    redisReply *rep;

    memset(m, 0, sizeof(*m));
    m->redis = r;
    /* on the heap: CONF_MAX_MONITOR commands are too many for a stack */
    m->cmds = calloc(CONF_MAX_MONITOR, sizeof(*m->cmds));
    assert_non_null(m->cmds);
    m->c = conf_connect(r);
    rep = redisCommand(m->c, "MONITOR");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
}

void conf_monitor_finish(conf_monitor *m)
{
    static int seq;
    char token[64];

    snprintf(token, sizeof(token), "conformance-monitor-%d", ++seq);
    freeReplyObject(rt_cmd(m->redis, "ECHO %s", token));
    for (;;) {
        redisReply *rep = NULL;
        conf_mon_cmd cmd;

        assert_int_equal(redisGetReply(m->c, (void **)&rep), REDIS_OK);
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STATUS);
        if (parse_monitor_line(rep->str, &cmd) == 0) {
            if (cmd.argc == 2 && strcasecmp(cmd.argv[0], "echo") == 0 &&
                strcmp(cmd.argv[1], token) == 0) {
                for (int i = 0; i < cmd.argc; i++)
                    free(cmd.argv[i]);
                freeReplyObject(rep);
                break;
            }
            assert_true(m->n < CONF_MAX_MONITOR);
            m->cmds[m->n++] = cmd;
        }
        freeReplyObject(rep);
    }
    redisFree(m->c);
    m->c = NULL;
}

void conf_monitor_free(conf_monitor *m)
{
    for (int i = 0; i < m->n; i++)
        for (int j = 0; j < m->cmds[i].argc; j++)
            free(m->cmds[i].argv[j]);
    free(m->cmds);
    if (m->c != NULL)
        redisFree(m->c);
    memset(m, 0, sizeof(*m));
}

/* Returns 1 if s is prefix ":" followed by exactly 32 lowercase hex digits
 * (a Redisson request id). */
static int is_latch_key(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);

    if (strncmp(s, prefix, n) != 0 || s[n] != ':' || strlen(s + n + 1) != 32)
        return 0;
    return strspn(s + n + 1, "0123456789abcdef") == 32;
}

conf_latch_use conf_latch_usage(const conf_monitor *m, const char *prefix)
{
    size_t plen = strlen(prefix);
    conf_latch_use u;

    memset(&u, 0, sizeof(u));
    for (int i = 0; i < m->n; i++) {
        const conf_mon_cmd *c = &m->cmds[i];

        /* the ":" keeps a name that extends another (N and N2) apart */
        if (c->argc < 2 || strncmp(c->argv[1], prefix, plen) != 0 ||
            c->argv[1][plen] != ':')
            continue;
        if (c->lua && strcasecmp(c->argv[0], "set") == 0) {
            u.sets++;
            snprintf(u.key, sizeof(u.key), "%s", c->argv[1]);
            snprintf(u.value, sizeof(u.value), "%s",
                     c->argc > 2 ? c->argv[2] : "");
            if (c->argc == 5 && strcasecmp(c->argv[3], "px") == 0)
                u.px = atoll(c->argv[4]);
            else
                u.px = -1;
        } else if (!c->lua && strcasecmp(c->argv[0], "del") == 0 &&
                   c->argc == 2 && strcmp(c->argv[1], u.key) == 0) {
            u.deleted++;
        } else if (!(c->lua && strcasecmp(c->argv[0], "get") == 0)) {
            u.other_latch_cmds++;
        }
    }
    return u;
}

void conf_expect_latch(const conf_monitor *m, const char *prefix,
                       const char *value)
{
    conf_latch_use u = conf_latch_usage(m, prefix);

    assert_int_equal(u.sets, 1);
    assert_true(is_latch_key(u.key, prefix));
    assert_string_equal(u.value, value);
    assert_in_range(u.px, CONF_LATCH_MIN_MS, CONF_LATCH_MAX_MS);
    assert_int_equal(u.deleted, 1);
    assert_int_equal(u.other_latch_cmds, 0);
}

void conf_expect_no_latch(const conf_monitor *m, const char *prefix)
{
    conf_latch_use u = conf_latch_usage(m, prefix);

    assert_int_equal(u.sets, 0);
    assert_int_equal(u.other_latch_cmds, 0);
}

void conf_expect_scripts_only_read(const conf_monitor *m)
{
    /* every write command a lock kind's script may run */
    static const char *const writes[] = {
        "hset",     "hincrby", "pexpire", "del",  "set",  "publish",
        "spublish", "hdel",    "expire",  "zadd", "zrem", "zincrby",
        "rpush",    "lpush",   "lpop",    "lrem", "incr", "incrby"};

    for (int i = 0; i < m->n; i++) {
        if (!m->cmds[i].lua)
            continue;
        for (size_t w = 0; w < sizeof(writes) / sizeof(writes[0]); w++)
            if (strcasecmp(m->cmds[i].argv[0], writes[w]) == 0)
                fail_msg("a script ran %s %s", m->cmds[i].argv[0],
                         m->cmds[i].argc > 1 ? m->cmds[i].argv[1] : "");
    }
}

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void conf_expect_keys(rt_redis *r, const char *const *keys)
{
    int64_t deadline = rt_now_ms() + 1000;
    const char *want[32];
    size_t nwant = 0;

    while (keys[nwant] != NULL) {
        assert_true(nwant < 32);
        want[nwant] = keys[nwant];
        nwant++;
    }
    qsort(want, nwant, sizeof(want[0]), cmp_str);
    for (;;) {
        redisReply *rep = rt_cmd(r, "KEYS *");
        const char *got[32];
        int same, latch_pending = 0;

        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        assert_true(rep->elements < 32);
        for (size_t i = 0; i < rep->elements; i++) {
            got[i] = rep->element[i]->str;
            if (strncmp(got[i], "redisson_unlock_latch:", 22) == 0)
                latch_pending = 1;
        }
        qsort(got, rep->elements, sizeof(got[0]), cmp_str);
        same = rep->elements == nwant;
        for (size_t i = 0; same && i < nwant; i++)
            same = strcmp(got[i], want[i]) == 0;
        if (!same && (!latch_pending || rt_now_ms() >= deadline)) {
            for (size_t i = 0; i < rep->elements; i++)
                print_error("key present: %s\n", got[i]);
            for (size_t i = 0; i < nwant; i++)
                print_error("key expected: %s\n", want[i]);
        }
        freeReplyObject(rep);
        if (same)
            return;
        assert_true(latch_pending && rt_now_ms() < deadline);
        rt_sleep_ms(10);
    }
}

void conf_expect_type(rt_redis *r, const char *key, const char *type)
{
    char *got = rt_cmd_str(r, "TYPE %s", key);

    assert_non_null(got);
    if (strcmp(got, type) != 0)
        fail_msg("TYPE %s is %s, expected %s", key, got, type);
    free(got);
}

void conf_expect_hash_exact(rt_redis *r, const char *key, const char *const *kv)
{
    redisReply *rep;
    size_t npairs = 0;
    int ok;

    conf_expect_type(r, key, "hash");
    while (kv[2 * npairs] != NULL)
        npairs++;
    rep = rt_cmd(r, "HGETALL %s", key);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    ok = rep->elements == 2 * npairs;
    for (size_t i = 0; ok && i < npairs; i++) {
        int found = 0;

        for (size_t j = 0; j + 1 < rep->elements; j += 2)
            if (strcmp(rep->element[j]->str, kv[2 * i]) == 0 &&
                strcmp(rep->element[j + 1]->str, kv[2 * i + 1]) == 0)
                found = 1;
        ok = found;
    }
    if (!ok) {
        for (size_t j = 0; j + 1 < rep->elements; j += 2)
            print_error("%s has %s = %s\n", key, rep->element[j]->str,
                        rep->element[j + 1]->str);
        for (size_t i = 0; i < npairs; i++)
            print_error("%s expected %s = %s\n", key, kv[2 * i], kv[2 * i + 1]);
    }
    freeReplyObject(rep);
    assert_true(ok);
}

void conf_expect_hash(rt_redis *r, const char *key, const char *field,
                      const char *value)
{
    conf_expect_hash_exact(r, key, CONF_FIELDS(field, value));
}

void conf_expect_pttl(rt_redis *r, const char *key, long long lo, long long hi)
{
    long long pttl = rt_cmd_int(r, "PTTL %s", key);

    if (pttl < lo || pttl > hi)
        fail_msg("PTTL %s is %lld, expected %lld..%lld", key, pttl, lo, hi);
}

void conf_expect_owner_shape(const char *field)
{
    regex_t re;

    assert_int_equal(
        regcomp(&re,
                "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                "[0-9a-f]{12}:[1-9][0-9]*$",
                REG_EXTENDED | REG_NOSUB),
        0);
    if (regexec(&re, field, 0, NULL, 0) != 0)
        fail_msg("owner field \"%s\" is not <uuid>:<thread id>", field);
    regfree(&re);
}

void conf_expect_channels(rt_redis *r, const char *const *channels,
                          int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    for (;;) {
        redisReply *rep = rt_cmd(r, "PUBSUB CHANNELS");
        size_t want = 0, got = 0, matched = 0;

        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        while (channels[want] != NULL)
            want++;
        for (size_t i = 0; i < rep->elements; i++) {
            const char *ch = rep->element[i]->str;

            got++;
            for (size_t j = 0; j < want; j++)
                if (strcmp(ch, channels[j]) == 0)
                    matched++;
        }
        if (got == want && matched == want) {
            freeReplyObject(rep);
            return;
        }
        if (rt_now_ms() >= deadline) {
            for (size_t i = 0; i < rep->elements; i++)
                print_error("subscribed: %s\n", rep->element[i]->str);
            for (size_t j = 0; j < want; j++)
                print_error("expected: %s\n", channels[j]);
            freeReplyObject(rep);
            fail_msg("channels with subscribers are not as expected");
        }
        freeReplyObject(rep);
        rt_sleep_ms(10);
    }
}
