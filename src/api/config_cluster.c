/*
 * api/config_cluster.c: Redisson's clusterServersConfig in a config file,
 * beside config_keys.c's single-server and Sentinel keys.
 *
 * Design note. The file's nodeAddresses become a redis+cluster:// URI
 * (proto/uri.c), so that a file and a URI give the same server; the other
 * keys map onto the setters, as config_keys.c does for the other modes.
 * What rlock has no use for (replicas are Java's business: rlock reads
 * and writes on masters only) is accepted and ignored; what would change
 * behaviour rlock does not have is refused by name.
 */
#include "api/api.h"
#include "api/config_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int apply_node_addresses(loader *ld, const char *path, const json_t *v)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return rlock__cf_fail(ld, path,
                              "must be a non-empty array of "
                              "\"redis://host:port\" strings");
    if (json_array_size(v) > RLOCK__URI_SEEDS_MAX)
        return rlock__cf_fail(ld, path, "lists more than %d nodes",
                              RLOCK__URI_SEEDS_MAX);
    ld->node_addresses = v;
    return RLOCK_OK;
}

static int apply_scan_interval(loader *ld, const char *path, const json_t *v)
{
    return rlock__cf_apply_ms(ld, path, v, 1, rlock_config_set_cluster_scan_interval);
}

/* Redisson's ShardedSubscriptionMode: AUTO, ON or OFF; and rlock's own
 * BOTH (RLOCK_SHARDED_BOTH), for a fleet that mixes sharded and plain
 * peers, which Redisson's loader refuses: a file that says it is rlock's
 * alone, as one with rlock's own keys is. */
static int apply_sharded_mode(loader *ld, const char *path, const json_t *v)
{
    const char *s = NULL;
    int rc = rlock__cf_get_string(ld, path, v, &s);
    if (rc != 0 || s == NULL)
        return rc;
    int mode = strcasecmp(s, "AUTO") == 0  ? RLOCK_SHARDED_AUTO
               : strcasecmp(s, "ON") == 0  ? RLOCK_SHARDED_ON
               : strcasecmp(s, "OFF") == 0 ? RLOCK_SHARDED_OFF
               : strcasecmp(s, "BOTH") == 0 ? RLOCK_SHARDED_BOTH
                                            : -1;
    if (mode < 0)
        return rlock__cf_fail(ld, path,
                              "must be AUTO, ON, OFF or BOTH (got \"%s\")", s);
    return rlock__cf_setter(ld, path,
                            rlock_config_set_cluster_sharded(ld->cfg, mode));
}

/* rlock always requires every slot served at connect time. */
static int apply_slots_coverage(loader *ld, const char *path, const json_t *v)
{
    if (json_is_true(v) || json_is_null(v))
        return RLOCK_OK;
    return rlock__cf_fail(ld, path,
                          "false is not supported: rlock connects only to a "
                          "cluster that serves every slot");
}

static int apply_default_only_nat(loader *ld, const char *path,
                                  const json_t *v)
{
    if (rlock__cf_is_default_class(v))
        return RLOCK_OK;
    return rlock__cf_fail(ld, path,
                          "is not supported: rlock connects to the addresses "
                          "the cluster gives (leave it out or null)");
}

/* Redisson's ClusterServersConfig and BaseMasterSlaveServersConfig, beside
 * the BaseConfig keys (config_keys.c). */
static const key_rule cluster_own_rules[] = {
    {"nodeAddresses", HONOURED, apply_node_addresses},
    {"scanInterval", HONOURED, apply_scan_interval},
    {"shardedSubscriptionMode", HONOURED, apply_sharded_mode},
    {"checkSlotsCoverage", HONOURED, apply_slots_coverage},
    {"natMapper", HONOURED, apply_default_only_nat},
    {"masterConnectionPoolSize", HONOURED, rlock__cf_apply_pool_size},
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
    {"loadBalancer", IGNORE_ANY, NULL},
    {"failedSlaveNodeDetector", IGNORE_ANY, NULL},
    {NULL, HONOURED, NULL},
};

/* Sets the server to the redis+cluster:// URI nodeAddresses make. */
static int apply_cluster_uri(loader *ld, const char *path)
{
    if (ld->node_addresses == NULL)
        return rlock__cf_fail(ld, path, "needs nodeAddresses");
    static const rlock__cf_address_list nodes = {
        "nodeAddresses", "cluster", "node", "redis://host:7000",
        "use password; a cluster has only 0"};
    char *uri = NULL;
    size_t n = 0;
    int rc = rlock__cf_address_uri(ld, path, ld->node_addresses, &nodes, 0,
                                   &uri, &n);
    if (rc >= 0)
        rc = rlock__cf_setter(ld, path, rlock_config_set_server(ld->cfg, uri));
    free(uri);
    return rc;
}

int rlock__cf_apply_cluster_servers(loader *ld, const char *path,
                                    const json_t *v)
{
    if (json_is_null(v))
        return RLOCK_OK;
    const key_rule *const rules[] = {cluster_own_rules, rlock__cf_base_rules,
                                     NULL};
    int rc = rlock__cf_open_server_config(ld, path, v);
    if (rc == 0)
        rc = rlock__cf_apply_object(ld, rules, path, v);
    if (rc == 0)
        rc = apply_cluster_uri(ld, path);
    if (rc == 0)
        rc = rlock__cf_apply_credentials(ld, path);
    return rc;
}
