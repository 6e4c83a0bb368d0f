/*
 * api/config_file.c: reads Redisson's JSON config (the format of Redisson's
 * Config.fromJSON and Config.toJSON) into an rlock_config, with jansson.
 * It and the files of what each key becomes (config_keys.c, config_base.c,
 * config_cluster.c) are the only library files that include <jansson.h>,
 * through config_file.h.
 *
 * Here: reading the file, the line of every key, messages, value checks,
 * the lists of server addresses (a Sentinel setup's sentinels, a cluster's
 * nodes) and the rule engine that runs config_keys.c's tables. A refusal
 * names the file, the line and the key: "FILE:LINE: KEY: why"; malformed
 * JSON is refused with the line and the key being read.
 *
 * Lines. jansson reports the line of a parse error but keeps no position
 * for a parsed value, so the file text is scanned a second time by a small
 * tokenizer (scan()) that records the line of every object key under its
 * dotted path ("singleServerConfig.timeout"). The tokenizer knows only
 * strings, brackets, colons and commas, which is all it needs on text that
 * jansson has accepted; run up to a parse error's position, it also tells
 * which key's value was being read there.
 *
 * Public functions in src/api, beside config.c.
 */
#include "config_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A Redisson config file is a few hundred bytes; anything past this is not
 * one. */
#define CONFIG_FILE_MAX (1024 * 1024)

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* Returns the line of the key at path, or 1 when it was not recorded. An
 * array element ("key[2]") has the line of its array's key. */
static int line_of(const loader *ld, const char *path)
{
    const char *bracket = strchr(path, '[');
    size_t n = bracket ? (size_t)(bracket - path) : strlen(path);
    for (size_t i = 0; i < ld->nkeys; i++)
        if (strncmp(ld->keys[i].path, path, n) == 0 &&
            ld->keys[i].path[n] == '\0')
            return ld->keys[i].line;
    return 1;
}

/* Writes "FILE:LINE: PATH: <fmt>" into the caller's errbuf and returns
 * RLOCK_EINVAL. */
