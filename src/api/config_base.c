/*
 * api/config_base.c: Redisson's BaseConfig keys, which every server config
 * of the JSON config file has (single server, Sentinel, cluster): the
 * timeouts and retries, the credentials, the client name, and TLS, where
 * Redisson names Java key stores and rlock reads PEM files.
 *
 * config_file.c reads the file; config_keys.c and config_cluster.c rule
 * the rest of it.
 */
#include "config_file.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int apply_connect_timeout(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 1, rlock_config_set_connect_timeout);
}

static int apply_timeout(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 1, rlock_config_set_command_timeout);
}

static int apply_retry_attempts(loader *ld, const char *path, const json_t *v)
{
    int64_t n = 0;
    int rc = rlock__cf_get_int(ld, path, v, 0, 100, &n);
    return rc ? rc
              : rlock__cf_setter(
                    ld, path, rlock_config_set_retry_attempts(ld->cfg, (int)n));
}

static int apply_retry_interval(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 0, rlock_config_set_retry_interval);
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
        return rlock__cf_fail(
            ld, path,
            "\"%s\" is not supported: rlock reads a file path or a "
            "file: URL, not a Java resource",
            s);
    }
    if (*file == '\0')
        return rlock__cf_fail(ld, path, "must name a file");
    const char *dot = strrchr(file, '.');
    for (size_t i = 0; dot != NULL && i < sizeof(pem) / sizeof(pem[0]); i++)
        if (strcasecmp(dot, pem[i]) == 0) {
            *out = file;
            return RLOCK_OK;
        }
    return rlock__cf_fail(
        ld, path,
        "\"%s\" is not supported: rlock reads PEM files (.pem, .crt, "
        ".cer or .key), not Java key stores (JKS, PKCS#12); convert "
        "it with keytool and openssl",
        s);
}

static int apply_truststore(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL, *file = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    rc = key_store_path(ld, path, s, &file);
    return rc ? rc
              : rlock__cf_setter(ld, path,
                                 rlock_config_set_tls_ca_file(ld->cfg, file));
}

/* sslKeystore: one PEM file holding the client certificate and its key, as
 * a Java key store holds both. */
static int apply_keystore(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL, *file = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    rc = key_store_path(ld, path, s, &file);
    return rc ? rc
              : rlock__cf_setter(
                    ld, path,
                    rlock_config_set_tls_client_cert(ld->cfg, file, file));
}

/* A key store password: PEM trust files have none, and rlock reads only
 * unencrypted keys, so null (or "") is all that fits. */
static int apply_store_password(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL || *s == '\0')
        return rc;
    return rlock__cf_fail(
        ld, path,
        "is not supported: rlock reads PEM files, which take no "
        "password (decrypt the key with openssl; leave it out or "
        "null)");
}

/* Redisson 3.x: false checks the CA but not the host name. */
static int apply_endpoint_identification(loader *ld, const char *path,
                                         const json_t *v)
{
    if (!json_is_boolean(v))
        return rlock__cf_fail(ld, path, "must be true or false (got %s)",
                              rlock__cf_type_word(v));
    return rlock__cf_setter(
        ld, path,
        rlock_config_set_tls_verify(ld->cfg, json_is_true(v)
                                                 ? RLOCK_TLS_VERIFY_FULL
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
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(s, modes[i].name) == 0)
            return rlock__cf_setter(
                ld, path, rlock_config_set_tls_verify(ld->cfg, modes[i].mode));
    return rlock__cf_fail(ld, path,
                          "must be STRICT, CA_ONLY or NONE (got \"%s\")", s);
}

/* sslProvider picks Java's TLS engine; rlock always uses OpenSSL, so both
 * of Redisson's values (toJSON writes "JDK") mean the same here. */
static int apply_ssl_provider(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL || strcmp(s, "JDK") == 0 ||
        strcmp(s, "OPENSSL") == 0)
        return rc;
    return rlock__cf_fail(ld, path, "must be JDK or OPENSSL (got \"%s\")", s);
}

/* What has no PEM or OpenSSL equivalent here: null only. */
static int apply_tls_null_only(loader *ld, const char *path, const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    return rlock__cf_fail(
        ld, path,
        "is not supported: rlock uses OpenSSL's TLS 1.2 and 1.3 with "
        "its default ciphers, and PEM files (leave it out or null)");
}

static int apply_username(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_get_string(ld, path, v, &ld->username);
}

static int apply_password(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_get_string(ld, path, v, &ld->password);
}

static int apply_client_name(loader *ld, const char *path, const json_t *v)
{
    const char *name = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &name);
    if (rc != 0 || name == NULL || *name == '\0')
        return rc; /* null or "": no CLIENT SETNAME, as in Redisson */
    rc = rlock_config_set_client_name(ld->cfg, name);
    if (rc == RLOCK_EINVAL)
        return rlock__cf_fail(
            ld, path,
            "must be printable ASCII without spaces (Redis refuses "
            "other client names)");
    return rlock__cf_setter(ld, path, rc);
}

/* Redisson's BaseConfig: what every server config has. */
const key_rule rlock__cf_base_rules[] = {
    {"username", HONOURED, apply_username},
    {"password", HONOURED, apply_password},
    {"connectTimeout", HONOURED, apply_connect_timeout},
    {"timeout", HONOURED, apply_timeout},
    {"retryAttempts", HONOURED, apply_retry_attempts},
    {"retryInterval", HONOURED, apply_retry_interval},
    {"clientName", HONOURED, apply_client_name},
    {"subscriptionsPerConnection", IGNORE_INT, NULL},
    {"idleConnectionTimeout", IGNORE_INT, NULL},
    {"pingConnectionInterval", IGNORE_INT, NULL},
    {"pingTimeout", IGNORE_INT, NULL},
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

