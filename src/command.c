/*
 * command.c: requests, the unit of work between user threads and Redis.
 *
 * A request is a command (or a script call) plus its decoded result. It is
 * reference-counted: one reference for whoever created it, one while it is
 * queued or in flight on a connection. Its reply is decoded on the I/O thread
 * and either handed to on_reply (internal users such as the watchdog) or
 * signalled to a blocked caller through mu/cv.
 *
 * Scripts go out as EVALSHA. A NOSCRIPT reply (Redis restarted, or SCRIPT
 * FLUSH) makes the I/O thread send SCRIPT LOAD with the body and the same
 * EVALSHA again behind it, on the same connection, before the caller sees
 * anything. Never EVAL: an operator may have renamed it away and left
 * EVALSHA and SCRIPT LOAD, which connecting checked. A second NOSCRIPT is
 * the call's answer.
 *
 * A blocked caller waits at most its timeout. If the reply comes later, the
 * request is "abandoned" and its result dropped, with one exception: an
 * acquire that succeeded after its caller gave up would leave a lock nobody
 * knows it holds, so the I/O thread gives that hold back at once.
 */
#include "internal.h"

#include <errno.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
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
    if (r->lock_entry != NULL)
        rlock__entry_unref(r->lock_entry);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

/* Makes the request that gives back a hold acquire acq took: its kind's
 * release with a fresh latch. Returns NULL when out of memory, or when acq
 * does not say whose hold it took. */
rlock__req *rlock__give_back_new(rlock__req *acq)
{
    rlock__entry *e = acq->lock_entry;
    char id[RLOCK__REQUEST_ID_LEN + 1];
    rlock__req *r = NULL;
    if (e == NULL || rlock__request_id(id) != 0)
        return NULL;
    char *latch = rlock__latch_name(e->name, id);
    rlock__spec spec;
    if (latch != NULL &&
        rlock__spec_release(&spec, e, acq->lock_owner, acq->lock_lease_ms,
                            latch) == 0) {
        spec.reply = RLOCK__REPLY_IGNORE;
        r = rlock__req_from_spec(acq->client, &spec);
        rlock__spec_clear(&spec);
    }
    free(latch);
    return r;
}

/* Gives back a hold that an abandoned acquire took (see the file comment):
 * the release script with a fresh latch, its reply ignored. */
void rlock__req_give_back(rlock__req *acq)
{
    rlock__req *r = rlock__give_back_new(acq);
    if (r == NULL)
        return; /* out of memory: the hold expires with its lease */
    if (rlock__loop_on_thread(r->client->loop)) {
        rlock__req_dispatch(r);
        return;
    }
    rlock__req_send(r);
    rlock__req_unref(r);
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
    if (abandoned && r->kind == RLOCK__REPLY_ACQUIRE && r->status == 0 &&
        r->nil)
        rlock__req_give_back(r);
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
void rlock__req_decode(rlock__req *r, const redisReply *reply)
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

static int issue(rlock__req *r, redisAsyncContext *ac);

static void on_reply(redisAsyncContext *ac, void *reply_, void *privdata)
{
    rlock__req *r = privdata;
    redisReply *reply = reply_;
    if (reply == NULL) {
        complete(r, atomic_load(&r->client->closing) ? RLOCK_ECLOSED
                                                     : RLOCK_ECONN);
        return;
    }
    if (r->script != NULL && !r->reloaded && rlock__reply_is_noscript(reply)) {
        r->reloaded = true;
        rlock__req_note_reload(r);
        const char *argv[3] = {"SCRIPT", "LOAD", (const char *)r->script->body};
        size_t lens[3] = {6, 4, r->script->len};
        /* its reply is not needed: the EVALSHA behind it tells */
        if (redisAsyncCommandArgv(ac, NULL, NULL, 3, argv, lens) != REDIS_OK ||
            issue(r, ac) != 0)
            complete(r, RLOCK_ECONN);
        return;
    }
    rlock__req_decode(r, reply);
    if (r->status == RLOCK_EAUTH)
        redisAsyncDisconnect(ac); /* the password changed: AUTH again on
                                     the next connection */
    complete(r, 0);
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

/* Writes r onto ac; returns 0 or RLOCK_ECONN. */
static int issue(rlock__req *r, redisAsyncContext *ac)
{
    rlock__command cmd;
    int n = rlock__req_command(r, &cmd);
    if (n < 0)
        return RLOCK_ECONN;
    int rc = redisAsyncCommandArgv(ac, on_reply, r, n, cmd.argv, cmd.lens) ==
                     REDIS_OK
                 ? RLOCK_OK
                 : RLOCK_ECONN;
    rlock__command_clear(&cmd);
    return rc;
}

/* Sends r on one of the client's command connections. I/O thread only. */
void rlock__req_dispatch(rlock__req *r)
{
    rlock__conn *cn = r->conn >= 0 ? &r->client->conns[r->conn]
                                   : rlock__client_pick_conn(r->client);
    int rc = rlock__conn_ensure(cn);
    if (rc == 0 && cn->ac == NULL)
        rc = RLOCK_ECONN;
    if (rc == 0)
        rc = issue(r, cn->ac);
    if (rc != 0)
        complete(r, rc);
}

static void run_task(rlock__task *t, int status)
{
    rlock__req *r = (rlock__req *)((char *)t - offsetof(rlock__req, task));
    if (status != 0)
        complete(r, status);
    else
        rlock__req_dispatch(r);
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

/* Sends r and waits at most timeout_ms for its reply. Returns r->status, or
 * RLOCK_ETIMEDOUT (r is then abandoned), or RLOCK_EDEADLK on the I/O
 * thread. The caller still owns its reference. */
int rlock__req_call(rlock__req *r, int64_t timeout_ms)
{
    if (rlock__loop_on_thread(r->client->loop))
        return RLOCK_EDEADLK;
    int rc;
    if (rlock__direct_call(r->client->direct, r, timeout_ms, &rc))
        return rc; /* done on this thread, on an idle direct connection */
    int64_t deadline = rlock__now_ms() + timeout_ms;
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

/* One blocking round trip with the command timeout: builds, sends and
 * waits for a request, and copies out its value and nil flag (either may be
 * NULL). Returns 0 or an RLOCK_E* code. */
int rlock__call(rlock_client *c, const rlock__script *script,
                rlock__reply_kind kind, int numkeys, int argc,
                const char *const *argv, int64_t *value, bool *nil)
{
    rlock__req *r = rlock__req_new(c, script, kind, numkeys, argc, argv);
    if (r == NULL)
        return RLOCK_ENOMEM;
    int rc = rlock__req_call(r, c->cfg.command_timeout_ms);
    if (rc == 0) {
        if (value != NULL)
            *value = r->value;
        if (nil != NULL)
            *nil = r->nil;
    }
    rlock__req_unref(r);
    return rc;
}
