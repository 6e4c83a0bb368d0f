/*
 * reply_builder.c: see reply_builder.h. The trees have the shape hiredis's
 * reader gives them: str NUL-terminated after len bytes, element NULL for
 * an empty array.
 */
#include "reply_builder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *must(void *p)
{
    if (p == NULL) {
        fprintf(stderr, "reply_builder: out of memory\n");
        abort();
    }
    return p;
}

static redisReply *node(int type)
{
    redisReply *r = must(calloc(1, sizeof(*r)));

    r->type = type;
    return r;
}

redisReply *rb_int(long long v)
{
    redisReply *r = node(REDIS_REPLY_INTEGER);

    r->integer = v;
    return r;
}

redisReply *rb_nil(void)
{
    return node(REDIS_REPLY_NIL);
}

redisReply *rb_text(int type, const char *s, size_t len)
{
    redisReply *r = node(type);

    r->str = must(malloc(len + 1));
    memcpy(r->str, s, len);
    r->str[len] = '\0';
    r->len = len;
    return r;
}

redisReply *rb_str(const char *s)
{
    return rb_text(REDIS_REPLY_STRING, s, strlen(s));
}

redisReply *rb_status(const char *s)
{
    return rb_text(REDIS_REPLY_STATUS, s, strlen(s));
}

redisReply *rb_err(const char *s)
{
    return rb_text(REDIS_REPLY_ERROR, s, strlen(s));
}

redisReply *rb_arr(size_t n, ...)
{
    redisReply *r = node(REDIS_REPLY_ARRAY);
    va_list ap;

    r->elements = n;
    if (n > 0)
        r->element = must(calloc(n, sizeof(*r->element)));
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

void rb_free(redisReply *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        rb_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}
