/*
 * test_write_lost_hold.c: a read-write lock's write holds that a lost
 * acquire left (its reply never came: its wait ran out with the reply
 * owed, or its connection died after the script ran). The writer's next
 * acquire re-enters such a hold and renews its lease, so it never expires;
 * the writer's last unlock, answered "still held", drops it, as a plain
 * lock's does (test_unlock_state.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "lock_testing.h"
#include "rlock.h"

#define LT_SUITE "write-lost-hold"

/* The writer's field in the lock hash: "<client uuid>:<thread id>:write". */
static void writer_field(char *buf, size_t n, rlock_client *c)
{
    char owner[96];
    lt_owner_field(owner, sizeof(owner), c);
    snprintf(buf, n, "%s:write", owner);
}

static void test_last_write_unlock_drops_a_lost_acquires_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[160];
    LT_TEST_NAME(name);
    writer_field(field, sizeof(field), f->client);
    rlock_rw *rw = NULL;
    assert_int_equal(rlock_rw_get(f->client, name, &rw), RLOCK_OK);

    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    /* free, not left held by a hold nobody will release */
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* A writer that also reads keeps its read hold when its lost write hold
 * goes: the lock is left in read mode, as Redisson's write unlock leaves
 * it. */
static void test_write_drop_keeps_the_writers_read_hold(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[160], reader[128];
    LT_TEST_NAME(name);
    writer_field(field, sizeof(field), f->client);
    lt_owner_field(reader, sizeof(reader), f->client);
    rlock_rw *rw = NULL;
    assert_int_equal(rlock_rw_get(f->client, name, &rw), RLOCK_OK);

    assert_int_equal(rlock_lock(rlock_rw_write(rw)), RLOCK_OK);
    assert_int_equal(rlock_lock(rlock_rw_read(rw)), RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    assert_int_equal(rlock_unlock(rlock_rw_write(rw)), RLOCK_OK);
    char *mode = rt_cmd_str(&f->redis, "HGET %s mode", name);
    assert_non_null(mode);
    assert_string_equal(mode, "read");
    free(mode);
    assert_int_equal(rt_cmd_int(&f->redis, "HEXISTS %s %s", name, field), 0);
    char *reads = rt_cmd_str(&f->redis, "HGET %s %s", name, reader);
    assert_non_null(reads);
    assert_string_equal(reads, "1");
    free(reads);
    assert_int_equal(rlock_unlock(rlock_rw_read(rw)), RLOCK_OK);
    assert_int_equal(rt_cmd_int(&f->redis, "EXISTS %s", name), 0);
    rlock_rw_free(rw);
}

/* The safety harness's case: a writer looping with a lost write hold kept
 * every reader of another thread out for as long as it looped. The
 * reader's budget ends well within the loop; with the writer away for
 * LOOP_GAP_MS between its holds, a hand-over takes milliseconds. */
#define LOOP_MS       3000
#define LOOP_WAIT_MS  2000 /* the reader's budget */
#define LOOP_HOLD_MS  5
#define LOOP_GAP_MS   5 /* the writer's work between its holds */
#define LOOP_LEASE_MS 10000 /* no hold expires during the test */

static void test_looping_writer_with_a_lost_hold_lets_a_reader_in(void **state)
{
    lt_fixture *f = *state;
    char name[128], field[160];
    LT_TEST_NAME(name);
    writer_field(field, sizeof(field), f->client);
    rlock_rw *rw = NULL, *other_rw = NULL;
    assert_int_equal(rlock_rw_get(f->client, name, &rw), RLOCK_OK);
    rlock *write = rlock_rw_write(rw);
    rlock_client *other = lt_connect(f->redis.url, NULL, 0);
    assert_int_equal(rlock_rw_get(other, name, &other_rw), RLOCK_OK);

    assert_int_equal(rlock_trylock(write, RLOCK_WAIT_FOREVER, LOOP_LEASE_MS),
                     RLOCK_OK);
    lt_add_lost_hold(&f->redis, name, field);
    lt_waiter w = {.l = rlock_rw_read(other_rw),
                   .wait_ms = LOOP_WAIT_MS,
                   .lease_ms = LOOP_LEASE_MS};
    lt_loop_beside_waiter(write, &w, LOOP_MS, LOOP_HOLD_MS, LOOP_GAP_MS,
                          LOOP_LEASE_MS);
    assert_int_equal(w.rc, RLOCK_OK);
    rlock_rw_free(other_rw);
    rlock_client_free(other);
    rlock_rw_free(rw);
}

int main(void)
{
    if (rt_require_redis() != 0)
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_write_unlock_drops_a_lost_acquires_hold),
        cmocka_unit_test(test_write_drop_keeps_the_writers_read_hold),
        cmocka_unit_test(
            test_looping_writer_with_a_lost_hold_lets_a_reader_in),
    };
    return cmocka_run_group_tests(tests, lt_group_setup, lt_group_teardown);
}
