/*
 * reply.c: what a Redis reply means for a lock, as pure functions over
 * hiredis's redisReply trees (unit-tested with hand-built replies).
 *
 * Redisson reads every script reply as a 64-bit integer or nil (facts sheet
 * 1.3), so we accept exactly those and call anything else RLOCK_EPROTO.
 */
#include "proto.h"

/* for the redisReply type only (proto.h) */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool starts_with(const struct redisReply *r, const char *word)
{
    size_t n = strlen(word);
    return r->str != NULL && r->len >= n && strncmp(r->str, word, n) == 0;
}

/* Returns the RLOCK_E* code for an error reply: authentication errors are
 * RLOCK_EAUTH, a server still loading its data is RLOCK_ECONN (try later),
 * everything else RLOCK_ESERVER. Returns 0 for a non-error reply. */
int rlock__reply_error_code(const struct redisReply *r)
{
    if (r == NULL)
        return RLOCK_ECONN;
    if (r->type != REDIS_REPLY_ERROR)
        return RLOCK_OK;
    if (starts_with(r, "NOAUTH") || starts_with(r, "WRONGPASS") ||
        starts_with(r, "NOPERM"))
        return RLOCK_EAUTH;
    if (starts_with(r, "LOADING") || starts_with(r, "BUSY") ||
        starts_with(r, "MASTERDOWN"))
        return RLOCK_ECONN;
    /* a script's redis.error_reply() text; Redis 7 puts "ERR " before a
     * text without an error code of its own */
    if (starts_with(r, RLOCK__REENTRY_REFUSED) ||
        starts_with(r, "ERR " RLOCK__REENTRY_REFUSED))
        return RLOCK_EREENTRY;
    return RLOCK_ESERVER;
}

/* Returns 1 when EVALSHA failed because the server lost its script cache. */
int rlock__reply_is_noscript(const struct redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           starts_with(r, "NOSCRIPT");
}

/* Returns an error reply's text ("NOPERM ..."), for a log line or a
 * refusal's reason; "" for any other reply and for NULL, so that a caller
 * above src/io need not read hiredis's reply itself. Borrowed from r. */
const char *rlock__reply_error_text(const struct redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ERROR || r->str == NULL)
        return "";
    return r->str;
}

/* True for READONLY: the server is a replica now (a master that Sentinel
 * demoted), so the command did not run. */
int rlock__reply_is_readonly(const struct redisReply *r)
{
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           starts_with(r, "READONLY");
}

/* Decodes an acquire reply: returns 1 when acquired (nil), 0 when busy with
 * *ttl set to the holder's PTTL, or a negative RLOCK_E* code. With token
 * set, the fenced form is read instead: {-1, token} when acquired (*token
 * set), {PTTL, -1} when busy. */
int rlock__reply_acquire(const struct redisReply *r, int64_t *ttl,
                         int64_t *token)
{
    int err = rlock__reply_error_code(r);
    if (err != 0)
        return err;
    if (token != NULL) {
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_INTEGER ||
            r->element[1]->type != REDIS_REPLY_INTEGER)
            return RLOCK_EPROTO;
        long long first = r->element[0]->integer;
        long long second = r->element[1]->integer;
        if (first == -1 && second >= 1) {
            *token = second;
            return 1;
        }
        if (second != -1 || first == -1)
            return RLOCK_EPROTO;
        *ttl = first;
        return 0;
    }
    if (r->type == REDIS_REPLY_NIL)
        return 1;
    if (r->type != REDIS_REPLY_INTEGER)
        return RLOCK_EPROTO;
    *ttl = r->integer;
    return 0;
}

/* Whether r is a WRONGTYPE error from a script's redis.call(): bare from
 * 7.0 on, wrapped by Redis 6.2 as "ERR Error running script (call to
 * f_<sha>): @user_script:<line>: WRONGTYPE ...". */
