/*
 * tls.c: TLS on a non-blocking socket, with OpenSSL (see tls.h).
 *
 * The socket is the caller's: this file never connects, polls or closes.
 * It reports what the socket must become (readable, writable) and the
 * caller's loop waits for that, so the same code serves the I/O thread's
 * connections and the blocking callers' direct ones.
 *
 * Bytes go through a BIO of our own that calls send(MSG_NOSIGNAL) and recv:
 * OpenSSL's socket BIO uses write(2), and a server that went away would
 * then raise SIGPIPE on a user thread (direct connections run there).
 *
 * OpenSSL keeps its error queue per thread. Every call here clears it before
 * the operation and empties it after, so a failure is never explained by an
 * older one, whichever thread made it.
 */
#include "proto/proto.h"
#include "io/io.h"
#include "io/tls.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define TLS_ERR_LEN 256

struct rlock__tls_ctx {
    SSL_CTX *ssl_ctx;
    char *server_name; /* NULL: check the host each connection names */
    int verify;        /* RLOCK__TLS_VERIFY_* */
    bool has_cert;     /* a client certificate is configured */
};

struct rlock__tls_conn {
    SSL *ssl;
    int fd;
    int sys_errno; /* errno of the BIO's last failed send or recv */
    bool has_cert;
    char name[256]; /* what the certificate is checked against */
    char err[TLS_ERR_LEN];
};

/* Formats a message into buf (if any); returns code, for "return fail(...)". */
static int fail(int code, char *buf, size_t len, const char *fmt, ...)
    RLOCK__PRINTF(4, 5);
static int fail(int code, char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (buf == NULL || len == 0)
        return code;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return code;
}

/* Empties the thread's OpenSSL error queue; returns the first error of the
 * SSL library, else the first error of any, else 0. */
static unsigned long drain_errors(void)
{
    unsigned long first = 0, ssl = 0, code;
    while ((code = ERR_get_error()) != 0) {
        if (first == 0)
            first = code;
        if (ssl == 0 && ERR_GET_LIB(code) == ERR_LIB_SSL)
            ssl = code;
    }
    return ssl != 0 ? ssl : first;
}

/* The words OpenSSL has for code ("no reason given" if none). */
static const char *reason_text(unsigned long code)
{
    const char *r = code != 0 ? ERR_reason_error_string(code) : NULL;
    return r != NULL ? r : "no reason given";
}

/* ------------------------------------------------------------------------ */
/* A socket BIO that never raises SIGPIPE                                   */
/* ------------------------------------------------------------------------ */

static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *buf, int len)
{
    rlock__tls_conn *t = BIO_get_data(b);
    ssize_t n;
    BIO_clear_retry_flags(b);
    do
        n = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS)
            BIO_set_retry_write(b);
        else
            t->sys_errno = errno;
    }
    return (int)n;
}

static int nosig_read(BIO *b, char *buf, int len)
{
    rlock__tls_conn *t = BIO_get_data(b);
    ssize_t n;
    BIO_clear_retry_flags(b);
    do
        n = recv(t->fd, buf, (size_t)len, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
        else
            t->sys_errno = errno;
    }
    return (int)n;
}

/* Only FLUSH means anything to a socket; every other request is refused,
 * which OpenSSL takes as "not supported" (no kTLS, no peeking). */
static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int nosig_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void nosig_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "rlock socket");
    if (m == NULL)
        return;
    if (!BIO_meth_set_write(m, nosig_write) ||
        !BIO_meth_set_read(m, nosig_read) ||
        !BIO_meth_set_ctrl(m, nosig_ctrl) ||
        !BIO_meth_set_create(m, nosig_create)) {
        BIO_meth_free(m);
        return;
    }
    nosig_method = m;
}

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

/* Never asks a terminal for a key's pass phrase: an encrypted key fails to
 * load instead, with a message saying so. */
static int no_passphrase(char *buf, int size, int rwflag, void *arg)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)arg;
    return -1;
}

/* Returns 0 if path can be opened for reading, else RLOCK_ETLS with the
 * reason in err. what names the file's role in the message. */
static int check_readable(const char *what, const char *path, char *err,
                          size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return fail(RLOCK_ETLS, err, errlen, "file unreadable: %s '%s': %s",
                    what, path, strerror(errno));
    fclose(f);
    return 0;
}

