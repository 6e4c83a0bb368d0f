/*
 * core/thread_exit.c: holds whose owning thread exited. Nobody can unlock
 * such a hold (only its owner may), so renewing it would keep the lock forever. The
 * first time a thread takes a lock through a client it is registered with
 * that client; when the thread exits, a pthread key's destructor marks the
 * thread's holds lost (RLOCK_LOST_ABANDONED): the watchdog stops renewing
 * them, the lease runs out, and the callbacks say so.
 *
 * Design notes. An exit handler walks a client's entries, so a client must
 * not be freed under a handler that already started.
 * With a key per client that cannot be arranged: pthread_key_delete() does
 * not wait for destructors in progress, and a thread may pass glibc's check
 * that the key is alive and still call the destructor after it was
 * deleted. So there is one key for the process, never deleted, whose value
 * is the thread's list of registrations (thread_node), and each
 * registration (rec) is shared by the thread's list and the client's:
 *  - an exit handler marks a rec busy before it touches the client, unless
 *    the client has already let go of it (rec->client NULL);
 *  - rlock_client_free() first lets go of every rec (rec->client = NULL)
 *    and waits on threads_cv until no rec is busy; from then on no handler
 *    can reach the client.
 * rec->mu orders the two. A rec is freed by whichever side drops it last.
 * A live thread's list keeps recs of freed clients until the thread
 * registers again (they are pruned then) or exits; the freeing thread's
 * own are pruned at once.
 *
 * In src/core: it marks holds lost through core/hold.c.
 */
#include "core/core.h"

#include <stdlib.h>
#include <unistd.h>

struct rlock__thread_rec {
    struct rlock__thread_rec *next_mine;  /* the thread's list (its own) */
    struct rlock__thread_rec *next, **prev; /* the client's (threads_mu) */
    pthread_mutex_t mu;
    rlock_client *client; /* under mu: NULL once the client let go */
    bool busy;            /* under mu: an exit handler is using client */
    uint64_t tid;
    atomic_int refs; /* the thread's list, the client's list */
};

/* One thread's registrations: the value of the process-wide key. */
typedef struct thread_node {
    pid_t pid; /* a forked child's copy is not its thread's */
    rlock__thread_rec *recs;
} thread_node;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_made;

static void rec_unref(rlock__thread_rec *rec)
{
    if (atomic_fetch_sub(&rec->refs, 1) == 1) {
        pthread_mutex_destroy(&rec->mu);
        free(rec);
    }
}

/* Returns the client rec still belongs to, or NULL. */
static rlock_client *rec_client(rlock__thread_rec *rec)
{
    pthread_mutex_lock(&rec->mu);
    rlock_client *c = rec->client;
    pthread_mutex_unlock(&rec->mu);
    return c;
}

/* Unlinks rec from its client's list. threads_mu held. */
static void unlink_from_client(rlock__thread_rec *rec)
{
    *rec->prev = rec->next;
    if (rec->next != NULL)
        rec->next->prev = rec->prev;
    rec->next = NULL;
    rec->prev = NULL;
}

/* The exit handler's work for one client: its holds are abandoned, then
 * the client is told that this handler is done with it. */
static void exit_client(rlock__thread_rec *rec, rlock_client *c)
{
    rlock__entries_abandon(c, rec->tid);
    pthread_mutex_lock(&c->threads_mu);
    unlink_from_client(rec);
    pthread_mutex_lock(&rec->mu);
    rec->busy = false;
    rec->client = NULL;
    pthread_mutex_unlock(&rec->mu);
    /* a free waiting for us may go on, once we let go of threads_mu;
     * nothing of c is touched after that */
    pthread_cond_broadcast(&c->threads_cv);
    pthread_mutex_unlock(&c->threads_mu);
    rec_unref(rec); /* the client's reference */
}

/* The key's destructor: runs on the exiting thread. */
static void on_thread_exit(void *value)
{
    thread_node *node = value;
    if (node->pid != getpid())
        return; /* a forked child's copy: its mutexes may be copied locked */
    while (node->recs != NULL) {
        rlock__thread_rec *rec = node->recs;
        node->recs = rec->next_mine;
        pthread_mutex_lock(&rec->mu);
        rlock_client *c = rec->client;
        rec->busy = c != NULL;
        pthread_mutex_unlock(&rec->mu);
        if (c != NULL)
            exit_client(rec, c);
        rec_unref(rec); /* the thread's reference */
    }
    free(node);
}

