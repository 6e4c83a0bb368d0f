/*
 * compat_testing.h: what the compat tests share: a fixture, rlock clients
 * that wake only on messages, lock-holding threads and common peer runs, on
 * top of the harness (tests/support/harness.h), lock_testing.h and
 * node_peer.h.
 *
 * Like lock_testing.h, these helpers fail the running cmocka test through
 * its asserts; call them from the test's thread.
 */
#ifndef RLOCK_COMPAT_TESTING_H
#define RLOCK_COMPAT_TESTING_H

#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "node_peer.h"
#include "rlock.h"

/* Waiting on a lock must not rely on polling here: rlock re-checks a held
 * lock at least every recheck interval, so the compat clients set it far
 * beyond any wake-up bound a test asserts. A waiter that wakes within
 * CT_WAKE_BOUND_MS was woken by an unlock message. */
#define CT_RECHECK_MS    60000
#define CT_WAKE_BOUND_MS 3000

/* Budget for a peer event that needs no wait. */
#define CT_PEER_MS 10000

/* The fixture of a peer test: one redis-server for the whole group, and the
 * test's clients, made fresh for each test so that one test's leftovers (a
 * waiter thread stuck after a failed assert) cannot disturb the next. */
typedef struct ct_fixture {
    rt_redis redis;
    rlock_client *a; /* the test's own client */
    rlock_client *b; /* a second C process, as far as Redis can tell */
} ct_fixture;

/* cmocka group setup and teardown: *state becomes a new ct_fixture whose
 * redis-server runs until the group teardown frees it. */
int ct_group_setup(void **state);
int ct_group_teardown(void **state);

/* cmocka per-test setup (connects a and b with ct_connect()) and teardown
 * (kills the peers a failed test left, then frees the clients). A suite
 * that needs only a may connect it in a setup of its own. */
int ct_setup(void **state);
int ct_teardown(void **state);

/* Connects a client to r whose waiters wake only on unlock messages (or a
 * lease running out): the recheck interval is CT_RECHECK_MS. */
rlock_client *ct_connect(rt_redis *r);

/* Waits until channel has at least n subscribers (PUBSUB NUMSUB); asserts
 * that it happens within timeout_ms. */
void ct_wait_numsub(rt_redis *r, const char *channel, long long n,
                    int timeout_ms);

/* Waits until rlock's queue of lock name (rlock_config_set_lock_queue)
 * holds at least n waiters, or fails the test after timeout_ms. */
void ct_wait_queued(rt_redis *r, const char *name, long long n,
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

/* Runs probe.js on name against r and asserts what the peer sees:
 * isLocked() and whether a tryLock(0) succeeded. */
void ct_expect_peer_sees(rt_redis *r, const char *name, int locked,
                         int acquired);

/* Runs trylock.js on name with wait_ms and returns whether it acquired (it
 * gives a successful hold back at once). */
int ct_peer_trylock(rt_redis *r, const char *name, const char *wait_ms);

/* Starts hold.js on name (held until ct_peer_release()) and returns it with
 * the hash field it wrote copied to field[0..n-1]. */
np_peer *ct_peer_hold(rt_redis *r, const char *name, char *field, size_t n);

/* Tells a hold.js peer to unlock, asserts that it did, and finishes it. */
void ct_peer_release(np_peer *p);

#endif /* RLOCK_COMPAT_TESTING_H */
