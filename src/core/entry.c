/*
 * entry.c: the client's memory of each lock name: the table of entries,
 * and what an acquire reads of one to decide whether to wait its turn.
 *
 * An entry lives in the client's table while a handle, a hold, a waiter or
 * an in-flight request refers to it (hold.c keeps its holds). This file owns
 * the table: finding or making an entry, its references, the walks over
 * every entry and freeing them. Who waits for an entry (its waiters, the
 * wake-ups that unlock messages hand out to them, its stay in its channel
 * and its subscription flags) is entry_waiters.c's. The split falls
 * between the table, under client->entries_mu, and one entry's waiting
 * side, under that entry's own mu: the two meet only in the entry itself
 * (entry_impl.h) and its references (rlock__entry_ref/_unref).
 */
#include "entry_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- table */

static void entry_free(entry *e)
{
    while (e->holders != NULL)
        rlock__holder_remove(e, e->holders);
    pthread_mutex_destroy(&e->mu);
    free(e->pub.channel);
    free(e->pub.aux[0]);
    free(e->pub.aux[1]);
    free(e->pub.name);
    free(e->key);
    free(e);
}

/* The entry's key in the client's table: its kind, the waiter's tag for a
 * fair waiter's entry, and the name (tags are "<uuid>:<digits>", so no two
 * keys collide). Returns a malloc'd string or NULL. */
char *rlock__entry_key(int kind, const char *name, const char *waiter)
{
    size_t len = strlen(name) + (waiter ? strlen(waiter) : 0) + 16;
    char *key = rlock__malloc(len);
    if (key != NULL)
        snprintf(key, len, "%d:%s%s%s", kind, waiter ? waiter : "",
                 waiter ? ":" : "", name);
    return key;
}

/* Returns the entry of the lock kind/name with one more reference, creating
 * it if needed, or NULL when out of memory. waiter: the owner tag of a fair
 * waiter's entry (RLOCK__KIND_FAIR_WAIT), else NULL. */
rlock__entry *rlock__entry_get(rlock_client *c, int kind, const char *name,
                               const char *waiter)
{
    char *key = rlock__entry_key(kind, name, waiter);
    if (key == NULL)
        return NULL;
    pthread_mutex_lock(&c->entries_mu);
    entry *e = rlock__map_get(&c->entries, key);
    if (e != NULL) {
        e->refs++;
        pthread_mutex_unlock(&c->entries_mu);
        free(key);
        return &e->pub;
    }
    e = rlock__calloc(1, sizeof(*e));
    if (e == NULL)
        goto out;
    e->pub.client = c;
    e->pub.kind = kind;
    e->refs = 1;
    e->key = key;
    key = NULL;
    e->pub.name = rlock__strdup(name);
    if (e->pub.name == NULL || rlock__kind_names(&e->pub, waiter) != 0 ||
        rlock__map_put(&c->entries, e->key, e) != 0) {
        free(e->pub.name);
        free(e->pub.channel);
        free(e->pub.aux[0]);
        free(e->pub.aux[1]);
        free(e->key);
        free(e);
        e = NULL;
        goto out;
    }
    pthread_mutex_init(&e->mu, NULL);
out:
    pthread_mutex_unlock(&c->entries_mu);
    free(key);
    return e != NULL ? &e->pub : NULL;
}

/* Returns, with one more reference, the entry on which owner waits for
 * fair lock e: the one of its own channel. NULL when out of memory. */
rlock__entry *rlock__fair_waiter_entry(rlock__entry *e, uint64_t owner)
{
    char tag[RLOCK__TAG_MAX];
    rlock__kind_owner_tag(tag, e, owner);
    return rlock__entry_get(e->client, RLOCK__KIND_FAIR_WAIT, e->name, tag);
}

/* Takes one more reference. Must not be called with the entry's mutex
 * held. */
void rlock__entry_ref(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&pub->client->entries_mu);
    e->refs++;
    pthread_mutex_unlock(&pub->client->entries_mu);
}

