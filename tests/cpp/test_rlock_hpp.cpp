/*
 * test_rlock_hpp.cpp: the C++ face (include/rlock.hpp) against a real
 * redis-server, built as C++17 with exceptions.
 *
 * What it shows: every lock kind works under std::lock_guard,
 * std::unique_lock (try_lock_for/try_lock_until timing out against another
 * client's hold) and std::scoped_lock; errors arrive as std::system_error
 * in the "rlock" category with the C code; the error_code overloads report
 * the same codes without throwing; unlock() never throws but records its
 * failure (a lock lost under its holder included); async calls take
 * lambdas, which are destroyed once their one call has run (or at once when
 * the submit is refused); the RAII types move and do not copy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>

#include "harness.h"
#include "rlock.hpp"

using namespace std::chrono_literals;
using std::chrono::steady_clock;

static rt_redis redis;

/* A lock name unique to the calling test. */
#define NAME(suffix) (std::string("cpp:") + __func__ + (suffix))

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

static long long elapsed_ms(steady_clock::time_point since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               steady_clock::now() - since)
        .count();
}

/* The unlock error handler's record (several tests install it). */
static std::atomic<int> handler_calls{0};
static std::atomic<int> handler_code{0};
static void record_unlock_error(const char *, std::error_code ec) noexcept
{
    handler_code = ec.value();
    handler_calls++;
}

/* -------------------------------------------------------------- types */

static_assert(!std::is_copy_constructible_v<rlk::reentrant_lock>);
static_assert(!std::is_copy_assignable_v<rlk::reentrant_lock>);
static_assert(std::is_nothrow_move_constructible_v<rlk::reentrant_lock>);
static_assert(std::is_nothrow_move_assignable_v<rlk::fenced_lock>);
static_assert(!std::is_copy_constructible_v<rlk::client>);
static_assert(std::is_nothrow_move_constructible_v<rlk::client>);
static_assert(!std::is_copy_constructible_v<rlk::config>);
static_assert(!std::is_copy_constructible_v<rlk::read_write_lock>);
static_assert(!std::is_copy_constructible_v<rlk::multi_lock>);
static_assert(std::is_copy_constructible_v<rlk::lock_view>);
static_assert(noexcept(std::declval<rlk::reentrant_lock &>().unlock()));
static_assert(noexcept(std::declval<rlk::multi_lock &>().unlock()));
static_assert(std::is_error_code_enum_v<rlk::errc>);

/* -------------------------------------------------------------- tests */

static void test_lock_guard_holds_for_its_scope(void **)
{
    rlk::client c(redis.url);
    rlk::reentrant_lock l = c.get_lock(NAME(""));
    {
        std::lock_guard<rlk::reentrant_lock> g(l);
        assert_true(l.is_held_by_me());
        assert_int_equal(l.hold_count(), 1);
        assert_true(l.remaining_ttl().has_value());
        {
            std::lock_guard<rlk::reentrant_lock> again(l); /* reentrant */
            assert_int_equal(l.hold_count(), 2);
        }
        assert_int_equal(l.hold_count(), 1);
    }
    assert_false(l.is_locked());
    assert_false(l.remaining_ttl().has_value());
    assert_int_equal(l.kind(), RLOCK_KIND_LOCK);
}

static void test_unique_lock_try_lock_for_times_out_on_another_hold(void **)
{
    rlk::client a(redis.url), b(redis.url);
    rlk::reentrant_lock la = a.get_lock(NAME("")), lb = b.get_lock(NAME(""));
    la.lock();

    std::unique_lock<rlk::reentrant_lock> u(lb, std::defer_lock);
    auto t0 = steady_clock::now();
    assert_false(u.try_lock_for(300ms));
    long long waited = elapsed_ms(t0);
    assert_true(waited >= 290);
    assert_true(waited < 3000);
    assert_false(u.owns_lock());

    t0 = steady_clock::now();
    assert_false(u.try_lock_until(steady_clock::now() + 200ms));
    assert_true(elapsed_ms(t0) >= 190);
    assert_false(u.try_lock()); /* one attempt */

    /* another thread is not the owner: its unlock is refused */
    std::error_code from_other;
    std::thread([&] { la.unlock(from_other); }).join();
    assert_true(from_other == rlk::errc::not_owner);
    la.unlock();
    assert_true(u.try_lock_for(5s));
    assert_true(u.owns_lock());
    assert_true(lb.is_held_by_me());
    u.unlock();
    assert_false(lb.is_locked());
}

