/*
 * async_server.c: a small libev TCP server that takes a lock per request.
 *
 * Each line a client sends is a request to change one "account": the line
 * names the account, the server locks "account:<name>" for that request
 * (owner id: one per request, from rlock_owner_new()), does the work on a
 * timer (as if it called a slower service), answers, and unlocks. All of it
 * runs on one thread and one libev loop: a request waiting for a lock costs
 * a small struct, not a thread, and it is woken by the lock's unlock message.
 * Two requests for the same account never overlap, whichever client, thread
 * or process (or Java service using Redisson) holds the lock.
 *
 * It also serves the client's lock statistics for Prometheus on its own
 * port: GET /metrics answers rlock_stats_format()'s text (how long requests
 * waited for their accounts, how long they held them, re-checks, renewals,
 * reconnects...). Scraping costs one snapshot copy, no Redis traffic.
 *
 * Usage:
 *   async_server [redis-url] [port] [metrics-port]
 *                (redis://127.0.0.1:6379, 7070, 9464)
 * Try it:
 *   printf 'alice\nbob\nalice\n' | nc -q1 127.0.0.1 7070
 *   curl -s 127.0.0.1:9464/metrics
 * Each answer is "<account> <n>", n counting that account's requests; it
 * stops on SIGINT or SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L

#include <rlock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NAME_MAX_LEN 64
#define WORK_SECONDS 0.002
#define ACCOUNTS     64

typedef struct account {
    char name[NAME_MAX_LEN];
    long requests;
} account;

typedef struct server {
    struct ev_loop *loop;
    rlock_client *client;
    ev_io accept_watcher;
    ev_io metrics_watcher;
    ev_signal stop_int, stop_term;
    account accounts[ACCOUNTS];
    int naccounts;
} server;

typedef struct connection {
    server *srv;
    ev_io io;
    char buf[512];
    size_t len;
    int pending; /* requests not answered yet */
    int closing;
} connection;

typedef struct request {
    connection *conn;
    rlock *lock;
    uint64_t owner;
    char account[NAME_MAX_LEN];
    ev_timer work;
} request;

static account *find_account(server *srv, const char *name)
{
    for (int i = 0; i < srv->naccounts; i++)
        if (strcmp(srv->accounts[i].name, name) == 0)
            return &srv->accounts[i];
    if (srv->naccounts == ACCOUNTS)
        return NULL;
    account *a = &srv->accounts[srv->naccounts++];
    snprintf(a->name, sizeof(a->name), "%s", name);
    a->requests = 0;
    return a;
}

static void connection_release(connection *conn)
{
    if (conn->closing && conn->pending == 0) {
        ev_io_stop(conn->srv->loop, &conn->io);
        close(conn->io.fd);
        free(conn);
    }
}

static void request_free(request *rq)
{
    connection *conn = rq->conn;
    rlock_free(rq->lock);
    free(rq);
    conn->pending--;
    connection_release(conn);
}

static void on_unlocked(rlock *l, uint64_t owner, int status, void *arg)
{
    (void)l;
    (void)owner;
    if (status != RLOCK_OK)
        fprintf(stderr, "unlock: %s\n", rlock_strerror(status));
    request_free(arg);
}

/* The work is done: answer, then let the next request in. */
static void on_work_done(struct ev_loop *loop, ev_timer *w, int revents)
{
    request *rq = w->data;
    char line[NAME_MAX_LEN + 32];
    (void)loop;
    (void)revents;
    account *a = find_account(rq->conn->srv, rq->account);
    long n = a != NULL ? ++a->requests : -1;
    int len = snprintf(line, sizeof(line), "%s %ld\n", rq->account, n);
    if (!rq->conn->closing && write(rq->conn->io.fd, line, (size_t)len) < 0)
        rq->conn->closing = 1;
    if (rlock_unlock_async(rq->lock, rq->owner, on_unlocked, rq) != RLOCK_OK)
        request_free(rq);
}

static void on_locked(rlock *l, uint64_t owner, int status, void *arg)
{
    request *rq = arg;
    (void)l;
    (void)owner;
    if (status != RLOCK_OK) {
        fprintf(stderr, "lock %s: %s\n", rq->account, rlock_strerror(status));
        request_free(rq);
        return;
    }
    ev_timer_init(&rq->work, on_work_done, WORK_SECONDS, 0.);
    rq->work.data = rq;
    ev_timer_start(rq->conn->srv->loop, &rq->work);
}

static void start_request(connection *conn, const char *name)
{
    char lock_name[NAME_MAX_LEN + 16];
    request *rq = calloc(1, sizeof(*rq));
    if (rq == NULL)
        return;
    rq->conn = conn;
    rq->owner = rlock_owner_new();
    snprintf(rq->account, sizeof(rq->account), "%s", name);
    snprintf(lock_name, sizeof(lock_name), "account:%s", rq->account);
    if (rlock_get(conn->srv->client, lock_name, &rq->lock) != RLOCK_OK) {
        free(rq);
        return;
    }
    conn->pending++;
    /* wait up to 10 s for the account; the watchdog keeps the lease */
    int rc = rlock_lock_async(rq->lock, rq->owner, 10000,
                              RLOCK_LEASE_WATCHDOG, on_locked, rq);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "lock %s: %s\n", name, rlock_strerror(rc));
        request_free(rq);
    }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    connection *conn = w->data;
    (void)loop;
    (void)revents;
    ssize_t n = read(w->fd, conn->buf + conn->len,
                     sizeof(conn->buf) - conn->len - 1);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn->closing = 1; /* freed once its requests are answered */
        ev_io_stop(conn->srv->loop, &conn->io);
        connection_release(conn);
        return;
    }
    conn->len += (size_t)n;
    conn->buf[conn->len] = '\0';
    char *start = conn->buf, *nl;
    while ((nl = strchr(start, '\n')) != NULL) {
        *nl = '\0';
        if (nl > start && nl[-1] == '\r')
            nl[-1] = '\0';
        if (*start != '\0' && strlen(start) < NAME_MAX_LEN)
            start_request(conn, start);
        start = nl + 1;
    }
    conn->len = strlen(start);
    memmove(conn->buf, start, conn->len);
    if (conn->len == sizeof(conn->buf) - 1)
        conn->len = 0; /* a line too long: dropped */
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    server *srv = w->data;
    (void)revents;
    int fd = accept(w->fd, NULL, NULL);
    if (fd < 0)
        return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    connection *conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        close(fd);
        return;
    }
    conn->srv = srv;
    ev_io_init(&conn->io, on_readable, fd, EV_READ);
    conn->io.data = conn;
    ev_io_start(loop, &conn->io);
}

