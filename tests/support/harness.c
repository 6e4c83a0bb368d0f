/*
 * harness.c: real redis-server processes and small Redis helpers for tests.
 *
 * Owns: the registry of servers this process started (so an atexit handler
 * can stop leftovers), the fork/exec of redis-server, and the subscriber
 * threads behind rt_sub.
 *
 * Invariants:
 * - A server is only reported up once PING answers AND `INFO server` reports
 *   our child's process_id; with tests running in parallel, a port picked by
 *   probing can be taken by another test's server in between, and then our
 *   child fails to bind and is restarted on a new port.
 * - The child closes every inherited descriptor above stderr before exec, so
 *   a server never keeps a copy of the test's own client sockets open (which
 *   would hide disconnects from the other side).
 * - Only the process that started a server stops it at exit: a test may
 *   fork, and the child's exit() must not kill the parent's servers.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define RT_START_TIMEOUT_MS   10000
#define RT_STOP_TIMEOUT_MS    5000
#define RT_START_ATTEMPTS     20
#define RT_RESTART_TIMEOUT_MS 10000
#define RT_CONNECT_TIMEOUT_MS 2000
#define RT_IO_TIMEOUT_MS      5000
#define RT_MAX_SERVERS        64

/* ------------------------------------------------------------------------ */
/* Time                                                                     */
/* ------------------------------------------------------------------------ */

