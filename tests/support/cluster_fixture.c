/*
 * cluster_fixture.c: a 3-master, 3-replica Redis Cluster for tests; see
 * cluster_fixture.h.
 *
 * The cluster is made by hand rather than by redis-cli --cluster create,
 * which sleeps between its steps: SET-CONFIG-EPOCH on each fresh node (so
 * no epoch collision has to be resolved), ADDSLOTSRANGE on the masters,
 * MEET from node 0 to the others with the bus port (cluster-port is not
 * port + 10000 here), REPLICATE once a replica has heard of its master.
 * Replicas sync diskless with no delay (repl-diskless-sync-delay 0; the
 * default waits 5 s for more replicas).
 *
 * Servers older than 7.0 (Redis 6.2) have no cluster-port, no bus port in
 * MEET, no ADDSLOTSRANGE and no CLUSTER SHARDS: there the bus is port +
 * 10000 (a node whose bus port is taken fails to start and is retried on
 * other ports), the slots go by ADDSLOTS and "settled" leaves SHARDS out.
 *
 * "Settled" is judged from each node's CLUSTER NODES text, reduced to what
 * must agree (ids, roles, masters, slot ranges; not pings, epochs or the
 * migration markers a node shows of itself), and from the replicas' INFO:
 * the things a test relies on when it compares rlock's parse of CLUSTER
 * SLOTS and SHARDS with where keys really live.
 */
#include "cluster_fixture.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_TIMEOUT_MS   "3000"
#define SETTLE_TIMEOUT_MS 20000
#define POLL_MS           25
#define MAX_RANGES        64
#define MAX_LINES         (RT_CLUSTER_NODES + 2)

/* ------------------------------------------------------------------------ */
/* CLUSTER NODES, as one node sees the cluster                              */
/* ------------------------------------------------------------------------ */

typedef struct {
    char id[RT_CLUSTER_ID_LEN + 1];
    int port;
    bool master;
    bool troubled; /* fail, fail?, handshake or noaddr */
    char master_id[RT_CLUSTER_ID_LEN + 1]; /* "-" for a master */
    int ranges[MAX_RANGES][2];
    int nranges;
} view_line;

typedef struct {
    view_line line[MAX_LINES];
    int count;
} view;

/* Reads the comma-separated flags ("myself,master", "slave,fail?") into
 * l's role and trouble. */
static void read_flags(char *flags, view_line *l)
{
    char *save = NULL;

    for (char *f = strtok_r(flags, ",", &save); f != NULL;
         f = strtok_r(NULL, ",", &save)) {
        if (strcmp(f, "master") == 0)
            l->master = true;
        else if (strcmp(f, "fail") == 0 || strcmp(f, "fail?") == 0 ||
                 strcmp(f, "handshake") == 0 || strcmp(f, "noaddr") == 0)
            l->troubled = true;
    }
}

/* Reads one CLUSTER NODES line ("<id> <ip:port@bus> <flags> <master>
 * <ping> <pong> <epoch> <link> <slot>...") into l. Returns 0 or -1. */
static int parse_line(char *text, view_line *l)
{
    char *save = NULL, *tok;
    int field = 0;

    memset(l, 0, sizeof(*l));
    for (tok = strtok_r(text, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save), field++) {
        switch (field) {
        case 0:
            snprintf(l->id, sizeof(l->id), "%s", tok);
            break;
        case 1: {
            char *at = strchr(tok, '@');
            char *colon;

            if (at != NULL)
                *at = '\0';
            colon = strrchr(tok, ':');
            l->port = colon != NULL ? atoi(colon + 1) : 0;
            break;
        }
        case 2:
            read_flags(tok, l);
            break;
        case 3:
            snprintf(l->master_id, sizeof(l->master_id), "%s", tok);
            break;
        case 4:
        case 5:
        case 6:
        case 7:
            break;
        default:
            if (tok[0] == '[')
                break; /* a migration marker, shown by the node itself */
            if (l->nranges == MAX_RANGES)
                return -1;
            {
                char *dash = strchr(tok, '-');
                int lo = atoi(tok);

                l->ranges[l->nranges][0] = lo;
                l->ranges[l->nranges][1] = dash ? atoi(dash + 1) : lo;
                l->nranges++;
            }
            break;
        }
    }
    return field >= 8 ? 0 : -1;
}

