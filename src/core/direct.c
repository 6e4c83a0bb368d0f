/*
 * core/direct.c: round trips made on the calling thread (layer core: it runs
 * the core's requests over src/io's blocking links; the blocking driver,
 * api/lock_sync.c, tries it before the I/O thread).
 *
 * Handing every blocking call to the I/O thread costs two thread wake-ups
 * per round trip, which on a small machine doubles the time of an
 * uncontended lock+unlock. So a client also keeps a few blocking
 * connections ("slots"), each an rlock__link_sync (src/io/link.h: the
 * transport's connect, handshake and TLS, waited for with poll() on the
 * caller's thread). A blocking call that finds a slot idle takes it (a
 * try, never a wait) and does its round trip right there; one that finds
 * every slot busy goes through the I/O thread as before, where requests
 * from many threads share its connections and pipeline. The latch DEL
 * after an unlock is sent behind the reply on the same slot, and its reply
 * dropped when the slot next reads.
 *
 * Late replies. A reply that does not come within the command timeout
 * cannot simply be dropped: the script may still run, and an acquire that
 * then succeeds would leave a hold nobody knows about. The link keeps the
 * timed-out call's place (Redis answers in order): its reply is read
 * before any later one, by whoever reads the slot next, and an acquire's
 * goes to on_late_acquire, which gives back a hold it took
 * (rlock__req_give_back, as request.c does for an abandoned request). The
 * slot stays usable: its next user reads the late replies first, within
 * its own deadline. While it sits idle, the I/O thread watches its socket
 * and reads them as they come (rlock__link_sync_drain). A slot whose late
 * replies have not all come within the unlock latch's lifetime is closed
 * (a hold taken meanwhile then expires with its lease).
 *
 * Who has a slot. A slot's `state` word says whether it is held (by a user
 * thread for one round trip, or by the I/O thread for a drain) and whether
 * the I/O thread watches it. Both sides take a slot by compare-and-swap and
 * never wait for one: a user who finds it held tries the next; the I/O
 * thread, woken for a slot a user holds, stops watching it (clearing
 * WATCHED in the same word) and leaves the late replies to that user, who
 * asks for a watch again when it leaves if some are still owed. Leaving and
 * giving up the watch are swaps of the same word, so whichever comes second
 * sees the other, and a watch is never lost between them.
 *
 * The watch is on a duplicate of the link's socket, owned by the I/O
 * thread: a user may close the link at any time (a broken connection),
 * and libev must never watch a descriptor closed or reused under it. A user
 * closing a link shuts its socket down, which wakes a watch on it.
 *
 * Where the links go. A client's set of slots goes to its server (in
 * Sentinel mode: wherever the master is now, and a link made for an older
 * master is closed before use). In cluster mode there is one set per
 * master node (core/direct_cluster.c), made by rlock__direct_new_node: its
 * links go to that node, and a cluster's answer that the request belongs
 * elsewhere (MOVED, ASK, TRYAGAIN, ...) is not decoded but kept in
 * r->answer for the I/O thread to follow. When the node leaves the slot
 * table its idle links are closed and the others before their next use.
 */
#include "core/core.h"
#include "io/master.h"
#include "io/link.h"
#include "proto/cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Why a slot whose late replies are overdue was closed, for its reconnect. */
static const char overdue[] =
    "closed: a late reply did not come within the unlock latch's lifetime";

enum {
    SLOT_HELD = 1u,    /* a user thread or the I/O thread has the slot */
    SLOT_WATCHED = 2u, /* the I/O thread watches it, or is asked to */
};

