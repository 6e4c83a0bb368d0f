/*
 * release.c: one unlock, as a state machine written once for the blocking
 * and the async API (core.h says how drivers run it), and the requests
 * that give holds back (a late acquire's, a client's at shutdown).
 *
 * An unlock runs the kind's release script under a latch key named after a
 * fresh request id (facts sheet 1.8). A reply lost with its connection, or
 * not in by the command timeout, is retried up to retry_attempts times with
 * the same latch, so that the retry answers as the first run did: a dropped
 * connection at once on a fresh one, a slow server after the retry
 * interval. The latch is deleted once the first attempt's reply is in (the
 * request's latch_del, which its transport sends behind the reply); after a
 * retry it is left to expire, since an earlier attempt may still run (a slow
 * or retransmitted packet) and must find it.
 *
 * In a cluster slot that migrates, Redis answers the latched release
 * (three keys, which are not all on one node until the migration ends)
 * with TRYAGAIN; the unlock then runs the release that names the lock hash
 * alone (lock_release_one_key.lua, served through ASK), as long as no
 * earlier attempt may have run: without its latch, a second run would
 * release a second hold.
 *
 * The outcome is settled into the hold (hold.c): released, one hold less,
 * lost before the release (RLOCK_ELOST), refused (the hold stays), or
 * unknown (one hold less; the key is left to its lease).
 *
 * A thread's last unlock (the client knows of no other hold of the owner
 * on the name, and a thread has no acquire in flight while it unlocks;
 * drop_unknown) that Redis answers "still held" found holds nobody will
 * release: an acquire whose reply never came (its wait ran out, its
 * connection died) took them. Left to their lease they would never go,
 * since the owner's next acquire re-enters them and renews it: an owner
 * looping lock/unlock would keep the lock from every waiter. So the unlock
 * drops them (lock_drop.lua, fair_drop.lua or write_drop.lua, which
 * publish as the release would have),
 * and returns once the drop is answered, so that it cannot overtake the
 * owner's next acquire and remove a hold it really has.
 */
#include "core.h"

#include <stdlib.h>

enum {
    R_IDLE,
    R_SENDING,
    R_PAUSING,
    R_DROPPING, /* a lost acquire's holds, found by the last unlock */
    R_DONE,
};

/* Tells the operator that the server refused the unlock message of a
 * release of name (RLOCK_ENOTIFY): a warning the first time, then at info
 * level, so that a misconfigured server does not flood the log. Any
 * thread, with no rlock lock held. */
void rlock__log_unannounced(rlock_client *c, const char *name)
{
    bool warned = atomic_exchange(&c->unannounced_warned, true);
    rlock__log_later(c, warned ? RLOCK_LOG_INFO : RLOCK_LOG_WARN,
                     "%s released, but the server refused its unlock message "
                     "(PUBLISH): waiters learn of it only when they re-check "
                     "(grant +publish, and keep PUBLISH from being renamed)",
                     name);
}

/* One release of owner's hold on e restoring lease_ms, under a fresh latch
 * (core.h): an unlock's, whose latch the request's transport deletes behind
 * the reply, or a give-back's, whose reply is ignored. A phantom's drop, a
 * client's shutdown and a late acquire's give-back all come here; only the
 * unlock machine below builds its own, to keep one latch across retries. */
rlock__req *rlock__release_req(rlock__entry *e, uint64_t owner,
                               int64_t lease_ms, bool give_back)
{
    char id[RLOCK__REQUEST_ID_LEN + 1];
    if (e == NULL || rlock__request_id(id) != 0)
        return NULL;
    char *latch = rlock__latch_name(e->name, id);
    rlock__spec spec;
    rlock__req *r = NULL;
    if (latch != NULL &&
        rlock__spec_release(&spec, e, owner, lease_ms, latch) == 0) {
        if (give_back)
            spec.reply = RLOCK__REPLY_IGNORE;
        r = rlock__req_from_spec(e->client, &spec);
        rlock__spec_clear(&spec);
    }
    if (r != NULL && !give_back)
        r->latch_del = latch;
    else
        free(latch);
    return r;
}

/* Sends r, whose reply nobody waits for (NULL: nothing to send): at once
 * on the I/O thread, else through its queue. Any thread. */
static void send_detached(rlock__req *r)
{
    if (r == NULL)
        return;
    if (rlock__loop_on_thread(r->client->loop)) {
        rlock__req_dispatch(r);
        return;
    }
    rlock__req_send(r);
    rlock__req_unref(r);
}

/* Gives back a hold that the acquire acq took after its caller gave up
 * (core/request.c and core/direct.c say when): its release, reply ignored.
 * Out of memory, the hold expires with its lease. Any thread. */
