/*
 * fanout.c: the "fanout" scenario, the ceiling that Redisson's unlock
 * channel puts on one RLock shared by many processes.
 *
 * Every unlock of an RLock publishes "0" on the lock's channel, and every
 * process with a waiter is subscribed to it (a Java client too: that is how
 * it is woken), so Redis writes each message to every such process and
 * each of them wakes to read it, whatever it then does. This scenario
 * measures that cost alone: --workers - 1 listener processes subscribe to
 * the channel with plain hiredis and only read, while one process runs the
 * contended loop (rlock_lock(); two round trips, here INCRs, for the
 * contended loop's GET and SET; rlock_unlock()) with nobody to contend
 * with. No library whose waiters hear Redisson's channel can hand
 * the lock on faster than this, with that many processes waiting.
 * Figures:
 *   acq_per_s            acquisitions per second of the lone worker
 *   listeners            processes subscribed besides it
 *   messages_per_acq     messages a listener read per acquisition (1: each
 *                        unlock reached each listener)
 *   redis_cmds_per_acq   commands Redis ran per acquisition (as contended)
 */
#include "bench.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LISTENERS 1023

typedef struct shared {
    atomic_int subscribed;
    atomic_llong messages;
} shared;

/* One listener's life: subscribe, then read until "end". */
static int listen_main(const bench_opts *o, const char *channel, shared *sh)
{
    redisContext *c = bench_connect(o);
    if (c == NULL)
        return 1;
    redisReply *r = redisCommand(c, "SUBSCRIBE %s", channel);
    if (r == NULL) {
        redisFree(c);
        return 1;
    }
    freeReplyObject(r);
    atomic_fetch_add(&sh->subscribed, 1);
    long long n = 0;
    while (bench_next_message(c) == 0)
        n++;
    atomic_fetch_add(&sh->messages, n);
    redisFree(c);
    return 0;
}

int bench_run_fanout(const bench_opts *o, json_t *out)
{
    int listeners = o->workers - 1;
    char name[160], channel[200], counter[160];
    pid_t *pid = calloc((size_t)(listeners > 0 ? listeners : 1), sizeof(*pid));
    shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    redisContext *c = NULL;
    rlock_client *client = NULL;
    rlock *l = NULL;
    int rc = -1;
    if (pid == NULL || sh == MAP_FAILED || listeners < 0 ||
        listeners > MAX_LISTENERS) {
        fprintf(stderr, "rlock-bench: fanout needs 1 to %d workers\n",
                MAX_LISTENERS + 1);
        goto out;
    }
    atomic_init(&sh->subscribed, 0);
    atomic_init(&sh->messages, 0);
    snprintf(name, sizeof(name), "%sfanout", o->prefix);
    snprintf(channel, sizeof(channel), "redisson_lock__channel:{%s}", name);
    snprintf(counter, sizeof(counter), "%scounter", o->prefix);
    if ((c = bench_connect(o)) == NULL ||
        bench_cmd_ok(c, "SET %s 0", counter) != 0)
        goto out;
    for (int i = 0; i < listeners; i++) {
        fflush(NULL);
        pid[i] = fork();
        if (pid[i] == 0)
            _exit(listen_main(o, channel, sh));
        if (pid[i] < 0)
            goto out_stop;
    }
    while (atomic_load(&sh->subscribed) < listeners)
        bench_sleep_ns(1000000);
    if (bench_client(o, &client) != 0 || rlock_get(client, name, &l) != 0)
        goto out_stop;

    bench_counters before, after;
    if (bench_counters_read(c, &before) != 0)
        goto out_stop;
    redisContext *inc = bench_connect(o);
    if (inc == NULL)
        goto out_stop;
    long long total = 0;
    int64_t start = bench_now_ns();
    int64_t until = start + (int64_t)(o->seconds * 1e9);
    while (bench_now_ns() < until) {
        if (rlock_lock(l) != 0)
            break;
        redisReply *r = redisCommand(inc, "INCR %s", counter);
        freeReplyObject(r);
        r = redisCommand(inc, "INCR %s", counter);
        freeReplyObject(r);
        if (rlock_unlock(l) != 0)
            break;
        total++;
    }
    double elapsed = (double)(bench_now_ns() - start) / 1e9;
    redisFree(inc);
    if (bench_counters_read(c, &after) != 0)
        goto out_stop;
    long long cmds = after.calls - before.calls -
                     (after.info_calls - before.info_calls) - 2 * total;
    double acq = total > 0 ? (double)total : 1;
    bench_set_num(out, "acq_per_s", elapsed > 0 ? (double)total / elapsed : 0);
    json_object_set_new(out, "listeners", json_integer(listeners));
    bench_set_num(out, "redis_cmds_per_acq", (double)cmds / acq);
    json_object_set_new(out, "acquisitions", json_integer(total));
    rc = 0;
out_stop:
    if (c != NULL)
        freeReplyObject(redisCommand(c, "PUBLISH %s end", channel));
    for (int i = 0; i < listeners; i++) {
        if (pid[i] <= 0)
            continue;
        int status = 0;
        waitpid(pid[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = -1;
    }
    if (rc == 0)
        bench_set_num(out, "messages_per_acq",
                      listeners > 0 && json_integer_value(json_object_get(
                                           out, "acquisitions")) > 0
                          ? (double)atomic_load(&sh->messages) / listeners /
                                (double)json_integer_value(
                                    json_object_get(out, "acquisitions"))
                          : 0);
    rlock_free(l);
    rlock_client_free(client);
out:
    if (c != NULL)
        redisFree(c);
    if (sh != MAP_FAILED)
        munmap(sh, sizeof(*sh));
    free(pid);
    return rc;
}