static void test_scoped_lock_takes_two_locks_and_every_kind(void **)
{
    rlk::client c(redis.url), other(redis.url);
    rlk::reentrant_lock l1 = c.get_lock(NAME("-1"));
    rlk::fair_lock l2 = c.get_fair_lock(NAME("-2"));
    rlk::spin_lock l3 = c.get_spin_lock(NAME("-3"));
    rlk::read_write_lock rw = c.get_read_write_lock(NAME("-rw"));
    l3.set_backoff(1ms, 16ms, 2);
    rlk::lock_view w = rw.write();
    {
        std::scoped_lock both(l1, l2);
        assert_true(l1.is_held_by_me());
        assert_true(l2.is_held_by_me());
        assert_int_equal(l2.kind(), RLOCK_KIND_FAIR);
    }
    assert_false(l1.is_locked());
    assert_false(l2.is_locked());
    {
        std::scoped_lock all(l1, l2, l3, w);
        assert_true(l3.is_held_by_me());
        assert_true(w.is_held_by_me());
        /* another client cannot take any of them */
        rlk::spin_lock o3 = other.get_spin_lock(NAME("-3"));
        assert_false(o3.try_lock_for(50ms));
    }
    assert_false(l3.is_locked());
    assert_false(w.is_locked());

    /* a second scoped_lock while one of the locks is held elsewhere gives
     * back what it took while it waits (std::lock's protocol) */
    rlk::reentrant_lock o1 = other.get_lock(NAME("-1"));
    o1.lock();
    std::atomic<int> held_both{0};
    std::thread t([&] {
        std::scoped_lock both(l1, l2);
        held_both = l1.is_held_by_me() && l2.is_held_by_me() ? 1 : -1;
    });
    std::this_thread::sleep_for(200ms);
    assert_int_equal(held_both.load(), 0); /* still waiting for l1 */
    o1.unlock();
    t.join();
    assert_int_equal(held_both.load(), 1);
    assert_false(l1.is_locked());
    assert_false(l2.is_locked());
}

static void test_nonreentrant_lock_refuses_its_holder(void **)
{
    rlk::client c(redis.url);
    rlk::nonreentrant_lock l = c.get_nonreentrant_lock(NAME("-nr"));
    std::unique_lock<rlk::nonreentrant_lock> held(l);
    std::error_code ec;
    assert_false(l.try_lock(ec));
    assert_true(ec == rlk::errc::reentered);
    assert_true(ec == std::errc::resource_deadlock_would_occur);
    assert_int_equal(l.hold_count(), 1);
    assert_int_equal(l.kind(), RLOCK_KIND_NONREENTRANT);
}

