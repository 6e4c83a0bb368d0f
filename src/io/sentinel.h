/*
 * sentinel.h: a Redis master found through Redis Sentinel, and followed
 * when the sentinels move it (shared/CLUSTER-SENTINEL.md 4, 6.6).
 *
 * Two halves, sharing the sentinels' list and what was learnt:
 *   - discovery, blocking, on a user thread (client creation): the
 *     Sentinel client spec's loop. Each sentinel, within short timeouts,
 *     is asked SENTINEL GET-MASTER-ADDR-BY-NAME (and SENTINEL MASTER, for
 *     the config epoch below); the address it gives must answer ROLE with
 *     "master" (Redisson skips this check: a sentinel that has not heard of
 *     a failover yet would send it to a replica). Unlike the spec's "first
 *     answer wins", every sentinel is asked and the newest configuration
 *     is tried first, because a demoted master still answers ROLE as a
 *     master for a while. The sentinel that led to the master is asked
 *     first next time.
 *   - the watcher, on the I/O thread's loop: a subscriber link to one
 *     sentinel listening to +switch-master (published when a failover
 *     completes), and a poll of GET-MASTER-ADDR-BY-NAME every scan interval
 *     (Redisson's only way; 1 s by default) for a message lost with its
 *     connection. Each link moves on to the next sentinel when its own
 *     fails. Every change of address goes to a callback; what to do with
 *     the connections is the caller's.
 *
 * Never back to an older configuration. Sentinels learn of a failover from
 * each other within a couple of seconds, and one cut off from the others
 * keeps naming the old master, which stays a writable master for about
 * 10 s after a forced failover. So the watcher also asks SENTINEL MASTER
 * for the master's config-epoch, which every failover raises, and ignores
 * an answer older than the newest it has acted on; a switch it acts on
 * (from a message or a poll) raises its floor by one, the least a failover
 * raises the epoch. A sentinel that will not say its epoch (an ACL) turns
 * the guard off.
 *
 * Names. The sentinels' names are resolved once, by rlock__sentinel_new()
 * on a user thread. A sentinel names the master by IP address unless the
 * sentinels run with announce-hostnames: discovery resolves what it gets
 * (it may block); the watcher hands the address over as text and never
 * resolves (rlock__link_resolve_numeric() is the non-blocking way for an
 * IP address; a name is for the caller to resolve off the loop).
 *
 * AUTH. A sentinel is greeted without AUTH until one answers NOAUTH: from
 * then on every sentinel is sent the credentials of the options, as
 * Redisson probes and then sends them.
 */
#ifndef RLOCK_IO_SENTINEL_H
#define RLOCK_IO_SENTINEL_H

#include <stdbool.h>
#include <stdint.h>

#include "io/link.h"

struct ev_loop;
struct rlock__tls_ctx;

/* The longest host name a sentinel may give (DNS's 253, and room). */
#define RLOCK__SENTINEL_HOST_MAX 256

typedef struct rlock__sentinel rlock__sentinel;

typedef struct rlock__sentinel_opts {
    const char *master_name;
    int n;                    /* sentinels, >= 1 */
    const char *const *hosts; /* their names or addresses, n of them */
    const int *ports;
    const char *user;     /* for a sentinel that asks for AUTH; NULL: none */
    const char *password; /* NULL: none to send (a sentinel asking fails) */
    struct rlock__tls_ctx *tls; /* NULL: plain; borrowed, must outlive s */
    /* one sentinel's connect (and handshake), and one question to it */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t scan_interval_ms; /* the watcher's poll */
} rlock__sentinel_opts;

/* Copies o and resolves every sentinel's name (getaddrinfo: BLOCKS, call
 * on a user thread). A sentinel whose name does not resolve is skipped
 * (but counted in the rotation). Returns 0, RLOCK_EINVAL (bad options),
 * RLOCK_ECONN (no name resolves) or RLOCK_ENOMEM. */
