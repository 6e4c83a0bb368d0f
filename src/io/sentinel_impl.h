/*
 * sentinel_impl.h: what sentinel.c (discovery) and sentinel_watch.c (the
 * watcher) share: the sentinel's state and three helpers. Private to
 * those two files.
 */
#ifndef RLOCK_IO_SENTINEL_IMPL_H
#define RLOCK_IO_SENTINEL_IMPL_H

#include "io/sentinel.h"
#include "io/io.h"

#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

/* A sentinel tried again this soon after a failure, while others remain. */
#define RETRY_SOON_MS 50

typedef struct node {
    char *host;
    int port;
    rlock__link_addr addr;
    bool resolved;
} node;

/* One poll in flight: the two pipelined answers meet here. */
typedef struct poll_req {
    rlock__sentinel *s;
    rlock__link *link; /* the link it went out on */
    int answers;       /* replies in, of 2 */
    int addr_found;    /* 1 address, 0 nil, -1 unusable */
    rlock__sentinel_master addr;
    int64_t epoch;
    int status;      /* the first failure, or 0 */
    bool noauth;     /* a sentinel asked for AUTH */
    bool abandoned;  /* the watcher stopped or moved on */
    char why[160];
} poll_req;

struct rlock__sentinel {
    char *master_name;
    node *nodes;
    int n;
    char *user;
    char *password;
    struct rlock__tls_ctx *tls;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t scan_interval_ms;
    bool use_auth; /* a sentinel asked for AUTH */
    int first;     /* the sentinel discovery asks first */
    bool known;    /* current holds the master */
    rlock__sentinel_master current;
    int64_t epoch; /* answers older than this are stale; -1: no guard */

    /* the watcher (loop thread only) */
    struct ev_loop *loop;
    bool watching;
    rlock__sentinel_master_cb on_master;
    rlock__sentinel_note_cb note;
    void *arg;
    rlock__link *sub;
    int sub_i;
    int sub_failures; /* in a row */
    ev_timer sub_timer;
    rlock__link *poll;
    int poll_i;
    int poll_failures; /* in a row */
    ev_timer poll_timer;
    poll_req *asking; /* the poll in flight, or NULL */
    bool check_wanted; /* a check_now waits for the next answer */
    bool check_again;  /* one was asked for while a poll ran */
};

/* True for a NOAUTH error reply. */
bool rlock__sentinel_is_noauth(const redisReply *r);
/* Fills o to greet sentinel i. */
void rlock__sentinel_node_opts(const rlock__sentinel *s, int i,
                               int64_t stale_ms, rlock__link_opts *o);
/* The next resolved sentinel after i (i itself when it is the only one). */
int rlock__sentinel_next_node(const rlock__sentinel *s, int i);

#endif /* RLOCK_IO_SENTINEL_IMPL_H */
