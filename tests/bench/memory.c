/*
 * memory.c: what the client process holds, for the scenarios that report
 * bytes per lock, per waiter or per name.
 *
 * The heap is glibc's own count (mallinfo2, every arena, small and mmap'ed
 * chunks), which sees rlock's allocations on every thread, the I/O
 * thread's included; the resident set (/proc/self/statm) also counts what
 * glibc keeps after a free, so it only grows.
 */
#include "bench.h"

#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

long long bench_heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
}

long long bench_rss_bytes(void)
{
    long long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%lld %lld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * sysconf(_SC_PAGESIZE);
}
