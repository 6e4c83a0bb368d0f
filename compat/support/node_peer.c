/*
 * node_peer.c: node-redisson peer processes for the compat tests.
 *
 * Owns: the registry of live peers (so that a failed test's teardown, or
 * exit, can kill them), the fork/exec of node, and the line reader that
 * turns a peer's stdout into JSON events.
 *
 * Invariants:
 * - Every live peer is in the registry; np_free() takes it out.
 * - The child closes every inherited descriptor above stderr before exec,
 *   so a peer never holds a copy of the test's Redis sockets, and restores
 *   SIGPIPE (the harness ignores it in the test process, and an ignored
 *   signal survives exec).
 * - A peer's transcript (every line it printed) is kept so that a failed
 *   expectation can show what the peer actually said.
 */
#include "node_peer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RLOCK_COMPAT_NODE_DIR
#error \
    "RLOCK_COMPAT_NODE_DIR must name compat/node (set by compat/CMakeLists.txt)"
#endif

#define NP_MAX_PEERS      32
#define NP_LINE_MAX       4096
#define NP_TRANSCRIPT_MAX 16384
#define NP_REDISSON_VER   "1.0.4"

struct np_peer {
    pid_t pid;
    int in_fd;  /* write end of the peer's stdin, -1 once closed */
    int out_fd; /* read end of the peer's stdout, -1 at EOF */
    char program[64];
    char buf[NP_LINE_MAX]; /* bytes read but not yet split into lines */
    size_t len;
    char transcript[NP_TRANSCRIPT_MAX];
    size_t transcript_len;
};

static np_peer *registry[NP_MAX_PEERS];
static int atexit_done;

/* ------------------------------------------------------------------ time */

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------ finding node */

/* Writes to out the path of the first of names (NULL-terminated) found
 * executable: env_var's value when set, else a directory of PATH. Returns
 * 0, or -1 if there is none. */
int np_find_program(const char *env_var, const char *const *names, char *out,
                    size_t outlen)
{
    const char *env = getenv(env_var);
    const char *path = getenv("PATH");

    if (env != NULL && env[0] != '\0') {
        if (access(env, X_OK) != 0 || strlen(env) >= outlen)
            return -1;
        strcpy(out, env);
        return 0;
    }
    if (path == NULL || path[0] == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    for (size_t k = 0; names[k] != NULL; k++) {
        const char *p = path;

        while (*p != '\0') {
            const char *end = strchr(p, ':');
            size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
            int n = snprintf(out, outlen, "%.*s/%s", (int)len, p, names[k]);

            if (len > 0 && n > 0 && (size_t)n < outlen &&
                access(out, X_OK) == 0)
                return 0;
            if (end == NULL)
                break;
            p = end + 1;
        }
    }
    return -1;
}

/* Writes the node binary's path to out. Returns 0, or -1 if there is none
 * on RLOCK_TEST_NODE or PATH. */
static int find_node(char *out, size_t outlen)
{
    static const char *const names[] = {"node", "nodejs", NULL};
    return np_find_program("RLOCK_TEST_NODE", names, out, outlen);
}

/* Fails (RLOCK_TEST_REQUIRE_REDIS=1) or skips the whole test program. */
static void missing(const char *what)
{
    const char *req = getenv("RLOCK_TEST_REQUIRE_REDIS");

    if (req != NULL && strcmp(req, "1") == 0) {
        fprintf(stderr,
                "error: %s and RLOCK_TEST_REQUIRE_REDIS=1 (run scripts/deps, "
                "which installs node and runs npm ci in compat/node)\n",
                what);
        exit(1);
    }
    fprintf(stderr, "note: %s; skipping this test\n", what);
    exit(77);
}

/* Returns 1 if compat/node/node_modules/<pkg>/package.json exists and (when
 * version is not NULL) names that version. */
static int have_package(const char *pkg, const char *version)
{
    char path[1024];
    json_error_t err;
    json_t *doc;
    int ok;

    snprintf(path, sizeof(path), "%s/node_modules/%s/package.json",
             RLOCK_COMPAT_NODE_DIR, pkg);
    doc = json_load_file(path, 0, &err);
    if (doc == NULL)
        return 0;
    ok = version == NULL ||
         (json_is_string(json_object_get(doc, "version")) &&
          strcmp(json_string_value(json_object_get(doc, "version")), version) ==
              0);
    json_decref(doc);
    return ok;
}

void np_require_node(void)
{
    char node[1024];

    if (find_node(node, sizeof(node)) != 0)
        missing("node not found on PATH (or RLOCK_TEST_NODE)");
    if (!have_package("node-redisson", NP_REDISSON_VER))
        missing(
            "compat/node/node_modules has no node-redisson " NP_REDISSON_VER);
    if (!have_package("ioredis", NULL))
        missing("compat/node/node_modules has no ioredis");
}

/* ------------------------------------------------------------- registry */

static void kill_all_at_exit(void)
{
    np_kill_all();
}

static void reg_add(np_peer *p)
{
    if (!atexit_done) {
        atexit(kill_all_at_exit);
        atexit_done = 1;
    }
    for (int i = 0; i < NP_MAX_PEERS; i++) {
        if (registry[i] == NULL) {
            registry[i] = p;
            return;
        }
    }
    fail_msg("node_peer: more than %d peers at once", NP_MAX_PEERS);
}

static void reg_del(np_peer *p)
{
    for (int i = 0; i < NP_MAX_PEERS; i++)
        if (registry[i] == p)
            registry[i] = NULL;
}

/* --------------------------------------------------------------- spawn */

/* Closes every descriptor >= lowfd. Async-signal-safe (used after fork). */
static void close_from(int lowfd)
{
    long max;

#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0U) == 0)
        return;
#endif
    max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = lowfd; fd < max; fd++)
        close(fd);
}

