/*
 * nested_locking.c: reentrant locking with rlock.
 *
 * place_order() takes the lock "example:order-42" and then calls
 * reserve_stock(), which takes the same lock again. The second take does not
 * block, because the calling thread already holds the lock: the hold count
 * goes to 2, and the lock is free only after two unlocks. This is how
 * Redisson's RLock behaves, and the Redis state is the same: a hash named
 * after the lock with one field "<client uuid>:<thread id>" holding the
 * count.
 *
 * Usage:
 *   nested_locking [redis-url]      (default redis://127.0.0.1:6379)
 * To watch the hash while the program runs (it pauses for a second while
 * the lock is held twice):
 *   redis-cli HGETALL example:order-42
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Prints what Redis says about the lock at this point. rlock_hold_count()
 * reads the calling thread's field of the hash (HGET) and
 * rlock_remaining_ttl() the lease (PTTL). */
static void show(rlock *l, const char *where)
{
    printf("  %-15s hold count %d, PTTL %" PRId64 " ms\n", where,
           rlock_hold_count(l), rlock_remaining_ttl(l));
}

/* Another thread tries to take the lock without waiting: it cannot, because
 * the owner of a lock is a thread, not the process. */
static void *other_thread(void *arg)
{
    int rc = rlock_trylock(arg, 0, RLOCK_LEASE_WATCHDOG);
    printf("  %-15s rlock_trylock(l, 0, ...) = %s\n",
           "another thread:", rlock_err_name(rc));
    if (rc == 0)
        rlock_unlock(arg);
    return NULL;
}

static int reserve_stock(rlock *l)
{
    int rc = rlock_lock(l); /* already ours: no waiting, count 2 */
    if (rc != 0)
        return rc;
    show(l, "reserve_stock:");

    pthread_t t;
    if (pthread_create(&t, NULL, other_thread, l) == 0)
        pthread_join(t, NULL);
    nanosleep(&(struct timespec){.tv_sec = 1}, NULL);

    return rlock_unlock(l); /* count 1: still held */
}

static int place_order(rlock *l)
{
    int rc = rlock_lock(l);
    if (rc != 0)
        return rc;
    show(l, "place_order:");
    rc = reserve_stock(l);
    if (rc == 0)
        show(l, "back in order:");
    int urc = rlock_unlock(l); /* count 0: the key is deleted */
    return rc != 0 ? rc : urc;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    rlock_client *client;
    rlock *l;

    int rc = rlock_client_connect(&client, url);
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s\n", url, rlock_strerror(rc));
        return 1;
    }
    rc = rlock_get(client, "example:order-42", &l);
    if (rc != 0) {
        fprintf(stderr, "rlock_get: %s\n", rlock_strerror(rc));
        rlock_client_free(client);
        return 1;
    }

    printf("lock %s: a Redis hash, field %s:%" PRIu64
           " (client uuid:thread id) = hold count\n",
           rlock_name(l), rlock_client_id(client), rlock_thread_id());
    rc = place_order(l);
    if (rc != 0)
        fprintf(stderr, "place_order: %s\n", rlock_strerror(rc));
    printf("  %-15s is_locked %d, hold count %d\n",
           "unlocked:", rlock_is_locked(l), rlock_hold_count(l));
    printf("  %-15s rlock_unlock(l) = %s\n",
           "one too many:", rlock_err_name(rlock_unlock(l)));

    rlock_free(l);
    rlock_client_free(client);
    return rc == 0 ? 0 : 1;
}
