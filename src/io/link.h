/*
 * link.h: the transport rlock owns: one connection to one Redis server.
 *
 * Moving the library onto it: pubsub.c's subscriber is a
 * subscriber rlock__link, and the I/O thread's command connections
 * (io/conn.c, used by core/request.c) own one rlock__link each;
 * core/direct.c's connections, the connect-time check (api/client.c,
 * core/acl.c) and the rlock tool's (src/api/admin.c) are
 * rlock__link_syncs. The module's own tests
 * are tests/integration/test_link.c and test_link_sync.c.
 *
 * Two ways to drive a connection, sharing the connect, the handshake and the
 * byte stream (wire.c):
 *   - rlock__link: runs on a libev loop the caller gives; requests carry a
 *     completion callback and a deadline the link enforces; pipelined.
 *   - rlock__link_sync: round trips on the calling thread with poll() and
 *     a deadline (what direct.c does), or a pipeline read back in order;
 *     a timed-out call keeps its place and its late reply is settled by
 *     whoever reads next.
 *
 * Name resolution never runs on the I/O thread: rlock__link_resolve() is
 * called on a user thread (client creation) and the resolved address is
 * handed to every open. A reconnect from the loop reuses it.
 *
 * hiredis is the RESP codec only: commands are formatted with
 * redisFormatCommandArgv and replies parsed with redisReader. Replies are
 * hiredis redisReply trees, borrowed by callbacks.
 */
#ifndef RLOCK_IO_LINK_H
#define RLOCK_IO_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct ev_loop;
struct redisReply;

struct rlock__tls_ctx; /* tls.h */

/* A resolved server address: TCP (IPv4 or IPv6) or a unix socket. */
typedef struct rlock__link_addr {
    struct sockaddr_storage sa;
    socklen_t len;
} rlock__link_addr;

/* Resolves host:port (or the unix socket path, when path is not NULL) with
 * getaddrinfo. BLOCKS: call on a user thread, never on the I/O thread.
 * Returns 0, RLOCK_EINVAL (bad port, path too long) or RLOCK_ECONN (the name
 * does not resolve). Thread-safe. */
int rlock__link_resolve(const char *host, int port, const char *path,
                        rlock__link_addr *out);

/* As rlock__link_resolve() for an IP address only: never blocks, so the
 * I/O thread may call it (a sentinel names a new master by address).
 * Returns 0, RLOCK_EINVAL (host is a name, or a bad port) or
 * RLOCK_ECONN. Thread-safe. */
int rlock__link_resolve_numeric(const char *host, int port,
                                rlock__link_addr *out);

/* How to reach and greet a server. Strings are borrowed for the call that
 * takes the options only (the link copies what it needs later). */
typedef struct rlock__link_opts {
    rlock__link_addr addr;
    const char *host;     /* the name the URI gave: with tls, checked
                             against the certificate and sent as SNI */
    const char *user;     /* ACL user, or NULL (needs password) */
    const char *password; /* NULL: no AUTH */
    int db;               /* 0: no SELECT */
    const char *client_name; /* NULL: no CLIENT SETNAME */
    /* Bounds everything up to the first request: connect, the secure
     * stream's handshake, AUTH, SELECT and CLIENT SETNAME. > 0. */
    int64_t connect_timeout_ms;
    /* A link waiting for a reply this long without reading one byte is
     * taken for half-open (the peer gone without a FIN, or stopped) and
     * closed with RLOCK_ECONN. 0: never (TCP keepalive still runs). */
    int64_t stale_ms;
    int keepalive_s; /* TCP keepalive idle time; 0: 15 s */
    struct rlock__tls_ctx *tls; /* NULL: plain; else TLS over the socket
                                   (borrowed: outlives the link) */
} rlock__link_opts;

/* Fills o with defaults: no auth, db 0, 5 s connect timeout, no stale
 * detection, plain stream. */
void rlock__link_opts_init(rlock__link_opts *o);

/* ------------------------------------------------------ the loop link */

typedef struct rlock__link rlock__link;

/* A request's completion, called exactly once on the loop's thread:
 *   status 0:            reply is the server's reply (maybe an error reply,
 *                        reply->type == REDIS_REPLY_ERROR), borrowed for
 *                        the call;
 *   RLOCK_ETIMEDOUT:     no reply by the deadline (the command may still
 *                        run on the server);
 *   RLOCK_ECONN or the connect's code (RLOCK_EAUTH, RLOCK_ETLS...): the link
 *                        failed before the reply came;
 *   RLOCK_ECLOSED:       rlock__link_free() while it was pending.
 * reply is NULL whenever status is not 0. */
typedef void (*rlock__link_reply_cb)(rlock__link *l, int status,
                                     struct redisReply *reply, void *arg);

/* After a request timed out, its reply, when it comes, is matched (Redis
 * answers in order) and dropped, unless the request named a late callback:
 * that one is then called exactly once, with the late reply, or with NULL
 * if the link closes first. arg must live until then. */
