/*
 * test_config_connect.c: connecting with a Redisson JSON config file
 * (rlock_client_connect_config) and with the server settings of a config
 * (rlock_config_set_server, _credentials, _database, _client_name),
 * against a real redis-server that has a password (set with CONFIG SET,
 * as the harness only reports a server up while PING needs no AUTH).
 *
 * What is checked is what Redis sees: the lock lands in the configured
 * database with the configured watchdog lease, and every connection the
 * client keeps (command connections and the subscriber) carries the
 * configured name in CLIENT LIST.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define PASSWORD "c0nfig-pw"
#define LT_SUITE "config_connect"

typedef struct fixture {
    rt_redis redis;
    char dir[64];
    char path[128];
} fixture;

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    char *ok = NULL;

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/rlock-config-connect-XXXXXX");
    if (mkdtemp(f->dir) == NULL || rt_redis_start(&f->redis) != 0) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/redisson.json", f->dir);
    ok = rt_cmd_str(&f->redis, "CONFIG SET requirepass %s", PASSWORD);
    if (ok == NULL || strcmp(ok, "OK") != 0) {
        free(ok);
        rt_redis_stop(&f->redis);
        rmdir(f->dir);
        free(f);
        return -1;
    }
    free(ok);
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    rt_redis_stop(&f->redis);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Writes the config file from a printf format. */
static void write_config(fixture *f, const char *fmt, ...)
{
    va_list ap;
    FILE *out = fopen(f->path, "w");
    assert_non_null(out);
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    assert_int_equal(fclose(out), 0);
}

/* A connection of our own, authenticated, on database db. */
static redisContext *own_connection(fixture *f, int db)
{
    redisContext *ctx = redisConnect("127.0.0.1", f->redis.port);
    assert_non_null(ctx);
    assert_int_equal(ctx->err, 0);
    redisReply *r = redisCommand(ctx, "AUTH %s", PASSWORD);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(ctx, "SELECT %d", db);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    return ctx;
}

