/*
 * api/permit_semaphore.c: the public permit-expirable semaphore calls
 * (rlock.h, "permit-expirable semaphores"), Redisson's
 * RPermitExpirableSemaphore: thin drivers of core/semaphore.c, on a lock
 * handle of the internal kind RLOCK__KIND_PERMIT_SEMAPHORE, through
 * semaphore.c's helpers. Every call that reclaims ended leases passes this
 * process's wall clock, as Redisson passes the JVM's.
 */
#include "api/api.h"

#include <stdlib.h>

struct rlock_permit_semaphore {
    rlock *handle; /* of kind RLOCK__KIND_PERMIT_SEMAPHORE */
};

static rlock *handle_of(const rlock_permit_semaphore *s)
{
    return s != NULL ? s->handle : NULL;
}

int rlock_permit_semaphore_get(rlock_client *c, const char *name,
                               rlock_permit_semaphore **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    rlock_permit_semaphore *s = rlock__calloc(1, sizeof(*s));
    if (s == NULL)
        return c == NULL || name == NULL ? RLOCK_EINVAL : RLOCK_ENOMEM;
    int rc = rlock__handle_new(c, RLOCK__KIND_PERMIT_SEMAPHORE, name,
                               &s->handle);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return RLOCK_OK;
}

void rlock_permit_semaphore_free(rlock_permit_semaphore *s)
{
    if (s == NULL)
        return;
    rlock__handle_free(s->handle);
    free(s);
}

int rlock_permit_semaphore_try_set_permits(rlock_permit_semaphore *s,
                                           int permits)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    rlock__sem_handle_desc(handle_of(s), &d);
    int64_t set = 0;
    int rc = rlock__sem_call(handle_of(s), &spec,
                             rlock__sem_set_permits(&spec, &d, permits, 0),
                             &set);
    return rc != 0 ? rc : set == 1;
}

/* A lease as the calls take it: > 0, or RLOCK_PERMIT_LEASE_NONE. */
static bool lease_valid(int64_t lease_ms)
{
    return lease_ms > 0 || lease_ms == RLOCK_PERMIT_LEASE_NONE;
}

int rlock_permit_semaphore_acquire(rlock_permit_semaphore *s,
                                   int64_t wait_ms, int64_t lease_ms,
                                   char id[RLOCK_PERMIT_ID_SIZE])
{
    if (id == NULL || !lease_valid(lease_ms))
        return RLOCK_EINVAL;
    return rlock__sem_acquire_on(handle_of(s), 1, wait_ms, lease_ms, id);
}

int rlock_permit_semaphore_acquire_async(rlock_permit_semaphore *s,
                                         int64_t wait_ms, int64_t lease_ms,
                                         rlock_permit_semaphore_cb cb,
                                         void *arg)
{
    if (cb == NULL || !lease_valid(lease_ms))
        return RLOCK_EINVAL;
    rlock__sem_done d = {.permit_cb = cb, .permit = s, .arg = arg};
    return rlock__sem_acquire_async_on(handle_of(s), 1, wait_ms, lease_ms,
                                       &d);
}

int rlock_permit_semaphore_release(rlock_permit_semaphore *s, const char *id)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    rlock__sem_handle_desc(handle_of(s), &d);
    int64_t released = 0;
    int rc = rlock__sem_call(
        handle_of(s), &spec,
        rlock__permit_release(&spec, &d, id, rlock__wall_ms()), &released);
    return rc != 0 ? rc : released == 1;
}

int rlock_permit_semaphore_update_lease(rlock_permit_semaphore *s,
                                        const char *id, int64_t lease_ms)
{
    if (!lease_valid(lease_ms))
        return RLOCK_EINVAL;
    rlock__sem_desc d;
    rlock__spec spec = {0};
    rlock__sem_handle_desc(handle_of(s), &d);
    int64_t updated = 0;
    int rc = rlock__sem_call(handle_of(s), &spec,
                             rlock__permit_update_lease(&spec, &d, id,
                                                        rlock__wall_ms(),
                                                        lease_ms),
                             &updated);
    return rc != 0 ? rc : updated == 1;
}

int rlock_permit_semaphore_available(rlock_permit_semaphore *s,
                                     int64_t *out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    rlock__sem_desc d;
    rlock__spec spec = {0};
    rlock__sem_handle_desc(handle_of(s), &d);
    return rlock__sem_call(handle_of(s), &spec,
                           rlock__permit_available(&spec, &d,
                                                   rlock__wall_ms()),
                           out);
}

int rlock_permit_semaphore_add_permits(rlock_permit_semaphore *s,
                                       int permits, int64_t *out)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    rlock__sem_handle_desc(handle_of(s), &d);
    int64_t now = 0;
    int rc = rlock__sem_call(handle_of(s), &spec,
                             rlock__permit_add_permits(&spec, &d, permits),
                             &now);
    if (rc == 0 && out != NULL)
        *out = now;
    return rc;
}
