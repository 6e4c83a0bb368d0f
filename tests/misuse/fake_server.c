/*
 * fake_server.c: see fake_server.h. One thread polls the listener and every
 * connection; requests are parsed as RESP arrays of bulk strings (what
 * hiredis sends), and a connection that sends anything else is closed.
 */
#include "fake_server.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "proto/scripts.h"

#define FS_MAX_CONNS 16

typedef struct fs_conn {
    int fd;      /* -1: free slot */
    bool redis;  /* answers like Redis */
    bool opened; /* the first reply went out (FS_HUGE_BULK, FS_TRICKLE) */
    char *in;
    size_t len, cap;
    int64_t next_byte_ms; /* FS_TRICKLE */
} fs_conn;

struct fake_server {
    fs_mode mode;
    int redis_conns; /* the first redis_conns connections speak Redis */
    int lfd;
    int stop[2]; /* pipe: a byte asks the thread to close all and exit */
    int port;
    char url[64];
    pthread_t thread;
    atomic_int accepted;
    fs_conn conns[FS_MAX_CONNS];
};

static void fs_send(int fd, const char *buf, size_t len)
{
    (void)!send(fd, buf, len, MSG_NOSIGNAL);
}

static void fs_close(fs_conn *cn)
{
    if (cn->fd >= 0)
        close(cn->fd);
    free(cn->in);
    memset(cn, 0, sizeof(*cn));
    cn->fd = -1;
}

/* Parses one "*N\r\n$L\r\n...\r\n" request at the start of buf[0..len).
 * Returns 1 with argv/argvlen/argc/used set, 0 if incomplete, -1 if not a
 * request (an inline command, or malformed). */
static int fs_parse(const char *buf, size_t len, size_t *used, int *argc,
                    const char **argv, size_t *argvlen, int maxargs)
{
    const char *p = buf, *end = buf + len, *nl;
    long n;

    if (len == 0)
        return 0;
    if (*p != '*')
        return -1;
    if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
        return 0;
    n = strtol(p + 1, NULL, 10);
    if (n < 1 || n > maxargs)
        return -1;
    p = nl + 1;
    for (long i = 0; i < n; i++) {
        long blen;

        if (p >= end)
            return 0;
        if (*p != '$')
            return -1;
        if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
            return 0;
        blen = strtol(p + 1, NULL, 10);
        if (blen < 0)
            return -1;
        p = nl + 1;
        if ((size_t)(end - p) < (size_t)blen + 2)
            return 0;
        argv[i] = p;
        argvlen[i] = (size_t)blen;
        p += blen + 2;
    }
    *argc = (int)n;
    *used = (size_t)(p - buf);
    return 1;
}

