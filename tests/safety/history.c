/*
 * history.c: JSON lines of the safety worker's history (history.h).
 *
 * No string is escaped: every string written is ASCII without quotes or
 * backslashes by construction (the process name is checked when parsed,
 * lock names are "safety:<kind>:<n>", owners are a UUID and a number, and
 * errors are rlock's code names or our own words).
 */
#include "history.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Enough for the longest line: the fields are all short. */
#define LINE_MAX_LEN 1024

int history_open(history *h, const char *path)
{
    h->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    return h->fd < 0 ? -1 : 0;
}

/* Appends ,"name":"value" when value is not NULL. */
static int put_str(char *buf, int len, const char *name, const char *value)
{
    if (value == NULL || len >= LINE_MAX_LEN)
        return len;
    return len + snprintf(buf + len, (size_t)(LINE_MAX_LEN - len),
                          ",\"%s\":\"%s\"", name, value);
}

static int put_int(char *buf, int len, const char *name, int64_t value)
{
    if (len >= LINE_MAX_LEN)
        return len;
    return len + snprintf(buf + len, (size_t)(LINE_MAX_LEN - len),
                          ",\"%s\":%" PRId64, name, value);
}

int history_write(history *h, const hist_event *e)
{
    char buf[LINE_MAX_LEN];
    char mode[2] = {e->mode, '\0'};
    struct timespec mono, wall;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &wall);

    int len = snprintf(buf, sizeof(buf), "{\"id\":\"%s-%d-%lu\"", e->proc,
                       e->thread, e->seq);
    len = put_str(buf, len, "type", e->type);
    len = put_str(buf, len, "op", e->op);
    len = put_str(buf, len, "proc", e->proc);
    len = put_int(buf, len, "thread", e->thread);
    len = put_str(buf, len, "owner", e->owner);
    len = put_str(buf, len, "lock", e->lock);
    len = put_str(buf, len, "kind", e->kind);
    len = put_str(buf, len, "mode", e->mode ? mode : NULL);
    len = put_int(buf, len, "mono_ns",
                  (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec);
    len = put_int(buf, len, "wall_ms",
                  (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000);
    if (e->has_token)
        len = put_int(buf, len, "token", e->token);
    if (e->has_value)
        len = put_int(buf, len, "value", e->value);
    len = put_str(buf, len, "err", e->err);
    len = put_str(buf, len, "reason", e->reason);
    if (e->hold > 0)
        len = put_int(buf, len, "hold", e->hold);
    if (e->node >= 0)
        len = put_int(buf, len, "node", e->node);
    if (len >= LINE_MAX_LEN - 2)
        return -1;
    buf[len++] = '}';
    buf[len++] = '\n';

    /* one write(2): O_APPEND places it whole after every other line */
    ssize_t n;
    do {
        n = write(h->fd, buf, (size_t)len);
    } while (n < 0 && errno == EINTR);
    return n == len ? 0 : -1;
}

void history_close(history *h)
{
    if (h->fd < 0)
        return;
    fsync(h->fd);
    close(h->fd);
    h->fd = -1;
}
