/*
 * latch.c: the count-down latch API (Redisson's RCountDownLatch). A latch
 * handle wraps a handle of the internal kind RLOCK__KIND_COUNTDOWN, so the
 * client closes it as it closes lock handles; its waits are the core's
 * countdown machine (core/countdown.c), its other calls one script or GET
 * each (proto/countdown.c).
 */
#include "api/api.h"

#include <stdlib.h>

struct rlock_latch {
    rlock *h; /* kind RLOCK__KIND_COUNTDOWN; never handed out */
};

int rlock_latch_get(rlock_client *c, const char *name, rlock_latch **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    rlock_latch *l = rlock__calloc(1, sizeof(*l));
    if (l == NULL)
        return RLOCK_ENOMEM;
    int rc = rlock__handle_new(c, RLOCK__KIND_COUNTDOWN, name, &l->h);
    if (rc != 0) {
        free(l);
        return rc;
    }
    *out = l;
    return RLOCK_OK;
}

void rlock_latch_free(rlock_latch *l)
{
    if (l == NULL)
        return;
    rlock__handle_free(l->h);
    free(l);
}

/* Whether a blocking call may run on l: 0, or why not. */
static int check(const rlock_latch *l)
{
    if (l == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(l->h);
    if (rc != 0)
        return rc;
    return rlock__loop_on_thread(l->h->client->loop) ? RLOCK_EDEADLK
                                                      : RLOCK_OK;
}

/* Runs the call build makes for l (count: what try_set sets); *value
 * gets its integer reply (0 for nil). */
static int call(rlock_latch *l,
                void (*build)(rlock__spec *s, const rlock__countdown_desc *d),
                int64_t count, int64_t *value)
{
    int rc = check(l);
    if (rc != 0)
        return rc;
    rlock__countdown_desc d;
    rlock__spec s;
    int64_t v = 0;
    bool nil = false;
    rlock__countdown_describe(&d, l->h->entry);
    d.count = count;
    build(&s, &d);
    rc = rlock__sync_command(l->h->client, s.script, s.reply, s.numkeys,
                             s.argc, s.argv, &v, &nil);
    rlock__spec_clear(&s);
    if (rc == 0)
        *value = nil ? 0 : v;
    return rc;
}

int rlock_latch_try_set_count(rlock_latch *l, int64_t count)
{
    if (count < 0)
        return RLOCK_EINVAL;
    int64_t set = 0;
    int rc = call(l, rlock__countdown_try_set, count, &set);
    return rc != 0 ? rc : set == 1;
}

int rlock_latch_count_down(rlock_latch *l)
{
    int64_t ignored;
    return call(l, rlock__countdown_count_down, 0, &ignored);
}

int64_t rlock_latch_count(rlock_latch *l)
{
    int64_t count = 0;
    int rc = call(l, rlock__countdown_get, 0, &count);
    if (rc != 0)
        return rc;
    return count > 0 ? count : 0;
}

int rlock_latch_delete(rlock_latch *l)
{
    int64_t deleted = 0;
    int rc = call(l, rlock__countdown_delete, 0, &deleted);
    return rc != 0 ? rc : deleted == 1;
}

int rlock_latch_await(rlock_latch *l, int64_t wait_ms)
{
    int rc = check(l);
    if (rc != 0)
        return rc;
    if (wait_ms < RLOCK_WAIT_FOREVER)
        return RLOCK_EINVAL;
    rlock__countdown_wait w;
    rlock__countdown_wait_init(&w, l->h->entry, wait_ms);
    rc = rlock__sync_run(&rlock__countdown_wait_class, &w,
                         rlock__countdown_wait_start(&w));
    rlock__countdown_wait_clear(&w);
    return rc;
}

/* An async await's completion, carried through the lock calls' delivery
 * (completions.c), which knows rlock_done_cb only. */
typedef struct latch_done {
    rlock_latch_cb cb;
    rlock_latch *l;
    void *arg;
} latch_done;

static void on_latch_done(rlock *h, uint64_t owner, int status, void *arg)
{
    (void)h;
    (void)owner;
    latch_done d = *(latch_done *)arg;
    free(arg);
    d.cb(d.l, status, d.arg);
}

int rlock_latch_await_async(rlock_latch *l, int64_t wait_ms,
                            rlock_latch_cb cb, void *arg)
{
    if (l == NULL || cb == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__handle_check(l->h);
    if (rc != 0)
        return rc;
    latch_done *d = rlock__malloc(sizeof(*d));
    if (d == NULL)
        return RLOCK_ENOMEM;
    *d = (latch_done){cb, l, arg};
    rc = rlock__countdown_await_async(l->h, wait_ms, on_latch_done, d);
    if (rc != 0)
        free(d);
    return rc;
}
