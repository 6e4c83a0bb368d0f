/*
 * core/follow.c: what moves with the master in Sentinel mode (a
 * redis+sentinel:// URI). src/io/master.c knows where the master
 * is and moves the address every connection opens to; this file is the
 * client's reaction to a move, which is the lock core's business:
 *
 *   - every command connection drops its links: their pending commands
 *     complete with RLOCK_ECONN (they may or may not have run, which the
 *     lock machines already handle as after a lost connection), and the
 *     next command opens a link to the new master. Caller-thread links
 *     (direct_round_trip.c) see the generation change and close before
 *     their next call, or discard a reply that spans the move;
 *   - the subscriber leaves the old master and subscribes every channel
 *     again on the new one; every waiter is woken at once, and again when
 *     its channel is confirmed, since unlock messages may have been
 *     missed;
 *   - holds taken on the old master are checked at once by a renewal of
 *     every hold the watchdog keeps, on the new master, rather than at the
 *     watchdog's next tick (up to a third of its timeout later): one that
 *     did not survive (asynchronous replication lost it) is reported lost
 *     within a round trip, as any other. Holds with a lease of their own
 *     are not renewed, so they are not checked.
 *
 * It also makes the follower from the client's URI and config, at connect
 * on the caller's thread, and starts it on the I/O thread.
 */
#include "core/core.h"
#include "io/master.h"

#include <stdio.h>
#include <stdlib.h>

/* A sentinel's connect and one question to it get at most this much at
 * discovery: a dead sentinel must not hold a connect for the whole connect
 * timeout (the Sentinel client spec's "short timeout"). */
#define SENTINEL_TRY_MS 2000

struct rlock__follow {
    rlock_client *client;
    rlock__task start;
};

static int64_t shorter(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static void note(int level, const char *line, void *arg)
{
    rlock__log(arg, level, "%s", line);
}

/* The move's reaction (I/O thread): the shared options name the new
 * master already. */
static void on_moved(const char *host, int port, void *arg)
{
    rlock_client *c = arg;
    for (int i = 0; i < c->cfg.connections; i++)
        rlock__conn_reset(&c->conns[i]);
    rlock__pubsub_move(c->pubsub);
    rlock__watchdog_renew_now(c->watchdog);
    /* from here on nothing goes to the old master (tests hold us to it) */
    rlock__log(c, RLOCK_LOG_WARN,
               "Sentinel: master %s moved to %s:%d; every connection follows",
               c->uri.master, host, port);
}

int rlock__follow_new(rlock_client *c)
{
    const rlock__uri *u = &c->uri;
    const char *hosts[RLOCK__URI_SENTINELS_MAX];
    int ports[RLOCK__URI_SENTINELS_MAX];
    for (int i = 0; i < u->nsentinels; i++) {
        hosts[i] = u->sentinels[i].host;
        ports[i] = u->sentinels[i].port;
    }
    rlock__sentinel_opts o = {
        .master_name = u->master,
        .n = u->nsentinels,
        .hosts = hosts,
        .ports = ports,
        .tls = c->tls,
        .connect_timeout_ms = shorter(c->cfg.connect_timeout_ms,
                                      SENTINEL_TRY_MS),
        .command_timeout_ms = shorter(c->cfg.command_timeout_ms,
                                      SENTINEL_TRY_MS),
        .scan_interval_ms = c->cfg.sentinel_scan_interval_ms,
    };
    /* a sentinel that asks for AUTH gets its own credentials when set,
     * else the master's (as Redisson does) */
    o.user = c->cfg.sentinel_credentials_set ? c->cfg.sentinel_user : u->user;
    o.password = c->cfg.sentinel_credentials_set ? c->cfg.sentinel_password
                                                 : u->password;
    c->follow = rlock__calloc(1, sizeof(*c->follow));
    if (c->follow == NULL)
        return RLOCK_ENOMEM;
    c->follow->client = c;
    char err[200] = "";
    int rc = rlock__master_new(&o, c->link_opts, on_moved, note, c,
                               &c->master, err, sizeof(err));
    if (rc != 0) {
        rlock__log_later(c, RLOCK_LOG_ERROR,
                         "Sentinel: no master named %s found: %s", u->master,
                         err);
        return rc;
    }
    rlock__log_later(c, RLOCK_LOG_INFO, "Sentinel: master %s is at %s:%d",
                     u->master, c->link_opts->host,
                     rlock__master_port(c->master));
    return RLOCK_OK;
}

static void run_start(rlock__task *t, int status)
{
    rlock__follow *f = (rlock__follow *)((char *)t -
                                         offsetof(rlock__follow, start));
    rlock_client *c = f->client;
    if (status != 0)
        return;
    int rc = rlock__master_watch(c->master, rlock__loop_ev(c->loop));
    if (rc != 0)
        rlock__log(c, RLOCK_LOG_ERROR,
                   "Sentinel: cannot follow master %s (%s): it stays at "
                   "%s", c->uri.master, rlock_strerror(rc),
                   c->link_opts->host);
}

void rlock__follow_start(rlock_client *c)
{
    if (c->follow == NULL)
        return;
    c->follow->start.run = run_start;
    rlock__loop_submit(c->loop, &c->follow->start);
}

void rlock__follow_shutdown(rlock_client *c)
{
    rlock__master_unwatch(c->master);
}

void rlock__follow_free(rlock_client *c)
{
    rlock__master_free(c->master);
    c->master = NULL;
    free(c->follow);
    c->follow = NULL;
}
