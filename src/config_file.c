/*
 * config_file.c: reads Redisson's JSON config (the format of Redisson's
 * Config.fromJSON and Config.toJSON) into an rlock_config, with jansson.
 * The only library file that includes <jansson.h>.
 *
 * Every key of the file is in exactly one of three sets (README, "Config
 * files"): honoured (mapped onto an rlock_config setter), accepted and
 * ignored (Java-side settings that change nothing a lock writes to Redis),
 * or refused. Refused are unknown keys, wrong types, out-of-range values,
 * Java key stores and the TLS settings with no PEM or OpenSSL equivalent,
 * name or command mappers, the cluster, sentinel,
 * master/slave and replicated server configs, and malformed JSON. A
 * refusal names the file, the line and the key: "FILE:LINE: KEY: why".
 *
 * Lines. jansson reports the line of a parse error but keeps no position
 * for a parsed value, so the file text is scanned a second time by a small
 * tokenizer (scan()) that records the line of every object key under its
 * dotted path ("singleServerConfig.timeout"). The tokenizer knows only
 * strings, brackets, colons and commas, which is all it needs on text that
 * jansson has accepted; run up to a parse error's position, it also tells
 * which key's value was being read there.
 */
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A Redisson config file is a few hundred bytes; anything past this is not
 * one. */
#define CONFIG_FILE_MAX (1024 * 1024)

#define MS_MAX ((int64_t)INT32_MAX)

/* Where one object key of the file starts. */
typedef struct key_line {
    char *path; /* "singleServerConfig.timeout" */
    int line;   /* 1-based */
} key_line;

typedef struct loader {
    const char *file; /* as the caller named it, for messages */
    char *text;
    size_t len;
    key_line *keys; /* in file order */
    size_t nkeys;
    size_t cap;
    rlock_config *cfg;
    char *errbuf;
    size_t errlen;

    /* singleServerConfig's credentials, applied once both are known */
    const char *username;
    const char *password;
} loader;

/* ------------------------------------------------------------------------ */
/* Messages                                                                 */
/* ------------------------------------------------------------------------ */

/* Returns the line of the key at path, or 1 when it was not recorded. */
static int line_of(const loader *ld, const char *path)
{
    for (size_t i = 0; i < ld->nkeys; i++)
        if (strcmp(ld->keys[i].path, path) == 0)
            return ld->keys[i].line;
    return 1;
}

/* Writes "FILE:LINE: PATH: <fmt>" into the caller's errbuf and returns
 * RLOCK_EINVAL. */
static int fail(loader *ld, const char *path, const char *fmt, ...)
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
static int fail_file(loader *ld, int rc, const char *fmt, ...)
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
static const char *type_word(const json_t *v)
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
static int get_int(loader *ld, const char *path, const json_t *v, int64_t lo,
                   int64_t hi, int64_t *out)
{
    if (!json_is_integer(v))
        return fail(ld, path, "must be an integer (got %s)", type_word(v));
    json_int_t n = json_integer_value(v);
    if (n < lo || n > hi)
        return fail(ld, path, "must be from %lld to %lld (got %lld)",
                    (long long)lo, (long long)hi, (long long)n);
    *out = (int64_t)n;
    return RLOCK_OK;
}

/* Reads a string or null (*out NULL) into *out, borrowed from v. */
static int get_string(loader *ld, const char *path, const json_t *v,
                      const char **out)
{
    if (json_is_null(v)) {
        *out = NULL;
        return RLOCK_OK;
    }
    if (!json_is_string(v))
        return fail(ld, path, "must be a string or null (got %s)",
                    type_word(v));
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fail(ld, path, "must not contain a NUL character");
    *out = json_string_value(v);
    return RLOCK_OK;
}

/* Maps a setter's failure to a message naming path. */
static int setter(loader *ld, const char *path, int rc)
{
    if (rc == RLOCK_ENOMEM)
        return fail_file(ld, RLOCK_ENOMEM, "out of memory");
    if (rc != 0)
        return fail(ld, path, "%s", rlock_strerror(rc));
    return RLOCK_OK;
}

