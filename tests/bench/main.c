/*
 * main.c: rlock-bench's command line, the embedded limit run and the JSON
 * output.
 *
 *   rlock-bench --url redis://127.0.0.1:PORT --scenario NAME
 *               [--workers N] [--seconds S] [--procs] [--locks K]
 *               [--watchdog-ms MS] [--connections N] [--limit-seconds S]
 *               [--prefix P] [--stats on|off] [--barging on|off]
 *               [--queue on|off] [--java-procs M] [--java-driver DIR]
 *               [--java-warmup S] [--names N] [--waiters W] [--inflight N]
 *
 * One run prints one JSON object on one line of stdout. Every scenario
 * other than "limit" first measures the limit itself for --limit-seconds
 * (default 1; 0 skips it), against the same server and at the same moment,
 * and reports its figures under "limit" and each of its own figures as a
 * ratio to the matching floor under "vs_limit" (1.0 = at the floor; for
 * latencies lower is better, for rates higher is better):
 *   uncontended, parallel  cycle latency / (lock + unlock EVALSHA p50);
 *                          cycles_per_s / lock+unlock pairs per second on
 *                          --workers plain connections
 *   contended              handoff / (PING p50 + lock EVALSHA p50), the
 *                          wake-up message plus the winning acquire;
 *                          acq_per_s / 1e6 over (GET + SET + unlock +
 *                          wake-up + acquire), the serial critical path
 * "mixed-java" is "contended" with --procs, --workers rlock processes and
 * beside them --java-procs JVMs of the real Java Redisson (compat/java's
 * Driver, built in DIR = compat/java/build/<version> by scripts/deps) on
 * the same lock: every JVM is started and warmed up (--java-warmup, default
 * 3 s) before the timed window; the JSON has each side's figures under
 * "rlock" and "java" (jvms.c, side.c). --workers 0 measures the JVMs alone.
 * Exit status: 0; 1 when the run failed (the JSON then has "error"); 3
 * when it ran but broke an invariant (lost_increments, expired, failed,
 * keys_left or woken_before_unlock not 0).
 */
#include "bench.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: rlock-bench --url redis://HOST:PORT --scenario NAME\n"
               "         [--workers N] [--seconds S] [--procs] [--locks K]\n"
               "         [--kind lock|fair|spin|fenced|write]\n"
               "         [--watchdog-ms MS] [--connections N]\n"
               "         [--limit-seconds S] [--prefix P] [--stats on|off]\n"
               "         [--barging on|off] [--queue on|off]\n"
               "         [--java-procs M] [--java-driver DIR] [--java-warmup S]\n"
               "         [--names N] [--waiters W] [--inflight N]\n"
               "scenarios: uncontended contended parallel held limit fanout\n"
               "           ring waiters names mixed-java (needs --java-driver)\n");
}

int bench_client(const bench_opts *o, rlock_client **out)
{
    rlock_config *cfg = NULL;
    int rc = rlock_config_new(&cfg);
    if (rc == 0 && o->watchdog_ms > 0)
        rc = rlock_config_set_watchdog_timeout(cfg, o->watchdog_ms);
    if (rc == 0 && o->connections > 0)
        rc = rlock_config_set_connections(cfg, o->connections);
    if (rc == 0 && o->stats_off) /* what counting costs (docs/observability.md) */
        rc = rlock_config_set_stats(cfg, 0);
    if (rc == 0 && o->barging) /* Redisson's waiting */
        rc = rlock_config_set_lock_barging(cfg, 1);
    if (rc == 0 && o->queue_off) /* every waiter on Redisson's channel */
        rc = rlock_config_set_lock_queue(cfg, 0);
    if (rc == 0)
        rc = rlock_client_connect_with(out, o->url, cfg);
    rlock_config_free(cfg);
    if (rc != 0)
        fprintf(stderr, "rlock-bench: cannot connect rlock to %s: %s\n", o->url,
                rlock_strerror(rc));
    return rc;
}

