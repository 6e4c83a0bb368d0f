/*
 * harness.h: helpers for rlock's integration tests.
 *
 * Tests talk to REAL redis-server processes that the harness starts on free
 * loopback ports (never 6379), each in its own temporary directory, with no
 * persistence.  A server cannot outlive its test: the child asks the kernel
 * for SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG), and an
 * atexit handler stops whatever is still running at a normal exit.  Start
 * servers from the main thread (or from a thread that lives at least as long
 * as the server), because the parent-death signal follows the starting thread.
 *
 * The harness ignores SIGPIPE in the test process once a server is started:
 * tests stop and restart servers under live connections, and hiredis writes
 * with write(2).
 *
 * Environment:
 *   RLOCK_TEST_REQUIRE_REDIS=1   rt_require_redis() fails instead of skipping
 *   RLOCK_TEST_REDIS_SERVER=path redis-server binary to use instead of PATH
 *                                (also valkey-server; docs/servers.md)
 *   RLOCK_TEST_KEEP_DIRS=1       keep each server's temp dir (and redis.log)
 *   RLOCK_TEST_LIGHT=1           rt_scaled() cuts repetitions (the valgrind
 *                                pass, where each costs 20-50 times more,
 *                                and a forked child's exit seconds)
 *
 * Thread-safety: rt_cmd*, rt_sub_* and rt_now_ms may be called from any
 * thread.  rt_redis_start/stop/restart/pause/resume on one rt_redis must not
 * race with each other.
 */
#ifndef RLOCK_TEST_HARNESS_H
#define RLOCK_TEST_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One redis-server started by the harness.  Zero-initialise before the first
 * rt_redis_start(); pid is 0 while no server runs. */
typedef struct rt_redis {
    int port;      /* loopback TCP port */
    pid_t pid;     /* redis-server process, 0 when stopped */
    char dir[256]; /* temp dir holding redis.log; removed on stop */
    char url[128]; /* "redis://127.0.0.1:<port>" */
    /* Harness bookkeeping; leave alone. */
    const char *const *extra_args; /* borrowed, NULL-terminated, for restart */
    int paused;                    /* 1 between rt_redis_pause and _resume */
    int tls_port;                  /* loopback TLS port, 0 without TLS */
    const char *const *tls_args;   /* borrowed, as extra_args */
    const char *conf_text;         /* borrowed: a config file's text */
    int sentinel;                  /* 1: started with --sentinel */
    const char *password;          /* borrowed: what AUTH sends */
} rt_redis;

/* Starts a server on a free port.  Returns 0 once it answers PING (within
 * 10 s), or -1 after printing why. */
int rt_redis_start(rt_redis *r);

/* As rt_redis_start(), with extra redis-server arguments appended (e.g.
 * {"--maxmemory", "1mb", NULL}).  The array is borrowed: keep it alive for as
 * long as rt_redis_restart() may be called. */
int rt_redis_start_args(rt_redis *r, const char *const *extra_args);

/* As rt_redis_start_args(), with TLS on a second free loopback port,
 * r->tls_port: tls_args are the --tls-* options after "--tls-port P"
 * (certificate, key, CA, --tls-auth-clients; see tls_fixture.h). The plain
 * port stays open on loopback so that the harness can see the server come
 * up and a test can read its state with rt_cmd(). Borrowed like extra_args.
 */
int rt_redis_start_tls(rt_redis *r, const char *const *tls_args,
                       const char *const *extra_args);

/* As rt_redis_start_tls(), with two more settings (each may be NULL):
 *   conf_text  a config file's text, written into the server's temp dir
 *              and named first on its command line; with sentinel, it is
 *              started as a sentinel (redis-server CONF --sentinel), which
 *              rewrites that file, so each sentinel gets its own
 *   password   what the server requires (requirepass in conf_text or in
 *              extra_args): the start probe and rt_cmd*() send AUTH with it
 * Both are borrowed like extra_args; a restart writes the file afresh.
 * Returns 0 once the server answers PING, or -1. */
int rt_redis_start_conf(rt_redis *r, const char *conf_text, int sentinel,
                        const char *password, const char *const *tls_args,
                        const char *const *extra_args);

/* Starts the server again on the same port (and with the same extra args)
 * after rt_redis_stop(); stops it first if it is still running.  The data set
 * starts empty.  Returns 0 or -1. */
int rt_redis_restart(rt_redis *r);

/* Stops the server: SIGCONT (in case it is paused), SIGTERM, waitpid, SIGKILL
 * after 5 s; then removes its temp dir.  No-op if it is not running. */
void rt_redis_stop(rt_redis *r);

/* SIGSTOP / SIGCONT the server; rt_redis_pause() returns once it is stopped.
 * Connections stay open but get no answers while paused. */
void rt_redis_pause(rt_redis *r);
void rt_redis_resume(rt_redis *r);

/* Runs one command (hiredis format) on a fresh connection with a 5 s timeout.
 * Returns the reply, which may be an error reply; the caller frees it with
 * freeReplyObject().  Returns NULL if the server could not be reached. */
