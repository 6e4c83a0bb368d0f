/*
 * worker.c: safety_worker, one client process of the safety harness.
 *
 *   safety_worker --uri URI [--uri URI...] --store URI --process NAME
 *                 --kind lock|fair|rw|fenced|redlock --history FILE
 *                 [--threads N] [--names N] [--seconds S | --ops N]
 *                 [--lease-ms L] [--wait-ms W] [--hold-ms H] [--async]
 *                 [--queue on|off] [--sync-replicas N] [--seed N]
 *                 [--watchdog-ms W] [--fence-script FILE]
 *
 *   --uri        the server, as rlock_client_connect() takes it; Redlock
 *                takes one --uri per independent master (five), one
 *                client each
 *   --store      plain redis://host[:port][/db] of the Redis no fault
 *                touches: the counters (and the fencing store) live there
 *   --process    this process's name in every line ([A-Za-z0-9_.-], up to
 *                32 characters)
 *   --kind       lock (RLock), fair, rw (reads and writes at random, one
 *                in three a write), fenced (the token goes to the fencing
 *                store), redlock (rlock_redlock_new over the --uri servers)
 *   --threads    actors, default 4: threads of the blocking API, or with
 *                --async owners (rlock_owner_new) on one libev loop thread
 *   --names      lock names safety:<kind>:0..N-1, default 2; each
 *                operation picks one at random
 *   --seconds    run time (default 10), or --ops N acquires per actor
 *   --lease-ms   the acquire's lease, -1 (default) for the watchdog
 *   --wait-ms    the acquire's wait budget, default 3000
 *   --hold-ms    the critical section lasts a random 0..H ms, default 5
 *                (between the counter's read and its write)
 *   --async      the libev async API (lock, fair and rw only: the async
 *                calls return no fenced token, and a Redlock is blocking)
 *   --queue      RLock's waiter queue (rlock_config_set_lock_queue); by
 *                default rlock's default
 *   --sync-replicas N   N > 0 turns on WAIT after lock scripts
 *                (rlock_config_set_sync_replicas, 1000 ms): rlock itself
 *                waits for every connected replica, so only N > 0 matters
 *   --watchdog-ms the watchdog timeout (rlock's default 30000)
 *   --seed       the random choices' seed (default: from the clock,
 *                printed on stderr)
 *   --fence-script the fencing store's Lua (default: the source tree's
 *                tests/safety/fence_store.lua)
 *
 * Exit status: 0 when it ran to its end, whatever the locks returned; 2 on
 * bad arguments; 1 when it could not start (history file, store, or no
 * server reachable for the whole run). SIGTERM or SIGINT: every actor
 * stops after its operation under way, whose lines it writes, then the
 * worker exits 0. The history format is history.h's; outcome.c maps rlock's
 * codes to ok, fail and info.
 */
#include "worker.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef SAFETY_FENCE_SCRIPT
#define SAFETY_FENCE_SCRIPT "fence_store.lua"
#endif

/* How long connecting keeps trying when no --seconds bounds it. */
#define CONNECT_BUDGET_MS 30000
#define CONNECT_PAUSE_MS 500

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

static void usage(const char *why)
{
    fprintf(stderr,
            "safety_worker: %s\n"
            "usage: safety_worker --uri URI [--uri URI...] --store URI "
            "--process NAME\n"
            "         --kind lock|fair|rw|fenced|redlock --history FILE\n"
            "         [--threads N] [--names N] [--seconds S | --ops N] "
            "[--lease-ms L]\n"
            "         [--wait-ms W] [--hold-ms H] [--async] "
            "[--queue on|off]\n"
            "         [--sync-replicas N] [--seed N] [--watchdog-ms W] "
            "[--fence-script FILE]\n",
            why);
    exit(2);
}

/* Parses a whole decimal number in [lo, hi], or exits 2 naming option. */
static int64_t number(const char *option, const char *text, int64_t lo,
                      int64_t hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        char why[160];
        snprintf(why, sizeof(why), "--%s: %s is not a number in [%lld, %lld]",
                 option, text, (long long)lo, (long long)hi);
        usage(why);
    }
    return v;
}

static int valid_process_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 32)
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == n;
}

static worker_kind kind_of(const char *name)
{
    static const char *const kinds[] = {"lock", "fair", "rw", "fenced",
                                        "redlock"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(name, kinds[i]) == 0)
            return (worker_kind)i;
    usage("--kind must be lock, fair, rw, fenced or redlock");
    return KIND_LOCK;
}

