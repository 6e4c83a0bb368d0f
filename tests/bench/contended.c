/*
 * contended.c: the "contended" scenario: --workers threads (one shared
 * client) or, with --procs, processes (one client each) on one lock.
 *
 * Each worker loops: rlock_lock(); GET counter; SET counter+1 (two
 * separate commands on the worker's own plain connection, so a lock that
 * let two holders in loses an increment); rlock_unlock(). Figures:
 *   acq_per_s            acquisitions per second, all workers
 *   lost_increments      acquisitions minus the counter's final value
 *   handoff_p50_us/p99   from one holder's rlock_unlock() returning to the
 *                        next holder's rlock_lock() returning (0 when the
 *                        next lock returned first, as it may: the unlock
 *                        reply and the next acquire reply race)
 *   hold_p50_us          from rlock_lock() returning to rlock_unlock()
 *                        returning: the two round trips and the unlock
 *   max_wait_ms          the longest single rlock_lock() call
 *   min_acq, max_acq     acquisitions of the least and most lucky worker
 *   redis_cmds_per_acq   commands Redis ran (INFO commandstats, including
 *                        the ones scripts run) per acquisition, without the
 *                        benchmark's own GET, SET and INFO
 *   redis_cmds_by_command  the same, command by command ("evalsha": 3.4):
 *                        where a hand-over's commands go
 *   redis_reads_per_acq  request batches Redis read (total_reads_processed)
 *                        per acquisition, without the benchmark's own
 *   same_worker_pct      handoffs where the releasing worker took the lock
 *                        again (barging)
 *
 * Every acquisition is recorded in a region shared by all workers (mmap
 * MAP_SHARED, so processes share it too): its slot is taken while the lock
 * is held, so slot order is acquisition order, and handoff k is
 * records[k].lock_ret - records[k-1].unlock_ret on CLOCK_MONOTONIC, which
 * every process reads alike.
 */
#include "bench.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 1024

typedef struct record {
    int64_t lock_call;  /* rlock_lock() called */
    int64_t lock_ret;   /* rlock_lock() returned */
    int64_t unlock_ret; /* rlock_unlock() returned */
    int64_t worker;
} record;

typedef struct shared {
    atomic_int ready;
    atomic_int go;
    int64_t until;
    atomic_llong nrec;
    long long cap;
    long long acq[MAX_WORKERS];
    int rc[MAX_WORKERS];
    record records[];
} shared;

typedef struct worker {
    const bench_opts *o;
    shared *sh;
    rlock_client *client; /* threads: the shared client; procs: NULL */
    int index;
} worker;

/* Reads the counter, writes it back plus one. Returns 0 or -1. */
static int increment(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return -1;
    }
    long long v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    r = redisCommand(c, "SET %s %lld", key, v + 1);
    int rc = r != NULL && r->type == REDIS_REPLY_STATUS ? 0 : -1;
    freeReplyObject(r);
    return rc;
}

/* One worker's life; returns 0 or an error (also kept in sh->rc). */
int bench_kind_get(const char *kind, rlock_client *c, const char *name,
                   rlock **l, rlock_rw **rw)
{
    static const char *const kinds[] = {"lock", "fair", "spin", "fenced",
                                        "write"};
    size_t k = 0;
    while (k < sizeof(kinds) / sizeof(*kinds) && strcmp(kind, kinds[k]) != 0)
        k++;
    if (k == sizeof(kinds) / sizeof(*kinds))
        return RLOCK_EINVAL;
    if (c == NULL)
        return RLOCK_OK;
    switch (k) {
    case 1:
        return rlock_fair_get(c, name, l);
    case 2:
        return rlock_spin_get(c, name, l);
    case 3:
        return rlock_fenced_get(c, name, l);
    case 4: {
        int rc = rlock_rw_get(c, name, rw);
        if (rc == 0)
            *l = rlock_rw_write(*rw);
        return rc;
    }
    default:
        return rlock_get(c, name, l);
    }
}

static int worker_run(worker *w)
{
    const bench_opts *o = w->o;
    shared *sh = w->sh;
    rlock_client *client = w->client;
    redisContext *c = bench_connect(o);
    rlock *l = NULL;
    rlock_rw *rw = NULL;
    char name[160], counter[160];
    int rc = -1;
    snprintf(name, sizeof(name), "%scontended", o->prefix);
    snprintf(counter, sizeof(counter), "%scounter", o->prefix);
    if (c == NULL)
        goto out_ready;
    if (client == NULL && (rc = bench_client(o, &client)) != 0)
        goto out_ready;
    if ((rc = bench_kind_get(o->kind, client, name, &l, &rw)) != 0)
        goto out_ready;
    rc = 0;
out_ready:
    atomic_fetch_add(&sh->ready, 1);
    while (rc == 0 && !atomic_load(&sh->go))
        bench_sleep_ns(200000);
    while (rc == 0 && bench_now_ns() < sh->until) {
        record rec = {.lock_call = bench_now_ns(), .worker = w->index};
        if ((rc = rlock_lock(l)) != 0)
            break;
        rec.lock_ret = bench_now_ns();
        long long slot = atomic_fetch_add(&sh->nrec, 1);
        if (increment(c, counter) != 0)
            rc = -1;
        int urc = rlock_unlock(l);
        rec.unlock_ret = bench_now_ns();
        if (rc == 0)
            rc = urc;
        if (slot < sh->cap)
            sh->records[slot] = rec;
        sh->acq[w->index]++;
    }
    if (rc != 0)
        fprintf(stderr, "rlock-bench: contended worker %d: %s\n", w->index,
                rc == -1 ? "Redis error" : rlock_strerror(rc));
    sh->rc[w->index] = rc;
    if (rw != NULL)
        rlock_rw_free(rw);
    else
        rlock_free(l);
    if (w->client == NULL)
        rlock_client_free(client);
    redisFree(c);
    return rc;
}