/* Parses argv into o; returns 0, or 2 on a usage error. */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},
        {"scenario", required_argument, NULL, 's'},
        {"workers", required_argument, NULL, 'w'},
        {"seconds", required_argument, NULL, 't'},
        {"procs", no_argument, NULL, 'p'},
        {"kind", required_argument, NULL, 'K'},
        {"locks", required_argument, NULL, 'k'},
        {"watchdog-ms", required_argument, NULL, 'd'},
        {"connections", required_argument, NULL, 'c'},
        {"limit-seconds", required_argument, NULL, 'l'},
        {"prefix", required_argument, NULL, 'x'},
        {"stats", required_argument, NULL, 'S'},
        {"barging", required_argument, NULL, 'B'},
        {"queue", required_argument, NULL, 'Q'},
        {"java-procs", required_argument, NULL, 'J'},
        {"java-driver", required_argument, NULL, 'D'},
        {"java-warmup", required_argument, NULL, 'W'},
        {"names", required_argument, NULL, 'N'},
        {"waiters", required_argument, NULL, 'V'},
        {"inflight", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (bench_opts){
        .workers = 1, .seconds = 5, .locks = 10000, .limit_seconds = 1,
        .kind = "lock", .java_procs = 1, .java_warmup = 3, .waiters = 10000,
        .inflight = 128};
    snprintf(o->prefix, sizeof(o->prefix), "rlock-bench:%ld:", (long)getpid());
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'u':
            o->url = optarg;
            break;
        case 's':
            o->scenario = optarg;
            break;
        case 'w':
            o->workers = atoi(optarg);
            break;
        case 't':
            o->seconds = atof(optarg);
            break;
        case 'p':
            o->procs = true;
            break;
        case 'K':
            o->kind = optarg;
            break;
        case 'k':
            o->locks = atoi(optarg);
            break;
        case 'd':
            o->watchdog_ms = atoll(optarg);
            break;
        case 'c':
            o->connections = atoi(optarg);
            break;
        case 'l':
            o->limit_seconds = atof(optarg);
            break;
        case 'x':
            snprintf(o->prefix, sizeof(o->prefix), "%s", optarg);
            break;
        case 'S':
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                usage(stderr);
                return 2;
            }
            o->stats_off = strcmp(optarg, "off") == 0;
            break;
        case 'B':
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                usage(stderr);
                return 2;
            }
            o->barging = strcmp(optarg, "on") == 0;
            break;
        case 'Q':
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                usage(stderr);
                return 2;
            }
            o->queue_off = strcmp(optarg, "off") == 0;
            break;
        case 'J':
            o->java_procs = atoi(optarg);
            break;
        case 'D':
            o->java_driver = optarg;
            break;
        case 'W':
            o->java_warmup = atof(optarg);
            break;
        case 'N':
            o->names = atoi(optarg);
            break;
        case 'V':
            o->waiters = atoi(optarg);
            break;
        case 'I':
            o->inflight = atoi(optarg);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (o->url == NULL || o->scenario == NULL || optind != argc ||
        o->workers < 0 || o->seconds <= 0 || o->locks < 1 ||
        o->watchdog_ms < 0 || o->limit_seconds < 0 || o->names < 0 ||
        o->waiters < 1 || o->inflight < 1 ||
        bench_kind_get(o->kind, NULL, NULL, NULL, NULL) == RLOCK_EINVAL) {
        usage(stderr);
        return 2;
    }
    if (strcmp(o->scenario, "held") == 0 && o->watchdog_ms == 0)
        o->watchdog_ms = 1000;
    if (strcmp(o->scenario, "mixed-java") != 0) {
        o->java_procs = 0; /* the JVMs are that scenario's alone */
        if (o->workers < 1) { /* only mixed-java has another side */
            usage(stderr);
            return 2;
        }
    } else if (o->java_procs < 1 || o->java_driver == NULL ||
               o->java_warmup < 0) {
        usage(stderr);
        return 2;
    } else {
        o->procs = true; /* one JVM per Java process, so rlock's alike */
    }
    if (o->names == 0) /* the scale each scenario is about */
        o->names = strcmp(o->scenario, "names") == 0 ? 1000000 : 1000;
    if (strcmp(o->scenario, "waiters") == 0 && o->waiters < o->names) {
        usage(stderr);
        return 2;
    }
    return bench_parse_url(o) == 0 ? 0 : 2;
}

static double num(json_t *obj, const char *key)
{
    return json_number_value(json_object_get(obj, key));
}

