/*
 * uri.c: parses the connection URI, a pure function tested without a server.
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://...   the same over TLS
 *   unix:///path/to/socket[?db=N]
 *
 * A rediss:// URI takes no query for its TLS files: a URI ends up in logs
 * and environment variables, paths would need percent-escaping, and the
 * settings have setters and config-file keys of their own.
 *
 * Anything else is refused with RLOCK_EINVAL rather than guessed at: a typo
 * in a URI should fail at connect time, not connect somewhere unexpected.
 */
#include "proto.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

/* Returns a malloc'd copy of s[0..n) with %XX escapes decoded, or NULL if
 * out of memory or an escape is malformed or decodes to NUL. */
static char *decode(const char *s, size_t n, int *err)
{
    char *out = rlock__malloc(n + 1);
    size_t j = 0;
    if (out == NULL) {
        *err = RLOCK_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
            !isxdigit((unsigned char)s[i + 2])) {
            free(out);
            *err = RLOCK_EINVAL;
            return NULL;
        }
        char hex[3] = {s[i + 1], s[i + 2], 0};
        long v = strtol(hex, NULL, 16);
        if (v == 0) {
            free(out);
            *err = RLOCK_EINVAL;
            return NULL;
        }
        out[j++] = (char)v;
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses a decimal number in s[0..n) within [lo, hi]; returns 0 or -1. */
static int parse_number(const char *s, size_t n, long lo, long hi, int *out)
{
    long v = 0;
    if (n == 0 || n > 10)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_unix(const char *rest, rlock__uri *out)
{
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    int err = RLOCK_EINVAL;
    if (plen < 2 || rest[0] != '/')
        return RLOCK_EINVAL;
    if (q != NULL) {
        if (strncmp(q, "?db=", 4) != 0 ||
            parse_number(q + 4, strlen(q + 4), 0, INT32_MAX, &out->db) != 0)
            return RLOCK_EINVAL;
    }
    out->path = decode(rest, plen, &err);
    if (out->path == NULL)
        return err;
    /* the kernel's sockaddr_un holds this much, NUL included; hiredis would
     * cut a longer path and connect somewhere else */
    struct sockaddr_un sa;
    if (strlen(out->path) >= sizeof(sa.sun_path)) {
        free(out->path);
        out->path = NULL;
        return RLOCK_EINVAL;
    }
    return RLOCK_OK;
}

static int parse_userinfo(const char *s, size_t n, rlock__uri *out)
{
    const char *colon = memchr(s, ':', n);
    int err = RLOCK_EINVAL;
    if (colon == NULL)
        return RLOCK_EINVAL; /* "[[user]:password@]": the colon is required */
    size_t ulen = (size_t)(colon - s);
    if (ulen > 0 && (out->user = decode(s, ulen, &err)) == NULL)
        return err;
    out->password = decode(colon + 1, n - ulen - 1, &err);
    if (out->password == NULL)
        return err;
    if (out->password[0] == '\0')
        return RLOCK_EINVAL;
    return RLOCK_OK;
}

static int parse_redis(const char *rest, rlock__uri *out)
{
    const char *slash = strchr(rest, '/');
    size_t alen = slash ? (size_t)(slash - rest) : strlen(rest);
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (rest[i] == '@')
            at = rest + i;
    const char *host = rest;
    int rc;
    if (at != NULL) {
        rc = parse_userinfo(rest, (size_t)(at - rest), out);
        if (rc != 0)
            return rc;
        host = at + 1;
    }
    size_t hlen = alen - (size_t)(host - rest);
    const char *port = NULL;
    size_t name_off = 0, name_len;
    if (hlen > 0 && host[0] == '[') {
        const char *close = memchr(host, ']', hlen);
        if (close == NULL || close == host + 1)
            return RLOCK_EINVAL;
        name_off = 1;
        name_len = (size_t)(close - host) - 1;
        if ((size_t)(close - host) + 1 < hlen) {
            if (close[1] != ':')
                return RLOCK_EINVAL;
            port = close + 2;
        }
    } else {
        const char *colon = memchr(host, ':', hlen);
        name_len = colon ? (size_t)(colon - host) : hlen;
        if (colon != NULL)
            port = colon + 1;
        for (size_t i = 0; i < name_len; i++) {
            unsigned char ch = (unsigned char)host[i];
            if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
                return RLOCK_EINVAL;
        }
    }
    if (name_len == 0)
        return RLOCK_EINVAL;
    out->port = 6379;
    if (port != NULL && parse_number(port, hlen - (size_t)(port - host), 1,
                                     65535, &out->port) != 0)
        return RLOCK_EINVAL;
    out->host = rlock__malloc(name_len + 1);
    if (out->host == NULL)
        return RLOCK_ENOMEM;
    memcpy(out->host, host + name_off, name_len);
    out->host[name_len] = '\0';
    if (slash != NULL && slash[1] != '\0' &&
        parse_number(slash + 1, strlen(slash + 1), 0, INT32_MAX, &out->db) != 0)
        return RLOCK_EINVAL;
    return RLOCK_OK;
}

/* Parses text into out. Returns 0, RLOCK_EINVAL or RLOCK_ENOMEM; on failure
 * out holds nothing that needs clearing. */
int rlock__uri_parse(const char *text, rlock__uri *out)
{
    int rc;
    if (text == NULL || out == NULL)
        return RLOCK_EINVAL;
    memset(out, 0, sizeof(*out));
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return RLOCK_EINVAL;
    if (strncasecmp(text, "redis://", 8) == 0) {
        rc = parse_redis(text + 8, out);
    } else if (strncasecmp(text, "rediss://", 9) == 0) {
        out->tls = true;
        rc = parse_redis(text + 9, out);
    } else if (strncasecmp(text, "unix://", 7) == 0) {
        rc = parse_unix(text + 7, out);
    } else {
        rc = RLOCK_EINVAL;
    }
    if (rc != 0)
        rlock__uri_clear(out);
    return rc;
}

/* Frees what rlock__uri_parse() allocated. */
void rlock__uri_clear(rlock__uri *uri)
{
    free(uri->host);
    free(uri->path);
    free(uri->user);
    free(uri->password);
    memset(uri, 0, sizeof(*uri));
}
