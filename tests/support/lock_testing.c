/*
 * lock_testing.c: rlock-aware helpers shared by the integration tests.
 *
 * Built into rlock_test_harness, which does not link the library itself:
 * every test executable links rlock_objects, and that resolves the rlock_*
 * calls made here.
 */
#include "lock_testing.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

int lt_start(rt_redis *r, rlock_client **client, const rlock_config *cfg)
{
    if (rt_redis_start(r) != 0)
        return -1;
    if (client != NULL &&
        rlock_client_connect_with(client, r->url, cfg) != RLOCK_OK) {
        rt_redis_stop(r);
        return -1;
    }
    return 0;
}

void lt_stop(rt_redis *r, rlock_client *client)
{
    rlock_client_free(client);
    rt_redis_stop(r);
}

static int group_setup(void **state, int connect, const rlock_config *cfg)
{
    lt_fixture *f = calloc(1, sizeof(*f));

    if (f == NULL ||
        lt_start(&f->redis, connect ? &f->client : NULL, cfg) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int lt_group_setup(void **state)
{
    return group_setup(state, 1, NULL);
}

int lt_group_setup_redis_only(void **state)
{
    return group_setup(state, 0, NULL);
}

int lt_group_setup_with(void **state, const rlock_config *cfg)
{
    return group_setup(state, 1, cfg);
}

int lt_group_setup_with_watchdog(void **state, int64_t ms)
{
    rlock_config *cfg = NULL;
    int rc = -1;

    if (rlock_config_new(&cfg) == RLOCK_OK &&
        rlock_config_set_watchdog_timeout(cfg, ms) == RLOCK_OK)
        rc = lt_group_setup_with(state, cfg);
    rlock_config_free(cfg);
    return rc;
}

void lt_on_done(rlock *l, uint64_t owner, int status, void *arg)
{
    lt_completion *c = arg;
    (void)l;
    (void)owner;
    atomic_store(&c->status, status);
    atomic_store(&c->done, 1);
}

int lt_await_completion(lt_completion *c, int64_t within_ms)
{
    int64_t until = rt_now_ms() + within_ms;
    while (!atomic_load(&c->done) && rt_now_ms() < until)
        rt_sleep_ms(5);
    assert_true(atomic_load(&c->done));
    return atomic_load(&c->status);
}

int lt_group_teardown(void **state)
{
    lt_fixture *f = *state;

    lt_stop(&f->redis, f->client);
    free(f);
    return 0;
}

rlock_client *lt_connect(const char *url, lt_config_setter set, int64_t ms)
{
    rlock_config *cfg = NULL;
    rlock_client *c = NULL;

    assert_int_equal(rlock_config_new(&cfg), RLOCK_OK);
    if (set != NULL)
        assert_int_equal(set(cfg, ms), RLOCK_OK);
    assert_int_equal(rlock_client_connect_with(&c, url, cfg), RLOCK_OK);
    rlock_config_free(cfg);
    assert_non_null(c);
    return c;
}

rlock *lt_get_lock(rlock_client *c, const char *name)
{
    rlock *l = NULL;

    assert_int_equal(rlock_get(c, name, &l), RLOCK_OK);
    assert_non_null(l);
    return l;
}

void lt_owner_field(char *buf, size_t n, rlock_client *c)
{
    snprintf(buf, n, "%s:%llu", rlock_client_id(c),
             (unsigned long long)rlock_thread_id());
}

void lt_latch_channel_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "redisson_countdownlatch__channel__{%s}", name);
}

void lt_queue_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "redisson_rlock_queue:{%s}", name);
}

void lt_stale_at_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "redisson_rlock_timeout:{%s}", name);
}

void lt_await_queued(rt_redis *r, const char *name, long long n)
{
    char queue[160];
    lt_queue_of(queue, sizeof(queue), name);
    int64_t deadline = rt_now_ms() + 10000;
    while (rt_cmd_int(r, "LLEN %s", queue) != n && rt_now_ms() < deadline)
        rt_sleep_ms(5);
    assert_int_equal(rt_cmd_int(r, "LLEN %s", queue), n);
}

void lt_channel_of(char *buf, size_t n, const char *name)
{
    /* a name with a hash tag is used as is, as Redisson's prefixName does */
    if (strchr(name, '{') != NULL)
        snprintf(buf, n, "redisson_lock__channel:%s", name);
    else
        snprintf(buf, n, "redisson_lock__channel:{%s}", name);
}

void lt_assert_single_field(rt_redis *r, const char *name, const char *field,
                            const char *value)
{
    redisReply *rep = rt_cmd(r, "HGETALL %s", name);

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    assert_string_equal(rep->element[0]->str, field);
    assert_string_equal(rep->element[1]->str, value);
    freeReplyObject(rep);
}

char *lt_hash_dump(rt_redis *r, const char *name)
{
    redisReply *rep = rt_cmd(r, "HGETALL %s", name);
    size_t len = 1;
    char *out;

    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < rep->elements; i++)
        len += rep->element[i]->len + 1;
    out = calloc(1, len);
    assert_non_null(out);
    for (size_t i = 0; i < rep->elements; i++) {
        strcat(out, rep->element[i]->str);
        strcat(out, i % 2 == 0 ? "=" : ";");
    }
    freeReplyObject(rep);
    return out;
}

