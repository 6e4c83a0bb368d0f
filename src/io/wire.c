/*
 * wire.c: one connection's socket, byte stream, output buffer and RESP
 * reader, with the connect steps and the Redis handshake written once for
 * both drivers (link.c on libev, link_sync.c with poll()).
 *
 * A wire never waits: every step returns what it needs next
 * (RLOCK__IO_WANT_READ or _WRITE) and the driver waits its own way. Its
 * phases only move forward: TCP -> STREAM -> READY, and DEAD from any.
 * Names are resolved before a wire exists (rlock__link_resolve, on a user
 * thread), so nothing here blocks.
 */
#include "io/io.h"
#include "proto/proto.h"
#include "io/tls.h"

#include "rlock.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t rlock__io_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rlock__link_opts_init(rlock__link_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = 5000;
}

/* getaddrinfo for host:port with flags; the first address only. */
static int lookup(const char *host, int port, int flags,
                  rlock__link_addr *out)
{
    if (host == NULL || port <= 0 || port > 65535)
        return RLOCK_EINVAL;
    char service[8];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags | AI_NUMERICSERV;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL)
        return rc == EAI_NONAME && (flags & AI_NUMERICHOST) ? RLOCK_EINVAL
                                                            : RLOCK_ECONN;
    /* the first address only: a server behind several is a job for the
     * caller (Sentinel, Cluster), not for one link */
    memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return RLOCK_OK;
}

int rlock__link_resolve(const char *host, int port, const char *path,
                        rlock__link_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (path != NULL) {
        struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;
        size_t n = strlen(path);
        if (n == 0 || n >= sizeof(un->sun_path))
            return RLOCK_EINVAL;
        un->sun_family = AF_UNIX;
        memcpy(un->sun_path, path, n + 1);
        out->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        return RLOCK_OK;
    }
    return lookup(host, port, 0, out);
}

int rlock__link_resolve_numeric(const char *host, int port,
                                rlock__link_addr *out)
{
    memset(out, 0, sizeof(*out));
    return lookup(host, port, AI_NUMERICHOST, out);
}

/* ------------------------------------------------------- plain stream */

typedef struct plain_stream {
    rlock__stream base;
    int fd;
} plain_stream;

static int plain_handshake(rlock__stream *s, char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    return 0;
}

