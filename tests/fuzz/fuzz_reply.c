/*
 * fuzz_reply.c: libFuzzer target for the decoders of script and command
 * replies (src/proto/reply.c).
 *
 * The input is fed as RESP to hiredis's own reader, so the trees decoded
 * are exactly what a (hostile) server can make hiredis build. Every reply,
 * and every element nested in it, goes through each decoder, and each
 * answer is checked against an independent statement of what the decoder
 * means (see reply.c):
 *
 *   error_code  0 for a non-error; for an error reply RLOCK_EAUTH (NOAUTH,
 *               WRONGPASS, NOPERM), RLOCK_ECONN (LOADING, BUSY,
 *               MASTERDOWN) or RLOCK_ESERVER; RLOCK_ECONN for no reply
 *   is_noscript 1 exactly for an error starting with NOSCRIPT
 *   acquire     1 for nil, 0 with the TTL for an integer, the error code
 *               for an error, RLOCK_EPROTO otherwise; *ttl written only
 *               for an integer
 *   unlock      the RLOCK__UNLOCK_* value for nil, 0, 1 and 3, NOT_A_LOCK
 *               for a WRONGTYPE error, the error code for other errors,
 *               RLOCK_EPROTO for anything else
 *   integer     1 with the value for an integer or a decimal string that
 *               fits int64 (at most 20 bytes, optional '-', digits only),
 *               0 for nil, the error code, RLOCK_EPROTO otherwise
 *   renew       for an array of exactly n integers, one result per key
 *               equal to the integer (0 and 1 always accepted); never a
 *               write past renewed[n)
 *
 * The RESP goes through hiredis's reader with its array sizes capped
 * (capped_reader.h), so that a huge array header is not an out-of-memory
 * "crash" in hiredis.
 *
 * A failed check calls abort(), which libFuzzer reports with its input.
 */
#include "capped_reader.h"
#include "proto/proto.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TTL_UNSET    INT64_C(0x5a5a5a5a5a5a5a5a)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_reply: check failed: %s (line %d)\n", #cond, \
                    __LINE__);                                                 \
            abort();                                                           \
        }                                                                      \
    } while (0)

static bool has_prefix(const redisReply *r, const char *word)
{
    size_t n = strlen(word);

    return r->str != NULL && r->len >= n && memcmp(r->str, word, n) == 0;
}

/* The code an error reply must map to (0 for a non-error). */
static int expected_error(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ERROR)
        return 0;
    if (has_prefix(r, "NOAUTH") || has_prefix(r, "WRONGPASS") ||
        has_prefix(r, "NOPERM"))
        return RLOCK_EAUTH;
    if (has_prefix(r, "LOADING") || has_prefix(r, "BUSY") ||
        has_prefix(r, "MASTERDOWN"))
        return RLOCK_ECONN;
    /* a non-reentrant lock's refusal, bare or as Redis 7 wraps a script's
     * error_reply() */
    if (has_prefix(r, "NON_REENTRANT_REACQUIRE") ||
        has_prefix(r, "ERR NON_REENTRANT_REACQUIRE"))
        return RLOCK_EREENTRY;
    return RLOCK_ESERVER;
}

/* Parses a decimal string reply as rlock__reply_integer promises to.
 * Returns true with *out set if it is one. */
static bool decimal_value(const redisReply *r, int64_t *out)
{
    const char *s = r->str;
    size_t len = r->len, i = 0;
    bool neg = false;
    uint64_t v = 0;

    if (s == NULL || len == 0 || len > 20)
        return false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len)
        return false;
    for (; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';

        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return false;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)v;
    }
    return true;
}

static void check_error_code(const redisReply *r)
{
    int want = expected_error(r);

    CHECK(rlock__reply_error_code(r) == want);
    CHECK(rlock__reply_is_noscript(r) ==
          (r->type == REDIS_REPLY_ERROR && has_prefix(r, "NOSCRIPT")));
}

