/*
 * fuzz_uri.c: libFuzzer target for the connection URI parser (src/proto/uri.c).
 *
 * The input, cut at its first NUL, is parsed with rlock__uri_parse(). Beyond
 * "no crash, no leak, no undefined behaviour" (the sanitizers' part), every
 * outcome is checked against what the parser promises:
 *
 *   - it answers 0, RLOCK_EINVAL or RLOCK_ENOMEM, and on failure leaves
 *     nothing behind (every field zero);
 *   - a URI it accepts is printable ASCII and starts with one of its
 *     schemes (each redis one may be spelled valkey, 's' exactly for TLS); the result names exactly one of a host, a socket path and a
 *     master behind sentinels, a port in 1..65535 for a host and for each
 *     of 1..RLOCK__URI_SENTINELS_MAX sentinels, a socket path starting
 *     with '/', a database >= 0, no empty user, password or master name,
 *     no user without password;
 *   - round trip: the result written back as a canonical URI (host in
 *     brackets, explicit port and database, user, password and socket path
 *     percent-encoded, the scheme spelled redis) parses to exactly the same
 *     result, so a valkey spelling means what its redis one does;
 *   - rlock__uri_clear() leaves the struct zeroed, and may run twice.
 *
 * A failed check calls abort(), which libFuzzer reports as a crash with the
 * input that caused it.
 */
#include "proto/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz_uri: check failed: %s (line %d)\n", #cond, \
                    __LINE__);                                               \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* Appends s to buf at *len, percent-encoding every byte but letters and
 * digits (and '/' when keep_slash). buf must hold 3 * strlen(s) more. */
static void append_encoded(char *buf, size_t *len, const char *s,
                           bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || (keep_slash && *p == '/');
        if (plain) {
            buf[(*len)++] = (char)*p;
        } else {
            buf[(*len)++] = '%';
            buf[(*len)++] = hex[*p >> 4];
            buf[(*len)++] = hex[*p & 15];
        }
    }
    buf[*len] = '\0';
}

static void append_raw(char *buf, size_t *len, const char *s)
{
    size_t n = strlen(s);

    memcpy(buf + *len, s, n + 1);
    *len += n;
}

/* Appends "[user]:password@" when u has a password. */
static void append_userinfo(char *buf, size_t *len, const rlock__uri *u)
{
    if (u->password == NULL)
        return;
    if (u->user != NULL)
        append_encoded(buf, len, u->user, false);
    append_raw(buf, len, ":");
    append_encoded(buf, len, u->password, false);
    append_raw(buf, len, "@");
}

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

static bool same_string(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool all_zero(const rlock__uri *u)
{
    return u->host == NULL && u->path == NULL && u->user == NULL &&
           u->password == NULL && u->port == 0 && u->db == 0 &&
           u->master == NULL && u->sentinels == NULL && u->nsentinels == 0 &&
           u->seeds == NULL && u->nseeds == 0;
}

/* True when text starts with "redis" or "valkey", then 's' exactly when
 * tls, then mode ("://", "+sentinel://", "+cluster://"), in any case. */
static bool has_scheme(const char *text, bool tls, const char *mode)
{
    static const char *const families[] = {"redis", "valkey"};

    for (size_t f = 0; f < 2; f++) {
        size_t n = strlen(families[f]);
        if (strncasecmp(text, families[f], n) != 0)
            continue;
        if (tls && text[n] != 's' && text[n] != 'S')
            return false;
        n += tls;
        return strncasecmp(text + n, mode, strlen(mode)) == 0;
    }
    return false;
}

/* Checks the promises about an accepted URI's parts. */
static void check_parts(const char *text, const rlock__uri *u)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        CHECK(*p > ' ' && *p < 0x7f);
    CHECK((u->host != NULL) + (u->path != NULL) + (u->master != NULL) +
              (u->seeds != NULL) ==
          1);
    CHECK((u->seeds == NULL) == (u->nseeds == 0));
    CHECK(u->db >= 0);
    CHECK(u->user == NULL || u->user[0] != '\0');
    CHECK(u->password == NULL || u->password[0] != '\0');
    CHECK(u->user == NULL || u->password != NULL);
    CHECK((u->master == NULL) == (u->nsentinels == 0));
    if (u->master != NULL) {
        CHECK(has_scheme(text, u->tls, "+sentinel://"));
        CHECK(u->master[0] != '\0');
        CHECK(u->nsentinels >= 1 &&
              u->nsentinels <= RLOCK__URI_SENTINELS_MAX);
        for (int i = 0; i < u->nsentinels; i++) {
            CHECK(u->sentinels[i].host != NULL);
            CHECK(u->sentinels[i].host[0] != '\0');
            CHECK(u->sentinels[i].port >= 1 && u->sentinels[i].port <= 65535);
        }
        CHECK(u->port == 0);
    } else if (u->seeds != NULL) {
        CHECK(has_scheme(text, u->tls, "+cluster://"));
        CHECK(u->nseeds >= 1 && u->nseeds <= RLOCK__URI_SEEDS_MAX);
        for (int i = 0; i < u->nseeds; i++) {
            CHECK(u->seeds[i].host != NULL);
            CHECK(u->seeds[i].host[0] != '\0');
            CHECK(u->seeds[i].port >= 1 && u->seeds[i].port <= 65535);
        }
        CHECK(u->db == 0);
    } else if (u->host != NULL) {
        /* rediss:// is the TLS form of redis://, valkeys:// of valkey:// */
        CHECK(has_scheme(text, u->tls, "://"));
        CHECK(u->host[0] != '\0');
        CHECK(u->port >= 1 && u->port <= 65535);
    } else {
        CHECK(strncasecmp(text, "unix://", 7) == 0);
        CHECK(!u->tls);
        CHECK(u->path[0] == '/' && u->path[1] != '\0');
        CHECK(u->user == NULL && u->password == NULL);
    }
}

