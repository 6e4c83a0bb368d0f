/*
 * api/config.c: the client's settings with Redisson's defaults, and
 * validation. A config is plain data plus a few owned strings (server, credentials,
 * the sentinels' credentials, client name, TLS files): the client deep-copies it at connect time
 * (rlock__config_copy), so the caller may free its own right away.
 * Reading Redisson's JSON files is config_file.c's job.
 *
 * Public functions in src/api; the core and the transport read the
 * settings the client copied.
 */
#include "api/api.h"
#include "io/tls.h"

#include <stdlib.h>
#include <string.h>

#define RLOCK__MS_MAX ((int64_t)INT32_MAX)

/* Fills cfg with Redisson 4.x's defaults (see rlock_config_new()). */
void rlock__config_defaults(rlock_config *cfg)
{
    cfg->watchdog_timeout_ms = 30000;
    cfg->command_timeout_ms = 3000;
    cfg->connect_timeout_ms = 10000;
    cfg->retry_attempts = 3;
    cfg->retry_interval_ms = 1500;
    cfg->recheck_interval_ms = 2000;
    cfg->fair_wait_timeout_ms = 5000;
    cfg->connections = 2;
    cfg->server = NULL;
    cfg->user = NULL;
    cfg->password = NULL;
    cfg->credentials_set = false;
    cfg->database = 0;
    cfg->database_set = false;
    cfg->client_name = NULL;
    cfg->sentinel_user = NULL;
    cfg->sentinel_password = NULL;
    cfg->sentinel_credentials_set = false;
    cfg->sentinel_scan_interval_ms = 1000;
    cfg->cluster_scan_interval_ms = 5000; /* Redisson's scanInterval */
    cfg->sync_timeout_ms = 1000;          /* Redisson's slavesSyncTimeout */
    cfg->cluster_sharded = RLOCK_SHARDED_AUTO;
    cfg->tls_ca_file = NULL;
    cfg->tls_ca_dir = NULL;
    cfg->tls_cert_file = NULL;
    cfg->tls_key_file = NULL;
    cfg->tls_server_name = NULL;
    cfg->tls_verify = RLOCK_TLS_VERIFY_FULL;
    cfg->log_cb = NULL;
    cfg->log_arg = NULL;
    cfg->log_level = RLOCK_LOG_WARN;
    cfg->stats = true;
    cfg->lock_barging = false;
    cfg->lock_queue = true;
}

