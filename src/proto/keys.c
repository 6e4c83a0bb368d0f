/*
 * keys.c: the Redis names Redisson derives from a lock name N.
 *
 * Redisson's rule (facts sheet 1.2): a derived name wraps N in braces, making
 * it a cluster hash tag that lands in N's slot, unless N already contains a
 * '{' anywhere, in which case N is used as it is. We copy that rule to the
 * letter, edge cases included ("a{b" gets no working hash tag), because a
 * peer computes the same names and must find ours.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returns a malloc'd "P:{N}" or "P:N" (when N has a '{'), or NULL. */
char *rlock__prefixed_name(const char *prefix, const char *name)
{
    bool tagged = strchr(name, '{') != NULL;
    size_t len = strlen(prefix) + strlen(name) + 4;
    char *out = rlock__malloc(len);
    if (out == NULL)
        return NULL;
    snprintf(out, len, tagged ? "%s:%s" : "%s:{%s}", prefix, name);
    return out;
}

/* Returns the malloc'd unlock channel of lock N, or NULL. */
char *rlock__channel_name(const char *name)
{
    return rlock__prefixed_name("redisson_lock__channel", name);
}

/* Returns the malloc'd unlock latch key of lock N for one unlock call. */
char *rlock__latch_name(const char *name, const char *request_id)
{
    char *prefix = rlock__prefixed_name("redisson_unlock_latch", name);
    if (prefix == NULL)
        return NULL;
    size_t len = strlen(prefix) + strlen(request_id) + 2;
    char *out = rlock__malloc(len);
    if (out != NULL)
        snprintf(out, len, "%s:%s", prefix, request_id);
    free(prefix);
    return out;
}

/* Returns the malloc'd "{N}" (or N when N has a '{'): Redisson's suffix
 * helper without a suffix, the "key prefix" of read-lock lease keys. */
char *rlock__key_prefix(const char *name)
{
    bool tagged = strchr(name, '{') != NULL;
    size_t len = strlen(name) + 3;
    char *out = rlock__malloc(len);
    if (out != NULL)
        snprintf(out, len, tagged ? "%s" : "{%s}", name);
    return out;
}
