/*
 * conn.c: one command connection of the I/O thread (see conn.h).
 *
 * Design notes.
 *
 * The connection is a thin owner of links. It opens one when a command
 * needs it and frees it when the link reports its failure (on_closed), so
 * the next command opens another: reconnect on demand. The handshake
 * (AUTH, SELECT, CLIENT SETNAME), the connect timeout, deadlines, late
 * replies and half-open detection are the link's; what is left here is
 * what a command means to a Redis client:
 *   - NOSCRIPT: the script is loaded and the same EVALSHA sent again on
 *     the same link, behind it, with what is left of its deadline. A
 *     second NOSCRIPT is the command's answer.
 *   - NOAUTH, WRONGPASS or NOPERM in answer to a command: the credentials
 *     the link logged in with no longer hold (a password changed, a user
 *     disabled). The link is retired: no new command goes to it, those
 *     already sent get their replies, and it is freed when it owes none;
 *     the next command opens a new link, which authenticates afresh.
 *   - Statuses: the link reports its connect's deadline as RLOCK_ETIMEDOUT
 *     to every request it fails; a caller must not take that for its own
 *     deadline (no late reply follows), so it becomes RLOCK_ECONN. A link
 *     freed here other than by rlock__conn_close() fails its requests with
 *     RLOCK_ECONN too, for the same reason: they may or may not have run.
 *
 * Invariants: cn->link is NULL or a link that has not reported its
 * failure; cn->retired likewise. A cmd's done runs once; its late runs once
 * after a done with RLOCK_ETIMEDOUT when set (the link's own promise).
 */
#include "io/conn.h"
#include "io/io.h"
#include "io/link.h"
#include "proto/proto.h"

#include "rlock.h"

#include <hiredis/hiredis.h>
#include <string.h>

static void on_closed(rlock__link *l, int status, void *arg);

void rlock__conn_init(rlock__conn *cn, struct ev_loop *loop,
                      const rlock__link_opts *o,
                      rlock__conn_event_cb on_event, void *event_arg)
{
    memset(cn, 0, sizeof(*cn));
    cn->loop = loop;
    cn->opts = o;
    cn->on_event = on_event;
    cn->event_arg = event_arg;
    cn->replicas = -1;
}

static void tell(rlock__conn *cn, rlock__conn_event ev, rlock__conn_cmd *cmd,
                 const char *why)
{
    if (cn->on_event != NULL)
        cn->on_event(cn, ev, cmd, why, cn->event_arg);
}

/* Frees l, which is cn's live or retired link. */
static void drop_link(rlock__conn *cn, rlock__link *l)
{
    if (cn->link == l)
        cn->link = NULL;
    if (cn->retired == l)
        cn->retired = NULL;
    rlock__link_free(l);
}

/* Frees l if it is the retired link and owes nothing any more. */
static void reap_retired(rlock__conn *cn, rlock__link *l)
{
    if (l == cn->retired && rlock__link_pending(l) == 0)
        drop_link(cn, l);
}

/* Takes l out of service (see the design notes); reply says why. */
static void retire(rlock__conn *cn, rlock__link *l,
                   const struct redisReply *reply)
{
    if (cn->link != l)
        return; /* already retired */
    cn->link = NULL; /* from now on, commands open another */
    if (cn->retired != NULL)
        drop_link(cn, cn->retired); /* a second one in a row: no waiting */
    cn->retired = l;
    tell(cn, RLOCK__CONN_RETIRED, NULL, reply->str);
}

static void on_up(rlock__link *l, int status, void *arg)
{
    rlock__conn *cn = arg;
    (void)status;
    if (l != cn->link)
        return;
    cn->link_up = true;
    cn->replicas = -1; /* maybe another server now (a failover) */
    tell(cn, cn->was_up ? RLOCK__CONN_RECONNECTED : RLOCK__CONN_CONNECTED,
         NULL, NULL);
    cn->was_up = true;
}

static void on_closed(rlock__link *l, int status, void *arg)
{
    rlock__conn *cn = arg;
    (void)status;
    if (l == cn->link)
        tell(cn, cn->link_up ? RLOCK__CONN_LOST : RLOCK__CONN_FAILED, NULL,
             rlock__link_error(l));
    drop_link(cn, l);
}

/* The status a link gave, as conn.h promises it to the caller. */
static int map_status(const rlock__conn *cn, const rlock__link *l,
                      int status)
{
    if (status == RLOCK_ETIMEDOUT && rlock__link_failed(l))
        return RLOCK_ECONN; /* the connect's deadline, not the command's */
    if (status == RLOCK_ECLOSED && !cn->closed)
        return RLOCK_ECONN;
    return status;
}

static void on_reply(rlock__link *l, int status, struct redisReply *reply,
                     void *arg);
static void on_late(rlock__link *l, struct redisReply *reply, void *arg);

