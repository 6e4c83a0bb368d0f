/*
 * api/semaphore.c: the public semaphore calls (rlock.h, "semaphores"):
 * thin drivers of core/semaphore.c. A semaphore handle wraps a lock handle
 * of the internal kind RLOCK__KIND_SEMAPHORE (lock.c), so it shares its
 * entry, its closing when the client is freed and its checks; the calls
 * that are one script run it with the command timeout on the calling
 * thread, and the acquire runs its machine with the blocking driver
 * (lock_sync.c). The helpers named rlock__sem_* here serve
 * permit_semaphore.c too, whose handles wrap a lock handle the same way.
 */
#include "api/api.h"

#include <stdlib.h>
#include <string.h>

struct rlock_semaphore {
    rlock *handle; /* of kind RLOCK__KIND_SEMAPHORE */
};

int rlock_semaphore_get(rlock_client *c, const char *name,
                        rlock_semaphore **out)
{
    if (out != NULL)
        *out = NULL;
    if (out == NULL)
        return RLOCK_EINVAL;
    rlock_semaphore *s = rlock__calloc(1, sizeof(*s));
    if (s == NULL)
        return c == NULL || name == NULL ? RLOCK_EINVAL : RLOCK_ENOMEM;
    int rc = rlock__handle_new(c, RLOCK__KIND_SEMAPHORE, name, &s->handle);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return RLOCK_OK;
}

void rlock_semaphore_free(rlock_semaphore *s)
{
    if (s == NULL)
        return;
    rlock__handle_free(s->handle);
    free(s);
}

const char *rlock_semaphore_name(const rlock_semaphore *s)
{
    return s != NULL ? s->handle->name : NULL;
}

/* Whether the semaphore handle h (NULL: none) may make a blocking call
 * now: 0, or why not. */
int rlock__sem_check(const rlock *h)
{
    if (h == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(h);
    if (rc != 0)
        return rc;
    if (rlock__loop_on_thread(h->client->loop))
        return RLOCK_EDEADLK;
    return RLOCK_OK;
}

/* The names of the semaphore handle h for proto's calls (h checked by
 * rlock__sem_call before anything is sent: a NULL or closed h gets an
 * empty description, which builds a call that is never sent). */
void rlock__sem_handle_desc(const rlock *h, rlock__sem_desc *d)
{
    *d = (rlock__sem_desc){0};
    if (h != NULL && h->entry != NULL)
        rlock__sem_describe(d, h->entry);
}

/* Runs on h the call a proto function laid out in spec (returning rc)
 * with one round trip; *value gets its integer reply (nil: 0). Returns 0
 * or a negative code. */
int rlock__sem_call(rlock *h, rlock__spec *spec, int rc, int64_t *value)
{
    if (rc == 0)
        rc = rlock__sem_check(h);
    if (rc != 0) {
        rlock__spec_clear(spec);
        return rc;
    }
    rlock_client *c = h->client;
    rlock__req *r = rlock__sem_req(c, spec, &rc);
    if (r == NULL)
        return rc;
    rc = rlock__sync_call(r, c->cfg.command_timeout_ms);
    if (rc == 0 && value != NULL)
        *value = r->nil ? 0 : r->value;
    rlock__req_unref(r);
    return rc;
}

static rlock *handle_of(const rlock_semaphore *s)
{
    return s != NULL ? s->handle : NULL;
}

static void sem_desc(const rlock_semaphore *s, rlock__sem_desc *d)
{
    rlock__sem_handle_desc(handle_of(s), d);
}

static int sem_call(rlock_semaphore *s, rlock__spec *spec, int rc,
                    int64_t *value)
{
    return rlock__sem_call(handle_of(s), spec, rc, value);
}

int rlock_semaphore_try_set_permits(rlock_semaphore *s, int permits,
                                    int64_t ttl_ms)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    sem_desc(s, &d);
    int64_t set = 0;
    int rc = sem_call(s, &spec,
                      rlock__sem_set_permits(&spec, &d, permits, ttl_ms),
                      &set);
    return rc != 0 ? rc : set == 1;
}

/* Runs the acquire of permits (lease_ms for a permit-expirable one) on
 * the semaphore handle h; id (may be NULL) gets the new permit's id. */
