/*
 * rlock.hpp: the C++17 face of rlock, header-only over <rlock.h>.
 *
 * Everything here is inline code over the C API; the library itself is C
 * and nothing in it changes for C++ users. The reference for what each call
 * does on Redis, its error codes and its Redisson equivalent is rlock.h;
 * this header documents only what the C++ layer adds. docs/cpp.md is the
 * guide.
 *
 * Namespace rlk: "rlock" is already taken in the global namespace by the
 * C handle type (typedef struct rlock rlock), and C++ forbids a namespace
 * and a type of one name in one scope.
 *
 * Types (all move-only RAII owners, except the *_view ones):
 *   rlk::config          rlock_config
 *   rlk::client          rlock_client
 *   rlk::lock            rlock_get()        Lockable + TimedLockable
 *   rlk::fair_lock       rlock_fair_get()   same, plus nothing new
 *   rlk::spin_lock       rlock_spin_get()   same, plus set_backoff()
 *   rlk::nonreentrant_lock rlock_nonreentrant_get(), _fair_get(): same;
 *                        a holder's second lock() is errc::reentered
 *   rlk::fenced_lock     rlock_fenced_get() same, plus lock_fenced()...
 *   rlk::read_write_lock rlock_rw_get(): read() and write() are lock_views
 *   rlk::multi_lock      rlock_multi_new() / rlock_redlock_new()
 *   rlk::lock_view       a borrowed rlock handle with every lock operation
 * so std::lock_guard, std::unique_lock (try_lock_for, try_lock_until) and
 * std::scoped_lock work with every kind of lock.
 *
 * Errors: a std::error_code in rlk::rlock_category() (name "rlock") whose
 * value is the RLOCK_E* code (negative) and whose message() is
 * rlock_strerror(). rlk::errc names the codes; they compare equal to the
 * nearest std::errc (timed_out, invalid_argument, ...).
 * Every call that can fail comes in two forms:
 *   - throwing: std::system_error carrying that code. Built without
 *     exceptions (-fno-exceptions, no __cpp_exceptions), these print the
 *     error to stderr and call std::abort(), as libstdc++'s std::mutex does;
 *   - non-throwing: an overload with a trailing std::error_code& (cleared on
 *     success), noexcept, available in every build.
 * unlock() is the exception: it is noexcept because std::lock_guard and
 * std::unique_lock call it from their destructors. A failed unlock()
 * (RLOCK_ELOST: the lock was gone before the unlock, RLOCK_ENOTOWNER,
 * RLOCK_ECONN, ...) is recorded in rlk::last_unlock_error() (per thread)
 * and passed to the handler set with rlk::set_unlock_error_handler().
 * unlock(std::error_code&) and checked_unlock() report it to the caller.
 *
 * Ownership: a lock object owns its C handle and frees it (rlock_free()),
 * which never unlocks. A lock may outlive its client: it then answers
 * RLOCK_ECLOSED (see rlock_client_free()). read_write_lock's sides and a
 * multi_lock's members are borrowed: they must outlive their use.
 * Async callables are owned by rlock from a successful submit until their
 * one call, and destroyed right after it (on the thread that ran it).
 *
 * Thread-safety: as the C API. A lock object may be used by many threads
 * at once (the owner of a hold is the calling thread); moving or destroying
 * one must not race with its use. A client is used from any thread; its
 * destruction follows rlock_client_free()'s rules.
 */
#ifndef RLOCK_HPP
#define RLOCK_HPP

#include <rlock.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define RLK_HAS_EXCEPTIONS 1
#else
#define RLK_HAS_EXCEPTIONS 0
#endif

namespace rlk {

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* The RLOCK_E* codes, by name. */
enum class errc : int {
    invalid_argument = RLOCK_EINVAL,
    out_of_memory = RLOCK_ENOMEM,
    connection = RLOCK_ECONN,
    timed_out = RLOCK_ETIMEDOUT,
    not_owner = RLOCK_ENOTOWNER,
    lost = RLOCK_ELOST,
    protocol = RLOCK_EPROTO,
    auth = RLOCK_EAUTH,
    deadlock = RLOCK_EDEADLK,
    closed = RLOCK_ECLOSED,
    forked = RLOCK_EFORKED,
    server = RLOCK_ESERVER,
    canceled = RLOCK_ECANCELED,
    not_supported = RLOCK_ENOTSUP,
    not_notified = RLOCK_ENOTIFY,
    tls = RLOCK_ETLS,
    reentered = RLOCK_EREENTRY,
};

namespace detail {

class category_impl final : public std::error_category {
public:
    const char *name() const noexcept override { return "rlock"; }

    std::string message(int code) const override
    {
        return rlock_strerror(code);
    }

    /* The portable condition nearest to each code, so that callers can
     * test ec == std::errc::timed_out without knowing rlock's codes. */
    std::error_condition default_error_condition(int code) const
        noexcept override
    {
        switch (code) {
        case RLOCK_EINVAL: return std::errc::invalid_argument;
        case RLOCK_ENOMEM: return std::errc::not_enough_memory;
        case RLOCK_ECONN: return std::errc::not_connected;
        case RLOCK_ETIMEDOUT: return std::errc::timed_out;
        case RLOCK_ENOTOWNER: return std::errc::operation_not_permitted;
        case RLOCK_EDEADLK: return std::errc::resource_deadlock_would_occur;
        /* as std::unique_lock::lock() on a mutex it owns */
        case RLOCK_EREENTRY: return std::errc::resource_deadlock_would_occur;
        case RLOCK_ECANCELED: return std::errc::operation_canceled;
        case RLOCK_ENOTSUP: return std::errc::not_supported;
        case RLOCK_EAUTH: return std::errc::permission_denied;
        case RLOCK_EPROTO: return std::errc::protocol_error;
        default: return std::error_condition(code, *this);
        }
    }
};

} // namespace detail

/* The "rlock" error category: one object per program (an inline
 * function's static). Thread-safety: any thread. */
inline const std::error_category &rlock_category() noexcept
{
    static const detail::category_impl category;
    return category;
}

inline std::error_code make_error_code(errc e) noexcept
{
    return std::error_code(static_cast<int>(e), rlock_category());
}

/* An error_code for a C return value: cleared for rc >= 0. */
inline std::error_code make_error_code(int rc) noexcept
{
    if (rc >= 0)
        return std::error_code();
    return std::error_code(rc, rlock_category());
}

} // namespace rlk

