/*
 * cluster.h: proto's Redis Cluster pieces (issue 14), pure like the rest of
 * proto: where a key lives, what a cluster error tells the sender, and the
 * slot table a node describes.
 *
 * Design note. The cluster client mode comes after the transport rework;
 * what it will stand on is here first, tested without a server:
 *   slots.c       CRC16 and the hash-tag rule (key -> slot), and whether
 *                 every key and channel of a lock kind shares its name's
 *                 slot, which a cluster needs for one EVAL to name them all
 *   redirect.c    MOVED, ASK, TRYAGAIN, CLUSTERDOWN, ... as a kind, a slot
 *                 and an address (CLUSTER-SENTINEL.md section 6.3's table)
 * The rule is Redis's (CLUSTER-SENTINEL.md 1.1), not Redisson's: the server
 * decides where a key lives, and the two differ only for names with a '}'
 * before their first '{'.
 *
 * It is a header of its own so that proto.h stays the single-server story;
 * it includes proto.h for the codes, the kinds and the allocators.
 */
#ifndef RLOCK_PROTO_CLUSTER_H
#define RLOCK_PROTO_CLUSTER_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct redisReply;

/* ---------------------------------------------------------------- slots.c */

#define RLOCK__SLOT_COUNT 16384

uint16_t rlock__crc16(const void *data, size_t len);
int rlock__key_slot(const void *key, size_t len);
bool rlock__prefix_slot(const char *prefix, size_t len, int *slot);

/* The names one lock uses in its calls: key[0] is the lock name N, the
 * others keys and channels derived from it. A suffixed name is a prefix to
 * which calls append a part of their own (a request id, an owner tag). */
#define RLOCK__LOCK_KEYS_MAX 6
typedef struct rlock__lock_keys {
    size_t count;
    const char *key[RLOCK__LOCK_KEYS_MAX];
    bool suffixed[RLOCK__LOCK_KEYS_MAX];
    char *owned[4]; /* what key[] points into, freed by _clear */
} rlock__lock_keys;

int rlock__lock_keys_make(int kind, const char *name, rlock__lock_keys *k);
void rlock__lock_keys_clear(rlock__lock_keys *k);
int rlock__lock_slot(int kind, const char *name, int *slot);

/* ------------------------------------------------------------- redirect.c */

/* What an error reply means to a cluster client (none of them ran). */
typedef enum {
    RLOCK__REDIR_NONE = 0,    /* not an error reply (or no reply at all) */
    RLOCK__REDIR_OTHER,       /* an error with no cluster meaning */
    RLOCK__REDIR_MOVED,       /* the slot is served at host:port now */
    RLOCK__REDIR_ASK,         /* ask host:port this once, after ASKING */
    RLOCK__REDIR_TRYAGAIN,    /* a multi-key call while its slot moves */
    RLOCK__REDIR_CLUSTERDOWN, /* the cluster cannot serve the slot now */
    RLOCK__REDIR_MASTERDOWN,  /* a replica lost its master */
    RLOCK__REDIR_LOADING,     /* the node is loading its data set */
    RLOCK__REDIR_READONLY,    /* a write reached a replica */
    RLOCK__REDIR_NOSCRIPT,    /* this node lacks the script: send EVAL */
    RLOCK__REDIR_CROSSSLOT,   /* keys of several slots in one call */
} rlock__redir_kind;

/* The longest host a redirection may name (a DNS name is at most 253). */
#define RLOCK__HOST_MAX 256

typedef struct rlock__redirect {
    rlock__redir_kind kind;
    int slot;                   /* MOVED and ASK; else -1 */
    char host[RLOCK__HOST_MAX]; /* MOVED and ASK; "" also means "the host
                                   this reply came from" (Redis 7) */
    int port;                   /* MOVED and ASK; else 0 */
} rlock__redirect;

int rlock__redirect_parse(const struct redisReply *r, rlock__redirect *out);
const char *rlock__redirect_name(rlock__redir_kind kind);
bool rlock__host_is_valid(const char *host, size_t len);

#endif
