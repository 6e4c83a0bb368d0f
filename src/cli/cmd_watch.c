/*
 * cmd_watch.c: "rlock watch NAME...": prints lock and unlock events as they
 * happen, one timestamped line each, until SIGINT or SIGTERM (exit 0).
 *
 * Unlock events come from the lock channels every lock kind publishes on
 * (REDISSON-PROTOCOL.md): "redisson_lock__channel:{N}" ("0" wakes one
 * waiter, "1" all), "redisson_rwlock:{N}" (read-write: "0" after the last
 * reader, "1" after a writer) and a fair lock's per-thread channels
 * "redisson_lock__channel:{N}:<owner>" (pattern subscription), whose
 * suffix names the thread that is next in line.
 *
 * Lock events publish nothing, so they come from keyspace notifications
 * ("__keyspace@<db>__:N"), when the server sends them: a hash event
 * (hincrby, hset, hdel) makes us read the lock's holders (lock_state.c)
 * and print what changed since the last read: locked by, re-entered by,
 * released once by, released by. "expired" means the lease ran out with
 * no unlock. A final unlock's "del" prints how long the holder watch saw
 * take it held it ("held by ... for N ms"); its unlock message follows.
 * Lines about a lock end in "; N waiting" while anyone waits for it: the
 * client connections subscribed to its channels (one per waiting process;
 * watch's own subscriptions are not counted) plus a fair lock's queue and
 * rlock's queue of an RLock behind its head. Notifications are off by
 * default in Redis; watch says
 * so once on stderr and shows unlock events only, unless
 * --enable-notifications turned them on (CONFIG SET, server-wide).
 *
 * The subscriber connection is read by rlock_admin_listen_many()
 * (admin.h), whose ppoll() mask lets SIGINT and SIGTERM in only while it
 * waits, so a signal can never be lost between checking the flag and
 * blocking.
 *
 * A cluster. A lock's unlock messages and keyspace events are
 * on the master serving its slot (with sharded pub/sub, SPUBLISH reaches
 * that node's SSUBSCRIBE clients only, and keyspace notifications never
 * leave their node), so each NAME gets a subscriber of its own on that
 * master, subscribed to its channels as the client's waiters are
 * (rlock_admin_subscribe_lock), and its keyspace notifications are
 * checked (and turned on) there. A slot that moves while watched ends the
 * watch (exit 69): the server says so to a sharded subscriber, the
 * client's table to a plain one (Redis 6.2, mode off: admin.h), and a
 * watch on the old master would hear no more of the lock's events. A fair lock's per-thread channels are heard by
 * pattern, which sharded pub/sub has no form of: on a sharded cluster its
 * unlocks show as the keyspace events' "released by" only.
 *
 * With --kind, every NAME is a semaphore, a permit semaphore or a
 * count-down latch (sync_state.c: the key alone cannot say which), and
 * watch follows its channel only: a semaphore's "redisson_sc:{N}", whose
 * messages carry the permits available after a release (or a try-set, an
 * add), and a latch's "redisson_countdownlatch__channel__{N}" ("0": open,
 * "1": a count set, or the latch deleted). Each message is followed by a
 * read of the state, for the waiting count (and a permit semaphore's held
 * permits). Acquires and count-downs that leave the latch closed publish
 * nothing, so they show only in the next line's numbers.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char watch_help[] =
    "Usage: rlock watch [--enable-notifications] [--url URL] [--config "
    "FILE]\n"
    "                   NAME...\n"
    "\n"
    "Prints, one line each with a timestamp, the lock and unlock events of\n"
    "each lock NAME as they happen, until interrupted (SIGINT or SIGTERM:\n"
    "exit status 0). It starts with one 'watching' line per NAME giving\n"
    "its current state.\n"
    "\n"
    "Unlock events come from the locks' unlock channels. Lock events\n"
    "(locked by, re-entered by, released once by, held by ... for N ms,\n"
    "expired) need Redis's keyspace notifications (notify-keyspace-events\n"
    "with K and h, g, x, or K and A); they are off by default, and then\n"
    "watch says so once on stderr and prints unlock events only.\n"
    "\n"
    "A line ends in '; N waiting' while anyone waits for the lock: client\n"
    "connections subscribed to its unlock channel (one per waiting\n"
    "process), plus the threads in a fair lock's queue and those in\n"
    "rlock's queue of an RLock behind its head.\n"
    "\n"
    "On a Redis Cluster each NAME is watched on the master serving its\n"
    "slot, where its unlock messages (SPUBLISH; PUBLISH before Redis 7.0)\n"
    "and keyspace events are; --enable-notifications turns them on on\n"
    "those masters. When a watched lock's slot moves to another master,\n"
    "watch says so and exits 69: start it again to follow the lock.\n"
    "\n"
    "Options:\n"
    "  --enable-notifications  turn the missing keyspace notification\n"
    "                    flags on with CONFIG SET (this changes the server's\n"
    "                    setting for every client, and stays after watch\n"
    "                    exits)\n"
    "  --kind KIND       watch every NAME as a KIND of synchronizer\n"
    "                    (semaphore, permit-semaphore or latch; see 'rlock\n"
    "                    info --help'): prints each message of its channel\n"
    "                    (a semaphore's release with the permits available,\n"
    "                    a latch opening or getting a count) with its state\n"
    "                    then. Without it, a string key holding a number is\n"
    "                    refused (status 64) rather than guessed.\n"
    "  --url URL, --config FILE, -h/--help: see 'rlock --help'\n"
    "\n"
    "Exit status: 0 when interrupted; 69 when the connection is lost;\n"
    "otherwise as 'rlock --help' lists.\n";

enum { OPT_ENABLE = CLI_OPT_FIRST_OWN };

typedef struct watched {
    const char *name;
    char *lock_channel;   /* redisson_lock__channel:{N} */
    char *rw_channel;     /* redisson_rwlock:{N} */
    char *fair_pattern;   /* redisson_lock__channel:{N}:*, glob-escaped */
    char *keyspace;       /* __keyspace@<db>__:N */
    bool notified;        /* keyspace notifications are on for it */
    char node[80];        /* a cluster: the master serving it */
    cli_lock_state known; /* the holders last printed */
    cli_sync_kind sync;   /* --kind: a synchronizer's, else CLI_SYNC_NONE */
    char *sync_channel;   /* then its channel */
} watched;

