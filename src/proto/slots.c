/*
 * slots.c: which of Redis Cluster's 16384 slots a key lives in, and whether
 * a lock can live in one.
 *
 * Redis hashes a key with CRC16 (the XMODEM/CCITT variant: polynomial
 * 0x1021, initial value 0, no reflection), keeping the low 14 bits; when the
 * key has a '{' followed later by a '}' with at least one byte between them,
 * only the bytes between the first '{' and the first '}' after it are hashed
 * (the hash tag). That rule is the server's (CLUSTER-SENTINEL.md 1.1), so it
 * is ours.
 *
 * A lock's scripts name several keys in one call (the hash, its channel, the
 * unlock latch, a fair lock's queue, ...), and a cluster refuses a call
 * whose keys span slots with CROSSSLOT. Redisson builds every derived name
 * with N's hash tag or "{N}" (keys.c), so for an ordinary N they all land in
 * slot(N); names with unbalanced braces (a{b, a}b, {}x) break that, and
 * their unlock could never run (1.2). rlock__lock_slot() is the test a
 * cluster client applies before it takes such a name.
 *
 * Some names get a part only at call time: the latch its request id, a fair
 * waiter's channel and a reader's lease keys an owner tag (hex digits,
 * dashes, colons: never a brace). Such a name stays in one slot whatever the
 * part only if its own hash tag closes before the part begins; one that is
 * hashed whole moves with every request id, so it is refused even when a
 * sample suffix happens to land right.
 */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

/* Returns the CRC16 (XMODEM) of len bytes at data, bit by bit: routing
 * hashes a few short names per call, so a table would buy nothing. */
uint16_t rlock__crc16(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021)
                               : (uint16_t)(crc << 1);
    }
    return crc;
}

/* Finds the hash tag of key: returns true with *tag and *tag_len set when
 * key has one, false when Redis hashes the whole key. */
static bool hash_tag(const char *key, size_t len, const char **tag,
                     size_t *tag_len)
{
    const char *open = memchr(key, '{', len);

    if (open == NULL)
        return false;
    const char *start = open + 1;
    const char *close = memchr(start, '}', len - (size_t)(start - key));
    if (close == NULL || close == start)
        return false;
    *tag = start;
    *tag_len = (size_t)(close - start);
    return true;
}

/* Returns the cluster slot (0..16383) of the len bytes of key. */
int rlock__key_slot(const void *key, size_t len)
{
    const char *tag;
    size_t tag_len;

    if (hash_tag(key, len, &tag, &tag_len))
        return rlock__crc16(tag, tag_len) & (RLOCK__SLOT_COUNT - 1);
    return rlock__crc16(key, len) & (RLOCK__SLOT_COUNT - 1);
}

/* Decides whether every key that begins with the len bytes of prefix and
 * goes on without a brace (a request id, an owner tag) is in one slot:
 * true, with *slot set, when prefix's own hash tag closes; false when Redis
 * would hash the whole key, whose slot then moves with the rest. */
bool rlock__prefix_slot(const char *prefix, size_t len, int *slot)
{
    const char *tag;
    size_t tag_len;

    if (!hash_tag(prefix, len, &tag, &tag_len))
        return false;
    *slot = rlock__crc16(tag, tag_len) & (RLOCK__SLOT_COUNT - 1);
    return true;
}

static void add_key(rlock__lock_keys *k, const char *key, bool suffixed)
{
    k->key[k->count] = key;
    k->suffixed[k->count] = suffixed;
    k->count++;
}

/* Lists the names a lock of kind named name uses (see cluster.h): N first,
 * then, for every kind, the unlock latch "redisson_unlock_latch:{N}" (each
 * call appends ":<request id>") and:
 *   spin        the channel
 *   lock, fair  the channel, and again as the prefix of each waiter's
 *               "<channel>:<owner tag>"; the queue list and timeout set
 *               (the lock's are rlock's own: lock_acquire_queued.lua)
 *   fenced      the channel and the token counter
 *   read, write the rwlock channel and the key prefix "{N}" of the readers'
 *               lease keys "{N}:<owner tag>:rwlock_timeout:<k>": the write
 *               side lists them too, as both sides are one lock on one hash
 * name is borrowed until rlock__lock_keys_clear(). Returns 0, RLOCK_EINVAL
 * (name NULL or empty) or RLOCK_ENOMEM (k cleared). */
int rlock__lock_keys_make(int kind, const char *name, rlock__lock_keys *k)
{
    char **channel = &k->owned[0], **latch = &k->owned[1];
    char **aux = &k->owned[2];
    int rc;

    memset(k, 0, sizeof(*k));
    if (name == NULL || name[0] == '\0')
        return RLOCK_EINVAL;
    if (kind == RLOCK__KIND_FAIR_WAIT)
        kind = RLOCK_KIND_FAIR; /* the same lock, seen by one waiter */
    rc = rlock__kind_make_names(kind, name, NULL, channel, aux);
    if (rc == RLOCK_OK) {
        *latch = rlock__prefixed_name("redisson_unlock_latch", name);
        if (*latch == NULL)
            rc = RLOCK_ENOMEM;
    }
    if (rc != RLOCK_OK) {
        rlock__lock_keys_clear(k);
        return rc;
    }
    add_key(k, name, false);
    add_key(k, *channel, false);
    add_key(k, *latch, true);
    switch (kind) {
    case RLOCK_KIND_LOCK: /* rlock's queue and a queued waiter's channel */
    case RLOCK_KIND_FAIR:
        add_key(k, *channel, true);
        add_key(k, aux[0], false);
        add_key(k, aux[1], false);
        break;
    case RLOCK_KIND_FENCED:
        add_key(k, aux[0], false);
        break;
    case RLOCK_KIND_READ:
    case RLOCK_KIND_WRITE:
        add_key(k, aux[0], true);
        break;
    default:
        break;
    }
    return RLOCK_OK;
}

/* Frees what rlock__lock_keys_make() made; a cleared k may be cleared
 * again. */
void rlock__lock_keys_clear(rlock__lock_keys *k)
{
    for (size_t i = 0; i < sizeof(k->owned) / sizeof(k->owned[0]); i++) {
        free(k->owned[i]);
        k->owned[i] = NULL;
    }
    k->count = 0;
}

/* Decides whether every key and channel that a lock of kind named name uses
 * (rlock__lock_keys_make()) lives in one cluster slot, whatever the parts
 * calls append. Returns 0 with *slot set to it; RLOCK_EINVAL (name NULL or
 * empty, or its names span slots: a cluster would refuse its calls with
 * CROSSSLOT); or RLOCK_ENOMEM. */
int rlock__lock_slot(int kind, const char *name, int *slot)
{
    rlock__lock_keys k;
    int rc = rlock__lock_keys_make(kind, name, &k);
    int want = 0;

    if (rc != RLOCK_OK)
        return rc;
    for (size_t i = 0; i < k.count && rc == RLOCK_OK; i++) {
        size_t len = strlen(k.key[i]);
        int got;

        if (!k.suffixed[i])
            got = rlock__key_slot(k.key[i], len);
        else if (!rlock__prefix_slot(k.key[i], len, &got))
            rc = RLOCK_EINVAL;
        if (rc == RLOCK_OK && i == 0)
            want = got;
        else if (rc == RLOCK_OK && got != want)
            rc = RLOCK_EINVAL;
    }
    rlock__lock_keys_clear(&k);
    if (rc == RLOCK_OK)
        *slot = want;
    return rc;
}
