/*
 * core/owner.c: who a lock belongs to. The client UUID, per-thread ids, random
 * request ids for the unlock latch, and the monotonic clock all timing uses.
 * Their text forms are proto's (proto/ids.c); this file supplies the
 * randomness, the counters and the clocks.
 *
 * Thread ids: Redisson uses Java's Thread.getId(), unique for the JVM's
 * lifetime. The kernel's TID is recycled, so a thread that exits and a new
 * one could look like the same owner and unlock each other's locks. Each
 * thread instead takes the next value of a process-wide counter on first
 * use. The counter is the one piece of global state in the library: ids must
 * be unique across every client of the process, as Java's are.
 *
 * In src/core, not proto: it holds the process's one counter and a
 * thread-local id, and reads the kernel's randomness and clocks.
 */
#include "core/core.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <errno.h>

static atomic_uint_fast64_t rlock__next_thread_id = 1;
static _Thread_local uint64_t rlock__my_thread_id;

/* Returns the calling thread's owner id, assigning one on first use. */
uint64_t rlock__thread_id(void)
{
    if (rlock__my_thread_id == 0)
        rlock__my_thread_id = atomic_fetch_add(&rlock__next_thread_id, 1);
    return rlock__my_thread_id;
}

uint64_t rlock_thread_id(void)
{
    return rlock__thread_id();
}

/* Async owners come from the thread ids' counter, so neither can ever
 * collide with the other. */
uint64_t rlock_owner_new(void)
{
    return atomic_fetch_add(&rlock__next_thread_id, 1);
}

/* Fills buf with len bytes from the kernel's CSPRNG; returns 0 or
 * RLOCK_EPROTO if the kernel cannot supply them. */
int rlock__random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return RLOCK_EPROTO;
        }
        p += n;
        len -= (size_t)n;
    }
    return RLOCK_OK;
}

/* Writes a random (version 4) UUID in Java's lowercase 8-4-4-4-12 form. */
int rlock__uuid4(char out[RLOCK__UUID_LEN + 1])
{
    unsigned char b[16];
    int rc = rlock__random_bytes(b, sizeof(b));
    if (rc != 0)
        return rc;
    rlock__uuid4_format(out, b);
    return RLOCK_OK;
}

/* Writes a fresh unlock request id: 32 lowercase hex digits. */
int rlock__request_id(char out[RLOCK__REQUEST_ID_LEN + 1])
{
    unsigned char b[RLOCK__REQUEST_ID_LEN / 2];
    int rc = rlock__random_bytes(b, sizeof(b));
    if (rc == 0)
        rlock__hex(out, b, sizeof(b));
    return rc;
}

/* Returns CLOCK_MONOTONIC in ms: every deadline in rlock uses it, never the
 * wall clock, so a clock step cannot stretch or cut a wait. */
int64_t rlock__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns the wall clock in ms since the epoch: only for the fair lock's
 * scripts, whose queue deadlines Redisson keeps in wall-clock time. */
int64_t rlock__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Converts a monotonic deadline in ms into a timespec for
 * pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable. */
void rlock__abs_timespec(int64_t deadline_ms, struct timespec *ts)
{
    ts->tv_sec = (time_t)(deadline_ms / 1000);
    ts->tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
}
