/*
 * jvms.c: the Java side of the "mixed-java" scenario: --java-procs JVMs of
 * the real Redisson (compat/java's Driver, one JVM per process, as a Java
 * service runs it) on the same lock as rlock-bench's own processes.
 *
 * Each JVM is spawned with pipes on its stdin and stdout and speaks the
 * Driver's protocol: one command a line in, one JSON event a line out
 * (compat/java/src/Driver.java). Start-up is not measured: every JVM first
 * connects ("ready"), then warms up for --java-warmup seconds with two of
 * its threads contending on a lock of its own, so that Redisson's lock,
 * wait and unlock paths are compiled by the JIT before the timed window.
 * The timed loop is the Driver's "bench" op: lock, GET, SET +1, unlock for
 * the scenario's seconds, answered with the acquisitions and every lock()
 * call's wait.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct jvm {
    pid_t pid;
    int in;     /* the JVM's stdin, ours to write */
    int out;    /* the JVM's stdout, ours to read */
    char *buf;  /* read but not yet returned as lines */
    size_t len; /* bytes in buf */
    size_t cap;
} jvm;

struct bench_jvms {
    const bench_opts *o;
    int n;
    char version[32]; /* Redisson's, from the first ready event */
    jvm j[];
};

/* Spawns one Driver JVM on o->url. Returns 0 or -1. */
static int spawn(const bench_opts *o, jvm *j)
{
    int in[2], out[2];
    char cp[1200], max[64];
    snprintf(cp, sizeof(cp), "%s/classes:%s/lib/*", o->java_driver,
             o->java_driver);
    /* the Driver's guard: a JVM outlives no bench that died */
    snprintf(max, sizeof(max), "max=%.0f",
             (o->java_warmup + o->seconds + 120) * 1000);
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(NULL);
    j->pid = fork();
    if (j->pid == 0) {
        /* a bench killed mid-run takes its JVMs with it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execlp("java", "java", "-cp", cp, "Driver", "single", o->url, max,
               (char *)NULL);
        fprintf(stderr, "rlock-bench: cannot run java: %s\n", strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    j->in = in[1];
    j->out = out[0];
    if (j->pid < 0) {
        close(j->in);
        close(j->out);
        j->in = j->out = -1;
        return -1;
    }
    return 0;
}

/* Sends one command line. Returns 0 or -1. */
static int send_line(jvm *j, const char *line)
{
    size_t len = strlen(line), done = 0;
    while (done < len) {
        ssize_t w = write(j->in, line + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

/* The next event of j, parsed, within timeout_ms; NULL on a timeout, an
 * early exit or a line that is not JSON (message on stderr). The bench
 * event carries every wait, so a line can be long: the buffer grows. */
static json_t *next_event(jvm *j, int index, int timeout_ms)
{
    int64_t until = bench_now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        char *nl = j->buf != NULL ? memchr(j->buf, '\n', j->len) : NULL;
        if (nl != NULL) {
            json_error_t err;
            *nl = '\0';
            json_t *ev = json_loads(j->buf, 0, &err);
            if (ev == NULL)
                fprintf(stderr, "rlock-bench: java %d said: %.200s\n", index,
                        j->buf);
            j->len -= (size_t)(nl + 1 - j->buf);
            memmove(j->buf, nl + 1, j->len);
            if (ev != NULL)
                return ev;
            continue;
        }
        int left = (int)((until - bench_now_ns()) / 1000000);
        struct pollfd p = {.fd = j->out, .events = POLLIN};
        int ready = left > 0 ? poll(&p, 1, left) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            fprintf(stderr, "rlock-bench: java %d: no answer in %d ms\n",
                    index, timeout_ms);
            return NULL;
        }
        if (j->cap - j->len < 65536) {
            char *grown = realloc(j->buf, j->cap + 65536 + j->cap / 2);
            if (grown == NULL)
                return NULL;
            j->buf = grown;
            j->cap += 65536 + j->cap / 2;
        }
        ssize_t r = read(j->out, j->buf + j->len, j->cap - j->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "rlock-bench: java %d exited\n", index);
            return NULL;
        }
        j->len += (size_t)r;
    }
}

/* Waits for the answer `event` of j (an "error" event fails it); returns
 * it, or NULL (message on stderr). */
static json_t *expect(jvm *j, int index, const char *event, int timeout_ms)
{
    json_t *ev = next_event(j, index, timeout_ms);
    const char *got = json_string_value(json_object_get(ev, "event"));
    if (ev != NULL && (got == NULL || strcmp(got, event) != 0)) {
        char *text = json_dumps(ev, JSON_COMPACT);
        fprintf(stderr, "rlock-bench: java %d: expected %s, got %.300s\n",
                index, event, text != NULL ? text : "?");
        free(text);
        json_decref(ev);
        ev = NULL;
    }
    return ev;
}

/* Two threads of each JVM take turns on a lock of the JVM's own for
 * o->java_warmup seconds. Returns 0 or -1. */
static int warm_up(bench_jvms *s)
{
    char line[400];
    int timeout_ms = (int)(s->o->java_warmup * 1000) + 60000;
    for (int i = 0; i < s->n; i++)
        for (int t = 0; t < 2; t++) {
            snprintf(line, sizeof(line), "warm%d bench %s %swarm:%d %swarm:%d:n %g\n",
                     t, s->o->kind, s->o->prefix, i, s->o->prefix, i,
                     s->o->java_warmup);
            if (send_line(&s->j[i], line) != 0)
                return -1;
        }
    for (int i = 0; i < s->n; i++)
        for (int t = 0; t < 2; t++) {
            json_t *ev = expect(&s->j[i], i, "bench", timeout_ms);
            if (ev == NULL)
                return -1;
            json_decref(ev);
        }
    return 0;
}

int bench_jvms_start(const bench_opts *o, bench_jvms **out)
{
    bench_jvms *s = calloc(1, sizeof(*s) + sizeof(jvm) * (size_t)o->java_procs);
    *out = s;
    if (s == NULL)
        return -1;
    s->o = o;
    for (; s->n < o->java_procs; s->n++) {
        s->j[s->n].pid = -1;
        if (spawn(o, &s->j[s->n]) != 0)
            return -1;
    }
    /* a JVM starting beside others on a loaded 2-core machine is slow */
    for (int i = 0; i < s->n; i++) {
        json_t *ev = expect(&s->j[i], i, "ready", 120000);
        if (ev == NULL)
            return -1;
        const char *v = json_string_value(json_object_get(ev, "version"));
        if (i == 0 && v != NULL)
            snprintf(s->version, sizeof(s->version), "%s", v);
        json_decref(ev);
    }
    return warm_up(s);
}

const char *bench_jvms_version(const bench_jvms *s)
{
    return s->version;
}

int bench_jvms_go(bench_jvms *s, const char *name, const char *counter)
{
    char line[400];
    snprintf(line, sizeof(line), "timed bench %s %s %s %g\n", s->o->kind, name,
             counter, s->o->seconds);
    for (int i = 0; i < s->n; i++)
        if (send_line(&s->j[i], line) != 0)
            return -1;
    return 0;
}

int bench_jvms_collect(bench_jvms *s, bench_side *side)
{
    int timeout_ms = (int)(s->o->seconds * 1000) + 60000;
    side->workers = s->n;
    side->acq = calloc((size_t)s->n, sizeof(*side->acq));
    if (side->acq == NULL)
        return -1;
    for (int i = 0; i < s->n; i++) {
        json_t *ev = expect(&s->j[i], i, "bench", timeout_ms);
        if (ev == NULL)
            return -1;
        json_t *waits = json_object_get(ev, "waits_us"), *w;
        size_t k;
        side->acq[i] = json_integer_value(json_object_get(ev, "acquisitions"));
        double seconds = json_number_value(json_object_get(ev, "ms")) / 1e3;
        if (seconds > side->seconds)
            side->seconds = seconds;
        json_array_foreach(waits, k, w)
        {
            if (bench_samples_add(&side->waits, json_integer_value(w) * 1000)) {
                json_decref(ev);
                return -1;
            }
        }
        json_decref(ev);
    }
    return 0;
}

void bench_jvms_free(bench_jvms *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->n; i++) {
        jvm *j = &s->j[i];
        /* end of input ends the Driver; a JVM still busy is killed */
        close(j->in);
        close(j->out);
        int64_t until = bench_now_ns() + 5000000000LL;
        while (j->pid > 0 && waitpid(j->pid, NULL, WNOHANG) == 0) {
            if (bench_now_ns() > until) {
                kill(j->pid, SIGKILL);
                waitpid(j->pid, NULL, 0);
                break;
            }
            bench_sleep_ns(10000000);
        }
        free(j->buf);
    }
    free(s);
}
