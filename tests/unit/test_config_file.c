/*
 * test_config_file.c: rlock_config_load_file() on Redisson JSON configs
 * written to temporary files, and the server setters it relies on.
 *
 * Accepted files: every honoured key lands in the config (read through
 * core/client.h), ignored keys change nothing, defaults stay where the file is
 * silent. Refused files: each case names the line and the key the message
 * must carry ("FILE:LINE: KEY: ..."), and a phrase saying why; the result
 * pointer must come back NULL (ASan/LSan would catch a leak). No network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"

static char dir[64];
static char path[128];

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/rlock-config-test-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/redisson.json", dir);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* Writes text to the test file. */
static void write_file(const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* Loads text and asserts success. */
static rlock_config *load_ok(const char *text)
{
    rlock_config *cfg = NULL;
    char err[512] = "untouched";

    write_file(text);
    int rc = rlock_config_load_file(&cfg, path, err, sizeof(err));
    if (rc != 0)
        fail_msg("refused: %s", err);
    assert_non_null(cfg);
    assert_string_equal(err, "");
    return cfg;
}

/* ------------------------------------------------------------------------ */
/* Accepted files                                                           */
/* ------------------------------------------------------------------------ */

static void test_every_honoured_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\n"
                                "  \"singleServerConfig\": {\n"
                                "    \"address\": \"redis://10.1.2.3:6390\",\n"
                                "    \"username\": \"app\",\n"
                                "    \"password\": \"s3cret\",\n"
                                "    \"database\": 7,\n"
                                "    \"connectTimeout\": 1234,\n"
                                "    \"timeout\": 2345,\n"
                                "    \"retryAttempts\": 5,\n"
                                "    \"retryInterval\": 678,\n"
                                "    \"clientName\": \"billing-worker\",\n"
                                "    \"connectionPoolSize\": 8,\n"
                                "    \"subscriptionsPerConnection\": 5\n"
                                "  },\n"
                                "  \"lockWatchdogTimeout\": 45000\n"
                                "}\n");
    assert_string_equal(cfg->server, "redis://10.1.2.3:6390");
    assert_true(cfg->credentials_set);
    assert_string_equal(cfg->user, "app");
    assert_string_equal(cfg->password, "s3cret");
    assert_true(cfg->database_set);
    assert_int_equal(cfg->database, 7);
    assert_int_equal(cfg->connect_timeout_ms, 1234);
    assert_int_equal(cfg->command_timeout_ms, 2345);
    assert_int_equal(cfg->retry_attempts, 5);
    assert_int_equal(cfg->retry_interval_ms, 678);
    assert_string_equal(cfg->client_name, "billing-worker");
    assert_int_equal(cfg->connections, 8);
    assert_int_equal(cfg->watchdog_timeout_ms, 45000);
    /* not in the file: the default */
    assert_int_equal(cfg->recheck_interval_ms, 2000);
    rlock_config_free(cfg);
}

/* rlock's own rlockLockBarging key sets what
 * rlock_config_set_lock_barging() sets; without it, barging is off. */
static void test_lock_barging_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"rlockLockBarging\": true}\n");
    assert_true(cfg->lock_barging);
    rlock_config_free(cfg);
    cfg = load_ok("{\"rlockLockBarging\": false}\n");
    assert_false(cfg->lock_barging);
    rlock_config_free(cfg);
    cfg = load_ok("{\"lockWatchdogTimeout\": 30000}\n");
    assert_false(cfg->lock_barging);
    rlock_config_free(cfg);
}

static void test_lock_barging_setter(void **state)
{
    (void)state;
    rlock_config *cfg;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_false(cfg->lock_barging);
    assert_int_equal(rlock_config_set_lock_barging(cfg, 1), 0);
    assert_true(cfg->lock_barging);
    assert_int_equal(rlock_config_set_lock_barging(cfg, 0), 0);
    assert_false(cfg->lock_barging);
    assert_int_equal(rlock_config_set_lock_barging(NULL, 1), RLOCK_EINVAL);
    rlock_config_free(cfg);
}

/* rlock's own rlockLockQueue key sets what rlock_config_set_lock_queue()
 * sets; without it, the queue is on. */
static void test_lock_queue_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"rlockLockQueue\": false}\n");
    assert_false(cfg->lock_queue);
    rlock_config_free(cfg);
    cfg = load_ok("{\"rlockLockQueue\": true}\n");
    assert_true(cfg->lock_queue);
    rlock_config_free(cfg);
    cfg = load_ok("{\"lockWatchdogTimeout\": 30000}\n");
    assert_true(cfg->lock_queue);
    rlock_config_free(cfg);
}

static void test_lock_queue_setter(void **state)
{
    (void)state;
    rlock_config *cfg;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_true(cfg->lock_queue);
    assert_int_equal(rlock_config_set_lock_queue(cfg, 0), 0);
    assert_false(cfg->lock_queue);
    assert_int_equal(rlock_config_set_lock_queue(cfg, 1), 0);
    assert_true(cfg->lock_queue);
    assert_int_equal(rlock_config_set_lock_queue(NULL, 1), RLOCK_EINVAL);
    rlock_config_free(cfg);
}

/* checkLockSyncedSlaves and slavesSyncTimeout set what
 * rlock_config_set_sync_replicas() sets, each keeping the other's value;
 * without them WAIT is off with Redisson's 1000 ms. */
static void test_sync_replicas_keys(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"lockWatchdogTimeout\": 30000}\n");
    assert_false(cfg->sync_replicas);
    assert_int_equal(cfg->sync_timeout_ms, 1000);
    rlock_config_free(cfg);
    cfg = load_ok("{\"checkLockSyncedSlaves\": true,"
                  " \"slavesSyncTimeout\": 300}\n");
    assert_true(cfg->sync_replicas);
    assert_int_equal(cfg->sync_timeout_ms, 300);
    rlock_config_free(cfg);
    cfg = load_ok("{\"slavesSyncTimeout\": 300,"
                  " \"checkLockSyncedSlaves\": false}\n");
    assert_false(cfg->sync_replicas);
    assert_int_equal(cfg->sync_timeout_ms, 300);
    rlock_config_free(cfg);
}

static void test_sync_replicas_setter(void **state)
{
    (void)state;
    rlock_config *cfg;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_sync_replicas(cfg, 1, 250), 0);
    assert_true(cfg->sync_replicas);
    assert_int_equal(cfg->sync_timeout_ms, 250);
    assert_int_equal(rlock_config_set_sync_replicas(cfg, 0, 0), RLOCK_EINVAL);
    assert_true(cfg->sync_replicas); /* unchanged */
    assert_int_equal(cfg->sync_timeout_ms, 250);
    assert_int_equal(rlock_config_set_sync_replicas(NULL, 1, 250),
                     RLOCK_EINVAL);
    rlock_config_free(cfg);
}

/* A file the way Redisson's Config.toJSON writes one: nulls, a codec
 * object and every pool setting. Ignored keys change nothing. */