static bool is_script_wrongtype(const struct redisReply *r)
{
    const char *at;

    if (starts_with(r, "WRONGTYPE"))
        return true;
    if (!starts_with(r, "ERR Error running script (call to f_"))
        return false;
    at = strstr(r->str, "): @user_script:");
    if (at == NULL)
        return false;
    at += strlen("): @user_script:");
    at += strspn(at, "0123456789");
    return strncmp(at, ": WRONGTYPE ", strlen(": WRONGTYPE ")) == 0;
}

/* Decodes an unlock reply into RLOCK__UNLOCK_*, or a negative code: 3 is
 * our scripts' "released, but the PUBLISH was refused", 5 "released, and
 * a subscriber heard the message" (someone waits), and a WRONGTYPE
 * error (is_script_wrongtype) means the key was overwritten with something
 * that is not a lock (every other error reply means the release did not
 * run). */
int rlock__reply_unlock(const struct redisReply *r)
{
    int err = rlock__reply_error_code(r);
    if (err == RLOCK_ESERVER && is_script_wrongtype(r))
        return RLOCK__UNLOCK_NOT_A_LOCK;
    if (err != 0)
        return err;
    if (r->type == REDIS_REPLY_NIL)
        return RLOCK__UNLOCK_NOT_HELD;
    if (r->type != REDIS_REPLY_INTEGER)
        return RLOCK_EPROTO;
    if (r->integer == 0)
        return RLOCK__UNLOCK_STILL_HELD;
    if (r->integer == 1)
        return RLOCK__UNLOCK_RELEASED;
    if (r->integer == 3)
        return RLOCK__UNLOCK_UNANNOUNCED;
    if (r->integer == 5)
        return RLOCK__UNLOCK_HEARD;
    return RLOCK_EPROTO;
}

/* Decodes an integer reply (a decimal string is accepted, as HGET gives);
 * returns 1 with *out set, 0 for nil, or a negative code. */
int rlock__reply_integer(const struct redisReply *r, int64_t *out)
{
    int err = rlock__reply_error_code(r);
    if (err != 0)
        return err;
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return 1;
    }
    if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < 21) {
        /* accumulate negatively: INT64_MIN has no positive counterpart */
        int64_t v = 0;
        bool neg = r->str[0] == '-';
        if (neg && r->len == 1)
            return RLOCK_EPROTO;
        for (size_t i = neg ? 1 : 0; i < r->len; i++) {
            int digit = r->str[i] - '0';
            if (digit < 0 || digit > 9 || v < (INT64_MIN + digit) / 10)
                return RLOCK_EPROTO;
            v = v * 10 - digit;
        }
        if (!neg && v == INT64_MIN)
            return RLOCK_EPROTO;
        *out = neg ? v : -v;
        return 1;
    }
    return RLOCK_EPROTO;
}

/* Decodes a batched renewal reply of n integers into renewed[0..n), each
 * an RLOCK__RENEW_* value. Returns 0 or a negative code. */
int rlock__reply_renew(const struct redisReply *r, size_t n,
                       unsigned char *renewed)
{
    int err = rlock__reply_error_code(r);
    if (err != 0)
        return err;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        return RLOCK_EPROTO;
    for (size_t i = 0; i < n; i++) {
        const struct redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_INTEGER ||
            e->integer < RLOCK__RENEW_GONE || e->integer > RLOCK__RENEW_TAKEN)
            return RLOCK_EPROTO;
        renewed[i] = (unsigned char)e->integer;
    }
    return RLOCK_OK;
}

/* ------------------------------------------------ what connecting reads */

/* What PING's reply at connect means: 0 for a status reply, RLOCK_EAUTH for
 * an authentication error, RLOCK_EPROTO for anything else (whatever answers
 * does not speak Redis as a lock needs). */
int rlock__reply_pong(const struct redisReply *r)
{
    if (r->type == REDIS_REPLY_STATUS)
        return RLOCK_OK;
    return rlock__reply_error_code(r) == RLOCK_EAUTH ? RLOCK_EAUTH
                                                    : RLOCK_EPROTO;
}

/* What SCRIPT LOAD's reply means: 0 when the server names the script by
 * sha1 (the SHA-1 we computed, any case), an error reply's code, or
 * RLOCK_EPROTO for any other answer. */
