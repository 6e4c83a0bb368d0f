/*
 * internal.h: what the files still directly in src/ (ioloop.c, command.c,
 * direct.c, acl.c, client.c) share with the layers while issue 13 sorts
 * them: the I/O thread's loop, the command connections (io/conn.h), the
 * requests, the direct connections, the client itself, and the
 * declarations of src/core and src/api those files use (owner.c's ids and
 * clocks, log.c, config.c, and the few marked below). Everything else the
 * layers share is in their own headers: proto/proto.h, io/io.h,
 * core/core.h and api/api.h, which includes core/core.h, which includes
 * this. Nothing here is API.
 *
 * Threads. A client has one I/O thread (ioloop.c) that alone touches its
 * links (src/io), the channel table and the watchdog timer. User threads
 * talk to it by submitting tasks (rlock__loop_submit) and, for blocking
 * calls, waiting on the request's condition variable (command.c).
 *
 * Locks, outermost first (never take them in another order):
 *   client->entries_mu  the name -> entry table and every entry's refs
 *   entry->mu           an entry's holders, waiter count, permits, flags
 *   req->mu             one request's completion
 *   loop->mu            the submit queue
 *   client->threads_mu  registered owner threads (thread_exit.c)
 *   rec->mu             one registration's client pointer (thread_exit.c)
 *   notifier->mu        the lost-lock event queue (notify.c)
 * No lock is held across a Redis round trip.
 */
#ifndef RLOCK_INTERNAL_H
#define RLOCK_INTERNAL_H

#include "rlock.h"
#include "core/stats.h"
#include "io/conn.h"
#include "proto/proto.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- owner.c */

/* (core/owner.c; here while command.c, direct.c and acl.c use them.) */
uint64_t rlock__thread_id(void);
int rlock__random_bytes(void *buf, size_t len);
int rlock__uuid4(char out[RLOCK__UUID_LEN + 1]);
int rlock__request_id(char out[RLOCK__REQUEST_ID_LEN + 1]);
int64_t rlock__now_ms(void);
int64_t rlock__wall_ms(void);
void rlock__abs_timespec(int64_t deadline_ms, struct timespec *ts);

/* --------------------------------------------------------------- config.c */

/* (api/config.c; here while client.c embeds the settings and
 * api/admin.c applies their URI.) */
struct rlock_config {
    int64_t watchdog_timeout_ms;
    int64_t command_timeout_ms;
    int64_t connect_timeout_ms;
    int retry_attempts;
    int64_t retry_interval_ms;
    int64_t recheck_interval_ms;
    int connections;
    int64_t fair_wait_timeout_ms;

    /* server settings; every string is owned (NULL: not set) */
    char *server;         /* URI used when connect gets none */
    char *user;           /* with credentials_set: NULL = no user */
    char *password;       /* with credentials_set: NULL = no AUTH */
    bool credentials_set; /* user/password replace the URI's */
    int database;
    bool database_set; /* database replaces the URI's /db */
    char *client_name; /* CLIENT SETNAME on every connection */

    /* Sentinel mode (a redis+sentinel:// server) */
    char *sentinel_user;     /* with sentinel_credentials_set */
    char *sentinel_password; /* with sentinel_credentials_set */
    bool sentinel_credentials_set; /* else the data nodes' are used */
    int64_t sentinel_scan_interval_ms; /* the poll of the master's address */

    /* TLS, for a rediss:// server; every string is owned (NULL: not set) */
    char *tls_ca_file;
    char *tls_ca_dir;
    char *tls_cert_file; /* set together with tls_key_file, or neither */
    char *tls_key_file;
    char *tls_server_name;
    int tls_verify; /* RLOCK_TLS_VERIFY_* */

    rlock_log_cb log_cb; /* NULL: no logging */
    void *log_arg;       /* borrowed */
    int log_level;       /* RLOCK_LOG_*: the least severe line passed on */
    bool stats;          /* count (rlock_client_stats); default on */
    bool lock_barging;   /* Redisson's barging waiters; default off */
};

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

/* ------------------------------------------------------------------ log.c */

/* (core/log.c; here while command.c, direct.c and acl.c log.) */
/* Log lines go to the config's hook. Call rlock__log only on an rlock
 * thread and with no rlock lock held (rlock.h promises both); connecting
 * runs on the caller's thread, so it uses rlock__log_later, which hands the
 * line to the I/O thread. */
bool rlock__log_enabled(const rlock_client *c, int level);
void rlock__log(const rlock_client *c, int level, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);
void rlock__log_later(rlock_client *c, int level, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);

/* --------------------------------------------------------------- ioloop.c */

typedef struct rlock__loop rlock__loop;
typedef struct rlock__timer rlock__timer;

/* A unit of work for the I/O thread. run() is called once: on the I/O thread
 * with status 0, or, when the loop has stopped, with RLOCK_ECLOSED on
 * whichever thread submitted or stopped. */