namespace std {
template <> struct is_error_code_enum<rlk::errc> : true_type {};
} // namespace std

namespace rlk {

namespace detail {

/* Reports a failed call: throws std::system_error, or without exceptions
 * prints it and aborts. */
[[noreturn]] inline void raise(int rc, const char *what)
{
#if RLK_HAS_EXCEPTIONS
    throw std::system_error(make_error_code(rc), what);
#else
    std::fprintf(stderr, "rlock: %s: %s (%s)\n", what, rlock_strerror(rc),
                 rlock_err_name(rc));
    std::abort();
#endif
}

/* Throws (or aborts) when rc is an error; returns rc otherwise. */
inline int check(int rc, const char *what)
{
    if (rc < 0)
        raise(rc, what);
    return rc;
}

/* Stores rc into ec (cleared when rc >= 0); returns rc. */
inline int store(int rc, std::error_code &ec) noexcept
{
    ec = make_error_code(rc);
    return rc;
}

/* The longest wait or lease handed to C: 2^50 ms (35,000 years), the
 * lease's upper bound; longer durations are clamped to it. */
constexpr std::int64_t max_ms = std::int64_t(1) << 50;

/* A wait as rlock_trylock() takes it: rounded up to whole ms, 0 for a
 * duration <= 0 (one attempt). */
template <class Rep, class Period>
std::int64_t wait_ms(const std::chrono::duration<Rep, Period> &d) noexcept
{
    double ms = std::chrono::duration<double, std::milli>(d).count();
    if (!(ms > 0))
        return 0;
    if (ms >= static_cast<double>(max_ms))
        return max_ms;
    return static_cast<std::int64_t>(std::ceil(ms));
}

/* A lease: rounded up, at least 1 ms. */
template <class Rep, class Period>
std::int64_t lease_ms(const std::chrono::duration<Rep, Period> &d) noexcept
{
    std::int64_t ms = wait_ms(d);
    return ms < 1 ? 1 : ms;
}

} // namespace detail

/* ------------------------------------------------------------------------ */
/* unlock() failures                                                        */
/* ------------------------------------------------------------------------ */

/* Called by the noexcept unlock() of every lock type when the C unlock
 * fails (any negative code, RLOCK_ENOTIFY included), with the lock's name
 * (valid during the call only) and the code, on the thread that unlocked
 * (possibly inside a lock_guard's destructor, during stack unwinding). It
 * must not throw (it is noexcept). */
using unlock_error_handler = void (*)(const char *lock_name,
                                      std::error_code ec) noexcept;

namespace detail {
inline std::atomic<unlock_error_handler> &unlock_handler() noexcept
{
    static std::atomic<unlock_error_handler> handler{nullptr};
    return handler;
}
inline std::error_code &last_unlock_error_slot() noexcept
{
    static thread_local std::error_code last;
    return last;
}
} // namespace detail

/* Sets the process-wide unlock error handler (nullptr: none, the default)
 * and returns the previous one. Thread-safety: any thread; a call of the
 * old handler may still be running when this returns. */
inline unlock_error_handler
set_unlock_error_handler(unlock_error_handler h) noexcept
{
    return detail::unlock_handler().exchange(h);
}

/* The calling thread's last unlock() failure, kept until the next failure
 * or clear_last_unlock_error(); a successful unlock() leaves it alone, as
 * errno is left. */
inline std::error_code last_unlock_error() noexcept
{
    return detail::last_unlock_error_slot();
}

inline void clear_last_unlock_error() noexcept
{
    detail::last_unlock_error_slot().clear();
}

/* ------------------------------------------------------------------------ */
/* Config                                                                   */
/* ------------------------------------------------------------------------ */

/* rlock_config: built on one thread, copied by the client that connects
 * with it (so it may be destroyed right after). Setters that fail leave
 * the config unchanged. The throwing setters return *this for chaining. */
class config {
public:
    /* Redisson's defaults (rlock_config_new()). */
    config() { detail::check(rlock_config_new(&cfg_), "rlock_config_new"); }
    explicit config(std::error_code &ec) noexcept
    {
        detail::store(rlock_config_new(&cfg_), ec);
    }

    /* Reads a Redisson JSON config file (rlock_config_load_file()); the
     * thrown error's what() carries the file's message. */
    static config from_file(const std::string &path)
    {
        char err[256] = "";
        config c(nullptr);
        int rc = rlock_config_load_file(&c.cfg_, path.c_str(), err,
                                        sizeof(err));
        if (rc < 0)
            detail::raise(rc, err[0] ? err : "rlock_config_load_file");
        return c;
    }
    static config from_file(const std::string &path, std::error_code &ec,
                            std::string *message = nullptr) noexcept
    {
        char err[256] = "";
        config c(nullptr);
        detail::store(rlock_config_load_file(&c.cfg_, path.c_str(), err,
                                             sizeof(err)),
                      ec);
        if (message != nullptr && ec)
            try_assign(*message, err);
        return c;
    }

