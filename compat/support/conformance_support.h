/*
 * conformance_support.h: how the conformance suites (compat/conformance/)
 * read Redis: the whole keyspace, types, hashes and PTTLs; every message
 * published on any channel; the commands scripts and clients ran (MONITOR),
 * for the unlock latch that rlock deletes right after the reply.
 *
 * "Nothing else was published" is checked without sleeping: the message log
 * publishes a sentinel and reads up to it, since Redis delivers in order.
 * The MONITOR log is closed the same way, with a sentinel ECHO.
 *
 * Like compat_testing.h, these helpers fail the running cmocka test through
 * its asserts; call them from the test's thread.
 */
#ifndef RLOCK_CONFORMANCE_SUPPORT_H
#define RLOCK_CONFORMANCE_SUPPORT_H

#include <stddef.h>

#include "harness.h"
#include "rlock.h"

#define CONF_LATCH_MIN_MS 16000 /* Redisson 3.48+/4.x latch PX range */
#define CONF_LATCH_MAX_MS 20000
#define CONF_MAX_MESSAGES 64   /* messages between two collects */
#define CONF_MAX_MONITOR  4096 /* commands in one MONITOR log */

/* NULL-terminated string lists, as the conf_expect_* calls take them. */
#define CONF_KEYS(...)   ((const char *const[]){__VA_ARGS__, NULL})
#define CONF_FIELDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CONF_NO_KEYS     ((const char *const[]){NULL})

/* ------------------------------------------------------------------------ */
/* Suite fixture                                                            */
/* ------------------------------------------------------------------------ */

typedef struct conf_msg {
    char *channel;
    char *payload;
} conf_msg;

/* Every message published on any channel (PSUBSCRIBE * on a connection of
 * its own) since the last conf_msglog_collect(). */
typedef struct conf_msglog {
    rt_redis *redis; /* borrowed: where the sentinel is published */
    redisContext *c; /* the subscribed connection */
    int seq;         /* the last sentinel's number */
    conf_msg msgs[CONF_MAX_MESSAGES];
    int n;
} conf_msglog;

/* What a suite's tests share: one redis-server for the whole run, and for
 * each test an empty keyspace, two fresh clients and a fresh message log. */
typedef struct conf_fixture {
    rt_redis redis;
    rlock_client *c;     /* the rlock client under test */
    rlock_client *other; /* another rlock client: another owner */
    conf_msglog log;
} conf_fixture;

struct CMUnitTest;

/* Runs tests[0..n-1] as cmocka's group "tests" with f as the group state:
 * f->redis is started before the first test and stopped after the last.
 * Returns cmocka's result. Tests take conf_setup() and conf_teardown(). */
int conf_run_suite(const struct CMUnitTest *tests, size_t n, conf_fixture *f);

/* cmocka per-test setup and teardown; *state is the conf_fixture. Setup
 * flushes the keyspace and makes the clients and the message log, which
 * teardown frees. */
int conf_setup(void **state);
int conf_teardown(void **state);

/* Connects a plain hiredis context to r with a 5 s timeout. Ownership: the
 * caller frees it with redisFree(). */
redisContext *conf_connect(rt_redis *r);

/* Sends cmd ("EVAL" with Lua text as script, or "EVALSHA" with a SHA-1) to
 * r, as a Redisson client runs a script: script, numkeys, then the keys and
 * arguments argv[0..argc-1] (argc <= 21). Returns the reply, whatever its
 * type. Ownership: the caller frees it with freeReplyObject(). */
redisReply *conf_eval(rt_redis *r, const char *cmd, const char *script,
                      int numkeys, int argc, const char **argv);

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* Subscribes l to every channel of r. */
void conf_msglog_start(conf_msglog *l, rt_redis *r);

/* Frees l's messages and closes its connection. */
void conf_msglog_stop(conf_msglog *l);