typedef struct rlock__task {
    struct rlock__task *next;
    void (*run)(struct rlock__task *t, int status);
} rlock__task;

int rlock__loop_start(rlock__loop **out, void (*on_stop)(void *), void *arg);
void rlock__loop_submit(rlock__loop *loop, rlock__task *t);
void rlock__loop_stop(rlock__loop *loop);
void rlock__loop_free(rlock__loop *loop);
bool rlock__loop_on_thread(const rlock__loop *loop);
struct ev_loop;
struct ev_loop *rlock__loop_ev(rlock__loop *loop);

rlock__timer *rlock__timer_new(rlock__loop *loop, void (*fn)(void *),
                               void *arg);
void rlock__timer_start(rlock__timer *t, int64_t after_ms, int64_t repeat_ms);
void rlock__timer_stop(rlock__timer *t);
void rlock__timer_free(rlock__timer *t);

typedef struct rlock__fdwatch rlock__fdwatch;

rlock__fdwatch *rlock__fdwatch_new(rlock__loop *loop, int fd,
                                   void (*fn)(void *), void *arg);
void rlock__fdwatch_start(rlock__fdwatch *fw);
void rlock__fdwatch_stop(rlock__fdwatch *fw);
void rlock__fdwatch_free(rlock__fdwatch *fw);

/* -------------------------------------------------------------- command.c */

/* One request laid out as a command (rlock__req_command()). */
#define RLOCK__COMMAND_INLINE 16
typedef struct rlock__command {
    const char **argv;
    size_t *lens;
    const char *inline_argv[RLOCK__COMMAND_INLINE];
    size_t inline_lens[RLOCK__COMMAND_INLINE];
    char numkeys[16];
} rlock__command;

typedef struct rlock__req rlock__req;
struct rlock__req {
    rlock__task task;
    atomic_int refs;
    rlock_client *client;
    rlock__reply_kind kind;
    const rlock__script *script; /* NULL: a plain command */
    bool reloaded; /* direct.c: NOSCRIPT seen, the script loaded again */
    char *latch_del; /* unlock: latch key the I/O thread DELs once the
                        reply reached its caller (owned) */
    int conn;                    /* command connection index, -1: any */
    /* monotonic; 0: a command timeout from when the I/O thread sends it */
    int64_t deadline_ms;
    rlock__conn_cmd cmd;   /* I/O thread: the send (io/conn.h) */
    rlock__command layout; /* cmd's argv */
    int numkeys;
    int argc;
    char **argv; /* owned copies */
    size_t *argvlen;

    /* an acquire: whose hold it takes, so that a hold taken after its
     * caller gave up can be given back (rlock__give_back_new) */
    struct rlock__entry *lock_entry; /* referenced */
    uint64_t lock_owner;
    int64_t lock_lease_ms;
    int nrenew; /* RLOCK__REPLY_RENEW: locks in the reply */

    /* result, written by the I/O thread before done is set */
    int status; /* 0 or RLOCK_E* */
    int64_t value;
    int64_t token; /* a fenced acquire's token */
    bool nil;
    unsigned char *renewed; /* RLOCK__REPLY_RENEW: numkeys entries */

    /* completion: on_reply runs on the I/O thread; without one, a blocked
     * caller is woken through mu/cv */
    void (*on_reply)(rlock__req *r);
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    bool abandoned;
};

rlock__req *rlock__req_new(rlock_client *c, const rlock__script *script,
                           rlock__reply_kind kind, int numkeys, int argc,
                           const char *const *argv);
void rlock__req_unref(rlock__req *r);
void rlock__req_send(rlock__req *r);
int rlock__req_call(rlock__req *r, int64_t timeout_ms);
int rlock__req_wait(rlock__req *r, int64_t deadline_ms);
void rlock__send_ignored(rlock_client *c, const rlock__script *script,
                         int numkeys, int argc, const char *const *argv);
int rlock__call(rlock_client *c, const rlock__script *script,
                rlock__reply_kind kind, int numkeys, int argc,
                const char *const *argv, int64_t *value, bool *nil);
void rlock__req_dispatch(rlock__req *r);
rlock__req *rlock__give_back_new(rlock__req *acq);
void rlock__req_give_back(rlock__req *acq);
void rlock__req_decode(rlock__req *r, const struct redisReply *reply);
void rlock__req_note_reload(rlock__req *r);
void rlock__req_conn_event(rlock__conn *cn, rlock__conn_event ev,
                           rlock__conn_cmd *cmd, const char *why, void *arg);
int rlock__req_command(const rlock__req *r, rlock__command *cmd);
void rlock__command_clear(rlock__command *cmd);

/* ------------------------------------------ what src/core and src/api own */

