/*
 * test_fault_soak.c: many clients for a long time.
 *
 * 8 processes x 16 threads hammer 4 lock names for RLOCK_FAULTS_SOAK_SECONDS
 * (default 60). Each process has one client (3 s watchdog timeout, so
 * renewals run through the churn); its threads share one handle per name.
 * Inside the lock a thread increments a per-name counter non-atomically
 * (GET, then SET to the value + 1) on a second Redis server, so every
 * overlap of two holders would lose an increment; it also INCRs and DECRs
 * an "inside" marker there, which catches an overlap directly. Most takes
 * are rlock_lock(); every 8th is a trylock with a 200 ms budget (those may
 * time out) and every 16th is nested, releasing the inner hold between the
 * GET and the SET.
 *
 * What must hold: zero lost increments and zero overlaps; zero
 * stranded waiters (every worker finishes within STRAND_BUDGET_MS after the
 * deadline); no lock channel still subscribed afterwards (PUBSUB NUMSUB 0
 * while every client is still alive); no connection growth: on the lock
 * server, connected_clients stays within processes x what one client may
 * open (2 x connections + 1, see PER_CLIENT) plus the harness's own
 * connection during the run, and is back to the baseline once the clients
 * are freed (with the processes still alive, so that only
 * rlock_client_free can explain it).
 *
 * The children use no cmocka asserts; they report through pipes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "faults-soak"

#define PROCESSES   8
#define THREADS     16
#define NAMES       4
#define CONNECTIONS 2 /* rlock_config's default "connections" */
/* What one client may hold open, as rlock.h documents the setting: the I/O
 * thread's command connections, as many direct ones for blocking calls,
 * and one subscriber. */
#define PER_CLIENT  (2 * CONNECTIONS + 1)
#define WATCHDOG_MS 3000
/* After the deadline each worker finishes its current take; with the
 * others stopping, that is quick. A worker still busy after this is
 * stranded. */
#define STRAND_BUDGET_MS 20000
#define DEFAULT_SECONDS  60

typedef struct fixture {
    rt_redis locks;    /* the lock server */
    rt_redis counters; /* where the counters live */
} fixture;

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || rt_redis_start(&f->locks) != 0) {
        free(f);
        return -1;
    }
    if (rt_redis_start(&f->counters) != 0) {
        rt_redis_stop(&f->locks);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;

    rt_redis_stop(&f->counters);
    rt_redis_stop(&f->locks);
    free(f);
    return 0;
}

/* ---------------------------------------------------- the child process */

typedef struct soak_args {
    char lock_url[128];
    int counter_port;
    char names[NAMES][64];
    int index; /* process number */
} soak_args;

typedef struct soak_report {
    long long incs[NAMES]; /* increments made, per name */
    long long iterations;
    long long timeouts;  /* trylock(200) that did not get the lock */
    long long errors;    /* failed library or Redis calls */
    long long overlaps;  /* "inside" marker found taken */
    int stranded;        /* workers not done STRAND_BUDGET_MS after */
    int64_t max_wait_ms; /* longest single lock()/trylock() */
    int64_t max_over_ms; /* latest worker finish after the deadline */
    char first_error[128];
} soak_report;

typedef struct soak_proc {
    const soak_args *a;
    rlock *locks[NAMES];
    int64_t deadline_ms;
    pthread_mutex_t mu; /* guards rep */
    soak_report rep;
} soak_proc;

typedef struct soak_worker {
    soak_proc *p;
    pthread_t thread;
    int index;
    atomic_int done;
    int64_t finished_ms;
} soak_worker;

static void worker_error(soak_proc *p, const char *what, int rc)
{
    pthread_mutex_lock(&p->mu);
    if (p->rep.errors++ == 0)
        snprintf(p->rep.first_error, sizeof(p->rep.first_error),
                 "process %d: %s: %s", p->a->index, what,
                 rc < 0 ? rlock_err_name(rc) : "redis error");
    pthread_mutex_unlock(&p->mu);
}

