/*
 * push.c: tells what a reply on a subscriber connection is. Pure: the
 * link (link.c) calls it on every reply, and a unit test on bytes fed to a
 * redisReader, so a push the server rarely sends (a cluster's
 * "sunsubscribe") is checked without the cluster.
 */
#include "io/link.h"

#include <hiredis/hiredis.h>
#include <string.h>
#include <strings.h>

static bool is_text(const redisReply *r)
{
    return r != NULL && (r->type == REDIS_REPLY_STRING ||
                         r->type == REDIS_REPLY_STATUS);
}

static bool named(const redisReply *r, const char *name)
{
    return strlen(name) == r->len && strncasecmp(r->str, name, r->len) == 0;
}

static const char *const notices[] = {"subscribe",   "unsubscribe",
                                      "psubscribe",  "punsubscribe",
                                      "ssubscribe",  "sunsubscribe"};

int rlock__link_classify(const redisReply *r, rlock__push *p,
                         const char **verb)
{
    memset(p, 0, sizeof(*p));
    *verb = NULL;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        !is_text(r->element[0]))
        return 0;
    const redisReply *kind = r->element[0];
    redisReply *const *e = r->element;
    if ((named(kind, "message") || named(kind, "smessage")) &&
        r->elements == 3 && is_text(e[1]) && is_text(e[2])) {
        p->kind = named(kind, "message") ? RLOCK__PUSH_MESSAGE
                                         : RLOCK__PUSH_SMESSAGE;
        p->channel = e[1]->str;
        p->channel_len = e[1]->len;
        p->payload = e[2]->str;
        p->payload_len = e[2]->len;
        return 1;
    }
    if (named(kind, "pmessage") && r->elements == 4 && is_text(e[1]) &&
        is_text(e[2]) && is_text(e[3])) {
        p->kind = RLOCK__PUSH_PMESSAGE;
        p->pattern = e[1]->str;
        p->pattern_len = e[1]->len;
        p->channel = e[2]->str;
        p->channel_len = e[2]->len;
        p->payload = e[3]->str;
        p->payload_len = e[3]->len;
        return 1;
    }
    if (r->elements != 3 || e[2]->type != REDIS_REPLY_INTEGER)
        return 0;
    for (size_t i = 0; i < sizeof(notices) / sizeof(notices[0]); i++) {
        if (!named(kind, notices[i]))
            continue;
        *verb = notices[i];
        /* an UNSUBSCRIBE of nothing answers with a nil channel */
        if (is_text(e[1])) {
            p->channel = e[1]->str;
            p->channel_len = e[1]->len;
        }
        p->kind = i == 1   ? RLOCK__PUSH_UNSUBSCRIBED
                  : i == 3 ? RLOCK__PUSH_PUNSUBSCRIBED
                           : RLOCK__PUSH_SUNSUBSCRIBED;
        return 2;
    }
    return 0;
}