static bool fs_word(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* Answers one request as Redis would, as far as the connect check goes. */
static void fs_answer_redis(fs_conn *cn, int argc, const char **argv,
                            const size_t *argvlen)
{
    const rlock__script *const *scripts = rlock__all_scripts;
    char buf[128];

    if (fs_word(argv[0], argvlen[0], "PING")) {
        fs_send(cn->fd, "+PONG\r\n", 7);
        return;
    }
    if (fs_word(argv[0], argvlen[0], "AUTH") ||
        fs_word(argv[0], argvlen[0], "SELECT") ||
        fs_word(argv[0], argvlen[0], "CLIENT")) {
        fs_send(cn->fd, "+OK\r\n", 5);
        return;
    }
    if (argc == 3 && fs_word(argv[0], argvlen[0], "SCRIPT") &&
        fs_word(argv[1], argvlen[1], "LOAD")) {
        for (size_t i = 0; i < rlock__all_scripts_count; i++) {
            if (argvlen[2] == scripts[i]->len &&
                memcmp(argv[2], scripts[i]->body, argvlen[2]) == 0) {
                int n = snprintf(buf, sizeof(buf), "$40\r\n%s\r\n",
                                 scripts[i]->sha1);
                fs_send(cn->fd, buf, (size_t)n);
                return;
            }
        }
    }
    fs_send(cn->fd, "-ERR fake server\r\n", 18);
}

/* Answers one request according to the server's misbehaviour. */
static void fs_answer_bad(fake_server *s, fs_conn *cn)
{
    static const char deep[] = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
                               "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";

    switch (s->mode) {
    case FS_STATUS_OK:
        fs_send(cn->fd, "+OK\r\n", 5);
        break;
    case FS_ERR:
        fs_send(cn->fd, "-ERR this is not redis\r\n", 24);
        break;
    case FS_NOAUTH:
        fs_send(cn->fd, "-NOAUTH Authentication required.\r\n", 34);
        break;
    case FS_DEEP:
        fs_send(cn->fd, deep, sizeof(deep) - 1);
        break;
    case FS_HUGE_BULK:
    case FS_TRICKLE:
        if (!cn->opened) {
            fs_send(cn->fd, "$1000000000\r\n", 14);
            cn->opened = true;
            cn->next_byte_ms = rt_now_ms() + 20;
        }
        break;
    default:
        break;
    }
}

/* Reads what cn sent and answers every complete request. Returns -1 when
 * the connection should be closed. */
static int fs_read(fake_server *s, fs_conn *cn)
{
    const char *argv[8];
    size_t argvlen[8], used;
    int argc, rc;
    ssize_t n;

    if (cn->cap - cn->len < 4096) {
        size_t cap = cn->cap ? cn->cap * 2 : 65536;
        char *in = realloc(cn->in, cap);

        if (in == NULL)
            return -1;
        cn->in = in;
        cn->cap = cap;
    }
    n = recv(cn->fd, cn->in + cn->len, cn->cap - cn->len, 0);
    if (n <= 0)
        return -1;
    cn->len += (size_t)n;
    while ((rc = fs_parse(cn->in, cn->len, &used, &argc, argv, argvlen, 8)) ==
           1) {
        if (cn->redis)
            fs_answer_redis(cn, argc, argv, argvlen);
        else
            fs_answer_bad(s, cn);
        memmove(cn->in, cn->in + used, cn->len - used);
        cn->len -= used;
    }
    return rc < 0 ? -1 : 0;
}

/* A new connection: speaks Redis or misbehaves from the start. */
static void fs_accept(fake_server *s)
{
    static const char junk[] = "\x00\x01\xfe\xff\x80garbage\r\n\x07\x1b";
    static const char banner[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
    int fd = accept(s->lfd, NULL, NULL);
    int index = atomic_fetch_add(&s->accepted, 1);
    fs_conn *cn = NULL;

    if (fd < 0)
        return;
    for (int i = 0; i < FS_MAX_CONNS && cn == NULL; i++)
        if (s->conns[i].fd < 0)
            cn = &s->conns[i];
    if (cn == NULL) {
        close(fd);
        return;
    }
    cn->fd = fd;
    cn->redis = index < s->redis_conns;
    if (cn->redis)
        return;
    switch (s->mode) {
    case FS_CLOSE:
        fs_close(cn);
        break;
    case FS_GARBAGE:
        fs_send(fd, junk, sizeof(junk) - 1);
        break;
    case FS_BANNER:
        fs_send(fd, banner, sizeof(banner) - 1);
        break;
    default:
        break;
    }
}

static void *fs_main(void *p)
{
    fake_server *s = p;

    for (;;) {
        struct pollfd pfd[FS_MAX_CONNS + 2];
        int map[FS_MAX_CONNS + 2];
        int n = 0;
        int64_t now;

        pfd[n].fd = s->stop[0];
        pfd[n++].events = POLLIN;
        pfd[n].fd = s->lfd;
        pfd[n++].events = POLLIN;
        for (int i = 0; i < FS_MAX_CONNS; i++) {
            if (s->conns[i].fd < 0)
                continue;
            map[n] = i;
            pfd[n].fd = s->conns[i].fd;
            pfd[n++].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)n, 10) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents != 0)
            break;
        if (pfd[1].revents & POLLIN)
            fs_accept(s);
        for (int k = 2; k < n; k++) {
            fs_conn *cn = &s->conns[map[k]];

            if (cn->fd >= 0 && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                if (fs_read(s, cn) != 0)
                    fs_close(cn);
        }
        now = rt_now_ms();
        for (int i = 0; s->mode == FS_TRICKLE && i < FS_MAX_CONNS; i++) {
            fs_conn *cn = &s->conns[i];

            if (cn->fd >= 0 && cn->opened && now >= cn->next_byte_ms) {
                fs_send(cn->fd, "x", 1);
                cn->next_byte_ms = now + 20;
            }
        }
    }
    for (int i = 0; i < FS_MAX_CONNS; i++)
        fs_close(&s->conns[i]);
    return NULL;
}

/* Starts a fake server on a free loopback port (see fake_server.h). */
fake_server *fs_start(fs_mode mode, int redis_conns)
{
    fake_server *s = calloc(1, sizeof(*s));
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    assert_non_null(s);
    s->mode = mode;
    s->redis_conns = redis_conns;
    atomic_init(&s->accepted, 0);
    for (int i = 0; i < FS_MAX_CONNS; i++)
        s->conns[i].fd = -1;
    assert_int_equal(pipe(s->stop), 0);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    s->port = ntohs(sa.sin_port);
    snprintf(s->url, sizeof(s->url), "redis://127.0.0.1:%d", s->port);
    assert_int_equal(pthread_create(&s->thread, NULL, fs_main, s), 0);
    return s;
}

void fs_stop(fake_server *s)
{
    assert_int_equal(write(s->stop[1], "x", 1), 1);
    assert_int_equal(pthread_join(s->thread, NULL), 0);
    close(s->lfd);
    close(s->stop[0]);
    close(s->stop[1]);
    free(s);
}

const char *fs_url(const fake_server *s)
{
    return s->url;
}
