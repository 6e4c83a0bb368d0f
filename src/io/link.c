/*
 * link.c: one connection to Redis driven by a libev loop (see link.h).
 *
 * Design notes.
 *
 * What it owns: a wire (socket, byte stream, output buffer, redisReader;
 * wire.c), two ev_io watchers on its fd (read and write), one ev_timer,
 * one ev_prepare (commands sent during a round of the loop are written
 * together, just before it waits again), and the FIFO of requests sent
 * and not yet answered. Everything runs on
 * the loop's thread; nothing here locks.
 *
 * States, only moving forward:
 *   CONNECTING  the wire connects (TCP, then the secure stream);
 *   HELLO       AUTH / SELECT / CLIENT SETNAME are answered;
 *   UP          on_up(0) was called;
 *   FAILED      the wire is closed; every request completed; on_closed ran
 *               (unless rlock__link_free() closed it).
 * CONNECTING and HELLO share one deadline, connect_timeout_ms from open.
 *
 * Invariants.
 *   - Redis answers in order, so the FIFO's head owns the next reply. A
 *     handshake step sits in the FIFO like any request (it is written
 *     first), so nothing can overtake it.
 *   - A request completes exactly once: by its reply, its deadline
 *     (RLOCK_ETIMEDOUT), the link failing (its code) or rlock__link_free
 *     (RLOCK_ECLOSED). A timed-out request stays in the FIFO, marked done,
 *     until its reply comes: that reply is matched and dropped (or handed
 *     to its late callback), so the next request gets its own reply. The
 *     connection is kept: a slow server is not a dead one. A server that
 *     sends nothing at all is caught by stale_ms (no byte read while a
 *     reply is owed), by TCP keepalive, or by the caller closing the link.
 *   - On a subscriber link, pushed messages and server-sent unsubscribes
 *     never consume the FIFO; an (un)subscribe notice consumes its request
 *     only when it names the next channel that request listed, in order
 *     (Redis confirms a multi-channel command channel by channel); any
 *     other notice is the server's own. (A server-sent unsubscribe of the
 *     very channel our UNSUBSCRIBE at the head names is taken as its
 *     confirmation, and the real one, coming next, as the server's: the
 *     channel is gone either way, so the caller must treat a server-sent
 *     unsubscribe of a channel it no longer wants as nothing.) An error
 *     reply answers the head, whatever it is (a refused SUBSCRIBE is one
 *     error for the command), and the link stays up.
 *   - Callbacks may send, or free the link: `depth` counts the dispatches
 *     on the stack, and the memory goes when the outermost returns.
 *   - Failures found inside a call from the user (open, send) are reported
 *     from the timer, never from inside that call.
 */
#include "io/io.h"
#include "proto/proto.h"

#include "rlock.h"

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { CONNECTING, HELLO, UP, FAILED };

typedef struct req {
    struct req *next;
    rlock__link_reply_cb cb;
    rlock__link_late_cb late;
    void *arg;
    int64_t queued_ms;
    int64_t deadline_ms;
    int hello;  /* RLOCK__HELLO_* for a handshake step, else -1 */
    bool done;  /* cb was called (it timed out); awaiting its reply */
    /* (un)subscribe commands: the notice confirming each channel */
    const char *notice; /* "subscribe", "sunsubscribe", ...; or NULL */
    int nchan, matched;
    char **chans;
    size_t *lens;
} req;

struct rlock__link {
    struct ev_loop *loop;
    rlock__wire w;
    ev_io rio, wio;
    ev_timer timer;
    ev_prepare batch; /* writes what the loop's callbacks queued */
    int64_t armed_at; /* when the timer fires; INT64_MAX: stopped */
    int state;
    int fail_code; /* a failure to report from the timer, or 0 */
    rlock__link_cbs cbs;
    req *head, *tail;
    size_t npending;
    int hello_left;
    int64_t connect_deadline_ms;
    int64_t stale_ms;
    int64_t last_read_ms;
    int depth;
    bool freed;
    char err[160];
};

static void req_free(req *r)
{
    for (int i = 0; i < r->nchan; i++)
        free(r->chans[i]);
    free(r->chans);
    free(r->lens);
    free(r);
}

static req *pop(rlock__link *l)
{
    req *r = l->head;
    if (r != NULL) {
        l->head = r->next;
        if (l->head == NULL)
            l->tail = NULL;
        l->npending--;
    }
    return r;
}

