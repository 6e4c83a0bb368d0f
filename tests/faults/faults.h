/*
 * faults.h: helpers shared by the fault-injection suite (tests/faults/).
 *
 * Everything here is static inline, so that each test file compiles on its
 * own and an unused helper costs nothing. The helpers talk to real
 * redis-server processes through the harness (rt_cmd, a fresh connection per
 * command) and fail the running cmocka test through its asserts, except the
 * ft_child_* functions, which also run in forked children and report by
 * return value.
 *
 * Include after <cmocka.h>.
 */
#ifndef RLOCK_TEST_FAULTS_H
#define RLOCK_TEST_FAULTS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

/* ------------------------------------------------------------ server side */

/* The integer after "<field>:" in INFO <section>, or -1 if absent. */
static inline long long ft_info_int(rt_redis *r, const char *section,
                                    const char *field)
{
    redisReply *rep = rt_cmd(r, "INFO %s", section);
    char key[128];
    long long v = -1;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(rep->str, key);
    if (p != NULL)
        v = atoll(p + strlen(key));
    freeReplyObject(rep);
    return v;
}

/* How many times Redis ran command cmd (lowercase, e.g. "evalsha") since
 * start or CONFIG RESETSTAT, from INFO commandstats (0 if never). */
static inline long long ft_cmd_calls(rt_redis *r, const char *cmd)
{
    redisReply *rep = rt_cmd(r, "INFO commandstats");
    char key[128];
    long long v = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    const char *p = strstr(rep->str, key);
    if (p != NULL)
        v = atoll(p + strlen(key));
    freeReplyObject(rep);
    return v;
}

/* Script runs of any kind (EVAL and EVALSHA). */
static inline long long ft_script_calls(rt_redis *r)
{
    return ft_cmd_calls(r, "eval") + ft_cmd_calls(r, "evalsha");
}

/* Writes the ids of the connections of CLIENT LIST TYPE type ("normal",
 * "pubsub") into ids (at most max), leaving out the connection that asks.
 * Returns how many. */
static inline int ft_client_ids(rt_redis *r, const char *type, long long *ids,
                                int max)
{
    redisReply *rep = rt_cmd(r, "CLIENT LIST TYPE %s", type);
    int n = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    for (const char *line = rep->str; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        char buf[1024];

        snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
        /* not this CLIENT LIST's own connection (closed on return): Redis
         * 6.2 names its command "client", without the subcommand */
        if (strncmp(buf, "id=", 3) == 0 &&
            strstr(buf, " cmd=client|list ") == NULL &&
            strstr(buf, " cmd=client ") == NULL && n < max)
            ids[n++] = atoll(buf + 3);
        line = end != NULL ? end + 1 : NULL;
    }
    freeReplyObject(rep);
    return n;
}

/* Returns 1 if id is among ids[0..n). */
static inline int ft_id_in(long long id, const long long *ids, int n)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* CLIENT KILL ID for each of ids[0..n); returns how many were killed. */
static inline int ft_kill_ids(rt_redis *r, const long long *ids, int n)
{
    int killed = 0;

    for (int i = 0; i < n; i++)
        if (rt_cmd_int(r, "CLIENT KILL ID %lld", ids[i]) == 1)
            killed++;
    return killed;
}

/* Polls CLIENT LIST TYPE normal until a connection is blocked (flags=b:
 * waiting out a CLIENT PAUSE) running cmd, or timeout_ms passes. Returns
 * that connection's id, or -1 when none was seen. */
static inline long long ft_wait_blocked(rt_redis *r, const char *cmd,
                                        int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    char want[64];

    snprintf(want, sizeof(want), " cmd=%s ", cmd);
    for (;;) {
        redisReply *rep = rt_cmd(r, "CLIENT LIST TYPE normal");
        long long id = -1;

        assert_non_null(rep);
        for (const char *line = rep->str; line != NULL && *line != '\0';) {
            const char *end = strchr(line, '\n');
            size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
            char buf[1024];

            snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
            if (strncmp(buf, "id=", 3) == 0 &&
                strstr(buf, " flags=b ") != NULL && strstr(buf, want) != NULL)
                id = atoll(buf + 3);
            line = end != NULL ? end + 1 : NULL;
        }
        freeReplyObject(rep);
        if (id >= 0)
            return id;
        if (rt_now_ms() >= deadline)
            return -1;
        rt_sleep_ms(5);
    }
}

/* Polls EXISTS key until it equals want or timeout_ms passes; returns the
 * last value seen. */
