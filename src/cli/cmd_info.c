/*
 * cmd_info.c: "rlock info [--json] [--kind KIND] NAME...": what Redis holds
 * for each lock, as a table for people or as JSON (jansson) for programs;
 * with --kind, for semaphores and latches (cmd_info_sync.c).
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char info_help[] =
    "Usage: rlock info [--json] [--kind KIND] [--url URL] [--config FILE]\n"
    "                  NAME...\n"
    "\n"
    "Shows, for each lock NAME: its kind, whether it is held, by which\n"
    "client (the holder's client UUID) and thread id, the hold count, the\n"
    "remaining lease and how many clients wait for it. One consistent read\n"
    "(MULTI/EXEC) per name; nothing is changed.\n"
    "\n"
    "Kinds (from the key's layout, as Redisson writes it):\n"
    "  free        no key: nobody holds it\n"
    "  lock        a hash of <client uuid>:<thread id> = hold count (RLock;\n"
    "              a spin or non-reentrant lock looks the same)\n"
    "  fair        the same, with threads queued in "
    "redisson_lock_queue:{NAME}\n"
    "              (a fair lock nobody waits for shows as \"lock\")\n"
    "  fenced      the same, with a fencing token redisson_lock_token:{NAME}\n"
    "  read-write  a hash with a \"mode\" field (read or write); write holds\n"
    "              are fields ending in \":write\"\n"
    "  not-a-lock  the key holds something else (but see --kind)\n"
    "\n"
    "A semaphore, a permit semaphore and a count-down latch all keep their\n"
    "number in a plain string key NAME, so the key does not say which it is:\n"
    "name the kind with --kind. Without it, a string key holding a number\n"
    "is refused (status 64) rather than guessed.\n"
    "\n"
    "WAITING counts the client connections subscribed to the lock's unlock\n"
    "channel (redisson_lock__channel:{NAME}, or redisson_rwlock:{NAME}):\n"
    "one per waiting client process, however many of its threads wait;\n"
    "and the threads in rlock's own queue of an RLock's waiters\n"
    "(redisson_rlock_queue:{NAME}) behind its head, which listen on a\n"
    "channel of their own until their turn (the head listens on the\n"
    "lock's). A fair lock's QUEUED counts waiting threads, each of which\n"
    "listens on a channel of its own (the lock's channel, ':', its queue\n"
    "entry).\n"
    "\n"
    "Options:\n"
    "  --json         print a JSON array, one object per NAME:\n"
    "                 {\"name\", \"kind\", \"held\", \"holders\": "
    "[{\"client\",\n"
    "                 \"thread\", \"count\", \"write\"}], \"hold_count\",\n"
    "                 \"ttl_ms\" (-1: no expiry, -2: free), \"waiting\",\n"
    "                 \"queued\", \"in_turn\" (rlock's queue length),\n"
    "                 \"token\" (null: none), \"mode\" (null "
    "unless\n"
    "                 read-write), \"type\" (the Redis type),\n"
    "                 \"subscribers\": {CHANNEL: connections} for the lock's\n"
    "                 channels and each queued waiter's, \"queue\": the fair\n"
    "                 queue in order, [{\"owner\", \"client\", \"thread\",\n"
    "                 \"deadline_ms\" (wall clock; null: none),\n"
    "                 \"expires_in_ms\" (by the server's clock),\n"
    "                 \"subscribed\"}]}\n"
    "  --kind KIND    read every NAME as a KIND of synchronizer:\n"
    "                 semaphore         PERMITS available (RSemaphore)\n"
    "                 permit-semaphore  PERMITS available, and each HELD\n"
    "                                   permit's id and lease_ms left\n"
    "                                   (RPermitExpirableSemaphore)\n"
    "                 latch             its COUNT (0: open; RCountDownLatch)\n"
    "                 WAITING counts the connections subscribed to its\n"
    "                 channel (redisson_sc:{NAME}, or\n"
    "                 redisson_countdownlatch__channel__{NAME}), plain and\n"
    "                 sharded; a key of another type is refused (status 1).\n"
    "                 With --json: {\"name\", \"kind\", \"type\", \"exists\",\n"
    "                 \"permits\" or \"count\", \"ttl_ms\", \"waiting\",\n"
    "                 \"subscribers\": {CHANNEL: connections}, latch: \"open\",\n"
    "                 permit-semaphore: \"held\": [{\"id\", \"lease_end_ms\"\n"
    "                 (wall clock; null: no lease), \"expires_in_ms\"}]}\n"
    "  --url URL, --config FILE, -h/--help: see 'rlock --help'\n"
    "\n"
    "Exit status: 0, or as 'rlock --help' lists (64, 69, 77, 78...).\n";

enum { OPT_JSON = CLI_OPT_FIRST_OWN };

/* Returns a description of st's kind for the table: "fair (3 queued)". */
static void kind_text(const cli_lock_state *st, char *buf, size_t len)
{
    if (st->kind == CLI_KIND_FAIR)
        snprintf(buf, len, "fair(%lld queued)", st->queued);
    else if (st->kind == CLI_KIND_FENCED)
        snprintf(buf, len, "fenced(token %lld)", st->token);
    else if (st->kind == CLI_KIND_READ_WRITE)
        snprintf(buf, len, "read-write(%s)", st->mode);
    else if (st->kind == CLI_KIND_NOT_A_LOCK)
        snprintf(buf, len, "not-a-lock(%s)", st->redis_type);
    else
        snprintf(buf, len, "%s", cli_kind_word(st->kind));
}

