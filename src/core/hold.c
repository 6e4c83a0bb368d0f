/*
 * hold.c: the holds a client remembers on each entry: which owners (threads
 * or async owner ids) hold it, with their reentrant counts, leases, watchdog
 * flags, and whether they were found lost.
 *
 * Design notes. A hold is found lost by the watchdog (its key gone, taken,
 * or unrenewable for a whole lease), a query, a force unlock, or its owning
 * thread's exit; each marks it here, once, and the notifier (notify.c) runs
 * the callbacks. While its owner is unlocking it, a loss is only noted: a
 * renewal racing the unlock's own DEL finds the key gone, and only the
 * unlock's outcome (rlock__hold_settle) tells a released hold from a lost
 * one. Every hold carries an epoch, unique in the client, so that a late
 * reply about an earlier hold changes nothing.
 *
 * Everything here runs under the entry's mutex (the table's first when a
 * walk spans entries), and is called from any thread.
 */
#include "entry_impl.h"

#include <stdlib.h>
#include <string.h>

static rlock__holder *find(entry *e, uint64_t owner)
{
    rlock__holder *h = e->holders;
    while (h != NULL && h->tid != owner)
        h = h->next;
    return h;
}

/* Unlinks and frees h. e->mu held (or the entry no longer shared). */
void rlock__holder_remove(entry *e, rlock__holder *h)
{
    rlock__holder **p = &e->holders;
    while (*p != NULL && *p != h)
        p = &(*p)->next;
    if (*p == h) {
        *p = h->next;
        free(h);
    }
}

/* Why a hold was lost, for the log line. */
static const char *lost_why(int reason)
{
    switch (reason) {
    case RLOCK_LOST_GONE:
        return "the lock or its holder's field vanished (expired, deleted "
               "or force-unlocked)";
    case RLOCK_LOST_TAKEN:
        return "another owner holds it now";
    case RLOCK_LOST_EXPIRED:
        return "renewals failed for a whole lease, so it has run out";
    case RLOCK_LOST_ABANDONED:
        return "its owning thread exited holding it";
    default:
        return "unknown reason";
    }
}

/* Counts h's loss for reason and logs it; also for a loss found by the
 * owner's own unlock, which is told by RLOCK_ELOST rather than a callback.
 * e->mu held, which the log hook may need: the line goes through the I/O
 * thread's queue. */
static void note_lost(entry *e, const rlock__holder *h, int reason)
{
    rlock_client *c = e->pub.client;
    rlock__stats_lost(c->stats, reason);
    rlock__log_later(c, RLOCK_LOG_WARN,
                     "lock %s lost by owner %llu (hold %llu): %s",
                     e->pub.name, (unsigned long long)h->tid,
                     (unsigned long long)h->epoch, lost_why(reason));
}

/* Marks h lost for reason and queues the callbacks, once per hold (see the
 * design notes for a hold being released). e->mu held. */
static void mark_lost(entry *e, rlock__holder *h, int reason)
{
    if (h->lost)
        return;
    if (h->releasing > 0) {
        if (h->loss_pending == 0)
            h->loss_pending = reason;
        return;
    }
    h->lost = true;
    note_lost(e, h, reason);
    rlock__notifier_post(e->pub.client->notifier, e->pub.name, h->tid,
                         h->epoch, reason, e->lost_cb, e->lost_arg,
                         e->lost_reg);
}

/* ---------------------------------------------------------------- taking */

/* A hold record, allocated before an acquire is sent so that a lock taken
 * in Redis is never forgotten for want of memory. NULL when out of it. */
rlock__holder *rlock__hold_spare(void)
{
    return rlock__malloc(sizeof(rlock__holder));
}

void rlock__hold_spare_free(rlock__holder *h)
{
    free(h);
}