/* Reads node r's CLUSTER NODES into v. Returns 0 or -1. */
static int read_view(rt_redis *r, view *v)
{
    char *text = rt_cmd_str(r, "CLUSTER NODES");
    char *save = NULL, *line;
    int rc = 0;

    v->count = 0;
    if (text == NULL)
        return -1;
    for (line = strtok_r(text, "\n", &save); line != NULL && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '\0')
            continue;
        if (v->count == MAX_LINES)
            rc = -1;
        else
            rc = parse_line(line, &v->line[v->count++]);
    }
    free(text);
    return rc;
}

static const view_line *line_by_id(const view *v, const char *id)
{
    for (int i = 0; i < v->count; i++) {
        if (strcmp(v->line[i].id, id) == 0)
            return &v->line[i];
    }
    return NULL;
}

/* Whether a and b agree on every node's role, master and slots. */
static bool views_agree(const view *a, const view *b)
{
    if (a->count != b->count)
        return false;
    for (int i = 0; i < a->count; i++) {
        const view_line *x = &a->line[i];
        const view_line *y = line_by_id(b, x->id);

        if (y == NULL || x->master != y->master ||
            strcmp(x->master_id, y->master_id) != 0 ||
            x->nranges != y->nranges ||
            memcmp(x->ranges, y->ranges,
                   sizeof(x->ranges[0]) * (size_t)x->nranges) != 0)
            return false;
    }
    return true;
}

/* Whether v shows six healthy nodes, three masters serving every slot and
 * three replicas. */
static bool view_complete(const view *v)
{
    int masters = 0, slots = 0;

    if (v->count != RT_CLUSTER_NODES)
        return false;
    for (int i = 0; i < v->count; i++) {
        const view_line *l = &v->line[i];

        if (l->troubled)
            return false;
        masters += l->master;
        for (int k = 0; k < l->nranges; k++)
            slots += l->ranges[k][1] - l->ranges[k][0] + 1;
    }
    return masters == RT_CLUSTER_MASTERS && slots == 16384;
}

static int index_of_id(const rt_cluster *c, const char *id)
{
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        if (strcmp(c->id[i], id) == 0)
            return i;
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Settled                                                                  */
/* ------------------------------------------------------------------------ */

/* Whether the text reply of cmd on r contains needle. */
static bool says(rt_redis *r, const char *cmd, const char *needle)
{
    char *text = rt_cmd_str(r, cmd);
    bool found = text != NULL && strstr(text, needle) != NULL;

    free(text);
    return found;
}

/* Counts the name/value pairs health/online anywhere in reply r (CLUSTER
 * SHARDS's node maps are flat arrays of names and values). */
static int count_online(const redisReply *r)
{
    int n = 0;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *k = r->element[i];

        n += count_online(k);
        if (i + 1 < r->elements && k->type == REDIS_REPLY_STRING &&
            strcmp(k->str, "health") == 0 &&
            r->element[i + 1]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[i + 1]->str, "online") == 0)
            n++;
    }
    return n;
}

/* Whether r's CLUSTER SHARDS calls all six nodes online and its CLUSTER
 * SLOTS lists a replica beside the master of every range. */
static bool lists_everyone(rt_redis *r)
{
    redisReply *shards =
        rt_server_has_7_0() ? rt_cmd(r, "CLUSTER SHARDS") : NULL;
    redisReply *slots = rt_cmd(r, "CLUSTER SLOTS");
    bool ok = (!rt_server_has_7_0() ||
               count_online(shards) == RT_CLUSTER_NODES) &&
              slots != NULL && slots->type == REDIS_REPLY_ARRAY &&
              slots->elements > 0;

    for (size_t i = 0; ok && i < slots->elements; i++)
        ok = slots->element[i]->type == REDIS_REPLY_ARRAY &&
             slots->element[i]->elements == 4;
    if (shards != NULL)
        freeReplyObject(shards);
    if (slots != NULL)
        freeReplyObject(slots);
    return ok;
}

