/*
 * test_rlock_hpp_noexcept.cpp: include/rlock.hpp built with
 * -fno-exceptions. The header must compile so, and its error_code
 * overloads, unlock() and the standard lock wrappers must work against a
 * real server. (The throwing members abort there; they are not called.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

#include <chrono>
#include <mutex>
#include <string>
#include <system_error>

#include "harness.h"
#include "rlock.hpp"

#if defined(__cpp_exceptions) || RLK_HAS_EXCEPTIONS
#error "this test must be built with -fno-exceptions"
#endif

using namespace std::chrono_literals;

static rt_redis redis;

#define NAME(suffix) (std::string("cpp-noexcept:") + __func__ + (suffix))

static int group_setup(void **)
{
    rt_require_redis();
    return rt_redis_start(&redis) == 0 ? 0 : -1;
}

static int group_teardown(void **)
{
    rt_redis_stop(&redis);
    return 0;
}

static void test_error_codes_without_exceptions(void **)
{
    std::error_code ec;
    rlk::config cfg(ec);
    assert_true(!(ec));
    cfg.connections(0, ec);
    assert_true(ec == rlk::errc::invalid_argument);
    cfg.watchdog_timeout(5000ms, ec);
    assert_true(!(ec));

    rlk::client a(redis.url, cfg, ec);
    assert_true(!(ec));
    rlk::client b(redis.url, ec);
    assert_true(!(ec));
    rlk::reentrant_lock la = a.get_lock(NAME(""), ec);
    assert_true(!(ec));
    rlk::reentrant_lock lb = b.get_lock(NAME(""), ec);
    assert_true(!(ec));

    {
        std::lock_guard<rlk::reentrant_lock> g(la); /* lock() succeeds: no abort */
        assert_false(lb.try_lock_for(100ms, ec));
        assert_true(!(ec));
    }
    assert_true(lb.try_lock(ec));
    lb.unlock(ec);
    assert_true(!(ec));

    rlk::clear_last_unlock_error();
    lb.unlock(); /* not held: recorded, never thrown */
    assert_true(rlk::last_unlock_error() == rlk::errc::not_owner);
    rlk::clear_last_unlock_error();

    rlk::fenced_lock f = a.get_fenced_lock(NAME("-fenced"), ec);
    assert_true(!(ec));
    int64_t t = f.lock_fenced(ec);
    assert_true(!(ec));
    assert_true(t >= 1);
    f.unlock(ec);
    assert_true(!(ec));

    rlk::read_write_lock rw = a.get_read_write_lock(NAME("-rw"), ec);
    assert_true(!(ec));
    rlk::lock_view w = rw.write();
    assert_true(w.try_lock_for(1s, ec));
    w.unlock(ec);
    assert_true(!(ec));

    rlk::multi_lock m({la, f, w}, ec); /* three names, two kinds */
    assert_true(!(ec));
    assert_true(m.try_lock_for(1s, ec));
    m.unlock(ec);
    assert_true(!(ec));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_codes_without_exceptions),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
