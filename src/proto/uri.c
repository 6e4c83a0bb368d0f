/*
 * uri.c: parses the connection URI, a pure function tested without a server.
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://...   the same over TLS
 *   unix:///path/to/socket[?db=N]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]
 *   rediss+sentinel://...   the same, TLS to the sentinels and the master
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...][/]
 *   rediss+cluster://...    the same, TLS to every node
 *
 * Each redis scheme may be spelled valkey instead (valkey://, valkeys://,
 * valkey+sentinel://, valkeys+cluster://, ...), with the same meaning:
 * Redisson reads valkey:// and valkeys:// as redis:// and rediss://.
 *
 * The sentinel form is the one several Redis clients read (a comma list
 * of sentinels, default port 26379, the master's name as the path): the
 * userinfo and the database are the master's, as in redis://, so that
 * moving a service from one server to Sentinel changes the address only.
 * The cluster form lists seed nodes the same way (default port 6379); any
 * one that answers describes the whole cluster. A cluster has database 0
 * only, so it takes no /db.
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

/* Parses "host[:port]" or "[ipv6][:port]" in s[0..n) into a malloc'd
 * *host and *port (default_port when absent). Returns 0, RLOCK_EINVAL or
 * RLOCK_ENOMEM (then *host is NULL). */
static int parse_hostport(const char *s, size_t n, int default_port,
                          char **host, int *port)
{
    const char *port_at = NULL;
    size_t name_off = 0, name_len;
    *host = NULL;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL || close == s + 1)
            return RLOCK_EINVAL;
        name_off = 1;
        name_len = (size_t)(close - s) - 1;
        if ((size_t)(close - s) + 1 < n) {
            if (close[1] != ':')
                return RLOCK_EINVAL;
            port_at = close + 2;
        }
    } else {
        const char *colon = memchr(s, ':', n);
        name_len = colon ? (size_t)(colon - s) : n;
        if (colon != NULL)
            port_at = colon + 1;
        for (size_t i = 0; i < name_len; i++) {
            unsigned char ch = (unsigned char)s[i];
            if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
                return RLOCK_EINVAL;
        }
    }
    if (name_len == 0)
        return RLOCK_EINVAL;
    *port = default_port;
    if (port_at != NULL &&
        parse_number(port_at, n - (size_t)(port_at - s), 1, 65535, port) != 0)
        return RLOCK_EINVAL;
    *host = rlock__malloc(name_len + 1);
    if (*host == NULL)
        return RLOCK_ENOMEM;
    memcpy(*host, s + name_off, name_len);
    (*host)[name_len] = '\0';
    return RLOCK_OK;
}

/* Splits rest at its first '/' into the authority and what follows, and
 * parses the authority's userinfo, if any. Sets *hosts and *hlen to the
 * part after the userinfo and *slash to the '/' (or NULL). */
static int parse_authority(const char *rest, rlock__uri *out,
                           const char **hosts, size_t *hlen,
                           const char **slash)
{
    *slash = strchr(rest, '/');
    size_t alen = *slash ? (size_t)(*slash - rest) : strlen(rest);
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (rest[i] == '@')
            at = rest + i;
    *hosts = rest;
    if (at != NULL) {
        int rc = parse_userinfo(rest, (size_t)(at - rest), out);
        if (rc != 0)
            return rc;
        *hosts = at + 1;
    }
    *hlen = alen - (size_t)(*hosts - rest);
    return RLOCK_OK;
}

static int parse_redis(const char *rest, rlock__uri *out)
{
    const char *hosts, *slash;
    size_t hlen;
    int rc = parse_authority(rest, out, &hosts, &hlen, &slash);
    if (rc == 0)
        rc = parse_hostport(hosts, hlen, 6379, &out->host, &out->port);
    if (rc != 0)
        return rc;
    if (slash != NULL && slash[1] != '\0' &&
        parse_number(slash + 1, strlen(slash + 1), 0, INT32_MAX, &out->db) != 0)
        return RLOCK_EINVAL;
    return RLOCK_OK;
}

/* redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]
 * The userinfo is the data nodes' (the master's), as in redis://: a
 * sentinel's own credentials are a setting, not part of the URI. */
/* Parses the comma list "host[:port][,host[:port]...]" of hosts[0..hlen)
 * into a malloc'd *list of at most max nodes, *count of them parsed (what
 * was parsed is kept on failure, for rlock__uri_clear). */
