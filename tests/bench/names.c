/*
 * names.c: the "names" scenario: --names N distinct lock names (default
 * 1,000,000), each locked and released once, in one process, through
 * rlock's async API with --inflight cycles at once (default 128) on one
 * libev loop (evloop.c): does the client forget a name once it is done
 * with it, and does Redis?
 *
 * A cycle is rlock_get() of a fresh name, rlock_lock_async() with the
 * watchdog's lease, rlock_unlock_async() from its completion, and
 * rlock_free() from the unlock's; then the slot starts the next name.
 * Figures:
 *   names, completed, failed   N; cycles that locked and unlocked; the
 *                              others (failed must be 0)
 *   cycles_per_s               N over the run's wall time
 *   heap_before_bytes,         the client heap (glibc mallinfo2) before
 *   heap_after_bytes           the first cycle and after the last, and
 *   heap_growth_per_name       the difference per name: about 0 when
 *                              nothing of a name stays behind
 *   heap_samples_bytes         ten samples taken along the run, one every
 *   heap_peak_bytes            tenth of the names, and the largest
 *   rss_before_bytes,          the same from the resident set
 *   rss_after_bytes
 *   keys_left                  keys named after the scenario's names still
 *                              in Redis once the last cycle ended (SCAN,
 *                              again for up to 1 s while some are left,
 *                              for the last latch DELs in flight): what
 *                              rlock left behind (must be 0)
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define SAMPLES 10

typedef struct run run;

typedef struct slot {
    run *r;
    rlock *l;
    uint64_t owner;
} slot;

struct run {
    const bench_opts *o;
    rlock_client *client;
    bench_loop *loop;
    atomic_int next;      /* the next name to take */
    atomic_int completed; /* cycles done, well or not */
    atomic_int failed;
    long long heap[SAMPLES]; /* loop thread */
};

static void start_next(slot *s);

/* Counts one name's cycle as done, samples the heap every tenth of the
 * names, and stops the loop after the last; returns true then. */
static bool count_done(run *r, bool ok)
{
    if (!ok)
        atomic_fetch_add(&r->failed, 1);
    int done = atomic_fetch_add(&r->completed, 1) + 1;
    int tenth = r->o->names / SAMPLES;
    if (tenth > 0 && done % tenth == 0 && done / tenth <= SAMPLES)
        r->heap[done / tenth - 1] = bench_heap_bytes();
    if (done < r->o->names)
        return false;
    bench_loop_stop(r->loop);
    return true;
}

/* Ends slot s's cycle and starts its next name. */
static void cycle_done(slot *s, bool ok)
{
    rlock_free(s->l);
    s->l = NULL;
    if (!count_done(s->r, ok))
        start_next(s);
}

static void on_unlocked(rlock *l, uint64_t owner, int status, void *arg)
{
    (void)l;
    (void)owner;
    cycle_done(arg, status == 0);
}

static void on_locked(rlock *l, uint64_t owner, int status, void *arg)
{
    slot *s = arg;
    if (status != 0 || rlock_unlock_async(l, owner, on_unlocked, s) != 0)
        cycle_done(s, false);
}

/* Takes the next name for s, if any is left. A call that cannot start
 * counts as a failed cycle and the slot goes on to the next name, in this
 * loop rather than by recursion, so that a client that refuses every call
 * ends the run instead of the stack. */
static void start_next(slot *s)
{
    run *r = s->r;
    char name[160];
    for (;;) {
        int i = atomic_fetch_add(&r->next, 1);
        if (i >= r->o->names)
            return;
        snprintf(name, sizeof(name), "%sname:%d", r->o->prefix, i);
        s->owner = rlock_owner_new();
        if (rlock_get(r->client, name, &s->l) == 0) {
            if (rlock_lock_async(s->l, s->owner, 30000, RLOCK_LEASE_WATCHDOG,
                                 on_locked, s) == 0)
                return;
            rlock_free(s->l);
        }
        s->l = NULL;
        if (count_done(r, false))
            return;
    }
}