static void push_tail(rlock__link *l, req *r)
{
    if (l->tail != NULL)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->npending++;
}

/* Hands a popped request its outcome and frees it. */
static void settle(rlock__link *l, req *r, int status, redisReply *reply)
{
    if (!r->done) {
        r->done = true;
        if (r->cb != NULL)
            r->cb(l, status, status == 0 ? reply : NULL, r->arg);
    } else if (r->late != NULL) {
        r->late(l, status == 0 ? reply : NULL, r->arg);
    }
    req_free(r);
}

/* ------------------------------------------------------------ timers */

static void arm_at(rlock__link *l, int64_t at)
{
    if (l->state == FAILED && l->fail_code == 0)
        return;
    ev_timer_stop(l->loop, &l->timer);
    int64_t delay = at - rlock__io_now_ms();
    ev_timer_set(&l->timer, delay > 0 ? (double)delay / 1000.0 : 0.0, 0.0);
    ev_timer_start(l->loop, &l->timer);
    l->armed_at = at;
}

static int64_t stale_point(const rlock__link *l)
{
    if (l->stale_ms <= 0 || l->head == NULL)
        return INT64_MAX;
    int64_t since = l->head->queued_ms > l->last_read_ms
                        ? l->head->queued_ms
                        : l->last_read_ms;
    return since + l->stale_ms;
}

/* Sets the timer to the earliest thing the link must check. */
static void rearm(rlock__link *l)
{
    int64_t at = stale_point(l);
    if (l->state == CONNECTING || l->state == HELLO)
        at = l->connect_deadline_ms < at ? l->connect_deadline_ms : at;
    for (req *r = l->head; r != NULL; r = r->next)
        if (!r->done && r->hello < 0 && r->deadline_ms < at)
            at = r->deadline_ms;
    if (at == INT64_MAX) {
        ev_timer_stop(l->loop, &l->timer);
        l->armed_at = INT64_MAX;
    } else {
        arm_at(l, at);
    }
}

/* ----------------------------------------------------------- failure */

static void stop_io(rlock__link *l)
{
    ev_io_stop(l->loop, &l->rio);
    ev_io_stop(l->loop, &l->wio);
    ev_prepare_stop(l->loop, &l->batch);
}

/* Closes the wire and completes every request with code; with report,
 * on_closed hears of it. */
static void shut(rlock__link *l, int code, bool report)
{
    if (l->state == FAILED && l->fail_code == 0)
        return;
    l->state = FAILED;
    l->fail_code = 0;
    if (l->err[0] == '\0')
        memcpy(l->err, l->w.err, sizeof(l->err));
    stop_io(l);
    ev_timer_stop(l->loop, &l->timer);
    l->armed_at = INT64_MAX;
    rlock__wire_close(&l->w);
    req *r;
    while ((r = pop(l)) != NULL)
        settle(l, r, code, NULL);
    if (report && !l->freed && l->cbs.on_closed != NULL)
        l->cbs.on_closed(l, code, l->cbs.arg);
}

static void fail(rlock__link *l, int code, const char *why)
{
    if (why != NULL && l->err[0] == '\0') {
        strncpy(l->err, why, sizeof(l->err) - 1);
    }
    shut(l, code, true);
}

/* A failure found inside a user's call: reported from the timer. */
static void defer_fail(rlock__link *l, int code)
{
    stop_io(l);
    l->state = FAILED;
    l->fail_code = code;
    arm_at(l, 0);
}

/* Ends a dispatch; frees the link if it was freed inside. Returns true if
 * the link is gone. */
static bool leave(rlock__link *l)
{
    if (--l->depth == 0 && l->freed) {
        free(l);
        return true;
    }
    return false;
}

/* ---------------------------------------------------------- replies */

static bool names(const req *r, const rlock__push *p)
{
    return r->matched < r->nchan && r->lens[r->matched] == p->channel_len &&
           memcmp(r->chans[r->matched], p->channel, p->channel_len) == 0;
}

/* A subscriber's reply that no request asked for: returns true if it was
 * one (a message or the server's own unsubscribe) and was handled. */
