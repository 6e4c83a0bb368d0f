/*
 * sentinel_fixture.c: the Sentinel group of sentinel_fixture.h.
 *
 * The harness starts every server (rt_redis_start_conf: a sentinel's own
 * config file, a password for its probe and rt_cmd) and stops what is left
 * at exit. Here: the sentinels' config text, the order of starting (the
 * master, the replica of it, then the sentinels watching it), and waits on
 * what the servers say about each other, since a sentinel group is ready
 * only once every sentinel has heard the others' hello messages (every
 * 2 s) and seen the replica.
 */
#include "sentinel_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define GROUP_READY_MS 20000

int rt_sentinel_dead_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int port = -1, fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int rt_sentinel_port(const rt_redis *r)
{
    return r->tls_port > 0 ? r->tls_port : r->port;
}

/* A command on sentinel i (rt_cmd's format), or NULL when it is down. */
static redisReply *ask(rt_sentinel_group *g, int i, const char *fmt,
                       const char *arg)
{
    return g->sentinel[i].pid > 0 ? rt_cmd(&g->sentinel[i], fmt, arg) : NULL;
}

/* The port the first live sentinel names as the master's, or -1. */
static int named_master_port(rt_sentinel_group *g, int i)
{
    redisReply *r = ask(g, i, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                        RT_SENTINEL_MASTER);
    int port = -1;
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        port = atoi(r->element[1]->str);
    freeReplyObject(r);
    return port;
}

rt_redis *rt_sentinel_master_node(rt_sentinel_group *g)
{
    for (int i = 0; i < RT_SENTINELS; i++) {
        int port = named_master_port(g, i);
        if (port < 0)
            continue;
        for (int k = 0; k < 2; k++)
            if (rt_sentinel_port(&g->node[k]) == port)
                return &g->node[k];
        return NULL;
    }
    return NULL;
}

rt_redis *rt_sentinel_replica_node(rt_sentinel_group *g)
{
    rt_redis *m = rt_sentinel_master_node(g);
    return m == NULL ? NULL : m == &g->node[0] ? &g->node[1] : &g->node[0];
}

/* The value of field in an INFO reply's text, copied into out. */
static int info_field(const char *info, const char *field, char *out,
                      size_t len)
{
    size_t n = strlen(field);
    for (const char *p = info; p != NULL && *p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, field, n) == 0 && p[n] == ':') {
            size_t k = strcspn(p + n + 1, "\r\n");
            snprintf(out, len, "%.*s", (int)k, p + n + 1);
            return 0;
        }
    }
    return -1;
}

/* 1 when replica replicates from master in sync. */
static int in_sync(rt_redis *replica, const rt_redis *master)
{
    redisReply *r = rt_cmd(replica, "INFO replication");
    char role[32] = "", port[16] = "", link[16] = "";
    int ok = 0;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        info_field(r->str, "role", role, sizeof(role));
        info_field(r->str, "master_port", port, sizeof(port));
        info_field(r->str, "master_link_status", link, sizeof(link));
        ok = strcmp(role, "slave") == 0 &&
             atoi(port) == rt_sentinel_port(master) &&
             strcmp(link, "up") == 0;
    }
    freeReplyObject(r);
    return ok;
}

/* The value of field in one entry (a flat field, value array). */
static const char *entry_field(const redisReply *e, const char *field)
{
    for (size_t i = 0; e->type == REDIS_REPLY_ARRAY && i + 1 < e->elements;
         i += 2)
        if (strcmp(e->element[i]->str, field) == 0)
            return e->element[i + 1]->str;
    return "";
}

/* 1 when sentinel i names master, sees replica as a healthy replica and
 * knows every other live sentinel. */
