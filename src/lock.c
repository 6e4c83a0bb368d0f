/*
 * lock.c: the blocking lock API (Redisson's RedissonLock) and the per-name
 * entries it shares between threads.
 *
 * An entry is the client's memory of one lock name: which local threads
 * hold it (with their reentrant counts, leases and watchdog flags), how many
 * local threads wait for it, and the unlock messages they have not consumed
 * yet ("permits", Redisson's semaphore). Entries live in the client's table
 * while a handle, a hold, a waiter or an in-flight task refers to them.
 *
 * Waiting (facts sheet 1.6): try; on failure join the channel and wait for
 * the subscription, try again (closing the gap between the first try and
 * the subscription), then sleep until a permit arrives, or until the TTL the
 * holder's lease was reported to have, or the re-check interval, whichever
 * is first; try again. A permit posted while a waiter is busy trying is kept,
 * so no message is lost between a failed try and the next sleep.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* Redisson's subscriptionTimeout: how long a waiter waits for its channel
 * subscription before carrying on with re-checks alone. */
#define RLOCK__SUBSCRIBE_WAIT_MS 7500

/* ---------------------------------------------------------------- entries */

static void entry_free(rlock__entry *e)
{
    while (e->holders != NULL) {
        rlock__holder *h = e->holders;
        e->holders = h->next;
        free(h);
    }
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->permit_cv);
    free(e->channel);
    free(e->aux[0]);
    free(e->aux[1]);
    free(e->name);
    free(e->key);
    free(e);
}

/* The entry's key in the client's table: its kind, the waiter's tag for a
 * fair waiter's entry, and the name (tags are "<uuid>:<digits>", so no two
 * keys collide). Returns a malloc'd string or NULL. */
static char *entry_key(int kind, const char *name, const char *waiter)
{
    size_t len = strlen(name) + (waiter ? strlen(waiter) : 0) + 16;
    char *key = rlock__malloc(len);
    if (key != NULL)
        snprintf(key, len, "%d:%s%s%s", kind, waiter ? waiter : "",
                 waiter ? ":" : "", name);
    return key;
}

/* Returns the entry of the lock kind/name with one more reference, creating
 * it if needed, or NULL when out of memory. waiter: the owner tag of a fair
 * waiter's entry (RLOCK__KIND_FAIR_WAIT), else NULL. */
rlock__entry *rlock__entry_get(rlock_client *c, int kind, const char *name,
                               const char *waiter)
{
    char *key = entry_key(kind, name, waiter);
    if (key == NULL)
        return NULL;
    pthread_mutex_lock(&c->entries_mu);
    rlock__entry *e = rlock__map_get(&c->entries, key);
    if (e != NULL) {
        e->refs++;
        pthread_mutex_unlock(&c->entries_mu);
        free(key);
        return e;
    }
    e = rlock__calloc(1, sizeof(*e));
    if (e == NULL)
        goto out;
    e->client = c;
    e->kind = kind;
    e->refs = 1;
    e->key = key;
    key = NULL;
    e->name = rlock__strdup(name);
    if (e->name == NULL || rlock__kind_names(e, waiter) != 0 ||
        rlock__map_put(&c->entries, e->key, e) != 0) {
        free(e->name);
        free(e->channel);
        free(e->aux[0]);
        free(e->aux[1]);
        free(e->key);
        free(e);
        e = NULL;
        goto out;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, &c->condattr);
    pthread_cond_init(&e->permit_cv, &c->condattr);
out:
    pthread_mutex_unlock(&c->entries_mu);
    free(key);
    return e;
}

/* Returns, with one more reference, the entry on which owner waits for
 * fair lock e: the one of its own channel. NULL when out of memory. */
rlock__entry *rlock__fair_waiter_entry(rlock__entry *e, uint64_t owner)
{
    char tag[RLOCK__TAG_MAX];
    rlock__kind_owner_tag(tag, e, owner);
    return rlock__entry_get(e->client, RLOCK__KIND_FAIR_WAIT, e->name, tag);
}

/* Takes one more reference. Must not be called with e->mu held. */
void rlock__entry_ref(rlock__entry *e)
{
    pthread_mutex_lock(&e->client->entries_mu);
    e->refs++;
    pthread_mutex_unlock(&e->client->entries_mu);
}

/* Drops a reference. The entry is freed when nothing refers to it and no
 * thread holds the lock: a hold outlives its handle, so that the watchdog
 * keeps renewing it until its owner unlocks through a new handle or the
 * client is freed. Must not be called with e->mu held. */
void rlock__entry_unref(rlock__entry *e)
{
    rlock_client *c = e->client;
    pthread_mutex_lock(&c->entries_mu);
    if (--e->refs == 0) {
        pthread_mutex_lock(&e->mu);
        bool idle = e->holders == NULL;
        pthread_mutex_unlock(&e->mu);
        if (idle) {
            rlock__map_remove(&c->entries, e->key);
            entry_free(e);
        }
    }
    pthread_mutex_unlock(&c->entries_mu);
}

/* Up to cap idle entries found by one pass of rlock__entries_sweep(). */
typedef struct sweep_batch {
    rlock__entry *items[64];
    size_t n;
} sweep_batch;

static void sweep_entry(const char *key, void *value, void *arg)
{
    rlock__entry *e = value;
    sweep_batch *b = arg;
    (void)key;
    while (e->holders != NULL)
        rlock__entry_remove_holder(e, e->holders);
    if (e->refs == 0 && b->n < sizeof(b->items) / sizeof(b->items[0]))
        b->items[b->n++] = e;
}