static void test_redisson_to_json_output(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"singleServerConfig\":{\"idleConnectionTimeout\":10000,"
        "\"connectTimeout\":10000,\"timeout\":3000,\"retryAttempts\":3,"
        "\"retryInterval\":1500,\"password\":null,\"username\":null,"
        "\"subscriptionsPerConnection\":5,\"clientName\":null,"
        "\"address\":\"redis://127.0.0.1:6379\","
        "\"subscriptionConnectionMinimumIdleSize\":1,"
        "\"subscriptionConnectionPoolSize\":50,"
        "\"connectionMinimumIdleSize\":24,\"connectionPoolSize\":64,"
        "\"database\":0,\"dnsMonitoringInterval\":5000,"
        "\"pingConnectionInterval\":30000,\"keepAlive\":false,"
        "\"tcpNoDelay\":true,\"sslEnableEndpointIdentification\":true,"
        "\"sslProvider\":\"JDK\",\"sslTruststore\":null,"
        "\"nameMapper\":{\"class\":"
        "\"org.redisson.api.NameMapper$DefaultNameMapper\"},"
        "\"retryDelay\":{\"class\":\"org.redisson.config.EqualJitterDelay\","
        "\"baseDelay\":\"PT1S\",\"maxDelay\":\"PT2S\"}},"
        "\"threads\":16,\"nettyThreads\":32,"
        "\"codec\":{\"class\":\"org.redisson.codec.Kryo5Codec\"},"
        "\"transportMode\":\"NIO\",\"lockWatchdogTimeout\":30000,"
        "\"checkLockSyncedSlaves\":true,\"keepPubSubOrder\":true,"
        "\"clusterServersConfig\":null}");
    assert_string_equal(cfg->server, "redis://127.0.0.1:6379");
    assert_false(cfg->credentials_set); /* password null: no AUTH */
    assert_null(cfg->password);
    assert_null(cfg->client_name);
    assert_true(cfg->database_set);
    assert_int_equal(cfg->database, 0);
    assert_int_equal(cfg->connections, 64);
    assert_int_equal(cfg->command_timeout_ms, 3000);
    assert_int_equal(cfg->connect_timeout_ms, 10000);
    assert_int_equal(cfg->retry_attempts, 3);
    assert_int_equal(cfg->retry_interval_ms, 1500);
    assert_int_equal(cfg->watchdog_timeout_ms, 30000);
    rlock_config_free(cfg);
}

/* Only top-level keys: no server, every default kept. */
static void test_no_server(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"lockWatchdogTimeout\": 9000}");
    assert_null(cfg->server);
    assert_false(cfg->credentials_set);
    assert_false(cfg->database_set);
    assert_int_equal(cfg->watchdog_timeout_ms, 9000);
    assert_int_equal(cfg->command_timeout_ms, 3000);
    assert_int_equal(cfg->connections, 2);
    rlock_config_free(cfg);

    cfg = load_ok("{}");
    assert_null(cfg->server);
    assert_int_equal(cfg->watchdog_timeout_ms, 30000);
    rlock_config_free(cfg);
}

static void test_pool_size_capped(void **state)
{
    (void)state;
    rlock_config *cfg =
        load_ok("{\"singleServerConfig\": {\"connectionPoolSize\": 500}}");
    assert_int_equal(cfg->connections, 64);
    rlock_config_free(cfg);
    cfg = load_ok("{\"singleServerConfig\": {\"connectionPoolSize\": 1}}");
    assert_int_equal(cfg->connections, 1);
    rlock_config_free(cfg);
}

static void test_password_without_user(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"singleServerConfig\": {\"password\": \"pw\", \"username\": null}}");
    assert_true(cfg->credentials_set);
    assert_null(cfg->user);
    assert_string_equal(cfg->password, "pw");
    rlock_config_free(cfg);
}

/* "" means none for the password and the client name, as in Redisson. */
static void test_empty_strings_mean_none(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"singleServerConfig\": {\"password\": "
                                "\"\", \"clientName\": \"\"}}");
    assert_false(cfg->credentials_set);
    assert_null(cfg->client_name);
    rlock_config_free(cfg);
}

static void test_valkey_scheme(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"singleServerConfig\": {\"address\": \"valkey://cache:7000\"}}");
    assert_string_equal(cfg->server, "redis://cache:7000");
    rlock_config_free(cfg);
}

/* ---- Sentinel ----------------------------------------------------------- */

/* sentinelServersConfig becomes a redis+sentinel:// server: the sentinels
 * in order (valkey:// read as redis://, IPv6 in brackets), the master's
 * name percent-encoded; the data nodes' and the sentinels' credentials
 * apart. */
static void test_sentinel_every_honoured_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\n"
        "  \"sentinelServersConfig\": {\n"
        "    \"sentinelAddresses\": [\"redis://10.0.0.1:26379\",\n"
        "        \"redis://[::1]:26380\", \"valkey://s3:5000\"],\n"
        "    \"masterName\": \"my master\",\n"
        "    \"scanInterval\": 250,\n"
        "    \"username\": \"app\", \"password\": \"s3cret\",\n"
        "    \"sentinelUsername\": \"watch\",\n"
        "    \"sentinelPassword\": \"eyes\",\n"
        "    \"database\": 3,\n"
        "    \"masterConnectionPoolSize\": 8,\n"
        "    \"timeout\": 2345, \"clientName\": \"billing\",\n"
        "    \"readMode\": \"MASTER\", \"subscriptionMode\": \"SLAVE\"\n"
        "  }\n"
        "}\n");
    assert_string_equal(cfg->server, "redis+sentinel://10.0.0.1:26379,"
                                     "[::1]:26380,s3:5000/my%20master");
    assert_true(cfg->credentials_set);
    assert_string_equal(cfg->user, "app");
    assert_string_equal(cfg->password, "s3cret");
    assert_true(cfg->sentinel_credentials_set);
    assert_string_equal(cfg->sentinel_user, "watch");
    assert_string_equal(cfg->sentinel_password, "eyes");
    assert_int_equal(cfg->sentinel_scan_interval_ms, 250);
    assert_true(cfg->database_set);
    assert_int_equal(cfg->database, 3);
    assert_int_equal(cfg->connections, 8);
    assert_int_equal(cfg->command_timeout_ms, 2345);
    assert_string_equal(cfg->client_name, "billing");
    rlock__uri u;
    assert_int_equal(rlock__uri_parse(cfg->server, &u), 0);
    assert_string_equal(u.master, "my master");
    assert_int_equal(u.nsentinels, 3);
    assert_string_equal(u.sentinels[1].host, "::1");
    assert_int_equal(u.sentinels[2].port, 5000);
    rlock__uri_clear(&u);
    rlock_config_free(cfg);
}

/* ---- Cluster ------------------------------------------------------------ */

/* shardedSubscriptionMode BOTH is rlock's own value (a mixed fleet): the
 * rlock tool reads it from a file, as it has no option of its own. */
