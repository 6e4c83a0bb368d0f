/*
 * core/direct_round_trip.c: one request run on the calling thread over a
 * caller-thread connection ("slot") that core/direct.c handed out (layer
 * core). Here: (re)connecting the slot, checking one idle for a while,
 * the call itself with its NOSCRIPT reload, WAIT for replicas, the latch
 * DEL behind an unlock's reply, a cluster's redirection kept for the I/O
 * thread, and giving back a hold that a late acquire took. Split from
 * direct.c where a slot changes hands: that file owns who has a slot and
 * the watch over idle ones (its design notes say why slots exist and how
 * late replies are kept); everything here runs on a slot its caller
 * alone holds, so nothing here touches the slot's state word.
 *
 * Where the links go. A client's set of slots goes to its server (in
 * Sentinel mode: wherever the master is now, and a link made for an older
 * master is closed before use). In cluster mode there is one set per
 * master node (core/direct_cluster.c), made by rlock__direct_new_node: its
 * links go to that node, and a cluster's answer that the request belongs
 * elsewhere (MOVED, ASK, TRYAGAIN, ...) is not decoded but kept in
 * r->answer for the I/O thread to follow. When the node leaves the slot
 * table its idle links are closed (direct.c's rlock__direct_retire) and
 * the others here, before their next use.
 */
#include "core/direct_impl.h"
#include "io/master.h"
#include "proto/cluster.h"

#include <poll.h>
#include <stdlib.h>

static const char sentinel_moved[] = "closed: the master moved (Sentinel)";

/* The generation of the server d's links go to: a link made for an older
 * one is closed before use. Any thread. */
static uint64_t server_gen(rlock__direct *d)
{
    if (d->node != NULL)
        return atomic_load_explicit(&d->departures, memory_order_acquire);
    return rlock__master_gen(d->client->master);
}

/* The reply of an acquire whose caller gave up, read by whichever thread
 * reads the slot next (NULL: it never came). A hold it took is given
 * back. */
static void on_late_acquire(struct redisReply *reply, void *arg)
{
    rlock__req *r = arg;
    int64_t ttl, token;
    bool fenced = r->script == &rlock__script_fenced_acquire;
    /* decoded here, not into r: its caller is gone, but r is still its */
    int rc = reply != NULL
                 ? rlock__reply_acquire(reply, &ttl, fenced ? &token : NULL)
                 : RLOCK_ECONN;
    if (rc >= 0)
        rlock__req_undo_late(r, rc == 1);
    rlock__req_unref(r);
}

/* Checks the socket of a slot idle for a while before use: a connection
 * the server closed (restart, CLIENT KILL) is seen here, before a command
 * is written to it, so that the command goes out on a fresh connection
 * instead of failing with "may or may not have run". Late and dropped
 * replies that came are read. A slot in steady use skips the system call:
 * a close that lands between two calls costs a retry, not an error. The
 * holder. */
#define RLOCK__IDLE_CHECK_MS 5

static void check_idle(slot *s, int64_t now)
{
    if (now - s->used_at_ms < RLOCK__IDLE_CHECK_MS &&
        s->late_since_ms == 0)
        return;
    if (s->late_since_ms != 0 &&
        now - s->late_since_ms >= s->direct->client->latch_ms) {
        /* see direct.c's design notes */
        rlock__direct_close_slot(s, rlock__direct_overdue);
        return;
    }
    struct pollfd pfd = {.fd = rlock__link_sync_fd(s->link), .events = POLLIN};
    if (poll(&pfd, 1, 0) == 0)
        return; /* quiet: alive as far as anyone can tell */
    int owed = (pfd.revents & POLLIN) != 0 ? rlock__link_sync_drain(s->link)
                                           : -1;
    if (owed == 0)
        s->late_since_ms = 0;
    /* with nothing owed, what is left to read is an end or bytes nobody
     * asked for */
    if (owed < 0 || (owed == 0 && poll(&pfd, 1, 0) != 0))
        rlock__direct_close_slot(s, "closed by the server (a restart, "
                                    "CLIENT KILL or an idle timeout)");
}

/* Sends r on s and reads its reply by deadline_ms. Returns 0 with *out
 * set, or a code as rlock__link_sync_call. */
