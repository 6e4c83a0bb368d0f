/*
 * api/api.h: what the files of src/api share: the public functions are
 * thin drivers of the core's operations (core/core.h): the handles, the
 * blocking and async drivers, the lock kinds, multi-locks, the config and
 * its file reader, the statistics and the admin calls.
 */
#ifndef RLOCK_API_API_H
#define RLOCK_API_API_H

#include "core/core.h"

/* The longest lease accepted: far beyond any real use, and far from the
 * overflow Redis checks for in PEXPIRE. */
#define RLOCK__LEASE_MAX ((int64_t)1 << 50)

/* A handle: one user's view of an entry (lock.c). A handle still open when
 * its client is freed is closed (rlock__handles_close, from client.c):
 * client and entry become NULL, and every call but
 * rlock_kind(), rlock_name() and rlock_free() answers RLOCK_ECLOSED. */
struct rlock {
    rlock_client *client; /* NULL once closed */
    rlock__entry *entry;  /* referenced; NULL once closed */
    int kind;             /* RLOCK_KIND_* */
    char *name;           /* owned: outlives the client */
    struct rlock *next, **prev; /* the client's handles (entries_mu) */
    bool borrowed; /* owned by an rlock_rw: rlock_free() leaves it */
    /* a non-reentrant lock's handle (nonreentrant.c): kind is the entry's,
     * RLOCK_KIND_LOCK or RLOCK_KIND_FAIR, shared with reentrant handles */
    bool non_reentrant;
    /* spin lock back-off (rlock_spin_set_backoff) */
    int64_t spin_initial_ms;
    int64_t spin_max_ms;
    int spin_multiplier;
};

int rlock__handle_new(rlock_client *c, int kind, const char *name,
                      rlock **out);
void rlock__handle_free(rlock *l);
int rlock__handle_check(const rlock *l);
void rlock__handles_close(rlock_client *c);

/* The blocking driver's executor (lock_sync.c): rlock__sync_call() does
 * one round trip of r on the calling thread when a direct connection is
 * idle, else through the I/O thread, within timeout_ms; it returns r's
 * status (the caller keeps its reference). rlock__sync_command() builds,
 * runs and frees one request with the command timeout and copies out its
 * value and nil flag (either may be NULL). */
int rlock__sync_call(rlock__req *r, int64_t timeout_ms);
int rlock__sync_command(rlock_client *c, const rlock__script *script,
                        rlock__reply_kind kind, int numkeys, int argc,
                        const char *const *argv, int64_t *value, bool *nil);
/* Runs a core machine (class cls, state op) from its first step st to its
 * end on the calling thread; returns its status (lock_sync.c). */
int rlock__sync_run(const rlock__op_class *cls, void *op, rlock__step st);

/* For multi.c (lock_sync.c, lock.c). rlock__trylock_ex() is rlock_trylock()
 * that also returns a fenced lock's token (token may be NULL) and, when
 * bounded, never lets one Redis round trip outlast the wait (a Redlock's
 * per-server share: a stalled server costs its share, not a command
 * timeout). rlock__set_lease() PEXPIREs a lock the calling thread holds to
 * lease_ms and makes that the lease its inner unlocks restore
 * (RedissonMultiLock after newLease). */
int rlock__trylock_ex(rlock *l, int64_t wait_ms, int64_t lease_ms,
                      int64_t *token, bool bounded);
int rlock__set_lease(rlock *l, int64_t lease_ms);

/* Hands an async call's completion to its consumer: queued for the user's
 * loop when one is attached, else run here (completions.c). Any thread. */
void rlock__deliver(rlock_client *c, rlock_done_cb cb, rlock *lock,
                    uint64_t owner, int status, void *arg);

/* The async calls (lock_async.c): client.c ends them when it closes. */
typedef struct rlock__aop rlock__aop;
int rlock__countdown_await_async(rlock *h, int64_t wait_ms, rlock_done_cb cb,
                                 void *arg);
int rlock__sem_acquire_async(rlock *h, int permits, int64_t wait_ms,
                             int64_t lease_ms, char *id_out,
                             rlock_done_cb cb, void *arg);
void rlock__async_shutdown(rlock_client *c);
void rlock__async_client_free(rlock_client *c);

/* The settings (config.c; struct rlock_config is core/client.h's). */
void rlock__config_defaults(rlock_config *cfg);
int64_t rlock__config_latch_ms(const rlock_config *cfg);
int rlock__config_copy(rlock_config *dst, const rlock_config *src);
void rlock__config_clear(rlock_config *cfg);
int rlock__config_apply_uri(const rlock_config *cfg, rlock__uri *uri);
/* The config's TLS settings as src/io/tls.h takes them (strings borrowed
 * from cfg). */
struct rlock__tls_settings;
void rlock__config_tls(const rlock_config *cfg,
                       struct rlock__tls_settings *out);
/* Cluster mode (cluster_connect.c): the first seed of c's URI from index
 * first on that describes a cluster serving every slot, its index left in
 * *used, its address in o and its table in *out (freed by the caller);
 * then, once the I/O thread's loop exists, c->cluster made from that
 * table. Each returns 0 or a negative code (connecting fails with it). */
struct rlock__link_opts;
struct rlock__slot_table;
int rlock__cluster_find_seed(rlock_client *c, struct rlock__link_opts *o,
                             int first, int *used,
                             struct rlock__slot_table **out);
int rlock__cluster_attach(rlock_client *c, const struct rlock__slot_table *t);

/* Semaphore handles (semaphore.c; permit_semaphore.c uses them too): each
 * wraps a lock handle of an RLOCK__KIND_*SEMAPHORE kind. */
int rlock__sem_check(const rlock *h);
void rlock__sem_handle_desc(const rlock *h, rlock__sem_desc *d);
int rlock__sem_call(rlock *h, rlock__spec *spec, int rc, int64_t *value);
int rlock__sem_acquire_on(rlock *h, int permits, int64_t wait_ms,
                          int64_t lease_ms, char *id);
/* An async semaphore acquire's completion (one of the two callbacks set),
 * and rlock__sem_acquire_async_on(), which starts one on h with a copy of
 * it: 0 (the callback will run) or a negative code (it will not). */
typedef struct rlock__sem_done {
    rlock_semaphore_cb sem_cb;
    rlock_semaphore *sem;
    rlock_permit_semaphore_cb permit_cb;
    rlock_permit_semaphore *permit;
    void *arg;
    char id[RLOCK_PERMIT_ID_SIZE]; /* the permit's, once taken */
} rlock__sem_done;
int rlock__sem_acquire_async_on(rlock *h, int permits, int64_t wait_ms,
                                int64_t lease_ms, const rlock__sem_done *d);

#endif
