/*
 * api/config_keys.c: what each key of Redisson's JSON config becomes here
 * (config_file.c reads the file and runs these rules).
 *
 * Every key is in exactly one of three sets (docs/redisson-config.md, "Redisson config
 * files"): honoured (mapped onto an rlock_config setter), accepted and
 * ignored (Java-side settings that change nothing a lock writes to Redis),
 * or refused. Refused are unknown keys, wrong types, out-of-range values,
 * Java key stores and the TLS settings with no PEM or OpenSSL equivalent,
 * name, command and NAT mappers, the master/slave and replicated server
 * configs, and two server configs in one file.
 *
 * Server configs. singleServerConfig gives one address;
 * sentinelServersConfig gives the sentinels and the master's name, which
 * become a redis+sentinel:// URI (proto/uri.c), so that a file and a URI
 * reach the same client. Both share Redisson's BaseConfig keys
 * (config_base.c); clusterServersConfig is config_cluster.c's.
 *
 * Part of the public config reader in src/api.
 */
#include "config_file.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------ */
/* Settings                                                                 */
/* ------------------------------------------------------------------------ */

static int apply_watchdog(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 30, rlock_config_set_watchdog_timeout);
}

static int apply_fair_wait(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 1, rlock_config_set_fair_wait_timeout);
}

/* rlock's own key (Redisson has no such setting): see
 * rlock_config_set_lock_barging(). */
static int apply_lock_barging(loader *ld, const char *path, const json_t *v)
{
    if (!json_is_boolean(v))
        return rlock__cf_fail(ld, path, "must be true or false");
    return rlock__cf_setter(
        ld, path, rlock_config_set_lock_barging(ld->cfg, json_is_true(v)));
}

/* rlock's own key: see rlock_config_set_lock_queue(). */
static int apply_lock_queue(loader *ld, const char *path, const json_t *v)
{
    if (!json_is_boolean(v))
        return rlock__cf_fail(ld, path, "must be true or false");
    return rlock__cf_setter(
        ld, path, rlock_config_set_lock_queue(ld->cfg, json_is_true(v)));
}

/* The two keys of one setting, rlock_config_set_sync_replicas(): each
 * keeps the other's value. */
static int apply_sync_replicas(loader *ld, const char *path, const json_t *v)
{
    if (!json_is_boolean(v))
        return rlock__cf_fail(ld, path, "must be true or false");
    return rlock__cf_setter(
        ld, path,
        rlock_config_set_sync_replicas(ld->cfg, json_is_true(v),
                                       ld->cfg->sync_timeout_ms));
}

static int apply_sync_timeout(loader *ld, const char *path, const json_t *v)
{
    int64_t ms = 0;
    int rc = rlock__cf_get_int(ld, path, v, 1, RLOCK__CF_MS_MAX, &ms);
    return rc ? rc
              : rlock__cf_setter(ld, path,
                                 rlock_config_set_sync_replicas(
                                     ld->cfg, ld->cfg->sync_replicas, ms));
}

/* connectionPoolSize is Redisson's upper bound on command connections
 * (default 64); rlock keeps a fixed set, opened as they are first used, of
 * at most 64, so larger pools are capped there. */
int rlock__cf_apply_pool_size(loader *ld, const char *path, const json_t *v)
{
    int64_t n = 0;
    int rc = rlock__cf_get_int(ld, path, v, 1, INT32_MAX, &n);
    if (rc == 0 && n > 64)
        n = 64;
    return rc ? rc
              : rlock__cf_setter(ld, path,
                                 rlock_config_set_connections(ld->cfg, (int)n));
}

static int apply_database(loader *ld, const char *path, const json_t *v)
{
    int64_t db = 0;
    int rc = rlock__cf_get_int(ld, path, v, 0, INT32_MAX, &db);
    return rc ? rc
              : rlock__cf_setter(ld, path,
                                 rlock_config_set_database(ld->cfg, (int)db));
}

/* address: "redis://host:port" as Redisson writes it. Redisson itself
 * refuses an address without a scheme, and so do we; "valkey://" and
 * "valkeys://" are its other spellings of "redis://" and "rediss://". */