/* One reply of the counter server as an integer (nil: 0), or -1. */
static long long counter_cmd(redisContext *k, const char *fmt, int i)
{
    redisReply *r = redisCommand(k, fmt, i);
    long long v = -1;

    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r->type == REDIS_REPLY_NIL)
        v = 0;
    else if (r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r->type == REDIS_REPLY_STATUS)
        v = 0;
    freeReplyObject(r);
    return v;
}

static void *worker_main(void *arg)
{
    soak_worker *w = arg;
    soak_proc *p = w->p;
    unsigned seed = (unsigned)(p->a->index * 1000 + w->index + 1);
    long long incs[NAMES] = {0}, iterations = 0, timeouts = 0, overlaps = 0;
    int64_t max_wait = 0;
    struct timeval tv = {10, 0};
    redisContext *k =
        redisConnectWithTimeout("127.0.0.1", p->a->counter_port, tv);

    if (k == NULL || k->err != 0) {
        worker_error(p, "counter connect", 0);
        goto out;
    }
    redisSetTimeout(k, tv);
    for (long long iter = 0; rt_now_ms() < p->deadline_ms; iter++) {
        int i = (int)(rand_r(&seed) % NAMES);
        rlock *l = p->locks[i];
        int use_try = iter % 8 == 3, nested = iter % 16 == 5;
        int64_t t0 = rt_now_ms(), waited;
        long long v, in;
        int rc;

        rc = use_try ? rlock_trylock(l, 200, RLOCK_LEASE_WATCHDOG)
                     : rlock_lock(l);
        waited = rt_now_ms() - t0;
        if (waited > max_wait)
            max_wait = waited;
        if (use_try && rc == RLOCK_ETIMEDOUT) {
            timeouts++;
            continue;
        }
        if (rc != RLOCK_OK) {
            worker_error(p, use_try ? "trylock" : "lock", rc);
            rt_sleep_ms(10);
            continue;
        }
        iterations++;
        if (nested && (rc = rlock_lock(l)) != RLOCK_OK) {
            worker_error(p, "nested lock", rc);
            nested = 0;
        }
        in = counter_cmd(k, "INCR soak:inside:%d", i);
        if (in != 1)
            overlaps++;
        v = counter_cmd(k, "GET soak:counter:%d", i);
        if (nested && (rc = rlock_unlock(l)) != RLOCK_OK)
            worker_error(p, "inner unlock", rc);
        if (v < 0) {
            worker_error(p, "counter GET", 0);
        } else {
            redisReply *r =
                redisCommand(k, "SET soak:counter:%d %lld", i, v + 1);
            if (r == NULL || r->type != REDIS_REPLY_STATUS)
                worker_error(p, "counter SET", 0);
            else
                incs[i]++;
            if (r != NULL)
                freeReplyObject(r);
        }
        if (counter_cmd(k, "DECR soak:inside:%d", i) < 0)
            worker_error(p, "counter DECR", 0);
        if ((rc = rlock_unlock(l)) != RLOCK_OK)
            worker_error(p, "unlock", rc);
    }
out:
    redisFree(k);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < NAMES; i++)
        p->rep.incs[i] += incs[i];
    p->rep.iterations += iterations;
    p->rep.timeouts += timeouts;
    p->rep.overlaps += overlaps;
    if (max_wait > p->rep.max_wait_ms)
        p->rep.max_wait_ms = max_wait;
    pthread_mutex_unlock(&p->mu);
    w->finished_ms = rt_now_ms();
    atomic_store(&w->done, 1);
    return NULL;
}

/* The child: connect, report ready, run until the deadline the parent
 * sends, report, free the client when told, exit when told. */
