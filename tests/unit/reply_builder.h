/*
 * reply_builder.h: hiredis reply trees made by hand for proto's unit tests,
 * so that a decoder is tested without a server or hiredis's reader.
 *
 * Each constructor returns a new node; rb_arr() takes ownership of the
 * elements it is given, and rb_free() frees a whole tree. Out of memory
 * aborts: these are tests.
 */
#ifndef RLOCK_TEST_REPLY_BUILDER_H
#define RLOCK_TEST_REPLY_BUILDER_H

#include <stddef.h>

#include <hiredis/hiredis.h>

redisReply *rb_int(long long v);
redisReply *rb_nil(void);
/* A text reply: REDIS_REPLY_STRING, _STATUS or _ERROR; len bytes of s. */
redisReply *rb_text(int type, const char *s, size_t len);
/* rb_text() of a NUL-terminated s: a bulk string, a status, an error. */
redisReply *rb_str(const char *s);
redisReply *rb_status(const char *s);
redisReply *rb_err(const char *s);
/* An array of the n replies that follow, owned by it from now on. */
redisReply *rb_arr(size_t n, ...);
void rb_free(redisReply *r);

#endif
