/*
 * kinds.c: what each kind of lock sends to Redis.
 *
 * Every kind (facts sheet §2-§6) keeps its holds in a hash named N and
 * changes it only through its own scripts; they differ in their extra keys,
 * their channel, their owner tag and their script arguments. This file is
 * the one place that knows those differences: lock.c, async.c, watchdog.c and
 * client.c take and release every kind the same way through the call specs
 * built here (rlock__spec), so reentrancy, waiting, retries, the unlock
 * latch, the watchdog and lost-lock signalling are written once.
 *
 *   kind    channel                     extra keys             owner tag
 *   lock    redisson_lock__channel:{N}  -                      <uuid>:<tid>
 *   fair    (per waiter: channel:tag)   queue list, timeouts   <uuid>:<tid>
 *   read    redisson_rwlock:{N}         {N}:<tag>:rwlock_timeout:k
 *   write   redisson_rwlock:{N}         -                      ...:write
 *   fenced  redisson_lock__channel:{N}  redisson_lock_token:{N}
 *   spin    (none: it publishes nothing)
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills out with the tag e's scripts know owner by. */
void rlock__kind_owner_tag(char out[RLOCK__TAG_MAX], const rlock__entry *e,
                           uint64_t owner)
{
    snprintf(out, RLOCK__TAG_MAX, "%s:%llu%s", e->client->id,
             (unsigned long long)owner,
             e->kind == RLOCK_KIND_WRITE ? ":write" : "");
}

/* Makes e's channel and extra key names. waiter is the owner tag of a
 * fair waiter's own entry (RLOCK__KIND_FAIR_WAIT), else NULL. Returns 0 or
 * RLOCK_ENOMEM (what was made is freed with the entry). */
int rlock__kind_names(rlock__entry *e, const char *waiter)
{
    const char *n = e->name;
    switch (e->kind) {
    case RLOCK_KIND_READ:
    case RLOCK_KIND_WRITE:
        e->channel = rlock__prefixed_name("redisson_rwlock", n);
        e->aux[0] = rlock__key_prefix(n);
        return e->channel && e->aux[0] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK_KIND_FAIR:
        e->channel = rlock__channel_name(n);
        e->aux[0] = rlock__prefixed_name("redisson_lock_queue", n);
        e->aux[1] = rlock__prefixed_name("redisson_lock_timeout", n);
        return e->channel && e->aux[0] && e->aux[1] ? RLOCK_OK : RLOCK_ENOMEM;
    case RLOCK__KIND_FAIR_WAIT: {
        char *lock_channel = rlock__channel_name(n);
        if (lock_channel == NULL)
            return RLOCK_ENOMEM;
        size_t len = strlen(lock_channel) + strlen(waiter) + 2;
        e->channel = rlock__malloc(len);
        if (e->channel != NULL)
            snprintf(e->channel, len, "%s:%s", lock_channel, waiter);
        free(lock_channel);
        return e->channel ? RLOCK_OK : RLOCK_ENOMEM;
    }
    case RLOCK_KIND_FENCED:
        e->channel = rlock__channel_name(n);
        e->aux[0] = rlock__prefixed_name("redisson_lock_token", n);
        return e->channel && e->aux[0] ? RLOCK_OK : RLOCK_ENOMEM;
    default: /* lock, spin: a spin waiter never joins its channel */
        e->channel = rlock__channel_name(n);
        return e->channel ? RLOCK_OK : RLOCK_ENOMEM;
    }
}

/* Whether rlock__spec_drop() has a script for kind: one that removes every
 * hold of an owner in one call. Other kinds drop by one release. */
