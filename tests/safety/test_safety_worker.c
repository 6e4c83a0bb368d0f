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

#include <jansson.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef SAFETY_WORKER_PATH
#define SAFETY_WORKER_PATH "safety_worker"
#endif

#define NODES 5   /* Redlock's servers; node 0 serves the other kinds */
#define THREADS 3 /* actors per run */
#define OPS 12    /* acquires per actor */
#define NAMES 2
#define MAX_VALUES 100000 /* the longest run's writes on one lock */

static rt_redis store;
static rt_redis nodes[NODES];
static char dir[] = "/tmp/rlock-safety-XXXXXX";

/* ------------------------------------------------------------ running */

/* Runs safety_worker with args (NULL-terminated) and returns its exit
 * status, or -1. */
static int run_worker(const char *const *args)
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(SAFETY_WORKER_PATH, (char *const *)args);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* Empties the store, so that counters count one run's writes. */
static void empty_store(void)
{
    redisReply *r = rt_cmd(&store, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
}

/* A fresh history path for process. */
static void history_path(char *buf, size_t n, const char *process)
{
    snprintf(buf, n, "%s/%s.jsonl", dir, process);
    unlink(buf);
}

/* Runs one worker of kind (extra: more options, NULL-terminated) on an
 * empty store and asserts that it exits 0. */
static void run_kind(const char *process, const char *kind,
                     const char *const *extra, char *hist, size_t n)
{
    char ops[16], threads[16], names[16];
    const char *args[64];
    int i = 0;
    history_path(hist, n, process);
    empty_store();
    snprintf(ops, sizeof(ops), "%d", OPS);
    snprintf(threads, sizeof(threads), "%d", THREADS);
    snprintf(names, sizeof(names), "%d", NAMES);
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
    assert_int_equal(run_worker(args), 0);
}

/* ------------------------------------------------------------ checking */

/* What a run's history showed. */
typedef struct run_summary {
    int lines, acquires, writes_ok, lost;
    char open_id[THREADS][64]; /* the invoke awaiting its completion */
    char open_op[THREADS][16];
    int64_t open_mono[THREADS];
    int64_t token[THREADS];    /* fenced: the actor's hold's token */
    int64_t read_value[THREADS];
    /* per lock name: acknowledged write values seen */
    int seen[NAMES][MAX_VALUES + 2];
    int writes[NAMES];
} run_summary;

static const char *str_field(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    if (s == NULL)
        fail_msg("line without string field %s", name);
    return s;
}

static int64_t int_field(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        fail_msg("line without integer field %s", name);
    return json_integer_value(v);
}

static int lock_index(const char *lock, const char *kind)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "safety:%s:", kind);
    assert_memory_equal(lock, prefix, strlen(prefix));
    int i = atoi(lock + strlen(prefix));
    assert_true(i >= 0 && i < NAMES);
    return i;
}

/* Checks one line against the format and the actor's sequence. */
static void check_line(json_t *o, const char *process, const char *kind,
                       run_summary *s)
{
    const char *id = str_field(o, "id"), *type = str_field(o, "type");
    const char *op = str_field(o, "op");
    assert_string_equal(str_field(o, "proc"), process);
    assert_string_equal(str_field(o, "kind"), kind);
    assert_non_null(strchr(str_field(o, "owner"), ':'));
    int64_t thread = int_field(o, "thread"), mono = int_field(o, "mono_ns");
    assert_true(thread >= 0 && thread < THREADS);
    assert_true(mono > 0 && int_field(o, "wall_ms") > 0);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s-%d-", process, (int)thread);
    assert_memory_equal(id, prefix, strlen(prefix));
    const char *mode = str_field(o, "mode");
    assert_true(strcmp(mode, "x") == 0 || strcmp(mode, "r") == 0);
    int li = lock_index(str_field(o, "lock"), kind);
    int t = (int)thread;

    if (strcmp(op, "lost") == 0) {
        s->lost++;
        return;
    }
    if (strcmp(type, "invoke") == 0) {
        assert_string_equal(s->open_id[t], ""); /* one call at a time */
        snprintf(s->open_id[t], sizeof(s->open_id[t]), "%s", id);
        snprintf(s->open_op[t], sizeof(s->open_op[t]), "%s", op);
        s->open_mono[t] = mono;
        if (strcmp(op, "acquire") == 0)
            s->acquires++;
        return;
    }
    /* a completion: of the actor's open invoke, and with no fault, ok */
    assert_string_equal(id, s->open_id[t]);
    assert_string_equal(op, s->open_op[t]);
    assert_true(mono >= s->open_mono[t]);
    s->open_id[t][0] = '\0';
    if (strcmp(type, "ok") != 0)
        fail_msg("%s %s: %s (%s)", id, op, type,
                 json_string_value(json_object_get(o, "err")));
    int fenced = strcmp(kind, "fenced") == 0;
    if (strcmp(op, "acquire") == 0 && fenced) {
        s->token[t] = int_field(o, "token");
        assert_true(s->token[t] > 0);
    } else if (strcmp(op, "read") == 0) {
        s->read_value[t] = int_field(o, "value");
    } else if (strcmp(op, "write") == 0) {
        assert_string_equal(mode, "x");
        int64_t v = int_field(o, "value");
        assert_int_equal(v, s->read_value[t] + 1);
        assert_true(v >= 1 && v <= MAX_VALUES);
        assert_int_equal(s->seen[li][v], 0); /* no two holders wrote v */
        s->seen[li][v] = 1;
        s->writes[li]++;
        s->writes_ok++;
    }
    if (fenced && strcmp(op, "release") != 0 && strcmp(op, "acquire") != 0)
        assert_int_equal(int_field(o, "token"), s->token[t]);
}