int rt_cluster_settled(rt_cluster *c)
{
    view first, other;

    if (read_view(&c->node[0], &first) != 0 || !view_complete(&first))
        return 0;
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        const view_line *me;

        if (i > 0 && (read_view(&c->node[i], &other) != 0 ||
                      !views_agree(&first, &other)))
            return 0;
        me = line_by_id(&first, c->id[i]);
        if (me == NULL ||
            !says(&c->node[i], "CLUSTER INFO", "cluster_state:ok") ||
            (!me->master && !says(&c->node[i], "INFO replication",
                                  "master_link_status:up")) ||
            !lists_everyone(&c->node[i]))
            return 0;
    }
    return 1;
}

int rt_cluster_wait_settled(rt_cluster *c, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (!rt_cluster_settled(c)) {
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "cluster: not settled after %d ms\n", timeout_ms);
            for (int i = 0; i < RT_CLUSTER_NODES; i++) {
                char *text = rt_cmd_str(&c->node[i], "CLUSTER NODES");

                fprintf(stderr, "node %d (port %d) sees:\n%s\n", i,
                        c->node[i].port, text ? text : "(no answer)");
                free(text);
            }
            return -1;
        }
        rt_sleep_ms(POLL_MS);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                  */
/* ------------------------------------------------------------------------ */

int rt_cluster_owner(rt_cluster *c, int slot)
{
    return rt_cluster_owner_seen_by(c, 0, slot);
}

int rt_cluster_owner_seen_by(rt_cluster *c, int node, int slot)
{
    view v;

    if (read_view(&c->node[node], &v) != 0)
        return -1;
    for (int i = 0; i < v.count; i++) {
        for (int k = 0; k < v.line[i].nranges; k++) {
            if (slot >= v.line[i].ranges[k][0] &&
                slot <= v.line[i].ranges[k][1])
                return index_of_id(c, v.line[i].id);
        }
    }
    return -1;
}

int rt_cluster_name_on(rt_cluster *c, int master, const char *prefix,
                       char *buf, size_t len)
{
    for (int i = 0; i < 100000; i++) {
        long long slot;

        snprintf(buf, len, "%s-%d", prefix, i);
        slot = rt_cmd_int(&c->node[0], "CLUSTER KEYSLOT %s", buf);
        if (slot >= 0 && rt_cluster_owner(c, (int)slot) == master)
            return 0;
    }
    return -1;
}

