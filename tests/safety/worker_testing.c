/*
 * worker_testing.c: running safety workers and checking their histories
 * (worker_testing.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_testing.h"

pid_t wt_spawn(const char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int wt_wait(pid_t pid)
{
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

void wt_empty_store(rt_redis *store)
{
    redisReply *r = rt_cmd(store, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
}

/* The state of every actor of every process, and the values written. */
typedef struct check_state {
    wt_summary sum;
    const char *kind;
    char open_id[WT_MAX_PROCS][WT_MAX_THREADS][64]; /* awaiting completion */
    char open_op[WT_MAX_PROCS][WT_MAX_THREADS][16];
    int64_t open_mono[WT_MAX_PROCS][WT_MAX_THREADS];
    int64_t token[WT_MAX_PROCS][WT_MAX_THREADS]; /* fenced: the hold's */
    int64_t read_value[WT_MAX_PROCS][WT_MAX_THREADS];
    unsigned char seen[WT_NAMES][WT_MAX_VALUES + 1];
} check_state;

static const char *str_field(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    if (s == NULL)
        fail_msg("line without string field %s", name);
    return s;
}

static int64_t int_field(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v))
        fail_msg("line without integer field %s", name);
    return json_integer_value(v);
}

static int lock_index(const char *lock, const char *kind)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "safety:%s:", kind);
    assert_memory_equal(lock, prefix, strlen(prefix));
    int i = atoi(lock + strlen(prefix));
    assert_true(i >= 0 && i < WT_NAMES);
    return i;
}

/* A completion of process p's actor t (its open invoke), all ok. */
static void check_completion(json_t *o, check_state *s, int p, int t,
                             const char *mode, int li)
{
    const char *id = str_field(o, "id"), *op = str_field(o, "op");
    const char *type = str_field(o, "type");
    assert_string_equal(id, s->open_id[p][t]);
    assert_string_equal(op, s->open_op[p][t]);
    assert_true(int_field(o, "mono_ns") >= s->open_mono[p][t]);
    s->open_id[p][t][0] = '\0';
    if (strcmp(type, "ok") != 0)
        fail_msg("%s %s: %s (%s)", id, op, type,
                 json_string_value(json_object_get(o, "err")));
    int fenced = strcmp(s->kind, "fenced") == 0;
    if (strcmp(op, "acquire") == 0) {
        if (fenced)
            assert_true((s->token[p][t] = int_field(o, "token")) > 0);
        return;
    }
    if (fenced && strcmp(op, "release") != 0)
        assert_int_equal(int_field(o, "token"), s->token[p][t]);
    if (strcmp(op, "read") == 0) {
        s->read_value[p][t] = int_field(o, "value");
    } else if (strcmp(op, "write") == 0) {
        assert_string_equal(mode, "x");
        int64_t v = int_field(o, "value");
        assert_int_equal(v, s->read_value[p][t] + 1);
        assert_true(v >= 1 && v <= WT_MAX_VALUES);
        assert_int_equal(s->seen[li][v], 0); /* no two holders wrote v */
        s->seen[li][v] = 1;
        s->sum.writes[li]++;
        s->sum.writes_ok++;
    }
}

/* Checks one line of process p (named proc). */
static void check_line(json_t *o, check_state *s, int p, const char *proc)
{
    const char *id = str_field(o, "id"), *type = str_field(o, "type");
    const char *op = str_field(o, "op");
    assert_string_equal(str_field(o, "proc"), proc);
    assert_string_equal(str_field(o, "kind"), s->kind);
    assert_non_null(strchr(str_field(o, "owner"), ':'));
    int64_t thread = int_field(o, "thread"), mono = int_field(o, "mono_ns");
    assert_true(thread >= 0 && thread < WT_MAX_THREADS);
    assert_true(mono > 0 && int_field(o, "wall_ms") > 0);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s-%d-", proc, (int)thread);
    assert_memory_equal(id, prefix, strlen(prefix));
    const char *mode = str_field(o, "mode");
    assert_true(strcmp(mode, "x") == 0 || strcmp(mode, "r") == 0);
    int li = lock_index(str_field(o, "lock"), s->kind);
    int t = (int)thread;

    if (strcmp(op, "lost") == 0) {
        s->sum.lost++;
    } else if (strcmp(type, "invoke") == 0) {
        assert_string_equal(s->open_id[p][t], ""); /* one call at a time */
        snprintf(s->open_id[p][t], sizeof(s->open_id[p][t]), "%s", id);
        snprintf(s->open_op[p][t], sizeof(s->open_op[p][t]), "%s", op);
        s->open_mono[p][t] = mono;
        if (strcmp(op, "acquire") == 0) {
            s->sum.acquires++;
            s->sum.acquires_of[p]++;
        }
    } else {
        check_completion(o, s, p, t, mode, li);
    }
}

const wt_summary *wt_check_histories(int n, const char *const *paths,
                                     const char *const *procs,
                                     const char *kind, rt_redis *store)
{
    static check_state state;
    check_state *s = &state;
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    assert_true(n >= 1 && n <= WT_MAX_PROCS);
    for (int p = 0; p < n; p++) {
        FILE *f = fopen(paths[p], "r");
        assert_non_null(f);
        char line[2048];
        while (fgets(line, sizeof(line), f) != NULL) {
            assert_non_null(strchr(line, '\n')); /* whole lines */
            json_error_t err;
            json_t *o = json_loads(line, 0, &err);
            if (o == NULL)
                fail_msg("%s: not JSON: %s", paths[p], line);
            check_line(o, s, p, procs[p]);
            json_decref(o);
            s->sum.lines++;
        }
        fclose(f);
        for (int t = 0; t < WT_MAX_THREADS; t++)
            assert_string_equal(s->open_id[p][t], ""); /* all completed */
    }
    assert_int_equal(s->sum.lost, 0);
    for (int i = 0; i < WT_NAMES; i++) {
        char *v = rt_cmd_str(store, "GET safety:counter:safety:%s:%d", kind,
                             i);
        long long counter = v != NULL ? atoll(v) : 0;
        free(v);
        assert_int_equal(counter, s->sum.writes[i]);
    }
    return &s->sum;
}
