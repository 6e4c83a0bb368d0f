/*
 * direct.c: round trips made on the calling thread.
 *
 * Handing every blocking call to the I/O thread costs two thread wake-ups
 * per round trip, which on a small machine doubles the time of an
 * uncontended lock+unlock. So a client also keeps a few synchronous
 * connections ("slots"). A blocking call that finds a slot idle takes it
 * (a trylock, never a wait) and does its round trip right there; one that
 * finds every slot busy goes through the I/O thread as before, where
 * requests from many threads share its connections and pipeline. The
 * latch DEL after an unlock is written behind the reply on the same slot
 * and its reply is skipped by the slot's next user ("owed").
 *
 * A reply that does not come within the command timeout cannot simply be
 * dropped: the script may still run, and an acquire that then succeeds
 * would leave a hold nobody knows about. The slot is "parked": the I/O
 * thread watches its socket, reads the late replies, gives back a hold a
 * late acquire took (as command.c does for an abandoned request), and then
 * returns the slot to use. A slot parked longer than the unlock latch's
 * lifetime is closed.
 *
 * Lock order: a slot's mutex is held for one round trip, and nothing else
 * is taken while it is held.
 */
#include "internal.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

typedef struct slot {
    pthread_mutex_t mu; /* held by the thread using the slot */
    rlock__direct *direct;
    redisContext *ctx; /* NULL: not connected */
    int owed;           /* replies to skip before the next one is ours */
    int64_t used_at_ms; /* the last round trip's start */
    const char *closed_why; /* why the last connection closed (NULL: none
                               yet): the next connect is a reconnect */
    bool parked;        /* the I/O thread owns ctx until the replies came */
    /* parked state, I/O thread only */
    rlock__req *late;   /* the request whose reply is late, or NULL */
    rlock__fdwatch *watch;
    rlock__timer *expiry;
    rlock__task park_task;
} slot;

struct rlock__direct {
    rlock_client *client;
    atomic_uint next; /* where the next caller starts looking */
    int n;
    slot slots[];
};

static struct timeval to_timeval(int64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
                         .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* Maps a failed synchronous hiredis context to an RLOCK_E* code. */
int rlock__context_error(const redisContext *ctx)
{
    if (ctx == NULL)
        return RLOCK_ENOMEM;
    if (ctx->err == REDIS_ERR_PROTOCOL)
        return RLOCK_EPROTO;
    if (ctx->err == REDIS_ERR_IO &&
        (errno == EAGAIN || errno == ETIMEDOUT || errno == EWOULDBLOCK))
        return RLOCK_ETIMEDOUT;
    if (ctx->err == REDIS_ERR_OOM)
        return RLOCK_ENOMEM;
    return RLOCK_ECONN;
}

/* Reads one reply by the monotonic deadline_ms, whatever the server does:
 * hiredis's own timeout bounds each read(), and a server trickling a reply
 * byte by byte would never trip it. Writes what is buffered first. Returns
 * 0 with *out set, RLOCK_ETIMEDOUT (ctx still usable: the reply may come
 * later), or a code with the context broken. */
int rlock__sync_read(redisContext *ctx, int64_t deadline_ms,
                     redisReply **out)
{
    int done = 0;
    *out = NULL;
    while (!done)
        if (redisBufferWrite(ctx, &done) != REDIS_OK)
            return rlock__context_error(ctx);
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(ctx, &reply) != REDIS_OK)
            return rlock__context_error(ctx);
        if (reply != NULL) {
            *out = reply;
            return RLOCK_OK;
        }
        int64_t left = deadline_ms - rlock__now_ms();
        if (left <= 0)
            return RLOCK_ETIMEDOUT;
        redisSetTimeout(ctx, to_timeval(left));
        if (redisBufferRead(ctx) != REDIS_OK) {
            int rc = rlock__context_error(ctx);
            if (rc == RLOCK_ETIMEDOUT) {
                /* the socket timed out: nothing is lost, hiredis just
                 * refuses a context with err set */
                ctx->err = 0;
                ctx->errstr[0] = '\0';
            }
            return rc;
        }
    }
}

/* Sends one command and reads its reply by deadline_ms. Returns 0 with
 * *out set, or a code as rlock__sync_read(). */