typedef struct slot {
    atomic_uint state; /* SLOT_* */
    rlock__direct *direct;
    /* the holder's */
    rlock__link_sync *link; /* NULL: not connected */
    unsigned gen;           /* counts links: tells a new one from a watched */
    uint64_t master_gen;    /* the server's generation the link went to
                               (server_gen) */
    int64_t used_at_ms;     /* the last round trip's start */
    int64_t late_since_ms;  /* 0, or since when late replies are owed */
    const char *closed_why; /* why the last link closed (NULL: none yet):
                               the next connect is a reconnect */
    int replicas; /* the master's, for WAIT (core/sync.c); -1: not known */
    /* the I/O thread's */
    rlock__fdwatch *watch; /* on watch_fd */
    int watch_fd;          /* a duplicate of link gen watch_gen's socket */
    unsigned watch_gen;
    rlock__timer *expiry; /* the late replies are overdue */
    rlock__task watch_task;
} slot;

struct rlock__direct {
    rlock_client *client;
    /* a cluster node's set: how to reach it (NULL: the client's server),
     * and how many times it left the slot table */
    const rlock__link_opts *node;
    atomic_uint departures;
    char to[RLOCK__HOST_MAX + 16]; /* " to host:port" or "", for logs */
    atomic_uint next; /* where the next caller starts looking */
    int n;
    slot slots[];
};

/* Why a cluster node's links are closed when it left the table. */
static const char departed[] =
    "closed: its node serves no slot any more (cluster)";
static const char sentinel_moved[] = "closed: the master moved (Sentinel)";

/* The generation of the server d's links go to: a link made for an older
 * one is closed before use. Any thread. */
static uint64_t server_gen(rlock__direct *d)
{
    if (d->node != NULL)
        return atomic_load_explicit(&d->departures, memory_order_acquire);
    return rlock__master_gen(d->client->master);
}

/* ------------------------------------------------------------- having one */

