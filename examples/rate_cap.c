/*
 * rate_cap.c: a cap on concurrent calls to a slow API, shared by C workers
 * and Java services.
 *
 * The cap is a permit-expirable semaphore, "cap:partner-api", with 3
 * permits: each call takes a permit with a lease a little longer than a
 * call may take, makes the call, and gives the permit back by its id. A
 * worker that crashes mid-call never gives it back, but its lease ends and
 * the next call of any worker (C or Java) reclaims it, so the cap cannot
 * leak away.
 *
 * A Java service joins the same cap with Redisson:
 *
 *     RPermitExpirableSemaphore cap =
 *         redisson.getPermitExpirableSemaphore("cap:partner-api");
 *     cap.trySetPermits(3);
 *     String id = cap.tryAcquire(10, 5, TimeUnit.SECONDS); // wait, lease
 *     if (id != null) {
 *         try { callPartnerApi(); } finally { cap.release(id); }
 *     }
 *
 * Leases are judged by each caller's own wall clock (docs/semaphores.md,
 * "Clock skew"): keep the machines' clocks in sync well within the lease.
 *
 * Usage:
 *   rate_cap [redis-url] [calls] [crash-after]
 *            (redis://127.0.0.1:6379, 5, 0)
 * With crash-after = n > 0 the worker exits without releasing in the
 * middle of its n-th call, as a crash would: its permit comes back when
 * its lease ends.
 *
 * Try four workers at once: never more than 3 calls run together.
 *   for i in 1 2 3 4; do build/examples/rate_cap & done; wait
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CAP_NAME    "cap:partner-api"
#define CAP_PERMITS 3
#define WAIT_MS     10000 /* how long a call waits for a permit */
#define LEASE_MS    5000  /* longer than a call may take */

/* The slow call: 300 ms of pretend work. */
static void call_partner_api(void)
{
    nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    int calls = argc > 2 ? atoi(argv[2]) : 5;
    int crash_after = argc > 3 ? atoi(argv[3]) : 0;
    rlock_client *client = NULL;
    rlock_permit_semaphore *cap = NULL;
    int rc, status = 1;

    if ((rc = rlock_client_connect(&client, url)) != 0) {
        fprintf(stderr, "connect %s: %s\n", url, rlock_strerror(rc));
        return 1;
    }
    if ((rc = rlock_permit_semaphore_get(client, CAP_NAME, &cap)) != 0) {
        fprintf(stderr, "semaphore: %s\n", rlock_strerror(rc));
        goto out_client;
    }
    /* the first worker (C or Java) to come sets the cap; later ones see 0 */
    rc = rlock_permit_semaphore_try_set_permits(cap, CAP_PERMITS);
    if (rc < 0) {
        fprintf(stderr, "set permits: %s\n", rlock_strerror(rc));
        goto out_cap;
    }
    for (int i = 1; i <= calls; i++) {
        char id[RLOCK_PERMIT_ID_SIZE];
        rc = rlock_permit_semaphore_acquire(cap, WAIT_MS, LEASE_MS, id);
        if (rc == RLOCK_ETIMEDOUT) {
            printf("[pid %ld] call %d: no permit within %d ms, skipped\n",
                   (long)getpid(), i, WAIT_MS);
            continue;
        }
        if (rc != 0) {
            fprintf(stderr, "acquire: %s\n", rlock_strerror(rc));
            goto out_cap;
        }
        printf("[pid %ld] call %d under permit %s\n", (long)getpid(), i, id);
        fflush(stdout);
        if (i == crash_after) {
            printf("[pid %ld] crashing with the permit\n", (long)getpid());
            fflush(stdout);
            _exit(2); /* no release: the lease gives it back */
        }
        call_partner_api();
        rc = rlock_permit_semaphore_release(cap, id);
        if (rc == 0)
            printf("[pid %ld] call %d outlived its lease\n", (long)getpid(),
                   i);
        else if (rc < 0)
            fprintf(stderr, "release: %s\n", rlock_strerror(rc));
    }
    status = 0;
out_cap:
    rlock_permit_semaphore_free(cap);
out_client:
    rlock_client_free(client);
    return status;
}
