/*
 * core/core.h: the core layer's private header: lock entries and the lock
 * operations, independent of how bytes move.
 *
 * - entry.c (the table), entry_waiters.c and hold.c own an entry's state:
 *   its holds, its waiters and their wake-ups, its subscription flags and
 *   its lost-lock callback. Every other file changes them through the
 *   functions below.
 * - acquire.c and release.c are the lock operations, each one state machine
 *   written once. A machine never blocks and never sends: it is fed events
 *   (a reply, a wake-up, a cancel) and answers with the next step its driver
 *   must take (send this request, wait until then, or done). The blocking
 *   API (src/api/lock_sync.c) drives them on the calling thread, the async
 *   API (src/api/lock_async.c) on the I/O thread.
 *
 * - entry_kinds.c describes an entry to proto's lock kinds; pubsub.c keeps
 *   the channels the entries wait on; watchdog.c renews holds; notify.c
 *   runs the lost-lock callbacks; thread_exit.c loses a dead thread's
 *   holds; owner.c gives ids and clocks; log.c is the log hook.
 *
 * - request.c (core/request.h) sends requests on the I/O thread's command
 *   connections (src/io/conn.h) and hands the reply of an acquire whose
 *   caller gave up to release.c, which gives back the hold; direct.c runs
 *   requests on the caller's thread instead, over an idle blocking link
 *   (the round trip itself: direct_round_trip.c; in cluster mode one set
 *   of links per node: direct_cluster.c);
 *   acl.c checks the user's permissions once at connect; client.c
 *   (core/client.h) is what the core needs of the client object, whose
 *   life src/api/client.c runs.
 *
 * The core reaches the I/O thread through io/loop.h and the connections
 * through io/conn.h and io/link.h, never through libev or hiredis.
 */
#ifndef RLOCK_CORE_H
#define RLOCK_CORE_H

#include "core/client.h"
#include "core/request.h"
#include "core/stats.h"
#include "io/loop.h"
#include "proto/proto.h"

#include "rlock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------- owner.c */

uint64_t rlock__thread_id(void);
int rlock__random_bytes(void *buf, size_t len);
int rlock__uuid4(char out[RLOCK__UUID_LEN + 1]);
int rlock__request_id(char out[RLOCK__REQUEST_ID_LEN + 1]);
int64_t rlock__now_ms(void);
int64_t rlock__wall_ms(void);
void rlock__abs_timespec(int64_t deadline_ms, struct timespec *ts);

/* ------------------------------------------------------------ log.c */

/* Log lines go to the config's hook. Call rlock__log only on an rlock
 * thread and with no rlock lock held (rlock.h promises both); connecting
 * runs on the caller's thread, so it uses rlock__log_later, which hands the
 * line to the I/O thread. */
bool rlock__log_enabled(const rlock_client *c, int level);
void rlock__log(const rlock_client *c, int level, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);
void rlock__log_later(rlock_client *c, int level, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);

/* The client's parts (api/client.c makes and ends them with the functions
 * below). */
typedef struct rlock__pubsub rlock__pubsub;
typedef struct rlock__watchdog rlock__watchdog;
typedef struct rlock__notifier rlock__notifier;
typedef struct rlock__thread_rec rlock__thread_rec;
typedef struct rlock__direct rlock__direct;
typedef struct rlock__direct_cluster rlock__direct_cluster;

/* ---------------------------------------------------------- entry.c */

/* Shared state of one lock within a client (Redisson's RedissonLockEntry
 * plus the watchdog's entry): one per kind and name. The fields here are
 * set when the entry is made and never change, so any file may read them;
 * its holds, waiters and flags belong to entry.c, entry_waiters.c and
 * hold.c (entry_impl.h), whose functions are below, and nobody else writes
 * them. A fair lock's waiting thread also waits on an entry of its own
 * (RLOCK__KIND_FAIR_WAIT), whose channel is that waiter's; it never holds
 * anything. */
typedef struct rlock__entry {
    rlock_client *client;
    int kind;      /* RLOCK_KIND_* or RLOCK__KIND_FAIR_WAIT */
    char *name;
    char *channel; /* where its waiters are woken */
    char *aux[2];  /* fair: queue, timeouts; fenced: token key;
                      read/write: the key prefix "{N}" */
} rlock__entry;

void rlock__entry_ref(rlock__entry *e);
void rlock__entry_unref(rlock__entry *e);