static void parse_options(int argc, char **argv, worker_options *o)
{
    enum { O_URI = 256, O_STORE, O_PROCESS, O_KIND, O_THREADS, O_NAMES,
           O_SECONDS, O_OPS, O_LEASE, O_WAIT, O_HOLD, O_ASYNC, O_QUEUE,
           O_SYNC, O_HISTORY, O_SEED, O_WATCHDOG, O_FENCE };
    static const struct option longopts[] = {
        {"uri", required_argument, NULL, O_URI},
        {"store", required_argument, NULL, O_STORE},
        {"process", required_argument, NULL, O_PROCESS},
        {"kind", required_argument, NULL, O_KIND},
        {"threads", required_argument, NULL, O_THREADS},
        {"names", required_argument, NULL, O_NAMES},
        {"seconds", required_argument, NULL, O_SECONDS},
        {"ops", required_argument, NULL, O_OPS},
        {"lease-ms", required_argument, NULL, O_LEASE},
        {"wait-ms", required_argument, NULL, O_WAIT},
        {"hold-ms", required_argument, NULL, O_HOLD},
        {"async", no_argument, NULL, O_ASYNC},
        {"queue", required_argument, NULL, O_QUEUE},
        {"sync-replicas", required_argument, NULL, O_SYNC},
        {"history", required_argument, NULL, O_HISTORY},
        {"seed", required_argument, NULL, O_SEED},
        {"watchdog-ms", required_argument, NULL, O_WATCHDOG},
        {"fence-script", required_argument, NULL, O_FENCE},
        {NULL, 0, NULL, 0},
    };
    *o = (worker_options){.threads = 4, .names = 2, .lease_ms = -1,
                          .wait_ms = 3000, .hold_ms = 5, .queue = -1,
                          .seed = (unsigned long)time(NULL) ^
                                  ((unsigned long)getpid() << 16),
                          .fence_script_path = SAFETY_FENCE_SCRIPT};
    int seeded = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_URI:
            if (o->nuris == WORKER_MAX_URIS)
                usage("too many --uri");
            o->uris[o->nuris++] = optarg;
            break;
        case O_STORE: o->store_uri = optarg; break;
        case O_PROCESS: o->process = optarg; break;
        case O_KIND:
            o->kind_name = optarg;
            o->kind = kind_of(optarg);
            break;
        case O_THREADS:
            o->threads = (int)number("threads", optarg, 1, WORKER_MAX_THREADS);
            break;
        case O_NAMES:
            o->names = (int)number("names", optarg, 1, WORKER_MAX_NAMES);
            break;
        case O_SECONDS:
            o->seconds = number("seconds", optarg, 1, 86400 * 7);
            break;
        case O_OPS: o->ops = number("ops", optarg, 1, INT64_MAX / 2); break;
        case O_LEASE:
            o->lease_ms = number("lease-ms", optarg, -1, INT64_C(1) << 50);
            if (o->lease_ms == 0)
                usage("--lease-ms must be -1 or positive");
            break;
        case O_WAIT: o->wait_ms = number("wait-ms", optarg, 0, 1 << 30); break;
        case O_HOLD: o->hold_ms = number("hold-ms", optarg, 0, 1 << 30); break;
        case O_ASYNC: o->async = 1; break;
        case O_QUEUE:
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
                usage("--queue must be on or off");
            o->queue = strcmp(optarg, "on") == 0;
            break;
        case O_SYNC:
            o->sync_replicas = (int)number("sync-replicas", optarg, 0, 64);
            break;
        case O_HISTORY: o->history_path = optarg; break;
        case O_SEED:
            o->seed = (unsigned long)number("seed", optarg, 0, INT64_MAX);
            seeded = 1;
            break;
        case O_WATCHDOG:
            o->watchdog_ms = number("watchdog-ms", optarg, 30, INT32_MAX);
            break;
        case O_FENCE: o->fence_script_path = optarg; break;
        default: usage("unknown option or missing value");
        }
    }
    if (optind < argc)
        usage("unexpected argument");
    if (o->nuris == 0 || o->store_uri == NULL || o->process == NULL ||
        o->kind_name == NULL || o->history_path == NULL)
        usage("--uri, --store, --process, --kind and --history are needed");
    if (!valid_process_name(o->process))
        usage("--process: 1-32 of A-Z a-z 0-9 _ . -");
    if (o->kind != KIND_REDLOCK && o->nuris != 1)
        usage("only --kind redlock takes several --uri");
    if (o->async && (o->kind == KIND_FENCED || o->kind == KIND_REDLOCK))
        usage("--async is for lock, fair and rw");
    if (o->seconds > 0 && o->ops > 0)
        usage("--seconds or --ops, not both");
    if (o->seconds == 0 && o->ops == 0)
        o->seconds = 10;
    if (!seeded)
        fprintf(stderr, "safety_worker %s: --seed %lu\n", o->process, o->seed);
}