static bool dispatch_push(rlock__link *l, redisReply *reply)
{
    rlock__push p;
    const char *verb;
    int k = rlock__link_classify(reply, &p, &verb);
    if (k == 0)
        return false;
    if (k == 2) {
        req *h = l->head;
        if (h != NULL && h->notice != NULL && strcmp(h->notice, verb) == 0 &&
            names(h, &p)) {
            if (++h->matched == h->nchan)
                settle(l, pop(l), 0, NULL);
            return true;
        }
        if (strstr(verb, "unsubscribe") == NULL)
            return true; /* a confirmation nobody awaits: nothing to do */
    }
    l->cbs.on_push(l, &p, l->cbs.arg);
    return true;
}

static void dispatch(rlock__link *l, redisReply *reply)
{
    if (l->cbs.on_push != NULL && dispatch_push(l, reply))
        return;
    req *r = pop(l);
    if (r == NULL) {
        fail(l, RLOCK_EPROTO, "a reply to no request");
        return;
    }
    if (r->hello >= 0) {
        int rc = rlock__wire_hello_result(r->hello, reply);
        req_free(r);
        if (rc != RLOCK_OK) {
            const char *why = reply->type == REDIS_REPLY_ERROR
                                  ? reply->str
                                  : "unexpected handshake reply";
            fail(l, rc, why);
            return;
        }
        if (--l->hello_left == 0) {
            l->state = UP;
            rearm(l);
            if (l->cbs.on_up != NULL)
                l->cbs.on_up(l, 0, l->cbs.arg);
        }
        return;
    }
    settle(l, r, 0, reply);
}

/* Reads what the socket has and dispatches every complete reply. */
static void read_all(rlock__link *l)
{
    for (;;) {
        int rc = rlock__wire_fill(&l->w);
        if (rc > 0)
            return;
        if (rc < 0) {
            fail(l, rc, NULL);
            return;
        }
        l->last_read_ms = rlock__io_now_ms();
        for (;;) {
            redisReply *reply = NULL;
            rc = rlock__wire_reply(&l->w, &reply);
            if (rc != 0) {
                fail(l, rc, NULL);
                return;
            }
            if (reply == NULL)
                break;
            dispatch(l, reply);
            freeReplyObject(reply);
            if (l->state == FAILED || l->freed)
                return;
        }
    }
}

/* ------------------------------------------------------------ events */

static void watch(rlock__link *l, bool rd, bool wr)
{
    if (rd)
        ev_io_start(l->loop, &l->rio);
    else
        ev_io_stop(l->loop, &l->rio);
    if (wr)
        ev_io_start(l->loop, &l->wio);
    else
        ev_io_stop(l->loop, &l->wio);
}

static void flush(rlock__link *l)
{
    int rc = rlock__wire_flush(&l->w);
    if (rc < 0) {
        fail(l, rc, NULL);
        return;
    }
    watch(l, true, rc == RLOCK__IO_WANT_WRITE || l->w.read_wants);
}

static void connect_step(rlock__link *l)
{
    int rc = rlock__wire_connect_step(&l->w);
    if (rc < 0) {
        fail(l, rc, NULL);
        return;
    }
    if (rc > 0) {
        watch(l, rc == RLOCK__IO_WANT_READ, rc == RLOCK__IO_WANT_WRITE);
        return;
    }
    l->state = HELLO;
    if (l->hello_left == 0) {
        l->state = UP;
        rearm(l);
        if (l->cbs.on_up != NULL)
            l->cbs.on_up(l, 0, l->cbs.arg);
        if (l->state != UP || l->freed)
            return;
    }
    flush(l);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    rlock__link *l = w->data;
    l->depth++;
    if (l->state == CONNECTING) {
        connect_step(l);
    } else if (l->state != FAILED) {
        if ((revents & EV_READ) || l->w.read_wants)
            read_all(l);
        if (l->state != FAILED && !l->freed)
            flush(l);
    }
    leave(l);
}