static int load_trust(SSL_CTX *ssl_ctx, const rlock__tls_settings *s,
                      char *err, size_t errlen)
{
    int rc;
    if (s->ca_file != NULL) {
        if ((rc = check_readable("CA file", s->ca_file, err, errlen)) != 0)
            return rc;
        if (SSL_CTX_load_verify_locations(ssl_ctx, s->ca_file, NULL) != 1)
            return fail(RLOCK_ETLS, err, errlen,
                        "bad certificate or key: CA file '%s' holds no "
                        "PEM certificate (%s)",
                        s->ca_file, reason_text(drain_errors()));
    }
    if (s->ca_dir != NULL) {
        DIR *d = opendir(s->ca_dir);
        if (d == NULL)
            return fail(RLOCK_ETLS, err, errlen,
                        "file unreadable: CA directory '%s': %s", s->ca_dir,
                        strerror(errno));
        closedir(d);
        if (SSL_CTX_load_verify_locations(ssl_ctx, NULL, s->ca_dir) != 1)
            return fail(RLOCK_ETLS, err, errlen,
                        "bad certificate or key: CA directory '%s' (%s)",
                        s->ca_dir, reason_text(drain_errors()));
    }
    if (s->ca_file == NULL && s->ca_dir == NULL &&
        s->verify != RLOCK__TLS_VERIFY_NONE &&
        SSL_CTX_set_default_verify_paths(ssl_ctx) != 1)
        return fail(RLOCK_ETLS, err, errlen,
                    "file unreadable: the system's CA store (%s)",
                    reason_text(drain_errors()));
    return 0;
}