int rlock__sync_command(redisContext *ctx, int argc, const char **argv,
                        const size_t *lens, int64_t deadline_ms,
                        redisReply **out)
{
    *out = NULL;
    if (redisAppendCommandArgv(ctx, argc, argv, lens) != REDIS_OK)
        return RLOCK_ENOMEM;
    return rlock__sync_read(ctx, deadline_ms, out);
}

/* Sends one command and checks its reply within the command timeout:
 * returns 0, or the error, with refused as the code for an error reply
 * (RLOCK_EAUTH for NOAUTH and WRONGPASS whatever refused is), and
 * RLOCK_EPROTO for a reply not of want_type (0: any). */
int rlock__sync_expect(redisContext *ctx, int64_t timeout_ms, int argc,
                       const char **argv, const size_t *lens, int refused,
                       int want_type)
{
    redisReply *r = NULL;
    int rc = rlock__sync_command(ctx, argc, argv, lens,
                                 rlock__now_ms() + timeout_ms, &r);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        int code = rlock__reply_error_code(r);
        rc = code == RLOCK_EAUTH ? RLOCK_EAUTH : refused;
    } else if (want_type != 0 && r->type != want_type) {
        rc = RLOCK_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

/* Opens a synchronous connection to c's server, with AUTH, SELECT and
 * CLIENT SETNAME done, and the command timeout set on the socket.
 * Returns 0 or a code; *out is NULL on failure. */
int rlock__sync_connect(rlock_client *c, int64_t connect_ms,
                        redisContext **out)
{
    const rlock__uri *u = &c->uri;
    struct timeval ctv = to_timeval(connect_ms);
    *out = NULL;
    redisContext *ctx = u->path
                            ? redisConnectUnixWithTimeout(u->path, ctv)
                            : redisConnectWithTimeout(u->host, u->port, ctv);
    if (ctx == NULL || ctx->err != 0) {
        int rc = rlock__context_error(ctx);
        if (ctx != NULL && ctx->err == REDIS_ERR_IO && errno == EINPROGRESS)
            rc = RLOCK_ETIMEDOUT;
        redisFree(ctx);
        return rc;
    }
    int64_t timeout = c->cfg.command_timeout_ms;
    int rc = RLOCK_OK;
    if (u->password != NULL) {
        const char *argv[3] = {"AUTH", u->user, u->password};
        if (u->user == NULL)
            argv[1] = u->password;
        rc = rlock__sync_expect(ctx, timeout, u->user ? 3 : 2, argv, NULL,
                                RLOCK_EAUTH, 0);
    }
    if (rc == 0 && u->db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", u->db);
        const char *argv[2] = {"SELECT", db};
        rc = rlock__sync_expect(ctx, timeout, 2, argv, NULL, RLOCK_EAUTH, 0);
    }
    if (rc == 0 && c->cfg.client_name != NULL) {
        const char *argv[3] = {"CLIENT", "SETNAME", c->cfg.client_name};
        rc = rlock__sync_expect(ctx, timeout, 3, argv, NULL, RLOCK_ESERVER,
                                0);
    }
    if (rc != 0) {
        redisFree(ctx);
        return rc;
    }
    *out = ctx;
    return RLOCK_OK;
}

/* The rest of a synchronous connection as src/api/admin.c uses it, which
 * may not name hiredis: pipelining, one read, the socket, the error text,
 * and freeing. */
int rlock__sync_append(redisContext *ctx, int argc, const char **argv,
                       const size_t *lens)
{
    return redisAppendCommandArgv(ctx, argc, argv, lens) == REDIS_OK
               ? RLOCK_OK
               : RLOCK_ENOMEM;
}

/* Reads what the socket has (one read(), which blocks when nothing came:
 * poll first). Returns 0, or a code with the context broken. */
int rlock__sync_fill(redisContext *ctx)
{
    return redisBufferRead(ctx) == REDIS_OK ? RLOCK_OK
                                            : rlock__context_error(ctx);
}

int rlock__sync_fd(const redisContext *ctx)
{
    return ctx->fd;
}

/* Why ctx broke, as hiredis says it ("" when it did not). */
const char *rlock__sync_errstr(const redisContext *ctx)
{
    return ctx->errstr;
}

void rlock__sync_reply_free(redisReply *r)
{
    freeReplyObject(r);
}

void rlock__sync_close(redisContext *ctx)
{
    redisFree(ctx);
}

/* ---------------------------------------------------------------- parking */

/* Closes s's connection; why (a static string) is told when it
 * reconnects. */
static void close_slot_why(slot *s, const char *why)
{
    if (s->ctx != NULL)
        s->closed_why = why;
    redisFree(s->ctx);
    s->ctx = NULL;
    s->owed = 0;
}

static void close_slot(slot *s)
{
    close_slot_why(s, "closed after an error");
}

/* Opens s's connection for a call of timeout_ms, and says so: a first
 * connect at DEBUG, a reconnect (counted) at INFO with why the last one
 * closed. s->mu held, on a user thread. Returns 0 or a code. */
static int connect_slot(slot *s, int64_t timeout_ms)
{
    rlock_client *c = s->direct->client;
    int index = (int)(s - s->direct->slots);
    int64_t connect_ms = c->cfg.connect_timeout_ms < timeout_ms
                             ? c->cfg.connect_timeout_ms
                             : timeout_ms;
    int rc = rlock__sync_connect(c, connect_ms, &s->ctx);
    if (rc != 0) {
        rlock__log_later(c, RLOCK_LOG_DEBUG,
                         "caller-thread connection %d could not connect: %s",
                         index, rlock_strerror(rc));
        return rc;
    }
    if (s->closed_why == NULL) {
        rlock__log_later(c, RLOCK_LOG_DEBUG,
                         "caller-thread connection %d connected", index);
        return RLOCK_OK;
    }
    rlock__stats_count(c->stats, RLOCK__STAT_RECONNECTS);
    rlock__log_later(c, RLOCK_LOG_INFO,
                     "caller-thread connection %d reconnected (the last one "
                     "was %s)",
                     index, s->closed_why);
    return RLOCK_OK;
}

/* I/O thread: the late replies are in (or given up): the slot is free. */
static void unpark(slot *s, bool drop)
{
    rlock__fdwatch_stop(s->watch);
    rlock__fdwatch_free(s->watch);
    s->watch = NULL;
    rlock__timer_stop(s->expiry);
    if (s->late != NULL) {
        rlock__req_unref(s->late);
        s->late = NULL;
    }
    pthread_mutex_lock(&s->mu);
    if (drop)
        close_slot(s);
    s->parked = false;
    pthread_mutex_unlock(&s->mu);
}

/* The late request's reply: an acquire that took the lock after its caller
 * gave up gives it back; anything else is dropped (an unlock's caller
 * retries under the same latch). */
static void settle_late(slot *s, redisReply *reply)
{
    rlock__req *r = s->late;
    rlock__req_decode(r, reply);
    if (r->kind == RLOCK__REPLY_ACQUIRE && r->status == 0 && r->nil)
        rlock__req_give_back(r);
    rlock__req_unref(r);
    s->late = NULL;
}

/* Consumes the replies hiredis has buffered; unparks when all came. */
static void drain_parked(slot *s)
{
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(s->ctx, &reply) != REDIS_OK) {
            unpark(s, true);
            return;
        }
        if (reply == NULL)
            return; /* wait for more */
        if (s->owed > 0) {
            s->owed--;
        } else if (s->late != NULL) {
            redisReply *rr = reply;
            if (s->late->script != NULL && rlock__reply_is_noscript(rr)) {
                /* the script did not run: nothing to give back */
                rlock__req_unref(s->late);
                s->late = NULL;
            } else {
                settle_late(s, rr);
            }
        }
        freeReplyObject(reply);
        if (s->owed == 0 && s->late == NULL) {
            unpark(s, false);
            return;
        }
    }
}