static int apply_address(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    if (strstr(s, "://") == NULL)
        return rlock__cf_fail(
            ld, path, "\"%s\" needs a scheme, as in \"redis://%s\"", s, s);
    char *uri = NULL;
    bool valkeys = strncasecmp(s, "valkeys://", 10) == 0;
    if (valkeys || strncasecmp(s, "valkey://", 9) == 0) {
        size_t n = strlen(s) + 1;
        uri = rlock__malloc(n);
        if (uri == NULL)
            return rlock__cf_fail_file(ld, RLOCK_ENOMEM, "out of memory");
        snprintf(uri, n, "%s%s", valkeys ? "rediss://" : "redis://",
                 s + (valkeys ? 10 : 9));
    }
    rc = rlock_config_set_server(ld->cfg, uri ? uri : s);
    free(uri);
    if (rc == RLOCK_EINVAL)
        return rlock__cf_fail(
            ld, path,
            "\"%s\" is not a redis[s]://[[user]:password@]host[:port]"
            "[/db] or unix:///path address",
            s);
    return rlock__cf_setter(ld, path, rc);
}

/* ---- sentinelServersConfig --------------------------------------------- */

static int apply_master_name(loader *ld, const char *path, const json_t *v)
{
    int rc = rlock__cf_get_string(ld, path, v, &ld->master_name);
    if (rc == 0 && ld->master_name != NULL && *ld->master_name == '\0')
        return rlock__cf_fail(ld, path, "must not be empty");
    return rc;
}

/* sentinelAddresses: checked here, turned into the URI once the master's
 * name is known too (apply_sentinel_server_uri). */
static int apply_sentinel_addresses(loader *ld, const char *path,
                                    const json_t *v)
{
    if (!json_is_array(v))
        return rlock__cf_fail(ld, path,
                              "must be an array of \"redis://host:port\" "
                              "strings (got %s)",
                              rlock__cf_type_word(v));
    if (json_array_size(v) > RLOCK__URI_SENTINELS_MAX)
        return rlock__cf_fail(ld, path, "lists more than %d sentinels",
                              RLOCK__URI_SENTINELS_MAX);
    ld->sentinel_addresses = v;
    return RLOCK_OK;
}

static int apply_scan_interval(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 1, rlock_config_set_sentinel_scan_interval);
}

static int apply_sentinel_username(loader *ld, const char *path,
                                   const json_t *v)
{
    return rlock__cf_get_string(ld, path, v, &ld->sentinel_username);
}

static int apply_sentinel_password(loader *ld, const char *path,
                                   const json_t *v)
{
    return rlock__cf_get_string(ld, path, v, &ld->sentinel_password);
}

/* A NAT mapper rewrites the addresses sentinels give; rlock connects to
 * them as given. */
static int apply_nat_mapper(loader *ld, const char *path, const json_t *v)
{
    if (rlock__cf_is_default_class(v))
        return RLOCK_OK;
    return rlock__cf_fail(
        ld, path,
        "is not supported: rlock connects to the "
        "addresses the sentinels give (leave it out or null)");
}

/* Sets the server to the redis+sentinel:// URI that sentinelAddresses and
 * masterName make, the name percent-encoded. */
static int apply_sentinel_server_uri(loader *ld, const char *path)
{
    if (ld->sentinel_addresses == NULL ||
        json_array_size(ld->sentinel_addresses) == 0)
        return rlock__cf_fail(ld, path, "needs sentinelAddresses");
    if (ld->master_name == NULL)
        return rlock__cf_fail(ld, path, "needs masterName");
    static const rlock__cf_address_list sentinels = {
        "sentinelAddresses", "sentinel", "sentinel", "redis://host:26379",
        "use sentinelPassword and database"};
    char *uri = NULL;
    size_t n = 0;
    /* room for the name, every byte of it percent-encoded at worst */
    int rc = rlock__cf_address_uri(ld, path, ld->sentinel_addresses,
                                   &sentinels, 3 * strlen(ld->master_name),
                                   &uri, &n);
    if (rc >= 0) {
        size_t at = (size_t)rc;
        at += (size_t)snprintf(uri + at, n - at, "/");
        for (const unsigned char *p = (const unsigned char *)ld->master_name;
             *p; p++)
            at += (size_t)snprintf(
                uri + at, n - at,
                isalnum(*p) || strchr("-._~", *p) ? "%c" : "%%%02X", *p);
        rc = rlock_config_set_server(ld->cfg, uri);
        if (rc == RLOCK_EINVAL)
            rc = rlock__cf_fail(ld, path, "masterName \"%s\" cannot be used",
                                ld->master_name);
        else
            rc = rlock__cf_setter(ld, path, rc);
    }
    free(uri);
    return rc;
}