bool rlock__kind_has_drop(int kind)
{
    return kind == RLOCK_KIND_LOCK || kind == RLOCK_KIND_FENCED ||
           kind == RLOCK_KIND_SPIN;
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

static const char *publish_command(const rlock__entry *e)
{
    /* a spin lock's unlock wakes nobody, as Redisson's; everything else is
     * a single-server client, which publishes plainly (facts sheet 1.5) */
    return e->kind == RLOCK_KIND_SPIN ? "" : "PUBLISH";
}

/* "{N}:<owner tag>:rwlock_timeout", the prefix of a reader's lease keys
 * (facts sheet §4: peers build these names from the hash's fields). */
static int read_timeout_prefix(rlock__spec *s, const rlock__entry *e)
{
    size_t len = strlen(e->aux[0]) + strlen(s->reader) + 32;
    s->owned = rlock__malloc(len);
    if (s->owned == NULL)
        return RLOCK_ENOMEM;
    snprintf(s->owned, len, "%s:%s:rwlock_timeout", e->aux[0], s->reader);
    return RLOCK_OK;
}

/* An acquire attempt by owner: lease_ms may be RLOCK_LEASE_WATCHDOG;
 * wait_ms is a fair waiter's slack (0: the configured fair wait timeout);
 * try_once keeps a fair attempt out of the queue. */
int rlock__spec_acquire(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, int64_t wait_ms, bool try_once)
{
    const rlock_config *cfg = &e->client->cfg;
    int64_t lease =
        lease_ms == RLOCK_LEASE_WATCHDOG ? cfg->watchdog_timeout_ms : lease_ms;
    switch (e->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_acquire, RLOCK__REPLY_ACQUIRE, 3);
        rlock__kind_owner_tag(s->owner, e, owner);
        RLOCK__SPEC_SET(s,
            e->name, e->aux[0], e->aux[1], num(s, 0, lease), s->owner,
            num(s, 1, wait_ms > 0 ? wait_ms : cfg->fair_wait_timeout_ms),
            num(s, 2, rlock__wall_ms()), try_once ? "1" : "0");
        return RLOCK_OK;
    case RLOCK_KIND_READ: {
        spec_init(s, &rlock__script_read_acquire, RLOCK__REPLY_ACQUIRE, 2);
        rlock__kind_owner_tag(s->reader, e, owner);
        snprintf(s->owner, sizeof(s->owner), "%s:write", s->reader);
        int rc = read_timeout_prefix(s, e);
        if (rc != 0)
            return rc;
        RLOCK__SPEC_SET(s,
            e->name, s->owned, num(s, 0, lease), s->reader, s->owner);
        return RLOCK_OK;
    }
    case RLOCK_KIND_WRITE:
        spec_init(s, &rlock__script_write_acquire, RLOCK__REPLY_ACQUIRE, 1);
        break;
    case RLOCK_KIND_FENCED:
        spec_init(s, &rlock__script_fenced_acquire, RLOCK__REPLY_ACQUIRE, 2);
        rlock__kind_owner_tag(s->owner, e, owner);
        RLOCK__SPEC_SET(s, e->name, e->aux[0], num(s, 0, lease), s->owner);
        return RLOCK_OK;
    default: /* lock, spin */
        spec_init(s, &rlock__script_lock_acquire, RLOCK__REPLY_ACQUIRE, 1);
        break;
    }
    rlock__kind_owner_tag(s->owner, e, owner);
    RLOCK__SPEC_SET(s, e->name, num(s, 0, lease), s->owner);
    return RLOCK_OK;
}

/* One release of owner's hold, restoring lease_ms when holds remain, with
 * the unlock latch key latch (facts sheet 1.8). */
int rlock__spec_release(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, const char *latch)
{
    switch (e->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_release, RLOCK__REPLY_UNLOCK, 5);
        rlock__kind_owner_tag(s->owner, e, owner);
        RLOCK__SPEC_SET(s,
            e->name, e->aux[0], e->aux[1], e->channel, latch, "0",
            num(s, 0, lease_ms), s->owner, num(s, 1, rlock__wall_ms()),
            "PUBLISH", num(s, 2, e->client->latch_ms));
        return RLOCK_OK;
    case RLOCK_KIND_READ: {
        spec_init(s, &rlock__script_read_release, RLOCK__REPLY_UNLOCK, 5);
        rlock__kind_owner_tag(s->reader, e, owner);
        int rc = read_timeout_prefix(s, e);
        if (rc != 0)
            return rc;
        RLOCK__SPEC_SET(s,
            e->name, e->channel, s->owned, e->aux[0], latch, "0", s->reader,
            "PUBLISH", num(s, 2, e->client->latch_ms));
        return RLOCK_OK;
    }
    case RLOCK_KIND_WRITE:
        spec_init(s, &rlock__script_write_release, RLOCK__REPLY_UNLOCK, 3);
        break;
    default: /* lock, fenced, spin */
        spec_init(s, &rlock__script_lock_release, RLOCK__REPLY_UNLOCK, 3);
        break;
    }
    rlock__kind_owner_tag(s->owner, e, owner);
    RLOCK__SPEC_SET(s,
        e->name, e->channel, latch, e->kind == RLOCK_KIND_WRITE ? "1" : "0",
        num(s, 0, lease_ms), s->owner, publish_command(e),
        num(s, 2, e->client->latch_ms));
    return RLOCK_OK;
}

