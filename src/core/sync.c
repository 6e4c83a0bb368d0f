/*
 * core/sync.c: WAIT after lock scripts (layer core), Redisson's
 * checkLockSyncedSlaves, when rlock_config_set_sync_replicas() turned it on
 * and the client is in cluster or Sentinel mode.
 *
 * After an acquire, unlock or renewal script answered, the same connection
 * is asked WAIT n timeout, n being the master's connected_slaves. WAIT
 * covers every write this connection made before it, so it is sent after
 * the script's reply on the same connection: the I/O thread's requests
 * (core/request.c) chain it onto the request, the caller-thread slots
 * (core/direct_round_trip.c) send it in their round trip. n is read with INFO
 * replication once per connection (kept in the connection, forgotten with
 * each new link: a failover) and read again when WAIT's answer differs; n
 * = 0 sends no WAIT.
 *
 * What this file decides is what an answer means (the facts sheet, §2.4):
 * some acknowledgements, even fewer than n, are accepted; none while n > 0
 * (or no answer at all) undoes an acquire's hold with the unlock script
 * and fails it with RLOCK_ETIMEDOUT, fails an unlock with RLOCK_ETIMEDOUT
 * so that core/release.c sends it again under the same latch (idempotent),
 * and leaves a renewal standing (the next renewal asks again).
 */
#include "core/core.h"

#include <stdio.h>

/* Whether r's answer must be followed by WAIT. */
bool rlock__sync_wanted(const rlock__req *r)
{
    const rlock_client *c = r->client;
    if (!c->cfg.sync_replicas || (c->cluster == NULL && c->master == NULL))
        return false; /* off, or one server: as Redisson */
    if (r->script == NULL || r->status != 0)
        return false;
    return r->kind == RLOCK__REPLY_ACQUIRE || r->kind == RLOCK__REPLY_UNLOCK ||
           r->kind == RLOCK__REPLY_RENEW;
}

/* WAIT's two arguments for n replicas, written into nbuf and tbuf. */
void rlock__sync_wait_args(const rlock__req *r, int n, char nbuf[24],
                           char tbuf[24])
{
    snprintf(nbuf, 24, "%d", n);
    snprintf(tbuf, 24, "%lld", (long long)r->client->cfg.sync_timeout_ms);
}

/* How long WAIT may take before the connection gives up on it. */
int64_t rlock__sync_wait_deadline(const rlock__req *r)
{
    return rlock__now_ms() + r->client->cfg.sync_timeout_ms +
           r->client->cfg.command_timeout_ms;
}

/* Applies WAIT's answer to r's result: acks acknowledgements of n, or
 * acks < 0 when WAIT (or the INFO before it) got no answer. */
void rlock__sync_verdict(rlock__req *r, int n, int64_t acks)
{
    if (acks > 0 || (acks == 0 && n == 0))
        return;
    rlock_client *c = r->client;
    switch (r->kind) {
    case RLOCK__REPLY_ACQUIRE:
        if (!r->nil)
            return; /* nothing taken, nothing to undo */
        if (r->lock_entry != NULL)
            rlock__req_give_back(r);
        r->nil = false;
        r->status = RLOCK_ETIMEDOUT;
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "no replica acknowledged an acquire within %lld ms "
                         "(of %d): its hold is given back",
                         (long long)c->cfg.sync_timeout_ms, n);
        return;
    case RLOCK__REPLY_UNLOCK:
        if (r->value == RLOCK__UNLOCK_NOT_HELD)
            return; /* nothing written */
        r->status = RLOCK_ETIMEDOUT;
        rlock__log_later(c, RLOCK_LOG_WARN,
                         "no replica acknowledged an unlock within %lld ms "
                         "(of %d)",
                         (long long)c->cfg.sync_timeout_ms, n);
        return;
    default:
        rlock__log_later(c, RLOCK_LOG_INFO,
                         "no replica acknowledged a renewal within %lld ms "
                         "(of %d)",
                         (long long)c->cfg.sync_timeout_ms, n);
        return;
    }
}
