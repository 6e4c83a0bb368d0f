/*
 * test_sentinel.c: finding and following a master through Redis Sentinel
 * (src/io/sentinel.h), against one group of real servers (a
 * master, its replica and three sentinels: tests/support/sentinel_fixture)
 * and, where a sentinel must lie, a fake one on a thread of this test.
 *
 * The sentinels require a password of their own and the data nodes
 * another, so every test also goes through the AUTH a sentinel asks for
 * (NOAUTH, then the credentials) and keeps the two apart.
 *
 * Watcher tests drive a libev loop on the test's thread (run_until), so a
 * callback's effect is checked right after the iteration that ran it.
 * Tests that fail over leave the group settled around the new master
 * (rt_sentinel_settle), so each starts from a healthy group wherever its
 * master is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "io/link.h"
#include "io/sentinel.h"
#include "rlock.h"
#include "sentinel_fixture.h"

#define SENTINEL_PW "sentinel-secret"
#define DATA_PW "data-secret"
/* Slack on a time limit before a test calls it missed (a loaded machine,
 * valgrind). */
#define SLACK_MS 1500

static rt_sentinel_group group;

/* ------------------------------------------------------------- helpers */

/* Options for the group's sentinels, first (a "host", port; NULL: none)
 * listed before them; the strings live in o_hosts. */
typedef struct sentinels {
    const char *hosts[RT_SENTINELS + 1];
    int ports[RT_SENTINELS + 1];
    rlock__sentinel_opts o;
} sentinels;

static void sentinels_init(sentinels *s, int first_port,
                           const char *password)
{
    int n = 0;
    memset(s, 0, sizeof(*s));
    if (first_port > 0) {
        s->hosts[n] = "127.0.0.1";
        s->ports[n++] = first_port;
    }
    for (int i = 0; i < RT_SENTINELS; i++) {
        s->hosts[n] = "127.0.0.1";
        s->ports[n++] = rt_sentinel_port(&group.sentinel[i]);
    }
    s->o.master_name = RT_SENTINEL_MASTER;
    s->o.n = n;
    s->o.hosts = s->hosts;
    s->o.ports = s->ports;
    s->o.password = password;
    s->o.connect_timeout_ms = 1000;
    s->o.command_timeout_ms = 1000;
    s->o.scan_interval_ms = 1000;
}

/* How to greet the master. */
static void data_opts(rlock__link_opts *o, const char *password)
{
    rlock__link_opts_init(o);
    o->password = password;
    o->connect_timeout_ms = 2000;
}

/* Discovers with s and returns the master's port (asserting success). */
static int discover_port(rlock__sentinel *s)
{
    rlock__link_opts d;
    rlock__sentinel_master m;
    rlock__link_addr addr;
    char err[200] = "";
    data_opts(&d, DATA_PW);
    int rc = rlock__sentinel_discover(s, &d, &m, &addr, err, sizeof(err));
    if (rc != 0)
        fail_msg("discovery: %s: %s", rlock_err_name(rc), err);
    assert_string_equal(m.host, "127.0.0.1");
    return m.port;
}

/* ----------------------------------------------- a sentinel that lies */

/* A fake sentinel on a thread: to every GET-MASTER-ADDR-BY-NAME it names
 * 127.0.0.1:port; SENTINEL MASTER gets config-epoch epoch; AUTH and PING
 * are fine; anything else is an error. */
typedef struct liar {
    int lfd;
    int port;
    int names_port;
    int epoch;
    int stop[2];
    pthread_t thread;
    int asked;
} liar;