/* Writes u back as a canonical URI, parses that, and compares. */
static void check_round_trip(const rlock__uri *u)
{
    size_t cap = 64 + 3 * (slen(u->host) + slen(u->path) + slen(u->user) +
                           slen(u->password) + slen(u->master));
    for (int i = 0; i < u->nsentinels; i++)
        cap += slen(u->sentinels[i].host) + 16;
    for (int i = 0; i < u->nseeds; i++)
        cap += slen(u->seeds[i].host) + 16;
    char *buf = malloc(cap), num[32];
    size_t len = 0;
    rlock__uri again;
    int rc;

    CHECK(buf != NULL);
    buf[0] = '\0';
    if (u->master != NULL) {
        append_raw(buf, &len,
                   u->tls ? "rediss+sentinel://" : "redis+sentinel://");
        append_userinfo(buf, &len, u);
        for (int i = 0; i < u->nsentinels; i++) {
            append_raw(buf, &len, i ? ",[" : "[");
            append_raw(buf, &len, u->sentinels[i].host);
            snprintf(num, sizeof(num), "]:%d", u->sentinels[i].port);
            append_raw(buf, &len, num);
        }
        append_raw(buf, &len, "/");
        append_encoded(buf, &len, u->master, false);
        snprintf(num, sizeof(num), "/%d", u->db);
        append_raw(buf, &len, num);
    } else if (u->seeds != NULL) {
        append_raw(buf, &len,
                   u->tls ? "rediss+cluster://" : "redis+cluster://");
        append_userinfo(buf, &len, u);
        for (int i = 0; i < u->nseeds; i++) {
            append_raw(buf, &len, i ? ",[" : "[");
            append_raw(buf, &len, u->seeds[i].host);
            snprintf(num, sizeof(num), "]:%d", u->seeds[i].port);
            append_raw(buf, &len, num);
        }
    } else if (u->host != NULL) {
        append_raw(buf, &len, u->tls ? "rediss://" : "redis://");
        append_userinfo(buf, &len, u);
        append_raw(buf, &len, "[");
        append_raw(buf, &len, u->host);
        snprintf(num, sizeof(num), "]:%d/%d", u->port, u->db);
        append_raw(buf, &len, num);
    } else {
        append_raw(buf, &len, "unix://");
        append_encoded(buf, &len, u->path, true);
        snprintf(num, sizeof(num), "?db=%d", u->db);
        append_raw(buf, &len, num);
    }
    CHECK(len < cap);

    rc = rlock__uri_parse(buf, &again);
    if (rc == RLOCK_ENOMEM) {
        free(buf);
        return;
    }
    if (rc != RLOCK_OK)
        fprintf(stderr, "fuzz_uri: canonical form \"%s\" refused\n", buf);
    CHECK(rc == RLOCK_OK);
    CHECK(same_string(u->host, again.host));
    CHECK(same_string(u->path, again.path));
    CHECK(same_string(u->user, again.user));
    CHECK(same_string(u->password, again.password));
    CHECK(u->db == again.db);
    CHECK(u->tls == again.tls);
    CHECK(u->host == NULL || u->port == again.port);
    CHECK(same_string(u->master, again.master));
    CHECK(u->nseeds == again.nseeds);
    for (int i = 0; i < u->nseeds; i++) {
        CHECK(same_string(u->seeds[i].host, again.seeds[i].host));
        CHECK(u->seeds[i].port == again.seeds[i].port);
    }
    CHECK(u->nsentinels == again.nsentinels);
    for (int i = 0; i < u->nsentinels; i++) {
        CHECK(same_string(u->sentinels[i].host, again.sentinels[i].host));
        CHECK(u->sentinels[i].port == again.sentinels[i].port);
    }
    rlock__uri_clear(&again);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    rlock__uri u;
    int rc;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    memset(&u, 0xa5, sizeof(u)); /* the parser must not read it */
    rc = rlock__uri_parse(text, &u);
    CHECK(rc == RLOCK_OK || rc == RLOCK_EINVAL || rc == RLOCK_ENOMEM);
    if (rc == RLOCK_OK) {
        check_parts(text, &u);
        check_round_trip(&u);
        rlock__uri_clear(&u);
        CHECK(all_zero(&u));
        rlock__uri_clear(&u);
    } else {
        CHECK(all_zero(&u));
    }
    CHECK(rlock__uri_parse(NULL, &u) == RLOCK_EINVAL);
    CHECK(rlock__uri_parse(text, NULL) == RLOCK_EINVAL);
    free(text);
    return 0;
}
