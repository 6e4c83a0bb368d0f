/*
 * cmd_info_sync.c: "rlock info --kind KIND NAME...": what Redis holds for
 * semaphores, permit semaphores or count-down latches (sync_state.c reads
 * it), as a table for people or as JSON for programs. cmd_info.c parses
 * the command line and hands the names over.
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The column of a kind's number: what the key counts. */
static const char *value_word(cli_sync_kind kind)
{
    return kind == CLI_SYNC_LATCH ? "COUNT" : "PERMITS";
}

static void ttl_text(long long ttl_ms, char *buf, size_t len)
{
    if (ttl_ms >= 0)
        snprintf(buf, len, "%lld", ttl_ms);
    else
        snprintf(buf, len, ttl_ms == -1 ? "none" : "-");
}

/* A permit's lease, as the table shows it: ms left by the server's clock
 * (negative: ended, given back by the next call on the semaphore). */
static void lease_text(const cli_permit *p, long long server_ms, char *buf,
                       size_t len)
{
    if (p->lease_end_ms < 0)
        snprintf(buf, len, "none");
    else
        snprintf(buf, len, "%lld", p->lease_end_ms - server_ms);
}

static void print_table(const char *const *names, const cli_sync_state *sts,
                        size_t n, cli_sync_kind kind)
{
    int wname = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(names[i]) > wname)
            wname = (int)strlen(names[i]);
    const char *kw = cli_sync_kind_word(kind);
    int wkind = (int)strlen(kw);
    bool permits = kind == CLI_SYNC_PERMIT_SEMAPHORE;
    printf("%-*s  %-*s  %7s  %8s  %7s%s\n", wname, "NAME", wkind, "KIND",
           value_word(kind), "TTL_MS", "WAITING", permits ? "  HELD" : "");
    for (size_t i = 0; i < n; i++) {
        const cli_sync_state *st = &sts[i];
        char ttl[24];
        ttl_text(st->ttl_ms, ttl, sizeof(ttl));
        printf("%-*s  %-*s  %7lld  %8s  %7lld", wname, names[i], wkind, kw,
               st->value, ttl, st->waiting);
        if (permits)
            printf("  %4zu", st->npermits);
        putchar('\n');
        for (size_t p = 0; p < st->npermits; p++) {
            char lease[24];
            lease_text(&st->permits[p], st->server_ms, lease, sizeof(lease));
            printf("  permit %s  lease_ms %s\n", st->permits[p].id, lease);
        }
    }
}

/* Returns the "held" array of a permit semaphore, or NULL when out of
 * memory. */
static json_t *held_json(const cli_sync_state *st)
{
    json_t *held = json_array();
    for (size_t i = 0; held != NULL && i < st->npermits; i++) {
        const cli_permit *p = &st->permits[i];
        bool leased = p->lease_end_ms >= 0;
        json_t *o = json_pack(
            "{s:s, s:o, s:o}", "id", p->id, "lease_end_ms",
            leased ? json_integer(p->lease_end_ms) : json_null(),
            "expires_in_ms",
            leased && st->server_ms > 0
                ? json_integer(p->lease_end_ms - st->server_ms)
                : json_null());
        if (o == NULL || json_array_append_new(held, o) != 0) {
            json_decref(held);
            return NULL;
        }
    }
    return held;
}

/* Returns a new JSON object for one name, or NULL when out of memory. */
static json_t *row_json(const char *name, const cli_sync_state *st)
{
    bool latch = st->kind == CLI_SYNC_LATCH;
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:{s:I}}",
                          "name", name, "kind", cli_sync_kind_word(st->kind),
                          "type", st->redis_type, "exists",
                          st->ttl_ms != -2, latch ? "count" : "permits",
                          (json_int_t)st->value, "ttl_ms",
                          (json_int_t)st->ttl_ms, "waiting",
                          (json_int_t)st->waiting, "subscribers",
                          st->channel, (json_int_t)st->waiting);
    if (o == NULL)
        return NULL;
    int rc = 0;
    if (latch)
        rc = json_object_set_new(o, "open", json_boolean(st->value <= 0));
    if (st->kind == CLI_SYNC_PERMIT_SEMAPHORE) {
        json_t *held = held_json(st);
        rc = held != NULL ? json_object_set_new(o, "held", held) : -1;
    }
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The names and states of one info --kind, for cli_print_json_rows. */
typedef struct rows {
    const char *const *names;
    const cli_sync_state *sts;
} rows;

static json_t *nth_row_json(size_t i, const void *ctx)
{
    const rows *r = ctx;
    return row_json(r->names[i], &r->sts[i]);
}

int cli_info_sync(rlock_admin_conn *a, const char *const *names, size_t n,
                  cli_sync_kind kind, bool json)
{
    cli_sync_state *sts = calloc(n, sizeof(*sts));
    if (sts == NULL) {
        cli_error("out of memory");
        return CLI_SOFTWARE;
    }
    int st = CLI_OK;
    size_t done = 0;
    for (; st == CLI_OK && done < n; done++) {
        st = cli_sync_read(a, names[done], kind, &sts[done]);
        if (st == CLI_OK)
            st = cli_sync_check("info", names[done], &sts[done]);
    }
    if (st == CLI_OK) {
        if (json)
            st = cli_print_json_rows(n, nth_row_json,
                                     &(rows){names, sts});
        else
            print_table(names, sts, n, kind);
    }
    for (size_t i = 0; i < done; i++)
        cli_sync_clear(&sts[i]);
    free(sts);
    return st;
}