static void test_cluster_sharded_mode_both_is_read(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"clusterServersConfig\": {\"nodeAddresses\": "
                                "[\"redis://a:1\"], \"shardedSubscriptionMode\": "
                                "\"both\"}}");
    assert_int_equal(cfg->cluster_sharded, RLOCK_SHARDED_BOTH);
    rlock_config_free(cfg);
}

/* clusterServersConfig becomes a redis+cluster:// server: the nodes in
 * order (valkey:// read as redis://, IPv6 in brackets), with the scan
 * interval, the sharded mode, the credentials and the pool size. */
static void test_cluster_every_honoured_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\n"
        "  \"clusterServersConfig\": {\n"
        "    \"nodeAddresses\": [\"redis://10.0.0.1:7000\",\n"
        "        \"redis://[::1]:7001\", \"valkey://n3:7002\"],\n"
        "    \"scanInterval\": 1500,\n"
        "    \"shardedSubscriptionMode\": \"OFF\",\n"
        "    \"checkSlotsCoverage\": true,\n"
        "    \"username\": \"app\", \"password\": \"s3cret\",\n"
        "    \"masterConnectionPoolSize\": 6,\n"
        "    \"timeout\": 2345, \"clientName\": \"billing\",\n"
        "    \"readMode\": \"SLAVE\", \"subscriptionMode\": \"MASTER\",\n"
        "    \"slaveConnectionPoolSize\": 64, \"natMapper\": null\n"
        "  }\n"
        "}\n");
    assert_string_equal(cfg->server, "redis+cluster://10.0.0.1:7000,"
                                     "[::1]:7001,n3:7002");
    assert_int_equal(cfg->cluster_scan_interval_ms, 1500);
    assert_int_equal(cfg->cluster_sharded, RLOCK_SHARDED_OFF);
    assert_true(cfg->credentials_set);
    assert_string_equal(cfg->user, "app");
    assert_string_equal(cfg->password, "s3cret");
    assert_int_equal(cfg->connections, 6);
    assert_int_equal(cfg->command_timeout_ms, 2345);
    assert_string_equal(cfg->client_name, "billing");
    rlock__uri u;
    assert_int_equal(rlock__uri_parse(cfg->server, &u), 0);
    assert_int_equal(u.nseeds, 3);
    assert_string_equal(u.seeds[1].host, "::1");
    assert_int_equal(u.seeds[2].port, 7002);
    rlock__uri_clear(&u);
    rlock_config_free(cfg);
}

/* rediss:// nodes make a rediss+cluster:// server. */
static void test_cluster_tls_nodes(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"clusterServersConfig\": {\"nodeAddresses\": "
        "[\"rediss://a:7000\", \"rediss://b:7001\"]}}");
    assert_string_equal(cfg->server, "rediss+cluster://a:7000,b:7001");
    assert_int_equal(cfg->cluster_sharded, RLOCK_SHARDED_AUTO);
    rlock_config_free(cfg);
}

/* What Redisson 3.52's Config.toJSON writes for a sentinel config, as it
 * writes it: every Java-side key is accepted and changes nothing. */
static void test_sentinel_redisson_to_json_output(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"sentinelServersConfig\":{\"idleConnectionTimeout\":10000,"
        "\"connectTimeout\":10000,\"timeout\":3000,"
        "\"subscriptionTimeout\":7500,\"retryAttempts\":4,"
        "\"retryInterval\":1500,\"retryDelay\":{\"class\":"
        "\"org.redisson.config.EqualJitterDelay\"},\"reconnectionDelay\":"
        "{\"class\":\"org.redisson.config.EqualJitterDelay\"},"
        "\"credentialsResolver\":{\"class\":"
        "\"org.redisson.client.DefaultCredentialsResolver\"},"
        "\"subscriptionsPerConnection\":5,\"sslVerificationMode\":"
        "\"STRICT\",\"sslProvider\":\"JDK\",\"pingConnectionInterval\":"
        "30000,\"keepAlive\":false,\"tcpKeepAliveCount\":0,"
        "\"tcpKeepAliveIdle\":0,\"tcpKeepAliveInterval\":0,"
        "\"tcpUserTimeout\":0,\"tcpNoDelay\":true,\"nameMapper\":"
        "{\"class\":\"org.redisson.api.DefaultNameMapper\"},"
        "\"commandMapper\":{\"class\":"
        "\"org.redisson.config.DefaultCommandMapper\"},\"loadBalancer\":"
        "{\"class\":"
        "\"org.redisson.connection.balancer.RoundRobinLoadBalancer\"},"
        "\"slaveConnectionMinimumIdleSize\":24,\"slaveConnectionPoolSize\":"
        "64,\"failedSlaveReconnectionInterval\":3000,"
        "\"failedSlaveCheckInterval\":180000,"
        "\"masterConnectionMinimumIdleSize\":24,"
        "\"masterConnectionPoolSize\":64,\"readMode\":\"SLAVE\","
        "\"subscriptionMode\":\"MASTER\","
        "\"subscriptionConnectionMinimumIdleSize\":1,"
        "\"subscriptionConnectionPoolSize\":50,\"dnsMonitoringInterval\":"
        "5000,\"failedSlaveNodeDetector\":{\"class\":"
        "\"org.redisson.client.FailedConnectionDetector\"},"
        "\"sentinelAddresses\":[\"redis://127.0.0.1:26379\","
        "\"redis://127.0.0.1:26380\"],\"natMapper\":{\"class\":"
        "\"org.redisson.api.DefaultNatMapper\"},\"masterName\":"
        "\"mymaster\",\"database\":0,\"scanInterval\":1000,"
        "\"checkSentinelsList\":true,\"checkSlaveStatusWithSyncing\":true,"
        "\"sentinelsDiscovery\":true,\"sslEnableEndpointIdentification\":"
        "true},\"threads\":16,\"nettyThreads\":32,\"referenceEnabled\":"
        "true,\"transportMode\":\"NIO\",\"lockWatchdogTimeout\":30000,"
        "\"lockWatchdogBatchSize\":100,\"fairLockWaitTimeout\":300000,"
        "\"checkLockSyncedSlaves\":true,\"slavesSyncTimeout\":1000,"
        "\"reliableTopicWatchdogTimeout\":600000,\"keepPubSubOrder\":true,"
        "\"useScriptCache\":true,\"minCleanUpDelay\":5,"
        "\"maxCleanUpDelay\":1800,\"cleanUpKeysAmount\":100,"
        "\"nettyHook\":{\"class\":\"org.redisson.client.DefaultNettyHook\"},"
        "\"useThreadClassLoader\":true,\"addressResolverGroupFactory\":"
        "{\"class\":"
        "\"org.redisson.connection.SequentialDnsAddressResolverFactory\"},"
        "\"lazyInitialization\":false,\"protocol\":\"RESP2\","
        "\"valkeyCapabilities\":[]}");
    assert_string_equal(cfg->server,
                        "redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/"
                        "mymaster");
    assert_false(cfg->credentials_set);
    assert_false(cfg->sentinel_credentials_set);
    assert_int_equal(cfg->sentinel_scan_interval_ms, 1000);
    assert_int_equal(cfg->connections, 64);
    assert_int_equal(cfg->retry_attempts, 4);
    assert_int_equal(cfg->fair_wait_timeout_ms, 300000);
    rlock_config_free(cfg);
}

