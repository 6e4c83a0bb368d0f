/*
 * core/log.c: the log hook (rlock_config_set_log).
 *
 * rlock prints nothing by itself. A line is formatted only when the hook
 * wants its level, and handed to the hook on an rlock thread with no rlock
 * lock held: the callers of rlock__log promise that (core/core.h), and
 * connecting, which runs on the user's thread, queues its lines for the I/O
 * thread with rlock__log_later.
 *
 * In src/core: it needs the client's settings and its I/O thread; the
 * transport reports its failures to its callers, which log them.
 */
#include "core/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long enough for a Redis error and a channel name or two; longer lines are
 * cut, which a log line may be. */
#define RLOCK__LOG_LINE 512

typedef struct log_task {
    rlock__task task;
    rlock_client *client;
    int level;
    char line[RLOCK__LOG_LINE];
} log_task;

/* Returns true when c's hook takes lines of level. */
bool rlock__log_enabled(const rlock_client *c, int level)
{
    return c != NULL && c->cfg.log_cb != NULL && level <= c->cfg.log_level;
}

/* Formats one line and hands it to c's hook, if it takes that level. */
void rlock__log(const rlock_client *c, int level, const char *fmt, ...)
{
    if (!rlock__log_enabled(c, level))
        return;
    char line[RLOCK__LOG_LINE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    c->cfg.log_cb(level, line, c->cfg.log_arg);
}

static void run_log_task(rlock__task *t, int status)
{
    log_task *lt = (log_task *)t;
    if (status == 0) /* a client closing before its first turn says nothing */
        rlock__log(lt->client, lt->level, "%s", lt->line);
    free(lt);
}

/* As rlock__log, from any thread: the line is formatted now and given to
 * the hook on the I/O thread. Out of memory, the line is dropped. */
void rlock__log_later(rlock_client *c, int level, const char *fmt, ...)
{
    if (!rlock__log_enabled(c, level) || c->loop == NULL)
        return;
    log_task *lt = rlock__calloc(1, sizeof(*lt));
    if (lt == NULL)
        return;
    lt->task.run = run_log_task;
    lt->client = c;
    lt->level = level;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lt->line, sizeof(lt->line), fmt, ap);
    va_end(ap);
    rlock__loop_submit(c->loop, &lt->task);
}