/* Forgets every hold and frees every entry nothing refers to: all of
 * them, once the handles are closed. Only once the I/O thread has stopped
 * (rlock_client_free). It allocates nothing (batches on the stack), so a
 * client freed when memory has run out frees them all too. */
void rlock__entries_sweep(rlock_client *c)
{
    for (;;) {
        sweep_batch b = {.n = 0};
        rlock__map_foreach(&c->entries, sweep_entry, &b);
        for (size_t i = 0; i < b.n; i++) {
            rlock__map_remove(&c->entries, b.items[i]->key);
            entry_free(b.items[i]);
        }
        if (b.n < sizeof(b.items) / sizeof(b.items[0]))
            return;
    }
}

/* Returns the calling thread's hold record on e, or NULL. e->mu held. */
rlock__holder *rlock__entry_find_holder(rlock__entry *e, uint64_t tid)
{
    rlock__holder *h = e->holders;
    while (h != NULL && h->tid != tid)
        h = h->next;
    return h;
}

/* Unlinks and frees h. e->mu held. */
void rlock__entry_remove_holder(rlock__entry *e, rlock__holder *h)
{
    rlock__holder **p = &e->holders;
    while (*p != NULL && *p != h)
        p = &(*p)->next;
    if (*p == h) {
        *p = h->next;
        free(h);
    }
}

/* An unlock message arrived: one more waiter may try (all, for "1").
 * Blocking and async waiters take turns for "0", so neither kind starves
 * the other while one message still wakes one waiter. Returns false when
 * the message found nobody to wake (every waiter already has a permit, or
 * there is none). I/O thread. */