typedef void (*rlock__link_late_cb)(rlock__link *l, struct redisReply *reply,
                                    void *arg);

/* Kinds of what a subscriber link hears that no request of its own asked
 * for. */
typedef enum rlock__push_kind {
    RLOCK__PUSH_MESSAGE,          /* "message": channel, payload */
    RLOCK__PUSH_PMESSAGE,         /* "pmessage": pattern, channel, payload */
    RLOCK__PUSH_SMESSAGE,         /* "smessage": channel, payload */
    RLOCK__PUSH_UNSUBSCRIBED,     /* server-sent "unsubscribe": channel */
    RLOCK__PUSH_PUNSUBSCRIBED,    /* server-sent "punsubscribe": pattern */
    RLOCK__PUSH_SUNSUBSCRIBED     /* server-sent "sunsubscribe" (a cluster
                                     slot moved away): channel */
} rlock__push_kind;

typedef struct rlock__push {
    rlock__push_kind kind;
    const char *channel; /* not NUL-terminated: use channel_len */
    size_t channel_len;
    const char *pattern; /* PMESSAGE only, else NULL */
    size_t pattern_len;
    const char *payload; /* the three *MESSAGE kinds, else NULL */
    size_t payload_len;
} rlock__push;

typedef void (*rlock__link_push_cb)(rlock__link *l, const rlock__push *p,
                                    void *arg);

/* Called once, when the handshake is done (status 0), and once when the
 * link fails (status: RLOCK_ETIMEDOUT for the connect deadline,
 * RLOCK_ETLS (a failed TLS handshake; rlock__link_error says why), RLOCK_EAUTH, RLOCK_ESERVER (name refused), RLOCK_EPROTO, RLOCK_ECONN),
 * after its pending requests completed. A failed link stays failed: the
 * caller frees it and opens another. Never called after
 * rlock__link_free(). */
typedef void (*rlock__link_state_cb)(rlock__link *l, int status, void *arg);

typedef struct rlock__link_cbs {
    rlock__link_state_cb on_up;     /* may be NULL */
    rlock__link_state_cb on_closed; /* may be NULL */
    rlock__link_push_cb on_push;    /* non-NULL makes a subscriber link */
    void *arg;
} rlock__link_cbs;

/* Starts connecting on loop. Requests may be sent at once: they go out
 * behind the handshake. Returns 0 with *out set, RLOCK_EINVAL or
 * RLOCK_ENOMEM; a connect that fails later is reported through on_closed
 * (never from inside this call). Loop thread only, as every function below. */
int rlock__link_open(struct ev_loop *loop, const rlock__link_opts *o,
                     const rlock__link_cbs *cbs, rlock__link **out);

/* Sends one command; cb completes it (see rlock__link_reply_cb). timeout_ms
 * > 0 is its deadline from now. late may be NULL. Returns 0, RLOCK_EINVAL,
 * RLOCK_ENOMEM, or RLOCK_ECONN (the link already failed); on an error
 * return cb is never called. On a subscriber link, use it for PING; its
 * (un)subscribe commands go through rlock__link_subscribe. */
int rlock__link_send(rlock__link *l, int argc, const char **argv,
                     const size_t *lens, int64_t timeout_ms,
                     rlock__link_reply_cb cb, rlock__link_late_cb late,
                     void *arg);

/* Subscriber links only: sends verb ("SUBSCRIBE", "SSUBSCRIBE",
 * "PSUBSCRIBE", "UNSUBSCRIBE", "SUNSUBSCRIBE", "PUNSUBSCRIBE") for n >= 1
 * channels (or patterns). cb completes once: status 0 with reply NULL when
 * every channel is confirmed, status 0 with the error reply when the server
 * refused the command (an ACL without the channel: the link and the other
 * channels stay), or a status as rlock__link_reply_cb. Returns as
 * rlock__link_send (RLOCK_EINVAL: not a subscriber link, unknown verb,
 * n < 1). */
int rlock__link_subscribe(rlock__link *l, const char *verb, int n,
                          const char **channels, const size_t *lens,
                          int64_t timeout_ms, rlock__link_reply_cb cb,
                          void *arg);

/* True once the handshake is done and until the link fails. */
bool rlock__link_is_up(const rlock__link *l);

/* True once the link failed or was freed: no request will be answered
 * any more. Inside a reply callback with RLOCK_ETIMEDOUT, it tells the
 * connect's deadline (true: no late callback follows) from the request's
 * own (false: its late callback, if any, is still to come). */
bool rlock__link_failed(const rlock__link *l);

/* Requests sent and not yet answered, timed-out ones included. */
size_t rlock__link_pending(const rlock__link *l);

/* Why the link failed, for a log line ("" while it has not). */
const char *rlock__link_error(const rlock__link *l);

/* Closes the link: pending requests complete with RLOCK_ECLOSED (and late
 * callbacks with NULL) before it returns; no callback runs after it. May be
 * called from the link's own callbacks (the memory goes when they return).
 * NULL is a no-op. */
