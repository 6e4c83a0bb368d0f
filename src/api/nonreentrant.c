/*
 * nonreentrant.c: handles on Redisson's non-reentrant lock and
 * non-reentrant fair lock. They are the plain and the fair lock's entries
 * (same keys, channels and owner tags as Redisson's), with a flag on the
 * handle that the acquire machine reads: an owner's second acquire is
 * refused (core/acquire.c, and the scripts' refusing branch).
 */
#include "api/api.h"

static int non_reentrant_get(rlock_client *c, int kind, const char *name,
                             rlock **out)
{
    int rc = rlock__handle_new(c, kind, name, out);
    if (rc == 0)
        (*out)->non_reentrant = true;
    return rc;
}

int rlock_nonreentrant_get(rlock_client *c, const char *name, rlock **out)
{
    return non_reentrant_get(c, RLOCK_KIND_LOCK, name, out);
}

int rlock_nonreentrant_fair_get(rlock_client *c, const char *name,
                                rlock **out)
{
    return non_reentrant_get(c, RLOCK_KIND_FAIR, name, out);
}