/* The socket is readable: one read (it cannot block now), then drain. */
static void on_parked_readable(void *arg)
{
    slot *s = arg;
    if (redisBufferRead(s->ctx) != REDIS_OK) {
        unpark(s, true);
        return;
    }
    drain_parked(s);
}

static void on_parked_too_long(void *arg)
{
    unpark(arg, true);
}

static void run_park(rlock__task *t, int status)
{
    slot *s = (slot *)((char *)t - offsetof(slot, park_task));
    if (status != 0) {
        /* the client is closing: the slot is freed with it */
        if (s->late != NULL) {
            rlock__req_unref(s->late);
            s->late = NULL;
        }
        return;
    }
    rlock__direct *d = s->direct;
    s->watch = rlock__fdwatch_new(d->client->loop, s->ctx->fd,
                                  on_parked_readable, s);
    if (s->watch == NULL) {
        unpark(s, true);
        return;
    }
    rlock__fdwatch_start(s->watch);
    rlock__timer_start(s->expiry, d->client->latch_ms, 0);
    drain_parked(s); /* hiredis may have buffered a reply already */
}

/* Hands the slot to the I/O thread until r's reply (and any owed ones)
 * came. s->mu held; r gets a reference. */
static void park(slot *s, rlock__req *r)
{
    atomic_fetch_add(&r->refs, 1);
    s->late = r;
    s->parked = true;
    rlock__loop_submit(s->direct->client->loop, &s->park_task);
}

