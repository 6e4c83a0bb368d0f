/*
 * kinds.c: what each kind of lock sends to Redis.
 *
 * Every kind (facts sheet §2-§6) keeps its holds in a hash named N and
 * changes it only through its own scripts; they differ in their extra keys,
 * their channel, their owner tag and their script arguments. This file is
 * the one place that knows those differences: src/core (watchdog.c too) and
 * src/api take and release every kind the same way through the call specs
 * built here (rlock__spec), so reentrancy, waiting, retries, the unlock
 * latch, the watchdog and lost-lock signalling are written once.
 *
 * Pure: a lock is described by an rlock__lock_desc (names and settings),
 * never by a client's entry; core/entry_kinds.c describes an entry.
 *
 *   kind    channel                     extra keys             owner tag
 *   lock    redisson_lock__channel:{N}  (rlock's queue list,   <uuid>:<tid>
 *                                        its stale-at set)
 *   fair    (per waiter: channel:tag)   queue list, timeouts   <uuid>:<tid>
 *   read    redisson_rwlock:{N}         {N}:<tag>:rwlock_timeout:k
 *   write   redisson_rwlock:{N}         -                      ...:write
 *   fenced  redisson_lock__channel:{N}  redisson_lock_token:{N}
 *   spin    (none: it publishes nothing)
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills out with the tag a kind's scripts know owner by. */
void rlock__kind_tag(char out[RLOCK__TAG_MAX], int kind,
                     const char *client_id, uint64_t owner)
{
    snprintf(out, RLOCK__TAG_MAX, "%s:%llu%s", client_id,
             (unsigned long long)owner,
             kind == RLOCK_KIND_WRITE ? ":write" : "");
}

/* Makes the channel and extra key names (aux: fair: queue, timeouts;
 * fenced: token key; read/write: the key prefix "{N}") of lock name of
 * kind. waiter is the owner tag of a fair waiter's own lock
 * (RLOCK__KIND_FAIR_WAIT), else NULL. Returns 0 or RLOCK_ENOMEM; what was
 * made is stored even then, for the caller to free. */
int rlock__kind_make_names(int kind, const char *name, const char *waiter,
                           char **channel, char *aux[2])
{
    const char *n = name;
    switch (kind) {
    case RLOCK_KIND_READ:
    case RLOCK_KIND_WRITE:
        *channel = rlock__prefixed_name("redisson_rwlock", n);
        aux[0] = rlock__key_prefix(n);
        return *channel && aux[0] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK_KIND_FAIR:
        *channel = rlock__channel_name(n);
        aux[0] = rlock__prefixed_name("redisson_lock_queue", n);
        aux[1] = rlock__prefixed_name("redisson_lock_timeout", n);
        return *channel && aux[0] && aux[1] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK__KIND_FAIR_WAIT: {
        char *lock_channel = rlock__channel_name(n);
        if (lock_channel == NULL)
            return RLOCK_ENOMEM;
        size_t len = strlen(lock_channel) + strlen(waiter) + 2;
        *channel = rlock__malloc(len);
        if (*channel != NULL)
            snprintf(*channel, len, "%s:%s", lock_channel, waiter);
        free(lock_channel);
        return *channel ? RLOCK_OK : RLOCK_ENOMEM;
    }
    case RLOCK_KIND_FENCED:
        *channel = rlock__channel_name(n);
        aux[0] = rlock__prefixed_name("redisson_lock_token", n);
        return *channel && aux[0] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK_KIND_LOCK:
        /* rlock's own waiting queue (lock_acquire_queued.lua), under the
         * redisson_ prefix that the ACL rules of docs/acl.md already grant, and
         * named apart from every key Redisson writes */
        *channel = rlock__channel_name(n);
        aux[0] = rlock__prefixed_name("redisson_rlock_queue", n);
        aux[1] = rlock__prefixed_name("redisson_rlock_timeout", n);
        return *channel && aux[0] && aux[1] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK__KIND_SEMAPHORE:
    case RLOCK__KIND_PERMIT_SEMAPHORE:
        return rlock__sem_make_names(kind, n, channel, aux);
    case RLOCK__KIND_COUNTDOWN:
        *channel = rlock__countdown_channel(n);
        return *channel ? RLOCK_OK : RLOCK_ENOMEM;
    default: /* spin: a spin waiter never joins its channel */
        *channel = rlock__channel_name(n);
        return *channel ? RLOCK_OK : RLOCK_ENOMEM;
    }
}