int64_t rt_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rt_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static struct timeval ms_to_timeval(int ms)
{
    struct timeval tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

/* ------------------------------------------------------------------------ */
/* Locating redis-server                                                    */
/* ------------------------------------------------------------------------ */

/* Writes the path of the redis-server binary to out.  Returns 0, or -1 if
 * none is found on RLOCK_TEST_REDIS_SERVER or PATH. */
static int find_redis_server(char *out, size_t outlen)
{
    const char *env = getenv("RLOCK_TEST_REDIS_SERVER");
    const char *path = getenv("PATH");
    const char *p;

    if (env != NULL && env[0] != '\0') {
        if (access(env, X_OK) != 0 || strlen(env) >= outlen)
            return -1;
        strcpy(out, env);
        return 0;
    }
    if (path == NULL || path[0] == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    p = path;
    while (*p != '\0') {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        int n;

        if (len == 0)
            n = snprintf(out, outlen, "./redis-server");
        else
            n = snprintf(out, outlen, "%.*s/redis-server", (int)len, p);
        if (n > 0 && (size_t)n < outlen && access(out, X_OK) == 0)
            return 0;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return -1;
}

/* The server binary's facts (rt_server_*), found once. */
static struct {
    pthread_once_t once;
    int found;
    char path[512];
    int version;
    int valkey;
    int tls;
} probed = {PTHREAD_ONCE_INIT, 0, "", 0, 0, 0};

int rt_run_capture(const char *cmd, char *out, size_t len)
{
    char drain[512];
    size_t n = 0, got;
    int status;
    FILE *p;

    if (len > 0)
        out[0] = '\0';
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    while (n + 1 < len && (got = fread(out + n, 1, len - 1 - n, p)) > 0)
        n += got;
    if (len > 0)
        out[n] = '\0';
    while (fread(drain, 1, sizeof(drain), p) > 0)
        ; /* let it finish writing */
    status = pclose(p);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs the server binary with args (a shell fragment) and copies what it
 * prints (stdout and stderr, at most len - 1 bytes) to out. */
static void server_output(const char *args, char *out, size_t len)
{
    char cmd[700];

    out[0] = '\0';
    if (strchr(probed.path, '\'') != NULL ||
        snprintf(cmd, sizeof(cmd), "timeout 10 '%s' %s 2>&1 </dev/null",
                 probed.path,
                 args) >= (int)sizeof(cmd))
        return;
    rt_run_capture(cmd, out, len);
}

static void server_probe(void)
{
    char out[4096];
    const char *v;
    int major = 0, minor = 0, patch = 0;

    probed.found = find_redis_server(probed.path, sizeof(probed.path)) == 0;
    if (!probed.found)
        return;
    server_output("--version", out, sizeof(out));
    probed.valkey = strstr(out, "Valkey") != NULL;
    v = strstr(out, "v=");
    if (v != NULL && sscanf(v, "v=%d.%d.%d", &major, &minor, &patch) >= 2)
        probed.version = major * 10000 + minor * 100 + patch;
    /* Without TLS, Redis stops at the option ("Bad directive") and Valkey
     * (TLS as a module it has not loaded) when it sets the listener up;
     * with TLS, loading the missing certificate stops it before any
     * port is bound. */
    server_output("--port 0 --tls-port 1 --tls-cert-file /nonexistent/c "
                  "--tls-key-file /nonexistent/k --save ''",
                  out, sizeof(out));
    probed.tls = out[0] != '\0' && strstr(out, "Bad directive") == NULL &&
                 strstr(out, "Failed finding TLS support") == NULL &&
                 strstr(out, "connection type tls") == NULL;
}

const char *rt_server_path(void)
{
    pthread_once(&probed.once, server_probe);
    return probed.found ? probed.path : NULL;
}

int rt_server_version(void)
{
    pthread_once(&probed.once, server_probe);
    return probed.version;
}

int rt_server_has_7_0(void)
{
    pthread_once(&probed.once, server_probe);
    return probed.version == 0 || probed.version >= 70000 || probed.valkey;
}

int rt_server_is_valkey(void)
{
    pthread_once(&probed.once, server_probe);
    return probed.valkey;
}

int rt_server_has_tls(void)
{
    pthread_once(&probed.once, server_probe);
    return probed.tls;
}

int rt_scaled(int n, int light)
{
    const char *env = getenv("RLOCK_TEST_LIGHT");

    return env != NULL && strcmp(env, "1") == 0 ? light : n;
}

int rt_require_redis(void)
{
    char path[512];
    const char *req = getenv("RLOCK_TEST_REQUIRE_REDIS");

    if (find_redis_server(path, sizeof(path)) == 0)
        return 0;
    if (req != NULL && strcmp(req, "1") == 0) {
        fprintf(stderr, "error: redis-server not found on PATH (or "
                        "RLOCK_TEST_REDIS_SERVER) and "
                        "RLOCK_TEST_REQUIRE_REDIS=1\n");
        exit(1);
    }
    fprintf(stderr, "note: redis-server not found; skipping this test\n");
    exit(77);
}

/* ------------------------------------------------------------------------ */
/* Registry of running servers, for cleanup at exit                         */
/* ------------------------------------------------------------------------ */

struct rt_entry {
    pid_t pid;
    char dir[256];
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rt_entry reg[RT_MAX_SERVERS];
static pid_t reg_owner;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void remove_dir(const char *dir);
static void kill_and_reap(pid_t pid, int timeout_ms);

/* atexit handler: stops every server still registered, but only in the
 * process that started them. */
static void reg_cleanup(void)
{
    int i;

    if (getpid() != reg_owner)
        return;
    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < RT_MAX_SERVERS; i++) {
        if (reg[i].pid > 0) {
            kill_and_reap(reg[i].pid, 2000);
            remove_dir(reg[i].dir);
            reg[i].pid = 0;
        }
    }
    pthread_mutex_unlock(&reg_mu);
}

static void reg_init(void)
{
    struct sigaction sa;

    reg_owner = getpid();
    atexit(reg_cleanup);
    /* Servers get stopped under live connections; hiredis uses write(2). */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
}

static void reg_add(pid_t pid, const char *dir)
{
    int i;

    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < RT_MAX_SERVERS; i++) {
        if (reg[i].pid <= 0) {
            reg[i].pid = pid;
            snprintf(reg[i].dir, sizeof(reg[i].dir), "%s", dir);
            break;
        }
    }
    pthread_mutex_unlock(&reg_mu);
    if (i == RT_MAX_SERVERS)
        fprintf(stderr,
                "harness: more than %d servers; pid %d will only "
                "be stopped by PDEATHSIG\n",
                RT_MAX_SERVERS, (int)pid);
}

static void reg_del(pid_t pid)
{
    int i;

    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < RT_MAX_SERVERS; i++) {
        if (reg[i].pid == pid)
            reg[i].pid = 0;
    }
    pthread_mutex_unlock(&reg_mu);
}

/* ------------------------------------------------------------------------ */
/* Processes and directories                                                */
/* ------------------------------------------------------------------------ */

/* waitpid() that retries on EINTR.  Returns its result. */
static pid_t waitpid_retry(pid_t pid, int *status, int flags)
{
    pid_t rc;

    do {
        rc = waitpid(pid, status, flags);
    } while (rc < 0 && errno == EINTR);
    return rc;
}

/* Sends SIGCONT+SIGTERM, waits up to timeout_ms for the exit, then SIGKILLs
 * and reaps. */
static void kill_and_reap(pid_t pid, int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int status;

    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    for (;;) {
        pid_t rc = waitpid_retry(pid, &status, WNOHANG);

        if (rc == pid || rc < 0)
            return; /* reaped, or not our child any more */
        if (rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(5);
    }
    fprintf(stderr, "harness: redis-server %d ignored SIGTERM; killing\n",
            (int)pid);
    kill(pid, SIGKILL);
    waitpid_retry(pid, &status, 0);
}

/* Removes dir and the files in it, unless RLOCK_TEST_KEEP_DIRS=1. */
static void remove_dir(const char *dir)
{
    const char *keep = getenv("RLOCK_TEST_KEEP_DIRS");
    DIR *d;
    struct dirent *e;
    char path[512];

    if (dir[0] == '\0')
        return;
    if (keep != NULL && strcmp(keep, "1") == 0) {
        fprintf(stderr, "harness: keeping %s\n", dir);
        return;
    }
    d = opendir(dir);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Creates the server's temp dir in r->dir.  Returns 0 or -1. */
static int make_dir(rt_redis *r)
{
    const char *tmp = getenv("TMPDIR");
    int n;

    if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 150)
        tmp = "/tmp";
    n = snprintf(r->dir, sizeof(r->dir), "%s/rlock-redis-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof(r->dir) || mkdtemp(r->dir) == NULL) {
        fprintf(stderr, "harness: mkdtemp in %s: %s\n", tmp, strerror(errno));
        r->dir[0] = '\0';
        return -1;
    }
    return 0;
}

/* The lowest port the kernel hands out for outgoing connections and for
 * bind(port 0); 32768 when it cannot be read. */
static int ephemeral_low(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    int low = 32768, high = 0;

    if (f != NULL) {
        if (fscanf(f, "%d %d", &low, &high) != 2)
            low = 32768;
        fclose(f);
    }
    return low;
}

/* Returns 1 if port binds on loopback now (without SO_REUSEADDR, so a port
 * with a connection lingering in TIME_WAIT counts as taken too). */
static int port_binds(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok;

    if (fd < 0)
        return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* Ports come from below the kernel's ephemeral range: a port picked there
 * can be taken, between the pick and the server's bind, by the source port
 * of any outgoing connection on the machine (the suite runs tests side by
 * side), and a server that then fails to start fails its test. Below the
 * range only another test's random pick can collide. port + 10000 stays
 * below it too and is checked: an old server's cluster bus. */
int rt_free_port(void)
{
    static _Atomic unsigned calls;
    struct timespec ts;
    unsigned seed;
    int low = ephemeral_low(), first = 10000, span, attempt;

    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16) ^
           (unsigned)pthread_self() ^ (calls++ * 2654435761u);
    span = low - 10000 - first;
    for (attempt = 0; span > 1000 && attempt < 200; attempt++) {
        int port = first + (int)(rand_r(&seed) % (unsigned)span);

        if (port != 6379 && port_binds(port) && port_binds(port + 10000))
            return port;
    }
    /* a machine whose ephemeral range starts low: the kernel's pick */
    for (attempt = 0; attempt < 10; attempt++) {
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int port = -1;

        if (fd < 0)
            return -1;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = 0;
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
            port = ntohs(sa.sin_port);
        close(fd);
        if (port > 0 && port != 6379)
            return port;
    }
    return -1;
}

/* Closes every descriptor >= lowfd.  Async-signal-safe (used after fork). */
static void close_from(int lowfd)
{
    long max;
    int fd;

#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0U) == 0)
        return;
#endif
    max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (fd = lowfd; fd < max; fd++)
        close(fd);
}

/* Forks and execs redis-server for r on r->port in r->dir.  Returns the
 * child's pid or -1. */
static pid_t spawn(rt_redis *r, const char *server)
{
    const char *argv[64];
    char port[16];
    char tls_port[16];
    char logfile[300];
    char conf[300];
    int argc = 0;
    int devnull;
    pid_t parent = getpid();
    pid_t pid;
    size_t i;

    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(logfile, sizeof(logfile), "%s/redis.log", r->dir);
    snprintf(conf, sizeof(conf), "%s/server.conf", r->dir);
    argv[argc++] = server;
    if (r->conf_text != NULL) {
        FILE *f = fopen(conf, "w");
        int bad = f == NULL || fputs(r->conf_text, f) < 0;
        if (f != NULL && fclose(f) != 0)
            bad = 1;
        if (bad) {
            fprintf(stderr, "harness: cannot write %s\n", conf);
            return -1;
        }
        argv[argc++] = conf;
        if (r->sentinel)
            argv[argc++] = "--sentinel";
    }
    argv[argc++] = "--port";
    argv[argc++] = port;
    argv[argc++] = "--bind";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--save";
    argv[argc++] = "";
    argv[argc++] = "--appendonly";
    argv[argc++] = "no";
    argv[argc++] = "--dir";
    argv[argc++] = r->dir;
    argv[argc++] = "--daemonize";
    argv[argc++] = "no";
    argv[argc++] = "--logfile";
    argv[argc++] = logfile;
    if (r->tls_args != NULL) {
        snprintf(tls_port, sizeof(tls_port), "%d", r->tls_port);
        argv[argc++] = "--tls-port";
        argv[argc++] = tls_port;
        for (i = 0; r->tls_args[i] != NULL; i++) {
            if (argc >= (int)(sizeof(argv) / sizeof(argv[0])) - 1) {
                fprintf(stderr, "harness: too many TLS redis-server args\n");
                return -1;
            }
            argv[argc++] = r->tls_args[i];
        }
    }
    for (i = 0; r->extra_args != NULL && r->extra_args[i] != NULL; i++) {
        if (argc >= (int)(sizeof(argv) / sizeof(argv[0])) - 1) {
            fprintf(stderr, "harness: too many extra redis-server args\n");
            return -1;
        }
        argv[argc++] = r->extra_args[i];
    }
    argv[argc] = NULL;

    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "harness: fork: %s\n", strerror(errno));
        close(devnull);
        return -1;
    }
    if (pid == 0) {
        struct sigaction sa;
        sigset_t none;

        /* Die with the thread that started us, even on SIGKILL/crash. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        close_from(3);
        execv(server, (char *const *)argv);
        _exit(127);
    }
    close(devnull);
    return pid;
}

/* Prints the last lines of the server's log to stderr. */
static void dump_log(const rt_redis *r)
{
    char path[300];
    char buf[2048];
    FILE *f;
    long size;
    size_t n;

    snprintf(path, sizeof(path), "%s/redis.log", r->dir);
    f = fopen(path, "r");
    if (f == NULL)
        return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0,
          SEEK_SET);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "harness: tail of %s:\n%s\n", path, buf);
}

/* Returns 1 if the server's log says its port was taken. */
static int log_says_port_taken(const rt_redis *r)
{
    char path[300];
    char line[1024];
    FILE *f;
    int taken = 0;

    snprintf(path, sizeof(path), "%s/redis.log", r->dir);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (!taken && fgets(line, sizeof(line), f) != NULL)
        taken = strstr(line, "Address already in use") != NULL;
    fclose(f);
    return taken;
}

/* Returns 1 if the server on r->port answers PING and reports pid as its
 * process_id, 0 otherwise. */
static int probe(const rt_redis *r, pid_t pid)
{
    redisContext *c;
    redisReply *reply;
    int ok = 0;

    c = redisConnectWithTimeout("127.0.0.1", r->port, ms_to_timeval(200));
    if (c == NULL)
        return 0;
    if (c->err != 0)
        goto out_free;
    redisSetTimeout(c, ms_to_timeval(1000));
    if (r->password != NULL) {
        reply = redisCommand(c, "AUTH %s", r->password);
        if (reply == NULL)
            goto out_free;
        freeReplyObject(reply);
    }
    reply = redisCommand(c, "PING");
    if (reply == NULL)
        goto out_free;
    ok = reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "PONG") == 0;
    freeReplyObject(reply);
    if (!ok)
        goto out_free;
    ok = 0;
    reply = redisCommand(c, "INFO server");
    if (reply == NULL)
        goto out_free;
    if (reply->type == REDIS_REPLY_STRING) {
        const char *p = strstr(reply->str, "process_id:");

        ok = p != NULL && atol(p + strlen("process_id:")) == (long)pid;
    }
    freeReplyObject(reply);
out_free:
    redisFree(c);
    return ok;
}