/* Records a successful acquire by owner; spare is used or freed here. */
void rlock__hold_add(rlock__entry *pub, uint64_t owner, int64_t lease_ms,
                     rlock__holder *spare)
{
    entry *e = entry_of(pub);
    rlock_client *c = pub->client;
    bool watchdog = lease_ms == RLOCK_LEASE_WATCHDOG;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h != NULL && h->lost) {
        /* a lost hold taken afresh starts over: its old count is void */
        rlock__holder_remove(e, h);
        h = NULL;
    }
    if (h == NULL) {
        h = spare;
        spare = NULL;
        memset(h, 0, sizeof(*h));
        h->tid = owner;
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

/* ------------------------------------------------------------- questions */

/* Whether owner holds e and the hold was not found lost; *epoch (may be
 * NULL) gets the hold's epoch. */
bool rlock__hold_valid(rlock__entry *pub, uint64_t owner, uint64_t *epoch)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    bool valid = h != NULL && !h->lost;
    if (valid && epoch != NULL)
        *epoch = h->epoch;
    pthread_mutex_unlock(&e->mu);
    return valid;
}

/* Owner's hold count as remembered (0 when not held or lost). */
int rlock__hold_count(rlock__entry *pub, uint64_t owner)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    int count = h != NULL && !h->lost ? h->count : 0;
    pthread_mutex_unlock(&e->mu);
    return count;
}

/* Returns the id (epoch) of owner's hold on e, or RLOCK_ENOTOWNER. */
int64_t rlock__hold_id(rlock__entry *pub, uint64_t owner)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    int64_t id = h != NULL ? (int64_t)h->epoch : RLOCK_ENOTOWNER;
    pthread_mutex_unlock(&e->mu);
    return id;
}

/* Returns 0 when owner holds e, RLOCK_ENOTOWNER, or RLOCK_ELOST. */
int rlock__hold_check(rlock__entry *pub, uint64_t owner)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    int rc = h == NULL ? RLOCK_ENOTOWNER : h->lost ? RLOCK_ELOST : RLOCK_OK;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Returns how many holds owner is known to have in the field e's scripts
 * write: plain, fair, fenced and spin locks on one name share that field
 * ("<uuid>:<owner>"), so each kind's holds count; a write side's field
 * ("<uuid>:<owner>:write") is its own. Holds found lost are not counted. */
int rlock__owner_known_holds(rlock__entry *pub, uint64_t owner)
{
    static const int sharing[] = {RLOCK_KIND_LOCK, RLOCK_KIND_FAIR,
                                  RLOCK_KIND_FENCED, RLOCK_KIND_SPIN};
    static const int alone[] = {RLOCK_KIND_WRITE};
    bool shares = pub->kind != RLOCK_KIND_WRITE;
    const int *kinds = shares ? sharing : alone;
    size_t n = shares ? sizeof(sharing) / sizeof(*sharing) : 1;
    rlock_client *c = pub->client;
    int known = 0;
    pthread_mutex_lock(&c->entries_mu);
    for (size_t i = 0; i < n; i++) {
        entry *other = entry_of(pub);
        if (kinds[i] != pub->kind) {
            char *key = rlock__entry_key(kinds[i], pub->name, NULL);
            other = key != NULL ? rlock__map_get(&c->entries, key) : NULL;
            free(key);
            /* out of memory: the drop may remove a hold of another kind,
             * as it did before kinds were told apart */
        }
        if (other == NULL)
            continue;
        pthread_mutex_lock(&other->mu);
        rlock__holder *h = find(other, owner);
        if (h != NULL && !h->lost)
            known += h->count;
        pthread_mutex_unlock(&other->mu);
    }
    pthread_mutex_unlock(&c->entries_mu);
    return known;
}

/* ----------------------------------------------------------------- losses */

/* Marks owner's hold lost if it is still the one taken at epoch. */
void rlock__hold_mark_lost(rlock__entry *pub, uint64_t owner, uint64_t epoch,
                           int reason)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h != NULL && h->epoch == epoch)
        mark_lost(e, h, reason);
    pthread_mutex_unlock(&e->mu);
}

