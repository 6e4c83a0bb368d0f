/*
 * test_lifecycle.c: the client's end of life and its threads (issue 12,
 * items 7 to 11).
 *
 * What must hold:
 *  - in a forked child the hold queries answer RLOCK_EFORKED and never
 *    block on a mutex the fork copied locked.
 *
 * Run this program under ASan (build-asan) and TSan (build-tsan) too: a
 * freed client touched late is a crash or a report there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../faults/faults.h"
#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "lifecycle"

/* How long a loop may keep running before the test calls it stuck: far
 * beyond anything a loaded machine needs to run what is pending. */
#define LOOP_GUARD_S 5.0

static int group_setup(void **state)
{
    return lt_group_setup_redis_only(state);
}

static rlock_client *connect_default(lt_fixture *f)
{
    ft_timing t = {.retry_attempts = -1};

    return ft_connect(f->redis.url, t);
}

/* -------------------------------------------------------------- fork (10) */

#define FORKS          400
#define QUERIERS       2
/* a child needs microseconds; this is for a loaded machine */
#define CHILD_LIMIT_MS 3000

typedef struct querier {
    rlock *l;
    atomic_int stop;
    long calls;
} querier;

/* Asks for its hold count as fast as it can: the entry's mutex is locked
 * a good share of the time, so forks often copy it locked. */
static void *query_in_a_loop(void *p)
{
    querier *q = p;

    while (!atomic_load(&q->stop)) {
        rlock_hold_count(q->l);
        rlock_is_held_by_me(q->l);
        q->calls++;
    }
    return NULL;
}

/* The child's part: both queries on the inherited handle. */
static void child_queries(int in_fd, int out_fd, void *arg)
{
    rlock *l = arg;
    (void)in_fd;
    (void)out_fd;
    int a = rlock_hold_count(l);
    int b = rlock_is_held_by_me(l);
    _exit(a == RLOCK_EFORKED && b == RLOCK_EFORKED ? 0 : 1);
}

/* Waits up to ms for the child; kills it if it is still running. Returns
 * its exit status, or -1 when it had to be killed. */
static int reap_within(pid_t pid, int64_t ms)
{
    int64_t deadline = rt_now_ms() + ms;
    int status = 0;

    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (rt_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rt_sleep_ms(1);
    }
}

static void test_forked_child_queries_answer_eforked_without_hanging(
    void **state)
{
    lt_fixture *f = *state;
    char name[128];
    LT_TEST_NAME(name);
    rlock_client *c = connect_default(f);
    rlock *l = lt_get_lock(c, name);
    querier q[QUERIERS];
    pthread_t th[QUERIERS];
    int forks = 0, hung = 0, wrong = 0;

    for (int i = 0; i < QUERIERS; i++) {
        q[i] = (querier){.l = l, .calls = 0};
        atomic_init(&q[i].stop, 0);
        assert_int_equal(pthread_create(&th[i], NULL, query_in_a_loop, &q[i]),
                         0);
    }
    rt_sleep_ms(50);
    /* one hung child is enough to fail: stop there */
    for (; forks < FORKS && hung == 0; forks++) {
        ft_child ch = {0};
        assert_int_equal(ft_child_start(&ch, child_queries, l), 0);
        close(ch.to_child);
        close(ch.from_child);
        int st = reap_within(ch.pid, CHILD_LIMIT_MS);
        if (st < 0)
            hung++;
        else if (st != 0)
            wrong++;
    }
    for (int i = 0; i < QUERIERS; i++) {
        atomic_store(&q[i].stop, 1);
        pthread_join(th[i], NULL);
    }
    print_message("%d forks: %d children hung, %d answered wrongly\n", forks,
                  hung, wrong);
    assert_int_equal(hung, 0);
    assert_int_equal(wrong, 0);
    rlock_free(l);
    rlock_client_free(c);
}

/* An argument runs only the tests whose names match it (a cmocka filter
 * pattern), e.g. to repeat one under a sanitizer. */
int main(int argc, char **argv)
{
    if (rt_require_redis() != 0)
        return 77;
    if (argc == 2)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_forked_child_queries_answer_eforked_without_hanging),
    };
    return cmocka_run_group_tests(tests, group_setup, lt_group_teardown);
}
