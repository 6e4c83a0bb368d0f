/*
 * test_fault_kinds.c: faults under the other kinds of lock (fair,
 * read-write, spin).
 *
 * What must hold: a reader or a fair-lock holder whose process is
 * SIGKILLed stops being renewed, so its lock frees itself within a lease
 * and the next waiter takes it; a fair waiter and read/write waiters outlive
 * a Redis restart and take their locks once they are free again; a spin
 * waiter whose connections are killed keeps polling and takes the lock when
 * it is released.
 *
 * Holders that are killed run in child processes with their own clients
 * and a short watchdog timeout, so "within a lease" is short. A child is
 * this same program started again (fork, then exec at once: nothing of the
 * test's threads, clients or allocator state crosses over), given its job
 * on stdin. Calls that could hang run on helper threads with deadlines.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-kinds"

/* argv[1] of this program run as a lock-holding child */
#define CHILD_FLAG "--kinds-holder-child"

/* The killed holders' watchdog: lease 1 s, renewed every third of it. */
#define WATCHDOG_MS 1000
/* Waiters behind a killed holder use a re-check interval longer than any
 * margin, so that only the lease they were told can wake them in time: a
 * waiter sleeps at most the holder's remaining lease (its last renewal
 * left at most WATCHDOG_MS), then takes the lock; asserted with margin. */
#define SLOW_RECHECK_MS  30000
#define EXPIRY_MARGIN_MS 2000
/* The planted holder after a restart keeps the lock this long. */
#define PLANT_MS 1500
/* Reconnection, resubscription and retries after a restart, with margin
 * (retry interval 1.5 s, re-check 2 s). */
#define RESTART_MARGIN_MS 8000
/* A spin waiter notices a release within its back-off (128 ms at most),
 * plus a reconnection, asserted with margin. */
#define SPIN_NOTICE_MS 3000
#define HANG_MS        20000

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

/* ------------------------------------------------------------- helpers */

/* Writes prefix(P, name) of REDISSON-PROTOCOL.md section 1.2. */
static void prefixed(char *buf, size_t n, const char *prefix, const char *name)
{
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "%s:%s", prefix, name);
    else
        snprintf(buf, n, "%s:{%s}", prefix, name);
}

static long long wait_llen(rt_redis *r, const char *key, long long want,
                           int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    long long n;

    while ((n = rt_cmd_int(r, "LLEN %s", key)) != want &&
           rt_now_ms() < deadline)
        rt_sleep_ms(5);
    return n;
}

static rlock *fair_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_fair_get(c, name, &l), RLOCK_OK);
    return l;
}

static rlock_rw *rw_get(rlock_client *c, const char *name)
{
    rlock_rw *rw = NULL;

    assert_int_equal(rlock_rw_get(c, name, &rw), RLOCK_OK);
    return rw;
}

static rlock *spin_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_spin_get(c, name, &l), RLOCK_OK);
    return l;
}

/* SHUTDOWN NOSAVE, then the same port again with an empty data set.
 * Returns the monotonic time at which the new server answered. */
static int64_t restart_redis(rt_redis *r)
{
    int64_t t0 = rt_now_ms(), t_up;
    redisReply *rep = rt_cmd(r, "SHUTDOWN NOSAVE");

    if (rep != NULL)
        freeReplyObject(rep);
    assert_int_equal(rt_redis_restart(r), 0);
    t_up = rt_now_ms();
    print_message("restart took %lld ms\n", (long long)(t_up - t0));
    return t_up;
}

/* ------------------------------------------ a holder in a child process */

/* The child reads its holder_args from stdin, connects a client with the
 * short watchdog, takes the lock of the given kind with rlock_lock, writes
 * the result (an int) to stdout, and then holds the lock until it is killed
 * (or the test goes away: EOF on stdin). */
typedef struct holder_args {
    char url[128];
    char name[160];
    char kind; /* 'r': read side of a read-write lock, 'f': fair lock */
} holder_args;

