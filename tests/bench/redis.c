/*
 * redis.c: plain hiredis helpers for rlock-bench: connecting to --url,
 * reading INFO counters, one-off commands.
 *
 * The benchmark's own traffic (INFO, the contended scenario's counter GET
 * and SET, the held scenario's PTTL probes) goes through these blocking
 * connections, never through rlock, and is subtracted where the output
 * counts Redis commands.
 */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Accepts redis://host:port with an optional /0; the benchmark starts its
 * own server, so credentials and other databases are not needed. */
int bench_parse_url(bench_opts *o)
{
    const char *p = o->url;
    size_t skip = p == NULL                                 ? 0
                  : strncmp(p, "redis://", 8) == 0          ? 8
                  : strncmp(p, "redis+cluster://", 16) == 0 ? 16
                                                            : 0;
    if (skip == 0)
        goto out_bad;
    p += skip;
    /* a cluster's first seed is the node the plain connection talks to */
    char first[sizeof(o->host) + 8];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(p, ","), p);
    p = first;
    const char *colon = strrchr(p, ':');
    if (colon == NULL || colon == p || (size_t)(colon - p) >= sizeof(o->host))
        goto out_bad;
    memcpy(o->host, p, (size_t)(colon - p));
    o->host[colon - p] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (port <= 0 || port > 65535 || (*end != '\0' && strcmp(end, "/0") != 0))
        goto out_bad;
    o->port = (int)port;
    return 0;
out_bad:
    fprintf(stderr,
            "rlock-bench: --url must be redis://HOST:PORT or "
            "redis+cluster://HOST:PORT[,...] (got %s)\n",
            o->url ? o->url : "nothing");
    return -1;
}

/* Blocking connection with 10 s connect and I/O timeouts, so that a stuck
 * server fails the run instead of hanging it. */
redisContext *bench_connect(const bench_opts *o)
{
    struct timeval tv = {.tv_sec = 10};
    redisContext *c = redisConnectWithTimeout(o->host, o->port, tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "rlock-bench: cannot connect to %s: %s\n", o->url,
                c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* A redis+cluster:// URL lists its seeds, "host:port" separated by
 * commas; a redis:// URL has one. Each gets a connection of its own. */
int bench_connect_nodes(const bench_opts *o, redisContext **out, int max)
{
    const char *p = o->url;
    int n = 0;
    if (strncmp(p, "redis+cluster://", 16) != 0) {
        out[0] = bench_connect(o);
        return out[0] != NULL ? 1 : -1;
    }
    for (p += 16; *p != '\0' && n < max; n++) {
        size_t len = strcspn(p, ",");
        bench_opts one = *o;
        char url[300];
        snprintf(url, sizeof(url), "redis://%.*s", (int)len, p);
        one.url = url;
        if (bench_parse_url(&one) != 0 ||
            (out[n] = bench_connect(&one)) == NULL)
            goto out_free;
        p += len;
        if (*p == ',')
            p++;
    }
    return n;
out_free:
    while (n-- > 0)
        redisFree(out[n]);
    return -1;
}

/* Adds calls to name's count in c (a new entry if it has none; dropped
 * when the table is full). */
static void add_command_calls(bench_counters *c, const char *name,
                              long long calls)
{
    for (int i = 0; i < c->ncommands; i++) {
        if (strcmp(c->by_command[i].name, name) == 0) {
            c->by_command[i].calls += calls;
            return;
        }
    }
    if (c->ncommands == BENCH_MAX_COMMANDS)
        return;
    bench_command_calls *e = &c->by_command[c->ncommands++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->calls = calls;
}

/* name's calls in c, 0 when it has none. */
static long long command_calls(const bench_counters *c, const char *name)
{
    for (int i = 0; i < c->ncommands; i++)
        if (strcmp(c->by_command[i].name, name) == 0)
            return c->by_command[i].calls;
    return 0;
}

/* Adds one node's counters to a sum over the nodes. */
void bench_counters_add(bench_counters *sum, const bench_counters *one)
{
    sum->calls += one->calls;
    sum->info_calls += one->info_calls;
    sum->script_calls += one->script_calls;
    sum->reads += one->reads;
    sum->expired_keys += one->expired_keys;
    sum->used_memory += one->used_memory;
    sum->script_usec += one->script_usec;
    sum->pttl_usec += one->pttl_usec;
    sum->cpu_us += one->cpu_us;
    sum->keys += one->keys;
    for (int i = 0; i < one->ncommands; i++)
        add_command_calls(sum, one->by_command[i].name,
                          one->by_command[i].calls);
}

/* One command whose reply only matters as "not an error". */
int bench_cmd_ok(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = r != NULL && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "rlock-bench: '%s' failed: %s\n", fmt,
                r ? r->str : c->errstr);
    freeReplyObject(r);
    return rc;
}

/* Returns the value of "name:value" in an INFO text, or -1. */
static long long info_field(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == text || p[-1] == '\n') && p[len] == ':')
            return strtoll(p + len + 1, NULL, 10);
    }
    return -1;
}

/* Returns the value of "name:seconds.fraction" in an INFO text, or 0. */
static double info_real(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += len) {
        if ((p == text || p[-1] == '\n') && p[len] == ':')
            return strtod(p + len + 1, NULL);
    }
    return 0;
}