/* rediss:// sentinels make a rediss+sentinel:// server: TLS to the
 * sentinels and to the master, as Redisson takes the sentinels' scheme
 * for the master's. */
static void test_sentinel_tls_scheme(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"sentinelServersConfig\": {\"masterName\": \"m\",\n"
        "  \"sentinelAddresses\": [\"rediss://a:1\", \"valkeys://b:2\"],\n"
        "  \"sslTruststore\": \"/etc/redis/ca.pem\"}}");
    assert_string_equal(cfg->server, "rediss+sentinel://a:1,b:2/m");
    assert_string_equal(cfg->tls_ca_file, "/etc/redis/ca.pem");
    rlock_config_free(cfg);
}

/* "" and null passwords mean none, for the sentinels too. */
static void test_sentinel_empty_passwords_mean_none(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"sentinelServersConfig\": {\"masterName\": \"m\",\n"
        "  \"sentinelAddresses\": [\"redis://a:1\"],\n"
        "  \"password\": \"\", \"sentinelPassword\": null,\n"
        "  \"sentinelUsername\": null}}");
    assert_false(cfg->credentials_set);
    assert_false(cfg->sentinel_credentials_set);
    rlock_config_free(cfg);
}

static void test_sentinel_setters(void **state)
{
    (void)state;
    rlock_config *cfg;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(cfg->sentinel_scan_interval_ms, 1000);
    assert_false(cfg->sentinel_credentials_set);
    assert_int_equal(rlock_config_set_server(cfg, "redis+sentinel://a,b/m/2"),
                     0);

    assert_int_equal(rlock_config_set_sentinel_credentials(cfg, "u", NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_sentinel_credentials(cfg, "", "pw"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_sentinel_credentials(NULL, NULL, "pw"),
                     RLOCK_EINVAL);
    assert_false(cfg->sentinel_credentials_set);
    char pw[] = "eyes";
    assert_int_equal(rlock_config_set_sentinel_credentials(cfg, "w", pw), 0);
    pw[0] = 'X'; /* copied */
    assert_string_equal(cfg->sentinel_password, "eyes");
    assert_false(cfg->credentials_set); /* the data nodes' stay apart */

    assert_int_equal(rlock_config_set_sentinel_scan_interval(cfg, 0),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_sentinel_scan_interval(cfg, 1), 0);
    assert_int_equal(rlock_config_set_sentinel_scan_interval(NULL, 5),
                     RLOCK_EINVAL);

    rlock_config copy;
    assert_int_equal(rlock__config_copy(&copy, cfg), 0);
    rlock_config_free(cfg);
    assert_string_equal(copy.sentinel_user, "w");
    assert_string_equal(copy.sentinel_password, "eyes");
    assert_int_equal(copy.sentinel_scan_interval_ms, 1);
    rlock__config_clear(&copy);
    assert_null(copy.sentinel_user);
    assert_null(copy.sentinel_password);
    assert_false(copy.sentinel_credentials_set);
}

/* ---- TLS ---------------------------------------------------------------- */

/* rediss:// with PEM files in Redisson's keys: a truststore is the CA file,
 * a keystore one file holding the client certificate and its key. */
static void test_tls_pem_stores(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"singleServerConfig\": {\"address\": \"rediss://cache:6380\",\n"
        "  \"sslTruststore\": \"/etc/redis/ca.pem\",\n"
        "  \"sslTruststorePassword\": null,\n"
        "  \"sslKeystore\": \"file:/etc/redis/client.pem\",\n"
        "  \"sslKeystorePassword\": \"\",\n"
        "  \"sslProvider\": \"OPENSSL\",\n"
        "  \"sslProtocols\": null, \"sslCiphers\": null}}");
    assert_string_equal(cfg->server, "rediss://cache:6380");
    assert_string_equal(cfg->tls_ca_file, "/etc/redis/ca.pem");
    assert_string_equal(cfg->tls_cert_file, "/etc/redis/client.pem");
    assert_string_equal(cfg->tls_key_file, "/etc/redis/client.pem");
    assert_null(cfg->tls_ca_dir);
    assert_int_equal(cfg->tls_verify, RLOCK_TLS_VERIFY_FULL);
    rlock_config_free(cfg);
}

/* A file: URL with a host part, as java.net.URL may write it, and the
 * .crt spelling. */
static void test_tls_file_url_with_localhost(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"singleServerConfig\": {\"sslTruststore\": "
                                "\"file://localhost/srv/ca.crt\"}}");
    assert_string_equal(cfg->tls_ca_file, "/srv/ca.crt");
    rlock_config_free(cfg);
}

static void test_tls_valkeys_scheme(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok(
        "{\"singleServerConfig\": {\"address\": \"valkeys://cache:7000\"}}");
    assert_string_equal(cfg->server, "rediss://cache:7000");
    rlock_config_free(cfg);
}

/* Redisson 3.x turns host name checks off with this key. */
static void test_tls_endpoint_identification_off_is_ca_only(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"singleServerConfig\": "
                                "{\"sslEnableEndpointIdentification\": false}}");
    assert_int_equal(cfg->tls_verify, RLOCK_TLS_VERIFY_CA_ONLY);
    rlock_config_free(cfg);
}

static void test_tls_verification_modes(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int mode;
    } modes[] = {{"STRICT", RLOCK_TLS_VERIFY_FULL},
                 {"CA_ONLY", RLOCK_TLS_VERIFY_CA_ONLY},
                 {"NONE", RLOCK_TLS_VERIFY_NONE_INSECURE}};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text),
                 "{\"singleServerConfig\": {\"sslVerificationMode\": "
                 "\"%s\"}}",
                 modes[i].name);
        rlock_config *cfg = load_ok(text);
        assert_int_equal(cfg->tls_verify, modes[i].mode);
        rlock_config_free(cfg);
    }
}

/* ---- TLS setters -------------------------------------------------------- */

static void test_tls_setters_copy_and_clear(void **state)
{
    (void)state;
    rlock_config *cfg = NULL;
    char ca[] = "/tmp/ca.pem";
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(cfg->tls_verify, RLOCK_TLS_VERIFY_FULL);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, ca), 0);
    ca[1] = 'X'; /* the caller's buffer is not kept */
    assert_string_equal(cfg->tls_ca_file, "/tmp/ca.pem");
    assert_int_equal(rlock_config_set_tls_ca_dir(cfg, "/etc/ssl/certs"), 0);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, "c.pem", "k.pem"),
                     0);
    assert_int_equal(rlock_config_set_tls_server_name(cfg, "redis.internal"),
                     0);
    assert_int_equal(
        rlock_config_set_tls_verify(cfg, RLOCK_TLS_VERIFY_NONE_INSECURE), 0);
    rlock_config copy;
    assert_int_equal(rlock__config_copy(&copy, cfg), 0);
    assert_string_equal(copy.tls_ca_dir, "/etc/ssl/certs");
    assert_string_equal(copy.tls_cert_file, "c.pem");
    assert_string_equal(copy.tls_key_file, "k.pem");
    assert_string_equal(copy.tls_server_name, "redis.internal");
    assert_int_equal(copy.tls_verify, RLOCK_TLS_VERIFY_NONE_INSECURE);
    rlock__config_clear(&copy);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, NULL), 0);
    assert_null(cfg->tls_ca_file);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, NULL, NULL), 0);
    assert_null(cfg->tls_cert_file);
    assert_null(cfg->tls_key_file);
    rlock_config_free(cfg);
}

