/*
 * api/spin.c: the spin lock (Redisson's RedissonSpinLock).
 *
 * The same hash and owner tag as the plain lock, so the two exclude each
 * other, but no pub/sub at all: a waiter backs off and tries again
 * (src/core/acquire.c), and an unlock publishes nothing. It is for
 * clusters where pub/sub traffic, not the lock, is the bottleneck; the cost
 * is a wake-up latency of up to one back-off step and extra attempts.
 *
 * A public lock kind in src/api: its calls drive the core's acquire and
 * release (core/core.h) like every other kind's.
 */
#include "api/api.h"

int rlock_spin_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_SPIN, name, out);
}

int rlock_spin_set_backoff(rlock *l, int64_t initial_ms, int64_t max_ms,
                           int multiplier)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (l->kind != RLOCK_KIND_SPIN)
        return RLOCK_ENOTSUP;
    if (initial_ms < 1 || max_ms < initial_ms || max_ms >= ((int64_t)1 << 31) ||
        multiplier < 1 || multiplier > 16)
        return RLOCK_EINVAL;
    l->spin_initial_ms = initial_ms;
    l->spin_max_ms = max_ms;
    l->spin_multiplier = multiplier;
    return RLOCK_OK;
}