bool rlock__entry_wake(rlock__entry *e, bool all)
{
    bool woke = false;
    pthread_mutex_lock(&e->mu);
    bool to_async = e->async_waiters > 0 &&
                    (all || e->waiters == 0 || e->wake_async_next);
    if (!all)
        e->wake_async_next = !e->wake_async_next;
    if (all) {
        woke = e->permits < e->waiters;
        e->permits = e->waiters;
        pthread_cond_broadcast(&e->permit_cv);
    } else if (!to_async && e->permits < e->waiters) {
        e->permits++;
        woke = true;
        /* one permit, one thread: a broadcast would wake every waiter to
         * find the permit gone */
        pthread_cond_signal(&e->permit_cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (to_async)
        woke = rlock__async_kick(e, all) || woke;
    return woke;
}

/* Records a successful acquire by owner tid (a thread or an async owner).
 * spare is a holder record allocated before the acquire was sent, so that
 * a lock taken in Redis is never forgotten for want of memory; it is used
 * or freed here. */
void rlock__entry_add_hold(rlock__entry *e, uint64_t tid, int64_t lease_ms,
                           rlock__holder *spare)
{
    rlock_client *c = e->client;
    bool watchdog = lease_ms == RLOCK_LEASE_WATCHDOG;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    if (h != NULL && h->lost) {
        /* a lost hold taken afresh starts over: its old count is void */
        rlock__entry_remove_holder(e, h);
        h = NULL;
    }
    if (h == NULL) {
        h = spare;
        spare = NULL;
        memset(h, 0, sizeof(*h));
        h->tid = tid;
        h->epoch = atomic_fetch_add(&c->next_epoch, 1);
        h->held_at_us = rlock__stats_clock(c->stats);
        h->next = e->holders;
        e->holders = h;
    }
    h->count++;
    h->lease_ms = watchdog ? c->cfg.watchdog_timeout_ms : lease_ms;
    h->watchdog = h->watchdog || watchdog;
    h->renewed_at_ms = rlock__now_ms();
    pthread_mutex_unlock(&e->mu);
    free(spare);
}

/* Returns how many holds owner is known to have in the field e's scripts
 * write: plain, fair, fenced and spin locks on one name share that field
 * ("<uuid>:<owner>"), so each kind's holds count. Holds found lost are not
 * counted. */
int rlock__owner_known_holds(rlock__entry *e, uint64_t owner)
{
    static const int sharing[] = {RLOCK_KIND_LOCK, RLOCK_KIND_FAIR,
                                  RLOCK_KIND_FENCED, RLOCK_KIND_SPIN};
    rlock_client *c = e->client;
    int known = 0;
    pthread_mutex_lock(&c->entries_mu);
    for (size_t i = 0; i < sizeof(sharing) / sizeof(*sharing); i++) {
        rlock__entry *other = e;
        if (sharing[i] != e->kind) {
            char *key = entry_key(sharing[i], e->name, NULL);
            other = key != NULL ? rlock__map_get(&c->entries, key) : NULL;
            free(key);
            /* out of memory: the drop may remove a hold of another kind,
             * as it did before kinds were told apart */
        }
        if (other == NULL)
            continue;
        pthread_mutex_lock(&other->mu);
        rlock__holder *h = rlock__entry_find_holder(other, owner);
        if (h != NULL && !h->lost)
            known += h->count;
        pthread_mutex_unlock(&other->mu);
    }
    pthread_mutex_unlock(&c->entries_mu);
    return known;
}

/* Returns the id (epoch) of owner's hold on e, or RLOCK_ENOTOWNER. */
int64_t rlock__entry_hold_id(rlock__entry *e, uint64_t owner)
{
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, owner);
    int64_t id = h != NULL ? (int64_t)h->epoch : RLOCK_ENOTOWNER;
    pthread_mutex_unlock(&e->mu);
    return id;
}

/* Marks the calling thread's hold lost if it is still the one with the
 * given epoch. */
static void mark_lost(rlock__entry *e, uint64_t tid, uint64_t epoch)
{
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    if (h != NULL && h->epoch == epoch)
        rlock__hold_lost(e, h, RLOCK_LOST_GONE);
    pthread_mutex_unlock(&e->mu);
}

/* ---------------------------------------------------------------- handles */

/* Returns 0 when l may be used, else why not: RLOCK_EINVAL (NULL),
 * RLOCK_ECLOSED (its client was freed, or is being freed) or
 * RLOCK_EFORKED. Reads nothing of a closed handle but the handle. */
int rlock__handle_check(const rlock *l)
{
    if (l == NULL)
        return RLOCK_EINVAL;
    if (l->client == NULL)
        return RLOCK_ECLOSED;
    return rlock__client_check(l->client);
}

static int check_handle(const rlock *l)
{
    return rlock__handle_check(l);
}

/* Makes a handle on the lock kind/name (the rlock_*_get functions). */
int rlock__handle_new(rlock_client *c, int kind, const char *name,
                      rlock **out)
{
    if (out != NULL)
        *out = NULL;
    if (c == NULL || name == NULL || out == NULL)
        return RLOCK_EINVAL;
    size_t len = strnlen(name, RLOCK_NAME_MAX + 1);
    if (len == 0 || len > RLOCK_NAME_MAX)
        return RLOCK_EINVAL;
    int rc = rlock__client_check(c);
    if (rc != 0)
        return rc;
    rlock *l = rlock__calloc(1, sizeof(*l));
    if (l == NULL)
        return RLOCK_ENOMEM;
    l->client = c;
    l->kind = kind;
    l->name = rlock__strdup(name);
    l->entry = l->name != NULL ? rlock__entry_get(c, kind, name, NULL) : NULL;
    if (l->entry == NULL) {
        free(l->name);
        free(l);
        return RLOCK_ENOMEM;
    }
    /* the client closes the handles still open when it is freed */
    pthread_mutex_lock(&c->entries_mu);
    l->next = c->handles;
    if (l->next != NULL)
        l->next->prev = &l->next;
    l->prev = &c->handles;
    c->handles = l;
    pthread_mutex_unlock(&c->entries_mu);
    /* Redisson's exponential back-off (facts sheet 1.9) */
    l->spin_initial_ms = 1;
    l->spin_max_ms = 128;
    l->spin_multiplier = 2;
    *out = l;
    return RLOCK_OK;
}

void rlock__handle_free(rlock *l)
{
    if (l == NULL)
        return;
    /* a closed handle is the user's memory alone; in a forked child the
     * client's mutexes may have been copied locked by a thread that does
     * not exist here: touch nothing shared */
    rlock_client *c = l->client;
    if (c != NULL && getpid() == c->pid) {
        pthread_mutex_lock(&c->entries_mu);
        *l->prev = l->next;
        if (l->next != NULL)
            l->next->prev = l->prev;
        pthread_mutex_unlock(&c->entries_mu);
        rlock__entry_unref(l->entry);
    }
    free(l->name);
    free(l);
}

/* Closes every handle still open: each drops its entry and its client, so
 * that later calls on it answer RLOCK_ECLOSED and rlock_free() frees only
 * the handle. Called by rlock_client_free() once nothing else runs, before
 * the entries are swept. */
void rlock__handles_close(rlock_client *c)
{
    pthread_mutex_lock(&c->entries_mu);
    while (c->handles != NULL) {
        rlock *l = c->handles;
        c->handles = l->next;
        l->entry->refs--; /* the sweep frees it */
        l->entry = NULL;
        l->client = NULL;
        l->next = NULL;
        l->prev = NULL;
    }
    pthread_mutex_unlock(&c->entries_mu);
}

int rlock_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_LOCK, name, out);
}

int rlock_fair_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_FAIR, name, out);
}

void rlock_free(rlock *l)
{
    if (l != NULL && !l->borrowed) /* an rlock_rw's side: rlock_rw_free */
        rlock__handle_free(l);
}

int rlock_kind(const rlock *l)
{
    return l != NULL ? l->kind : RLOCK_EINVAL;
}

const char *rlock_name(const rlock *l)
{
    return l ? l->name : NULL;
}

int rlock_on_lost(rlock *l, rlock_lost_cb cb, void *arg)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    return rlock__notifier_set_lock_cb(l->entry, cb, arg);
}

/* --------------------------------------------------------------- acquire */

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int release(rlock *l, uint64_t tid, int64_t lease_ms, int retries,
                   int64_t timeout_ms);

/* What one acquire call asks for. */
typedef struct attempt_args {
    int64_t lease_ms;    /* as given: may be RLOCK_LEASE_WATCHDOG */
    int64_t fair_wait_ms; /* a fair waiter's slack; 0: the configured one */
    bool try_once;       /* a fair attempt that must not queue */
    bool bounded;        /* no round trip may outlast the deadline */
    int64_t deadline_ms;
    int64_t *token;      /* a fenced acquire's token, or NULL */
} attempt_args;

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The time one round trip may take. */
static int64_t call_timeout(rlock_client *c, const attempt_args *a)
{
    int64_t t = c->cfg.command_timeout_ms;
    if (a->bounded) {
        int64_t left = a->deadline_ms - rlock__now_ms();
        t = min64(t, left > 1 ? left : 1);
    }
    return t;
}