/* ------------------------------------------------------------------------ */
/* Lost locks                                                               */
/* ------------------------------------------------------------------------ */

static const char *lost_reason(int reason)
{
    switch (reason) {
    case RLOCK_LOST_GONE: return "gone";
    case RLOCK_LOST_TAKEN: return "taken";
    case RLOCK_LOST_EXPIRED: return "expired";
    case RLOCK_LOST_ABANDONED: return "abandoned";
    default: return "unknown";
    }
}

/* The watchdog's lost-lock signal, on rlock's notifier thread: one info
 * line, op "lost", under the owner's actor (its thread and next id). A
 * Redlock's line names the node whose lock was lost: one node's loss is
 * not the Redlock's while a majority holds. */
static void on_lost(const char *name, uint64_t owner, uint64_t hold,
                    int reason, void *arg)
{
    worker_node *n = arg;
    worker *w = n->w;
    actor *a = NULL;
    for (int i = 0; i < w->nactors && a == NULL; i++)
        if (atomic_load(&w->actors[i].owner_id) == owner)
            a = &w->actors[i];
    char owner_text[80];
    snprintf(owner_text, sizeof(owner_text), "%s:%llu",
             rlock_client_id(w->clients[0]), (unsigned long long)owner);
    hist_event e = {
        .proc = w->opt.process,
        .thread = a != NULL ? a->index : -1,
        .seq = a != NULL ? atomic_fetch_add(&a->seq, 1)
                         : atomic_fetch_add(&w->orphan_seq, 1),
        .type = "info",
        .op = "lost",
        .owner = owner_text,
        .lock = name,
        .kind = w->opt.kind_name,
        .mode = a != NULL ? atomic_load(&a->mode) : 'x',
        .reason = lost_reason(reason),
        .hold = (int64_t)hold,
        .node = w->opt.kind == KIND_REDLOCK ? n->node : -1,
    };
    history_write(&w->hist, &e);
}

/* ------------------------------------------------------------------------ */
/* Setting up                                                               */
/* ------------------------------------------------------------------------ */

/* Reads the whole file at path, NUL-terminated, or NULL. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (text = malloc((size_t)n + 1)) != NULL) {
            if (fread(text, 1, (size_t)n, f) != (size_t)n) {
                free(text);
                text = NULL;
            } else {
                text[n] = '\0';
            }
        }
    }
    fclose(f);
    return text;
}

/* Whether SIGTERM or SIGINT arrived within ms (signals are blocked in
 * every thread: the main thread takes them here). */
static int signalled_within(int64_t ms)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    return sigtimedwait(&set, NULL, &ts) > 0;
}

/* Connects client i, trying again while the servers may be down (a worker
 * started, or restarted, during a fault) until budget_ms or a signal.
 * Returns 0 or the last error. */
static int connect_client(worker *w, int i, int64_t budget_ms)
{
    rlock_config *cfg;
    int rc = rlock_config_new(&cfg);
    if (rc != RLOCK_OK)
        return rc;
    char name[64];
    snprintf(name, sizeof(name), "safety-%s-%d", w->opt.process, i);
    rlock_config_set_client_name(cfg, name);
    if (w->opt.watchdog_ms > 0)
        rlock_config_set_watchdog_timeout(cfg, w->opt.watchdog_ms);
    if (w->opt.queue >= 0)
        rlock_config_set_lock_queue(cfg, w->opt.queue);
    if (w->opt.sync_replicas > 0)
        rlock_config_set_sync_replicas(cfg, 1, 1000);
    int64_t until = worker_mono_ns() + budget_ms * 1000000;
    for (;;) {
        rc = rlock_client_connect_with(&w->clients[i], w->opt.uris[i], cfg);
        if (rc == RLOCK_OK || rc == RLOCK_EINVAL ||
            worker_mono_ns() >= until || signalled_within(CONNECT_PAUSE_MS))
            break;
    }
    rlock_config_free(cfg);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "safety_worker %s: cannot connect to %s: %s\n",
                w->opt.process, w->opt.uris[i], rlock_err_name(rc));
        return rc;
    }
    w->nodes[i] = (worker_node){w, i};
    w->nclients = i + 1;
    return rlock_client_on_lost(w->clients[i], on_lost, &w->nodes[i]);
}

