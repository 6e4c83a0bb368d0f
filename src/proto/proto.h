/*
 * proto.h: the private header of rlock's lowest layer, proto.
 *
 * Design note. rlock is built in layers, each calling only those below it:
 * proto < io < core < api, with the CLI on the public API (docs/design.md, "How it
 * works"; scripts/check-layers keeps the shape). proto is the pure part:
 * what a Redis reply means (reply.c, which also copies a reply into the
 * owned tree of admin_reply.h for the rlock tool), Redisson's key and
 * channel names (keys.c), the connection URI (uri.c), each lock kind's
 * script calls (kinds.c), the embedded scripts (scripts.h and the generated table), the
 * text forms of ids (ids.c), a string map (map.c), the allocation
 * wrappers every layer uses (alloc.c), and Redis Cluster's slots,
 * redirections and slot table (cluster.h). It does no I/O, starts and
 * waits for no threads, and reads no clock: whatever depends on time, the
 * network or a client is passed in (rlock__lock_desc carries the wall
 * clock as a function). So every function here is tested by tests/unit and
 * the fuzz targets without a server, and proto's unit tests are linked from
 * proto's sources alone (RLOCK_PROTO_SOURCES), which fails if proto calls
 * upwards.
 *
 * A proto file includes this header, scripts.h, include/rlock.h (for the
 * RLOCK_E* codes and kinds) and the C library, nothing else.
 *
 * hiredis. reply.c decodes the redisReply trees hiredis's reader builds,
 * the RESP codec's data type (STYLE.md 5.3). hiredis 0.14 defines that
 * struct in <hiredis/hiredis.h>, not in <hiredis/read.h> (which has only
 * the REDIS_REPLY_* types and the reader), so the files that read replies
 * (reply.c, and cluster.h's redirect.c and slot_table.c) alone include
 * hiredis.h, for the type: proto calls no hiredis function, and
 * scripts/check-layers refuses any other hiredis header in proto and any
 * call of a redis* function. This header only names struct redisReply.
 */
#ifndef RLOCK_PROTO_H
#define RLOCK_PROTO_H

#include "admin_reply.h"
#include "rlock.h"
#include "scripts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct redisReply;

/* printf-style argument checks for every layer's formatting functions. */
#if defined(__GNUC__)
#define RLOCK__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RLOCK__PRINTF(f, a)
#endif

/* ---------------------------------------------------------------- alloc.c */

/* Each allocation names the function it is made in, so that a test can
 * fail the allocations of one place (rlock__alloc_fail_in). */
#define rlock__malloc(n) rlock__malloc_in((n), __func__)
#define rlock__calloc(count, n) rlock__calloc_in((count), (n), __func__)
#define rlock__realloc(p, n) rlock__realloc_in((p), (n), __func__)
#define rlock__strdup(s) rlock__strdup_in((s), __func__)
void *rlock__malloc_in(size_t n, const char *where);
void *rlock__calloc_in(size_t count, size_t n, const char *where);
void *rlock__realloc_in(void *p, size_t n, const char *where);
char *rlock__strdup_in(const char *s, const char *where);
void rlock__alloc_fail_after(long n);
void rlock__alloc_fail_in(const char *where);
long rlock__alloc_failures(void);

/* ------------------------------------------------------------------ ids.c */

/* Redisson's "redisson_lock__channel" and friends: the pieces of names */
#define RLOCK__UUID_LEN       36
#define RLOCK__REQUEST_ID_LEN 32 /* 16 random bytes in hex, as Redisson */
#define RLOCK__OWNER_MAX      (RLOCK__UUID_LEN + 1 + 20 + 1)

void rlock__hex(char *out, const unsigned char *in, size_t n);
void rlock__uuid4_format(char out[RLOCK__UUID_LEN + 1],
                         const unsigned char random[16]);
void rlock__owner_tag(char out[RLOCK__OWNER_MAX], const char *uuid,
                      uint64_t tid);

/* ----------------------------------------------------------------- keys.c */

char *rlock__prefixed_name(const char *prefix, const char *name);
char *rlock__channel_name(const char *name);
char *rlock__latch_name(const char *name, const char *request_id);
char *rlock__key_prefix(const char *name);

/* ------------------------------------------------------------------ uri.c */

/* One sentinel of a redis+sentinel:// URI. */
typedef struct rlock__uri_node {
    char *host;
    int port;
} rlock__uri_node;