/* After an acquire whose reply was lost with its connection, the script
 * may or may not have run. Kinds with a drop script remove every hold in
 * the owner's field beyond those this client knows of, whichever kind took
 * them (lock_drop.lua), so a phantom, even a reentrant one, is gone and
 * another kind's hold on the name stays. Other kinds, if this thread held
 * no hold before, give one release; a reentrant phantom cannot be told
 * apart there and is left to the lease. The call waits for its reply, so
 * that it cannot overtake a retried acquire on another connection. Returns
 * 0 when it is safe to try again. */
static int drop_phantom(rlock *l, uint64_t tid, const attempt_args *a)
{
    rlock__entry *e = l->entry;
    if (!rlock__kind_has_drop(e->kind)) {
        pthread_mutex_lock(&e->mu);
        rlock__holder *h = rlock__entry_find_holder(e, tid);
        bool holds = h != NULL && !h->lost;
        pthread_mutex_unlock(&e->mu);
        if (holds)
            return RLOCK_OK;
        /* one call, as the drop script is: the acquire's loop retries */
        int rc = release(l, tid, l->client->cfg.watchdog_timeout_ms, 0,
                         call_timeout(l->client, a));
        return rc < 0 ? rc : RLOCK_OK;
    }
    rlock__spec spec;
    int rc = rlock__spec_drop_phantom(&spec, e, tid,
                                      rlock__owner_known_holds(e, tid));
    if (rc != 0)
        return rc;
    rlock__req *r = rlock__req_from_spec(l->client, &spec);
    if (r == NULL)
        return RLOCK_ENOMEM;
    rc = rlock__req_call(r, call_timeout(l->client, a));
    rlock__req_unref(r);
    return rc;
}

/* One acquire round trip. Returns 0 with *nil (taken), *ttl and the token
 * set, or a negative code. */
static int call_acquire(rlock *l, uint64_t tid, const attempt_args *a,
                        int64_t *ttl, bool *nil, int64_t *token)
{
    rlock_client *c = l->client;
    rlock__spec spec;
    int rc = rlock__spec_acquire(&spec, l->entry, tid, a->lease_ms,
                                 a->fair_wait_ms, a->try_once);
    if (rc != 0)
        return rc;
    rlock__req *r = rlock__req_from_spec(c, &spec);
    rlock__spec_clear(&spec);
    if (r == NULL)
        return RLOCK_ENOMEM;
    /* if this call gives up before the reply, a hold it took is given
     * back (command.c, direct.c) */
    rlock__entry_ref(l->entry);
    r->lock_entry = l->entry;
    r->lock_owner = tid;
    r->lock_lease_ms = a->lease_ms == RLOCK_LEASE_WATCHDOG
                           ? c->cfg.watchdog_timeout_ms
                           : a->lease_ms;
    rc = rlock__req_call(r, call_timeout(c, a));
    if (rc == 0) {
        *ttl = r->value;
        *nil = r->nil;
        *token = r->token;
    }
    rlock__req_unref(r);
    return rc;
}

/* One acquire attempt by the calling thread, retried when its connection
 * dropped: at once, then every retry interval, at most retry_attempts times
 * and never sleeping past the deadline. Returns 1 when held, 0 when someone
 * else holds it (*ttl set), or a negative code. */
static int try_acquire(rlock *l, const attempt_args *a, int64_t *ttl)
{
    rlock_client *c = l->client;
    uint64_t tid = rlock__thread_id();
    bool nil = false;
    int64_t token = 0;
    int rc;
    bool unknown = false; /* an attempt may have run: drop it first */
    rlock__holder *spare = rlock__malloc(sizeof(*spare));
    if (spare == NULL)
        return RLOCK_ENOMEM; /* before Redis is touched */
    for (int attempt = 0;; attempt++) {
        if (!unknown) {
            rc = call_acquire(l, tid, a, ttl, &nil, &token);
            if (rc != RLOCK_ECONN)
                break;
            unknown = true;
        }
        rc = drop_phantom(l, tid, a);
        if (rc == 0)
            unknown = false;
        else if (rc != RLOCK_ECONN)
            break;
        /* at once after the first failure, or when the drop got through
         * (the connections work again); else after the retry interval */
        int64_t pause =
            attempt == 0 || rc == 0 ? 0 : c->cfg.retry_interval_ms;
        if (attempt >= c->cfg.retry_attempts ||
            (pause > 0 && rlock__now_ms() + pause >= a->deadline_ms)) {
            rc = RLOCK_ECONN;
            break;
        }
        sleep_ms(pause);
    }
    if (rc != 0 || !nil) {
        free(spare);
        return rc;
    }
    rlock__entry_add_hold(l->entry, tid, a->lease_ms, spare);
    if (a->token != NULL)
        *a->token = token;
    return 1;
}

/* Counts the calling thread among e's waiters, joining the channel if it
 * is the first. */
static void waiter_enter(rlock__entry *e)
{
    pthread_mutex_lock(&e->mu);
    bool first = e->waiters++ == 0;
    if (first) {
        e->subscribed = false;
        e->unheard = false;
    }
    pthread_mutex_unlock(&e->mu);
    if (first)
        rlock__pubsub_sync(e); /* on failure: re-checks alone */
}

static void waiter_leave(rlock__entry *e)
{
    pthread_mutex_lock(&e->mu);
    bool last = --e->waiters == 0;
    if (last)
        e->permits = 0;
    pthread_mutex_unlock(&e->mu);
    if (last)
        rlock__pubsub_sync(e);
}

