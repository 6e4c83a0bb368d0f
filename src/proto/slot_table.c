/*
 * slot_table.c: the cluster as one node describes it, read from a CLUSTER
 * SLOTS or a CLUSTER SHARDS reply into a table: slot -> serving master, and
 * the nodes, masters and replicas, each known by host and port.
 *
 * Both forms are read (CLUSTER-SENTINEL.md 2.2 and 6.2): SLOTS works on
 * every Redis with a cluster and on Valkey, but 7.0 deprecates it and it
 * leaves a replica out until that has synced; SHARDS is 7.0's, and some 7.0
 * builds send its slot bounds as strings, so numbers are read in either
 * form (rlock__reply_integer). With RESP2, the only protocol hiredis 0.14
 * speaks, SHARDS's maps arrive as flat arrays of name, value, ...
 *
 * A reply is trusted for nothing: any shape other than the documented one,
 * a slot out of range or served twice, a node that is a master in one place
 * and a replica in another, is RLOCK_EPROTO, and no table is made. A client
 * then asks another node rather than route locks by a half-read table.
 *
 * A node without a usable endpoint (nil, "" or "?": Redis's "unknown
 * endpoint") is taken to be on the host that was asked, as the Redis docs
 * tell clients to do.
 */
#include "cluster.h"

/* for the redisReply type only (proto.h) */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ nodes */

/* What one reply says of one node, before it joins the table. */
typedef struct {
    const char *host; /* borrowed from the reply or the caller */
    size_t host_len;
    long port, tls_port;
    const struct redisReply *id; /* NULL: none given */
    rlock__node_role role;
    int master;
    bool online;
} node_desc;