static int parse_node_list(const char *hosts, size_t hlen, int default_port,
                           int max, rlock__uri_node **list, int *count)
{
    int n = 1;
    for (size_t i = 0; i < hlen; i++)
        n += hosts[i] == ',';
    if (n > max)
        return RLOCK_EINVAL;
    *list = rlock__calloc((size_t)n, sizeof(**list));
    if (*list == NULL)
        return RLOCK_ENOMEM;
    const char *p = hosts, *end = hosts + hlen;
    for (int i = 0; i < n; i++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
        int rc = parse_hostport(p, len, default_port, &(*list)[i].host,
                                &(*list)[i].port);
        if (rc != 0)
            return rc;
        *count = i + 1;
        p += len + 1;
    }
    return RLOCK_OK;
}

static int parse_sentinel(const char *rest, rlock__uri *out)
{
    const char *hosts, *slash;
    size_t hlen;
    int rc = parse_authority(rest, out, &hosts, &hlen, &slash);
    if (rc == 0)
        rc = parse_node_list(hosts, hlen, 26379, RLOCK__URI_SENTINELS_MAX,
                             &out->sentinels, &out->nsentinels);
    if (rc != 0)
        return rc;
    /* "/master" or "/master/db": the name may be escaped, never empty */
    if (slash == NULL || slash[1] == '\0' || slash[1] == '/')
        return RLOCK_EINVAL;
    const char *name = slash + 1;
    const char *db = strchr(name, '/');
    size_t nlen = db ? (size_t)(db - name) : strlen(name);
    /* '?' and '#' stay free for a query or fragment some day */
    if (memchr(name, '?', nlen) != NULL || memchr(name, '#', nlen) != NULL)
        return RLOCK_EINVAL;
    out->master = decode(name, nlen, &rc);
    if (out->master == NULL)
        return rc;
    if (db != NULL &&
        parse_number(db + 1, strlen(db + 1), 0, INT32_MAX, &out->db) != 0)
        return RLOCK_EINVAL;
    return RLOCK_OK;
}

/* redis+cluster://[[user]:password@]host[:port][,host[:port]...][/]
 * The userinfo is every node's. */
static int parse_cluster(const char *rest, rlock__uri *out)
{
    const char *hosts, *slash;
    size_t hlen;
    int rc = parse_authority(rest, out, &hosts, &hlen, &slash);
    if (rc == 0)
        rc = parse_node_list(hosts, hlen, 6379, RLOCK__URI_SEEDS_MAX,
                             &out->seeds, &out->nseeds);
    if (rc != 0)
        return rc;
    /* a cluster serves database 0 only: no "/db", "/0" included, so that
     * nobody believes another database was chosen */
    if (slash != NULL && slash[1] != '\0')
        return RLOCK_EINVAL;
    return RLOCK_OK;
}

typedef int (*uri_parser)(const char *rest, rlock__uri *out);

/* Finds the scheme of a TCP URI: a family, an optional 's' for TLS, and a
 * mode, every part matched without regard to case. "valkey" is Redisson's
 * other spelling of "redis" (its RedisURI takes valkey:// and valkeys://);
 * Redisson has no sentinel or cluster URI, so the +sentinel and +cluster
 * forms are rlock's own, and each is spelled both ways, so that a valkey
 * address can change mode as a redis one does. Returns the mode's parser
 * and sets *tls and *skip (the scheme's length), or returns NULL. */
static uri_parser match_scheme(const char *text, bool *tls, size_t *skip)
{
    static const char *const families[] = {"redis", "valkey"};
    static const struct {
        const char *suffix;
        uri_parser parse;
    } modes[] = {
        {"://", parse_redis},
        {"+sentinel://", parse_sentinel},
        {"+cluster://", parse_cluster},
    };
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        size_t n = strlen(families[f]);
        if (strncasecmp(text, families[f], n) != 0)
            continue;
        bool s = text[n] == 's' || text[n] == 'S';
        n += s;
        for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
            size_t k = strlen(modes[m].suffix);
            if (strncasecmp(text + n, modes[m].suffix, k) == 0) {
                *tls = s;
                *skip = n + k;
                return modes[m].parse;
            }
        }
    }
    return NULL;
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
    size_t skip;
    uri_parser parse = match_scheme(text, &out->tls, &skip);
    if (parse != NULL)
        rc = parse(text + skip, out);
    else if (strncasecmp(text, "unix://", 7) == 0)
        rc = parse_unix(text + 7, out);
    else
        rc = RLOCK_EINVAL;
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
    for (int i = 0; i < uri->nsentinels; i++)
        free(uri->sentinels[i].host);
    free(uri->sentinels);
    for (int i = 0; i < uri->nseeds; i++)
        free(uri->seeds[i].host);
    free(uri->seeds);
    free(uri->master);
    memset(uri, 0, sizeof(*uri));
}
