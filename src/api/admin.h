/*
 * admin.h: the few things the rlock tool needs beyond include/rlock.h.
 *
 * Design note. The tool (src/cli) sits on the public API plus this header,
 * nothing else (scripts/check-layers). What it needs that the public API
 * does not give: a raw command on a connection of the client (info reads a
 * lock's state in one MULTI/EXEC, watch reads notify-keyspace-events), the
 * key and channel names a lock uses, a subscriber for watch, and what the
 * config says about its server. The connections here are made by the same
 * routine as the client's own synchronous connections (AUTH or ACL user,
 * SELECT, CLIENT SETNAME, the connect timeout), so the handshake exists
 * once; a client refused at connect never gets this far, which is how a
 * rediss:// server stays refused until the transport carries TLS.
 *
 * Ownership: every pointer returned is the caller's, freed by the function
 * named with it. Thread-safety: an rlock_admin_conn is used by one thread
 * at a time (it is a plain blocking connection, no lock inside); the other
 * functions are safe from any thread. None may be called from an rlock
 * callback.
 */
#ifndef RLOCK_API_ADMIN_H
#define RLOCK_API_ADMIN_H

#include "proto/admin_reply.h"
#include "rlock.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* -------------------------------------------------------------- names */

/* The length of a client UUID, the first part of a lock hash's field
 * "<uuid>:<thread id>". */
#define RLOCK_ADMIN_UUID_LEN 36

/* The Redis names Redisson derives from a lock name N (hash tag rules as
 * REDISSON-PROTOCOL.md says: "{N}", or N as it is when it has a '{'). */
typedef struct rlock_admin_names {
    char *channel;       /* redisson_lock__channel:{N}: lock, fair, fenced;
                          * a fair waiter's own channel is this ":<owner>" */
    char *rw_channel;    /* redisson_rwlock:{N}: a read-write lock's */
    char *fair_queue;    /* redisson_lock_queue:{N}: a fair lock's waiters */
    char *fair_timeouts; /* redisson_lock_timeout:{N}: their deadlines */
    char *fence_token;   /* redisson_lock_token:{N}: a fenced lock's counter */
    char *rlock_queue;   /* redisson_rlock_queue:{N}: rlock's own queue of an
                          * RLock's waiters (lock_acquire_queued.lua) */
    char *rw_timeout_prefix; /* "{N}": a read hold's lease key is this
                              * ":<owner>:rwlock_timeout" */
    char *latch_prefix; /* redisson_unlock_latch:{N}: (with the colon): an
                         * unlock's latch key is this + its request id */
    /* The synchronizers of the same name (their count is the key N, a
     * plain integer, so the key alone does not tell them apart): */
    char *sem_channel;      /* redisson_sc:{N}: both semaphores' wake-ups */
    char *permit_timeouts;  /* {N}:timeout: a permit semaphore's leases */
    char *countdown_channel; /* redisson_countdownlatch__channel__{N} */
} rlock_admin_names;

/* Fills *out with lock name's names (the lock's hash is name itself).
 * Returns 0, RLOCK_EINVAL (NULL or empty name) or RLOCK_ENOMEM (*out then
 * holds nothing). Free with rlock_admin_names_clear(). */
int rlock_admin_names_of(const char *name, rlock_admin_names *out);
void rlock_admin_names_clear(rlock_admin_names *names);

/* ------------------------------------------------------------- config */

/* What a config says about its server. */
typedef struct rlock_admin_server {
    char text[320]; /* the server as a URL without its credentials:
                     * "redis://host:port/db", "unix:///path?db=N" */
    int database;   /* what the connections SELECT */
    bool password;  /* a password is set (in the URL or the config) */
    bool tls;       /* rediss:// */
} rlock_admin_server;

/* Describes cfg's server. Returns 0, or RLOCK_EINVAL when cfg is NULL or
 * has no server set (then *out says "(no server)"). */
int rlock_admin_server_of(const rlock_config *cfg, rlock_admin_server *out);

/* Sets cfg's server to url, as rlock_config_set_server() does. With
 * beats_config, a user:password and a database the URL spells out also
 * replace cfg's own (a URL given on a command line beats a config file's
 * settings; what it leaves out stays). Returns 0, RLOCK_EINVAL (not a
 * redis://, rediss:// or unix:// URL) or RLOCK_ENOMEM; on failure cfg may
 * have the URL's credentials but not its server. */
int rlock_admin_config_set_url(rlock_config *cfg, const char *url,
                               bool beats_config);

/* --------------------------------------------------------- connection */

typedef struct rlock_admin_conn rlock_admin_conn;

/* Opens a new blocking connection to c's server, handshake done as for
 * the client's own. Every command waits at most the config's command
 * timeout. Returns 0 or the code the client's connections would get
 * (RLOCK_ECONN, RLOCK_ETIMEDOUT, RLOCK_EAUTH, ...); *out is NULL then. c
 * must outlive the connection. */