/* ------------------------------------------------------------------------ */
/* Keys                                                                     */
/* ------------------------------------------------------------------------ */

typedef enum {
    IGNORE_INT,    /* integer: accepted, changes nothing here */
    IGNORE_BOOL,   /* true or false */
    IGNORE_STRING, /* string or null */
    IGNORE_ANY,    /* anything: Java objects such as codecs */
    DEFAULT_ONLY,  /* null or Redisson's default class only */
    NOT_SUPPORTED, /* null only: a server mode rlock does not have yet */
    HONOURED,      /* handled by the table's function */
} key_kind;

typedef struct key_rule {
    const char *name;
    key_kind kind;
    int (*apply)(loader *ld, const char *path, const json_t *v);
} key_rule;

static int apply_watchdog(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = get_int(ld, path, v, 30, MS_MAX, &ms);
    return rc ? rc
              : setter(ld, path,
                       rlock_config_set_watchdog_timeout(ld->cfg, ms));
}

static int apply_fair_wait(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = get_int(ld, path, v, 1, MS_MAX, &ms);
    return rc ? rc
              : setter(ld, path,
                       rlock_config_set_fair_wait_timeout(ld->cfg, ms));
}

static int apply_connect_timeout(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = get_int(ld, path, v, 1, MS_MAX, &ms);
    return rc ? rc
              : setter(ld, path, rlock_config_set_connect_timeout(ld->cfg, ms));
}

static int apply_timeout(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = get_int(ld, path, v, 1, MS_MAX, &ms);
    return rc ? rc
              : setter(ld, path, rlock_config_set_command_timeout(ld->cfg, ms));
}

static int apply_retry_attempts(loader *ld, const char *path, const json_t *v)
{
    int64_t n = 0;
    int rc = get_int(ld, path, v, 0, 100, &n);
    return rc ? rc
              : setter(ld, path,
                       rlock_config_set_retry_attempts(ld->cfg, (int)n));
}

static int apply_retry_interval(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = get_int(ld, path, v, 0, MS_MAX, &ms);
    return rc ? rc
              : setter(ld, path, rlock_config_set_retry_interval(ld->cfg, ms));
}

/* connectionPoolSize is Redisson's upper bound on command connections
 * (default 64); rlock keeps a fixed set, opened as they are first used, of
 * at most 64, so larger pools are capped there. */
static int apply_pool_size(loader *ld, const char *path, const json_t *v)
{
    int64_t n = 0;
    int rc = get_int(ld, path, v, 1, INT32_MAX, &n);
    if (rc == 0 && n > 64)
        n = 64;
    return rc ? rc
              : setter(ld, path, rlock_config_set_connections(ld->cfg, (int)n));
}

static int apply_database(loader *ld, const char *path, const json_t *v)
{
    int64_t db = 0;
    int rc = get_int(ld, path, v, 0, INT32_MAX, &db);
    return rc ? rc
              : setter(ld, path, rlock_config_set_database(ld->cfg, (int)db));
}

/* address: "redis://host:port" as Redisson writes it. Redisson itself
 * refuses an address without a scheme, and so do we; "valkey://" and
 * "valkeys://" are its other spellings of "redis://" and "rediss://". */
static int apply_address(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    if (strstr(s, "://") == NULL)
        return fail(ld, path, "\"%s\" needs a scheme, as in \"redis://%s\"", s,
                    s);
    char *uri = NULL;
    bool valkeys = strncasecmp(s, "valkeys://", 10) == 0;
    if (valkeys || strncasecmp(s, "valkey://", 9) == 0) {
        size_t n = strlen(s) + 1;
        uri = rlock__malloc(n);
        if (uri == NULL)
            return fail_file(ld, RLOCK_ENOMEM, "out of memory");
        snprintf(uri, n, "%s%s", valkeys ? "rediss://" : "redis://",
                 s + (valkeys ? 10 : 9));
    }
    rc = rlock_config_set_server(ld->cfg, uri ? uri : s);
    free(uri);
    if (rc == RLOCK_EINVAL)
        return fail(ld, path,
                    "\"%s\" is not a redis[s]://[[user]:password@]host[:port]"
                    "[/db] or unix:///path address",
                    s);
    return setter(ld, path, rc);
}

