/*
 * limit.c: the "limit" scenario, the floor every rlock figure is compared
 * with: what the Redis under test does with no library in the way.
 *
 * It uses plain blocking hiredis and rlock's own embedded scripts
 * (rlock_scripts.c, generated from scripts/NAME.lua: the same bytes and
 * SHA-1s the library sends), with the arguments the library passes:
 *   PING round trip                         ping_rtt_p50_us
 *   EVALSHA of lock_acquire / lock_release  evalsha_rtt_p50_us (either),
 *     alternating on one connection         and each script's own p50
 *   16 EVALSHA pipelined per round trip     evalsha_pipelined_per_s
 *   lock+unlock pairs on `conns` blocking   evalsha_pairs_per_s
 *     connections at once (one thread each)
 * Each unlock uses a fresh latch key, as every rlock_unlock() does.
 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/scripts.h"

#define PIPELINE_DEPTH 16
#define OWNER          "00000000-0000-4000-8000-000000000000:1"
#define LEASE          "30000"
#define LATCH_MS       "18000"

/* The argument vectors of one lock and one unlock call on one key. */
typedef struct script_args {
    char name[160];
    char channel[200];
    char latch[240];
    unsigned long seq;
} script_args;

/* Names a key of its own (per tag) and its unlock channel. */
static void args_init(script_args *a, const bench_opts *o, const char *tag)
{
    snprintf(a->name, sizeof(a->name), "%slimit:%s", o->prefix, tag);
    snprintf(a->channel, sizeof(a->channel), "redisson_lock__channel:{%.159s}",
             a->name);
    a->seq = 0;
}

/* Appends EVALSHA of the acquire script to c's output buffer. */
static int append_lock(redisContext *c, script_args *a)
{
    const rlock__script *s = &rlock__script_lock_acquire;
    const char *argv[] = {"EVALSHA", s->sha1, "1", a->name, LEASE, OWNER};
    return redisAppendCommandArgv(c, 6, argv, NULL);
}

/* Appends EVALSHA of the release script, with a fresh latch. */
static int append_unlock(redisContext *c, script_args *a)
{
    const rlock__script *s = &rlock__script_lock_release;
    snprintf(a->latch, sizeof(a->latch), "redisson_unlock_latch:{%.159s}:%lx",
             a->name, a->seq++);
    const char *argv[] = {"EVALSHA",  s->sha1,   "3",     a->name,
                          a->channel, a->latch,  "0",     LEASE,
                          OWNER,      "PUBLISH", LATCH_MS};
    return redisAppendCommandArgv(c, 11, argv, NULL);
}

/* Reads one reply; returns 0 unless it is missing or an error. */
static int read_reply(redisContext *c)
{
    redisReply *r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        return -1;
    int rc = r->type == REDIS_REPLY_ERROR ? -1 : 0;
    if (rc != 0)
        fprintf(stderr, "rlock-bench: limit: %s\n", r->str);
    freeReplyObject(r);
    return rc;
}

/* SCRIPT LOAD of both scripts, checking that Redis agrees on the SHA-1. */
static int load_scripts(redisContext *c)
{
    const rlock__script *all[] = {&rlock__script_lock_acquire,
                                  &rlock__script_lock_release};
    for (size_t i = 0; i < 2; i++) {
        redisReply *r =
            redisCommand(c, "SCRIPT LOAD %b", all[i]->body, all[i]->len);
        int ok = r != NULL && r->type == REDIS_REPLY_STRING &&
                 strcmp(r->str, all[i]->sha1) == 0;
        freeReplyObject(r);
        if (!ok) {
            fprintf(stderr, "rlock-bench: SCRIPT LOAD %s failed\n",
                    all[i]->name);
            return -1;
        }
    }
    return 0;
}

/* One round trip of a single appended command, timed; returns ns or -1. */
static int64_t timed(redisContext *c, int rc_append)
{
    int64_t t0 = bench_now_ns();
    if (rc_append != REDIS_OK || read_reply(c) != 0)
        return -1;
    return bench_now_ns() - t0;
}

/* PING round trips until `until`; the p50 goes to out. */
static int measure_ping(redisContext *c, int64_t until, bench_limit *out)
{
    bench_samples s = {0};
    int rc = 0;
    while (rc == 0 && bench_now_ns() < until) {
        int64_t ns = timed(c, redisAppendCommand(c, "PING"));
        rc = ns < 0 ? -1 : bench_samples_add(&s, ns);
    }
    out->ping_p50_us = bench_samples_pct_us(&s, 50);
    bench_samples_free(&s);
    return rc;
}

static int measure_evalsha(const bench_opts *o, redisContext *c, int64_t until,
                           bench_limit *out)
{
    bench_samples lock = {0}, unlock = {0}, both = {0};
    script_args a;
    int rc = 0;
    args_init(&a, o, "rtt");
    while (rc == 0 && bench_now_ns() < until) {
        int64_t t1 = timed(c, append_lock(c, &a));
        int64_t t2 = t1 < 0 ? -1 : timed(c, append_unlock(c, &a));
        if (t2 < 0 || bench_samples_add(&lock, t1) ||
            bench_samples_add(&unlock, t2) || bench_samples_add(&both, t1) ||
            bench_samples_add(&both, t2))
            rc = -1;
    }
    out->evalsha_p50_us = bench_samples_pct_us(&both, 50);
    out->evalsha_lock_p50_us = bench_samples_pct_us(&lock, 50);
    out->evalsha_unlock_p50_us = bench_samples_pct_us(&unlock, 50);
    bench_samples_free(&lock);
    bench_samples_free(&unlock);
    bench_samples_free(&both);
    return rc;
}

