/*
 * lock_state.c: one consistent read of everything Redis says about a lock
 * name, for info, watch and unlock.
 *
 * The reads go in one MULTI/EXEC, so they describe a single moment: the
 * key's TYPE, its hash fields, its PTTL, the fair queue and its deadlines,
 * the fencing token, how many connections are subscribed to the lock's
 * channels, and the server's clock. A fair lock's waiters listen on
 * channels of their own, named after their queue entries: those are
 * counted by a second command once the queue is known. The kind of lock follows from the layouts in
 * REDISSON-PROTOCOL.md: a hash of "<uuid>:<tid>" fields is an RLock (a spin
 * or non-reentrant lock looks the same), with a waiting queue it is a fair
 * lock (a fair lock nobody waits for looks like an RLock), with a token
 * counter a fenced lock; a hash with a "mode" field is a read-write lock.
 */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_kind_word(cli_kind kind)
{
    switch (kind) {
    case CLI_KIND_FREE:
        return "free";
    case CLI_KIND_LOCK:
        return "lock";
    case CLI_KIND_FAIR:
        return "fair";
    case CLI_KIND_FENCED:
        return "fenced";
    case CLI_KIND_READ_WRITE:
        return "read-write";
    case CLI_KIND_NOT_A_LOCK:
        return "not-a-lock";
    }
    return "?";
}

/* Parses a hash field "<uuid>:<tid>" or "<uuid>:<tid>:write" into h.
 * Returns false when the field is not an owner tag. */
static bool parse_owner(const char *field, size_t len, cli_holder *h)
{
    if (len < RLOCK_ADMIN_UUID_LEN + 2 || field[RLOCK_ADMIN_UUID_LEN] != ':')
        return false;
    for (size_t i = 0; i < RLOCK_ADMIN_UUID_LEN; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? field[i] != '-' : !isxdigit((unsigned char)field[i]))
            return false;
    }
    const char *tid = field + RLOCK_ADMIN_UUID_LEN + 1;
    const char *end = field + len;
    size_t digits = 0;
    uint64_t n = 0;
    while (tid + digits < end && isdigit((unsigned char)tid[digits])) {
        if (n > (UINT64_MAX - 9) / 10)
            return false;
        n = n * 10 + (uint64_t)(tid[digits] - '0');
        digits++;
    }
    if (digits == 0)
        return false;
    const char *rest = tid + digits;
    if (rest == end)
        h->write = false;
    else if ((size_t)(end - rest) == 6 && memcmp(rest, ":write", 6) == 0)
        h->write = true;
    else
        return false;
    memcpy(h->client, field, RLOCK_ADMIN_UUID_LEN);
    h->client[RLOCK_ADMIN_UUID_LEN] = '\0';
    h->thread = n;
    return true;
}

/* Parses a decimal hold count. */
static bool parse_count(const rlock_admin_reply *v, long long *out)
{
    if (v->type != RLOCK_ADMIN_STRING || v->len == 0 || v->len > 18)
        return false;
    long long n = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (!isdigit((unsigned char)v->str[i]))
            return false;
        n = n * 10 + (v->str[i] - '0');
    }
    *out = n;
    return true;
}

/* Fills st's holders from an HGETALL reply; returns false when the hash is
 * not a lock's (a field is neither an owner tag nor "mode"). */
static bool read_fields(const rlock_admin_reply *all, cli_lock_state *st)
{
    bool has_mode = false;
    if (all->type != RLOCK_ADMIN_ARRAY || all->elements % 2 != 0)
        return false;
    st->holders = calloc(all->elements / 2 + 1, sizeof(*st->holders));
    if (st->holders == NULL)
        return false;
    for (size_t i = 0; i + 1 < all->elements; i += 2) {
        const rlock_admin_reply *f = all->element[i], *v = all->element[i + 1];
        if (f->type != RLOCK_ADMIN_STRING)
            return false;
        if (strcmp(f->str, "mode") == 0 && v->type == RLOCK_ADMIN_STRING) {
            has_mode = true;
            snprintf(st->mode, sizeof(st->mode), "%s", v->str);
            continue;
        }
        cli_holder *h = &st->holders[st->nholders];
        if (!parse_owner(f->str, f->len, h) || !parse_count(v, &h->count))
            return false;
        h->field = strdup(f->str);
        if (h->field == NULL)
            return false;
        st->nholders++;
        st->hold_count += h->count;
    }
    for (size_t i = 0; i < st->nholders; i++)
        if (st->holders[i].write && !has_mode)
            return false;
    st->kind = has_mode ? CLI_KIND_READ_WRITE : CLI_KIND_LOCK;
    return true;
}

