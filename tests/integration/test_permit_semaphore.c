/*
 * test_permit_semaphore.c: the permit-expirable semaphore (rlock.h
 * "permit-expirable semaphores"; docs/protocol-synchronizers.md), against
 * a real server.
 *
 * Redis state is read with the harness's own connections: the count in
 * key N, the leases in "{N}:timeout" (16 raw id bytes -> lease end), the
 * messages on "redisson_sc:{N}". Leases are short here (a few hundred ms)
 * so that reclaiming is seen within a test.
 *
 * A dead holder: the same child, run with the true clock, exits holding a
 * permit; a waiter gets it once its lease ends.
 *
 * Clock skew: the two skew tests run this program again as a child under
 * libfaketime (`faketime`, its wall clock 60 s ahead or behind; the
 * monotonic clock left alone), the child alone skewed, and show what
 * docs/synchronizers.md says a skewed client does: one ahead reclaims a
 * permit whose lease has not ended, one behind takes permits the others
 * reclaim at once. Without faketime they are skipped, saying so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

/* Whether this program runs under a sanitizer's runtime (clang says so
 * with __has_feature, gcc with __SANITIZE_*__). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BUILT_WITH_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BUILT_WITH_SANITIZER 1
#endif
#endif
#ifndef BUILT_WITH_SANITIZER
#define BUILT_WITH_SANITIZER 0
#endif

/* How long a skewed child may take: its calls' timeouts are seconds. */
#define SKEWED_CHILD_MAX_MS 60000

#define LT_SUITE "permit_semaphore"

#define CHILD_FLAG    "--skewed-child"
#define NO_RECHECK_MS 60000
#define SLACK_MS      1500
#define HANG_MS       20000

/* ------------------------------------------------------------- helpers */

static rlock_permit_semaphore *psem_of(rlock_client *c, const char *name)
{
    rlock_permit_semaphore *s = NULL;
    assert_int_equal(rlock_permit_semaphore_get(c, name, &s), RLOCK_OK);
    assert_non_null(s);
    return s;
}

static void timeouts_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "{%s}:timeout", name);
}

static long long count_in_redis(rt_redis *r, const char *name)
{
    char *v = rt_cmd_str(r, "GET %s", name);
    long long n = v != NULL ? atoll(v) : -1;
    free(v);
    return n;
}

/* The lease end Redis holds for permit id (hex), or -1 when it has none:
 * the member is the id's raw bytes. */
static long long lease_end_of(rt_redis *r, const char *name, const char *id)
{
    char key[200];
    unsigned char raw[16];
    timeouts_of(key, sizeof(key), name);
    for (int i = 0; i < 16; i++) {
        unsigned v;
        assert_int_equal(sscanf(id + 2 * i, "%2x", &v), 1);
        raw[i] = (unsigned char)v;
    }
    redisReply *rep = rt_cmd(r, "ZSCORE %s %b", key, raw, sizeof(raw));
    assert_non_null(rep);
    long long end = rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : -1;
    freeReplyObject(rep);
    return end;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --------------------------------------------------------- the state */

static void test_acquire_stores_the_id_bytes_with_the_lease_end(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 2), 1);
    int64_t before = wall_ms();
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 30000, id), 0);
    assert_int_equal(strlen(id), 32);
    assert_int_equal(strspn(id, "0123456789abcdef"), 32);
    long long end = lease_end_of(&f->redis, name, id);
    assert_true(end >= before + 30000 && end <= wall_ms() + 30000);
    assert_int_equal(count_in_redis(&f->redis, name), 1);
    rlock_permit_semaphore_free(s);
}

static void test_acquire_without_lease_stores_redissons_no_lease_score(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(
        rlock_permit_semaphore_acquire(s, 0, RLOCK_PERMIT_LEASE_NONE, id), 0);
    assert_int_equal(lease_end_of(&f->redis, name, id), 922337203685477LL);
    rlock_permit_semaphore_free(s);
}