int rlock_admin_open(rlock_client *c, rlock_admin_conn **out);

/* Closes a; NULL is a no-op. */
void rlock_admin_close(rlock_admin_conn *a);

/* In a cluster, each command (or pipeline) goes to the master serving the
 * slot of the first key it names, as the client's slot table says; this
 * is that master, "host:port" (borrowed, until the next call on a). ""
 * on a single server, and before the first command. */
const char *rlock_admin_node(const rlock_admin_conn *a);

/* Why a's last call failed, as the connection said it ("" if it did not
 * say). Valid until the next call on a. */
const char *rlock_admin_error(const rlock_admin_conn *a);

/* Runs one command (argv[0 .. argc), NUL-terminated strings) and stores
 * its reply in *out, an error reply included (type RLOCK_ADMIN_ERROR).
 * Returns 0, RLOCK_EINVAL, RLOCK_ENOMEM, RLOCK_ETIMEDOUT or RLOCK_ECONN /
 * RLOCK_EPROTO (the connection is then unusable: close it). Free *out with
 * rlock_admin_reply_free(). */
int rlock_admin_command(rlock_admin_conn *a, int argc, const char *const *argv,
                        rlock_admin_reply **out);

/* Sends n commands at once (command i is argv[i][0 .. argc[i])) and reads
 * their n replies into out[0 .. n). Returns as rlock_admin_command(); on
 * failure every out[i] is NULL. */
int rlock_admin_pipeline(rlock_admin_conn *a, size_t n, const int *argc,
                         const char *const *const *argv,
                         rlock_admin_reply **out);

void rlock_admin_reply_free(rlock_admin_reply *r);

/* ---------------------------------------------------------- subscriber */

/* Subscribes a to channels[0 .. nchannels) and patterns[0 .. npatterns)
 * and waits for every confirmation. a is a subscriber from then on: only
 * rlock_admin_listen() and rlock_admin_close() may follow. Returns 0,
 * RLOCK_ESERVER (Redis refused: rlock_admin_error() says why) or a code as
 * rlock_admin_command(). */
int rlock_admin_subscribe(rlock_admin_conn *a, size_t nchannels,
                          const char *const *channels, size_t npatterns,
                          const char *const *patterns);

/* As rlock_admin_subscribe(), with lock channels[0 .. nlock) first,
 * subscribed as an unlock publishes: SSUBSCRIBE in a cluster with sharded
 * pub/sub (the "both" mode included: every unlock of rlock's and of
 * Redisson 3.28+ is heard once), SUBSCRIBE otherwise. In a cluster a
 * first moves to the master serving the slot of lock[0] (else
 * channels[0]): the names given must share it, as one lock's do; that
 * master's keyspace notifications are the lock's. A server's sunsubscribe
 * later (the slot moved) ends rlock_admin_listen_many() with
 * RLOCK_ECONN, rlock_admin_error() saying so; so does the client's table
 * naming another master for the slot (checked every second while
 * listening), which is how a plain subscriber learns of it (Redis 6.2,
 * or mode off: the server says nothing). */
int rlock_admin_subscribe_lock(rlock_admin_conn *a, size_t nlock,
                               const char *const *lock, size_t nchannels,
                               const char *const *channels, size_t npatterns,
                               const char *const *patterns);

/* Called once per message; pattern is NULL unless a pattern matched.
 * Returns 0 to go on, or a positive value that stops rlock_admin_listen(),
 * which returns it. The strings are valid during the call. */
typedef int (*rlock_admin_message_fn)(void *arg, const char *pattern,
                                      const char *channel,
                                      const char *payload);

/* Hands fn the messages already received; then waits until more arrive
 * or a signal comes (ppoll() with wait_mask as the signal mask while it
 * waits: block the signals that stop you, let them in here, and none is
 * lost between your check and the wait), reads what came, and returns.
 * Call it in a loop, checking your stop conditions between calls.
 * Returns 0, fn's positive value, or a negative code when the connection
 * broke (RLOCK_ECONN; RLOCK_EPROTO for bytes that are not Redis's). */
int rlock_admin_listen(rlock_admin_conn *a, const sigset_t *wait_mask,
                       rlock_admin_message_fn fn, void *arg);

/* rlock_admin_listen() on n subscribers at once (a watch of locks that
 * different cluster masters serve): hands fn what any of them received,
 * then waits for the next message on any. Returns as rlock_admin_listen();
 * a negative code is about the first subscriber that broke. */
int rlock_admin_listen_many(rlock_admin_conn *const *a, size_t n,
                            const sigset_t *wait_mask,
                            rlock_admin_message_fn fn, void *arg);

#endif
