/*
 * core/request.c: requests (layer core; core/request.h), the unit of work
 * between the lock operations and Redis.
 *
 * A request is a command (or a script call) plus its decoded result. It is
 * reference-counted: one reference for whoever created it, one while it is
 * queued or in flight on a connection. Its reply is decoded on the I/O thread
 * and either handed to on_reply (internal users such as the watchdog) or
 * signalled to a blocked caller through mu/cv.
 *
 * On the I/O thread a request goes out on one of the client's command
 * connections (src/io/conn.h), which owns the transport's side of it: the
 * deadline (the caller's, or a command timeout from being sent), EVALSHA
 * with SCRIPT LOAD on NOSCRIPT, reconnecting on demand and authenticating
 * afresh after NOAUTH.
 *
 * A reply nobody will see. A blocked caller waits at most until its
 * deadline; the connection gives up on the request at that same deadline.
 * Whichever is first, a reply that comes after the caller stopped waiting
 * is dropped, with one exception: an acquire that succeeded after its
 * caller gave up would leave a lock nobody knows it holds, so the I/O
 * thread gives that hold back at once. The reply reaches us either as the
 * request's completion (the caller's wait ended first: the request is
 * "abandoned") or as the connection's late reply (its deadline passed
 * first); both go through give_back_if_taken(), and the give-back itself is
 * an unlock's release request (core/release.c, rlock__req_give_back).
 */
#include "core/core.h"
#include "io/master.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_task(rlock__task *t, int status);

/* Makes a request: a script call when script is set (argv holds its numkeys
 * keys then its arguments), else a plain command. The strings are copied.
 * Returns NULL when out of memory. Ownership: one reference for the caller,
 * dropped with rlock__req_unref(). */
rlock__req *rlock__req_new(rlock_client *c, const rlock__script *script,
                           rlock__reply_kind kind, int numkeys, int argc,
                           const char *const *argv)
{
    rlock__req *r = rlock__calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    atomic_init(&r->refs, 1);
    r->client = c;
    r->kind = kind;
    r->script = script;
    r->numkeys = numkeys;
    r->argc = argc;
    r->conn = -1;
    r->task.run = run_task;
    r->layout.argv = r->layout.inline_argv;
    r->layout.lens = r->layout.inline_lens;
    r->argv = rlock__calloc((size_t)argc + 1, sizeof(*r->argv));
    r->argvlen = rlock__calloc((size_t)argc + 1, sizeof(*r->argvlen));
    r->nrenew = numkeys; /* one reply per key, unless told otherwise */
    if (kind == RLOCK__REPLY_RENEW)
        r->renewed = rlock__calloc((size_t)numkeys + 1, 1);
    if (r->argv == NULL || r->argvlen == NULL ||
        (kind == RLOCK__REPLY_RENEW && r->renewed == NULL))
        goto oom;
    for (int i = 0; i < argc; i++) {
        r->argvlen[i] = strlen(argv[i]);
        r->argv[i] = rlock__malloc(r->argvlen[i] + 1);
        if (r->argv[i] == NULL)
            goto oom;
        memcpy(r->argv[i], argv[i], r->argvlen[i] + 1);
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, &c->condattr);
    return r;
oom:
    for (int i = 0; r->argv != NULL && i < argc; i++)
        free(r->argv[i]);
    free(r->argv);
    free(r->argvlen);
    free(r->renewed);
    free(r);
    return NULL;
}