static void test_another_client_releases_by_id(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE], channel[200];
    LT_TEST_NAME(name);
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    rlock_client *c2 = lt_connect(f->redis.url, NULL, 0);
    rlock_permit_semaphore *s = psem_of(f->client, name),
                           *s2 = psem_of(c2, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 30000, id), 0);
    rt_sub *sub = rt_sub_start(&f->redis, channel);
    assert_non_null(sub);
    assert_int_equal(rlock_permit_semaphore_release(s2, id), 1);
    assert_int_equal(lease_end_of(&f->redis, name, id), -1);
    assert_int_equal(count_in_redis(&f->redis, name), 1);
    assert_int_equal(rt_sub_wait(sub, 1, 5000), 1);
    assert_string_equal(rt_sub_message(sub, 0), "1");
    assert_int_equal(rlock_permit_semaphore_release(s2, id), 0);
    assert_int_equal(count_in_redis(&f->redis, name), 1);
    rt_sub_stop(sub);
    rlock_permit_semaphore_free(s);
    rlock_permit_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_ended_lease_is_reclaimed_by_any_call(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url, NULL, 0);
    rlock_permit_semaphore *s = psem_of(f->client, name),
                           *s2 = psem_of(c2, name);
    int64_t n = -1;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 100, id), 0);
    assert_int_equal(rlock_permit_semaphore_available(s2, &n), 0);
    assert_int_equal(n, 0);
    rt_sleep_ms(150);
    assert_int_equal(count_in_redis(&f->redis, name), 0); /* not yet */
    assert_int_equal(rlock_permit_semaphore_available(s2, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(lease_end_of(&f->redis, name, id), -1);
    rlock_permit_semaphore_free(s);
    rlock_permit_semaphore_free(s2);
    rlock_client_free(c2);
}

static void test_release_after_the_lease_ended_says_so(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 50, id), 0);
    rt_sleep_ms(100);
    /* nobody reclaimed it yet: the release gives it back, but it was not
     * held any more (Redisson's tryRelease answers false) */
    assert_int_equal(rlock_permit_semaphore_release(s, id), 0);
    assert_int_equal(count_in_redis(&f->redis, name), 1);
    rlock_permit_semaphore_free(s);
}

static void test_update_lease_keeps_a_permit_past_its_old_end(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    int64_t n = -1;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 200, id), 0);
    assert_int_equal(rlock_permit_semaphore_update_lease(s, id, 60000), 1);
    rt_sleep_ms(250);
    assert_int_equal(rlock_permit_semaphore_available(s, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(rlock_permit_semaphore_update_lease(
                         s, "00000000000000000000000000000000", 1000),
                     0);
    rlock_permit_semaphore_free(s);
}

static void test_bad_ids_and_leases_are_refused(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_release(s, NULL), RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_release(s, "abc"), RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_release(
                         s, "0123456789abcdef0123456789abcdeg"),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 0, id),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, -7, id),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 1000, NULL),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_update_lease(
                         s, "0123456789abcdef0123456789abcdef", 0),
                     RLOCK_EINVAL);
    assert_int_equal(rlock_permit_semaphore_acquire(NULL, 0, 1000, id),
                     RLOCK_EINVAL);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_permit_semaphore_free(s);
    rlock_permit_semaphore_free(NULL);
}

/* ----------------------------------------------------------- waiting */

static void test_waiter_takes_a_permit_when_its_lease_ends(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE], id2[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_permit_semaphore *s = psem_of(f->client, name),
                           *s2 = psem_of(c2, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 300, id), 0);
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_acquire(s2, HANG_MS, 30000, id2),
                     0);
    int64_t took = rt_now_ms() - t0;
    print_message("lease end to new holder: %lld ms after the wait began\n",
                  (long long)took);
    assert_true(took >= 250 && took < 300 + SLACK_MS);
    assert_int_equal(lease_end_of(&f->redis, name, id), -1);
    assert_true(lease_end_of(&f->redis, name, id2) > 0);
    rlock_permit_semaphore_free(s);
    rlock_permit_semaphore_free(s2);
    rlock_client_free(c2);
}

typedef struct psem_waiter {
    pthread_t thread;
    rlock_permit_semaphore *sem;
    char id[RLOCK_PERMIT_ID_SIZE];
    atomic_int rc;
    atomic_int done;
    _Atomic int64_t done_at_ms;
} psem_waiter;