/* ------------------------------------------------------------- /metrics */

typedef struct scrape {
    server *srv;
    ev_io io;
    char request[1024];
    size_t len;
} scrape;

static void scrape_close(scrape *sc)
{
    ev_io_stop(sc->srv->loop, &sc->io);
    close(sc->io.fd);
    free(sc);
}

/* Answers one HTTP request: the statistics for GET /metrics, 404 for
 * anything else. The text is a few kB: one write to a fresh socket. */
static void scrape_answer(scrape *sc)
{
    static const char not_found[] =
        "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    char head[160];
    int fd = sc->io.fd;
    if (strncmp(sc->request, "GET /metrics ", 13) != 0) {
        (void)write(fd, not_found, sizeof(not_found) - 1);
        return;
    }
    rlock_stats stats = RLOCK_STATS_INIT;
    if (rlock_client_stats(sc->srv->client, &stats) != RLOCK_OK)
        return; /* turned off in the config: nothing to serve */
    int n = rlock_stats_format(&stats, NULL, 0); /* measure, then write */
    char *body = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (body == NULL)
        return;
    rlock_stats_format(&stats, body, (size_t)n + 1);
    int len = snprintf(head, sizeof(head),
                       "HTTP/1.0 200 OK\r\n"
                       "Content-Type: text/plain; version=0.0.4\r\n"
                       "Content-Length: %d\r\n\r\n",
                       n);
    if (write(fd, head, (size_t)len) == len)
        (void)write(fd, body, (size_t)n);
    free(body);
}

static void on_scrape_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    scrape *sc = w->data;
    (void)loop;
    (void)revents;
    ssize_t n = read(w->fd, sc->request + sc->len,
                     sizeof(sc->request) - sc->len - 1);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        sc->len += (size_t)n;
        sc->request[sc->len] = '\0';
        if (strstr(sc->request, "\r\n\r\n") == NULL &&
            sc->len < sizeof(sc->request) - 1)
            return; /* the rest of the headers is still coming */
        scrape_answer(sc);
    }
    scrape_close(sc);
}

static void on_metrics_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    int fd = accept(w->fd, NULL, NULL);
    if (fd < 0)
        return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    scrape *sc = calloc(1, sizeof(*sc));
    if (sc == NULL) {
        close(fd);
        return;
    }
    sc->srv = w->data;
    ev_io_init(&sc->io, on_scrape_readable, fd, EV_READ);
    sc->io.data = sc;
    ev_io_start(loop, &sc->io);
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static int listen_on(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    int port = argc > 2 ? atoi(argv[2]) : 7070;
    int metrics_port = argc > 3 ? atoi(argv[3]) : 9464;
    server srv = {.loop = EV_DEFAULT};

    int rc = rlock_client_connect(&srv.client, url);
    if (rc != RLOCK_OK) {
        fprintf(stderr, "async_server: %s: %s\n", url, rlock_strerror(rc));
        return 1;
    }
    int fd = listen_on(port);
    int metrics_fd = fd >= 0 ? listen_on(metrics_port) : -1;
    if (metrics_fd < 0) {
        perror("async_server: listen");
        if (fd >= 0)
            close(fd);
        rlock_client_free(srv.client);
        return 1;
    }
    /* completions run on this loop, on this thread */
    rlock_client_attach_loop(srv.client, srv.loop);
    ev_io_init(&srv.accept_watcher, on_accept, fd, EV_READ);
    srv.accept_watcher.data = &srv;
    ev_io_start(srv.loop, &srv.accept_watcher);
    ev_io_init(&srv.metrics_watcher, on_metrics_accept, metrics_fd, EV_READ);
    srv.metrics_watcher.data = &srv;
    ev_io_start(srv.loop, &srv.metrics_watcher);
    ev_signal_init(&srv.stop_int, on_stop, SIGINT);
    ev_signal_init(&srv.stop_term, on_stop, SIGTERM);
    ev_signal_start(srv.loop, &srv.stop_int);
    ev_signal_start(srv.loop, &srv.stop_term);
    printf("async_server: listening on 127.0.0.1:%d, metrics on "
           "127.0.0.1:%d/metrics, locks on %s\n",
           port, metrics_port, url);
    fflush(stdout);

    ev_run(srv.loop, 0);

    /* detach on the loop's thread, then free: whatever was still pending
     * completes with RLOCK_ECLOSED and every hold is released */
    rlock_client_attach_loop(srv.client, NULL);
    rlock_client_free(srv.client);
    close(fd);
    close(metrics_fd);
    printf("async_server: stopped\n");
    return 0;
}