void rlock__req_give_back(rlock__req *acq)
{
    send_detached(rlock__release_req(acq->lock_entry, acq->lock_owner,
                                     acq->lock_lease_ms, true));
}

/* Undoes what the acquire acq did after its caller gave up, its reply
 * decoded as taken (it took the lock) or not: a hold is given back; a
 * queued try that did not take the lock may have put its caller in the
 * RLock's queue after the caller's own leaving ran (it went on another
 * connection, or was never sent), so it leaves the queue again, telling
 * the next waiter if it was the head. Out of memory, the place expires
 * with its staleness. Any thread. */
void rlock__req_undo_late(rlock__req *acq, bool taken)
{
    if (taken) {
        rlock__req_give_back(acq);
        return;
    }
    if (acq->script != &rlock__script_lock_acquire_queued ||
        acq->lock_entry == NULL)
        return;
    rlock__spec spec;
    if (rlock__spec_give_up(&spec, acq->lock_entry, acq->lock_owner, 0) != 0)
        return;
    spec.reply = RLOCK__REPLY_IGNORE;
    rlock__req *r = rlock__req_from_spec(acq->client, &spec);
    rlock__spec_clear(&spec);
    send_detached(r);
}

/* Builds the requests that give back all count holds owner has on e (a
 * client shutting down): one drop where the kind has one, else one release
 * per hold, each with a latch of its own; fn gets each. Out of memory, the
 * rest are left to their lease. */
int rlock__give_back_all(rlock__entry *e, uint64_t owner, int count,
                         int64_t lease_ms,
                         void (*fn)(rlock__req *r, void *arg), void *arg)
{
    rlock__spec spec;
    if (rlock__spec_drop(&spec, e, owner) == 0) {
        rlock__req *r = rlock__req_from_spec(e->client, &spec);
        rlock__spec_clear(&spec);
        if (r == NULL)
            return RLOCK_ENOMEM;
        fn(r, arg);
        return RLOCK_OK;
    }
    for (int i = 0; i < count; i++) {
        rlock__req *r = rlock__release_req(e, owner, lease_ms, false);
        if (r == NULL)
            return RLOCK_ENOMEM;
        fn(r, arg);
    }
    return RLOCK_OK;
}

static rlock__step done(rlock__release *rel, int status)
{
    rel->state = R_DONE;
    return (rlock__step){.kind = RLOCK__STEP_DONE, .status = status};
}

/* After a last unlock that Redis answered "still held": drops the holds
 * left in the owner's field (see the file comment), or ends the unlock
 * when there is nothing to drop with or no memory for it (they then expire
 * with their lease once the owner stops renewing them). */
static rlock__step drop_unknown_holds(rlock__release *rel)
{
    rlock__entry *e = rel->entry;
    int known = rlock__owner_known_holds(e, rel->owner);
    rlock__spec spec;
    rlock__req *r = NULL;
    if (known == 0 && rel->drop_unknown && rlock__kind_has_drop(e->kind) &&
        rlock__spec_drop_phantom(&spec, e, rel->owner, known) == 0) {
        r = rlock__req_from_spec(e->client, &spec);
        rlock__spec_clear(&spec);
    }
    if (r == NULL)
        return done(rel, RLOCK_OK);
    rel->state = R_DROPPING;
    return (rlock__step){
        .kind = RLOCK__STEP_SEND, .req = r, .timeout_ms = rel->timeout_ms};
}

/* Applies the outcome rc (RLOCK__UNLOCK_* or a code) to the hold and ends
 * the unlock with what it reports. */
static rlock__step settle(rlock__release *rel, int rc)
{
    rlock__entry *e = rel->entry;
    if (rc == RLOCK__UNLOCK_RELEASED || rc == RLOCK__UNLOCK_UNANNOUNCED)
        rlock__entry_note_released(e); /* for the anti-barging wait */
    rlock__hold_settle(e, rel->owner, rel->epoch, rc);
    if (rc == RLOCK__UNLOCK_RELEASED || rc == RLOCK__UNLOCK_UNANNOUNCED ||
        rc == RLOCK__UNLOCK_STILL_HELD)
        rlock__stats_count(e->client->stats, RLOCK__STAT_RELEASES);
    switch (rc) {
    case RLOCK__UNLOCK_STILL_HELD:
        return drop_unknown_holds(rel);
    case RLOCK__UNLOCK_NOT_HELD:
    case RLOCK__UNLOCK_NOT_A_LOCK:
        return done(rel, RLOCK_ELOST);
    case RLOCK__UNLOCK_UNANNOUNCED:
        rlock__log_unannounced(e->client, e->name);
        return done(rel, RLOCK_ENOTIFY);
    default:
        return done(rel, rc < 0 ? rc : RLOCK_OK);
    }
}