np_peer *np_start(const char *program, const char *url, const char *name,
                  const char *const *args)
{
    char node[1024], script[1024];
    const char *argv[32];
    int argc = 0;

    assert_int_equal(find_node(node, sizeof(node)), 0);
    snprintf(script, sizeof(script), "%s/%s.js", RLOCK_COMPAT_NODE_DIR,
             program);
    assert_int_equal(access(script, R_OK), 0);
    argv[argc++] = node;
    argv[argc++] = script;
    argv[argc++] = url;
    argv[argc++] = name;
    for (size_t i = 0; args != NULL && args[i] != NULL; i++) {
        assert_true(argc < (int)(sizeof(argv) / sizeof(argv[0])) - 1);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    return np_spawn(program, argv);
}

np_peer *np_spawn(const char *label, const char *const *argv)
{
    int in[2], out[2];
    pid_t parent = getpid();
    np_peer *p;

    p = calloc(1, sizeof(*p));
    assert_non_null(p);
    snprintf(p->program, sizeof(p->program), "%s", label);
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);

    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        struct sigaction sa;
        sigset_t none;

        /* Die with the thread that started us, even if the test crashes. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close_from(3);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->in_fd = in[1];
    p->out_fd = out[0];
    reg_add(p);
    return p;
}

/* ------------------------------------------------------------- reading */

/* Removes the first complete line from p->buf into line (NUL-terminated,
 * without the newline) and records it. Returns 1, or 0 if there is none. */
static int take_line(np_peer *p, char *line, size_t n)
{
    char *nl = memchr(p->buf, '\n', p->len);
    size_t len, rest;

    if (nl == NULL)
        return 0;
    len = (size_t)(nl - p->buf);
    rest = p->len - len - 1;
    snprintf(line, n, "%.*s", (int)len, p->buf);
    memmove(p->buf, nl + 1, rest);
    p->len = rest;
    if (p->transcript_len + len + 2 < sizeof(p->transcript)) {
        memcpy(p->transcript + p->transcript_len, line, strlen(line));
        p->transcript_len += strlen(line);
        p->transcript[p->transcript_len++] = '\n';
        p->transcript[p->transcript_len] = '\0';
    }
    return 1;
}

/* Reads the next line within timeout_ms. Returns 1, or 0 on timeout or
 * EOF. */
static int read_line(np_peer *p, char *line, size_t n, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;

    for (;;) {
        struct pollfd pfd;
        int64_t left;
        ssize_t got;
        int rc;

        if (take_line(p, line, n))
            return 1;
        if (p->out_fd < 0)
            return 0;
        left = deadline - now_ms();
        pfd.fd = p->out_fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, left > 0 ? (int)left : 0);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return 0; /* timed out (a zero timeout still looks once) */
        assert_true(p->len < sizeof(p->buf) - 1);
        got = read(p->out_fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            close(p->out_fd);
            p->out_fd = -1;
            continue;
        }
        p->len += (size_t)got;
    }
}