static void soak_child(int in_fd, int out_fd, void *arg)
{
    const soak_args *a = arg;
    static soak_worker workers[THREADS];
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    soak_proc p;
    int rc, ack = 0;
    char cmd;

    memset(&p, 0, sizeof(p));
    p.a = a;
    pthread_mutex_init(&p.mu, NULL);
    rc = rlock_config_new(&cfg);
    if (rc == RLOCK_OK)
        rc = rlock_config_set_watchdog_timeout(cfg, WATCHDOG_MS);
    if (rc == RLOCK_OK)
        rc = rlock_client_connect_with(&c, a->lock_url, cfg);
    rlock_config_free(cfg);
    for (int i = 0; rc == RLOCK_OK && i < NAMES; i++)
        rc = rlock_get(c, a->names[i], &p.locks[i]);
    if (ft_write_all(out_fd, &rc, sizeof(rc)) != 0)
        _exit(2);
    if (ft_read_all(in_fd, &p.deadline_ms, sizeof(p.deadline_ms), 60000) != 0)
        _exit(3);
    if (rc != RLOCK_OK)
        _exit(4);

    for (int t = 0; t < THREADS; t++) {
        workers[t].p = &p;
        workers[t].index = t;
        atomic_init(&workers[t].done, 0);
        if (pthread_create(&workers[t].thread, NULL, worker_main,
                           &workers[t]) != 0)
            _exit(5);
    }
    for (int t = 0; t < THREADS; t++) {
        while (!atomic_load(&workers[t].done) &&
               rt_now_ms() < p.deadline_ms + STRAND_BUDGET_MS)
            rt_sleep_ms(20);
        if (!atomic_load(&workers[t].done)) {
            p.rep.stranded++;
            continue;
        }
        pthread_join(workers[t].thread, NULL);
        if (workers[t].finished_ms - p.deadline_ms > p.rep.max_over_ms)
            p.rep.max_over_ms = workers[t].finished_ms - p.deadline_ms;
    }
    if (ft_write_all(out_fd, &p.rep, sizeof(p.rep)) != 0)
        _exit(2);
    if (p.rep.stranded != 0)
        _exit(6); /* threads still inside the library: do not free it */

    if (ft_read_all(in_fd, &cmd, 1, 120000) != 0)
        _exit(3);
    for (int i = 0; i < NAMES; i++)
        rlock_free(p.locks[i]);
    rlock_client_free(c);
    if (ft_write_all(out_fd, &ack, sizeof(ack)) != 0)
        _exit(2);
    /* stay alive until the parent has counted connections */
    if (ft_read_all(in_fd, &cmd, 1, 120000) != 0)
        _exit(3);
    _exit(0);
}

/* ------------------------------------------------------------ the test */

static long long connected_clients(rt_redis *r)
{
    return ft_info_int(r, "clients", "connected_clients");
}

static int soak_seconds(void)
{
    const char *env = getenv("RLOCK_FAULTS_SOAK_SECONDS");
    int s = env != NULL && env[0] != '\0' ? atoi(env) : DEFAULT_SECONDS;

    return s > 0 ? s : DEFAULT_SECONDS;
}

