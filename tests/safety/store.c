/*
 * store.c: the counters on the store Redis (store.h), over hiredis.
 *
 * A connection error or timeout makes an access's outcome unknown (the
 * command may have run before the reply was lost): the connection is
 * dropped and made again at the next access. An error reply means the
 * command did not run (the fencing script checks before it writes).
 */
#include "store.h"

#include <hiredis/hiredis.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* The store never faults, so its replies come fast; a slow one is a
 * machine under load, not a reason to give up early. */
#define STORE_TIMEOUT_MS 5000

int store_parse(const char *uri, store_addr *addr)
{
    const char *p = uri;
    if (strncmp(p, "redis://", 8) != 0)
        return -1;
    p += 8;
    size_t hostlen = strcspn(p, ":/");
    if (hostlen == 0 || hostlen >= sizeof(addr->host))
        return -1;
    memcpy(addr->host, p, hostlen);
    addr->host[hostlen] = '\0';
    p += hostlen;
    addr->port = 6379;
    addr->db = 0;
    char *end;
    if (*p == ':') {
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535)
            return -1;
        addr->port = (int)port;
        p = end;
    }
    if (*p == '/' && p[1] != '\0') {
        long db = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end != '\0' || db < 0 || db > 1000000)
            return -1;
        addr->db = (int)db;
        p = end;
    } else if (*p == '/') {
        p++;
    }
    return *p == '\0' ? 0 : -1;
}

void store_close(store_conn *c)
{
    if (c->ctx != NULL)
        redisFree(c->ctx);
    c->ctx = NULL;
}

/* Connects (and SELECTs) if not connected. Returns 0 or -1. */
static int store_connect(store_conn *c)
{
    if (c->ctx != NULL)
        return 0;
    struct timeval tv = {STORE_TIMEOUT_MS / 1000,
                         (STORE_TIMEOUT_MS % 1000) * 1000};
    c->ctx = redisConnectWithTimeout(c->addr->host, c->addr->port, tv);
    if (c->ctx == NULL || c->ctx->err != 0 ||
        redisSetTimeout(c->ctx, tv) != REDIS_OK) {
        store_close(c);
        return -1;
    }
    if (c->addr->db != 0) {
        redisReply *r = redisCommand(c->ctx, "SELECT %d", c->addr->db);
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (r != NULL)
            freeReplyObject(r);
        if (!ok) {
            store_close(c);
            return -1;
        }
    }
    return 0;
}

/* Runs one command. Returns its reply (the caller frees it), or NULL when
 * the connection failed (then it is closed: the outcome is unknown). */
static redisReply *store_command(store_conn *c, int argc, const char **argv)
{
    if (store_connect(c) != 0)
        return NULL;
    redisReply *r = redisCommandArgv(c->ctx, argc, argv, NULL);
    if (r == NULL)
        store_close(c);
    return r;
}

/* Reads a counter reply (bulk string or nil) into *value. */
static store_result counter_value(const redisReply *r, int64_t *value,
                                  const char **err)
{
    if (r->type == REDIS_REPLY_NIL) {
        *value = 0;
        return STORE_OK;
    }
    if (r->type == REDIS_REPLY_STRING) {
        char *end;
        long long v = strtoll(r->str, &end, 10);
        if (end != r->str && *end == '\0') {
            *value = v;
            return STORE_OK;
        }
    }
    /* a read has no effect, but its value is unknown */
    *err = "ESTORE";
    return STORE_UNKNOWN;
}

/* An error reply: the fencing store's refusal, or another. */
static store_result refused(const redisReply *r, const char **err)
{
    *err = strncmp(r->str, "FENCED", 6) == 0 ? "FENCED" : "ESTORE";
    return STORE_REFUSED;
}

/* Runs the fencing script for op on lock's counter. */
static redisReply *fenced_access(store_conn *c, const char *op,
                                 const char *lock, int64_t token,
                                 const char *value)
{
    char counter[128], fence[128], tok[24];
    snprintf(counter, sizeof(counter), "safety:counter:%s", lock);
    snprintf(fence, sizeof(fence), "safety:fence:%s", lock);
    snprintf(tok, sizeof(tok), "%lld", (long long)token);
    const char *argv[] = {"EVAL", c->fence_script, "2", counter, fence, op,
                          tok,    value};
    return store_command(c, value != NULL ? 8 : 7, argv);
}

store_result store_read(store_conn *c, const char *lock, int64_t token,
                        int64_t *value, const char **err)
{
    redisReply *r;
    if (token > 0) {
        r = fenced_access(c, "read", lock, token, NULL);
    } else {
        char counter[128];
        snprintf(counter, sizeof(counter), "safety:counter:%s", lock);
        const char *argv[] = {"GET", counter};
        r = store_command(c, 2, argv);
    }
    if (r == NULL) {
        *err = "EIO";
        return STORE_UNKNOWN;
    }
    store_result res = r->type == REDIS_REPLY_ERROR
                           ? refused(r, err)
                           : counter_value(r, value, err);
    freeReplyObject(r);
    return res;
}

store_result store_write(store_conn *c, const char *lock, int64_t token,
                         int64_t value, const char **err)
{
    char text[24];
    snprintf(text, sizeof(text), "%lld", (long long)value);
    redisReply *r;
    if (token > 0) {
        r = fenced_access(c, "write", lock, token, text);
    } else {
        char counter[128];
        snprintf(counter, sizeof(counter), "safety:counter:%s", lock);
        const char *argv[] = {"SET", counter, text};
        r = store_command(c, 3, argv);
    }
    if (r == NULL) {
        *err = "EIO";
        return STORE_UNKNOWN;
    }
    store_result res = STORE_OK;
    if (r->type == REDIS_REPLY_ERROR) {
        res = refused(r, err);
    } else if (r->type != REDIS_REPLY_STATUS) {
        /* not an error, so the command ran: what it did is unknown */
        *err = "ESTORE";
        res = STORE_UNKNOWN;
    }
    freeReplyObject(r);
    return res;
}