enum { START_OK = 0, START_PORT_TAKEN = 1, START_FAILED = -1 };

/* Spawns a server on r->port in r->dir and waits for it.  Returns START_OK
 * (r->pid set and registered), START_PORT_TAKEN, or START_FAILED. */
static int start_once(rt_redis *r, const char *server)
{
    int64_t deadline = rt_now_ms() + RT_START_TIMEOUT_MS;
    char logfile[300];
    pid_t pid;
    int status;

    snprintf(logfile, sizeof(logfile), "%s/redis.log", r->dir);
    unlink(logfile);
    pid = spawn(r, server);
    if (pid < 0)
        return START_FAILED;
    for (;;) {
        pid_t rc = waitpid_retry(pid, &status, WNOHANG);

        if (rc == pid) {
            if (log_says_port_taken(r))
                return START_PORT_TAKEN;
            fprintf(stderr,
                    "harness: redis-server exited early (status "
                    "0x%x) on port %d\n",
                    status, r->port);
            dump_log(r);
            return START_FAILED;
        }
        if (probe(r, pid))
            break;
        if (rt_now_ms() >= deadline) {
            fprintf(stderr,
                    "harness: redis-server on port %d not ready "
                    "after %d ms\n",
                    r->port, RT_START_TIMEOUT_MS);
            dump_log(r);
            kill_and_reap(pid, 1000);
            return START_FAILED;
        }
        rt_sleep_ms(10);
    }
    r->pid = pid;
    r->paused = 0;
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
    reg_add(pid, r->dir);
    return START_OK;
}

