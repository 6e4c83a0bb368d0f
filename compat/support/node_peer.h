/*
 * node_peer.h: node-redisson peer processes for the compat tests.
 *
 * A peer is one of the programs in compat/node/ (hold.js, wait.js, ...),
 * run with `node` as a child process. It writes one JSON object per line on
 * stdout, each with an "event" member; np_next()/np_expect() read them in
 * order. Its stdin is a pipe: np_send() writes command lines to it and
 * np_close_stdin() ends it, which makes a holding peer release and exit.
 *
 * A peer never outlives its test: it gets SIGKILL when the thread that
 * started it exits (PR_SET_PDEATHSIG, so start peers from the test's main
 * thread), np_kill_all() (call it from each test's teardown, which cmocka
 * runs even after a failed assert) kills what a failed test left, an
 * atexit handler does the same, and the peer itself gives up after
 * RLOCK_PEER_MAX_MS (lib/peer.js).
 *
 * Environment:
 *   RLOCK_TEST_NODE            node binary to run (default: node on PATH)
 *   RLOCK_TEST_REQUIRE_REDIS=1 np_require_node() fails instead of skipping
 *
 * These helpers fail the running cmocka test through its asserts, so call
 * them from the test's thread.
 */
#ifndef RLOCK_COMPAT_NODE_PEER_H
#define RLOCK_COMPAT_NODE_PEER_H

#include <jansson.h>

typedef struct np_peer np_peer;

/* Returns if node and compat/node/node_modules (node-redisson 1.0.4 and
 * ioredis) are usable. Otherwise exits: with status 1 and an error if
 * RLOCK_TEST_REQUIRE_REDIS=1, else with 77 (CTest "skipped"). */
void np_require_node(void);

/* Starts `node compat/node/<program>.js url name args...` (args is a
 * NULL-terminated list, or NULL). Asserts that it started. */
np_peer *np_start(const char *program, const char *url, const char *name,
                  const char *const *args);

/* Writes to out the path of the first of names (NULL-terminated) found
 * executable: env_var's value when set, else a directory of PATH. Returns
 * 0, or -1 if there is none. */
int np_find_program(const char *env_var, const char *const *names, char *out,
                    size_t outlen);

/* Starts argv[0] (a path) with argv as any peer that speaks the same
 * protocol (compat/java's Driver, say); label names it in messages. */
np_peer *np_spawn(const char *label, const char *const *argv);

/* Returns the next event the peer printed, waiting up to timeout_ms, or NULL
 * if none came in time (or the peer closed stdout). The caller releases the
 * result with json_decref(). */
json_t *np_next(np_peer *p, int timeout_ms);

/* As np_next(), but asserts that an event came and that it is `event`
 * (an "error" event or any other event fails the test, printing the peer's
 * transcript). */
json_t *np_expect(np_peer *p, const char *event, int timeout_ms);

/* Member accessors that assert the member exists with the right type. */
int np_bool(const json_t *ev, const char *key);
long long np_int(const json_t *ev, const char *key);
const char *np_str(const json_t *ev, const char *key);

/* Writes line plus a newline to the peer's stdin. */
void np_send(np_peer *p, const char *line);

/* Closes the peer's stdin (end of input). */
void np_close_stdin(np_peer *p);

/* Waits up to timeout_ms for the peer to exit; asserts that it exited with
 * status 0 and that it printed nothing more, then frees it. */
void np_finish(np_peer *p, int timeout_ms);

/* Kills (SIGKILL) and reaps the peer if it still runs, then frees it.
 * NULL is a no-op. */
void np_free(np_peer *p);

/* np_free() on every peer still alive. Returns 0, so that it can serve as a
 * cmocka setup/teardown body. */
int np_kill_all(void);

/* cmocka per-test teardown that calls np_kill_all(). */
int np_teardown(void **state);

#endif /* RLOCK_COMPAT_NODE_PEER_H */