/* Hands cmd to link l with what is left of its deadline. */
static int link_send(rlock__link *l, rlock__conn_cmd *cmd)
{
    int64_t left = cmd->deadline_ms - rlock__io_now_ms();
    if (left <= 0)
        return RLOCK_ETIMEDOUT;
    return rlock__link_send(l, cmd->argc, cmd->argv, cmd->lens, left,
                            on_reply, cmd->late != NULL ? on_late : NULL,
                            cmd);
}

static void ignore_reply(rlock__link *l, int status, struct redisReply *reply,
                         void *arg)
{
    (void)l;
    (void)status;
    (void)reply;
    (void)arg;
}

/* NOSCRIPT: SCRIPT LOAD, then the EVALSHA again behind it. Its reply is
 * not needed: the EVALSHA's tells. Returns 0 or a code for done. */
static int reload(rlock__link *l, rlock__conn_cmd *cmd)
{
    const char *argv[3] = {"SCRIPT", "LOAD",
                           (const char *)cmd->script->body};
    size_t lens[3] = {6, 4, cmd->script->len};
    int64_t left = cmd->deadline_ms - rlock__io_now_ms();
    if (left <= 0)
        return RLOCK_ETIMEDOUT;
    int rc = rlock__link_send(l, 3, argv, lens, left, ignore_reply, NULL,
                              NULL);
    return rc != 0 ? rc : link_send(l, cmd);
}

static void on_reply(rlock__link *l, int status, struct redisReply *reply,
                     void *arg)
{
    rlock__conn_cmd *cmd = arg;
    rlock__conn *cn = cmd->cn;
    rlock__conn_late_cb late = NULL;
    if (status == 0 && cmd->script != NULL && !cmd->reloaded &&
        rlock__reply_is_noscript(reply)) {
        cmd->reloaded = true;
        tell(cn, RLOCK__CONN_RELOADING, cmd, NULL);
        status = reload(l, cmd);
        if (status == 0)
            return; /* the EVALSHA sent again answers */
        reply = NULL;
        /* no time left to send it again: late hears at once that no
         * reply is coming */
        if (status == RLOCK_ETIMEDOUT)
            late = cmd->late;
    } else if (status == 0 &&
               rlock__reply_error_code(reply) == RLOCK_EAUTH) {
        retire(cn, l, reply);
    }
    cmd->done(cmd, map_status(cn, l, status), reply); /* may free cmd, */
    if (late != NULL)
        late(cmd, NULL); /* but not before this */
    reap_retired(cn, l);
}

static void on_late(rlock__link *l, struct redisReply *reply, void *arg)
{
    rlock__conn_cmd *cmd = arg;
    rlock__conn *cn = cmd->cn;
    if (reply != NULL && rlock__reply_error_code(reply) == RLOCK_EAUTH)
        retire(cn, l, reply);
    cmd->late(cmd, reply); /* may free cmd */
    reap_retired(cn, l);
}

int rlock__conn_send(rlock__conn *cn, rlock__conn_cmd *cmd)
{
    if (cmd == NULL || cmd->done == NULL || cmd->argc < 1)
        return RLOCK_EINVAL;
    if (cn->closed)
        return RLOCK_ECLOSED;
    if (cmd->deadline_ms <= rlock__io_now_ms())
        return RLOCK_ETIMEDOUT;
    if (cn->link != NULL && rlock__link_failed(cn->link))
        drop_link(cn, cn->link); /* failed inside a send: not reported yet */
    if (cn->link == NULL) {
        rlock__link_cbs cbs = {.on_up = on_up, .on_closed = on_closed,
                               .arg = cn};
        int rc = rlock__link_open(cn->loop, cn->opts, &cbs, &cn->link);
        if (rc != 0)
            return rc;
        cn->link_up = false;
    }
    cmd->cn = cn;
    cmd->reloaded = false;
    return link_send(cn->link, cmd);
}

void rlock__conn_reset(rlock__conn *cn)
{
    if (cn->retired != NULL)
        drop_link(cn, cn->retired);
    if (cn->link != NULL)
        drop_link(cn, cn->link);
}

void rlock__conn_close(rlock__conn *cn)
{
    cn->closed = true;
    if (cn->retired != NULL)
        drop_link(cn, cn->retired);
    if (cn->link != NULL)
        drop_link(cn, cn->link);
}

bool rlock__conn_drop_idle(rlock__conn *cn)
{
    if (cn->closed || (cn->link == NULL && cn->retired == NULL))
        return false;
    if ((cn->link != NULL && rlock__link_pending(cn->link) > 0) ||
        (cn->retired != NULL && rlock__link_pending(cn->retired) > 0))
        return false;
    rlock__conn_reset(cn); /* nothing pending: nothing completes */
    cn->link_up = false;
    cn->was_up = false;
    return true;
}
