/*
 * link_sync.c: the blocking link, on the calling thread (what core/direct.c, the
 * connect-time check and the rlock tool's connection need), on the same
 * wire as the loop link: the same connect, secure stream and handshake,
 * waited for with poll() instead of libev.
 *
 * Invariant: `owed` holds, in order, one entry per command sent whose reply
 * has not been read: the current call's, those whose callers stopped
 * waiting (a timed-out call, with its late callback; rlock__link_sync_send,
 * with none), and appended ones ("mine": a pipeline's, read back by
 * rlock__link_sync_read). Redis answers in order, so a call settles every
 * reply owed before its own, and a read those owed before the first
 * appended one; a broken or freed link settles them with NULL. A reply
 * that comes with nothing owed is one the server sent unasked (a
 * subscriber's message): only a read takes it. Every wait is bounded by
 * the caller's deadline, whatever the server does (a reply trickling a
 * byte at a time included), and a timeout leaves the link usable.
 */
#include "io/io.h"
#include "proto/proto.h"

#include "rlock.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct owed_reply {
    rlock__link_sync_late_cb late; /* NULL: dropped */
    void *arg;
    bool mine; /* rlock__link_sync_append's: rlock__link_sync_read's */
} owed_reply;

struct rlock__link_sync {
    rlock__wire w;
    owed_reply *owed; /* ring buffer */
    size_t owed_head, owed_n, owed_cap;
    bool broken;
};

static int owe(rlock__link_sync *s, rlock__link_sync_late_cb late, void *arg,
               bool mine)
{
    if (s->owed_n == s->owed_cap) {
        size_t cap = s->owed_cap ? s->owed_cap * 2 : 8;
        owed_reply *grown = rlock__malloc(cap * sizeof(*grown));
        if (grown == NULL)
            return RLOCK_ENOMEM;
        for (size_t i = 0; i < s->owed_n; i++)
            grown[i] = s->owed[(s->owed_head + i) % s->owed_cap];
        free(s->owed);
        s->owed = grown;
        s->owed_cap = cap;
        s->owed_head = 0;
    }
    s->owed[(s->owed_head + s->owed_n++) % s->owed_cap] =
        (owed_reply){late, arg, mine};
    return RLOCK_OK;
}

/* Hands the oldest owed reply to whoever waits for it (reply may be NULL:
 * it will never come). */
static void settle_owed(rlock__link_sync *s, redisReply *reply)
{
    owed_reply o = s->owed[s->owed_head];
    s->owed_head = (s->owed_head + 1) % s->owed_cap;
    s->owed_n--;
    if (o.late != NULL)
        o.late(reply, o.arg);
}

/* Takes back the entry owe() just added (nothing was sent for it). */
static void unowe(rlock__link_sync *s)
{
    s->owed_n--;
}

/* Waits for the fd to become ready as want says, by deadline_ms; a
 * deadline already past still sees whether it is ready now. */
static int wait_for(const rlock__wire *w, int want, int64_t deadline_ms)
{
    struct pollfd pfd = {.fd = w->fd,
                         .events = want == RLOCK__IO_WANT_READ ? POLLIN
                                                               : POLLOUT};
    for (;;) {
        int64_t left = deadline_ms - rlock__io_now_ms();
        int n = poll(&pfd, 1,
                     left <= 0 ? 0 : left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return RLOCK_OK; /* errors and hang-ups show in the next I/O */
        if (n == 0 && left <= 0)
            return RLOCK_ETIMEDOUT;
        if (n < 0 && errno != EINTR)
            return RLOCK_ECONN;
    }
}

static int flush_by(rlock__wire *w, int64_t deadline_ms)
{
    for (;;) {
        int rc = rlock__wire_flush(w);
        if (rc <= 0)
            return rc;
        if ((rc = wait_for(w, rc, deadline_ms)) != 0)
            return rc;
    }
}

static int reply_by(rlock__wire *w, int64_t deadline_ms, redisReply **out)
{
    for (;;) {
        int rc = rlock__wire_reply(w, out);
        if (rc != 0 || *out != NULL)
            return rc;
        /* Unless the stream holds bytes already, wait for the socket
         * before reading, rather than read to be told to wait: a reply is
         * never there as soon as its command is written, and a round trip
         * then costs one system call less. */
        if (!w->read_wants && !rlock__wire_pending(w) &&
            (rc = wait_for(w, RLOCK__IO_WANT_READ, deadline_ms)) != 0)
            return rc;
        rc = rlock__wire_fill(w);
        if (rc > 0)
            rc = wait_for(w, rc, deadline_ms);
        if (rc != 0)
            return rc;
    }
}

static void say(char *err, size_t errlen, const char *why)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", why);
}