/* Returns an integer reply's value, or dflt for anything else. */
long long cli_int_or(const rlock_admin_reply *r, long long dflt)
{
    return r != NULL && r->type == RLOCK_ADMIN_INTEGER ? r->integer : dflt;
}

/* Returns the wall-clock ms of a TIME reply, or 0 when it is not one. */
long long cli_server_ms(const rlock_admin_reply *now)
{
    if (now->type != RLOCK_ADMIN_ARRAY || now->elements != 2 ||
        now->element[0]->type != RLOCK_ADMIN_STRING ||
        now->element[1]->type != RLOCK_ADMIN_STRING)
        return 0;
    return strtoll(now->element[0]->str, NULL, 10) * 1000 +
           strtoll(now->element[1]->str, NULL, 10) / 1000;
}

/* Frees what cli_lock_read() allocated in st. */
void cli_lock_clear(cli_lock_state *st)
{
    for (size_t i = 0; i < st->nholders; i++)
        free(st->holders[i].field);
    free(st->holders);
    for (size_t i = 0; i < st->nqueue; i++)
        free(st->queue[i].tag);
    free(st->queue);
    memset(st, 0, sizeof(*st));
}

/* Fills st's queue from LRANGE and ZRANGE ... WITHSCORES replies. Returns
 * false when out of memory. */
static bool read_queue(const rlock_admin_reply *list,
                       const rlock_admin_reply *scores, cli_lock_state *st)
{
    if (list->type != RLOCK_ADMIN_ARRAY || list->elements == 0)
        return true;
    st->queue = calloc(list->elements, sizeof(*st->queue));
    if (st->queue == NULL)
        return false;
    for (size_t i = 0; i < list->elements; i++) {
        const rlock_admin_reply *e = list->element[i];
        if (e->type != RLOCK_ADMIN_STRING)
            continue;
        cli_waiter *w = &st->queue[st->nqueue];
        w->tag = strdup(e->str);
        if (w->tag == NULL)
            return false;
        st->nqueue++;
        cli_holder h;
        if (parse_owner(e->str, e->len, &h) && !h.write) {
            memcpy(w->client, h.client, sizeof(w->client));
            w->thread = h.thread;
        }
        w->deadline_ms = -1;
        for (size_t k = 0; scores->type == RLOCK_ADMIN_ARRAY &&
                           k + 1 < scores->elements;
             k += 2) {
            const rlock_admin_reply *m = scores->element[k];
            const rlock_admin_reply *v = scores->element[k + 1];
            if (m->type == RLOCK_ADMIN_STRING && strcmp(m->str, e->str) == 0 &&
                v->type == RLOCK_ADMIN_STRING)
                w->deadline_ms = (long long)strtod(v->str, NULL);
        }
    }
    return true;
}

/* Counts the subscribers of each queued waiter's own channel (the lock's
 * channel, ':', its queue entry). Returns 0 or an exit status. */
static int count_queue_subscribers(rlock_admin_conn *a, const char *channel,
                                   cli_lock_state *st)
{
    if (st->nqueue == 0)
        return CLI_OK;
    size_t argc = st->nqueue + 2;
    const char **argv = calloc(argc, sizeof(*argv));
    char **names = calloc(st->nqueue, sizeof(*names));
    int status = CLI_OK;
    if (argv == NULL || names == NULL) {
        cli_error("out of memory");
        status = CLI_SOFTWARE;
        goto out;
    }
    argv[0] = "PUBSUB";
    argv[1] = "NUMSUB";
    for (size_t i = 0; i < st->nqueue; i++) {
        size_t len = strlen(channel) + strlen(st->queue[i].tag) + 2;
        names[i] = malloc(len);
        if (names[i] == NULL) {
            cli_error("out of memory");
            status = CLI_SOFTWARE;
            goto out;
        }
        snprintf(names[i], len, "%s:%s", channel, st->queue[i].tag);
        argv[i + 2] = names[i];
    }
    rlock_admin_reply *r = NULL;
    int rc = rlock_admin_command(a, (int)argc, argv, &r);
    if (rc != 0) {
        status = cli_conn_lost(a, rc);
        goto out;
    }
    if (r->type == RLOCK_ADMIN_ARRAY && r->elements == 2 * st->nqueue)
        for (size_t i = 0; i < st->nqueue; i++)
            st->queue[i].subscribers = cli_int_or(r->element[2 * i + 1], 0);
    rlock_admin_reply_free(r);
out:
    for (size_t i = 0; names != NULL && i < st->nqueue; i++)
        free(names[i]);
    free(names);
    free(argv);
    return status;
}

/* Reads the state of lock name. Returns 0, or an exit status after
 * printing why. */
