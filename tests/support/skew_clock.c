/*
 * skew_clock.c: an LD_PRELOAD shim that moves one process's wall clock.
 *
 * Loaded into a single process (never the machine), it adds
 * RLOCK_TEST_CLOCK_SKEW_MS milliseconds (may be negative; unset or 0: no
 * change) to what CLOCK_REALTIME and CLOCK_REALTIME_COARSE read through
 * clock_gettime(), and to gettimeofday() and time(). Every other clock,
 * CLOCK_MONOTONIC above all, is left alone, so the process's deadlines
 * and timers run as before: only what it believes the date to be changes,
 * as on a host whose clock is off.
 *
 * The real functions are found with dlsym(RTLD_NEXT). In a process whose
 * sanitizer runtime is a shared library (gcc's libasan, libtsan) that
 * runtime must come first in LD_PRELOAD, before this shim; its
 * interceptors then call on into the shim. Built without sanitizer
 * flags: it holds no state but the skew and a pointer.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static _Atomic(clock_gettime_fn) real_clock_gettime;
static atomic_llong skew_ms;
static atomic_int ready;

/* Reads the skew and finds the real functions, once (a race between two
 * first callers only does the same work twice). */
static void init(void)
{
    if (atomic_load(&ready))
        return;
    const char *s = getenv("RLOCK_TEST_CLOCK_SKEW_MS");
    atomic_store(&skew_ms, s != NULL ? strtoll(s, NULL, 10) : 0);
    atomic_store(&real_clock_gettime,
                 (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime"));
    atomic_store(&ready, 1);
}

/* Adds ms to *ts, keeping tv_nsec in [0, 1e9). */
static void add_ms(struct timespec *ts, long long ms)
{
    long long ns = (long long)ts->tv_nsec + (ms % 1000) * 1000000LL;
    ts->tv_sec += (time_t)(ms / 1000);
    if (ns < 0) {
        ns += 1000000000LL;
        ts->tv_sec--;
    } else if (ns >= 1000000000LL) {
        ns -= 1000000000LL;
        ts->tv_sec++;
    }
    ts->tv_nsec = (long)ns;
}

/* The wall clock, skewed: CLOCK_REALTIME from the real clock_gettime. */
static int skewed_realtime(clockid_t id, struct timespec *ts)
{
    clock_gettime_fn real = atomic_load(&real_clock_gettime);
    if (real == NULL || real(id, ts) != 0)
        return -1;
    add_ms(ts, atomic_load(&skew_ms));
    return 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    init();
    if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)
        return skewed_realtime(id, ts);
    clock_gettime_fn real = atomic_load(&real_clock_gettime);
    return real != NULL ? real(id, ts) : -1;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz; /* obsolete: glibc only zeroes it */
    init();
    struct timespec ts;
    if (skewed_realtime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
    return 0;
}

time_t time(time_t *out)
{
    init();
    struct timespec ts;
    if (skewed_realtime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
