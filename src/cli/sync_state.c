/*
 * sync_state.c: one consistent read of what Redis holds for a semaphore, a
 * permit-expirable semaphore or a count-down latch, for info and watch.
 *
 * All three keep their number in a plain string key N (permits available,
 * or the count), so the key alone cannot say which one it is: the user
 * names the kind (--kind), and the read looks where that kind keeps the
 * rest: the leases of a permit semaphore in the sorted set "{N}:timeout"
 * (member: the permit id's 16 raw bytes; score: the lease end, wall-clock
 * ms, or Redisson's "no lease" score), and the waiters of each kind on its
 * channel, counted as subscribers of both flavours of pub/sub (a cluster
 * with sharded pub/sub has them on SSUBSCRIBE). The reads go in one
 * MULTI/EXEC, so they describe a single moment.
 */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redisson's score for a permit without a lease (Long.MAX_VALUE / 10^4,
 * what RedissonPermitExpirableSemaphore stores). */
#define NO_LEASE_SCORE 922337203685477LL

static const char *const words[] = {
    [CLI_SYNC_SEMAPHORE] = "semaphore",
    [CLI_SYNC_PERMIT_SEMAPHORE] = "permit-semaphore",
    [CLI_SYNC_LATCH] = "latch",
};

const char *cli_sync_kind_word(cli_sync_kind kind)
{
    return kind > CLI_SYNC_NONE && kind <= CLI_SYNC_LATCH ? words[kind]
                                                          : "?";
}

bool cli_sync_kind_parse(const char *word, cli_sync_kind *out)
{
    for (int k = CLI_SYNC_SEMAPHORE; k <= CLI_SYNC_LATCH; k++)
        if (strcmp(word, words[k]) == 0) {
            *out = (cli_sync_kind)k;
            return true;
        }
    return false;
}

const char *cli_sync_channel(cli_sync_kind kind, const rlock_admin_names *n)
{
    return kind == CLI_SYNC_LATCH ? n->countdown_channel : n->sem_channel;
}

/* What cmd says of name, a string key holding a number, when the user
 * named no kind: it may be any of the three. Returns CLI_USAGE. */
static int ambiguous(const char *cmd, const char *name)
{
    cli_error("%s: '%s' is a string key holding a number: a semaphore, a "
              "permit-semaphore or a latch keeps its count so; say which "
              "with --kind semaphore|permit-semaphore|latch",
              cmd, name);
    return CLI_USAGE;
}

void cli_sync_clear(cli_sync_state *st)
{
    free(st->channel);
    free(st->permits);
    memset(st, 0, sizeof(*st));
}

/* Reads a GET reply into st: numeric when missing or an integer. */
static void read_value(const rlock_admin_reply *v, cli_sync_state *st)
{
    st->value = 0;
    st->numeric = v->type == RLOCK_ADMIN_NIL;
    if (v->type != RLOCK_ADMIN_STRING || v->len == 0 || v->len > 19)
        return;
    char *end = NULL;
    long long n = strtoll(v->str, &end, 10);
    if (end == v->str + v->len) {
        st->value = n;
        st->numeric = true;
    }
}

/* Fills st's permits from a ZRANGE ... WITHSCORES reply; returns false
 * when out of memory. Members that are not 16 bytes are not Redisson's
 * ids and are skipped. */
static bool read_permits(const rlock_admin_reply *z, cli_sync_state *st)
{
    if (z->type != RLOCK_ADMIN_ARRAY || z->elements < 2)
        return true;
    st->permits = calloc(z->elements / 2, sizeof(*st->permits));
    if (st->permits == NULL)
        return false;
    for (size_t i = 0; i + 1 < z->elements; i += 2) {
        const rlock_admin_reply *m = z->element[i], *s = z->element[i + 1];
        if (m->type != RLOCK_ADMIN_STRING || m->len != 16 ||
            s->type != RLOCK_ADMIN_STRING)
            continue;
        cli_permit *p = &st->permits[st->npermits++];
        for (size_t b = 0; b < 16; b++)
            snprintf(p->id + 2 * b, 3, "%02x", (unsigned char)m->str[b]);
        long long end = (long long)strtod(s->str, NULL);
        p->lease_end_ms = end >= NO_LEASE_SCORE ? -1 : end;
    }
    return true;
}

/* Reads the state of name as kind (CLI_SYNC_NONE: only whether it is a
 * number). Returns 0, or an exit status after printing why. */
