/*
 * job_guard.c: "only one instance of this job runs at a time".
 *
 * A scheduled job (cron, a systemd timer, a Kubernetes CronJob on several
 * nodes) takes the lock "job:nightly-report" with rlock_trylock(l, 0,
 * RLOCK_LEASE_WATCHDOG): one attempt, no waiting. The instance that gets it
 * runs the job; every other instance sees it taken and exits at once. The
 * lease is kept alive by the watchdog for as long as the job runs, however
 * long that is. If the process dies the renewals stop and the lock expires
 * within one watchdog timeout, so a crashed run never blocks the next one
 * for good.
 *
 * To make the renewals visible the watchdog timeout is set to 3 s here
 * (renewed every second) instead of the default 30 s: the job below runs
 * longer than one lease, and the printed TTL keeps going back up. A Java
 * service guarding the same job with Redisson's
 * getLock("job:nightly-report").tryLock() excludes, and is excluded by,
 * this program.
 *
 * Usage:
 *   job_guard [redis-url] [job-seconds]   (redis://127.0.0.1:6379, 4)
 * Exit status: 0 the job ran, 3 another instance was running (skipped),
 * 1 error (including a lock lost while the job ran).
 *
 * Try three instances at once; one runs, two exit with status 3:
 *   for i in 1 2 3; do
 *       build/examples/job_guard redis://127.0.0.1:6379 & done; wait
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define JOB_LOCK     "job:nightly-report"
#define EXIT_SKIPPED 3

/* The job itself: a few steps of pretend work, one per second. */
static void run_job(rlock *l, int seconds)
{
    for (int i = 1; i <= seconds; i++) {
        nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
        printf("[pid %ld] step %d/%d done, lock TTL %" PRId64 " ms\n",
               (long)getpid(), i, seconds, rlock_remaining_ttl(l));
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    int seconds = argc > 2 ? atoi(argv[2]) : 4;
    rlock_config *cfg = NULL;
    rlock_client *client = NULL;
    rlock *l = NULL;
    int status = 1;

    int rc = rlock_config_new(&cfg);
    if (rc == 0)
        rc = rlock_config_set_watchdog_timeout(cfg, 3000);
    if (rc == 0)
        rc = rlock_client_connect_with(&client, url, cfg);
    rlock_config_free(cfg); /* the client keeps its own copy */
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s\n", url, rlock_strerror(rc));
        return 1;
    }
    rc = rlock_get(client, JOB_LOCK, &l);
    if (rc != 0) {
        fprintf(stderr, "rlock_get: %s\n", rlock_strerror(rc));
        goto out_free_client;
    }

    rc = rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG);
    if (rc == RLOCK_ETIMEDOUT) {
        printf("[pid %ld] another instance is running " JOB_LOCK
               " (lock TTL %" PRId64 " ms): skipping\n",
               (long)getpid(), rlock_remaining_ttl(l));
        status = EXIT_SKIPPED;
        goto out_free_lock;
    }
    if (rc != 0) {
        fprintf(stderr, "rlock_trylock: %s\n", rlock_strerror(rc));
        goto out_free_lock;
    }

    printf("[pid %ld] got " JOB_LOCK ", running the job for %d s "
           "(lease 3000 ms, renewed every 1000 ms by the watchdog)\n",
           (long)getpid(), seconds);
    fflush(stdout);
    run_job(l, seconds);

    rc = rlock_unlock(l);
    if (rc == RLOCK_ELOST) {
        /* expired (Redis unreachable for a whole lease) or force-unlocked:
         * another instance may have run alongside this one */
        fprintf(stderr, "[pid %ld] the lock was lost while the job ran\n",
                (long)getpid());
    } else if (rc != 0) {
        fprintf(stderr, "rlock_unlock: %s\n", rlock_strerror(rc));
    } else {
        printf("[pid %ld] job done, lock released\n", (long)getpid());
        status = 0;
    }

out_free_lock:
    rlock_free(l);
out_free_client:
    rlock_client_free(client);
    return status;
}
