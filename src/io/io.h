/*
 * io.h: what the files of src/io share, and nothing above src/io includes.
 *
 * The byte stream: a connection's bytes pass through an rlock__stream, plain
 * (a non-blocking socket) or TLS (src/io/tls.c), both made in wire.c. Above the stream sits the "wire": one socket, its
 * stream, an output buffer and hiredis's redisReader, with the connect steps
 * and the AUTH/SELECT/CLIENT SETNAME handshake written once. The event-loop
 * link (link.c) and the blocking link (link_sync.c) both drive a wire; they
 * differ only in how they wait (libev watchers, or poll() on the caller's
 * thread).
 */
#ifndef RLOCK_IO_H
#define RLOCK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/link.h"

/* The operation cannot go on until the socket is readable or writable;
 * call it again then (positive, so never mistaken for an RLOCK_E* code). */
#define RLOCK__IO_WANT_READ 1
#define RLOCK__IO_WANT_WRITE 2

/* A byte stream over a connected socket. Every function is non-blocking.
 *   handshake: 0 done, RLOCK__IO_WANT_*, or a negative RLOCK_E* (err says
 *              why, NUL-terminated).
 *   read/write: 0 with *done bytes moved (a read of 0 bytes is EOF),
 *              RLOCK__IO_WANT_* (nothing moved), or a negative RLOCK_E*.
 * The byte count is an out-parameter so that a count of 1 or 2 can never be
 * read as a WANT_* value.
 *   close: frees the stream; the wire closes the socket after it.
 *   pending: true when a read would give bytes the socket no longer shows
 *            (a TLS record already read); a plain stream never has any. */
typedef struct rlock__stream rlock__stream;
struct rlock__stream {
    int (*handshake)(rlock__stream *s, char *err, size_t errlen);
    int (*read)(rlock__stream *s, void *buf, size_t len, size_t *done);
    int (*write)(rlock__stream *s, const void *buf, size_t len,
                 size_t *done);
    void (*close)(rlock__stream *s);
    /* true when the stream holds bytes already taken from the socket, so
     * that the socket's readiness does not tell whether a read has data */
    bool (*pending)(rlock__stream *s);
};

/* Where a wire is in its connect. */
enum {
    RLOCK__WIRE_TCP,    /* connect(2) in progress */
    RLOCK__WIRE_STREAM, /* the stream's handshake (TLS) in progress */
    RLOCK__WIRE_READY,  /* bytes can flow */
    RLOCK__WIRE_DEAD    /* closed, or failed */
};

/* One step of the Redis handshake; each answers one reply. */
enum {
    RLOCK__HELLO_AUTH,
    RLOCK__HELLO_SELECT,
    RLOCK__HELLO_NAME,
    RLOCK__HELLO_PING /* TLS with no other step: see wire.c */
};

struct redisReader;
struct redisReply;

typedef struct rlock__wire {
    int fd;
    int phase; /* RLOCK__WIRE_* */
    rlock__stream *stream;
    struct redisReader *reader;
    char *out; /* formatted commands not yet written */
    size_t out_len, out_off, out_cap;
    char *host; /* for TLS's name check and SNI */
    struct rlock__tls_ctx *tls;
    int read_wants; /* a read that returned WANT_WRITE (TLS) */
    bool heard;     /* the server has sent bytes past the TLS handshake */
    char err[160];  /* why the wire failed, for the caller's log */
} rlock__wire;

/* Opens the socket and starts a non-blocking connect to o->addr. Returns 0
 * (the stream is ready), RLOCK__IO_WANT_* (call rlock__wire_connect_step
 * when the socket is ready), or a negative code with w->err set. */
int rlock__wire_start(rlock__wire *w, const rlock__link_opts *o);

/* Continues the connect (TCP, then the stream's handshake). Same returns as
 * rlock__wire_start. */
int rlock__wire_connect_step(rlock__wire *w);

/* Formats one command behind what is buffered (redisFormatCommandArgv).
 * Returns 0 or RLOCK_ENOMEM. */
int rlock__wire_append(rlock__wire *w, int argc, const char **argv,
                       const size_t *lens);

/* Appends AUTH, SELECT and CLIENT SETNAME as o asks (over TLS, a PING
 * when none of them is asked), records their kinds in kinds[] (at least 3)
 * and returns how many, or RLOCK_ENOMEM. */
int rlock__wire_append_hello(rlock__wire *w, const rlock__link_opts *o,
                             int *kinds);

/* What a handshake reply means: 0, or RLOCK_EAUTH (AUTH or SELECT refused,
 * or NOAUTH/WRONGPASS anywhere), RLOCK_ESERVER (the name refused) or
 * RLOCK_EPROTO (not a status reply); a refused PING as
 * rlock__reply_error_code says. */
int rlock__wire_hello_result(int kind, const struct redisReply *r);

/* Writes what is buffered: 0 (all written), RLOCK__IO_WANT_*, or a negative
 * code (the wire is dead). */
int rlock__wire_flush(rlock__wire *w);

/* Reads once from the stream into the reader: 0 (bytes fed),
 * RLOCK__IO_WANT_* (nothing to read yet), or a negative code: RLOCK_ECONN
 * for EOF or an error. */
int rlock__wire_fill(rlock__wire *w);

/* True when the stream holds bytes the socket does not show: the next
 * rlock__wire_fill may give data though the socket is not readable. */
bool rlock__wire_pending(const rlock__wire *w);

/* Takes the next complete reply: 0 with *out set (NULL: none complete yet),
 * or RLOCK_EPROTO (the peer does not speak RESP). */
int rlock__wire_reply(rlock__wire *w, struct redisReply **out);

/* Closes the stream and the socket; safe to call twice. */
void rlock__wire_close(rlock__wire *w);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t rlock__io_now_ms(void);

#endif /* RLOCK_IO_H */
