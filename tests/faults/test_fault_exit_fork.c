/*
 * test_fault_exit_fork.c: locks whose owner cannot unlock them any more.
 *
 * A thread that exits holding a lock can never unlock it (only the owning
 * thread may), so renewing it would keep the lock forever. What must
 * hold: the watchdog stops renewing it, the lease runs out, and the
 * lost-lock callbacks say so with RLOCK_LOST_ABANDONED; other holds of the
 * same client are not disturbed.
 *
 * A forked child inherits a copy of its parent's client, with the parent's
 * identity. It must not be able to unlock or renew its parent's locks:
 * every call on the inherited client says RLOCK_EFORKED; a new client in
 * the child has a new identity, and the parent's lock is not its to
 * unlock (RLOCK_ENOTOWNER); the parent's lock stays held and renewed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-exitfork"

#define WATCHDOG_MS 1500 /* renewed every 500 ms */
#define PERIOD_MS   (WATCHDOG_MS / 3)
/* Margin on a loaded 2-core machine for "reported at once" and for "the
 * lease ran out": far less than the renewals a live watchdog would make. */
#define MARGIN_MS 1500

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

static rlock_client *connect_fast(lt_fixture *f)
{
    ft_timing t = {.watchdog_ms = WATCHDOG_MS, .retry_attempts = -1};

    return ft_connect(f->redis.url, t);
}

/* Samples PTTL of name every 50 ms for ms milliseconds; asserts it stays
 * positive and returns the lowest value seen. */
static long long pttl_floor(rt_redis *r, const char *name, int64_t ms)
{
    int64_t t0 = rt_now_ms();
    long long low = -1;

    while (rt_now_ms() - t0 < ms) {
        long long pttl = rt_cmd_int(r, "PTTL %s", name);
        assert_true(pttl > 0);
        if (low < 0 || pttl < low)
            low = pttl;
        rt_sleep_ms(50);
    }
    return low;
}

/* PTTL of name and (in *value, malloc'd, NULL when absent) the value of
 * one hash field, read atomically (MULTI/EXEC), so that an expiry cannot
 * fall between the two. Returns the PTTL. */
static long long pttl_and_field(rt_redis *r, const char *name,
                                const char *field, char **value)
{
    redisReply *rep = rt_cmd(r, "EVAL %s 1 %s %s",
                             "return {redis.call('pttl', KEYS[1]), "
                             "redis.call('hget', KEYS[1], ARGV[1])}",
                             name, field);
    long long pttl;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_true(rep->elements >= 1);
    pttl = rep->element[0]->integer;
    *value = NULL;
    if (rep->elements == 2 && rep->element[1]->type == REDIS_REPLY_STRING)
        *value = strdup(rep->element[1]->str);
    freeReplyObject(rep);
    return pttl;
}

/* --------------------------------------------------------------- tests */

/* A thread takes a lock (watchdog lease) and exits without unlocking,
 * while the main thread holds another lock of the same client. The
 * abandoned lock is reported once with RLOCK_LOST_ABANDONED and the dead
 * thread's id, its PTTL only goes down from then on until the key expires
 * within a lease, and the main thread's lock stays renewed. */