int rlock__sem_acquire_on(rlock *h, int permits, int64_t wait_ms,
                          int64_t lease_ms, char *id)
{
    int rc = rlock__sem_check(h);
    if (rc != 0)
        return rc;
    if (permits <= 0 || (wait_ms < 0 && wait_ms != RLOCK_WAIT_FOREVER))
        return RLOCK_EINVAL;
    rlock__sem_acquire a;
    rlock__step first =
        rlock__sem_acquire_start(&a, h->entry, permits, wait_ms, lease_ms);
    rc = rlock__sync_run(&rlock__sem_acquire_class, &a, first);
    if (rc == 0 && id != NULL)
        memcpy(id, a.id, sizeof(a.id));
    rlock__sem_acquire_clear(&a);
    return rc;
}

int rlock_semaphore_acquire(rlock_semaphore *s, int permits, int64_t wait_ms)
{
    return rlock__sem_acquire_on(handle_of(s), permits, wait_ms, 0, NULL);
}

/* The completion of an async acquire, carried through the lock calls'
 * delivery (completions.c), which knows rlock_done_cb only: runs the
 * semaphore's or the permit semaphore's callback, then frees its copy. */
static void on_sem_done(rlock *h, uint64_t owner, int status, void *arg)
{
    (void)h;
    (void)owner;
    rlock__sem_done d = *(rlock__sem_done *)arg;
    free(arg);
    if (d.permit_cb != NULL)
        d.permit_cb(d.permit, status, status == 0 ? d.id : NULL, d.arg);
    else
        d.sem_cb(d.sem, status, d.arg);
}

int rlock__sem_acquire_async_on(rlock *h, int permits, int64_t wait_ms,
                                int64_t lease_ms, const rlock__sem_done *d)
{
    if (h == NULL || (d->sem_cb == NULL && d->permit_cb == NULL))
        return RLOCK_EINVAL;
    rlock__sem_done *copy = rlock__malloc(sizeof(*copy));
    if (copy == NULL)
        return RLOCK_ENOMEM;
    *copy = *d;
    int rc = rlock__sem_acquire_async(h, permits, wait_ms, lease_ms,
                                      copy->id, on_sem_done, copy);
    if (rc != 0)
        free(copy);
    return rc;
}

int rlock_semaphore_acquire_async(rlock_semaphore *s, int permits,
                                  int64_t wait_ms, rlock_semaphore_cb cb,
                                  void *arg)
{
    rlock__sem_done d = {.sem_cb = cb, .sem = s, .arg = arg};
    return rlock__sem_acquire_async_on(handle_of(s), permits, wait_ms, 0, &d);
}

/* release and release_if_exists: 1 released, 0 not there. */
static int sem_release(rlock_semaphore *s, int permits, bool if_exists)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    sem_desc(s, &d);
    int64_t released = 0;
    int rc = sem_call(s, &spec,
                      rlock__sem_release(&spec, &d, permits, if_exists),
                      &released);
    return rc != 0 ? rc : released == 1;
}

int rlock_semaphore_release(rlock_semaphore *s, int permits)
{
    int rc = sem_release(s, permits, false);
    return rc < 0 ? rc : RLOCK_OK;
}

int rlock_semaphore_release_if_exists(rlock_semaphore *s, int permits)
{
    return sem_release(s, permits, true);
}

int rlock_semaphore_available(rlock_semaphore *s, int64_t *out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    rlock__sem_desc d;
    rlock__spec spec = {0};
    sem_desc(s, &d);
    return sem_call(s, &spec, rlock__sem_available(&spec, &d), out);
}

int rlock_semaphore_drain(rlock_semaphore *s, int64_t *out)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    sem_desc(s, &d);
    int64_t was = 0;
    int rc = sem_call(s, &spec, rlock__sem_drain(&spec, &d), &was);
    if (rc == 0 && out != NULL)
        *out = was;
    return rc;
}

int rlock_semaphore_add_permits(rlock_semaphore *s, int permits,
                                int64_t *out)
{
    rlock__sem_desc d;
    rlock__spec spec = {0};
    sem_desc(s, &d);
    int64_t now = 0;
    int rc = sem_call(s, &spec, rlock__sem_add_permits(&spec, &d, permits),
                      &now);
    if (rc == 0 && out != NULL)
        *out = now;
    return rc;
}
