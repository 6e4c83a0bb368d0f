/*
 * lock_sync.c: the blocking lock API (rlock_lock, rlock_trylock,
 * rlock_unlock; Redisson's RLock), the blocking driver of the core's
 * acquire and release machines (core/acquire.c, core/release.c).
 *
 * The machine runs on the calling thread: a "send" is one round trip,
 * and which executor runs it is this driver's choice (rlock__sync_call):
 * this very thread when a direct connection is idle (core/direct.c: the
 * measured fast path, two thread wake-ups fewer per round trip; in a
 * cluster, one to the master of the request's slot, core/direct_cluster.c),
 * the I/O thread otherwise (core/request.c), where requests of many threads
 * share its connections and pipeline; a "wait"
 * blocks on the thread's own condition variable until the waiter's wake-up
 * (an unlock message, the subscription) or the time the machine named.
 * Nothing here decides anything about locks: a call is the machine's steps
 * until it says done. The owner is the calling thread.
 */
#include "api/api.h"

#include <errno.h>
#include <time.h>

/* The calling thread's condition variable for its waits (CLOCK_MONOTONIC,
 * as every deadline here): one per thread, since a thread waits for one
 * lock at a time; never destroyed (glibc's holds no resource). */
static _Thread_local pthread_cond_t thread_cv;
static _Thread_local bool thread_cv_made;

static pthread_cond_t *my_cv(void)
{
    if (!thread_cv_made) {
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&thread_cv, &attr);
        pthread_condattr_destroy(&attr);
        thread_cv_made = true;
    }
    return &thread_cv;
}

static void sleep_until(int64_t until_ms)
{
    int64_t ms = until_ms - rlock__now_ms();
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int rlock__sync_call(rlock__req *r, int64_t timeout_ms)
{
    int rc;
    rlock_client *c = r->client;
    /* in a cluster, a connection to the master of the request's slot
     * (core/direct_cluster.c) */
    if (!rlock__loop_on_thread(c->loop) &&
        (c->dcluster != NULL
             ? rlock__direct_cluster_call(c->dcluster, r, timeout_ms, &rc)
             : rlock__direct_call(c->direct, r, timeout_ms, &rc)))
        return rc;
    return rlock__req_call(r, timeout_ms);
}

int rlock__sync_command(rlock_client *c, const rlock__script *script,
                        rlock__reply_kind kind, int numkeys, int argc,
                        const char *const *argv, int64_t *value, bool *nil)
{
    rlock__req *r = rlock__req_new(c, script, kind, numkeys, argc, argv);
    if (r == NULL)
        return RLOCK_ENOMEM;
    int rc = rlock__sync_call(r, c->cfg.command_timeout_ms);
    if (rc == 0) {
        if (value != NULL)
            *value = r->value;
        if (nil != NULL)
            *nil = r->nil;
    }
    rlock__req_unref(r);
    return rc;
}

/* Runs a machine from its first step st until it is done, on this
 * thread. Returns its status. */
int rlock__sync_run(const rlock__op_class *cls, void *op, rlock__step st)
{
    for (;;) {
        switch (st.kind) {
        case RLOCK__STEP_SEND: {
            int rc = rlock__sync_call(st.req, st.timeout_ms);
            rlock__step next = cls->reply(op, st.req, rc);
            rlock__req_unref(st.req); /* a late reply may still come */
            st = next;
            break;
        }
        case RLOCK__STEP_WAIT: {
            bool woken = false;
            if (st.waiter != NULL)
                woken = rlock__waiter_block(st.waiter, st.want, st.until_ms,
                                            my_cv());
            else
                sleep_until(st.until_ms);
            st = cls->wake(op, woken);
            break;
        }
        case RLOCK__STEP_DONE:
            return st.status;
        default:
            /* a machine that waits for no event has nothing to wait for
             * here: no cancel reaches a blocking call */
            return RLOCK_EPROTO;
        }
    }
}

int rlock__trylock_ex(rlock *l, int64_t wait_ms, int64_t lease_ms,
                      int64_t *token, bool bounded)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (wait_ms < RLOCK_WAIT_FOREVER || lease_ms == 0 ||
        lease_ms < RLOCK_LEASE_WATCHDOG || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    if (rlock__loop_on_thread(l->client->loop))
        return RLOCK_EDEADLK;
    rc = rlock__thread_watch(l->client); /* so that its exit is seen */
    if (rc != 0)
        return rc;
    rlock__acquire a;
    rc = rlock__acquire_init(&a, l->entry, rlock__thread_id(), wait_ms,
                             lease_ms);
    if (rc != 0)
        return rc; /* before Redis is touched */
    a.bounded = bounded;
    a.spin_initial_ms = l->spin_initial_ms;
    a.spin_max_ms = l->spin_max_ms;
    a.spin_multiplier = l->spin_multiplier;
    a.non_reentrant = l->non_reentrant;
    rc = rlock__sync_run(&rlock__acquire_class, &a, rlock__acquire_start(&a));
    if (rc == 0 && token != NULL)
        *token = a.token;
    rlock__acquire_clear(&a);
    return rc;
}

int rlock_trylock(rlock *l, int64_t wait_ms, int64_t lease_ms)
{
    return rlock__trylock_ex(l, wait_ms, lease_ms, NULL, false);
}

int rlock_lock(rlock *l)
{
    return rlock_trylock(l, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG);
}

int rlock_unlock(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (rlock__loop_on_thread(l->client->loop))
        return RLOCK_EDEADLK;
    rlock__release rel;
    rlock__release_init(&rel, l->entry, rlock__thread_id());
    rel.drop_unknown = true;
    rc = rlock__sync_run(&rlock__release_class, &rel,
                         rlock__release_start(&rel));
    rlock__release_clear(&rel);
    return rc;
}