static int greet(rlock__link_sync *s, const rlock__link_opts *o,
                 int64_t deadline_ms, char *err, size_t errlen)
{
    int rc = rlock__wire_start(&s->w, o);
    while (rc > 0) {
        if ((rc = wait_for(&s->w, rc, deadline_ms)) != 0)
            break;
        rc = rlock__wire_connect_step(&s->w);
    }
    if (rc != 0) {
        say(err, errlen, rc == RLOCK_ETIMEDOUT ? "connect timed out" : s->w.err);
        return rc;
    }
    int kinds[3];
    int n = rlock__wire_append_hello(&s->w, o, kinds);
    if (n < 0)
        return n;
    if ((rc = flush_by(&s->w, deadline_ms)) != 0) {
        say(err, errlen, rc == RLOCK_ETIMEDOUT ? "handshake timed out"
                                               : s->w.err);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if ((rc = reply_by(&s->w, deadline_ms, &r)) != 0) {
            say(err, errlen, rc == RLOCK_ETIMEDOUT ? "handshake timed out"
                                                   : s->w.err);
            return rc;
        }
        rc = rlock__wire_hello_result(kinds[i], r);
        if (rc != 0)
            say(err, errlen, r->type == REDIS_REPLY_ERROR
                                 ? r->str
                                 : "unexpected handshake reply");
        freeReplyObject(r);
        if (rc != 0)
            return rc;
    }
    return RLOCK_OK;
}

int rlock__link_sync_open(const rlock__link_opts *o, rlock__link_sync **out,
                          char *err, size_t errlen)
{
    say(err, errlen, "");
    if (out == NULL)
        return RLOCK_EINVAL;
    *out = NULL;
    if (o == NULL || o->connect_timeout_ms <= 0 ||
        (o->user != NULL && o->password == NULL))
        return RLOCK_EINVAL;
    rlock__link_sync *s = rlock__calloc(1, sizeof(*s));
    if (s == NULL)
        return RLOCK_ENOMEM;
    int rc = greet(s, o, rlock__io_now_ms() + o->connect_timeout_ms, err,
                   errlen);
    if (rc != 0) {
        rlock__wire_close(&s->w);
        free(s);
        return rc;
    }
    *out = s;
    return RLOCK_OK;
}

/* Marks the link broken on anything but a timeout; the replies owed then
 * never come. */
static int outcome(rlock__link_sync *s, int rc)
{
    if (rc != 0 && rc != RLOCK_ETIMEDOUT) {
        s->broken = true;
        rlock__wire_close(&s->w);
        while (s->owed_n > 0)
            settle_owed(s, NULL);
    }
    return rc;
}

/* Reads and settles owed replies until `keep` are left, by deadline_ms. */
static int settle_until(rlock__link_sync *s, size_t keep, int64_t deadline_ms)
{
    while (s->owed_n > keep) {
        redisReply *late = NULL;
        int rc = reply_by(&s->w, deadline_ms, &late);
        if (rc != 0)
            return rc;
        settle_owed(s, late);
        freeReplyObject(late);
    }
    return RLOCK_OK;
}

int rlock__link_sync_call(rlock__link_sync *s, int argc, const char **argv,
                          const size_t *lens, int64_t deadline_ms,
                          redisReply **out, rlock__link_sync_late_cb late,
                          void *arg)
{
    if (out != NULL)
        *out = NULL;
    if (s == NULL || out == NULL || argc < 1 || argv == NULL)
        return RLOCK_EINVAL;
    if (s->broken)
        return RLOCK_ECONN;
    if (owe(s, late, arg, false) != 0)
        return RLOCK_ENOMEM;
    if (rlock__wire_append(&s->w, argc, argv, lens) != 0) {
        unowe(s);
        return RLOCK_ENOMEM;
    }
    int rc = flush_by(&s->w, deadline_ms);
    if (rc == 0)
        rc = settle_until(s, 1, deadline_ms);
    if (rc == 0 && (rc = reply_by(&s->w, deadline_ms, out)) == 0) {
        s->owed_n--; /* ours: read, so nobody is owed it */
        s->owed_head = (s->owed_head + 1) % s->owed_cap;
    } else if (rc != RLOCK_ETIMEDOUT) {
        /* broken: our caller hears it now, so late never will */
        s->owed[(s->owed_head + s->owed_n - 1) % s->owed_cap].late = NULL;
    }
    return outcome(s, rc);
}