json_t *np_next(np_peer *p, int timeout_ms)
{
    char line[NP_LINE_MAX];
    json_error_t err;
    json_t *ev;

    if (!read_line(p, line, sizeof(line), timeout_ms))
        return NULL;
    ev = json_loads(line, 0, &err);
    if (ev == NULL || !json_is_string(json_object_get(ev, "event")))
        fail_msg("peer %s printed a line that is not an event: %s", p->program,
                 line);
    return ev;
}

json_t *np_expect(np_peer *p, const char *event, int timeout_ms)
{
    json_t *ev = np_next(p, timeout_ms);
    const char *got;

    if (ev == NULL) {
        print_error("peer %s transcript:\n%s", p->program, p->transcript);
        fail_msg("peer %s: no \"%s\" event within %d ms", p->program, event,
                 timeout_ms);
    }
    got = json_string_value(json_object_get(ev, "event"));
    if (strcmp(got, event) != 0) {
        print_error("peer %s transcript:\n%s", p->program, p->transcript);
        fail_msg("peer %s: expected event \"%s\", got \"%s\"", p->program,
                 event, got);
    }
    return ev;
}

int np_bool(const json_t *ev, const char *key)
{
    json_t *v = json_object_get(ev, key);

    if (!json_is_boolean(v))
        fail_msg("event has no boolean \"%s\"", key);
    return json_is_true(v);
}

long long np_int(const json_t *ev, const char *key)
{
    json_t *v = json_object_get(ev, key);

    if (!json_is_integer(v))
        fail_msg("event has no integer \"%s\"", key);
    return (long long)json_integer_value(v);
}

const char *np_str(const json_t *ev, const char *key)
{
    json_t *v = json_object_get(ev, key);

    if (!json_is_string(v))
        fail_msg("event has no string \"%s\"", key);
    return json_string_value(v);
}

/* ------------------------------------------------------------ writing */

void np_send(np_peer *p, const char *line)
{
    size_t len = strlen(line);

    assert_true(p->in_fd >= 0);
    assert_int_equal(write(p->in_fd, line, len), (ssize_t)len);
    assert_int_equal(write(p->in_fd, "\n", 1), 1);
}

void np_close_stdin(np_peer *p)
{
    if (p->in_fd >= 0) {
        close(p->in_fd);
        p->in_fd = -1;
    }
}

/* ------------------------------------------------------------- ending */

/* Waits up to timeout_ms for the peer to exit. Returns its wait status, or
 * -1 if it is still running. */
static int wait_exit(np_peer *p, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    int status;

    for (;;) {
        pid_t r = waitpid(p->pid, &status, WNOHANG);

        if (r == p->pid) {
            p->pid = 0;
            return status;
        }
        if (r < 0 && errno != EINTR)
            return -1;
        if (now_ms() >= deadline)
            return -1;
        usleep(5000);
    }
}

void np_finish(np_peer *p, int timeout_ms)
{
    int status = wait_exit(p, timeout_ms);
    json_t *extra;

    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        print_error("peer %s transcript:\n%s", p->program, p->transcript);
        if (status == -1)
            fail_msg("peer %s still running after %d ms", p->program,
                     timeout_ms);
        fail_msg("peer %s ended with wait status 0x%x", p->program, status);
    }
    extra = np_next(p, 0);
    if (extra != NULL) {
        print_error("peer %s transcript:\n%s", p->program, p->transcript);
        json_decref(extra);
        fail_msg("peer %s printed more than the test expected", p->program);
    }
    np_free(p);
}

void np_free(np_peer *p)
{
    if (p == NULL)
        return;
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (p->in_fd >= 0)
        close(p->in_fd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    reg_del(p);
    free(p);
}

int np_kill_all(void)
{
    for (int i = 0; i < NP_MAX_PEERS; i++)
        if (registry[i] != NULL)
            np_free(registry[i]);
    return 0;
}

int np_teardown(void **state)
{
    (void)state;
    return np_kill_all();
}
