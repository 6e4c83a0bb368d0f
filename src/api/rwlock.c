/*
 * api/rwlock.c: the read-write lock (Redisson's RedissonReadWriteLock).
 *
 * Both sides live in one hash N: a "mode" field, a read hold count per
 * reader tag and a write hold count under the writer's tag + ":write", plus
 * one lease key per read hold (kinds.c names them). An rlock_rw is just the
 * pair of handles, one per side; each side is an entry of its own kind, so
 * every lock function works on it unchanged. Both sides wait on the one
 * channel redisson_rwlock:{N}: a write unlock publishes "1", which wakes
 * every waiter, a read unlock "0", which wakes one.
 *
 * Public functions in src/api: a pair of handles over the core's entries.
 */
#include "api/api.h"

#include <stdlib.h>

struct rlock_rw {
    rlock *read;
    rlock *write;
};

int rlock_rw_get(rlock_client *c, const char *name, rlock_rw **out)
{
    if (out != NULL)
        *out = NULL;
    if (out == NULL)
        return RLOCK_EINVAL;
    rlock_rw *rw = rlock__calloc(1, sizeof(*rw));
    if (rw == NULL)
        return c == NULL || name == NULL ? RLOCK_EINVAL : RLOCK_ENOMEM;
    int rc = rlock__handle_new(c, RLOCK_KIND_READ, name, &rw->read);
    if (rc == 0)
        rc = rlock__handle_new(c, RLOCK_KIND_WRITE, name, &rw->write);
    if (rc != 0) {
        rlock__handle_free(rw->read);
        free(rw);
        return rc;
    }
    rw->read->borrowed = true;
    rw->write->borrowed = true;
    *out = rw;
    return RLOCK_OK;
}

rlock *rlock_rw_read(rlock_rw *rw)
{
    return rw != NULL ? rw->read : NULL;
}

rlock *rlock_rw_write(rlock_rw *rw)
{
    return rw != NULL ? rw->write : NULL;
}

void rlock_rw_free(rlock_rw *rw)
{
    if (rw == NULL)
        return;
    rlock__handle_free(rw->read);
    rlock__handle_free(rw->write);
    free(rw);
}