/* Whether rlock__kind_drop() has a script for kind: one that removes every
 * hold of an owner in one call. Other kinds drop by one release. */
bool rlock__kind_has_drop(int kind)
{
    return kind == RLOCK_KIND_LOCK || kind == RLOCK_KIND_FENCED ||
           kind == RLOCK_KIND_SPIN || kind == RLOCK_KIND_FAIR ||
           kind == RLOCK_KIND_WRITE;
}

static void spec_init(rlock__spec *s, const rlock__script *script,
                      rlock__reply_kind reply, int numkeys)
{
    memset(s, 0, sizeof(*s));
    s->script = script;
    s->reply = reply;
    s->numkeys = numkeys;
}

static const char *num(rlock__spec *s, int slot, int64_t v)
{
    snprintf(s->nums[slot], sizeof(s->nums[slot]), "%lld", (long long)v);
    return s->nums[slot];
}

/* The command every kind's unlock wakes waiters with: plain PUBLISH, as
 * Redisson on one server, Sentinel, or a cluster without sharded pub/sub;
 * SPUBLISH in a cluster with it (Redisson 3.28+ on Redis 7: the same
 * script, the command an argument; CLUSTER-SENTINEL.md 1.4); both, the
 * scripts running each word, for a cluster's mixed fleet (mode both). */
static const char *publish_any(const rlock__lock_desc *d)
{
    return d->publish != NULL ? d->publish : "PUBLISH";
}

static const char *publish_command(const rlock__lock_desc *d)
{
    /* a spin lock's unlock wakes nobody, as Redisson's */
    return d->kind == RLOCK_KIND_SPIN ? "" : publish_any(d);
}

/* "{N}:<owner tag>:rwlock_timeout", the prefix of a reader's lease keys
 * (facts sheet §4: peers build these names from the hash's fields). */
static int read_timeout_prefix(rlock__spec *s, const rlock__lock_desc *d)
{
    size_t len = strlen(d->aux[0]) + strlen(s->reader) + 32;
    s->owned = rlock__malloc(len);
    if (s->owned == NULL)
        return RLOCK_ENOMEM;
    snprintf(s->owned, len, "%s:%s:rwlock_timeout", d->aux[0], s->reader);
    return RLOCK_OK;
}

/* The last argument of lock_acquire.lua and fair_acquire.lua: for a
 * non-reentrant lock, the error its holder's second acquire gets (Redisson
 * 4.4's non-reentrant scripts are those scripts with the holder's branch
 * refusing); empty for a reentrant one. */
static const char *reentry(const rlock__lock_desc *d)
{
    return d->non_reentrant ? RLOCK__REENTRY_REFUSED : "";
}

/* An acquire attempt by owner: lease_ms may be RLOCK_LEASE_WATCHDOG;
 * wait_ms is a fair waiter's slack (0: the configured fair wait timeout);
 * try_once keeps a fair attempt out of the queue, and makes an RLock's
 * Redisson's one-key try (the queued script is for a waiter that found the
 * lock taken). */