int rlock__reply_script_loaded(const struct redisReply *r, const char *sha1)
{
    int err = rlock__reply_error_code(r);
    if (err != 0)
        return err;
    if (r->type != REDIS_REPLY_STRING || r->len != strlen(sha1) ||
        strncasecmp(r->str, sha1, r->len) != 0)
        return RLOCK_EPROTO;
    return RLOCK_OK;
}

/* Returns 1 when an error reply is an ACL refusal (NOPERM), else 0. */
int rlock__reply_is_noperm(const struct redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && starts_with(r, "NOPERM");
}

/* What ACL DRYRUN's reply means: 1 when the user may not run the command,
 * with the server's reason copied into why (a bulk string); 0 when it may
 * (+OK) or the server will not say (an error: no right to ask, or a server
 * without DRYRUN). */
int rlock__reply_dryrun_refused(const struct redisReply *r, char *why,
                                size_t whylen)
{
    if (r->type != REDIS_REPLY_STRING)
        return 0;
    snprintf(why, whylen, "%.*s", r->len > 1024 ? 1024 : (int)r->len,
             r->str);
    return 1;
}

/* Returns a copy of r as a tree the caller owns (admin_reply.h), or NULL
 * when out of memory. hiredis's reader nests at most 7 deep, which bounds
 * the recursion. */
rlock_admin_reply *rlock__admin_reply_copy(const struct redisReply *r)
{
    rlock_admin_reply *out = rlock__calloc(1, sizeof(*out));
    if (out == NULL)
        return NULL;
    switch (r->type) {
    case REDIS_REPLY_ARRAY:
        out->type = RLOCK_ADMIN_ARRAY;
        out->element = rlock__calloc(r->elements + 1, sizeof(*out->element));
        if (out->element == NULL)
            goto fail;
        for (; out->elements < r->elements; out->elements++) {
            out->element[out->elements] =
                rlock__admin_reply_copy(r->element[out->elements]);
            if (out->element[out->elements] == NULL)
                goto fail;
        }
        return out;
    case REDIS_REPLY_INTEGER:
        out->type = RLOCK_ADMIN_INTEGER;
        out->integer = r->integer;
        return out;
    case REDIS_REPLY_NIL:
        out->type = RLOCK_ADMIN_NIL;
        return out;
    case REDIS_REPLY_STATUS:
        out->type = RLOCK_ADMIN_STATUS;
        break;
    case REDIS_REPLY_ERROR:
        out->type = RLOCK_ADMIN_ERROR;
        break;
    default:
        out->type = RLOCK_ADMIN_STRING;
        break;
    }
    out->str = rlock__malloc(r->len + 1);
    if (out->str == NULL)
        goto fail;
    if (r->len > 0)
        memcpy(out->str, r->str, r->len);
    out->str[r->len] = '\0';
    out->len = r->len;
    return out;
fail:
    rlock__admin_reply_free(out);
    return NULL;
}

/* Frees a tree rlock__admin_reply_copy() made; NULL is a no-op. */
void rlock__admin_reply_free(rlock_admin_reply *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        rlock__admin_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* The connected_slaves field of an INFO replication reply: returns the
 * count (>= 0), or RLOCK_EPROTO when the reply has none. */
int rlock__reply_connected_slaves(const struct redisReply *r)
{
    static const char field[] = "connected_slaves:";
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        return RLOCK_EPROTO;
    const char *end = r->str + r->len;
    for (const char *p = r->str; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        size_t flen = sizeof(field) - 1;
        if ((size_t)(eol - p) > flen && memcmp(p, field, flen) == 0) {
            long n = 0;
            const char *q = p + flen;
            for (; q < eol && *q >= '0' && *q <= '9' && n < 1000000; q++)
                n = n * 10 + (*q - '0');
            if (q == p + flen)
                return RLOCK_EPROTO;
            return (int)n;
        }
        p = eol + 1;
    }
    return RLOCK_EPROTO;
}
