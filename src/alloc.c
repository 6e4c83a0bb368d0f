/*
 * alloc.c: every allocation rlock makes goes through these wrappers, so
 * that a test can make the Nth one fail and check that each path copes
 * (STYLE.md 3.4): an RLOCK_ENOMEM, no crash, no leak. Memory is released
 * with plain free().
 *
 * The fault hook is the one piece of process-wide mutable state outside a
 * client, and only tests set it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Allocations left before they start failing; negative: never fail. */
static atomic_long rlock__alloc_budget = -1;

static bool fail_now(void)
{
    long left = atomic_load(&rlock__alloc_budget);
    while (left >= 0) {
        if (left == 0)
            return true;
        if (atomic_compare_exchange_weak(&rlock__alloc_budget, &left,
                                         left - 1))
            return false;
    }
    return false;
}

/* Test hook: the next n allocations succeed and every later one fails,
 * until called again with n < 0 (the default: never fail). */
void rlock__alloc_fail_after(long n)
{
    atomic_store(&rlock__alloc_budget, n);
}

void *rlock__malloc(size_t n)
{
    return fail_now() ? NULL : malloc(n);
}

void *rlock__calloc(size_t count, size_t n)
{
    return fail_now() ? NULL : calloc(count, n);
}

void *rlock__realloc(void *p, size_t n)
{
    return fail_now() ? NULL : realloc(p, n);
}

char *rlock__strdup(const char *s)
{
    return fail_now() ? NULL : strdup(s);
}