static int width(int w, const char *s)
{
    int n = (int)strlen(s);
    return n > w ? n : w;
}

typedef struct row {
    const char *name;
    cli_lock_state st;
    char node[300]; /* a cluster: the master serving it, else "" */
} row;

/* Ends a table line: with the NODE column when the lock has a node. */
static void end_line(const row *r, bool first)
{
    if (r->node[0] != '\0')
        printf("  %s", first ? r->node : "");
    putchar('\n');
}

/* Prints the rows as an aligned table. */
static void print_table(const row *rows, size_t n)
{
    int wname = 4, wkind = 4, wclient = 6;
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        wname = width(wname, rows[i].name);
        kind_text(&rows[i].st, buf, sizeof(buf));
        wkind = width(wkind, buf);
        if (rows[i].st.nholders > 0)
            wclient = RLOCK_ADMIN_UUID_LEN + 6; /* ":write" */
    }
    printf("%-*s  %-*s  %-5s  %-*s  %-6s  %5s  %8s  %7s%s\n", wname, "NAME",
           wkind, "KIND", "STATE", wclient, "CLIENT", "THREAD", "HOLDS",
           "TTL_MS", "WAITING", n > 0 && rows[0].node[0] ? "  NODE" : "");
    for (size_t i = 0; i < n; i++) {
        const cli_lock_state *st = &rows[i].st;
        char ttl[24];
        kind_text(st, buf, sizeof(buf));
        if (st->ttl_ms >= 0)
            snprintf(ttl, sizeof(ttl), "%lld", st->ttl_ms);
        else
            snprintf(ttl, sizeof(ttl), st->ttl_ms == -1 ? "none" : "-");
        const char *state = st->kind == CLI_KIND_FREE         ? "free"
                            : st->kind == CLI_KIND_NOT_A_LOCK ? "-"
                            : st->nholders > 0                ? "held"
                                                              : "free";
        if (st->nholders == 0) {
            printf("%-*s  %-*s  %-5s  %-*s  %-6s  %5d  %8s  %7lld", wname,
                   rows[i].name, wkind, buf, state, wclient, "-", "-", 0, ttl,
                   st->waiting);
            end_line(&rows[i], true);
            continue;
        }
        for (size_t h = 0; h < st->nholders; h++) {
            const cli_holder *ho = &st->holders[h];
            char client[RLOCK_ADMIN_UUID_LEN + 8], thread[24];
            snprintf(client, sizeof(client), "%s%s", ho->client,
                     ho->write ? ":write" : "");
            snprintf(thread, sizeof(thread), "%llu",
                     (unsigned long long)ho->thread);
            if (h == 0)
                printf("%-*s  %-*s  %-5s  %-*s  %-6s  %5lld  %8s  %7lld",
                       wname, rows[i].name, wkind, buf, state, wclient, client,
                       thread, ho->count, ttl, st->waiting);
            else
                printf("%-*s  %-*s  %-5s  %-*s  %-6s  %5lld", wname, "",
                       wkind, "", "", wclient, client, thread, ho->count);
            end_line(&rows[i], h == 0);
        }
    }
}

