/*
 * core/watchdog.c: keeps the leases of held locks alive (Redisson's
 * LockRenewalScheduler, 3.44+).
 *
 * Design notes. One timer per client, on the I/O thread, fires every third
 * of the watchdog timeout. Each tick gathers every hold taken without an
 * explicit lease and renews them with the lock_renew script, up to 100 locks
 * per call, all calls pipelined: 10,000 held locks cost 100 commands a tick,
 * not 10,000 round trips. No thread blocks on a renewal. In a cluster a
 * call's keys must share a slot, so the holds are sorted by slot there and
 * a call never spans two (it goes to the slot's master, core/route.c).
 *
 * A renewal that finds the owner's field gone marks the hold lost, so its
 * owner's unlock answers RLOCK_ELOST and rlock_is_held_by_me() says 0, and
 * the lost-lock callbacks run (core/hold.c, notify.c). A
 * renewal that fails (Redis down or slow) is simply tried again next tick;
 * but once a whole timeout has passed since the lease was last known to be
 * set, the lease must have run out and the hold is marked lost too. That is
 * judged on CLOCK_MONOTONIC. Replies are matched to holds by epoch, so a
 * reply that arrives after the hold was released, and maybe taken again,
 * changes nothing.
 *
 * In src/core: the renewal operation, driven by a timer of the I/O thread;
 * it sends through the request layer and settles holds through core/hold.c.
 */
#include "core/core.h"
#include "proto/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RLOCK__RENEW_BATCH 100

struct rlock__watchdog {
    rlock_client *client;
    rlock__timer *timer;
    rlock__task start_task;
};

typedef struct renewal {
    rlock__entry *entry; /* referenced */
    uint64_t tid;
    uint64_t epoch;
    char owner[RLOCK__TAG_MAX];
} renewal;

typedef struct gathering {
    size_t n;
    size_t cap;
    renewal *items;
} gathering;

/* Holds to renew: read holds have their own script (their lease keys). */
typedef struct gatherings {
    rlock_client *client;
    int64_t now_ms;
    gathering plain;
    gathering reads;
} gatherings;

typedef struct batch {
    int64_t sent_at_ms;
    size_t n;
    renewal items[];
} batch;

static void tick(void *arg);

static void run_start(rlock__task *t, int status)
{
    rlock__watchdog *wd =
        (rlock__watchdog *)((char *)t - offsetof(rlock__watchdog, start_task));
    if (status == 0) {
        int64_t period = wd->client->cfg.watchdog_timeout_ms / 3;
        rlock__timer_start(wd->timer, period, period);
    }
}

/* Makes the (stopped) watchdog of client c. Returns 0 or RLOCK_ENOMEM. */
int rlock__watchdog_new(rlock__watchdog **out, rlock_client *c)
{
    rlock__watchdog *wd = rlock__calloc(1, sizeof(*wd));
    if (wd == NULL)
        return RLOCK_ENOMEM;
    wd->client = c;
    wd->timer = rlock__timer_new(c->loop, tick, wd);
    if (wd->timer == NULL) {
        free(wd);
        return RLOCK_ENOMEM;
    }
    wd->start_task.run = run_start;
    *out = wd;
    return RLOCK_OK;
}

/* Starts the renewal timer (on the I/O thread). Any thread, once. */
void rlock__watchdog_start(rlock__watchdog *wd)
{
    rlock__loop_submit(wd->client->loop, &wd->start_task);
}

/* Stops the timer. I/O thread, at stop. */
void rlock__watchdog_shutdown(rlock__watchdog *wd)
{
    rlock__timer_stop(wd->timer);
}

void rlock__watchdog_free(rlock__watchdog *wd)
{
    if (wd == NULL)
        return;
    rlock__timer_free(wd->timer);
    free(wd);
}

/* Adds one hold to renew to its gathering (read holds have their own
 * script); false when it cannot grow. Under the table's lock. */
static bool gather(rlock__entry *e, uint64_t owner, uint64_t epoch, void *arg)
{
    gatherings *gs = arg;
    gathering *g = e->kind == RLOCK_KIND_READ ? &gs->reads : &gs->plain;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        renewal *grown = rlock__realloc(g->items, sizeof(*grown) * cap);
        if (grown == NULL)
            return false;
        g->items = grown;
        g->cap = cap;
    }
    renewal *rn = &g->items[g->n++];
    rn->entry = e; /* referenced for us */
    rn->tid = owner;
    rn->epoch = epoch;
    rlock__kind_owner_tag(rn->owner, e, owner);
    return true;
}

/* A renewal that comes back with less than this share of its lease left
 * is late: renewals go out every third of the lease, so one on time finds
 * about two thirds left. */
#define RLOCK__LATE_MARGIN_DIVISOR 3

static void on_renewed(rlock__req *r)
{
    batch *b = r->ctx;
    rlock_client *c = r->client;
    int64_t lease = c->cfg.watchdog_timeout_ms, now = rlock__now_ms();
    if (r->status != 0 && r->status != RLOCK_ECLOSED) {
        rlock__stats_add(c->stats, RLOCK__STAT_RENEWALS_FAILED, b->n);
        rlock__log(c, RLOCK_LOG_WARN,
                   "renewing the leases of %zu lock(s) failed (%s): tried "
                   "again in %lld ms",
                   b->n, rlock_strerror(r->status), (long long)(lease / 3));
    }
    for (size_t i = 0; i < b->n; i++) {
        renewal *rn = &b->items[i];
        rlock__entry *e = rn->entry;
        int64_t margin = INT64_MAX;
        if (r->status == 0)
            margin = rlock__hold_renewed(e, rn->tid, rn->epoch,
                                         r->renewed[i], b->sent_at_ms, now);
        if (margin != INT64_MAX) {
            rlock__stats_margin(c->stats, margin);
            if (margin < lease / RLOCK__LATE_MARGIN_DIVISOR)
                rlock__log(c, RLOCK_LOG_WARN,
                           "the renewal of lock %s came back late: %lld ms "
                           "of its %lld ms lease were left",
                           e->name, (long long)margin, (long long)lease);
        }
        rlock__entry_unref(e);
    }
    free(b);
}