/* ---- TLS: Redisson names Java key stores; rlock reads PEM files ---------- */

/* Returns the file a key store setting names, or NULL after failing: a
 * plain path or a "file:" URL (how Redisson writes a java.net.URL) whose
 * name ends in .pem, .crt, .cer or .key. Other URLs (classpath:, http:)
 * and Java key stores (.jks, .p12, .pfx, anything else) are refused by
 * name. *out is borrowed from s. */
static int key_store_path(loader *ld, const char *path, const char *s,
                          const char **out)
{
    static const char *const pem[] = {".pem", ".crt", ".cer", ".key"};
    const char *file = s;
    if (strncasecmp(file, "file://", 7) == 0) {
        file += 7;
        if (strncasecmp(file, "localhost/", 10) == 0)
            file += 9;
    } else if (strncasecmp(file, "file:", 5) == 0) {
        file += 5;
    } else if (strstr(file, ":") != NULL && file[0] != '/') {
        return fail(ld, path,
                    "\"%s\" is not supported: rlock reads a file path or a "
                    "file: URL, not a Java resource",
                    s);
    }
    if (*file == '\0')
        return fail(ld, path, "must name a file");
    const char *dot = strrchr(file, '.');
    for (size_t i = 0; dot != NULL && i < sizeof(pem) / sizeof(pem[0]); i++)
        if (strcasecmp(dot, pem[i]) == 0) {
            *out = file;
            return RLOCK_OK;
        }
    return fail(ld, path,
                "\"%s\" is not supported: rlock reads PEM files (.pem, .crt, "
                ".cer or .key), not Java key stores (JKS, PKCS#12); convert "
                "it with keytool and openssl",
                s);
}

static int apply_truststore(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL, *file = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    rc = key_store_path(ld, path, s, &file);
    return rc ? rc
              : setter(ld, path, rlock_config_set_tls_ca_file(ld->cfg, file));
}

/* sslKeystore: one PEM file holding the client certificate and its key, as
 * a Java key store holds both. */
static int apply_keystore(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL, *file = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    rc = key_store_path(ld, path, s, &file);
    return rc ? rc
              : setter(ld, path,
                       rlock_config_set_tls_client_cert(ld->cfg, file, file));
}

/* A key store password: PEM trust files have none, and rlock reads only
 * unencrypted keys, so null (or "") is all that fits. */
static int apply_store_password(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL || *s == '\0')
        return rc;
    return fail(ld, path,
                "is not supported: rlock reads PEM files, which take no "
                "password (decrypt the key with openssl; leave it out or "
                "null)");
}

/* Redisson 3.x: false checks the CA but not the host name. */
static int apply_endpoint_identification(loader *ld, const char *path,
                                         const json_t *v)
{
    if (!json_is_boolean(v))
        return fail(ld, path, "must be true or false (got %s)", type_word(v));
    return setter(ld, path,
                  rlock_config_set_tls_verify(
                      ld->cfg, json_is_true(v) ? RLOCK_TLS_VERIFY_FULL
                                               : RLOCK_TLS_VERIFY_CA_ONLY));
}

/* Newer Redisson: STRICT, CA_ONLY or NONE (SslVerificationMode). */
static int apply_verification_mode(loader *ld, const char *path,
                                   const json_t *v)
{
    static const struct {
        const char *name;
        int mode;
    } modes[] = {{"STRICT", RLOCK_TLS_VERIFY_FULL},
                 {"CA_ONLY", RLOCK_TLS_VERIFY_CA_ONLY},
                 {"NONE", RLOCK_TLS_VERIFY_NONE_INSECURE}};
    const char *s = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(s, modes[i].name) == 0)
            return setter(ld, path,
                          rlock_config_set_tls_verify(ld->cfg, modes[i].mode));
    return fail(ld, path, "must be STRICT, CA_ONLY or NONE (got \"%s\")", s);
}

