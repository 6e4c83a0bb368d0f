/*
 * conn.h: one command connection of the I/O thread, opened on demand.
 *
 * A command connection owns at most one live rlock__link (link.h) to the
 * client's server. The first command opens it; a link that fails is freed
 * and the next command opens another (reconnect on demand). Every command
 * carries a deadline the link enforces; a script goes out as EVALSHA and,
 * should the server answer NOSCRIPT (a restart, SCRIPT FLUSH), is loaded
 * with SCRIPT LOAD and sent again on the same link before its caller hears
 * anything. Never EVAL: an operator may have renamed it away and left
 * EVALSHA and SCRIPT LOAD, which connecting checked.
 *
 * Everything here runs on the loop's thread (the client's I/O thread).
 */
#ifndef RLOCK_IO_CONN_H
#define RLOCK_IO_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ev_loop;
struct redisReply;
struct rlock__link;      /* io/link.h, which needs <sys/socket.h>: not */
struct rlock__link_opts; /* included, so that users of this header keep */
struct rlock__script;    /* the socket API's names (send...) free */

typedef struct rlock__conn_cmd rlock__conn_cmd;
typedef struct rlock__conn rlock__conn;

/* A command's completion, called exactly once unless rlock__conn_send()
 * refused it:
 *   status 0:            reply is the server's (maybe an error reply),
 *                        borrowed for the call;
 *   RLOCK_ETIMEDOUT:     no reply by the command's deadline (it may still
 *                        run on the server): its late callback follows;
 *   RLOCK_ECONN:         the connection failed or could not be made (its
 *                        connect timing out included): the command may or
 *                        may not have run;
 *   RLOCK_EAUTH, RLOCK_ETLS, RLOCK_ESERVER, RLOCK_EPROTO: the link's
 *                        handshake (link.h) refused the connection;
 *   RLOCK_ECLOSED:       rlock__conn_close() while it was pending. */
typedef void (*rlock__conn_done_cb)(rlock__conn_cmd *cmd, int status,
                                    struct redisReply *reply);

/* After done said RLOCK_ETIMEDOUT: called exactly once, with the reply
 * when it comes (borrowed), or NULL when none will (the connection went
 * first, or the script was lost and there was no time to send it again). */
typedef void (*rlock__conn_late_cb)(rlock__conn_cmd *cmd,
                                    struct redisReply *reply);

/* One command in flight, owned by the caller (who embeds it) until done
 * ran, and until late ran when done said RLOCK_ETIMEDOUT and late is set. */
struct rlock__conn_cmd {
    /* the caller's; argv and lens borrowed as long as cmd */
    int argc;
    const char **argv;
    const size_t *lens;
    const struct rlock__script *script; /* argv is its EVALSHA; or NULL */
    int64_t deadline_ms; /* monotonic (rlock__io_now_ms's clock) */
    rlock__conn_done_cb done;
    rlock__conn_late_cb late; /* NULL: a late reply is dropped */
    /* conn.c's */
    rlock__conn *cn;
    bool reloaded; /* NOSCRIPT seen once: the next one is the answer */
};

/* What a connection tells its owner, for log lines and counters. */
typedef enum rlock__conn_event {
    RLOCK__CONN_CONNECTED,   /* the first link's handshake is done */
    RLOCK__CONN_RECONNECTED, /* a later link's handshake is done */
    RLOCK__CONN_FAILED,      /* a link failed before it was up (why) */
    RLOCK__CONN_LOST,        /* a link that was up failed (why) */
    RLOCK__CONN_RETIRED,     /* a link's credentials were refused (why:
                                the error reply); it drains and goes */
    RLOCK__CONN_RELOADING    /* cmd's script was not in the server's
                                cache: it is being loaded again */
} rlock__conn_event;

/* cmd is the command concerned (RLOCK__CONN_RELOADING), else NULL; why is
 * a reason for a log line, else NULL. Runs on the loop's thread. */
typedef void (*rlock__conn_event_cb)(rlock__conn *cn, rlock__conn_event ev,
                                     rlock__conn_cmd *cmd, const char *why,
                                     void *arg);

struct rlock__conn {
    struct ev_loop *loop;
    const struct rlock__link_opts *opts; /* borrowed: outlives the conn */
    rlock__conn_event_cb on_event; /* may be NULL */
    void *event_arg;
    struct rlock__link *link;    /* NULL: none open */
    bool link_up;         /* link's handshake is done */
    bool was_up;          /* a link was up before: the next is a reconnect */
    struct rlock__link *retired; /* answered NOAUTH: drains, then goes */
    bool closed;
    /* the owner's note on the server behind the link, forgotten (-1) with
     * every new link: core/sync.c keeps the master's replica count here */
    int replicas;
};

/* Makes a connection with nothing open. o (and the strings it points to)
 * must outlive cn: every link is opened from it. on_event (may be NULL)
 * hears of cn's links and reloads. */
void rlock__conn_init(rlock__conn *cn, struct ev_loop *loop,
                      const struct rlock__link_opts *o,
                      rlock__conn_event_cb on_event,
                      void *event_arg);

/* Sends cmd, opening a link first if none is open. Returns 0 (done will
 * be called, never from inside this call), RLOCK_ETIMEDOUT (the deadline
 * has passed: not sent), RLOCK_ECLOSED (closed), RLOCK_ECONN (the link
 * failed and was not yet replaced), RLOCK_EINVAL or RLOCK_ENOMEM; on an
 * error return, neither done nor late is ever called. */
int rlock__conn_send(rlock__conn *cn, rlock__conn_cmd *cmd);

/* Drops cn's links (the server moved: Sentinel): pending commands complete
 * with RLOCK_ECONN (they may or may not have run) before it returns, late
 * callbacks with NULL; the next command opens a link from the options, as
 * they are then. */
void rlock__conn_reset(rlock__conn *cn);

/* Closes cn for good: pending commands complete with RLOCK_ECLOSED (late
 * callbacks with NULL) before it returns; later sends are refused. */
void rlock__conn_close(rlock__conn *cn);

/* Drops cn's links if it has some and no command is pending on them (a
 * timed-out one waiting for its late reply counts as pending): nobody is
 * told anything. cn stays usable: the next command opens a link, counted
 * as a first connect, not a reconnect. Returns whether links were dropped.
 * Not from inside a callback of one of cn's commands. */
bool rlock__conn_drop_idle(rlock__conn *cn);

#endif /* RLOCK_IO_CONN_H */
