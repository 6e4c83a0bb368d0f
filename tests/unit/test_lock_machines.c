/*
 * test_lock_machines.c: the acquire and release state machines
 * (src/core/acquire.c, release.c) driven by hand, with no server and no
 * I/O thread: each test feeds replies and wake-ups as a driver would and
 * checks the next step the machine asks for. This is what both the
 * blocking and the async API run, so each behaviour here holds for both.
 *
 * The clients here have no subscriber: a channel's subscription is
 * confirmed by the test (rlock__entry_set_subscribed, as the I/O thread
 * does), and on Linux the hand-off of an entry's membership to the I/O
 * thread (rlock__pubsub_sync) is wrapped at link time (tests/CMakeLists.txt)
 * so that a test can have it confirmed at once, as an I/O thread quicker
 * than the waiter's own thread does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "api/api.h" /* rlock__config_defaults, and core/core.h */

/* A client with just what the machines touch: its id, settings, entry
 * table and the clock its requests' condition variables use. */
typedef struct fixture {
    rlock_client client;
    rlock__entry *entry;
} fixture;

static int setup_kind(void **state, int kind)
{
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    rlock_client *c = &f->client;
    rlock__config_defaults(&c->cfg);
    c->cfg.retry_attempts = 3;
    c->cfg.retry_interval_ms = 1500;
    c->cfg.command_timeout_ms = 3000;
    /* the RLock's plain machine (lock_acquire.lua); the queued one, whose
     * waiters move between channels, is test_herd's */
    c->cfg.lock_queue = false;
    strcpy(c->id, "8c4a3f2e-1b7d-4e0a-9f6b-2d5c8e1a7b3f");
    c->latch_ms = 1000;
    pthread_mutex_init(&c->entries_mu, NULL);
    pthread_condattr_init(&c->condattr);
    atomic_init(&c->next_epoch, 1);
    assert_int_equal(rlock__map_init(&c->entries), 0);
    f->entry = rlock__entry_get(c, kind, "machine-lock", NULL);
    assert_non_null(f->entry);
    *state = f;
    return 0;
}

static int setup_lock(void **state)
{
    return setup_kind(state, RLOCK_KIND_LOCK);
}

/* Whether the wrapped rlock__pubsub_sync confirms a wanted channel at
 * once (the I/O thread answered before the waiter's thread went on), and
 * whether the wrapper was called. */
static bool fast_subscriber;
static bool sync_wrapped;

/* An RLock whose waiters queue (lock_acquire_queued.lua): the head waits on
 * the lock's channel, the others on their own. */
static int setup_queued(void **state)
{
    fast_subscriber = false;
    int rc = setup_kind(state, RLOCK_KIND_LOCK);
    fixture *f = *state;
    f->client.cfg.lock_queue = true;
    f->client.cfg.lock_barging = false;
    return rc;
}

static int setup_spin(void **state)
{
    return setup_kind(state, RLOCK_KIND_SPIN);
}

static int teardown(void **state)
{
    fixture *f = *state;
    rlock__entry_unref(f->entry);
    rlock__entries_sweep(&f->client);
    rlock__map_destroy(&f->client.entries);
    pthread_mutex_destroy(&f->client.entries_mu);
    pthread_condattr_destroy(&f->client.condattr);
    rlock__config_clear(&f->client.cfg);
    free(f);
    return 0;
}

/* Checks that st sends a call of script, and returns its request. */
static rlock__req *expect_send(rlock__step st, const rlock__script *script)
{
    assert_int_equal(st.kind, RLOCK__STEP_SEND);
    assert_non_null(st.req);
    assert_ptr_equal(st.req->script, script);
    assert_true(st.timeout_ms > 0);
    return st.req;
}

/* Feeds r's outcome to the machine and drops r, as a driver does. */
static rlock__step reply(const rlock__op_class *cls, void *op, rlock__req *r,
                         int status)
{
    rlock__step st = cls->reply(op, r, status);
    rlock__req_unref(r);
    return st;
}

/* The reply of an acquire that found the lock taken, ttl ms left. */
static rlock__step taken(rlock__acquire *a, rlock__req *r, int64_t ttl)
{
    r->nil = false;
    r->value = ttl;
    return reply(&rlock__acquire_class, a, r, 0);
}

static rlock__step acquired(rlock__acquire *a, rlock__req *r)
{
    r->nil = true;
    return reply(&rlock__acquire_class, a, r, 0);
}

#ifdef RLOCK_TEST_WRAP_PUBSUB_SYNC
int __real_rlock__pubsub_sync(rlock__entry *e);
int __wrap_rlock__pubsub_sync(rlock__entry *e);