/* Queues one command whose reply is owed as mine says; writes what the
 * socket takes now (the rest goes with the next call or read). */
static int queue(rlock__link_sync *s, int argc, const char **argv,
                 const size_t *lens, bool mine)
{
    if (s == NULL || argc < 1 || argv == NULL)
        return RLOCK_EINVAL;
    if (s->broken)
        return RLOCK_ECONN;
    if (owe(s, NULL, NULL, mine) != 0)
        return RLOCK_ENOMEM;
    if (rlock__wire_append(&s->w, argc, argv, lens) != 0) {
        unowe(s);
        return RLOCK_ENOMEM;
    }
    int rc = rlock__wire_flush(&s->w);
    return rc >= 0 ? RLOCK_OK : outcome(s, rc);
}

int rlock__link_sync_send(rlock__link_sync *s, int argc, const char **argv,
                          const size_t *lens)
{
    return queue(s, argc, argv, lens, false);
}

int rlock__link_sync_append(rlock__link_sync *s, int argc, const char **argv,
                            const size_t *lens)
{
    return queue(s, argc, argv, lens, true);
}

int rlock__link_sync_read(rlock__link_sync *s, int64_t deadline_ms,
                          redisReply **out)
{
    if (out != NULL)
        *out = NULL;
    if (s == NULL || out == NULL)
        return RLOCK_EINVAL;
    if (s->broken)
        return RLOCK_ECONN;
    int rc = flush_by(&s->w, deadline_ms);
    /* the replies of those who stopped waiting come first */
    while (rc == 0 && s->owed_n > 0 && !s->owed[s->owed_head].mine) {
        redisReply *late = NULL;
        if ((rc = reply_by(&s->w, deadline_ms, &late)) == 0) {
            settle_owed(s, late);
            freeReplyObject(late);
        }
    }
    if (rc == 0 && (rc = reply_by(&s->w, deadline_ms, out)) == 0 &&
        s->owed_n > 0) {
        s->owed_n--; /* an appended command's: read, so owed no more */
        s->owed_head = (s->owed_head + 1) % s->owed_cap;
    }
    return outcome(s, rc);
}

void rlock__link_sync_abandon(rlock__link_sync *s)
{
    for (size_t i = 0; s != NULL && i < s->owed_n; i++)
        s->owed[(s->owed_head + i) % s->owed_cap].mine = false;
}

int rlock__link_sync_drain(rlock__link_sync *s)
{
    if (s == NULL)
        return RLOCK_EINVAL;
    if (s->broken)
        return RLOCK_ECONN;
    int rc = rlock__wire_flush(&s->w);
    while (rc >= 0 && s->owed_n > 0) {
        redisReply *late = NULL;
        rc = rlock__wire_reply(&s->w, &late);
        if (rc == 0 && late != NULL) {
            settle_owed(s, late);
            freeReplyObject(late);
        } else if (rc == 0 && (rc = rlock__wire_fill(&s->w)) > 0) {
            break; /* nothing more to read now */
        }
    }
    if (rc < 0)
        return outcome(s, rc);
    return (int)s->owed_n;
}

int rlock__link_sync_fd(const rlock__link_sync *s)
{
    return s != NULL && !s->broken ? s->w.fd : -1;
}

const char *rlock__link_sync_error(const rlock__link_sync *s)
{
    return s != NULL && s->broken ? s->w.err : "";
}

bool rlock__link_sync_broken(const rlock__link_sync *s)
{
    return s == NULL || s->broken;
}

void rlock__link_reply_free(redisReply *r)
{
    freeReplyObject(r);
}

void rlock__link_sync_free(rlock__link_sync *s)
{
    if (s == NULL)
        return;
    rlock__wire_close(&s->w);
    while (s->owed_n > 0)
        settle_owed(s, NULL);
    free(s->owed);
    free(s);
}
