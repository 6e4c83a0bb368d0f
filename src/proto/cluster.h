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

#endif
