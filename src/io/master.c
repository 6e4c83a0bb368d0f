/*
 * io/master.c: the data master's address in Sentinel mode, shared by every
 * connection of a client, and moved when the sentinels move the master
 * (io/master.h says why it is a file of its own).
 *
 * Connecting (a user thread): src/io/sentinel.c discovers the master (every
 * sentinel asked, the newest configuration's master checked with ROLE) and
 * its address goes into the shared options. Then the watcher follows it on
 * the loop.
 *
 * A move (the loop's thread, from the watcher): the new address, an IP
 * address as sentinels give it, is resolved without blocking; a name
 * (sentinels announcing host names) is resolved on a short-lived thread of
 * its own and applied when it comes back, so that the loop never waits for
 * a name server. The shared options take the new address and name under
 * mu and the generation goes up before the caller is told, so that from
 * then on nothing opens to the old master, and a connection opened before
 * is known for old.
 *
 * Suspicion comes from any thread and crosses to the loop by an ev_async:
 * several before the loop runs it are one check.
 */
#include "io/master.h"
#include "proto/proto.h"

#include "rlock.h"

#include <ev.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rlock__master {
    rlock__sentinel *sentinel;
    rlock__link_opts *data; /* shared: addr and host change under mu */
    rlock__master_moved_cb moved;
    rlock__sentinel_note_cb note;
    void *arg;
    pthread_mutex_t mu;
    char host[RLOCK__MASTER_HOST_MAX]; /* data->host points here (mu) */
    int port;                           /* (mu) */
    atomic_uint_fast64_t gen;           /* moves so far */
    /* the loop's, once watching */
    struct ev_loop *loop;
    ev_async suspect;
    ev_async resolved;
    atomic_bool asyncs; /* the two above may be sent to */
    bool watching;
    /* a name being resolved off the loop */
    pthread_t resolver;
    bool resolving;
    char pending_host[RLOCK__MASTER_HOST_MAX];
    int pending_port;
    rlock__link_addr pending_addr;
    int pending_rc;
};

uint64_t rlock__master_gen(const rlock__master *m)
{
    return m != NULL ? atomic_load(&((rlock__master *)m)->gen) : 0;
}

int rlock__master_port(const rlock__master *cm)
{
    rlock__master *m = (rlock__master *)cm; /* its mutex */
    pthread_mutex_lock(&m->mu);
    int port = m->port;
    pthread_mutex_unlock(&m->mu);
    return port;
}

void rlock__master_opts(const rlock__master *cm, const rlock__link_opts *shared,
                        rlock__link_opts *o,
                        char host[RLOCK__MASTER_HOST_MAX], uint64_t *gen)
{
    rlock__master *m = (rlock__master *)cm; /* its mutex */
    if (m == NULL) {
        *o = *shared;
        if (gen != NULL)
            *gen = 0;
        return;
    }
    pthread_mutex_lock(&m->mu);
    *o = *shared;
    memcpy(host, m->host, RLOCK__MASTER_HOST_MAX);
    o->host = host;
    if (gen != NULL)
        *gen = atomic_load(&m->gen);
    pthread_mutex_unlock(&m->mu);
}

static void notef(rlock__master *m, int level, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);

static void notef(rlock__master *m, int level, const char *fmt, ...)
{
    if (m->note == NULL)
        return;
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    m->note(level, line, m->arg);
}

int rlock__master_new(const rlock__sentinel_opts *so, rlock__link_opts *data,
                      rlock__master_moved_cb moved,
                      rlock__sentinel_note_cb note, void *arg,
                      rlock__master **out, char *err, size_t errlen)
{
    *out = NULL;
    rlock__master *m = rlock__calloc(1, sizeof(*m));
    if (m == NULL)
        return RLOCK_ENOMEM;
    m->data = data;
    m->moved = moved;
    m->note = note;
    m->arg = arg;
    pthread_mutex_init(&m->mu, NULL);
    atomic_init(&m->gen, 0);
    atomic_init(&m->asyncs, false);
    int rc = rlock__sentinel_new(so, &m->sentinel);
    if (rc != 0) {
        if (err != NULL)
            snprintf(err, errlen, "no sentinel's name resolves");
        rlock__master_free(m);
        return rc;
    }
    rlock__sentinel_master found;
    rc = rlock__sentinel_discover(m->sentinel, data, &found, &data->addr, err,
                                  errlen);
    if (rc != 0) {
        rlock__master_free(m);
        return rc;
    }
    snprintf(m->host, sizeof(m->host), "%s", found.host);
    m->port = found.port;
    data->host = m->host;
    *out = m;
    return RLOCK_OK;
}