long long rt_cluster_exists_asking(rt_cluster *c, int i, const char *key)
{
    struct timeval tv = {5, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", c->node[i].port, tv);
    long long v = RT_CMD_ERROR;

    if (ctx == NULL || ctx->err != 0) {
        redisFree(ctx);
        return v;
    }
    redisReply *asking = redisCommand(ctx, "ASKING");
    redisReply *r = redisCommand(ctx, "EXISTS %s", key);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    freeReplyObject(asking);
    freeReplyObject(r);
    redisFree(ctx);
    return v;
}

int64_t rt_cluster_wait_shard_subscribers(rt_cluster *c, int i,
                                          const char *channel, long long want,
                                          int64_t within_ms)
{
    int64_t t0 = rt_now_ms();

    do {
        if (rt_shardnumsub(&c->node[i], channel) == want)
            return rt_now_ms() - t0;
        rt_sleep_ms(10);
    } while (rt_now_ms() - t0 < within_ms);
    return -1;
}

int rt_cluster_replica_of(rt_cluster *c, int master)
{
    view v;

    if (master < 0 || read_view(&c->node[0], &v) != 0)
        return -1;
    for (int i = 0; i < v.count; i++) {
        if (!v.line[i].master &&
            strcmp(v.line[i].master_id, c->id[master]) == 0)
            return index_of_id(c, v.line[i].id);
    }
    return -1;
}

int rt_cluster_find(const rt_cluster *c, int port)
{
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        if (c->node[i].port == port)
            return i;
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Start and stop                                                           */
/* ------------------------------------------------------------------------ */

/* Takes the reply of a command that must answer +OK on node i (what names
 * it). Returns 0, or -1 after printing the answer. Frees r. */
static int ok(redisReply *r, int i, const char *what)
{
    int good = r != NULL && r->type == REDIS_REPLY_STATUS &&
               strcmp(r->str, "OK") == 0;

    if (!good)
        fprintf(stderr, "cluster: %s on node %d: %s\n", what, i,
                r == NULL ? "no answer" : r->str ? r->str : "(not text)");
    if (r != NULL)
        freeReplyObject(r);
    return good ? 0 : -1;
}

/* Starts node i with its cluster settings, retrying with another bus port
 * when the first is taken meanwhile. Returns 0 or -1. */
static int start_node(rt_cluster *c, int i)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        const char **a = c->args[i];
        int n = 0, bus = rt_server_has_7_0() ? rt_free_port() : 0;

        if (bus < 0)
            return -1;
        snprintf(c->bus_port[i], sizeof(c->bus_port[i]), "%d", bus);
        a[n++] = "--cluster-enabled";
        a[n++] = "yes";
        a[n++] = "--cluster-config-file";
        a[n++] = "nodes.conf";
        if (rt_server_has_7_0()) {
            a[n++] = "--cluster-port";
            a[n++] = c->bus_port[i];
        }
        a[n++] = "--cluster-node-timeout";
        a[n++] = NODE_TIMEOUT_MS;
        a[n++] = "--repl-diskless-sync";
        a[n++] = "yes";
        a[n++] = "--repl-diskless-sync-delay";
        a[n++] = "0";
        a[n++] = "--repl-ping-replica-period";
        a[n++] = "1";
        if (c->tls_args != NULL) {
            a[n++] = "--tls-cluster";
            a[n++] = "yes";
            a[n++] = "--tls-replication";
            a[n++] = "yes";
        }
        a[n] = NULL;
        if (rt_redis_start_tls(&c->node[i], c->tls_args, c->args[i]) == 0) {
            if (!rt_server_has_7_0())
                snprintf(c->bus_port[i], sizeof(c->bus_port[i]), "%d",
                         c->node[i].port + 10000);
            return 0;
        }
    }
    return -1;
}

/* Waits until node i knows the node with id, out of handshake. */
static int wait_knows(rt_cluster *c, int i, const char *id, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    for (;;) {
        view v;
        const view_line *l = NULL;

        if (read_view(&c->node[i], &v) == 0)
            l = line_by_id(&v, id);
        if (l != NULL && !l->troubled)
            return 0;
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "cluster: node %d never met %s\n", i, id);
            return -1;
        }
        rt_sleep_ms(POLL_MS);
    }
}

/* CLUSTER ADDSLOTSRANGE first last on r, or before 7.0 ADDSLOTS with each
 * slot named. */
static redisReply *add_slots(rt_redis *r, int first, int last)
{
    static char words[16384][6];
    static const char *argv[2 + 16384];
    int argc = 0;

    if (rt_server_has_7_0())
        return rt_cmd(r, "CLUSTER ADDSLOTSRANGE %d %d", first, last);
    argv[argc++] = "CLUSTER";
    argv[argc++] = "ADDSLOTS";
    for (int s = first; s <= last; s++) {
        snprintf(words[s], sizeof(words[s]), "%d", s);
        argv[argc++] = words[s];
    }
    return rt_cmd_argv(r, argc, argv);
}

/* CLUSTER MEET on r of node j of c (with its bus port from 7.0 on). */
static redisReply *meet(rt_redis *r, rt_cluster *c, int j)
{
    if (!rt_server_has_7_0())
        return rt_cmd(r, "CLUSTER MEET 127.0.0.1 %d", c->node[j].port);
    return rt_cmd(r, "CLUSTER MEET 127.0.0.1 %d %s", c->node[j].port,
                  c->bus_port[j]);
}

