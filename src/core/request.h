/*
 * core/request.h: requests (core/request.c), the unit of work between the
 * lock operations and Redis: a command or a script call plus its decoded
 * result, sent on one of the client's command connections (io/conn.h) on
 * the I/O thread, or on the caller's own thread through a direct
 * connection (core/direct.c).
 * Where req->mu falls among the client's locks: core/client.h.
 */
#ifndef RLOCK_CORE_REQUEST_H
#define RLOCK_CORE_REQUEST_H

#include "io/conn.h"
#include "io/loop.h"
#include "proto/proto.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rlock__entry;

/* One request laid out as a command (rlock__req_command()). */
#define RLOCK__COMMAND_INLINE 16
typedef struct rlock__command {
    const char **argv;
    size_t *lens;
    const char *inline_argv[RLOCK__COMMAND_INLINE];
    size_t inline_lens[RLOCK__COMMAND_INLINE];
    char numkeys[16];
} rlock__command;

typedef struct rlock__req rlock__req;
struct rlock__req {
    rlock__task task;
    atomic_int refs;
    rlock_client *client;
    rlock__reply_kind kind;
    const rlock__script *script; /* NULL: a plain command */
    bool reloaded; /* direct.c: NOSCRIPT seen, the script loaded again */
    char *latch_del; /* unlock: latch key the I/O thread DELs once the
                        reply reached its caller (owned) */
    int conn;                    /* command connection index, -1: any */
    /* monotonic; 0: a command timeout from when the I/O thread sends it */
    int64_t deadline_ms;
    /* monotonic; 0: none. An acquire's caller's deadline: no connect,
     * back-off or resend of r waits past it (a reply to what was sent
     * before may still take until deadline_ms) */
    int64_t send_by_ms;
    rlock__conn_cmd cmd;   /* I/O thread: the send (io/conn.h) */
    rlock__command layout; /* cmd's argv */
    int numkeys;
    int argc;
    char **argv; /* owned copies */
    size_t *argvlen;

    /* an acquire: whose hold it takes, so that a hold taken after its
     * caller gave up can be given back (rlock__req_give_back) */
    struct rlock__entry *lock_entry; /* referenced */
    uint64_t lock_owner;
    int64_t lock_lease_ms;
    int nrenew; /* RLOCK__REPLY_RENEW: locks in the reply */

    /* result, written by the I/O thread before done is set */
    int status; /* 0 or RLOCK_E* */
    int64_t value;
    int64_t token; /* a fenced acquire's token */
    bool nil;
    bool heard; /* an unlock whose message a subscriber heard */
    unsigned char *renewed; /* RLOCK__REPLY_RENEW: numkeys entries */

    /* completion: on_reply runs on the I/O thread; without one, a blocked
     * caller is woken through mu/cv */
    void (*on_reply)(rlock__req *r);
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    bool abandoned;

    /* cluster mode (core/route.c), I/O thread: the node it went to last
     * (or its caller-thread connection's, set before it reaches the I/O
     * thread with an answer), where a redirection sends it next, and its
     * retries */
    struct rlock__cnode *node;
    struct rlock__cnode *target; /* NULL: the slot's master */
    bool asking;                 /* ASKING goes just before it */
    bool unsent;                 /* the last send never left */
    /* TRYAGAIN ends it at once (tryagain set), not after back-offs: an
     * RLock's queued try, whose caller then tries the one-key script */
    bool tryagain_ends;
    bool tryagain;
    /* run twice, it may do what the caller never asked (a force release
     * could delete a lock someone took meanwhile): once it may have run
     * (its connection lost with it on it), it is never sent again */
    bool run_once;
    int redirects;
    int64_t backoff_ms;
    /* a cluster's answer (MOVED, ASK, TRYAGAIN, ...) that a caller-thread
     * connection got (core/direct_cluster.c), for the I/O thread to follow
     * before anything else (owned; NULL: none) */
    struct rlock__redirect *answer;

    /* WAIT after the script (core/sync.c), I/O thread: cmd is reused for
     * the INFO replication and the WAIT that follow on the same connection */
    int sync_step; /* 0: the script; 1: INFO; 2: WAIT */
    int sync_n;
    rlock__conn *sync_conn;
    const char *sync_argv[3];
    size_t sync_lens[3];
    char sync_nbuf[24];
    char sync_tbuf[24];
};

rlock__req *rlock__req_new(rlock_client *c, const rlock__script *script,
                           rlock__reply_kind kind, int numkeys, int argc,
                           const char *const *argv);
void rlock__req_unref(rlock__req *r);
void rlock__req_send(rlock__req *r);
int rlock__req_call(rlock__req *r, int64_t timeout_ms);
int rlock__req_wait(rlock__req *r, int64_t deadline_ms);
void rlock__send_ignored(rlock_client *c, const rlock__script *script,
                         int numkeys, int argc, const char *const *argv);
void rlock__req_dispatch(rlock__req *r);
void rlock__req_decode(rlock__req *r, const struct redisReply *reply);
void rlock__req_note_reload(rlock__req *r);
void rlock__req_conn_event(rlock__conn *cn, rlock__conn_event ev,
                           rlock__conn_cmd *cmd, const char *why, void *arg);
int rlock__req_command(const rlock__req *r, rlock__command *cmd);
void rlock__command_clear(rlock__command *cmd);
void rlock__req_fail(rlock__req *r, int status);

/* core/sync.c: WAIT after lock scripts. */
bool rlock__sync_wanted(const rlock__req *r);
void rlock__sync_wait_args(const rlock__req *r, int n, char nbuf[24],
                           char tbuf[24]);
int64_t rlock__sync_wait_deadline(const rlock__req *r);
void rlock__sync_verdict(rlock__req *r, int n, int64_t acks);

/* core/route.c: cluster mode's half of rlock__req_dispatch. I/O thread,
 * but rlock__route_slot: any thread. */
int rlock__route_slot(const rlock__req *r);
rlock__conn *rlock__route_conn(rlock__req *r);
bool rlock__route_retry(rlock__req *r, int status,
                        const struct redisReply *reply);
bool rlock__route_follows(const struct rlock__redirect *red);
bool rlock__route_answer(rlock__req *r, const struct rlock__redirect *red);

#endif /* RLOCK_CORE_REQUEST_H */
