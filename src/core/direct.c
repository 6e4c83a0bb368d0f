/*
 * core/direct.c: a client's round trips on the calling thread, and the
 * set of connections ("slots") they borrow (layer core: it keeps src/io's
 * blocking links; the blocking driver, api/lock_sync.c, tries it before
 * the I/O thread). Here: who has a slot, the I/O thread's watch over idle
 * ones, and making, retiring and freeing a set. What a caller does with
 * the slot it took is core/direct_round_trip.c's. The two files split
 * where a slot changes hands: everything here may race with another
 * thread for a slot (the state word below), everything there runs on a
 * slot its caller alone holds.
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
 * goes to on_late_acquire (core/direct_round_trip.c), which gives back a
 * hold it took (rlock__req_give_back, as request.c does for an abandoned
 * request). The slot stays usable: its next user reads the late replies
 * first, within its own deadline. While it sits idle, the I/O thread
 * watches its socket and reads them as they come (rlock__link_sync_drain).
 * A slot whose late replies have not all come within the unlock latch's
 * lifetime is closed (a hold taken meanwhile then expires with its lease).
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
 * A set's links go to the client's server, or to one cluster node
 * (rlock__direct_new_node; core/direct_round_trip.c says where exactly).
 * When the node leaves the slot table its idle links are closed here
 * (rlock__direct_retire) and the others before their next use.
 */
#include "core/direct_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Why a slot whose late replies are overdue was closed, for its reconnect. */
const char rlock__direct_overdue[] =
    "closed: a late reply did not come within the unlock latch's lifetime";

/* Why a cluster node's links are closed when it left the table. */
const char rlock__direct_departed[] =
    "closed: its node serves no slot any more (cluster)";

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
void rlock__direct_close_slot(slot *s, const char *why)
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
        rlock__direct_close_slot(s, rlock__direct_overdue);
        return false;
    }
    int owed = rlock__link_sync_drain(s->link);
    if (owed < 0) {
        rlock__direct_close_slot(s, "lost while a late reply was owed");
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
        rlock__direct_close_slot(s, "closed: its socket could not be watched");
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

/* ------------------------------------------------------------ borrowing */

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
        *rc = rlock__direct_round_trip(s, r, timeout_ms);
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
        /* a watch on it wakes and stops */
        rlock__direct_close_slot(s, rlock__direct_departed);
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