/* rlock__pubsub_sync as the linker sees it from entry.c (--wrap): the
 * real one (a no-op for these clients), then, with fast_subscriber, what
 * the I/O thread does for an entry that wants its channel: it is
 * confirmed. */
int __wrap_rlock__pubsub_sync(rlock__entry *e)
{
    sync_wrapped = true;
    int rc = __real_rlock__pubsub_sync(e);
    if (fast_subscriber && rlock__entry_wants_channel(e))
        rlock__entry_set_subscribed(e, true, false);
    return rc;
}
#endif

/* ---------------------------------------------------------------- acquire */

/* An attempt lost with its connection may have taken the lock: the owner's
 * unknown holds are dropped before it tries again, at once. */
static void test_lost_attempt_is_dropped_before_the_next_try(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, 1000, 30000), 0);

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    assert_ptr_equal(r->lock_entry, f->entry); /* its late reply is given
                                                  back */
    r = expect_send(reply(&rlock__acquire_class, &a, r, RLOCK_ECONN),
                    &rlock__script_lock_drop);
    r = expect_send(reply(&rlock__acquire_class, &a, r, 0),
                    &rlock__script_lock_acquire);
    rlock__step st = acquired(&a, r);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    assert_int_equal(rlock__hold_count(f->entry, 7), 1);
    rlock__acquire_clear(&a);
}

/* A drop that cannot get through either is retried at once the first
 * time, then after the retry interval, until retry_attempts are spent. */
static void test_connection_retries_pause_then_give_up(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    r = expect_send(reply(&rlock__acquire_class, &a, r, RLOCK_ECONN),
                    &rlock__script_lock_drop);
    /* the first failure: again at once */
    r = expect_send(reply(&rlock__acquire_class, &a, r, RLOCK_ECONN),
                    &rlock__script_lock_drop);
    for (int i = 1; i < 3; i++) {
        int64_t now = rlock__now_ms();
        rlock__step st = reply(&rlock__acquire_class, &a, r, RLOCK_ECONN);
        assert_int_equal(st.kind, RLOCK__STEP_WAIT);
        assert_null(st.waiter); /* time only */
        assert_true(st.until_ms >= now + 1500 && st.until_ms < now + 2500);
        r = expect_send(rlock__acquire_class.wake(&a, false),
                        &rlock__script_lock_drop);
    }
    rlock__step st = reply(&rlock__acquire_class, &a, r, RLOCK_ECONN);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ECONN);
    assert_int_equal(rlock__hold_count(f->entry, 7), 0);
    rlock__acquire_clear(&a);
}

/* An attempt whose reply did not come by its deadline ends the acquire:
 * the transport gives back what its late reply takes. */
static void test_attempt_past_its_deadline_ends_the_acquire(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    rlock__step st = reply(&rlock__acquire_class, &a, r, RLOCK_ETIMEDOUT);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ETIMEDOUT);
    rlock__acquire_clear(&a);
}

/* A try with no wait on a taken lock does not wait. */
static void test_try_without_wait_on_a_taken_lock_times_out(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, 0, 30000), 0);

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    rlock__step st = taken(&a, r, 25000);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ETIMEDOUT);
    rlock__acquire_clear(&a);
}

/* A cancel while an attempt is out waits for its reply; one that took the
 * lock is given back before the acquire says it was cancelled. */
static void test_cancel_gives_back_what_the_attempt_took(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    rlock__step st = rlock__acquire_class.cancel(&a, RLOCK_ECANCELED);
    assert_int_equal(st.kind, RLOCK__STEP_NONE);
    rlock__req *back = expect_send(acquired(&a, r),
                                   &rlock__script_lock_release);
    st = reply(&rlock__acquire_class, &a, back, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ECANCELED);
    assert_int_equal(rlock__hold_count(f->entry, 7), 0);
    rlock__acquire_clear(&a);
}

/* The spin lock's back-off: each pause is the last one times the
 * multiplier plus a jitter below the failures so far, up to the cap. */
static void test_spin_back_off_grows_with_jitter_up_to_its_cap(void **state)
{
    (void)state;
    unsigned seed = 42;
    int64_t delay = 1;
    for (int failures = 1; failures <= 12; failures++) {
        int64_t next = rlock__spin_next_delay(delay, failures, 128, 2, &seed);
        if (delay * 2 + failures - 1 < 128) {
            assert_true(next >= delay * 2);
            assert_true(next <= delay * 2 + failures - 1);
        } else {
            assert_true(next <= 128);
        }
        delay = next;
    }
    assert_int_equal(delay, 128);
}

