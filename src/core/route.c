/*
 * core/route.c: where a request goes in cluster mode, and what a cluster's
 * answer means for it (CLUSTER-SENTINEL.md 6.3's table).
 *
 * Design note. command.c sends every request through the same path in
 * both modes; in cluster mode it asks rlock__route_conn for the connection
 * (the master of the slot of the request's first key, through
 * io/cluster.h's one hook) and lets rlock__route_retry look at the answer
 * before decoding it. Nothing the cluster says reaches a caller unless it
 * cannot be handled within the request's deadline:
 *   MOVED        not run: the table takes the new owner, and the request
 *                goes there at once (a refresh follows);
 *   ASK          not run: ASKING and the request, back to back, on the
 *                node named, this once; the table stays;
 *   TRYAGAIN     not run (a multi-key script while its slot migrates):
 *                again after a back-off of 20 ms doubling to 200 ms; or,
 *                for a request that says so (an RLock's queued try, whose
 *                keys cannot all be on one node until the migration ends),
 *                back to its caller at once, which tries another way;
 *   CLUSTERDOWN, MASTERDOWN, LOADING, READONLY: likewise, after asking
 *                for a refresh (a failover is under way);
 *   no connection: a request that was not sent, or whose outcome does not
 *                matter twice (an unlock carries its latch id, a renewal
 *                or a query may run twice), goes again after a refresh
 *                and a back-off. An acquire whose connection was lost
 *                with the request on it may have run: it is never resent
 *                (a second HINCRBY would add a hold), and its caller hears
 *                RLOCK_ECONN, as on a single server; nor is a force
 *                release (r->run_once: a second one could delete a lock
 *                another client took during the back-off).
 * At most RLOCK__ROUTE_REDIRECTS redirections in a row per request (a
 * back-off between them starts the count again), as a guard against two
 * nodes sending it back and forth while they disagree.
 *
 * The request's deadline is fixed at its first send (the caller's, or one
 * command timeout), so retries spend the caller's budget, never extend it.
 * An acquire's attempt or drop also carries its caller's wait deadline
 * (r->send_by_ms), which may come first: a back-off never outlasts it, so
 * a failing-over node costs a trylock its wait, not a command timeout more.
 *
 * A blocking call's request may have been sent first on a caller-thread
 * connection (core/direct_cluster.c). When the node answered one of the
 * kinds above, the request comes to the I/O thread with that answer
 * (r->answer) and rlock__route_answer follows it as if it had come here:
 * a MOVED then costs that one round trip more, as on this path.
 */
#include "core/core.h"
#include "io/cluster.h"
#include "proto/cluster.h"

#include <stdlib.h>
#include <string.h>

#define RLOCK__ROUTE_REDIRECTS 5
#define RLOCK__ROUTE_BACKOFF_MIN_MS 20
#define RLOCK__ROUTE_BACKOFF_MAX_MS 200

/* The slot of r's first key (a script's KEYS[1], a plain command's first
 * argument), or -1 for a command that names none (PING). Any thread. */
int rlock__route_slot(const rlock__req *r)
{
    int k;
    if (r->script != NULL)
        k = r->numkeys > 0 ? 0 : -1;
    else
        k = r->argc >= 2 ? 1 : -1;
    return k < 0 ? -1 : rlock__key_slot(r->argv[k], r->argvlen[k]);
}

typedef struct asking {
    rlock__conn_cmd cmd;
    const char *argv[1];
    size_t lens[1];
} asking;

static void on_asking(rlock__conn_cmd *cmd, int status,
                      struct redisReply *reply)
{
    (void)status;
    (void)reply;
    free(cmd); /* its answer is the request's to find out, behind it */
}

/* Sends ASKING on cn, just before the request it is for. */
static void send_asking(rlock__conn *cn, int64_t deadline_ms)
{
    asking *a = rlock__calloc(1, sizeof(*a));
    if (a == NULL)
        return; /* the request gets ASK again, and a retry */
    a->argv[0] = "ASKING";
    a->lens[0] = 6;
    a->cmd = (rlock__conn_cmd){.argc = 1,
                               .argv = a->argv,
                               .lens = a->lens,
                               .deadline_ms = deadline_ms,
                               .done = on_asking};
    if (rlock__conn_send(cn, &a->cmd) != 0)
        free(a);
}

rlock__conn *rlock__route_conn(rlock__req *r)
{
    rlock_client *c = r->client;
    if (r->deadline_ms == 0)
        r->deadline_ms = rlock__now_ms() + c->cfg.command_timeout_ms;
    rlock__cnode *n = r->target;
    r->target = NULL;
    if (n == NULL)
        n = rlock__cluster_node_for(c->cluster, rlock__route_slot(r));
    r->node = n;
    if (n == NULL)
        return NULL;
    rlock__conn *cn = rlock__cluster_conn(c->cluster, n);
    if (r->asking)
        send_asking(cn, r->deadline_ms);
    r->asking = false;
    return cn;
}