static void *worker_thread(void *arg)
{
    worker_run(arg);
    return NULL;
}

/* Starts the workers: threads on one client, or forked processes. */
static int start_workers(const bench_opts *o, shared *sh, worker *w,
                         pthread_t *tid, pid_t *pid, rlock_client *client)
{
    for (int i = 0; i < o->workers; i++) {
        w[i] = (worker){.o = o, .sh = sh, .client = client, .index = i};
        if (o->procs) {
            fflush(NULL);
            pid[i] = fork();
            if (pid[i] == 0)
                _exit(worker_run(&w[i]) == 0 ? 0 : 1);
            if (pid[i] < 0)
                return -1;
        } else if (pthread_create(&tid[i], NULL, worker_thread, &w[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

/* mixed-java: the figures of each side, rlock's from the records (n of
 * them, the last unlock at `end`), the JVMs' as they reported them. */
static void report_sides(const bench_opts *o, shared *sh, long long n,
                         int64_t start, int64_t end, bench_side *java,
                         json_t *out)
{
    bench_side mine = {.workers = o->workers,
                       .acq = sh->acq,
                       .seconds = (double)(end - start) / 1e9};
    for (long long k = 0; k < n; k++)
        bench_samples_add(&mine.waits, sh->records[k].lock_ret -
                                           sh->records[k].lock_call);
    json_object_set_new(out, "rlock", bench_side_json(&mine));
    json_object_set_new(out, "java", bench_side_json(java));
    bench_samples_free(&mine.waits); /* acq is the shared region's */
}

/* Fills out from the shared records and counters, and java's figures
 * (mixed-java; NULL otherwise). */
static void report(const bench_opts *o, shared *sh, int64_t start,
                   long long counter, const bench_counters *before,
                   const bench_counters *after, bench_side *java,
                   json_t *out)
{
    long long total = 0, min_acq = -1, max_acq = 0;
    for (int i = 0; i < o->workers; i++) {
        total += sh->acq[i];
        if (min_acq < 0 || sh->acq[i] < min_acq)
            min_acq = sh->acq[i];
        if (sh->acq[i] > max_acq)
            max_acq = sh->acq[i];
    }
    long long n = atomic_load(&sh->nrec);
    if (n > sh->cap)
        n = sh->cap;
    bench_samples handoff = {0}, hold = {0};
    int64_t end = start, max_wait = 0;
    long long same = 0;
    for (long long k = 0; k < n; k++) {
        const record *r = &sh->records[k];
        if (r->unlock_ret > end)
            end = r->unlock_ret;
        if (r->lock_ret - r->lock_call > max_wait)
            max_wait = r->lock_ret - r->lock_call;
        bench_samples_add(&hold, r->unlock_ret - r->lock_ret);
        if (k == 0)
            continue;
        int64_t h = r->lock_ret - sh->records[k - 1].unlock_ret;
        bench_samples_add(&handoff, h > 0 ? h : 0);
        same += r->worker == sh->records[k - 1].worker;
    }
    double elapsed = (double)(end - start) / 1e9;
    if (java != NULL) {
        report_sides(o, sh, n, start, end, java, out);
        for (int i = 0; i < java->workers; i++)
            total += java->acq[i];
        if (java->seconds > elapsed)
            elapsed = java->seconds;
    }
    double acq = total > 0 ? (double)total : 1;
    long long cmds = after->calls - before->calls -
                     (after->info_calls - before->info_calls) - 2 * total;
    long long reads = after->reads - before->reads -
                      (after->info_calls - before->info_calls) - 2 * total;
    bench_set_num(out, "acq_per_s", elapsed > 0 ? (double)total / elapsed : 0);
    json_object_set_new(out, "lost_increments", json_integer(total - counter));
    bench_set_num(out, "redis_cmds_per_acq", (double)cmds / acq);
    bench_set_num(out, "redis_reads_per_acq", (double)reads / acq);
    bench_set_cpu_split(out, before, after, elapsed, acq);
    bench_set_cmds_by_command(out, before, after, acq,
                              (bench_command_calls[]){{"get", total},
                                                      {"set", total},
                                                      {"", 0}});
    /* mixed-java: the records are rlock's acquisitions only (Java holders
     * may come between two of them), so these are the sides' figures */
    if (java == NULL) {
        bench_set_num(out, "handoff_p50_us",
                      bench_samples_pct_us(&handoff, 50));
        bench_set_num(out, "handoff_p99_us",
                      bench_samples_pct_us(&handoff, 99));
        bench_set_num(out, "hold_p50_us", bench_samples_pct_us(&hold, 50));
        bench_set_num(out, "max_wait_ms", (double)max_wait / 1e6);
        json_object_set_new(out, "min_acq", json_integer(min_acq));
        json_object_set_new(out, "max_acq", json_integer(max_acq));
        bench_set_num(out, "same_worker_pct",
                      n > 1 ? 100.0 * (double)same / (double)(n - 1) : 0);
    }
    json_object_set_new(out, "acquisitions", json_integer(total));
    json_object_set_new(out, "procs", json_boolean(o->procs));
    json_object_set_new(out, "kind", json_string(o->kind));
    bench_samples_free(&handoff);
    bench_samples_free(&hold);
}

int bench_run_contended(const bench_opts *o, json_t *out)
{
    long long cap = (long long)(o->seconds * 100000) + 100000;
    size_t size = sizeof(shared) + sizeof(record) * (size_t)cap;
    /* (one more: mixed-java's --workers 0 runs the JVMs alone) */
    worker *w = calloc((size_t)o->workers + 1, sizeof(*w));
    pthread_t *tid = calloc((size_t)o->workers + 1, sizeof(*tid));
    pid_t *pid = calloc((size_t)o->workers + 1, sizeof(*pid));
    rlock_client *client = NULL;
    redisContext *c = NULL;
    bench_jvms *jvms = NULL;
    bench_side java = {0};
    bench_counters before, after;
    char counter[160], name[160];
    int64_t start = 0, cpu = 0;
    int rc = -1;
    shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || w == NULL || tid == NULL || pid == NULL) {
        sh = MAP_FAILED;
        goto out;
    }
    if (o->workers > MAX_WORKERS) {
        fprintf(stderr, "rlock-bench: at most %d workers\n", MAX_WORKERS);
        goto out;
    }
    sh->cap = cap;
    snprintf(counter, sizeof(counter), "%scounter", o->prefix);
    snprintf(name, sizeof(name), "%scontended", o->prefix);
    if ((c = bench_connect(o)) == NULL ||
        bench_cmd_ok(c, "SET %s 0", counter) != 0)
        goto out;
    /* threads share one client, made before they start; processes each
     * make their own after fork() */
    if (!o->procs && bench_client(o, &client) != 0)
        goto out;
    /* mixed-java: the JVMs are up and warm before rlock's workers start */
    if (o->java_procs > 0 && bench_jvms_start(o, &jvms) != 0)
        goto out;
    if (start_workers(o, sh, w, tid, pid, client) != 0) {
        fprintf(stderr, "rlock-bench: cannot start the workers\n");
        atomic_store(&sh->go, 1); /* let the started ones finish */
        goto out_join;
    }
    while (atomic_load(&sh->ready) < o->workers)
        bench_sleep_ns(1000000);
    if (bench_counters_read(c, &before) != 0)
        goto out_join;
    start = bench_now_ns();
    cpu = bench_cpu_ns();
    sh->until = start + (int64_t)(o->seconds * 1e9);
    atomic_store(&sh->go, 1);
    rc = jvms != NULL ? bench_jvms_go(jvms, name, counter) : 0;
out_join:
    for (int i = 0; i < o->workers; i++) {
        if (o->procs && pid[i] > 0) {
            int status = 0;
            waitpid(pid[i], &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                rc = -1;
        } else if (!o->procs && tid[i] != 0) {
            pthread_join(tid[i], NULL);
            if (sh->rc[i] != 0)
                rc = -1;
        }
    }
    if (rc == 0 && jvms != NULL && bench_jvms_collect(jvms, &java) != 0)
        rc = -1;
    if (rc == 0) {
        redisReply *r = redisCommand(c, "GET %s", counter);
        long long value =
            r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
        freeReplyObject(r);
        if (bench_counters_read(c, &after) != 0)
            rc = -1;
        else
            report(o, sh, start, value, &before, &after,
                   jvms != NULL ? &java : NULL, out);
        if (jvms != NULL) {
            json_object_set_new(out, "java_procs", json_integer(o->java_procs));
            json_object_set_new(out, "redisson_version",
                                json_string(bench_jvms_version(jvms)));
            bench_set_num(out, "java_warmup_s", o->java_warmup);
        }
        /* threads only: processes' CPU is not this process's */
        json_int_t acquired =
            json_integer_value(json_object_get(out, "acquisitions"));
        if (!o->procs && acquired > 0)
            bench_set_num(out, "cpu_us_per_acq",
                          (double)(bench_cpu_ns() - cpu) / 1e3 /
                              (double)acquired);
    }
out:
    bench_jvms_free(jvms);
    bench_side_free(&java);
    rlock_client_free(client);
    redisFree(c);
    if (sh != MAP_FAILED)
        munmap(sh, size);
    free(w);
    free(tid);
    free(pid);
    return rc;
}