static rlock__step send_attempt(rlock__release *rel)
{
    rlock__spec spec;
    rlock__req *r = NULL;
    int rc = rel->one_key
                 ? rlock__spec_release_one_key(&spec, rel->entry, rel->owner,
                                               rel->lease_ms)
                 : rlock__spec_release(&spec, rel->entry, rel->owner,
                                       rel->lease_ms, rel->latch);
    if (rc == 0) {
        r = rlock__req_from_spec(rel->entry->client, &spec);
        rlock__spec_clear(&spec);
    }
    if (r == NULL)
        return settle(rel, RLOCK_ENOMEM);
    /* out of memory, the latch simply expires */
    if (rel->attempt == 0 && !rel->one_key)
        r->latch_del = rlock__strdup(rel->latch);
    /* TRYAGAIN comes back at once while nothing may have run yet: the
     * one-key release follows (see the file comment) */
    r->tryagain_ends = !rel->one_key && !rel->maybe_ran &&
                       rlock__kind_has_one_key_release(rel->entry->kind);
    rel->state = R_SENDING;
    return (rlock__step){
        .kind = RLOCK__STEP_SEND, .req = r, .timeout_ms = rel->timeout_ms};
}

static rlock__step release_reply(void *op, rlock__req *r, int status)
{
    rlock__release *rel = op;
    if (rel->state == R_DROPPING) /* the unlock itself is settled */
        return done(rel, RLOCK_OK);
    if (rel->state != R_SENDING)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    int rc = status == 0 ? (int)r->value : status;
    if (status == 0 && r->heard) /* someone waits: see acquire.c */
        rlock__entry_note_contended(rel->entry, -1);
    if (status != 0 && r->tryagain && !rel->one_key) {
        rel->one_key = true; /* its slot migrates */
        return send_attempt(rel);
    }
    if (rc == RLOCK_ECONN || rc == RLOCK_ETIMEDOUT)
        rel->maybe_ran = true;
    if ((rc != RLOCK_ECONN && rc != RLOCK_ETIMEDOUT) ||
        rel->attempt >= rel->retries)
        return settle(rel, rc);
    /* a dropped connection is retried at once on a fresh one; a slow
     * server gets the retry interval */
    int64_t pause = rel->attempt > 0 || rc != RLOCK_ECONN
                        ? rel->entry->client->cfg.retry_interval_ms
                        : 0;
    rel->attempt++;
    if (pause == 0)
        return send_attempt(rel);
    rel->state = R_PAUSING;
    return (rlock__step){.kind = RLOCK__STEP_WAIT,
                         .until_ms = rlock__now_ms() + pause};
}

static rlock__step release_wake(void *op, bool woken)
{
    rlock__release *rel = op;
    (void)woken;
    if (rel->state != R_PAUSING)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    return send_attempt(rel);
}

/* An unlock is not cancelled; a closing client ends it, the hold staying
 * as it was. */
static rlock__step release_cancel(void *op, int why)
{
    rlock__release *rel = op;
    if (why != RLOCK_ECLOSED || rel->state == R_DONE)
        return (rlock__step){.kind = RLOCK__STEP_NONE};
    if (rel->state == R_IDLE)
        return done(rel, why);
    if (rel->state == R_DROPPING) /* released: the holds left expire */
        return done(rel, RLOCK_OK);
    return settle(rel, why);
}

const rlock__op_class rlock__release_class = {
    release_reply, release_wake, release_cancel};

/* Sets rel up for owner's unlock of e (the caller keeps e referenced),
 * with the client's retries and command timeout. */
void rlock__release_init(rlock__release *rel, rlock__entry *e,
                         uint64_t owner)
{
    *rel = (rlock__release){
        .entry = e,
        .owner = owner,
        .retries = e->client->cfg.retry_attempts,
        .timeout_ms = e->client->cfg.command_timeout_ms};
}

/* The first step: RLOCK_ENOTOWNER or RLOCK_ELOST without touching Redis,
 * else the first attempt. */
rlock__step rlock__release_start(rlock__release *rel)
{
    int rc = rlock__hold_release_begin(rel->entry, rel->owner, &rel->epoch,
                                       &rel->lease_ms);
    if (rc != 0)
        return done(rel, rc);
    char id[RLOCK__REQUEST_ID_LEN + 1];
    rc = rlock__request_id(id);
    if (rc == 0) {
        rel->latch = rlock__latch_name(rel->entry->name, id);
        if (rel->latch == NULL)
            rc = RLOCK_ENOMEM;
    }
    if (rc != 0)
        return settle(rel, rc);
    return send_attempt(rel);
}

void rlock__release_clear(rlock__release *rel)
{
    free(rel->latch);
    rel->latch = NULL;
}