/* ------------------------------------------------------------------------ */
/* Server lifecycle                                                         */
/* ------------------------------------------------------------------------ */

int rt_redis_start(rt_redis *r)
{
    return rt_redis_start_args(r, NULL);
}

int rt_redis_start_args(rt_redis *r, const char *const *extra_args)
{
    return rt_redis_start_tls(r, NULL, extra_args);
}

int rt_redis_start_tls(rt_redis *r, const char *const *tls_args,
                       const char *const *extra_args)
{
    return rt_redis_start_conf(r, NULL, 0, NULL, tls_args, extra_args);
}

int rt_redis_start_conf(rt_redis *r, const char *conf_text, int sentinel,
                        const char *password, const char *const *tls_args,
                        const char *const *extra_args)
{
    char server[512];
    int attempt;

    pthread_once(&reg_once, reg_init);
    memset(r, 0, sizeof(*r));
    r->extra_args = extra_args;
    r->tls_args = tls_args;
    r->conf_text = conf_text;
    r->sentinel = sentinel;
    r->password = password;
    if (find_redis_server(server, sizeof(server)) != 0) {
        fprintf(stderr, "harness: redis-server not found\n");
        return -1;
    }
    if (make_dir(r) != 0)
        return -1;
    for (attempt = 0; attempt < RT_START_ATTEMPTS; attempt++) {
        int rc;

        r->port = rt_free_port();
        if (tls_args != NULL) {
            do
                r->tls_port = rt_free_port();
            while (r->tls_port == r->port);
        }
        if (r->port < 0 || r->tls_port < 0) {
            fprintf(stderr, "harness: no free loopback port\n");
            break;
        }
        rc = start_once(r, server);
        if (rc == START_OK)
            return 0;
        if (rc == START_FAILED)
            break;
    }
    remove_dir(r->dir);
    r->dir[0] = '\0';
    r->port = 0;
    r->tls_port = 0;
    return -1;
}