static void test_many_clients_lose_nothing_and_leak_nothing(void **state)
{
    fixture *f = *state;
    const int seconds = soak_seconds();
    static soak_args args[PROCESSES];
    static soak_report reps[PROCESSES];
    ft_child kids[PROCESSES];
    char channels[NAMES][96];
    long long baseline, bound, peak = 0, sum[NAMES] = {0}, total = 0;
    long long errors = 0, overlaps = 0, timeouts = 0, iterations = 0;
    int64_t deadline, max_wait = 0, max_over = 0;
    int stranded = 0;

    print_message("%d processes x %d threads on %d locks for %d s\n", PROCESSES,
                  THREADS, NAMES, seconds);
    baseline = connected_clients(&f->locks);
    bound = baseline + PROCESSES * PER_CLIENT;
    for (int i = 0; i < NAMES; i++) {
        assert_true(rt_cmd_int(&f->counters, "DEL soak:counter:%d", i) >= 0);
        assert_true(rt_cmd_int(&f->counters, "DEL soak:inside:%d", i) >= 0);
    }

    for (int p = 0; p < PROCESSES; p++) {
        snprintf(args[p].lock_url, sizeof(args[p].lock_url), "%s",
                 f->locks.url);
        args[p].counter_port = f->counters.port;
        args[p].index = p;
        for (int i = 0; i < NAMES; i++)
            snprintf(args[p].names[i], sizeof(args[p].names[i]),
                     LT_SUITE ":lock:%d", i);
        assert_int_equal(ft_child_start(&kids[p], soak_child, &args[p]), 0);
    }
    for (int i = 0; i < NAMES; i++)
        lt_channel_of(channels[i], sizeof(channels[i]), args[0].names[i]);
    for (int p = 0; p < PROCESSES; p++) {
        int rc = -1;
        assert_int_equal(
            ft_read_all(kids[p].from_child, &rc, sizeof(rc), 30000), 0);
        assert_int_equal(rc, RLOCK_OK);
    }

    deadline = rt_now_ms() + (int64_t)seconds * 1000;
    for (int p = 0; p < PROCESSES; p++)
        assert_int_equal(
            ft_write_all(kids[p].to_child, &deadline, sizeof(deadline)), 0);
    while (rt_now_ms() < deadline) {
        long long n = connected_clients(&f->locks);
        if (n > peak)
            peak = n;
        rt_sleep_ms(500);
    }
    for (int p = 0; p < PROCESSES; p++) {
        if (ft_read_all(kids[p].from_child, &reps[p], sizeof(reps[p]),
                        STRAND_BUDGET_MS + 30000) != 0)
            fail_msg("process %d did not report %d ms after the deadline "
                     "(stranded or dead)",
                     p, STRAND_BUDGET_MS + 30000);
    }

    for (int p = 0; p < PROCESSES; p++) {
        for (int i = 0; i < NAMES; i++)
            sum[i] += reps[p].incs[i];
        errors += reps[p].errors;
        overlaps += reps[p].overlaps;
        timeouts += reps[p].timeouts;
        iterations += reps[p].iterations;
        stranded += reps[p].stranded;
        if (reps[p].max_wait_ms > max_wait)
            max_wait = reps[p].max_wait_ms;
        if (reps[p].max_over_ms > max_over)
            max_over = reps[p].max_over_ms;
        if (reps[p].errors != 0)
            print_message("%s (%lld errors)\n", reps[p].first_error,
                          reps[p].errors);
    }
    for (int i = 0; i < NAMES; i++)
        total += sum[i];
    print_message("%lld takes, %lld critical sections (%.0f/s), %lld trylock "
                  "timeouts, "
                  "longest wait %lld ms, last worker done %lld ms after the "
                  "deadline, peak %lld connections (bound %lld)\n",
                  iterations, total, (double)total / seconds, timeouts,
                  (long long)max_wait, (long long)max_over, peak, bound);

    assert_int_equal(stranded, 0);
    assert_true(max_over < STRAND_BUDGET_MS);
    assert_int_equal(errors, 0);
    assert_int_equal(overlaps, 0);
    assert_true(total > 0);
    for (int i = 0; i < NAMES; i++) {
        char *v = rt_cmd_str(&f->counters, "GET soak:counter:%d", i);
        assert_non_null(v);
        print_message("lock %d: counter %s, increments %lld\n", i, v, sum[i]);
        assert_int_equal(atoll(v), sum[i]); /* zero lost increments */
        free(v);
        assert_int_equal(rt_cmd_int(&f->locks, "EXISTS %s", args[0].names[i]),
                         0);
    }

    /* every client still alive: no channel left subscribed, no extra
     * connections */
    for (int i = 0; i < NAMES; i++)
        assert_int_equal(rt_wait_numsub(&f->locks, channels[i], 0, 3000), 0);
    assert_true(peak <= bound);
    assert_true(connected_clients(&f->locks) <= bound);

    /* free every client, processes still alive: back to the baseline */
    for (int p = 0; p < PROCESSES; p++)
        assert_int_equal(ft_write_all(kids[p].to_child, "F", 1), 0);
    for (int p = 0; p < PROCESSES; p++) {
        int ack = -1;
        assert_int_equal(
            ft_read_all(kids[p].from_child, &ack, sizeof(ack), 30000), 0);
        assert_int_equal(ack, 0);
    }
    {
        int64_t until = rt_now_ms() + 5000;
        long long n;
        while ((n = connected_clients(&f->locks)) != baseline &&
               rt_now_ms() < until)
            rt_sleep_ms(20);
        print_message("connections after freeing: %lld (baseline %lld)\n", n,
                      baseline);
        assert_int_equal(n, baseline);
    }
    for (int p = 0; p < PROCESSES; p++) {
        assert_int_equal(ft_write_all(kids[p].to_child, "X", 1), 0);
        assert_int_equal(ft_child_wait(&kids[p], 20000), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_clients_lose_nothing_and_leak_nothing),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