/* Adds up commandstats lines "cmdstat_NAME:calls=N,...". */
static void sum_commandstats(const char *text, bench_counters *out)
{
    for (const char *p = text; (p = strstr(p, "cmdstat_")) != NULL;) {
        const char *name = p + 8;
        const char *colon = strchr(name, ':');
        if (colon == NULL)
            break;
        const char *calls = strstr(colon, "calls=");
        if (calls == NULL)
            break;
        long long n = strtoll(calls + 6, NULL, 10);
        const char *usec_at = strstr(calls, "usec=");
        long long usec = usec_at != NULL ? strtoll(usec_at + 5, NULL, 10) : 0;
        size_t nlen = (size_t)(colon - name);
        char one[sizeof(out->by_command[0].name)];
        snprintf(one, sizeof(one), "%.*s", (int)nlen, name);
        add_command_calls(out, one, n);
        out->calls += n;
        if (nlen == 4 && strncmp(name, "pttl", 4) == 0)
            out->pttl_usec += usec;
        if ((nlen == 4 && strncmp(name, "info", 4) == 0) ||
            (nlen == 6 && strncmp(name, "dbsize", 6) == 0))
            out->info_calls += n;
        if ((nlen == 4 && strncmp(name, "eval", 4) == 0) ||
            (nlen == 7 && strncmp(name, "evalsha", 7) == 0) ||
            (nlen == 7 && strncmp(name, "eval_ro", 7) == 0) ||
            (nlen == 10 && strncmp(name, "evalsha_ro", 10) == 0)) {
            out->script_calls += n;
            out->script_usec += usec;
        }
        p = colon;
    }
}

/* The machine's busy and total jiffies over all CPUs (the first line of
 * /proc/stat: user nice system idle iowait irq softirq steal ...; idle and
 * iowait are not busy); both stay 0 where it cannot be read. */
static void read_host_jiffies(bench_counters *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return;
    long long v[8] = {0};
    int n = fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5)
        return;
    long long total = 0;
    for (int i = 0; i < 8; i++)
        total += v[i];
    out->host_total = total;
    out->host_busy = total - v[3] - v[4];
}

/* Two INFO calls: commandstats for the per-command calls and their CPU
 * time, "all" for the stats and cpu sections; then DBSIZE. The INFO calls
 * and DBSIZE calls are counted in info_calls, which callers subtract. */
int bench_counters_read(redisContext *c, bench_counters *out)
{
    memset(out, 0, sizeof(*out));
    redisReply *r = redisCommand(c, "INFO commandstats");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return -1;
    }
    sum_commandstats(r->str, out);
    freeReplyObject(r);
    r = redisCommand(c, "INFO all");
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return -1;
    }
    out->reads = info_field(r->str, "total_reads_processed");
    out->expired_keys = info_field(r->str, "expired_keys");
    out->used_memory = info_field(r->str, "used_memory");
    out->cpu_us = (long long)((info_real(r->str, "used_cpu_sys") +
                               info_real(r->str, "used_cpu_user")) *
                              1e6);
    freeReplyObject(r);
    r = redisCommand(c, "DBSIZE");
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        return -1;
    }
    out->keys = r->integer;
    freeReplyObject(r);
    read_host_jiffies(out);
    return 0;
}

static int by_calls_descending(const void *a, const void *b)
{
    long long x = ((const bench_command_calls *)a)->calls;
    long long y = ((const bench_command_calls *)b)->calls;
    return x < y ? 1 : x > y ? -1 : 0;
}

void bench_set_cmds_by_command(json_t *out, const bench_counters *before,
                               const bench_counters *after, double acq,
                               const bench_command_calls *own)
{
    bench_command_calls diff[BENCH_MAX_COMMANDS];
    int n = 0;
    for (int i = 0; i < after->ncommands; i++) {
        const char *name = after->by_command[i].name;
        if (strcmp(name, "info") == 0 || strcmp(name, "dbsize") == 0)
            continue;
        long long calls =
            after->by_command[i].calls - command_calls(before, name);
        for (const bench_command_calls *o = own; o->name[0] != '\0'; o++)
            if (strcmp(o->name, name) == 0)
                calls -= o->calls;
        if (calls <= 0)
            continue;
        diff[n] = after->by_command[i];
        diff[n++].calls = calls;
    }
    qsort(diff, (size_t)n, sizeof(diff[0]), by_calls_descending);
    json_t *by = json_object();
    if (by == NULL)
        return;
    for (int i = 0; i < n; i++)
        bench_set_num(by, diff[i].name, (double)diff[i].calls / acq);
    json_object_set_new(out, "redis_cmds_by_command", by);
}

void bench_set_cpu_split(json_t *out, const bench_counters *before,
                         const bench_counters *after, double elapsed_s,
                         double acq)
{
    double redis_us = (double)(after->cpu_us - before->cpu_us);
    if (elapsed_s > 0)
        bench_set_num(out, "redis_cpu_share", redis_us / (elapsed_s * 1e6));
    if (acq > 0)
        bench_set_num(out, "redis_cpu_us_per_acq", redis_us / acq);
    long long total = after->host_total - before->host_total;
    if (total > 0 && before->host_total > 0)
        bench_set_num(out, "host_idle_share",
                      1.0 - (double)(after->host_busy - before->host_busy) /
                                (double)total);
}

/* Copies redis_version from INFO server. */
void bench_redis_version(redisContext *c, char *out, size_t len)
{
    out[0] = '\0';
    redisReply *r = redisCommand(c, "INFO server");
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "redis_version:");
        if (p != NULL) {
            p += 14;
            size_t n = strcspn(p, "\r\n");
            if (n >= len)
                n = len - 1;
            memcpy(out, p, n);
            out[n] = '\0';
        }
    }
    freeReplyObject(r);
}

int bench_next_message(redisContext *c)
{
    void *reply = NULL;
    if (redisGetReply(c, &reply) != REDIS_OK)
        return -1;
    redisReply *r = reply;
    int end = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
              r->element[2]->type == REDIS_REPLY_STRING &&
              strcmp(r->element[2]->str, "end") == 0;
    freeReplyObject(r);
    return end;
}
