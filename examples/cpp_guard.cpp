/*
 * cpp_guard.cpp: rlock from C++17 through <rlock.hpp>.
 *
 * Four worker threads move "units" between two accounts kept in this
 * process's memory, each transfer under two distributed locks taken at
 * once with std::scoped_lock (std::lock's deadlock avoidance works across
 * processes too: run several copies of this program against one Redis and
 * they exclude each other). A reporting step uses std::unique_lock with
 * try_lock_for, so it gives up instead of waiting forever, and an audit
 * writes with a fenced lock's token. A lock that turns out lost when its
 * guard unlocks is reported by the unlock error handler.
 *
 * Usage:
 *   cpp_guard [redis-url]          (redis://127.0.0.1:6379)
 * Exit status: 0, or 1 on an error (printed with its rlock code name).
 */
#include <rlock.hpp>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

/* Called by a guard's unlock() when the release failed: the only place
 * such a failure (a lost lock: errc::lost) can be seen, since destructors
 * do not throw. */
void report_unlock_failure(const char *name, std::error_code ec) noexcept
{
    std::fprintf(stderr, "cpp_guard: unlock of %s failed: %s\n", name,
                 ec.message().c_str());
}

long balance_a = 1000, balance_b = 1000; /* stand-ins for shared storage */

void worker(rlk::client &c, int id)
{
    /* Handles are cheap, and each thread may have its own. */
    rlk::reentrant_lock a = c.get_lock("cpp_guard:account:a");
    rlk::reentrant_lock b = c.get_lock("cpp_guard:account:b");
    for (int i = 0; i < 5; i++) {
        std::scoped_lock both(a, b); /* all or nothing */
        balance_a -= 10;
        balance_b += 10;
        std::printf("worker %d: moved 10 (a=%ld b=%ld)\n", id, balance_a,
                    balance_b);
    } /* unlocked here, in reverse order */
}

} // namespace

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    rlk::set_unlock_error_handler(report_unlock_failure);

    try {
        rlk::config cfg;
        cfg.watchdog_timeout(10s).client_name("cpp_guard");
        rlk::client c(url, cfg);

        std::vector<std::thread> threads;
        for (int id = 0; id < 4; id++)
            threads.emplace_back(worker, std::ref(c), id);
        for (std::thread &t : threads)
            t.join();

        /* A report that would rather be late than block: wait 500 ms at
         * most for account a. */
        rlk::reentrant_lock a = c.get_lock("cpp_guard:account:a");
        std::unique_lock<rlk::reentrant_lock> report(a, std::defer_lock);
        if (report.try_lock_for(500ms))
            std::printf("report: a=%ld b=%ld (sum %ld)\n", balance_a,
                        balance_b, balance_a + balance_b);
        else
            std::printf("report: account a busy, skipped\n");
        report.unlock();

        /* An audit record stamped with a fenced token: storage that has
         * seen a higher token refuses it. */
        rlk::fenced_lock audit = c.get_fenced_lock("cpp_guard:audit");
        std::int64_t token = audit.lock_fenced();
        std::printf("audit: written with token %lld\n",
                    static_cast<long long>(token));
        audit.unlock();

        /* The error_code form, for code that does not want exceptions. */
        std::error_code ec;
        audit.unlock(ec); /* not held any more */
        std::printf("second unlock: %s (%s)\n", ec.message().c_str(),
                    rlock_err_name(ec.value()));
    } catch (const std::system_error &e) {
        std::fprintf(stderr, "cpp_guard: %s [%s]\n", e.what(),
                     rlock_err_name(e.code().value()));
        return 1;
    }
    return 0;
}
