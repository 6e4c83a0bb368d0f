/*
 * held.c: the "held" scenario: --locks K locks (default 10,000) taken with
 * rlock_lock(), so under the watchdog, and kept for several watchdog
 * timeouts (a short --watchdog-ms, default 1000, keeps the run quick).
 *
 * The locks are taken by --workers holder threads (the owner of a lock is
 * its thread, and a thread that exits abandons its holds, so the holders
 * stay alive until they unlock). While they hold, the main thread sweeps
 * the PTTL of every lock with one pipeline every tenth of the timeout, or
 * less often when a sweep itself takes longer than a fortieth of it (at
 * 100,000 locks and a short timeout, sweeping every tenth would keep Redis
 * busier with the probes than with the renewals measured): a sweep at most
 * a quarter of the time.
 * Figures:
 *   locks                      K
 *   expired                    locks seen without a lease left (PTTL <= 0
 *                              or gone) by any sweep, or whose unlock said
 *                              RLOCK_ELOST; must be 0
 *   min_pttl_ms                the smallest lease a sweep saw
 *   renew_roundtrips_per_tick  script calls Redis ran during the hold
 *                              (INFO commandstats EVAL/EVALSHA; nothing but
 *                              renewals runs scripts then) per watchdog tick
 *                              (a third of the timeout)
 *   bytes_per_lock             client heap (glibc mallinfo2, every arena)
 *                              grown per held lock, handles included
 *   rss_bytes_per_lock         the same from the resident set size
 *   setup_s, acquire_per_s     the time taking the K locks took, and its
 *                              rate (--workers holder threads)
 *   renewals_per_tick          holds the watchdog renewed per tick (the
 *                              client's statistics)
 *   lease_margin_min_ms        the least lease a renewal's reply found left
 *                              (the client's statistics): how near a lock
 *                              came to expiring, seen by the client
 *   redis_cpu_us_per_s         Redis's CPU time (INFO cpu, sys + user) per
 *                              second of the hold: renewals, probes and all
 *   renew_script_us_per_s      of it, the time inside the renewal scripts
 *                              (INFO commandstats usec of EVALSHA/EVAL)
 *   sweep_us_per_s             ... and inside the probes' PTTLs, to tell
 *                              the benchmark's own share apart
 *   nodes                      the nodes probed and counted: 1, or every
 *                              seed of a redis+cluster:// URL, whose
 *                              counters are summed (replicas included:
 *                              their CPU is part of what renewals cost)
 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nodes a cluster's URL may name: 3 masters and their replicas. */
#define MAX_NODES 16

typedef struct holders {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int acquired; /* holder threads done acquiring */
    bool release; /* set by the main thread */
} holders;

typedef struct holder {
    const bench_opts *o;
    rlock_client *client;
    holders *hs;
    int first, count; /* its slice of the lock names */
    long long lost;   /* unlocks answering RLOCK_ELOST */
    int rc;
} holder;

static void lock_name(const bench_opts *o, int i, char *out, size_t len)
{
    snprintf(out, len, "%sheld:%d", o->prefix, i);
}

static void *holder_main(void *arg)
{
    holder *h = arg;
    rlock **ls = calloc((size_t)h->count, sizeof(*ls));
    char name[160];
    int n = 0;
    h->rc = ls == NULL ? RLOCK_ENOMEM : 0;
    for (; h->rc == 0 && n < h->count; n++) {
        lock_name(h->o, h->first + n, name, sizeof(name));
        if ((h->rc = rlock_get(h->client, name, &ls[n])) != 0)
            break;
        if ((h->rc = rlock_lock(ls[n])) != 0) {
            rlock_free(ls[n]);
            break;
        }
    }
    pthread_mutex_lock(&h->hs->mu);
    h->hs->acquired++;
    pthread_cond_broadcast(&h->hs->cv);
    while (!h->hs->release)
        pthread_cond_wait(&h->hs->cv, &h->hs->mu);
    pthread_mutex_unlock(&h->hs->mu);
    for (int i = 0; i < n; i++) {
        int rc = rlock_unlock(ls[i]);
        if (rc == RLOCK_ELOST)
            h->lost++;
        else if (rc != 0 && h->rc == 0)
            h->rc = rc;
        rlock_free(ls[i]);
    }
    if (h->rc != 0)
        fprintf(stderr, "rlock-bench: holder: %s\n", rlock_strerror(h->rc));
    free(ls);
    return NULL;
}

