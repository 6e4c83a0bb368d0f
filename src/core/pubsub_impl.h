/*
 * core/pubsub_impl.h: the channel table's state, shared by pubsub.c (the
 * table and its entries), pubsub_links.c (the subscriber links and the
 * commands sent on them) and pubsub_answers.c (what the server says on
 * them). Private to those three files.
 */
#ifndef RLOCK_CORE_PUBSUB_IMPL_H
#define RLOCK_CORE_PUBSUB_IMPL_H

#include "core/core.h"
#include "io/link.h"

#define RLOCK__REFUSAL_HOLDOFF_MS     10000
#define RLOCK__REFUSAL_HOLDOFF_MAX_MS 300000

typedef enum {
    CH_IDLE,
    CH_SUBSCRIBING,
    CH_SUBSCRIBED,
    CH_UNSUBSCRIBING,
    CH_REFUSED,
} channel_state;

typedef struct channel {
    struct rlock__pubsub *ps;
    char *name;
    channel_state state;
    bool missed;  /* subscription was interrupted: messages may be lost */
    bool allowed; /* the server accepted its SUBSCRIBE before */
    int inflight; /* (UN)SUBSCRIBEs sent and not yet answered */
    int on;       /* the link (index in ps->links) of its last command */
    int nentries;
    int cap;
    rlock__entry **entries;
} channel;

/* One subscriber link, to one node (NULL: the client's server). */
typedef struct sublink {
    struct rlock__cnode *node;
    rlock__link *link; /* NULL: not open */
    bool was_up; /* a link came up before: the next is a reconnect */
} sublink;

struct rlock__pubsub {
    rlock_client *client;
    sublink *links; /* never shrinks: channels keep indexes into it */
    int nlinks;
    int caplinks;
    bool stopping;
    rlock__map channels; /* name -> channel */
    rlock__timer *retry;
    rlock__timer *linger; /* ends lingering entries' stays */
    bool linger_armed;
    int64_t linger_due_ms;
    int64_t backoff_ms;
    bool retry_armed;
    int64_t retry_due_ms;
    int64_t refused_until_ms; /* no SUBSCRIBE of a new channel before */
    int64_t holdoff_ms;       /* the next refusal's hold-off */
    bool warned;              /* the refusal warning was given */
};

/* Frees ch if nothing needs it any more: no entry, no answer owed. Returns
 * true if it did (pubsub.c). */
bool rlock__pubsub_drop_if_unused(rlock__pubsub *ps, channel *ch);
/* Sends SUBSCRIBE for ch, or refuses it in a hold-off, or leaves it IDLE
 * for the retry timer (pubsub_links.c). */
void rlock__pubsub_subscribe(rlock__pubsub *ps, channel *ch);
/* ch has no entry left: leaves the channel on the server, or forgets it
 * (pubsub_links.c). */
void rlock__pubsub_unsubscribe(rlock__pubsub *ps, channel *ch);
/* Timer: subscribes every wanted channel that is IDLE, or REFUSED and due
 * (pubsub_links.c). */
void rlock__pubsub_retry(void *arg);
/* Makes sure rlock__pubsub_retry() runs within delay_ms; or, after a
 * failure, with the back-off (pubsub_links.c). */
void rlock__pubsub_arm_retry_in(rlock__pubsub *ps, int64_t delay_ms);
void rlock__pubsub_arm_retry(rlock__pubsub *ps);

/* A link's callbacks, and a refusal (pubsub_answers.c): the answers to
 * ch's SUBSCRIBE and UNSUBSCRIBE (arg: ch), a push (arg: ps), and marking
 * ch REFUSED until the hold-off ends. */
void rlock__pubsub_on_subscribe_reply(rlock__link *l, int status,
                                      struct redisReply *reply, void *arg);
void rlock__pubsub_on_unsubscribe_reply(rlock__link *l, int status,
                                        struct redisReply *reply, void *arg);
void rlock__pubsub_on_push(rlock__link *l, const rlock__push *p, void *arg);
void rlock__pubsub_refuse(rlock__pubsub *ps, channel *ch);

#endif /* RLOCK_CORE_PUBSUB_IMPL_H */