int rlock__kind_acquire(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t lease_ms, int64_t wait_ms,
                        bool try_once)
{
    int64_t lease =
        lease_ms == RLOCK_LEASE_WATCHDOG ? d->watchdog_ms : lease_ms;
    switch (d->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_acquire, RLOCK__REPLY_ACQUIRE, 3);
        rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
        RLOCK__SPEC_SET(s,
            d->name, d->aux[0], d->aux[1], num(s, 0, lease), s->owner,
            num(s, 1, wait_ms > 0 ? wait_ms : d->fair_wait_ms),
            num(s, 2, d->wall_ms()), try_once ? "1" : "0", reentry(d));
        return RLOCK_OK;
    case RLOCK_KIND_READ: {
        spec_init(s, &rlock__script_read_acquire, RLOCK__REPLY_ACQUIRE, 2);
        rlock__kind_tag(s->reader, d->kind, d->client_id, owner);
        snprintf(s->owner, sizeof(s->owner), "%s:write", s->reader);
        int rc = read_timeout_prefix(s, d);
        if (rc != 0)
            return rc;
        RLOCK__SPEC_SET(s,
            d->name, s->owned, num(s, 0, lease), s->reader, s->owner);
        return RLOCK_OK;
    }
    case RLOCK_KIND_WRITE:
        spec_init(s, &rlock__script_write_acquire, RLOCK__REPLY_ACQUIRE, 1);
        break;
    case RLOCK_KIND_FENCED:
        spec_init(s, &rlock__script_fenced_acquire, RLOCK__REPLY_ACQUIRE, 2);
        rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
        RLOCK__SPEC_SET(s, d->name, d->aux[0], num(s, 0, lease), s->owner);
        return RLOCK_OK;
    case RLOCK_KIND_LOCK:
        /* a try without a wait never queues: it takes a free lock, as
         * Redisson's tryLock() does, whoever waits; nor does a first try
         * that has seen no contention */
        if (!d->queue || try_once)
            goto plain;
        spec_init(s, &rlock__script_lock_acquire_queued, RLOCK__REPLY_ACQUIRE,
                  3);
        rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
        RLOCK__SPEC_SET(s,
            d->name, d->aux[0], d->aux[1], num(s, 0, lease), s->owner,
            num(s, 1, d->queue_keep_ms), d->channel, publish_any(d),
            reentry(d));
        return RLOCK_OK;
    default: /* spin */
    plain:
        spec_init(s, &rlock__script_lock_acquire, RLOCK__REPLY_ACQUIRE, 1);
        break;
    }
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    if (d->kind == RLOCK_KIND_WRITE)
        RLOCK__SPEC_SET(s, d->name, num(s, 0, lease), s->owner);
    else
        RLOCK__SPEC_SET(s, d->name, num(s, 0, lease), s->owner, reentry(d));
    return RLOCK_OK;
}

/* One release of owner's hold, restoring lease_ms when holds remain, with
 * the unlock latch key latch (facts sheet 1.8). */
int rlock__kind_release(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t lease_ms, const char *latch)
{
    switch (d->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_release, RLOCK__REPLY_UNLOCK, 5);
        rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
        RLOCK__SPEC_SET(s,
            d->name, d->aux[0], d->aux[1], d->channel, latch, "0",
            num(s, 0, lease_ms), s->owner, num(s, 1, d->wall_ms()),
            publish_any(d), num(s, 2, d->latch_ms));
        return RLOCK_OK;
    case RLOCK_KIND_READ: {
        spec_init(s, &rlock__script_read_release, RLOCK__REPLY_UNLOCK, 5);
        rlock__kind_tag(s->reader, d->kind, d->client_id, owner);
        int rc = read_timeout_prefix(s, d);
        if (rc != 0)
            return rc;
        RLOCK__SPEC_SET(s,
            d->name, d->channel, s->owned, d->aux[0], latch, "0", s->reader,
            publish_any(d), num(s, 2, d->latch_ms));
        return RLOCK_OK;
    }
    case RLOCK_KIND_WRITE:
        spec_init(s, &rlock__script_write_release, RLOCK__REPLY_UNLOCK, 3);
        break;
    default: /* lock, fenced, spin */
        spec_init(s, &rlock__script_lock_release, RLOCK__REPLY_UNLOCK, 3);
        break;
    }
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    if (d->kind == RLOCK_KIND_WRITE) {
        RLOCK__SPEC_SET(s,
            d->name, d->channel, latch, "1", num(s, 0, lease_ms), s->owner,
            publish_command(d), num(s, 2, d->latch_ms));
        return RLOCK_OK;
    }
    /* an RLock with rlock's queue learns whether its unlock was heard:
     * someone waits, and this client's next acquire queues (acquire.c) */
    RLOCK__SPEC_SET(s,
        d->name, d->channel, latch, "0", num(s, 0, lease_ms), s->owner,
        publish_command(d), num(s, 2, d->latch_ms),
        d->kind == RLOCK_KIND_LOCK && d->queue ? "1" : "0");
    return RLOCK_OK;
}

