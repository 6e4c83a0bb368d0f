/*
 * lock_testing.h: helpers shared by rlock's integration tests, on top of
 * harness.h (and cluster_fixture.h, for those of a cluster).
 *
 * Unlike the harness, these helpers know the rlock API and fail the running
 * cmocka test through its asserts, so call them from inside a test (or from
 * a thread the test joins), except the lt_group_* fixtures, which report
 * failure by return value as cmocka group setups must.
 */
#ifndef RLOCK_TEST_LOCK_TESTING_H
#define RLOCK_TEST_LOCK_TESTING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>

#include "cluster_fixture.h"
#include "harness.h"
#include "rlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a lock name unique to the calling test into the array buf.  Each
 * test file defines LT_SUITE (a string literal) first, so that names stay
 * apart when a server's data outlives one suite. */
#define LT_TEST_NAME(buf) snprintf((buf), sizeof(buf), LT_SUITE ":%s", __func__)

/* The usual group state: one server, and one client connected to it (NULL
 * for lt_group_setup_redis_only). */
typedef struct lt_fixture {
    rt_redis redis;
    rlock_client *client;
} lt_fixture;

/* Starts a server in *r and, unless client is NULL, connects *client to it
 * with cfg (NULL: defaults).  Returns 0, or -1 with nothing left running.
 * For fixtures that carry more than an lt_fixture. */
int lt_start(rt_redis *r, rlock_client **client, const rlock_config *cfg);

/* Frees client (NULL is fine) and stops the server. */
void lt_stop(rt_redis *r, rlock_client *client);

/* An async call's completion: status, once done is set. Zero it before
 * passing lt_on_done and its address to an rlock_*_async() call. */
typedef struct lt_completion {
    atomic_int done;
    atomic_int status;
} lt_completion;

/* An rlock_done_cb that records into the lt_completion arg. */
void lt_on_done(rlock *l, uint64_t owner, int status, void *arg);

/* Waits up to within_ms for c (failing the test after that); returns its
 * status. */
int lt_await_completion(lt_completion *c, int64_t within_ms);

/* cmocka group setups that leave a calloc'd lt_fixture in *state. */
int lt_group_setup(void **state);
int lt_group_setup_redis_only(void **state);
int lt_group_setup_with(void **state, const rlock_config *cfg);
/* lt_group_setup_with() a config whose watchdog timeout is ms, so that
 * several leases pass within a test. */
int lt_group_setup_with_watchdog(void **state, int64_t ms);
/* Matches every lt_group_setup*. */
int lt_group_teardown(void **state);

/* A setter such as rlock_config_set_command_timeout. */
typedef int (*lt_config_setter)(rlock_config *cfg, int64_t ms);

/* Connects a client to url with set(cfg, ms) applied (set NULL: defaults);
 * asserts success. */
rlock_client *lt_connect(const char *url, lt_config_setter set, int64_t ms);

/* rlock_get() that asserts success. */
rlock *lt_get_lock(rlock_client *c, const char *name);

/* Writes the hash field that marks the calling thread of client c as owner:
 * "<client uuid>:<thread id>". */
void lt_owner_field(char *buf, size_t n, rlock_client *c);

/* Writes the unlock channel Redisson derives from a lock name
 * (REDISSON-PROTOCOL.md section 1.2). */
void lt_channel_of(char *buf, size_t n, const char *name);

/* Writes the channel of count-down latch name (Redisson's
 * "redisson_countdownlatch__channel__{name}", braced whatever it holds). */
void lt_latch_channel_of(char *buf, size_t n, const char *name);

/* Write the keys of rlock's own queue of RLock waiters beside lock name:
 * its list, in arrival order, and its sorted set of when each waiter goes
 * stale (docs/lock-queue.md). */
void lt_queue_of(char *buf, size_t n, const char *name);
void lt_stale_at_of(char *buf, size_t n, const char *name);

/* Waits up to 10 s for rlock's queue of name to hold n waiters; asserts
 * it. */
void lt_await_queued(rt_redis *r, const char *name, long long n);

/* Asserts that hash name holds exactly one field, field = value. */
void lt_assert_single_field(rt_redis *r, const char *name, const char *field,
                            const char *value);

/* Returns a malloc'd "f1=v1;f2=v2;" dump of hash name (HGETALL order,
 * which is stable for an unchanged small hash), to compare before/after. */