/* sslProvider picks Java's TLS engine; rlock always uses OpenSSL, so both
 * of Redisson's values (toJSON writes "JDK") mean the same here. */
static int apply_ssl_provider(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL || strcmp(s, "JDK") == 0 ||
        strcmp(s, "OPENSSL") == 0)
        return rc;
    return fail(ld, path, "must be JDK or OPENSSL (got \"%s\")", s);
}

/* What has no PEM or OpenSSL equivalent here: null only. */
static int apply_tls_null_only(loader *ld, const char *path, const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    return fail(ld, path,
                "is not supported: rlock uses OpenSSL's TLS 1.2 and 1.3 with "
                "its default ciphers, and PEM files (leave it out or null)");
}

static int apply_username(loader *ld, const char *path, const json_t *v)
{
    return get_string(ld, path, v, &ld->username);
}

static int apply_password(loader *ld, const char *path, const json_t *v)
{
    return get_string(ld, path, v, &ld->password);
}

static int apply_client_name(loader *ld, const char *path, const json_t *v)
{
    const char *name = NULL;
    int rc = get_string(ld, path, v, &name);
    if (rc != 0 || name == NULL || *name == '\0')
        return rc; /* null or "": no CLIENT SETNAME, as in Redisson */
    rc = rlock_config_set_client_name(ld->cfg, name);
    if (rc == RLOCK_EINVAL)
        return fail(ld, path,
                    "must be printable ASCII without spaces (Redis refuses "
                    "other client names)");
    return setter(ld, path, rc);
}

static int apply_single_server(loader *ld, const char *path, const json_t *v);

/* Redisson's Config: the top level of the file. */
static const key_rule top_rules[] = {
    {"singleServerConfig", HONOURED, apply_single_server},
    {"lockWatchdogTimeout", HONOURED, apply_watchdog},
    {"clusterServersConfig", NOT_SUPPORTED, NULL},
    {"sentinelServersConfig", NOT_SUPPORTED, NULL},
    {"masterSlaveServersConfig", NOT_SUPPORTED, NULL},
    {"replicatedServersConfig", NOT_SUPPORTED, NULL},
    {"threads", IGNORE_INT, NULL},
    {"nettyThreads", IGNORE_INT, NULL},
    {"codec", IGNORE_ANY, NULL},
    {"transportMode", IGNORE_STRING, NULL},
    {"referenceEnabled", IGNORE_BOOL, NULL},
    {"checkLockSyncedSlaves", IGNORE_BOOL, NULL},
    {"slavesSyncTimeout", IGNORE_INT, NULL},
    {"reliableTopicWatchdogTimeout", IGNORE_INT, NULL},
    {"keepPubSubOrder", IGNORE_BOOL, NULL},
    {"useScriptCache", IGNORE_BOOL, NULL},
    {"minCleanUpDelay", IGNORE_INT, NULL},
    {"maxCleanUpDelay", IGNORE_INT, NULL},
    {"cleanUpKeysAmount", IGNORE_INT, NULL},
    {"useThreadClassLoader", IGNORE_BOOL, NULL},
    {"lazyInitialization", IGNORE_BOOL, NULL},
    {"protocol", IGNORE_STRING, NULL},
    {"lockWatchdogBatchSize", IGNORE_INT, NULL},
    {"fairLockWaitTimeout", HONOURED, apply_fair_wait},
    {"nettyHook", IGNORE_ANY, NULL},
    {"connectionListener", IGNORE_ANY, NULL},
    {"addressResolverGroupFactory", IGNORE_ANY, NULL},
    {"nettyExecutor", IGNORE_ANY, NULL},
    {"executor", IGNORE_ANY, NULL},
    {"eventLoopGroup", IGNORE_ANY, NULL},
    {NULL, HONOURED, NULL},
};