static inline long long ft_wait_exists(rt_redis *r, const char *key,
                                       long long want, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    long long n;

    while ((n = rt_cmd_int(r, "EXISTS %s", key)) != want &&
           rt_now_ms() < deadline)
        rt_sleep_ms(10);
    return n;
}

/* ----------------------------------------------------------------- config */

/* Timing knobs for ft_connect(); 0 leaves Redisson's default. */
typedef struct ft_timing {
    int64_t watchdog_ms;
    int64_t command_ms;
    int64_t recheck_ms;
    int64_t retry_interval_ms;
    int retry_attempts; /* -1: default */
} ft_timing;

/* Connects a client to url with the given timing; asserts success. */
static inline rlock_client *ft_connect(const char *url, ft_timing t)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    if (t.watchdog_ms > 0)
        assert_int_equal(rlock_config_set_watchdog_timeout(cfg, t.watchdog_ms),
                         RLOCK_OK);
    if (t.command_ms > 0)
        assert_int_equal(rlock_config_set_command_timeout(cfg, t.command_ms),
                         RLOCK_OK);
    if (t.recheck_ms > 0)
        assert_int_equal(rlock_config_set_recheck_interval(cfg, t.recheck_ms),
                         RLOCK_OK);
    if (t.retry_interval_ms > 0)
        assert_int_equal(
            rlock_config_set_retry_interval(cfg, t.retry_interval_ms),
            RLOCK_OK);
    if (t.retry_attempts >= 0)
        assert_int_equal(rlock_config_set_retry_attempts(cfg, t.retry_attempts),
                         RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    assert_non_null(c);
    return c;
}

/* ------------------------------------------------------- lost-lock events */

#define FT_MAX_EVENTS 64

typedef struct ft_lost_event {
    char who; /* 'L': per-lock callback, 'C': client-wide callback */
    char name[160];
    uint64_t owner;
    int reason;
    int64_t at_ms; /* rt_now_ms() when the callback ran */
} ft_lost_event;

/* Every lost-lock callback seen, in order. Zero it, then ft_lost_log_init. */
typedef struct ft_lost_log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    ft_lost_event ev[FT_MAX_EVENTS];
} ft_lost_log;

static inline void ft_lost_log_init(ft_lost_log *log)
{
    pthread_condattr_t attr;

    memset(log, 0, sizeof(*log));
    pthread_mutex_init(&log->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&log->cv, &attr);
    pthread_condattr_destroy(&attr);
}

static inline void ft_lost_log_destroy(ft_lost_log *log)
{
    pthread_mutex_destroy(&log->mu);
    pthread_cond_destroy(&log->cv);
}

static inline void ft_lost_record(ft_lost_log *log, char who, const char *name,
                                  uint64_t owner, int reason)
{
    pthread_mutex_lock(&log->mu);
    if (log->n < FT_MAX_EVENTS) {
        ft_lost_event *e = &log->ev[log->n++];
        e->who = who;
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->owner = owner;
        e->reason = reason;
        e->at_ms = rt_now_ms();
    }
    pthread_cond_broadcast(&log->cv);
    pthread_mutex_unlock(&log->mu);
}

/* rlock_lost_cb for rlock_on_lost(l, ft_on_lock_lost, log). */
static inline void ft_on_lock_lost(const char *name, uint64_t owner,
                                   uint64_t hold, int reason, void *arg)
{
    (void)hold;
    ft_lost_record(arg, 'L', name, owner, reason);
}

/* rlock_lost_cb for rlock_client_on_lost(c, ft_on_client_lost, log). */
static inline void ft_on_client_lost(const char *name, uint64_t owner,
                                     uint64_t hold, int reason, void *arg)
{
    (void)hold;
    ft_lost_record(arg, 'C', name, owner, reason);
}

/* Index of the first event from who about name, or -1. log->mu held. */
static inline int ft_lost_find_locked(ft_lost_log *log, char who,
                                      const char *name)
{
    for (int i = 0; i < log->n; i++)
        if (log->ev[i].who == who && strcmp(log->ev[i].name, name) == 0)
            return i;
    return -1;
}

/* Waits up to timeout_ms for an event from who about name; returns a copy
 * in *out and 1, or 0 when none came. */
