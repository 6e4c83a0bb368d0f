/*
 * stats_overhead.c: what the statistics' counting costs, alone, in ns per
 * lock cycle (scripts/bench-stats prints it beside the cycle's own CPU
 * time). End-to-end runs on a busy machine vary by more than the cost they
 * look for; this measures the very calls one uncontended rlock_lock() +
 * rlock_unlock() makes (four clock reads, two histogram records, four
 * counters) in a tight loop, the best of several rounds, on one thread and
 * on two threads counting into the same client at once (the cache lines
 * then move between cores, as under contention).
 *
 *   stats-overhead [ITERATIONS]     prints one JSON object
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stats.h"

static long iterations = 2000000;

/* The counting of one uncontended cycle (lock.c, core/request.c). */
static void one_cycle(rlock__stats *s)
{
    int64_t start = rlock__stats_clock(s);
    rlock__stats_count(s, RLOCK__STAT_ROUND_TRIPS); /* the acquire's reply */
    rlock__stats_acquire_done(s, RLOCK_OK, false, start);
    int64_t held = rlock__stats_clock(s);
    rlock__stats_count(s, RLOCK__STAT_ROUND_TRIPS); /* the release's */
    rlock__stats_hold_done(s, held);
    rlock__stats_count(s, RLOCK__STAT_RELEASES);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct loop_arg {
    rlock__stats *s;
    int64_t ns;
} loop_arg;

static void *loop(void *arg)
{
    loop_arg *a = arg;
    int64_t t0 = now_ns();
    for (long i = 0; i < iterations; i++)
        one_cycle(a->s);
    a->ns = now_ns() - t0;
    return NULL;
}

/* ns per cycle on nthreads threads at once (each thread's own figure,
 * averaged), the best of 7 rounds. */
static double per_cycle(rlock__stats *s, int nthreads)
{
    double best = 1e18;
    for (int round = 0; round < 7; round++) {
        pthread_t t[2];
        loop_arg a[2] = {{s, 0}, {s, 0}};
        for (int i = 0; i < nthreads; i++)
            pthread_create(&t[i], NULL, loop, &a[i]);
        double sum = 0;
        for (int i = 0; i < nthreads; i++) {
            pthread_join(t[i], NULL);
            sum += (double)a[i].ns / (double)iterations;
        }
        if (sum / nthreads < best)
            best = sum / nthreads;
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iterations = atol(argv[1]);
    rlock__stats *s = NULL;
    if (iterations < 1 || rlock__stats_new(&s) != 0)
        return 1;
    double off = per_cycle(NULL, 1); /* the loop itself: statistics off */
    double on = per_cycle(s, 1);
    double on2 = per_cycle(s, 2);
    printf("{\"scenario\":\"stats-overhead\",\"iterations\":%ld,"
           "\"off_ns_per_cycle\":%.1f,\"on_ns_per_cycle\":%.1f,"
           "\"on_2threads_ns_per_cycle\":%.1f}\n",
           iterations, off, on, on2);
    rlock__stats_free(s);
    return 0;
}