/* Returns the "queue" array of a row, or NULL when out of memory. */
static json_t *queue_json(const cli_lock_state *st)
{
    json_t *queue = json_array();
    for (size_t i = 0; queue != NULL && i < st->nqueue; i++) {
        const cli_waiter *w = &st->queue[i];
        bool timed = w->deadline_ms >= 0;
        json_t *o = json_pack(
            "{s:s, s:s?, s:o, s:o, s:o, s:b}", "owner", w->tag, "client",
            w->client[0] != '\0' ? w->client : NULL, "thread",
            w->client[0] != '\0' ? json_integer((json_int_t)w->thread)
                                 : json_null(),
            "deadline_ms", timed ? json_integer(w->deadline_ms) : json_null(),
            "expires_in_ms",
            timed && st->server_ms > 0
                ? json_integer(w->deadline_ms - st->server_ms)
                : json_null(),
            "subscribed", w->subscribers > 0);
        if (o == NULL || json_array_append_new(queue, o) != 0) {
            json_decref(queue);
            return NULL;
        }
    }
    return queue;
}

/* Returns the "subscribers" object of a row, or NULL when out of memory. */
static json_t *subscribers_json(const char *name, const cli_lock_state *st)
{
    rlock_admin_names names;
    if (rlock_admin_names_of(name, &names) != 0)
        return NULL;
    json_t *subs = json_pack("{s:I, s:I}", names.channel,
                             (json_int_t)st->lock_subscribers,
                             names.rw_channel, (json_int_t)st->rw_subscribers);
    for (size_t i = 0; subs != NULL && i < st->nqueue; i++) {
        size_t len = strlen(names.channel) + strlen(st->queue[i].tag) + 2;
        char *channel = malloc(len);
        if (channel != NULL)
            snprintf(channel, len, "%s:%s", names.channel, st->queue[i].tag);
        if (channel == NULL ||
            json_object_set_new(subs, channel,
                                json_integer(st->queue[i].subscribers)) != 0) {
            json_decref(subs);
            subs = NULL;
        }
        free(channel);
    }
    rlock_admin_names_clear(&names);
    return subs;
}