static void test_tls_setters_refuse_bad_values(void **state)
{
    (void)state;
    rlock_config *cfg = NULL;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_tls_ca_file(NULL, "x"), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, ""), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_ca_dir(cfg, ""), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, "c.pem", NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, NULL, "k.pem"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_client_cert(cfg, "c.pem", ""),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_server_name(cfg, "two words"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_server_name(cfg, ""), RLOCK_EINVAL);
    char long_name[300];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(rlock_config_set_tls_server_name(cfg, long_name),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_verify(cfg, 3), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_tls_verify(cfg, -1), RLOCK_EINVAL);
    /* nothing was changed by a refusal */
    assert_null(cfg->tls_ca_file);
    assert_null(cfg->tls_cert_file);
    assert_null(cfg->tls_server_name);
    assert_int_equal(cfg->tls_verify, RLOCK_TLS_VERIFY_FULL);
    rlock_config_free(cfg);
}

/* An escaped key is compared decoded. */
static void test_escaped_key(void **state)
{
    (void)state;
    rlock_config *cfg = load_ok("{\"lockWatchdog\\u0054imeout\": 31000}");
    assert_int_equal(cfg->watchdog_timeout_ms, 31000);
    rlock_config_free(cfg);
}

/* ------------------------------------------------------------------------ */
/* Refused files                                                            */
/* ------------------------------------------------------------------------ */

typedef struct refusal {
    const char *text;
    int line;
    const char *key;    /* the message reads "FILE:LINE: <key>" */
    const char *phrase; /* ... and contains this */
} refusal;

static void test_refuses(void **state)
{
    const refusal *c = *state;
    rlock_config *cfg = (rlock_config *)&cfg; /* must be reset to NULL */
    char err[512];
    char want[256];

    write_file(c->text);
    assert_int_equal(rlock_config_load_file(&cfg, path, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_null(cfg);
    snprintf(want, sizeof(want), "%s:%d: %s", path, c->line, c->key);
    if (strncmp(err, want, strlen(want)) != 0 || strstr(err, c->phrase) == NULL)
        fail_msg("got \"%s\"\nwant \"%s...\" with \"%s\"", err, want,
                 c->phrase);
}

#define REFUSES(name, text, line, key, phrase)                        \
    {                                                                 \
        "refuses_" name, test_refuses, NULL, NULL, (void *)&(refusal) \
        {                                                             \
            (text), (line), (key), (phrase)                           \
        }                                                             \
    }

/* The same key name at two levels, and a value spelling a key's name: the
 * line must be the offending key's own. */
static const char scanner_text[] = "{\n"
                                   "  \"singleServerConfig\": {\n"
                                   "    \"clientName\": \"timeout\",\n"
                                   "    \"timeout\": 3000\n"
                                   "  },\n"
                                   "  \"timeout\": 5\n"
                                   "}\n";

static const char range_text[] = "{\n"
                                 "  \"singleServerConfig\": {\n"
                                 "    \"address\": \"redis://h:1\",\n"
                                 "    \"timeout\": 0\n"
                                 "  }\n"
                                 "}\n";

/* ------------------------------------------------------------------------ */
/* Arguments and the other entry points                                     */
/* ------------------------------------------------------------------------ */

static void test_missing_file(void **state)
{
    (void)state;
    rlock_config *cfg;
    char err[256];
    char missing[200];

    snprintf(missing, sizeof(missing), "%s/nope.json", dir);
    assert_int_equal(rlock_config_load_file(&cfg, missing, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_null(cfg);
    assert_non_null(strstr(err, missing));
    assert_non_null(strstr(err, "cannot open"));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    rlock_config *cfg;
    char err[64];

    assert_int_equal(rlock_config_load_file(NULL, path, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_load_file(&cfg, NULL, err, sizeof(err)),
                     RLOCK_EINVAL);
    assert_null(cfg);
    /* no errbuf is fine, and a tiny one is filled without overflow */
    write_file("{\"nope\": 1}");
    assert_int_equal(rlock_config_load_file(&cfg, path, NULL, 0), RLOCK_EINVAL);
    char tiny[8];
    assert_int_equal(rlock_config_load_file(&cfg, path, tiny, sizeof(tiny)),
                     RLOCK_EINVAL);
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);

    rlock_client *c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_config(&c, NULL), RLOCK_EINVAL);
    assert_null(c);
    assert_int_equal(rlock_client_connect_config(NULL, path), RLOCK_EINVAL);
    /* a refused file refuses the connect, before any network */
    c = (rlock_client *)&c;
    assert_int_equal(rlock_client_connect_config(&c, path), RLOCK_EINVAL);
    assert_null(c);
    /* no server anywhere: nothing to connect to */
    write_file("{\"lockWatchdogTimeout\": 30000}");
    assert_int_equal(rlock_client_connect_config(&c, path), RLOCK_EINVAL);
    rlock_config *empty;
    assert_int_equal(rlock_config_new(&empty), 0);
    assert_int_equal(rlock_client_connect_with(&c, NULL, empty), RLOCK_EINVAL);
    assert_int_equal(rlock_client_connect_with(&c, NULL, NULL), RLOCK_EINVAL);
    rlock_config_free(empty);
}

static void test_server_setters(void **state)
{
    (void)state;
    rlock_config *cfg;
    assert_int_equal(rlock_config_new(&cfg), 0);

    assert_int_equal(rlock_config_set_server(cfg, "redis://h:1/2"), 0);
    assert_string_equal(cfg->server, "redis://h:1/2");
    assert_int_equal(rlock_config_set_server(cfg, "http://h"), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_server(cfg, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_server(NULL, "redis://h"), RLOCK_EINVAL);
    assert_string_equal(cfg->server, "redis://h:1/2"); /* unchanged */

    assert_int_equal(rlock_config_set_credentials(cfg, "u", NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, "", "pw"), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, ""), RLOCK_EINVAL);
    assert_false(cfg->credentials_set);
    assert_int_equal(rlock_config_set_credentials(cfg, "u", "pw"), 0);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, "pw2"), 0);
    assert_null(cfg->user);
    assert_string_equal(cfg->password, "pw2");

    assert_int_equal(rlock_config_set_database(cfg, -1), RLOCK_EINVAL);
    assert_false(cfg->database_set);
    assert_int_equal(rlock_config_set_database(cfg, 0), 0);
    assert_true(cfg->database_set);

    assert_int_equal(rlock_config_set_client_name(cfg, "has space"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_client_name(cfg, ""), RLOCK_EINVAL);
    assert_int_equal(rlock_config_set_client_name(cfg, "worker-1"), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, NULL), 0);
    assert_null(cfg->client_name);
    rlock_config_free(cfg);
}

/* The client's deep copy, and how settings lay over a parsed URI. */
static void test_copy_and_apply(void **state)
{
    (void)state;
    rlock_config *cfg;
    rlock_config copy;
    rlock__uri u;

    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_server(cfg, "redis://a:b@h:9/4"), 0);
    assert_int_equal(rlock__config_copy(&copy, cfg), 0);
    /* no settings: the URI's own credentials and database stay */
    assert_int_equal(rlock__uri_parse(copy.server, &u), 0);
    assert_int_equal(rlock__config_apply_uri(&copy, &u), 0);
    assert_string_equal(u.user, "a");
    assert_string_equal(u.password, "b");
    assert_int_equal(u.db, 4);
    rlock__uri_clear(&u);
    rlock__config_clear(&copy);

    assert_int_equal(rlock_config_set_credentials(cfg, NULL, "pw"), 0);
    assert_int_equal(rlock_config_set_database(cfg, 0), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, "n"), 0);
    assert_int_equal(rlock__config_copy(&copy, cfg), 0);
    rlock_config_free(cfg); /* the copy owns its own strings */
    assert_string_equal(copy.server, "redis://a:b@h:9/4");
    assert_string_equal(copy.password, "pw");
    assert_string_equal(copy.client_name, "n");
    assert_int_equal(rlock__uri_parse(copy.server, &u), 0);
    assert_int_equal(rlock__config_apply_uri(&copy, &u), 0);
    assert_null(u.user);
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.db, 0);
    rlock__uri_clear(&u);
    rlock__config_clear(&copy);
    assert_null(copy.server);
}