/* Frees a string that may hold a secret, wiping it first. */
static void free_secret(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* Frees the strings cfg owns and sets them to NULL; the numbers stay. */
void rlock__config_clear(rlock_config *cfg)
{
    free(cfg->server);
    free(cfg->user);
    free_secret(cfg->password);
    free(cfg->client_name);
    free(cfg->sentinel_user);
    free_secret(cfg->sentinel_password);
    free(cfg->tls_ca_file);
    free(cfg->tls_ca_dir);
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    free(cfg->tls_server_name);
    cfg->server = NULL;
    cfg->user = NULL;
    cfg->password = NULL;
    cfg->client_name = NULL;
    cfg->sentinel_user = cfg->sentinel_password = NULL;
    cfg->sentinel_credentials_set = false;
    cfg->tls_ca_file = cfg->tls_ca_dir = NULL;
    cfg->tls_cert_file = cfg->tls_key_file = NULL;
    cfg->tls_server_name = NULL;
    cfg->credentials_set = false;
    cfg->database_set = false;
}

/* Copies s into *out (NULL stays NULL); returns 0 or RLOCK_ENOMEM. */
static int copy_string(char **out, const char *s)
{
    *out = NULL;
    if (s == NULL)
        return RLOCK_OK;
    *out = rlock__strdup(s);
    return *out != NULL ? RLOCK_OK : RLOCK_ENOMEM;
}

/* Makes dst a deep copy of src (dst's previous contents are not freed).
 * Returns 0 or RLOCK_ENOMEM, in which case dst owns nothing. */
int rlock__config_copy(rlock_config *dst, const rlock_config *src)
{
    *dst = *src;
    dst->server = dst->user = dst->password = dst->client_name = NULL;
    dst->sentinel_user = dst->sentinel_password = NULL;
    dst->tls_ca_file = dst->tls_ca_dir = NULL;
    dst->tls_cert_file = dst->tls_key_file = dst->tls_server_name = NULL;
    if (copy_string(&dst->server, src->server) != 0 ||
        copy_string(&dst->user, src->user) != 0 ||
        copy_string(&dst->password, src->password) != 0 ||
        copy_string(&dst->client_name, src->client_name) != 0 ||
        copy_string(&dst->sentinel_user, src->sentinel_user) != 0 ||
        copy_string(&dst->sentinel_password, src->sentinel_password) != 0 ||
        copy_string(&dst->tls_ca_file, src->tls_ca_file) != 0 ||
        copy_string(&dst->tls_ca_dir, src->tls_ca_dir) != 0 ||
        copy_string(&dst->tls_cert_file, src->tls_cert_file) != 0 ||
        copy_string(&dst->tls_key_file, src->tls_key_file) != 0 ||
        copy_string(&dst->tls_server_name, src->tls_server_name) != 0) {
        rlock__config_clear(dst);
        return RLOCK_ENOMEM;
    }
    return RLOCK_OK;
}

/* Lays cfg's credentials and database, where set, over a parsed URI: they
 * take precedence over the URI's own (rlock_config_set_credentials()).
 * Returns 0 or RLOCK_ENOMEM (uri is then unchanged). */
int rlock__config_apply_uri(const rlock_config *cfg, rlock__uri *uri)
{
    if (cfg->credentials_set) {
        char *user = NULL, *password = NULL;
        if (copy_string(&user, cfg->user) != 0 ||
            copy_string(&password, cfg->password) != 0) {
            free(user);
            return RLOCK_ENOMEM;
        }
        free(uri->user);
        free_secret(uri->password);
        uri->user = user;
        uri->password = password;
    }
    if (cfg->database_set)
        uri->db = cfg->database;
    return RLOCK_OK;
}

/* The public verify modes are tls.c's, so they pass through unchanged. */
_Static_assert(RLOCK_TLS_VERIFY_FULL == RLOCK__TLS_VERIFY_FULL &&
                   RLOCK_TLS_VERIFY_CA_ONLY == RLOCK__TLS_VERIFY_CA_ONLY &&
                   RLOCK_TLS_VERIFY_NONE_INSECURE == RLOCK__TLS_VERIFY_NONE,
               "rlock.h and io/tls.h disagree on the verify modes");

/* Fills out with cfg's TLS settings (rlock__config_tls in api/api.h). */
void rlock__config_tls(const rlock_config *cfg, rlock__tls_settings *out)
{
    out->ca_file = cfg->tls_ca_file;
    out->ca_dir = cfg->tls_ca_dir;
    out->cert_file = cfg->tls_cert_file;
    out->key_file = cfg->tls_key_file;
    out->server_name = cfg->tls_server_name;
    out->verify = cfg->tls_verify;
}

/* Returns the unlock latch lifetime: long enough to outlive every retry of
 * one unlock, computed as Redisson does (attempts x (timeout + delay)). */
int64_t rlock__config_latch_ms(const rlock_config *cfg)
{
    int64_t ms = (int64_t)(cfg->retry_attempts + 1) *
                 (cfg->command_timeout_ms + cfg->retry_interval_ms);
    return ms < 1 ? 1 : ms;
}

int rlock_config_new(rlock_config **out)
{
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = rlock__calloc(1, sizeof(**out));
    if (*out == NULL)
        return RLOCK_ENOMEM;
    rlock__config_defaults(*out);
    return RLOCK_OK;
}

void rlock_config_free(rlock_config *cfg)
{
    if (cfg == NULL)
        return;
    rlock__config_clear(cfg);
    free(cfg);
}

/* Stores v into *field when lo <= v <= hi; returns 0 or RLOCK_EINVAL. */
static int set_ms(rlock_config *cfg, int64_t *field, int64_t v, int64_t lo)
{
    if (cfg == NULL || v < lo || v > RLOCK__MS_MAX)
        return RLOCK_EINVAL;
    *field = v;
    return RLOCK_OK;
}

int rlock_config_set_watchdog_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->watchdog_timeout_ms : NULL, ms, 30);
}

