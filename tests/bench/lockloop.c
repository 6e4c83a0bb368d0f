/*
 * lockloop.c: the "uncontended" and "parallel" scenarios.
 *
 * A cycle is rlock_lock() then rlock_unlock() on a lock nobody else wants:
 * the cost of taking and giving back a free lock, two script round trips
 * at best. "uncontended" runs one thread; "parallel" runs --workers threads,
 * each on its own lock name, all through one shared client (the
 * multithreaded-server case), so their calls share the client's few
 * connections. Figures: cycles_per_s (all threads), p50_us and p99_us of
 * one cycle, and cpu_us_per_cycle: the process's CPU time (every thread,
 * rlock's own included) over the timed cycles.
 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cycler {
    rlock_client *client;
    const bench_opts *o;
    int index;
    int64_t start, until; /* CLOCK_MONOTONIC ns */
    bench_samples cycles;
    int64_t last_end;
    int rc;
} cycler;

/* One thread: a warm-up cycle, the start barrier, then timed cycles until
 * `until`. The clock is read once per cycle: a cycle's end is the next
 * one's start, so the loop's own overhead is counted, as a user's would be. */
static void *cycler_main(void *arg)
{
    cycler *w = arg;
    char name[160];
    rlock *l = NULL;
    snprintf(name, sizeof(name), "%scycle:%d", w->o->prefix, w->index);
    w->rc = rlock_get(w->client, name, &l);
    if (w->rc != 0)
        return NULL;
    /* one untimed cycle: thread id, entry and connections are warm */
    if ((w->rc = rlock_lock(l)) != 0 || (w->rc = rlock_unlock(l)) != 0)
        goto out;
    while (bench_now_ns() < w->start)
        bench_sleep_ns(100000);
    int64_t t0 = bench_now_ns();
    while (t0 < w->until) {
        if ((w->rc = rlock_lock(l)) != 0 || (w->rc = rlock_unlock(l)) != 0)
            break;
        int64_t t1 = bench_now_ns();
        if (bench_samples_add(&w->cycles, t1 - t0) != 0) {
            w->rc = RLOCK_ENOMEM;
            break;
        }
        t0 = t1;
    }
    w->last_end = t0;
out:
    if (w->rc != 0)
        fprintf(stderr, "rlock-bench: worker %d: %s\n", w->index,
                rlock_strerror(w->rc));
    rlock_free(l);
    return NULL;
}

/* Runs n cyclers on one client for o->seconds and fills out. */
static int run_cycles(const bench_opts *o, int n, json_t *out)
{
    rlock_client *client = NULL;
    cycler *w = calloc((size_t)n, sizeof(*w));
    pthread_t *tid = calloc((size_t)n, sizeof(*tid));
    bench_samples all = {0};
    int rc = -1, started = 0;
    if (w == NULL || tid == NULL || bench_client(o, &client) != 0)
        goto out;
    int64_t start = bench_now_ns() + 300000000;
    int64_t until = start + (int64_t)(o->seconds * 1e9);
    for (; started < n; started++) {
        w[started] = (cycler){.client = client,
                              .o = o,
                              .index = started,
                              .start = start,
                              .until = until};
        if (pthread_create(&tid[started], NULL, cycler_main, &w[started]))
            break;
    }
    rc = started == n ? 0 : -1;
    bench_sleep_ns(start - bench_now_ns()); /* the warm-up cycles are done */
    int64_t cpu = bench_cpu_ns();
    int64_t end = start;
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        if (w[i].rc != 0 || bench_samples_merge(&all, &w[i].cycles) != 0)
            rc = -1;
        if (w[i].last_end > end)
            end = w[i].last_end;
        bench_samples_free(&w[i].cycles);
    }
    double elapsed = (double)(end - start) / 1e9;
    bench_set_num(out, "cycles_per_s",
                  elapsed > 0 ? (double)all.n / elapsed : 0);
    bench_set_num(out, "p50_us", bench_samples_pct_us(&all, 50));
    bench_set_num(out, "p99_us", bench_samples_pct_us(&all, 99));
    json_object_set_new(out, "cycles", json_integer((json_int_t)all.n));
    cpu = bench_cpu_ns() - cpu;
    bench_set_num(out, "cpu_us_per_cycle",
                  all.n > 0 ? (double)cpu / 1e3 / (double)all.n : 0);
out:
    bench_samples_free(&all);
    rlock_client_free(client);
    free(w);
    free(tid);
    return rc;
}

int bench_run_uncontended(const bench_opts *o, json_t *out)
{
    return run_cycles(o, 1, out);
}

int bench_run_parallel(const bench_opts *o, json_t *out)
{
    return run_cycles(o, o->workers, out);
}
