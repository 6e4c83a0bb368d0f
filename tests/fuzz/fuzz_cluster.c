/*
 * fuzz_cluster.c: libFuzzer target for proto's cluster readers: the error
 * classifier (src/proto/redirect.c) and the slot table from CLUSTER SLOTS
 * and CLUSTER SHARDS (src/proto/slot_table.c).
 *
 * The input is RESP, read by hiredis's own reader (capped_reader.h), so
 * the trees are exactly what a hostile node can make hiredis build. Every
 * reply, and every element nested in it, goes through the classifier;
 * every reply through both table readers. Each answer is checked against
 * what they promise:
 *
 *   classifier  NONE for anything but an error reply; for an error, the
 *               kind its first word names (OTHER for any other word);
 *               MOVED or ASK accepted only when writing the result back as
 *               "<word> <slot> <host>:<port>" gives the error's exact bytes
 *               (so nothing was skipped or half-read), with a slot below
 *               16384, a port in 1..65535 and a host of visible bytes; when
 *               refused (RLOCK_EPROTO) slot -1, host "", port 0
 *   tables      RLOCK_OK with a table, or RLOCK_EPROTO, RLOCK_ENOMEM or the
 *               error reply's code with none; in a table every slot is
 *               unserved or served by a master, replicas point at masters,
 *               no two nodes share host and port, hosts are visible bytes,
 *               ports in 1..65535, covers_all() says whether every slot is
 *               served; and for CLUSTER SLOTS, every slot of every range is
 *               served by the node at the range's first address
 *
 * A failed check calls abort(), which libFuzzer reports with its input.
 */
#include "capped_reader.h"
#include "proto/cluster.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASKED "seed.example"

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "fuzz_cluster: check failed: %s (line %d)\n",   \
                    #cond, __LINE__);                                       \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* The error words and their kinds, stated again independently. */
static const struct {
    const char *word;
    rlock__redir_kind kind;
} words[] = {
    {"MOVED", RLOCK__REDIR_MOVED},
    {"ASK", RLOCK__REDIR_ASK},
    {"TRYAGAIN", RLOCK__REDIR_TRYAGAIN},
    {"CLUSTERDOWN", RLOCK__REDIR_CLUSTERDOWN},
    {"MASTERDOWN", RLOCK__REDIR_MASTERDOWN},
    {"LOADING", RLOCK__REDIR_LOADING},
    {"READONLY", RLOCK__REDIR_READONLY},
    {"NOSCRIPT", RLOCK__REDIR_NOSCRIPT},
    {"CROSSSLOT", RLOCK__REDIR_CROSSSLOT},
};

static bool visible(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c <= ' ' || c == 0x7f)
            return false;
    }
    return true;
}

static void check_redirect(const redisReply *r)
{
    rlock__redirect out;
    rlock__redir_kind want = RLOCK__REDIR_OTHER;
    int rc = rlock__redirect_parse(r, &out);

    if (r->type != REDIS_REPLY_ERROR) {
        CHECK(rc == RLOCK_OK && out.kind == RLOCK__REDIR_NONE);
        return;
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].word);

        if (r->len >= n && memcmp(r->str, words[i].word, n) == 0 &&
            (r->len == n || r->str[n] == ' '))
            want = words[i].kind;
    }
    CHECK(out.kind == want);
    if (want != RLOCK__REDIR_MOVED && want != RLOCK__REDIR_ASK) {
        CHECK(rc == RLOCK_OK && out.slot == -1 && out.port == 0);
        return;
    }
    if (rc != RLOCK_OK) {
        CHECK(rc == RLOCK_EPROTO && out.slot == -1 && out.host[0] == '\0' &&
              out.port == 0);
        return;
    }
    size_t host_len = strlen(out.host);
    char again[RLOCK__HOST_MAX + 64];
    int n = snprintf(again, sizeof(again), "%s %d %s:%d",
                     rlock__redirect_name(out.kind), out.slot, out.host,
                     out.port);
    CHECK(out.slot >= 0 && out.slot < RLOCK__SLOT_COUNT);
    CHECK(out.port >= 1 && out.port <= 65535);
    CHECK(host_len < RLOCK__HOST_MAX && visible(out.host, host_len));
    CHECK(n > 0 && (size_t)n == r->len && memcmp(again, r->str, r->len) == 0);
}