static void on_batch(struct ev_loop *loop, ev_prepare *p, int revents)
{
    (void)revents;
    rlock__link *l = p->data;
    ev_prepare_stop(loop, p);
    l->depth++;
    if (l->state != FAILED && !l->freed && l->state != CONNECTING)
        flush(l);
    leave(l);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    rlock__link *l = t->data;
    l->armed_at = INT64_MAX;
    l->depth++;
    int64_t now = rlock__io_now_ms();
    if (l->fail_code != 0) {
        fail(l, l->fail_code, NULL);
    } else if ((l->state == CONNECTING || l->state == HELLO) &&
               now >= l->connect_deadline_ms) {
        fail(l, RLOCK_ETIMEDOUT,
             l->state == CONNECTING ? "connect timed out"
                                    : "handshake timed out");
    } else if (now >= stale_point(l)) {
        fail(l, RLOCK_ECONN, "no byte from the server in stale_ms: "
                             "taken for half-open");
    } else {
        for (req *r = l->head; r != NULL; r = r->next) {
            if (r->done || r->hello >= 0 || r->deadline_ms > now)
                continue;
            r->done = true;
            r->cb(l, RLOCK_ETIMEDOUT, NULL, r->arg);
            /* requests are freed only when popped, which the callback
             * cannot do; a failure or a free empties the FIFO */
            if (l->state == FAILED || l->freed)
                break;
        }
        if (l->state != FAILED && !l->freed)
            rearm(l);
    }
    leave(l);
}

/* ------------------------------------------------------------- API */

int rlock__link_open(struct ev_loop *loop, const rlock__link_opts *o,
                     const rlock__link_cbs *cbs, rlock__link **out)
{
    if (out != NULL)
        *out = NULL;
    if (loop == NULL || o == NULL || cbs == NULL || out == NULL ||
        o->connect_timeout_ms <= 0 || o->stale_ms < 0 ||
        (o->user != NULL && o->password == NULL))
        return RLOCK_EINVAL;
    rlock__link *l = rlock__calloc(1, sizeof(*l));
    if (l == NULL)
        return RLOCK_ENOMEM;
    l->loop = loop;
    l->cbs = *cbs;
    l->stale_ms = o->stale_ms;
    l->armed_at = INT64_MAX;
    l->connect_deadline_ms = rlock__io_now_ms() + o->connect_timeout_ms;
    ev_timer_init(&l->timer, on_timer, 0.0, 0.0);
    l->timer.data = l;
    ev_prepare_init(&l->batch, on_batch);
    l->batch.data = l;
    int rc = rlock__wire_start(&l->w, o);
    if (rc == RLOCK_EINVAL || rc == RLOCK_ENOMEM) {
        rlock__wire_close(&l->w);
        free(l);
        return rc;
    }
    ev_io_init(&l->rio, on_io, l->w.fd, EV_READ);
    ev_io_init(&l->wio, on_io, l->w.fd, EV_WRITE);
    l->rio.data = l->wio.data = l;
    int kinds[3];
    int n = rc >= 0 ? rlock__wire_append_hello(&l->w, o, kinds) : 0;
    for (int i = 0; i < n; i++) {
        req *r = rlock__calloc(1, sizeof(*r));
        if (r == NULL) {
            n = RLOCK_ENOMEM;
            break;
        }
        r->hello = kinds[i];
        r->queued_ms = rlock__io_now_ms();
        push_tail(l, r);
        l->hello_left++;
    }
    if (n < 0) {
        l->freed = true;
        shut(l, RLOCK_ENOMEM, false);
        free(l);
        return RLOCK_ENOMEM;
    }
    l->state = CONNECTING;
    if (rc < 0) {
        memcpy(l->err, l->w.err, sizeof(l->err));
        defer_fail(l, rc);
    } else {
        /* a connect that finished at once still goes through the loop, so
         * that on_up never runs inside this call */
        watch(l, rc == RLOCK__IO_WANT_READ, rc != RLOCK__IO_WANT_READ);
        rearm(l);
    }
    *out = l;
    return RLOCK_OK;
}

static int enqueue(rlock__link *l, int argc, const char **argv,
                   const size_t *lens, int64_t timeout_ms, req *r)
{
    if (l->state == FAILED || l->freed) {
        req_free(r);
        return RLOCK_ECONN;
    }
    if (rlock__wire_append(&l->w, argc, argv, lens) != 0) {
        req_free(r);
        return RLOCK_ENOMEM;
    }
    int64_t now = rlock__io_now_ms();
    r->hello = -1;
    r->queued_ms = now;
    r->deadline_ms = now + timeout_ms;
    bool was_idle = l->head == NULL;
    push_tail(l, r);
    int64_t at = r->deadline_ms;
    if (was_idle && l->stale_ms > 0 && now + l->stale_ms < at)
        at = now + l->stale_ms;
    if (at < l->armed_at)
        arm_at(l, at);
    if (l->state == CONNECTING)
        return RLOCK_OK; /* written once connected, behind the handshake */
    /* written before the loop next waits: every command its callbacks
     * send this round (a batch of submitted requests, say) goes out in
     * one write, at no cost in latency to a lone one */
    ev_prepare_start(l->loop, &l->batch);
    return RLOCK_OK;
}

