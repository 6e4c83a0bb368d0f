/*
 * ring.c: the "ring" scenario, the floor of an orderly hand-over of one
 * RLock between processes with Redisson's scripts, measured
 * with no library in the way.
 *
 * --workers processes pass the lock round a ring with plain blocking
 * hiredis and rlock's embedded copies of Redisson's acquire and release
 * scripts. Process i listens on a channel of its own; the holder's release
 * publishes its "0" there for the next process instead of on the lock's
 * channel (the one change to Redisson's call: it tells exactly the one
 * whose turn it is, which a real library can only know through
 * bookkeeping of its own), and that process, woken by it, runs the acquire
 * script once (it always succeeds), makes the contended loop's two round
 * trips (GET, SET on the counter), releases to the one after it and sends
 * the latch DEL without waiting for it, as Redisson does. That is the least
 * a hand-over that lets nobody barge costs through Redis: one message, the
 * acquire and the release round trips, no failed try and no queue. rlock's
 * queued RLock makes the same hand-over plus its queue's bookkeeping; a
 * library whose releaser takes the lock straight back makes none.
 * Figures:
 *   acq_per_s            acquisitions per second, all processes
 *   min_acq, max_acq     acquisitions of the least and most lucky process
 *                        (equal, or one apart: the ring is fair by design)
 *   lost_increments      acquisitions minus the counter's final value
 *   redis_cmds_per_acq   commands Redis ran per acquisition, scripts'
 *                        included, without the loop's GET, SET and INFO
 *   redis_cmds_by_command  the same, command by command
 *   redis_reads_per_acq  request batches Redis read per acquisition,
 *                        without the loop's own
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/scripts.h"

#define MAX_WORKERS 1024
#define LEASE       "30000"
#define LATCH_MS    "18000"

typedef struct shared {
    atomic_int ready;
    int64_t until;
    long long acq[MAX_WORKERS];
} shared;

typedef struct ring {
    const bench_opts *o;
    shared *sh;
    int n;
    char name[160];
    char counter[160];
} ring;

static void channel_of(const ring *g, int i, char *out, size_t len)
{
    snprintf(out, len, "%.160sring:%d", g->o->prefix, i % g->n);
}

/* Runs cmd (an EVALSHA) and checks its reply: nil when want_nil, else the
 * integer 1. Returns 0 or -1 with a message. */