/* PIPELINE_DEPTH calls per round trip: locks on half as many keys, then
 * their unlocks. */
static int measure_pipelined(const bench_opts *o, redisContext *c,
                             int64_t until, bench_limit *out)
{
    script_args a[PIPELINE_DEPTH / 2];
    long long calls = 0;
    for (int i = 0; i < PIPELINE_DEPTH / 2; i++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "pipe%d", i);
        args_init(&a[i], o, tag);
    }
    int64_t t0 = bench_now_ns(), t1 = t0;
    while ((t1 = bench_now_ns()) < until) {
        for (int i = 0; i < PIPELINE_DEPTH / 2; i++)
            if (append_lock(c, &a[i]) != REDIS_OK)
                return -1;
        for (int i = 0; i < PIPELINE_DEPTH / 2; i++)
            if (append_unlock(c, &a[i]) != REDIS_OK)
                return -1;
        for (int i = 0; i < PIPELINE_DEPTH; i++)
            if (read_reply(c) != 0)
                return -1;
        calls += PIPELINE_DEPTH;
    }
    t1 = bench_now_ns();
    out->pipelined_per_s = (double)calls * 1e9 / (double)(t1 - t0);
    return 0;
}

typedef struct pair_thread {
    const bench_opts *o;
    int index;
    int64_t start, until;
    long long pairs;
    int rc;
} pair_thread;

/* One connection doing lock+unlock pairs on its own key until `until`. */
static void *pair_main(void *arg)
{
    pair_thread *t = arg;
    redisContext *c = bench_connect(t->o);
    script_args a;
    char tag[32];
    t->rc = -1;
    if (c == NULL)
        return NULL;
    snprintf(tag, sizeof(tag), "pair%d", t->index);
    args_init(&a, t->o, tag);
    while (bench_now_ns() < t->start)
        bench_sleep_ns(100000);
    while (bench_now_ns() < t->until) {
        if (timed(c, append_lock(c, &a)) < 0 ||
            timed(c, append_unlock(c, &a)) < 0)
            goto out;
        t->pairs++;
    }
    t->rc = 0;
out:
    redisFree(c);
    return NULL;
}

/* conns threads with a connection each, doing lock+unlock pairs at once:
 * the ceiling the "parallel" scenario is compared with. */
static int measure_pairs(const bench_opts *o, int conns, double seconds,
                         bench_limit *out)
{
    pair_thread *t = calloc((size_t)conns, sizeof(*t));
    pthread_t *tid = calloc((size_t)conns, sizeof(*tid));
    int rc = -1, started = 0;
    if (t == NULL || tid == NULL)
        goto out;
    /* connections are made before the clock starts */
    int64_t start = bench_now_ns() + 200000000;
    int64_t until = start + (int64_t)(seconds * 1e9);
    for (; started < conns; started++) {
        t[started] = (pair_thread){
            .o = o, .index = started, .start = start, .until = until};
        if (pthread_create(&tid[started], NULL, pair_main, &t[started]) != 0)
            break;
    }
    long long pairs = 0;
    rc = started == conns ? 0 : -1;
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        pairs += t[i].pairs;
        if (t[i].rc != 0)
            rc = -1;
    }
    out->pairs_per_s = (double)pairs / seconds;
    out->conns = conns;
out:
    free(t);
    free(tid);
    return rc;
}

/* Splits `seconds` between the measurements: 20% PING, 30% EVALSHA, 20%
 * pipelined, 30% pairs on conns connections. */
int bench_limit_measure(const bench_opts *o, double seconds, int conns,
                        bench_limit *out)
{
    memset(out, 0, sizeof(*out));
    redisContext *c = bench_connect(o);
    if (c == NULL)
        return -1;
    int rc = load_scripts(c);
    /* a short warm-up so the first samples do not pay for page faults */
    int64_t now = bench_now_ns();
    if (rc == 0)
        rc = measure_evalsha(o, c, now + 50000000, out);
    int64_t span = (int64_t)(seconds * 1e9);
    if (rc == 0)
        rc = measure_ping(c, bench_now_ns() + span / 5, out);
    if (rc == 0)
        rc = measure_evalsha(o, c, bench_now_ns() + span * 3 / 10, out);
    if (rc == 0)
        rc = measure_pipelined(o, c, bench_now_ns() + span / 5, out);
    redisFree(c);
    if (rc == 0 && conns > 0)
        rc = measure_pairs(o, conns, seconds * 3 / 10, out);
    return rc;
}

json_t *bench_limit_json(const bench_limit *l)
{
    json_t *j = json_object();
    bench_set_num(j, "ping_rtt_p50_us", l->ping_p50_us);
    bench_set_num(j, "evalsha_rtt_p50_us", l->evalsha_p50_us);
    bench_set_num(j, "evalsha_pipelined_per_s", l->pipelined_per_s);
    bench_set_num(j, "evalsha_lock_rtt_p50_us", l->evalsha_lock_p50_us);
    bench_set_num(j, "evalsha_unlock_rtt_p50_us", l->evalsha_unlock_p50_us);
    bench_set_num(j, "evalsha_pairs_per_s", l->pairs_per_s);
    json_object_set_new(j, "pairs_connections", json_integer(l->conns));
    json_object_set_new(j, "pipeline_depth", json_integer(PIPELINE_DEPTH));
    return j;
}