/* Declared here, not in core/core.h or api/api.h, only because a file still
 * directly in src/ (command.c, acl.c, client.c: io-async and io-sync are
 * rewriting them) uses them and may not include the layer headers yet;
 * issue 13's last step moves them where they belong. */

/* The entry, core/entry.c's: command.c gives back a late acquire. Shared
 * state of one lock within a client (Redisson's RedissonLockEntry plus the
 * watchdog's entry): one per kind and name. The fields here are set when
 * the entry is made and never change, so any file may read them; its
 * holds, waiters and flags belong to src/core (entry.c and hold.c, whose
 * functions core/core.h declares), and nobody else writes them. A fair
 * lock's waiting thread also waits on an entry of its own
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

/* core/entry_kinds.c: command.c gives back a late acquire. */
int rlock__spec_release(rlock__spec *s, const rlock__entry *e, uint64_t owner,
                        int64_t lease_ms, const char *latch);
rlock__req *rlock__req_from_spec(rlock_client *c, const rlock__spec *s);

/* core/pubsub.c: acl.c reports a user who may not subscribe. */
typedef struct rlock__pubsub rlock__pubsub;
void rlock__pubsub_assume_refused(rlock__pubsub *ps);

/* The client's parts (client.c makes and ends them; core/core.h declares
 * their functions). */
typedef struct rlock__watchdog rlock__watchdog;
typedef struct rlock__notifier rlock__notifier;
typedef struct rlock__thread_rec rlock__thread_rec;

/* api/lock.c: client.c closes the handles still open. */
void rlock__handles_close(rlock_client *c);

/* ------------------------------------------------------ api/lock_async.c */

/* (Here while client.c ends the async calls.) */
typedef struct rlock__aop rlock__aop;
struct rlock__user_loop;

void rlock__async_shutdown(rlock_client *c);
void rlock__async_client_free(rlock_client *c);

/* --------------------------------------------------------------- direct.c */

typedef struct rlock__direct rlock__direct;

int rlock__direct_new(rlock__direct **out, rlock_client *c, int n);
void rlock__direct_shutdown(rlock__direct *d);
void rlock__direct_free(rlock__direct *d);
bool rlock__direct_call(rlock__direct *d, rlock__req *r, int64_t timeout_ms,
                        int *rc);

/* ------------------------------------------------------------------ acl.c */

/* What connecting found the user may not do, short of failing. */
typedef struct rlock__acl {
    bool no_publish;
    bool no_subscribe;
    char publish_why[160];
    char subscribe_why[160];
} rlock__acl;

struct rlock__link_sync;
int rlock__acl_check(rlock_client *c, struct rlock__link_sync *s,
                     rlock__acl *out);
void rlock__acl_report(rlock_client *c, const rlock__acl *found);

/* --------------------------------------------------------------- client.c */

struct rlock_client {
    char id[RLOCK__UUID_LEN + 1];
    pid_t pid; /* the process that created it (fork check) */
    rlock_config cfg;
    rlock__uri uri;
    int64_t latch_ms;

    /* how every link reaches and greets the server (src/io/link.h): the
     * address resolved and the TLS context built at creation, on the
     * caller's thread; strings borrowed from uri and cfg. Owned; a pointer
     * so that this header need not bring in the socket headers. */
    struct rlock__link_opts *link_opts;
    struct rlock__tls_ctx *tls; /* rediss:// only, else NULL */

    rlock__loop *loop;
    rlock__conn *conns; /* cfg.connections command connections */
    unsigned next_conn; /* I/O thread: round robin */
    rlock__pubsub *pubsub;
    rlock__watchdog *watchdog;
    rlock__direct *direct; /* connections used on the caller's thread */

    rlock__notifier *notifier;
    rlock__stats *stats; /* NULL: statistics off (core/stats.h) */
    pthread_mutex_t done_mu; /* async completions for the user loop */
    struct rlock__user_loop *user_loop;
    struct done_item *done_head, *done_tail;
    rlock__aop *async_ops; /* I/O thread: pending async calls */
    bool threads_made; /* owner threads' exits (thread_exit.c) */
    pthread_mutex_t threads_mu;
    pthread_cond_t threads_cv; /* an exit handler finished with us */
    rlock__thread_rec *threads;

    pthread_mutex_t entries_mu;
    rlock__map entries; /* name -> rlock__entry */
    struct rlock *handles; /* open handles (entries_mu) */
    atomic_uint_fast64_t next_epoch;
    atomic_bool closing;
    atomic_bool unannounced_warned; /* a refused unlock PUBLISH was logged */
    pthread_condattr_t condattr; /* CLOCK_MONOTONIC */
};

int rlock__client_check(const rlock_client *c);
rlock__conn *rlock__client_pick_conn(rlock_client *c);
int rlock__client_sync_open(rlock_client *c, int64_t connect_ms,
                            struct rlock__link_sync **out, char *err,
                            size_t errlen);

#endif
