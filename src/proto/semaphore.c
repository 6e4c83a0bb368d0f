/*
 * proto/semaphore.c: a semaphore's Redis names and script calls (Redisson's
 * RSemaphore; docs/protocol-synchronizers.md says what each writes).
 *
 * A semaphore N is one string key, N itself, holding the permits available
 * (a plain integer; missing: none). Every change that frees permits
 * publishes the new count on "redisson_sc:{N}" (the prefix rule of
 * keys.c), and a waiter reads that message as how many of the waiters may
 * try (rlock__sem_message_permits). The channel carries N's hash tag, so in
 * a cluster each script's keys live in one slot.
 *
 * Pure: the calls are laid out as rlock__spec for core/semaphore.c.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes the channel of the semaphore kind on name, and for a
 * permit-expirable one its leases' key "{N}:timeout" (suffix(N, "timeout")
 * of the facts sheet, 1.2) in aux[0]. Returns 0 or RLOCK_ENOMEM. */
int rlock__sem_make_names(int kind, const char *name, char **channel,
                          char *aux[2])
{
    *channel = rlock__prefixed_name("redisson_sc", name);
    if (*channel == NULL)
        return RLOCK_ENOMEM;
    if (kind != RLOCK__KIND_PERMIT_SEMAPHORE)
        return RLOCK_OK;
    char *prefix = rlock__key_prefix(name);
    if (prefix == NULL)
        return RLOCK_ENOMEM;
    size_t len = strlen(prefix) + sizeof(":timeout");
    aux[0] = rlock__malloc(len);
    if (aux[0] != NULL)
        snprintf(aux[0], len, "%s:timeout", prefix);
    free(prefix);
    return aux[0] != NULL ? RLOCK_OK : RLOCK_ENOMEM;
}

/* Sets s up for script with reply kind reply and numkeys keys; its
 * arguments follow with RLOCK__SPEC_SET. */
static void sem_spec(rlock__spec *s, const rlock__script *script,
                     rlock__reply_kind reply, int numkeys)
{
    memset(s, 0, sizeof(*s));
    s->script = script;
    s->reply = reply;
    s->numkeys = numkeys;
}

/* The decimal text of v in s's number slot. */
static const char *sem_num(rlock__spec *s, int slot, int64_t v)
{
    snprintf(s->nums[slot], sizeof(s->nums[slot]), "%lld", (long long)v);
    return s->nums[slot];
}

static const char *sem_publish(const rlock__sem_desc *d)
{
    return d->publish != NULL ? d->publish : "PUBLISH";
}

/* tryAcquire(permits): reply 1 (taken) or 0. */
int rlock__sem_try_acquire(rlock__spec *s, const rlock__sem_desc *d,
                           int permits)
{
    if (permits <= 0)
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_semaphore_try_acquire, RLOCK__REPLY_INTEGER, 1);
    RLOCK__SPEC_SET(s, d->name, sem_num(s, 0, permits));
    return RLOCK_OK;
}

/* release(permits), or releaseIfExists(permits) when if_exists: reply 1
 * (released) or 0 (no such semaphore, if_exists only). */
int rlock__sem_release(rlock__spec *s, const rlock__sem_desc *d, int permits,
                       bool if_exists)
{
    if (permits <= 0)
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_semaphore_release, RLOCK__REPLY_INTEGER, 2);
    RLOCK__SPEC_SET(s, d->name, d->channel, sem_num(s, 0, permits),
                    sem_publish(d), if_exists ? "1" : "0");
    return RLOCK_OK;
}

/* trySetPermits(permits[, ttl]): ttl_ms 0 for none; reply 1 (set) or 0. */
int rlock__sem_set_permits(rlock__spec *s, const rlock__sem_desc *d,
                           int permits, int64_t ttl_ms)
{
    if (permits < 0 || ttl_ms < 0)
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_semaphore_set_permits, RLOCK__REPLY_INTEGER,
             2);
    RLOCK__SPEC_SET(s, d->name, d->channel, sem_num(s, 0, permits),
                    sem_publish(d), sem_num(s, 1, ttl_ms));
    return RLOCK_OK;
}

/* addPermits(permits), negative to take some away: reply the new count. */
int rlock__sem_add_permits(rlock__spec *s, const rlock__sem_desc *d,
                           int permits)
{
    sem_spec(s, &rlock__script_semaphore_add_permits, RLOCK__REPLY_INTEGER,
             2);
    RLOCK__SPEC_SET(s, d->name, d->channel, sem_num(s, 0, permits),
                    sem_publish(d));
    return RLOCK_OK;
}

/* drainPermits(): reply the count taken. */
int rlock__sem_drain(rlock__spec *s, const rlock__sem_desc *d)
{
    sem_spec(s, &rlock__script_semaphore_drain, RLOCK__REPLY_INTEGER, 1);
    RLOCK__SPEC_SET(s, d->name);
    return RLOCK_OK;
}

