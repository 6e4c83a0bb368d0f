/*
 * java_peer.c: Java Redisson peers for the compat tests (see the header).
 *
 * Process handling and line reading are node_peer.c's (np_spawn, np_next):
 * the Driver speaks the same one-event-per-line protocol. What is added
 * here is finding java and the driver's class path, and sorting events by
 * the thread (TID) they answer.
 *
 * Invariant: pending[] holds, in arrival order, the events read from the
 * peer that no jp_expect() has taken yet.
 */
#include "java_peer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node_peer.h"

#ifndef RLOCK_COMPAT_JAVA_DIR
#error \
    "RLOCK_COMPAT_JAVA_DIR must name compat/java (set by compat/CMakeLists.txt)"
#endif

#define JP_MAX_PENDING 256
#define JP_LINE_MAX    1024

struct jp_peer {
    np_peer *np;
    json_t *pending[JP_MAX_PENDING];
    int npending;
};

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes the java binary's path to out. Returns 0, or -1 if there is none
 * on RLOCK_TEST_JAVA or PATH. */
static int find_java(char *out, size_t outlen)
{
    static const char *const names[] = {"java", NULL};
    return np_find_program("RLOCK_TEST_JAVA", names, out, outlen);
}

void jp_require_java(const char *version)
{
    char java[1024], path[2048];
    const char *why = NULL;
    const char *req = getenv("RLOCK_TEST_REQUIRE_REDIS");

    if (find_java(java, sizeof(java)) != 0) {
        why = "java not found on PATH (or RLOCK_TEST_JAVA)";
    } else {
        snprintf(path, sizeof(path), "%s/build/%s/classes/Driver.class",
                 RLOCK_COMPAT_JAVA_DIR, version);
        if (access(path, R_OK) != 0)
            why = "compat/java has no driver built for this Redisson version";
        snprintf(path, sizeof(path), "%s/build/%s/lib/redisson-%s.jar",
                 RLOCK_COMPAT_JAVA_DIR, version, version);
        if (why == NULL && access(path, R_OK) != 0)
            why = "compat/java has not fetched this Redisson version";
    }
    if (why == NULL)
        return;
    if (req != NULL && strcmp(req, "1") == 0) {
        fprintf(stderr,
                "error: %s (Redisson %s) and RLOCK_TEST_REQUIRE_REDIS=1 (run "
                "scripts/deps, which installs a JDK and Maven and builds the "
                "driver for every version in compat/java/versions.txt)\n",
                why, version);
        exit(1);
    }
    fprintf(stderr, "note: %s (Redisson %s); skipping this test\n", why,
            version);
    exit(77);
}

jp_peer *jp_start(const char *version, const char *url,
                  const char *const *options)
{
    return jp_start_mode(version, "single", url, options);
}

jp_peer *jp_start_mode(const char *version, const char *mode,
                       const char *addresses, const char *const *options)
{
    char java[1024], cp[4096], label[64];
    const char *argv[32];
    int argc = 0;
    jp_peer *p;

    if (find_java(java, sizeof(java)) != 0)
        return NULL;
    snprintf(cp, sizeof(cp), "%s/build/%s/classes:%s/build/%s/lib/*",
             RLOCK_COMPAT_JAVA_DIR, version, RLOCK_COMPAT_JAVA_DIR, version);
    snprintf(label, sizeof(label), "redisson-%s", version);
    argv[argc++] = java;
    /* A quick start and little CPU matter more here than peak speed. */
    argv[argc++] = "-XX:+UseSerialGC";
    argv[argc++] = "-XX:TieredStopAtLevel=1";
    argv[argc++] = "-cp";
    argv[argc++] = cp;
    argv[argc++] = "Driver";
    argv[argc++] = mode;
    argv[argc++] = addresses;
    for (size_t i = 0; options != NULL && options[i] != NULL; i++) {
        if (argc >= (int)(sizeof(argv) / sizeof(argv[0])) - 1)
            return NULL;
        argv[argc++] = options[i];
    }
    argv[argc] = NULL;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->np = np_spawn(label, argv);
    return p;
}