/* Waits until e's subscription is confirmed or refused, or until_ms. */
static void wait_subscribed(rlock__entry *e, int64_t until_ms)
{
    struct timespec ts;
    rlock__abs_timespec(until_ms, &ts);
    pthread_mutex_lock(&e->mu);
    while (!e->subscribed && !e->unheard &&
           pthread_cond_timedwait(&e->cv, &e->mu, &ts) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&e->mu);
}

/* Sleeps until an unlock message's permit is available (and takes it) or
 * until_ms. Returns true when it took a permit. */
static bool wait_permit(rlock__entry *e, int64_t until_ms)
{
    struct timespec ts;
    rlock__abs_timespec(until_ms, &ts);
    pthread_mutex_lock(&e->mu);
    while (e->permits == 0 &&
           pthread_cond_timedwait(&e->permit_cv, &e->mu, &ts) != ETIMEDOUT)
        ;
    bool taken = e->permits > 0;
    if (taken) /* even after a timeout: a signal may have been meant for
                  this thread */
        e->permits--;
    pthread_mutex_unlock(&e->mu);
    return taken;
}

/* How long a new acquire first waits for its turn before it tries, or 0
 * to try at once. Otherwise a thread that just unlocked would take the
 * lock straight back, ahead of the waiters its unlock message is waking
 * (Redisson's RLock barges like that, and its waiters then wait for
 * seconds under contention):
 * - behind other threads of this client already waiting (subscribed), it
 *   waits for a permit like them;
 * - other processes cannot be seen waiting, so when this client released
 *   e moments ago and its own attempts found e taken within the last
 *   second, it gives them RLOCK__YIELD_MS (or until the next message).
 * Never for a thread that holds e (reentry). */
#define RLOCK__YIELD_AFTER_RELEASE_MS 10
#define RLOCK__CONTENDED_WINDOW_MS    1000
#define RLOCK__YIELD_MS               2

static int64_t first_wait_ms(rlock__entry *e, int64_t now)
{
    int64_t wait = 0;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, rlock__thread_id());
    if (h != NULL && !h->lost)
        wait = 0;
    else if (e->waiters > 0 && e->subscribed)
        wait = e->client->cfg.recheck_interval_ms;
    else if (e->released_at_ms > 0 &&
             now - e->released_at_ms < RLOCK__YIELD_AFTER_RELEASE_MS &&
             e->contended_at_ms > 0 &&
             now - e->contended_at_ms < RLOCK__CONTENDED_WINDOW_MS)
        wait = RLOCK__YIELD_MS;
    pthread_mutex_unlock(&e->mu);
    return wait;
}

/* Notes that an attempt found e held by someone else. */
static void note_contended(rlock__entry *e)
{
    pthread_mutex_lock(&e->mu);
    e->contended_at_ms = rlock__now_ms();
    pthread_mutex_unlock(&e->mu);
}

/* A spin lock waits by backing off between attempts, never through its
 * channel (facts sheet §6): the pauses grow from spin_initial_ms by
 * spin_multiplier plus a random 0..failures-1 ms, up to spin_max_ms. */
static int spin_acquire(rlock *l, attempt_args *a, bool no_wait,
                        bool *waited)
{
    int64_t ttl = -1, delay = l->spin_initial_ms;
    unsigned seed = (unsigned)(rlock__thread_id() ^ (uint64_t)rlock__now_ms());
    for (int failures = 1;; failures++) {
        int rc = try_acquire(l, a, &ttl);
        if (rc != 0)
            return rc == 1 ? RLOCK_OK : rc;
        *waited = true;
        int64_t now = rlock__now_ms();
        if (no_wait || now >= a->deadline_ms)
            return RLOCK_ETIMEDOUT;
        sleep_ms(min64(delay, a->deadline_ms - now));
        delay = delay * l->spin_multiplier + rand_r(&seed) % failures;
        delay = min64(delay, l->spin_max_ms);
    }
}

/* A fair lock's waiter leaves the queue when it stops waiting without the
 * lock, so that those behind it need not wait out its slack. */
static void fair_give_up(rlock *l, const attempt_args *a)
{
    rlock__spec spec;
    if (rlock__spec_give_up(&spec, l->entry, rlock__thread_id(),
                            a->fair_wait_ms) != 0)
        return;
    rlock__req *r = rlock__req_from_spec(l->client, &spec);
    if (r == NULL)
        return; /* its place expires with its slack */
    rlock__req_call(r, l->client->cfg.command_timeout_ms);
    rlock__req_unref(r);
}

/* The acquire of rlock__trylock_ex() once its arguments are checked;
 * *waited tells whether it waited or failed a try before it returned. */