static long long int_reply(redisContext *ctx, const char *fmt, const char *a)
{
    redisReply *r = redisCommand(ctx, fmt, a);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Returns CLIENT LIST (malloc'd). */
static char *client_list(redisContext *ctx)
{
    redisReply *r = redisCommand(ctx, "CLIENT LIST");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char *text = strdup(r->str);
    freeReplyObject(r);
    return text;
}

/* Counts the CLIENT LIST lines holding every one of the given words
 * (NULL-terminated), skipping our own connection (id=<own_id>). */
static int count_lines(const char *list, long long own_id, ...)
{
    char own[40];
    int n = 0;
    snprintf(own, sizeof(own), "id=%lld ", own_id);
    for (const char *line = list; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, len);
        bool all = strncmp(copy, own, strlen(own)) != 0;
        va_list ap;
        va_start(ap, own_id);
        for (const char *w; all && (w = va_arg(ap, const char *)) != NULL;)
            all = strstr(copy, w) != NULL;
        va_end(ap);
        n += all;
        free(copy);
        line += len + (end ? 1 : 0);
    }
    return n;
}

/* A waiter on its own thread: trylock(wait) then unlock. */
typedef struct waiter {
    rlock *l;
    int rc;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    w->rc = rlock_trylock(w->l, 5000, RLOCK_LEASE_WATCHDOG);
    if (w->rc == 0)
        w->rc = rlock_unlock(w->l);
    return NULL;
}

/* ------------------------------------------------------------------ tests */

static void test_connect_config_file(void **state)
{
    fixture *f = *state;
    char name[128];
    rlock_client *c, *c2;

    LT_TEST_NAME(name);
    write_config(f,
                 "{\n"
                 "  \"singleServerConfig\": {\n"
                 "    \"address\": \"redis://127.0.0.1:%d\",\n"
                 "    \"password\": \"%s\",\n"
                 "    \"username\": null,\n"
                 "    \"database\": 3,\n"
                 "    \"clientName\": \"rlock-cfg-test\",\n"
                 "    \"timeout\": 2000,\n"
                 "    \"connectionPoolSize\": 2,\n"
                 "    \"subscriptionsPerConnection\": 5\n"
                 "  },\n"
                 "  \"lockWatchdogTimeout\": 6000,\n"
                 "  \"codec\": {\"class\": \"org.redisson.codec.Kryo5Codec\"}\n"
                 "}\n",
                 f->redis.port, PASSWORD);
    assert_int_equal(rlock_client_connect_config(&c, f->path), RLOCK_OK);
    assert_int_equal(rlock_client_connect_config(&c2, f->path), RLOCK_OK);
    rlock *l = lt_get_lock(c, name);
    rlock *l2 = lt_get_lock(c2, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);

    /* the lock is in database 3, with the file's watchdog lease */
    redisContext *db3 = own_connection(f, 3);
    redisContext *db0 = own_connection(f, 0);
    char field[128];
    lt_owner_field(field, sizeof(field), c);
    assert_int_equal(int_reply(db3, "EXISTS %s", name), 1);
    redisReply *r = redisCommand(db3, "HGET %s %s", name, field);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    long long pttl = int_reply(db3, "PTTL %s", name);
    assert_true(pttl > 4000 && pttl <= 6000);
    assert_int_equal(int_reply(db0, "EXISTS %s", name), 0);

    /* c2 waits, so its subscriber connection exists and is subscribed */
    waiter w = {.l = l2, .rc = -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
    long long own_id = int_reply(db3, "CLIENT %s", "ID");
    int subscribed = 0;
    for (int64_t end = rt_now_ms() + 3000; !subscribed && rt_now_ms() < end;
         rt_sleep_ms(20)) {
        char *list = client_list(db3);
        subscribed = count_lines(list, own_id, "name=rlock-cfg-test",
                                 " flags=P ", NULL); /* a subscriber */
        free(list);
    }
    assert_int_equal(subscribed, 1);

    /* every connection on database 3 but ours carries the name */
    char *list = client_list(db3);
    int on_db3 = count_lines(list, own_id, " db=3 ", NULL);
    int named =
        count_lines(list, own_id, " db=3 ", "name=rlock-cfg-test", NULL);
    free(list);
    assert_true(on_db3 >= 3); /* c's command, c2's command and subscriber */
    assert_int_equal(named, on_db3);

    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(w.rc, RLOCK_OK);
    redisFree(db3);
    redisFree(db0);
    rlock_free(l);
    rlock_free(l2);
    rlock_client_free(c);
    rlock_client_free(c2);
}

static void test_config_file_wrong_password(void **state)
{
    fixture *f = *state;
    rlock_client *c = (rlock_client *)&c;

    write_config(f,
                 "{\"singleServerConfig\": {\"address\": "
                 "\"redis://127.0.0.1:%d\", \"password\": \"wrong\"}}",
                 f->redis.port);
    assert_int_equal(rlock_client_connect_config(&c, f->path), RLOCK_EAUTH);
    assert_null(c);
    write_config(f,
                 "{\"singleServerConfig\": {\"address\": "
                 "\"redis://127.0.0.1:%d\"}}",
                 f->redis.port);
    assert_int_equal(rlock_client_connect_config(&c, f->path), RLOCK_EAUTH);
    assert_null(c);
}

/* The programmatic settings: credentials and database beat the URI's, the
 * config may be freed right after connecting (the client copied it). */
static void test_server_settings(void **state)
{
    fixture *f = *state;
    char name[128], uri[128];
    rlock_config *cfg;
    rlock_client *c;

    LT_TEST_NAME(name);
    snprintf(uri, sizeof(uri), "redis://:wrong@127.0.0.1:%d/5", f->redis.port);
    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_server(cfg, uri), 0);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, PASSWORD), 0);
    assert_int_equal(rlock_config_set_database(cfg, 2), 0);
    assert_int_equal(rlock_config_set_client_name(cfg, "prog-name"), 0);
    assert_int_equal(rlock_client_connect_with(&c, NULL, cfg), RLOCK_OK);
    rlock_config_free(cfg);

    rlock *l = lt_get_lock(c, name);
    assert_int_equal(rlock_lock(l), RLOCK_OK);
    redisContext *db2 = own_connection(f, 2);
    redisContext *db5 = own_connection(f, 5);
    assert_int_equal(int_reply(db2, "EXISTS %s", name), 1);
    assert_int_equal(int_reply(db5, "EXISTS %s", name), 0);
    long long own_id = int_reply(db2, "CLIENT %s", "ID");
    char *list = client_list(db2);
    assert_true(count_lines(list, own_id, "name=prog-name", " db=2 ", NULL) >=
                1);
    free(list);
    assert_int_equal(rlock_unlock(l), RLOCK_OK);
    redisFree(db2);
    redisFree(db5);
    rlock_free(l);
    rlock_client_free(c);
}

/* A URI passed to rlock_client_connect_with() beats the config's server. */
static void test_uri_argument_wins(void **state)
{
    fixture *f = *state;
    rlock_config *cfg;
    rlock_client *c;

    assert_int_equal(rlock_config_new(&cfg), 0);
    assert_int_equal(rlock_config_set_server(cfg, "redis://127.0.0.1:1"), 0);
    assert_int_equal(rlock_config_set_credentials(cfg, NULL, PASSWORD), 0);
    assert_int_equal(rlock_client_connect_with(&c, f->redis.url, cfg),
                     RLOCK_OK);
    rlock_client_free(c);
    /* and without it the config's (dead) server is used */
    assert_int_equal(rlock_client_connect_with(&c, NULL, cfg), RLOCK_ECONN);
    assert_null(c);
    rlock_config_free(cfg);
}

int main(void)
{
    rt_require_redis();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_config_file),
        cmocka_unit_test(test_config_file_wrong_password),
        cmocka_unit_test(test_server_settings),
        cmocka_unit_test(test_uri_argument_wins),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