/* ------------------------------------------------------------ round trip */

/* Reads one reply by deadline_ms, skipping the owed ones first. Returns 0
 * with *out set, or a code as rlock__sync_read(). */
static int read_reply(slot *s, int64_t deadline_ms, redisReply **out)
{
    while (s->owed > 0) {
        int rc = rlock__sync_read(s->ctx, deadline_ms, out);
        if (rc != 0)
            return rc;
        freeReplyObject(*out);
        s->owed--;
    }
    return rlock__sync_read(s->ctx, deadline_ms, out);
}

/* Checks the socket of a slot idle for a while before use: a connection
 * the server closed (restart, CLIENT KILL) is seen here, before a command
 * is written to it, so that the command goes out on a fresh connection
 * instead of failing with "may or may not have run". Owed replies that
 * arrived are consumed. A slot in steady use skips the system call: a
 * close that lands between two calls costs a retry, not an error.
 * s->mu held. */
#define RLOCK__IDLE_CHECK_MS 5

static void check_idle(slot *s, int64_t now, int64_t deadline_ms)
{
    if (now - s->used_at_ms < RLOCK__IDLE_CHECK_MS)
        return;
    for (;;) {
        struct pollfd pfd = {.fd = s->ctx->fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) == 0)
            return; /* quiet: alive as far as anyone can tell */
        if ((pfd.revents & POLLIN) == 0 || s->owed == 0) {
            /* hung up, or bytes nobody asked for */
            close_slot_why(s, "closed by the server (a restart, CLIENT KILL "
                              "or an idle timeout)");
            return;
        }
        redisReply *reply = NULL;
        if (rlock__sync_read(s->ctx, deadline_ms, &reply) != 0) {
            close_slot(s);
            return;
        }
        freeReplyObject(reply);
        s->owed--;
    }
}