int rlock__cf_fail(loader *ld, const char *path, const char *fmt, ...)
{
    if (ld->errbuf == NULL || ld->errlen == 0)
        return RLOCK_EINVAL;
    int n = snprintf(ld->errbuf, ld->errlen, "%s:%d: %s: ", ld->file,
                     line_of(ld, path), path);
    if (n >= 0 && (size_t)n < ld->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->errbuf + n, ld->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return RLOCK_EINVAL;
}

/* Writes a message about the file as a whole (no line, no key). */
int rlock__cf_fail_file(loader *ld, int rc, const char *fmt, ...)
{
    if (ld->errbuf == NULL || ld->errlen == 0)
        return rc;
    int n = snprintf(ld->errbuf, ld->errlen, "%s: ", ld->file);
    if (n >= 0 && (size_t)n < ld->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->errbuf + n, ld->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Returns a word for v's JSON type, for "must be X (got Y)" messages. */
const char *rlock__cf_type_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a fractional number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

/* ------------------------------------------------------------------------ */
/* Key positions                                                            */
/* ------------------------------------------------------------------------ */

typedef struct frame {
    bool object;
    bool want_key; /* object: the next string is a key */
    char *key;     /* object: the key being read, or NULL */
    size_t index;  /* array: the element being read */
} frame;

/* Appends the path of frames[0..depth) to buf (grown with realloc);
 * returns 0 or RLOCK_ENOMEM. */
static int path_of(const frame *frames, size_t depth, char **buf)
{
    size_t len = 1;
    for (size_t i = 0; i < depth; i++)
        len += frames[i].object
                   ? (frames[i].key ? strlen(frames[i].key) + 1 : 0)
                   : 24;
    char *p = rlock__malloc(len);
    if (p == NULL)
        return RLOCK_ENOMEM;
    size_t at = 0;
    p[0] = '\0';
    for (size_t i = 0; i < depth; i++) {
        if (frames[i].object && frames[i].key != NULL)
            at += (size_t)snprintf(p + at, len - at, "%s%s", at ? "." : "",
                                   frames[i].key);
        else if (!frames[i].object)
            at += (size_t)snprintf(p + at, len - at, "[%zu]", frames[i].index);
    }
    *buf = p;
    return RLOCK_OK;
}

/* Returns the allocated text of a JSON string token tok[0..n) (quotes
 * included), decoded by jansson; an undecodable token gives its raw bytes
 * between the quotes. NULL when out of memory. */
static char *decode_key(const char *tok, size_t n)
{
    json_error_t err;
    json_t *s = json_loadb(tok, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    char *out = NULL;
    if (s != NULL && json_is_string(s)) {
        out = rlock__strdup(json_string_value(s));
    } else {
        size_t len = n > 1 && tok[n - 1] == '"' ? n - 2 : n - 1;
        out = rlock__malloc(len + 1);
        if (out != NULL) {
            memcpy(out, tok + 1, len);
            out[len] = '\0';
        }
    }
    json_decref(s);
    return out;
}

static int record_key(loader *ld, char *path, int line)
{
    if (ld->nkeys == ld->cap) {
        size_t cap = ld->cap ? ld->cap * 2 : 32;
        key_line *grown = rlock__realloc(ld->keys, cap * sizeof(*grown));
        if (grown == NULL)
            return RLOCK_ENOMEM;
        ld->keys = grown;
        ld->cap = cap;
    }
    ld->keys[ld->nkeys].path = path;
    ld->keys[ld->nkeys].line = line;
    ld->nkeys++;
    return RLOCK_OK;
}

/* Scans ld->text[0..stop). With record, stores every key's path and line.
 * With where non-NULL, sets *where to the path of the value being read at
 * stop (malloc'd; "" at top level). Returns 0 or RLOCK_ENOMEM. */
static int scan(loader *ld, size_t stop, bool record, char **where)
{
    const char *t = ld->text;
    frame *frames = NULL;
    size_t depth = 0, cap = 0;
    int line = 1, rc = RLOCK_OK;

    if (stop > ld->len)
        stop = ld->len;
    for (size_t i = 0; rc == 0 && i < stop; i++) {
        char ch = t[i];
        frame *top = depth ? &frames[depth - 1] : NULL;
        if (ch == '\n') {
            line++;
        } else if (ch == '"') {
            size_t j = i + 1;
            int start_line = line;
            while (j < ld->len && t[j] != '"') {
                if (t[j] == '\\' && j + 1 < ld->len)
                    j++;
                if (t[j] == '\n')
                    line++;
                j++;
            }
            size_t end = j < ld->len ? j + 1 : j;
            if (top != NULL && top->object && top->want_key && end <= stop) {
                char *key = decode_key(t + i, end - i);
                if (key == NULL) {
                    rc = RLOCK_ENOMEM;
                    break;
                }
                free(top->key);
                top->key = key;
                top->want_key = false;
                char *path = NULL;
                if (record && (rc = path_of(frames, depth, &path)) == 0 &&
                    (rc = record_key(ld, path, start_line)) != 0)
                    free(path);
            }
            i = end - 1;
        } else if (ch == '{' || ch == '[') {
            if (depth == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                frame *grown = rlock__realloc(frames, ncap * sizeof(*grown));
                if (grown == NULL) {
                    rc = RLOCK_ENOMEM;
                    break;
                }
                frames = grown;
                cap = ncap;
            }
            frames[depth++] =
                (frame){.object = ch == '{', .want_key = ch == '{'};
        } else if ((ch == '}' || ch == ']') && depth > 0) {
            free(frames[--depth].key);
        } else if (ch == ',' && top != NULL) {
            if (top->object)
                top->want_key = true;
            else
                top->index++;
        }
    }
    if (rc == 0 && where != NULL)
        rc = path_of(frames, depth, where);
    while (depth > 0)
        free(frames[--depth].key);
    free(frames);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

/* Reads an integer in [lo, hi] into *out, or fails naming path. */
int rlock__cf_get_int(loader *ld, const char *path, const json_t *v, int64_t lo,
                      int64_t hi, int64_t *out)
{
    if (!json_is_integer(v))
        return rlock__cf_fail(ld, path, "must be an integer (got %s)",
                              rlock__cf_type_word(v));
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi)
        return rlock__cf_fail(ld, path, "must be from %lld to %lld (got %lld)",
                              (long long)lo, (long long)hi, (long long)n);
    *out = (int64_t)n;
    return RLOCK_OK;
}

/* Reads a string or null (*out NULL) into *out, borrowed from v. */
int rlock__cf_get_string(loader *ld, const char *path, const json_t *v,
                         const char **out)
{
    if (json_is_null(v)) {
        *out = NULL;
        return RLOCK_OK;
    }
    if (!json_is_string(v))
        return rlock__cf_fail(ld, path, "must be a string or null (got %s)",
                              rlock__cf_type_word(v));
    if (strlen(json_string_value(v)) != json_string_length(v))
        return rlock__cf_fail(ld, path, "must not contain a NUL character");
    *out = json_string_value(v);
    return RLOCK_OK;
}

/* Maps a setter's failure to a message naming path. */
int rlock__cf_setter(loader *ld, const char *path, int rc)
{
    if (rc == RLOCK_ENOMEM)
        return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
    if (rc != 0)
        return rlock__cf_fail(ld, path, "%s", rlock_strerror(rc));
    return RLOCK_OK;
}

int rlock__cf_apply_ms(loader *ld, const char *path, const json_t *v,
                       int64_t lo, int (*set)(rlock_config *cfg, int64_t ms))
{
    int64_t ms = 0;
    int rc = rlock__cf_get_int(ld, path, v, lo, RLOCK__CF_MS_MAX, &ms);
    return rc ? rc : rlock__cf_setter(ld, path, set(ld->cfg, ms));
}

/* ------------------------------------------------------------------------ */
/* True when v is null or names one of Redisson's default classes, such as
 * {"class": "org.redisson.api.NameMapper$DefaultNameMapper"}. */
bool rlock__cf_is_default_class(const json_t *v)
{
    if (json_is_null(v))
        return true;
    const json_t *cls = json_is_object(v) ? json_object_get(v, "class") : v;
    if (!json_is_string(cls) || (json_is_object(v) && json_object_size(v) != 1))
        return false;
    const char *name = json_string_value(cls);
    const char *dot = strrchr(name, '.');
    const char *dollar = strrchr(name, '$');
    const char *base = dollar ? dollar + 1 : dot ? dot + 1 : name;
    return strncmp(base, "Default", 7) == 0;
}

/* ------------------------------------------------------------------------ */
/* Lists of server addresses                                                */
/* ------------------------------------------------------------------------ */

/* Appends the canonical "host:port" of one address of list w to buf
 * (grown as needed), checking that it is a plain redis:// or rediss://
 * address like the others (*tls: -1 until the first one says). */
static int append_address(loader *ld, const char *path, const json_t *v,
                          const rlock__cf_address_list *w, int *tls,
                          char **buf, size_t *len)
{
    const char *s = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0)
        return rc;
    if (s == NULL || strstr(s, "://") == NULL)
        return rlock__cf_fail(ld, path,
                              "must be an address such as \"%s\"",
                              w->example);
    bool valkey = strncasecmp(s, "valkey", 6) == 0;
    char *text = NULL;
    if (valkey) { /* Redisson's other spelling of redis[s]:// */
        size_t n = strlen(s);
        text = rlock__malloc(n);
        if (text == NULL)
            return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
        snprintf(text, n, "redis%s", s + 6);
    }
    rlock__uri u;
    rc = rlock__uri_parse(text ? text : s, &u);
    free(text);
    if (rc == RLOCK_ENOMEM)
        return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
    if (rc != 0 || u.host == NULL)
        rc = rlock__cf_fail(
            ld, path, "\"%s\" is not a redis[s]://host[:port] address", s);
    else if (u.password != NULL || u.db != 0)
        rc = rlock__cf_fail(ld, path,
                            "\"%s\": a %s address takes no password "
                            "or database (%s)",
                            s, w->what, w->no_secrets);
    else if (*tls >= 0 && *tls != u.tls)
        rc = rlock__cf_fail(ld, path,
                            "\"%s\" mixes redis:// and rediss:// %ss", s,
                            w->what);
    if (rc == 0) {
        *tls = u.tls;
        size_t need = *len + strlen(u.host) + 16;
        char *grown = rlock__realloc(*buf, need);
        if (grown == NULL) {
            rc = rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
        } else {
            *buf = grown;
            *len +=
                (size_t)snprintf(grown + *len, need - *len,
                                 strchr(u.host, ':') ? "%s[%s]:%d" : "%s%s:%d",
                                 *len ? "," : "", u.host, u.port);
        }
    }
    rlock__uri_clear(&u);
    return rc;
}

/* Reads the addresses of list w (the JSON array v, at path.<w->key>) into
 * a new "redis+<scheme>://host:port,..." URI ("rediss+" when they are
 * rediss://) in *uri, of *size bytes with room of them spare for the
 * caller to append. Returns the URI's length, or a negative code with the
 * message written and *uri NULL. The sentinels and a cluster's nodes are
 * read alike so that their messages and checks stay the same. */
int rlock__cf_address_uri(loader *ld, const char *path, const json_t *v,
                          const rlock__cf_address_list *w, size_t room,
                          char **uri, size_t *size)
{
    char *hosts = NULL;
    size_t len = 0;
    int tls = -1, rc = RLOCK_OK;
    *uri = NULL;
    for (size_t i = 0; rc == 0 && i < json_array_size(v); i++) {
        char item[64];
        snprintf(item, sizeof(item), "%s.%s[%zu]", path, w->key, i);
        rc = append_address(ld, item, json_array_get(v, i), w, &tls, &hosts,
                            &len);
    }
    size_t n = len + room + 32;
    if (rc == 0 && (*uri = rlock__malloc(n)) == NULL)
        rc = rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
    if (rc == 0) {
        *size = n;
        rc = snprintf(*uri, n, "%s+%s://%s", tls == 1 ? "rediss" : "redis",
                      w->scheme, hosts);
    }
    free(hosts);
    return rc;
}

/* Checks and applies one key of an object ruled by the NULL-terminated
 * list of tables rules (the first that names the key rules it). */
static int apply_key(loader *ld, const key_rule *const *rules, const char *path,
                     const char *key, const json_t *v)
{
    const key_rule *r = NULL;
    for (; *rules != NULL && r == NULL; rules++)
        for (const key_rule *t = *rules; r == NULL && t->name != NULL; t++)
            if (strcmp(t->name, key) == 0)
                r = t;
    if (r == NULL)
        return rlock__cf_fail(ld, path, "unknown key");
    switch (r->kind) {
    case HONOURED:
        return r->apply(ld, path, v);
    case IGNORE_INT:
        if (!json_is_integer(v))
            return rlock__cf_fail(ld, path, "must be an integer (got %s)",
                                  rlock__cf_type_word(v));
        return RLOCK_OK;
    case IGNORE_BOOL:
        if (!json_is_boolean(v))
            return rlock__cf_fail(ld, path, "must be true or false (got %s)",
                                  rlock__cf_type_word(v));
        return RLOCK_OK;
    case IGNORE_STRING:
        if (!json_is_string(v) && !json_is_null(v))
            return rlock__cf_fail(ld, path, "must be a string or null (got %s)",
                                  rlock__cf_type_word(v));
        return RLOCK_OK;
    case IGNORE_ANY:
        return RLOCK_OK;
    case DEFAULT_ONLY:
        if (!rlock__cf_is_default_class(v))
            return rlock__cf_fail(
                ld, path,
                "is not supported: rlock uses lock names, commands "
                "and credentials as they are (leave it out or null)");
        return RLOCK_OK;
    case NOT_SUPPORTED:
        if (!json_is_null(v))
            return rlock__cf_fail(
                ld, path,
                "is not supported yet: rlock talks to a single "
                "server (singleServerConfig), to a master behind "
                "Sentinel (sentinelServersConfig) or to a cluster "
                "(clusterServersConfig)");
        return RLOCK_OK;
    }
    return rlock__cf_fail(ld, path, "unknown key");
}

/* Applies every key of object obj (at path prefix, "" for the top). */
int rlock__cf_apply_object(loader *ld, const key_rule *const *rules,
                           const char *prefix, const json_t *obj)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t n = strlen(prefix) + strlen(key) + 2;
        char *path = rlock__malloc(n);
        if (path == NULL)
            return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
        snprintf(path, n, "%s%s%s", prefix, *prefix ? "." : "", key);
        int rc = apply_key(ld, rules, path, key, v);
        free(path);
        if (rc != 0)
            return rc;
    }
    return RLOCK_OK;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

/* Reads the whole file into ld->text. */
static int read_file(loader *ld)
{
    FILE *f = fopen(ld->file, "rb");
    if (f == NULL)
        return rlock__cf_fail_file(ld, RLOCK_EINVAL, "cannot open: %s",
                                   strerror(errno));
    size_t cap = 4096;
    ld->text = rlock__malloc(cap);
    int rc = ld->text ? RLOCK_OK : RLOCK_ENOMEM;
    while (rc == 0) {
        if (ld->len == cap) {
            if (cap > CONFIG_FILE_MAX) {
                rc = rlock__cf_fail_file(
                    ld, RLOCK_EINVAL, "larger than %d bytes: not a config file",
                    CONFIG_FILE_MAX);
                break;
            }
            char *grown = rlock__realloc(ld->text, cap * 2);
            if (grown == NULL) {
                rc = RLOCK_ENOMEM;
                break;
            }
            ld->text = grown;
            cap *= 2;
        }
        size_t n = fread(ld->text + ld->len, 1, cap - ld->len, f);
        ld->len += n;
        if (n == 0) {
            if (ferror(f))
                rc = rlock__cf_fail_file(ld, RLOCK_EINVAL, "cannot read: %s",
                                         strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc == RLOCK_ENOMEM)
        rlock__cf_fail_file(ld, rc, "out of memory");
    return rc;
}

/* Reports a jansson parse error with its line and the key being read. */
static int fail_parse(loader *ld, const json_error_t *err)
{
    char *where = NULL;
    size_t pos = err->position > 0 ? (size_t)err->position : 0;
    if (scan(ld, pos, false, &where) != 0)
        return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
    int line = err->line;
    if (line <= 0) {
        line = 1;
        for (size_t i = 0; i < pos && i < ld->len; i++)
            line += ld->text[i] == '\n';
    }
    if (ld->errbuf != NULL && ld->errlen > 0)
        snprintf(ld->errbuf, ld->errlen, "%s:%d: %s%s%smalformed JSON: %s",
                 ld->file, line, *where ? "in " : "", where, *where ? ": " : "",
                 err->text);
    free(where);
    return RLOCK_EINVAL;
}

int rlock_config_load_file(rlock_config **out, const char *path, char *errbuf,
                           size_t errlen)
{
    loader ld = {
        .file = path ? path : "(null)", .errbuf = errbuf, .errlen = errlen};
    json_t *root = NULL;
    int rc;

    if (errbuf != NULL && errlen > 0)
        errbuf[0] = '\0';
    if (out != NULL)
        *out = NULL;
    if (out == NULL || path == NULL)
        return rlock__cf_fail_file(&ld, RLOCK_EINVAL,
                                   "no file or no result pointer");
    rc = read_file(&ld);
    if (rc == 0) {
        json_error_t err;
        root = json_loadb(ld.text, ld.len, JSON_REJECT_DUPLICATES, &err);
        if (root == NULL)
            rc = fail_parse(&ld, &err);
    }
    if (rc == 0 && scan(&ld, ld.len, true, NULL) != 0)
        rc = rlock__cf_fail_file(&ld, RLOCK_ENOMEM, "out of memory");
    if (rc == 0 && !json_is_object(root))
        rc =
            rlock__cf_fail(&ld, "(top level)", "must be a JSON object (got %s)",
                           rlock__cf_type_word(root));
    if (rc == 0 && (rc = rlock_config_new(&ld.cfg)) != 0)
        rlock__cf_fail_file(&ld, rc, "out of memory");
    if (rc == 0)
        rc = rlock__cf_apply_object(&ld, rlock__cf_top_rules, "", root);

    json_decref(root);
    for (size_t i = 0; i < ld.nkeys; i++)
        free(ld.keys[i].path);
    free(ld.keys);
    if (ld.text != NULL)
        explicit_bzero(ld.text, ld.len); /* it may hold a password */
    free(ld.text);
    if (rc != 0) {
        rlock_config_free(ld.cfg);
        return rc;
    }
    *out = ld.cfg;
    return RLOCK_OK;
}

int rlock_client_connect_config(rlock_client **out, const char *path)
{
    rlock_config *cfg;
    if (out != NULL)
        *out = NULL;
    if (out == NULL || path == NULL)
        return RLOCK_EINVAL;
    int rc = rlock_config_load_file(&cfg, path, NULL, 0);
    if (rc != 0)
        return rc;
    rc = rlock_client_connect_with(out, NULL, cfg);
    rlock_config_free(cfg);
    return rc;
}
