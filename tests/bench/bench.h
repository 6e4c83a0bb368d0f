/*
 * bench.h: the private header of rlock-bench (tests/bench).
 *
 * rlock-bench measures rlock against the physical floor of the Redis it
 * runs on. Each run prints one JSON object whose field names are fixed,
 * so that scripts/bench and other tools can read them. The pieces:
 *   stats.c        clocks, latency samples and percentiles
 *   redis.c        plain hiredis connections, INFO counters, --url parsing
 *   limit.c        the "limit" scenario: PING and EVALSHA with no library
 *   lockloop.c     "uncontended" and "parallel": lock+unlock cycles
 *   contended.c    "contended": N threads or processes on one lock
 *   fanout.c       "fanout": one RLock's channel heard by N processes
 *   ring.c         "ring": the floor of an orderly hand-over, no library
 *   held.c         "held": K locks kept alive by the watchdog
 *   jvms.c         "mixed-java": the Java Redisson processes beside
 *                  contended.c's rlock processes on one lock
 *   side.c         "mixed-java": the figures of each side
 *   waiters.c      "waiters": async waiters on one libev loop, woken
 *   names.c        "names": a million distinct names, each locked once
 *   evloop.c       a libev loop thread for the async scenarios
 *   memory.c       the client's heap and resident set
 *   main.c         options, the embedded limit run, ratios, JSON output
 */
#ifndef RLOCK_BENCH_H
#define RLOCK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "rlock.h"

/* ------------------------------------------------------------- options */

typedef struct bench_opts {
    const char *url;      /* redis://host:port as given */
    char host[256];       /* parsed from url */
    int port;             /* parsed from url */
    const char *scenario; /* uncontended|contended|parallel|held|limit */
    int workers;          /* threads or processes */
    double seconds;       /* measured time */
    bool procs;           /* contended: processes instead of threads */
    const char *kind;     /* contended: lock|fair|spin|fenced|write */
    int locks;            /* held: number of locks */
    int names;            /* waiters, names: distinct lock names */
    int waiters;          /* waiters: async waiters in all */
    int inflight;         /* names: lock+unlock cycles in flight */
    int64_t watchdog_ms;  /* watchdog timeout (held: default 1000) */
    int connections;      /* rlock command connections, 0: default */
    bool stats_off;       /* --stats off: rlock_config_set_stats(cfg, 0) */
    bool barging;         /* --barging on: rlock_config_set_lock_barging */
    bool queue_off;       /* --queue off: rlock_config_set_lock_queue */
    double limit_seconds; /* embedded limit run, 0: none */
    int java_procs;          /* mixed-java: Redisson JVMs beside --workers */
    const char *java_driver; /* mixed-java: compat/java/build/<version> */
    double java_warmup;      /* mixed-java: each JVM's warm-up, seconds */
    char prefix[96];      /* key prefix, unique per run */
} bench_opts;

/* Gets a handle of the lock kind ("lock", "fair", "spin", "fenced" or
 * "write") on name; a write lock's rlock_rw goes to *rw (free it instead of
 * the handle). With c NULL, only checks the kind: RLOCK_EINVAL when unknown. */
int bench_kind_get(const char *kind, rlock_client *c, const char *name,
                   rlock **l, rlock_rw **rw);

/* --------------------------------------------------------------- stats.c */

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process. */
int64_t bench_now_ns(void);

/* Sleeps for ns nanoseconds. */
void bench_sleep_ns(int64_t ns);

/* CPU time this process has used, all its threads, in nanoseconds: a
 * cost the machine's other load does not inflate as it does wall time. */
int64_t bench_cpu_ns(void);

/* A growable array of latencies in nanoseconds. Zero-initialise. */
typedef struct bench_samples {
    int64_t *v;
    size_t n;
    size_t cap;
} bench_samples;

/* Appends one value; returns 0 or -1 when out of memory. */
int bench_samples_add(bench_samples *s, int64_t ns);

/* Appends every value of src to dst; returns 0 or -1. */
int bench_samples_merge(bench_samples *dst, const bench_samples *src);

/* Returns the p-th percentile (0..100) in microseconds, or 0 when empty.
 * Sorts the samples. */
double bench_samples_pct_us(bench_samples *s, double p);

/* Returns the largest value in ns, or 0 when empty. */
int64_t bench_samples_max(const bench_samples *s);

