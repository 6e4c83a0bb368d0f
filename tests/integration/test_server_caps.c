/*
 * test_server_caps.c: what connecting learns the server lacks, on whatever
 * server RLOCK_TEST_REDIS_SERVER names (Redis 7.0 by default; also run on
 * Redis 6.2 and Valkey): a cluster client's pub/sub under each sharded
 * mode, and the connect-time ACL check. Each case reads the server's
 * version (INFO server, as text here, not through rlock) and asserts what
 * that version should get: sharded pub/sub from Redis 7.0 on (Valkey says
 * redis_version 7.2), plain pub/sub before, where RLOCK_SHARDED_ON and
 * BOTH are refused with RLOCK_ENOTSUP.
 *
 * One server for the whole program, cheap: a one-node cluster serving
 * every slot (which is a cluster for rlock: CLUSTER SLOTS names it for
 * all 16384), with an ACL user that may not PUBLISH.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "harness.h"
#include "rlock.h"

#define HOST "127.0.0.1"
#define CHANNEL "redisson_lock__channel:{caps}"

static rt_redis node;
static int version; /* redis_version as major * 100 + minor */
/* Its cluster bus: a free port of its own where the server takes one
 * (Redis 7.0's cluster-port), else the server's port + 10000, which is
 * past 65535 for a port above 55535: then it is started again on
 * another. */
static char bus_port[16];
static const char *node_args[] = {"--cluster-enabled", "yes",
                                  "--cluster-config-file", "nodes.conf",
                                  NULL, NULL, NULL};

static int start_node(void)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        if (rt_server_has_7_0()) {
            snprintf(bus_port, sizeof(bus_port), "%d", rt_free_port());
            node_args[4] = "--cluster-port";
            node_args[5] = bus_port;
        }
        if (rt_redis_start_args(&node, node_args) == 0)
            return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------- helpers */

/* The log lines of the last connect (delivered by rlock_client_free() at
 * the latest, which waits for the I/O thread). */
static char seen[64][512];
static int nseen;

static void keep_line(int level, const char *message, void *arg)
{
    (void)level;
    (void)arg;
    if (nseen < 64)
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", message);
}

static const char *line_with(const char *needle)
{
    for (int i = 0; i < nseen; i++)
        if (strstr(seen[i], needle) != NULL)
            return seen[i];
    return NULL;
}

/* Connects to the one-node cluster in mode, as user (NULL: default).
 * Returns rlock_client_connect_with()'s code, *out set on success. */
static int connect_mode(int mode, const char *user, rlock_client **out)
{
    char uri[160];
    if (user != NULL)
        snprintf(uri, sizeof(uri), "redis+cluster://%s:pw@" HOST ":%d", user,
                 node.port);
    else
        snprintf(uri, sizeof(uri), "redis+cluster://" HOST ":%d", node.port);
    rlock_config *cfg = NULL;
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_cluster_sharded(cfg, mode), 0);
    assert_int_equal(
        rlock_config_set_log(cfg, RLOCK_LOG_DEBUG, keep_line, NULL), 0);
    nseen = 0;
    int rc = rlock_client_connect_with(out, uri, cfg);
    rlock_config_free(cfg);
    return rc;
}