/* The invariants of any table either reader makes. */
static void check_table(const rlock__slot_table *t)
{
    bool all = true;

    for (size_t i = 0; i < t->count; i++) {
        const rlock__cluster_node *n = &t->nodes[i];

        CHECK(n->host != NULL && visible(n->host, strlen(n->host)));
        CHECK(n->port >= 1 && n->port <= 65535);
        CHECK(n->tls_port >= 0 && n->tls_port <= 65535);
        CHECK(strlen(n->id) <= 40);
        if (n->role == RLOCK__NODE_MASTER) {
            CHECK(n->master == -1);
        } else {
            CHECK(n->role == RLOCK__NODE_REPLICA);
            CHECK(n->master >= 0 && (size_t)n->master < t->count);
            CHECK(t->nodes[n->master].role == RLOCK__NODE_MASTER);
        }
        for (size_t j = 0; j < i; j++)
            CHECK(n->port != t->nodes[j].port ||
                  strcmp(n->host, t->nodes[j].host) != 0);
        CHECK(rlock__slot_table_find(t, n->host, n->port) == (int)i);
    }
    for (int s = 0; s < RLOCK__SLOT_COUNT; s++) {
        const rlock__cluster_node *m = rlock__slot_table_master(t, s);

        if (t->owner[s] == RLOCK__SLOT_UNSERVED) {
            CHECK(m == NULL);
            all = false;
        } else {
            CHECK(t->owner[s] < t->count && m == &t->nodes[t->owner[s]]);
            CHECK(m->role == RLOCK__NODE_MASTER);
        }
    }
    CHECK(rlock__slot_table_covers_all(t) == all);
}

/* A number as CLUSTER SLOTS gives it: an integer or a decimal string. */
static long number(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return (long)r->integer;
    return strtol(r->str, NULL, 10);
}

/* Each range of an accepted CLUSTER SLOTS reply is served by its first
 * node, at its address. */
static void check_slots_ranges(const redisReply *r, const rlock__slot_table *t)
{
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i];
        const redisReply *node = range->element[2];
        const redisReply *host = node->element[0];
        long lo = number(range->element[0]), hi = number(range->element[1]);
        bool named = (host->type == REDIS_REPLY_STRING ||
                      host->type == REDIS_REPLY_STATUS) &&
                     host->len > 0 && strcmp(host->str, "?") != 0;

        for (long s = lo; s <= hi; s++) {
            const rlock__cluster_node *m = rlock__slot_table_master(t, (int)s);

            CHECK(m != NULL && m->port == number(node->element[1]));
            CHECK(strcmp(m->host, named ? host->str : ASKED) == 0);
        }
    }
}

static void check_tables(const redisReply *r)
{
    for (int form = 0; form < 2; form++) {
        rlock__slot_table *t = NULL;
        int rc = form ? rlock__slot_table_from_shards(r, ASKED, &t)
                      : rlock__slot_table_from_slots(r, ASKED, &t);

        if (rc != RLOCK_OK) {
            CHECK(t == NULL);
            CHECK(rc == RLOCK_EPROTO || rc == RLOCK_ENOMEM ||
                  rc == rlock__reply_error_code(r));
            continue;
        }
        CHECK(t != NULL && r->type == REDIS_REPLY_ARRAY);
        check_table(t);
        if (form == 0)
            check_slots_ranges(r, t);
        rlock__slot_table_free(t);
    }
}

/* Runs the classifier on r and on everything nested in it (a reply to a
 * pipeline or a script can hold errors at any depth). */
static void check_errors(const redisReply *r)
{
    check_redirect(r);
    if (r->type == REDIS_REPLY_ARRAY && r->element != NULL) {
        for (size_t i = 0; i < r->elements; i++)
            check_errors(r->element[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    void *reply = NULL;

    rd = rt_fuzz_reader_new();
    if (rd == NULL)
        return 0;
    if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
        while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
            check_errors(reply);
            check_tables(reply); /* a whole reply: tables are not nested */
            freeReplyObject(reply);
            reply = NULL;
        }
    }
    redisReaderFree(rd);
    return 0;
}