/* Whether rlock__kind_release_one_key() has a script for kind. */
bool rlock__kind_has_one_key_release(int kind)
{
    return kind == RLOCK_KIND_LOCK || kind == RLOCK_KIND_FENCED ||
           kind == RLOCK_KIND_SPIN;
}

/* One release of owner's hold without the unlock latch, naming only the
 * lock hash: for a cluster slot that migrates, where the latched release
 * cannot run until the migration ends. Only for kinds whose release is
 * lock_release.lua (lock, fenced, spin); RLOCK_ENOTSUP for the others. */
int rlock__kind_release_one_key(rlock__spec *s, const rlock__lock_desc *d,
                                uint64_t owner, int64_t lease_ms)
{
    if (!rlock__kind_has_one_key_release(d->kind))
        return RLOCK_ENOTSUP;
    spec_init(s, &rlock__script_lock_release_one_key, RLOCK__REPLY_UNLOCK, 1);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s,
        d->name, d->channel, "0", num(s, 0, lease_ms), s->owner,
        publish_command(d),
        d->kind == RLOCK_KIND_LOCK && d->queue ? "1" : "0");
    return RLOCK_OK;
}

/* A fair lock's drop of the holds above known (every hold: 0), which
 * wakes the fair queue's head as its unlock does when it frees the lock. */
static void fair_drop(rlock__spec *s, const rlock__lock_desc *d,
                      uint64_t owner, int known)
{
    spec_init(s, &rlock__script_fair_drop, RLOCK__REPLY_INTEGER, 4);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s,
        d->name, d->aux[0], d->aux[1], d->channel, "0", s->owner,
        publish_any(d), num(s, 0, known), num(s, 1, d->wall_ms()));
}

/* A write side's drop (write_drop.lua) of owner's write holds above known
 * (every hold: 0), waking every waiter as its unlock does when it frees
 * the lock. */
static void write_drop(rlock__spec *s, const rlock__lock_desc *d,
                       uint64_t owner, int known)
{
    spec_init(s, &rlock__script_write_drop, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s, d->name, d->channel, "1", s->owner, publish_command(d),
                    num(s, 0, known));
}

/* Removes every hold owner has, whatever its count (a phantom acquire, or
 * a client shutting down): only for kinds rlock__kind_has_drop() names. */
int rlock__kind_drop(rlock__spec *s, const rlock__lock_desc *d,
                     uint64_t owner)
{
    if (!rlock__kind_has_drop(d->kind))
        return RLOCK_ENOTSUP;
    if (d->kind == RLOCK_KIND_FAIR) {
        fair_drop(s, d, owner, 0);
        return RLOCK_OK;
    }
    if (d->kind == RLOCK_KIND_WRITE) {
        write_drop(s, d, owner, 0);
        return RLOCK_OK;
    }
    spec_init(s, &rlock__script_lock_release_owner, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s, d->name, d->channel, "0", s->owner, publish_command(d));
    return RLOCK_OK;
}

/* Removes the holds a lost acquire of owner may have added beyond the
 * known holds owner has in the field (of every kind sharing it): only for
 * kinds rlock__kind_has_drop() names. */
int rlock__kind_drop_phantom(rlock__spec *s, const rlock__lock_desc *d,
                             uint64_t owner, int known)
{
    if (!rlock__kind_has_drop(d->kind))
        return RLOCK_ENOTSUP;
    if (d->kind == RLOCK_KIND_FAIR) {
        fair_drop(s, d, owner, known);
        return RLOCK_OK;
    }
    if (d->kind == RLOCK_KIND_WRITE) {
        write_drop(s, d, owner, known);
        return RLOCK_OK;
    }
    spec_init(s, &rlock__script_lock_drop, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s, d->name, d->channel, "0", s->owner, publish_command(d),
                    num(s, 0, known));
    return RLOCK_OK;
}

/* Deletes the lock whoever holds it (the read or write side only in its
 * own mode) and wakes its waiters as the kind does. */