int rlock__sentinel_new(const rlock__sentinel_opts *o, rlock__sentinel **out);

/* Frees s; NULL is a no-op. A watcher must have been stopped
 * (rlock__sentinel_unwatch) on its loop's thread, or that loop no longer
 * runs. */
void rlock__sentinel_free(rlock__sentinel *s);

/* Where the master is, as a sentinel said it. */
typedef struct rlock__sentinel_master {
    char host[RLOCK__SENTINEL_HOST_MAX];
    int port;
} rlock__sentinel_master;

/* Finds the master on the calling thread (BLOCKS): every sentinel is
 * asked where the master is (each within the connect and command
 * timeouts), and the address with the newest config epoch is resolved,
 * connected to with data (how to greet the master; its addr and host are
 * set here) and asked ROLE, which must say "master" (else the next
 * newest). Returns 0 with *out and *addr (the resolved address) set;
 * RLOCK_ECONN (no sentinel answered, or none named a master that says it
 * is one); RLOCK_EAUTH (the sentinels refused the credentials, or the
 * master refused data's); RLOCK_ETLS (the TLS handshake with the master
 * failed); RLOCK_ENOMEM. err (may be NULL) gets the last reason, naming
 * the server. Not while s is watched. */
int rlock__sentinel_discover(rlock__sentinel *s, const rlock__link_opts *data,
                             rlock__sentinel_master *out,
                             rlock__link_addr *addr, char *err,
                             size_t errlen);

/* What the watcher tells: the master is at host:port. changed is true when
 * that is a new address (host borrowed for the call), false when a check
 * asked for with rlock__sentinel_check_now() found it where it was. */
typedef void (*rlock__sentinel_master_cb)(const char *host, int port,
                                          bool changed, void *arg);

/* A line for the client's log: level is RLOCK_LOG_*. */
typedef void (*rlock__sentinel_note_cb)(int level, const char *line,
                                        void *arg);

/* Starts following the master on loop, from where discovery found it:
 * master is called on the loop's thread as said above, note (may be NULL)
 * with what an operator may want to know (a sentinel lost, one that lags).
 * Returns 0, RLOCK_EINVAL (already watching, or never discovered) or
 * RLOCK_ENOMEM. Loop thread only, as the two below. */
int rlock__sentinel_watch(rlock__sentinel *s, struct ev_loop *loop,
                          rlock__sentinel_master_cb master,
                          rlock__sentinel_note_cb note, void *arg);

/* Asks a sentinel now instead of at the next poll (a READONLY reply or a
 * lost connection say the master may have moved); the callback follows,
 * with changed false when nothing moved. Checks asked for while one runs
 * are answered by one more after it. */
void rlock__sentinel_check_now(rlock__sentinel *s);

/* Stops the watcher: its links close, its timers stop, and no callback
 * runs after it returns. No-op when not watching. */
void rlock__sentinel_unwatch(rlock__sentinel *s);

/* ------------------------------------------------------ pure helpers */

struct redisReply;

/* Reads a +switch-master payload "<name> <old-ip> <old-port> <new-ip>
 * <new-port>" (not NUL-terminated, len bytes). Returns true, with the new
 * address in *out, when it is well formed and about master name. */
bool rlock__sentinel_parse_switch(const char *payload, size_t len,
                                  const char *name,
                                  rlock__sentinel_master *out);

/* Reads GET-MASTER-ADDR-BY-NAME's reply. Returns 1 with *out set, 0 for a
 * nil reply (the sentinel knows no such master), -1 for anything else. */
int rlock__sentinel_parse_addr(const struct redisReply *r,
                               rlock__sentinel_master *out);

/* Reads config-epoch out of SENTINEL MASTER's reply (a flat array of
 * field, value pairs); -1 when it is not there. */
int64_t rlock__sentinel_parse_epoch(const struct redisReply *r);

#endif /* RLOCK_IO_SENTINEL_H */
