/*
 * api/config_file.h: what the two halves of the JSON config reader share.
 * config_file.c reads the file and owns the machinery (lines, messages,
 * value checks, address lists, the rule engine); config_keys.c and
 * config_cluster.c say what each of Redisson's keys becomes. Nothing else
 * includes this.
 *
 * A header of src/api.
 */
#ifndef RLOCK_CONFIG_FILE_H
#define RLOCK_CONFIG_FILE_H

#include "api/api.h"

#include <jansson.h>

#define RLOCK__CF_MS_MAX ((int64_t)INT32_MAX)

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

    /* the server config's credentials, applied once both are known */
    const char *username;
    const char *password;
    /* sentinelServersConfig's, borrowed from the parsed file likewise */
    const char *sentinel_username;
    const char *sentinel_password;
    const char *master_name;
    const json_t *sentinel_addresses;
    /* clusterServersConfig's nodeAddresses, likewise */
    const json_t *node_addresses;
    const char *server_config; /* the server config applied, or NULL */
} loader;

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

/* The rules of the file's top level (config_keys.c). */
extern const key_rule *const rlock__cf_top_rules[];
/* Redisson's BaseConfig keys, every server config's (config_keys.c). */
extern const key_rule rlock__cf_base_rules[];
/* Checks that v is a server config object and the file's only one. */
int rlock__cf_open_server_config(loader *ld, const char *path,
                                 const json_t *v);
/* Applies the server config's username and password, once both are
 * read. */
int rlock__cf_apply_credentials(loader *ld, const char *path);
/* One list of server addresses in the file: where it is, how messages
 * name its items, and the URI it makes (rlock__cf_address_uri). */
typedef struct rlock__cf_address_list {
    const char *key;        /* "sentinelAddresses", in each item's path */
    const char *scheme;     /* "sentinel": a redis+sentinel:// URI */
    const char *what;       /* "sentinel", an item in messages */
    const char *example;    /* "redis://host:26379" */
    const char *no_secrets; /* where a password goes instead */
} rlock__cf_address_list;
/* Reads list w's addresses (the JSON array v under path) into a new
 * "redis+<scheme>://host:port,..." URI in *uri (caller frees), of *size
 * bytes with room of them spare; returns its length or a negative code
 * with the message written. */
int rlock__cf_address_uri(loader *ld, const char *path, const json_t *v,
                          const rlock__cf_address_list *w, size_t room,
                          char **uri, size_t *size);
/* connectionPoolSize and its namesakes: rlock_config_set_connections(),
 * capped at 64. */
int rlock__cf_apply_pool_size(loader *ld, const char *path, const json_t *v);
/* clusterServersConfig (config_cluster.c). */
int rlock__cf_apply_cluster_servers(loader *ld, const char *path,
                                    const json_t *v);

/* Writes "FILE:LINE: PATH: <fmt>" into the caller's errbuf and returns
 * RLOCK_EINVAL. */
int rlock__cf_fail(loader *ld, const char *path, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);
/* Writes "FILE: <fmt>" (the file as a whole) and returns rc. */
int rlock__cf_fail_file(loader *ld, int rc, const char *fmt, ...)
    RLOCK__PRINTF(3, 4);
/* A word for v's JSON type, for "must be X (got Y)" messages. */
const char *rlock__cf_type_word(const json_t *v);
/* Reads an integer in [lo, hi] into *out, or fails naming path. */
int rlock__cf_get_int(loader *ld, const char *path, const json_t *v, int64_t lo,
                      int64_t hi, int64_t *out);
/* Reads a string or null (*out NULL) into *out, borrowed from v. */
int rlock__cf_get_string(loader *ld, const char *path, const json_t *v,
                         const char **out);
/* Maps a setter's failure to a message naming path. */
int rlock__cf_setter(loader *ld, const char *path, int rc);
/* Reads milliseconds in [lo, RLOCK__CF_MS_MAX] and gives them to set: the
 * shape of most timing keys. */
int rlock__cf_apply_ms(loader *ld, const char *path, const json_t *v,
                       int64_t lo, int (*set)(rlock_config *cfg, int64_t ms));
/* True when v is null or names one of Redisson's default classes. */
bool rlock__cf_is_default_class(const json_t *v);
/* Applies every key of object obj (at path prefix, "" for the top) by the
 * NULL-terminated list of rule tables rules. */
int rlock__cf_apply_object(loader *ld, const key_rule *const *rules,
                           const char *prefix, const json_t *obj);

#endif /* RLOCK_CONFIG_FILE_H */
