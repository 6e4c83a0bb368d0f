/*
 * side.c: the figures of one side of the "mixed-java" scenario, rlock's
 * processes or the Java Redisson JVMs, so that the two can be read side
 * by side: does either starve the other on the lock they share?
 */
#include "bench.h"

#include <stdlib.h>

json_t *bench_side_json(bench_side *s)
{
    json_t *out = json_object(), *acq = json_array();
    long long total = 0, min_acq = -1, max_acq = 0;
    for (int i = 0; i < s->workers; i++) {
        total += s->acq[i];
        if (min_acq < 0 || s->acq[i] < min_acq)
            min_acq = s->acq[i];
        if (s->acq[i] > max_acq)
            max_acq = s->acq[i];
        json_array_append_new(acq, json_integer(s->acq[i]));
    }
    json_object_set_new(out, "procs", json_integer(s->workers));
    json_object_set_new(out, "acquisitions", json_integer(total));
    bench_set_num(out, "acq_per_s",
                  s->seconds > 0 ? (double)total / s->seconds : 0);
    json_object_set_new(out, "min_acq", json_integer(min_acq < 0 ? 0 : min_acq));
    json_object_set_new(out, "max_acq", json_integer(max_acq));
    json_object_set_new(out, "acq", acq);
    bench_set_num(out, "max_wait_ms",
                  (double)bench_samples_max(&s->waits) / 1e6);
    bench_set_num(out, "wait_p50_us", bench_samples_pct_us(&s->waits, 50));
    bench_set_num(out, "wait_p99_us", bench_samples_pct_us(&s->waits, 99));
    return out;
}

void bench_side_free(bench_side *s)
{
    free(s->acq);
    bench_samples_free(&s->waits);
}