int cli_lock_read(rlock_admin_conn *a, const char *name, cli_lock_state *st)
{
    rlock_admin_names names;
    enum { NCMD = 12 };
    rlock_admin_reply *replies[NCMD] = {NULL};
    int st_code = CLI_OK;

    memset(st, 0, sizeof(*st));
    st->token = -1;
    int rc = rlock_admin_names_of(name, &names);
    if (rc != 0) {
        cli_error("cannot name the keys of lock '%s': %s", name,
                  rlock_strerror(rc));
        return cli_status_of(rc);
    }
    const char *multi[] = {"MULTI"};
    const char *type[] = {"TYPE", name};
    const char *hgetall[] = {"HGETALL", name};
    const char *pttl[] = {"PTTL", name};
    const char *llen[] = {"LLEN", names.fair_queue};
    const char *in_turn[] = {"LLEN", names.rlock_queue};
    const char *get[] = {"GET", names.fence_token};
    const char *numsub[] = {"PUBSUB", "NUMSUB", names.channel,
                            names.rw_channel};
    const char *lrange[] = {"LRANGE", names.fair_queue, "0", "-1"};
    const char *zrange[] = {"ZRANGE", names.fair_timeouts, "0", "-1",
                            "WITHSCORES"};
    const char *server_time[] = {"TIME"};
    const char *exec[] = {"EXEC"};
    const char *const *argv[NCMD] = {multi,  type,   hgetall, pttl,
                                     llen,   get,    numsub,  lrange,
                                     zrange, server_time, in_turn, exec};
    const int argc[NCMD] = {1, 2, 2, 2, 2, 2, 4, 4, 5, 1, 2, 1};
    rc = rlock_admin_pipeline(a, NCMD, argc, argv, replies);
    if (rc != 0) {
        st_code = cli_conn_lost(a, rc);
        goto out;
    }
    const rlock_admin_reply *r = replies[NCMD - 1];
    if (r->type != RLOCK_ADMIN_ARRAY || r->elements != NCMD - 2) {
        cli_error("Redis refused to read lock '%s': %s", name,
                  r->type == RLOCK_ADMIN_ERROR ? r->str : "unexpected reply");
        st_code = CLI_FAILURE;
        goto out;
    }
    const rlock_admin_reply *t = r->element[0];
    snprintf(st->redis_type, sizeof(st->redis_type), "%s",
             t->type == RLOCK_ADMIN_STATUS ? t->str : "?");
    st->ttl_ms = cli_int_or(r->element[2], -2);
    st->queued = cli_int_or(r->element[3], 0);
    if (r->element[4]->type == RLOCK_ADMIN_STRING)
        st->token = strtoll(r->element[4]->str, NULL, 10);
    const rlock_admin_reply *subs = r->element[5];
    long long lock_waiting = 0, rw_waiting = 0;
    if (subs->type == RLOCK_ADMIN_ARRAY && subs->elements == 4) {
        lock_waiting = cli_int_or(subs->element[1], 0);
        rw_waiting = cli_int_or(subs->element[3], 0);
    }
    st->lock_subscribers = lock_waiting;
    st->rw_subscribers = rw_waiting;
    st->server_ms = cli_server_ms(r->element[8]);
    st->in_turn = cli_int_or(r->element[9], 0);
    if (!read_queue(r->element[6], r->element[7], st)) {
        cli_error("out of memory");
        st_code = CLI_SOFTWARE;
        goto out;
    }
    st_code = count_queue_subscribers(a, names.channel, st);
    if (st_code != CLI_OK)
        goto out;

    if (strcmp(st->redis_type, "none") == 0) {
        st->kind = CLI_KIND_FREE;
        st->waiting = lock_waiting + rw_waiting +
                      (st->in_turn > 1 ? st->in_turn - 1 : 0);
    } else if (strcmp(st->redis_type, "hash") != 0 ||
               !read_fields(r->element[1], st)) {
        for (size_t i = 0; i < st->nholders; i++)
            free(st->holders[i].field);
        free(st->holders);
        st->holders = NULL;
        st->nholders = 0;
        st->hold_count = 0;
        st->kind = CLI_KIND_NOT_A_LOCK;
    } else if (st->kind == CLI_KIND_READ_WRITE) {
        st->waiting = rw_waiting;
    } else {
        /* rlock's queue: only its head listens on the lock's channel */
        st->waiting = lock_waiting + (st->in_turn > 1 ? st->in_turn - 1 : 0);
        if (st->queued > 0)
            st->kind = CLI_KIND_FAIR;
        else if (st->token >= 0)
            st->kind = CLI_KIND_FENCED;
    }
out:
    for (int i = 0; i < NCMD; i++)
        rlock_admin_reply_free(replies[i]);
    rlock_admin_names_clear(&names);
    if (st_code != CLI_OK)
        cli_lock_clear(st);
    return st_code;
}