static int apply_single_server(loader *ld, const char *path, const json_t *v);
static int apply_sentinel_servers(loader *ld, const char *path,
                                  const json_t *v);

/* Redisson's Config: the top level of the file. */
static const key_rule top_own_rules[] = {
    {"singleServerConfig", HONOURED, apply_single_server},
    {"sentinelServersConfig", HONOURED, apply_sentinel_servers},
    {"lockWatchdogTimeout", HONOURED, apply_watchdog},
    {"clusterServersConfig", HONOURED, rlock__cf_apply_cluster_servers},
    {"masterSlaveServersConfig", NOT_SUPPORTED, NULL},
    {"replicatedServersConfig", NOT_SUPPORTED, NULL},
    {"threads", IGNORE_INT, NULL},
    {"nettyThreads", IGNORE_INT, NULL},
    {"codec", IGNORE_ANY, NULL},
    {"transportMode", IGNORE_STRING, NULL},
    {"referenceEnabled", IGNORE_BOOL, NULL},
    {"checkLockSyncedSlaves", HONOURED, apply_sync_replicas},
    {"slavesSyncTimeout", HONOURED, apply_sync_timeout},
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
    {"rlockLockBarging", HONOURED, apply_lock_barging},
    {"rlockLockQueue", HONOURED, apply_lock_queue},
    {"nettyHook", IGNORE_ANY, NULL},
    {"connectionListener", IGNORE_ANY, NULL},
    {"addressResolverGroupFactory", IGNORE_ANY, NULL},
    {"nettyExecutor", IGNORE_ANY, NULL},
    {"executor", IGNORE_ANY, NULL},
    {"eventLoopGroup", IGNORE_ANY, NULL},
    {"valkeyCapabilities", IGNORE_ANY, NULL},
    {NULL, HONOURED, NULL},
};
const key_rule *const rlock__cf_top_rules[] = {top_own_rules, NULL};

/* Redisson's SingleServerConfig, beside the BaseConfig keys. */
static const key_rule single_own_rules[] = {
    {"address", HONOURED, apply_address},
    {"database", HONOURED, apply_database},
    {"connectionPoolSize", HONOURED, rlock__cf_apply_pool_size},
    {"subscriptionConnectionPoolSize", IGNORE_INT, NULL},
    {"subscriptionConnectionMinimumIdleSize", IGNORE_INT, NULL},
    {"connectionMinimumIdleSize", IGNORE_INT, NULL},
    {"dnsMonitoringInterval", IGNORE_INT, NULL},
    {NULL, HONOURED, NULL},
};
static const key_rule *const single_rules[] = {
    single_own_rules, rlock__cf_base_rules, NULL};

/* Redisson's SentinelServersConfig and BaseMasterSlaveServersConfig,
 * beside the BaseConfig keys. Replicas are Java's business here (rlock
 * reads and writes on the master only), and so is the choice of sentinels
 * beyond the listed ones. */
