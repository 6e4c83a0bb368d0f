/*
 * map.c: a string-keyed hash table (FNV-1a, separate chaining, doubling at
 * load factor 1). The client keeps its lock entries in one and the I/O
 * thread its channels in another. Not synchronised: callers lock.
 */
#include "proto.h"

#include <stdlib.h>
#include <string.h>

struct rlock__map_node {
    rlock__map_node *next;
    uint64_t hash;
    void *value;
    char key[]; /* NUL-terminated copy */
};

static uint64_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Makes an empty map; returns 0 or RLOCK_ENOMEM. */
int rlock__map_init(rlock__map *m)
{
    m->nbuckets = 16;
    m->count = 0;
    m->buckets = rlock__calloc(m->nbuckets, sizeof(*m->buckets));
    return m->buckets ? RLOCK_OK : RLOCK_ENOMEM;
}

/* Frees the map's nodes (not the values). */
void rlock__map_destroy(rlock__map *m)
{
    for (size_t i = 0; m->buckets && i < m->nbuckets; i++) {
        rlock__map_node *n = m->buckets[i];
        while (n != NULL) {
            rlock__map_node *next = n->next;
            free(n);
            n = next;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->count = 0;
}

static rlock__map_node **find_slot(const rlock__map *m, const char *key,
                                   uint64_t h)
{
    rlock__map_node **slot = &m->buckets[h & (m->nbuckets - 1)];
    while (*slot != NULL &&
           ((*slot)->hash != h || strcmp((*slot)->key, key) != 0))
        slot = &(*slot)->next;
    return slot;
}

/* Returns the value stored under key, or NULL. */
void *rlock__map_get(const rlock__map *m, const char *key)
{
    rlock__map_node *n = *find_slot(m, key, hash_key(key));
    return n ? n->value : NULL;
}

static void grow(rlock__map *m)
{
    size_t nb = m->nbuckets * 2;
    rlock__map_node **b = rlock__calloc(nb, sizeof(*b));
    if (b == NULL)
        return; /* a longer chain is slower, not wrong */
    for (size_t i = 0; i < m->nbuckets; i++) {
        rlock__map_node *n = m->buckets[i];
        while (n != NULL) {
            rlock__map_node *next = n->next;
            n->next = b[n->hash & (nb - 1)];
            b[n->hash & (nb - 1)] = n;
            n = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
}

/* Stores value under a copy of key, replacing any previous value.
 * Returns 0 or RLOCK_ENOMEM. */
int rlock__map_put(rlock__map *m, const char *key, void *value)
{
    uint64_t h = hash_key(key);
    rlock__map_node **slot = find_slot(m, key, h);
    if (*slot != NULL) {
        (*slot)->value = value;
        return RLOCK_OK;
    }
    size_t klen = strlen(key);
    rlock__map_node *n = rlock__malloc(sizeof(*n) + klen + 1);
    if (n == NULL)
        return RLOCK_ENOMEM;
    n->next = NULL;
    n->hash = h;
    n->value = value;
    memcpy(n->key, key, klen + 1);
    *slot = n;
    if (++m->count > m->nbuckets)
        grow(m);
    return RLOCK_OK;
}

/* Removes key; returns the value it had, or NULL. */
void *rlock__map_remove(rlock__map *m, const char *key)
{
    rlock__map_node **slot = find_slot(m, key, hash_key(key));
    rlock__map_node *n = *slot;
    if (n == NULL)
        return NULL;
    void *value = n->value;
    *slot = n->next;
    free(n);
    m->count--;
    return value;
}

/* Calls fn for every pair; fn must not change the map. */
void rlock__map_foreach(const rlock__map *m,
                        void (*fn)(const char *key, void *value, void *arg),
                        void *arg)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (rlock__map_node *n = m->buckets[i]; n != NULL; n = n->next)
            fn(n->key, n->value, arg);
}