char *lt_hash_dump(rt_redis *r, const char *name);

/* A thread that waits for a lock: rlock_trylock(l, wait_ms, lease_ms),
 * then, if it got the lock, rlock_unlock() at once. Set l, wait_ms and
 * lease_ms, then lt_waiter_start(); rc and got_at_ms are its after
 * lt_waiter_join(). l stays the caller's to free. */
typedef struct lt_waiter {
    rlock *l;
    int64_t wait_ms;
    int64_t lease_ms;
    int rc;            /* what rlock_trylock() returned */
    int64_t got_at_ms; /* rt_now_ms() when it returned */
    pthread_t thread;
} lt_waiter;

/* Starts w's thread; asserts it started. */
void lt_waiter_start(lt_waiter *w);

/* Waits for w's thread to end. */
void lt_waiter_join(lt_waiter *w);

/* Asserts that joined w got the lock within within_ms of since_ms (the
 * rt_now_ms() of what should have woken it), after printing "waiter woke
 * N ms after the <what>". */
void lt_waiter_assert_woken(const lt_waiter *w, int64_t since_ms,
                            const char *what, int64_t within_ms);

/* Adds one hold to field of lock hash name that its client never learned
 * of, beside the one it holds: what an acquire whose reply was lost (its
 * wait over, its connection gone) leaves. Asserts the field counts 2. */
void lt_add_lost_hold(rt_redis *r, const char *name, const char *field);

/* With l held (taken with lease_ms), starts w, then for loop_ms unlocks
 * l, waits gap_ms, takes it again (waiting as long as it takes) and holds
 * it hold_ms; then unlocks it and joins w, printing what w got and when
 * (from the start of the loop). An owner looping on a lock. */
void lt_loop_beside_waiter(rlock *l, lt_waiter *w, int64_t loop_ms,
                           int64_t hold_ms, int64_t gap_ms, int64_t lease_ms);

/* A lock held on one client while a waiter of another (lt_waiter) waits
 * for it: the hand-over a holder's unlock must wake the waiter for. */
typedef struct lt_handover {
    rlock *held;
    lt_waiter waiter;
} lt_handover;

/* Gets lock name on holder and on waiter, locks it on holder (rlock_lock)
 * and starts the waiter: rlock_trylock(wait_ms, lease_ms) on waiter's. It
 * may not be waiting yet when this returns: see that it is (its
 * subscription, say) before lt_handover_unlock(). */
void lt_handover_hold(lt_handover *h, rlock_client *holder,
                      rlock_client *waiter, const char *name,
                      int64_t wait_ms, int64_t lease_ms);

/* Unlocks h's hold, then asserts that the waiter got the lock within
 * within_ms (lt_waiter_assert_woken); frees both locks. */
void lt_handover_unlock(lt_handover *h, int64_t within_ms);

/* A thread of its own client that takes one lock with rlock_lock(),
 * holds it hold_ms and unlocks it, over and over until lt_looper_stop().
 * Each acquisition counts one in *taken (which several loopers may
 * share). Set the fields up to taken (set and arg configure the client,
 * as lt_connect: a short re-check interval makes a looper that waits try
 * often), then lt_looper_start(). */
typedef struct lt_looper {
    const char *url;
    const char *name;
    int64_t hold_ms;
    lt_config_setter set;
    int64_t arg;
    atomic_int *taken;
    /* the looper's own */
    rlock_client *c;
    rlock *l;
    atomic_llong first_ms; /* rt_now_ms() of its first acquisition, or 0 */
    atomic_int stop;
    int errors;   /* acquires or unlocks that failed */
    int first_rc; /* the first failure's code */
    pthread_t thread;
} lt_looper;

/* Connects k's client, gets its lock and starts its thread; asserts each.
 * Its first acquire may still be waiting when this returns. */
void lt_looper_start(lt_looper *k);

/* Tells k to stop, joins it (it unlocks what it holds first), frees its
 * lock and client, and asserts that it met no error. */
void lt_looper_stop(lt_looper *k);

/* For each master of cluster c (as the fixture numbers them: whoever
 * serves its original range's first slot now), locks and unlocks on
 * client a lock named "<prefix>-<n>" of a slot that master serves, and
 * asserts that its key is on that master while held and gone after. */
void lt_lock_on_every_master(rt_cluster *c, rlock_client *client,
                             const char *prefix);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_TEST_LOCK_TESTING_H */