static void make_key(void)
{
    key_made = pthread_key_create(&key, on_thread_exit) == 0;
}

int rlock__threads_init(rlock_client *c)
{
    pthread_once(&key_once, make_key);
    if (!key_made)
        return RLOCK_ENOMEM;
    pthread_mutex_init(&c->threads_mu, NULL);
    pthread_cond_init(&c->threads_cv, NULL);
    c->threads_made = true;
    return RLOCK_OK;
}

/* Drops the calling thread's recs of freed clients; frees its list when
 * nothing is left in it. */
static void prune_mine(thread_node *node)
{
    rlock__thread_rec **p = &node->recs;
    while (*p != NULL) {
        rlock__thread_rec *rec = *p;
        if (rec_client(rec) == NULL) {
            *p = rec->next_mine;
            rec_unref(rec);
        } else {
            p = &rec->next_mine;
        }
    }
}

/* Lets go of every registered thread and waits for the exit handlers that
 * already hold on to the client: after it, no thread's exit reaches c.
 * First step of rlock_client_free(); not from an exit handler. */
void rlock__threads_close(rlock_client *c)
{
    if (!c->threads_made)
        return;
    pthread_mutex_lock(&c->threads_mu);
    for (rlock__thread_rec *rec = c->threads, *next; rec != NULL; rec = next) {
        next = rec->next;
        pthread_mutex_lock(&rec->mu);
        bool busy = rec->busy;
        rec->client = NULL;
        pthread_mutex_unlock(&rec->mu);
        if (!busy) { /* a busy one unlinks itself when done */
            unlink_from_client(rec);
            rec_unref(rec);
        }
    }
    while (c->threads != NULL)
        pthread_cond_wait(&c->threads_cv, &c->threads_mu);
    pthread_mutex_unlock(&c->threads_mu);

    thread_node *node = pthread_getspecific(key);
    if (node != NULL && node->pid == getpid()) {
        prune_mine(node);
        if (node->recs == NULL && pthread_setspecific(key, NULL) == 0)
            free(node);
    }
}

/* Frees what rlock__threads_init() made, after rlock__threads_close(). */
void rlock__threads_destroy(rlock_client *c)
{
    if (!c->threads_made)
        return;
    pthread_mutex_destroy(&c->threads_mu);
    pthread_cond_destroy(&c->threads_cv);
    c->threads_made = false;
}

/* Returns the calling thread's list, made if needed, or NULL. */
static thread_node *my_node(void)
{
    thread_node *node = pthread_getspecific(key);
    if (node != NULL && node->pid == getpid())
        return node;
    /* none yet, or the parent's copy in a forked child: that one is left
     * alone (its recs' mutexes may be copied locked) */
    node = rlock__calloc(1, sizeof(*node));
    if (node == NULL)
        return NULL;
    node->pid = getpid();
    if (pthread_setspecific(key, node) != 0) {
        free(node);
        return NULL;
    }
    return node;
}

/* Registers the calling thread with c, once, so that its exit is seen.
 * Returns 0 or RLOCK_ENOMEM. */
int rlock__thread_watch(rlock_client *c)
{
    thread_node *node = my_node();
    if (node == NULL)
        return RLOCK_ENOMEM;
    bool pruned = false;
    for (rlock__thread_rec *rec = node->recs; rec != NULL;
         rec = rec->next_mine) {
        rlock_client *owner = rec_client(rec);
        if (owner == c)
            return RLOCK_OK;
        pruned = pruned || owner == NULL;
    }
    if (pruned)
        prune_mine(node);
    rlock__thread_rec *rec = rlock__calloc(1, sizeof(*rec));
    if (rec == NULL)
        return RLOCK_ENOMEM;
    pthread_mutex_init(&rec->mu, NULL);
    rec->client = c;
    rec->tid = rlock__thread_id();
    atomic_init(&rec->refs, 2);
    rec->next_mine = node->recs;
    node->recs = rec;
    pthread_mutex_lock(&c->threads_mu);
    rec->next = c->threads;
    if (rec->next != NULL)
        rec->next->prev = &rec->next;
    rec->prev = &c->threads;
    c->threads = rec;
    pthread_mutex_unlock(&c->threads_mu);
    return RLOCK_OK;
}
