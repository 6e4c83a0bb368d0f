/*
 * test_java_safety_worker.c: the safety harness's Java worker (compat/java
 * Driver's safety mode, SafetyWorker.java) beside the C worker, as the
 * mixed-fleet run has them: the newest Redisson and rlock on the same lock
 * names and counters, with no fault.
 *
 * Both histories, read together, must pass what a faultless run passes
 * (tests/safety/worker_testing.h): well-formed lines in the same format,
 * every operation ok, and counters equal to the acknowledged writes of
 * both processes, no value written twice. Also: SIGTERM ends the Java
 * worker's run with exit 0 and nothing left open, and bad arguments exit
 * 2. The redlock kind runs on three independent servers, a RedissonRedLock
 * beside rlock's Redlock. Skipped (77) without java or the driver built by
 * scripts/deps.
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
#include "java_peer.h"
#include "worker_testing.h"

#define THREADS "3"
#define OPS "10" /* acquires per actor */
#define NODES 3   /* a Redlock's independent servers */

static rt_redis store, nodes[NODES];
static char dir[] = "/tmp/rlock-java-safety-XXXXXX";
static char classpath[4096];

static void history_path(char *buf, size_t n, const char *process)
{
    snprintf(buf, n, "%s/%s.jsonl", dir, process);
    unlink(buf);
}

/* Appends the --uri options of kind at args[*i]: every node for a
 * Redlock, the first otherwise. */
static void add_uris(const char **args, int *i, const char *kind)
{
    int n = strcmp(kind, "redlock") == 0 ? NODES : 1;
    for (int k = 0; k < n; k++) {
        args[(*i)++] = "--uri";
        args[(*i)++] = nodes[k].url;
    }
}

/* Starts the Java worker: Driver safety with the common options, then
 * extra (NULL-terminated). */
static pid_t start_java(const char *process, const char *kind,
                        const char *hist, const char *const *extra)
{
    const char *args[64] = {"java", "-XX:+UseSerialGC",
                            "-XX:TieredStopAtLevel=1", "-cp", classpath,
                            "Driver", "safety"};
    int i = 0;
    while (args[i] != NULL)
        i++;
    add_uris(args, &i, kind);
    const char *fixed[] = {"--store", store.url, "--process", process,
                           "--kind", kind, "--threads", THREADS,
                           "--hold-ms", "2", "--wait-ms", "30000",
                           "--seed", "7", "--history", hist};
    for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
        args[i++] = fixed[k];
    for (; extra != NULL && *extra != NULL; extra++)
        args[i++] = *extra;
    args[i] = NULL;
    return wt_spawn(args);
}

/* Waits until hist has n lines (the JVM has started and is working), at
 * most 60 s. */
static void wait_for_lines(const char *hist, int n)
{
    int64_t start = rt_now_ms();
    while (rt_now_ms() - start < 60000) {
        FILE *f = fopen(hist, "r");
        int lines = 0;
        for (int ch; f != NULL && (ch = fgetc(f)) != EOF;)
            lines += ch == '\n';
        if (f != NULL)
            fclose(f);
        if (lines >= n)
            return;
        rt_sleep_ms(20);
    }
}

/* Runs the Java and the C worker at once on kind's names and checks both
 * histories together. */
