/*
 * countdown.c: what a count-down latch (Redisson's RCountDownLatch) sends
 * to Redis. Named "countdown" inside rlock, since "latch" there is the
 * unlock latch of a lock's release (keys.c).
 *
 * Redis state (Redisson 4.7.0): the latch is a string key N holding the
 * count; its channel is "redisson_countdownlatch__channel__{N}" (always
 * braced, whatever N holds); "0" on it says the latch opened (the count
 * reached zero and the key is gone), "1" that it was set or deleted.
 *
 * Pure: names and call specs only.
 */
#include "proto.h"

#include <stdio.h>
#include <string.h>

/* Redisson's CountDownLatchPubSub messages. */
#define ZERO_COUNT_MESSAGE "0"
#define NEW_COUNT_MESSAGE  "1"

/* Returns the malloc'd channel of latch N, or NULL. */
char *rlock__countdown_channel(const char *name)
{
    static const char prefix[] = "redisson_countdownlatch__channel__{";
    size_t len = sizeof(prefix) + strlen(name) + 1;
    char *out = rlock__malloc(len);
    if (out != NULL)
        snprintf(out, len, "%s%s}", prefix, name);
    return out;
}

static const char *publish_of(const rlock__countdown_desc *d)
{
    return d->publish != NULL ? d->publish : "PUBLISH";
}

static void spec_script(rlock__spec *s, const rlock__script *script)
{
    memset(s, 0, sizeof(*s));
    s->script = script;
    s->reply = RLOCK__REPLY_INTEGER;
    s->numkeys = 2;
}

/* trySetCount(d->count): an integer reply, 1 when set. */
void rlock__countdown_try_set(rlock__spec *s, const rlock__countdown_desc *d)
{
    spec_script(s, &rlock__script_latch_try_set_count);
    snprintf(s->nums[0], sizeof(s->nums[0]), "%lld", (long long)d->count);
    RLOCK__SPEC_SET(s, d->name, d->channel, NEW_COUNT_MESSAGE, s->nums[0],
                    publish_of(d));
}

/* countDown(): a nil reply. */
void rlock__countdown_count_down(rlock__spec *s,
                                 const rlock__countdown_desc *d)
{
    spec_script(s, &rlock__script_latch_count_down);
    RLOCK__SPEC_SET(s, d->name, d->channel, ZERO_COUNT_MESSAGE,
                    publish_of(d));
}

/* delete(): an integer reply, 1 when there was a latch. */
void rlock__countdown_delete(rlock__spec *s, const rlock__countdown_desc *d)
{
    spec_script(s, &rlock__script_latch_delete);
    RLOCK__SPEC_SET(s, d->name, d->channel, NEW_COUNT_MESSAGE,
                    publish_of(d));
}

/* getCount(): GET N, whose nil (no latch) is a count of 0. */
void rlock__countdown_get(rlock__spec *s, const rlock__countdown_desc *d)
{
    memset(s, 0, sizeof(*s));
    s->reply = RLOCK__REPLY_INTEGER;
    RLOCK__SPEC_SET(s, "GET", d->name);
}

/* What a message on a latch's channel means to its waiters. */
int rlock__countdown_message(const char *payload, size_t len)
{
    if (len == 1 && payload[0] == ZERO_COUNT_MESSAGE[0])
        return RLOCK__COUNTDOWN_OPENED;
    return RLOCK__COUNTDOWN_OTHER;
}