/* Replaces l's contents with every message published since the last call
 * (or the start), up to a sentinel this call publishes. */
void conf_msglog_collect(conf_msglog *l);

/* Asserts that nothing was published since the last check. */
void conf_expect_nothing_published(conf_msglog *l);

/* Asserts that exactly one message was published since the last check:
 * payload on channel. */
void conf_expect_published(conf_msglog *l, const char *channel,
                           const char *payload);

/* ------------------------------------------------------------------------ */
/* MONITOR: the commands scripts and clients ran                            */
/* ------------------------------------------------------------------------ */

typedef struct conf_mon_cmd {
    int lua; /* run from a script */
    int argc;
    char *argv[16]; /* an argument is cut at 1023 bytes (script bodies) */
} conf_mon_cmd;

typedef struct conf_monitor {
    rt_redis *redis; /* borrowed: where the closing ECHO is sent */
    redisContext *c;
    conf_mon_cmd *cmds; /* CONF_MAX_MONITOR of them */
    int n;
} conf_monitor;

/* Starts logging every command r runs. */
void conf_monitor_start(conf_monitor *m, rt_redis *r);

/* Reads every command logged since conf_monitor_start(), up to a sentinel
 * ECHO this call sends, then stops monitoring; m->cmds[0..n-1] stay for
 * reading until conf_monitor_free(). */
void conf_monitor_finish(conf_monitor *m);

void conf_monitor_free(conf_monitor *m);

/* The latch writes and deletes one unlock produced. */
typedef struct conf_latch_use {
    int sets;             /* SETs of a latch key from a script */
    char key[512];        /* the (last) latch key set */
    char value[8];        /* its value */
    long long px;         /* its PX */
    int deleted;          /* DELs of that key from a client */
    int other_latch_cmds; /* anything else touching a latch key */
} conf_latch_use;

/* Scans m for what happened to latch keys starting with prefix ":". */
conf_latch_use conf_latch_usage(const conf_monitor *m, const char *prefix);

/* Asserts that one unlock wrote one latch under prefix, holding value with
 * a PX in Redisson 4's range, and deleted it afterwards. */
void conf_expect_latch(const conf_monitor *m, const char *prefix,
                       const char *value);

/* Asserts that no latch key under prefix was written. */
void conf_expect_no_latch(const conf_monitor *m, const char *prefix);

/* Asserts that the scripts in m only read: no command that writes ran from
 * Lua. */
void conf_expect_scripts_only_read(const conf_monitor *m);

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

/* Asserts that the keyspace of r is exactly the NULL-terminated keys. A
 * latch key is deleted by a command sent after the unlock reply, so
 * unexpected latch keys get up to a second to go. */
void conf_expect_keys(rt_redis *r, const char *const *keys);

/* Asserts TYPE key. */
void conf_expect_type(rt_redis *r, const char *key, const char *type);

/* Asserts that key is a hash holding exactly the field/value pairs kv
 * (NULL-terminated), in any order. */
void conf_expect_hash_exact(rt_redis *r, const char *key,
                            const char *const *kv);

/* Asserts that key is a hash with exactly one field, field = value. */
void conf_expect_hash(rt_redis *r, const char *key, const char *field,
                      const char *value);

/* Asserts lo <= PTTL key <= hi. */
void conf_expect_pttl(rt_redis *r, const char *key, long long lo, long long hi);

/* Asserts that field is "<uuid v4, lowercase>:<positive decimal>", as
 * Redisson's UUID.randomUUID() and Thread.getId() make it. */
void conf_expect_owner_shape(const char *field);

/* Asserts that the channels with subscribers are exactly the
 * NULL-terminated list (waiting up to timeout_ms for it to become so):
 * rlock subscribes to no channel a Redisson client would not. */
void conf_expect_channels(rt_redis *r, const char *const *channels,
                          int timeout_ms);

#endif /* RLOCK_CONFORMANCE_SUPPORT_H */