rlock__entry *rlock__entry_get(rlock_client *c, int kind, const char *name,
                               const char *waiter);
rlock__entry *rlock__fair_waiter_entry(rlock__entry *e, uint64_t owner);
void rlock__entries_sweep(rlock_client *c);

/* What an acquire needs to know to decide whether to barge. */
typedef struct rlock__entry_view {
    bool holds;              /* owner holds it (a reentry) */
    bool queue;              /* local waiters wait, subscribed */
    int64_t contended_at_ms; /* an attempt last found it taken (0: never) */
    int64_t free_by_ms;      /* when the holder it found loses its lease, by
                                the TTL it was told (0: not known) */
    int64_t released_at_ms;  /* this client last released it (0: never) */
} rlock__entry_view;

void rlock__entry_look(rlock__entry *e, uint64_t owner,
                       rlock__entry_view *out);
void rlock__entry_note_contended(rlock__entry *e, int64_t ttl_ms);
void rlock__entry_note_released(rlock__entry *e);

/* --------------------------------------------------- entry_waiters.c */

/* What a waiter sleeps for. */
enum {
    RLOCK__WAIT_NONE,
    RLOCK__WAIT_PERMIT,     /* an unlock message meant for it */
    RLOCK__WAIT_SUBSCRIBED, /* its channel confirmed, or refused */
};

/* One local acquire waiting for an entry: a blocked thread or an async
 * call. Its caller embeds it and sets nothing but need: the fields are
 * entry_waiters.c's. Waiters are woken in turn (FIFO, each woken one going
 * to the back), one per "0" message and all for "1", so neither blocking
 * nor async waiters starve the others. A wake-up that comes while a waiter
 * is busy trying is kept (permit) and ends its next wait at once, so none
 * is lost between a failed try and the next sleep. */
typedef struct rlock__waiter rlock__waiter;
struct rlock__waiter {
    rlock__waiter *next, *prev; /* the entry's waiters */
    rlock__entry *entry;
    int want;    /* RLOCK__WAIT_*: what it sleeps for now */
    bool permit; /* a wake-up not consumed yet */
    /* how it is woken: a blocked thread's condition variable (set while it
     * sleeps), or, for an async waiter, a call on the I/O thread once its
     * wait is over (the wake-up it waited for is consumed by then) */
    pthread_cond_t *cv;
    void (*kick)(rlock__waiter *w);
    /* a semaphore waiter's permits wanted (0 for a lock's), set by its
     * caller before rlock__waiter_enter: a permit count's message wakes
     * only waiters whose wants it covers */
    int need;
};

bool rlock__waiter_enter(rlock__entry *e, rlock__waiter *w,
                         void (*kick)(rlock__waiter *w));
void rlock__waiter_leave(rlock__waiter *w);
bool rlock__waiter_take(rlock__waiter *w, int want);
void rlock__waiter_stop(rlock__waiter *w);
bool rlock__waiter_block(rlock__waiter *w, int want, int64_t until_ms,
                         pthread_cond_t *cv);

/* Subscriber side (pubsub.c, on the I/O thread). */
bool rlock__entry_wants_channel(rlock__entry *e);
void rlock__entry_set_linger(rlock__entry *e, int64_t ms);
int64_t rlock__entry_linger_left(rlock__entry *e);
bool rlock__entry_linger_over(rlock__entry *e);
bool rlock__entry_subscribed(rlock__entry *e);
void rlock__entry_set_subscribed(rlock__entry *e, bool subscribed,
                                 bool wake_all);
void rlock__entry_set_unheard(rlock__entry *e);
bool rlock__entry_wake(rlock__entry *e, bool all);
bool rlock__entry_wake_permits(rlock__entry *e, int64_t permits);

/* ----------------------------------------------------------- hold.c */

/* One owner's hold on a lock, as this client remembers it (hold.c's). */
typedef struct rlock__holder rlock__holder;

rlock__holder *rlock__hold_spare(void);
void rlock__hold_spare_free(rlock__holder *h);
void rlock__hold_add(rlock__entry *e, uint64_t owner, int64_t lease_ms,
                     rlock__holder *spare);
bool rlock__hold_valid(rlock__entry *e, uint64_t owner, uint64_t *epoch);
int rlock__hold_count(rlock__entry *e, uint64_t owner);
int64_t rlock__hold_id(rlock__entry *e, uint64_t owner);
int rlock__hold_check(rlock__entry *e, uint64_t owner);
void rlock__hold_mark_lost(rlock__entry *e, uint64_t owner, uint64_t epoch,
                           int reason);