static int load_identity(SSL_CTX *ssl_ctx, const rlock__tls_settings *s,
                         char *err, size_t errlen)
{
    int rc;
    if ((rc = check_readable("client certificate", s->cert_file, err,
                             errlen)) != 0 ||
        (rc = check_readable("client key", s->key_file, err, errlen)) != 0)
        return rc;
    if (SSL_CTX_use_certificate_chain_file(ssl_ctx, s->cert_file) != 1)
        return fail(RLOCK_ETLS, err, errlen,
                    "bad certificate or key: client certificate '%s' is not "
                    "a PEM certificate (%s)",
                    s->cert_file, reason_text(drain_errors()));
    SSL_CTX_set_default_passwd_cb(ssl_ctx, no_passphrase);
    /* loading the key already compares it with the certificate */
    if (SSL_CTX_use_PrivateKey_file(ssl_ctx, s->key_file, SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(ssl_ctx) != 1) {
        unsigned long code = drain_errors();
        if (ERR_GET_LIB(code) == ERR_LIB_X509 &&
            ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH)
            return fail(RLOCK_ETLS, err, errlen,
                        "bad certificate or key: client key '%s' does not "
                        "match certificate '%s'",
                        s->key_file, s->cert_file);
        return fail(RLOCK_ETLS, err, errlen,
                    "bad certificate or key: client key '%s' is not an "
                    "unencrypted PEM key (%s)",
                    s->key_file, reason_text(code));
    }
    return 0;
}

/* Makes a context from s (tls.h). */
int rlock__tls_ctx_new(const rlock__tls_settings *s, rlock__tls_ctx **out,
                       char *err, size_t errlen)
{
    rlock__tls_ctx *ctx;
    int rc;
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    if (s == NULL)
        return fail(RLOCK_EINVAL, err, errlen, "no TLS settings");
    if (s->verify < RLOCK__TLS_VERIFY_FULL || s->verify > RLOCK__TLS_VERIFY_NONE)
        return fail(RLOCK_EINVAL, err, errlen, "unknown TLS verify mode %d",
                    s->verify);
    if ((s->cert_file == NULL) != (s->key_file == NULL))
        return fail(RLOCK_EINVAL, err, errlen,
                    "a client certificate needs its key and a key its "
                    "certificate (only the %s is set)",
                    s->cert_file != NULL ? "certificate" : "key");
    if (s->server_name != NULL &&
        (s->server_name[0] == '\0' || strlen(s->server_name) > 253))
        return fail(RLOCK_EINVAL, err, errlen, "bad TLS server name");
    ctx = rlock__calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return RLOCK_ENOMEM;
    ctx->verify = s->verify;
    ctx->has_cert = s->cert_file != NULL;
    if (s->server_name != NULL &&
        (ctx->server_name = rlock__strdup(s->server_name)) == NULL) {
        rc = RLOCK_ENOMEM;
        goto out_free_ctx;
    }
    ERR_clear_error();
    ctx->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (ctx->ssl_ctx == NULL) {
        drain_errors();
        rc = RLOCK_ENOMEM;
        goto out_free_ctx;
    }
    SSL_CTX_set_min_proto_version(ctx->ssl_ctx, TLS1_2_VERSION);
    /* the caller retries a write with the same bytes, maybe from a buffer
     * that moved, and may take part of a large write at a time */
    SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                       SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    /* A killed server closes without close_notify; RESP frames its own
     * replies, so a cut reply is seen as incomplete anyway. */
    SSL_CTX_set_options(ctx->ssl_ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
    SSL_CTX_set_verify(ctx->ssl_ctx,
                       s->verify == RLOCK__TLS_VERIFY_NONE ? SSL_VERIFY_NONE
                                                           : SSL_VERIFY_PEER,
                       NULL);
    if ((rc = load_trust(ctx->ssl_ctx, s, err, errlen)) != 0)
        goto out_free_ctx;
    if (s->cert_file != NULL &&
        (rc = load_identity(ctx->ssl_ctx, s, err, errlen)) != 0)
        goto out_free_ctx;
    drain_errors();
    *out = ctx;
    return 0;

out_free_ctx:
    drain_errors();
    rlock__tls_ctx_free(ctx);
    return rc;
}

/* Frees a context; connections made from it hold their own reference to
 * OpenSSL's part, so they may outlive it. NULL is ignored. */
void rlock__tls_ctx_free(rlock__tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx->server_name);
    free(ctx);
}

/* ------------------------------------------------------------------------ */
/* Connection                                                               */
/* ------------------------------------------------------------------------ */

/* Returns 1 if name is an IPv4 or IPv6 literal (without brackets). */
static int is_ip_literal(const char *name)
{
    unsigned char addr[16];
    return inet_pton(AF_INET, name, addr) == 1 ||
           inet_pton(AF_INET6, name, addr) == 1;
}

/* Starts a connection on fd (tls.h). */
int rlock__tls_conn_new(rlock__tls_ctx *ctx, int fd, const char *host,
                        rlock__tls_conn **out)
{
    rlock__tls_conn *t;
    const char *name;
    BIO *bio;
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    if (ctx == NULL || fd < 0 || host == NULL || host[0] == '\0')
        return RLOCK_EINVAL;
    name = ctx->server_name != NULL ? ctx->server_name : host;
    if (strlen(name) >= sizeof(t->name))
        return RLOCK_EINVAL;
    pthread_once(&nosig_once, nosig_init);
    if (nosig_method == NULL)
        return RLOCK_ENOMEM;
    t = rlock__calloc(1, sizeof(*t));
    if (t == NULL)
        return RLOCK_ENOMEM;
    t->fd = fd;
    t->has_cert = ctx->has_cert;
    strcpy(t->name, name);
    ERR_clear_error();
    t->ssl = SSL_new(ctx->ssl_ctx);
    bio = BIO_new(nosig_method);
    if (t->ssl == NULL || bio == NULL) {
        BIO_free(bio);
        goto out_nomem;
    }
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio); /* the SSL owns bio from here */
    if (!is_ip_literal(name) && SSL_set_tlsext_host_name(t->ssl, name) != 1)
        goto out_nomem;
    if (ctx->verify == RLOCK__TLS_VERIFY_FULL) {
        int ok;
        if (is_ip_literal(name)) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name);
        } else {
            SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = SSL_set1_host(t->ssl, name);
        }
        if (ok != 1)
            goto out_nomem;
    }
    SSL_set_connect_state(t->ssl);
    drain_errors();
    *out = t;
    return 0;

out_nomem:
    drain_errors();
    rlock__tls_conn_free(t);
    return RLOCK_ENOMEM;
}

/* Words for a failed certificate check, by the verify result. */
static void describe_verify(rlock__tls_conn *t, long vr)
{
    const char *why = X509_verify_cert_error_string(vr);
    switch (vr) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        fail(0, t->err, sizeof(t->err),
             "hostname mismatch: the server's certificate is not for '%s' "
             "(%s)",
             t->name, why);
        break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        fail(0, t->err, sizeof(t->err),
             "wrong CA: the server's certificate is not signed by a trusted "
             "CA (%s)",
             why);
        break;
    default:
        fail(0, t->err, sizeof(t->err),
             "certificate rejected: the server's certificate failed "
             "verification (%s)",
             why);
        break;
    }
}