static int acquire(rlock *l, int64_t wait_ms, int64_t lease_ms,
                   int64_t *token, bool bounded, bool *waited)
{
    rlock_client *c = l->client;
    rlock__entry *e = l->entry;
    int rc;
    int64_t now = rlock__now_ms(), ttl = -1;
    attempt_args a = {
        .lease_ms = lease_ms,
        .fair_wait_ms = wait_ms > 0 ? wait_ms : 0,
        .try_once = wait_ms == 0,
        .bounded = bounded,
        .deadline_ms = wait_ms == RLOCK_WAIT_FOREVER || wait_ms > INT64_MAX - now
                           ? INT64_MAX
                           : now + wait_ms,
        .token = token,
    };
    if (e->kind == RLOCK_KIND_SPIN)
        return spin_acquire(l, &a, wait_ms == 0, waited);

    /* the anti-barging wait (above) is for kinds that let anyone in; the
     * fair lock's queue orders its waiters, and readers share */
    bool barges = e->kind == RLOCK_KIND_LOCK || e->kind == RLOCK_KIND_FENCED ||
                  e->kind == RLOCK_KIND_WRITE;
    int64_t first_wait = wait_ms != 0 && barges ? first_wait_ms(e, now) : 0;
    int64_t queued_until = now + first_wait;
    bool queued = first_wait > 0;
    if (!queued) {
        rc = try_acquire(l, &a, &ttl);
        if (rc != 0)
            return rc == 1 ? RLOCK_OK : rc;
        note_contended(e);
        if (wait_ms == 0)
            return RLOCK_ETIMEDOUT;
    }
    *waited = true;

    /* a fair waiter is woken on its own channel, through an entry of its
     * own; every other kind waits on the lock's entry */
    rlock__entry *we = e;
    if (e->kind == RLOCK_KIND_FAIR) {
        we = rlock__fair_waiter_entry(e, rlock__thread_id());
        if (we == NULL) {
            fair_give_up(l, &a);
            return RLOCK_ENOMEM;
        }
    }
    waiter_enter(we);
    if (!queued)
        wait_subscribed(
            we, min64(a.deadline_ms, rlock__now_ms() + RLOCK__SUBSCRIBE_WAIT_MS));
    /* trying because a wait ran out with no message: a re-check */
    bool rechecking = false;
    for (;;) {
        int64_t until;
        bool turn = queued; /* the wait for its turn comes before any try */
        if (!queued) {
            rc = try_acquire(l, &a, &ttl);
            if (rc == 1 && rechecking)
                rlock__stats_count(c->stats, RLOCK__STAT_RECHECKS_FOUND_FREE);
            if (rc != 0)
                break;
            note_contended(e);
            now = rlock__now_ms();
            until = now + c->cfg.recheck_interval_ms;
            if (ttl >= 0)
                until = min64(until, now + (ttl > 0 ? ttl : 1));
        } else {
            /* waits its turn once, then tries as the others */
            queued = false;
            now = rlock__now_ms();
            until = queued_until;
        }
        if (now >= a.deadline_ms) {
            rc = RLOCK_ETIMEDOUT;
            break;
        }
        rechecking = !wait_permit(we, min64(until, a.deadline_ms)) && !turn;
    }
    waiter_leave(we);
    if (we != e) {
        if (rc != 1)
            fair_give_up(l, &a);
        rlock__entry_unref(we);
    }
    return rc == 1 ? RLOCK_OK : rc;
}

int rlock__trylock_ex(rlock *l, int64_t wait_ms, int64_t lease_ms,
                      int64_t *token, bool bounded)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    if (wait_ms < RLOCK_WAIT_FOREVER || lease_ms == 0 ||
        lease_ms < RLOCK_LEASE_WATCHDOG || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    if (rlock__loop_on_thread(l->client->loop))
        return RLOCK_EDEADLK;
    rlock_client *c = l->client;
    rc = rlock__thread_watch(c); /* so that its exit is seen */
    if (rc != 0)
        return rc;
    int64_t start_us = rlock__stats_clock(c->stats);
    bool waited = false;
    rc = acquire(l, wait_ms, lease_ms, token, bounded, &waited);
    rlock__stats_acquire_done(c->stats, rc, waited, start_us);
    return rc;
}

int rlock_trylock(rlock *l, int64_t wait_ms, int64_t lease_ms)
{
    return rlock__trylock_ex(l, wait_ms, lease_ms, NULL, false);
}

int rlock_lock(rlock *l)
{
    return rlock_trylock(l, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG);
}

/* ---------------------------------------------------------------- release */

/* Runs the kind's release script, each call within timeout_ms, retrying a
 * lost reply up to retries times with the same request id: the latch makes
 * the retry answer as the first run did. The latch is deleted once the
 * first attempt's reply is in; after a retry it is left to expire, since
 * an earlier attempt may still run (a slow or retransmitted packet) and
 * must find it. Returns RLOCK__UNLOCK_* or a negative code. */
static int release(rlock *l, uint64_t tid, int64_t lease_ms, int retries,
                   int64_t timeout_ms)
{
    rlock_client *c = l->client;
    char id[RLOCK__REQUEST_ID_LEN + 1];
    int rc = rlock__request_id(id);
    if (rc != 0)
        return rc;
    char *latch = rlock__latch_name(l->entry->name, id);
    if (latch == NULL)
        return RLOCK_ENOMEM;
    rlock__spec spec;
    rc = rlock__spec_release(&spec, l->entry, tid, lease_ms, latch);
    int64_t value = 0;
    for (int attempt = 0; rc == 0; attempt++) {
        rlock__req *r = rlock__req_from_spec(c, &spec);
        if (r == NULL) {
            rc = RLOCK_ENOMEM;
            break;
        }
        /* the I/O thread DELs the latch as soon as the reply is in: no
         * second hand-off for it (out of memory, it just expires) */
        if (attempt == 0)
            r->latch_del = rlock__strdup(latch);
        rc = rlock__req_call(r, timeout_ms);
        if (rc == 0) /* a late reply may still be written into r */
            value = r->value;
        rlock__req_unref(r);
        if ((rc != RLOCK_ECONN && rc != RLOCK_ETIMEDOUT) || attempt >= retries)
            break;
        /* a dropped connection is retried at once on a fresh one; a slow
         * server gets the retry interval */
        if (attempt > 0 || rc != RLOCK_ECONN)
            sleep_ms(c->cfg.retry_interval_ms);
        rc = 0;
    }
    rlock__spec_clear(&spec);
    free(latch);
    return rc == 0 ? (int)value : rc;
}