static void liar_answer(int fd, const char *req, size_t len, liar *l)
{
    char out[256];
    int n;
    if (memmem(req, len, "GET-MASTER-ADDR-BY-NAME", 23) != NULL) {
        char port[16];
        int pl = snprintf(port, sizeof(port), "%d", l->names_port);
        n = snprintf(out, sizeof(out),
                     "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n", pl, port);
        __atomic_add_fetch(&l->asked, 1, __ATOMIC_SEQ_CST);
    } else if (memmem(req, len, "MASTER", 6) != NULL) {
        char epoch[16];
        int el = snprintf(epoch, sizeof(epoch), "%d", l->epoch);
        n = snprintf(out, sizeof(out),
                     "*2\r\n$12\r\nconfig-epoch\r\n$%d\r\n%s\r\n", el,
                     epoch);
    } else if (memmem(req, len, "PING", 4) != NULL) {
        n = snprintf(out, sizeof(out), "+PONG\r\n");
    } else if (memmem(req, len, "AUTH", 4) != NULL) {
        n = snprintf(out, sizeof(out), "+OK\r\n"); /* any password */
    } else {
        n = snprintf(out, sizeof(out), "-ERR not here\r\n");
    }
    (void)!send(fd, out, (size_t)n, MSG_NOSIGNAL);
}

/* Serves one connection at a time; each read is taken as whole commands
 * (what a client pipelines arrives together on loopback, and each command
 * starts with '*'). */
static void *liar_main(void *arg)
{
    liar *l = arg;
    for (;;) {
        fd_set set;
        FD_ZERO(&set);
        FD_SET(l->lfd, &set);
        FD_SET(l->stop[0], &set);
        int maxfd = l->lfd > l->stop[0] ? l->lfd : l->stop[0];
        if (select(maxfd + 1, &set, NULL, NULL, NULL) < 0 ||
            FD_ISSET(l->stop[0], &set))
            return NULL;
        int fd = accept(l->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        char buf[4096];
        ssize_t got;
        while ((got = recv(fd, buf, sizeof(buf), 0)) > 0) {
            /* one answer per '*' that starts a command, each read up to
             * the next one */
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] != '*' || (i > 0 && buf[i - 1] != '\n'))
                    continue;
                ssize_t end = i + 1;
                while (end < got && !(buf[end] == '*' && buf[end - 1] == '\n'))
                    end++;
                liar_answer(fd, buf + i, (size_t)(end - i), l);
            }
        }
        close(fd);
    }
}

static void liar_start(liar *l, int names_port, int epoch)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    memset(l, 0, sizeof(*l));
    l->names_port = names_port;
    l->epoch = epoch;
    l->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l->lfd >= 0);
    assert_int_equal(bind(l->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(l->lfd, 8), 0);
    assert_int_equal(getsockname(l->lfd, (struct sockaddr *)&sa, &len), 0);
    l->port = ntohs(sa.sin_port);
    assert_int_equal(pipe(l->stop), 0);
    assert_int_equal(pthread_create(&l->thread, NULL, liar_main, l), 0);
}

static void liar_stop(liar *l)
{
    (void)!write(l->stop[1], "x", 1);
    pthread_join(l->thread, NULL);
    close(l->lfd);
    close(l->stop[0]);
    close(l->stop[1]);
}

/* ------------------------------------------------------------- watcher */

typedef struct heard {
    int calls;
    int changed;
    int port; /* the last one */
    int64_t at;
    int notes;
} heard;

static void on_master(const char *host, int port, bool changed, void *arg)
{
    heard *h = arg;
    (void)host;
    h->calls++;
    h->changed += changed;
    h->port = port;
    h->at = rt_now_ms();
}

static void on_note(int level, const char *line, void *arg)
{
    heard *h = arg;
    (void)level;
    if (getenv("SENTINEL_TEST_NOTES"))
        fprintf(stderr, "note: %s\n", line);
    h->notes++;
}

static void tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)t;
    (void)revents;
}

/* Runs loop until *flag reaches want or ms pass; returns *flag. */
static int run_until(struct ev_loop *loop, const int *flag, int want,
                     int64_t ms)
{
    int64_t end = rt_now_ms() + ms;
    while (*flag < want && rt_now_ms() < end)
        ev_run(loop, EVRUN_ONCE);
    return *flag;
}