/* A spin lock waits between tries for its back-off, with no waiter (it has
 * no channel). */
static void test_spin_lock_backs_off_between_tries(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, 5000, 30000), 0);
    a.spin_initial_ms = 20;

    rlock__req *r = expect_send(rlock__acquire_start(&a),
                                &rlock__script_lock_acquire);
    int64_t now = rlock__now_ms();
    rlock__step st = taken(&a, r, 25000);
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_null(st.waiter);
    assert_true(st.until_ms >= now + 20 && st.until_ms < now + 100);
    r = expect_send(rlock__acquire_class.wake(&a, false),
                    &rlock__script_lock_acquire);
    now = rlock__now_ms();
    st = taken(&a, r, 25000);
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_true(st.until_ms >= now + 40 && st.until_ms < now + 120);
    r = expect_send(rlock__acquire_class.wake(&a, false),
                    &rlock__script_lock_acquire);
    st = acquired(&a, r);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    rlock__acquire_clear(&a);
}

/* Checks that st waits for a queued waiter's channel (its own, or the
 * lock's) to be subscribed, confirms it, and returns the try that
 * follows. */
static rlock__req *subscribed_then_tries(rlock__acquire *a, rlock__step st,
                                         bool own)
{
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_int_equal(st.want, RLOCK__WAIT_SUBSCRIBED);
    assert_true((st.waiter->entry != a->entry) == own);
    rlock__entry_set_subscribed(st.waiter->entry, true, false);
    assert_true(rlock__waiter_take(st.waiter, st.want));
    return expect_send(rlock__acquire_class.wake(a, true),
                       &rlock__script_lock_acquire_queued);
}

/* An RLock acquire's first try is Redisson's one-key script; once that
 * finds the lock taken, the waiter joins the queue at once (no wait in
 * between). Returns the queued try's request. */
static rlock__req *join_queue(rlock__acquire *a)
{
    rlock__req *r =
        expect_send(rlock__acquire_start(a), &rlock__script_lock_acquire);
    return expect_send(taken(a, r, 20000),
                       &rlock__script_lock_acquire_queued);
}

/* An uncontended acquire with a wait takes the lock with Redisson's one-key
 * script: nothing of the queue is read or written. */
static void test_uncontended_acquire_is_the_one_key_script(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);
    rlock__req *r =
        expect_send(rlock__acquire_start(&a), &rlock__script_lock_acquire);
    rlock__step st = acquired(&a, r);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    rlock__acquire_clear(&a);
}

/* A queued try that a migrating cluster slot answers with TRYAGAIN (the
 * queue's keys are not on one node) is followed at once by the one-key
 * try, and the waiter then waits on the lock's channel, as with the queue
 * off; the call does not fail. */
static void test_queued_try_refused_in_a_migration_falls_back(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);
    rlock__req *r = join_queue(&a);
    assert_true(r->tryagain_ends);
    r->tryagain = true;
    rlock__step st = reply(&rlock__acquire_class, &a, r, RLOCK_ESERVER);
    r = expect_send(st, &rlock__script_lock_acquire);
    assert_false(r->tryagain_ends);
    st = taken(&a, r, 20000);
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_int_equal(st.want, RLOCK__WAIT_SUBSCRIBED);
    assert_ptr_equal(st.waiter->entry, f->entry);
    rlock__acquire_clear(&a);
}

/* A queued try whose reply never came (its deadline passed) may have put
 * the waiter in the queue: the acquire leaves it before it ends, so that
 * those behind do not wait as behind a dead head. */
static void test_queued_try_without_a_reply_leaves_the_queue(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, 1000, 30000), 0);
    rlock__req *r = join_queue(&a);
    rlock__step st = reply(&rlock__acquire_class, &a, r, RLOCK_ETIMEDOUT);
    r = expect_send(st, &rlock__script_lock_give_up);
    st = reply(&rlock__acquire_class, &a, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ETIMEDOUT);
    rlock__acquire_clear(&a);
}

/* A queued waiter behind the head that joins its own channel afresh
 * tries again once it is subscribed there, however soon the subscription
 * is confirmed: its turn may have been told on that channel between its
 * try and the SUBSCRIBE (the head before it took the lock meanwhile), and
 * nobody tells it again. Before, it looked at the subscription flag after
 * joining, and when the I/O thread had confirmed the new subscription by
 * then, slept at once for its re-check interval, with the lock free and
 * nobody to take it (a 30 s wait in test_wakeup under valgrind). */