/* availablePermits(): a plain GET (nil when the key is missing: 0). */
int rlock__sem_available(rlock__spec *s, const rlock__sem_desc *d)
{
    sem_spec(s, NULL, RLOCK__REPLY_INTEGER, 0);
    RLOCK__SPEC_SET(s, "GET", d->name);
    return RLOCK_OK;
}

/* Reads a message on a semaphore's channel: the permit count the
 * publisher left, a decimal integer (Redisson reads it as a Long and drops
 * anything else). Returns true with *out set, or false for a message that
 * is not a number. */
bool rlock__sem_message_permits(const char *payload, size_t len,
                                int64_t *out)
{
    if (len == 0 || len > 20)
        return false;
    bool neg = payload[0] == '-';
    if (neg && len == 1)
        return false;
    int64_t v = 0;
    for (size_t i = neg ? 1 : 0; i < len; i++) {
        int digit = payload[i] - '0';
        if (digit < 0 || digit > 9 || v > (INT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = neg ? -v : v;
    return true;
}

/* ------------------------------------------------ permit-expirable */

/* The lease end of a permit taken at now_ms for lease_ms (RLOCK_LEASE_NONE:
 * Redisson's "no lease" score). */
static int64_t lease_end(int64_t now_ms, int64_t lease_ms)
{
    return lease_ms < 0 ? RLOCK__PERMIT_NO_LEASE : now_ms + lease_ms;
}

/* Whether id is a permit id: RLOCK__PERMIT_ID_LEN lowercase or uppercase
 * hex digits. */
bool rlock__permit_id_valid(const char *id)
{
    if (id == NULL)
        return false;
    for (int i = 0; i < RLOCK__PERMIT_ID_LEN; i++) {
        char ch = id[i];
        bool hex = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
                   (ch >= 'A' && ch <= 'F');
        if (!hex)
            return false;
    }
    return id[RLOCK__PERMIT_ID_LEN] == '\0';
}

/* tryAcquire(1, lease): one permit under id (hex) whose lease ends
 * lease_ms after now_ms (the caller's wall clock); reply 0 (taken), the
 * earliest lease end when a lease will free one, -1 when none will. */
int rlock__permit_acquire(rlock__spec *s, const rlock__sem_desc *d,
                          const char *id, int64_t now_ms, int64_t lease_ms)
{
    if (!rlock__permit_id_valid(id))
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_permit_acquire, RLOCK__REPLY_INTEGER, 3);
    RLOCK__SPEC_SET(s, d->name, d->timeouts, d->channel, "1",
                    sem_num(s, 0, lease_end(now_ms, lease_ms)),
                    sem_num(s, 1, now_ms),
                    sem_num(s, 2, RLOCK__PERMIT_NO_LEASE), sem_publish(d), id);
    return RLOCK_OK;
}

/* tryRelease(id): reply 1 (released) or 0 (no such id, or its lease had
 * ended by now_ms: given back all the same). */
int rlock__permit_release(rlock__spec *s, const rlock__sem_desc *d,
                          const char *id, int64_t now_ms)
{
    if (!rlock__permit_id_valid(id))
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_permit_release, RLOCK__REPLY_INTEGER, 3);
    RLOCK__SPEC_SET(s, d->name, d->channel, d->timeouts, id,
                    sem_num(s, 0, now_ms), sem_publish(d));
    return RLOCK_OK;
}

/* updateLeaseTime(id, lease): reply 1 (updated) or 0 (no such id). */
int rlock__permit_update_lease(rlock__spec *s, const rlock__sem_desc *d,
                               const char *id, int64_t now_ms,
                               int64_t lease_ms)
{
    if (!rlock__permit_id_valid(id))
        return RLOCK_EINVAL;
    sem_spec(s, &rlock__script_permit_update_lease, RLOCK__REPLY_INTEGER, 3);
    RLOCK__SPEC_SET(s, d->name, d->timeouts, d->channel, id,
                    sem_num(s, 0, lease_end(now_ms, lease_ms)),
                    sem_num(s, 1, now_ms), sem_publish(d));
    return RLOCK_OK;
}

/* availablePermits(), reclaiming leases ended by now_ms: reply the count. */
int rlock__permit_available(rlock__spec *s, const rlock__sem_desc *d,
                            int64_t now_ms)
{
    sem_spec(s, &rlock__script_permit_available, RLOCK__REPLY_INTEGER, 3);
    RLOCK__SPEC_SET(s, d->name, d->timeouts, d->channel,
                    sem_num(s, 0, now_ms), sem_publish(d));
    return RLOCK_OK;
}

/* addPermits(permits): reply the new count. */
int rlock__permit_add_permits(rlock__spec *s, const rlock__sem_desc *d,
                              int permits)
{
    sem_spec(s, &rlock__script_permit_add_permits, RLOCK__REPLY_INTEGER, 2);
    RLOCK__SPEC_SET(s, d->name, d->channel, sem_num(s, 0, permits),
                    sem_publish(d));
    return RLOCK_OK;
}