static inline int ft_lost_wait(ft_lost_log *log, char who, const char *name,
                               int timeout_ms, ft_lost_event *out)
{
    struct timespec ts;
    int64_t deadline = rt_now_ms() + timeout_ms;
    int i;

    ts.tv_sec = (time_t)(deadline / 1000);
    ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
    pthread_mutex_lock(&log->mu);
    while ((i = ft_lost_find_locked(log, who, name)) < 0 &&
           pthread_cond_timedwait(&log->cv, &log->mu, &ts) != ETIMEDOUT)
        ;
    if (i >= 0 && out != NULL)
        *out = log->ev[i];
    pthread_mutex_unlock(&log->mu);
    return i >= 0;
}

/* How many events from who (0: any) about name (NULL: any) were seen. */
static inline int ft_lost_count(ft_lost_log *log, char who, const char *name)
{
    int n = 0;

    pthread_mutex_lock(&log->mu);
    for (int i = 0; i < log->n; i++)
        if ((who == 0 || log->ev[i].who == who) &&
            (name == NULL || strcmp(log->ev[i].name, name) == 0))
            n++;
    pthread_mutex_unlock(&log->mu);
    return n;
}

/* -------------------------------------------------- calls on a thread */

typedef enum {
    FT_LOCK,      /* rlock_lock */
    FT_TRYLOCK,   /* rlock_trylock(wait_ms, lease_ms) */
    FT_IS_LOCKED, /* rlock_is_locked */
    FT_TTL,       /* rlock_remaining_ttl */
} ft_op;

/* One rlock call on its own thread, so that a hang fails the test instead
 * of the CTest timeout. (An unlock must come from the thread that locked:
 * use ft_holder for that.) */
typedef struct ft_call {
    pthread_t thread;
    rlock *l;
    ft_op op;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t rc;
    int64_t started_ms;
    int64_t elapsed_ms;
    atomic_int done;
} ft_call;

static inline void *ft_call_main(void *p)
{
    ft_call *a = p;

    a->started_ms = rt_now_ms();
    switch (a->op) {
    case FT_LOCK:
        a->rc = rlock_lock(a->l);
        break;
    case FT_TRYLOCK:
        a->rc = rlock_trylock(a->l, a->wait_ms, a->lease_ms);
        break;
    case FT_IS_LOCKED:
        a->rc = rlock_is_locked(a->l);
        break;
    case FT_TTL:
        a->rc = rlock_remaining_ttl(a->l);
        break;
    }
    a->elapsed_ms = rt_now_ms() - a->started_ms;
    atomic_store(&a->done, 1);
    return NULL;
}

static inline void ft_call_start(ft_call *a, rlock *l, ft_op op,
                                 int64_t wait_ms, int64_t lease_ms)
{
    memset(a, 0, sizeof(*a));
    a->l = l;
    a->op = op;
    a->wait_ms = wait_ms;
    a->lease_ms = lease_ms;
    atomic_init(&a->done, 0);
    assert_int_equal(pthread_create(&a->thread, NULL, ft_call_main, a), 0);
}

/* Waits up to timeout_ms for the call to finish; joins it and returns 1 if
 * it did, else returns 0 (the thread is left running). */
static inline int ft_call_wait(ft_call *a, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (!atomic_load(&a->done) && rt_now_ms() < deadline)
        rt_sleep_ms(2);
    if (!atomic_load(&a->done))
        return 0;
    assert_int_equal(pthread_join(a->thread, NULL), 0);
    return 1;
}

/* ------------------------------------------------------ lock-holding thread */

/* A thread that takes a lock (rlock_lock, or rlock_trylock(0, lease) when
 * lease_ms > 0) times times, reports, then waits for the go-ahead and
 * unlocks as many times as told, reporting each result: lets the main thread
 * hold several locks in several threads and unlock each from its owner. */
typedef struct ft_holder {
    pthread_t thread;
    rlock *l;
    int64_t lease_ms; /* 0: watchdog lease via rlock_lock */
    int times;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;                 /* 0 taking, 1 held, 2 asked, 3 done */
    int lock_rc;               /* first failing lock call, or 0 */
    uint64_t tid;              /* rlock_thread_id() of the thread */
    int unlocks;               /* how many unlocks to make when asked */
    int unlock_rc[8];          /* results */
    int is_held_rc;            /* rlock_is_held_by_me() just before unlocking */
    int64_t unlock_started_ms; /* when the first unlock was called */
    int64_t unlocked_ms;       /* when the last unlock returned */
    int exit_holding;          /* 1: exit at state 2 without unlocking */
} ft_holder;