static int holder_main(void)
{
    holder_args a;
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock_rw *rw = NULL;
    rlock *l = NULL;
    char byte;
    int rc;

    if (ft_read_all(0, &a, sizeof(a), 10000) != 0)
        return 2;
    rc = rlock_config_new(&cfg);
    if (rc == RLOCK_OK)
        rc = rlock_config_set_watchdog_timeout(cfg, WATCHDOG_MS);
    if (rc == RLOCK_OK)
        rc = rlock_client_connect_with(&c, a.url, cfg);
    rlock_config_free(cfg);
    if (rc == RLOCK_OK && a.kind == 'r') {
        rc = rlock_rw_get(c, a.name, &rw);
        if (rc == RLOCK_OK)
            l = rlock_rw_read(rw);
    } else if (rc == RLOCK_OK) {
        rc = rlock_fair_get(c, a.name, &l);
    }
    if (rc == RLOCK_OK)
        rc = rlock_lock(l);
    if (ft_write_all(1, &rc, sizeof(rc)) != 0 || rc != RLOCK_OK)
        _exit(3);
    ft_read_all(0, &byte, 1, -1);
    _exit(1);
}

static ft_child child;
static int child_running;

static void holder_start(holder_args *a, const char *url, const char *name,
                         char kind)
{
    int rc = -1;

    memset(a, 0, sizeof(*a));
    snprintf(a->url, sizeof(a->url), "%s", url);
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->kind = kind;
    assert_int_equal(ft_child_exec(&child, CHILD_FLAG), 0);
    child_running = 1;
    assert_int_equal(ft_write_all(child.to_child, a, sizeof(*a)), 0);
    assert_int_equal(ft_read_all(child.from_child, &rc, sizeof(rc), 10000), 0);
    assert_int_equal(rc, RLOCK_OK);
}

/* SIGKILLs the holder; returns when. */
static int64_t holder_kill(void)
{
    int64_t t;

    kill(child.pid, SIGKILL);
    t = rt_now_ms();
    assert_int_equal(ft_child_wait(&child, 10000), -1);
    child_running = 0;
    return t;
}

static int teardown(void **state)
{
    (void)state;
    if (child_running) {
        kill(child.pid, SIGKILL);
        ft_child_wait(&child, 5000);
        child_running = 0;
    }
    return 0;
}

/* --------------------------------------------------------------- tests */

/* A reader in another process holds the read lock under a 1 s watchdog; a
 * writer waits. While the reader lives, renewals keep the writer out past
 * a lease; once the reader is SIGKILLed the lock (and its per-hold timeout
 * key) expires within a lease and the writer takes it. */
static void test_killed_reader_frees_lock_for_writer_after_lease(void **state)
{
    lt_fixture *f = *state;
    static holder_args a;
    static ft_waiter w;
    char name[128], pattern[200];
    rlock_client *c = lt_connect(
        f->redis.url, rlock_config_set_recheck_interval, SLOW_RECHECK_MS);
    int64_t t_kill;
    redisReply *keys;
    rlock_rw *rw;

    LT_TEST_NAME(name);
    holder_start(&a, f->redis.url, name, 'r');
    rw = rw_get(c, name);
    memset(&w, 0, sizeof(w));
    w.hold_ms = 100;
    ft_waiter_start(&w, rlock_rw_write(rw));
    rt_sleep_ms(WATCHDOG_MS + 500); /* more than a lease: renewed */
    assert_int_equal(atomic_load(&w.done), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);

    t_kill = holder_kill();
    if (!ft_waiters_wait(&w, 1, HANG_MS))
        fail_msg("the writer never got the dead reader's lock");
    print_message("the writer took it %lld ms after the reader was killed\n",
                  (long long)(w.acquired_ms - t_kill));
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms - t_kill < WATCHDOG_MS + EXPIRY_MARGIN_MS);

    /* the dead reader's timeout key went with it */
    snprintf(pattern, sizeof(pattern), "{%s}:*:rwlock_timeout:*", name);
    keys = rt_cmd(&f->redis, "KEYS %s", pattern);
    assert_non_null(keys);
    assert_int_equal(keys->type, REDIS_REPLY_ARRAY);
    assert_int_equal(keys->elements, 0);
    freeReplyObject(keys);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
    rlock_client_free(c);
}

/* A fair-lock holder in another process is SIGKILLed while two waiters are
 * queued: the first takes the lock once the dead holder's lease ran out,
 * the second right after the first lets go, and the queue is gone. */