/* Redisson's SingleServerConfig and the BaseConfig it extends. */
static const key_rule single_rules[] = {
    {"address", HONOURED, apply_address},
    {"username", HONOURED, apply_username},
    {"password", HONOURED, apply_password},
    {"database", HONOURED, apply_database},
    {"connectTimeout", HONOURED, apply_connect_timeout},
    {"timeout", HONOURED, apply_timeout},
    {"retryAttempts", HONOURED, apply_retry_attempts},
    {"retryInterval", HONOURED, apply_retry_interval},
    {"clientName", HONOURED, apply_client_name},
    {"connectionPoolSize", HONOURED, apply_pool_size},
    {"subscriptionsPerConnection", IGNORE_INT, NULL},
    {"subscriptionConnectionPoolSize", IGNORE_INT, NULL},
    {"subscriptionConnectionMinimumIdleSize", IGNORE_INT, NULL},
    {"connectionMinimumIdleSize", IGNORE_INT, NULL},
    {"idleConnectionTimeout", IGNORE_INT, NULL},
    {"pingConnectionInterval", IGNORE_INT, NULL},
    {"pingTimeout", IGNORE_INT, NULL},
    {"dnsMonitoringInterval", IGNORE_INT, NULL},
    {"subscriptionTimeout", IGNORE_INT, NULL},
    {"reconnectionTimeout", IGNORE_INT, NULL},
    {"failedAttempts", IGNORE_INT, NULL},
    {"tcpKeepAliveCount", IGNORE_INT, NULL},
    {"tcpKeepAliveIdle", IGNORE_INT, NULL},
    {"tcpKeepAliveInterval", IGNORE_INT, NULL},
    {"tcpUserTimeout", IGNORE_INT, NULL},
    {"keepAlive", IGNORE_BOOL, NULL},
    {"tcpNoDelay", IGNORE_BOOL, NULL},
    {"sslEnableEndpointIdentification", HONOURED,
     apply_endpoint_identification},
    {"sslVerificationMode", HONOURED, apply_verification_mode},
    {"sslProvider", HONOURED, apply_ssl_provider},
    {"sslTruststore", HONOURED, apply_truststore},
    {"sslTruststorePassword", HONOURED, apply_store_password},
    {"sslKeystore", HONOURED, apply_keystore},
    {"sslKeystorePassword", HONOURED, apply_store_password},
    {"sslKeystoreType", IGNORE_STRING, NULL}, /* the file says its type */
    {"tlsVersion", IGNORE_STRING, NULL},
    {"sslProtocols", HONOURED, apply_tls_null_only},
    {"sslCiphers", HONOURED, apply_tls_null_only},
    {"sslTrustManagerFactory", HONOURED, apply_tls_null_only},
    {"sslKeyManagerFactory", HONOURED, apply_tls_null_only},
    {"retryDelay", IGNORE_ANY, NULL},
    {"reconnectionDelay", IGNORE_ANY, NULL},
    {"nameMapper", DEFAULT_ONLY, NULL},
    {"commandMapper", DEFAULT_ONLY, NULL},
    {"credentialsResolver", DEFAULT_ONLY, NULL},
    {NULL, HONOURED, NULL},
};

/* True when v is null or names one of Redisson's default classes, such as
 * {"class": "org.redisson.api.NameMapper$DefaultNameMapper"}. */
static bool is_default_class(const json_t *v)
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

/* Checks and applies one key of an object ruled by rules. */
static int apply_key(loader *ld, const key_rule *rules, const char *path,
                     const char *key, const json_t *v)
{
    const key_rule *r = rules;
    while (r->name != NULL && strcmp(r->name, key) != 0)
        r++;
    if (r->name == NULL)
        return fail(ld, path, "unknown key");
    switch (r->kind) {
    case HONOURED:
        return r->apply(ld, path, v);
    case IGNORE_INT:
        if (!json_is_integer(v))
            return fail(ld, path, "must be an integer (got %s)", type_word(v));
        return RLOCK_OK;
    case IGNORE_BOOL:
        if (!json_is_boolean(v))
            return fail(ld, path, "must be true or false (got %s)",
                        type_word(v));
        return RLOCK_OK;
    case IGNORE_STRING:
        if (!json_is_string(v) && !json_is_null(v))
            return fail(ld, path, "must be a string or null (got %s)",
                        type_word(v));
        return RLOCK_OK;
    case IGNORE_ANY:
        return RLOCK_OK;
    case DEFAULT_ONLY:
        if (!is_default_class(v))
            return fail(ld, path,
                        "is not supported: rlock uses lock names, commands "
                        "and credentials as they are (leave it out or null)");
        return RLOCK_OK;
    case NOT_SUPPORTED:
        if (!json_is_null(v))
            return fail(ld, path,
                        "is not supported yet: rlock talks to a single "
                        "server (singleServerConfig)");
        return RLOCK_OK;
    }
    return fail(ld, path, "unknown key");
}