/* The lock names and, but for Redlock, their shared handles. */
static int make_locks(worker *w)
{
    int n = w->opt.names;
    w->names = calloc((size_t)n, sizeof(*w->names));
    w->locks = calloc((size_t)n, sizeof(*w->locks));
    w->rws = calloc((size_t)n, sizeof(*w->rws));
    if (w->names == NULL || w->locks == NULL || w->rws == NULL)
        return RLOCK_ENOMEM;
    for (int i = 0; i < n; i++) {
        snprintf(w->names[i], sizeof(w->names[i]), "safety:%s:%d",
                 w->opt.kind_name, i);
        int rc = RLOCK_OK;
        rlock_client *c = w->clients[0];
        switch (w->opt.kind) {
        case KIND_LOCK: rc = rlock_get(c, w->names[i], &w->locks[i]); break;
        case KIND_FAIR: rc = rlock_fair_get(c, w->names[i], &w->locks[i]); break;
        case KIND_FENCED:
            rc = rlock_fenced_get(c, w->names[i], &w->locks[i]);
            break;
        case KIND_RW: rc = rlock_rw_get(c, w->names[i], &w->rws[i]); break;
        case KIND_REDLOCK: break;
        }
        if (rc != RLOCK_OK)
            return rc;
    }
    return RLOCK_OK;
}

static void free_locks(worker *w)
{
    for (int i = 0; w->names != NULL && i < w->opt.names; i++) {
        rlock_free(w->locks[i]);
        rlock_rw_free(w->rws[i]);
    }
    free(w->names);
    free(w->locks);
    free(w->rws);
}

/* ------------------------------------------------------------------------ */
/* The blocking API's actors                                                */
/* ------------------------------------------------------------------------ */

/* A Redlock per name for this thread: one handle per node, each on its own
 * client (a multi-lock is used by one thread at a time). */
typedef struct redlocks {
    rlock *handles[WORKER_MAX_NAMES][WORKER_MAX_URIS];
    rlock_multi *multi[WORKER_MAX_NAMES];
} redlocks;

static int make_redlocks(worker *w, redlocks *r)
{
    for (int i = 0; i < w->opt.names; i++) {
        for (int n = 0; n < w->nclients; n++) {
            int rc = rlock_get(w->clients[n], w->names[i], &r->handles[i][n]);
            if (rc != RLOCK_OK)
                return rc;
        }
        int rc = rlock_redlock_new(r->handles[i], (size_t)w->nclients,
                                   &r->multi[i]);
        if (rc != RLOCK_OK)
            return rc;
    }
    return RLOCK_OK;
}

static void free_redlocks(worker *w, redlocks *r)
{
    for (int i = 0; i < w->opt.names; i++) {
        rlock_multi_free(r->multi[i]);
        for (int n = 0; n < w->nclients; n++)
            rlock_free(r->handles[i][n]);
    }
}

static int acquire(actor *a, redlocks *r)
{
    const worker_options *o = &a->w->opt;
    switch (o->kind) {
    case KIND_FENCED:
        return rlock_fenced_trylock(worker_handle(a), o->wait_ms, o->lease_ms,
                                    &a->token);
    case KIND_REDLOCK:
        return rlock_multi_trylock(r->multi[a->name], o->wait_ms, o->lease_ms,
                                   NULL);
    default:
        return rlock_trylock(worker_handle(a), o->wait_ms, o->lease_ms);
    }
}

static int release(actor *a, redlocks *r)
{
    if (a->w->opt.kind == KIND_REDLOCK)
        return rlock_multi_unlock(r->multi[a->name]);
    return rlock_unlock(worker_handle(a));
}

/* One operation: acquire, and when held, the critical section and the
 * release (released again while Redis refuses it and keeps the hold). */
static void sync_operation(actor *a, redlocks *r)
{
    worker_pick(a);
    a->ops_done++;
    unsigned long seq = actor_invoke(a, "acquire");
    int rc = acquire(a, r);
    actor_complete_lock_op(a, "acquire", seq, rc, 0);
    if (rc != RLOCK_OK) {
        if (rc != RLOCK_ETIMEDOUT)
            worker_sleep_ms(WORKER_ERROR_PAUSE_MS);
        return;
    }
    critical_read(a);
    worker_sleep_ms(rand_r(&a->rng) % (a->w->opt.hold_ms + 1));
    critical_write(a);
    for (;;) {
        seq = actor_invoke(a, "release");
        rc = release(a, r);
        actor_complete_lock_op(a, "release", seq, rc, 1);
        if (!outcome_release_kept_hold(rc) ||
            ++a->release_tries >= WORKER_RELEASE_TRIES)
            break;
        worker_sleep_ms(WORKER_ERROR_PAUSE_MS);
    }
}