/* Looks up owner tid's hold for an unlock: returns 0 with its epoch and
 * lease, RLOCK_ENOTOWNER, or RLOCK_ELOST (the lost hold is forgotten). On
 * 0 the hold counts as being released until rlock__release_settle(). */
int rlock__release_begin(rlock__entry *e, uint64_t tid, uint64_t *epoch,
                         int64_t *lease_ms)
{
    int rc = RLOCK_OK;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    if (h == NULL) {
        rc = RLOCK_ENOTOWNER; /* Redis is not touched */
    } else if (h->lost) {
        rlock__entry_remove_holder(e, h);
        rc = RLOCK_ELOST;
    } else {
        *epoch = h->epoch;
        *lease_ms = h->lease_ms;
        h->releasing++;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Tells the operator that the server refused the unlock message of a
 * release of name (RLOCK_ENOTIFY): a warning the first time, then at info
 * level, so that a misconfigured server does not flood the log. Any
 * thread, with no rlock lock held. */
static void log_unannounced(rlock_client *c, const char *name)
{
    bool warned = atomic_exchange(&c->unannounced_warned, true);
    rlock__log_later(c, warned ? RLOCK_LOG_INFO : RLOCK_LOG_WARN,
                     "%s released, but the server refused its unlock message "
                     "(PUBLISH): waiters learn of it only when they re-check "
                     "(grant +publish, and keep PUBLISH from being renamed)",
                     name);
}

/* Applies a release's outcome rc (RLOCK__UNLOCK_* or a code) to the hold
 * of owner tid taken at epoch, reports a loss found while it was being
 * released if the hold was not released after all, and returns what unlock
 * reports. */
int rlock__release_settle(rlock__entry *e, uint64_t tid, uint64_t epoch,
                          int rc)
{
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    if (h != NULL && h->epoch == epoch) {
        int pending = 0;
        if (--h->releasing == 0) {
            pending = h->loss_pending;
            h->loss_pending = 0;
        }
        bool forget = false, lost = false;
        switch (rc) {
        case RLOCK__UNLOCK_RELEASED:
        case RLOCK__UNLOCK_UNANNOUNCED:
            /* a renewal that found the key gone saw our own DEL */
            pending = 0;
            forget = true;
            break;
        case RLOCK__UNLOCK_STILL_HELD:
            forget = --h->count == 0;
            break;
        case RLOCK__UNLOCK_NOT_HELD:
        case RLOCK__UNLOCK_NOT_A_LOCK:
        case RLOCK_EPROTO:
            /* lost before the release: the caller is told */
            forget = lost = true;
            break;
        case RLOCK_ECONN:
        case RLOCK_ETIMEDOUT:
            /* unknown outcome: one hold less, and an unreachable key is
             * left to its lease */
            forget = --h->count == 0;
            break;
        default:
            /* refused (an error reply: OOM, ACL, READONLY...), or never
             * sent: nothing changed, so the hold stays as it was */
            break;
        }
        if (pending != 0)
            rlock__hold_lost(e, h, pending);
        if (lost && !h->lost) /* found by this unlock, not reported yet */
            rlock__hold_note_lost(e, h, RLOCK_LOST_GONE);
        if (forget && !lost && !h->lost)
            rlock__stats_hold_done(e->client->stats, h->held_at_us);
        if (forget)
            rlock__entry_remove_holder(e, h);
    }
    pthread_mutex_unlock(&e->mu);
    if (rc == RLOCK__UNLOCK_RELEASED || rc == RLOCK__UNLOCK_UNANNOUNCED ||
        rc == RLOCK__UNLOCK_STILL_HELD)
        rlock__stats_count(e->client->stats, RLOCK__STAT_RELEASES);
    switch (rc) {
    case RLOCK__UNLOCK_NOT_HELD:
    case RLOCK__UNLOCK_NOT_A_LOCK:
        return RLOCK_ELOST;
    case RLOCK__UNLOCK_UNANNOUNCED:
        log_unannounced(e->client, e->name);
        return RLOCK_ENOTIFY;
    default:
        return rc < 0 ? rc : RLOCK_OK;
    }
}

int rlock_unlock(rlock *l)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    if (rlock__loop_on_thread(l->client->loop))
        return RLOCK_EDEADLK;
    rlock__entry *e = l->entry;
    uint64_t tid = rlock__thread_id();

    uint64_t epoch = 0;
    int64_t lease_ms = 0;
    rc = rlock__release_begin(e, tid, &epoch, &lease_ms);
    if (rc != 0)
        return rc;

    rc = release(l, tid, lease_ms, l->client->cfg.retry_attempts,
                 l->client->cfg.command_timeout_ms);
    if (rc == RLOCK__UNLOCK_RELEASED || rc == RLOCK__UNLOCK_UNANNOUNCED) {
        pthread_mutex_lock(&e->mu);
        e->released_at_ms = rlock__now_ms();
        pthread_mutex_unlock(&e->mu);
    }

    return rlock__release_settle(e, tid, epoch, rc);
}

int rlock_force_unlock(rlock *l)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    rlock__spec spec;
    rlock__spec_force(&spec, l->entry);
    rlock__req *r = rlock__req_from_spec(l->client, &spec);
    if (r == NULL)
        return RLOCK_ENOMEM;
    rc = rlock__req_call(r, l->client->cfg.command_timeout_ms);
    int64_t deleted = rc == 0 ? r->value : 0;
    rlock__req_unref(r);
    if (rc != 0)
        return rc;
    /* every local hold is void now: their unlocks answer RLOCK_ELOST. One
     * side of a read-write lock is only deleted in its own mode: a writer's
     * reads survive a forced read unlock that found the lock in write mode */
    int kind = l->entry->kind;
    if (deleted == 0 && (kind == RLOCK_KIND_READ || kind == RLOCK_KIND_WRITE))
        return RLOCK_OK;
    pthread_mutex_lock(&l->entry->mu);
    for (rlock__holder *h = l->entry->holders; h != NULL; h = h->next)
        rlock__hold_lost(l->entry, h, RLOCK_LOST_GONE);
    pthread_mutex_unlock(&l->entry->mu);
    if (deleted != 3)
        return RLOCK_OK;
    /* deleted, but the script caught a refused PUBLISH */
    log_unannounced(l->client, l->entry->name);
    return RLOCK_ENOTIFY;
}