/* Everything after the nodes are up: ids, epochs, slots, meetings and
 * replicas. Returns 0 or -1. */
static int form(rt_cluster *c)
{
    static const int range[RT_CLUSTER_MASTERS][2] = {
        {0, 5460}, {5461, 10922}, {10923, 16383}};

    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        char *id = rt_cmd_str(&c->node[i], "CLUSTER MYID");

        if (id == NULL || strlen(id) != RT_CLUSTER_ID_LEN) {
            fprintf(stderr, "cluster: no id from node %d\n", i);
            free(id);
            return -1;
        }
        memcpy(c->id[i], id, RT_CLUSTER_ID_LEN + 1);
        free(id);
        if (ok(rt_cmd(&c->node[i], "CLUSTER SET-CONFIG-EPOCH %d", i + 1), i,
               "SET-CONFIG-EPOCH") != 0)
            return -1;
    }
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        if (ok(add_slots(&c->node[m], range[m][0], range[m][1]), m,
               "ADDSLOTSRANGE") != 0)
            return -1;
    }
    /* node 0 meets everyone; a replica meets its master too, so that it
     * need not wait for gossip to hear of it */
    for (int i = 1; i < RT_CLUSTER_NODES; i++) {
        int m = i >= RT_CLUSTER_MASTERS ? i - RT_CLUSTER_MASTERS : 0;

        if (ok(meet(&c->node[0], c, i), 0, "MEET") != 0 ||
            (m > 0 && ok(meet(&c->node[i], c, m), i, "MEET") != 0))
            return -1;
    }
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        int r = m + RT_CLUSTER_MASTERS;

        if (wait_knows(c, r, c->id[m], SETTLE_TIMEOUT_MS) != 0 ||
            ok(rt_cmd(&c->node[r], "CLUSTER REPLICATE %s", c->id[m]), r,
               "REPLICATE") != 0)
            return -1;
    }
    return rt_cluster_wait_settled(c, SETTLE_TIMEOUT_MS);
}

int rt_cluster_start(rt_cluster *c)
{
    return rt_cluster_start_tls(c, NULL);
}

int rt_cluster_start_tls(rt_cluster *c, const char *const *tls_args)
{
    int64_t t0 = rt_now_ms();

    memset(c, 0, sizeof(*c));
    c->tls_args = tls_args;
    for (int i = 0; i < RT_CLUSTER_NODES; i++) {
        if (start_node(c, i) != 0) {
            fprintf(stderr, "cluster: cannot start node %d\n", i);
            rt_cluster_stop(c);
            return -1;
        }
    }
    if (form(c) != 0) {
        rt_cluster_stop(c);
        return -1;
    }
    c->start_ms = rt_now_ms() - t0;
    return 0;
}

void rt_cluster_stop(rt_cluster *c)
{
    for (int i = 0; i < RT_CLUSTER_NODES; i++)
        rt_redis_stop(&c->node[i]);
}

/* ------------------------------------------------------------------------ */
/* Failover and migration                                                   */
/* ------------------------------------------------------------------------ */

int rt_cluster_failover(rt_cluster *c, int master)
{
    int replica = rt_cluster_replica_of(c, master);
    int64_t deadline = rt_now_ms() + SETTLE_TIMEOUT_MS;

    if (replica < 0) {
        fprintf(stderr, "cluster: node %d has no replica\n", master);
        return -1;
    }
    if (ok(rt_cmd(&c->node[replica], "CLUSTER FAILOVER"), replica,
           "FAILOVER") != 0)
        return -1;
    while (!says(&c->node[replica], "INFO replication", "role:master")) {
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "cluster: node %d not promoted\n", replica);
            return -1;
        }
        rt_sleep_ms(POLL_MS);
    }
    if (rt_cluster_wait_settled(c, SETTLE_TIMEOUT_MS) != 0)
        return -1;
    if (rt_cluster_replica_of(c, replica) != master) {
        fprintf(stderr,
                "cluster: after its failover node %d's replica is node %d, "
                "not %d\n",
                replica, rt_cluster_replica_of(c, replica), master);
        return -1;
    }
    /* A master pauses its clients' writes (and SCRIPT LOAD, EVAL,
     * PUBLISH) while its replica takes over. From 7.0 it lifts the pause
     * once the failover ends; 6.2 keeps it for the rest of 10 s, so that
     * a case after this one would find the old master answering nothing
     * but reads. Lift it as 7.0 does. */
    if (!rt_server_has_7_0() &&
        ok(rt_cmd(&c->node[master], "CLIENT UNPAUSE"), master,
           "CLIENT UNPAUSE") != 0)
        return -1;
    return replica;
}