int rt_redis_restart(rt_redis *r)
{
    int64_t deadline = rt_now_ms() + RT_RESTART_TIMEOUT_MS;
    char server[512];

    pthread_once(&reg_once, reg_init);
    if (r->port <= 0) {
        fprintf(stderr, "harness: rt_redis_restart without a port\n");
        return -1;
    }
    if (r->pid > 0)
        rt_redis_stop(r);
    if (find_redis_server(server, sizeof(server)) != 0)
        return -1;
    if (make_dir(r) != 0)
        return -1;
    for (;;) {
        int rc = start_once(r, server);

        if (rc == START_OK)
            return 0;
        if (rc == START_FAILED || rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(100); /* someone else holds the port; wait for it */
    }
    fprintf(stderr, "harness: cannot restart redis-server on port %d\n",
            r->port);
    remove_dir(r->dir);
    r->dir[0] = '\0';
    return -1;
}

void rt_redis_stop(rt_redis *r)
{
    if (r == NULL || r->pid <= 0)
        return;
    kill_and_reap(r->pid, RT_STOP_TIMEOUT_MS);
    reg_del(r->pid);
    remove_dir(r->dir);
    r->dir[0] = '\0';
    r->pid = 0;
    r->paused = 0;
}

void rt_redis_pause(rt_redis *r)
{
    int status;

    if (r->pid <= 0 || r->paused)
        return;
    if (kill(r->pid, SIGSTOP) != 0)
        return;
    /* Return only once the process really is stopped. */
    while (waitpid_retry(r->pid, &status, WUNTRACED) == r->pid) {
        if (WIFSTOPPED(status)) {
            r->paused = 1;
            return;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            /* It had already died (and is now reaped): forget it. */
            fprintf(stderr, "harness: redis-server %d was already gone\n",
                    (int)r->pid);
            reg_del(r->pid);
            remove_dir(r->dir);
            r->dir[0] = '\0';
            r->pid = 0;
            return;
        }
    }
}

void rt_redis_resume(rt_redis *r)
{
    if (r->pid <= 0 || !r->paused)
        return;
    /* SIGCONT resumes the process as it is sent; no need to wait. */
    kill(r->pid, SIGCONT);
    r->paused = 0;
}

/* ------------------------------------------------------------------------ */
/* One-shot commands                                                        */
/* ------------------------------------------------------------------------ */

/* Opens a connection to r with the harness timeouts, or returns NULL. */
static redisContext *connect_to(const rt_redis *r, int io_timeout_ms)
{
    redisContext *c;

    if (r->port <= 0)
        return NULL;
    c = redisConnectWithTimeout("127.0.0.1", r->port,
                                ms_to_timeval(RT_CONNECT_TIMEOUT_MS));
    if (c == NULL)
        return NULL;
    if (c->err != 0) {
        redisFree(c);
        return NULL;
    }
    if (io_timeout_ms > 0)
        redisSetTimeout(c, ms_to_timeval(io_timeout_ms));
    if (r->password != NULL) {
        redisReply *reply = redisCommand(c, "AUTH %s", r->password);
        if (reply == NULL) {
            redisFree(c);
            return NULL;
        }
        freeReplyObject(reply);
    }
    return c;
}

/* Runs one command on a fresh connection.  Returns the reply or NULL. */
static redisReply *vcmd(rt_redis *r, const char *fmt, va_list ap)
{
    redisContext *c = connect_to(r, RT_IO_TIMEOUT_MS);
    redisReply *reply;

    if (c == NULL)
        return NULL;
    reply = redisvCommand(c, fmt, ap);
    redisFree(c);
    return reply;
}

redisReply *rt_cmd(rt_redis *r, const char *fmt, ...)
{
    redisReply *reply;
    va_list ap;

    va_start(ap, fmt);
    reply = vcmd(r, fmt, ap);
    va_end(ap);
    return reply;
}

redisReply *rt_cmd_argv(rt_redis *r, int argc, const char **argv)
{
    redisContext *c = connect_to(r, RT_IO_TIMEOUT_MS);
    redisReply *reply;

    if (c == NULL)
        return NULL;
    reply = redisCommandArgv(c, argc, argv, NULL);
    redisFree(c);
    return reply;
}

long long rt_cmd_int(rt_redis *r, const char *fmt, ...)
{
    redisReply *reply;
    long long v = RT_CMD_ERROR;
    va_list ap;

    va_start(ap, fmt);
    reply = vcmd(r, fmt, ap);
    va_end(ap);
    if (reply == NULL)
        return RT_CMD_ERROR;
    if (reply->type == REDIS_REPLY_INTEGER)
        v = reply->integer;
    freeReplyObject(reply);
    return v;
}

/* PUBSUB <sub> channel's count for channel (sub: NUMSUB or SHARDNUMSUB),
 * or -1. */
static long long subscribers(rt_redis *r, const char *sub,
                             const char *channel)
{
    redisReply *rep = rt_cmd(r, "PUBSUB %s %s", sub, channel);
    long long n = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER)
        n = rep->element[1]->integer;
    freeReplyObject(rep);
    return n;
}