static bool is_text(const struct redisReply *r)
{
    return r != NULL &&
           (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static bool text_is(const struct redisReply *r, const char *s)
{
    return is_text(r) && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

/* Reads a number given as an integer or a decimal string, in [lo, hi].
 * Returns 0 with *out set, or RLOCK_EPROTO. */
static int number(const struct redisReply *r, long lo, long hi, long *out)
{
    int64_t v;

    if (r == NULL || (r->type != REDIS_REPLY_INTEGER && !is_text(r)) ||
        rlock__reply_integer(r, &v) != 1 || v < lo || v > hi)
        return RLOCK_EPROTO;
    *out = (long)v;
    return RLOCK_OK;
}

/* Sets d's host from an endpoint reply (NULL: absent), falling back to the
 * host asked for an unknown one. Returns 0 or RLOCK_EPROTO. */
static int set_host(node_desc *d, const struct redisReply *endpoint,
                    const char *asked_host)
{
    bool unknown = endpoint == NULL || endpoint->type == REDIS_REPLY_NIL ||
                   text_is(endpoint, "") || text_is(endpoint, "?");

    if (unknown) {
        if (asked_host == NULL)
            return RLOCK_EPROTO;
        d->host = asked_host;
        d->host_len = strlen(asked_host);
    } else if (is_text(endpoint)) {
        d->host = endpoint->str;
        d->host_len = endpoint->len;
    } else {
        return RLOCK_EPROTO;
    }
    return rlock__host_is_valid(d->host, d->host_len) ? RLOCK_OK
                                                      : RLOCK_EPROTO;
}

/* Whether node n is the one d describes, by host and port. */
static bool same_address(const rlock__cluster_node *n, const node_desc *d)
{
    return n->port == d->port && strlen(n->host) == d->host_len &&
           memcmp(n->host, d->host, d->host_len) == 0;
}

/* Adds the node d describes to t, or finds it there: a node met again must
 * agree on its role, its master and its id. Returns the node's index, or
 * RLOCK_EPROTO or RLOCK_ENOMEM. */
static int add_node(rlock__slot_table *t, const node_desc *d)
{
    char id[sizeof(t->nodes[0].id)] = "";

    if (d->id != NULL && d->id->type != REDIS_REPLY_NIL) {
        if (!is_text(d->id) || d->id->len >= sizeof(id) ||
            memchr(d->id->str, '\0', d->id->len) != NULL)
            return RLOCK_EPROTO;
        memcpy(id, d->id->str, d->id->len);
        id[d->id->len] = '\0';
    }
    for (size_t i = 0; i < t->count; i++) {
        rlock__cluster_node *n = &t->nodes[i];
        if (!same_address(n, d))
            continue;
        if (n->role != d->role || n->master != d->master ||
            strcmp(n->id, id) != 0)
            return RLOCK_EPROTO;
        return (int)i;
    }
    if (t->count >= RLOCK__SLOT_UNSERVED)
        return RLOCK_EPROTO; /* an index must fit owner[] */
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        rlock__cluster_node *grown =
            rlock__realloc(t->nodes, cap * sizeof(*grown));
        if (grown == NULL)
            return RLOCK_ENOMEM;
        t->nodes = grown;
        t->cap = cap;
    }
    rlock__cluster_node *n = &t->nodes[t->count];
    memset(n, 0, sizeof(*n));
    n->host = rlock__malloc(d->host_len + 1);
    if (n->host == NULL)
        return RLOCK_ENOMEM;
    memcpy(n->host, d->host, d->host_len);
    n->host[d->host_len] = '\0';
    n->port = (int)d->port;
    n->tls_port = (int)d->tls_port;
    memcpy(n->id, id, sizeof(id));
    n->role = d->role;
    n->master = d->master;
    n->online = d->online;
    return (int)t->count++;
}

/* Gives slots [lo, hi] to master node m. Returns 0, or RLOCK_EPROTO when
 * the range is backwards or a slot in it is served already. */
static int assign(rlock__slot_table *t, long lo, long hi, int m)
{
    if (lo > hi)
        return RLOCK_EPROTO;
    for (long s = lo; s <= hi; s++) {
        if (t->owner[s] != RLOCK__SLOT_UNSERVED)
            return RLOCK_EPROTO;
        t->owner[s] = (uint16_t)m;
    }
    return RLOCK_OK;
}

static rlock__slot_table *table_new(void)
{
    rlock__slot_table *t = rlock__calloc(1, sizeof(*t));

    if (t != NULL) {
        for (size_t s = 0; s < RLOCK__SLOT_COUNT; s++)
            t->owner[s] = RLOCK__SLOT_UNSERVED;
    }
    return t;
}

/* Reads the array reply r, one element at a time with entry, into a new
 * table *out; see rlock__slot_table_from_slots() for the codes. */
static int read_table(const struct redisReply *r, const char *asked_host,
                      int (*entry)(rlock__slot_table *,
                                   const struct redisReply *, const char *),
                      rlock__slot_table **out)
{
    int rc = rlock__reply_error_code(r);

    *out = NULL;
    if (rc != RLOCK_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY)
        return RLOCK_EPROTO;
    rlock__slot_table *t = table_new();
    if (t == NULL)
        return RLOCK_ENOMEM;
    for (size_t i = 0; i < r->elements && rc == RLOCK_OK; i++)
        rc = entry(t, r->element[i], asked_host);
    if (rc != RLOCK_OK) {
        rlock__slot_table_free(t);
        return rc;
    }
    *out = t;
    return RLOCK_OK;
}

/* ------------------------------------------------------------ CLUSTER SLOTS
 *
 * An array of ranges: [start, end, master, replica...], each node
 * [endpoint, port, id?, metadata?] (the id since 4.0, the metadata since
 * 7.0; nothing after the port is needed). A master with several ranges is
 * listed once per range, with its replicas each time. */

/* Reads one node of a range into d. Returns 0 or RLOCK_EPROTO. */
static int slots_node(const struct redisReply *r, const char *asked_host,
                      node_desc *d)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        return RLOCK_EPROTO;
    if (set_host(d, r->element[0], asked_host) != RLOCK_OK ||
        number(r->element[1], 1, 65535, &d->port) != RLOCK_OK)
        return RLOCK_EPROTO;
    d->tls_port = 0;
    d->id = r->elements > 2 ? r->element[2] : NULL;
    d->online = true; /* SLOTS leaves out failed and unsynced replicas */
    return RLOCK_OK;
}

static int slots_range(rlock__slot_table *t, const struct redisReply *r,
                       const char *asked_host)
{
    long lo, hi;
    node_desc d;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        number(r->element[0], 0, RLOCK__SLOT_COUNT - 1, &lo) != RLOCK_OK ||
        number(r->element[1], 0, RLOCK__SLOT_COUNT - 1, &hi) != RLOCK_OK)
        return RLOCK_EPROTO;
    int rc = slots_node(r->element[2], asked_host, &d);
    if (rc != RLOCK_OK)
        return rc;
    d.role = RLOCK__NODE_MASTER;
    d.master = -1;
    int m = add_node(t, &d);
    if (m < 0)
        return m;
    for (size_t i = 3; i < r->elements; i++) {
        rc = slots_node(r->element[i], asked_host, &d);
        if (rc != RLOCK_OK)
            return rc;
        d.role = RLOCK__NODE_REPLICA;
        d.master = m;
        rc = add_node(t, &d);
        if (rc < 0)
            return rc;
    }
    return assign(t, lo, hi, m);
}