static void test_killed_fair_holder_passes_lock_to_next_in_queue(void **state)
{
    lt_fixture *f = *state;
    static holder_args a;
    static ft_waiter ws[2];
    char name[128], queue[200], timeout[200];
    rlock_client *c = lt_connect(
        f->redis.url, rlock_config_set_recheck_interval, SLOW_RECHECK_MS);
    int64_t t_kill;
    rlock *l;

    LT_TEST_NAME(name);
    prefixed(queue, sizeof(queue), "redisson_lock_queue", name);
    prefixed(timeout, sizeof(timeout), "redisson_lock_timeout", name);
    holder_start(&a, f->redis.url, name, 'f');
    l = fair_lock(c, name);
    memset(ws, 0, sizeof(ws));
    for (int i = 0; i < 2; i++) {
        ws[i].hold_ms = 200;
        ft_waiter_start(&ws[i], l);
        assert_int_equal(wait_llen(&f->redis, queue, i + 1, 10000), i + 1);
    }
    rt_sleep_ms(WATCHDOG_MS + 500); /* more than a lease: renewed */
    assert_int_equal(atomic_load(&ws[0].done) + atomic_load(&ws[1].done), 0);

    t_kill = holder_kill();
    if (!ft_waiters_wait(ws, 2, HANG_MS))
        fail_msg("a queued waiter never got the dead holder's lock");
    print_message("first waiter in %lld ms after the kill; second %lld ms "
                  "after the first unlocked\n",
                  (long long)(ws[0].acquired_ms - t_kill),
                  (long long)(ws[1].acquired_ms - ws[0].unlocked_ms));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ws[i].rc, RLOCK_OK);
        assert_int_equal(ws[i].unlock_rc, RLOCK_OK);
    }
    assert_true(ws[0].acquired_ms - t_kill < WATCHDOG_MS + EXPIRY_MARGIN_MS);
    /* in queue order, the second woken by the first's unlock */
    assert_true(ws[1].acquired_ms >= ws[0].acquired_ms);
    assert_true(ws[1].acquired_ms - ws[0].unlocked_ms < 1500);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", timeout), 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* Writes a foreign holder into a lock that is free: hash name with field
 * field (and mode, when mode is not NULL), lease PLANT_MS. Returns 1 if
 * planted, 0 if the lock was taken already. */
static int plant_holder(rt_redis *r, const char *name, const char *field,
                        const char *mode)
{
    static const char script[] =
        "if redis.call('exists', KEYS[1]) == 1 then return 0 end "
        "if ARGV[3] ~= '' then redis.call('hset', KEYS[1], 'mode', ARGV[3]) "
        "end "
        "redis.call('hset', KEYS[1], ARGV[1], 1) "
        "redis.call('pexpire', KEYS[1], ARGV[2]) return 1";

    return (int)rt_cmd_int(r, "EVAL %s 1 %s %s %d %s", script, name, field,
                           PLANT_MS, mode != NULL ? mode : "");
}

/* Returns 1 if [a0, a1] and [b0, b1] overlap. */
static int overlaps(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    return a0 < b1 && b0 < a1;
}

/* A fair waiter, two readers and a writer (threads of one client) wait
 * for locks held by another client when Redis restarts with an empty data
 * set. Right after the restart a foreign holder is written into each lock
 * for 1.5 s (unless a waiter was quicker); once it has expired, every
 * waiter takes its lock, none before, and the writer never overlaps a
 * reader. The old holder's unlocks report the holds lost. */