long long rt_numsub(rt_redis *r, const char *channel)
{
    return subscribers(r, "NUMSUB", channel);
}

long long rt_shardnumsub(rt_redis *r, const char *channel)
{
    return subscribers(r, "SHARDNUMSUB", channel);
}

long long rt_wait_numsub(rt_redis *r, const char *channel, long long want,
                         int timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    long long n;

    while ((n = rt_numsub(r, channel)) != want && rt_now_ms() < deadline)
        rt_sleep_ms(10);
    return n;
}

char *rt_cmd_str(rt_redis *r, const char *fmt, ...)
{
    redisReply *reply;
    char *s = NULL;
    va_list ap;

    va_start(ap, fmt);
    reply = vcmd(r, fmt, ap);
    va_end(ap);
    if (reply == NULL)
        return NULL;
    if (reply->type == REDIS_REPLY_STRING ||
        reply->type == REDIS_REPLY_STATUS) {
        s = malloc(reply->len + 1);
        if (s != NULL) {
            memcpy(s, reply->str, reply->len);
            s[reply->len] = '\0';
        }
    }
    freeReplyObject(reply);
    return s;
}

long long rt_connections_received(rt_redis *r)
{
    static const char field[] = "total_connections_received:";
    char *info = rt_cmd_str(r, "INFO stats");
    const char *p = info != NULL ? strstr(info, field) : NULL;
    long long n = p != NULL ? atoll(p + strlen(field)) : RT_CMD_ERROR;
    free(info);
    return n;
}

