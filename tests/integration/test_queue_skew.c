/*
 * test_queue_skew.c: an RLock waiter in a process whose wall clock is off
 * still gets its turn in the queue (rlock_config_set_lock_queue).
 *
 * The waiter runs in a child process: this program again, with
 * --skewed-waiter, under the skew_clock.c shim, so that only that
 * process's CLOCK_REALTIME is moved by RLOCK_TEST_CLOCK_SKEW_MS. It waits
 * with rlock_trylock() and reports what it got and when (CLOCK_MONOTONIC,
 * which the shim leaves alone and every process shares). The other
 * clients are loopers in this process (lt_looper), each with a client of
 * its own, and re-check often, so that they try while the waiter waits:
 *   - the head of the queue, when a holder's lease runs out (no unlock
 *     message: each waiter learns of it by trying), takes the lock before
 *     the two loopers queued behind it, whatever its clock says;
 *   - a waiter behind two loopers taking turns gets the lock within
 *     WAIT_MS, far above the moments it takes with a true clock.
 * Each case prints the skew the waiter really had.
 *
 * The child has the same sanitizer runtime as this program: a gcc build's
 * shared libasan or libtsan goes before the shim in LD_PRELOAD (found in
 * /proc/self/maps), as those runtimes require; clang links its runtime
 * into the program, whose interceptors call on into the shim. Under
 * valgrind the child is not traced (the valgrind pass does not follow
 * children): it runs natively while the loopers run under memcheck.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "queue-skew"

/* The skewed waiter's rlock_trylock() wait: with a true clock it gets the
 * lock within a second, even loaded. */
#define WAIT_MS 15000
/* The loopers: how long each holds the lock, and their re-check interval
 * (they try every few ms while they wait). */
#define HOLD_MS    10
#define LOOPER_RECHECK_MS 5
/* The waiter's re-check interval, when it heads the queue behind a hold
 * that runs out: well inside the 500 ms a head seen leaving a free lock
 * untaken has to take it (docs/lock-queue.md). */
#define HEAD_RECHECK_MS 100
/* The loopers' acquisitions before the waiter starts, in the turns case:
 * they are in their stride by then. */
#define WARM_UP 20

extern char **environ;

/* ------------------------------------------------------- the child side */

/* The wall clock in ms, as this process sees it (skewed in the child). */
static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: connects to url with the re-check interval recheck (ms),
 * prints "wall <ms>" (its wall clock), waits for lock name with
 * rlock_trylock(wait_ms, watchdog), unlocks if it got it, and prints
 * "rc <rc> elapsed <ms> at <rt_now_ms() when it got it>". Returns the
 * exit status: 0 once it has reported, 2 if it could not set up. */
static int skewed_waiter_main(const char *url, const char *name,
                              const char *wait, const char *recheck)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;
    rlock *l = NULL;
    int status = 2;

    printf("wall %lld\n", wall_ms());
    fflush(stdout);
    if (rlock_config_new(&cfg) != RLOCK_OK)
        goto out;
    if (rlock_config_set_recheck_interval(cfg, strtoll(recheck, NULL, 10)) !=
            RLOCK_OK ||
        rlock_client_connect_with(&c, url, cfg) != RLOCK_OK)
        goto out_config;
    if (rlock_get(c, name, &l) != RLOCK_OK)
        goto out_client;
    int64_t t0 = rt_now_ms();
    int rc = rlock_trylock(l, strtoll(wait, NULL, 10), RLOCK_LEASE_WATCHDOG);
    int64_t at = rt_now_ms();
    if (rc == RLOCK_OK && rlock_unlock(l) != RLOCK_OK)
        rc = 1; /* not an rlock code: the unlock failed */
    printf("rc %d elapsed %lld at %lld\n", rc, (long long)(at - t0),
           (long long)at);
    fflush(stdout);
    status = 0;
    rlock_free(l);
out_client:
    rlock_client_free(c);
out_config:
    rlock_config_free(cfg);
out:
    return status;
}

/* ------------------------------------------------------ the parent side */

/* Appends to buf (len bytes) "path:" for each shared sanitizer runtime
 * mapped into this process, libasan first. */
static void sanitizer_preloads(char *buf, size_t len)
{
    static const char *const runtimes[] = {"/libasan.so", "/libtsan.so",
                                           "/liblsan.so", "/libubsan.so"};
    buf[0] = '\0';
    for (size_t r = 0; r < sizeof(runtimes) / sizeof(runtimes[0]); r++) {
        FILE *maps = fopen("/proc/self/maps", "r");
        char line[1024];
        if (maps == NULL)
            return;
        while (fgets(line, sizeof(line), maps) != NULL) {
            char *path = strchr(line, '/');
            if (path == NULL || strstr(path, runtimes[r]) == NULL)
                continue;
            path[strcspn(path, "\n")] = '\0';
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s:", path);
            break;
        }
        fclose(maps);
    }
}

/* A skewed waiter: the child process and what it reported. */
typedef struct skewed {
    long long skew_ms;
    pid_t pid;
    int fd;                 /* read end of its stdout */
    long long skew_seen_ms; /* its wall clock minus ours */
    int rc;                 /* its trylock's (1: it got the lock, but its
                               unlock failed) */
    long long elapsed_ms;   /* how long its trylock took */
    long long at_ms;        /* rt_now_ms() when its trylock returned */
} skewed;