void rlock__hold_set_lease(rlock__entry *e, uint64_t owner, int64_t lease_ms,
                           bool set);
void rlock__entry_lose_all(rlock__entry *e, int reason);
int rlock__owner_known_holds(rlock__entry *e, uint64_t owner);
int rlock__hold_release_begin(rlock__entry *e, uint64_t owner,
                              uint64_t *epoch, int64_t *lease_ms);
void rlock__hold_settle(rlock__entry *e, uint64_t owner, uint64_t epoch,
                        int rc);
int rlock__entry_set_lost_cb(rlock__entry *e, rlock_lost_cb cb, void *arg);

/* The watchdog's walk: fn is called for each hold it must renew (with the
 * entry referenced for it, under the table's lock: fn must not call back
 * into entries), and returns false when it has no room for it; holds
 * whose lease must have run out are marked lost instead. */
typedef bool (*rlock__renewal_fn)(rlock__entry *e, uint64_t owner,
                                  uint64_t epoch, void *arg);
void rlock__holds_to_renew(rlock_client *c, int64_t now_ms,
                           rlock__renewal_fn fn, void *arg);
int64_t rlock__hold_renewed(rlock__entry *e, uint64_t owner,
                            uint64_t epoch, int outcome, int64_t sent_at_ms,
                            int64_t now_ms);
void rlock__entries_abandon(rlock_client *c, uint64_t owner);
/* Every valid hold (client shutdown); same rules as rlock__holds_to_renew. */
typedef void (*rlock__hold_fn)(rlock__entry *e, uint64_t owner, int count,
                               int64_t lease_ms, void *arg);
void rlock__holds_foreach(rlock_client *c, rlock__hold_fn fn, void *arg);

/* ------------------------------------------------- the operations */

/* What a machine asks its driver to do next. */
typedef enum {
    RLOCK__STEP_NONE, /* nothing: an event it waits for will come */
    RLOCK__STEP_SEND, /* send req and feed its outcome back (reply) */
    RLOCK__STEP_WAIT, /* wait until until_ms, or the waiter's want; then
                         feed wake */
    RLOCK__STEP_DONE, /* the operation ended with status */
} rlock__step_kind;

typedef struct rlock__step {
    rlock__step_kind kind;
    rlock__req *req;       /* SEND: a new request (the driver's to unref) */
    int64_t timeout_ms;    /* SEND: how long its reply may take */
    rlock__waiter *waiter; /* WAIT: whose wake-up ends it; NULL: time only */
    int want;              /* WAIT: what the waiter waits for */
    int64_t until_ms;      /* WAIT: monotonic */
    int status;            /* DONE */
} rlock__step;

/* A machine, as its drivers see it. reply: the outcome of the request of
 * the last SEND (status: 0 with r's result, or why there is none: the
 * request then must not be read); wake: the last WAIT ended, woken by the
 * waiter's wake-up or (woken false) by the time it named; cancel: the
 * caller gave up
 * (RLOCK_ECANCELED) or the client is closing (RLOCK_ECLOSED), between steps
 * or while a request is out. */
typedef struct rlock__op_class {
    rlock__step (*reply)(void *op, rlock__req *r, int status);
    rlock__step (*wake)(void *op, bool woken);
    rlock__step (*cancel)(void *op, int why);
} rlock__op_class;

/* --------------------------------------------------------- acquire.c */

/* One acquire: try; when taken by someone else, wait (the channel's
 * subscription first, then an unlock message, the holder's TTL or the
 * re-check interval) and try again until the deadline. The caller sets the
 * fields of rlock__acquire_init; the rest are the machine's. */