/* ------------------------------------------------------------------------ */
/* Subscriber                                                               */
/* ------------------------------------------------------------------------ */

struct rt_sub {
    redisContext *c;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled on every message and on close */
    char **msgs;       /* guarded by mu */
    int count;         /* guarded by mu */
    int cap;           /* guarded by mu */
    int closed;        /* guarded by mu: the reader has exited */
};

/* Appends a copy of payload to s->msgs.  Returns 0 or -1 (out of memory). */
static int sub_append(rt_sub *s, const char *payload, size_t len)
{
    char *copy = malloc(len + 1);
    int rc = 0;

    if (copy == NULL)
        return -1;
    memcpy(copy, payload, len);
    copy[len] = '\0';
    pthread_mutex_lock(&s->mu);
    if (s->count == s->cap) {
        int cap = s->cap != 0 ? s->cap * 2 : 16;
        char **msgs = realloc(s->msgs, (size_t)cap * sizeof(*msgs));

        if (msgs == NULL) {
            rc = -1;
            goto out_unlock;
        }
        s->msgs = msgs;
        s->cap = cap;
    }
    s->msgs[s->count++] = copy;
    copy = NULL;
    pthread_cond_broadcast(&s->cv);
out_unlock:
    pthread_mutex_unlock(&s->mu);
    free(copy);
    return rc;
}

