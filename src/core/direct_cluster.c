/*
 * core/direct_cluster.c: caller-thread connections in cluster mode (issue
 * 14; layer core). A blocking call's round trip goes from the calling
 * thread straight to the master of its slot, as core/direct.c does for a
 * single server, instead of hopping to the I/O thread and back.
 *
 * Design note. There is one set of direct.c's slots per master node, made
 * the first time a call goes to that node; its links open on demand, at
 * most c->cfg.connections of them, as for a single server. A call reads
 * the owner of its slot from io/cluster.c's table (under the table's own
 * lock: any thread may), takes an idle slot of that node's set (a try,
 * never a wait) and runs the request there. What then:
 *
 *   a reply        as on a single server (direct_round_trip.c): NOSCRIPT
 *                  loads the script on that node, WAIT, the latch DEL
 *                  behind it;
 *   MOVED, ASK, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, LOADING, READONLY:
 *                  the request goes to the I/O thread with that answer,
 *                  which follows it as if its own connection had got it
 *                  (core/route.c): a MOVED sets the slot's new owner in
 *                  the table and sends the request there at once (so it
 *                  costs one round trip more, and the next call reads the
 *                  new owner), an ASK sends ASKING + the request, the
 *                  others back off within the caller's deadline. Not
 *                  here, because the table and any new node are the I/O
 *                  thread's, as is what else moves with a slot (the
 *                  waiters' channels); a redirection is rare, so the hop
 *                  then costs nothing in steady state;
 *   no connection  nothing was sent: the request goes through the I/O
 *                  thread, whose route.c waits for a failing-over cluster;
 *   lost with the request on it: an acquire may have run, so it is never
 *                  sent again (nor is a force release: r->run_once); its caller hears RLOCK_ECONN (the acquire
 *                  machine drops the hold it may have taken and tries
 *                  again, as on a single server). Anything else (an unlock
 *                  carries its latch, a query may run twice) goes again
 *                  through the I/O thread;
 *   a timeout      RLOCK_ETIMEDOUT; the late reply is read on its slot,
 *                  and a hold it took given back (direct_round_trip.c);
 *   every slot of the node busy, or a command that names no key: the
 *                  I/O thread, as on a single server.
 *
 * A node that leaves the table (a failover made it a replica, a reshard
 * took its last slot) has its set retired (rlock__direct_retire: its links
 * close, as Sentinel mode's do when the master moves). Sets are kept, as
 * io/cluster.c keeps nodes, until the client is freed: a node that serves
 * slots again takes links again.
 */
#include "core/core.h"
#include "io/cluster.h"

#include <stdlib.h>

typedef struct node_set {
    rlock__cnode *node;
    rlock__direct *direct;
    bool serving; /* the I/O thread's: as the table said last */
} node_set;

struct rlock__direct_cluster {
    rlock_client *client;
    pthread_mutex_t mu; /* sets, count, cap */
    node_set *sets;
    size_t count, cap;
};

/* Makes n's set (under dc->mu). Returns it, or NULL when out of memory. */
static rlock__direct *add(rlock__direct_cluster *dc, rlock__cnode *n)
{
    if (dc->count == dc->cap) {
        size_t cap = dc->cap ? dc->cap * 2 : 4;
        node_set *grown = rlock__realloc(dc->sets, sizeof(*grown) * cap);
        if (grown == NULL)
            return NULL;
        dc->sets = grown;
        dc->cap = cap;
    }
    rlock__direct *d = NULL;
    if (rlock__direct_new_node(&d, dc->client, dc->client->cfg.connections,
                               rlock__cnode_opts(n),
                               rlock__cnode_name(n)) != 0)
        return NULL;
    dc->sets[dc->count++] = (node_set){.node = n, .direct = d,
                                       .serving = true};
    return d;
}

/* n's set, made if new. Any thread. NULL when out of memory. */
static rlock__direct *set_of(rlock__direct_cluster *dc, rlock__cnode *n)
{
    rlock__direct *d = NULL;
    pthread_mutex_lock(&dc->mu);
    for (size_t i = 0; i < dc->count && d == NULL; i++)
        if (dc->sets[i].node == n)
            d = dc->sets[i].direct;
    if (d == NULL)
        d = add(dc, n);
    pthread_mutex_unlock(&dc->mu);
    return d;
}

