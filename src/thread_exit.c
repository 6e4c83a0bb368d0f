/*
 * thread_exit.c: holds whose owning thread exited. Nobody can unlock such a
 * hold (only its owner may), so renewing it would keep the lock forever. The
 * first time a thread takes a lock through a client it is registered under
 * the client's pthread key; the key's destructor runs when the thread exits
 * and marks the thread's holds lost (RLOCK_LOST_ABANDONED): the watchdog
 * stops renewing them, the lease runs out, and the callbacks say so.
 */
#include "internal.h"

#include <stdlib.h>
#include <unistd.h>

struct rlock__thread_rec {
    struct rlock__thread_rec *next, **prev;
    rlock_client *client;
    uint64_t tid;
};

static void abandon_entry(const char *key, void *value, void *arg)
{
    rlock__entry *e = value;
    const rlock__thread_rec *rec = arg;
    (void)key;
    pthread_mutex_lock(&e->mu);
    rlock__holder *h = rlock__entry_find_holder(e, rec->tid);
    if (h != NULL)
        rlock__hold_lost(e, h, RLOCK_LOST_ABANDONED);
    pthread_mutex_unlock(&e->mu);
}

/* The key's destructor: runs on the exiting thread. */
static void on_thread_exit(void *value)
{
    rlock__thread_rec *rec = value;
    rlock_client *c = rec->client;
    if (getpid() != c->pid)
        return; /* a forked child's copy: the parent's client is not ours */
    pthread_mutex_lock(&c->entries_mu);
    rlock__map_foreach(&c->entries, abandon_entry, rec);
    pthread_mutex_unlock(&c->entries_mu);
    pthread_mutex_lock(&c->threads_mu);
    *rec->prev = rec->next;
    if (rec->next != NULL)
        rec->next->prev = rec->prev;
    pthread_mutex_unlock(&c->threads_mu);
    free(rec);
}

int rlock__threads_init(rlock_client *c)
{
    pthread_mutex_init(&c->threads_mu, NULL);
    if (pthread_key_create(&c->thread_key, on_thread_exit) != 0)
        return RLOCK_ENOMEM;
    c->thread_key_made = true;
    return RLOCK_OK;
}

/* Forgets every registered thread: their exits no longer reach the client.
 * Called when the client is freed. */
void rlock__threads_destroy(rlock_client *c)
{
    if (!c->thread_key_made)
        return;
    pthread_key_delete(c->thread_key);
    while (c->threads != NULL) {
        rlock__thread_rec *rec = c->threads;
        c->threads = rec->next;
        free(rec);
    }
    pthread_mutex_destroy(&c->threads_mu);
}

/* Registers the calling thread with c, once, so that its exit is seen.
 * Returns 0 or RLOCK_ENOMEM. */
int rlock__thread_watch(rlock_client *c)
{
    if (pthread_getspecific(c->thread_key) != NULL)
        return RLOCK_OK;
    rlock__thread_rec *rec = rlock__calloc(1, sizeof(*rec));
    if (rec == NULL)
        return RLOCK_ENOMEM;
    rec->client = c;
    rec->tid = rlock__thread_id();
    pthread_mutex_lock(&c->threads_mu);
    rec->next = c->threads;
    if (rec->next != NULL)
        rec->next->prev = &rec->next;
    rec->prev = &c->threads;
    c->threads = rec;
    pthread_mutex_unlock(&c->threads_mu);
    if (pthread_setspecific(c->thread_key, rec) != 0) {
        pthread_mutex_lock(&c->threads_mu);
        *rec->prev = rec->next;
        if (rec->next != NULL)
            rec->next->prev = rec->prev;
        pthread_mutex_unlock(&c->threads_mu);
        free(rec);
        return RLOCK_ENOMEM;
    }
    return RLOCK_OK;
}
