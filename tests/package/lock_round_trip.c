/* lock_round_trip URI NAME: connects to Redis at URI with an installed
 * rlock, takes lock NAME, checks that the calling thread holds it once,
 * unlocks it and frees everything. Exits 0 when every step succeeds, else
 * 1 with the failed step and rlock's error on stderr. */
#include <rlock.h>

#include <stdio.h>

/* Prints the failed step with rlock's description of err; returns 1. */
static int fail(const char *step, int err)
{
    fprintf(stderr, "lock_round_trip: %s: %s\n", step, rlock_strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    rlock_client *c = NULL;
    rlock *l = NULL;
    int rc = 1, err;

    if (argc != 3) {
        fprintf(stderr, "usage: lock_round_trip URI NAME\n");
        return 2;
    }
    err = rlock_client_connect(&c, argv[1]);
    if (err < 0)
        return fail("connect", err);
    err = rlock_get(c, argv[2], &l);
    if (err < 0) {
        rc = fail("get", err);
        goto out_free_client;
    }
    err = rlock_lock(l);
    if (err < 0) {
        rc = fail("lock", err);
        goto out_free_lock;
    }
    if (rlock_is_held_by_me(l) != 1 || rlock_hold_count(l) != 1) {
        fprintf(stderr, "lock_round_trip: the lock is not held once\n");
        rlock_unlock(l);
        goto out_free_lock;
    }
    err = rlock_unlock(l);
    if (err < 0) {
        rc = fail("unlock", err);
        goto out_free_lock;
    }
    printf("locked and unlocked %s with rlock %s\n", argv[2],
           rlock_version_string());
    rc = 0;
out_free_lock:
    rlock_free(l);
out_free_client:
    rlock_client_free(c);
    return rc;
}
