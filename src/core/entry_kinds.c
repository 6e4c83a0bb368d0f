/*
 * core/entry_kinds.c: a lock entry's script calls. proto/kinds.c knows what
 * each kind sends, given a description of the lock; this file describes an
 * entry (its kind and names, its client's id and settings, the wall
 * clock) and hands back proto's spec, so the core calls stay in terms of
 * entries.
 *
 * In src/core: it turns an entry into proto's terms, for the operations.
 */
#include "core/core.h"

/* How long a queued RLock waiter keeps its place without trying again:
 * a waiter tries at least every re-check interval, so twice that and a
 * second of slack for a loaded machine (at most a day). */
int64_t rlock__queue_keep_ms(const rlock_client *c)
{
    int64_t recheck = c->cfg.recheck_interval_ms;
    return recheck < 43000000 ? 2 * recheck + 1000 : 86400000;
}

static void describe(rlock__lock_desc *d, const rlock__entry *e)
{
    const rlock_client *c = e->client;
    d->kind = e->kind;
    d->name = e->name;
    d->channel = e->channel;
    d->aux[0] = e->aux[0];
    d->aux[1] = e->aux[1];
    d->client_id = c->id;
    d->watchdog_ms = c->cfg.watchdog_timeout_ms;
    d->fair_wait_ms = c->cfg.fair_wait_timeout_ms;
    d->latch_ms = c->latch_ms;
    d->wall_ms = rlock__wall_ms;
    d->publish = c->publish;
    d->queue = c->cfg.lock_queue && !c->cfg.lock_barging;
    d->queue_keep_ms = rlock__queue_keep_ms(c);
}

/* Fills out with the tag e's scripts know owner by. */
void rlock__kind_owner_tag(char out[RLOCK__TAG_MAX], const rlock__entry *e,
                           uint64_t owner)
{
    rlock__kind_tag(out, e->kind, e->client->id, owner);
}

/* Makes e's channel and extra key names. waiter is the owner tag of a
 * fair waiter's own entry (RLOCK__KIND_FAIR_WAIT), else NULL. Returns 0 or
 * RLOCK_ENOMEM (what was made is freed with the entry). */
int rlock__kind_names(rlock__entry *e, const char *waiter)
{
    return rlock__kind_make_names(e->kind, e->name, waiter, &e->channel,
                                  e->aux);
}

int rlock__spec_acquire(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, int64_t wait_ms, bool try_once,
                        bool non_reentrant)
{
    rlock__lock_desc d;
    describe(&d, e);
    d.non_reentrant = non_reentrant;
    return rlock__kind_acquire(s, &d, owner, lease_ms, wait_ms, try_once);
}

int rlock__spec_release_one_key(rlock__spec *s, const rlock__entry *e,
                                uint64_t owner, int64_t lease_ms)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_release_one_key(s, &d, owner, lease_ms);
}

int rlock__spec_release(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, const char *latch)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_release(s, &d, owner, lease_ms, latch);
}

int rlock__spec_drop(rlock__spec *s, const rlock__entry *e, uint64_t owner)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_drop(s, &d, owner);
}

int rlock__spec_drop_phantom(rlock__spec *s, const rlock__entry *e,
                             uint64_t owner, int known)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_drop_phantom(s, &d, owner, known);
}

int rlock__spec_force(rlock__spec *s, const rlock__entry *e)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_force(s, &d);
}

int rlock__spec_give_up(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t wait_ms)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_give_up(s, &d, owner, wait_ms);
}

int rlock__spec_is_locked(rlock__spec *s, const rlock__entry *e)
{
    rlock__lock_desc d;
    describe(&d, e);
    return rlock__kind_is_locked(s, &d);
}

/* Returns a request for s (the strings are copied), or NULL. */
rlock__req *rlock__req_from_spec(rlock_client *c, const rlock__spec *s)
{
    return rlock__req_new(c, s->script, s->reply, s->numkeys, s->argc,
                          s->argv);
}