void bench_samples_free(bench_samples *s);

/* Rounds x to 3 significant decimals for the JSON output. */
double bench_round(double x);

/* --------------------------------------------------------------- redis.c */

/* Fills o->host and o->port from o->url ("redis://host:port[/0]"); returns
 * 0 or -1 with a message on stderr. */
int bench_parse_url(bench_opts *o);

/* A fresh blocking connection with 10 s timeouts, or NULL (message on
 * stderr). Ownership: caller frees with redisFree(). */
redisContext *bench_connect(const bench_opts *o);

/* Connections to every node the URL names (the seeds of a
 * redis+cluster:// URL; the one server of a redis:// URL), at most max,
 * into out; returns how many, or -1 (message on stderr). Ownership: the
 * caller frees each with redisFree(). */
int bench_connect_nodes(const bench_opts *o, redisContext **out, int max);

/* One command's calls (commandstats' name: "evalsha", "client|list"). */
typedef struct bench_command_calls {
    char name[40];
    long long calls;
} bench_command_calls;

#define BENCH_MAX_COMMANDS 96

/* Counters read from INFO: the calls of every command (commandstats), the
 * INFO calls among them, the script calls, and INFO stats figures. */
typedef struct bench_counters {
    long long calls;        /* every command, also those run by scripts */
    long long info_calls;   /* INFO and DBSIZE themselves (ours) */
    long long script_calls; /* EVAL, EVALSHA and their _RO forms */
    long long reads;        /* total_reads_processed: request batches */
    long long expired_keys; /* keys Redis expired */
    long long used_memory;  /* server memory, bytes */
    long long script_usec;  /* CPU time Redis spent in script calls, us */
    long long pttl_usec;    /* ... in PTTL (the held scenario's probes) */
    long long cpu_us;       /* used_cpu_sys + used_cpu_user, us */
    long long keys;         /* DBSIZE of the database */
    long long host_busy;    /* the machine's busy jiffies, all CPUs */
    long long host_total;   /* ... and all its jiffies (/proc/stat) */
    int ncommands;          /* the commands Redis has run, each's calls */
    bench_command_calls by_command[BENCH_MAX_COMMANDS];
} bench_counters;

/* From two counter readings around a window of elapsed_s seconds, sets
 * on out: redis_cpu_share (Redis's CPU time over the window, in cores),
 * redis_cpu_us_per_acq (over acq acquisitions) and host_idle_share (the
 * share of all the machine's CPUs left idle): which of Redis, the
 * clients or neither bounds a hand-over's rate. */
void bench_set_cpu_split(json_t *out, const bench_counters *before,
                         const bench_counters *after, double elapsed_s,
                         double acq);

/* Sets on out "redis_cmds_by_command": each command's calls between the
 * two readings per acquisition (over acq), inside scripts included, most
 * first, without INFO and DBSIZE and without the run's own traffic: own
 * lists commands and calls to take off (an empty name ends it). Shows where a
 * hand-over's commands go. */
void bench_set_cmds_by_command(json_t *out, const bench_counters *before,
                               const bench_counters *after, double acq,
                               const bench_command_calls *own);

/* Reads the counters on c; returns 0 or -1. Costs two INFO calls and a
 * DBSIZE. */
int bench_counters_read(redisContext *c, bench_counters *out);

/* Adds one node's counters to sum (every field). */
void bench_counters_add(bench_counters *sum, const bench_counters *one);

/* Runs a command that must not fail (FLUSH, SET, ...); returns 0 or -1
 * with a message. */
int bench_cmd_ok(redisContext *c, const char *fmt, ...);

/* Redis's version string (e.g. "7.0.15") into out; "" if unknown. */
void bench_redis_version(redisContext *c, char *out, size_t len);

/* Reads the next pub/sub message on subscriber c; returns 1 when it says
 * "end" (a scenario's stop), 0 for any other, -1 when the connection
 * failed. */
int bench_next_message(redisContext *c);

/* -------------------------------------------------------------- memory.c */

/* The client process's heap in use (glibc mallinfo2, every arena). */
long long bench_heap_bytes(void);

/* Its resident set size, bytes. */
long long bench_rss_bytes(void);

/* -------------------------------------------------------------- evloop.c */

typedef struct bench_loop bench_loop;