typedef struct watch {
    struct ev_loop *loop;
    ev_timer ticker;
    sentinels sn;
    rlock__sentinel *s;
    heard h;
    int start_port; /* where discovery found the master */
} watch;

/* Discovers, then watches on a fresh loop; first_port as sentinels_init. */
static void watch_start(watch *w, int first_port, int64_t scan_ms)
{
    memset(w, 0, sizeof(*w));
    w->loop = ev_loop_new(EVFLAG_AUTO);
    ev_timer_init(&w->ticker, tick, 0.02, 0.02);
    ev_timer_start(w->loop, &w->ticker);
    sentinels_init(&w->sn, first_port, SENTINEL_PW);
    w->sn.o.scan_interval_ms = scan_ms;
    assert_int_equal(rlock__sentinel_new(&w->sn.o, &w->s), 0);
    w->start_port = discover_port(w->s);
    assert_int_equal(
        rlock__sentinel_watch(w->s, w->loop, on_master, on_note, &w->h), 0);
}

static void watch_stop(watch *w)
{
    rlock__sentinel_unwatch(w->s);
    rlock__sentinel_free(w->s);
    ev_timer_stop(w->loop, &w->ticker);
    ev_loop_destroy(w->loop);
}

/* Fails over and returns the node that is master afterwards. */
static rt_redis *fail_over(rt_redis *from)
{
    rt_redis *to = from == &group.node[0] ? &group.node[1] : &group.node[0];
    assert_int_equal(rt_sentinel_failover(&group), 0);
    return to;
}

/* ------------------------------------------------------------- discovery */

static void test_discovery_skips_a_sentinel_that_is_down(void **state)
{
    sentinels sn;
    rlock__sentinel *s = NULL;
    (void)state;
    sentinels_init(&sn, rt_sentinel_dead_port(), SENTINEL_PW);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    rt_redis *m = rt_sentinel_master_node(&group);
    assert_non_null(m);
    assert_int_equal(discover_port(s), rt_sentinel_port(m));
    rlock__sentinel_free(s);
}

/* A sentinel that names a replica is not believed, even at the newest
 * config epoch: ROLE says slave, and the next answer is tried. */
static void test_discovery_checks_the_role_of_what_a_sentinel_names(
    void **state)
{
    sentinels sn;
    rlock__sentinel *s = NULL;
    liar l;
    (void)state;
    rt_redis *m = rt_sentinel_master_node(&group);
    rt_redis *r = rt_sentinel_replica_node(&group);
    assert_non_null(r);
    liar_start(&l, rt_sentinel_port(r), 1000);
    sentinels_init(&sn, l.port, SENTINEL_PW);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    assert_int_equal(discover_port(s), rt_sentinel_port(m));
    assert_true(__atomic_load_n(&l.asked, __ATOMIC_SEQ_CST) >= 1);
    rlock__sentinel_free(s);

    /* the liar alone: no master to be found */
    sn.o.n = 1;
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    rlock__link_opts d;
    rlock__sentinel_master found;
    rlock__link_addr addr;
    char err[200] = "";
    data_opts(&d, DATA_PW);
    assert_int_equal(
        rlock__sentinel_discover(s, &d, &found, &addr, err, sizeof(err)),
        RLOCK_ECONN);
    assert_non_null(strstr(err, "not a master"));
    rlock__sentinel_free(s);
    liar_stop(&l);
}

/* The sentinels' password is theirs: a wrong one is RLOCK_EAUTH, and so is
 * a wrong password for the master, whichever sentinel named it. */