    config(config &&o) noexcept : cfg_(std::exchange(o.cfg_, nullptr)) {}
    config &operator=(config &&o) noexcept
    {
        if (this != &o) {
            rlock_config_free(cfg_);
            cfg_ = std::exchange(o.cfg_, nullptr);
        }
        return *this;
    }
    config(const config &) = delete;
    config &operator=(const config &) = delete;
    ~config() { rlock_config_free(cfg_); }

    /* The C config (owned by *this), for the settings not wrapped here
     * (TLS, Sentinel, cluster, log hook). */
    rlock_config *native() const noexcept { return cfg_; }
    explicit operator bool() const noexcept { return cfg_ != nullptr; }

    using ms = std::chrono::milliseconds;

#define RLK_CONFIG_MS(fn)                                                     \
    config &fn(ms v) { return set(rlock_config_set_##fn(cfg_, v.count()),    \
                                  "rlock_config_set_" #fn); }                  \
    void fn(ms v, std::error_code &ec) noexcept                                \
    {                                                                          \
        detail::store(rlock_config_set_##fn(cfg_, v.count()), ec);             \
    }
#define RLK_CONFIG_INT(fn)                                                    \
    config &fn(int v) { return set(rlock_config_set_##fn(cfg_, v),           \
                                   "rlock_config_set_" #fn); }                 \
    void fn(int v, std::error_code &ec) noexcept                               \
    {                                                                          \
        detail::store(rlock_config_set_##fn(cfg_, v), ec);                     \
    }
#define RLK_CONFIG_STR(fn)                                                    \
    config &fn(const char *v) { return set(rlock_config_set_##fn(cfg_, v),   \
                                           "rlock_config_set_" #fn); }         \
    void fn(const char *v, std::error_code &ec) noexcept                       \
    {                                                                          \
        detail::store(rlock_config_set_##fn(cfg_, v), ec);                     \
    }

    /* As the rlock_config_set_* function of the same name. */
    RLK_CONFIG_MS(watchdog_timeout)
    RLK_CONFIG_MS(command_timeout)
    RLK_CONFIG_MS(connect_timeout)
    RLK_CONFIG_MS(retry_interval)
    RLK_CONFIG_MS(recheck_interval)
    RLK_CONFIG_MS(fair_wait_timeout)
    RLK_CONFIG_INT(retry_attempts)
    RLK_CONFIG_INT(connections)
    RLK_CONFIG_INT(database)
    RLK_CONFIG_INT(lock_barging)
    RLK_CONFIG_INT(lock_queue)
    RLK_CONFIG_INT(stats)
    RLK_CONFIG_STR(server)
    RLK_CONFIG_STR(client_name)

#undef RLK_CONFIG_MS
#undef RLK_CONFIG_INT
#undef RLK_CONFIG_STR

    /* user may be nullptr (no user). */
    config &credentials(const char *user, const char *password)
    {
        return set(rlock_config_set_credentials(cfg_, user, password),
                   "rlock_config_set_credentials");
    }
    void credentials(const char *user, const char *password,
                     std::error_code &ec) noexcept
    {
        detail::store(rlock_config_set_credentials(cfg_, user, password), ec);
    }

private:
    explicit config(std::nullptr_t) noexcept {}
    config &set(int rc, const char *what)
    {
        detail::check(rc, what);
        return *this;
    }
    static void try_assign(std::string &s, const char *text) noexcept
    {
#if RLK_HAS_EXCEPTIONS
        try {
            s = text;
        } catch (...) {
        }
#else
        s = text;
#endif
    }

    rlock_config *cfg_ = nullptr;
};

/* ------------------------------------------------------------------------ */
/* Locks                                                                    */
/* ------------------------------------------------------------------------ */

/* What a lost-lock callback is told (rlock_lost_cb's arguments). */
struct lost_event {
    const char *name; /* valid during the callback only */
    std::uint64_t owner;
    std::uint64_t hold;
    int reason; /* RLOCK_LOST_* */
};

/* A fresh async owner id (rlock_owner_new()). */
inline std::uint64_t owner_new() noexcept { return rlock_owner_new(); }

namespace detail {

/* The heap box that carries an async callable through the C callback.
 * Created by a submit, deleted by the trampoline right after the one call
 * (or by the submit itself when the C call refused the request, in which
 * case the callback never runs). */
template <class F> struct async_box {
    F fn;
    static void trampoline(rlock *, std::uint64_t, int status,
                           void *arg) noexcept
    {
        std::unique_ptr<async_box> box(static_cast<async_box *>(arg));
        /* An exception escaping here would cross C frames: noexcept makes
         * it std::terminate() instead. */
        box->fn(make_error_code(status));
    }
};

} // namespace detail

/* A borrowed rlock handle with every lock operation. Copyable; it does not
 * free the handle. Meets Lockable and TimedLockable: lock() blocks with the
 * watchdog lease, try_lock() makes one attempt, try_lock_for/until wait. */
class lock_view {
public:
    lock_view() noexcept = default;
    explicit lock_view(rlock *h) noexcept : h_(h) {}

    rlock *native() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }

    /* rlock_name(); "" for an empty view. */
    const char *name() const noexcept { return h_ ? rlock_name(h_) : ""; }
    /* RLOCK_KIND_*, or RLOCK_EINVAL for an empty view. */
    int kind() const noexcept { return rlock_kind(h_); }

    /* --- Lockable / TimedLockable ------------------------------------ */

    /* rlock_lock(): blocks until held; throws on error. */
    void lock() { detail::check(rlock_lock(h_), "rlock_lock"); }
    void lock(std::error_code &ec) noexcept
    {
        detail::store(rlock_lock(h_), ec);
    }

    /* One attempt, no wait: true when taken, false when held by another;
     * other errors throw. */
    bool try_lock() { return try_acquire(0, RLOCK_LEASE_WATCHDOG); }
    bool try_lock(std::error_code &ec) noexcept
    {
        return try_acquire(0, RLOCK_LEASE_WATCHDOG, ec);
    }

    /* Waits at most d (rounded up to ms; <= 0: one attempt). false on
     * timeout; the error_code form leaves ec clear on a timeout. */
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return try_acquire(detail::wait_ms(d), RLOCK_LEASE_WATCHDOG);
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d,
                      std::error_code &ec) noexcept
    {
        return try_acquire(detail::wait_ms(d), RLOCK_LEASE_WATCHDOG, ec);
    }

    /* With a fixed lease: held for lease at most, not renewed
     * (rlock_trylock(l, wait, lease)). */
    template <class R1, class P1, class R2, class P2>
    bool try_lock_for(const std::chrono::duration<R1, P1> &wait,
                      const std::chrono::duration<R2, P2> &lease)
    {
        return try_acquire(detail::wait_ms(wait), detail::lease_ms(lease));
    }
    template <class R1, class P1, class R2, class P2>
    bool try_lock_for(const std::chrono::duration<R1, P1> &wait,
                      const std::chrono::duration<R2, P2> &lease,
                      std::error_code &ec) noexcept
    {
        return try_acquire(detail::wait_ms(wait), detail::lease_ms(lease),
                           ec);
    }

    /* Waits until t (of any clock: the wait is t - Clock::now(), measured
     * once). */
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return try_lock_for(t - Clock::now());
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t,
                        std::error_code &ec) noexcept
    {
        return try_lock_for(t - Clock::now(), ec);
    }

    /* Releases one hold. noexcept (lock_guard's destructor calls it): a
     * failure goes to rlk::last_unlock_error() and the unlock error
     * handler, never out of here. */
    void unlock() noexcept
    {
        int rc = rlock_unlock(h_);
        if (rc < 0) {
            std::error_code ec = make_error_code(rc);
            detail::last_unlock_error_slot() = ec;
            if (unlock_error_handler h = detail::unlock_handler().load())
                h(name(), ec);
        }
    }
    /* Reports every outcome, RLOCK_ENOTIFY (released, waiters not told)
     * included; the handler is not called. */
    void unlock(std::error_code &ec) noexcept
    {
        detail::store(rlock_unlock(h_), ec);
    }
    /* Throws on failure, except RLOCK_ENOTIFY (the hold is released). */
    void checked_unlock()
    {
        int rc = rlock_unlock(h_);
        if (rc < 0 && rc != RLOCK_ENOTIFY)
            detail::raise(rc, "rlock_unlock");
    }

    /* --- Queries (rlock.h's of the same names) ------------------------ */

    void force_unlock()
    {
        int rc = rlock_force_unlock(h_);
        if (rc < 0 && rc != RLOCK_ENOTIFY)
            detail::raise(rc, "rlock_force_unlock");
    }
    void force_unlock(std::error_code &ec) noexcept
    {
        detail::store(rlock_force_unlock(h_), ec);
    }
    bool is_locked()
    {
        return detail::check(rlock_is_locked(h_), "rlock_is_locked") == 1;
    }
    bool is_locked(std::error_code &ec) noexcept
    {
        return detail::store(rlock_is_locked(h_), ec) == 1;
    }
    bool is_held_by_me()
    {
        return detail::check(rlock_is_held_by_me(h_),
                             "rlock_is_held_by_me") == 1;
    }
    bool is_held_by_me(std::error_code &ec) noexcept
    {
        return detail::store(rlock_is_held_by_me(h_), ec) == 1;
    }
    int hold_count()
    {
        return detail::check(rlock_hold_count(h_), "rlock_hold_count");
    }
    int hold_count(std::error_code &ec) noexcept
    {
        int rc = detail::store(rlock_hold_count(h_), ec);
        return rc < 0 ? 0 : rc;
    }
    /* The remaining lease; std::nullopt when not locked (-2) and
     * milliseconds::max() when the key has no expiry (-1). */
    std::optional<std::chrono::milliseconds> remaining_ttl()
    {
        std::int64_t v = rlock_remaining_ttl(h_);
        if (v < -100)
            detail::raise(static_cast<int>(v), "rlock_remaining_ttl");
        return ttl_of(v);
    }
    std::optional<std::chrono::milliseconds>
    remaining_ttl(std::error_code &ec) noexcept
    {
        std::int64_t v = rlock_remaining_ttl(h_);
        ec = v < -100 ? make_error_code(static_cast<int>(v))
                      : std::error_code();
        return v < -100 ? std::nullopt : ttl_of(v);
    }

    /* --- Async (rlock_lock_async() and friends) ----------------------- */

    /* Starts acquiring for owner; fn(std::error_code) runs exactly once,
     * on the attached libev loop or the client's I/O thread (where it must
     * not block and must not throw). fn is moved into a heap box that rlock
     * owns until the call; this lock must stay valid until then.
     * A refused submit throws (or sets ec) and fn is destroyed unrun. */
    template <class F>
    void lock_async(std::uint64_t owner, F &&fn)
    {
        submit_lock(owner, RLOCK_WAIT_FOREVER, RLOCK_LEASE_WATCHDOG,
                    std::forward<F>(fn), nullptr);
    }
    template <class F, class Rep, class Period>
    void lock_async(std::uint64_t owner,
                    const std::chrono::duration<Rep, Period> &wait, F &&fn)
    {
        submit_lock(owner, detail::wait_ms(wait), RLOCK_LEASE_WATCHDOG,
                    std::forward<F>(fn), nullptr);
    }
    template <class F, class Rep, class Period>
    void lock_async(std::uint64_t owner,
                    const std::chrono::duration<Rep, Period> &wait, F &&fn,
                    std::error_code &ec) noexcept
    {
        submit_lock(owner, detail::wait_ms(wait), RLOCK_LEASE_WATCHDOG,
                    std::forward<F>(fn), &ec);
    }
    template <class F> void unlock_async(std::uint64_t owner, F &&fn)
    {
        submit_unlock(owner, std::forward<F>(fn), nullptr);
    }
    template <class F>
    void unlock_async(std::uint64_t owner, F &&fn,
                      std::error_code &ec) noexcept
    {
        submit_unlock(owner, std::forward<F>(fn), &ec);
    }
    /* rlock_cancel(): pending acquires complete with errc::canceled. */
    void cancel(std::uint64_t owner)
    {
        detail::check(rlock_cancel(h_, owner), "rlock_cancel");
    }
    void cancel(std::uint64_t owner, std::error_code &ec) noexcept
    {
        detail::store(rlock_cancel(h_, owner), ec);
    }
    int owner_hold_count(std::uint64_t owner) const noexcept
    {
        return rlock_owner_hold_count(h_, owner);
    }

protected:
    bool try_acquire(std::int64_t wait, std::int64_t lease)
    {
        int rc = rlock_trylock(h_, wait, lease);
        if (rc == RLOCK_ETIMEDOUT)
            return false;
        detail::check(rc, "rlock_trylock");
        return true;
    }
    bool try_acquire(std::int64_t wait, std::int64_t lease,
                     std::error_code &ec) noexcept
    {
        int rc = rlock_trylock(h_, wait, lease);
        detail::store(rc == RLOCK_ETIMEDOUT ? 0 : rc, ec);
        return rc == 0;
    }

    rlock *h_ = nullptr;

private:
    static std::optional<std::chrono::milliseconds>
    ttl_of(std::int64_t v) noexcept
    {
        if (v == -2)
            return std::nullopt;
        if (v == -1)
            return std::chrono::milliseconds::max();
        return std::chrono::milliseconds(v);
    }

    template <class F>
    static void finish_submit(int rc, detail::async_box<F> *box,
                              const char *what, std::error_code *ec)
    {
        if (rc < 0)
            delete box; /* the C call refused it: the callback never runs */
        if (ec != nullptr)
            detail::store(rc, *ec);
        else if (rc < 0)
            detail::raise(rc, what);
    }

    template <class F>
    void submit_lock(std::uint64_t owner, std::int64_t wait,
                     std::int64_t lease, F &&fn, std::error_code *ec)
    {
        using box_t = detail::async_box<std::decay_t<F>>;
        static_assert(std::is_invocable_v<std::decay_t<F> &, std::error_code>,
                      "an async callable takes a std::error_code");
        box_t *box = new box_t{std::forward<F>(fn)};
        int rc = rlock_lock_async(h_, owner, wait, lease, &box_t::trampoline,
                                  box);
        finish_submit(rc, box, "rlock_lock_async", ec);
    }

    template <class F>
    void submit_unlock(std::uint64_t owner, F &&fn, std::error_code *ec)
    {
        using box_t = detail::async_box<std::decay_t<F>>;
        static_assert(std::is_invocable_v<std::decay_t<F> &, std::error_code>,
                      "an async callable takes a std::error_code");
        box_t *box = new box_t{std::forward<F>(fn)};
        int rc = rlock_unlock_async(h_, owner, &box_t::trampoline, box);
        finish_submit(rc, box, "rlock_unlock_async", ec);
    }
};

/* An owned rlock handle: rlock_free() on destruction (which does not
 * unlock). Move-only; a moved-from lock is empty. Made by client::get_lock()
 * (or the other getters), or adopted from a C handle. */
class reentrant_lock : public lock_view {
public:
    reentrant_lock() noexcept = default;
    /* Takes ownership of h. */
    explicit reentrant_lock(rlock *h) noexcept : lock_view(h) {}
    reentrant_lock(reentrant_lock &&o) noexcept
        : lock_view(std::exchange(o.h_, nullptr))
    {
    }
    reentrant_lock &operator=(reentrant_lock &&o) noexcept
    {
        if (this != &o) {
            rlock_free(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    reentrant_lock(const reentrant_lock &) = delete;
    reentrant_lock &operator=(const reentrant_lock &) = delete;
    ~reentrant_lock() { rlock_free(h_); }

    /* Gives up ownership: the caller frees the result with rlock_free(). */
    rlock *release() noexcept { return std::exchange(h_, nullptr); }
};

/* A fair lock (rlock_fair_get()): waiters are served in order. */
class fair_lock : public reentrant_lock {
    using reentrant_lock::reentrant_lock;
};

/* A non-reentrant lock (rlock_nonreentrant_get(), or the fair kind:
 * rlock_nonreentrant_fair_get()): its holder's lock() and try_lock*()
 * fail with errc::reentered (== std::errc::resource_deadlock_would_occur),
 * as std::unique_lock does on a mutex it owns. */
class nonreentrant_lock : public reentrant_lock {
    using reentrant_lock::reentrant_lock;
};

/* A spin lock (rlock_spin_get()): waits by backing off, not by pub/sub. */
class spin_lock : public reentrant_lock {
public:
    using reentrant_lock::reentrant_lock;
    /* rlock_spin_set_backoff(); not while another thread waits on it. */
    void set_backoff(std::chrono::milliseconds initial,
                     std::chrono::milliseconds max, int multiplier)
    {
        detail::check(rlock_spin_set_backoff(h_, initial.count(), max.count(),
                                             multiplier),
                      "rlock_spin_set_backoff");
    }
    void set_backoff(std::chrono::milliseconds initial,
                     std::chrono::milliseconds max, int multiplier,
                     std::error_code &ec) noexcept
    {
        detail::store(rlock_spin_set_backoff(h_, initial.count(), max.count(),
                                             multiplier),
                      ec);
    }
};

/* A fenced lock (rlock_fenced_get()). lock()/try_lock*() draw a token and
 * drop it (the Lockable calls have no place for it); lock_fenced() and
 * try_lock_fenced_for() return it. Tokens only grow, so a storage system
 * can refuse a write carrying a token older than one it has seen. */
class fenced_lock : public reentrant_lock {
public:
    using reentrant_lock::reentrant_lock;

    /* rlock_fenced_lock(): blocks; returns this acquisition's token. */
    std::int64_t lock_fenced()
    {
        std::int64_t token = 0;
        detail::check(rlock_fenced_lock(h_, &token), "rlock_fenced_lock");
        return token;
    }
    std::int64_t lock_fenced(std::error_code &ec) noexcept
    {
        std::int64_t token = 0;
        detail::store(rlock_fenced_lock(h_, &token), ec);
        return token;
    }

    /* rlock_fenced_trylock(): the token, or std::nullopt on timeout. */
    template <class Rep, class Period>
    std::optional<std::int64_t>
    try_lock_fenced_for(const std::chrono::duration<Rep, Period> &wait)
    {
        std::int64_t token = 0;
        int rc = rlock_fenced_trylock(h_, detail::wait_ms(wait),
                                      RLOCK_LEASE_WATCHDOG, &token);
        if (rc == RLOCK_ETIMEDOUT)
            return std::nullopt;
        detail::check(rc, "rlock_fenced_trylock");
        return token;
    }
    template <class Rep, class Period>
    std::optional<std::int64_t>
    try_lock_fenced_for(const std::chrono::duration<Rep, Period> &wait,
                        std::error_code &ec) noexcept
    {
        std::int64_t token = 0;
        int rc = rlock_fenced_trylock(h_, detail::wait_ms(wait),
                                      RLOCK_LEASE_WATCHDOG, &token);
        detail::store(rc == RLOCK_ETIMEDOUT ? 0 : rc, ec);
        if (rc != 0)
            return std::nullopt;
        return token;
    }

    /* rlock_fenced_token(): the last token drawn on the name by anyone
     * (0 when none yet). */
    std::int64_t last_token()
    {
        std::int64_t v = rlock_fenced_token(h_);
        if (v < 0)
            detail::raise(static_cast<int>(v), "rlock_fenced_token");
        return v;
    }
    std::int64_t last_token(std::error_code &ec) noexcept
    {
        std::int64_t v = rlock_fenced_token(h_);
        ec = v < 0 ? make_error_code(static_cast<int>(v)) : std::error_code();
        return v < 0 ? 0 : v;
    }
};

/* A read-write lock (rlock_rw_get()). read() and write() are views owned
 * by this object: valid until it is destroyed or moved from. */
class read_write_lock {
public:
    read_write_lock() noexcept = default;
    explicit read_write_lock(rlock_rw *rw) noexcept : rw_(rw) {}
    read_write_lock(read_write_lock &&o) noexcept
        : rw_(std::exchange(o.rw_, nullptr))
    {
    }
    read_write_lock &operator=(read_write_lock &&o) noexcept
    {
        if (this != &o) {
            rlock_rw_free(rw_);
            rw_ = std::exchange(o.rw_, nullptr);
        }
        return *this;
    }
    read_write_lock(const read_write_lock &) = delete;
    read_write_lock &operator=(const read_write_lock &) = delete;
    ~read_write_lock() { rlock_rw_free(rw_); }

    lock_view read() const noexcept
    {
        return lock_view(rw_ ? rlock_rw_read(rw_) : nullptr);
    }
    lock_view write() const noexcept
    {
        return lock_view(rw_ ? rlock_rw_write(rw_) : nullptr);
    }
    rlock_rw *native() const noexcept { return rw_; }
    explicit operator bool() const noexcept { return rw_ != nullptr; }

private:
    rlock_rw *rw_ = nullptr;
};

/* Several locks taken as one (rlock_multi_*): all of them, or for a
 * Redlock a majority. Lockable and TimedLockable. The member locks are
 * borrowed: they must outlive this object, and the thread holding it must
 * not lock or unlock them by hand. Used by one thread at a time. */
class multi_lock {
public:
    multi_lock() noexcept = default;

    /* rlock_multi_new() over the views' handles. */
    explicit multi_lock(const std::vector<lock_view> &locks)
    {
        detail::check(make(locks, false), "rlock_multi_new");
    }
    multi_lock(const std::vector<lock_view> &locks,
               std::error_code &ec) noexcept
    {
        detail::store(make(locks, false), ec);
    }
    /* rlock_redlock_new(): the same name on independent servers. */
    static multi_lock redlock(const std::vector<lock_view> &locks)
    {
        multi_lock m;
        detail::check(m.make(locks, true), "rlock_redlock_new");
        return m;
    }
    static multi_lock redlock(const std::vector<lock_view> &locks,
                              std::error_code &ec) noexcept
    {
        multi_lock m;
        detail::store(m.make(locks, true), ec);
        return m;
    }

    multi_lock(multi_lock &&o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
    multi_lock &operator=(multi_lock &&o) noexcept
    {
        if (this != &o) {
            rlock_multi_free(m_);
            m_ = std::exchange(o.m_, nullptr);
        }
        return *this;
    }
    multi_lock(const multi_lock &) = delete;
    multi_lock &operator=(const multi_lock &) = delete;
    ~multi_lock() { rlock_multi_free(m_); }

    rlock_multi *native() const noexcept { return m_; }
    explicit operator bool() const noexcept { return m_ != nullptr; }

    void lock()
    {
        detail::check(rlock_multi_lock(m_, &validity_), "rlock_multi_lock");
    }
    void lock(std::error_code &ec) noexcept
    {
        detail::store(rlock_multi_lock(m_, &validity_), ec);
    }
    bool try_lock() { return try_acquire(0); }
    bool try_lock(std::error_code &ec) noexcept { return try_acquire(0, ec); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return try_acquire(detail::wait_ms(d));
    }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d,
                      std::error_code &ec) noexcept
    {
        return try_acquire(detail::wait_ms(d), ec);
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        return try_lock_for(t - Clock::now());
    }
    /* How long the last acquisition may be counted on (its validity_ms). */
    std::chrono::milliseconds validity() const noexcept
    {
        return std::chrono::milliseconds(validity_);
    }

    /* As lock_view::unlock(): noexcept, failures to the handler. */
    void unlock() noexcept
    {
        int rc = rlock_multi_unlock(m_);
        if (rc < 0) {
            std::error_code ec = make_error_code(rc);
            detail::last_unlock_error_slot() = ec;
            if (unlock_error_handler h = detail::unlock_handler().load())
                h("(multi-lock)", ec);
        }
    }
    void unlock(std::error_code &ec) noexcept
    {
        detail::store(rlock_multi_unlock(m_), ec);
    }
    void checked_unlock()
    {
        int rc = rlock_multi_unlock(m_);
        if (rc < 0 && rc != RLOCK_ENOTIFY)
            detail::raise(rc, "rlock_multi_unlock");
    }

private:
    int make(const std::vector<lock_view> &locks, bool red) noexcept
    {
        std::vector<rlock *> h;
#if RLK_HAS_EXCEPTIONS
        try {
            h.reserve(locks.size());
        } catch (...) {
            return RLOCK_ENOMEM;
        }
#else
        h.reserve(locks.size());
#endif
        for (const lock_view &v : locks)
            h.push_back(v.native());
        return red ? rlock_redlock_new(h.data(), h.size(), &m_)
                   : rlock_multi_new(h.data(), h.size(), &m_);
    }
    bool try_acquire(std::int64_t wait)
    {
        int rc = rlock_multi_trylock(m_, wait, RLOCK_LEASE_WATCHDOG,
                                     &validity_);
        if (rc == RLOCK_ETIMEDOUT)
            return false;
        detail::check(rc, "rlock_multi_trylock");
        return true;
    }
    bool try_acquire(std::int64_t wait, std::error_code &ec) noexcept
    {
        int rc = rlock_multi_trylock(m_, wait, RLOCK_LEASE_WATCHDOG,
                                     &validity_);
        detail::store(rc == RLOCK_ETIMEDOUT ? 0 : rc, ec);
        return rc == 0;
    }

    rlock_multi *m_ = nullptr;
    std::int64_t validity_ = 0;
};

/* ------------------------------------------------------------------------ */
/* Client                                                                   */
/* ------------------------------------------------------------------------ */

/* rlock_client: connected on construction, freed (every hold released,
 * pending async calls ended with errc::closed) on destruction, which
 * follows rlock_client_free()'s rules: not from the client's own callbacks,
 * and no other thread using it meanwhile. Locks made from it may outlive it
 * (they answer errc::closed). Move-only. */
class client {
public:
    client() noexcept = default;

    /* rlock_client_connect() / rlock_client_connect_with(). */
    explicit client(const std::string &uri)
    {
        detail::check(rlock_client_connect(&c_, uri.c_str()),
                      "rlock_client_connect");
    }
    client(const std::string &uri, const config &cfg)
    {
        detail::check(rlock_client_connect_with(&c_, uri.c_str(),
                                                cfg.native()),
                      "rlock_client_connect_with");
    }
    client(const std::string &uri, std::error_code &ec) noexcept
    {
        detail::store(rlock_client_connect(&c_, uri.c_str()), ec);
    }
    client(const std::string &uri, const config &cfg,
           std::error_code &ec) noexcept
    {
        detail::store(rlock_client_connect_with(&c_, uri.c_str(),
                                                cfg.native()),
                      ec);
    }
    /* A config that names its server (config::server()). */
    explicit client(const config &cfg)
    {
        detail::check(rlock_client_connect_with(&c_, nullptr, cfg.native()),
                      "rlock_client_connect_with");
    }

    client(client &&o) noexcept
        : c_(std::exchange(o.c_, nullptr)), lost_(std::move(o.lost_))
    {
    }
    client &operator=(client &&o) noexcept
    {
        if (this != &o) {
            reset();
            c_ = std::exchange(o.c_, nullptr);
            lost_ = std::move(o.lost_);
        }
        return *this;
    }
    client(const client &) = delete;
    client &operator=(const client &) = delete;
    ~client() { reset(); }

    rlock_client *native() const noexcept { return c_; }
    explicit operator bool() const noexcept { return c_ != nullptr; }
    /* rlock_client_id(): borrowed until destruction. */
    const char *id() const noexcept { return c_ ? rlock_client_id(c_) : ""; }

    /* Lock getters (no Redis traffic). */
    reentrant_lock get_lock(const std::string &name)
    {
        return get<reentrant_lock>(rlock_get, name, "rlock_get");
    }
    reentrant_lock get_lock(const std::string &name, std::error_code &ec) noexcept
    {
        return get<reentrant_lock>(rlock_get, name, ec);
    }
    fair_lock get_fair_lock(const std::string &name)
    {
        return get<fair_lock>(rlock_fair_get, name, "rlock_fair_get");
    }
    fair_lock get_fair_lock(const std::string &name,
                            std::error_code &ec) noexcept
    {
        return get<fair_lock>(rlock_fair_get, name, ec);
    }
    fenced_lock get_fenced_lock(const std::string &name)
    {
        return get<fenced_lock>(rlock_fenced_get, name, "rlock_fenced_get");
    }
    fenced_lock get_fenced_lock(const std::string &name,
                                std::error_code &ec) noexcept
    {
        return get<fenced_lock>(rlock_fenced_get, name, ec);
    }
    nonreentrant_lock get_nonreentrant_lock(const std::string &name)
    {
        return get<nonreentrant_lock>(rlock_nonreentrant_get, name,
                                      "rlock_nonreentrant_get");
    }
    nonreentrant_lock get_nonreentrant_lock(const std::string &name,
                                            std::error_code &ec) noexcept
    {
        return get<nonreentrant_lock>(rlock_nonreentrant_get, name, ec);
    }
    nonreentrant_lock get_nonreentrant_fair_lock(const std::string &name)
    {
        return get<nonreentrant_lock>(rlock_nonreentrant_fair_get, name,
                                      "rlock_nonreentrant_fair_get");
    }
    nonreentrant_lock get_nonreentrant_fair_lock(const std::string &name,
                                                 std::error_code &ec) noexcept
    {
        return get<nonreentrant_lock>(rlock_nonreentrant_fair_get, name, ec);
    }
    spin_lock get_spin_lock(const std::string &name)
    {
        return get<spin_lock>(rlock_spin_get, name, "rlock_spin_get");
    }
    spin_lock get_spin_lock(const std::string &name,
                            std::error_code &ec) noexcept
    {
        return get<spin_lock>(rlock_spin_get, name, ec);
    }
    read_write_lock get_read_write_lock(const std::string &name)
    {
        rlock_rw *rw = nullptr;
        detail::check(rlock_rw_get(c_, name.c_str(), &rw), "rlock_rw_get");
        return read_write_lock(rw);
    }
    read_write_lock get_read_write_lock(const std::string &name,
                                        std::error_code &ec) noexcept
    {
        rlock_rw *rw = nullptr;
        detail::store(rlock_rw_get(c_, name.c_str(), &rw), ec);
        return read_write_lock(rw);
    }

    /* rlock_client_on_lost() with a callable, void(const lost_event&),
     * run on the client's notifier thread (it must not throw, nor destroy
     * the client). The client owns it; replacing it (or passing an empty
     * std::function) waits for a call of the old one in progress, then
     * destroys the old one. Not from inside the callback itself. */
    void on_lost(std::function<void(const lost_event &)> fn)
    {
        detail::check(set_on_lost(std::move(fn)), "rlock_client_on_lost");
    }
    void on_lost(std::function<void(const lost_event &)> fn,
                 std::error_code &ec) noexcept
    {
        detail::store(set_on_lost(std::move(fn)), ec);
    }

    /* rlock_client_attach_loop(): async completions run on loop (nullptr:
     * on the I/O thread). From the loop's thread; see rlock.h. */
    void attach_loop(struct ev_loop *loop)
    {
        detail::check(rlock_client_attach_loop(c_, loop),
                      "rlock_client_attach_loop");
    }
    void attach_loop(struct ev_loop *loop, std::error_code &ec) noexcept
    {
        detail::store(rlock_client_attach_loop(c_, loop), ec);
    }

    /* Frees the client now (as the destructor does); it becomes empty. */
    void reset() noexcept
    {
        rlock_client_free(std::exchange(c_, nullptr));
        lost_.reset(); /* after the free: no callback can run any more */
    }

private:
    using lost_fn = std::function<void(const lost_event &)>;

    static void lost_trampoline(const char *name, std::uint64_t owner,
                                std::uint64_t hold, int reason,
                                void *arg) noexcept
    {
        (*static_cast<lost_fn *>(arg))(lost_event{name, owner, hold, reason});
    }

    int set_on_lost(lost_fn fn) noexcept
    {
        std::unique_ptr<lost_fn> next;
        if (fn) {
#if RLK_HAS_EXCEPTIONS
            try {
                next.reset(new lost_fn(std::move(fn)));
            } catch (...) {
                return RLOCK_ENOMEM;
            }
#else
            next.reset(new lost_fn(std::move(fn)));
#endif
        }
        int rc = next ? rlock_client_on_lost(c_, &lost_trampoline, next.get())
                      : rlock_client_on_lost(c_, nullptr, nullptr);
        if (rc < 0)
            return rc;
        /* rlock_client_on_lost() is a barrier: the old one is done. */
        lost_ = std::move(next);
        return 0;
    }

    template <class L, class Getter>
    L get(Getter getter, const std::string &name, const char *what)
    {
        rlock *h = nullptr;
        detail::check(getter(c_, name.c_str(), &h), what);
        return L(h);
    }
    template <class L, class Getter>
    L get(Getter getter, const std::string &name,
          std::error_code &ec) noexcept
    {
        rlock *h = nullptr;
        detail::store(getter(c_, name.c_str(), &h), ec);
        return L(h);
    }

    rlock_client *c_ = nullptr;
    /* Heap-held so that its address, given to C, survives moves. */
    std::unique_ptr<lost_fn> lost_;
};

} // namespace rlk

#endif /* RLOCK_HPP */