/* Removes every hold owner has, whatever its count (a phantom acquire, or
 * a client shutting down): only for kinds rlock__kind_has_drop() names. */
int rlock__spec_drop(rlock__spec *s, const rlock__entry *e, uint64_t owner)
{
    if (!rlock__kind_has_drop(e->kind))
        return RLOCK_ENOTSUP;
    spec_init(s, &rlock__script_lock_release_owner, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_owner_tag(s->owner, e, owner);
    RLOCK__SPEC_SET(s, e->name, e->channel, "0", s->owner, publish_command(e));
    return RLOCK_OK;
}

/* Removes the holds a lost acquire of owner may have added beyond the
 * known holds owner has in the field (of every kind sharing it): only for
 * kinds rlock__kind_has_drop() names. */
int rlock__spec_drop_phantom(rlock__spec *s, const rlock__entry *e,
                             uint64_t owner, int known)
{
    if (!rlock__kind_has_drop(e->kind))
        return RLOCK_ENOTSUP;
    spec_init(s, &rlock__script_lock_drop, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_owner_tag(s->owner, e, owner);
    RLOCK__SPEC_SET(s, e->name, e->channel, "0", s->owner, publish_command(e),
                    num(s, 0, known));
    return RLOCK_OK;
}

/* Deletes the lock whoever holds it (the read or write side only in its
 * own mode) and wakes its waiters as the kind does. */
int rlock__spec_force(rlock__spec *s, const rlock__entry *e)
{
    switch (e->kind) {
    case RLOCK_KIND_FAIR:
        spec_init(s, &rlock__script_fair_force_release, RLOCK__REPLY_INTEGER,
                  4);
        RLOCK__SPEC_SET(s,
            e->name, e->aux[0], e->aux[1], e->channel, "0",
            num(s, 0, rlock__wall_ms()), "PUBLISH");
        return RLOCK_OK;
    case RLOCK_KIND_READ:
    case RLOCK_KIND_WRITE: {
        bool write = e->kind == RLOCK_KIND_WRITE;
        spec_init(s, &rlock__script_rw_force_release, RLOCK__REPLY_INTEGER, 2);
        RLOCK__SPEC_SET(s,
            e->name, e->channel, write ? "1" : "0", write ? "write" : "read",
            "PUBLISH");
        return RLOCK_OK;
    }
    default:
        spec_init(s, &rlock__script_lock_force_release, RLOCK__REPLY_INTEGER,
                  2);
        RLOCK__SPEC_SET(s, e->name, e->channel, "0", publish_command(e));
        return RLOCK_OK;
    }
}

/* A fair waiter whose wait ran out leaves the queue. */
int rlock__spec_give_up(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t wait_ms)
{
    if (e->kind != RLOCK_KIND_FAIR)
        return RLOCK_ENOTSUP;
    spec_init(s, &rlock__script_fair_give_up, RLOCK__REPLY_INTEGER, 2);
    rlock__kind_owner_tag(s->owner, e, owner);
    RLOCK__SPEC_SET(s,
        e->aux[0], e->aux[1], s->owner,
        num(s, 0, wait_ms > 0 ? wait_ms : e->client->cfg.fair_wait_timeout_ms));
    return RLOCK_OK;
}

/* Whether anyone holds the lock: a 0/1 integer reply. */
int rlock__spec_is_locked(rlock__spec *s, const rlock__entry *e)
{
    if (e->kind == RLOCK_KIND_READ || e->kind == RLOCK_KIND_WRITE) {
        spec_init(s, &rlock__script_rw_is_locked, RLOCK__REPLY_INTEGER, 1);
        RLOCK__SPEC_SET(s,
            e->name, e->kind == RLOCK_KIND_WRITE ? "write" : "read");
        return RLOCK_OK;
    }
    spec_init(s, NULL, RLOCK__REPLY_INTEGER, 0);
    RLOCK__SPEC_SET(s, "EXISTS", e->name);
    return RLOCK_OK;
}

void rlock__spec_clear(rlock__spec *s)
{
    free(s->owned);
    s->owned = NULL;
}

/* Returns a request for s (the strings are copied), or NULL. */
rlock__req *rlock__req_from_spec(rlock_client *c, const rlock__spec *s)
{
    return rlock__req_new(c, s->script, s->reply, s->numkeys, s->argc,
                          s->argv);
}