static int plain_read(rlock__stream *s, void *buf, size_t len, size_t *done)
{
    ssize_t n = read(((plain_stream *)s)->fd, buf, len);
    *done = 0;
    if (n >= 0) {
        *done = (size_t)n;
        return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return RLOCK__IO_WANT_READ;
    return RLOCK_ECONN;
}

static int plain_write(rlock__stream *s, const void *buf, size_t len,
                       size_t *done)
{
    /* MSG_NOSIGNAL: a peer gone must be an error, not a SIGPIPE */
    ssize_t n = send(((plain_stream *)s)->fd, buf, len, MSG_NOSIGNAL);
    *done = 0;
    if (n >= 0) {
        *done = (size_t)n;
        return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return RLOCK__IO_WANT_WRITE;
    return RLOCK_ECONN;
}

static bool plain_pending(rlock__stream *s)
{
    (void)s;
    return false; /* what the kernel holds, poll() sees */
}

static void plain_close(rlock__stream *s)
{
    free(s);
}

static int plain_open(int fd, rlock__stream **out)
{
    plain_stream *p = rlock__calloc(1, sizeof(*p));
    if (p == NULL)
        return RLOCK_ENOMEM;
    p->base.handshake = plain_handshake;
    p->base.read = plain_read;
    p->base.write = plain_write;
    p->base.close = plain_close;
    p->base.pending = plain_pending;
    p->fd = fd;
    *out = &p->base;
    return RLOCK_OK;
}

/* --------------------------------------------------------- TLS stream */

typedef struct tls_stream {
    rlock__stream base;
    rlock__tls_conn *t;
} tls_stream;

static int tls_handshake(rlock__stream *s, char *err, size_t errlen)
{
    return rlock__tls_handshake(((tls_stream *)s)->t, err, errlen);
}

static int tls_read(rlock__stream *s, void *buf, size_t len, size_t *done)
{
    return rlock__tls_read(((tls_stream *)s)->t, buf, len, done);
}

static int tls_write(rlock__stream *s, const void *buf, size_t len,
                     size_t *done)
{
    return rlock__tls_write(((tls_stream *)s)->t, buf, len, done);
}

static bool tls_pending(rlock__stream *s)
{
    return rlock__tls_pending(((tls_stream *)s)->t);
}

static void tls_close(rlock__stream *s)
{
    rlock__tls_conn_free(((tls_stream *)s)->t);
    free(s);
}

static int tls_open(rlock__wire *w)
{
    tls_stream *p = rlock__calloc(1, sizeof(*p));
    if (p == NULL)
        return RLOCK_ENOMEM;
    int rc = rlock__tls_conn_new(w->tls, w->fd, w->host, &p->t);
    if (rc != 0) {
        free(p);
        return rc;
    }
    p->base.handshake = tls_handshake;
    p->base.read = tls_read;
    p->base.write = tls_write;
    p->base.close = tls_close;
    p->base.pending = tls_pending;
    w->stream = &p->base;
    return RLOCK_OK;
}

/* Keeps the TLS layer's reason for a failed read or write. */
static void stream_reason(rlock__wire *w)
{
    if (w->tls != NULL && w->stream != NULL && w->err[0] == '\0')
        snprintf(w->err, sizeof(w->err), "%s",
                 rlock__tls_conn_error(((tls_stream *)w->stream)->t));
}

/* ------------------------------------------------------------ connect */

static int fail(rlock__wire *w, int code, const char *what, int errnum)
{
    if (errnum != 0)
        snprintf(w->err, sizeof(w->err), "%s: %s", what, strerror(errnum));
    else if (w->err[0] == '\0')
        snprintf(w->err, sizeof(w->err), "%s", what);
    rlock__wire_close(w);
    return code;
}

static void tune_tcp(int fd, int keepalive_s)
{
    int on = 1;
    int idle = keepalive_s > 0 ? keepalive_s : 15;
    int intvl = idle / 3 > 0 ? idle / 3 : 1;
    int cnt = 3;
    /* best effort: a socket without them still works, it only notices a
     * vanished peer later */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

int rlock__wire_start(rlock__wire *w, const rlock__link_opts *o)
{
    memset(w, 0, sizeof(*w));
    w->fd = -1;
    w->phase = RLOCK__WIRE_DEAD;
    int family = o->addr.sa.ss_family;
    if (o->addr.len == 0 ||
        (family != AF_INET && family != AF_INET6 && family != AF_UNIX)) {
        snprintf(w->err, sizeof(w->err), "no resolved address");
        return RLOCK_EINVAL;
    }
    w->reader = redisReaderCreate();
    if (w->reader == NULL)
        return fail(w, RLOCK_ENOMEM, "out of memory", 0);
    if (o->tls != NULL && o->host == NULL) {
        return fail(w, RLOCK_EINVAL, "TLS needs the host name", 0);
    }
    if (o->host != NULL && (w->host = strdup(o->host)) == NULL)
        return fail(w, RLOCK_ENOMEM, "out of memory", 0);
    w->tls = o->tls;
    w->fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (w->fd < 0)
        return fail(w, RLOCK_ECONN, "socket", errno);
    if (family != AF_UNIX)
        tune_tcp(w->fd, o->keepalive_s);
    w->phase = RLOCK__WIRE_TCP;
    if (connect(w->fd, (const struct sockaddr *)&o->addr.sa, o->addr.len) !=
        0) {
        /* a unix socket whose backlog is full says EAGAIN and has not
         * connected: that is a refusal, not a connect in progress */
        if (errno == EINPROGRESS)
            return RLOCK__IO_WANT_WRITE;
        return fail(w, RLOCK_ECONN, "connect", errno);
    }
    return rlock__wire_connect_step(w);
}

int rlock__wire_connect_step(rlock__wire *w)
{
    if (w->phase == RLOCK__WIRE_TCP) {
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            return fail(w, RLOCK_ECONN, "connect", errno);
        if (soerr == EINPROGRESS)
            return RLOCK__IO_WANT_WRITE;
        if (soerr != 0)
            return fail(w, RLOCK_ECONN, "connect", soerr);
        int rc = w->tls != NULL ? tls_open(w) : plain_open(w->fd, &w->stream);
        if (rc != 0)
            return fail(w, rc, "cannot start TLS", 0);
        w->phase = RLOCK__WIRE_STREAM;
    }
    if (w->phase == RLOCK__WIRE_STREAM) {
        int rc = w->stream->handshake(w->stream, w->err, sizeof(w->err));
        if (rc > 0)
            return rc;
        if (rc < 0)
            return fail(w, rc, "stream handshake", 0);
        w->phase = RLOCK__WIRE_READY;
    }
    return w->phase == RLOCK__WIRE_READY ? 0 : RLOCK_ECONN;
}

/* ------------------------------------------------------------- bytes */

int rlock__wire_append(rlock__wire *w, int argc, const char **argv,
                       const size_t *lens)
{
    char *cmd = NULL;
    int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (n < 0 || cmd == NULL)
        return RLOCK_ENOMEM;
    size_t need = w->out_len + (size_t)n;
    if (need > w->out_cap) {
        size_t cap = w->out_cap ? w->out_cap : 256;
        while (cap < need)
            cap *= 2;
        char *grown = rlock__realloc(w->out, cap);
        if (grown == NULL) {
            redisFreeCommand(cmd);
            return RLOCK_ENOMEM;
        }
        w->out = grown;
        w->out_cap = cap;
    }
    memcpy(w->out + w->out_len, cmd, (size_t)n);
    w->out_len += (size_t)n;
    redisFreeCommand(cmd);
    return RLOCK_OK;
}

/* A TLS server that ends the connection before its first byte past the
 * handshake has refused us: under TLS 1.3 a server that wants a client
 * certificate (or refuses ours) sends its alert after the handshake, and
 * when it closes with our first command unread the reset can overtake the
 * alert, leaving only "connection reset". Returns the failure to report. */
static int closed_early(rlock__wire *w, int code, const char *what,
                        int errnum)
{
    if (w->tls != NULL && !w->heard && code == RLOCK_ECONN) {
        snprintf(w->err, sizeof(w->err),
                 "handshake failed: the server closed the connection right "
                 "after the TLS handshake (a server that requires a client "
                 "certificate, or refuses this one, does so)");
        code = RLOCK_ETLS;
    }
    return fail(w, code, what, errnum);
}

int rlock__wire_flush(rlock__wire *w)
{
    if (w->phase == RLOCK__WIRE_DEAD)
        return RLOCK_ECONN;
    if (w->phase != RLOCK__WIRE_READY)
        return 0; /* written once the connect is done */
    while (w->out_off < w->out_len) {
        size_t done = 0;
        int rc = w->stream->write(w->stream, w->out + w->out_off,
                                  w->out_len - w->out_off, &done);
        if (rc > 0)
            return rc;
        if (rc < 0) {
            stream_reason(w);
            return closed_early(w, rc, "write", w->tls ? 0 : errno);
        }
        w->out_off += done;
    }
    w->out_off = w->out_len = 0;
    return 0;
}

int rlock__wire_fill(rlock__wire *w)
{
    char buf[16384];
    size_t done = 0;
    if (w->phase != RLOCK__WIRE_READY)
        return RLOCK_ECONN;
    int rc = w->stream->read(w->stream, buf, sizeof(buf), &done);
    w->read_wants = rc == RLOCK__IO_WANT_WRITE;
    if (rc > 0)
        return rc;
    if (rc < 0) {
        stream_reason(w);
        return closed_early(w, rc, "read", w->tls ? 0 : errno);
    }
    if (done == 0)
        return closed_early(w, RLOCK_ECONN,
                            "connection closed by the server", 0);
    w->heard = true;
    if (redisReaderFeed(w->reader, buf, done) != REDIS_OK)
        return fail(w, RLOCK_ENOMEM, "out of memory", 0);
    return 0;
}

bool rlock__wire_pending(const rlock__wire *w)
{
    return w->phase == RLOCK__WIRE_READY && w->stream->pending(w->stream);
}

int rlock__wire_reply(rlock__wire *w, redisReply **out)
{
    void *r = NULL;
    *out = NULL;
    if (w->reader == NULL)
        return RLOCK_ECONN;
    if (redisReaderGetReply(w->reader, &r) != REDIS_OK) {
        snprintf(w->err, sizeof(w->err), "not RESP: %s", w->reader->errstr);
        return fail(w, RLOCK_EPROTO, "not RESP", 0);
    }
    *out = r;
    return RLOCK_OK;
}

void rlock__wire_close(rlock__wire *w)
{
    if (w->stream != NULL)
        w->stream->close(w->stream);
    w->stream = NULL;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->reader != NULL)
        redisReaderFree(w->reader);
    w->reader = NULL;
    free(w->out);
    w->out = NULL;
    w->out_len = w->out_off = w->out_cap = 0;
    free(w->host);
    w->host = NULL;
    w->phase = RLOCK__WIRE_DEAD;
}

/* ---------------------------------------------------------- handshake */

int rlock__wire_append_hello(rlock__wire *w, const rlock__link_opts *o,
                             int *kinds)
{
    int n = 0;
    if (o->password != NULL) {
        const char *argv[3] = {"AUTH", o->user, o->password};
        if (o->user == NULL)
            argv[1] = o->password;
        if (rlock__wire_append(w, o->user ? 3 : 2, argv, NULL) != 0)
            return RLOCK_ENOMEM;
        kinds[n++] = RLOCK__HELLO_AUTH;
    }
    if (o->db != 0) {
        char db[16];
        snprintf(db, sizeof(db), "%d", o->db);
        const char *argv[2] = {"SELECT", db};
        if (rlock__wire_append(w, 2, argv, NULL) != 0)
            return RLOCK_ENOMEM;
        kinds[n++] = RLOCK__HELLO_SELECT;
    }
    if (o->client_name != NULL) {
        const char *argv[3] = {"CLIENT", "SETNAME", o->client_name};
        if (rlock__wire_append(w, 3, argv, NULL) != 0)
            return RLOCK_ENOMEM;
        kinds[n++] = RLOCK__HELLO_NAME;
    }
    /* Over TLS 1.3 a server that refuses the client's certificate (or
     * wants one) says so after the handshake, in an alert that the first
     * read meets. A step whose answer is awaited makes that read part of
     * the connect, so the refusal is RLOCK_ETLS from connecting, not a
     * connection lost under a later command. */
    if (n == 0 && o->tls != NULL) {
        const char *argv[1] = {"PING"};
        if (rlock__wire_append(w, 1, argv, NULL) != 0)
            return RLOCK_ENOMEM;
        kinds[n++] = RLOCK__HELLO_PING;
    }
    return n;
}

static bool starts_with(const redisReply *r, const char *prefix)
{
    size_t n = strlen(prefix);
    return r->len >= n && memcmp(r->str, prefix, n) == 0;
}

int rlock__wire_hello_result(int kind, const redisReply *r)
{
    if (kind == RLOCK__HELLO_PING && r->type == REDIS_REPLY_ERROR)
        return rlock__reply_error_code(r); /* NOAUTH: a password needed */
    if (r->type == REDIS_REPLY_ERROR) {
        /* every step pipelined behind a refused AUTH says NOAUTH */
        if (kind != RLOCK__HELLO_NAME || starts_with(r, "NOAUTH") ||
            starts_with(r, "WRONGPASS"))
            return RLOCK_EAUTH;
        return RLOCK_ESERVER;
    }
    return r->type == REDIS_REPLY_STATUS ? RLOCK_OK : RLOCK_EPROTO;
}