static inline void *ft_holder_main(void *p)
{
    ft_holder *h = p;
    int rc = 0;

    h->tid = rlock_thread_id();
    for (int i = 0; i < h->times && rc == 0; i++)
        rc = h->lease_ms > 0 ? rlock_trylock(h->l, 0, h->lease_ms)
                             : rlock_lock(h->l);
    pthread_mutex_lock(&h->mu);
    h->lock_rc = rc;
    h->state = 1;
    pthread_cond_broadcast(&h->cv);
    while (h->state != 2)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (!h->exit_holding) {
        h->is_held_rc = rlock_is_held_by_me(h->l);
        h->unlock_started_ms = rt_now_ms();
        for (int i = 0; i < h->unlocks && i < 8; i++)
            h->unlock_rc[i] = rlock_unlock(h->l);
    }
    pthread_mutex_lock(&h->mu);
    h->unlocked_ms = rt_now_ms();
    h->state = 3;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Starts the thread and waits until it holds the lock; asserts success
 * (and fails the test if the lock call hangs). */
#define FT_HOLDER_START_MS 20000
static inline void ft_holder_start(ft_holder *h, rlock *l, int times,
                                   int64_t lease_ms)
{
    memset(h, 0, sizeof(*h));
    h->l = l;
    h->times = times;
    h->lease_ms = lease_ms;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    assert_int_equal(pthread_create(&h->thread, NULL, ft_holder_main, h), 0);
    for (int64_t deadline = rt_now_ms() + FT_HOLDER_START_MS;;) {
        pthread_mutex_lock(&h->mu);
        int state = h->state;
        pthread_mutex_unlock(&h->mu);
        if (state >= 1)
            break;
        if (rt_now_ms() >= deadline)
            fail_msg("a holder thread's lock did not return in %d ms",
                     FT_HOLDER_START_MS);
        rt_sleep_ms(2);
    }
    assert_int_equal(h->lock_rc, RLOCK_OK);
}

/* Asks the thread to unlock unlocks times (or, with exit_holding, to exit
 * still holding), without waiting for it. */
static inline void ft_holder_release(ft_holder *h, int unlocks,
                                     int exit_holding)
{
    pthread_mutex_lock(&h->mu);
    h->unlocks = unlocks;
    h->exit_holding = exit_holding;
    h->state = 2;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Waits up to timeout_ms for the thread to finish and joins it; fails the
 * test if it hangs. */
static inline void ft_holder_join(ft_holder *h, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    for (;;) {
        pthread_mutex_lock(&h->mu);
        int state = h->state;
        pthread_mutex_unlock(&h->mu);
        if (state == 3)
            break;
        if (rt_now_ms() >= deadline)
            fail_msg("a holder thread's unlock did not return in %d ms",
                     timeout_ms);
        rt_sleep_ms(2);
    }
    assert_int_equal(pthread_join(h->thread, NULL), 0);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
}

/* ft_holder_release() then ft_holder_join() with a 30 s limit. */
static inline void ft_holder_finish(ft_holder *h, int unlocks, int exit_holding)
{
    ft_holder_release(h, unlocks, exit_holding);
    ft_holder_join(h, 30000);
}

/* ------------------------------------------------------------ waiter thread */

/* A thread that takes a lock (rlock_lock, or rlock_trylock(wait_ms,
 * lease_ms) when use_trylock), notes when, keeps it hold_ms, and unlocks. */
typedef struct ft_waiter {
    pthread_t thread;
    rlock *l;
    int use_trylock;
    int64_t wait_ms;
    int64_t lease_ms;
    int64_t hold_ms;
    int rc;
    int unlock_rc;
    int64_t started_ms;
    int64_t acquired_ms; /* when the lock call returned */
    int64_t unlocked_ms; /* when the unlock returned */
    atomic_int done;
} ft_waiter;

static inline void *ft_waiter_main(void *p)
{
    ft_waiter *w = p;

    w->started_ms = rt_now_ms();
    w->rc = w->use_trylock ? rlock_trylock(w->l, w->wait_ms, w->lease_ms)
                           : rlock_lock(w->l);
    w->acquired_ms = rt_now_ms();
    if (w->rc == RLOCK_OK) {
        rt_sleep_ms(w->hold_ms);
        w->unlock_rc = rlock_unlock(w->l);
    }
    w->unlocked_ms = rt_now_ms();
    atomic_store(&w->done, 1);
    return NULL;
}

/* Starts w on l; set use_trylock, wait_ms, lease_ms and hold_ms first. */
static inline void ft_waiter_start(ft_waiter *w, rlock *l)
{
    w->l = l;
    atomic_init(&w->done, 0);
    assert_int_equal(pthread_create(&w->thread, NULL, ft_waiter_main, w), 0);
}

/* Waits until every waiter of ws[0..n) finished, at most timeout_ms in all.
 * Joins them and returns 1, or returns 0 (leaving them running) if one is
 * still busy: the caller fails the test, naming the stranded waiter. */
static inline int ft_waiters_wait(ft_waiter *ws, int n, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    for (int i = 0; i < n; i++) {
        while (!atomic_load(&ws[i].done) && rt_now_ms() < deadline)
            rt_sleep_ms(5);
        if (!atomic_load(&ws[i].done))
            return 0;
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(ws[i].thread, NULL), 0);
    return 1;
}

/* ------------------------------------------------------- child processes */

/* A forked child, with a pipe each way. */
typedef struct ft_child {
    pid_t pid;
    int to_child;   /* parent writes */
    int from_child; /* parent reads */
} ft_child;

/* Forks; the child runs fn(in_fd, out_fd, arg) and then _exit(0) (fn may
 * _exit with its own status). Returns 0, or -1 if fork failed. */
static inline int ft_child_start(ft_child *ch,
                                 void (*fn)(int in_fd, int out_fd, void *arg),
                                 void *arg)
{
    int down[2], up[2];

    if (pipe(down) != 0)
        return -1;
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return -1;
    }
    fflush(NULL);
    ch->pid = fork();
    if (ch->pid < 0) {
        close(down[0]);
        close(down[1]);
        close(up[0]);
        close(up[1]);
        return -1;
    }
    if (ch->pid == 0) {
        /* never outlive the test, even if it failed while we were stuck */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(down[1]);
        close(up[0]);
        fn(down[0], up[1], arg);
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    ch->to_child = down[1];
    ch->from_child = up[0];
    return 0;
}

/* Starts this program again as a child run with the single argument
 * flag, its stdin and stdout being pipes from and to the test (main()
 * sees the flag and runs the child's part). Unlike ft_child_start(), the
 * child is a fresh process: a fork of a process with client threads can
 * only make async-signal-safe calls, and it makes none but these before
 * exec. argv[0] is exec'd, not /proc/self/exe, which under valgrind is
 * valgrind. Returns 0, or -1. */
static inline int ft_child_exec(ft_child *ch, const char *flag)
{
    int down[2], up[2];

    if (pipe2(down, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(up, O_CLOEXEC) != 0) {
        close(down[0]);
        close(down[1]);
        return -1;
    }
    fflush(NULL);
    ch->pid = fork();
    if (ch->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (dup2(down[0], 0) < 0 || dup2(up[1], 1) < 0)
            _exit(126);
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
        execl(program_invocation_name, program_invocation_short_name, flag,
              (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    if (ch->pid < 0) {
        close(down[1]);
        close(up[0]);
        return -1;
    }
    ch->to_child = down[1];
    ch->from_child = up[0];
    return 0;
}

/* Writes all of buf to fd; returns 0 or -1. */
static inline int ft_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads exactly n bytes from fd within timeout_ms (< 0: no limit); returns
 * 0, or -1 on timeout, EOF or error. */
static inline int ft_read_all(int fd, void *buf, size_t n, int timeout_ms)
{
    char *p = buf;
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (n > 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int left = timeout_ms < 0 ? -1 : (int)(deadline - rt_now_ms());

        if (timeout_ms >= 0 && left <= 0)
            return -1;
        int prc = poll(&pfd, 1, left);
        if (prc < 0 && errno == EINTR)
            continue;
        if (prc <= 0)
            return -1;
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Waits up to timeout_ms for the child to exit; SIGKILLs it if it does not.
 * Returns its exit status (0-255), or -1 if it had to be killed or died of
 * a signal. Closes the pipes. */
static inline int ft_child_wait(ft_child *ch, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int status = 0;
    pid_t rc;

    for (;;) {
        rc = waitpid(ch->pid, &status, WNOHANG);
        if (rc == ch->pid || (rc < 0 && errno != EINTR))
            break;
        if (rt_now_ms() >= deadline) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, &status, 0);
            rc = -1;
            break;
        }
        rt_sleep_ms(5);
    }
    close(ch->to_child);
    close(ch->from_child);
    if (rc != ch->pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* ------------------------------------------------ holder in another process */

/* A lock holder in a forked child process with its own client: the other
 * side of a cross-process hand-over. The child takes the lock, reports, and
 * then obeys one-byte commands until told to quit:
 *   'U'  unlock; replies with an ft_remote_report
 *   'R'  take it again (reentrant) with lease reenter_ms; replies int rc
 *   'Q'  free the client and exit 0
 * On EOF (the parent died) it exits without unlocking. It uses no cmocka
 * asserts: failures come back as codes. */
typedef struct ft_remote_args {
    char url[128];
    char name[256];
    int64_t lease_ms;   /* the first take: 0 = rlock_lock (watchdog) */
    int64_t reenter_ms; /* lease of an 'R' take */
} ft_remote_args;

typedef struct ft_remote_report {
    int rc;            /* unlock result */
    int64_t before_ms; /* rt_now_ms() (CLOCK_MONOTONIC, system-wide) */
    int64_t after_ms;
} ft_remote_report;

typedef struct ft_remote {
    ft_child ch;
    ft_remote_args args;
    int lock_rc;
} ft_remote;

static inline void ft_remote_main(int in_fd, int out_fd, void *arg)
{
    const ft_remote_args *a = arg;
    rlock_client *c = NULL;
    rlock *l = NULL;
    int rc = rlock_client_connect(&c, a->url);

    if (rc == RLOCK_OK)
        rc = rlock_get(c, a->name, &l);
    if (rc == RLOCK_OK)
        rc = a->lease_ms > 0 ? rlock_trylock(l, 0, a->lease_ms) : rlock_lock(l);
    if (ft_write_all(out_fd, &rc, sizeof(rc)) != 0)
        _exit(2);
    for (;;) {
        char cmd;
        if (ft_read_all(in_fd, &cmd, 1, -1) != 0)
            _exit(1); /* parent gone: "crash" without unlocking */
        if (cmd == 'U') {
            ft_remote_report rep;
            rep.before_ms = rt_now_ms();
            rep.rc = rlock_unlock(l);
            rep.after_ms = rt_now_ms();
            if (ft_write_all(out_fd, &rep, sizeof(rep)) != 0)
                _exit(2);
        } else if (cmd == 'R') {
            rc = rlock_trylock(l, 0, a->reenter_ms);
            if (ft_write_all(out_fd, &rc, sizeof(rc)) != 0)
                _exit(2);
        } else {
            rlock_free(l);
            rlock_client_free(c);
            _exit(0);
        }
    }
}

/* Starts the child and waits (10 s at most) until it holds the lock;
 * asserts that it does. */
static inline void ft_remote_start(ft_remote *r, const char *url,
                                   const char *name, int64_t lease_ms,
                                   int64_t reenter_ms)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->args.url, sizeof(r->args.url), "%s", url);
    snprintf(r->args.name, sizeof(r->args.name), "%s", name);
    r->args.lease_ms = lease_ms;
    r->args.reenter_ms = reenter_ms;
    assert_int_equal(ft_child_start(&r->ch, ft_remote_main, &r->args), 0);
    assert_int_equal(
        ft_read_all(r->ch.from_child, &r->lock_rc, sizeof(r->lock_rc), 10000),
        0);
    assert_int_equal(r->lock_rc, RLOCK_OK);
}

/* Tells the child to unlock; returns its report (asserting it came). */
static inline ft_remote_report ft_remote_unlock(ft_remote *r)
{
    ft_remote_report rep;

    assert_int_equal(ft_write_all(r->ch.to_child, "U", 1), 0);
    assert_int_equal(ft_read_all(r->ch.from_child, &rep, sizeof(rep), 30000),
                     0);
    return rep;
}

/* Tells the child to take the lock again with its reenter lease; returns
 * the result. */
static inline int ft_remote_reenter(ft_remote *r)
{
    int rc = -1;

    assert_int_equal(ft_write_all(r->ch.to_child, "R", 1), 0);
    assert_int_equal(ft_read_all(r->ch.from_child, &rc, sizeof(rc), 30000), 0);
    return rc;
}

/* Tells the child to free its client and exit; asserts a clean exit. */
static inline void ft_remote_quit(ft_remote *r)
{
    assert_int_equal(ft_write_all(r->ch.to_child, "Q", 1), 0);
    assert_int_equal(ft_child_wait(&r->ch, 30000), 0);
}

/* Kills the child with SIGKILL: a holder that crashed. */
static inline void ft_remote_crash(ft_remote *r)
{
    kill(r->ch.pid, SIGKILL);
    assert_int_equal(ft_child_wait(&r->ch, 10000), -1);
}

#endif /* RLOCK_TEST_FAULTS_H */
