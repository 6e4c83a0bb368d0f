/*
 * cluster.h: proto's Redis Cluster pieces, pure like the rest of
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
 *   slot_table.c  the slot -> node table from CLUSTER SLOTS or CLUSTER
 *                 SHARDS, as hiredis's reader built the reply
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

/* ----------------------------------------------------------- slot_table.c */

typedef enum {
    RLOCK__NODE_MASTER = 0,
    RLOCK__NODE_REPLICA = 1,
} rlock__node_role;

/* One node of the table. A node is known by host and port; no two nodes of
 * a table share both. */
typedef struct rlock__cluster_node {
    char *host;   /* owned; the host asked when the reply named none */
    int port;     /* the port the reply gave, or its tls-port alone */
    int tls_port; /* CLUSTER SHARDS's tls-port, 0 when it gave none */
    char id[41];  /* the node id, "" when the reply gave none */
    rlock__node_role role;
    int master;  /* a replica's master (a node index); -1 for a master */
    bool online; /* SHARDS: health "online"; SLOTS lists usable nodes only */
} rlock__cluster_node;

/* No node serves the slot. */
#define RLOCK__SLOT_UNSERVED UINT16_MAX

/* The cluster as one node described it: slot -> the index of the master
 * serving it, and the nodes (masters and replicas). */
typedef struct rlock__slot_table {
    uint16_t owner[RLOCK__SLOT_COUNT]; /* node index or RLOCK__SLOT_UNSERVED */
    rlock__cluster_node *nodes;
    size_t count;
    size_t cap;
} rlock__slot_table;

int rlock__slot_table_from_slots(const struct redisReply *r,
                                 const char *asked_host,
                                 rlock__slot_table **out);
int rlock__slot_table_from_shards(const struct redisReply *r,
                                  const char *asked_host,
                                  rlock__slot_table **out);
void rlock__slot_table_free(rlock__slot_table *t);
const rlock__cluster_node *
rlock__slot_table_master(const rlock__slot_table *t, int slot);
int rlock__slot_table_find(const rlock__slot_table *t, const char *host,
                           int port);
bool rlock__slot_table_covers_all(const rlock__slot_table *t);

#endif
