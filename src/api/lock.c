/*
 * lock.c: lock handles (rlock_get and the other kinds' getters go through
 * rlock__handle_new) and the calls about one lock that are not its
 * acquire and release: queries, force unlock, the lost-lock callback, and
 * a multi-lock's new lease. Acquire and release are lock_sync.c's and
 * lock_async.c's, which drive the core's machines.
 */
#include "api/api.h"
#include "proto/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- handles */

/* Returns 0 when l may be used, else why not: RLOCK_EINVAL (NULL),
 * RLOCK_ECLOSED (its client was freed, or is being freed) or
 * RLOCK_EFORKED. Reads nothing of a closed handle but the handle. */
int rlock__handle_check(const rlock *l)
{
    if (l == NULL)
        return RLOCK_EINVAL;
    if (l->client == NULL)
        return RLOCK_ECLOSED;
    return rlock__client_check(l->client);
}

/* Makes a handle on the lock kind/name (the rlock_*_get functions). */
int rlock__handle_new(rlock_client *c, int kind, const char *name,
                      rlock **out)
{
    if (out != NULL)
        *out = NULL;
    if (c == NULL || name == NULL || out == NULL)
        return RLOCK_EINVAL;
    size_t len = strnlen(name, RLOCK_NAME_MAX + 1);
    if (len == 0 || len > RLOCK_NAME_MAX)
        return RLOCK_EINVAL;
    int rc = rlock__client_check(c);
    if (rc != 0)
        return rc;
    /* a cluster runs a lock's calls on the node of its name's slot: every
     * key and channel of the lock must live there (CROSSSLOT otherwise,
     * found only at unlock time) */
    int slot;
    if (c->cluster != NULL && (rc = rlock__lock_slot(kind, name, &slot)) != 0)
        return rc;
    rlock *l = rlock__calloc(1, sizeof(*l));
    if (l == NULL)
        return RLOCK_ENOMEM;
    l->client = c;
    l->kind = kind;
    l->name = rlock__strdup(name);
    l->entry = l->name != NULL ? rlock__entry_get(c, kind, name, NULL) : NULL;
    if (l->entry == NULL) {
        free(l->name);
        free(l);
        return RLOCK_ENOMEM;
    }
    /* the client closes the handles still open when it is freed */
    pthread_mutex_lock(&c->entries_mu);
    l->next = c->handles;
    if (l->next != NULL)
        l->next->prev = &l->next;
    l->prev = &c->handles;
    c->handles = l;
    pthread_mutex_unlock(&c->entries_mu);
    /* Redisson's exponential back-off (facts sheet 1.9) */
    l->spin_initial_ms = 1;
    l->spin_max_ms = 128;
    l->spin_multiplier = 2;
    *out = l;
    return RLOCK_OK;
}

void rlock__handle_free(rlock *l)
{
    if (l == NULL)
        return;
    /* a closed handle is the user's memory alone; in a forked child the
     * client's mutexes may have been copied locked by a thread that does
     * not exist here: touch nothing shared */
    rlock_client *c = l->client;
    if (c != NULL && getpid() == c->pid) {
        pthread_mutex_lock(&c->entries_mu);
        *l->prev = l->next;
        if (l->next != NULL)
            l->next->prev = l->prev;
        pthread_mutex_unlock(&c->entries_mu);
        rlock__entry_unref(l->entry);
    }
    free(l->name);
    free(l);
}

/* Closes every handle still open: each drops its entry and its client, so
 * that later calls on it answer RLOCK_ECLOSED and rlock_free() frees only
 * the handle. Called by rlock_client_free() once nothing else runs, before
 * the entries are swept. */
void rlock__handles_close(rlock_client *c)
{
    for (;;) {
        pthread_mutex_lock(&c->entries_mu);
        rlock *l = c->handles;
        if (l != NULL) {
            c->handles = l->next;
            l->next = NULL;
            l->prev = NULL;
        }
        pthread_mutex_unlock(&c->entries_mu);
        if (l == NULL)
            return;
        rlock__entry_unref(l->entry); /* or the sweep frees it */
        l->entry = NULL;
        l->client = NULL;
    }
}

int rlock_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_LOCK, name, out);
}

int rlock_fair_get(rlock_client *c, const char *name, rlock **out)
{
    return rlock__handle_new(c, RLOCK_KIND_FAIR, name, out);
}

void rlock_free(rlock *l)
{
    if (l != NULL && !l->borrowed) /* an rlock_rw's side: rlock_rw_free */
        rlock__handle_free(l);
}

int rlock_kind(const rlock *l)
{
    if (l == NULL)
        return RLOCK_EINVAL;
    if (l->non_reentrant)
        return l->kind == RLOCK_KIND_FAIR ? RLOCK_KIND_NONREENTRANT_FAIR
                                          : RLOCK_KIND_NONREENTRANT;
    return l->kind;
}

const char *rlock_name(const rlock *l)
{
    return l ? l->name : NULL;
}

int rlock_on_lost(rlock *l, rlock_lost_cb cb, void *arg)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    return rlock__entry_set_lost_cb(l->entry, cb, arg);
}