/* Builds *out from a CLUSTER SLOTS reply r that asked_host sent (the host
 * of nodes whose endpoint it does not know; NULL makes such nodes
 * RLOCK_EPROTO). Returns 0 with *out the caller's to free with
 * rlock__slot_table_free(); the code of an error reply (RLOCK_ECONN for no
 * reply); RLOCK_EPROTO; or RLOCK_ENOMEM. A table may leave slots unserved:
 * see rlock__slot_table_covers_all(). */
int rlock__slot_table_from_slots(const struct redisReply *r,
                                 const char *asked_host,
                                 rlock__slot_table **out)
{
    return read_table(r, asked_host, slots_range, out);
}

/* ----------------------------------------------------------- CLUSTER SHARDS
 *
 * An array of shards, each a map {slots: [start, end, ...], nodes: [node
 * map...]}, each node map {id, port, tls-port?, ip, endpoint, hostname?,
 * role: master|replica, replication-offset, health: online|failed|loading}.
 * A shard's slots belong to its master; should a shard list more than one
 * (a failed old master beside the promoted one), the online one. */

/* Returns the value of field name in map m (a flat array of name, value,
 * ...), or NULL when absent. */
static const struct redisReply *field(const struct redisReply *m,
                                      const char *name)
{
    for (size_t i = 0; i + 1 < m->elements; i += 2) {
        if (text_is(m->element[i], name))
            return m->element[i + 1];
    }
    return NULL;
}

static bool is_map(const struct redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements % 2 == 0;
}

/* Reads one node map into d (its master not yet set). Returns 0 or
 * RLOCK_EPROTO. */
static int shards_node(const struct redisReply *m, const char *asked_host,
                       node_desc *d)
{
    if (!is_map(m))
        return RLOCK_EPROTO;

    const struct redisReply *role = field(m, "role");
    const struct redisReply *port = field(m, "port");
    const struct redisReply *tls_port = field(m, "tls-port");
    const struct redisReply *endpoint = field(m, "endpoint");
    if (text_is(role, "master"))
        d->role = RLOCK__NODE_MASTER;
    else if (text_is(role, "replica"))
        d->role = RLOCK__NODE_REPLICA;
    else
        return RLOCK_EPROTO;
    d->port = d->tls_port = 0;
    if ((port != NULL && number(port, 1, 65535, &d->port) != RLOCK_OK) ||
        (tls_port != NULL &&
         number(tls_port, 1, 65535, &d->tls_port) != RLOCK_OK))
        return RLOCK_EPROTO;
    if (d->port == 0)
        d->port = d->tls_port; /* a TLS-only node */
    if (d->port == 0)
        return RLOCK_EPROTO;
    if (endpoint == NULL || text_is(endpoint, "") || text_is(endpoint, "?"))
        endpoint = field(m, "ip");
    if (set_host(d, endpoint, asked_host) != RLOCK_OK)
        return RLOCK_EPROTO;
    d->id = field(m, "id");
    d->online = text_is(field(m, "health"), "online");
    d->master = -1;
    return RLOCK_OK;
}

/* Returns the index in nodes of the master that serves the shard: the only
 * master, or the only online one among several; -1 if there is none. */