/* Fills t->err for an SSL_ERROR_SSL; the queue holds the failure. */
static void describe_ssl_failure(rlock__tls_conn *t)
{
    unsigned long code = drain_errors();
    long vr = SSL_get_verify_result(t->ssl);
    int reason = ERR_GET_REASON(code);
    if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && vr != X509_V_OK) {
        describe_verify(t, vr);
        return;
    }
    switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        fail(0, t->err, sizeof(t->err),
             "client certificate required: the server asks for one and %s",
             t->has_cert ? "refused the one sent" : "none is configured");
        return;
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
        fail(0, t->err, sizeof(t->err),
             "client certificate refused: the server did not accept %s (%s)",
             t->has_cert ? "the client certificate" : "the missing one",
             reason_text(code));
        return;
    case SSL_R_WRONG_VERSION_NUMBER:
        fail(0, t->err, sizeof(t->err),
             "handshake failed: the server does not speak TLS on this port "
             "(%s)",
             reason_text(code));
        return;
    default:
        fail(0, t->err, sizeof(t->err), "handshake failed: %s",
             reason_text(code));
        return;
    }
}

/* Turns a failed SSL call's result into the return value of tls.h, with
 * t->err set for failures; 0 means the end of the stream. handshaking: the
 * peer closing is a failure then, where a read takes it as the end. */
static int after_failure(rlock__tls_conn *t, int ret, bool handshaking)
{
    int e = SSL_get_error(t->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        drain_errors();
        return RLOCK__IO_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        drain_errors();
        return RLOCK__IO_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        drain_errors();
        if (!handshaking)
            return 0;
        fail(0, t->err, sizeof(t->err),
             "handshake failed: the server closed the connection");
        return RLOCK_ECONN;
    case SSL_ERROR_SYSCALL:
        drain_errors();
        if (t->sys_errno == 0 && !handshaking)
            return 0;
        fail(0, t->err, sizeof(t->err), "%s%s",
             handshaking ? "handshake failed: " : "",
             t->sys_errno != 0 ? strerror(t->sys_errno)
                               : "the server closed the connection");
        return RLOCK_ECONN;
    case SSL_ERROR_SSL:
        describe_ssl_failure(t);
        return RLOCK_ETLS;
    default:
        fail(0, t->err, sizeof(t->err), "handshake failed: %s",
             reason_text(drain_errors()));
        return RLOCK_ETLS;
    }
}

/* Drives the handshake (tls.h). */
int rlock__tls_handshake(rlock__tls_conn *t, char *err, size_t errlen)
{
    int ret, rc;
    if (t == NULL)
        return RLOCK_EINVAL;
    ERR_clear_error();
    t->sys_errno = 0;
    t->err[0] = '\0';
    ret = SSL_do_handshake(t->ssl);
    if (ret == 1) {
        drain_errors();
        return 0;
    }
    rc = after_failure(t, ret, true);
    if (rc < 0)
        fail(0, err, errlen, "%s", t->err);
    return rc;
}

/* Reads up to len bytes (tls.h). */
int rlock__tls_read(rlock__tls_conn *t, void *buf, size_t len, size_t *done)
{
    if (done != NULL)
        *done = 0;
    if (t == NULL || buf == NULL || len == 0 || done == NULL)
        return RLOCK_EINVAL;
    ERR_clear_error();
    t->sys_errno = 0;
    t->err[0] = '\0';
    if (SSL_read_ex(t->ssl, buf, len, done) == 1) {
        drain_errors();
        return 0;
    }
    *done = 0;
    return after_failure(t, 0, false); /* 0 here is the end of the stream */
}

/* Writes up to len bytes (tls.h). */
int rlock__tls_write(rlock__tls_conn *t, const void *buf, size_t len,
                     size_t *done)
{
    int rc;
    if (done != NULL)
        *done = 0;
    if (t == NULL || buf == NULL || len == 0 || done == NULL)
        return RLOCK_EINVAL;
    ERR_clear_error();
    t->sys_errno = 0;
    t->err[0] = '\0';
    if (SSL_write_ex(t->ssl, buf, len, done) == 1) {
        drain_errors();
        return 0;
    }
    *done = 0;
    rc = after_failure(t, 0, false);
    if (rc == 0) { /* the peer closed: nothing can be written any more */
        fail(0, t->err, sizeof(t->err), "the server closed the connection");
        return RLOCK_ECONN;
    }
    return rc;
}

/* The last failure's message (tls.h). */
const char *rlock__tls_conn_error(const rlock__tls_conn *t)
{
    return t != NULL ? t->err : "";
}

/* Whether decrypted or undecrypted bytes wait inside t (tls.h). */
bool rlock__tls_pending(const rlock__tls_conn *t)
{
    return t != NULL && SSL_has_pending(t->ssl) == 1;
}

/* Frees a connection (tls.h). */
void rlock__tls_conn_free(rlock__tls_conn *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* and the BIO with it */
    free(t);
}