/* Counts the keys of the scenario's names, lock hashes and rlock's keys
 * named after them alike (the unlock latch, the queue), with SCAN: the
 * benchmark's own keys (the floor's latches) are not counted. -1 on
 * failure. */
static long long keys_of_names(const bench_opts *o, redisContext *c)
{
    long long n = 0;
    char cursor[32] = "0";
    do {
        redisReply *rp = redisCommand(c, "SCAN %s MATCH *%sname:* COUNT 1000",
                                      cursor, o->prefix);
        if (rp == NULL || rp->type != REDIS_REPLY_ARRAY || rp->elements != 2) {
            freeReplyObject(rp);
            return -1;
        }
        snprintf(cursor, sizeof(cursor), "%s", rp->element[0]->str);
        n += (long long)rp->element[1]->elements;
        freeReplyObject(rp);
    } while (cursor[0] != '0' || cursor[1] != '\0');
    return n;
}

int bench_run_names(const bench_opts *o, json_t *out)
{
    int inflight = o->inflight < o->names ? o->inflight : o->names;
    run r = {.o = o};
    slot *slots = calloc((size_t)inflight, sizeof(*slots));
    redisContext *c = bench_connect(o);
    int rc = -1;
    if (slots == NULL || c == NULL || bench_client(o, &r.client) != 0)
        goto out;
    r.loop = bench_loop_start(r.client);
    if (r.loop == NULL)
        goto out;

    long long heap0 = bench_heap_bytes(), rss0 = bench_rss_bytes();
    int64_t t0 = bench_now_ns();
    for (int i = 0; i < inflight; i++) {
        slots[i].r = &r;
        start_next(&slots[i]);
    }
    bench_loop_join(r.loop); /* the last cycle stops it */
    r.loop = NULL;
    int64_t t1 = bench_now_ns();
    long long heap1 = bench_heap_bytes(), rss1 = bench_rss_bytes();
    /* an unlock's latch DEL goes out behind its reply, so the last ones
     * may still be on their way: look again for up to a second (a latch
     * that was left behind lives for the client's latch time, 18 s by
     * default, so it is still seen) */
    long long left = keys_of_names(o, c);
    for (int i = 0; i < 20 && left > 0; i++) {
        bench_sleep_ns(50000000);
        left = keys_of_names(o, c);
    }
    if (left < 0)
        goto out;
    rc = 0;

    long long peak = heap1;
    for (int i = 0; i < SAMPLES; i++)
        if (r.heap[i] > peak)
            peak = r.heap[i];
    json_object_set_new(out, "names", json_integer(o->names));
    json_object_set_new(out, "inflight", json_integer(inflight));
    json_object_set_new(out, "completed",
                        json_integer(r.completed - r.failed));
    json_object_set_new(out, "failed", json_integer(r.failed));
    bench_set_num(out, "cycles_per_s",
                  (double)o->names / ((double)(t1 - t0) / 1e9));
    json_object_set_new(out, "heap_before_bytes", json_integer(heap0));
    json_object_set_new(out, "heap_after_bytes", json_integer(heap1));
    bench_set_num(out, "heap_growth_per_name",
                  (double)(heap1 - heap0) / (double)o->names);
    json_object_set_new(out, "heap_peak_bytes", json_integer(peak));
    json_t *samples = json_array();
    for (int i = 0; i < SAMPLES; i++)
        json_array_append_new(samples, json_integer(r.heap[i]));
    json_object_set_new(out, "heap_samples_bytes", samples);
    json_object_set_new(out, "rss_before_bytes", json_integer(rss0));
    json_object_set_new(out, "rss_after_bytes", json_integer(rss1));
    json_object_set_new(out, "keys_left", json_integer(left));
out:
    bench_loop_join(r.loop);
    rlock_client_free(r.client);
    redisFree(c);
    free(slots);
    return rc;
}