typedef struct rlock__acquire {
    rlock__entry *entry; /* borrowed: the caller keeps a reference */
    uint64_t owner;
    int64_t lease_ms;    /* as given: may be RLOCK_LEASE_WATCHDOG */
    int64_t wait_ms;     /* as given: may be RLOCK_WAIT_FOREVER */
    int64_t deadline_ms;
    bool bounded;        /* no round trip may outlast the deadline */
    int64_t spin_initial_ms, spin_max_ms;
    int spin_multiplier;
    int64_t token; /* out: a fenced acquire's token */
    /* a non-reentrant handle's: an owner that holds the lock (through any
     * handle of the entry) is refused with RLOCK_EREENTRY, here at once,
     * and by the script when Redis knows of a hold this client does not */
    bool non_reentrant;

    int state;
    rlock__entry *wait_entry; /* its own (a fair or queued waiter's):
                                 referenced; or NULL */
    rlock__waiter waiter;
    void (*kick)(rlock__waiter *w); /* the async driver's wake-up */
    bool entered;  /* counted among the entry's waiters */
    bool queued;   /* a try may have queued it in an RLock's queue */
    bool in_turn;  /* an RLock's tries go through the queue's script */
    bool queue_off; /* that script cannot run now (its slot migrates) */
    bool unknown;  /* a lost attempt may have taken the lock */
    bool canceled; /* cancelled while a request was out */
    int attempts;  /* connection retries */
    int spin_failures;
    int64_t spin_delay_ms;
    unsigned seed;
    int64_t ttl_ms;
    int result; /* the status a give-up or give-back ends with */
    /* statistics (core/stats.h) */
    int64_t started_us; /* rlock__stats_clock() at the call */
    bool waited;     /* a try found the lock taken, or it waited its turn */
    bool rechecking; /* this try follows a wait no wake-up ended */
    rlock__holder *spare;
} rlock__acquire;

extern const rlock__op_class rlock__acquire_class;

int rlock__acquire_init(rlock__acquire *a, rlock__entry *e, uint64_t owner,
                        int64_t wait_ms, int64_t lease_ms);
rlock__step rlock__acquire_start(rlock__acquire *a);
void rlock__acquire_clear(rlock__acquire *a);
int64_t rlock__spin_next_delay(int64_t delay_ms, int failures,
                               int64_t max_ms, int multiplier,
                               unsigned *seed);

/* --------------------------------------------------------- release.c */

/* One unlock: the kind's release script under a latch, retried with the
 * same latch after a lost reply, and settled into the hold. */
typedef struct rlock__release {
    rlock__entry *entry; /* borrowed */
    uint64_t owner;
    int retries;
    int64_t timeout_ms;

    int state;
    int attempt;
    bool maybe_ran; /* an attempt's reply was lost or late */
    bool one_key;   /* its slot migrates: the release without the latch */
    /* the owner can have no acquire in flight beside this unlock (a
     * thread's own unlock: set by the blocking API), so holds the client
     * does not know of are a lost acquire's, which a last unlock drops
     * (release.c); an async owner may have one in flight, whose hold a
     * drop would take */
    bool drop_unknown;
    uint64_t epoch;
    int64_t lease_ms;
    char *latch;
} rlock__release;

extern const rlock__op_class rlock__release_class;

void rlock__release_init(rlock__release *rel, rlock__entry *e,
                         uint64_t owner);
rlock__step rlock__release_start(rlock__release *rel);
void rlock__release_clear(rlock__release *rel);
/* The release request of one of owner's holds on e, with a fresh latch:
 * for an unlock (give_back false: its reply is decoded and the latch DELed
 * once its caller has it) or to give back a hold an acquire took after its
 * caller gave up (give_back true: the reply is ignored and the latch left
 * to expire). NULL when out of memory, or when e is NULL. */
rlock__req *rlock__release_req(rlock__entry *e, uint64_t owner,
                               int64_t lease_ms, bool give_back);
void rlock__req_give_back(rlock__req *acq);
void rlock__req_undo_late(rlock__req *acq, bool taken);
int rlock__give_back_all(rlock__entry *e, uint64_t owner, int count,
                         int64_t lease_ms,
                         void (*fn)(rlock__req *r, void *arg), void *arg);
void rlock__log_unannounced(rlock_client *c, const char *name);


/* ----------------------------------------------------- entry_kinds.c */

/* An entry's script calls: proto's rlock__kind_* for the entry's kind,
 * names and client settings (rlock__spec_clear() frees what they made). */
void rlock__kind_owner_tag(char out[RLOCK__TAG_MAX], const rlock__entry *e,
                           uint64_t owner);
int rlock__kind_names(rlock__entry *e, const char *waiter);
int64_t rlock__queue_keep_ms(const rlock_client *c);
int rlock__spec_acquire(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, int64_t wait_ms, bool try_once,
                        bool non_reentrant);
int rlock__spec_drop(rlock__spec *s, const rlock__entry *e, uint64_t owner);
int rlock__spec_drop_phantom(rlock__spec *s, const rlock__entry *e,
                             uint64_t owner, int known);
