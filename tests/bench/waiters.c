/*
 * waiters.c: the "waiters" scenario: --waiters W async waiters (default
 * 10,000) on one libev loop, across --names N lock names (default 1,000,
 * so W/N per name), while another client holds every name; then the holder
 * lets go and each name is handed from waiter to waiter.
 *
 * The holder is a second rlock client that takes the N names with
 * rlock_lock() on the main thread. The waiters are one rlock_lock_async()
 * each, with a fresh owner id and a handle of its own (as an event-loop
 * server's requests would have), on a client whose completions run on a
 * libev loop (evloop.c). Once the server's subscription count has settled,
 * the scenario reads the client's heap and the server's subscriptions, and
 * the holder unlocks the names one after another. A waiter's completion
 * unlocks at once (rlock_unlock_async), which hands the name to the next.
 * Figures:
 *   waiters, names             W and N
 *   completed, failed          waiters that got the lock, and the others
 *                              (failed must be 0)
 *   woken_before_unlock        waiters that got the lock before any unlock
 *                              (must be 0)
 *   wake_p50_us, wake_p99_us   from an unlock returning (the holder's
 *   wake_max_ms                rlock_unlock(), or the previous waiter's
 *                              unlock completion) to the next waiter's
 *                              completion on the loop; 0 when the
 *                              completion came first (the replies race)
 *   handovers_per_s            W over the time from the first unlock to the
 *                              last completion
 *   bytes_per_waiter           client heap grown per waiting call, its
 *                              handle included; rss_bytes_per_waiter
 *   subscriptions              channels subscribed on the server, all
 *                              clients (CLIENT LIST sub + ssub), while
 *                              everyone waits
 *   lock_channel_subscribers   the most subscribers any name's Redisson
 *                              channel had (PUBSUB NUMSUB): 1 when the
 *                              client subscribes once per channel
 *   waiting_scripts_per_s      script calls Redis ran per second while
 *                              everyone waited (queued waiters re-try
 *                              every recheck interval to keep their place)
 *   setup_s                    from the first async call to the settled
 *                              subscriptions
 *   unlock_messages,           the waiting client's statistics: messages
 *   rechecks_found_free        heard on lock channels, and locks a waiter
 *                              took on a re-check (its TTL or the recheck
 *                              interval ran out) rather than a message
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run run;

typedef struct waiter {
    run *r;
    rlock *l;
    uint64_t owner;
    int name; /* index of its lock name */
    int turn; /* it was its name's turn-th waiter to get it */
} waiter;

struct run {
    bench_loop *loop;
    int names, per_name, total;
    /* unlocked_at[name * (per_name + 1) + k]: when the k-th unlock of name
     * returned (k = 0 the holder's); woke_at: when its k-th waiter
     * completed. Loop thread only, except unlocked_at[.. + 0] (main,
     * before any waiter of that name can complete, or racing it: then the
     * latency counts as 0). */
    _Atomic int64_t *unlocked_at;
    int64_t *woke_at;
    int *woken; /* completions per name so far, loop thread */
    atomic_int completed, failed, early, unlocked;
    atomic_bool unlocking; /* the holder has started letting go */
};

static void lock_name(const bench_opts *o, int i, char *out, size_t len)
{
    snprintf(out, len, "%swaiters:%d", o->prefix, i);
}

/* Counts one waiter's end, and stops the loop after the last. */
static void finish_one(run *r)
{
    if (atomic_fetch_add(&r->unlocked, 1) + 1 == r->total)
        bench_loop_stop(r->loop);
}

static void on_unlocked(rlock *l, uint64_t owner, int status, void *arg)
{
    waiter *w = arg;
    run *r = w->r;
    (void)l;
    (void)owner;
    /* the turn-th waiter's unlock is its name's (turn + 1)-th */
    atomic_store(&r->unlocked_at[w->name * (r->per_name + 1) + w->turn + 1],
                 bench_now_ns());
    if (status != 0)
        atomic_fetch_add(&r->failed, 1);
    finish_one(r);
}

static void on_locked(rlock *l, uint64_t owner, int status, void *arg)
{
    waiter *w = arg;
    run *r = w->r;
    int64_t now = bench_now_ns();
    if (status != 0) {
        atomic_fetch_add(&r->failed, 1);
        finish_one(r);
        return;
    }
    if (!atomic_load(&r->unlocking))
        atomic_fetch_add(&r->early, 1);
    w->turn = r->woken[w->name]++;
    r->woke_at[w->name * r->per_name + w->turn] = now;
    atomic_fetch_add(&r->completed, 1);
    if (rlock_unlock_async(l, owner, on_unlocked, w) != 0) {
        atomic_fetch_add(&r->failed, 1);
        finish_one(r);
    }
}