redisReply *rt_cmd(rt_redis *r, const char *fmt, ...);

/* As rt_cmd(), with the command's words in argv (for long commands). */
redisReply *rt_cmd_argv(rt_redis *r, int argc, const char **argv);

/* Integer reply of the command, or RT_CMD_ERROR on any other outcome. */
#define RT_CMD_ERROR (-99999LL)
long long rt_cmd_int(rt_redis *r, const char *fmt, ...);

/* Copy of a string or status reply (caller frees with free()), or NULL for a
 * nil or error reply or a failed connection. */
char *rt_cmd_str(rt_redis *r, const char *fmt, ...);

/* PUBSUB NUMSUB channel: how many connections are subscribed to it, or -1
 * when the server could not say. */
long long rt_numsub(rt_redis *r, const char *channel);

/* PUBSUB SHARDNUMSUB channel: how many connections are subscribed to it
 * with SSUBSCRIBE, or -1 when the server could not say. */
long long rt_shardnumsub(rt_redis *r, const char *channel);

/* Polls rt_numsub() until it equals want or timeout_ms passes; returns the
 * last value seen. */
long long rt_wait_numsub(rt_redis *r, const char *channel, long long want,
                         int timeout_ms);

/* INFO stats' total_connections_received: the connections the server has
 * accepted so far, this call's own included. RT_CMD_ERROR if unreachable. */
long long rt_connections_received(rt_redis *r);

/* A subscriber on its own thread and connection that records every message
 * published on one channel. */
typedef struct rt_sub rt_sub;

/* Subscribes to channel; returns once Redis has confirmed the subscription,
 * or NULL on failure. */
rt_sub *rt_sub_start(rt_redis *r, const char *channel);

/* Number of messages received so far. */
int rt_sub_count(rt_sub *s);

/* Waits until at least n messages arrived or timeout_ms elapsed; returns the
 * number received. */
int rt_sub_wait(rt_sub *s, int n, int timeout_ms);

/* Payload of message i (0-based), NUL-terminated, borrowed until
 * rt_sub_stop(); NULL if i is out of range. */
const char *rt_sub_message(rt_sub *s, int i);

/* Unsubscribes, joins the thread and frees everything.  NULL is a no-op. */
void rt_sub_stop(rt_sub *s);

/* Runs cmd (a shell command line) and copies what it prints on stdout (at
 * most len - 1 bytes, NUL-terminated) to out; the rest is read and
 * dropped. Returns its exit status, or -1 when it could not run or did
 * not exit normally. */
int rt_run_capture(const char *cmd, char *out, size_t len);

/* Returns a loopback port that was free a moment ago (never 6379), or -1:
 * for a port a server needs besides its own (a cluster bus). */
int rt_free_port(void);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t rt_now_ms(void);

/* Sleeps for ms milliseconds. */
void rt_sleep_ms(int64_t ms);

/* Returns 0 if redis-server can be run.  Otherwise exits: with status 1 and an
 * error if RLOCK_TEST_REQUIRE_REDIS=1, else with 77 (CTest "skipped"). */
int rt_require_redis(void);

/* What the harness knows of the server binary it runs (RLOCK_TEST_REDIS_SERVER,
 * else redis-server on PATH; a sentinel is the same binary with --sentinel),
 * asked once per process. rt_server_path: its path, or NULL when there is
 * none. rt_server_version: major * 10000 + minor * 100 + patch from its
 * --version line (60205 for "v=6.2.5"), or 0 when that cannot be read.
 * rt_server_is_valkey: 1 when --version says "Valkey". rt_server_has_tls:
 * 1 when it can serve TLS, 0 when it cannot (Redis built without TLS stops
 * at "Bad directive", Valkey without its TLS module at "Failed finding TLS
 * support") or cannot be run. */
const char *rt_server_path(void);
int rt_server_version(void);
/* 1 when the server has what Redis 7.0 brought (ACL DRYRUN, sharded
 * pub/sub, cluster-port, ADDSLOTSRANGE, CLUSTER SHARDS, subcommand
 * statistics): any Valkey, Redis from 7.0, or a version that cannot be
 * read; 0 for Redis 6.2 (docs/servers.md). */
int rt_server_has_7_0(void);

/* In a cmocka test (after <cmocka.h>): on a server without Redis 7.0's
 * additions (rt_server_has_7_0), prints that what (e.g. "sharded pub/sub")
 * came with 7.0 and skips the test. */
#define RT_SKIP_BEFORE_7_0(what)                                               \
    do {                                                                       \
        if (!rt_server_has_7_0()) {                                            \
            print_message("skipped: %s came with Redis 7.0; the server is "    \
                          "%d\n", what, rt_server_version());                 \
            skip();                                                            \
        }                                                                      \
    } while (0)
int rt_server_is_valkey(void);
int rt_server_has_tls(void);

/* Returns n, or light under RLOCK_TEST_LIGHT=1: for tests that repeat a
 * race many times to catch it, where a slow checker such as valgrind needs
 * only a few rounds to see each path. */
int rt_scaled(int n, int light);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_TEST_HARNESS_H */