int rlock__spec_force(rlock__spec *s, const rlock__entry *e);
int rlock__spec_give_up(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t wait_ms);
int rlock__spec_is_locked(rlock__spec *s, const rlock__entry *e);
int rlock__spec_release_one_key(rlock__spec *s, const rlock__entry *e,
                                uint64_t owner, int64_t lease_ms);
int rlock__spec_release(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, const char *latch);
rlock__req *rlock__req_from_spec(rlock_client *c, const rlock__spec *s);

/* ------------------------------------------------------- countdown.c */

/* Waiting for a count-down latch to open (entry of kind
 * RLOCK__KIND_COUNTDOWN): read the count, wait on the channel, read again.
 * The caller sets the fields of rlock__countdown_wait_init (and kick, for
 * the async driver); the rest are the machine's. */
typedef struct rlock__countdown_wait {
    rlock__entry *entry; /* borrowed: the caller keeps a reference */
    int64_t wait_ms;     /* as given: may be RLOCK_WAIT_FOREVER */
    int64_t deadline_ms;
    void (*kick)(rlock__waiter *w); /* the async driver's wake-up */

    int state;
    rlock__waiter waiter;
    bool entered;
    int attempts; /* reads lost in a row */
    int64_t count; /* the last count read */
} rlock__countdown_wait;

extern const rlock__op_class rlock__countdown_wait_class;

void rlock__countdown_wait_init(rlock__countdown_wait *w, rlock__entry *e,
                                int64_t wait_ms);
rlock__step rlock__countdown_wait_start(rlock__countdown_wait *w);
void rlock__countdown_wait_clear(rlock__countdown_wait *w);
void rlock__countdown_describe(rlock__countdown_desc *d,
                               const rlock__entry *e);
bool rlock__countdown_heard(rlock__entry *e, const char *payload,
                            size_t len);

/* ------------------------ pubsub.c, pubsub_links.c, pubsub_answers.c */

/* The client's subscriber. */
int rlock__pubsub_new(rlock__pubsub **out, rlock_client *c);
void rlock__pubsub_free(rlock__pubsub *ps);
void rlock__pubsub_shutdown(rlock__pubsub *ps);
int rlock__pubsub_sync(rlock__entry *e);
int rlock__pubsub_linger(rlock__entry *e, int64_t ms);
/* The master moved (Sentinel): subscribe everything again on the new one. */
void rlock__pubsub_move(rlock__pubsub *ps);
/* api/cluster_connect.c: the cluster's table changed (io/cluster.h). */
void rlock__pubsub_topology_changed(rlock__pubsub *ps);
/* api/cluster_connect.c: n serves no slot; closes its subscriber link if
 * no channel is on it. Returns 1 if it did, else 0. */
struct rlock__cnode;
int rlock__pubsub_node_unserved(rlock__pubsub *ps, struct rlock__cnode *n);
/* acl.c: the user may not subscribe. */
void rlock__pubsub_assume_refused(rlock__pubsub *ps);

/* ---------------------------------------------------------- direct.c */

int rlock__direct_new(rlock__direct **out, rlock_client *c, int n);
void rlock__direct_shutdown(rlock__direct *d);
void rlock__direct_free(rlock__direct *d);
bool rlock__direct_call(rlock__direct *d, rlock__req *r, int64_t timeout_ms,
                        int *rc);
struct rlock__link_opts;
int rlock__direct_new_node(rlock__direct **out, rlock_client *c, int n,
                           const struct rlock__link_opts *node,
                           const char *name);
void rlock__direct_retire(rlock__direct *d);

/* --------------------------------------------------- direct_cluster.c */

int rlock__direct_cluster_new(rlock__direct_cluster **out, rlock_client *c);
void rlock__direct_cluster_shutdown(rlock__direct_cluster *dc);
void rlock__direct_cluster_free(rlock__direct_cluster *dc);
bool rlock__direct_cluster_call(rlock__direct_cluster *dc, rlock__req *r,
                                int64_t timeout_ms, int *rc);
/* api/cluster_connect.c: the cluster's table changed (io/cluster.h). */
void rlock__direct_cluster_changed(rlock__direct_cluster *dc);

/* ------------------------------------------------------------- acl.c */

/* What connecting found the user may not do, short of failing. */
typedef struct rlock__acl {
    bool no_publish;
    bool no_subscribe;
    char publish_why[160];
    char subscribe_why[160];
    /* ACL DRYRUN was not answered (before Redis 7.0, or the user may not
     * ask it): why, for a debug line; PUBLISH and SUBSCRIBE not checked */
    bool unasked;
    char unasked_why[160];
} rlock__acl;