/* Every allocation of a load of text failing in turn: RLOCK_ENOMEM,
 * nothing returned, nothing leaked (LSan), until the load succeeds with
 * server want; then the same for the client's copy. */
static void out_of_memory_loop(const char *text, const char *want)
{
    char err[256];
    int failures = 0;

    write_file(text);
    for (long n = 0;; n++) {
        rlock_config *cfg = (rlock_config *)&cfg;
        rlock__alloc_fail_after(n);
        int rc = rlock_config_load_file(&cfg, path, err, sizeof(err));
        rlock__alloc_fail_after(-1);
        if (rc == RLOCK_OK) {
            rlock_config copy;
            assert_string_equal(cfg->server, want);
            for (long m = 0;; m++) {
                rlock__alloc_fail_after(m);
                rc = rlock__config_copy(&copy, cfg);
                rlock__alloc_fail_after(-1);
                if (rc == RLOCK_OK)
                    break;
                assert_int_equal(rc, RLOCK_ENOMEM);
            }
            assert_string_equal(copy.client_name, "n");
            rlock__config_clear(&copy);
            rlock_config_free(cfg);
            break;
        }
        if (rc != RLOCK_ENOMEM)
            fail_msg("allocation %ld failing gave %s: %s", n,
                     rlock_err_name(rc), err);
        assert_null(cfg);
        assert_non_null(strstr(err, "out of memory"));
        failures++;
    }
    assert_true(failures >= 5); /* the loop did reach the allocations */
}

static void test_out_of_memory(void **state)
{
    (void)state;
    out_of_memory_loop("{\n"
                       "  \"singleServerConfig\": {\n"
                       "    \"address\": \"valkey://10.1.2.3:6390\",\n"
                       "    \"username\": \"app\", \"password\": \"pw\",\n"
                       "    \"database\": 7, \"clientName\": \"n\"\n"
                       "  },\n"
                       "  \"codec\": null,\n"
                       "  \"lockWatchdogTimeout\": 45000\n"
                       "}\n",
                       "redis://10.1.2.3:6390");
}