static void test_exceptions_carry_the_rlock_code(void **)
{
    rlk::client c(redis.url);
    rlk::reentrant_lock l = c.get_lock(NAME(""));

    bool thrown = false;
    try {
        l.checked_unlock();
    } catch (const std::system_error &e) {
        thrown = true;
        assert_true(e.code() == rlk::errc::not_owner);
        assert_int_equal(e.code().value(), RLOCK_ENOTOWNER);
        assert_string_equal(e.code().category().name(), "rlock");
        assert_string_equal(e.code().message().c_str(),
                            rlock_strerror(RLOCK_ENOTOWNER));
        /* and the portable condition */
        assert_true(e.code() == std::errc::operation_not_permitted);
        assert_non_null(std::strstr(e.what(), "rlock_unlock"));
    }
    assert_true(thrown);

    thrown = false;
    try {
        rlk::client bad("nonsense://x");
    } catch (const std::system_error &e) {
        thrown = true;
        assert_true(e.code() == rlk::errc::invalid_argument);
        assert_true(e.code() == std::errc::invalid_argument);
    }
    assert_true(thrown);

    thrown = false;
    try {
        (void)c.get_lock("");
    } catch (const std::system_error &e) {
        thrown = true;
        assert_true(e.code() == rlk::errc::invalid_argument);
    }
    assert_true(thrown);

    thrown = false;
    try {
        rlk::config cfg;
        cfg.connections(0); /* out of range */
    } catch (const std::system_error &e) {
        thrown = true;
        assert_true(e.code() == rlk::errc::invalid_argument);
    }
    assert_true(thrown);

    /* every code has its name and message */
    assert_true(rlk::make_error_code(rlk::errc::timed_out) ==
                std::errc::timed_out);
    assert_true(!(rlk::make_error_code(0)));
    assert_string_equal(
        rlk::make_error_code(rlk::errc::lost).message().c_str(),
        rlock_strerror(RLOCK_ELOST));
}

static void test_unlock_never_throws_and_records_its_failure(void **)
{
    rlk::client c(redis.url);
    rlk::reentrant_lock l = c.get_lock(NAME(""));
    rlk::clear_last_unlock_error();
    handler_calls = 0;
    rlk::unlock_error_handler old =
        rlk::set_unlock_error_handler(record_unlock_error);
    assert_null(old);

    l.unlock(); /* not held: noexcept, recorded */
    assert_true(rlk::last_unlock_error() == rlk::errc::not_owner);
    assert_int_equal(handler_calls.load(), 1);
    assert_int_equal(handler_code.load(), RLOCK_ENOTOWNER);

    /* per thread: another thread's record is its own */
    std::thread([] { assert_true(!(rlk::last_unlock_error())); }).join();

    /* a success leaves the record alone, as errno */
    l.lock();
    l.unlock();
    assert_true(rlk::last_unlock_error() == rlk::errc::not_owner);
    assert_int_equal(handler_calls.load(), 1);
    rlk::clear_last_unlock_error();
    assert_true(!(rlk::last_unlock_error()));

    rlk::set_unlock_error_handler(nullptr);
}

static void test_a_lost_lock_reaches_the_guard_owner(void **)
{
    /* short watchdog, so that the loss is found within a few hundred ms */
    rlk::config cfg;
    cfg.watchdog_timeout(1000ms).recheck_interval(100ms);
    rlk::client c(redis.url, cfg), other(redis.url);
    std::promise<int> lost_reason;
    std::atomic<bool> lost_once{false};
    c.on_lost([&](const rlk::lost_event &e) {
        if (!lost_once.exchange(true))
            lost_reason.set_value(e.reason);
    });
    rlk::reentrant_lock l = c.get_lock(NAME(""));
    rlk::reentrant_lock lo = other.get_lock(NAME(""));
    rlk::clear_last_unlock_error();
    handler_calls = 0;
    rlk::set_unlock_error_handler(record_unlock_error);
    {
        std::lock_guard<rlk::reentrant_lock> g(l);
        lo.force_unlock(); /* behind the holder's back */
        auto f = lost_reason.get_future();
        assert_true(f.wait_for(10s) == std::future_status::ready);
        /* GONE when a renewal finds the key deleted; EXPIRED when the
         * renewals came too late to tell (a slow checker: valgrind) */
        int reason = f.get();
        assert_true(reason == RLOCK_LOST_GONE ||
                    reason == RLOCK_LOST_EXPIRED);
    } /* the guard's unlock finds it lost: no throw */
    assert_true(rlk::last_unlock_error() == rlk::errc::lost);
    assert_int_equal(handler_calls.load(), 1);
    rlk::set_unlock_error_handler(nullptr);
    c.on_lost(nullptr); /* barrier: the lambda is destroyed here */
    rlk::clear_last_unlock_error();
}