static int call_script(redisContext *c, int argc, const char **argv,
                       bool want_nil)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    bool ok = r != NULL &&
              (want_nil ? r->type == REDIS_REPLY_NIL
                        : r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (!ok)
        fprintf(stderr, "rlock-bench: ring: %s answered %s\n", argv[1],
                r == NULL                          ? "nothing"
                : r->type == REDIS_REPLY_ERROR     ? r->str
                : r->type == REDIS_REPLY_INTEGER   ? "a busy lock"
                                                   : "something else");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* One turn of process i: take the lock, the two round trips, release to
 * the next process. Returns 0 or -1. */
static int turn(const ring *g, int i, redisContext *c, const char *owner,
                const char *next_channel, char *latch, size_t latch_len,
                unsigned long seq)
{
    const rlock__script *acquire = &rlock__script_lock_acquire;
    const char *lock_argv[] = {"EVALSHA", acquire->sha1, "1", g->name, LEASE,
                               owner};
    if (call_script(c, 6, lock_argv, true) != 0)
        return -1;
    redisReply *r = redisCommand(c, "GET %s", g->counter);
    long long v = r != NULL && r->type == REDIS_REPLY_STRING
                      ? strtoll(r->str, NULL, 10)
                      : -1;
    freeReplyObject(r);
    if (v < 0)
        return -1;
    r = redisCommand(c, "SET %s %lld", g->counter, v + 1);
    freeReplyObject(r);
    g->sh->acq[i]++;
    const rlock__script *release = &rlock__script_lock_release;
    snprintf(latch, latch_len, "redisson_unlock_latch:{%.159s}:%d-%lu",
             g->name, i, seq);
    const char *unlock_argv[] = {"EVALSHA", release->sha1, "3",  g->name,
                                 next_channel, latch,      "0",  LEASE,
                                 owner,      "PUBLISH",    LATCH_MS};
    if (call_script(c, 11, unlock_argv, false) != 0)
        return -1;
    /* the latch DEL goes out now; its reply is read at the next turn */
    return redisAppendCommand(c, "DEL %s", latch) == REDIS_OK &&
                   redisBufferWrite(c, &(int){0}) == REDIS_OK
               ? 0
               : -1;
}

/* Process i's life: listen on its channel; each "0" there is its turn,
 * "end" ends it. The one whose turn comes after the run's end tells
 * everyone. Returns the exit status. */
static int member_main(const ring *g, int i)
{
    char mine[200], next[200], owner[64], latch[320];
    redisContext *sub = bench_connect(g->o), *c = bench_connect(g->o);
    if (sub == NULL || c == NULL)
        return 1;
    channel_of(g, i, mine, sizeof(mine));
    channel_of(g, i + 1, next, sizeof(next));
    snprintf(owner, sizeof(owner), "00000000-0000-4000-8000-%012d:1", i);
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", mine);
    if (r == NULL)
        return 1;
    freeReplyObject(r);
    atomic_fetch_add(&g->sh->ready, 1);
    bool del_due = false;
    int status = 0;
    for (unsigned long seq = 0;; seq++) {
        int end = bench_next_message(sub);
        if (end != 0) {
            status = end < 0;
            break;
        }
        if (del_due) { /* the last turn's latch DEL */
            void *reply = NULL;
            if (redisGetReply(c, &reply) != REDIS_OK) {
                status = 1;
                break;
            }
            freeReplyObject(reply);
        }
        if (bench_now_ns() >= g->sh->until) {
            for (int k = 0; k < g->n; k++) {
                char ch[200];
                channel_of(g, k, ch, sizeof(ch));
                freeReplyObject(redisCommand(c, "PUBLISH %s end", ch));
            }
            break;
        }
        if (turn(g, i, c, owner, next, latch, sizeof(latch), seq) != 0) {
            status = 1;
            break;
        }
        del_due = true;
    }
    redisFree(sub);
    redisFree(c);
    return status;
}

int bench_run_ring(const bench_opts *o, json_t *out)
{
    ring g = {.o = o, .n = o->workers};
    pid_t pid[MAX_WORKERS];
    int started = 0, rc = -1;
    int64_t start = 0;
    redisContext *c = NULL;
    if (o->workers < 2 || o->workers > MAX_WORKERS) {
        fprintf(stderr, "rlock-bench: ring needs 2 to %d workers\n",
                MAX_WORKERS);
        return -1;
    }
    g.sh = mmap(NULL, sizeof(*g.sh), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g.sh == MAP_FAILED)
        return -1;
    memset(g.sh, 0, sizeof(*g.sh));
    snprintf(g.name, sizeof(g.name), "%sring", o->prefix);
    snprintf(g.counter, sizeof(g.counter), "%scounter", o->prefix);
    if ((c = bench_connect(o)) == NULL ||
        bench_cmd_ok(c, "SET %s 0", g.counter) != 0)
        goto out;
    const rlock__script *all[] = {&rlock__script_lock_acquire,
                                  &rlock__script_lock_release};
    for (int k = 0; k < 2; k++)
        if (bench_cmd_ok(c, "SCRIPT LOAD %b", all[k]->body, all[k]->len) != 0)
            goto out;
    for (; started < g.n; started++) {
        fflush(NULL);
        pid[started] = fork();
        if (pid[started] == 0)
            _exit(member_main(&g, started));
        if (pid[started] < 0)
            goto out_stop;
    }
    while (atomic_load(&g.sh->ready) < g.n)
        bench_sleep_ns(1000000);

    bench_counters before, after;
    if (bench_counters_read(c, &before) != 0)
        goto out_stop;
    start = bench_now_ns();
    g.sh->until = start + (int64_t)(o->seconds * 1e9);
    char first[200];
    channel_of(&g, 0, first, sizeof(first));
    freeReplyObject(redisCommand(c, "PUBLISH %s 0", first));
    rc = 0;
out_stop:
    for (int k = 0; k < started; k++) {
        int status = 0;
        waitpid(pid[k], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = -1;
    }
    if (rc != 0)
        goto out;
    double elapsed = (double)(bench_now_ns() - start) / 1e9;
    if (bench_counters_read(c, &after) != 0) {
        rc = -1;
        goto out;
    }
    long long total = 0, min_acq = -1, max_acq = 0;
    for (int k = 0; k < g.n; k++) {
        total += g.sh->acq[k];
        if (min_acq < 0 || g.sh->acq[k] < min_acq)
            min_acq = g.sh->acq[k];
        if (g.sh->acq[k] > max_acq)
            max_acq = g.sh->acq[k];
    }
    redisReply *r = redisCommand(c, "GET %s", g.counter);
    long long counter =
        r != NULL && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10)
                                                   : -1;
    freeReplyObject(r);
    double acq = total > 0 ? (double)total : 1;
    /* the run's own: the loop's GET and SET, the first PUBLISH and the
     * "end" ones */
    long long own = 2 * total + 1 + g.n;
    long long cmds =
        after.calls - before.calls - (after.info_calls - before.info_calls) -
        own;
    long long reads =
        after.reads - before.reads - (after.info_calls - before.info_calls) -
        own;
    bench_set_num(out, "acq_per_s", elapsed > 0 ? (double)total / elapsed : 0);
    json_object_set_new(out, "lost_increments", json_integer(total - counter));
    json_object_set_new(out, "min_acq", json_integer(min_acq));
    json_object_set_new(out, "max_acq", json_integer(max_acq));
    bench_set_num(out, "redis_cmds_per_acq", (double)cmds / acq);
    bench_set_num(out, "redis_reads_per_acq", (double)reads / acq);
    bench_set_cpu_split(out, &before, &after, elapsed, acq);
    bench_set_cmds_by_command(out, &before, &after, acq,
                              (bench_command_calls[]){{"get", total},
                                                      {"set", total},
                                                      {"publish", 1 + g.n},
                                                      {"", 0}});
    json_object_set_new(out, "acquisitions", json_integer(total));
    json_object_set_new(out, "procs", json_true());
out:
    if (c != NULL)
        redisFree(c);
    munmap(g.sh, sizeof(*g.sh));
    return rc;
}