/* Makes a libev loop, attaches c's async completions to it and runs it on
 * a new thread; NULL on failure (message on stderr). */
bench_loop *bench_loop_start(rlock_client *c);

/* Detaches the client on the loop's thread, which lets the loop end. Any
 * thread, completions included. */
void bench_loop_stop(bench_loop *bl);

/* Waits for the loop's thread to end (after bench_loop_stop) and frees
 * the loop; NULL is ignored. Not from the loop's thread. */
void bench_loop_join(bench_loop *bl);

/* ---------------------------------------------------------------- limit.c */

/* The floor: what Redis does with no library in the way. */
typedef struct bench_limit {
    double ping_p50_us;           /* PING round trip */
    double evalsha_p50_us;        /* either script, one connection */
    double evalsha_lock_p50_us;   /* the acquire script */
    double evalsha_unlock_p50_us; /* the release script */
    double pipelined_per_s;       /* EVALSHA calls/s, 16 deep, one conn */
    double pairs_per_s;           /* lock+unlock pairs/s on `conns` conns */
    int conns;                    /* connections for pairs_per_s */
} bench_limit;

/* Measures the floor for about `seconds` in total, with pairs_per_s on
 * `conns` connections at once. Returns 0 or -1. */
int bench_limit_measure(const bench_opts *o, double seconds, int conns,
                        bench_limit *out);

/* The limit figures under the field names (new reference). */
json_t *bench_limit_json(const bench_limit *l);

/* --------------------------------------------------------------- scenarios
 * Each fills out with its figures and returns 0 when the measurement ran
 * (its invariants may still have failed: see bench_failed), or -1. */

/* Connects an rlock client with o's watchdog and connection settings. */
int bench_client(const bench_opts *o, rlock_client **out);

int bench_run_uncontended(const bench_opts *o, json_t *out);
int bench_run_parallel(const bench_opts *o, json_t *out);
int bench_run_contended(const bench_opts *o, json_t *out);
int bench_run_held(const bench_opts *o, json_t *out);
int bench_run_fanout(const bench_opts *o, json_t *out);
int bench_run_ring(const bench_opts *o, json_t *out);
int bench_run_waiters(const bench_opts *o, json_t *out);
int bench_run_names(const bench_opts *o, json_t *out);

/* ------------------------------------------------------ jvms.c, side.c */

/* One side of the mixed-java scenario: each worker's acquisitions and
 * every lock call's wait. Zero-initialise; free with bench_side_free(). */
typedef struct bench_side {
    int workers;
    long long *acq;      /* per worker, `workers` of them */
    bench_samples waits; /* ns, one per lock call */
    double seconds;      /* the side's timed loop, to its last unlock */
} bench_side;

/* The side's figures: procs, acquisitions, acq_per_s, min_acq, max_acq,
 * acq (each worker's), max_wait_ms, wait_p50_us, wait_p99_us. Sorts the
 * waits. Ownership: a new reference. */
json_t *bench_side_json(bench_side *s);

void bench_side_free(bench_side *s);

/* The Java Redisson processes of the mixed-java scenario. */
typedef struct bench_jvms bench_jvms;

/* Spawns o->java_procs JVMs of compat/java's Driver (o->java_driver) on
 * o->url, waits until each is connected, then warms each up for
 * o->java_warmup seconds on a lock of its own. Returns 0 or -1 (message
 * on stderr); *out is set either way, for bench_jvms_free(). */
int bench_jvms_start(const bench_opts *o, bench_jvms **out);

/* Starts every JVM's timed loop (lock, GET counter, SET +1, unlock) on the
 * lock `name` of o->kind for o->seconds. Returns 0 or -1. */
int bench_jvms_go(bench_jvms *s, const char *name, const char *counter);

/* Waits for every JVM's loop to end and fills side. Returns 0 or -1. */
int bench_jvms_collect(bench_jvms *s, bench_side *side);

/* Redisson's version, as the first JVM reported it. Borrowed from s. */
const char *bench_jvms_version(const bench_jvms *s);

/* Ends the JVMs (end of input, then SIGKILL after 5 s) and frees s.
 * NULL is a no-op. */
void bench_jvms_free(bench_jvms *s);

/* Sets a number field rounded for output. */
void bench_set_num(json_t *obj, const char *key, double v);

#endif
