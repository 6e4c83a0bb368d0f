/*
 * java_testing.c: helpers of test_java_peer.c (see the header).
 *
 * Built into rlock_compat_support, which does not link the library: each
 * test links rlock_objects, which resolves the rlock_* calls made here.
 */
#include "java_testing.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat_testing.h"
#include "lock_testing.h"

int jt_version_at_least(const char *version, int major, int minor)
{
    int ma = 0, mi = 0;

    if (sscanf(version, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

static int group_setup(void **state, const char *version, int two)
{
    static const char *const short_wd[] = {"watchdog=2000", NULL};
    jt_fixture *f = calloc(1, sizeof(*f));

    if (f == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    f->version = version;
    *state = f;
    /* both JVMs start at once: each takes a second or more */
    f->ja = jp_start(version, f->redis.url, NULL);
    if (two)
        f->jb = jp_start(version, f->redis.url, short_wd);
    if (f->ja == NULL || (two && f->jb == NULL) ||
        jp_ready(f->ja, version, JT_JVM_START_MS) != 0 ||
        (two && jp_ready(f->jb, version, JT_JVM_START_MS) != 0))
        return -1;
    return 0;
}

int jt_group_setup(void **state, const char *version)
{
    return group_setup(state, version, 1);
}

int jt_group_setup_one(void **state, const char *version)
{
    return group_setup(state, version, 0);
}

int jt_group_teardown(void **state)
{
    jt_fixture *f = *state;

    jp_free(f->ja);
    jp_free(f->jb);
    rt_redis_stop(&f->redis);
    free(f);
    return 0;
}

int jt_setup(void **state)
{
    jt_fixture *f = *state;

    f->a = ct_connect(&f->redis);
    f->b = ct_connect(&f->redis);
    return 0;
}

int jt_teardown(void **state)
{
    jt_fixture *f = *state;
    char *ok = rt_cmd_str(&f->redis, "CLIENT UNPAUSE");

    free(ok);
    rlock_client_free(f->a);
    rlock_client_free(f->b);
    f->a = f->b = NULL;
    return 0;
}

jt_lock jt_c_get(rlock_client *c, const char *kind, const char *name)
{
    jt_lock h = {0};
    int rc;

    if (strcmp(kind, "lock") == 0)
        rc = rlock_get(c, name, &h.l);
    else if (strcmp(kind, "fair") == 0)
        rc = rlock_fair_get(c, name, &h.l);
    else if (strcmp(kind, "spin") == 0)
        rc = rlock_spin_get(c, name, &h.l);
    else if (strcmp(kind, "fenced") == 0)
        rc = rlock_fenced_get(c, name, &h.l);
    else {
        rc = rlock_rw_get(c, name, &h.rw);
        assert_int_equal(rc, RLOCK_OK);
        h.l = strcmp(kind, "read") == 0 ? rlock_rw_read(h.rw)
                                        : rlock_rw_write(h.rw);
    }
    assert_int_equal(rc, RLOCK_OK);
    assert_non_null(h.l);
    return h;
}

void jt_c_free(jt_lock *h)
{
    if (h->rw != NULL)
        rlock_rw_free(h->rw);
    else
        rlock_free(h->l);
    *h = (jt_lock){0};
}

/* Sends "tid op kind name [args]" to p and returns the event it answers. */
json_t *jt_java_do(jp_peer *p, const char *tid, const char *op,
                   const char *kind, const char *name, const char *args,
                   int timeout_ms)
{
    jp_send(p, "%s %s %s %s %s", tid, op, kind, name, args != NULL ? args : "");
    return jp_expect(p, tid, op, timeout_ms);
}

/* The Java thread tid takes the lock (no wait expected). */
void jt_java_lock(jp_peer *p, const char *tid, const char *kind,
                  const char *name)
{
    json_decref(jt_java_do(p, tid, "lock", kind, name, NULL, JT_PEER_MS));
}

/* The Java thread tid unlocks, which must succeed. */
void jt_java_unlock(jp_peer *p, const char *tid, const char *kind,
                    const char *name)
{
    json_t *ev = jt_java_do(p, tid, "unlock", kind, name, NULL, JT_PEER_MS);

    assert_true(np_bool(ev, "ok"));
    json_decref(ev);
}

/* One tryLock(wait_ms) by the Java thread "try"; a hold it gets is given
 * back at once. Returns whether it got the lock. */
int jt_java_trylock(jp_peer *p, const char *kind, const char *name,
                    int wait_ms)
{
    char args[32];
    json_t *ev;
    int got;

    snprintf(args, sizeof(args), "%d", wait_ms);
    ev = jt_java_do(p, "try", "trylock", kind, name, args,
                    JT_PEER_MS + wait_ms);
    got = np_bool(ev, "acquired");
    json_decref(ev);
    if (got)
        jt_java_unlock(p, "try", kind, name);
    return got;
}

long long jt_c_waiter_woken_by_java(jp_peer *p, rt_redis *r, const char *kind,
                                    const char *name, rlock *l, int first)
{
    char channel[160];
    ct_locker waiter;
    json_t *ev;
    int64_t offset, t0;
    long long lat;

    lt_channel_of(channel, sizeof(channel), name);
    jt_java_lock(p, "h", kind, name);
    ct_locker_start(&waiter, l, RLOCK_WAIT_FOREVER);
    ct_wait_numsub(r, channel, 1, 5000);
    if (first)
        assert_false(ct_locker_wait(&waiter, 200));

    offset = ct_wall_ms() - rt_now_ms();
    ev = jt_java_do(p, "h", "unlock", kind, name, NULL, JT_PEER_MS);
    assert_true(np_bool(ev, "ok"));
    t0 = np_int(ev, "t0");
    json_decref(ev);
    assert_true(ct_locker_wait(&waiter, CT_WAKE_BOUND_MS));
    assert_int_equal(waiter.acquired_rc, RLOCK_OK);
    lat = waiter.done_ms + offset - t0;
    assert_true(lat < CT_WAKE_BOUND_MS);
    assert_int_equal(ct_locker_release(&waiter), RLOCK_OK);
    return lat;
}

long long jt_java_waiter_woken_by_c(jp_peer *p, rt_redis *r, const char *kind,
                                    const char *name, rlock *l, int first)
{
    char channel[160];
    json_t *ev;
    int64_t t0;
    long long lat;

    lt_channel_of(channel, sizeof(channel), name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    jp_send(p, "w lock %s %s", kind, name);
    ct_wait_numsub(r, channel, 1, JT_PEER_MS);
    if (first)
        assert_true(jp_quiet(p, "w", 200));

    t0 = ct_wall_ms();
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    ev = jp_expect(p, "w", "lock", CT_WAKE_BOUND_MS);
    lat = np_int(ev, "t") - t0;
    json_decref(ev);
    assert_true(lat < CT_WAKE_BOUND_MS);
    jt_java_unlock(p, "w", kind, name);
    assert_int_equal(rt_cmd_int(r, "EXISTS %s", name), 0);
    return lat;
}

/* The only field of hash name, which must have exactly one, and its value
 * (the hold count) as a number. */
long long jt_single_count(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "HVALS %s", name);
    long long n;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    n = atoll(rep->element[0]->str);
    freeReplyObject(rep);
    return n;
}

static int cmp_ll(const void *x, const void *y)
{
    long long a = *(const long long *)x, b = *(const long long *)y;

    return (a > b) - (a < b);
}

/* Prints min/median/max of n latencies, for the wake-up table in
 * compat/README.md. */
void jt_report_latencies(const char *version, const char *what, long long *ms,
                         int n)
{
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_ll);
    print_message("redisson %s: %s wake-up, %d rounds: min %lld ms, median "
                  "%lld ms, max %lld ms\n",
                  version, what, n, ms[0], ms[n / 2], ms[n - 1]);
}

/* The hold count in hash name of its one owner: the value of its only
 * field other than the read-write lock's "mode". */
long long jt_owner_count(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "HGETALL %s", name);
    long long count = -1;
    int owners = 0;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        if (strcmp(rep->element[i]->str, "mode") == 0)
            continue;
        owners++;
        count = atoll(rep->element[i + 1]->str);
    }
    freeReplyObject(rep);
    assert_int_equal(owners, 1);
    return count;
}

/* The kind that a hold of kind keeps out: the read lock only keeps out
 * writers. */
const char *jt_excluded_by(const char *kind)
{
    return strcmp(kind, "read") == 0 ? "write" : kind;
}

/* calls of EVAL plus EVALSHA so far (INFO commandstats) */
long long jt_script_calls(rt_redis *r)
{
    char *info = rt_cmd_str(r, "INFO commandstats");
    long long n = 0;

    assert_non_null(info);
    for (const char *p = info; (p = strstr(p, "cmdstat_eval")) != NULL; p++) {
        const char *calls = strstr(p, "calls=");

        if (strncmp(p, "cmdstat_eval:", 13) == 0 ||
            strncmp(p, "cmdstat_evalsha:", 16) == 0)
            n += atoll(calls + 6);
    }
    free(info);
    return n;
}