/* Takes s if nobody has it. Returns true when taken. Any thread. */
static bool take(slot *s)
{
    unsigned old = atomic_load_explicit(&s->state, memory_order_relaxed);
    while ((old & SLOT_HELD) == 0)
        if (atomic_compare_exchange_weak_explicit(&s->state, &old,
                                                  old | SLOT_HELD,
                                                  memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* A user thread leaves s, asking the I/O thread to watch it when late
 * replies are owed and nobody watches it yet. */
static void leave(slot *s)
{
    bool owed = s->late_since_ms != 0;
    unsigned old = atomic_load_explicit(&s->state, memory_order_relaxed);
    unsigned next;
    bool ask;
    do {
        ask = owed && (old & SLOT_WATCHED) == 0;
        next = (old & ~SLOT_HELD) | (ask ? SLOT_WATCHED : 0u);
    } while (!atomic_compare_exchange_weak_explicit(&s->state, &old, next,
                                                    memory_order_release,
                                                    memory_order_relaxed));
    /* only the one who set WATCHED submits: one task in flight at most */
    if (ask)
        rlock__loop_submit(s->direct->client->loop, &s->watch_task);
}

/* Closes s's link: owed late replies are settled with NULL (a late acquire
 * then gives nothing back: its hold expires with its lease); why (a static
 * string) is told when it reconnects. The holder. */
static void close_slot(slot *s, const char *why)
{
    if (s->link != NULL)
        s->closed_why = why;
    int fd = rlock__link_sync_fd(s->link);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR); /* wakes a watch on its duplicate */
    rlock__link_sync_free(s->link);
    s->link = NULL;
    s->late_since_ms = 0;
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
    if (reply != NULL &&
        rlock__reply_acquire(reply, &ttl, fenced ? &token : NULL) == 1)
        rlock__req_give_back(r);
    rlock__req_unref(r);
}

/* ---------------------------------------------------------- the watch */

/* Stops watching s. I/O thread. */
static void unwatch(slot *s)
{
    rlock__timer_stop(s->expiry);
    rlock__fdwatch_stop(s->watch);
    rlock__fdwatch_free(s->watch);
    s->watch = NULL;
    if (s->watch_fd >= 0)
        close(s->watch_fd);
    s->watch_fd = -1;
}

static void visit(slot *s);

static void on_watch_event(void *arg)
{
    visit(arg);
}

/* Watches the socket of s's link, and the time its late replies are due
 * by. I/O thread, holding s. Returns 0 or a negative code. */
static int watch(slot *s)
{
    rlock_client *c = s->direct->client;
    if (s->watch_fd >= 0 && s->watch_gen != s->gen)
        unwatch(s); /* the socket of a link gone since */
    if (s->watch_fd < 0) {
        int fd = fcntl(rlock__link_sync_fd(s->link), F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return RLOCK_ECONN;
        s->watch = rlock__fdwatch_new(c->loop, fd, on_watch_event, s);
        if (s->watch == NULL) {
            close(fd);
            return RLOCK_ENOMEM;
        }
        s->watch_fd = fd;
        s->watch_gen = s->gen;
        rlock__fdwatch_start(s->watch);
    }
    int64_t left = s->late_since_ms + c->latch_ms - rlock__now_ms();
    rlock__timer_start(s->expiry, left > 0 ? left : 0, 0);
    return RLOCK_OK;
}

/* Reads the late replies that came to s, idle; closes it when they are
 * overdue. Returns true while some are still owed. I/O thread, holding s. */
static bool look_after(slot *s)
{
    if (s->link == NULL || s->late_since_ms == 0)
        return false;
    if (rlock__now_ms() - s->late_since_ms >= s->direct->client->latch_ms) {
        close_slot(s, overdue);
        return false;
    }
    int owed = rlock__link_sync_drain(s->link);
    if (owed < 0) {
        close_slot(s, "lost while a late reply was owed");
        return false;
    }
    if (owed == 0)
        s->late_since_ms = 0;
    return owed > 0;
}

/* Looks after s when its socket is readable, its late replies are overdue,
 * or a user left it with late replies owed. I/O thread. */
static void visit(slot *s)
{
    unsigned old = atomic_load_explicit(&s->state, memory_order_relaxed);
    for (;;) {
        if (old & SLOT_HELD) {
            /* a user reads them; it asks again on leaving if it must */
            if (atomic_compare_exchange_weak_explicit(
                    &s->state, &old, old & ~SLOT_WATCHED,
                    memory_order_acq_rel, memory_order_relaxed)) {
                unwatch(s);
                return;
            }
        } else if (atomic_compare_exchange_weak_explicit(
                       &s->state, &old, old | SLOT_HELD,
                       memory_order_acquire, memory_order_relaxed)) {
            break;
        }
    }
    bool owed = look_after(s);
    if (owed && watch(s) != 0) {
        close_slot(s, "closed: its socket could not be watched");
        owed = false;
    }
    if (!owed)
        unwatch(s);
    atomic_fetch_and_explicit(&s->state,
                              owed ? ~SLOT_HELD : ~(SLOT_HELD | SLOT_WATCHED),
                              memory_order_release);
}

static void run_watch(rlock__task *t, int status)
{
    if (status != 0)
        return; /* the client is closing: the slot goes with it */
    visit((slot *)((char *)t - offsetof(slot, watch_task)));
}

/* ------------------------------------------------------------ round trip */

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
        close_slot(s, overdue); /* see the design notes */
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
        close_slot(s, "closed by the server (a restart, CLIENT KILL or an "
                      "idle timeout)");
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
        close_slot(s, "lost during a call");
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
static int round_trip(slot *s, rlock__req *r, int64_t timeout_ms)
{
    int64_t now = rlock__now_ms(), deadline = now + timeout_ms;
    rlock__direct *d = s->direct;
    rlock__master *master = d->client->master;
    if (s->link != NULL && s->master_gen != server_gen(d))
        close_slot(s, d->node != NULL ? departed : sentinel_moved);
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
        /* the script may still run: see the design notes */
        if (s->late_since_ms == 0)
            s->late_since_ms = rlock__now_ms();
        return rc;
    }
    if (rc != 0) {
        bool broken = rlock__link_sync_broken(s->link);
        if (broken) {
            close_slot(s, "lost during a call");
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
        close_slot(s, sentinel_moved);
        return RLOCK_ECONN;
    }
    rlock__req_decode(r, reply);
    rlock__link_reply_free(reply);
    if (r->status == RLOCK_EAUTH) {
        /* the password changed: AUTH again next time */
        close_slot(s, "closed to authenticate again");
        return r->status;
    }
    if (rlock__sync_wanted(r))
        wait_for_replicas(s, r);
    if (r->status == 0 && r->latch_del != NULL && s->link != NULL &&
        r->value != RLOCK__UNLOCK_NOT_HELD) {
        /* behind the reply; out of memory, the latch expires by itself */
        const char *argv[2] = {"DEL", r->latch_del};
        if (rlock__link_sync_send(s->link, 2, argv, NULL) == RLOCK_ECONN)
            close_slot(s, "lost during a call");
    }
    return r->status;
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
        if (!take(s))
            continue;
        *rc = round_trip(s, r, timeout_ms);
        leave(s);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------- lifecycle */

/* Makes n slots (none connected yet) whose links go to c's server.
 * Returns 0 or RLOCK_ENOMEM. */
int rlock__direct_new(rlock__direct **out, rlock_client *c, int n)
{
    return rlock__direct_new_node(out, c, n, NULL, NULL);
}

/* Makes n slots whose links go to the cluster node that node says how to
 * reach (borrowed: it must outlive the slots), named name ("host:port",
 * copied) in log lines; node NULL: c's server. Any thread. Returns 0 or
 * RLOCK_ENOMEM. */
int rlock__direct_new_node(rlock__direct **out, rlock_client *c, int n,
                           const rlock__link_opts *node, const char *name)
{
    rlock__direct *d = rlock__calloc(1, sizeof(*d) + sizeof(slot) * (size_t)n);
    if (d == NULL)
        return RLOCK_ENOMEM;
    d->client = c;
    d->node = node;
    atomic_init(&d->departures, 0);
    if (node != NULL && name != NULL)
        snprintf(d->to, sizeof(d->to), " to %s", name);
    d->n = n;
    atomic_init(&d->next, 0);
    for (int i = 0; i < n; i++) {
        slot *s = &d->slots[i];
        atomic_init(&s->state, 0);
        s->direct = d;
        s->watch_fd = -1;
        s->replicas = -1;
        s->watch_task.run = run_watch;
        s->expiry = rlock__timer_new(c->loop, on_watch_event, s);
        if (s->expiry == NULL) {
            d->n = i + 1;
            rlock__direct_free(d);
            return RLOCK_ENOMEM;
        }
    }
    *out = d;
    return RLOCK_OK;
}

/* d's cluster node left the slot table: a link made before is closed,
 * an idle one now, one in use before its next call (a reply that comes
 * meanwhile is the node's while it still served the slot, else a MOVED).
 * Late replies still owed on a closed link are given up (a hold one took
 * expires with its lease). I/O thread. */
void rlock__direct_retire(rlock__direct *d)
{
    atomic_fetch_add_explicit(&d->departures, 1, memory_order_acq_rel);
    for (int i = 0; i < d->n; i++) {
        slot *s = &d->slots[i];
        if (!take(s))
            continue; /* its user closes it before its next call */
        close_slot(s, departed); /* a watch on it wakes and stops */
        atomic_fetch_and_explicit(&s->state, ~SLOT_HELD,
                                  memory_order_release);
    }
}

/* Stops watching the slots. I/O thread, at stop. */
void rlock__direct_shutdown(rlock__direct *d)
{
    for (int i = 0; d != NULL && i < d->n; i++)
        unwatch(&d->slots[i]);
}

/* Closes every slot; after the I/O thread has stopped. NULL is ignored. */
void rlock__direct_free(rlock__direct *d)
{
    if (d == NULL)
        return;
    for (int i = 0; i < d->n; i++) {
        slot *s = &d->slots[i];
        rlock__fdwatch_free(s->watch); /* stopped with the loop */
        if (s->watch_fd >= 0)
            close(s->watch_fd);
        rlock__timer_free(s->expiry);
        rlock__link_sync_free(s->link);
    }
    free(d);
}