typedef struct rlock__uri {
    char *host; /* NULL for a unix socket, and in sentinel mode */
    int port;
    char *path;     /* unix socket path, or NULL */
    char *user;     /* NULL when absent */
    char *password; /* NULL when absent */
    int db;
    bool tls; /* rediss://, rediss+sentinel:// */
    /* redis+sentinel://: the master's name (NULL: not sentinel mode) and
     * the sentinels to ask for its address, in the URI's order */
    char *master;
    rlock__uri_node *sentinels;
    int nsentinels;
    /* redis+cluster://: the seed nodes, in the URI's order (NULL: not
     * cluster mode) */
    rlock__uri_node *seeds;
    int nseeds;
} rlock__uri;

/* The most sentinels one URI may list. */
#define RLOCK__URI_SENTINELS_MAX 32
/* The most seed nodes one cluster URI may list. */
#define RLOCK__URI_SEEDS_MAX 32

int rlock__uri_parse(const char *text, rlock__uri *out);
void rlock__uri_clear(rlock__uri *uri);

/* ------------------------------------------------------------------ map.c */

typedef struct rlock__map_node rlock__map_node;
typedef struct rlock__map {
    rlock__map_node **buckets;
    size_t nbuckets;
    size_t count;
} rlock__map;

int rlock__map_init(rlock__map *m);
void rlock__map_destroy(rlock__map *m);
void *rlock__map_get(const rlock__map *m, const char *key);
int rlock__map_put(rlock__map *m, const char *key, void *value);
void *rlock__map_remove(rlock__map *m, const char *key);
void rlock__map_foreach(const rlock__map *m,
                        void (*fn)(const char *key, void *value, void *arg),
                        void *arg);

/* ---------------------------------------------------------------- reply.c */

/* What a request's reply is read as. */
typedef enum {
    RLOCK__REPLY_ACQUIRE, /* value = ttl; nil = acquired */
    RLOCK__REPLY_UNLOCK,  /* value = RLOCK__UNLOCK_* */
    RLOCK__REPLY_INTEGER, /* value = the integer; nil allowed */
    RLOCK__REPLY_RENEW,   /* renewed[] = one 0/1 per key */
    RLOCK__REPLY_IGNORE,  /* fire and forget */
} rlock__reply_kind;

/* What a lock_release reply means; negative values are RLOCK_E* codes. */
enum {
    RLOCK__UNLOCK_STILL_HELD = 0,
    RLOCK__UNLOCK_RELEASED = 1,
    RLOCK__UNLOCK_NOT_HELD = 2,
    RLOCK__UNLOCK_UNANNOUNCED = 3, /* released; the PUBLISH was refused */
    RLOCK__UNLOCK_NOT_A_LOCK = 4,  /* the key holds another type now */
    RLOCK__UNLOCK_HEARD = 5,       /* released, and someone listened */
};

/* What a lock_renew reply says about each key. */
enum {
    RLOCK__RENEW_GONE = 0,    /* the lock is not there */
    RLOCK__RENEW_RENEWED = 1, /* our field is there: lease reset */
    RLOCK__RENEW_TAKEN = 2,   /* held, but not by us */
};

int rlock__reply_error_code(const struct redisReply *r);
int rlock__reply_is_noscript(const struct redisReply *r);
const char *rlock__reply_error_text(const struct redisReply *r);
int rlock__reply_is_readonly(const struct redisReply *r);
int rlock__reply_acquire(const struct redisReply *r, int64_t *ttl,
                         int64_t *token);
int rlock__reply_unlock(const struct redisReply *r);
int rlock__reply_integer(const struct redisReply *r, int64_t *out);
int rlock__reply_connected_slaves(const struct redisReply *r);
int rlock__reply_renew(const struct redisReply *r, size_t n,
                       unsigned char *renewed);
int rlock__reply_pong(const struct redisReply *r);
int rlock__reply_script_loaded(const struct redisReply *r, const char *sha1);
int rlock__reply_is_noperm(const struct redisReply *r);
int rlock__reply_dryrun_refused(const struct redisReply *r, char *why,
                                size_t whylen);
rlock_admin_reply *rlock__admin_reply_copy(const struct redisReply *r);
void rlock__admin_reply_free(rlock_admin_reply *r);

/* ---------------------------------------------------------------- kinds.c */

/* lock_acquire_queued.lua's replies to a waiter behind the head of the
 * queue (never a PTTL): the lock is taken; or it is free and the head has
 * not taken it yet (a dead head's grace runs out soon: look again then). */
#define RLOCK__QUEUE_BEHIND (-3)
#define RLOCK__QUEUE_BEHIND_FREE (-4)
/* How long a head that leaves a free lock untaken keeps its place (the
 * script's HEAD_GRACE_MS). */
#define RLOCK__QUEUE_HEAD_GRACE_MS 500