/* One pipelined PTTL sweep over every lock, on every node: marks the ones
 * without a lease in gone[] and lowers *min_pttl. On a cluster every node
 * is asked about every lock, and only the one serving its slot answers
 * with a number (the others with MOVED), which spares the benchmark a map
 * of the slots. Returns 0 or -1. */
static int sweep(const bench_opts *o, redisContext **nodes, int nn,
                 unsigned char *gone, long long *min_pttl)
{
    char name[160];
    for (int k = 0; k < nn; k++) {
        for (int i = 0; i < o->locks; i++) {
            lock_name(o, i, name, sizeof(name));
            if (redisAppendCommand(nodes[k], "PTTL %s", name) != REDIS_OK)
                return -1;
        }
    }
    for (int k = 0; k < nn; k++) {
        for (int i = 0; i < o->locks; i++) {
            redisReply *r = NULL;
            if (redisGetReply(nodes[k], (void **)&r) != REDIS_OK || r == NULL)
                return -1;
            if (r->type == REDIS_REPLY_INTEGER) {
                if (r->integer <= 0)
                    gone[i] = 1;
                else if (*min_pttl < 0 || r->integer < *min_pttl)
                    *min_pttl = r->integer;
            }
            freeReplyObject(r);
        }
    }
    return 0;
}

/* The counters summed over every node; returns 0 or -1. */
static int counters_read(redisContext **nodes, int nn, bench_counters *sum)
{
    memset(sum, 0, sizeof(*sum));
    for (int k = 0; k < nn; k++) {
        bench_counters one;
        if (bench_counters_read(nodes[k], &one) != 0)
            return -1;
        bench_counters_add(sum, &one);
    }
    return 0;
}

