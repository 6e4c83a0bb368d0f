/*
 * test_sentinel_tls.c: Redis Sentinel with TLS everywhere: the
 * data nodes replicate over TLS and the sentinels watch them over TLS, so
 * every address a sentinel gives is a TLS port, and the sentinels take TLS
 * too (tests/support/sentinel_fixture.h with tls; the certificates are
 * tls_fixture's, for 127.0.0.1). Discovery and the watcher must speak TLS
 * to both, with one context: what rediss+sentinel:// means.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/link.h"
#include "io/sentinel.h"
#include "io/tls.h"
#include "rlock.h"
#include "sentinel_fixture.h"
#include "tls_fixture.h"

#define SLACK_MS 1500

static rt_tls_files files;
static rt_sentinel_group group;
static rlock__tls_ctx *ctx;

typedef struct tls_sentinels {
    const char *hosts[RT_SENTINELS];
    int ports[RT_SENTINELS];
    rlock__sentinel_opts o;
} tls_sentinels;

static void sentinels_init(tls_sentinels *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < RT_SENTINELS; i++) {
        s->hosts[i] = "127.0.0.1";
        s->ports[i] = rt_sentinel_port(&group.sentinel[i]);
    }
    s->o.master_name = RT_SENTINEL_MASTER;
    s->o.n = RT_SENTINELS;
    s->o.hosts = s->hosts;
    s->o.ports = s->ports;
    s->o.tls = ctx;
    s->o.connect_timeout_ms = 2000;
    s->o.command_timeout_ms = 2000;
    s->o.scan_interval_ms = 60000; /* +switch-master alone */
}

static void data_opts(rlock__link_opts *o)
{
    rlock__link_opts_init(o);
    o->tls = ctx;
    o->connect_timeout_ms = 3000;
}

static void test_discovery_speaks_tls_to_sentinels_and_master(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    tls_sentinels sn;
    rlock__sentinel *s = NULL;
    rlock__link_opts d;
    rlock__sentinel_master m;
    rlock__link_addr addr;
    char err[200] = "";
    (void)state;
    sentinels_init(&sn);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    data_opts(&d);
    int rc = rlock__sentinel_discover(s, &d, &m, &addr, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s: %s", rlock_err_name(rc), err);
    rt_redis *master = rt_sentinel_master_node(&group);
    assert_non_null(master);
    assert_int_equal(m.port, master->tls_port);
    rlock__sentinel_free(s);

    /* without TLS the sentinels' TLS ports do not answer */
    sn.o.tls = NULL;
    sn.o.connect_timeout_ms = sn.o.command_timeout_ms = 500;
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, err,
                                              sizeof(err)),
                     RLOCK_ECONN);
    rlock__sentinel_free(s);
}

static void on_master(const char *host, int port, bool changed, void *arg)
{
    int *seen = arg;
    (void)host;
    (void)changed;
    *seen = port;
}

static void tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

static void test_watcher_hears_a_failover_over_tls(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    tls_sentinels sn;
    rlock__sentinel *s = NULL;
    rlock__link_opts d;
    rlock__sentinel_master m;
    rlock__link_addr addr;
    int seen = 0;
    (void)state;
    sentinels_init(&sn);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    data_opts(&d);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, NULL, 0), 0);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    ev_timer ticker;
    ev_timer_init(&ticker, tick, 0.02, 0.02);
    ev_timer_start(loop, &ticker);
    assert_int_equal(rlock__sentinel_watch(s, loop, on_master, NULL, &seen),
                     0);
    int64_t end = rt_now_ms() + 500; /* subscribed */
    while (rt_now_ms() < end)
        ev_run(loop, EVRUN_ONCE);
    rt_redis *from = rt_sentinel_master_node(&group);
    rt_redis *to = from == &group.node[0] ? &group.node[1] : &group.node[0];
    assert_int_equal(rt_sentinel_failover(&group), 0);
    end = rt_now_ms() + 1500 + SLACK_MS;
    while (seen == 0 && rt_now_ms() < end)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(seen, to->tls_port);
    rlock__sentinel_unwatch(s);
    rlock__sentinel_free(s);
    ev_timer_stop(loop, &ticker);
    ev_loop_destroy(loop);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* The client with rediss+sentinel://: TLS to the sentinels and the master
 * with the config's CA, its locks on the master's TLS port. */
static void test_client_over_rediss_sentinel(void **state)
{
    RT_SKIP_WITHOUT_TLS();
    rlock_config *cfg;
    rlock_client *c = NULL;
    rlock *l;
    char url[256];
    (void)state;
    rt_sentinel_url(&group, NULL, url, sizeof(url));
    assert_non_null(strstr(url, "rediss+sentinel://"));
    assert_int_equal(rlock_config_new(&cfg), 0);
    /* without the CA, the sentinels' certificates are not trusted */
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_ETLS);
    assert_int_equal(rlock_config_set_tls_ca_file(cfg, files.ca_crt), 0);
    int rc = rlock_client_connect_with(&c, url, cfg);
    rlock_config_free(cfg);
    if (rc != 0)
        fail_msg("connect: %s", rlock_err_name(rc));
    assert_int_equal(rlock_get(c, "sentinel_tls:held", &l), 0);
    assert_int_equal(rlock_trylock(l, 0, RLOCK_LEASE_WATCHDOG), 0);
    rt_redis *m = rt_sentinel_master_node(&group);
    assert_int_equal(rt_cmd_int(m, "HLEN %s", "sentinel_tls:held"), 1);
    assert_int_equal(rlock_unlock(l), 0);
    rlock_free(l);
    rlock_client_free(c);
}

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    if (rt_tls_make(&files) != 0)
        return -1;
    rlock__tls_settings ts = {.ca_file = files.ca_crt,
                              .verify = RLOCK__TLS_VERIFY_FULL};
    if (rlock__tls_ctx_new(&ts, &ctx, NULL, 0) != 0)
        return -1;
    rt_sentinel_opts o = {.tls = &files};
    if (!rt_server_has_tls())
        return 0; /* each test skips */
    return rt_sentinel_group_start(&group, &o);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_sentinel_group_stop(&group);
    rlock__tls_ctx_free(ctx);
    rt_tls_remove(&files);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery_speaks_tls_to_sentinels_and_master),
        cmocka_unit_test(test_watcher_hears_a_failover_over_tls),
        cmocka_unit_test(test_client_over_rediss_sentinel),
    };
    return cmocka_run_group_tests_name("sentinel_tls", tests, group_setup,
                                       group_teardown);
}
