/*
 * compat_testing.h: the C side of the compat tests, on top of the harness
 * (tests/support/harness.h) and lock_testing.h.
 *
 * Like lock_testing.h, these helpers fail the running cmocka test through
 * its asserts; call them from the test's thread.
 */
#ifndef RLOCK_COMPAT_TESTING_H
#define RLOCK_COMPAT_TESTING_H

#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "rlock.h"

/* Waiting on a lock must not rely on polling here: rlock re-checks a held
 * lock at least every recheck interval, so the compat clients set it far
 * beyond any wake-up bound a test asserts. A waiter that wakes within
 * CT_WAKE_BOUND_MS was woken by an unlock message. */
#define CT_RECHECK_MS    60000
#define CT_WAKE_BOUND_MS 3000

/* Connects a client to r whose waiters wake only on unlock messages (or a
 * lease running out): the recheck interval is CT_RECHECK_MS. */
rlock_client *ct_connect(rt_redis *r);

/* Waits until channel has at least n subscribers (PUBSUB NUMSUB); asserts
 * that it happens within timeout_ms. */
void ct_wait_numsub(rt_redis *r, const char *channel, long long n,
                    int timeout_ms);

/* Wall-clock time in ms since the epoch, comparable with the "t" of a peer
 * event (JavaScript's Date.now()). */
int64_t ct_wall_ms(void);

/* A thread that takes a lock and holds it until told to let go, so that the
 * test's own thread stays free to drive peers. */
typedef struct ct_locker {
    rlock *lock;
    int64_t wait_ms; /* rlock_trylock wait (RLOCK_WAIT_FOREVER: lock) */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int acquired_rc; /* rlock_trylock's result, valid once done */
    int done;        /* 1 once rlock_trylock returned */
    int64_t done_ms; /* rt_now_ms() when it returned */
    int release;     /* set by ct_locker_release */
    int unlock_rc;   /* rlock_unlock's result (if it acquired) */
} ct_locker;

/* Starts a thread that calls rlock_trylock(l, wait_ms, watchdog) and, if it
 * got the lock, holds it until ct_locker_release(). */
void ct_locker_start(ct_locker *k, rlock *l, int64_t wait_ms);

/* Waits up to timeout_ms for the thread's rlock_trylock to return. Returns
 * 1 if it has, 0 if it is still waiting. */
int ct_locker_wait(ct_locker *k, int timeout_ms);

/* Lets the thread unlock (if it acquired), joins it and returns
 * rlock_unlock's result (RLOCK_OK when it never acquired). */
int ct_locker_release(ct_locker *k);

#endif /* RLOCK_COMPAT_TESTING_H */