static void resend(void *arg, int status)
{
    rlock__req *r = arg;
    if (status != 0)
        rlock__req_fail(r, status);
    else
        rlock__req_dispatch(r);
}

/* Sends r again after a back-off, if its deadline allows. The redirection
 * cap starts afresh: it stops nodes sending a request back and forth
 * without pause, and a back-off is a pause (an unlock in a migrating slot
 * gets ASK from the source and TRYAGAIN from the target on every round,
 * for as long as the migration lasts). */
static bool again_later(rlock__req *r)
{
    rlock_client *c = r->client;
    r->redirects = 0;
    int64_t b = r->backoff_ms == 0 ? RLOCK__ROUTE_BACKOFF_MIN_MS
                                   : r->backoff_ms * 2;
    r->backoff_ms = b > RLOCK__ROUTE_BACKOFF_MAX_MS
                        ? RLOCK__ROUTE_BACKOFF_MAX_MS
                        : b;
    int64_t until = r->deadline_ms;
    if (r->send_by_ms != 0 && r->send_by_ms < until)
        until = r->send_by_ms; /* an acquire's caller waits no longer */
    if (rlock__now_ms() + r->backoff_ms >= until)
        return false;
    return rlock__cluster_later(c->cluster, r->backoff_ms, resend, r) == 0;
}

/* A redirection to red's node: sends r there now. */
static bool redirect(rlock__req *r, const rlock__redirect *red)
{
    rlock_client *c = r->client;
    if (++r->redirects > RLOCK__ROUTE_REDIRECTS)
        return false;
    const char *host = red->host[0] != '\0' || r->node == NULL
                           ? red->host
                           : rlock__cnode_host(r->node);
    rlock__cnode *n = rlock__cluster_node_at(c->cluster, host, red->port);
    if (n == NULL)
        return false;
    if (red->kind == RLOCK__REDIR_MOVED)
        rlock__cluster_moved(c->cluster, red->slot, n);
    r->target = n;
    r->asking = red->kind == RLOCK__REDIR_ASK;
    rlock__req_dispatch(r);
    return true;
}

bool rlock__route_retry(rlock__req *r, int status,
                        const struct redisReply *reply)
{
    rlock_client *c = r->client;
    if (status == RLOCK_ECONN) {
        rlock__cluster_refresh(c->cluster);
        /* sent and lost: an acquire may have run, and so may a request
         * that must not run twice */
        if ((r->kind == RLOCK__REPLY_ACQUIRE || r->run_once) &&
            r->node != NULL && !r->unsent)
            return false;
        r->unsent = false;
        return again_later(r);
    }
    if (status != RLOCK_OK)
        return false;
    rlock__redirect red;
    rlock__redirect_parse(reply, &red);
    return rlock__route_answer(r, &red);
}

/* Whether rlock__route_answer follows red (one of the kinds above), rather
 * than leaving it an error for the caller. Any thread. */
bool rlock__route_follows(const rlock__redirect *red)
{
    switch (red->kind) {
    case RLOCK__REDIR_MOVED:
    case RLOCK__REDIR_ASK:
    case RLOCK__REDIR_CLUSTERDOWN:
    case RLOCK__REDIR_MASTERDOWN:
    case RLOCK__REDIR_LOADING:
    case RLOCK__REDIR_READONLY:
    case RLOCK__REDIR_TRYAGAIN:
        return true;
    default:
        return false;
    }
}

/* What a cluster's answer red means for r: true when r was sent again (or
 * will be, after a back-off), false when r ends with it. I/O thread. */
bool rlock__route_answer(rlock__req *r, const rlock__redirect *red)
{
    rlock_client *c = r->client;
    switch (red->kind) {
    case RLOCK__REDIR_MOVED:
    case RLOCK__REDIR_ASK:
        rlock__stats_count(c->stats, red->kind == RLOCK__REDIR_MOVED
                                         ? RLOCK__STAT_CLUSTER_MOVED
                                         : RLOCK__STAT_CLUSTER_ASK);
        return redirect(r, red);
    case RLOCK__REDIR_CLUSTERDOWN:
    case RLOCK__REDIR_MASTERDOWN:
    case RLOCK__REDIR_LOADING:
    case RLOCK__REDIR_READONLY:
        rlock__cluster_refresh(c->cluster);
        /* fall through */
    case RLOCK__REDIR_TRYAGAIN:
        rlock__stats_count(c->stats, RLOCK__STAT_CLUSTER_TRYAGAIN);
        if (r->tryagain_ends && red->kind == RLOCK__REDIR_TRYAGAIN) {
            r->tryagain = true;
            return false;
        }
        return again_later(r);
    default:
        return false;
    }
}