static void test_discovery_keeps_the_sentinels_password_apart(void **state)
{
    sentinels sn;
    rlock__sentinel *s = NULL;
    rlock__link_opts d;
    rlock__sentinel_master m;
    rlock__link_addr addr;
    char err[200] = "";
    (void)state;

    sentinels_init(&sn, 0, "not-" SENTINEL_PW);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    data_opts(&d, DATA_PW);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, err,
                                              sizeof(err)),
                     RLOCK_EAUTH);
    rlock__sentinel_free(s);

    sentinels_init(&sn, 0, NULL); /* nothing to send when asked */
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, err,
                                              sizeof(err)),
                     RLOCK_EAUTH);
    assert_non_null(strstr(err, "NOAUTH"));
    rlock__sentinel_free(s);

    sentinels_init(&sn, 0, SENTINEL_PW);
    assert_int_equal(rlock__sentinel_new(&sn.o, &s), 0);
    data_opts(&d, "not-" DATA_PW);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, err,
                                              sizeof(err)),
                     RLOCK_EAUTH);
    assert_non_null(strstr(err, "master"));
    rlock__sentinel_free(s);
}

static void test_discovery_with_no_sentinel_up_is_econn(void **state)
{
    rlock__sentinel_opts o;
    const char *hosts[] = {"127.0.0.1", "127.0.0.1"};
    int ports[] = {rt_sentinel_dead_port(), rt_sentinel_dead_port()};
    rlock__sentinel *s = NULL;
    rlock__link_opts d;
    rlock__sentinel_master m;
    rlock__link_addr addr;
    (void)state;
    memset(&o, 0, sizeof(o));
    o.master_name = RT_SENTINEL_MASTER;
    o.n = 2;
    o.hosts = hosts;
    o.ports = ports;
    o.connect_timeout_ms = o.command_timeout_ms = o.scan_interval_ms = 500;
    assert_int_equal(rlock__sentinel_new(&o, &s), 0);
    data_opts(&d, NULL);
    assert_int_equal(rlock__sentinel_discover(s, &d, &m, &addr, NULL, 0),
                     RLOCK_ECONN);
    rlock__sentinel_free(s);
}

/* ------------------------------------------------------------- following */

/* With the poll out of the way (a minute apart), +switch-master alone
 * tells of a forced failover, within about 1.5 s of asking for it. */