int bench_run_held(const bench_opts *o, json_t *out)
{
    int nh = o->workers > 0 && o->workers <= o->locks ? o->workers : 1;
    holders hs = {.mu = PTHREAD_MUTEX_INITIALIZER,
                  .cv = PTHREAD_COND_INITIALIZER};
    holder *h = calloc((size_t)nh, sizeof(*h));
    pthread_t *tid = calloc((size_t)nh, sizeof(*tid));
    unsigned char *gone = calloc((size_t)o->locks, 1);
    rlock_client *client = NULL;
    redisContext *nodes[MAX_NODES];
    int nn = bench_connect_nodes(o, nodes, MAX_NODES);
    bench_counters before, after;
    int rc = -1, started = 0;
    if (h == NULL || tid == NULL || gone == NULL || nn < 1 ||
        bench_client(o, &client) != 0)
        goto out;

    long long heap0 = bench_heap_bytes(), rss0 = bench_rss_bytes();
    int64_t t0 = bench_now_ns();
    for (; started < nh; started++) {
        int per = o->locks / nh;
        h[started] = (holder){
            .o = o,
            .client = client,
            .hs = &hs,
            .first = started * per,
            .count = started == nh - 1 ? o->locks - started * per : per};
        if (pthread_create(&tid[started], NULL, holder_main, &h[started]))
            break;
    }
    pthread_mutex_lock(&hs.mu);
    while (hs.acquired < started)
        pthread_cond_wait(&hs.cv, &hs.mu);
    pthread_mutex_unlock(&hs.mu);
    int64_t t1 = bench_now_ns();
    rc = started == nh ? 0 : -1;
    for (int i = 0; i < started; i++)
        if (h[i].rc != 0)
            rc = -1;

    /* hold for --seconds, and at least three timeouts */
    int64_t hold = (int64_t)(o->seconds * 1e9);
    if (hold < o->watchdog_ms * 3000000)
        hold = o->watchdog_ms * 3000000;
    int64_t every = o->watchdog_ms * 100000; /* a tenth of the timeout */
    long long min_pttl = -1;
    rlock_stats st0 = RLOCK_STATS_INIT, st1 = RLOCK_STATS_INIT;
    if (rc == 0 && counters_read(nodes, nn, &before) != 0)
        rc = -1;
    /* with --stats off these stay zero and the margin says -1 */
    if (rlock_client_stats(client, &st0) != 0)
        st0.lease_margin_min_ms = -1;
    int64_t hold_start = bench_now_ns(), sweeps = 0;
    while (rc == 0 && bench_now_ns() - hold_start < hold) {
        int64_t s0 = bench_now_ns();
        if (sweep(o, nodes, nn, gone, &min_pttl) != 0)
            rc = -1;
        sweeps++;
        int64_t took = bench_now_ns() - s0;
        bench_sleep_ns(took * 3 > every - took ? took * 3 : every - took);
    }
    int64_t hold_ns = bench_now_ns() - hold_start;
    if (rlock_client_stats(client, &st1) != 0)
        st1.lease_margin_min_ms = -1;
    long long heap1 = bench_heap_bytes(), rss1 = bench_rss_bytes();
    if (rc == 0 && counters_read(nodes, nn, &after) != 0)
        rc = -1;

    pthread_mutex_lock(&hs.mu);
    hs.release = true;
    pthread_cond_broadcast(&hs.cv);
    pthread_mutex_unlock(&hs.mu);
    long long lost = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        lost += h[i].lost;
        if (h[i].rc != 0)
            rc = -1;
    }
    if (rc != 0)
        goto out;

    long long expired = 0;
    for (int i = 0; i < o->locks; i++)
        expired += gone[i];
    if (lost > expired)
        expired = lost;
    double ticks = (double)hold_ns / ((double)o->watchdog_ms * 1e6 / 3.0);
    json_object_set_new(out, "locks", json_integer(o->locks));
    json_object_set_new(out, "expired", json_integer(expired));
    bench_set_num(out, "renew_roundtrips_per_tick",
                  (double)(after.script_calls - before.script_calls) / ticks);
    bench_set_num(out, "bytes_per_lock",
                  (double)(heap1 - heap0) / (double)o->locks);
    bench_set_num(out, "rss_bytes_per_lock",
                  (double)(rss1 - rss0) / (double)o->locks);
    json_object_set_new(out, "min_pttl_ms", json_integer(min_pttl));
    json_object_set_new(out, "watchdog_ms", json_integer(o->watchdog_ms));
    bench_set_num(out, "hold_s", (double)hold_ns / 1e9);
    bench_set_num(out, "watchdog_periods",
                  (double)hold_ns / ((double)o->watchdog_ms * 1e6));
    json_object_set_new(out, "sweeps", json_integer(sweeps));
    bench_set_num(out, "acquire_per_s",
                  (double)o->locks / ((double)(t1 - t0) / 1e9));
    json_object_set_new(out, "holder_threads", json_integer(nh));
    json_object_set_new(out, "nodes", json_integer(nn));
    bench_set_num(out, "setup_s", (double)(t1 - t0) / 1e9);
    bench_set_num(out, "renewals_per_tick",
                  (double)(st1.renewals_sent - st0.renewals_sent) / ticks);
    json_object_set_new(out, "lease_margin_min_ms",
                        json_integer(st1.lease_margin_min_ms));
    double hold_s = (double)hold_ns / 1e9;
    bench_set_num(out, "redis_cpu_us_per_s",
                  (double)(after.cpu_us - before.cpu_us) / hold_s);
    bench_set_num(out, "renew_script_us_per_s",
                  (double)(after.script_usec - before.script_usec) / hold_s);
    bench_set_num(out, "sweep_us_per_s",
                  (double)(after.pttl_usec - before.pttl_usec) / hold_s);
out:
    rlock_client_free(client);
    for (int k = 0; k < nn; k++)
        redisFree(nodes[k]);
    free(h);
    free(tid);
    free(gone);
    return rc;
}
