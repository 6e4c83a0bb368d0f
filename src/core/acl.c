/*
 * core/acl.c: what the server lets this client's user run (layer core),
 * checked once at connect time (Redis 6+ ACLs), so that a missing
 * permission is named before it costs anything.
 *
 * What a lock cannot do without (SCRIPT LOAD, EVALSHA) makes connecting
 * fail with RLOCK_EAUTH; connecting already loads every script, and an
 * EVALSHA of a script that does not exist shows whether EVALSHA may run
 * without running anything. What only costs wake-ups (PUBLISH in the
 * unlock scripts, SUBSCRIBE on lock channels) is a warning, and it can be
 * known only by asking ACL DRYRUN, which needs rights an application user
 * seldom has: when the server refuses that question, or is older than
 * Redis 7, the check is skipped with one debug line. That is told by the
 * reply's type (an error), never by its text. Publishing or subscribing just to
 * find out would be seen by Redisson clients and by MONITOR.
 */
#include "core/core.h"
#include "io/link.h"

#include <stdio.h>
#include <string.h>

/* A lock channel as Redisson names one, for a lock nobody uses. */
#define PROBE_CHANNEL "redisson_lock__channel:{rlock:acl-check}"

/* One command on s, by the command timeout. Returns 0 with *out set, or a
 * code (no reply). */
static int ask(rlock_client *c, rlock__link_sync *s, int argc,
               const char **argv, struct redisReply **out)
{
    return rlock__link_sync_call(s, argc, argv, NULL,
                                 rlock__now_ms() + c->cfg.command_timeout_ms,
                                 out, NULL, NULL);
}

/* Asks ACL DRYRUN whether user may run the command argv (argc words).
 * Returns 1 with the server's reason in why when it may not, 0 when it
 * may, or -1 with the error in why when the server will not say: an error
 * reply, whatever its text (ACL DRYRUN is Redis 7.0+, and the user may
 * lack the right to ask), or no reply. */
static int dry_run_refused(rlock_client *c, rlock__link_sync *s,
                           const char *user, int argc, const char **argv,
                           char *why, size_t whylen)
{
    const char *full[8] = {"ACL", "DRYRUN", user};
    for (int i = 0; i < argc && i < 5; i++)
        full[3 + i] = argv[i];
    struct redisReply *r = NULL;
    if (ask(c, s, 3 + argc, full, &r) != 0) {
        snprintf(why, whylen, "no reply");
        return -1;
    }
    int refused;
    if (rlock__reply_error_code(r) != 0) {
        snprintf(why, whylen, "%s", rlock__reply_error_text(r));
        refused = -1;
    } else {
        refused = rlock__reply_dryrun_refused(r, why, whylen);
    }
    rlock__link_reply_free(r);
    return refused;
}

/* Checks s's user (connected and authenticated as c's) for what rlock
 * needs. Returns 0, or RLOCK_EAUTH when EVALSHA is refused (connecting
 * checked SCRIPT LOAD), or a connection error; what the lock can live
 * without goes into out, for rlock__acl_report() once the client runs. */
int rlock__acl_check(rlock_client *c, rlock__link_sync *s, rlock__acl *out)
{
    memset(out, 0, sizeof(*out));
    const char *evalsha[3] = {"EVALSHA",
                              "0000000000000000000000000000000000000000",
                              "0"};
    struct redisReply *r = NULL;
    int rc = ask(c, s, 3, evalsha, &r);
    if (rc != 0)
        return rc;
    /* NOSCRIPT is the answer to a user who may run it; anything but an
     * ACL refusal is left for the first real call to report */
    rc = rlock__reply_is_noperm(r) ? RLOCK_EAUTH : RLOCK_OK;
    rlock__link_reply_free(r);
    if (rc != 0)
        return rc;

    const char *user = c->uri.user != NULL ? c->uri.user : "default";
    const char *publish[3] = {"PUBLISH", PROBE_CHANNEL, "0"};
    const char *subscribe[2] = {"SUBSCRIBE", PROBE_CHANNEL};
    /* a server that will not answer the first question is not asked the
     * second */
    char *why = out->publish_why;
    int refused = dry_run_refused(c, s, user, 3, publish, why,
                                  sizeof(out->publish_why));
    if (refused >= 0) {
        out->no_publish = refused == 1;
        why = out->subscribe_why;
        refused = dry_run_refused(c, s, user, 2, subscribe, why,
                                  sizeof(out->subscribe_why));
        out->no_subscribe = refused == 1;
    }
    if (refused < 0) {
        out->unasked = true;
        snprintf(out->unasked_why, sizeof(out->unasked_why), "%s", why);
    }
    return RLOCK_OK;
}

/* Reports what rlock__acl_check() found: log warnings, once per problem
 * (unlocks and the subscriber do not warn again of what was named here),
 * and the subscriber told not to try channels it would be refused. Once the client's I/O
 * thread and subscriber exist, before the client is handed out. */
void rlock__acl_report(rlock_client *c, const rlock__acl *found)
{
    const char *user = c->uri.user != NULL ? c->uri.user : "default";
    long long recheck = (long long)c->cfg.recheck_interval_ms;
    if (found->unasked)
        rlock__log_later(c, RLOCK_LOG_DEBUG,
                         "ACL: the server did not answer ACL DRYRUN (%s): "
                         "user %s's rights to publish and listen on lock "
                         "channels not checked",
                         found->unasked_why, user);
    if (found->no_publish) {
        /* the refused PUBLISH of each unlock is then news at info level */
        atomic_store(&c->unannounced_warned, true);
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "ACL: user %s may not PUBLISH on lock channels "
                         "(%s): unlocks will release their locks without "
                         "waking waiters, who then wait up to %lld ms; grant "
                         "+publish and &redisson_lock__channel:*",
                         user, found->publish_why, recheck);
    }
    if (found->no_subscribe) {
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "ACL: user %s may not SUBSCRIBE to lock channels "
                         "(%s): waiters re-check every %lld ms instead of "
                         "being woken; grant +subscribe and "
                         "&redisson_lock__channel:*",
                         user, found->subscribe_why, recheck);
        rlock__pubsub_assume_refused(c->pubsub);
    }
}