static void *psem_waiter_main(void *p)
{
    psem_waiter *w = p;
    int rc = rlock_permit_semaphore_acquire(w->sem, HANG_MS, 30000, w->id);
    atomic_store(&w->done_at_ms, rt_now_ms());
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_release_by_id_wakes_a_waiter_at_once(void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE], channel[200];
    LT_TEST_NAME(name);
    snprintf(channel, sizeof(channel), "redisson_sc:{%s}", name);
    rlock_client *c2 = lt_connect(f->redis.url,
                                  rlock_config_set_recheck_interval,
                                  NO_RECHECK_MS);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    static psem_waiter w;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(
        rlock_permit_semaphore_acquire(s, 0, RLOCK_PERMIT_LEASE_NONE, id), 0);
    memset(&w, 0, sizeof(w));
    w.sem = psem_of(c2, name);
    assert_int_equal(pthread_create(&w.thread, NULL, psem_waiter_main, &w),
                     0);
    assert_int_equal(rt_wait_numsub(&f->redis, channel, 1, 5000), 1);
    rt_sleep_ms(50);
    assert_false(atomic_load(&w.done));
    int64_t t0 = rt_now_ms();
    assert_int_equal(rlock_permit_semaphore_release(s, id), 1);
    pthread_join(w.thread, NULL);
    assert_int_equal(atomic_load(&w.rc), 0);
    int64_t latency = atomic_load(&w.done_at_ms) - t0;
    print_message("release to wake-up: %lld ms\n", (long long)latency);
    assert_true(latency < 50 + 450);
    rlock_permit_semaphore_free(w.sem);
    rlock_permit_semaphore_free(s);
    rlock_client_free(c2);
}

/* -------------------------------------------------------- clock skew */

/* The child's exit statuses: apart from any a failed start gives (a
 * sanitizer runtime that will not run under LD_PRELOAD exits 1). */
#define CHILD_TOOK     10
#define CHILD_TIMEDOUT 11
#define CHILD_FAILED   12

/* The child: one acquire without a wait, lease argv[4] ms, on semaphore
 * argv[3] at URL argv[2]; exits CHILD_TOOK, CHILD_TIMEDOUT or
 * CHILD_FAILED. No cmocka here. */
static int skewed_child(char **argv)
{
    rlock_client *c = NULL;
    rlock_permit_semaphore *s = NULL;
    char id[RLOCK_PERMIT_ID_SIZE];
    if (rlock_client_connect(&c, argv[2]) != 0 ||
        rlock_permit_semaphore_get(c, argv[3], &s) != 0)
        return CHILD_FAILED;
    int rc = rlock_permit_semaphore_acquire(s, 0, atoll(argv[4]), id);
    rlock_permit_semaphore_free(s);
    rlock_client_free(c);
    return rc == 0 ? CHILD_TOOK
                   : rc == RLOCK_ETIMEDOUT ? CHILD_TIMEDOUT : CHILD_FAILED;
}

/* Runs the child under faketime with its wall clock offset (e.g. "+60s";
 * NULL: no faketime, the true clock) and returns its exit status; skips
 * the test without faketime. */
static int run_skewed(const char *offset, const char *url, const char *name,
                      const char *lease_ms)
{
    if (offset != NULL && BUILT_WITH_SANITIZER) {
        /* the child hangs at start-up: libfaketime allocates before the
         * sanitizer's runtime is ready, and ASan's allocator deadlocks */
        print_message("skipped: libfaketime and a sanitizer runtime do not "
                      "start together (the other passes run this)\n");
        skip();
    }
    if (offset != NULL &&
        system("command -v faketime >/dev/null 2>&1") != 0) {
        print_message("skipped: no faketime (Debian's faketime package)\n");
        skip();
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the wall clock alone: timers and waits stay true (without the
         * "monotonic fix", libfaketime would shift the deadlines of waits
         * on CLOCK_MONOTONIC condition variables by the offset) */
        setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
        setenv("DONT_FAKE_MONOTONIC", "1", 1);
        setenv("FAKETIME_FORCE_MONOTONIC_FIX", "0", 1);
        /* an ASan build runs under libfaketime's LD_PRELOAD too */
        const char *asan = getenv("ASAN_OPTIONS");
        char opts[512];
        snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0",
                 asan ? asan : "", asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", opts, 1);
        if (offset == NULL)
            execl(self, self, CHILD_FLAG, url, name, lease_ms, (char *)NULL);
        execlp("faketime", "faketime", "-f", offset, self, CHILD_FLAG, url,
               name, lease_ms, (char *)NULL);
        _exit(3);
    }
    /* a child that hangs fails the test rather than the whole run */
    int status = 0;
    int64_t until = rt_now_ms() + SKEWED_CHILD_MAX_MS;
    pid_t done;
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
           rt_now_ms() < until)
        rt_sleep_ms(20);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the skewed child did not end within %d ms",
                 SKEWED_CHILD_MAX_MS);
    }
    assert_int_equal(done, pid);
    assert_true(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    if (offset != NULL && code != CHILD_TOOK && code != CHILD_TIMEDOUT &&
        code != CHILD_FAILED) {
        /* e.g. ASan's runtime refuses to start after libfaketime */
        print_message("skipped: the child did not start under faketime "
                      "(status %d)\n", code);
        skip();
    }
    return code;
}