/* Drops a reference. The entry is freed when nothing refers to it and no
 * thread holds the lock: a hold outlives its handle, so that the watchdog
 * keeps renewing it until its owner unlocks through a new handle or the
 * client is freed. Must not be called with the entry's mutex held. */
void rlock__entry_unref(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    rlock_client *c = pub->client;
    pthread_mutex_lock(&c->entries_mu);
    if (--e->refs == 0) {
        pthread_mutex_lock(&e->mu);
        bool idle = e->holders == NULL;
        pthread_mutex_unlock(&e->mu);
        if (idle) {
            rlock__map_remove(&c->entries, e->key);
            entry_free(e);
        }
    }
    pthread_mutex_unlock(&c->entries_mu);
}

typedef struct walk {
    void (*fn)(entry *e, void *arg);
    void *arg;
} walk;

static void walk_one(const char *key, void *value, void *arg)
{
    walk *w = arg;
    (void)key;
    w->fn(value, w->arg);
}

/* Calls fn for every entry under the table's lock (fn may take an entry's
 * mutex, and must not add or drop entries). */
void rlock__entries_walk(rlock_client *c, void (*fn)(entry *e, void *arg),
                         void *arg)
{
    walk w = {fn, arg};
    pthread_mutex_lock(&c->entries_mu);
    rlock__map_foreach(&c->entries, walk_one, &w);
    pthread_mutex_unlock(&c->entries_mu);
}

/* Up to cap idle entries found by one pass of rlock__entries_sweep(). */
typedef struct sweep_batch {
    entry *items[64];
    size_t n;
} sweep_batch;

static void sweep_entry(const char *key, void *value, void *arg)
{
    entry *e = value;
    sweep_batch *b = arg;
    (void)key;
    while (e->holders != NULL)
        rlock__holder_remove(e, e->holders);
    if (e->refs == 0 && b->n < sizeof(b->items) / sizeof(b->items[0]))
        b->items[b->n++] = e;
}

/* Forgets every hold and frees every entry nothing refers to: all of
 * them, once the handles are closed. Only once the I/O thread has stopped
 * (rlock_client_free). It allocates nothing (batches on the stack), so a
 * client freed when memory has run out frees them all too. */
void rlock__entries_sweep(rlock_client *c)
{
    for (;;) {
        sweep_batch b = {.n = 0};
        rlock__map_foreach(&c->entries, sweep_entry, &b);
        for (size_t i = 0; i < b.n; i++) {
            rlock__map_remove(&c->entries, b.items[i]->key);
            entry_free(b.items[i]);
        }
        if (b.n < sizeof(b.items) / sizeof(b.items[0]))
            return;
    }
}

/* ------------------------------------------------------------ contention */

/* Fills out with what an acquire by owner needs to decide whether to wait
 * its turn first (acquire.c). */
void rlock__entry_look(rlock__entry *pub, uint64_t owner,
                       rlock__entry_view *out)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = e->holders;
    while (h != NULL && h->tid != owner)
        h = h->next;
    out->holds = h != NULL && !h->lost;
    out->queue = e->nwaiters > 0 && e->subscribed;
    out->contended_at_ms = e->contended_at_ms;
    out->free_by_ms = e->free_by_ms;
    out->released_at_ms = e->released_at_ms;
    pthread_mutex_unlock(&e->mu);
}

/* Notes that e is contended: an attempt found it held by someone else for
 * ttl_ms more, or (ttl_ms < 0) a release was heard by a waiter, after which
 * when it is free again is not known. */
void rlock__entry_note_contended(rlock__entry *pub, int64_t ttl_ms)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    e->contended_at_ms = rlock__now_ms();
    e->free_by_ms = ttl_ms >= 0 ? e->contended_at_ms + ttl_ms : 0;
    pthread_mutex_unlock(&e->mu);
}

/* Notes that this client just released e. */
void rlock__entry_note_released(rlock__entry *pub)
{
    entry *e = entry_of(pub);
    pthread_mutex_lock(&e->mu);
    e->released_at_ms = rlock__now_ms();
    pthread_mutex_unlock(&e->mu);
}