static int sentinel_agrees(rt_sentinel_group *g, int i, const rt_redis *master,
                           const rt_redis *replica)
{
    int live = 0;
    for (int k = 0; k < RT_SENTINELS; k++)
        live += g->sentinel[k].pid > 0;
    if (named_master_port(g, i) != rt_sentinel_port(master))
        return 0;
    redisReply *r = ask(g, i, "SENTINEL REPLICAS %s", RT_SENTINEL_MASTER);
    int ok = 0;
    for (size_t k = 0; r != NULL && r->type == REDIS_REPLY_ARRAY &&
                       k < r->elements;
         k++)
        if (atoi(entry_field(r->element[k], "port")) ==
                rt_sentinel_port(replica) &&
            strcmp(entry_field(r->element[k], "flags"), "slave") == 0 &&
            strcmp(entry_field(r->element[k], "master-link-status"), "ok") ==
                0)
            ok = 1;
    freeReplyObject(r);
    if (!ok)
        return 0;
    r = ask(g, i, "SENTINEL SENTINELS %s", RT_SENTINEL_MASTER);
    ok = r != NULL && r->type == REDIS_REPLY_ARRAY &&
         (int)r->elements >= live - 1;
    freeReplyObject(r);
    return ok;
}

/* Waits until the group is healthy around master. */
static int wait_healthy(rt_sentinel_group *g, rt_redis *master,
                        rt_redis *replica, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (rt_now_ms() < deadline) {
        int ok = in_sync(replica, master);
        for (int i = 0; ok && i < RT_SENTINELS; i++)
            if (g->sentinel[i].pid > 0)
                ok = sentinel_agrees(g, i, master, replica);
        if (ok)
            return 0;
        rt_sleep_ms(100);
    }
    fprintf(stderr, "sentinel_fixture: the group did not settle around "
                    "port %d in %d ms\n",
            rt_sentinel_port(master), timeout_ms);
    return -1;
}

int rt_sentinel_group_start(rt_sentinel_group *g, const rt_sentinel_opts *o)
{
    static const char *const plain_none[] = {NULL};
    memset(g, 0, sizeof(*g));
    if (o != NULL)
        g->opts = *o;
    rt_tls_files *tls = g->opts.tls;
    const char *const *tls_args =
        tls != NULL ? rt_tls_server_args(tls, 0) : NULL;

    /* the data nodes: node[1] replicates from node[0] */
    for (int k = 0; k < 2; k++) {
        const char **a = g->node_args[k];
        int n = 0;
        for (int i = 0; g->opts.data_args && g->opts.data_args[i]; i++)
            a[n++] = g->opts.data_args[i];
        if (tls != NULL) {
            a[n++] = "--tls-replication";
            a[n++] = "yes";
        }
        if (g->opts.data_password != NULL) {
            a[n++] = "--requirepass";
            a[n++] = g->opts.data_password;
            a[n++] = "--masterauth";
            a[n++] = g->opts.data_password;
        }
        if (g->opts.hostnames) {
            a[n++] = "--replica-announce-ip";
            a[n++] = "localhost";
        }
        if (k == 1) {
            snprintf(g->replicaof, sizeof(g->replicaof), "%d",
                     rt_sentinel_port(&g->node[0]));
            a[n++] = "--replicaof";
            a[n++] = "127.0.0.1";
            a[n++] = g->replicaof;
        }
        a[n] = NULL;
        if (rt_redis_start_conf(&g->node[k], NULL, 0, g->opts.data_password,
                                tls_args, a) != 0)
            goto fail;
    }

    int n = 0;
    if (g->opts.hostnames)
        n = snprintf(g->conf, sizeof(g->conf),
                     "sentinel resolve-hostnames yes\n"
                     "sentinel announce-hostnames yes\n");
    n += snprintf(
        g->conf + n, sizeof(g->conf) - (size_t)n,
        "sentinel monitor %s %s %d 2\n"
        "sentinel down-after-milliseconds %s 2000\n"
        "sentinel failover-timeout %s 4000\n",
        RT_SENTINEL_MASTER, g->opts.hostnames ? "localhost" : "127.0.0.1",
        rt_sentinel_port(&g->node[0]), RT_SENTINEL_MASTER, RT_SENTINEL_MASTER);
    if (g->opts.data_password != NULL)
        n += snprintf(g->conf + n, sizeof(g->conf) - (size_t)n,
                      "sentinel auth-pass %s %s\n", RT_SENTINEL_MASTER,
                      g->opts.data_password);
    if (g->opts.sentinel_password != NULL)
        n += snprintf(g->conf + n, sizeof(g->conf) - (size_t)n,
                      "requirepass %s\nsentinel sentinel-pass %s\n",
                      g->opts.sentinel_password, g->opts.sentinel_password);
    if (tls != NULL) {
        const char **a = g->sentinel_args;
        int k = 0;
        for (int i = 0; tls_args[i] != NULL; i++)
            a[k++] = tls_args[i];
        a[k++] = "--tls-replication";
        a[k++] = "yes";
        a[k] = NULL;
    }
    for (int i = 0; i < RT_SENTINELS; i++)
        if (rt_redis_start_conf(&g->sentinel[i], g->conf, 1,
                                g->opts.sentinel_password,
                                tls != NULL ? g->sentinel_args : NULL,
                                plain_none) != 0)
            goto fail;
    if (wait_healthy(g, &g->node[0], &g->node[1], GROUP_READY_MS) != 0)
        goto fail;
    return 0;
fail:
    rt_sentinel_group_stop(g);
    return -1;
}