/* Subscriptions of every client, from CLIENT LIST; -1 on failure. */
static long long server_subscriptions(redisContext *c)
{
    redisReply *rp = redisCommand(c, "CLIENT LIST");
    long long n = -1;
    if (rp != NULL && rp->type == REDIS_REPLY_STRING) {
        n = 0;
        for (const char *p = rp->str; (p = strstr(p, " sub=")) != NULL; p++)
            n += strtoll(p + 5, NULL, 10);
        for (const char *p = rp->str; (p = strstr(p, " ssub=")) != NULL; p++)
            n += strtoll(p + 6, NULL, 10);
    }
    freeReplyObject(rp);
    return n;
}

/* The most subscribers any name's Redisson channel has; -1 on failure. */
static long long max_channel_subscribers(const bench_opts *o, redisContext *c)
{
    char name[160];
    long long most = 0;
    for (int i = 0; i < o->names; i++) {
        lock_name(o, i, name, sizeof(name));
        redisAppendCommand(c, "PUBSUB NUMSUB redisson_lock__channel:{%s}",
                           name);
    }
    for (int i = 0; i < o->names; i++) {
        redisReply *rp = NULL;
        if (redisGetReply(c, (void **)&rp) != REDIS_OK || rp == NULL)
            return -1;
        if (rp->type == REDIS_REPLY_ARRAY && rp->elements == 2 &&
            rp->element[1]->type == REDIS_REPLY_INTEGER &&
            rp->element[1]->integer > most)
            most = rp->element[1]->integer;
        freeReplyObject(rp);
    }
    return most;
}

/* Waits until the server's subscription count stays the same for half a
 * second (every waiter has tried once and settled on its channel), 30 s
 * at most. Returns the count, or -1. */
static long long settle(redisContext *c)
{
    long long last = -2;
    int same = 0;
    for (int i = 0; i < 300 && same < 5; i++) {
        bench_sleep_ns(100000000);
        long long n = server_subscriptions(c);
        if (n < 0)
            return -1;
        same = n == last && n > 0 ? same + 1 : 0;
        last = n;
    }
    return last;
}

/* Fills the wake-up latencies: each completion against the unlock before
 * it; a completion that came first counts as 0. */
static void wake_latencies(const run *r, bench_samples *s)
{
    for (int n = 0; n < r->names; n++) {
        for (int k = 0; k < r->woken[n]; k++) {
            int64_t woke = r->woke_at[n * r->per_name + k];
            int64_t unl =
                atomic_load(&r->unlocked_at[n * (r->per_name + 1) + k]);
            bench_samples_add(s, unl > 0 && woke > unl ? woke - unl : 0);
        }
    }
}