/* Reads from w's stdout into text (len bytes, NUL-terminated, *got held
 * so far) until it holds a whole line that begins with prefix, w closes
 * it, or until_ms. Returns that line, or NULL. */
static char *read_line(skewed *w, char *text, size_t len, size_t *got,
                       const char *prefix, int64_t until_ms)
{
    for (;;) {
        char *line = strstr(text, prefix);
        if (line != NULL && strchr(line, '\n') != NULL)
            return line;
        int64_t left = until_ms - rt_now_ms();
        if (left <= 0 || *got + 1 >= len)
            return NULL;
        struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
        int ready = poll(&pfd, 1, (int)left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return NULL;
        ssize_t r = read(w->fd, text + *got, len - 1 - *got);
        if (r <= 0)
            return NULL;
        *got += (size_t)r;
        text[*got] = '\0';
    }
}

/* Starts this program as a skewed waiter for name on url, its wall clock
 * w->skew_ms off and its re-check interval recheck_ms, and waits for its
 * wall clock (w->skew_seen_ms). Asserts that it started. */
static void skewed_start(skewed *w, const char *url, const char *name,
                         int64_t recheck_ms)
{
    char self[4096], preload[4096], env_preload[4200], env_skew[64];
    char wait[32], recheck[32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    sanitizer_preloads(preload, sizeof(preload));
    snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s%s", preload,
             RLOCK_TEST_SKEW_SHIM);
    snprintf(env_skew, sizeof(env_skew), "RLOCK_TEST_CLOCK_SKEW_MS=%lld",
             w->skew_ms);
    snprintf(wait, sizeof(wait), "%d", WAIT_MS);
    snprintf(recheck, sizeof(recheck), "%lld", (long long)recheck_ms);

    /* the environment, ours but for LD_PRELOAD and the skew */
    size_t count = 0;
    while (environ[count] != NULL)
        count++;
    char **env = calloc(count + 3, sizeof(*env));
    assert_non_null(env);
    size_t k = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
            strncmp(environ[i], "RLOCK_TEST_CLOCK_SKEW_MS=", 25) != 0)
            env[k++] = environ[i];
    env[k++] = env_preload;
    env[k++] = env_skew;
    env[k] = NULL;
    char *argv[] = {self, "--skewed-waiter", (char *)url, (char *)name,
                    wait, recheck,           NULL};

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    w->pid = fork();
    assert_true(w->pid >= 0);
    if (w->pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execve(self, argv, env);
        _exit(127);
    }
    close(fds[1]);
    free(env);
    w->fd = fds[0];

    char text[128] = "";
    size_t got = 0;
    long long child_wall;
    char *line = read_line(w, text, sizeof(text), &got, "wall ",
                           rt_now_ms() + 30000);
    assert_non_null(line);
    assert_int_equal(sscanf(line, "wall %lld", &child_wall), 1);
    w->skew_seen_ms = child_wall - wall_ms();
    /* its clock really is off (the pipe adds a little delay) */
    print_message("the waiter's clock is %lld ms off (%lld ms asked)\n",
                  w->skew_seen_ms, w->skew_ms);
    assert_true(w->skew_seen_ms <= w->skew_ms + 50);
    assert_true(w->skew_seen_ms > w->skew_ms - 1000);
}

/* Waits for w's report (far past its wait at most) and its exit; asserts
 * that it reported and exited 0. */
static void skewed_finish(skewed *w)
{
    char text[256] = "";
    size_t got = 0;
    char *line = read_line(w, text, sizeof(text), &got, "rc ",
                           rt_now_ms() + WAIT_MS + 60000);
    if (line == NULL)
        kill(w->pid, SIGKILL);
    close(w->fd);
    int status = 0;
    assert_int_equal(waitpid(w->pid, &status, 0), w->pid);
    assert_non_null(line);
    assert_int_equal(sscanf(line, "rc %d elapsed %lld at %lld", &w->rc,
                            &w->elapsed_ms, &w->at_ms),
                     3);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    print_message("the waiter's trylock returned %s after %lld ms\n",
                  w->rc == 1 ? "OK (but its unlock failed)"
                             : rlock_err_name(w->rc),
                  w->elapsed_ms);
}

static int set_recheck(rlock_config *cfg, int64_t ms)
{
    return rlock_config_set_recheck_interval(cfg, ms);
}

/* Starts looper k on name (LOOPER_RECHECK_MS, HOLD_MS), counting in
 * *taken. */
static void start_looper(lt_looper *k, lt_fixture *f, const char *name,
                         atomic_int *taken)
{
    *k = (lt_looper){.url = f->redis.url, .name = name, .hold_ms = HOLD_MS,
                     .set = set_recheck, .arg = LOOPER_RECHECK_MS,
                     .taken = taken};
    lt_looper_start(k);
}