void rt_sentinel_group_stop(rt_sentinel_group *g)
{
    for (int i = 0; i < RT_SENTINELS; i++)
        rt_redis_stop(&g->sentinel[i]);
    rt_redis_stop(&g->node[0]);
    rt_redis_stop(&g->node[1]);
}

void rt_sentinel_url(const rt_sentinel_group *g, const char *first, char *buf,
                     size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "%s://%s%s",
                                 g->opts.tls ? "rediss+sentinel"
                                             : "redis+sentinel",
                                 first ? first : "", first ? "," : "");
    for (int i = 0; i < RT_SENTINELS && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s127.0.0.1:%d",
                               i ? "," : "",
                               rt_sentinel_port(&g->sentinel[i]));
    if (at < len)
        snprintf(buf + at, len - at, "/%s", RT_SENTINEL_MASTER);
}

int rt_sentinel_failover(rt_sentinel_group *g)
{
    int64_t deadline = rt_now_ms() + 15000;
    while (rt_now_ms() < deadline) {
        for (int i = 0; i < RT_SENTINELS; i++) {
            if (g->sentinel[i].pid <= 0)
                continue;
            redisReply *r =
                ask(g, i, "SENTINEL FAILOVER %s", RT_SENTINEL_MASTER);
            int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            if (ok)
                return 0;
            break;
        }
        rt_sleep_ms(200);
    }
    fprintf(stderr, "sentinel_fixture: SENTINEL FAILOVER refused for 15 s\n");
    return -1;
}

int rt_sentinel_wait_master(rt_sentinel_group *g, const rt_redis *node,
                            int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    while (rt_now_ms() < deadline) {
        int ok = 1;
        for (int i = 0; ok && i < RT_SENTINELS; i++)
            if (g->sentinel[i].pid > 0)
                ok = named_master_port(g, i) == rt_sentinel_port(node);
        if (ok)
            return 0;
        rt_sleep_ms(50);
    }
    return -1;
}

int rt_sentinel_settle(rt_sentinel_group *g)
{
    rt_redis *m = rt_sentinel_master_node(g);
    if (m == NULL || rt_sentinel_wait_master(g, m, 10000) != 0) {
        fprintf(stderr, "sentinel_fixture: the sentinels name no master\n");
        return -1;
    }
    rt_redis *r = m == &g->node[0] ? &g->node[1] : &g->node[0];
    if (r->pid > 0 && !in_sync(r, m)) {
        char port[16];
        snprintf(port, sizeof(port), "%d", rt_sentinel_port(m));
        redisReply *reply = rt_cmd(r, "REPLICAOF 127.0.0.1 %s", port);
        freeReplyObject(reply);
    }
    return wait_healthy(g, m, r, GROUP_READY_MS);
}
