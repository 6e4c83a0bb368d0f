/*
 * java_testing.h: what test_java_peer.c needs beside the peer itself
 * (java_peer.h): the fixture of one redis-server and two JVMs of one
 * Redisson version, C handles of every kind by the Driver's kind names,
 * short-hands for one Java command and its answer, and readings of Redis
 * state. Like compat_testing.h, these fail the running cmocka test through
 * its asserts; call them from the test's thread.
 */
#ifndef RLOCK_COMPAT_JAVA_TESTING_H
#define RLOCK_COMPAT_JAVA_TESTING_H

#include <jansson.h>

#include "harness.h"
#include "java_peer.h"
#include "rlock.h"

#define JT_JVM_START_MS   60000 /* JVM start-up on a loaded 2-core machine */
#define JT_PEER_MS        10000 /* a peer answer that needs no wait */
#define JT_SHORT_WATCHDOG 2000  /* jb's and the C watchdog test's timeout */

/* The group: one server, two JVMs, and the test's C clients (made fresh for
 * each test by jt_setup, with CT_RECHECK_MS so that waiters wake only on
 * messages). */
typedef struct jt_fixture {
    const char *version;
    rt_redis redis;
    jp_peer *ja; /* Redisson's default watchdog (30 s) */
    jp_peer *jb; /* lockWatchdogTimeout JT_SHORT_WATCHDOG */
    rlock_client *a, *b;
} jt_fixture;

/* Whether Redisson version ("4.7.0") is at least major.minor. */
int jt_version_at_least(const char *version, int major, int minor);

/* cmocka group setup (call it from a setup of the test's own that names
 * the version: the string must live as long as the group) and teardown. */
int jt_group_setup(void **state, const char *version);
/* As jt_group_setup(), with ja alone (jb NULL): one JVM to start. */
int jt_group_setup_one(void **state, const char *version);
int jt_group_teardown(void **state);

/* cmocka per-test setup and teardown: the C clients a and b; the teardown
 * also ends a CLIENT PAUSE that a failed test left. */
int jt_setup(void **state);
int jt_teardown(void **state);

/* A C handle of one kind, named as Driver.java names KIND: lock, fair,
 * read, write, spin or fenced. */
typedef struct jt_lock {
    rlock *l;
    rlock_rw *rw; /* read and write: the pair that owns l */
} jt_lock;

jt_lock jt_c_get(rlock_client *c, const char *kind, const char *name);
void jt_c_free(jt_lock *h);

/* The kind that a hold of kind keeps out: the read lock only keeps out
 * writers. */
const char *jt_excluded_by(const char *kind);

/* Sends "tid op kind name [args]" to p and returns the event it answers
 * (an event named op), within timeout_ms. */
json_t *jt_java_do(jp_peer *p, const char *tid, const char *op,
                   const char *kind, const char *name, const char *args,
                   int timeout_ms);

/* The Java thread tid takes the lock (no wait expected). */
void jt_java_lock(jp_peer *p, const char *tid, const char *kind,
                  const char *name);

/* The Java thread tid unlocks, which must succeed. */
void jt_java_unlock(jp_peer *p, const char *tid, const char *kind,
                    const char *name);

/* One tryLock(wait_ms) by the Java thread "try"; a hold it gets is given
 * back at once. Returns whether it got the lock. */
int jt_java_trylock(jp_peer *p, const char *kind, const char *name,
                    int wait_ms);

/* One wake-up round on lock name, which the C handle l (of the same kind
 * as the Driver's kind) is on: Java thread "h" holds, a C waiter on l
 * waits (subscribed on r, and for the first round seen still waiting),
 * Java unlocks; the waiter must get the lock within CT_WAKE_BOUND_MS.
 * Returns the latency, wall clock from the unlock's start; the waiter's
 * hold is released. */
long long jt_c_waiter_woken_by_java(jp_peer *p, rt_redis *r, const char *kind,
                                    const char *name, rlock *l, int first);

/* The other way: C holds l, Java thread "w" waits, C unlocks; Java must
 * get the lock within CT_WAKE_BOUND_MS, then unlocks. Returns the
 * latency. */
long long jt_java_waiter_woken_by_c(jp_peer *p, rt_redis *r, const char *kind,
                                    const char *name, rlock *l, int first);

/* The value of the only field of hash name (which must have exactly one):
 * the hold count of a plain, fair, spin or fenced lock. */
long long jt_single_count(rt_redis *r, const char *name);

/* The hold count in hash name of its one owner: the value of its only
 * field other than the read-write lock's "mode". */
long long jt_owner_count(rt_redis *r, const char *name);

/* Calls of EVAL plus EVALSHA so far (INFO commandstats). */
long long jt_script_calls(rt_redis *r);

/* Sorts ms[0..n-1] and prints min/median/max, for the wake-up table in
 * compat/README.md. */
void jt_report_latencies(const char *version, const char *what, long long *ms,
                         int n);

#endif /* RLOCK_COMPAT_JAVA_TESTING_H */