static void test_queued_waiter_joining_its_channel_tries_again(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
#ifndef RLOCK_TEST_WRAP_PUBSUB_SYNC
    skip(); /* no --wrap here: the subscription cannot be had at once */
#endif
    fast_subscriber = true;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);

    rlock__req *r = join_queue(&a);
    /* on its own channel, confirmed already: it waits for the subscription
     * (over at once), not for a wake-up, and tries; that try learns that
     * it heads the queue */
    rlock__step st = taken(&a, r, RLOCK__QUEUE_BEHIND);
    assert_true(sync_wrapped);
    r = subscribed_then_tries(&a, st, true);
    r = subscribed_then_tries(&a, taken(&a, r, 20000), false);
    st = acquired(&a, r);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    rlock__acquire_clear(&a);
}

/* A queued waiter that comes back behind the head while its own channel
 * still lingers, subscribed, from its last wait sleeps at once (no try:
 * the channel heard everything since), and a turn told on it meanwhile is
 * its wake-up. */
static void test_queued_waiter_back_on_its_lingering_channel(void **state)
{
    fixture *f = *state;
    rlock__acquire a;
    assert_int_equal(rlock__acquire_init(&a, f->entry, 7, -1, 30000), 0);
    rlock__req *r = join_queue(&a);
    rlock__step st = taken(&a, r, RLOCK__QUEUE_BEHIND);
    rlock__entry *own = st.waiter->entry;
    r = subscribed_then_tries(&a, st, true);
    /* it heads the queue: off to the lock's channel, its own lingers */
    r = subscribed_then_tries(&a, taken(&a, r, 20000), false);
    assert_true(rlock__entry_linger_left(own) > 0);
    /* another took the lock first, and it is behind again: the lingering
     * channel is still subscribed, and its turn is told there meanwhile */
    st = taken(&a, r, RLOCK__QUEUE_BEHIND);
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_int_equal(st.want, RLOCK__WAIT_PERMIT);
    assert_ptr_equal(st.waiter->entry, own);
    assert_false(rlock__waiter_take(st.waiter, st.want));
    assert_true(rlock__entry_wake(own, false));
    assert_true(rlock__waiter_take(st.waiter, st.want));
    /* told: off to the lock's channel, to try once subscribed there */
    st = rlock__acquire_class.wake(&a, true);
    assert_int_equal(st.want, RLOCK__WAIT_SUBSCRIBED);
    assert_ptr_equal(st.waiter->entry, f->entry);
    rlock__acquire_clear(&a);
}

/* ---------------------------------------------------------------- release */

static void hold(fixture *f, uint64_t owner)
{
    rlock__holder *spare = rlock__hold_spare();
    assert_non_null(spare);
    rlock__hold_add(f->entry, owner, 30000, spare);
}

/* An unlock without a hold touches nothing. */
static void test_release_without_a_hold_is_enotowner(void **state)
{
    fixture *f = *state;
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7);
    rlock__step st = rlock__release_start(&rel);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ENOTOWNER);
    rlock__release_clear(&rel);
}

/* A dropped reply is retried at once with the same latch, a slow one after
 * the retry interval; only the first attempt deletes the latch behind its
 * reply. */
static void test_release_retries_with_the_same_latch(void **state)
{
    fixture *f = *state;
    hold(f, 7);
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7);

    rlock__req *r = expect_send(rlock__release_start(&rel),
                                &rlock__script_lock_release);
    assert_non_null(r->latch_del);
    char *latch = strdup(r->latch_del);
    assert_non_null(latch);
    r = expect_send(reply(&rlock__release_class, &rel, r, RLOCK_ECONN),
                    &rlock__script_lock_release);
    assert_null(r->latch_del);
    /* the same latch key goes out again */
    bool same = false;
    for (int i = 0; i < r->argc; i++)
        same = same || strcmp(r->argv[i], latch) == 0;
    assert_true(same);
    int64_t now = rlock__now_ms();
    rlock__step st = reply(&rlock__release_class, &rel, r, RLOCK_ETIMEDOUT);
    assert_int_equal(st.kind, RLOCK__STEP_WAIT);
    assert_true(st.until_ms >= now + 1500);
    r = expect_send(rlock__release_class.wake(&rel, false),
                    &rlock__script_lock_release);
    r->value = RLOCK__UNLOCK_RELEASED;
    st = reply(&rlock__release_class, &rel, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    assert_int_equal(rlock__hold_count(f->entry, 7), 0);
    free(latch);
    rlock__release_clear(&rel);
}

/* A refused release (an error reply) keeps the hold; one that found the
 * hold gone reports it lost and forgets it. */