/* One request on slot s (s->mu held). Returns r->status, or a code. */
static int round_trip(slot *s, rlock__req *r, int64_t timeout_ms)
{
    int rc;
    int64_t now = rlock__now_ms(), deadline = now + timeout_ms;
    if (s->ctx != NULL)
        check_idle(s, now, deadline);
    s->used_at_ms = now;
    if (s->ctx == NULL) {
        rc = connect_slot(s, timeout_ms);
        if (rc != 0)
            return rc == RLOCK_ETIMEDOUT ? RLOCK_ECONN : rc;
    }
    for (int tries = 0; tries < 2; tries++) {
        rlock__command cmd;
        int n = rlock__req_command(r, &cmd);
        if (n < 0)
            return RLOCK_ENOMEM;
        rc = redisAppendCommandArgv(s->ctx, n, cmd.argv, cmd.lens);
        rlock__command_clear(&cmd);
        if (rc != REDIS_OK) /* out of memory: the slot state is unknown */
            goto out_close;
        redisReply *reply = NULL;
        rc = read_reply(s, deadline, &reply);
        if (rc != 0)
            goto out_failed;
        if (r->script != NULL && !r->reloaded &&
            rlock__reply_is_noscript(reply)) {
            /* Redis lost its scripts: load this one and send it again
             * (command.c's file comment says why not EVAL) */
            freeReplyObject(reply);
            r->reloaded = true;
            rlock__req_note_reload(r);
            const char *argv[3] = {"SCRIPT", "LOAD",
                                   (const char *)r->script->body};
            size_t lens[3] = {6, 4, r->script->len};
            /* its reply is skipped: the EVALSHA behind it tells */
            if (redisAppendCommandArgv(s->ctx, 3, argv, lens) != REDIS_OK)
                goto out_close;
            s->owed++;
            continue;
        }
        rlock__req_decode(r, reply);
        freeReplyObject(reply);
        break;
    }
    if (r->status == RLOCK_EAUTH) {
        /* the password changed: AUTH again next time */
        close_slot_why(s, "closed to authenticate again");
        return r->status;
    }
    if (r->status == 0 && r->latch_del != NULL &&
        r->value != RLOCK__UNLOCK_NOT_HELD) {
        /* written behind the reply; its own reply is skipped later */
        const char *argv[2] = {"DEL", r->latch_del};
        int done = 0;
        if (redisAppendCommandArgv(s->ctx, 2, argv, NULL) == REDIS_OK) {
            s->owed++;
            while (!done && redisBufferWrite(s->ctx, &done) == REDIS_OK)
                ;
            if (!done)
                close_slot(s);
        }
    }
    return r->status;

out_failed:
    if (rc == RLOCK_ETIMEDOUT) {
        park(s, r); /* the script may still run: see the design notes */
        return RLOCK_ETIMEDOUT;
    }
    close_slot_why(s, "lost during a call");
    /* an error reply from a broken server (EPROTO) stays what it is; a
     * dropped connection means the command may or may not have run */
    return rc == RLOCK_EPROTO ? RLOCK_EPROTO : RLOCK_ECONN;
out_close:
    close_slot(s);
    return RLOCK_ENOMEM;
}

/* Runs r on an idle direct connection, if there is one: returns true with
 * *rc set, or false when every slot is busy (the caller then goes through
 * the I/O thread). Any thread but the I/O thread. */
bool rlock__direct_call(rlock__direct *d, rlock__req *r, int64_t timeout_ms,
                        int *rc)
{
    if (d == NULL)
        return false;
    unsigned start = atomic_fetch_add(&d->next, 1);
    for (int i = 0; i < d->n; i++) {
        slot *s = &d->slots[(start + (unsigned)i) % (unsigned)d->n];
        if (pthread_mutex_trylock(&s->mu) != 0)
            continue;
        if (s->parked) {
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        *rc = round_trip(s, r, timeout_ms);
        pthread_mutex_unlock(&s->mu);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------- lifecycle */

/* Makes n slots (none connected yet). Returns 0 or RLOCK_ENOMEM. */
int rlock__direct_new(rlock__direct **out, rlock_client *c, int n)
{
    rlock__direct *d = rlock__calloc(1, sizeof(*d) + sizeof(slot) * (size_t)n);
    if (d == NULL)
        return RLOCK_ENOMEM;
    d->client = c;
    d->n = n;
    atomic_init(&d->next, 0);
    for (int i = 0; i < n; i++) {
        slot *s = &d->slots[i];
        pthread_mutex_init(&s->mu, NULL);
        s->direct = d;
        s->park_task.run = run_park;
        s->expiry = rlock__timer_new(c->loop, on_parked_too_long, s);
        if (s->expiry == NULL) {
            d->n = i + 1;
            rlock__direct_free(d);
            return RLOCK_ENOMEM;
        }
    }
    *out = d;
    return RLOCK_OK;
}

/* Stops watching parked slots. I/O thread, at stop. */
void rlock__direct_shutdown(rlock__direct *d)
{
    for (int i = 0; d != NULL && i < d->n; i++) {
        slot *s = &d->slots[i];
        rlock__fdwatch_stop(s->watch);
        rlock__timer_stop(s->expiry);
    }
}

/* Closes every slot; after the I/O thread has stopped. NULL is ignored. */
void rlock__direct_free(rlock__direct *d)
{
    if (d == NULL)
        return;
    for (int i = 0; i < d->n; i++) {
        slot *s = &d->slots[i];
        rlock__fdwatch_free(s->watch);
        rlock__timer_free(s->expiry);
        if (s->late != NULL)
            rlock__req_unref(s->late);
        redisFree(s->ctx);
        pthread_mutex_destroy(&s->mu);
    }
    free(d);
}
