/*
 * java_peer.h: Java Redisson peers (compat/java's Driver) for the compat
 * tests.
 *
 * A peer is one JVM with one RedissonClient, built by scripts/deps for each
 * version in compat/java/versions.txt. The test writes command lines
 * "TID OP KIND NAME [ARGS]" (see compat/java/src/Driver.java) and reads one
 * JSON event per line, each tagged with the TID it answers. Commands of one
 * TID run in order on one Java thread, the owner Redisson sees; different
 * TIDs run at once, so jp_expect() picks the next event of one TID and keeps
 * the others for later.
 *
 * Starting a JVM costs a second or more, so a test program starts each peer
 * once (in its group setup) and drives it through all its tests; the peer
 * dies with the program (node_peer.h's registry and PR_SET_PDEATHSIG) or by
 * its own guard.
 *
 * Environment:
 *   RLOCK_TEST_JAVA            java binary to run (default: java on PATH)
 *   RLOCK_TEST_REQUIRE_REDIS=1 jp_require_java() fails instead of skipping
 *
 * These helpers fail the running cmocka test through its asserts; call them
 * from the test's thread.
 */
#ifndef RLOCK_COMPAT_JAVA_PEER_H
#define RLOCK_COMPAT_JAVA_PEER_H

#include <jansson.h>

typedef struct jp_peer jp_peer;

/* Returns if java and the driver built for Redisson `version` are there.
 * Otherwise exits: with status 1 and an error if RLOCK_TEST_REQUIRE_REDIS=1,
 * else with 77 (CTest "skipped"). */
void jp_require_java(const char *version);

/* Starts a Driver of `version` on a single server at url, with options
 * (NULL-terminated "key=value" strings: watchdog=MS, timeout=MS, ...; may
 * be NULL). Does not wait for it: see jp_ready(). Returns NULL (not an
 * assert: group setups call it) if it could not be started. */
jp_peer *jp_start(const char *version, const char *url,
                  const char *const *options);

/* As jp_start(), in another of the Driver's modes: "sentinel" with
 * addresses "MASTER@redis://host:port,redis://host:port" (Redisson's
 * sentinelServersConfig), or "cluster" with addresses
 * "redis://host:port,redis://host:port" (its clusterServersConfig, these
 * seeds in this order). */
jp_peer *jp_start_mode(const char *version, const char *mode,
                       const char *addresses, const char *const *options);

/* Waits for the peer's "ready" event and returns 0 if it came within
 * timeout_ms and names `version`, else -1 (printing why). */
int jp_ready(jp_peer *p, const char *version, int timeout_ms);

/* Writes one command line (printf format, no newline). */
void jp_send(jp_peer *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns the next event of tid, which must be `event`, waiting up to
 * timeout_ms; fails the test if none comes, if it is another event, or if
 * the peer reports an error for any thread (but tid's own when `event` is
 * "error": a call the test expects to throw). Release with json_decref(). */
json_t *jp_expect(jp_peer *p, const char *tid, const char *event,
                  int timeout_ms);

/* Returns 1 if tid reported nothing for ms (it is still blocked), 0 if it
 * did (the event stays queued for jp_expect()). */
int jp_quiet(jp_peer *p, const char *tid, int ms);

/* Kills the peer and frees it. NULL is a no-op. */
void jp_free(jp_peer *p);

#endif /* RLOCK_COMPAT_JAVA_PEER_H */