struct rlock__link_sync;
int rlock__acl_check(rlock_client *c, struct rlock__link_sync *s,
                     rlock__acl *out);
void rlock__acl_report(rlock_client *c, const rlock__acl *found);

/* ---------------------------------------------------------- follow.c */

/* Sentinel mode: c->master and c->follow, from c's URI and config, the
 * master discovered into c->link_opts (made already, with c->tls). The
 * caller's thread, at connect. Returns 0 or the discovery's code. */
typedef struct rlock__follow rlock__follow;
int rlock__follow_new(rlock_client *c);
/* Starts following once the I/O thread runs; every function here is a
 * no-op outside Sentinel mode. */
void rlock__follow_start(rlock_client *c);
/* Stops following (I/O thread, at stop); frees (before the loop is). */
void rlock__follow_shutdown(rlock_client *c);
void rlock__follow_free(rlock_client *c);

/* -------------------------------------------------------- watchdog.c */

int rlock__watchdog_new(rlock__watchdog **out, rlock_client *c);
void rlock__watchdog_start(rlock__watchdog *wd);
void rlock__watchdog_shutdown(rlock__watchdog *wd);
void rlock__watchdog_renew_now(rlock__watchdog *wd);
void rlock__watchdog_free(rlock__watchdog *wd);

/* ---------------------------------------------------------- notify.c */

int rlock__notifier_new(rlock__notifier **out);
void rlock__notifier_free(rlock__notifier *n);
bool rlock__notifier_on_thread(const rlock__notifier *n);
/* Loss events (core/hold.c marks holds lost and posts them): reg is the
 * registration of the lock's callback cb when the hold was lost. Any
 * thread; any lock may be held. */
void rlock__notifier_post(rlock__notifier *n, const char *name,
                          uint64_t owner, uint64_t hold, int reason,
                          rlock_lost_cb cb, void *arg, uint64_t reg);
/* A lock callback's new registration number (0 is none). */
uint64_t rlock__notifier_new_reg(void);
/* Replacing the lock callback of registration old (rlock_on_lost): begin
 * returns 0 with the notifier's mutex held and old's queued events
 * stripped, or RLOCK_EDEADLK (nothing changed) when it would have to wait
 * for old's running call on the I/O thread; end waits until old no longer
 * runs and lets go of the mutex. */
int rlock__notifier_replace_begin(rlock__notifier *n, rlock_client *c,
                                  uint64_t old);
void rlock__notifier_replace_end(rlock__notifier *n, uint64_t old);

/* ----------------------------------------------------- thread_exit.c */

int rlock__threads_init(rlock_client *c);
void rlock__threads_close(rlock_client *c);
void rlock__threads_destroy(rlock_client *c);
int rlock__thread_watch(rlock_client *c);

/* ------------------------------------------------------- semaphore.c */

/* One semaphore acquire: try for permits; when too few are there, wait
 * on the channel (subscription, then permit messages or the re-check) and
 * try again until the deadline. rlock__sem_acquire_start sets it up; the
 * fields are the machine's. */
typedef struct rlock__sem_acquire {
    rlock__entry *entry; /* borrowed: the caller keeps a reference */
    int permits;
    int64_t wait_ms; /* as given: may be RLOCK_WAIT_FOREVER */
    int64_t deadline_ms;
    int state;
    rlock__waiter waiter;
    void (*kick)(rlock__waiter *w); /* an async driver's wake-up */
    bool entered;
    bool canceled;
    /* permit-expirable: the lease asked for, the new permit's id (hex),
     * and the earliest lease end the last try told (wall ms; 0: none) */
    int64_t lease_ms;
    char id[RLOCK__PERMIT_ID_LEN + 1];
    int64_t lease_end_ms;
    /* for the client's statistics, as a lock's acquire */
    int64_t started_us;
    bool waited;
} rlock__sem_acquire;

extern const rlock__op_class rlock__sem_acquire_class;

rlock__step rlock__sem_acquire_start(rlock__sem_acquire *a, rlock__entry *e,
                                     int permits, int64_t wait_ms,
                                     int64_t lease_ms);
void rlock__sem_acquire_clear(rlock__sem_acquire *a);
void rlock__sem_describe(rlock__sem_desc *d, const rlock__entry *e);
rlock__req *rlock__sem_req(rlock_client *c, rlock__spec *s, int *rc);

#endif