int rlock_config_set_command_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->command_timeout_ms : NULL, ms, 1);
}

int rlock_config_set_connect_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->connect_timeout_ms : NULL, ms, 1);
}

int rlock_config_set_retry_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->retry_interval_ms : NULL, ms, 0);
}

int rlock_config_set_recheck_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->recheck_interval_ms : NULL, ms, 1);
}

int rlock_config_set_fair_wait_timeout(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->fair_wait_timeout_ms : NULL, ms, 1);
}

int rlock_config_set_retry_attempts(rlock_config *cfg, int n)
{
    if (cfg == NULL || n < 0 || n > 100)
        return RLOCK_EINVAL;
    cfg->retry_attempts = n;
    return RLOCK_OK;
}

int rlock_config_set_connections(rlock_config *cfg, int n)
{
    if (cfg == NULL || n < 1 || n > 64)
        return RLOCK_EINVAL;
    cfg->connections = n;
    return RLOCK_OK;
}

/* True when s is a string Redis accepts as it is in a command argument
 * that must not be empty, such as a client name: printable ASCII with no
 * spaces (Redis refuses others in CLIENT SETNAME). */
static bool is_token(const char *s)
{
    if (s == NULL || *s == '\0')
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

/* Replaces *field with a copy of s; returns 0 or RLOCK_ENOMEM (then the
 * field is unchanged). */
static int replace_string(char **field, const char *s)
{
    char *copy = NULL;
    if (copy_string(&copy, s) != 0)
        return RLOCK_ENOMEM;
    free(*field);
    *field = copy;
    return RLOCK_OK;
}

int rlock_config_set_server(rlock_config *cfg, const char *uri)
{
    rlock__uri parsed;
    if (cfg == NULL || uri == NULL)
        return RLOCK_EINVAL;
    int rc = rlock__uri_parse(uri, &parsed); /* refuse a bad URI now */
    if (rc != 0)
        return rc;
    rlock__uri_clear(&parsed);
    return replace_string(&cfg->server, uri);
}

/* Replaces *user_field and *password_field with copies of a user and
 * password pair (a user needs a password; neither may be ""). */
static int set_pair(rlock_config *cfg, char **user_field,
                    char **password_field, bool *set_flag, const char *user,
                    const char *password)
{
    if (cfg == NULL || (user != NULL && password == NULL) ||
        (user != NULL && *user == '\0') ||
        (password != NULL && *password == '\0'))
        return RLOCK_EINVAL;
    char *u = NULL, *p = NULL;
    if (copy_string(&u, user) != 0 || copy_string(&p, password) != 0) {
        free(u);
        return RLOCK_ENOMEM;
    }
    free(*user_field);
    free_secret(*password_field);
    *user_field = u;
    *password_field = p;
    *set_flag = true;
    return RLOCK_OK;
}

int rlock_config_set_credentials(rlock_config *cfg, const char *user,
                                 const char *password)
{
    return cfg ? set_pair(cfg, &cfg->user, &cfg->password,
                          &cfg->credentials_set, user, password)
               : RLOCK_EINVAL;
}

int rlock_config_set_sentinel_credentials(rlock_config *cfg,
                                          const char *user,
                                          const char *password)
{
    return cfg ? set_pair(cfg, &cfg->sentinel_user, &cfg->sentinel_password,
                          &cfg->sentinel_credentials_set, user, password)
               : RLOCK_EINVAL;
}

int rlock_config_set_sentinel_scan_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->sentinel_scan_interval_ms : NULL, ms, 1);
}

int rlock_config_set_cluster_scan_interval(rlock_config *cfg, int64_t ms)
{
    return set_ms(cfg, cfg ? &cfg->cluster_scan_interval_ms : NULL, ms, 1);
}

int rlock_config_set_sync_replicas(rlock_config *cfg, int on,
                                   int64_t timeout_ms)
{
    int rc = set_ms(cfg, cfg ? &cfg->sync_timeout_ms : NULL, timeout_ms, 1);
    if (rc == 0)
        cfg->sync_replicas = on != 0;
    return rc;
}

