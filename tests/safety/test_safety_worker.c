/*
 * test_safety_worker.c: safety_worker, run as the harness runs it, on real
 * servers with no fault.
 *
 * Without faults every operation must succeed, so a run's history must be
 * well formed (every line has the fields the checker reads; each actor's
 * invoke is followed by its completion, with the same id, before its next
 * invoke), hold no fail, info or lost line, and agree with the store: each
 * counter equals the acknowledged writes on its lock, whose values run
 * 1, 2, ... without a repeat. The fencing store is checked on its own:
 * an access with an older token than one seen is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "worker_testing.h"

#ifndef SAFETY_WORKER_PATH
#define SAFETY_WORKER_PATH "safety_worker"
#endif

#define NODES 5   /* Redlock's servers; node 0 serves the other kinds */
#define THREADS 3 /* actors per run */
#define OPS 12    /* acquires per actor */

static rt_redis store;
static rt_redis nodes[NODES];
static char dir[] = "/tmp/rlock-safety-XXXXXX";

/* ------------------------------------------------------------ running */

/* A fresh history path for process. */
static void history_path(char *buf, size_t n, const char *process)
{
    snprintf(buf, n, "%s/%s.jsonl", dir, process);
    unlink(buf);
}

/* Runs one worker of kind (extra: more options, NULL-terminated) on an
 * empty store, asserts that it exits 0, and checks its history. */
static const wt_summary *run_kind(const char *process, const char *kind,
                                  const char *const *extra)
{
    char hist[256], ops[16], threads[16], names[16];
    const char *args[64];
    int i = 0;
    history_path(hist, sizeof(hist), process);
    wt_empty_store(&store);
    snprintf(ops, sizeof(ops), "%d", OPS);
    snprintf(threads, sizeof(threads), "%d", THREADS);
    snprintf(names, sizeof(names), "%d", WT_NAMES);
    args[i++] = SAFETY_WORKER_PATH;
    int uris = strcmp(kind, "redlock") == 0 ? NODES : 1;
    for (int k = 0; k < uris; k++) {
        args[i++] = "--uri";
        args[i++] = nodes[k].url;
    }
    const char *fixed[] = {"--store", store.url, "--process", process,
                           "--kind", kind, "--threads", threads,
                           "--names", names, "--ops", ops, "--hold-ms", "2",
                           /* no acquire may time out, however loaded the
                            * machine */
                           "--wait-ms", "30000",
                           "--seed", "42", "--history", hist};
    for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
        args[i++] = fixed[k];
    for (; extra != NULL && *extra != NULL; extra++)
        args[i++] = *extra;
    args[i] = NULL;
    assert_int_equal(wt_wait(wt_spawn(args)), 0);
    const char *paths[] = {hist}, *procs[] = {process};
    return wt_check_histories(1, paths, procs, kind, &store);
}

/* ---------------------------------------------------------------- tests */

static void test_lock_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    const wt_summary *s = run_kind("lock1", "lock", NULL);
    assert_int_equal(s->acquires, THREADS * OPS);
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_fair_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    const wt_summary *s = run_kind("fair1", "fair", NULL);
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_rw_run_writes_only_in_write_mode(void **st)
{
    (void)st;
    const wt_summary *s = run_kind("rw1", "rw", NULL);
    /* one in three a write, on average: some of each, seed 42 */
    assert_true(s->writes_ok > 0 && s->writes_ok < THREADS * OPS);
}

static void test_fenced_run_carries_its_tokens_to_the_store(void **st)
{
    (void)st;
    const wt_summary *s = run_kind("fenced1", "fenced", NULL);
    assert_int_equal(s->writes_ok, THREADS * OPS);
    /* the fencing store saw the last token drawn on each name */
    for (int i = 0; i < WT_NAMES; i++) {
        char *token = rt_cmd_str(&nodes[0],
                                 "GET redisson_lock_token:{safety:fenced:%d}",
                                 i);
        assert_non_null(token);
        char *seen = rt_cmd_str(&store, "GET safety:fence:safety:fenced:%d", i);
        assert_non_null(seen);
        assert_string_equal(seen, token);
        free(seen);
        free(token);
    }
}

static void test_redlock_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    const wt_summary *s = run_kind("red1", "redlock", NULL);
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_async_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    const char *extra[] = {"--async", NULL};
    const wt_summary *s = run_kind("async1", "fair", extra);
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

/* The fencing store's script, run by hand: a token lower than one seen is
 * refused for reads and writes alike; equal and higher ones pass. */