static void test_release_refused_keeps_the_hold(void **state)
{
    fixture *f = *state;
    hold(f, 7);
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7);
    rlock__req *r = expect_send(rlock__release_start(&rel),
                                &rlock__script_lock_release);
    rlock__step st = reply(&rlock__release_class, &rel, r, RLOCK_ESERVER);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ESERVER);
    assert_int_equal(rlock__hold_count(f->entry, 7), 1);
    rlock__release_clear(&rel);

    rlock__release_init(&rel, f->entry, 7);
    r = expect_send(rlock__release_start(&rel), &rlock__script_lock_release);
    r->value = RLOCK__UNLOCK_NOT_HELD;
    st = reply(&rlock__release_class, &rel, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_ELOST);
    assert_int_equal(rlock__hold_id(f->entry, 7), RLOCK_ENOTOWNER);
    rlock__release_clear(&rel);
}

/* A last unlock that Redis answers "still held" found holds a lost acquire
 * left in the owner's field: it drops them (the owner's re-entries would
 * renew them for ever), and ends once the drop is answered. */
static void test_last_release_still_held_drops_the_unknown_holds(
    void **state)
{
    fixture *f = *state;
    hold(f, 7);
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7);
    rel.drop_unknown = true; /* a thread's unlock */
    rlock__req *r = expect_send(rlock__release_start(&rel),
                                &rlock__script_lock_release);
    r->value = RLOCK__UNLOCK_STILL_HELD;
    r = expect_send(reply(&rlock__release_class, &rel, r, 0),
                    &rlock__script_lock_drop);
    /* none known: the drop removes every hold in the field */
    assert_string_equal(r->argv[r->argc - 1], "0");
    assert_int_equal(rlock__hold_count(f->entry, 7), 0);
    rlock__step st = reply(&rlock__release_class, &rel, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    rlock__release_clear(&rel);
}

/* An inner unlock is answered "still held" as it should be: no drop. */
static void test_inner_release_still_held_drops_nothing(void **state)
{
    fixture *f = *state;
    hold(f, 7);
    hold(f, 7);
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7);
    rel.drop_unknown = true;
    rlock__req *r = expect_send(rlock__release_start(&rel),
                                &rlock__script_lock_release);
    r->value = RLOCK__UNLOCK_STILL_HELD;
    rlock__step st = reply(&rlock__release_class, &rel, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    assert_int_equal(rlock__hold_count(f->entry, 7), 1);
    rlock__release_clear(&rel);
}

/* An async owner's last unlock answered "still held" drops nothing: the
 * owner may have an acquire in flight whose hold the drop would take. */
static void test_async_last_release_still_held_drops_nothing(void **state)
{
    fixture *f = *state;
    hold(f, 7);
    rlock__release rel;
    rlock__release_init(&rel, f->entry, 7); /* drop_unknown left false */
    rlock__req *r = expect_send(rlock__release_start(&rel),
                                &rlock__script_lock_release);
    r->value = RLOCK__UNLOCK_STILL_HELD;
    rlock__step st = reply(&rlock__release_class, &rel, r, 0);
    assert_int_equal(st.kind, RLOCK__STEP_DONE);
    assert_int_equal(st.status, RLOCK_OK);
    assert_int_equal(rlock__hold_count(f->entry, 7), 0);
    rlock__release_clear(&rel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_lost_attempt_is_dropped_before_the_next_try, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_connection_retries_pause_then_give_up, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_attempt_past_its_deadline_ends_the_acquire, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_try_without_wait_on_a_taken_lock_times_out, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_cancel_gives_back_what_the_attempt_took, setup_lock,
            teardown),
        cmocka_unit_test(test_spin_back_off_grows_with_jitter_up_to_its_cap),
        cmocka_unit_test_setup_teardown(
            test_spin_lock_backs_off_between_tries, setup_spin, teardown),
        cmocka_unit_test_setup_teardown(
            test_uncontended_acquire_is_the_one_key_script, setup_queued,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queued_try_refused_in_a_migration_falls_back, setup_queued,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queued_try_without_a_reply_leaves_the_queue, setup_queued,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queued_waiter_joining_its_channel_tries_again, setup_queued,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_queued_waiter_back_on_its_lingering_channel, setup_queued,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_release_without_a_hold_is_enotowner, setup_lock, teardown),
        cmocka_unit_test_setup_teardown(
            test_release_retries_with_the_same_latch, setup_lock, teardown),
        cmocka_unit_test_setup_teardown(
            test_release_refused_keeps_the_hold, setup_lock, teardown),
        cmocka_unit_test_setup_teardown(
            test_last_release_still_held_drops_the_unknown_holds, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_inner_release_still_held_drops_nothing, setup_lock,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_async_last_release_still_held_drops_nothing, setup_lock,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