/* After a PEXPIRE of owner's hold: set, the lease its inner unlocks
 * restore becomes lease_ms (an outer hold taken under the watchdog stays
 * renewed, as in Redisson, where a multi-lock's lease adds no watchdog
 * entry); not set, the key was gone and the hold is lost. */
void rlock__hold_set_lease(rlock__entry *pub, uint64_t owner,
                           int64_t lease_ms, bool set)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h != NULL && set)
        h->lease_ms = lease_ms;
    else if (h != NULL)
        mark_lost(e, h, RLOCK_LOST_GONE);
    pthread_mutex_unlock(&e->mu);
}

/* Every hold on e is void (a force unlock deleted the key). */
void rlock__entry_lose_all(rlock__entry *pub, int reason)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    for (rlock__holder *h = e->holders; h != NULL; h = h->next)
        mark_lost(e, h, reason);
    pthread_mutex_unlock(&e->mu);
}

static void abandon_one(entry *e, void *arg)
{
    const uint64_t *owner = arg;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, *owner);
    if (h != NULL)
        mark_lost(e, h, RLOCK_LOST_ABANDONED);
    pthread_mutex_unlock(&e->mu);
}

/* Owner's thread exited: every hold it had is lost (thread_exit.c). */
void rlock__entries_abandon(rlock_client *c, uint64_t owner)
{
    rlock__entries_walk(c, abandon_one, &owner);
}

/* ---------------------------------------------------------------- release */

/* Looks up owner's hold for an unlock: returns 0 with its epoch and lease,
 * RLOCK_ENOTOWNER, or RLOCK_ELOST (the lost hold is forgotten). On 0 the
 * hold counts as being released until rlock__hold_settle(). */
int rlock__hold_release_begin(rlock__entry *pub, uint64_t owner,
                              uint64_t *epoch, int64_t *lease_ms)
{
    entry *e = entry_of(pub);
    int rc = RLOCK_OK;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h == NULL) {
        rc = RLOCK_ENOTOWNER; /* Redis is not touched */
    } else if (h->lost) {
        rlock__holder_remove(e, h);
        rc = RLOCK_ELOST;
    } else {
        *epoch = h->epoch;
        *lease_ms = h->lease_ms;
        h->releasing++;
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

/* Applies a release's outcome rc (RLOCK__UNLOCK_* or a code) to owner's
 * hold taken at epoch, and reports a loss found while it was being released
 * if the hold was not released after all. */
void rlock__hold_settle(rlock__entry *pub, uint64_t owner, uint64_t epoch,
                        int rc)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h == NULL || h->epoch != epoch) {
        pthread_mutex_unlock(&e->mu);
        return;
    }
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
        /* unknown outcome: one hold less, and an unreachable key is left
         * to its lease */
        forget = --h->count == 0;
        break;
    default:
        /* refused (an error reply: OOM, ACL, READONLY...), or never sent:
         * nothing changed, so the hold stays as it was */
        break;
    }
    if (pending != 0)
        mark_lost(e, h, pending);
    if (lost && !h->lost) /* found by this unlock, not reported yet */
        note_lost(e, h, RLOCK_LOST_GONE);
    if (forget && !lost && !h->lost)
        rlock__stats_hold_done(pub->client->stats, h->held_at_us);
    if (forget)
        rlock__holder_remove(e, h);
    pthread_mutex_unlock(&e->mu);
}

/* --------------------------------------------------------------- watchdog */

typedef struct renew_walk {
    int64_t now_ms;
    rlock__renewal_fn fn;
    void *arg;
} renew_walk;

static void renew_one(entry *e, void *arg)
{
    renew_walk *rw = arg;
    int64_t timeout = e->pub.client->cfg.watchdog_timeout_ms;
    pthread_mutex_lock(&e->mu);
    for (rlock__holder *h = e->holders; h != NULL; h = h->next) {
        if (!h->watchdog || h->lost || h->count <= 0)
            continue;
        if (rw->now_ms - h->renewed_at_ms >= timeout) {
            mark_lost(e, h, RLOCK_LOST_EXPIRED); /* failed for a lease */
            continue;
        }
        e->refs++; /* the table's lock is held: for fn's keeping */
        if (!rw->fn(&e->pub, h->tid, h->epoch, rw->arg)) {
            e->refs--;
            break; /* the rest are renewed next tick */
        }
    }
    pthread_mutex_unlock(&e->mu);
}