int rlock_config_set_cluster_sharded(rlock_config *cfg, int mode)
{
    if (cfg == NULL || mode < RLOCK_SHARDED_AUTO || mode > RLOCK_SHARDED_BOTH)
        return RLOCK_EINVAL;
    cfg->cluster_sharded = mode;
    return RLOCK_OK;
}

int rlock_config_set_database(rlock_config *cfg, int db)
{
    if (cfg == NULL || db < 0)
        return RLOCK_EINVAL;
    cfg->database = db;
    cfg->database_set = true;
    return RLOCK_OK;
}

int rlock_config_set_client_name(rlock_config *cfg, const char *name)
{
    if (cfg == NULL || (name != NULL && !is_token(name)))
        return RLOCK_EINVAL;
    return replace_string(&cfg->client_name, name);
}

int rlock_config_set_log(rlock_config *cfg, int level, rlock_log_cb cb,
                         void *arg)
{
    if (cfg == NULL || level < RLOCK_LOG_ERROR || level > RLOCK_LOG_DEBUG)
        return RLOCK_EINVAL;
    cfg->log_cb = cb;
    cfg->log_arg = arg;
    cfg->log_level = level;
    return RLOCK_OK;
}

int rlock_config_set_stats(rlock_config *cfg, int on)
{
    if (cfg == NULL)
        return RLOCK_EINVAL;
    cfg->stats = on != 0;
    return RLOCK_OK;
}

int rlock_config_set_lock_barging(rlock_config *cfg, int on)
{
    if (cfg == NULL)
        return RLOCK_EINVAL;
    cfg->lock_barging = on != 0;
    return RLOCK_OK;
}

int rlock_config_set_lock_queue(rlock_config *cfg, int on)
{
    if (cfg == NULL)
        return RLOCK_EINVAL;
    cfg->lock_queue = on != 0;
    return RLOCK_OK;
}

/* A path setting: NULL clears it, "" is refused. */
static int set_path(rlock_config *cfg, char **field, const char *path)
{
    if (cfg == NULL || (path != NULL && *path == '\0'))
        return RLOCK_EINVAL;
    return replace_string(field, path);
}

int rlock_config_set_tls_ca_file(rlock_config *cfg, const char *path)
{
    return set_path(cfg, cfg ? &cfg->tls_ca_file : NULL, path);
}

int rlock_config_set_tls_ca_dir(rlock_config *cfg, const char *path)
{
    return set_path(cfg, cfg ? &cfg->tls_ca_dir : NULL, path);
}

int rlock_config_set_tls_client_cert(rlock_config *cfg, const char *cert_path,
                                     const char *key_path)
{
    if (cfg == NULL || (cert_path == NULL) != (key_path == NULL) ||
        (cert_path != NULL && (*cert_path == '\0' || *key_path == '\0')))
        return RLOCK_EINVAL;
    char *cert = NULL, *key = NULL;
    if (copy_string(&cert, cert_path) != 0 ||
        copy_string(&key, key_path) != 0) {
        free(cert);
        return RLOCK_ENOMEM;
    }
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    cfg->tls_cert_file = cert;
    cfg->tls_key_file = key;
    return RLOCK_OK;
}

/* A server name is a DNS name or an IP address: printable ASCII without
 * spaces, at most 253 bytes (DNS's limit). */
int rlock_config_set_tls_server_name(rlock_config *cfg, const char *name)
{
    if (cfg == NULL || (name != NULL && (!is_token(name) || strlen(name) > 253)))
        return RLOCK_EINVAL;
    return replace_string(&cfg->tls_server_name, name);
}

int rlock_config_set_tls_verify(rlock_config *cfg, int mode)
{
    if (cfg == NULL || (mode != RLOCK_TLS_VERIFY_FULL &&
                        mode != RLOCK_TLS_VERIFY_CA_ONLY &&
                        mode != RLOCK_TLS_VERIFY_NONE_INSECURE))
        return RLOCK_EINVAL;
    cfg->tls_verify = mode;
    return RLOCK_OK;
}