/* Reader thread: records "message" pushes until the connection fails or
 * rt_sub_stop() shuts the socket down. */
static void *sub_main(void *arg)
{
    rt_sub *s = arg;

    for (;;) {
        void *raw = NULL;
        redisReply *reply;

        if (redisGetReply(s->c, &raw) != REDIS_OK || raw == NULL)
            break;
        reply = raw;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
            reply->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(reply->element[0]->str, "message") == 0 &&
            reply->element[2]->type == REDIS_REPLY_STRING)
            sub_append(s, reply->element[2]->str, reply->element[2]->len);
        freeReplyObject(reply);
    }
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

rt_sub *rt_sub_start(rt_redis *r, const char *channel)
{
    pthread_condattr_t attr;
    redisReply *reply;
    rt_sub *s;
    int ok;

    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->c = connect_to(r, RT_IO_TIMEOUT_MS);
    if (s->c == NULL)
        goto out_free_sub;
    reply = redisCommand(s->c, "SUBSCRIBE %s", channel);
    if (reply == NULL)
        goto out_free_conn;
    ok = reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
         reply->element[0]->type == REDIS_REPLY_STRING &&
         strcmp(reply->element[0]->str, "subscribe") == 0;
    freeReplyObject(reply);
    if (!ok)
        goto out_free_conn;
    /* The reader blocks indefinitely: a quiet channel is not an error. */
    redisSetTimeout(s->c, ms_to_timeval(0));

    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&s->thread, NULL, sub_main, s) != 0)
        goto out_destroy_sync;
    return s;

out_destroy_sync:
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
out_free_conn:
    redisFree(s->c);
out_free_sub:
    free(s);
    fprintf(stderr, "harness: cannot subscribe to %s on port %d\n", channel,
            r->port);
    return NULL;
}

int rt_sub_count(rt_sub *s)
{
    int n;

    pthread_mutex_lock(&s->mu);
    n = s->count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int rt_sub_wait(rt_sub *s, int n, int timeout_ms)
{
    struct timespec until;
    int count;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    while (s->count < n && !s->closed) {
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
            break;
    }
    count = s->count;
    pthread_mutex_unlock(&s->mu);
    return count;
}

const char *rt_sub_message(rt_sub *s, int i)
{
    const char *msg = NULL;

    pthread_mutex_lock(&s->mu);
    if (i >= 0 && i < s->count)
        msg = s->msgs[i];
    pthread_mutex_unlock(&s->mu);
    return msg;
}

void rt_sub_stop(rt_sub *s)
{
    int i;

    if (s == NULL)
        return;
    /* Wakes the reader out of read(2); it then sees EOF and exits. */
    shutdown(s->c->fd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    redisFree(s->c);
    for (i = 0; i < s->count; i++)
        free(s->msgs[i]);
    free(s->msgs);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