int cli_sync_read(rlock_admin_conn *a, const char *name, cli_sync_kind kind,
                  cli_sync_state *st)
{
    rlock_admin_names names;
    enum { NCMD = 9 };
    rlock_admin_reply *replies[NCMD] = {NULL};
    int status = CLI_OK;

    memset(st, 0, sizeof(*st));
    st->kind = kind;
    int rc = rlock_admin_names_of(name, &names);
    if (rc != 0) {
        cli_error("cannot name the keys of '%s': %s", name,
                  rlock_strerror(rc));
        return cli_status_of(rc);
    }
    const char *channel = cli_sync_channel(kind, &names);
    st->channel = strdup(channel);
    if (st->channel == NULL) {
        cli_error("out of memory");
        status = CLI_SOFTWARE;
        goto out;
    }
    const char *multi[] = {"MULTI"};
    const char *type[] = {"TYPE", name};
    const char *get[] = {"GET", name};
    const char *pttl[] = {"PTTL", name};
    const char *zrange[] = {"ZRANGE", names.permit_timeouts, "0", "-1",
                            "WITHSCORES"};
    const char *numsub[] = {"PUBSUB", "NUMSUB", channel};
    /* an error reply on a server without sharded pub/sub: counted 0 */
    const char *shardnumsub[] = {"PUBSUB", "SHARDNUMSUB", channel};
    const char *server_time[] = {"TIME"};
    const char *exec[] = {"EXEC"};
    const char *const *argv[NCMD] = {multi,  type,        get,
                                     pttl,   zrange,      numsub,
                                     shardnumsub, server_time, exec};
    const int argc[NCMD] = {1, 2, 2, 2, 5, 3, 3, 1, 1};
    rc = rlock_admin_pipeline(a, NCMD, argc, argv, replies);
    if (rc != 0) {
        status = cli_conn_lost(a, rc);
        goto out;
    }
    const rlock_admin_reply *r = replies[NCMD - 1];
    if (r->type != RLOCK_ADMIN_ARRAY || r->elements != NCMD - 2) {
        cli_error("Redis refused to read '%s': %s", name,
                  r->type == RLOCK_ADMIN_ERROR ? r->str : "unexpected reply");
        status = CLI_FAILURE;
        goto out;
    }
    const rlock_admin_reply *t = r->element[0];
    snprintf(st->redis_type, sizeof(st->redis_type), "%s",
             t->type == RLOCK_ADMIN_STATUS ? t->str : "?");
    read_value(r->element[1], st);
    st->ttl_ms = cli_int_or(r->element[2], -2);
    for (int i = 4; i <= 5; i++) {
        const rlock_admin_reply *subs = r->element[i];
        if (subs->type == RLOCK_ADMIN_ARRAY && subs->elements == 2)
            st->waiting += cli_int_or(subs->element[1], 0);
    }
    st->server_ms = cli_server_ms(r->element[6]);
    if (kind == CLI_SYNC_PERMIT_SEMAPHORE && !read_permits(r->element[3], st)) {
        cli_error("out of memory");
        status = CLI_SOFTWARE;
    }
out:
    for (int i = 0; i < NCMD; i++)
        rlock_admin_reply_free(replies[i]);
    rlock_admin_names_clear(&names);
    if (status != CLI_OK)
        cli_sync_clear(st);
    return status;
}

/* CLI_OK when st is what its kind keeps (no key, or a string holding an
 * integer), else CLI_FAILURE after saying what the key is. */
int cli_sync_check(const char *cmd, const char *name, const cli_sync_state *st)
{
    if (strcmp(st->redis_type, "none") == 0 ||
        (strcmp(st->redis_type, "string") == 0 && st->numeric))
        return CLI_OK;
    cli_error("%s: '%s' is a %s key%s, not a %s", cmd, name, st->redis_type,
              strcmp(st->redis_type, "string") == 0 ? " holding no number"
                                                     : "",
              cli_sync_kind_word(st->kind));
    return CLI_FAILURE;
}

/* A string key holding a number may be any of the synchronizers: the
 * user must say which (--kind). Returns 0, or a status after saying so. */
int cli_sync_refuse_number(rlock_admin_conn *a, const char *cmd,
                           const char *name, const cli_lock_state *lock)
{
    if (lock->kind != CLI_KIND_NOT_A_LOCK ||
        strcmp(lock->redis_type, "string") != 0)
        return CLI_OK;
    cli_sync_state st;
    int status = cli_sync_read(a, name, CLI_SYNC_NONE, &st);
    if (status == CLI_OK && st.numeric)
        status = ambiguous(cmd, name);
    cli_sync_clear(&st);
    return status;
}
