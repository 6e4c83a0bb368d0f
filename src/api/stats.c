/*
 * stats.c: the public face of a client's statistics (rlock_client_stats and
 * the histogram helpers); the counting is core/stats.c's.
 *
 * The snapshot struct grows at its end (rlock.h), so the copy honours the
 * caller's size: a caller built against an older header gets the fields it
 * knows, one built against a newer header gets zeros in the fields this
 * library does not know, and size says how much was filled.
 */
#include "api/api.h"

#include <string.h>

int rlock_client_stats(rlock_client *c, rlock_stats *out)
{
    if (out == NULL || out->size < sizeof(out->size))
        return RLOCK_EINVAL;
    size_t want = out->size;
    int rc = c == NULL ? RLOCK_EINVAL : rlock__client_check(c);
    /* a client being freed still answers: its counters are still there */
    if (rc == RLOCK_ECLOSED)
        rc = RLOCK_OK;
    if (rc != RLOCK_OK)
        return rc;
    rlock_stats all;
    if (c->stats != NULL)
        rlock__stats_snapshot(c->stats, &all);
    else
        memset(&all, 0, sizeof(all));
    size_t n = want < sizeof(all) ? want : sizeof(all);
    all.size = n;
    memcpy(out, &all, n);
    if (want > n)
        memset((char *)out + n, 0, want - n);
    return c->stats != NULL ? RLOCK_OK : RLOCK_ENOTSUP;
}

uint64_t rlock_stats_bucket_le_us(int i)
{
    return rlock__stats_bucket_le_us(i);
}

int64_t rlock_stats_quantile(const rlock_histogram *h, double q)
{
    return rlock__stats_quantile(h, q);
}