/* A peer (a Redisson client, say) holds lock name, with no lease; the
 * waiter skewed by skew_ms queues first, two loopers behind it. Then the
 * peer's hold lapses (its lease runs out: nobody publishes anything).
 * The waiter, head of the queue, must take the lock before either
 * looper does: they try every few ms, it every HEAD_RECHECK_MS. */
static void assert_skewed_head_takes_a_lapsed_lock_first(lt_fixture *f,
                                                         const char *name,
                                                         long long skew_ms)
{
    atomic_int taken;
    lt_looper k[2];
    skewed w = {.skew_ms = skew_ms};

    atomic_init(&taken, 0);
    assert_int_equal(rt_cmd_int(&f->redis, "HSET %s peer:1 1", name), 1);
    skewed_start(&w, f->redis.url, name, HEAD_RECHECK_MS);
    lt_await_queued(&f->redis, name, 1);
    for (int i = 0; i < 2; i++) {
        start_looper(&k[i], f, name, &taken);
        lt_await_queued(&f->redis, name, i + 2);
    }
    rt_sleep_ms(200); /* a few of everybody's re-checks */
    assert_int_equal(atomic_load(&taken), 0);
    assert_int_equal(rt_cmd_int(&f->redis, "PEXPIRE %s 1", name), 1);
    int64_t lapsed = rt_now_ms();
    skewed_finish(&w);
    /* the loopers go on for a while after it */
    int64_t until = rt_now_ms() + 5000;
    while (atomic_load(&taken) < 2 && rt_now_ms() < until)
        rt_sleep_ms(5);
    long long first = 0;
    for (int i = 0; i < 2; i++) {
        long long t = atomic_load(&k[i].first_ms);
        if (t != 0 && (first == 0 || t < first))
            first = t;
    }
    for (int i = 0; i < 2; i++)
        lt_looper_stop(&k[i]);
    print_message("the hold lapsed; the waiter got the lock %lld ms later, "
                  "the loopers first %lld ms later\n",
                  w.at_ms - (long long)lapsed,
                  first != 0 ? first - (long long)lapsed : -1LL);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_true(first == 0 || w.at_ms <= first);
}

/* Two loopers take turns on lock name; then the waiter skewed by skew_ms
 * (with the default re-check interval) waits for it: it must get it
 * within its wait. */
static void assert_skewed_waiter_gets_a_turn(lt_fixture *f, const char *name,
                                             long long skew_ms)
{
    atomic_int taken;
    lt_looper k[2];
    skewed w = {.skew_ms = skew_ms};

    atomic_init(&taken, 0);
    for (int i = 0; i < 2; i++)
        start_looper(&k[i], f, name, &taken);
    int64_t deadline = rt_now_ms() + 10000;
    while (atomic_load(&taken) < WARM_UP && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    assert_true(atomic_load(&taken) >= WARM_UP);

    int before = atomic_load(&taken);
    skewed_start(&w, f->redis.url, name, 2000);
    skewed_finish(&w);
    int meanwhile = atomic_load(&taken) - before;
    for (int i = 0; i < 2; i++)
        lt_looper_stop(&k[i]);
    print_message("the loopers took the lock %d times meanwhile\n",
                  meanwhile);
    assert_int_equal(w.rc, RLOCK_OK);
    assert_true(w.elapsed_ms < WAIT_MS);
}

/* --------------------------------------------------------------- tests */

static void test_a_head_with_a_true_clock_takes_a_lapsed_lock_first(
    void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_head_takes_a_lapsed_lock_first(*state, name, 0);
}

static void test_a_head_800_ms_ahead_takes_a_lapsed_lock_first(void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_head_takes_a_lapsed_lock_first(*state, name, 800);
}

static void test_a_head_1_s_ahead_takes_a_lapsed_lock_first(void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_head_takes_a_lapsed_lock_first(*state, name, 1000);
}

static void test_a_head_10_s_behind_takes_a_lapsed_lock_first(void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_head_takes_a_lapsed_lock_first(*state, name, -10000);
}

static void test_a_waiter_with_a_true_clock_gets_a_turn_among_loopers(
    void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_waiter_gets_a_turn(*state, name, 0);
}

static void test_a_waiter_10_s_behind_gets_a_turn_among_loopers(void **state)
{
    char name[128];
    LT_TEST_NAME(name);
    assert_skewed_waiter_gets_a_turn(*state, name, -10000);
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "--skewed-waiter") == 0)
        return skewed_waiter_main(argv[2], argv[3], argv[4], argv[5]);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_a_head_with_a_true_clock_takes_a_lapsed_lock_first),
        cmocka_unit_test(test_a_head_800_ms_ahead_takes_a_lapsed_lock_first),
        cmocka_unit_test(test_a_head_1_s_ahead_takes_a_lapsed_lock_first),
        cmocka_unit_test(test_a_head_10_s_behind_takes_a_lapsed_lock_first),
        cmocka_unit_test(
            test_a_waiter_with_a_true_clock_gets_a_turn_among_loopers),
        cmocka_unit_test(test_a_waiter_10_s_behind_gets_a_turn_among_loopers),
    };

    rt_require_redis();
    return cmocka_run_group_tests(tests, lt_group_setup_redis_only,
                                  lt_group_teardown);
}
