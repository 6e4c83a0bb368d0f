/*
 * stats.c: clocks and latency samples for rlock-bench.
 *
 * Every timestamp is CLOCK_MONOTONIC, which is one clock for all processes
 * of the machine: the contended scenario compares a time taken in one
 * process with a time taken in another. Samples are kept whole (a few
 * million at most) and sorted once for percentiles, so the percentiles are
 * exact rather than bucketed.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000),
                          .tv_nsec = (long)(ns % 1000000000)};
    if (ns <= 0)
        return;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Doubles the array when full; the hot loops call this once per cycle, so
 * it must stay cheap (amortised one store). */
int bench_samples_add(bench_samples *s, int64_t ns)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        int64_t *grown = realloc(s->v, sizeof(*grown) * cap);
        if (grown == NULL)
            return -1;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = ns;
    return 0;
}

int bench_samples_merge(bench_samples *dst, const bench_samples *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (bench_samples_add(dst, src->v[i]) != 0)
            return -1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile: the smallest sample with at least p% of the
 * samples at or below it. */
double bench_samples_pct_us(bench_samples *s, double p)
{
    if (s->n == 0)
        return 0;
    qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
    size_t rank = (size_t)ceil(p / 100.0 * (double)s->n);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

int64_t bench_samples_max(const bench_samples *s)
{
    int64_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] > m)
            m = s->v[i];
    return m;
}

void bench_samples_free(bench_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* Three significant digits: more would be noise on a shared machine, and
 * the JSON stays readable. Non-finite values become -1. */
double bench_round(double x)
{
    if (x == 0 || !isfinite(x))
        return isfinite(x) ? 0 : -1;
    double mag = pow(10, 2 - floor(log10(fabs(x))));
    if (mag < 1)
        return round(x);
    return round(x * mag) / mag;
}

/* Whole values go out as JSON integers, others as reals. */
void bench_set_num(json_t *obj, const char *key, double v)
{
    double r = bench_round(v);
    if (r == floor(r) && fabs(r) < 9e15)
        json_object_set_new(obj, key, json_integer((json_int_t)r));
    else
        json_object_set_new(obj, key, json_real(r));
}