/* ------------------------------------------------------------ moving */

/* Points the shared options at the master at addr, then tells (loop). */
static void apply_move(rlock__master *m, const char *host, int port,
                       const rlock__link_addr *addr)
{
    pthread_mutex_lock(&m->mu);
    m->data->addr = *addr;
    snprintf(m->host, sizeof(m->host), "%s", host);
    m->port = port;
    atomic_fetch_add(&m->gen, 1);
    pthread_mutex_unlock(&m->mu);
    m->moved(host, port, m->arg);
}

static void *resolve_main(void *arg)
{
    rlock__master *m = arg;
    m->pending_rc = rlock__link_resolve(m->pending_host, m->pending_port,
                                        NULL, &m->pending_addr);
    ev_async_send(m->loop, &m->resolved);
    return NULL;
}

/* A name resolved off the loop came back. */
static void on_resolved(struct ev_loop *loop, ev_async *w, int revents)
{
    rlock__master *m = w->data;
    (void)loop;
    (void)revents;
    if (!m->resolving)
        return;
    pthread_join(m->resolver, NULL);
    m->resolving = false;
    if (m->pending_rc == 0)
        apply_move(m, m->pending_host, m->pending_port, &m->pending_addr);
    else
        notef(m, RLOCK_LOG_ERROR,
              "Sentinel: the master's new name %s does not resolve: staying",
              m->pending_host);
}

static void start_resolving(rlock__master *m, const char *host, int port)
{
    if (m->resolving)
        return; /* the next poll repeats the news once this one is in */
    snprintf(m->pending_host, sizeof(m->pending_host), "%s", host);
    m->pending_port = port;
    if (pthread_create(&m->resolver, NULL, resolve_main, m) == 0)
        m->resolving = true;
    else
        notef(m, RLOCK_LOG_ERROR,
              "Sentinel: no thread to resolve the master's new name %s",
              host);
}

/* The watcher's callback (loop). */
static void on_master(const char *host, int port, bool changed, void *arg)
{
    rlock__master *m = arg;
    if (!changed)
        return;
    rlock__link_addr addr;
    int rc = rlock__link_resolve_numeric(host, port, &addr);
    if (rc == 0)
        apply_move(m, host, port, &addr);
    else if (rc == RLOCK_EINVAL) /* a name */
        start_resolving(m, host, port);
    else
        notef(m, RLOCK_LOG_ERROR,
              "Sentinel: the master's new address %s:%d is not usable", host,
              port);
}

static void on_suspect(struct ev_loop *loop, ev_async *w, int revents)
{
    rlock__master *m = w->data;
    (void)loop;
    (void)revents;
    if (m->watching)
        rlock__sentinel_check_now(m->sentinel);
}

int rlock__master_watch(rlock__master *m, struct ev_loop *loop)
{
    if (m->watching)
        return RLOCK_EINVAL;
    int rc = rlock__sentinel_watch(m->sentinel, loop, on_master, m->note, m);
    if (rc != 0)
        return rc;
    m->loop = loop;
    ev_async_init(&m->suspect, on_suspect);
    m->suspect.data = m;
    ev_async_init(&m->resolved, on_resolved);
    m->resolved.data = m;
    ev_async_start(loop, &m->suspect);
    ev_async_start(loop, &m->resolved);
    m->watching = true;
    atomic_store(&m->asyncs, true);
    return RLOCK_OK;
}

void rlock__master_suspect(rlock__master *m)
{
    /* once initialised, the watcher may be sent to even when stopped */
    if (m != NULL && atomic_load(&m->asyncs))
        ev_async_send(m->loop, &m->suspect);
}

void rlock__master_unwatch(rlock__master *m)
{
    if (m == NULL || !m->watching)
        return;
    m->watching = false;
    rlock__sentinel_unwatch(m->sentinel);
    ev_async_stop(m->loop, &m->suspect);
    ev_async_stop(m->loop, &m->resolved);
}

void rlock__master_free(rlock__master *m)
{
    if (m == NULL)
        return;
    if (m->resolving)
        pthread_join(m->resolver, NULL);
    rlock__sentinel_free(m->sentinel);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