static int exchange(slot *s, rlock__req *r, int64_t deadline_ms,
                    struct redisReply **out)
{
    rlock__command cmd;
    int n = rlock__req_command(r, &cmd);
    if (n < 0)
        return RLOCK_ENOMEM;
    /* only an acquire's late reply matters: it may have taken a hold */
    bool acquire = r->kind == RLOCK__REPLY_ACQUIRE && r->lock_entry != NULL;
    if (acquire)
        atomic_fetch_add(&r->refs, 1); /* on_late_acquire's */
    int rc = rlock__link_sync_call(s->link, n, cmd.argv, cmd.lens,
                                   deadline_ms, out,
                                   acquire ? on_late_acquire : NULL, r);
    rlock__command_clear(&cmd);
    if (acquire && rc != RLOCK_ETIMEDOUT)
        rlock__req_unref(r); /* no late reply will come */
    return rc;
}

/* Opens s's link for a call of timeout_ms, and says so: a first connect
 * at DEBUG, a reconnect (counted) at INFO with why the last one closed.
 * The holder, on a user thread. Returns 0 or a code. */
static int connect_slot(slot *s, int64_t timeout_ms)
{
    rlock__direct *d = s->direct;
    rlock_client *c = d->client;
    int index = (int)(s - d->slots);
    int64_t connect_ms = c->cfg.connect_timeout_ms < timeout_ms
                             ? c->cfg.connect_timeout_ms
                             : timeout_ms;
    /* read before the address: a link is never taken for newer than it is */
    s->master_gen = server_gen(d);
    int rc;
    if (d->node != NULL) {
        rlock__link_opts o = *d->node;
        o.connect_timeout_ms = connect_ms;
        rc = rlock__link_sync_open(&o, &s->link, NULL, 0);
    } else {
        rc = rlock__client_sync_open(c, connect_ms, &s->link, NULL, 0);
    }
    if (rc != 0) {
        rlock__log_later(c, RLOCK_LOG_DEBUG,
                         "caller-thread connection %d%s could not connect: "
                         "%s",
                         index, d->to, rlock_strerror(rc));
        return rc;
    }
    s->gen++;
    s->replicas = -1; /* maybe another master now (a failover) */
    if (s->closed_why == NULL) {
        rlock__log_later(c, RLOCK_LOG_DEBUG,
                         "caller-thread connection %d%s connected", index,
                         d->to);
        return RLOCK_OK;
    }
    rlock__stats_count(c->stats, RLOCK__STAT_RECONNECTS);
    rlock__log_later(c, RLOCK_LOG_INFO,
                     "caller-thread connection %d%s reconnected (the last "
                     "one was %s)",
                     index, d->to, s->closed_why);
    return RLOCK_OK;
}

/* A plain command on s after the request, for wait_for_replicas(). The
 * holder. */
static int call_plain(slot *s, int argc, const char **argv,
                      int64_t deadline_ms, struct redisReply **out)
{
    int rc = rlock__link_sync_call(s->link, argc, argv, NULL, deadline_ms, out,
                                   NULL, NULL);
    if (rc == RLOCK_ETIMEDOUT && s->late_since_ms == 0)
        s->late_since_ms = rlock__now_ms(); /* its reply is still owed */
    else if (rc != 0 && rc != RLOCK_ETIMEDOUT &&
             rlock__link_sync_broken(s->link))
        rlock__direct_close_slot(s, "lost during a call");
    return rc;
}

/* WAIT after r's script on s (core/sync.c), with INFO replication first
 * when s does not know the master's replicas yet; applies the verdict to
 * r. The holder. */
static void wait_for_replicas(slot *s, rlock__req *r)
{
    rlock_client *c = s->direct->client;
    struct redisReply *reply = NULL;
    int n = s->replicas;
    if (n < 0) {
        const char *argv[2] = {"INFO", "replication"};
        int rc = call_plain(s, 2, argv,
                            rlock__now_ms() + c->cfg.command_timeout_ms,
                            &reply);
        n = rc == 0 ? rlock__reply_connected_slaves(reply) : -1;
        rlock__link_reply_free(reply);
        reply = NULL;
        if (n < 0) {
            rlock__sync_verdict(r, 1, -1);
            return;
        }
        s->replicas = n;
    }
    if (n == 0 || s->link == NULL)
        return;
    char nbuf[24], tbuf[24];
    rlock__sync_wait_args(r, n, nbuf, tbuf);
    const char *argv[3] = {"WAIT", nbuf, tbuf};
    int64_t acks = -1;
    int rc = call_plain(s, 3, argv, rlock__sync_wait_deadline(r), &reply);
    if (rc != 0 || rlock__reply_integer(reply, &acks) != 1)
        acks = -1;
    else if (acks != n) /* replicas came or went: ask again */
        s->replicas = -1;
    rlock__link_reply_free(reply);
    rlock__sync_verdict(r, n, acks);
}

