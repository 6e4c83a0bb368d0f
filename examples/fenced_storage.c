/*
 * fenced_storage.c: why a fenced lock's token matters.
 *
 * A lease cannot stop a holder that stalls. Client A takes the lock with a
 * 500 ms lease and then pauses for longer than that (a long GC pause, a
 * stopped VM, a swap storm). The lease runs out, client B takes the lock and
 * writes, and when A wakes it still believes it holds the lock and writes
 * too, over B's work. No check A makes before writing closes that gap: A can
 * pause between the check and the write.
 *
 * The fix belongs to the storage. Every acquisition of a fenced lock draws
 * the next value of a counter that never goes back (Redisson's
 * redisson_lock_token:{name}), and the writer sends that token with each
 * write. The storage remembers the highest token it has accepted and refuses
 * a write carrying a lower one. B's token is higher than A's, so once B has
 * written, A's late write is refused, even after B has released the lock.
 *
 * To keep the example short the storage is a record in this process guarded
 * by a mutex. A real storage makes the same comparison atomically where the
 * data lives (a conditional UPDATE on a token column, a compare inside a Lua
 * script, ...). A and B are two threads with a client each, standing in for
 * two services. A Java service using Redisson's getFencedLock(name) on the
 * same name draws from the same counter. The counter is never deleted, so
 * each run starts from where the previous one stopped.
 *
 * Usage:
 *   fenced_storage [redis-url]   (else $REDIS_URL, else redis://127.0.0.1:6379)
 * Exit status: 0 when A's stale write was refused and B's write stands,
 * 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOCK_NAME  "example:fenced-report"
#define A_LEASE_MS 500
/* How long a side waits for the other before giving up: only reached when
 * something is broken, so the program never hangs. */
#define GIVE_UP_MS 10000

/* ------------------------------------------------------------------------ */
/* The storage                                                              */
/* ------------------------------------------------------------------------ */

/* One value, and the highest token a write has carried so far. */
static struct {
    pthread_mutex_t mu;
    int64_t max_token;
    char value[32];
} store = {PTHREAD_MUTEX_INITIALIZER, 0, "(empty)"};

/* Stores value if token is at least the highest token seen so far (the same
 * holder may write several times under one token). The comparison and the
 * write are one step: a check followed by a separate write would reopen the
 * gap the token closes. Returns true if the write was accepted. */
static bool store_write(int64_t token, const char *value)
{
    pthread_mutex_lock(&store.mu);
    bool accepted = token >= store.max_token;
    if (accepted) {
        store.max_token = token;
        snprintf(store.value, sizeof(store.value), "%s", value);
    }
    int64_t highest = store.max_token;
    pthread_mutex_unlock(&store.mu);

    if (accepted)
        printf("  storage: accepted \"%s\" with token %" PRId64 "\n", value,
               token);
    else
        printf("  storage: REFUSED \"%s\": token %" PRId64
               " is older than %" PRId64 "\n",
               value, token, highest);
    fflush(stdout);
    return accepted;
}

/* ------------------------------------------------------------------------ */
/* Telling the other thread that something happened                         */
/* ------------------------------------------------------------------------ */

struct event {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool set;
};