static void test_fencing_store_refuses_an_older_token(void **st)
{
    (void)st;
    char *script = NULL;
    FILE *f = fopen(SAFETY_FENCE_SCRIPT, "r");
    assert_non_null(f);
    size_t len = 0;
    FILE *mem = open_memstream(&script, &len);
    for (int c; (c = fgetc(f)) != EOF;)
        fputc(c, mem);
    fclose(mem);
    fclose(f);
    const char *keys[2] = {"fence-test:counter", "fence-test:fence"};
    const char *write7[] = {"EVAL", script, "2", keys[0], keys[1], "write",
                            "7",    "70"};
    redisReply *r = rt_cmd_argv(&store, 8, write7);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    const char *read6[] = {"EVAL", script, "2", keys[0], keys[1], "read", "6"};
    r = rt_cmd_argv(&store, 7, read6);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_memory_equal(r->str, "FENCED", 6);
    freeReplyObject(r);
    const char *write6[] = {"EVAL", script, "2", keys[0], keys[1], "write",
                            "6",    "60"};
    r = rt_cmd_argv(&store, 8, write6);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    const char *read7[] = {"EVAL", script, "2", keys[0], keys[1], "read", "7"};
    r = rt_cmd_argv(&store, 7, read7);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "70"); /* the refused write changed nothing */
    freeReplyObject(r);
    free(script);
}

/* SIGTERM ends a long run soon, with every call completed, and exit 0. */
static void test_sigterm_stops_after_the_call_under_way(void **st)
{
    (void)st;
    char hist[256];
    history_path(hist, sizeof(hist), "term1");
    wt_empty_store(&store);
    const char *args[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                          "--store", store.url, "--process", "term1",
                          "--kind", "lock", "--threads", "3", "--names", "2",
                          "--seconds", "60", "--hold-ms", "2",
                          "--wait-ms", "30000",
                          "--history", hist, NULL};
    int64_t start = rt_now_ms();
    pid_t pid = wt_spawn(args);
    assert_true(pid > 0);
    rt_sleep_ms(700);
    kill(pid, SIGTERM);
    assert_int_equal(wt_wait(pid), 0);
    assert_true(rt_now_ms() - start < 30000); /* not the 60 s */
    const char *paths[] = {hist}, *procs[] = {"term1"};
    const wt_summary *s = wt_check_histories(1, paths, procs, "lock", &store);
    assert_true(s->acquires > 0);
}

static void test_bad_arguments_exit_2(void **st)
{
    (void)st;
    const char *no_store[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                              "--process", "x", "--kind", "lock",
                              "--history", "/dev/null", NULL};
    assert_int_equal(wt_wait(wt_spawn(no_store)), 2);
    const char *bad_kind[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                              "--store", store.url, "--process", "x",
                              "--kind", "spin", "--history", "/dev/null",
                              NULL};
    assert_int_equal(wt_wait(wt_spawn(bad_kind)), 2);
    const char *async_fenced[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                                  "--store", store.url, "--process", "x",
                                  "--kind", "fenced", "--async", "--history",
                                  "/dev/null", NULL};
    assert_int_equal(wt_wait(wt_spawn(async_fenced)), 2);
}

/* ---------------------------------------------------------------- setup */

static int setup(void **st)
{
    (void)st;
    if (mkdtemp(dir) == NULL || rt_redis_start(&store) != 0)
        return -1;
    for (int i = 0; i < NODES; i++)
        if (rt_redis_start(&nodes[i]) != 0)
            return -1;
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    for (int i = 0; i < NODES; i++)
        rt_redis_stop(&nodes[i]);
    rt_redis_stop(&store);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_run_is_well_formed_and_counts_every_write),
        cmocka_unit_test(test_fair_run_is_well_formed_and_counts_every_write),
        cmocka_unit_test(test_rw_run_writes_only_in_write_mode),
        cmocka_unit_test(test_fenced_run_carries_its_tokens_to_the_store),
        cmocka_unit_test(
            test_redlock_run_is_well_formed_and_counts_every_write),
        cmocka_unit_test(test_async_run_is_well_formed_and_counts_every_write),
        cmocka_unit_test(test_fencing_store_refuses_an_older_token),
        cmocka_unit_test(test_sigterm_stops_after_the_call_under_way),
        cmocka_unit_test(test_bad_arguments_exit_2),
    };
    rt_require_redis();
    return cmocka_run_group_tests(tests, setup, teardown);
}