int bench_run_waiters(const bench_opts *o, json_t *out)
{
    run r = {.names = o->names, .per_name = o->waiters / o->names};
    r.total = r.per_name * o->names;
    rlock_client *holder = NULL, *client = NULL;
    rlock **held = calloc((size_t)o->names, sizeof(*held));
    waiter *ws = calloc((size_t)r.total, sizeof(*ws));
    r.unlocked_at = calloc((size_t)(o->names * (r.per_name + 1)),
                           sizeof(*r.unlocked_at));
    r.woke_at = calloc((size_t)r.total, sizeof(*r.woke_at));
    r.woken = calloc((size_t)o->names, sizeof(*r.woken));
    redisContext *c = bench_connect(o);
    bench_samples wake = {0};
    bench_counters before, after;
    int rc = -1, taken = 0, issued = 0;
    char name[160];
    if (r.per_name < 1 || held == NULL || ws == NULL ||
        r.unlocked_at == NULL || r.woke_at == NULL || r.woken == NULL ||
        c == NULL || bench_client(o, &holder) != 0 ||
        bench_client(o, &client) != 0)
        goto out;
    for (; taken < o->names; taken++) {
        lock_name(o, taken, name, sizeof(name));
        if (rlock_get(holder, name, &held[taken]) != 0)
            goto out;
        if (rlock_lock(held[taken]) != 0) {
            rlock_free(held[taken]);
            held[taken] = NULL;
            goto out;
        }
    }
    r.loop = bench_loop_start(client);
    if (r.loop == NULL)
        goto out;

    long long heap0 = bench_heap_bytes(), rss0 = bench_rss_bytes();
    int64_t t0 = bench_now_ns();
    for (; issued < r.total; issued++) {
        waiter *w = &ws[issued];
        *w = (waiter){.r = &r, .owner = rlock_owner_new(),
                      .name = issued % o->names};
        lock_name(o, w->name, name, sizeof(name));
        if (rlock_get(client, name, &w->l) != 0)
            break;
        if (rlock_lock_async(w->l, w->owner, 300000, RLOCK_LEASE_WATCHDOG,
                             on_locked, w) != 0) {
            rlock_free(w->l);
            break;
        }
    }
    long long subs = issued == r.total ? settle(c) : -1;
    int64_t t1 = bench_now_ns();
    long long heap1 = bench_heap_bytes(), rss1 = bench_rss_bytes();
    long long most = subs >= 0 ? max_channel_subscribers(o, c) : -1;
    /* what waiting costs Redis: the queued waiters' re-tries */
    if (subs < 0 || most < 0 || bench_counters_read(c, &before) != 0)
        goto out_stop;
    bench_sleep_ns((int64_t)(o->seconds * 1e9));
    if (bench_counters_read(c, &after) != 0)
        goto out_stop;
    double waiting_s = o->seconds;

    /* let go: the holder's unlocks, one name after another */
    atomic_store(&r.unlocking, true);
    int64_t t2 = bench_now_ns();
    for (int i = 0; i < o->names; i++) {
        int urc = rlock_unlock(held[i]);
        atomic_store(&r.unlocked_at[i * (r.per_name + 1)], bench_now_ns());
        if (urc != 0 && urc != RLOCK_ENOTIFY)
            fprintf(stderr, "rlock-bench: holder unlock: %s\n",
                    rlock_strerror(urc));
    }
    bench_loop_join(r.loop); /* the last waiter's unlock stops it */
    r.loop = NULL;
    int64_t t3 = bench_now_ns();
    rc = 0;

    rlock_stats st = RLOCK_STATS_INIT;
    if (rlock_client_stats(client, &st) != 0)
        st.rechecks_found_free = st.unlock_messages = 0;
    wake_latencies(&r, &wake);
    json_object_set_new(out, "waiters", json_integer(r.total));
    json_object_set_new(out, "names", json_integer(o->names));
    json_object_set_new(out, "completed", json_integer(r.completed));
    json_object_set_new(out, "failed", json_integer(r.failed));
    json_object_set_new(out, "woken_before_unlock", json_integer(r.early));
    bench_set_num(out, "wake_p50_us", bench_samples_pct_us(&wake, 50));
    bench_set_num(out, "wake_p99_us", bench_samples_pct_us(&wake, 99));
    bench_set_num(out, "wake_max_ms",
                  (double)bench_samples_max(&wake) / 1e6);
    bench_set_num(out, "handovers_per_s",
                  (double)r.total / ((double)(t3 - t2) / 1e9));
    bench_set_num(out, "bytes_per_waiter",
                  (double)(heap1 - heap0) / (double)r.total);
    bench_set_num(out, "rss_bytes_per_waiter",
                  (double)(rss1 - rss0) / (double)r.total);
    json_object_set_new(out, "subscriptions", json_integer(subs));
    json_object_set_new(out, "lock_channel_subscribers", json_integer(most));
    bench_set_num(out, "waiting_scripts_per_s",
                  (double)(after.script_calls - before.script_calls) /
                      waiting_s);
    bench_set_num(out, "setup_s", (double)(t1 - t0) / 1e9);
    json_object_set_new(out, "unlock_messages",
                        json_integer((json_int_t)st.unlock_messages));
    json_object_set_new(out, "rechecks_found_free",
                        json_integer((json_int_t)st.rechecks_found_free));
    goto out;

out_stop:
    /* give up: unlock the names so that every waiter ends, then wait */
    atomic_store(&r.unlocking, true);
    for (int i = 0; i < taken; i++)
        rlock_unlock(held[i]);
    if (issued < r.total)
        bench_loop_stop(r.loop);
out:
    bench_loop_join(r.loop);
    /* the clients first: that ends any call still pending, whose handle
     * must live until then */
    rlock_client_free(client);
    rlock_client_free(holder);
    for (int i = 0; i < taken; i++)
        rlock_free(held[i]);
    for (int i = 0; ws != NULL && i < issued; i++)
        rlock_free(ws[i].l);
    redisFree(c);
    bench_samples_free(&wake);
    free(held);
    free(ws);
    free((void *)r.unlocked_at);
    free(r.woke_at);
    free(r.woken);
    return rc;
}
