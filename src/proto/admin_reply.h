/*
 * admin_reply.h: a Redis reply as a small tree the caller owns, the form
 * in which src/api/admin.h hands replies to the rlock tool.
 *
 * hiredis's redisReply is the transport's type, and only src/io may name
 * its functions; the tool sits above every layer, so it gets copies of
 * this plain shape instead (made by rlock__admin_reply_copy() in
 * reply.c, a pure function of the reader's tree). Everything a node
 * points to belongs to it: rlock_admin_reply_free() on the root frees the
 * whole tree.
 */
#ifndef RLOCK_PROTO_ADMIN_REPLY_H
#define RLOCK_PROTO_ADMIN_REPLY_H

#include <stddef.h>

typedef enum rlock_admin_reply_type {
    RLOCK_ADMIN_STRING = 1, /* a bulk string: str, len */
    RLOCK_ADMIN_ARRAY,      /* element[0 .. elements) */
    RLOCK_ADMIN_INTEGER,    /* integer */
    RLOCK_ADMIN_NIL,        /* a nil bulk string or array */
    RLOCK_ADMIN_STATUS,     /* a status reply ("OK"): str, len */
    RLOCK_ADMIN_ERROR,      /* an error reply ("ERR ..."): str, len */
} rlock_admin_reply_type;

typedef struct rlock_admin_reply {
    rlock_admin_reply_type type;
    long long integer;
    char *str;  /* NUL-terminated (it may hold NULs too: see len); NULL
                 * for ARRAY, INTEGER and NIL */
    size_t len; /* bytes in str, the NUL not counted */
    size_t elements;
    struct rlock_admin_reply **element; /* ARRAY only, else NULL */
} rlock_admin_reply;

#endif