static volatile sig_atomic_t stop_requested;
static int output_errno; /* set when stdout could not be written */

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Prints "<time> <name> <message>" and flushes it. */
static void emit(const char *name, const char *fmt, ...)
{
    struct timespec ts;
    struct tm tm;
    char when[40], zone[8];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof(zone), "%z", &tm);
    printf("%s.%03ld%s %s ", when, ts.tv_nsec / 1000000, zone, name);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    if (fflush(stdout) != 0 || ferror(stdout)) {
        output_errno = errno ? errno : EIO;
        stop_requested = 1; /* nobody reads us any more */
    }
}

/* Returns a malloc'd copy of s with Redis glob characters escaped. */
static char *glob_escape(const char *s)
{
    char *out = malloc(strlen(s) * 2 + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (; *s; s++) {
        if (strchr("*?[]\\^", *s) != NULL)
            *o++ = '\\';
        *o++ = *s;
    }
    *o = '\0';
    return out;
}

/* Fills w's channel names (sync: its --kind); returns false when out of
 * memory. */
static bool watched_init(watched *w, const char *name, int db,
                         cli_sync_kind sync)
{
    memset(w, 0, sizeof(*w));
    w->name = name;
    w->sync = sync;
    rlock_admin_names names;
    if (rlock_admin_names_of(name, &names) != 0)
        return false;
    w->lock_channel = names.channel; /* kept; the rest is freed */
    w->rw_channel = names.rw_channel;
    names.channel = names.rw_channel = NULL;
    if (sync != CLI_SYNC_NONE)
        w->sync_channel = strdup(cli_sync_channel(sync, &names));
    rlock_admin_names_clear(&names);
    if (sync != CLI_SYNC_NONE && w->sync_channel == NULL)
        return false;
    char *escaped = glob_escape(w->lock_channel);
    size_t n = (escaped ? strlen(escaped) : 0) + 3;
    w->fair_pattern = escaped ? malloc(n) : NULL;
    if (w->fair_pattern != NULL)
        snprintf(w->fair_pattern, n, "%s:*", escaped);
    free(escaped);
    n = strlen(name) + 40;
    w->keyspace = malloc(n);
    if (w->keyspace != NULL)
        snprintf(w->keyspace, n, "__keyspace@%d__:%s", db, name);
    return w->fair_pattern != NULL && w->keyspace != NULL;
}

static void watched_clear(watched *w)
{
    free(w->lock_channel);
    free(w->rw_channel);
    free(w->fair_pattern);
    free(w->keyspace);
    free(w->sync_channel);
    cli_lock_clear(&w->known);
}

/* Monotonic ms, for how long a holder held. */
static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Who waits for the lock st describes: the connections on its channels
 * but watch's own (it listens on the lock and read-write channels), a fair
 * lock's queue, and those in rlock's queue of an RLock behind its head
 * (the head listens on the lock's channel). */
static long long waiting_of(const cli_lock_state *st)
{
    long long lock = st->lock_subscribers > 0 ? st->lock_subscribers - 1 : 0;
    long long rw = st->rw_subscribers > 0 ? st->rw_subscribers - 1 : 0;
    long long behind = st->in_turn > 1 ? st->in_turn - 1 : 0;
    return lock + rw + (long long)st->nqueue + behind;
}

/* "; N waiting" when anyone waits, else "" (buf holds it). */
static const char *waiting_text(const cli_lock_state *st, char *buf,
                                size_t len)
{
    long long n = waiting_of(st);
    if (n <= 0)
        return "";
    snprintf(buf, len, "; %lld waiting", n);
    return buf;
}

/* "read-" or "write-" for a read-write lock's holder, else "". */
static const char *side(const cli_lock_state *st, const cli_holder *h)
{
    if (st->kind != CLI_KIND_READ_WRITE)
        return "";
    return h->write ? "write-" : "read-";
}

static const cli_holder *find_holder(const cli_lock_state *st,
                                     const char *field)
{
    for (size_t i = 0; i < st->nholders; i++)
        if (strcmp(st->holders[i].field, field) == 0)
            return &st->holders[i];
    return NULL;
}

/* Prints the state a watch starts from. */
static void print_start(const watched *w)
{
    const cli_lock_state *st = &w->known;
    if (st->kind == CLI_KIND_FREE) {
        emit(w->name, "watching: free");
        return;
    }
    if (st->kind == CLI_KIND_NOT_A_LOCK) {
        emit(w->name, "watching: not a lock (a Redis %s)", st->redis_type);
        return;
    }
    char waits[40];
    for (size_t i = 0; i < st->nholders; i++) {
        const cli_holder *h = &st->holders[i];
        emit(w->name, "watching: %s lock %slocked by %s:%llu (holds %lld)%s",
             cli_kind_word(st->kind), side(st, h), h->client,
             (unsigned long long)h->thread, h->count,
             waiting_text(st, waits, sizeof(waits)));
    }
}

/* Prints how long each holder watch saw take the lock held it (before a
 * final unlock's message, or an expiry). */
static void print_held(const watched *w)
{
    long long now = mono_ms();
    for (size_t i = 0; i < w->known.nholders; i++) {
        const cli_holder *h = &w->known.holders[i];
        if (h->seen_ms > 0)
            emit(w->name, "%sheld by %s:%llu for %lld ms",
                 side(&w->known, h), h->client,
                 (unsigned long long)h->thread, now - h->seen_ms);
    }
}

/* Reads w's holders again and prints what changed. Returns 0 or an exit
 * status. */
static int refresh(rlock_admin_conn *query, watched *w)
{
    cli_lock_state now;
    int st = cli_lock_read(query, w->name, &now);
    if (st != 0)
        return st;
    if (now.kind == CLI_KIND_FREE || now.kind == CLI_KIND_NOT_A_LOCK) {
        /* gone already: its unlock or expiry event says so */
        cli_lock_clear(&w->known);
        w->known = now;
        return CLI_OK;
    }
    char waits[40];
    const char *wt = waiting_text(&now, waits, sizeof(waits));
    long long at = mono_ms();
    for (size_t i = 0; i < now.nholders; i++) {
        cli_holder *h = &now.holders[i];
        const cli_holder *was = find_holder(&w->known, h->field);
        unsigned long long tid = (unsigned long long)h->thread;
        h->seen_ms = was != NULL ? was->seen_ms : at;
        if (was == NULL)
            emit(w->name, "%slocked by %s:%llu (holds %lld)%s", side(&now, h),
                 h->client, tid, h->count, wt);
        else if (h->count > was->count)
            emit(w->name, "%sre-entered by %s:%llu (holds %lld)%s",
                 side(&now, h), h->client, tid, h->count, wt);
        else if (h->count < was->count)
            emit(w->name, "%sreleased once by %s:%llu (holds %lld)%s",
                 side(&now, h), h->client, tid, h->count, wt);
    }
    for (size_t i = 0; i < w->known.nholders; i++) {
        const cli_holder *h = &w->known.holders[i];
        if (find_holder(&now, h->field) != NULL)
            continue;
        if (h->seen_ms > 0)
            emit(w->name, "%sreleased by %s:%llu after %lld ms%s",
                 side(&w->known, h), h->client, (unsigned long long)h->thread,
                 at - h->seen_ms, wt);
        else
            emit(w->name, "%sreleased by %s:%llu%s", side(&w->known, h),
                 h->client, (unsigned long long)h->thread, wt);
    }
    cli_lock_clear(&w->known);
    w->known = now;
    return CLI_OK;
}

/* Forgets w's holders: the lock is free. */
static void forget(watched *w)
{
    cli_lock_clear(&w->known);
    w->known.kind = CLI_KIND_FREE;
}

/* What the subscriber's messages are handled with. */
typedef struct watch_ctx {
    rlock_admin_conn *query;
    watched *ws;
    size_t n;
    bool keyspace;
    int status; /* an exit status that ended the watch, or 0 */
} watch_ctx;

/* Reads who waits for w's lock now into buf as waiting_text() writes it
 * ("" when nobody), and whether its waiters queue in rlock's queue of an
 * RLock rather than in a fair lock's (in_rlock_queue, may be NULL): the
 * two tell their next waiter on the same per-waiter channels. Returns 0 or
 * an exit status. */
static int waiting_now(rlock_admin_conn *query, const watched *w, char *buf,
                       size_t len, bool *in_rlock_queue)
{
    cli_lock_state now;
    buf[0] = '\0';
    int st = cli_lock_read(query, w->name, &now);
    if (st != 0)
        return st;
    if (in_rlock_queue != NULL)
        *in_rlock_queue = now.queued == 0 && now.in_turn > 0;
    if (waiting_text(&now, buf, len)[0] == '\0')
        buf[0] = '\0';
    cli_lock_clear(&now);
    return CLI_OK;
}

/* ---------------------------------------------- semaphores and latches */

/* Reads the synchronizer w watches and prints "<what>: <its state>".
 * Returns 0 or an exit status (a key of another type: CLI_FAILURE). */
static int print_sync(rlock_admin_conn *query, const watched *w,
                      const char *what)
{
    cli_sync_state st;
    int status = cli_sync_read(query, w->name, w->sync, &st);
    if (status == CLI_OK)
        status = cli_sync_check("watch", w->name, &st);
    if (status != CLI_OK) {
        cli_sync_clear(&st);
        return status;
    }
    char held[40] = "", waits[40] = "";
    if (w->sync == CLI_SYNC_PERMIT_SEMAPHORE)
        snprintf(held, sizeof(held), ", %zu held", st.npermits);
    if (st.waiting > 1) /* watch's own subscription is not a waiter */
        snprintf(waits, sizeof(waits), "; %lld waiting", st.waiting - 1);
    if (w->sync == CLI_SYNC_LATCH && st.value <= 0)
        emit(w->name, "%s: latch open%s", what, waits);
    else if (w->sync == CLI_SYNC_LATCH)
        emit(w->name, "%s: latch count %lld%s", what, st.value, waits);
    else
        emit(w->name, "%s: %s, %lld permits available%s%s", what,
             cli_sync_kind_word(w->sync), st.value, held, waits);
    cli_sync_clear(&st);
    return CLI_OK;
}

/* Handles a message on w's synchronizer channel: says what Redisson
 * meant by it, then the state now. */
static int on_sync_message(rlock_admin_conn *query, const watched *w,
                           const char *payload)
{
    char what[80];
    if (w->sync == CLI_SYNC_LATCH)
        snprintf(what, sizeof(what), "%s",
                 strcmp(payload, "0") == 0   ? "opened (count reached zero)"
                 : strcmp(payload, "1") == 0 ? "count set, or latch deleted"
                                             : "message");
    else
        snprintf(what, sizeof(what), "released (message: %.20s available)",
                 payload);
    return print_sync(query, w, what);
}

/* Handles one message of the subscriber. Returns 0 or an exit status. */
static int on_message(rlock_admin_conn *query, watched *ws, size_t n,
                      const char *pattern, const char *channel,
                      const char *payload, bool keyspace)
{
    char wt[40];
    for (size_t i = 0; i < n; i++) {
        watched *w = &ws[i];
        if (w->sync != CLI_SYNC_NONE) {
            if (pattern == NULL && strcmp(channel, w->sync_channel) == 0)
                return on_sync_message(query, w, payload);
            continue;
        }
        bool unlock = pattern != NULL
                          ? strcmp(pattern, w->fair_pattern) == 0
                          : strcmp(channel, w->lock_channel) == 0 ||
                                strcmp(channel, w->rw_channel) == 0;
        bool rlock_turn = false;
        int st = unlock ? waiting_now(query, w, wt, sizeof(wt), &rlock_turn)
                        : CLI_OK;
        if (st != 0)
            return st;
        if (pattern != NULL) {
            if (!unlock)
                continue;
            const char *next = channel + strlen(w->lock_channel) + 1;
            if (rlock_turn) { /* not an unlock: the queue moved on */
                emit(w->name, "turn of %s (rlock's queue)%s", next, wt);
                continue;
            }
            emit(w->name, "unlocked (fair lock; next in line: %s)%s", next,
                 wt);
            forget(w);
        } else if (strcmp(channel, w->lock_channel) == 0) {
            if (strcmp(payload, "0") == 0)
                emit(w->name, "unlocked%s", wt);
            else if (strcmp(payload, "1") == 0)
                emit(w->name, "unlocked (every waiter woken)%s", wt);
            else
                emit(w->name, "message '%s' on %s", payload, channel);
            forget(w);
        } else if (strcmp(channel, w->rw_channel) == 0) {
            emit(w->name, "unlocked (read-write lock, %s side)%s",
                 strcmp(payload, "1") == 0 ? "write" : "read", wt);
            forget(w);
        } else if (keyspace && w->notified &&
                   strcmp(channel, w->keyspace) == 0) {
            if (strcmp(payload, "expired") == 0) {
                print_held(w);
                emit(w->name, "expired (the lease ran out; no unlock was "
                              "published)");
                forget(w);
            } else if (strcmp(payload, "del") == 0) {
                print_held(w); /* the unlock message follows */
                forget(w);
            } else if (strncmp(payload, "h", 1) == 0) {
                return refresh(query, w); /* hincrby, hset, hdel... */
            }
        } else {
            continue;
        }
        return CLI_OK;
    }
    return CLI_OK;
}

/* Returns true when flags (notify-keyspace-events) include what watch
 * needs: keyspace events (K) for hash (h), generic (g) and expired (x)
 * commands, A meaning all classes. */
static bool has_flags(const char *flags)
{
    bool all = strchr(flags, 'A') != NULL;
    return strchr(flags, 'K') != NULL &&
           (all ||
            (strchr(flags, 'h') && strchr(flags, 'g') && strchr(flags, 'x')));
}

/* Checks (and with enable, turns on) keyspace notifications on query's
 * server (in a cluster, the node its last command went to). Returns true
 * when they are on. */
static bool keyspace_on(rlock_admin_conn *query, bool enable)
{
    const char *get[] = {"CONFIG", "GET", "notify-keyspace-events"};
    rlock_admin_reply *r = NULL;
    rlock_admin_command(query, 3, get, &r);
    char flags[64] = "";
    bool ok = r != NULL && r->type == RLOCK_ADMIN_ARRAY && r->elements == 2 &&
              r->element[1]->type == RLOCK_ADMIN_STRING;
    if (ok)
        snprintf(flags, sizeof(flags), "%s", r->element[1]->str);
    else
        cli_error("cannot read notify-keyspace-events (%s); showing "
                  "unlock events only",
                  r && r->type == RLOCK_ADMIN_ERROR ? r->str : "no answer");
    rlock_admin_reply_free(r);
    if (!ok)
        return false;
    if (has_flags(flags))
        return true;
    if (!enable) {
        cli_error("keyspace notifications are off on %s "
                  "(notify-keyspace-events=\"%s\"), so only unlock events "
                  "are shown; --enable-notifications turns them on",
                  rlock_admin_node(query)[0] ? rlock_admin_node(query)
                                             : "this server",
                  flags);
        return false;
    }
    char want[80];
    snprintf(want, sizeof(want), "%s", flags);
    size_t len = strlen(want);
    for (const char *c = strchr(flags, 'A') ? "K" : "Khgx"; *c; c++)
        if (strchr(want, *c) == NULL && len + 1 < sizeof(want)) {
            want[len++] = *c;
            want[len] = '\0';
        }
    const char *set[] = {"CONFIG", "SET", "notify-keyspace-events", want};
    r = NULL;
    rlock_admin_command(query, 4, set, &r);
    ok = r != NULL && r->type == RLOCK_ADMIN_STATUS;
    if (ok)
        cli_error("set notify-keyspace-events to \"%s\" (was \"%s\")%s%s",
                  want, flags, rlock_admin_node(query)[0] ? " on " : "",
                  rlock_admin_node(query));
    else
        cli_error("cannot turn on keyspace notifications (%s); showing "
                  "unlock events only",
                  r && r->type == RLOCK_ADMIN_ERROR ? r->str : "no answer");
    rlock_admin_reply_free(r);
    return ok;
}

/* Checks keyspace notifications (turning them on with enable) where each
 * lock of ws[0 .. n) lives: in a cluster on each lock's master (query
 * goes there by a command naming the lock; each node is asked once), else
 * once. Sets each lock's notified, and *any when one is. Returns 0 or an
 * exit status. */
static int check_notifications(rlock_admin_conn *query, watched *ws,
                               size_t n, bool cluster, bool enable,
                               bool *any)
{
    *any = false;
    for (size_t i = 0; i < n; i++) {
        if (!cluster) {
            ws[i].notified =
                i > 0 ? ws[0].notified : keyspace_on(query, enable);
            *any = *any || ws[i].notified;
            continue;
        }
        const char *exists[] = {"EXISTS", ws[i].name};
        rlock_admin_reply *r = NULL;
        int rc = rlock_admin_command(query, 2, exists, &r);
        rlock_admin_reply_free(r);
        if (rc != 0)
            return cli_conn_lost(query, rc);
        size_t same = i;
        for (size_t k = 0; k < i && same == i; k++)
            if (strcmp(ws[k].node, rlock_admin_node(query)) == 0)
                same = k;
        snprintf(ws[i].node, sizeof(ws[i].node), "%s",
                 rlock_admin_node(query));
        ws[i].notified =
            same < i ? ws[same].notified : keyspace_on(query, enable);
        *any = *any || ws[i].notified;
    }
    return CLI_OK;
}

/* Subscribes sub to every channel of ws[0 .. n). Returns 0 or an exit
 * status. */
static int subscribe_all(rlock_admin_conn *sub, watched *ws, size_t n)
{
    const char **locks = calloc(n * 2, sizeof(*locks));
    const char **channels = calloc(n, sizeof(*channels));
    const char **patterns = calloc(n, sizeof(*patterns));
    int st = CLI_OK;
    if (locks == NULL || channels == NULL || patterns == NULL) {
        cli_error("out of memory");
        st = CLI_SOFTWARE;
        goto out;
    }
    size_t k = 0;
    int rc;
    if (ws[0].sync != CLI_SYNC_NONE) {
        /* a synchronizer's one channel, subscribed as its waiters are */
        for (size_t i = 0; i < n; i++)
            locks[i] = ws[i].sync_channel;
        rc = rlock_admin_subscribe_lock(sub, n, locks, 0, channels, 0,
                                        patterns);
    } else {
        for (size_t i = 0; i < n; i++) {
            locks[2 * i] = ws[i].lock_channel;
            locks[2 * i + 1] = ws[i].rw_channel;
            if (ws[i].notified)
                channels[k++] = ws[i].keyspace;
            patterns[i] = ws[i].fair_pattern;
        }
        rc = rlock_admin_subscribe_lock(sub, n * 2, locks, k, channels, n,
                                        patterns);
    }
    if (rc == RLOCK_ESERVER) {
        cli_error("Redis refused to subscribe: %s", rlock_admin_error(sub));
        st = CLI_FAILURE;
    } else if (rc != 0) {
        st = cli_conn_lost(sub, rc);
    }
out:
    free(locks);
    free(channels);
    free(patterns);
    return st;
}

/* rlock_admin_listen()'s callback: handles a message, and stops the
 * listening (a positive return) when the watch must end. */
static int on_listen(void *arg, const char *pattern, const char *channel,
                     const char *payload)
{
    watch_ctx *wc = arg;
    wc->status = on_message(wc->query, wc->ws, wc->n, pattern, channel,
                            payload, wc->keyspace);
    return wc->status != 0 || output_errno != 0 || stop_requested ? 1 : 0;
}

/* Reads and handles messages of subs[0 .. nsubs) until a stop signal or
 * an error. */
static int watch_loop(rlock_admin_conn **subs, size_t nsubs, watch_ctx *wc,
                      const sigset_t *wait_mask)
{
    for (;;) {
        if (wc->status != 0)
            return wc->status;
        if (output_errno == EPIPE)
            return CLI_OK; /* the reader went away, as with "| head -1" */
        if (output_errno != 0) {
            cli_error("cannot write to standard output: %s",
                      strerror(output_errno));
            return CLI_FAILURE;
        }
        if (stop_requested)
            return CLI_OK;
        int rc = rlock_admin_listen_many(subs, nsubs, wait_mask, on_listen,
                                         wc);
        for (size_t i = 0; rc < 0 && i < nsubs; i++)
            if (rlock_admin_error(subs[i])[0] != '\0' || i + 1 == nsubs)
                return cli_conn_lost(subs[i], rc);
    }
}

int cli_cmd_watch(int argc, char **argv, cli_common *cm)
{
    static const cli_opt opts[] = {{"enable-notifications", OPT_ENABLE, false},
                                   {"kind", CLI_OPT_KIND, true},
                                   {NULL, 0, false}};
    bool enable = false;
    int kind = CLI_SYNC_NONE;
    const char **names = NULL;
    size_t n = 0;
    int st = cli_parse_names("watch", argc, argv, cm, opts, watch_help,
                             &enable, &kind, &names, &n);
    if (st != 0 || names == NULL)
        return st;

    /* SIGINT/SIGTERM are let in only inside rlock_admin_listen() */
    sigset_t stop_set, wait_mask;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, &wait_mask);
    sigdelset(&wait_mask, SIGINT);
    sigdelset(&wait_mask, SIGTERM);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock_admin_conn *query = NULL;
    watched *ws = calloc(n, sizeof(*ws));
    rlock_admin_conn **subs = calloc(n, sizeof(*subs));
    size_t ready = 0, nsubs = 0;
    if (ws == NULL || subs == NULL) {
        cli_error("out of memory");
        st = CLI_SOFTWARE;
    }
    if (st == 0)
        st = cli_connect(cm, &cfg, &c);
    if (st == 0)
        st = cli_open(c, cfg, &query);
    rlock_admin_server srv;
    bool described = st == 0 && rlock_admin_server_of(cfg, &srv) == 0;
    int db = described ? srv.database : 0;
    bool cluster = described && strstr(srv.text, "+cluster://") != NULL;
    for (; st == 0 && ready < n; ready++) {
        if (!watched_init(&ws[ready], names[ready], db,
                          (cli_sync_kind)kind)) {
            cli_error("out of memory");
            st = CLI_SOFTWARE;
        }
    }
    bool keyspace = false;
    if (st == 0 && kind == CLI_SYNC_NONE)
        st = check_notifications(query, ws, n, cluster, enable, &keyspace);
    /* a cluster's locks each on their master; one server's all at once */
    for (size_t i = 0; st == 0 && i < (cluster ? n : 1); i++) {
        st = cli_open(c, cfg, &subs[i]);
        if (st == 0) {
            nsubs++;
            st = subscribe_all(subs[i], &ws[i], cluster ? 1 : n);
        }
    }
    for (size_t i = 0; st == 0 && i < n; i++) {
        if (kind != CLI_SYNC_NONE) {
            st = print_sync(query, &ws[i], "watching");
            continue;
        }
        st = cli_lock_read(query, ws[i].name, &ws[i].known);
        if (st == 0)
            st = cli_sync_refuse_number(query, "watch", ws[i].name,
                                        &ws[i].known);
        if (st == 0)
            print_start(&ws[i]);
    }
    watch_ctx wc = {query, ws, n, keyspace, CLI_OK};
    if (st == 0)
        st = watch_loop(subs, nsubs, &wc, &wait_mask);

    for (size_t i = 0; i < ready; i++)
        watched_clear(&ws[i]);
    free(ws);
    for (size_t i = 0; i < nsubs; i++)
        rlock_admin_close(subs[i]);
    free(subs);
    rlock_admin_close(query);
    rlock_client_free(c);
    rlock_config_free(cfg);
    free(names);
    return st;
}