/* Sends one renewal call for items[0..n): lock_renew, or read_renew for
 * read holds, which also renews each hold's lease key. On failure the
 * entries are released and the holds are tried again next tick. */
static void send_batch(rlock_client *c, const renewal *items, size_t n,
                       int64_t now, bool reads)
{
    char lease[24];
    size_t nkeys = reads ? 2 * n : n;
    const char **argv = rlock__malloc(sizeof(*argv) * (nkeys + n + 1));
    char **prefixes = reads ? rlock__calloc(n + 1, sizeof(*prefixes)) : NULL;
    batch *b = rlock__malloc(sizeof(*b) + sizeof(renewal) * n);
    rlock__req *r = NULL;
    bool ok = argv != NULL && b != NULL && (!reads || prefixes != NULL);
    snprintf(lease, sizeof(lease), "%lld",
             (long long)c->cfg.watchdog_timeout_ms);
    for (size_t i = 0; ok && i < n; i++) {
        argv[nkeys + 1 + i] = items[i].owner;
        if (!reads) {
            argv[i] = items[i].entry->name;
            continue;
        }
        /* a reader's lease keys: "{N}:<tag>:rwlock_timeout:<k>" */
        const char *key_prefix = items[i].entry->aux[0];
        size_t len = strlen(key_prefix) + strlen(items[i].owner) + 24;
        prefixes[i] = rlock__malloc(len);
        if (prefixes[i] == NULL) {
            ok = false;
            break;
        }
        snprintf(prefixes[i], len, "%s:%s:rwlock_timeout", key_prefix,
                 items[i].owner);
        argv[2 * i] = items[i].entry->name;
        argv[2 * i + 1] = prefixes[i];
    }
    if (ok) {
        argv[nkeys] = lease;
        r = rlock__req_new(c,
                           reads ? &rlock__script_read_renew
                                 : &rlock__script_lock_renew,
                           RLOCK__REPLY_RENEW, (int)nkeys,
                           (int)(nkeys + n + 1), argv);
    }
    for (size_t i = 0; prefixes != NULL && i < n; i++)
        free(prefixes[i]);
    free(prefixes);
    free(argv);
    if (r == NULL) {
        for (size_t i = 0; i < n; i++)
            rlock__entry_unref(items[i].entry);
        free(b);
        return;
    }
    r->nrenew = (int)n;
    rlock__stats_add(c->stats, RLOCK__STAT_RENEWALS_SENT, n);
    b->sent_at_ms = now;
    b->n = n;
    memcpy(b->items, items, sizeof(renewal) * n);
    r->on_reply = on_renewed;
    r->ctx = b;
    rlock__req_dispatch(r);
}

static int renewal_slot(const renewal *rn)
{
    const char *name = rn->entry->name;
    return rlock__key_slot(name, strlen(name));
}

static int by_slot(const void *a, const void *b)
{
    return renewal_slot(a) - renewal_slot(b);
}

/* How many of items[0..n), at most a batch, one call may renew: in a
 * cluster, one script call's keys must share a slot (CROSSSLOT otherwise),
 * so a batch ends where the slot changes (items are sorted by slot). */
static size_t batch_size(const rlock_client *c, const renewal *items,
                         size_t n)
{
    size_t k = n < RLOCK__RENEW_BATCH ? n : RLOCK__RENEW_BATCH;
    if (c->cluster == NULL)
        return k;
    int slot = renewal_slot(&items[0]);
    for (size_t i = 1; i < k; i++)
        if (renewal_slot(&items[i]) != slot)
            return i;
    return k;
}

static void send_all(rlock_client *c, gathering *g, int64_t now, bool reads)
{
    if (c->cluster != NULL && g->n > 1)
        qsort(g->items, g->n, sizeof(*g->items), by_slot);
    for (size_t off = 0; off < g->n;) {
        size_t n = batch_size(c, g->items + off, g->n - off);
        send_batch(c, g->items + off, n, now, reads);
        off += n;
    }
    free(g->items);
}

/* Renews every hold the watchdog keeps, now. */
static void renew_all(rlock__watchdog *wd)
{
    rlock_client *c = wd->client;
    gatherings gs = {.client = c, .now_ms = rlock__now_ms()};
    rlock__holds_to_renew(c, gs.now_ms, gather, &gs);
    send_all(c, &gs.plain, gs.now_ms, false);
    send_all(c, &gs.reads, gs.now_ms, true);
}

static void tick(void *arg)
{
    renew_all(arg);
}

/* Renews every hold at once, between ticks: after a Sentinel master
 * switch (core/follow.c), so that a hold the new master lacks is reported
 * lost within a round trip rather than at the next tick. The timer keeps
 * its phase; a hold renewed twice is only renewed early. I/O thread. */
void rlock__watchdog_renew_now(rlock__watchdog *wd)
{
    if (wd != NULL)
        renew_all(wd);
}