static void event_set(struct event *e)
{
    pthread_mutex_lock(&e->mu);
    e->set = true;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Waits until e is set or ms have passed; returns whether it was set. */
static bool event_wait(struct event *e, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    while (!e->set && rc == 0)
        rc = pthread_cond_timedwait(&e->cv, &e->mu, &until);
    bool set = e->set;
    pthread_mutex_unlock(&e->mu);
    return set;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------ */
/* The two clients                                                          */
/* ------------------------------------------------------------------------ */

/* A has the lock: B may start. */
static struct event a_holds = {.mu = PTHREAD_MUTEX_INITIALIZER,
                               .cv = PTHREAD_COND_INITIALIZER};
/* B has written and released the lock (or failed). */
static struct event b_done = {.mu = PTHREAD_MUTEX_INITIALIZER,
                              .cv = PTHREAD_COND_INITIALIZER};

static bool a_refused;  /* A's late write was refused */
static bool b_accepted; /* B's write was accepted */

/* Client A: takes the lock with a short lease, then stalls past it. */
static void *client_a(void *arg)
{
    rlock *l = arg;
    int64_t token = 0;

    int rc = rlock_fenced_trylock(l, GIVE_UP_MS, A_LEASE_MS, &token);
    if (rc != 0) {
        fprintf(stderr, "A: rlock_fenced_trylock: %s\n", rlock_strerror(rc));
        event_set(&a_holds); /* let B go on rather than hang */
        return NULL;
    }
    printf("A: got " LOCK_NAME " with token %" PRId64 ", lease %d ms\n", token,
           A_LEASE_MS);
    printf("A: stalls before writing (a stopped VM, heavy swapping)\n");
    fflush(stdout);
    event_set(&a_holds);

    /* The pause. It ends once B has written, so the run does not depend on
     * timing; B can only have written after A's lease ran out. */
    int64_t start = now_ms();
    event_wait(&b_done, GIVE_UP_MS);
    printf("A: wakes after %" PRId64 " ms, still thinks it holds the lock, "
           "writes with token %" PRId64 "\n",
           now_ms() - start, token);
    fflush(stdout);
    a_refused = !store_write(token, "report by A");

    /* Only now does A find out, and only because it asks Redis. */
    rc = rlock_unlock(l);
    printf("A: rlock_unlock = %s%s\n", rlock_err_name(rc),
           rc == RLOCK_ELOST ? " (the lease ran out while A paused)" : "");
    return NULL;
}

/* Client B: waits for the lock, which it gets when A's lease runs out. */
static void *client_b(void *arg)
{
    rlock *l = arg;
    int64_t token = 0;

    event_wait(&a_holds, GIVE_UP_MS);
    int64_t start = now_ms();
    int rc = rlock_fenced_trylock(l, GIVE_UP_MS, RLOCK_LEASE_WATCHDOG, &token);
    if (rc != 0) {
        fprintf(stderr, "B: rlock_fenced_trylock: %s\n", rlock_strerror(rc));
        event_set(&b_done);
        return NULL;
    }
    printf("B: got " LOCK_NAME " after waiting %" PRId64
           " ms, with token %" PRId64 "\n",
           now_ms() - start, token);
    fflush(stdout);
    b_accepted = store_write(token, "report by B");

    rc = rlock_unlock(l);
    printf("B: rlock_unlock = %s\n", rlock_err_name(rc));
    fflush(stdout);
    /* B has released the lock: from here on only the storage's memory of
     * the highest token stands between A and B's data. */
    event_set(&b_done);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("REDIS_URL");
    if (url == NULL || *url == '\0')
        url = "redis://127.0.0.1:6379";
    rlock_client *ca = NULL, *cb = NULL;
    rlock *la = NULL, *lb = NULL;
    int status = 1;

    /* One client per side, as two services would have. */
    int rc = rlock_client_connect(&ca, url);
    if (rc == 0)
        rc = rlock_client_connect(&cb, url);
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s\n", url, rlock_strerror(rc));
        goto out_free_clients;
    }
    rc = rlock_fenced_get(ca, LOCK_NAME, &la);
    if (rc == 0)
        rc = rlock_fenced_get(cb, LOCK_NAME, &lb);
    if (rc != 0) {
        fprintf(stderr, "rlock_fenced_get: %s\n", rlock_strerror(rc));
        goto out_free_locks;
    }

    pthread_t ta, tb;
    if (pthread_create(&ta, NULL, client_a, la) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        goto out_free_locks;
    }
    if (pthread_create(&tb, NULL, client_b, lb) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        event_set(&b_done); /* A must not wait for a B that never ran */
        pthread_join(ta, NULL);
        goto out_free_locks;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);

    bool b_stands = strcmp(store.value, "report by B") == 0;
    printf("storage holds \"%s\" (highest token %" PRId64 "): %s\n",
           store.value, store.max_token,
           a_refused && b_accepted && b_stands
               ? "the stale write was refused, B's write stands"
               : "FENCING FAILED");
    if (a_refused && b_accepted && b_stands)
        status = 0;

out_free_locks:
    rlock_free(la);
    rlock_free(lb);
out_free_clients:
    rlock_client_free(ca);
    rlock_client_free(cb);
    return status;
}