void rlock__link_free(rlock__link *l);

/* ------------------------------------------------------ the blocking link */

typedef struct rlock__link_sync rlock__link_sync;

/* Connects and greets on the calling thread, all by o->connect_timeout_ms.
 * Returns 0 with *out set, or the code rlock__link_state_cb would give;
 * err (may be NULL) gets the reason. */
int rlock__link_sync_open(const rlock__link_opts *o, rlock__link_sync **out,
                          char *err, size_t errlen);

/* Hears the reply of a call that timed out, when a later call (or
 * rlock__link_sync_drain) reads it: reply is borrowed for the call, or NULL
 * when the link breaks or is freed first. Runs on the thread reading. */
typedef void (*rlock__link_sync_late_cb)(struct redisReply *reply,
                                         void *arg);

/* One round trip by deadline_ms (monotonic, rlock__io_now_ms's clock).
 * Returns 0 with *out (the caller frees it with freeReplyObject; maybe an
 * error reply); RLOCK_ETIMEDOUT (the link stays usable: the late reply is
 * read before the next one and handed to late, or dropped when late is
 * NULL; late is then called exactly once and arg must live until then); or
 * RLOCK_ECONN / RLOCK_EPROTO / RLOCK_ENOMEM (the link is broken: free it;
 * RLOCK_ENOMEM before anything was sent leaves it whole, see
 * rlock__link_sync_broken). late is called after RLOCK_ETIMEDOUT only.
 * One thread at a time. */
int rlock__link_sync_call(rlock__link_sync *s, int argc, const char **argv,
                          const size_t *lens, int64_t deadline_ms,
                          struct redisReply **out,
                          rlock__link_sync_late_cb late, void *arg);

/* Queues a command whose reply nobody waits for (it is dropped before the
 * next call's); it goes out with the next call, or now if the socket takes
 * it. Returns 0, RLOCK_ENOMEM, or RLOCK_ECONN (broken). */
int rlock__link_sync_send(rlock__link_sync *s, int argc, const char **argv,
                          const size_t *lens);

/* Queues a command whose reply the caller reads itself with
 * rlock__link_sync_read, in order: a pipeline is n appends and n reads. It
 * goes out now if the socket takes it, else with the next read or call.
 * Returns as rlock__link_sync_send. */
int rlock__link_sync_append(rlock__link_sync *s, int argc, const char **argv,
                            const size_t *lens);

/* Reads the next reply for the caller by deadline_ms (a deadline already
 * past reads only what has come): the reply of the oldest appended command
 * not yet read, once every reply owed before it is settled (late ones to
 * their callbacks, sent ones dropped); with nothing appended, whatever the
 * server sends unasked (a subscriber's confirmations and messages).
 * Returns 0 with *out (free it with rlock__link_reply_free);
 * RLOCK_ETIMEDOUT (nothing lost: read again, or rlock__link_sync_abandon);
 * or a code with the link broken, as rlock__link_sync_call. A call settles
 * appended replies not yet read by dropping them. */
int rlock__link_sync_read(rlock__link_sync *s, int64_t deadline_ms,
                          struct redisReply **out);

/* Gives up the replies of appended commands not yet read: each is dropped
 * when it comes. NULL is a no-op. */
void rlock__link_sync_abandon(rlock__link_sync *s);

/* Without waiting: writes what is queued and reads the late replies that
 * have come (handing each to its late callback). Returns how many replies
 * are still owed (0: the link is idle), or a negative code (broken). For a
 * caller that watches rlock__link_sync_fd() instead of making a call, e.g.
 * the I/O thread looking after a link whose caller gave up. */
int rlock__link_sync_drain(rlock__link_sync *s);

/* The socket, for a readiness watcher; -1 once broken. */
int rlock__link_sync_fd(const rlock__link_sync *s);

/* True after a call failed other than by timing out. */
bool rlock__link_sync_broken(const rlock__link_sync *s);

/* Why the link broke, for a message ("" while it has not). */
const char *rlock__link_sync_error(const rlock__link_sync *s);

/* Closes the link: the replies still owed are settled with NULL (late
 * callbacks called) first. NULL is a no-op. */
void rlock__link_sync_free(rlock__link_sync *s);

/* Frees a reply a call or read returned (hiredis's freeReplyObject, for
 * the layers above io, which may not name hiredis). NULL is a no-op. */
void rlock__link_reply_free(struct redisReply *r);

/* ------------------------------------------------------ pure helpers */

/* What one reply on a subscriber connection is, for the link and its unit
 * test. Returns 1 for a pushed message with *p set (channel, pattern,
 * payload borrowed from r); 2 for an (un)subscribe notice with *verb set to
 * its lower-case kind ("subscribe", "sunsubscribe", ...) and p->channel;
 * 0 for anything else (a reply to a command). */
int rlock__link_classify(const struct redisReply *r, rlock__push *p,
                         const char **verb);

#endif /* RLOCK_IO_LINK_H */