/* A fair lock's waiting thread waits on a lock of its own, whose channel is
 * that waiter's; it never holds anything. */
#define RLOCK__KIND_FAIR_WAIT 100

/* An owner tag, with room for the write side's ":write". */
#define RLOCK__TAG_MAX (RLOCK__OWNER_MAX + 6)

/* One lock as its scripts see it: its kind, the names rlock__kind_names()
 * made, and the settings its calls carry. Every pointer is borrowed and
 * must outlive the specs built from it. */
typedef struct rlock__lock_desc {
    int kind; /* RLOCK_KIND_* or RLOCK__KIND_FAIR_WAIT */
    const char *name;
    const char *channel;
    const char *aux[2];    /* see rlock__kind_names() */
    const char *client_id; /* the client's UUID, owner tags' first part */
    int64_t watchdog_ms;   /* the lease RLOCK_LEASE_WATCHDOG stands for */
    int64_t fair_wait_ms;  /* a fair waiter's slack when none is given */
    int64_t latch_ms;      /* the unlock latch's lifetime */
    int64_t (*wall_ms)(void); /* read by the fair lock's calls */
    /* how unlocks wake waiters: "PUBLISH" (NULL says the same) or, in a
     * cluster with sharded pub/sub, "SPUBLISH" (CLUSTER-SENTINEL.md 1.4),
     * or "SPUBLISH PUBLISH" for a mixed fleet: the scripts run each
     * space-separated command in turn */
    const char *publish;
    /* an RLock's waiters queue in rlock's own keys (aux), and a queued
     * waiter keeps its place for queue_keep_ms without trying again */
    bool queue;
    int64_t queue_keep_ms;
    /* a non-reentrant handle's acquire (Redisson 4.4's non-reentrant lock
     * and fair lock): the owner's second acquire is refused with
     * RLOCK__REENTRY_REFUSED instead of counted */
    bool non_reentrant;
} rlock__lock_desc;

/* The error text Redisson's non-reentrant scripts refuse a holder's second
 * acquire with (RedissonNonReentrantLock.REENTRY_ERR); rlock's decode it
 * as RLOCK_EREENTRY. */
#define RLOCK__REENTRY_REFUSED "NON_REENTRANT_REACQUIRE"

/* One script call of a lock kind, laid out for a request. Its arguments
 * are set by one RLOCK__SPEC_SET, never one at a time, so that a call
 * needing more than RLOCK__SPEC_ARGS does not compile: a dropped argument
 * would change what the script does without any error. */
#define RLOCK__SPEC_ARGS 11
typedef struct rlock__spec {
    const rlock__script *script; /* NULL: a plain command */
    rlock__reply_kind reply;
    int numkeys;
    int argc;
    const char *argv[RLOCK__SPEC_ARGS];
    char owner[RLOCK__TAG_MAX + 8]; /* room for reader + ":write" */
    char reader[RLOCK__TAG_MAX];
    char nums[3][24];
    char *owned; /* a name made for this call */
} rlock__spec;

/* Sets the arguments of spec s (a pointer) to the strings given. */
#define RLOCK__SPEC_SET(s, ...)                                            \
    do {                                                                   \
        const char *spec_args_[] = {__VA_ARGS__};                          \
        _Static_assert(sizeof(spec_args_) / sizeof(spec_args_[0]) <=       \
                           RLOCK__SPEC_ARGS,                               \
                       "more script arguments than RLOCK__SPEC_ARGS");     \
        (s)->argc = 0;                                                     \
        for (size_t spec_i_ = 0;                                           \
             spec_i_ < sizeof(spec_args_) / sizeof(spec_args_[0]);         \
             spec_i_++)                                                    \
            (s)->argv[(s)->argc++] = spec_args_[spec_i_];                  \
    } while (0)

void rlock__kind_tag(char out[RLOCK__TAG_MAX], int kind,
                     const char *client_id, uint64_t owner);
int rlock__kind_make_names(int kind, const char *name, const char *waiter,
                           char **channel, char *aux[2]);
bool rlock__kind_has_drop(int kind);
int rlock__kind_acquire(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t lease_ms, int64_t wait_ms,
                        bool try_once);
bool rlock__kind_has_one_key_release(int kind);
int rlock__kind_release_one_key(rlock__spec *s, const rlock__lock_desc *d,
                                uint64_t owner, int64_t lease_ms);
int rlock__kind_release(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t lease_ms, const char *latch);
int rlock__kind_drop(rlock__spec *s, const rlock__lock_desc *d,
                     uint64_t owner);
int rlock__kind_drop_phantom(rlock__spec *s, const rlock__lock_desc *d,
                             uint64_t owner, int known);