static void test_fair_and_rw_waiters_outlive_a_restart(void **state)
{
    lt_fixture *f = *state;
    char base[128], fname[160], rwname[160], queue[200], channel[200];
    rlock_client *h = lt_connect(f->redis.url, NULL, 0);
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    static ft_waiter ws[4]; /* fair, reader, reader, writer */
    int64_t t_up, t_plant, worst = 0;
    int planted_f, planted_rw;
    rlock_rw *hrw, *wrw;
    rlock *hf, *wf;

    LT_TEST_NAME(base);
    snprintf(fname, sizeof(fname), "%s:fair", base);
    snprintf(rwname, sizeof(rwname), "%s:rw", base);
    prefixed(queue, sizeof(queue), "redisson_lock_queue", fname);
    prefixed(channel, sizeof(channel), "redisson_rwlock", rwname);
    hf = fair_lock(h, fname);
    hrw = rw_get(h, rwname);
    wf = fair_lock(c, fname);
    wrw = rw_get(c, rwname);
    assert_int_equal(rlock_lock(hf), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_write(hrw)), RLOCK_OK);

    memset(ws, 0, sizeof(ws));
    for (int i = 0; i < 4; i++)
        ws[i].hold_ms = 200;
    ft_waiter_start(&ws[0], wf);
    ft_waiter_start(&ws[1], rlock_rw_read(wrw));
    ft_waiter_start(&ws[2], rlock_rw_read(wrw));
    ft_waiter_start(&ws[3], rlock_rw_write(wrw));
    assert_int_equal(wait_llen(&f->redis, queue, 1, 10000), 1);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(300); /* every waiter has tried and sleeps */
    for (int i = 0; i < 4; i++)
        assert_int_equal(atomic_load(&ws[i].done), 0);

    t_up = restart_redis(&f->redis);
    t_plant = rt_now_ms();
    planted_f = plant_holder(&f->redis, fname, "planted:1", NULL);
    planted_rw = plant_holder(&f->redis, rwname, "planted:1:write", "write");
    print_message("planted a holder %lld ms after the restart: fair %d, "
                  "read-write %d\n",
                  (long long)(rt_now_ms() - t_up), planted_f, planted_rw);

    if (!ft_waiters_wait(ws, 4, HANG_MS))
        fail_msg("a waiter was stranded by the restart");
    for (int i = 0; i < 4; i++) {
        int planted = i == 0 ? planted_f : planted_rw;

        assert_int_equal(ws[i].rc, RLOCK_OK);
        assert_int_equal(ws[i].unlock_rc, RLOCK_OK);
        if (ws[i].acquired_ms - t_up > worst)
            worst = ws[i].acquired_ms - t_up;
        /* none while the planted holder's lease ran (10 ms for clocks) */
        if (planted == 1)
            assert_true(ws[i].acquired_ms >= t_plant + PLANT_MS - 10);
    }
    print_message("every waiter done; the last took its lock %lld ms after "
                  "Redis was back\n",
                  (long long)worst);
    assert_true(worst < PLANT_MS + RESTART_MARGIN_MS);
    for (int i = 1; i <= 2; i++)
        assert_false(overlaps(ws[3].acquired_ms, ws[3].unlocked_ms,
                              ws[i].acquired_ms, ws[i].unlocked_ms - 1));

    /* the old holder's keys were wiped by the restart */
    assert_int_equal(rlock_unlock(rlock_rw_write(hrw)), RLOCK_ELOST);
    assert_int_equal(rlock_unlock(hf), RLOCK_ELOST);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", fname), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", rwname), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", queue), 0);
    rlock_free(hf);
    rlock_free(wf);
    rlock_rw_free(hrw);
    rlock_rw_free(wrw);
    rlock_client_free(h);
    rlock_client_free(c);
}

/* A spin waiter polls while every command connection on the server is
 * killed, three times over; the lock stays held, the waiter keeps polling
 * on new connections, and takes the lock soon after the holder (whose
 * connections were killed too) releases it. */
static void test_spin_waiter_survives_killed_connections(void **state)
{
    lt_fixture *f = *state;
    char name[128];
    rlock_client *h = lt_connect(f->redis.url, NULL, 0);
    rlock_client *c = lt_connect(f->redis.url, NULL, 0);
    static ft_waiter w;
    int64_t t_unlocked;
    rlock *hl, *wl;

    LT_TEST_NAME(name);
    hl = spin_lock(h, name);
    wl = spin_lock(c, name);
    assert_int_equal(rlock_lock(hl), RLOCK_OK);
    memset(&w, 0, sizeof(w));
    ft_waiter_start(&w, wl);
    rt_sleep_ms(300);

    for (int round = 0; round < 3; round++) {
        assert_true(rt_cmd_int(&f->redis, "CLIENT KILL TYPE normal") >= 1);
        rt_sleep_ms(400);
        assert_int_equal(atomic_load(&w.done), 0);
        assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 1);
    }

    assert_int_equal(rlock_unlock(hl), RLOCK_OK);
    t_unlocked = rt_now_ms();
    if (!ft_waiters_wait(&w, 1, HANG_MS))
        fail_msg("the spin waiter never took the lock");
    print_message("the spin waiter took it %lld ms after the unlock\n",
                  (long long)(w.acquired_ms - t_unlocked));
    assert_int_equal(w.rc, RLOCK_OK);
    assert_int_equal(w.unlock_rc, RLOCK_OK);
    assert_true(w.acquired_ms - t_unlocked < SPIN_NOTICE_MS);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_free(hl);
    rlock_free(wl);
    rlock_client_free(h);
    rlock_client_free(c);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], CHILD_FLAG) == 0)
        return holder_main();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(
            test_killed_reader_frees_lock_for_writer_after_lease, teardown),
        cmocka_unit_test_teardown(
            test_killed_fair_holder_passes_lock_to_next_in_queue, teardown),
        cmocka_unit_test(test_fair_and_rw_waiters_outlive_a_restart),
        cmocka_unit_test(test_spin_waiter_survives_killed_connections),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