int rlock_force_unlock(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__spec spec;
    rlock__spec_force(&spec, l->entry);
    rlock__req *r = rlock__req_from_spec(l->client, &spec);
    if (r == NULL)
        return RLOCK_ENOMEM;
    r->run_once = true; /* a lost one is not sent again: see route.c */
    rc = rlock__sync_call(r, l->client->cfg.command_timeout_ms);
    int64_t deleted = rc == 0 ? r->value : 0;
    rlock__req_unref(r);
    if (rc != 0)
        return rc;
    /* every local hold is void now: their unlocks answer RLOCK_ELOST. One
     * side of a read-write lock is only deleted in its own mode: a writer's
     * reads survive a forced read unlock that found the lock in write mode */
    int kind = l->entry->kind;
    if (deleted == 0 && (kind == RLOCK_KIND_READ || kind == RLOCK_KIND_WRITE))
        return RLOCK_OK;
    rlock__entry_lose_all(l->entry, RLOCK_LOST_GONE);
    if (deleted != 3)
        return RLOCK_OK;
    /* deleted, but the script caught a refused PUBLISH */
    rlock__log_unannounced(l->client, l->entry->name);
    return RLOCK_ENOTIFY;
}

/* Gives the calling thread's hold of l a new lease: PEXPIRE, and the lease
 * its inner unlocks restore (a multi-lock sets its lease once all its locks
 * are in). Returns 0, RLOCK_ENOTOWNER, RLOCK_ELOST or a connection error. */
int rlock__set_lease(rlock *l, int64_t lease_ms)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    if (lease_ms <= 0 || lease_ms > RLOCK__LEASE_MAX)
        return RLOCK_EINVAL;
    rlock__entry *e = l->entry;
    uint64_t tid = rlock__thread_id();
    rc = rlock__hold_check(e, tid);
    if (rc != 0)
        return rc;
    char lease[24];
    snprintf(lease, sizeof(lease), "%lld", (long long)lease_ms);
    const char *argv[] = {"PEXPIRE", e->name, lease};
    int64_t set = 0;
    rc = rlock__sync_command(l->client, NULL, RLOCK__REPLY_INTEGER, 0, 3,
                             argv, &set, NULL);
    if (rc != 0)
        return rc;
    rlock__hold_set_lease(e, tid, lease_ms, set == 1);
    return set == 1 ? RLOCK_OK : RLOCK_ELOST;
}

/* ---------------------------------------------------------------- queries */

/* Runs one plain command about this lock: returns 0 with its integer in
 * *value (nil: 0), or a negative code. */
static int query(rlock *l, int argc, const char *const *argv, int64_t *value)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    bool nil = false;
    *value = 0;
    rc = rlock__sync_command(l->client, NULL, RLOCK__REPLY_INTEGER, 0, argc,
                             argv, value, &nil);
    if (rc == 0 && nil)
        *value = 0;
    return rc;
}

int rlock_is_locked(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__spec spec;
    rlock__spec_is_locked(&spec, l->entry);
    int64_t v = 0;
    rc = rlock__sync_command(l->client, spec.script, spec.reply,
                             spec.numkeys, spec.argc, spec.argv, &v, NULL);
    return rc != 0 ? rc : v > 0;
}

/* Asks Redis about the calling thread's field: op is HEXISTS or HGET.
 * Returns 0 with the answer in *value (0 when not held), or a code. If
 * the thread holds the lock locally but Redis says otherwise, the hold is
 * marked lost. */
static int query_own_field(rlock *l, const char *op, int64_t *value)
{
    *value = 0;
    /* first: in a forked child the entry's mutex may have been copied
     * locked by a thread that does not exist there */
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    rlock__entry *e = l->entry;
    uint64_t tid = rlock__thread_id();
    char owner[RLOCK__TAG_MAX];
    rlock__kind_owner_tag(owner, e, tid);
    uint64_t epoch = 0;
    if (!rlock__hold_valid(e, tid, &epoch))
        return RLOCK_OK;
    const char *argv[] = {op, e->name, owner};
    rc = query(l, 3, argv, value);
    if (rc == 0 && *value == 0)
        rlock__hold_mark_lost(e, tid, epoch, RLOCK_LOST_GONE);
    return rc;
}

int rlock_is_held_by_me(rlock *l)
{
    int64_t v = 0;
    int rc = query_own_field(l, "HEXISTS", &v);
    return rc != 0 ? rc : v > 0;
}

int rlock_hold_count(rlock *l)
{
    int64_t v = 0;
    int rc = query_own_field(l, "HGET", &v);
    if (rc != 0)
        return rc;
    if (v < 0 || v > INT32_MAX)
        return RLOCK_EPROTO; /* a hold count no lock script writes */
    return (int)v;
}

int64_t rlock_hold_id(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    return rlock__hold_id(l->entry, rlock__thread_id());
}

int64_t rlock_remaining_ttl(rlock *l)
{
    int rc = rlock__handle_check(l);
    if (rc != 0)
        return rc;
    const char *argv[] = {"PTTL", l->entry->name};
    int64_t v = 0;
    rc = query(l, 2, argv, &v);
    return rc != 0 ? rc : v;
}