static void test_error_code_variants_do_not_throw(void **)
{
    std::error_code ec;
    rlk::client bad("nonsense://x", ec);
    assert_true(ec == rlk::errc::invalid_argument);
    assert_true(!(bad));

    rlk::client a(redis.url, ec);
    assert_true(!(ec));
    rlk::client b(redis.url, ec);
    assert_true(!(ec));
    rlk::reentrant_lock la = a.get_lock(NAME(""), ec);
    assert_true(!(ec));
    rlk::reentrant_lock lb = b.get_lock(NAME(""), ec);
    assert_true(!(ec));
    rlk::reentrant_lock none = a.get_lock("", ec);
    assert_true(ec == rlk::errc::invalid_argument);
    assert_true(!(none));

    la.lock(ec);
    assert_true(!(ec));
    assert_true(la.is_held_by_me(ec));
    assert_true(!(ec));
    assert_false(lb.try_lock(ec)); /* held: false, and no error */
    assert_true(!(ec));
    assert_false(lb.try_lock_for(100ms, ec));
    assert_true(!(ec));
    assert_false(lb.try_lock_until(steady_clock::now() + 50ms, ec));
    assert_true(!(ec));
    lb.unlock(ec);
    assert_true(ec == rlk::errc::not_owner);
    la.unlock(ec);
    assert_true(!(ec));
    la.unlock(ec);
    assert_true(ec == rlk::errc::not_owner);

    /* a fixed lease: the key expires by itself */
    assert_true(lb.try_lock_for(0ms, 200ms, ec));
    assert_true(!(ec));
    auto ttl = lb.remaining_ttl(ec);
    assert_true(!(ec));
    assert_true(ttl.has_value() && *ttl <= 200ms);
    std::this_thread::sleep_for(400ms);
    assert_false(lb.is_locked(ec));
    lb.unlock(ec);
    assert_true(ec == rlk::errc::lost || ec == rlk::errc::not_owner);

    /* a client that is gone: its locks answer closed */
    a.reset();
    la.lock(ec);
    assert_true(ec == rlk::errc::closed);
}

static void test_fenced_tokens_grow(void **)
{
    rlk::client c(redis.url), other(redis.url);
    rlk::fenced_lock f = c.get_fenced_lock(NAME(""));
    assert_int_equal(f.kind(), RLOCK_KIND_FENCED);
    assert_int_equal(f.last_token(), 0);

    int64_t t1 = f.lock_fenced();
    assert_true(t1 >= 1);
    assert_int_equal(f.last_token(), t1);
    f.unlock();

    std::optional<int64_t> t2 = f.try_lock_fenced_for(1s);
    assert_true(t2.has_value());
    assert_true(*t2 > t1);

    /* another client's attempt times out: nullopt, no throw */
    rlk::fenced_lock g = other.get_fenced_lock(NAME(""));
    assert_false(g.try_lock_fenced_for(50ms).has_value());
    f.unlock();

    {
        std::lock_guard<rlk::fenced_lock> guard(f); /* draws one too */
        assert_true(f.last_token() > *t2);
    }
    std::error_code ec;
    int64_t t4 = g.lock_fenced(ec);
    assert_true(!(ec));
    assert_true(t4 > *t2 + 1);
    assert_int_equal(f.last_token(ec), t4);
    assert_true(!(ec));
    g.unlock();
}