int rlock__link_send(rlock__link *l, int argc, const char **argv,
                     const size_t *lens, int64_t timeout_ms,
                     rlock__link_reply_cb cb, rlock__link_late_cb late,
                     void *arg)
{
    if (l == NULL || argc < 1 || argv == NULL || cb == NULL ||
        timeout_ms <= 0)
        return RLOCK_EINVAL;
    req *r = rlock__calloc(1, sizeof(*r));
    if (r == NULL)
        return RLOCK_ENOMEM;
    r->cb = cb;
    r->late = late;
    r->arg = arg;
    return enqueue(l, argc, argv, lens, timeout_ms, r);
}

static const char *notice_of(const char *verb)
{
    static const char *const verbs[] = {"subscribe",   "unsubscribe",
                                        "psubscribe",  "punsubscribe",
                                        "ssubscribe",  "sunsubscribe"};
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcasecmp(verb, verbs[i]) == 0)
            return verbs[i];
    return NULL;
}

int rlock__link_subscribe(rlock__link *l, const char *verb, int n,
                          const char **channels, const size_t *lens,
                          int64_t timeout_ms, rlock__link_reply_cb cb,
                          void *arg)
{
    if (l == NULL || l->cbs.on_push == NULL || verb == NULL || n < 1 ||
        n > 1024 || channels == NULL || cb == NULL || timeout_ms <= 0 ||
        notice_of(verb) == NULL)
        return RLOCK_EINVAL;
    req *r = rlock__calloc(1, sizeof(*r));
    const char **argv = rlock__calloc((size_t)n + 1, sizeof(*argv));
    size_t *argl = rlock__calloc((size_t)n + 1, sizeof(*argl));
    int rc = RLOCK_ENOMEM;
    if (r == NULL || argv == NULL || argl == NULL)
        goto out;
    r->cb = cb;
    r->arg = arg;
    r->notice = notice_of(verb);
    r->chans = rlock__calloc((size_t)n, sizeof(*r->chans));
    r->lens = rlock__calloc((size_t)n, sizeof(*r->lens));
    if (r->chans == NULL || r->lens == NULL)
        goto out;
    argv[0] = verb;
    argl[0] = strlen(verb);
    for (int i = 0; i < n; i++) {
        if (channels[i] == NULL) {
            rc = RLOCK_EINVAL;
            goto out;
        }
        size_t len = lens != NULL ? lens[i] : strlen(channels[i]);
        if ((r->chans[i] = rlock__malloc(len + 1)) == NULL)
            goto out;
        r->nchan = i + 1;
        memcpy(r->chans[i], channels[i], len);
        r->chans[i][len] = '\0';
        r->lens[i] = len;
        argv[i + 1] = r->chans[i];
        argl[i + 1] = len;
    }
    rc = enqueue(l, n + 1, argv, argl, timeout_ms, r);
    r = NULL; /* enqueue owns it */
out:
    if (r != NULL)
        req_free(r);
    free(argv);
    free(argl);
    return rc;
}

bool rlock__link_is_up(const rlock__link *l)
{
    return l != NULL && l->state == UP;
}

bool rlock__link_failed(const rlock__link *l)
{
    return l == NULL || l->state == FAILED || l->freed;
}

size_t rlock__link_pending(const rlock__link *l)
{
    size_t n = 0;
    for (const req *r = l ? l->head : NULL; r != NULL; r = r->next)
        n += r->hello < 0;
    return n;
}

const char *rlock__link_error(const rlock__link *l)
{
    return l != NULL ? l->err : "";
}

void rlock__link_free(rlock__link *l)
{
    if (l == NULL || l->freed)
        return;
    l->freed = true;
    l->depth++;
    if (l->state != FAILED || l->fail_code != 0)
        shut(l, RLOCK_ECLOSED, false);
    ev_timer_stop(l->loop, &l->timer);
    stop_io(l);
    leave(l);
}