/* A cluster's answer to r that the request belongs elsewhere or later
 * (core/route.c follows it): kept in r->answer, with r->status what the
 * error means should nobody follow it. Returns false for any other reply.
 * Out of memory, the answer stays the error it is. */
static bool cluster_answer(rlock__req *r, const struct redisReply *reply)
{
    rlock__redirect red;
    rlock__redirect_parse(reply, &red);
    if (!rlock__route_follows(&red))
        return false;
    r->status = rlock__reply_error_code(reply);
    if (r->status == 0)
        r->status = RLOCK_ESERVER;
    free(r->answer);
    r->answer = rlock__malloc(sizeof(*r->answer));
    if (r->answer != NULL)
        *r->answer = red;
    return true;
}

/* One request on slot s (held). Returns r->status, or a code; r->unsent
 * says that nothing was sent (no connection could be made). */
int rlock__direct_round_trip(slot *s, rlock__req *r, int64_t timeout_ms)
{
    int64_t now = rlock__now_ms(), deadline = now + timeout_ms;
    rlock__direct *d = s->direct;
    rlock__master *master = d->client->master;
    if (s->link != NULL && s->master_gen != server_gen(d))
        rlock__direct_close_slot(s, d->node != NULL ? rlock__direct_departed
                                                    : sentinel_moved);
    if (s->link != NULL)
        check_idle(s, now);
    s->used_at_ms = now;
    if (s->link == NULL) {
        int rc = connect_slot(s, timeout_ms);
        if (rc != 0) {
            r->unsent = true;
            return rc == RLOCK_ETIMEDOUT ? RLOCK_ECONN : rc;
        }
    }
    struct redisReply *reply = NULL;
    int rc = exchange(s, r, deadline, &reply);
    if (rc == 0 && r->script != NULL && !r->reloaded &&
        rlock__reply_is_noscript(reply)) {
        /* Redis lost its scripts: load this one and send it again
         * (io/conn.h says why not EVAL); the load's reply
         * is dropped, the EVALSHA behind it tells */
        rlock__link_reply_free(reply);
        reply = NULL;
        r->reloaded = true;
        rlock__req_note_reload(r);
        const char *argv[3] = {"SCRIPT", "LOAD",
                               (const char *)r->script->body};
        size_t lens[3] = {6, 4, r->script->len};
        rc = rlock__link_sync_send(s->link, 3, argv, lens);
        if (rc == 0)
            rc = exchange(s, r, deadline, &reply);
    }
    if (rc == RLOCK_ETIMEDOUT) {
        /* the script may still run: see direct.c's design notes */
        if (s->late_since_ms == 0)
            s->late_since_ms = rlock__now_ms();
        return rc;
    }
    if (rc != 0) {
        bool broken = rlock__link_sync_broken(s->link);
        if (broken) {
            rlock__direct_close_slot(s, "lost during a call");
            rlock__master_suspect(master); /* did it move? */
        }
        /* an error reply from a broken server (EPROTO) stays what it is; a
         * dropped connection means the command may or may not have run */
        return rc == RLOCK_EPROTO || (rc == RLOCK_ENOMEM && !broken)
                   ? rc
                   : RLOCK_ECONN;
    }
    s->late_since_ms = 0; /* every reply owed before ours came */
    if (d->node != NULL && cluster_answer(r, reply)) {
        rlock__link_reply_free(reply);
        return r->status;
    }
    if (master != NULL && (s->master_gen != rlock__master_gen(master) ||
                           rlock__reply_is_readonly(reply))) {
        /* an answer of a master no longer ours, or of one turned into a
         * replica: the call's outcome is not the new master's
         * (core/follow.c) */
        if (rlock__reply_is_readonly(reply))
            rlock__master_suspect(master);
        rlock__link_reply_free(reply);
        rlock__direct_close_slot(s, sentinel_moved);
        return RLOCK_ECONN;
    }
    rlock__req_decode(r, reply);
    rlock__link_reply_free(reply);
    if (r->status == RLOCK_EAUTH) {
        /* the password changed: AUTH again next time */
        rlock__direct_close_slot(s, "closed to authenticate again");
        return r->status;
    }
    if (rlock__sync_wanted(r))
        wait_for_replicas(s, r);
    if (r->status == 0 && r->latch_del != NULL && s->link != NULL &&
        r->value != RLOCK__UNLOCK_NOT_HELD) {
        /* behind the reply; out of memory, the latch expires by itself */
        const char *argv[2] = {"DEL", r->latch_del};
        if (rlock__link_sync_send(s->link, 2, argv, NULL) == RLOCK_ECONN)
            rlock__direct_close_slot(s, "lost during a call");
    }
    return r->status;
}