static void *run_waiter(void *arg)
{
    lt_waiter *w = arg;

    w->rc = rlock_trylock(w->l, w->wait_ms, w->lease_ms);
    w->got_at_ms = rt_now_ms();
    if (w->rc == RLOCK_OK)
        rlock_unlock(w->l);
    return NULL;
}

void lt_waiter_start(lt_waiter *w)
{
    assert_int_equal(pthread_create(&w->thread, NULL, run_waiter, w), 0);
}

void lt_waiter_join(lt_waiter *w)
{
    pthread_join(w->thread, NULL);
}

void lt_add_lost_hold(rt_redis *r, const char *name, const char *field)
{
    assert_int_equal(rt_cmd_int(r, "HINCRBY %s %s 1", name, field), 2);
}

void lt_loop_beside_waiter(rlock *l, lt_waiter *w, int64_t loop_ms,
                           int64_t hold_ms, int64_t gap_ms, int64_t lease_ms)
{
    int64_t start = rt_now_ms();
    lt_waiter_start(w);
    rt_sleep_ms(hold_ms);
    while (rt_now_ms() - start < loop_ms) {
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        if (gap_ms > 0)
            rt_sleep_ms(gap_ms);
        assert_int_equal(rlock_trylock(l, RLOCK_WAIT_FOREVER, lease_ms),
                         RLOCK_OK);
        rt_sleep_ms(hold_ms);
    }
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    lt_waiter_join(w);
    print_message("waiter returned %d after %lld ms\n", w->rc,
                  (long long)(w->got_at_ms - start));
}

void lt_waiter_assert_woken(const lt_waiter *w, int64_t since_ms,
                            const char *what, int64_t within_ms)
{
    assert_int_equal(w->rc, RLOCK_OK);
    print_message("waiter woke %lld ms after the %s\n",
                  (long long)(w->got_at_ms - since_ms), what);
    assert_true(w->got_at_ms - since_ms < within_ms);
}

void lt_handover_hold(lt_handover *h, rlock_client *holder,
                      rlock_client *waiter, const char *name,
                      int64_t wait_ms, int64_t lease_ms)
{
    *h = (lt_handover){
        .waiter = {.wait_ms = wait_ms, .lease_ms = lease_ms},
    };
    assert_int_equal(rlock_get(holder, name, &h->held), RLOCK_OK);
    assert_int_equal(rlock_get(waiter, name, &h->waiter.l), RLOCK_OK);
    assert_int_equal(rlock_lock(h->held), RLOCK_OK);
    lt_waiter_start(&h->waiter);
}

void lt_handover_unlock(lt_handover *h, int64_t within_ms)
{
    int64_t released = rt_now_ms();

    assert_int_equal(rlock_unlock(h->held), RLOCK_OK);
    lt_waiter_join(&h->waiter);
    lt_waiter_assert_woken(&h->waiter, released, "unlock", within_ms);
    rlock_free(h->waiter.l);
    rlock_free(h->held);
}

void lt_lock_on_every_master(rt_cluster *c, rlock_client *client,
                             const char *prefix)
{
    for (int m = 0; m < RT_CLUSTER_MASTERS; m++) {
        char name[64];
        rlock *l = NULL;
        int owner = rt_cluster_owner(c, m * 5461 + 1);

        assert_true(owner >= 0);
        assert_int_equal(
            rt_cluster_name_on(c, owner, prefix, name, sizeof(name)), 0);
        assert_int_equal(rlock_get(client, name, &l), RLOCK_OK);
        assert_int_equal(rlock_lock(l), RLOCK_OK);
        assert_int_equal(rt_cmd_int(&c->node[owner], "EXISTS %s", name), 1);
        assert_int_equal(rlock_unlock(l), RLOCK_OK);
        assert_int_equal(rt_cmd_int(&c->node[owner], "EXISTS %s", name), 0);
        rlock_free(l);
    }
}

/* ------------------------------------------------------------ loopers */

static void *looper_main(void *p)
{
    lt_looper *k = p;
    while (!atomic_load(&k->stop)) {
        int rc = rlock_lock(k->l);
        if (rc != RLOCK_OK) {
            if (k->errors++ == 0)
                k->first_rc = rc;
            return NULL;
        }
        long long none = 0;
        atomic_compare_exchange_strong(&k->first_ms, &none,
                                       (long long)rt_now_ms());
        atomic_fetch_add(k->taken, 1);
        rt_sleep_ms(k->hold_ms);
        rc = rlock_unlock(k->l);
        if (rc != RLOCK_OK && k->errors++ == 0)
            k->first_rc = rc;
    }
    return NULL;
}

void lt_looper_start(lt_looper *k)
{
    k->c = lt_connect(k->url, k->set, k->arg);
    k->l = lt_get_lock(k->c, k->name);
    atomic_init(&k->stop, 0);
    atomic_init(&k->first_ms, 0);
    k->errors = 0;
    k->first_rc = 0;
    assert_int_equal(pthread_create(&k->thread, NULL, looper_main, k), 0);
}

void lt_looper_stop(lt_looper *k)
{
    atomic_store(&k->stop, 1);
    assert_int_equal(pthread_join(k->thread, NULL), 0);
    rlock_free(k->l);
    rlock_client_free(k->c);
    if (k->errors != 0)
        print_message("looper: %d errors, the first %s\n", k->errors,
                      rlock_err_name(k->first_rc));
    assert_int_equal(k->errors, 0);
}