static void run_mixed(const char *kind)
{
    char jhist[256], chist[256], jproc[32], cproc[32];
    snprintf(jproc, sizeof(jproc), "j-%s", kind);
    snprintf(cproc, sizeof(cproc), "c-%s", kind);
    history_path(jhist, sizeof(jhist), jproc);
    history_path(chist, sizeof(chist), cproc);
    wt_empty_store(&store);
    const char *ops[] = {"--ops", OPS, NULL};
    pid_t java = start_java(jproc, kind, jhist, ops);
    /* the C worker starts once the JVM works, so that the two overlap
     * (started together, it would be done before the JVM is up) */
    wait_for_lines(jhist, 1);
    const char *c_args[48] = {SAFETY_WORKER_PATH};
    int i = 1;
    add_uris(c_args, &i, kind);
    const char *fixed[] = {"--store", store.url, "--process", cproc,
                           "--kind", kind, "--threads", THREADS,
                           "--ops", OPS, "--hold-ms", "2",
                           "--wait-ms", "30000", "--seed", "8",
                           "--history", chist};
    for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
        c_args[i++] = fixed[k];
    c_args[i] = NULL;
    pid_t c = wt_spawn(c_args);
    assert_int_equal(wt_wait(c), 0);
    assert_int_equal(wt_wait(java), 0);
    const char *paths[] = {jhist, chist}, *procs[] = {jproc, cproc};
    const wt_summary *s = wt_check_histories(2, paths, procs, kind, &store);
    assert_int_equal(s->acquires_of[0], 3 * atoi(OPS));
    assert_int_equal(s->acquires_of[1], 3 * atoi(OPS));
}

static void test_java_and_c_workers_share_lock_names(void **st)
{
    (void)st;
    run_mixed("lock");
}

static void test_java_and_c_workers_share_fenced_names(void **st)
{
    (void)st;
    run_mixed("fenced");
}

static void test_java_and_c_workers_share_rw_names(void **st)
{
    (void)st;
    run_mixed("rw");
}

static void test_java_and_c_redlocks_share_names_on_every_server(void **st)
{
    (void)st;
    run_mixed("redlock");
}

static void test_java_worker_stops_on_sigterm_with_exit_0(void **st)
{
    (void)st;
    char hist[256];
    history_path(hist, sizeof(hist), "jterm");
    wt_empty_store(&store);
    const char *run_long[] = {"--seconds", "120", NULL};
    int64_t start = rt_now_ms();
    pid_t pid = start_java("jterm", "fair", hist, run_long);
    assert_true(pid > 0);
    wait_for_lines(hist, 20);
    kill(pid, SIGTERM);
    assert_int_equal(wt_wait(pid), 0);
    assert_true(rt_now_ms() - start < 100000); /* not the 120 s */
    const char *paths[] = {hist}, *procs[] = {"jterm"};
    const wt_summary *s = wt_check_histories(1, paths, procs, "fair", &store);
    assert_true(s->acquires > 0);
}

static void test_java_worker_refuses_bad_arguments_with_exit_2(void **st)
{
    (void)st;
    /* a second server is for a Redlock only */
    const char *two_uris[] = {"--uri", nodes[1].url, NULL};
    assert_int_equal(wt_wait(start_java("jbad", "lock", "/dev/null",
                                        two_uris)),
                     2);
}

static int setup(void **st)
{
    (void)st;
    snprintf(classpath, sizeof(classpath), "%s/build/%s/classes:%s/build/%s/lib/*",
             RLOCK_COMPAT_JAVA_DIR, RLOCK_JAVA_VERSION, RLOCK_COMPAT_JAVA_DIR,
             RLOCK_JAVA_VERSION);
    if (mkdtemp(dir) == NULL || rt_redis_start(&store) != 0)
        return -1;
    for (int k = 0; k < NODES; k++)
        if (rt_redis_start(&nodes[k]) != 0)
            return -1;
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    for (int k = 0; k < NODES; k++)
        rt_redis_stop(&nodes[k]);
    rt_redis_stop(&store);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_and_c_workers_share_lock_names),
        cmocka_unit_test(test_java_and_c_workers_share_fenced_names),
        cmocka_unit_test(test_java_and_c_workers_share_rw_names),
        cmocka_unit_test(test_java_and_c_redlocks_share_names_on_every_server),
        cmocka_unit_test(test_java_worker_stops_on_sigterm_with_exit_0),
        cmocka_unit_test(test_java_worker_refuses_bad_arguments_with_exit_2),
    };
    rt_require_redis();
    jp_require_java(RLOCK_JAVA_VERSION);
    return cmocka_run_group_tests(tests, setup, teardown);
}
