/*
 * alloc.c: every allocation rlock makes goes through these wrappers, so
 * that a test can make the Nth one fail and check that each path copes
 * (STYLE.md 3.4): an RLOCK_ENOMEM, no crash, no leak. Memory is released
 * with plain free(). Nothing in the library calls malloc() and friends
 * directly; an allocation the hook cannot see is a failure path no test
 * can reach.
 *
 * The fault hook is the one piece of process-wide mutable state outside a
 * client, and only tests set it.
 */
#include "proto.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Allocations left before they start failing; negative: never fail. */
static atomic_long rlock__alloc_budget = -1;
/* When set, only allocations made in the function of that name count
 * against the budget and can fail. */
static _Atomic(const char *) rlock__alloc_where = NULL;
/* Allocations failed since the budget was last set. */
static atomic_long rlock__alloc_failed = 0;

static bool fail_now(const char *where)
{
    const char *only = atomic_load(&rlock__alloc_where);
    if (only != NULL && strcmp(only, where) != 0)
        return false;
    long left = atomic_load(&rlock__alloc_budget);
    while (left >= 0) {
        if (left == 0) {
            atomic_fetch_add(&rlock__alloc_failed, 1);
            return true;
        }
        if (atomic_compare_exchange_weak(&rlock__alloc_budget, &left,
                                         left - 1))
            return false;
    }
    return false;
}

/* Test hook: the next n allocations succeed and every later one fails,
 * until called again with n < 0 (the default: never fail). Resets the
 * count rlock__alloc_failures() returns. */
void rlock__alloc_fail_after(long n)
{
    atomic_store(&rlock__alloc_failed, 0);
    atomic_store(&rlock__alloc_budget, n);
}

/* Test hook: from now on only the allocations made in the function named
 * where (a string that outlives the setting) count and can fail; NULL
 * (the default) means every allocation. */
void rlock__alloc_fail_in(const char *where)
{
    atomic_store(&rlock__alloc_where, where);
}

/* Test hook: how many allocations failed since rlock__alloc_fail_after(). */
long rlock__alloc_failures(void)
{
    return atomic_load(&rlock__alloc_failed);
}

void *rlock__malloc_in(size_t n, const char *where)
{
    return fail_now(where) ? NULL : malloc(n);
}

void *rlock__calloc_in(size_t count, size_t n, const char *where)
{
    return fail_now(where) ? NULL : calloc(count, n);
}

void *rlock__realloc_in(void *p, size_t n, const char *where)
{
    return fail_now(where) ? NULL : realloc(p, n);
}

char *rlock__strdup_in(const char *s, const char *where)
{
    return fail_now(where) ? NULL : strdup(s);
}