static void check_acquire(const redisReply *r)
{
    int64_t ttl = TTL_UNSET;
    int rc = rlock__reply_acquire(r, &ttl, NULL);

    switch (r->type) {
    case REDIS_REPLY_ERROR:
        CHECK(rc == expected_error(r) && ttl == TTL_UNSET);
        break;
    case REDIS_REPLY_NIL:
        CHECK(rc == 1 && ttl == TTL_UNSET);
        break;
    case REDIS_REPLY_INTEGER:
        CHECK(rc == 0 && ttl == r->integer);
        break;
    default:
        CHECK(rc == RLOCK_EPROTO && ttl == TTL_UNSET);
        break;
    }
}

/* The fenced form (facts sheet §5): exactly {-1, token >= 1} is taken,
 * exactly {PTTL, -1} with PTTL != -1 is busy; every other reply that is
 * not an error is RLOCK_EPROTO. */
static void check_fenced_acquire(const redisReply *r)
{
    int64_t ttl = TTL_UNSET, token = TTL_UNSET;
    int rc = rlock__reply_acquire(r, &ttl, &token);
    bool pair = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                r->element[0]->type == REDIS_REPLY_INTEGER &&
                r->element[1]->type == REDIS_REPLY_INTEGER;

    if (r->type == REDIS_REPLY_ERROR) {
        CHECK(rc == expected_error(r) && ttl == TTL_UNSET &&
              token == TTL_UNSET);
    } else if (pair && r->element[0]->integer == -1 &&
               r->element[1]->integer >= 1) {
        CHECK(rc == 1 && token == r->element[1]->integer && ttl == TTL_UNSET);
    } else if (pair && r->element[1]->integer == -1 &&
               r->element[0]->integer != -1) {
        CHECK(rc == 0 && ttl == r->element[0]->integer && token == TTL_UNSET);
    } else {
        CHECK(rc == RLOCK_EPROTO && ttl == TTL_UNSET && token == TTL_UNSET);
    }
}

/* Whether r is the WRONGTYPE of a script's redis.call() as Redis 6.2
 * wraps it: "ERR Error running script (call to f_<sha>): @user_script:
 * <line>: WRONGTYPE ...", the line number being digits (or none), read as
 * text (up to a NUL byte, which Redis never sends in an error). */
static bool wrapped_wrongtype(const redisReply *r)
{
    static const char head[] = "ERR Error running script (call to f_";
    static const char mark[] = "): @user_script:";
    static const char tail[] = ": WRONGTYPE ";
    size_t len = r->str != NULL ? strnlen(r->str, r->len) : 0;

    if (!has_prefix(r, head))
        return false;
    for (size_t i = 0; i + sizeof(mark) - 1 <= len; i++) {
        if (memcmp(r->str + i, mark, sizeof(mark) - 1) != 0)
            continue;
        size_t j = i + sizeof(mark) - 1;
        while (j < len && r->str[j] >= '0' && r->str[j] <= '9')
            j++;
        return len - j >= sizeof(tail) - 1 &&
               memcmp(r->str + j, tail, sizeof(tail) - 1) == 0;
    }
    return false;
}

static void check_unlock(const redisReply *r)
{
    int rc = rlock__reply_unlock(r);

    switch (r->type) {
    case REDIS_REPLY_ERROR:
        if (has_prefix(r, "WRONGTYPE") || wrapped_wrongtype(r))
            CHECK(rc == RLOCK__UNLOCK_NOT_A_LOCK);
        else
            CHECK(rc == expected_error(r));
        break;
    case REDIS_REPLY_NIL:
        CHECK(rc == RLOCK__UNLOCK_NOT_HELD);
        break;
    case REDIS_REPLY_INTEGER:
        if (r->integer == 0)
            CHECK(rc == RLOCK__UNLOCK_STILL_HELD);
        else if (r->integer == 1)
            CHECK(rc == RLOCK__UNLOCK_RELEASED);
        else if (r->integer == 3)
            CHECK(rc == RLOCK__UNLOCK_UNANNOUNCED);
        else if (r->integer == 5)
            CHECK(rc == RLOCK__UNLOCK_HEARD);
        else
            CHECK(rc == RLOCK_EPROTO);
        break;
    default:
        CHECK(rc == RLOCK_EPROTO);
        break;
    }
}

