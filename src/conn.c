/*
 * conn.c: one hiredis async connection that reconnects on demand.
 *
 * A connection is DOWN (no context), CONNECTING or UP. rlock__conn_ensure()
 * turns DOWN into CONNECTING; commands may be issued at once, as hiredis
 * buffers them until the socket connects, and fails them (NULL reply) if it
 * never does. AUTH and SELECT are the first commands on every new context,
 * so nothing can overtake them. When a context dies, hiredis fails its
 * pending callbacks and we go back to DOWN; the next command reconnects.
 * (The subscriber is not one of these: pubsub.c drives an rlock__link.)
 *
 * Everything here runs on the I/O thread.
 */
#include "internal.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

/* Makes a DOWN connection for client c. */
void rlock__conn_init(rlock__conn *cn, rlock_client *c)
{
    memset(cn, 0, sizeof(*cn));
    cn->client = c;
    cn->state = RLOCK__CONN_DOWN;
}

/* Which of the client's command connections cn is, for log lines. */
static int index_of(const rlock__conn *cn)
{
    return (int)(cn - cn->client->conns);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    rlock__conn *cn = ac->data;
    if (cn == NULL)
        return;
    rlock_client *c = cn->client;
    if (status != REDIS_OK) {
        rlock__log(c, RLOCK_LOG_DEBUG,
                   "command connection %d could not connect: %s",
                   index_of(cn), ac->errstr);
        /* hiredis frees the context after this returns */
        cn->ac = NULL;
        cn->state = RLOCK__CONN_DOWN;
        return;
    }
    cn->state = RLOCK__CONN_UP;
    if (!cn->was_up) {
        cn->was_up = true;
        rlock__log(c, RLOCK_LOG_DEBUG, "command connection %d connected",
                   index_of(cn));
        return;
    }
    rlock__stats_count(c->stats, RLOCK__STAT_RECONNECTS);
    rlock__log(c, RLOCK_LOG_INFO, "command connection %d reconnected",
               index_of(cn));
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    rlock__conn *cn = ac->data;
    if (cn == NULL)
        return;
    /* REDIS_OK: we closed it, to authenticate again (command.c) */
    rlock__log(cn->client, RLOCK_LOG_INFO,
               "command connection %d %s: reconnecting with the next "
               "command",
               index_of(cn),
               status == REDIS_OK ? "closed to authenticate again"
                                  : ac->errstr[0] != '\0' ? ac->errstr
                                                          : "lost");
    cn->ac = NULL;
    cn->state = RLOCK__CONN_DOWN;
}

/* Sends AUTH, SELECT and CLIENT SETNAME (when the config names the client)
 * ahead of everything else on a new context. Their replies are not awaited:
 * if AUTH fails, every later command fails with NOAUTH, which the caller
 * sees as RLOCK_EAUTH; a refused name only leaves the connection unnamed
 * (connecting checked that the server takes it). */
static void send_handshake(rlock__conn *cn)
{
    const rlock__uri *u = &cn->client->uri;
    if (u->password != NULL) {
        const char *argv[3] = {"AUTH", u->user, u->password};
        if (u->user != NULL)
            redisAsyncCommandArgv(cn->ac, NULL, NULL, 3, argv, NULL);
        else {
            argv[1] = u->password;
            redisAsyncCommandArgv(cn->ac, NULL, NULL, 2, argv, NULL);
        }
    }
    if (u->db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", u->db);
        const char *argv[2] = {"SELECT", db};
        redisAsyncCommandArgv(cn->ac, NULL, NULL, 2, argv, NULL);
    }
    if (cn->client->cfg.client_name != NULL) {
        const char *argv[3] = {"CLIENT", "SETNAME",
                               cn->client->cfg.client_name};
        redisAsyncCommandArgv(cn->ac, NULL, NULL, 3, argv, NULL);
    }
}

/* Starts connecting if the connection is down. Returns 0 (up or on its
 * way), RLOCK_ECLOSED (client shutting down), RLOCK_ECONN or RLOCK_ENOMEM. */
int rlock__conn_ensure(rlock__conn *cn)
{
    rlock_client *c = cn->client;
    if (cn->state != RLOCK__CONN_DOWN)
        return RLOCK_OK;
    if (atomic_load(&c->closing))
        return RLOCK_ECLOSED;
    redisAsyncContext *ac = c->uri.path != NULL
                                ? redisAsyncConnectUnix(c->uri.path)
                                : redisAsyncConnect(c->uri.host, c->uri.port);
    if (ac == NULL)
        return RLOCK_ENOMEM;
    if (ac->err != 0) {
        redisAsyncFree(ac);
        return RLOCK_ECONN;
    }
    ac->data = cn;
    if (rlock__loop_attach(c->loop, ac) != 0) {
        redisAsyncFree(ac);
        return RLOCK_ECONN;
    }
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    cn->ac = ac;
    cn->state = RLOCK__CONN_CONNECTING;
    send_handshake(cn);
    return RLOCK_OK;
}

/* Closes the connection for good: pending commands fail with a NULL reply. */
void rlock__conn_close(rlock__conn *cn)
{
    redisAsyncContext *ac = cn->ac;
    cn->ac = NULL;
    cn->state = RLOCK__CONN_DOWN;
    if (ac != NULL) {
        ac->data = NULL;
        redisAsyncFree(ac);
    }
}