/* Returns a new JSON object for one row, or NULL when out of memory. */
static json_t *row_json(const row *r)
{
    const cli_lock_state *st = &r->st;
    json_t *holders = json_array();
    for (size_t h = 0; holders != NULL && h < st->nholders; h++) {
        const cli_holder *ho = &st->holders[h];
        json_t *o = json_pack("{s:s, s:I, s:I, s:b}", "client", ho->client,
                              "thread", (json_int_t)ho->thread, "count",
                              (json_int_t)ho->count, "write", ho->write);
        if (o == NULL || json_array_append_new(holders, o) != 0) {
            json_decref(holders);
            return NULL;
        }
    }
    json_t *queue = holders != NULL ? queue_json(st) : NULL;
    json_t *subs = queue != NULL ? subscribers_json(r->name, st) : NULL;
    if (subs == NULL) {
        json_decref(holders);
        json_decref(queue);
        return NULL;
    }
    json_t *o = json_pack(
        "{s:s, s:s, s:b, s:o, s:I, s:I, s:I, s:I, s:o, s:o, "
        "s:s, s:o, s:o, s:I}",
        "name", r->name, "kind", cli_kind_word(st->kind), "held",
        st->nholders > 0, "holders", holders, "hold_count",
        (json_int_t)st->hold_count, "ttl_ms", (json_int_t)st->ttl_ms, "waiting",
        (json_int_t)st->waiting, "queued", (json_int_t)st->queued, "token",
        st->token >= 0 ? json_integer(st->token) : json_null(), "mode",
        st->kind == CLI_KIND_READ_WRITE ? json_string(st->mode) : json_null(),
        "type", st->redis_type, "subscribers", subs, "queue", queue,
        "in_turn", (json_int_t)st->in_turn);
    /* a cluster: which master serves it */
    if (o != NULL && r->node[0] != '\0' &&
        json_object_set_new(o, "node", json_string(r->node)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Prints a JSON array of n objects, make(i, ctx) making object i (NULL:
 * out of memory); returns 0 or CLI_SOFTWARE. info --kind prints so too. */
int cli_print_json_rows(size_t n, json_t *(*make)(size_t i, const void *ctx),
                        const void *ctx)
{
    json_t *all = json_array();
    for (size_t i = 0; all != NULL && i < n; i++) {
        json_t *o = make(i, ctx);
        if (o == NULL || json_array_append_new(all, o) != 0) {
            json_decref(all);
            all = NULL;
        }
    }
    char *text =
        all ? json_dumps(all, JSON_PRESERVE_ORDER | JSON_INDENT(2)) : NULL;
    json_decref(all);
    if (text == NULL) {
        cli_error("out of memory");
        return CLI_SOFTWARE;
    }
    puts(text);
    free(text);
    return CLI_OK;
}

static json_t *table_row_json(size_t i, const void *rows)
{
    return row_json(&((const row *)rows)[i]);
}

/* info --kind: connects, then hands over to cmd_info_sync.c; frees
 * names. */
static int info_sync(cli_common *cm, const char **names, size_t n,
                     cli_sync_kind kind, bool json)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock_admin_conn *a = NULL;
    int st = cli_connect(cm, &cfg, &c);
    if (st == 0)
        st = cli_open(c, cfg, &a);
    if (st == 0)
        st = cli_info_sync(a, names, n, kind, json);
    rlock_admin_close(a);
    rlock_client_free(c);
    rlock_config_free(cfg);
    free(names);
    return st;
}

int cli_cmd_info(int argc, char **argv, cli_common *cm)
{
    static const cli_opt opts[] = {{"json", OPT_JSON, false},
                                   {"kind", CLI_OPT_KIND, true},
                                   {NULL, 0, false}};
    bool json = false;
    int kind = CLI_SYNC_NONE;
    const char **names = NULL;
    size_t n = 0;
    int st = cli_parse_names("info", argc, argv, cm, opts, info_help, &json,
                             &kind, &names, &n);
    if (st != 0 || names == NULL)
        return st;
    if (kind != CLI_SYNC_NONE)
        return info_sync(cm, names, n, (cli_sync_kind)kind, json);
    row *rows = calloc(n, sizeof(*rows));
    if (rows == NULL) {
        free(names);
        cli_error("out of memory");
        return CLI_SOFTWARE;
    }
    for (size_t i = 0; i < n; i++)
        rows[i].name = names[i];
    free(names);

    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock_admin_conn *a = NULL;
    st = cli_connect(cm, &cfg, &c);
    if (st == 0)
        st = cli_open(c, cfg, &a);
    size_t done = 0;
    for (; st == 0 && done < n; done++) {
        st = cli_lock_read(a, rows[done].name, &rows[done].st);
        if (st == 0)
            st = cli_sync_refuse_number(a, "info", rows[done].name,
                                        &rows[done].st);
        snprintf(rows[done].node, sizeof(rows[done].node), "%s",
                 rlock_admin_node(a));
    }
    if (st == 0) {
        if (json)
            st = cli_print_json_rows(n, table_row_json, rows);
        else
            print_table(rows, n);
    }
    for (size_t i = 0; i < done; i++)
        cli_lock_clear(&rows[i].st);
    rlock_admin_close(a);
    rlock_client_free(c);
    rlock_config_free(cfg);
    free(rows);
    return st;
}