/* Adds "vs_limit": each figure over its floor (see the file comment). */
static void add_ratios(const bench_opts *o, const bench_limit *l, json_t *out)
{
    json_t *r = json_object();
    double cycle = l->evalsha_lock_p50_us + l->evalsha_unlock_p50_us;
    double handoff = l->ping_p50_us + l->evalsha_lock_p50_us;
    if (strcmp(o->scenario, "uncontended") == 0 ||
        strcmp(o->scenario, "parallel") == 0) {
        bench_set_num(r, "p50_us", num(out, "p50_us") / cycle);
        bench_set_num(r, "p99_us", num(out, "p99_us") / cycle);
        bench_set_num(r, "cycles_per_s",
                      num(out, "cycles_per_s") / l->pairs_per_s);
    } else if (strcmp(o->scenario, "contended") == 0) {
        double path = 3 * l->ping_p50_us + cycle;
        bench_set_num(r, "handoff_p50_us",
                      num(out, "handoff_p50_us") / handoff);
        bench_set_num(r, "handoff_p99_us",
                      num(out, "handoff_p99_us") / handoff);
        bench_set_num(r, "acq_per_s", num(out, "acq_per_s") / (1e6 / path));
    }
    bench_set_num(r, "floor_cycle_us", cycle);
    bench_set_num(r, "floor_handoff_us", handoff);
    json_object_set_new(out, "vs_limit", r);
}

/* The concurrency of the limit's pairs_per_s: that of the scenario's
 * cycles (one thread, except in "parallel" and "limit"). */
static int limit_conns(const bench_opts *o)
{
    if (strcmp(o->scenario, "parallel") == 0 ||
        strcmp(o->scenario, "limit") == 0)
        return o->workers;
    return 1;
}

static int run(const bench_opts *o, json_t *out)
{
    if (strcmp(o->scenario, "uncontended") == 0)
        return bench_run_uncontended(o, out);
    if (strcmp(o->scenario, "parallel") == 0)
        return bench_run_parallel(o, out);
    if (strcmp(o->scenario, "contended") == 0 ||
        strcmp(o->scenario, "mixed-java") == 0)
        return bench_run_contended(o, out);
    if (strcmp(o->scenario, "held") == 0)
        return bench_run_held(o, out);
    if (strcmp(o->scenario, "fanout") == 0)
        return bench_run_fanout(o, out);
    if (strcmp(o->scenario, "ring") == 0)
        return bench_run_ring(o, out);
    if (strcmp(o->scenario, "waiters") == 0)
        return bench_run_waiters(o, out);
    if (strcmp(o->scenario, "names") == 0)
        return bench_run_names(o, out);
    fprintf(stderr, "rlock-bench: unknown scenario '%s'\n", o->scenario);
    return -1;
}

int main(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    json_t *out = json_object();
    json_object_set_new(out, "scenario", json_string(o.scenario));
    json_object_set_new(out, "library", json_string("rlock"));
    json_object_set_new(out, "workers", json_integer(o.workers));
    bench_set_num(out, "seconds", o.seconds);
    json_object_set_new(out, "stats", json_boolean(!o.stats_off));
    json_object_set_new(out, "barging", json_boolean(o.barging));
    json_object_set_new(out, "queue", json_boolean(!o.queue_off));

    redisContext *c = bench_connect(&o);
    char version[32] = "";
    if (c != NULL) {
        bench_redis_version(c, version, sizeof(version));
        redisFree(c);
    }
    json_object_set_new(out, "redis_version", json_string(version));
    json_object_set_new(out, "rlock_version",
                        json_string(rlock_version_string()));

    bench_limit lim;
    bool is_limit = strcmp(o.scenario, "limit") == 0;
    bool with_limit = is_limit || o.limit_seconds > 0;
    rc = c == NULL ? -1 : 0;
    if (rc == 0 && with_limit)
        rc = bench_limit_measure(&o, is_limit ? o.seconds : o.limit_seconds,
                                 limit_conns(&o), &lim);
    if (rc == 0 && is_limit) {
        json_t *figures = bench_limit_json(&lim);
        json_object_update(out, figures);
        json_decref(figures);
    }
    if (rc == 0 && !is_limit)
        rc = run(&o, out);
    if (rc == 0 && with_limit && !is_limit) {
        json_object_set_new(out, "limit", bench_limit_json(&lim));
        add_ratios(&o, &lim, out);
    }

    int status = 0;
    if (rc != 0) {
        json_object_set_new(out, "error", json_string("run failed"));
        status = 1;
    } else if (num(out, "lost_increments") != 0 || num(out, "expired") != 0 ||
               num(out, "failed") != 0 || num(out, "keys_left") != 0 ||
               num(out, "woken_before_unlock") != 0) {
        status = 3;
    }
    json_object_set_new(out, "ok", json_boolean(status == 0));
    char *text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                     JSON_REAL_PRECISION(6));
    if (text != NULL)
        printf("%s\n", text);
    free(text);
    json_decref(out);
    return status;
}