/* A connection in SSUBSCRIBE to CHANNEL, confirmed (Redis 7.0+). */
static redisContext *ssubscribe(void)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(HOST, node.port, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    redisReply *r = redisCommand(c, "SSUBSCRIBE %s", CHANNEL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    return c;
}

/* Locks and unlocks "caps" with c while a plain and (Redis 7.0+) a sharded
 * listener watch its channel; returns how the unlock was published: 'S'
 * (SPUBLISH only), 'P' (PUBLISH only), 'B' (both) or '-' (neither). */
static char unlock_kind(rlock_client *c)
{
    rt_sub *plain = rt_sub_start(&node, CHANNEL);
    assert_non_null(plain);
    redisContext *sharded = version >= 700 ? ssubscribe() : NULL;
    rlock *l = NULL;
    assert_int_equal(rlock_get(c, "caps", &l), 0);
    assert_int_equal(rlock_lock(l), 0);
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    int heard_s = 0;
    if (sharded != NULL) {
        redisReply *m = NULL;
        heard_s = redisGetReply(sharded, (void **)&m) == REDIS_OK &&
                  m->type == REDIS_REPLY_ARRAY && m->elements == 3 &&
                  strcmp(m->element[0]->str, "smessage") == 0;
        if (m != NULL)
            freeReplyObject(m);
        redisFree(sharded);
    }
    /* a plain message, if any, was sent with the sharded one */
    int heard_p = rt_sub_wait(plain, 1, heard_s ? 300 : 3000) >= 1;
    rt_sub_stop(plain);
    return heard_s && heard_p ? 'B' : heard_s ? 'S' : heard_p ? 'P' : '-';
}

/* ------------------------------------------------------------------ cases */

static void test_auto_follows_the_server_version(void **state)
{
    (void)state;
    rlock_client *c = NULL;
    assert_int_equal(connect_mode(RLOCK_SHARDED_AUTO, NULL, &c), 0);
    assert_int_equal(unlock_kind(c), version >= 700 ? 'S' : 'P');
    rlock_client_free(c);
    /* before 7.0, the choice is told at debug level, naming the version */
    if (version < 700)
        assert_non_null(line_with("not sharded pub/sub"));
}

static void test_on_is_refused_without_sharded_pubsub(void **state)
{
    (void)state;
    rlock_client *c = NULL;
    int rc = connect_mode(RLOCK_SHARDED_ON, NULL, &c);
    if (version < 700) {
        assert_int_equal(rc, RLOCK_ENOTSUP);
        assert_null(c);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(unlock_kind(c), 'S');
    rlock_client_free(c);
}

static void test_both_is_refused_without_sharded_pubsub(void **state)
{
    (void)state;
    rlock_client *c = NULL;
    int rc = connect_mode(RLOCK_SHARDED_BOTH, NULL, &c);
    if (version < 700) {
        /* its unlocks would SPUBLISH, which the server refuses */
        assert_int_equal(rc, RLOCK_ENOTSUP);
        assert_null(c);
        return;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(unlock_kind(c), 'B');
    rlock_client_free(c);
}

static void test_off_publishes_plain_everywhere(void **state)
{
    (void)state;
    rlock_client *c = NULL;
    assert_int_equal(connect_mode(RLOCK_SHARDED_OFF, NULL, &c), 0);
    assert_int_equal(unlock_kind(c), 'P');
    rlock_client_free(c);
}

/* A user who may not run PUBSUB: from 7.0 the version says the server has
 * sharded pub/sub, so AUTO falls back as Redisson's probe does and ON is
 * kept; the ACL check (DRYRUN from 7.0) names the missing PUBLISH right,
 * and before 7.0 is skipped with a debug line. */
static void test_a_user_without_pubsub_or_publish(void **state)
{
    (void)state;
    rlock_client *c = NULL;
    assert_int_equal(connect_mode(RLOCK_SHARDED_AUTO, "capsuser", &c), 0);
    rlock_client_free(c);
    /* the log lines of connecting are delivered once the client runs;
     * rlock_client_free() waits for the I/O thread */
    if (version >= 700) {
        assert_non_null(line_with("may not PUBLISH"));
        assert_non_null(line_with("refused PUBSUB SHARDNUMSUB"));
        assert_null(line_with("did not answer ACL DRYRUN"));
    } else {
        assert_null(line_with("may not PUBLISH"));
        assert_non_null(line_with("did not answer ACL DRYRUN"));
    }
    int rc = connect_mode(RLOCK_SHARDED_ON, "capsuser", &c);
    assert_int_equal(rc, version >= 700 ? 0 : RLOCK_ENOTSUP);
    rlock_client_free(c);
}

/* ------------------------------------------------------------------- main */

/* Reads redis_version from INFO server text. */
static int server_version(void)
{
    char *info = rt_cmd_str(&node, "INFO server");
    if (info == NULL)
        return -1;
    const char *v = strstr(info, "redis_version:");
    int major = 0, minor = 0;
    int ok = v != NULL && sscanf(v, "redis_version:%d.%d", &major, &minor) == 2;
    const char *vk = strstr(info, "valkey_version:");
    int vklen = vk != NULL ? (int)strcspn(vk, "\r\n") : 0;
    fprintf(stderr, "server: redis_version %d.%d%s%.*s\n", major, minor,
            vk != NULL ? ", " : "", vklen, vk != NULL ? vk : "");
    free(info);
    return ok ? major * 100 + minor : -1;
}

/* Gives the node every slot (CLUSTER ADDSLOTS, which 6.2 has too) and
 * waits for cluster_state:ok. Returns 0 or -1. */
static int serve_all_slots(void)
{
    size_t len = 32 + 16384 * 6;
    char *fmt = malloc(len);
    if (fmt == NULL)
        return -1;
    size_t n = (size_t)snprintf(fmt, len, "CLUSTER ADDSLOTS");
    for (int s = 0; s < 16384; s++)
        n += (size_t)snprintf(fmt + n, len - n, " %d", s);
    long long ok = 0;
    redisReply *r = rt_cmd(&node, fmt);
    free(fmt);
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL)
        freeReplyObject(r);
    /* a master just given its slots waits about 2 s before it says ok
     * (Redis's writable delay), more on a loaded machine: up to 30 s */
    for (int i = 0; ok && i < 600; i++) {
        char *info = rt_cmd_str(&node, "CLUSTER INFO");
        int up = info != NULL && strstr(info, "cluster_state:ok") != NULL;
        free(info);
        if (up)
            return 0;
        rt_sleep_ms(50);
    }
    return -1;
}

static int setup(void **state)
{
    (void)state;
    if (start_node() != 0 || serve_all_slots() != 0)
        return -1;
    version = server_version();
    /* everything but PUBSUB and PUBLISH, so the ACL check has something to
     * name; the same words in 6.2 and 7.0 */
    redisReply *r = rt_cmd(&node, "ACL SETUSER capsuser on >pw ~* &* +@all "
                                  "-pubsub -publish");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL)
        freeReplyObject(r);
    return ok && version > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rt_redis_stop(&node);
    return 0;
}

int main(void)
{
    rt_require_redis();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_follows_the_server_version),
        cmocka_unit_test(test_on_is_refused_without_sharded_pubsub),
        cmocka_unit_test(test_both_is_refused_without_sharded_pubsub),
        cmocka_unit_test(test_off_publishes_plain_everywhere),
        cmocka_unit_test(test_a_user_without_pubsub_or_publish),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
