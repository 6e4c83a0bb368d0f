/*
 * cli.h: what the files of the rlock command-line tool share.
 *
 *   rlock_cli.c   main(), the subcommand table, argument parsing, --help,
 *                 settings (--url, REDIS_URL, --config) and connecting
 *   lock_state.c  one consistent read of a lock's Redis state (info, watch
 *                 and unlock use it)
 *   sync_state.c  the same for a semaphore, a permit semaphore or a
 *                 count-down latch, whose kind the user names (--kind)
 *   cmd_exec.c    rlock exec
 *   cmd_info.c    rlock info
 *   cmd_info_sync.c  rlock info --kind (semaphores, latches)
 *   cmd_unlock.c  rlock unlock --force
 *   cmd_watch.c   rlock watch
 *
 * The tool uses the public API (rlock.h) and the admin header
 * (src/api/admin.h: raw commands, a subscriber, a lock's key and channel
 * names, what a config says about its server), nothing else of the
 * library (scripts/check-layers), and never hiredis.
 */
#ifndef RLOCK_CLI_H
#define RLOCK_CLI_H

#include "api/admin.h"
#include "rlock.h"

#include <stdbool.h>
#include <stdint.h>

/* Exit statuses (documented in "rlock --help"). Most follow sysexits.h. */
#define CLI_OK          0
#define CLI_FAILURE     1   /* Redis refused a command; not a lock */
#define CLI_USAGE       64  /* bad arguments */
#define CLI_UNAVAILABLE 69  /* cannot reach the server, or lost it */
#define CLI_SOFTWARE    70  /* out of memory and other internal errors */
#define CLI_TEMPFAIL    75  /* exec: the lock was not had in time */
#define CLI_LOST        76  /* exec: the lock was lost while CMD ran */
#define CLI_NOPERM      77  /* the server refused the password/database */
#define CLI_CONFIG      78  /* bad --config file or URL */
#define CLI_CANNOT_RUN  126 /* exec: CMD is not executable */
#define CLI_NOT_FOUND   127 /* exec: CMD was not found */

/* The settings every subcommand takes. */
typedef struct cli_common {
    const char *url;    /* --url, or NULL */
    const char *config; /* --config FILE, or NULL */
} cli_common;

/* ---------------------------------------------------------- rlock_cli.c */

/* One option of a subcommand: "--name" (with a value when has_value). */
typedef struct cli_opt {
    const char *name; /* without the dashes */
    int id;           /* > 0 */
    bool has_value;
} cli_opt;

/* Ids every subcommand's table includes (cli_common_opts). */
enum { CLI_OPT_HELP = 1, CLI_OPT_URL, CLI_OPT_CONFIG, CLI_OPT_FIRST_OWN };

/* What cli_next() found. */
enum { CLI_ARG_END = -1, CLI_ARG_ERROR = -2, CLI_ARG_POSITIONAL = 0 };

typedef struct cli_parser {
    const char *cmd; /* "exec", for messages */
    int argc;
    char **argv;
    int i;
    int rest; /* index after "--", or -1 */
} cli_parser;

void cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv);
int cli_next(cli_parser *p, const cli_opt *opts, const char **value);
bool cli_take_common(cli_common *cm, int id, const char *value);
/* The id of "--kind KIND" in an opts table given to cli_parse_names(). */
enum { CLI_OPT_KIND = 100 };
int cli_parse_names(const char *cmd, int argc, char **argv, cli_common *cm,
                    const cli_opt *opts, const char *help, bool *flag,
                    int *kind, const char ***names, size_t *n);

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cli_parse_ms(const char *cmd, const char *opt, const char *text, int64_t lo,
                 int64_t hi, int64_t *out);

int cli_make_config(const cli_common *cm, rlock_config **out);
int cli_status_of(int rc);
int cli_connect(const cli_common *cm, rlock_config **cfg_out,
                rlock_client **out);
int cli_open(rlock_client *c, const rlock_config *cfg, rlock_admin_conn **out);
int cli_conn_lost(rlock_admin_conn *a, int rc);

/* ---------------------------------------------------------- lock_state.c */

typedef struct cli_holder {
    char *field; /* the hash field as stored */
    char client[RLOCK_ADMIN_UUID_LEN + 1];
    uint64_t thread;
    bool write; /* a read-write lock's "<uuid>:<tid>:write" */
    long long count;
    long long seen_ms; /* watch: when it was first seen locking (monotonic
                          ms), 0 when it held before the watch began */
} cli_holder;

/* One thread in a fair lock's queue. */
typedef struct cli_waiter {
    char *tag;       /* the queue entry: "<client uuid>:<thread id>" */
    char client[RLOCK_ADMIN_UUID_LEN + 1]; /* "" when tag is not one */
    uint64_t thread;
    long long deadline_ms;    /* its score: wall-clock ms, -1 when none */
    long long subscribers;    /* connections on its own channel */
} cli_waiter;