int rlock__kind_force(rlock__spec *s, const rlock__lock_desc *d)
{
    switch (d->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_force_release, RLOCK__REPLY_INTEGER,
                  4);
        RLOCK__SPEC_SET(s,
            d->name, d->aux[0], d->aux[1], d->channel, "0",
            num(s, 0, d->wall_ms()), publish_any(d));
        return RLOCK_OK;
    case RLOCK_KIND_READ:
    case RLOCK_KIND_WRITE: {
        bool write = d->kind == RLOCK_KIND_WRITE;
        spec_init(s, &rlock__script_rw_force_release, RLOCK__REPLY_INTEGER, 2);
        RLOCK__SPEC_SET(s,
            d->name, d->channel, write ? "1" : "0", write ? "write" : "read",
            publish_any(d));
        return RLOCK_OK;
    }
    default:
        spec_init(s, &rlock__script_lock_force_release, RLOCK__REPLY_INTEGER,
                  2);
        RLOCK__SPEC_SET(s, d->name, d->channel, "0", publish_command(d));
        return RLOCK_OK;
    }
}

/* A fair waiter whose wait ran out leaves the queue; so does a waiter of
 * an RLock with rlock's queue, whose wait ended without the lock. */
int rlock__kind_give_up(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t wait_ms)
{
    if (d->kind == RLOCK_KIND_LOCK && d->queue) {
        spec_init(s, &rlock__script_lock_give_up, RLOCK__REPLY_INTEGER,
                  2);
        rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
        RLOCK__SPEC_SET(s, d->aux[0], d->aux[1], s->owner, d->channel,
                        publish_any(d));
        return RLOCK_OK;
    }
    if (d->kind != RLOCK_KIND_FAIR)
        return RLOCK_ENOTSUP;
    spec_init(s, &rlock__script_fair_give_up, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_tag(s->owner, d->kind, d->client_id, owner);
    RLOCK__SPEC_SET(s,
        d->aux[0], d->aux[1], s->owner,
        num(s, 0, wait_ms > 0 ? wait_ms : d->fair_wait_ms));
    return RLOCK_OK;
}

/* Whether anyone holds the lock: a 0/1 integer reply. */
int rlock__kind_is_locked(rlock__spec *s, const rlock__lock_desc *d)
{
    if (d->kind == RLOCK_KIND_READ || d->kind == RLOCK_KIND_WRITE) {
        spec_init(s, &rlock__script_rw_is_locked, RLOCK__REPLY_INTEGER, 1);
        RLOCK__SPEC_SET(s,
            d->name, d->kind == RLOCK_KIND_WRITE ? "write" : "read");
        return RLOCK_OK;
    }
    spec_init(s, NULL, RLOCK__REPLY_INTEGER, 0);
    RLOCK__SPEC_SET(s, "EXISTS", d->name);
    return RLOCK_OK;
}

void rlock__spec_clear(rlock__spec *s)
{
    free(s->owned);
    s->owned = NULL;
}

/* Every script: the client loads them all into the server's cache when it
 * connects (api/client.c). */
const rlock__script *const rlock__all_scripts[] = {
    &rlock__script_lock_acquire,        &rlock__script_lock_release,
    &rlock__script_lock_force_release,  &rlock__script_lock_renew,
    &rlock__script_lock_release_owner,  &rlock__script_fair_acquire,
    &rlock__script_fair_give_up,        &rlock__script_fair_release,
    &rlock__script_fair_force_release,  &rlock__script_fenced_acquire,
    &rlock__script_read_acquire,        &rlock__script_read_release,
    &rlock__script_read_renew,          &rlock__script_write_acquire,
    &rlock__script_write_release,       &rlock__script_write_drop,
    &rlock__script_rw_force_release,
    &rlock__script_rw_is_locked,        &rlock__script_lock_drop,
    &rlock__script_fair_drop,
    &rlock__script_lock_acquire_queued,  &rlock__script_lock_give_up,
    &rlock__script_lock_release_one_key,
    &rlock__script_latch_try_set_count, &rlock__script_latch_count_down,
    &rlock__script_latch_delete};
const size_t rlock__all_scripts_count =
    sizeof(rlock__all_scripts) / sizeof(*rlock__all_scripts);
