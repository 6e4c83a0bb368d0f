/*
 * store.h: the counters of the safety harness, on a Redis no fault touches.
 *
 * Each lock name N has a counter "safety:counter:N" that holders of N
 * read and then set to the value read plus one: with mutual exclusion no
 * increment is lost. The fenced kind goes through the fencing store
 * instead (fence_store.lua): a script that keeps the highest token seen
 * for the counter ("safety:fence:N") on every access, read or write, and
 * refuses an access whose token is lower, as a storage system guarding
 * itself with fencing tokens would.
 *
 * Thread-safety: one store_conn per thread (a hiredis context is not
 * shared).
 */
#ifndef RLOCK_SAFETY_STORE_H
#define RLOCK_SAFETY_STORE_H

#include <stdint.h>

typedef struct redisContext redisContext;

/* Where the store is: a plain redis://host[:port][/db] URI. */
typedef struct store_addr {
    char host[256];
    int port;
    int db;
} store_addr;

/* A connection, made on first use and again after it broke. */
typedef struct store_conn {
    const store_addr *addr;
    const char *fence_script; /* the Lua text; NULL for unfenced kinds */
    redisContext *ctx;
} store_conn;

/* What an access came to, as the history records it. */
typedef enum store_result {
    STORE_OK,      /* done; a read's value is set */
    STORE_REFUSED, /* definitely not done: the fencing store refused the
                      token (err "FENCED") or Redis answered an error
                      ("ESTORE") */
    STORE_UNKNOWN  /* the connection failed (err "EIO"), or the reply was
                      not what was expected ("ESTORE"): it may or may not
                      have run */
} store_result;

/* Parses uri into addr. Returns 0, or -1 when it is not a plain
 * redis://host[:port][/db]. */
int store_parse(const char *uri, store_addr *addr);

/* Reads counter key "safety:counter:<lock>" into *value (0 when absent).
 * With token > 0 the access goes through the fencing store. *err receives
 * a word for a result other than STORE_OK ("FENCED", "ESTORE", "EIO"). */
store_result store_read(store_conn *c, const char *lock, int64_t token,
                        int64_t *value, const char **err);

/* Sets the counter to value, as store_read() for token and err. */
store_result store_write(store_conn *c, const char *lock, int64_t token,
                         int64_t value, const char **err);

/* Closes the connection. */
void store_close(store_conn *c);

#endif /* RLOCK_SAFETY_STORE_H */