int rlock__kind_force(rlock__spec *s, const rlock__lock_desc *d);
int rlock__kind_give_up(rlock__spec *s, const rlock__lock_desc *d,
                        uint64_t owner, int64_t wait_ms);
int rlock__kind_is_locked(rlock__spec *s, const rlock__lock_desc *d);
void rlock__spec_clear(rlock__spec *s);

/* ------------------------------------------------------------ semaphore.c */

/* The semaphore kinds: entries of their own (core/semaphore.c), never
 * locks; their waiters are woken by permit counts, not unlock messages. */
#define RLOCK__KIND_SEMAPHORE 110
#define RLOCK__KIND_PERMIT_SEMAPHORE 111
#define RLOCK__KIND_IS_SEMAPHORE(k)                                        \
    ((k) == RLOCK__KIND_SEMAPHORE || (k) == RLOCK__KIND_PERMIT_SEMAPHORE)

/* One semaphore as its scripts see it (pointers borrowed). */
typedef struct rlock__sem_desc {
    const char *name;
    const char *channel;
    const char *timeouts; /* permit-expirable: the leases' sorted set */
    const char *publish;  /* as rlock__lock_desc's; NULL: "PUBLISH" */
} rlock__sem_desc;

/* A permit id: 16 random bytes, shown as 32 hex digits (Redisson's
 * ServiceManager.generateId); the sorted set holds the bytes. */
#define RLOCK__PERMIT_ID_LEN 32
/* Redisson's lease end for a permit without a lease (nonExpirableTimeout). */
#define RLOCK__PERMIT_NO_LEASE 922337203685477LL

int rlock__sem_make_names(int kind, const char *name, char **channel,
                          char *aux[2]);
int rlock__sem_try_acquire(rlock__spec *s, const rlock__sem_desc *d,
                           int permits);
int rlock__sem_release(rlock__spec *s, const rlock__sem_desc *d, int permits,
                       bool if_exists);
int rlock__sem_set_permits(rlock__spec *s, const rlock__sem_desc *d,
                           int permits, int64_t ttl_ms);
int rlock__sem_add_permits(rlock__spec *s, const rlock__sem_desc *d,
                           int permits);
int rlock__sem_drain(rlock__spec *s, const rlock__sem_desc *d);
int rlock__sem_available(rlock__spec *s, const rlock__sem_desc *d);
bool rlock__sem_message_permits(const char *payload, size_t len,
                                int64_t *out);
bool rlock__permit_id_valid(const char *id);
int rlock__permit_acquire(rlock__spec *s, const rlock__sem_desc *d,
                          const char *id, int64_t now_ms, int64_t lease_ms);
int rlock__permit_release(rlock__spec *s, const rlock__sem_desc *d,
                          const char *id, int64_t now_ms);
int rlock__permit_update_lease(rlock__spec *s, const rlock__sem_desc *d,
                               const char *id, int64_t now_ms,
                               int64_t lease_ms);
int rlock__permit_available(rlock__spec *s, const rlock__sem_desc *d,
                            int64_t now_ms);
int rlock__permit_add_permits(rlock__spec *s, const rlock__sem_desc *d,
                              int permits);
/* ------------------------------------------------------------ countdown.c */

/* A count-down latch (Redisson's RCountDownLatch), as its calls see it.
 * Its client entry (core) is of kind RLOCK__KIND_COUNTDOWN, whose channel
 * rlock__kind_make_names() makes with rlock__countdown_channel(). */
#define RLOCK__KIND_COUNTDOWN 101

typedef struct rlock__countdown_desc {
    const char *name;    /* the latch's key */
    const char *channel; /* rlock__countdown_channel(name) */
    const char *publish; /* as rlock__lock_desc's */
    int64_t count;       /* the count try_set sets */
} rlock__countdown_desc;

char *rlock__countdown_channel(const char *name);
void rlock__countdown_try_set(rlock__spec *s, const rlock__countdown_desc *d);
void rlock__countdown_count_down(rlock__spec *s,
                                 const rlock__countdown_desc *d);
void rlock__countdown_delete(rlock__spec *s, const rlock__countdown_desc *d);
void rlock__countdown_get(rlock__spec *s, const rlock__countdown_desc *d);

/* A message on a latch's channel: the latch opened ("0"), or anything
 * else ("1": a new count was set, or the latch deleted), which wakes no
 * waiter (as Redisson's). */
enum { RLOCK__COUNTDOWN_OTHER, RLOCK__COUNTDOWN_OPENED };
int rlock__countdown_message(const char *payload, size_t len);

#endif
