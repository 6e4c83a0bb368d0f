/*
 * api/fenced.c: the fenced lock (Redisson's RedissonFencedLock).
 *
 * A fenced lock is the plain lock plus a counter, redisson_lock_token:{N},
 * that every acquire (reentries too) increments in the same script, so each
 * acquisition carries a token no earlier one had. A holder can be paused
 * (GC, swap, SIGSTOP) past its lease while another takes the lock; the lock
 * alone cannot stop the paused one from writing when it wakes, but a storage
 * system that remembers the highest token it has seen can refuse it. The
 * taking, waiting and releasing are the plain lock's (kinds.c, src/core).
 *
 * A public lock kind in src/api, on the core's operations.
 */
#include "api/api.h"

int rlock_fenced_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_FENCED, name, out);
}

int rlock_fenced_trylock(rlock *l, int64_t wait_ms, int64_t lease_ms,
                         int64_t *token)
{
    if (token == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (l->kind != RLOCK_KIND_FENCED)
        return RLOCK_ENOTSUP;
    return rlock__trylock_ex(l, wait_ms, lease_ms, token, false);
}

int rlock_fenced_lock(rlock *l, int64_t *token)
{
    return rlock_fenced_trylock(l, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG,
                                token);
}

int64_t rlock_fenced_token(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (l->kind != RLOCK_KIND_FENCED)
        return RLOCK_ENOTSUP;
    const char *argv[] = {"GET", l->entry->aux[0]};
    int64_t token = 0;
    bool nil = false;
    rc = rlock__sync_command(l->client, NULL, RLOCK__REPLY_INTEGER, 0, 2,
                             argv, &token, &nil);
    if (rc != 0)
        return rc;
    return nil ? 0 : token;
}