/* Skips the test, before it makes anything, when a child cannot run under
 * faketime: a child told to use a port nothing listens on must answer
 * CHILD_FAILED. */
static void skip_without_a_skewed_child(void)
{
    char url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", rt_free_port());
    assert_int_equal(run_skewed("+0s", url, "probe", "1"), CHILD_FAILED);
}

static void test_client_clock_ahead_reclaims_a_live_permit(void **state)
{
    lt_fixture *f = *state;
    skip_without_a_skewed_child();
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 30000, id), 0);
    /* 60 s ahead, the child sees the 30 s lease as ended: it takes the
     * permit while its holder still has 30 s of lease */
    assert_int_equal(run_skewed("+60s", f->redis.url, name, "30000"),
                     CHILD_TOOK);
    assert_int_equal(lease_end_of(&f->redis, name, id), -1);
    assert_int_equal(rlock_permit_semaphore_release(s, id), 0);
    rlock_permit_semaphore_free(s);
}

static void test_client_clock_behind_takes_permits_others_reclaim(
    void **state)
{
    lt_fixture *f = *state;
    skip_without_a_skewed_child();
    char name[128];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);
    int64_t n = -1;

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    /* 60 s behind, the child's 30 s lease ends 30 s ago by our clock */
    assert_int_equal(run_skewed("-60s", f->redis.url, name, "30000"),
                     CHILD_TOOK);
    assert_int_equal(count_in_redis(&f->redis, name), 0);
    assert_int_equal(rlock_permit_semaphore_available(s, &n), 0);
    assert_int_equal(n, 1);
    rlock_permit_semaphore_free(s);
}

/* ------------------------------------------------------ a dead holder */

static void test_permit_of_a_dead_process_comes_back_with_its_lease(
    void **state)
{
    lt_fixture *f = *state;
    char name[128], id[RLOCK_PERMIT_ID_SIZE];
    LT_TEST_NAME(name);
    rlock_permit_semaphore *s = psem_of(f->client, name);

    assert_int_equal(rlock_permit_semaphore_try_set_permits(s, 1), 1);
    /* the child takes the only permit for 300 ms and exits holding it */
    int64_t t0 = rt_now_ms();
    assert_int_equal(run_skewed(NULL, f->redis.url, name, "300"),
                     CHILD_TOOK);
    assert_int_equal(rlock_permit_semaphore_acquire(s, 0, 1000, id),
                     RLOCK_ETIMEDOUT);
    assert_int_equal(rlock_permit_semaphore_acquire(s, HANG_MS, 1000, id), 0);
    int64_t took = rt_now_ms() - t0;
    print_message("permit of the dead process taken after %lld ms\n",
                  (long long)took);
    assert_true(took >= 250 && took < 300 + SLACK_MS);
    rlock_permit_semaphore_free(s);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], CHILD_FLAG) == 0)
        return skewed_child(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_stores_the_id_bytes_with_the_lease_end),
        cmocka_unit_test(
            test_acquire_without_lease_stores_redissons_no_lease_score),
        cmocka_unit_test(test_another_client_releases_by_id),
        cmocka_unit_test(test_ended_lease_is_reclaimed_by_any_call),
        cmocka_unit_test(test_release_after_the_lease_ended_says_so),
        cmocka_unit_test(test_update_lease_keeps_a_permit_past_its_old_end),
        cmocka_unit_test(test_bad_ids_and_leases_are_refused),
        cmocka_unit_test(test_waiter_takes_a_permit_when_its_lease_ends),
        cmocka_unit_test(test_release_by_id_wakes_a_waiter_at_once),
        cmocka_unit_test(
            test_permit_of_a_dead_process_comes_back_with_its_lease),
        cmocka_unit_test(test_client_clock_ahead_reclaims_a_live_permit),
        cmocka_unit_test(
            test_client_clock_behind_takes_permits_others_reclaim),
    };
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