static const key_rule sentinel_own_rules[] = {
    {"sentinelAddresses", HONOURED, apply_sentinel_addresses},
    {"masterName", HONOURED, apply_master_name},
    {"database", HONOURED, apply_database},
    {"scanInterval", HONOURED, apply_scan_interval},
    {"sentinelUsername", HONOURED, apply_sentinel_username},
    {"sentinelPassword", HONOURED, apply_sentinel_password},
    {"masterConnectionPoolSize", HONOURED, rlock__cf_apply_pool_size},
    {"natMapper", HONOURED, apply_nat_mapper},
    {"masterConnectionMinimumIdleSize", IGNORE_INT, NULL},
    {"slaveConnectionPoolSize", IGNORE_INT, NULL},
    {"slaveConnectionMinimumIdleSize", IGNORE_INT, NULL},
    {"subscriptionConnectionPoolSize", IGNORE_INT, NULL},
    {"subscriptionConnectionMinimumIdleSize", IGNORE_INT, NULL},
    {"failedSlaveReconnectionInterval", IGNORE_INT, NULL},
    {"failedSlaveCheckInterval", IGNORE_INT, NULL},
    {"dnsMonitoringInterval", IGNORE_INT, NULL},
    {"readMode", IGNORE_STRING, NULL},
    {"subscriptionMode", IGNORE_STRING, NULL},
    {"checkSentinelsList", IGNORE_BOOL, NULL},
    {"checkSlaveStatusWithSyncing", IGNORE_BOOL, NULL},
    {"sentinelsDiscovery", IGNORE_BOOL, NULL},
    {"loadBalancer", IGNORE_ANY, NULL},
    {"failedSlaveNodeDetector", IGNORE_ANY, NULL},
    {NULL, HONOURED, NULL},
};
static const key_rule *const sentinel_rules[] = {
    sentinel_own_rules, rlock__cf_base_rules, NULL};

/* Applies a user and password pair read from the keys user_key and
 * password_key of the server config at path: Redisson sends AUTH only with
 * a password, and "" counts as none. */
static int apply_pair(loader *ld, const char *path, const char *user_key,
                      const char *password_key, const char *user,
                      const char *password,
                      int (*set)(rlock_config *, const char *, const char *))
{
    char user_path[96], password_path[96];
    snprintf(user_path, sizeof(user_path), "%s.%s", path, user_key);
    snprintf(password_path, sizeof(password_path), "%s.%s", path, password_key);
    user = user && *user ? user : NULL;
    password = password && *password ? password : NULL;
    if (password == NULL) {
        if (user != NULL)
            return rlock__cf_fail(ld, user_path, "needs a password (%s)",
                                  password_path);
        return RLOCK_OK;
    }
    return rlock__cf_setter(ld, password_path, set(ld->cfg, user, password));
}

/* Checks that v is a server config object and that no other was given. */
int rlock__cf_open_server_config(loader *ld, const char *path, const json_t *v)
{
    if (!json_is_object(v))
        return rlock__cf_fail(ld, path, "must be an object (got %s)",
                              rlock__cf_type_word(v));
    if (ld->server_config != NULL)
        return rlock__cf_fail(ld, path,
                              "cannot be given with %s: one server config "
                              "per file",
                              ld->server_config);
    ld->server_config = strcmp(path, "singleServerConfig") == 0
                            ? "singleServerConfig"
                        : strcmp(path, "clusterServersConfig") == 0
                            ? "clusterServersConfig"
                            : "sentinelServersConfig";
    return RLOCK_OK;
}

int rlock__cf_apply_credentials(loader *ld, const char *path)
{
    return apply_pair(ld, path, "username", "password", ld->username,
                      ld->password, rlock_config_set_credentials);
}

static int apply_single_server(loader *ld, const char *path, const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    int rc = rlock__cf_open_server_config(ld, path, v);
    if (rc == 0)
        rc = rlock__cf_apply_object(ld, single_rules, path, v);
    return rc ? rc
              : apply_pair(ld, path, "username", "password", ld->username,
                           ld->password, rlock_config_set_credentials);
}

static int apply_sentinel_servers(loader *ld, const char *path, const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    int rc = rlock__cf_open_server_config(ld, path, v);
    if (rc == 0)
        rc = rlock__cf_apply_object(ld, sentinel_rules, path, v);
    if (rc == 0)
        rc = apply_sentinel_server_uri(ld, path);
    if (rc == 0)
        rc = apply_pair(ld, path, "username", "password", ld->username,
                        ld->password, rlock_config_set_credentials);
    if (rc == 0)
        rc = apply_pair(ld, path, "sentinelUsername", "sentinelPassword",
                        ld->sentinel_username, ld->sentinel_password,
                        rlock_config_set_sentinel_credentials);
    return rc;
}