static void test_read_write_sides(void **)
{
    rlk::client a(redis.url), b(redis.url);
    rlk::read_write_lock ra = a.get_read_write_lock(NAME(""));
    rlk::read_write_lock rb = b.get_read_write_lock(NAME(""));
    assert_int_equal(ra.read().kind(), RLOCK_KIND_READ);
    assert_int_equal(ra.write().kind(), RLOCK_KIND_WRITE);
    {
        rlk::lock_view r = ra.read();
        std::lock_guard<rlk::lock_view> g(r);
        /* readers share */
        rlk::lock_view rbr = rb.read();
        std::unique_lock<rlk::lock_view> u(rbr, std::try_to_lock);
        assert_true(u.owns_lock());
        /* a writer waits */
        rlk::lock_view wb = rb.write();
        assert_false(wb.try_lock_for(100ms));
    }
    rlk::lock_view wb = rb.write();
    assert_true(wb.try_lock_for(2s));
    rlk::lock_view r = ra.read();
    assert_false(r.try_lock_for(50ms)); /* a writer holds it */
    wb.unlock();
    assert_true(r.try_lock());
    r.unlock();
}

static void test_multi_lock_is_lockable(void **)
{
    rlk::client c(redis.url), other(redis.url);
    rlk::reentrant_lock l1 = c.get_lock(NAME("-1"));
    rlk::fair_lock l2 = c.get_fair_lock(NAME("-2"));
    rlk::multi_lock m({l1, l2});
    {
        std::lock_guard<rlk::multi_lock> g(m);
        assert_true(l1.is_held_by_me());
        assert_true(l2.is_held_by_me());
        assert_true(m.validity() > 0ms);
    }
    assert_false(l1.is_locked());

    rlk::fair_lock of2 = other.get_fair_lock(NAME("-2"));
    of2.lock();
    std::unique_lock<rlk::multi_lock> u(m, std::defer_lock);
    assert_false(u.try_lock_for(200ms));
    assert_false(l1.is_locked()); /* all or none */
    of2.unlock();
    assert_true(u.try_lock_for(2s));
    u.unlock();

    /* a Redlock over one server: a majority of one */
    rlk::multi_lock red = rlk::multi_lock::redlock({l1});
    assert_true(red.try_lock());
    red.unlock();

    std::error_code ec;
    rlk::multi_lock empty({}, ec);
    assert_true(ec == rlk::errc::invalid_argument);
}

static void test_async_takes_a_lambda_and_frees_it(void **)
{
    rlk::client a(redis.url), b(redis.url);
    rlk::reentrant_lock la = a.get_lock(NAME("")), lb = b.get_lock(NAME(""));
    uint64_t owner = rlk::owner_new();

    auto witness = std::make_shared<int>(0); /* counts live copies */
    std::promise<std::error_code> locked;
    la.lock_async(owner, 2s,
                  [witness, &locked](std::error_code ec) {
                      ++*witness;
                      locked.set_value(ec);
                  });
    auto f = locked.get_future();
    assert_true(f.wait_for(5s) == std::future_status::ready);
    assert_true(!f.get());
    assert_int_equal(la.owner_hold_count(owner), 1);
    /* the callable ran once and is destroyed after its call */
    for (int i = 0; i < 100 && witness.use_count() > 1; i++)
        std::this_thread::sleep_for(10ms);
    assert_int_equal(witness.use_count(), 1);
    assert_int_equal(*witness, 1);

    /* a waiter that times out gets errc::timed_out */
    std::promise<std::error_code> timed;
    lb.lock_async(rlk::owner_new(), 100ms,
                  [&timed](std::error_code ec) { timed.set_value(ec); });
    auto ft = timed.get_future();
    assert_true(ft.wait_for(5s) == std::future_status::ready);
    assert_true(ft.get() == rlk::errc::timed_out);

    /* a move-only callable, and the unlock */
    std::promise<std::error_code> unlocked;
    auto fu = unlocked.get_future();
    la.unlock_async(owner, [p = std::move(unlocked)](std::error_code ec)
                        mutable { p.set_value(ec); });
    assert_true(fu.wait_for(5s) == std::future_status::ready);
    assert_true(!fu.get());
    assert_int_equal(la.owner_hold_count(owner), 0);

    /* a refused submit: thrown, and the callable destroyed unrun */
    bool thrown = false;
    try {
        la.lock_async(0, [witness](std::error_code) { ++*witness; });
    } catch (const std::system_error &e) {
        thrown = true;
        assert_true(e.code() == rlk::errc::invalid_argument);
    }
    assert_true(thrown);
    std::error_code ec;
    la.lock_async(0, 1s, [witness](std::error_code) { ++*witness; }, ec);
    assert_true(ec == rlk::errc::invalid_argument);
    assert_int_equal(witness.use_count(), 1);
    assert_int_equal(*witness, 1);

    /* pending at the client's end: completed with closed, then freed */
    lb.lock();
    std::promise<std::error_code> closed;
    auto fc = closed.get_future();
    la.lock_async(owner, [witness, p = std::move(closed)](
                             std::error_code e) mutable { p.set_value(e); });
    std::this_thread::sleep_for(50ms);
    a.reset();
    assert_true(fc.wait_for(5s) == std::future_status::ready);
    std::error_code last = fc.get();
    assert_true(last == rlk::errc::closed || last == rlk::errc::canceled);
    assert_int_equal(witness.use_count(), 1);
    lb.unlock();
}