static void test_watcher_hears_switch_master(void **state)
{
    watch w;
    (void)state;
    watch_start(&w, 0, 60000);
    rt_redis *from = rt_sentinel_master_node(&group);
    assert_int_equal(w.start_port, rt_sentinel_port(from));
    run_until(w.loop, &w.h.calls, 1, 300); /* subscribed */
    assert_int_equal(w.h.calls, 0);
    int64_t t0 = rt_now_ms();
    rt_redis *to = fail_over(from);
    assert_int_equal(run_until(w.loop, &w.h.calls, 1, 1500 + SLACK_MS), 1);
    assert_int_equal(w.h.changed, 1);
    assert_int_equal(w.h.port, rt_sentinel_port(to));
    print_message("switch heard %lld ms after SENTINEL FAILOVER\n",
                  (long long)(w.h.at - t0));
    watch_stop(&w);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* The sentinel the watcher listens to dies: the poll still finds the next
 * failover, asking the sentinels that are left. */
static void test_watcher_polls_when_its_sentinel_is_gone(void **state)
{
    watch w;
    (void)state;
    watch_start(&w, 0, 200);
    rt_redis *from = rt_sentinel_master_node(&group);
    run_until(w.loop, &w.h.calls, 1, 300);
    rt_redis_stop(&group.sentinel[0]); /* the first: listened to and asked */
    rt_redis *to = fail_over(from);
    assert_int_equal(run_until(w.loop, &w.h.calls, 1, 3000 + SLACK_MS), 1);
    assert_int_equal(w.h.port, rt_sentinel_port(to));
    assert_true(w.h.notes >= 1); /* the lost sentinel was noted */
    watch_stop(&w);
    assert_int_equal(rt_redis_restart(&group.sentinel[0]), 0);
    assert_int_equal(rt_sentinel_settle(&group), 0);
}

/* check_now answers even when nothing moved. */
static void test_check_now_answers_without_a_move(void **state)
{
    watch w;
    (void)state;
    watch_start(&w, 0, 60000);
    rlock__sentinel_check_now(w.s);
    assert_int_equal(run_until(w.loop, &w.h.calls, 1, 2000), 1);
    assert_int_equal(w.h.changed, 0);
    assert_int_equal(w.h.port, w.start_port);
    watch_stop(&w);
}

/* The config epoch sentinel i knows the master at. */
static long long epoch_of(int i)
{
    redisReply *r = rt_cmd(&group.sentinel[i], "SENTINEL MASTER %s",
                           RT_SENTINEL_MASTER);
    long long e = -1;
    for (size_t k = 0; r != NULL && r->type == REDIS_REPLY_ARRAY &&
                       k + 1 < r->elements;
         k += 2)
        if (strcmp(r->element[k]->str, "config-epoch") == 0)
            e = atoll(r->element[k + 1]->str);
    freeReplyObject(r);
    return e;
}

/* A sentinel behind the others names the other node at an older config
 * epoch: discovery prefers the newer answer, and the watcher, left with
 * only that sentinel to ask, does not follow it. */
static void test_a_sentinel_behind_the_others_is_not_followed(void **state)
{
    watch w;
    liar l;
    (void)state;
    if (epoch_of(1) < 1) { /* an epoch to be behind of */
        fail_over(rt_sentinel_master_node(&group));
        assert_int_equal(rt_sentinel_settle(&group), 0);
    }
    rt_redis *m = rt_sentinel_master_node(&group);
    rt_redis *r = rt_sentinel_replica_node(&group);
    liar_start(&l, rt_sentinel_port(r), 0);
    /* [liar, s0, s1, s2]: the liar is asked first, but its epoch is old */
    watch_start(&w, l.port, 100);
    assert_int_equal(w.start_port, rt_sentinel_port(m));
    /* every real sentinel gone quiet: the poll falls back on the liar */
    for (int i = 0; i < RT_SENTINELS; i++)
        rt_redis_pause(&group.sentinel[i]);
    int before = __atomic_load_n(&l.asked, __ATOMIC_SEQ_CST);
    /* each paused sentinel costs the poll a connect and a command timeout */
    int64_t end = rt_now_ms() + 12000;
    while (rt_now_ms() < end &&
           __atomic_load_n(&l.asked, __ATOMIC_SEQ_CST) < before + 3)
        ev_run(w.loop, EVRUN_ONCE);
    int asked = __atomic_load_n(&l.asked, __ATOMIC_SEQ_CST) - before;
    for (int i = 0; i < RT_SENTINELS; i++)
        rt_redis_resume(&group.sentinel[i]);
    watch_stop(&w);
    liar_stop(&l);
    assert_true(asked >= 3);
    assert_int_equal(w.h.changed, 0);
}

/* ------------------------------------------------------------- setup */

static int group_setup(void **state)
{
    (void)state;
    rt_require_redis();
    rt_sentinel_opts o = {.sentinel_password = SENTINEL_PW,
                          .data_password = DATA_PW};
    return rt_sentinel_group_start(&group, &o);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_sentinel_group_stop(&group);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery_skips_a_sentinel_that_is_down),
        cmocka_unit_test(
            test_discovery_checks_the_role_of_what_a_sentinel_names),
        cmocka_unit_test(test_discovery_keeps_the_sentinels_password_apart),
        cmocka_unit_test(test_discovery_with_no_sentinel_up_is_econn),
        cmocka_unit_test(test_check_now_answers_without_a_move),
        cmocka_unit_test(test_watcher_hears_switch_master),
        cmocka_unit_test(test_watcher_polls_when_its_sentinel_is_gone),
        cmocka_unit_test(test_a_sentinel_behind_the_others_is_not_followed),
    };
    return cmocka_run_group_tests_name("sentinel", tests, group_setup,
                                       group_teardown);
}