void rlock__holds_to_renew(rlock_client *c, int64_t now_ms,
                           rlock__renewal_fn fn, void *arg)
{
    renew_walk rw = {now_ms, fn, arg};
    rlock__entries_walk(c, renew_one, &rw);
}

/* A renewal's outcome (RLOCK__RENEW_*) for owner's hold taken at epoch,
 * sent at sent_at_ms: its lease is known to run from then on, or the hold
 * is lost. Returns, for a renewed hold, what was left at now_ms of the
 * lease set before (the watchdog's margin), else INT64_MAX. */
int64_t rlock__hold_renewed(rlock__entry *pub, uint64_t owner,
                            uint64_t epoch, int outcome, int64_t sent_at_ms,
                            int64_t now_ms)
{
    entry *e = entry_of(pub);
    int64_t margin = INT64_MAX;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = find(e, owner);
    if (h != NULL && h->epoch == epoch && !h->lost) {
        if (outcome == RLOCK__RENEW_RENEWED) {
            margin = h->renewed_at_ms +
                     pub->client->cfg.watchdog_timeout_ms - now_ms;
            h->renewed_at_ms = sent_at_ms;
        } else {
            mark_lost(e, h,
                      outcome == RLOCK__RENEW_TAKEN ? RLOCK_LOST_TAKEN
                                                    : RLOCK_LOST_GONE);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return margin;
}

typedef struct hold_walk {
    rlock__hold_fn fn;
    void *arg;
} hold_walk;

static void each_hold(entry *e, void *arg)
{
    hold_walk *hw = arg;
    pthread_mutex_lock(&e->mu);
    for (rlock__holder *h = e->holders; h != NULL; h = h->next)
        if (!h->lost && h->count > 0)
            hw->fn(&e->pub, h->tid, h->count, h->lease_ms, hw->arg);
    pthread_mutex_unlock(&e->mu);
}

void rlock__holds_foreach(rlock_client *c, rlock__hold_fn fn, void *arg)
{
    hold_walk hw = {fn, arg};
    rlock__entries_walk(c, each_hold, &hw);
}

/* ------------------------------------------------------------- callbacks */

/* Sets e's lost callback (rlock_on_lost) behind the notifier's barrier:
 * when it returns 0, the old callback is neither running nor queued.
 * Setting the same callback and argument again changes nothing. Returns 0,
 * or RLOCK_EDEADLK on the I/O thread while the old callback runs (nothing
 * is changed then). */
int rlock__entry_set_lost_cb(rlock__entry *pub, rlock_lost_cb cb, void *arg)
{
    entry *e = entry_of(pub);
    rlock__notifier *n = pub->client->notifier;
    if (cb == NULL)
        arg = NULL;
    pthread_mutex_lock(&e->mu);
    uint64_t old = e->lost_reg;
    if (cb == e->lost_cb && arg == e->lost_arg) {
        pthread_mutex_unlock(&e->mu);
        return RLOCK_OK;
    }
    /* a loss is queued under e->mu, so every event of the old setting is
     * in the queue by now, where the barrier strips it */
    int rc = rlock__notifier_replace_begin(n, pub->client, old);
    if (rc != 0) {
        pthread_mutex_unlock(&e->mu);
        return rc;
    }
    e->lost_cb = cb;
    e->lost_arg = arg;
    e->lost_reg = cb != NULL ? rlock__notifier_new_reg() : 0;
    /* no lock of the caller's may be held while the old call finishes: it
     * may take them (an unlock from the callback takes e->mu) */
    pthread_mutex_unlock(&e->mu);
    rlock__notifier_replace_end(n, old);
    return RLOCK_OK;
}