static void test_out_of_memory_sentinel(void **state)
{
    (void)state;
    out_of_memory_loop("{\"sentinelServersConfig\": {\n"
                       "  \"sentinelAddresses\": [\"redis://a:1\",\n"
                       "      \"valkey://[::1]:2\"],\n"
                       "  \"masterName\": \"m 1\", \"clientName\": \"n\",\n"
                       "  \"password\": \"pw\", \"sentinelPassword\": \"s\"\n"
                       "}}\n",
                       "redis+sentinel://a:1,[::1]:2/m%201");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_honoured_key),
        cmocka_unit_test(test_lock_barging_key),
        cmocka_unit_test(test_sync_replicas_keys),
        cmocka_unit_test(test_sync_replicas_setter),
        cmocka_unit_test(test_lock_barging_setter),
        cmocka_unit_test(test_lock_queue_key),
        cmocka_unit_test(test_lock_queue_setter),
        cmocka_unit_test(test_redisson_to_json_output),
        cmocka_unit_test(test_no_server),
        cmocka_unit_test(test_pool_size_capped),
        cmocka_unit_test(test_password_without_user),
        cmocka_unit_test(test_empty_strings_mean_none),
        cmocka_unit_test(test_valkey_scheme),
        cmocka_unit_test(test_escaped_key),
        cmocka_unit_test(test_sentinel_every_honoured_key),
        cmocka_unit_test(test_cluster_sharded_mode_both_is_read),
        cmocka_unit_test(test_cluster_every_honoured_key),
        cmocka_unit_test(test_cluster_tls_nodes),
        cmocka_unit_test(test_sentinel_redisson_to_json_output),
        cmocka_unit_test(test_sentinel_tls_scheme),
        cmocka_unit_test(test_sentinel_empty_passwords_mean_none),
        cmocka_unit_test(test_sentinel_setters),
        cmocka_unit_test(test_tls_pem_stores),
        cmocka_unit_test(test_tls_file_url_with_localhost),
        cmocka_unit_test(test_tls_valkeys_scheme),
        cmocka_unit_test(test_tls_endpoint_identification_off_is_ca_only),
        cmocka_unit_test(test_tls_verification_modes),
        cmocka_unit_test(test_tls_setters_copy_and_clear),
        cmocka_unit_test(test_tls_setters_refuse_bad_values),

        /* clang-format off */
        REFUSES("malformed_json", "{\n  \"lockWatchdogTimeout\": 3000\n",
                3, "in lockWatchdogTimeout: malformed JSON",
                "'}' expected near end of file"),
        REFUSES("malformed_value_names_key",
                "{\n  \"singleServerConfig\": {\n    \"timeout\": 30x0\n"
                "  }\n}\n",
                3, "in singleServerConfig.timeout: malformed JSON",
                "near"),
        REFUSES("trailing_garbage", "{}\n\nxyz\n", 3, "malformed JSON",
                "end of file expected"),
        REFUSES("empty_file", "", 1, "malformed JSON", "expected"),
        REFUSES("lock_barging_not_a_boolean",
                "{\n  \"rlockLockBarging\": \"yes\"\n}\n", 2,
                "rlockLockBarging", "true or false"),
        REFUSES("sync_replicas_not_a_boolean",
                "{\n  \"checkLockSyncedSlaves\": 1\n}\n", 2,
                "checkLockSyncedSlaves", "true or false"),
        REFUSES("duplicate_key",
                "{\n  \"lockWatchdogTimeout\": 30000,\n"
                "  \"lockWatchdogTimeout\": 40000\n}\n",
                3, "in lockWatchdogTimeout: malformed JSON", "duplicate"),
        REFUSES("top_level_array", "[1, 2]", 1, "(top level): ",
                "must be a JSON object"),
        REFUSES("unknown_top_key", "{\n  \"lockWatchdogTimeout\": 30000,\n"
                "  \"lockWatchdogTimout\": 1\n}", 3,
                "lockWatchdogTimout: ", "unknown key"),
        REFUSES("unknown_server_key", "{\"singleServerConfig\": {\n"
                "  \"adress\": \"redis://h\"}}", 2,
                "singleServerConfig.adress: ", "unknown key"),
        REFUSES("same_name_other_level", scanner_text, 6, "timeout: ",
                "unknown key"),
        REFUSES("timeout_zero", range_text, 4,
                "singleServerConfig.timeout: ", "from 1 to 2147483647"),
        REFUSES("timeout_string",
                "{\"singleServerConfig\": {\"timeout\": \"3000\"}}", 1,
                "singleServerConfig.timeout: ",
                "must be an integer (got a string)"),
        REFUSES("timeout_fraction",
                "{\"singleServerConfig\": {\"timeout\": 3000.5}}", 1,
                "singleServerConfig.timeout: ", "must be an integer"),
        REFUSES("connect_timeout_negative",
                "{\"singleServerConfig\": {\"connectTimeout\": -1}}", 1,
                "singleServerConfig.connectTimeout: ", "from 1"),
        REFUSES("retry_attempts_range",
                "{\"singleServerConfig\": {\"retryAttempts\": 101}}", 1,
                "singleServerConfig.retryAttempts: ", "from 0 to 100"),
        REFUSES("retry_interval_negative",
                "{\"singleServerConfig\": {\"retryInterval\": -5}}", 1,
                "singleServerConfig.retryInterval: ", "from 0"),
        REFUSES("database_negative",
                "{\"singleServerConfig\": {\"database\": -1}}", 1,
                "singleServerConfig.database: ", "from 0"),
        REFUSES("pool_size_zero",
                "{\"singleServerConfig\": {\"connectionPoolSize\": 0}}", 1,
                "singleServerConfig.connectionPoolSize: ", "from 1"),
        REFUSES("watchdog_too_small", "{\n\"lockWatchdogTimeout\": 29}", 2,
                "lockWatchdogTimeout: ", "from 30"),
        REFUSES("ignored_key_wrong_type",
                "{\"singleServerConfig\": {\n\"keepAlive\": 1}}", 2,
                "singleServerConfig.keepAlive: ", "true or false"),
        REFUSES("ignored_int_wrong_type", "{\"threads\": \"16\"}", 1,
                "threads: ", "must be an integer"),
        REFUSES("address_number",
                "{\"singleServerConfig\": {\"address\": 6379}}", 1,
                "singleServerConfig.address: ", "string or null"),
        REFUSES("tls_address_unparsable",
                "{\"singleServerConfig\": {\n\n\"address\": "
                "\"rediss://h:0\"}}",
                3, "singleServerConfig.address: ", "is not a redis[s]://"),
        REFUSES("tls_jks_truststore",
                "{\"singleServerConfig\": {\n\"sslTruststore\": "
                "\"file:/etc/truststore.jks\"}}", 2,
                "singleServerConfig.sslTruststore: ",
                "not Java key stores (JKS, PKCS#12)"),
        REFUSES("tls_pkcs12_keystore",
                "{\"singleServerConfig\": {\"sslKeystore\": "
                "\"/etc/client.p12\"}}", 1,
                "singleServerConfig.sslKeystore: ",
                "not Java key stores (JKS, PKCS#12)"),
        REFUSES("tls_classpath_truststore",
                "{\"singleServerConfig\": {\"sslTruststore\": "
                "\"classpath:ca.pem\"}}", 1,
                "singleServerConfig.sslTruststore: ", "not a Java resource"),
        REFUSES("tls_truststore_password",
                "{\"singleServerConfig\": {\"sslTruststorePassword\": "
                "\"changeit\"}}", 1,
                "singleServerConfig.sslTruststorePassword: ",
                "take no password"),
        REFUSES("tls_keystore_password",
                "{\"singleServerConfig\": {\"sslKeystorePassword\": "
                "\"changeit\"}}", 1,
                "singleServerConfig.sslKeystorePassword: ",
                "take no password"),
        REFUSES("tls_protocols",
                "{\"singleServerConfig\": {\"sslProtocols\": "
                "[\"TLSv1.3\"]}}", 1,
                "singleServerConfig.sslProtocols: ", "is not supported"),
        REFUSES("tls_ciphers",
                "{\"singleServerConfig\": {\"sslCiphers\": "
                "[\"TLS_AES_128_GCM_SHA256\"]}}", 1,
                "singleServerConfig.sslCiphers: ", "is not supported"),
        REFUSES("tls_trust_manager_factory",
                "{\"singleServerConfig\": {\"sslTrustManagerFactory\": "
                "{\"class\": \"com.acme.Trust\"}}}", 1,
                "singleServerConfig.sslTrustManagerFactory: ",
                "is not supported"),
        REFUSES("tls_unknown_provider",
                "{\"singleServerConfig\": {\"sslProvider\": \"BC\"}}", 1,
                "singleServerConfig.sslProvider: ", "JDK or OPENSSL"),
        REFUSES("tls_unknown_verification_mode",
                "{\"singleServerConfig\": {\"sslVerificationMode\": "
                "\"LAX\"}}", 1,
                "singleServerConfig.sslVerificationMode: ",
                "STRICT, CA_ONLY or NONE"),
        REFUSES("tls_endpoint_identification_string",
                "{\"singleServerConfig\": "
                "{\"sslEnableEndpointIdentification\": \"no\"}}", 1,
                "singleServerConfig.sslEnableEndpointIdentification: ",
                "true or false"),
        REFUSES("address_without_scheme",
                "{\"singleServerConfig\": {\"address\": \"h:6379\"}}", 1,
                "singleServerConfig.address: ", "needs a scheme"),
        REFUSES("address_unparsable",
                "{\"singleServerConfig\": {\"address\": \"redis://h:0\"}}", 1,
                "singleServerConfig.address: ", "is not a redis[s]://"),
        REFUSES("username_without_password",
                "{\"singleServerConfig\": {\n\"username\": \"u\"}}", 2,
                "singleServerConfig.username: ", "needs a password"),
        REFUSES("client_name_with_space",
                "{\"singleServerConfig\": {\"clientName\": \"my app\"}}", 1,
                "singleServerConfig.clientName: ", "without spaces"),
        REFUSES("name_mapper",
                "{\"singleServerConfig\": {\"nameMapper\": "
                "{\"class\": \"com.acme.PrefixMapper\"}}}", 1,
                "singleServerConfig.nameMapper: ", "not supported"),
        REFUSES("server_config_not_object", "{\"singleServerConfig\": 1}", 1,
                "singleServerConfig: ", "must be an object"),
        REFUSES("master_slave", "{\n\"masterSlaveServersConfig\": "
                "{\"masterAddress\": \"redis://h:7000\"}}", 2,
                "masterSlaveServersConfig: ", "not supported yet"),
        REFUSES("cluster_without_addresses", "{\"clusterServersConfig\": "
                "{\"scanInterval\": 1000}}", 1,
                "clusterServersConfig: ", "needs nodeAddresses"),
        REFUSES("cluster_empty_addresses", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": []}}", 1,
                "clusterServersConfig.nodeAddresses: ", "non-empty array"),
        REFUSES("cluster_mixed_tls", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": [\"redis://a:1\",\n"
                "\"rediss://b:2\"]}}", 1,
                "clusterServersConfig.nodeAddresses[1]: ", "mixes"),
        REFUSES("cluster_address_with_password", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": [\"redis://:pw@a:1\"]}}", 1,
                "clusterServersConfig.nodeAddresses[0]: ", "no password"),
        REFUSES("cluster_unknown_sharded_mode", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": [\"redis://a:1\"],\n"
                "\"shardedSubscriptionMode\": \"MAYBE\"}}", 2,
                "clusterServersConfig.shardedSubscriptionMode: ",
                "AUTO, ON, OFF or BOTH"),
        REFUSES("cluster_without_slot_coverage", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": [\"redis://a:1\"],\n"
                "\"checkSlotsCoverage\": false}}", 2,
                "clusterServersConfig.checkSlotsCoverage: ", "not supported"),
        REFUSES("cluster_with_database", "{\"clusterServersConfig\": "
                "{\"nodeAddresses\": [\"redis://a:1\"],\n"
                "\"database\": 1}}", 2,
                "clusterServersConfig.database: ", "unknown key"),
        REFUSES("sentinel_without_addresses", "{\n\"sentinelServersConfig\": "
                "{\"masterName\": \"m\"}}", 2,
                "sentinelServersConfig: ", "needs sentinelAddresses"),
        REFUSES("sentinel_empty_addresses", "{\"sentinelServersConfig\": "
                "{\"masterName\": \"m\", \"sentinelAddresses\": []}}", 1,
                "sentinelServersConfig: ", "needs sentinelAddresses"),
        REFUSES("sentinel_without_master_name", "{\"sentinelServersConfig\": "
                "{\"sentinelAddresses\": [\"redis://h:26379\"]}}", 1,
                "sentinelServersConfig: ", "needs masterName"),
        REFUSES("sentinel_empty_master_name", "{\"sentinelServersConfig\": "
                "{\n\"masterName\": \"\"}}", 2,
                "sentinelServersConfig.masterName: ", "must not be empty"),
        REFUSES("sentinel_addresses_not_array", "{\"sentinelServersConfig\": "
                "{\"sentinelAddresses\": \"redis://h:26379\"}}", 1,
                "sentinelServersConfig.sentinelAddresses: ",
                "must be an array"),
        REFUSES("sentinel_address_not_string", "{\"sentinelServersConfig\": "
                "{\"masterName\": \"m\",\n\"sentinelAddresses\": "
                "[\"redis://a:1\", 26379]}}", 2,
                "sentinelServersConfig.sentinelAddresses[1]: ",
                "string or null"),
        REFUSES("sentinel_address_without_scheme",
                "{\"sentinelServersConfig\": {\"masterName\": \"m\", "
                "\"sentinelAddresses\": [\"h:26379\"]}}", 1,
                "sentinelServersConfig.sentinelAddresses[0]: ",
                "must be an address such as"),
        REFUSES("sentinel_address_unparsable",
                "{\"sentinelServersConfig\": {\"masterName\": \"m\", "
                "\"sentinelAddresses\": [\"redis://h:0\"]}}", 1,
                "sentinelServersConfig.sentinelAddresses[0]: ",
                "is not a redis[s]://host[:port] address"),
        REFUSES("sentinel_address_with_password",
                "{\"sentinelServersConfig\": {\"masterName\": \"m\", "
                "\"sentinelAddresses\": [\"redis://:pw@h:26379\"]}}", 1,
                "sentinelServersConfig.sentinelAddresses[0]: ",
                "use sentinelPassword"),
        REFUSES("sentinel_mixed_schemes",
                "{\"sentinelServersConfig\": {\"masterName\": \"m\", "
                "\"sentinelAddresses\": [\"redis://a:1\", "
                "\"rediss://b:2\"]}}", 1,
                "sentinelServersConfig.sentinelAddresses[1]: ",
                "mixes redis:// and rediss://"),
        REFUSES("sentinel_username_without_password",
                "{\"sentinelServersConfig\": {\"masterName\": \"m\", "
                "\"sentinelAddresses\": [\"redis://a:1\"],\n"
                "\"sentinelUsername\": \"watcher\"}}", 2,
                "sentinelServersConfig.sentinelUsername: ",
                "needs a password (sentinelServersConfig.sentinelPassword)"),
        REFUSES("sentinel_scan_interval_zero",
                "{\"sentinelServersConfig\": {\"scanInterval\": 0}}", 1,
                "sentinelServersConfig.scanInterval: ", "from 1"),
        REFUSES("sentinel_nat_mapper",
                "{\"sentinelServersConfig\": {\"natMapper\": "
                "{\"class\": \"org.redisson.api.HostPortNatMapper\"}}}", 1,
                "sentinelServersConfig.natMapper: ",
                "connects to the addresses the sentinels give"),
        REFUSES("sentinel_single_server_key",
                "{\"sentinelServersConfig\": {\"address\": "
                "\"redis://h\"}}", 1,
                "sentinelServersConfig.address: ", "unknown key"),
        REFUSES("single_and_sentinel",
                "{\"singleServerConfig\": {\"address\": \"redis://h\"},\n"
                "\"sentinelServersConfig\": {\"masterName\": \"m\"}}", 2,
                "sentinelServersConfig: ",
                "cannot be given with singleServerConfig"),
        REFUSES("master_slave", "{\"masterSlaveServersConfig\": {}}", 1,
                "masterSlaveServersConfig: ", "not supported yet"),
        REFUSES("replicated", "{\"replicatedServersConfig\": {}}", 1,
                "replicatedServersConfig: ", "not supported yet"),
        /* clang-format on */

        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_server_setters),
        cmocka_unit_test(test_copy_and_apply),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_out_of_memory_sentinel),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