static void check_integer(const redisReply *r)
{
    int64_t v = TTL_UNSET, want = 0;
    int rc = rlock__reply_integer(r, &v);

    switch (r->type) {
    case REDIS_REPLY_ERROR:
        CHECK(rc == expected_error(r) && v == TTL_UNSET);
        break;
    case REDIS_REPLY_NIL:
        CHECK(rc == 0 && v == TTL_UNSET);
        break;
    case REDIS_REPLY_INTEGER:
        CHECK(rc == 1 && v == r->integer);
        break;
    case REDIS_REPLY_STRING:
        if (decimal_value(r, &want))
            CHECK(rc == 1 && v == want);
        else
            CHECK(rc == RLOCK_EPROTO && v == TTL_UNSET);
        break;
    default:
        CHECK(rc == RLOCK_EPROTO && v == TTL_UNSET);
        break;
    }
}

/* Decodes r as a renewal reply for n keys into a buffer of exactly n bytes
 * (so that ASan sees any write past it). */
static void check_renew(const redisReply *r, size_t n)
{
    unsigned char *renewed = malloc(n ? n : 1);
    bool shape, zero_one = true;
    int rc;

    CHECK(renewed != NULL);
    memset(renewed, 0xee, n ? n : 1);
    rc = rlock__reply_renew(r, n, renewed);
    shape = r->type == REDIS_REPLY_ARRAY && r->elements == n &&
            (n == 0 || r->element != NULL);
    for (size_t i = 0; shape && i < n; i++) {
        const redisReply *e = r->element[i];

        if (e->type != REDIS_REPLY_INTEGER ||
            (e->integer != 0 && e->integer != 1))
            zero_one = false;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        CHECK(rc == expected_error(r));
    } else if (!shape) {
        CHECK(rc == RLOCK_EPROTO);
    } else if (rc == RLOCK_OK) {
        for (size_t i = 0; i < n; i++) {
            const redisReply *e = r->element[i];

            CHECK(e->type == REDIS_REPLY_INTEGER);
            CHECK(e->integer >= 0 && e->integer <= 255);
            CHECK(renewed[i] == (unsigned char)e->integer);
        }
    } else {
        /* refusing is fine for anything but plain 0s and 1s */
        CHECK(rc == RLOCK_EPROTO && !zero_one);
    }
    free(renewed);
}

/* Runs every decoder on r and on everything nested in it. */
static void check_tree(const redisReply *r, size_t hint)
{
    check_error_code(r);
    check_acquire(r);
    check_fenced_acquire(r);
    check_unlock(r);
    check_integer(r);
    check_renew(r, 0);
    check_renew(r, 1);
    check_renew(r, hint % 8);
    if (r->type == REDIS_REPLY_ARRAY && r->element != NULL) {
        check_renew(r, r->elements);
        for (size_t i = 0; i < r->elements; i++)
            check_tree(r->element[i], hint + i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    void *reply = NULL;
    size_t hint = size ? data[0] : 0;

    /* no reply at all: a lost connection */
    CHECK(rlock__reply_error_code(NULL) == RLOCK_ECONN);
    CHECK(rlock__reply_is_noscript(NULL) == 0);
    {
        int64_t v = TTL_UNSET;
        unsigned char renewed = 0xee;

        CHECK(rlock__reply_acquire(NULL, &v, NULL) == RLOCK_ECONN);
        CHECK(rlock__reply_unlock(NULL) == RLOCK_ECONN);
        CHECK(rlock__reply_integer(NULL, &v) == RLOCK_ECONN);
        CHECK(rlock__reply_renew(NULL, 1, &renewed) == RLOCK_ECONN);
        CHECK(v == TTL_UNSET && renewed == 0xee);
    }

    rd = rt_fuzz_reader_new();
    if (rd == NULL)
        return 0;
    if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
        while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
            check_tree(reply, hint);
            freeReplyObject(reply);
            reply = NULL;
        }
    }
    redisReaderFree(rd);
    return 0;
}