/* Gives the calling thread's hold of l a new lease: PEXPIRE, and the lease
 * its inner unlocks restore (a multi-lock sets its lease once all its locks
 * are in). Returns 0, RLOCK_ENOTOWNER, RLOCK_ELOST or a connection error. */
int rlock__set_lease(rlock *l, int64_t lease_ms)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    if (lease_ms <= 0 || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    rlock__entry *e = l->entry;
    uint64_t tid = rlock__thread_id();
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    rc = h == NULL ? RLOCK_ENOTOWNER : h->lost ? RLOCK_ELOST : RLOCK_OK;
    pthread_mutex_unlock(&e->mu);
    if (rc != 0)
        return rc;
    char lease[24];
    snprintf(lease, sizeof(lease), "%lld", (long long)lease_ms);
    const char *argv[] = {"PEXPIRE", e->name, lease};
    int64_t set = 0;
    rc = rlock__call(l->client, NULL, RLOCK__REPLY_INTEGER, 0, 3, argv, &set,
                     NULL);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&e->mu);
    h = rlock__entry_find_holder(e, tid);
    if (h != NULL && set == 1) {
        /* an outer hold taken under the watchdog stays renewed, as in
         * Redisson, where the multi-lock's lease adds no watchdog entry */
        h->lease_ms = lease_ms;
    } else if (h != NULL && !h->lost) {
        rlock__hold_lost(e, h, RLOCK_LOST_GONE);
    }
    pthread_mutex_unlock(&e->mu);
    return set == 1 ? RLOCK_OK : RLOCK_ELOST;
}

/* ---------------------------------------------------------------- queries */

/* Runs one plain command about this lock: returns 0 with its integer in
 * *value (nil: 0), or a negative code. */
static int query(rlock *l, int argc, const char *const *argv, int64_t *value)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    bool nil = false;
    *value = 0;
    rc = rlock__call(l->client, NULL, RLOCK__REPLY_INTEGER, 0, argc, argv,
                     value, &nil);
    if (rc == 0 && nil)
        *value = 0;
    return rc;
}

int rlock_is_locked(rlock *l)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    rlock__spec spec;
    rlock__spec_is_locked(&spec, l->entry);
    int64_t v = 0;
    rc = rlock__call(l->client, spec.script, spec.reply, spec.numkeys,
                     spec.argc, spec.argv, &v, NULL);
    return rc != 0 ? rc : v > 0;
}

/* Asks Redis about the calling thread's field: op is HEXISTS or HGET.
 * Returns 0 with the answer in *value (0 when not held), or a code. If
 * the thread holds the lock locally but Redis says otherwise, the hold is
 * marked lost. */
static int query_own_field(rlock *l, const char *op, int64_t *value)
{
    *value = 0;
    /* first: in a forked child the entry's mutex may have been copied
     * locked by a thread that does not exist there */
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    rlock__entry *e = l->entry;
    uint64_t tid = rlock__thread_id();
    char owner[RLOCK__TAG_MAX];
    rlock__kind_owner_tag(owner, e, tid);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, tid);
    bool held = h != NULL && !h->lost;
    uint64_t epoch = h ? h->epoch : 0;
    pthread_mutex_unlock(&e->mu);
    if (!held)
        return RLOCK_OK;
    const char *argv[] = {op, e->name, owner};
    rc = query(l, 3, argv, value);
    if (rc == 0 && *value == 0)
        mark_lost(e, tid, epoch);
    return rc;
}

int rlock_is_held_by_me(rlock *l)
{
    int64_t v = 0;
    int rc = query_own_field(l, "HEXISTS", &v);
    return rc != 0 ? rc : v > 0;
}

int rlock_hold_count(rlock *l)
{
    int64_t v = 0;
    int rc = query_own_field(l, "HGET", &v);
    if (rc != 0)
        return rc;
    if (v < 0 || v > INT32_MAX)
        return RLOCK_EPROTO; /* a hold count no lock script writes */
    return (int)v;
}

int64_t rlock_hold_id(rlock *l)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    return rlock__entry_hold_id(l->entry, rlock__thread_id());
}

int64_t rlock_remaining_ttl(rlock *l)
{
    int rc = check_handle(l);
    if (rc != 0)
        return rc;
    const char *argv[] = {"PTTL", l->entry->name};
    int64_t v = 0;
    rc = query(l, 2, argv, &v);
    return rc != 0 ? rc : v;
}