static void *sync_actor(void *arg)
{
    actor *a = arg;
    worker *w = a->w;
    redlocks *r = NULL;
    actor_set_owner(a, rlock_thread_id());
    if (w->opt.kind == KIND_REDLOCK) {
        r = calloc(1, sizeof(*r));
        int rc = r != NULL ? make_redlocks(w, r) : RLOCK_ENOMEM;
        if (rc != RLOCK_OK) {
            fprintf(stderr, "safety_worker %s: redlock: %s\n", w->opt.process,
                    rlock_err_name(rc));
            goto out;
        }
    }
    while (worker_may_start(w, a))
        sync_operation(a, r);
out:
    if (r != NULL) {
        free_redlocks(w, r);
        free(r);
    }
    store_close(&a->store);
    worker_actor_done(w);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

/* Starts the actors' threads (or the loop's) and waits for them, taking
 * SIGTERM and SIGINT meanwhile. Returns 0, or -1 if a thread could not be
 * started (those that were are stopped and joined). */
static int run(worker *w, store_addr *store)
{
    w->nactors = w->opt.threads;
    w->actors = calloc((size_t)w->nactors, sizeof(*w->actors));
    pthread_t *threads = calloc((size_t)w->nactors, sizeof(*threads));
    if (w->actors == NULL || threads == NULL) {
        free(threads);
        return -1;
    }
    for (int i = 0; i < w->nactors; i++) {
        actor *a = &w->actors[i];
        a->w = w;
        a->index = i;
        atomic_init(&a->seq, 1);
        atomic_init(&a->mode, 'x');
        a->rng = (unsigned int)(w->opt.seed * 7919u + (unsigned long)i);
        a->store = (store_conn){store, w->fence_script, NULL};
    }
    w->deadline_mono_ns = worker_mono_ns() + w->opt.seconds * 1000000000;
    int started = 0, wanted = w->opt.async ? 1 : w->nactors;
    for (; started < wanted; started++) {
        int rc = w->opt.async
                     ? pthread_create(&threads[0], NULL, worker_async_thread, w)
                     : pthread_create(&threads[started], NULL, sync_actor,
                                      &w->actors[started]);
        if (rc != 0) {
            atomic_store(&w->stop, 1);
            break;
        }
    }
    /* the actors stop at their deadline, or after --ops; a signal stops
     * them after the operation under way */
    while (atomic_load(&w->actors_done) < w->nactors && started == wanted) {
        if (signalled_within(100))
            atomic_store(&w->stop, 1);
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    return started == wanted ? 0 : -1;
}

int main(int argc, char **argv)
{
    worker w = {.hist = {-1}};
    parse_options(argc, argv, &w.opt);
    store_addr store;
    if (store_parse(w.opt.store_uri, &store) != 0)
        usage("--store must be redis://host[:port][/db]");

    /* Every thread, rlock's included, inherits the blocked signals: the
     * main thread alone takes them, with sigtimedwait(). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    if (history_open(&w.hist, w.opt.history_path) != 0) {
        fprintf(stderr, "safety_worker: %s: %s\n", w.opt.history_path,
                strerror(errno));
        return 1;
    }
    if (w.opt.kind == KIND_FENCED &&
        (w.fence_script = read_file(w.opt.fence_script_path)) == NULL) {
        fprintf(stderr, "safety_worker: cannot read %s\n",
                w.opt.fence_script_path);
        goto out;
    }
    int64_t budget = w.opt.seconds > 0 ? w.opt.seconds * 1000
                                       : CONNECT_BUDGET_MS;
    for (int i = 0; i < w.opt.nuris; i++)
        if (connect_client(&w, i, budget) != RLOCK_OK)
            goto out;
    int rc = make_locks(&w);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "safety_worker: locks: %s\n", rlock_err_name(rc));
        goto out;
    }
    if (run(&w, &store) == 0)
        status = 0;
out:
    /* frees whatever holds remain (an unknown release's, say) and ends the
     * lost-lock signals before the history is closed */
    for (int i = 0; i < w.nclients; i++)
        rlock_client_free(w.clients[i]);
    free_locks(&w);
    free(w.actors);
    free(w.fence_script);
    history_close(&w.hist);
    return status;
}