int jp_ready(jp_peer *p, const char *version, int timeout_ms)
{
    json_t *ev = np_next(p->np, timeout_ms);
    const char *event, *got;
    int rc = -1;

    if (ev == NULL) {
        fprintf(stderr, "redisson-%s: no ready event within %d ms\n", version,
                timeout_ms);
        return -1;
    }
    event = json_string_value(json_object_get(ev, "event"));
    got = json_string_value(json_object_get(ev, "version"));
    if (strcmp(event, "ready") == 0 && got != NULL &&
        strcmp(got, version) == 0) {
        rc = 0;
    } else {
        char *text = json_dumps(ev, JSON_COMPACT);

        fprintf(stderr, "redisson-%s: expected ready, got %s\n", version,
                text != NULL ? text : event);
        free(text);
    }
    json_decref(ev);
    return rc;
}

void jp_send(jp_peer *p, const char *fmt, ...)
{
    char line[JP_LINE_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof(line));
    np_send(p->np, line);
}

/* Fails the test if ev is an error event (of any thread but error_tid,
 * which may be NULL). */
static void check_error(json_t *ev, const char *error_tid)
{
    const char *t = json_string_value(json_object_get(ev, "tid"));
    char *text;

    if (strcmp(json_string_value(json_object_get(ev, "event")), "error") != 0)
        return;
    if (error_tid != NULL && t != NULL && strcmp(t, error_tid) == 0)
        return;
    text = json_dumps(ev, JSON_COMPACT);
    fail_msg("java peer reported an error: %s", text != NULL ? text : "?");
}

/* Takes the first pending event of tid out of the queue, or returns NULL. */
static json_t *take_pending(jp_peer *p, const char *tid)
{
    for (int i = 0; i < p->npending; i++) {
        const char *t =
            json_string_value(json_object_get(p->pending[i], "tid"));

        if (t != NULL && strcmp(t, tid) == 0) {
            json_t *ev = p->pending[i];

            memmove(&p->pending[i], &p->pending[i + 1],
                    (size_t)(p->npending - i - 1) * sizeof(p->pending[0]));
            p->npending--;
            return ev;
        }
    }
    return NULL;
}

/* Reads events until one of tid comes (returned, not queued) or timeout_ms
 * passes (NULL); every other event is queued. An error event fails the
 * test, unless it is tid's and errors_ok is set. */
static json_t *next_of(jp_peer *p, const char *tid, int timeout_ms,
                       int errors_ok)
{
    int64_t deadline = mono_ms() + timeout_ms;
    json_t *ev = take_pending(p, tid);

    while (ev == NULL) {
        int64_t left = deadline - mono_ms();
        const char *t;

        ev = np_next(p->np, left > 0 ? (int)left : 0);
        if (ev == NULL)
            return NULL;
        check_error(ev, errors_ok ? tid : NULL);
        t = json_string_value(json_object_get(ev, "tid"));
        if (t != NULL && strcmp(t, tid) == 0)
            break;
        assert_true(p->npending < JP_MAX_PENDING);
        p->pending[p->npending++] = ev;
        ev = NULL;
        if (left <= 0)
            return NULL;
    }
    return ev;
}

json_t *jp_expect(jp_peer *p, const char *tid, const char *event,
                  int timeout_ms)
{
    json_t *ev = next_of(p, tid, timeout_ms, strcmp(event, "error") == 0);
    const char *got;

    if (ev == NULL)
        fail_msg("java peer thread %s: no \"%s\" event within %d ms", tid,
                 event, timeout_ms);
    got = json_string_value(json_object_get(ev, "event"));
    if (strcmp(got, event) != 0) {
        char *text = json_dumps(ev, JSON_COMPACT);

        fail_msg("java peer thread %s: expected \"%s\", got %s", tid, event,
                 text != NULL ? text : got);
    }
    return ev;
}

int jp_quiet(jp_peer *p, const char *tid, int ms)
{
    json_t *ev = next_of(p, tid, ms, 0);

    if (ev == NULL)
        return 1;
    /* put it back in front, where jp_expect() looks first */
    assert_true(p->npending < JP_MAX_PENDING);
    memmove(&p->pending[1], &p->pending[0],
            (size_t)p->npending * sizeof(p->pending[0]));
    p->pending[0] = ev;
    p->npending++;
    return 0;
}

void jp_free(jp_peer *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->npending; i++)
        json_decref(p->pending[i]);
    np_free(p->np);
    free(p);
}