/* Applies every key of object obj (at path prefix, "" for the top). */
static int apply_object(loader *ld, const key_rule *rules, const char *prefix,
                        const json_t *obj)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        size_t n = strlen(prefix) + strlen(key) + 2;
        char *path = rlock__malloc(n);
        if (path == NULL)
            return fail_file(ld, RLOCK_ENOMEM, "out of memory");
        snprintf(path, n, "%s%s%s", prefix, *prefix ? "." : "", key);
        int rc = apply_key(ld, rules, path, key, v);
        free(path);
        if (rc != 0)
            return rc;
    }
    return RLOCK_OK;
}

static int apply_single_server(loader *ld, const char *path, const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    if (!json_is_object(v))
        return fail(ld, path, "must be an object (got %s)", type_word(v));
    int rc = apply_object(ld, single_rules, path, v);
    if (rc != 0)
        return rc;
    /* Redisson sends AUTH only with a password; "" counts as none */
    const char *user = ld->username && *ld->username ? ld->username : NULL;
    const char *password = ld->password && *ld->password ? ld->password : NULL;
    if (password == NULL) {
        if (user != NULL)
            return fail(ld, "singleServerConfig.username",
                        "needs a password (singleServerConfig.password)");
        return RLOCK_OK;
    }
    return setter(ld, "singleServerConfig.password",
                  rlock_config_set_credentials(ld->cfg, user, password));
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

/* Reads the whole file into ld->text. */
static int read_file(loader *ld)
{
    FILE *f = fopen(ld->file, "rb");
    if (f == NULL)
        return fail_file(ld, RLOCK_EINVAL, "cannot open: %s", strerror(errno));
    size_t cap = 4096;
    ld->text = rlock__malloc(cap);
    int rc = ld->text ? RLOCK_OK : RLOCK_ENOMEM;
    while (rc == 0) {
        if (ld->len == cap) {
            if (cap > CONFIG_FILE_MAX) {
                rc = fail_file(ld, RLOCK_EINVAL,
                               "larger than %d bytes: not a config file",
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
                rc = fail_file(ld, RLOCK_EINVAL, "cannot read: %s",
                               strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc == RLOCK_ENOMEM)
        fail_file(ld, rc, "out of memory");
    return rc;
}

/* Reports a jansson parse error with its line and the key being read. */
static int fail_parse(loader *ld, const json_error_t *err)
{
    char *where = NULL;
    size_t pos = err->position > 0 ? (size_t)err->position : 0;
    if (scan(ld, pos, false, &where) != 0)
        return fail_file(ld, RLOCK_ENOMEM, "out of memory");
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
        return fail_file(&ld, RLOCK_EINVAL, "no file or no result pointer");
    rc = read_file(&ld);
    if (rc == 0) {
        json_error_t err;
        root = json_loadb(ld.text, ld.len, JSON_REJECT_DUPLICATES, &err);
        if (root == NULL)
            rc = fail_parse(&ld, &err);
    }
    if (rc == 0 && scan(&ld, ld.len, true, NULL) != 0)
        rc = fail_file(&ld, RLOCK_ENOMEM, "out of memory");
    if (rc == 0 && !json_is_object(root))
        rc = fail(&ld, "(top level)", "must be a JSON object (got %s)",
                  type_word(root));
    if (rc == 0 && (rc = rlock_config_new(&ld.cfg)) != 0)
        fail_file(&ld, rc, "out of memory");
    if (rc == 0)
        rc = apply_object(&ld, top_rules, "", root);

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