/* Drops one reference; the last frees the request. */
void rlock__req_unref(rlock__req *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    for (int i = 0; i < r->argc; i++)
        free(r->argv[i]);
    free(r->argv);
    free(r->argvlen);
    free(r->renewed);
    free(r->latch_del);
    free(r->answer);
    rlock__command_clear(&r->layout);
    if (r->lock_entry != NULL)
        rlock__entry_unref(r->lock_entry);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* An acquire whose caller will never see its outcome: gives the hold back
 * if it took one (see the file comment). */
static void give_back_if_taken(rlock__req *acq, bool taken)
{
    rlock__req_undo_late(acq, taken); /* and a queued try's place */
}

/* Records the outcome and hands it to its consumer; drops the in-flight
 * reference. */
static void complete(rlock__req *r, int status)
{
    if (status != 0)
        r->status = status;
    if (r->on_reply != NULL) {
        r->on_reply(r);
        rlock__req_unref(r);
        return;
    }
    pthread_mutex_lock(&r->mu);
    r->done = true;
    bool abandoned = r->abandoned;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (abandoned && r->kind == RLOCK__REPLY_ACQUIRE && r->status == 0)
        give_back_if_taken(r, r->nil);
    /* the latch has done its job once its caller has the reply; a caller
     * that gave up will retry under the same latch, so it must stay */
    if (!abandoned && r->latch_del != NULL && r->status == 0 &&
        r->value != RLOCK__UNLOCK_NOT_HELD) {
        const char *argv[] = {"DEL", r->latch_del};
        rlock__send_ignored(r->client, NULL, 0, 2, argv);
    }
    rlock__req_unref(r);
}

/* Decodes reply into r's result fields by r's kind. */
void rlock__req_decode(rlock__req *r, const struct redisReply *reply)
{
    int rc;
    rlock__stats_count(r->client->stats, RLOCK__STAT_ROUND_TRIPS);
    switch (r->kind) {
    case RLOCK__REPLY_ACQUIRE:
        rc = rlock__reply_acquire(reply, &r->value,
                                  r->script == &rlock__script_fenced_acquire
                                      ? &r->token
                                      : NULL);
        r->nil = rc == 1;
        r->status = rc < 0 ? rc : 0;
        break;
    case RLOCK__REPLY_UNLOCK:
        rc = rlock__reply_unlock(reply);
        r->heard = rc == RLOCK__UNLOCK_HEARD;
        if (r->heard)
            rc = RLOCK__UNLOCK_RELEASED; /* the rest is the same */
        r->value = rc;
        r->status = rc < 0 ? rc : 0;
        break;
    case RLOCK__REPLY_INTEGER:
        rc = rlock__reply_integer(reply, &r->value);
        r->nil = rc == 0;
        r->status = rc < 0 ? rc : 0;
        break;
    case RLOCK__REPLY_RENEW:
        r->status = rlock__reply_renew(reply, (size_t)r->nrenew, r->renewed);
        break;
    case RLOCK__REPLY_IGNORE:
        r->status = rlock__reply_error_code(reply);
        break;
    }
}

/* Counts and logs that r's script was not in the server's cache and is
 * being loaded again. Any thread, with no rlock lock held. */
void rlock__req_note_reload(rlock__req *r)
{
    rlock_client *c = r->client;
    rlock__stats_count(c->stats, RLOCK__STAT_SCRIPT_RELOADS);
    rlock__log_later(c, RLOCK_LOG_INFO,
                     "script %s was not in the server's script cache "
                     "(NOSCRIPT: a restart, a failover or SCRIPT FLUSH): "
                     "loading it again",
                     r->script->name);
}

/* What a command connection of client arg tells (io/conn.h): counted and
 * logged. I/O thread. */
void rlock__req_conn_event(rlock__conn *cn, rlock__conn_event ev,
                           rlock__conn_cmd *cmd, const char *why, void *arg)
{
    rlock_client *c = arg;
    /* a cluster node's connections are not in c->conns: they log as -1 */
    int i = c->conns != NULL && cn >= c->conns &&
                    cn < c->conns + c->cfg.connections
                ? (int)(cn - c->conns)
                : -1;
    switch (ev) {
    case RLOCK__CONN_CONNECTED:
        rlock__log(c, RLOCK_LOG_DEBUG, "command connection %d connected", i);
        break;
    case RLOCK__CONN_RECONNECTED:
        rlock__stats_count(c->stats, RLOCK__STAT_RECONNECTS);
        rlock__log(c, RLOCK_LOG_INFO, "command connection %d reconnected", i);
        break;
    case RLOCK__CONN_FAILED:
        rlock__log(c, RLOCK_LOG_DEBUG,
                   "command connection %d could not connect: %s", i, why);
        break;
    case RLOCK__CONN_LOST:
        rlock__master_suspect(c->master); /* Sentinel: did it move? */
        rlock__log(c, RLOCK_LOG_INFO,
                   "command connection %d lost (%s): reconnecting with the "
                   "next command",
                   i, why);
        break;
    case RLOCK__CONN_RETIRED:
        rlock__log(c, RLOCK_LOG_INFO,
                   "command connection %d closed to authenticate again (%s): "
                   "reconnecting with the next command",
                   i, why != NULL ? why : "refused");
        break;
    case RLOCK__CONN_RELOADING:
        rlock__req_note_reload(
            (rlock__req *)((char *)cmd - offsetof(rlock__req, cmd)));
        break;
    }
}

/* Lays out r as one command: EVALSHA sha numkeys args..., or the plain
 * command. Uses cmd's inline arrays when they are big enough.
 * Returns the argument count, or -1 when out of memory. */
int rlock__req_command(const rlock__req *r, rlock__command *cmd)
{
    int n = r->argc + (r->script ? 3 : 0);
    cmd->argv = cmd->inline_argv;
    cmd->lens = cmd->inline_lens;
    if (n > RLOCK__COMMAND_INLINE) {
        cmd->argv = rlock__malloc(sizeof(*cmd->argv) * (size_t)n);
        cmd->lens = rlock__malloc(sizeof(*cmd->lens) * (size_t)n);
        if (cmd->argv == NULL || cmd->lens == NULL) {
            rlock__command_clear(cmd);
            return -1;
        }
    }
    int k = 0;
    if (r->script != NULL) {
        snprintf(cmd->numkeys, sizeof(cmd->numkeys), "%d", r->numkeys);
        cmd->argv[0] = "EVALSHA";
        cmd->lens[0] = 7;
        cmd->argv[1] = r->script->sha1;
        cmd->lens[1] = strlen(r->script->sha1);
        cmd->argv[2] = cmd->numkeys;
        cmd->lens[2] = strlen(cmd->numkeys);
        k = 3;
    }
    for (int i = 0; i < r->argc; i++) {
        cmd->argv[k + i] = r->argv[i];
        cmd->lens[k + i] = r->argvlen[i];
    }
    return n;
}

/* Frees what rlock__req_command() allocated. */
void rlock__command_clear(rlock__command *cmd)
{
    if (cmd->argv != cmd->inline_argv)
        free(cmd->argv);
    if (cmd->lens != cmd->inline_lens)
        free(cmd->lens);
    cmd->argv = cmd->inline_argv;
    cmd->lens = cmd->inline_lens;
}

/* ------------------------------------------- WAIT after the script */

static void on_sync_done(rlock__conn_cmd *cmd, int status,
                         struct redisReply *reply);

/* Sends step 1 (INFO replication) or 2 (WAIT) of r's sync on the
 * connection its script went on, reusing r->cmd (its script's is done).
 * Returns true when sent; else the verdict is given (no answer). */
static bool sync_send(rlock__req *r, int step)
{
    int64_t deadline;
    int argc;
    r->sync_step = step;
    if (step == 1) {
        r->sync_argv[0] = "INFO";
        r->sync_argv[1] = "replication";
        argc = 2;
        deadline = rlock__now_ms() + r->client->cfg.command_timeout_ms;
    } else {
        rlock__sync_wait_args(r, r->sync_n, r->sync_nbuf, r->sync_tbuf);
        r->sync_argv[0] = "WAIT";
        r->sync_argv[1] = r->sync_nbuf;
        r->sync_argv[2] = r->sync_tbuf;
        argc = 3;
        deadline = rlock__sync_wait_deadline(r);
    }
    for (int i = 0; i < argc; i++)
        r->sync_lens[i] = strlen(r->sync_argv[i]);
    r->cmd = (rlock__conn_cmd){
        .argc = argc,
        .argv = r->sync_argv,
        .lens = r->sync_lens,
        .deadline_ms = deadline,
        .done = on_sync_done,
    };
    if (rlock__conn_send(r->sync_conn, &r->cmd) == 0)
        return true;
    rlock__sync_verdict(r, r->sync_n > 0 ? r->sync_n : 1, -1);
    return false;
}

/* Starts WAIT after r's script, answered on cn. Returns true when
 * on_sync_done will complete r; false when r is complete as it is (no
 * replicas, or the verdict on a send that failed is in). */
static bool start_sync(rlock__req *r, rlock__conn *cn)
{
    if (cn == NULL || cn->replicas == 0)
        return false;
    r->sync_conn = cn;
    r->sync_n = cn->replicas;
    return sync_send(r, cn->replicas < 0 ? 1 : 2);
}

/* INFO's or WAIT's answer. An error, or none, counts as no
 * acknowledgement (core/sync.c). */
static void on_sync_done(rlock__conn_cmd *cmd, int status,
                         struct redisReply *reply)
{
    rlock__req *r = (rlock__req *)((char *)cmd - offsetof(rlock__req, cmd));
    int64_t acks = -1;
    if (status == RLOCK_OK && r->sync_step == 1) {
        int n = rlock__reply_connected_slaves(reply);
        if (n >= 0) {
            r->sync_conn->replicas = n;
            r->sync_n = n;
            if (n > 0 && sync_send(r, 2))
                return;
            complete(r, 0);
            return;
        }
    } else if (status == RLOCK_OK &&
               rlock__reply_integer(reply, &acks) == 1) {
        if (acks != r->sync_n) /* replicas came or went: ask again */
            r->sync_conn->replicas = -1;
    } else {
        acks = -1;
    }
    rlock__sync_verdict(r, r->sync_n > 0 ? r->sync_n : 1, acks);
    complete(r, 0);
}

/* The connection's answer (io/conn.h's statuses). */
static void on_done(rlock__conn_cmd *cmd, int status, struct redisReply *reply)
{
    rlock__req *r = (rlock__req *)((char *)cmd - offsetof(rlock__req, cmd));
    bool late_owed = cmd->late != NULL && status == RLOCK_ETIMEDOUT;
    if (cmd->late != NULL && !late_owed)
        rlock__req_unref(r); /* the late reference: no late reply comes
                                (the in-flight one keeps r) */
    if (r->client->cluster != NULL && !atomic_load(&r->client->closing) &&
        rlock__route_retry(r, status, reply))
        return; /* redirected or retried (core/route.c) */
    rlock__master *master = r->client->master;
    if (status == RLOCK_OK && master != NULL &&
        rlock__reply_is_readonly(reply)) {
        /* Sentinel mode: the master was demoted into a replica. Nothing
         * ran; the caller retries as after a dropped connection, by when
         * a sentinel has been asked where the master is (core/follow.c). */
        rlock__master_suspect(master);
        status = RLOCK_ECONN;
    } else if (status == RLOCK_OK) {
        rlock__req_decode(r, reply);
        if (rlock__sync_wanted(r) && start_sync(r, cmd->cn))
            return; /* completed by on_sync_done */
    }
    if (status == RLOCK_ECONN && atomic_load(&r->client->closing))
        status = RLOCK_ECLOSED;
    complete(r, status);
}

/* An acquire's reply after the connection gave up on it (or NULL: none
 * will come). Drops the late reference. */
static void on_late(rlock__conn_cmd *cmd, struct redisReply *reply)
{
    rlock__req *r = (rlock__req *)((char *)cmd - offsetof(rlock__req, cmd));
    int64_t ttl, token;
    bool fenced = r->script == &rlock__script_fenced_acquire;
    int rc = reply != NULL ? rlock__reply_acquire(reply, &ttl,
                                                  fenced ? &token : NULL)
                           : RLOCK_ECONN;
    if (rc >= 0)
        give_back_if_taken(r, rc == 1);
    rlock__req_unref(r);
}

/* Returns the command connection for the next request (round robin).
 * I/O thread only. */
static rlock__conn *pick_conn(rlock_client *c)
{
    return &c->conns[c->next_conn++ % (unsigned)c->cfg.connections];
}

/* Sends r on one of the client's command connections. Takes the in-flight
 * reference. I/O thread only. */
void rlock__req_dispatch(rlock__req *r)
{
    rlock_client *c = r->client;
    rlock__conn *cn;
    if (c->cluster != NULL)
        cn = rlock__route_conn(r); /* NULL: no node serves its slot now */
    else
        cn = r->conn >= 0 ? &c->conns[r->conn] : pick_conn(c);
    rlock__command_clear(&r->layout);
    int n = rlock__req_command(r, &r->layout);
    if (n < 0) {
        complete(r, RLOCK_ENOMEM);
        return;
    }
    r->cmd = (rlock__conn_cmd){
        .argc = n,
        .argv = r->layout.argv,
        .lens = r->layout.lens,
        .script = r->script,
        .deadline_ms = r->deadline_ms != 0
                           ? r->deadline_ms
                           : rlock__now_ms() + c->cfg.command_timeout_ms,
        .done = on_done,
        /* the one late reply that matters: a hold nobody knows about */
        .late = r->kind == RLOCK__REPLY_ACQUIRE ? on_late : NULL,
    };
    bool late_ref = r->cmd.late != NULL;
    if (late_ref)
        atomic_fetch_add(&r->refs, 1); /* the late reference */
    int rc = cn != NULL ? rlock__conn_send(cn, &r->cmd) : RLOCK_ECONN;
    if (rc != 0) {
        if (late_ref) /* never used; ours and the in-flight one remain */
            atomic_fetch_sub(&r->refs, 1);
        r->unsent = true; /* safe to send again, whatever it is */
        if (c->cluster != NULL && rc == RLOCK_ECONN &&
            !atomic_load(&c->closing) && rlock__route_retry(r, rc, NULL))
            return;
        complete(r, rc);
    }
}

/* Ends r with status (an error) on the I/O thread: core/route.c's, for a
 * retry the client's closing overtook. */
void rlock__req_fail(rlock__req *r, int status)
{
    complete(r, status);
}

static void run_task(rlock__task *t, int status)
{
    rlock__req *r = (rlock__req *)((char *)t - offsetof(rlock__req, task));
    struct rlock__redirect *answer = r->answer;
    r->answer = NULL;
    if (status != 0)
        complete(r, status);
    else if (answer == NULL)
        rlock__req_dispatch(r);
    else if (!rlock__route_answer(r, answer))
        complete(r, r->status); /* what the answer said, as decoded */
    free(answer);
}

/* Sends r without waiting: its result goes to r->on_reply, or nowhere.
 * Thread-safety: any thread. */
void rlock__req_send(rlock__req *r)
{
    atomic_fetch_add(&r->refs, 1);
    rlock__loop_submit(r->client->loop, &r->task);
}

/* Waits until r's reply is in or the monotonic deadline_ms passes; in the
 * latter case r is abandoned. Returns r->status or RLOCK_ETIMEDOUT. The
 * caller still owns its reference. */
int rlock__req_wait(rlock__req *r, int64_t deadline_ms)
{
    struct timespec ts;
    rlock__abs_timespec(deadline_ms, &ts);
    pthread_mutex_lock(&r->mu);
    while (!r->done && pthread_cond_timedwait(&r->cv, &r->mu, &ts) != ETIMEDOUT)
        ;
    bool done = r->done;
    r->abandoned = !done;
    pthread_mutex_unlock(&r->mu);
    return done ? r->status : RLOCK_ETIMEDOUT;
}

/* Sends r through the I/O thread and waits at most timeout_ms for its
 * reply. Returns r->status, or RLOCK_ETIMEDOUT (r is then abandoned), or
 * RLOCK_EDEADLK on the I/O thread. The caller still owns its reference.
 * Whether a round trip goes this way or on the caller's own thread (a
 * direct connection, core/direct.c) is the blocking driver's choice
 * (api/lock_sync.c), not this layer's. */
int rlock__req_call(rlock__req *r, int64_t timeout_ms)
{
    if (rlock__loop_on_thread(r->client->loop))
        return RLOCK_EDEADLK;
    int64_t deadline = rlock__now_ms() + timeout_ms;
    r->deadline_ms = deadline; /* the connection gives up then too */
    rlock__req_send(r);
    return rlock__req_wait(r, deadline);
}

/* Sends a request whose reply nobody needs (a latch DEL, a give-back):
 * at once on the I/O thread, else through the submit queue. Out of memory,
 * it is simply not sent. Thread-safety: any thread. */
void rlock__send_ignored(rlock_client *c, const rlock__script *script,
                         int numkeys, int argc, const char *const *argv)
{
    rlock__req *r =
        rlock__req_new(c, script, RLOCK__REPLY_IGNORE, numkeys, argc, argv);
    if (r == NULL)
        return;
    if (rlock__loop_on_thread(c->loop)) {
        rlock__req_dispatch(r); /* takes our reference */
        return;
    }
    rlock__req_send(r);
    rlock__req_unref(r);
}