int rt_cluster_migrate_begin(rt_cluster *c, int slot, int to)
{
    int from = rt_cluster_owner(c, slot);

    if (from < 0 || from == to) {
        fprintf(stderr, "cluster: slot %d is on node %d, not to move to %d\n",
                slot, from, to);
        return -1;
    }
    if (ok(rt_cmd(&c->node[to], "CLUSTER SETSLOT %d IMPORTING %s", slot,
                  c->id[from]),
           to, "SETSLOT IMPORTING") != 0 ||
        ok(rt_cmd(&c->node[from], "CLUSTER SETSLOT %d MIGRATING %s", slot,
                  c->id[to]),
           from, "SETSLOT MIGRATING") != 0)
        return -1;
    return 0;
}

int rt_cluster_migrate_keys(rt_cluster *c, int slot, int to)
{
    int from = rt_cluster_owner(c, slot);

    if (from < 0)
        return -1;
    for (;;) {
        redisReply *keys =
            rt_cmd(&c->node[from], "CLUSTER GETKEYSINSLOT %d 100", slot);
        size_t n;

        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "cluster: GETKEYSINSLOT on node %d failed\n",
                    from);
            if (keys != NULL)
                freeReplyObject(keys);
            return -1;
        }
        n = keys->elements;
        for (size_t k = 0; k < n; k++) {
            const redisReply *key = keys->element[k];

            if (ok(rt_cmd(&c->node[from], "MIGRATE 127.0.0.1 %d %b 0 5000",
                          c->node[to].port, key->str, key->len),
                   from, "MIGRATE") != 0) {
                freeReplyObject(keys);
                return -1;
            }
        }
        freeReplyObject(keys);
        if (n == 0)
            return 0;
    }
}

int rt_cluster_migrate_end(rt_cluster *c, int slot, int to)
{
    int from = rt_cluster_owner(c, slot);

    if (from < 0)
        return -1;
    /* the target first, then the source, then the other master: what
     * redis-cli does, so the slot is never served by nobody */
    if (ok(rt_cmd(&c->node[to], "CLUSTER SETSLOT %d NODE %s", slot,
                  c->id[to]),
           to, "SETSLOT NODE") != 0 ||
        ok(rt_cmd(&c->node[from], "CLUSTER SETSLOT %d NODE %s", slot,
                  c->id[to]),
           from, "SETSLOT NODE") != 0)
        return -1;
    for (int m = 0; m < RT_CLUSTER_NODES; m++) {
        view v;
        const view_line *l;

        if (m == to || m == from || read_view(&c->node[m], &v) != 0)
            continue;
        l = line_by_id(&v, c->id[m]);
        if (l != NULL && l->master &&
            ok(rt_cmd(&c->node[m], "CLUSTER SETSLOT %d NODE %s", slot,
                      c->id[to]),
               m, "SETSLOT NODE") != 0)
            return -1;
    }
    if (rt_cluster_wait_settled(c, SETTLE_TIMEOUT_MS) != 0)
        return -1;
    return rt_cluster_owner(c, slot) == to ? 0 : -1;
}

int rt_cluster_migrate_slot(rt_cluster *c, int slot, int to)
{
    if (rt_cluster_migrate_begin(c, slot, to) != 0 ||
        rt_cluster_migrate_keys(c, slot, to) != 0)
        return -1;
    return rt_cluster_migrate_end(c, slot, to);
}