/* Sends r through the I/O thread, by deadline_ms (its answer, if the
 * direct round trip got one, is followed first: run_task in request.c).
 * Returns its status; status itself when the deadline has passed. */
static int through_io_thread(rlock__req *r, int64_t deadline_ms, int status)
{
    int64_t left = deadline_ms - rlock__now_ms();
    if (left <= 0) {
        free(r->answer);
        r->answer = NULL;
        return status;
    }
    return rlock__req_call(r, left);
}

/* Runs r on an idle caller-thread connection to the master of r's slot
 * (see the design note): returns true with *rc set, or false when the I/O
 * thread should take r from the start. A user thread, in cluster mode. */
bool rlock__direct_cluster_call(rlock__direct_cluster *dc, rlock__req *r,
                                int64_t timeout_ms, int *rc)
{
    if (dc == NULL)
        return false;
    int slot = rlock__route_slot(r);
    rlock__cnode *n =
        slot >= 0 ? rlock__cluster_owner(dc->client->cluster, slot) : NULL;
    rlock__direct *d = n != NULL ? set_of(dc, n) : NULL;
    if (d == NULL)
        return false;
    int64_t deadline = rlock__now_ms() + timeout_ms;
    r->unsent = false;
    if (!rlock__direct_call(d, r, timeout_ms, rc))
        return false; /* every slot of n busy */
    if (r->answer != NULL) {
        r->node = n; /* a MOVED that names no host means n's */
        *rc = through_io_thread(r, deadline, *rc);
    } else if (*rc == RLOCK_ECONN &&
               (r->unsent ||
                (r->kind != RLOCK__REPLY_ACQUIRE && !r->run_once))) {
        r->unsent = false;
        *rc = through_io_thread(r, deadline, *rc);
    }
    return true;
}

/* The table changed: sets whose node serves no slot any more are retired.
 * I/O thread (io/cluster.h's on_change). */
void rlock__direct_cluster_changed(rlock__direct_cluster *dc)
{
    if (dc == NULL)
        return;
    rlock_client *c = dc->client;
    pthread_mutex_lock(&dc->mu);
    for (size_t i = 0; i < dc->count; i++) {
        node_set *s = &dc->sets[i];
        bool serving = rlock__cluster_serves(c->cluster, s->node);
        if (s->serving && !serving) {
            rlock__direct_retire(s->direct);
            rlock__log(c, RLOCK_LOG_INFO,
                       "cluster: %s serves no slot any more: its "
                       "caller-thread connections close",
                       rlock__cnode_name(s->node));
        }
        s->serving = serving;
    }
    pthread_mutex_unlock(&dc->mu);
}

/* Makes dc, with no set yet. Returns 0 or RLOCK_ENOMEM. */
int rlock__direct_cluster_new(rlock__direct_cluster **out, rlock_client *c)
{
    rlock__direct_cluster *dc = rlock__calloc(1, sizeof(*dc));
    if (dc == NULL)
        return RLOCK_ENOMEM;
    dc->client = c;
    pthread_mutex_init(&dc->mu, NULL);
    *out = dc;
    return RLOCK_OK;
}

/* Stops watching every set's slots. I/O thread, at stop. */
void rlock__direct_cluster_shutdown(rlock__direct_cluster *dc)
{
    for (size_t i = 0; dc != NULL && i < dc->count; i++)
        rlock__direct_shutdown(dc->sets[i].direct);
}

/* Closes every set; after the I/O thread has stopped, before the cluster
 * (whose nodes' options the links borrow) is freed. NULL is ignored. */
void rlock__direct_cluster_free(rlock__direct_cluster *dc)
{
    if (dc == NULL)
        return;
    for (size_t i = 0; i < dc->count; i++)
        rlock__direct_free(dc->sets[i].direct);
    free(dc->sets);
    pthread_mutex_destroy(&dc->mu);
    free(dc);
}