static void test_moves_transfer_ownership(void **)
{
    rlk::client c1(redis.url);
    rlk::client c2 = std::move(c1);
    assert_true(!(c1));
    assert_true(static_cast<bool>(c2));
    assert_int_equal(std::strlen(c2.id()), 36);

    rlk::reentrant_lock a = c2.get_lock(NAME(""));
    rlock *raw = a.native();
    rlk::reentrant_lock b = std::move(a);
    assert_true(!(a));
    assert_true(b.native() == raw);
    b.lock();
    rlk::reentrant_lock d;
    d = std::move(b);
    assert_true(d.is_held_by_me());
    d.unlock();
    assert_string_equal(d.name(), NAME("").c_str());

    rlk::read_write_lock rw = c2.get_read_write_lock(NAME("-rw"));
    rlk::read_write_lock rw2 = std::move(rw);
    assert_true(!(rw));
    assert_true(!(rw.read()));
    {
        rlk::lock_view w = rw2.write(); /* a view: copying it is borrowing */
        rlk::lock_view w2 = w;
        std::lock_guard<rlk::lock_view> g(w2);
        assert_true(w.is_held_by_me());
    }

    /* adopt and release a C handle */
    rlock *h = d.release();
    assert_true(!(d));
    rlk::reentrant_lock adopted(h);
    assert_true(adopted.native() == h);

    /* a lock may outlive its client: it answers closed */
    rlk::reentrant_lock outlives = c2.get_lock(NAME("-outlives"));
    c2 = rlk::client();
    std::error_code ec;
    outlives.lock(ec);
    assert_true(ec == rlk::errc::closed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_guard_holds_for_its_scope),
        cmocka_unit_test(
            test_unique_lock_try_lock_for_times_out_on_another_hold),
        cmocka_unit_test(test_scoped_lock_takes_two_locks_and_every_kind),
        cmocka_unit_test(test_nonreentrant_lock_refuses_its_holder),
        cmocka_unit_test(test_exceptions_carry_the_rlock_code),
        cmocka_unit_test(test_unlock_never_throws_and_records_its_failure),
        cmocka_unit_test(test_a_lost_lock_reaches_the_guard_owner),
        cmocka_unit_test(test_error_code_variants_do_not_throw),
        cmocka_unit_test(test_fenced_tokens_grow),
        cmocka_unit_test(test_read_write_sides),
        cmocka_unit_test(test_multi_lock_is_lockable),
        cmocka_unit_test(test_async_takes_a_lambda_and_frees_it),
        cmocka_unit_test(test_moves_transfer_ownership),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