/* Reads the history at path and checks it all; the store's counters must
 * equal the acknowledged writes. Returns what it saw (static storage,
 * valid until the next call). */
static const run_summary *check_history(const char *path, const char *process,
                                        const char *kind)
{
    static run_summary summary;
    run_summary *s = &summary;
    memset(s, 0, sizeof(*s));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    while (fgets(line, sizeof(line), f) != NULL) {
        assert_non_null(strchr(line, '\n')); /* whole lines */
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (o == NULL)
            fail_msg("%s: not JSON: %s", path, line);
        check_line(o, process, kind, s);
        json_decref(o);
        s->lines++;
    }
    fclose(f);
    for (int t = 0; t < THREADS; t++)
        assert_string_equal(s->open_id[t], ""); /* every call completed */
    assert_int_equal(s->lost, 0);
    for (int i = 0; i < NAMES; i++) {
        char key[96];
        snprintf(key, sizeof(key), "safety:counter:safety:%s:%d", kind, i);
        char *v = rt_cmd_str(&store, "GET %s", key);
        long long counter = v != NULL ? atoll(v) : 0;
        free(v);
        assert_int_equal(counter, s->writes[i]);
    }
    return s;
}

/* ---------------------------------------------------------------- tests */

static void test_lock_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    char hist[256];
    run_kind("lock1", "lock", NULL, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "lock1", "lock");
    assert_int_equal(s->acquires, THREADS * OPS);
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_fair_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    char hist[256];
    run_kind("fair1", "fair", NULL, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "fair1", "fair");
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_rw_run_writes_only_in_write_mode(void **st)
{
    (void)st;
    char hist[256];
    run_kind("rw1", "rw", NULL, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "rw1", "rw");
    /* one in three a write, on average: some of each, seed 42 */
    assert_true(s->writes_ok > 0 && s->writes_ok < THREADS * OPS);
}

static void test_fenced_run_carries_its_tokens_to_the_store(void **st)
{
    (void)st;
    char hist[256];
    run_kind("fenced1", "fenced", NULL, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "fenced1", "fenced");
    assert_int_equal(s->writes_ok, THREADS * OPS);
    /* the fencing store saw the last token drawn on each name */
    for (int i = 0; i < NAMES; i++) {
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
    char hist[256];
    run_kind("red1", "redlock", NULL, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "red1", "redlock");
    assert_int_equal(s->writes_ok, THREADS * OPS);
}

static void test_async_run_is_well_formed_and_counts_every_write(void **st)
{
    (void)st;
    char hist[256];
    const char *extra[] = {"--async", NULL};
    run_kind("async1", "fair", extra, hist, sizeof(hist));
    const run_summary *s = check_history(hist, "async1", "fair");
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
    empty_store();
    const char *args[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                          "--store", store.url, "--process", "term1",
                          "--kind", "lock", "--threads", "3", "--names", "2",
                          "--seconds", "60", "--hold-ms", "2",
                          "--wait-ms", "30000",
                          "--history", hist, NULL};
    int64_t start = rt_now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        execv(SAFETY_WORKER_PATH, (char *const *)args);
        _exit(127);
    }
    assert_true(pid > 0);
    rt_sleep_ms(700);
    kill(pid, SIGTERM);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(rt_now_ms() - start < 30000); /* not the 60 s */
    const run_summary *s = check_history(hist, "term1", "lock");
    assert_true(s->acquires > 0);
}

static void test_bad_arguments_exit_2(void **st)
{
    (void)st;
    const char *no_store[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                              "--process", "x", "--kind", "lock",
                              "--history", "/dev/null", NULL};
    assert_int_equal(run_worker(no_store), 2);
    const char *bad_kind[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                              "--store", store.url, "--process", "x",
                              "--kind", "spin", "--history", "/dev/null",
                              NULL};
    assert_int_equal(run_worker(bad_kind), 2);
    const char *async_fenced[] = {SAFETY_WORKER_PATH, "--uri", nodes[0].url,
                                  "--store", store.url, "--process", "x",
                                  "--kind", "fenced", "--async", "--history",
                                  "/dev/null", NULL};
    assert_int_equal(run_worker(async_fenced), 2);
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