static int shard_master(const node_desc *nodes, size_t n)
{
    int found = -1, online = -1;

    for (size_t i = 0; i < n; i++) {
        if (nodes[i].role != RLOCK__NODE_MASTER)
            continue;
        if (found < 0)
            found = (int)i;
        if (nodes[i].online) {
            if (online >= 0)
                return -1; /* two live masters: no reading it */
            online = (int)i;
        }
    }
    return online >= 0 ? online : found;
}

static int shards_shard(rlock__slot_table *t, const struct redisReply *r,
                        const char *asked_host)
{
    const struct redisReply *slots = field(r, "slots");
    const struct redisReply *nodes = field(r, "nodes");
    node_desc *d;
    int rc = RLOCK_OK;

    if (!is_map(r) || !is_map(slots) || nodes == NULL ||
        nodes->type != REDIS_REPLY_ARRAY || nodes->elements == 0)
        return RLOCK_EPROTO;
    d = rlock__calloc(nodes->elements, sizeof(*d));
    if (d == NULL)
        return RLOCK_ENOMEM;
    for (size_t i = 0; i < nodes->elements && rc == RLOCK_OK; i++)
        rc = shards_node(nodes->element[i], asked_host, &d[i]);
    int mi = rc == RLOCK_OK ? shard_master(d, nodes->elements) : -1;
    if (rc == RLOCK_OK && mi < 0)
        rc = RLOCK_EPROTO;
    int m = rc == RLOCK_OK ? add_node(t, &d[mi]) : rc;
    if (m < 0)
        rc = m;
    /* the other masters of the shard serve nothing; replicas follow m */
    for (size_t i = 0; i < nodes->elements && rc == RLOCK_OK; i++) {
        if ((int)i == mi)
            continue;
        if (d[i].role == RLOCK__NODE_REPLICA)
            d[i].master = m;
        int n = add_node(t, &d[i]);
        if (n < 0)
            rc = n;
    }
    for (size_t i = 0; i + 1 < slots->elements && rc == RLOCK_OK; i += 2) {
        long lo, hi;
        if (number(slots->element[i], 0, RLOCK__SLOT_COUNT - 1, &lo) !=
                RLOCK_OK ||
            number(slots->element[i + 1], 0, RLOCK__SLOT_COUNT - 1, &hi) !=
                RLOCK_OK)
            rc = RLOCK_EPROTO;
        else
            rc = assign(t, lo, hi, m);
    }
    free(d);
    return rc;
}

/* Builds *out from a CLUSTER SHARDS reply r; as
 * rlock__slot_table_from_slots(). */
int rlock__slot_table_from_shards(const struct redisReply *r,
                                  const char *asked_host,
                                  rlock__slot_table **out)
{
    return read_table(r, asked_host, shards_shard, out);
}

/* ------------------------------------------------------------------ reads */

/* Frees a table and its nodes; NULL is a no-op. */
void rlock__slot_table_free(rlock__slot_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->count; i++)
        free(t->nodes[i].host);
    free(t->nodes);
    free(t);
}

/* Returns the master serving slot (borrowed from t), or NULL when no node
 * does or slot is out of range. */
const rlock__cluster_node *rlock__slot_table_master(const rlock__slot_table *t,
                                                    int slot)
{
    if (slot < 0 || slot >= RLOCK__SLOT_COUNT ||
        t->owner[slot] == RLOCK__SLOT_UNSERVED)
        return NULL;
    return &t->nodes[t->owner[slot]];
}

/* Returns the index of the node at host:port, or -1. */
int rlock__slot_table_find(const rlock__slot_table *t, const char *host,
                           int port)
{
    for (size_t i = 0; i < t->count; i++) {
        if (t->nodes[i].port == port && strcmp(t->nodes[i].host, host) == 0)
            return (int)i;
    }
    return -1;
}

/* Whether every slot has a master: what a client needs before it starts
 * (Redisson's checkSlotsCoverage). */
bool rlock__slot_table_covers_all(const rlock__slot_table *t)
{
    for (size_t s = 0; s < RLOCK__SLOT_COUNT; s++) {
        if (t->owner[s] == RLOCK__SLOT_UNSERVED)
            return false;
    }
    return true;
}
