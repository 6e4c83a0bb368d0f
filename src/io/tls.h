/*
 * tls.h: TLS over a non-blocking socket the caller owns (OpenSSL).
 *
 * A context is built once from the settings and shared by every connection
 * of a client; after rlock__tls_ctx_new() returns it is only read, so any
 * thread may make connections from it. A connection is used by one thread
 * at a time (the one that owns its socket).
 *
 * Failures are RLOCK_ETLS with a message in err that starts with one of
 * these reasons, so a reader (and a test) can tell them apart:
 *   "wrong CA: "              the server's certificate chain does not lead
 *                             to a trusted CA
 *   "hostname mismatch: "     the certificate is not for the host (or the
 *                             configured server name / IP address)
 *   "certificate rejected: "  another verification failure (expired, ...)
 *   "client certificate required: " / "client certificate refused: "
 *                             the server wants (another) client certificate
 *   "handshake failed: "      any other TLS failure
 *   "file unreadable: "       a CA, certificate or key file (context only)
 *   "bad certificate or key: " a file that is not PEM, or a key that does
 *                             not match its certificate (context only)
 */
#ifndef RLOCK_IO_TLS_H
#define RLOCK_IO_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* How much of the server's certificate is checked. */
#define RLOCK__TLS_VERIFY_FULL 0    /* chain to a trusted CA and host name */
#define RLOCK__TLS_VERIFY_CA_ONLY 1 /* chain only: any name is accepted */
#define RLOCK__TLS_VERIFY_NONE 2    /* nothing: any server is accepted */

/* The settings a context is made from. Strings are borrowed for the call;
 * NULL means "not set". */
typedef struct rlock__tls_settings {
    const char *ca_file;     /* PEM bundle of trusted CAs */
    const char *ca_dir;      /* c_rehash'ed directory of trusted CAs */
    const char *cert_file;   /* client certificate (chain), PEM */
    const char *key_file;    /* its unencrypted private key, PEM */
    const char *server_name; /* checked and sent as SNI instead of the host */
    int verify;              /* RLOCK__TLS_VERIFY_* */
} rlock__tls_settings;

typedef struct rlock__tls_ctx rlock__tls_ctx;
typedef struct rlock__tls_conn rlock__tls_conn;

/* Makes a context: the CA file and/or directory (the system's store when
 * neither is set) and the client certificate and key (both or neither).
 * Returns 0, RLOCK_EINVAL (a certificate without a key or the reverse, a
 * bad verify value; err says which), RLOCK_ETLS (err: "file unreadable: "
 * or "bad certificate or key: ") or RLOCK_ENOMEM. err may be NULL. */
int rlock__tls_ctx_new(const rlock__tls_settings *s, rlock__tls_ctx **out,
                       char *err, size_t errlen);
void rlock__tls_ctx_free(rlock__tls_ctx *ctx);

/* Starts a client connection on fd (connected or connecting, non-blocking;
 * the caller keeps owning and closes it). host is what the URI named: the
 * certificate is checked against it (or the configured server name), as an
 * IP address for an IP literal; names are sent as SNI, IP literals are not.
 * Returns 0, RLOCK_EINVAL or RLOCK_ENOMEM. */
int rlock__tls_conn_new(rlock__tls_ctx *ctx, int fd, const char *host,
                        rlock__tls_conn **out);

/* Drives the handshake. Returns 0 once done, RLOCK__IO_WANT_READ or
 * RLOCK__IO_WANT_WRITE (call again when the socket is ready), or a negative
 * code: RLOCK_ETLS (err says why), RLOCK_ECONN (the socket failed or the
 * peer closed it). err may be NULL. */
int rlock__tls_handshake(rlock__tls_conn *t, char *err, size_t errlen);

/* Read and write after the handshake. Return 0 with *done set to the bytes
 * moved (a read of 0 bytes is the end of the stream; so is a peer that
 * closes without TLS's close_notify, as a killed server does),
 * RLOCK__IO_WANT_READ or RLOCK__IO_WANT_WRITE (nothing moved; call again
 * when the socket is ready: a read may want a write and the reverse), or
 * RLOCK_ETLS / RLOCK_ECONN (the reason is then in rlock__tls_conn_error()).
 * The count is an out-parameter so that 1 or 2 bytes are never read as a
 * WANT. After a WANT from write, call it again with the same bytes (the
 * buffer may move). Writes never raise SIGPIPE. */
int rlock__tls_read(rlock__tls_conn *t, void *buf, size_t len, size_t *done);
int rlock__tls_write(rlock__tls_conn *t, const void *buf, size_t len,
                     size_t *done);

/* The message of the connection's last failure ("" if none). Borrowed
 * until the next call on t. */
const char *rlock__tls_conn_error(const rlock__tls_conn *t);

/* True when t holds bytes it has taken from the socket and not yet handed
 * to a read (so the socket may look idle while a read would give data). */
bool rlock__tls_pending(const rlock__tls_conn *t);

/* Frees the connection without sending close_notify (Redis needs none);
 * the socket stays open. NULL is ignored. */
void rlock__tls_conn_free(rlock__tls_conn *t);

#endif /* RLOCK_IO_TLS_H */