typedef enum {
    CLI_KIND_FREE,       /* no key */
    CLI_KIND_LOCK,       /* RLock layout: RLock, spin, non-reentrant */
    CLI_KIND_FAIR,       /* RLock layout with a fair waiting queue */
    CLI_KIND_FENCED,     /* RLock layout with a fencing token */
    CLI_KIND_READ_WRITE, /* hash with a "mode" field */
    CLI_KIND_NOT_A_LOCK, /* another type, or a hash of other fields */
} cli_kind;

typedef struct cli_lock_state {
    cli_kind kind;
    char redis_type[16]; /* TYPE's answer */
    char mode[8];        /* read-write: "read" or "write" */
    cli_holder *holders;
    size_t nholders;
    long long hold_count; /* sum over holders */
    long long ttl_ms;     /* PTTL: -2 free, -1 no expiry */
    long long waiting;    /* clients subscribed to the lock's channel, and
                             an RLock's waiters in rlock's queue behind
                             its head */
    long long queued;     /* fair queue length */
    long long in_turn;    /* an RLock's waiters in rlock's own queue */
    long long token;      /* fencing token, -1 when none */
    long long lock_subscribers; /* PUBSUB NUMSUB of each channel */
    long long rw_subscribers;
    cli_waiter *queue;    /* the fair queue, in order (nqueue == queued) */
    size_t nqueue;
    long long server_ms;  /* the server's clock (TIME) at the read */
} cli_lock_state;

const char *cli_kind_word(cli_kind kind);
int cli_lock_read(rlock_admin_conn *a, const char *name, cli_lock_state *st);
void cli_lock_clear(cli_lock_state *st);
long long cli_int_or(const rlock_admin_reply *r, long long dflt);
long long cli_server_ms(const rlock_admin_reply *now);

/* ---------------------------------------------------------- sync_state.c */

/* The synchronizers a plain integer key N may be (--kind names them). */
typedef enum {
    CLI_SYNC_NONE,             /* no --kind given */
    CLI_SYNC_SEMAPHORE,        /* RSemaphore: N holds the permits */
    CLI_SYNC_PERMIT_SEMAPHORE, /* RPermitExpirableSemaphore: the same, and
                                  the leases in {N}:timeout */
    CLI_SYNC_LATCH,            /* RCountDownLatch: N holds the count */
} cli_sync_kind;

/* A permit semaphore's held permit. */
typedef struct cli_permit {
    char id[33];            /* 32 hex digits, as Redisson prints it */
    long long lease_end_ms; /* wall-clock ms; -1: no lease */
} cli_permit;

typedef struct cli_sync_state {
    cli_sync_kind kind;
    char redis_type[16]; /* TYPE's answer */
    bool numeric;        /* the key holds an integer, or is missing */
    long long value;     /* permits available, or the latch's count */
    long long ttl_ms;    /* PTTL: -2 no key, -1 no expiry */
    long long waiting;   /* connections on its channel: NUMSUB (plain)
                            plus SHARDNUMSUB (a cluster's sharded) */
    char *channel;       /* that channel */
    cli_permit *permits; /* held permits, earliest lease end first */
    size_t npermits;
    long long server_ms; /* the server's clock (TIME) at the read */
} cli_sync_state;

/* The words of --kind and its parse ("semaphore", "permit-semaphore",
 * "latch"; false for any other). */
const char *cli_sync_kind_word(cli_sync_kind kind);
bool cli_sync_kind_parse(const char *word, cli_sync_kind *out);
/* The channel a kind's waiters listen on, from names (borrowed). */
const char *cli_sync_channel(cli_sync_kind kind, const rlock_admin_names *n);
int cli_sync_read(rlock_admin_conn *a, const char *name, cli_sync_kind kind,
                  cli_sync_state *st);
void cli_sync_clear(cli_sync_state *st);
/* CLI_USAGE, after saying so, when lock (cli_lock_read's of name) is a
 * string key holding a number: the tool will not guess which kind it is.
 * Else 0 (or a status when the read failed). */
int cli_sync_refuse_number(rlock_admin_conn *a, const char *cmd,
                           const char *name, const cli_lock_state *lock);
/* CLI_OK when st is what its kind keeps (no key, or a string holding an
 * integer), else CLI_FAILURE after saying what the key is. */
int cli_sync_check(const char *cmd, const char *name, const cli_sync_state *st);
/* info's JSON output (cmd_info.c): an array of n objects, make(i, ctx)
 * making each (NULL: out of memory). Returns 0 or CLI_SOFTWARE. */
struct json_t;
int cli_print_json_rows(size_t n,
                        struct json_t *(*make)(size_t i, const void *ctx),
                        const void *ctx);
/* rlock info --kind (cmd_info_sync.c): a status. */
int cli_info_sync(rlock_admin_conn *a, const char *const *names, size_t n,
                  cli_sync_kind kind, bool json);

/* ------------------------------------------------------------ commands */

int cli_cmd_exec(int argc, char **argv, cli_common *cm);
int cli_cmd_info(int argc, char **argv, cli_common *cm);
int cli_cmd_unlock(int argc, char **argv, cli_common *cm);
int cli_cmd_watch(int argc, char **argv, cli_common *cm);

#endif