static void test_thread_exit_with_hold_stops_renewal_and_reports(void **state)
{
    lt_fixture *f = *state;
    char base[128], gone[160], keep[160], field[200];
    rlock_client *c = connect_fast(f);
    ft_lost_log log;
    ft_lost_event ev = {0};
    static ft_holder h;
    int64_t t_exit;
    long long prev = WATCHDOG_MS + 1, pttl;
    rlock *lg, *lk;

    LT_TEST_NAME(base);
    snprintf(gone, sizeof(gone), "%s:gone", base);
    snprintf(keep, sizeof(keep), "%s:keep", base);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    lg = lt_get_lock(c, gone);
    lk = lt_get_lock(c, keep);
    assert_int_equal(rlock_on_lost(lg, ft_on_lock_lost, &log), RLOCK_OK);
    assert_int_equal(rlock_on_lost(lk, ft_on_lock_lost, &log), RLOCK_OK);
    assert_int_equal(rlock_lock(lk), RLOCK_OK);

    ft_holder_start(&h, lg, 2, 0); /* nested, watchdog lease */
    snprintf(field, sizeof(field), "%s:%llu", rlock_client_id(c),
             (unsigned long long)h.tid);
    rt_sleep_ms(PERIOD_MS + 200); /* renewed meanwhile */
    lt_assert_single_field(&f->redis, gone, field, "2");
    ft_holder_finish(&h, 0, 1); /* the thread exits holding it */
    t_exit = rt_now_ms();

    assert_true(ft_lost_wait(&log, 'L', gone, 10000, &ev));
    print_message("abandonment reported %lld ms after the thread exited\n",
                  (long long)(ev.at_ms - t_exit));
    assert_int_equal(ev.reason, RLOCK_LOST_ABANDONED);
    assert_true(ev.owner == h.tid);
    assert_true(ev.at_ms - t_exit < MARGIN_MS);
    assert_true(ft_lost_wait(&log, 'C', gone, 5000, NULL));

    /* never renewed again: PTTL only goes down until the key expires */
    for (;;) {
        char *count = NULL;

        pttl = pttl_and_field(&f->redis, gone, field, &count);
        if (pttl == -2) {
            free(count);
            break;
        }
        assert_true(pttl >= 0);
        assert_true(pttl <= prev);
        prev = pttl;
        /* still the dead thread's own hold until then */
        assert_non_null(count);
        assert_string_equal(count, "2");
        free(count);
        if (rt_now_ms() - t_exit > WATCHDOG_MS + MARGIN_MS)
            fail_msg("abandoned lock still there %d ms after its owner "
                     "exited (PTTL %lld)",
                     WATCHDOG_MS + MARGIN_MS, pttl);
        rt_sleep_ms(20);
    }
    print_message("abandoned lock expired %lld ms after the thread exited\n",
                  (long long)(rt_now_ms() - t_exit));

    /* the live thread's lock was renewed all along, and still is */
    assert_true(pttl_floor(&f->redis, keep, WATCHDOG_MS) > PERIOD_MS / 2);
    assert_int_equal(rlock_is_held_by_me(lk), 1);
    assert_int_equal(rlock_unlock(lk), RLOCK_OK);
    /* one report per callback, and none about the live lock */
    assert_int_equal(ft_lost_count(&log, 'L', gone), 1);
    assert_int_equal(ft_lost_count(&log, 'C', gone), 1);
    assert_int_equal(ft_lost_count(&log, 0, keep), 0);
    rlock_free(lg);
    rlock_free(lk);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

/* What the forked child found, sent to the parent. */
typedef struct child_report {
    int unlock_rc;     /* inherited client: rlock_unlock */
    int trylock_rc;    /* inherited: re-take (renew) with a new lease */
    int lock_rc;       /* inherited: rlock_lock */
    int held_rc;       /* inherited: rlock_is_held_by_me */
    int on_lost_rc;    /* inherited: rlock_client_on_lost */
    int same_id;       /* inherited client still reports the parent's id */
    int connect_rc;    /* a new client in the child */
    char new_id[64];   /* its id */
    int new_unlock_rc; /* new client: unlock of the parent's lock */
    int new_held_rc;   /* new client: is_held_by_me */
    int new_try_rc;    /* new client: trylock(300) of the parent's lock */
    int own_lock_rc;   /* new client: lock/unlock of another name works */
    int own_unlock_rc;
    char own_field[128]; /* the field its own lock was written with */
} child_report;

typedef struct child_args {
    rlock_client *inherited;
    rlock *l; /* the parent's handle to its held lock */
    char url[128];
    char name[160];
    char other[180];
    char parent_id[64];
} child_args;

static void no_cb(const char *name, uint64_t owner, uint64_t hold, int reason,
                  void *arg)
{
    (void)name;
    (void)owner;
    (void)hold;
    (void)reason;
    (void)arg;
}

/* Runs in the forked child: no cmocka asserts here, results go back. */
static void child_main(int in_fd, int out_fd, void *arg)
{
    child_args *a = arg;
    child_report rep;
    rlock_client *c2 = NULL;
    rlock *l2 = NULL, *own = NULL;
    char cmd;

    memset(&rep, 0, sizeof(rep));
    rep.unlock_rc = rlock_unlock(a->l);
    rep.trylock_rc = rlock_trylock(a->l, 0, 60000);
    rep.lock_rc = rlock_lock(a->l);
    rep.held_rc = rlock_is_held_by_me(a->l);
    rep.on_lost_rc = rlock_client_on_lost(a->inherited, no_cb, NULL);
    rep.same_id = strcmp(rlock_client_id(a->inherited), a->parent_id) == 0;

    rep.connect_rc = rlock_client_connect(&c2, a->url);
    if (rep.connect_rc == RLOCK_OK) {
        snprintf(rep.new_id, sizeof(rep.new_id), "%s", rlock_client_id(c2));
        if (rlock_get(c2, a->name, &l2) == RLOCK_OK) {
            rep.new_unlock_rc = rlock_unlock(l2);
            rep.new_held_rc = rlock_is_held_by_me(l2);
            rep.new_try_rc = rlock_trylock(l2, 300, 1000);
        }
        if (rlock_get(c2, a->other, &own) == RLOCK_OK) {
            rep.own_lock_rc = rlock_lock(own);
            snprintf(rep.own_field, sizeof(rep.own_field), "%s:%llu",
                     rlock_client_id(c2),
                     (unsigned long long)rlock_thread_id());
        }
    }
    /* freeing the inherited copies touches nothing of the parent's */
    rlock_free(a->l);
    rlock_client_free(a->inherited);
    if (ft_write_all(out_fd, &rep, sizeof(rep)) != 0)
        _exit(2);
    /* stay alive, holding our own lock, while the parent watches */
    if (ft_read_all(in_fd, &cmd, 1, 60000) != 0)
        _exit(3);
    if (own != NULL)
        rep.own_unlock_rc = rlock_unlock(own);
    if (ft_write_all(out_fd, &rep.own_unlock_rc, sizeof(int)) != 0)
        _exit(2);
    rlock_free(own);
    rlock_free(l2);
    rlock_client_free(c2);
    _exit(0);
}

/* The parent holds a lock (watchdog lease) and forks. In the child, every
 * call on the inherited client is refused with RLOCK_EFORKED; a new client
 * there has a new id, cannot unlock the parent's lock (RLOCK_ENOTOWNER, no
 * hold of its own) nor take it, and works normally on another name. The
 * parent's lock is untouched and stays renewed while the child lives and
 * after it exits. */
static void test_forked_child_cannot_unlock_or_renew_parent_lock(void **state)
{
    lt_fixture *f = *state;
    char name[128], *before, *after;
    rlock_client *c = connect_fast(f);
    child_args args;
    child_report rep;
    ft_lost_log log;
    ft_child ch = {0};
    int own_unlock_rc = -1;
    rlock *l;

    LT_TEST_NAME(name);
    ft_lost_log_init(&log);
    assert_int_equal(rlock_client_on_lost(c, ft_on_client_lost, &log),
                     RLOCK_OK);
    l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    before = lt_hash_dump(&f->redis, name);

    memset(&args, 0, sizeof(args));
    args.inherited = c;
    args.l = l;
    snprintf(args.url, sizeof(args.url), "%s", f->redis.url);
    snprintf(args.name, sizeof(args.name), "%s", name);
    snprintf(args.other, sizeof(args.other), "%s:child", name);
    snprintf(args.parent_id, sizeof(args.parent_id), "%s", rlock_client_id(c));
    assert_int_equal(ft_child_start(&ch, child_main, &args), 0);
    assert_int_equal(ft_read_all(ch.from_child, &rep, sizeof(rep), 20000), 0);

    print_message("child: unlock %s, trylock %s, lock %s, new client %s\n",
                  rlock_err_name(rep.unlock_rc), rlock_err_name(rep.trylock_rc),
                  rlock_err_name(rep.lock_rc), rep.new_id);
    assert_int_equal(rep.unlock_rc, RLOCK_EFORKED);
    assert_int_equal(rep.trylock_rc, RLOCK_EFORKED);
    assert_int_equal(rep.lock_rc, RLOCK_EFORKED);
    assert_int_equal(rep.held_rc, RLOCK_EFORKED);
    assert_int_equal(rep.on_lost_rc, RLOCK_EFORKED);
    assert_true(rep.same_id);
    assert_int_equal(rep.connect_rc, RLOCK_OK);
    assert_int_equal(strlen(rep.new_id), 36);
    assert_string_not_equal(rep.new_id, rlock_client_id(c));
    assert_int_equal(rep.new_unlock_rc, RLOCK_ENOTOWNER);
    assert_int_equal(rep.new_held_rc, 0);
    assert_int_equal(rep.new_try_rc, RLOCK_ETIMEDOUT);
    assert_int_equal(rep.own_lock_rc, RLOCK_OK);
    /* the child's own lock carries its new identity */
    lt_assert_single_field(&f->redis, args.other, rep.own_field, "1");

    /* the parent's lock: untouched, and renewed while the child lives */
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(after);
    assert_true(pttl_floor(&f->redis, name, WATCHDOG_MS) > PERIOD_MS / 2);

    assert_int_equal(ft_write_all(ch.to_child, "Q", 1), 0);
    assert_int_equal(
        ft_read_all(ch.from_child, &own_unlock_rc, sizeof(int), 20000), 0);
    assert_int_equal(own_unlock_rc, RLOCK_OK);
    assert_int_equal(ft_child_wait(&ch, 20000), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", args.other), 0);

    /* and after the child is gone */
    assert_true(pttl_floor(&f->redis, name, WATCHDOG_MS) > PERIOD_MS / 2);
    after = lt_hash_dump(&f->redis, name);
    assert_string_equal(after, before);
    free(after);
    free(before);
    assert_int_equal(rlock_hold_count(l), 1);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    assert_int_equal(ft_lost_count(&log, 0, NULL), 0);
    rlock_free(l);
    rlock_client_free(c);
    ft_lost_log_destroy(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_exit_with_hold_stops_renewal_and_reports),
        cmocka_unit_test(test_forked_child_cannot_unlock_or_renew_parent_lock),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
