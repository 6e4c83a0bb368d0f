/*
 * rlock.h: distributed reentrant locks on Redis, Redisson-compatible.
 *
 * This is the only header users include, and it is the reference manual:
 * what is not declared here is not API.
 *
 * A lock named N lives in Redis exactly as Redisson's RLock keeps it: a hash
 * at key N with one field "<client uuid>:<thread id>" holding the hold count,
 * a PEXPIRE lease, unlock messages on "redisson_lock__channel:{N}" and the
 * unlock latch "redisson_unlock_latch:{N}:<request id>". A C process using
 * rlock and a Java service using Redisson can therefore share lock names.
 *
 * Return values: functions returning int give 0 (or a documented
 * non-negative value) on success and a negative RLOCK_E* code on failure.
 * rlock_strerror() turns a code into a sentence.
 *
 * Threads: every function may be called from any thread unless its
 * "Thread-safety:" line says otherwise. The owner of a lock is the calling
 * thread, as in Redisson: the thread that locked must be the one to unlock.
 * Callbacks: lost-lock callbacks run on the client's notifier thread and
 * may call anything but rlock_client_free(). Async completions run on the
 * attached libev loop, or on the client's I/O thread when none is attached;
 * there a blocking call returns RLOCK_EDEADLK instead of deadlocking. Log
 * lines (rlock_config_set_log()) go to their hook on the I/O thread too.
 *
 * Fork: a client belongs to the process that created it. In a forked child
 * every call on an inherited client or handle returns RLOCK_EFORKED; the
 * child cannot unlock or renew its parent's locks. It may create a new client.
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RLOCK_BUILDING) && defined(__GNUC__)
#define RLOCK_API __attribute__((visibility("default")))
#else
#define RLOCK_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/* RLOCK_VERSION_MAJOR, _MINOR, _PATCH, _HEX (0xMMmmpp) and _STRING
 * ("1.0.0") are the version of this header. rlock follows semantic
 * versioning: within one MAJOR (one SONAME, librlock.so.MAJOR) a program
 * built against an older rlock.h runs with a newer library. Each public
 * function's first version is in abi/symbols-in-versions. */
#include "rlock/version.h"

/* Returns the version of the linked library as RLOCK_VERSION_HEX does
 * (0x010000 for 1.0.0), to compare with the header's: a library older than
 * the header a program was built with may lack what it calls.
 * Ownership: none. Thread-safety: any thread. */
RLOCK_API unsigned int rlock_version(void);

/* Returns the version of the linked library: RLOCK_VERSION_STRING, then,
 * when the build knew one, "+" and a build id. Built from rlock's own git
 * tree the id is "g" and 12 hex digits of the commit, with "-dirty" when
 * tracked files differed from it ("1.0.0+g1a2b3c4d5e6f-dirty"); a packager
 * may set another (CMake option RLOCK_BUILD_ID); otherwise there is none
 * ("1.0.0"). So compare versions by the part before any '+'.
 * Ownership: static storage. Thread-safety: any thread. */
RLOCK_API const char *rlock_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* Error codes are below -100 so that they never collide with the -1 and -2
 * that rlock_remaining_ttl() reports, exactly as Redis's PTTL does. */
#define RLOCK_OK 0
#define RLOCK_EINVAL (-101)    /* bad argument: NULL, empty name, range */
#define RLOCK_ENOMEM (-102)    /* out of memory */
#define RLOCK_ECONN (-103)     /* cannot reach Redis, or connection lost */
#define RLOCK_ETIMEDOUT (-104) /* not acquired in time, or Redis too slow */
#define RLOCK_ENOTOWNER (-105) /* calling thread does not hold the lock */
#define RLOCK_ELOST (-106)     /* the lock was held but is gone (expired,
                                  force-unlocked or deleted behind our back) */
#define RLOCK_EPROTO (-107)    /* unexpected reply: peer is not Redis, or
                                  the key is not a lock */
#define RLOCK_EAUTH (-108)     /* the server refused AUTH or SELECT, or
                                  its ACL a command rlock cannot do
                                  without (SCRIPT LOAD, EVALSHA) */
#define RLOCK_EDEADLK (-109)   /* blocking call from an rlock callback */
#define RLOCK_ECLOSED (-110)   /* the client is being freed */
#define RLOCK_EFORKED (-111)   /* client inherited across fork() */
#define RLOCK_ESERVER (-112)   /* Redis answered with an error reply */
#define RLOCK_ECANCELED (-113) /* an async acquire was cancelled */
#define RLOCK_ENOTSUP (-114)   /* not available for this kind of lock,
                                  or on this server (a cluster without
                                  sharded pub/sub, RLOCK_SHARDED_ON) */
#define RLOCK_ENOTIFY (-115)   /* unlocked, but Redis refused the unlock
                                  message (PUBLISH): waiters learn of the
                                  release only when they re-check */
#define RLOCK_ETLS (-116)      /* TLS failed: the server's certificate is
                                  not trusted or not for this host, the
                                  handshake failed, or a CA, certificate
                                  or key file cannot be used */
#define RLOCK_EREENTRY (-117)  /* a non-reentrant lock asked for again by
                                  the owner that holds it (Redisson's
                                  IllegalMonitorStateException) */

/* Returns a one-line English description of err (any value).
 * Ownership: static storage. Thread-safety: any thread. */
RLOCK_API const char *rlock_strerror(int err);

/* Returns the symbolic name of err, e.g. "RLOCK_ETIMEDOUT", or "RLOCK_E?"
 * for an unknown code. Ownership: static storage. Thread-safety: any thread.
 */
RLOCK_API const char *rlock_err_name(int err);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

typedef struct rlock_config rlock_config;

/* Creates a configuration holding Redisson's defaults:
 *   watchdog timeout     30000 ms (Config.lockWatchdogTimeout), renewed
 *                        every third of it
 *   command timeout       3000 ms (BaseConfig.timeout)
 *   connect timeout      10000 ms (BaseConfig.connectTimeout)
 *   retry attempts           3, retry interval 1500 ms (unlock retries and
 *                        the unlock latch lifetime (attempts+1) x (timeout +
 *                        interval) = 18000 ms, inside Redisson 4's range)
 *   recheck interval      2000 ms: the longest a waiter waits for an unlock
 *                        message before it re-tries, so a lost message
 *                        (crashed holder, raw DEL) costs at most this much
 *   connections              2: the I/O thread's command connections, and
 *                        as many direct ones that blocking calls use on
 *                        their own thread when idle (plus one subscriber)
 * Returns 0, RLOCK_EINVAL (out is NULL) or RLOCK_ENOMEM.
 * Ownership: the caller frees *out with rlock_config_free(); a client copies
 * what it needs, so the config may be freed right after connecting.
 * Thread-safety: a config is built on one thread; it is not locked. */
RLOCK_API int rlock_config_new(rlock_config **out);

/* Frees a configuration; NULL is ignored. */
RLOCK_API void rlock_config_free(rlock_config *cfg);

/* Setters. Each returns 0, or RLOCK_EINVAL (cfg NULL or value out of range,
 * in which case the config is unchanged). Ranges:
 *   watchdog_timeout_ms  [30, 2^31)   the lease under the watchdog
 *   command_timeout_ms   [1, 2^31)    one Redis round trip's budget
 *   connect_timeout_ms   [1, 2^31)
 *   retry_attempts       [0, 100]
 *   retry_interval_ms    [0, 2^31)
 *   recheck_interval_ms  [1, 2^31)
 *   connections          [1, 64]
 *   fair_wait_timeout_ms [1, 2^31)    a fair-lock waiter's slack (below)
 * Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_watchdog_timeout(rlock_config *cfg, int64_t ms);
RLOCK_API int rlock_config_set_command_timeout(rlock_config *cfg, int64_t ms);
RLOCK_API int rlock_config_set_connect_timeout(rlock_config *cfg, int64_t ms);
RLOCK_API int rlock_config_set_retry_attempts(rlock_config *cfg, int n);
RLOCK_API int rlock_config_set_retry_interval(rlock_config *cfg, int64_t ms);
RLOCK_API int rlock_config_set_recheck_interval(rlock_config *cfg, int64_t ms);
RLOCK_API int rlock_config_set_connections(rlock_config *cfg, int n);
/* Redisson's fairLockWaitTimeout (threadWaitTime), default 5000: how long
 * past the time it was told to wait a queued fair-lock waiter keeps its
 * place. A waiter that died is purged from the queue after it, so it never
 * blocks the queue for longer. rlock_trylock() with a wait uses that wait
 * instead, as Redisson does. Java's 4.x default is 300000. */
RLOCK_API int rlock_config_set_fair_wait_timeout(rlock_config *cfg, int64_t ms);

/* Server settings, for rlock_client_connect_with(out, NULL, cfg):
 *   server      a URI as rlock_client_connect() takes it; it must parse
 *   credentials user (NULL: none, or the URI's) and password (NULL: no
 *               AUTH); they take precedence over any in the URI. A user
 *               without a password, and empty strings, are RLOCK_EINVAL
 *   database    [0, 2^31), takes precedence over the URI's /db
 *   client_name sent as CLIENT SETNAME on every connection (NULL: none);
 *               printable ASCII without spaces, as Redis requires
 * Strings are copied. Return 0, or RLOCK_EINVAL (the config unchanged) or
 * RLOCK_ENOMEM. Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_server(rlock_config *cfg, const char *uri);
RLOCK_API int rlock_config_set_credentials(rlock_config *cfg,
                                           const char *user,
                                           const char *password);
RLOCK_API int rlock_config_set_database(rlock_config *cfg, int db);
RLOCK_API int rlock_config_set_client_name(rlock_config *cfg,
                                           const char *name);

/* Sentinel settings, used when the server is a redis+sentinel:// URI
 * (ignored otherwise):
 *   sentinel_credentials  the user (NULL: none) and password sent to a
 *               sentinel that asks for them (it answers NOAUTH), as
 *               Redisson's sentinelUsername and sentinelPassword are.
 *               Without them such a sentinel gets the data nodes'
 *               credentials (the URI's, or rlock_config_set_credentials()).
 *               A sentinel that does not ask is sent no AUTH. Same rules
 *               as rlock_config_set_credentials(): a user needs a
 *               password, "" is RLOCK_EINVAL; NULL, NULL sends a
 *               sentinel no credentials at all
 *   sentinel_scan_interval  how often a sentinel is asked where the
 *               master is, besides listening for its +switch-master
 *               messages: [1, 2^31) ms, default 1000 (Redisson's
 *               scanInterval, its only way of following a failover)
 * Strings are copied. Return 0, or RLOCK_EINVAL (the config unchanged) or
 * RLOCK_ENOMEM. Thread-safety: as rlock_config_new().
 * Redisson: SentinelServersConfig.setSentinelUsername(),
 * setSentinelPassword(), setScanInterval(). */
RLOCK_API int rlock_config_set_sentinel_credentials(rlock_config *cfg,
                                                    const char *user,
                                                    const char *password);
RLOCK_API int rlock_config_set_sentinel_scan_interval(rlock_config *cfg,
                                                      int64_t ms);

/* Cluster settings, used when the server is a redis+cluster:// URI
 * (ignored otherwise):
 *   cluster_scan_interval  how often the slot table is read again
 *               (CLUSTER SLOTS, from the masters first), besides after
 *               every MOVED and after errors that say the cluster changed:
 *               [1, 2^31) ms, default 5000 (Redisson's scanInterval)
 * Return 0 or RLOCK_EINVAL (the config unchanged). Thread-safety: as
 * rlock_config_new(). Redisson: ClusterServersConfig.setScanInterval(). */
RLOCK_API int rlock_config_set_cluster_scan_interval(rlock_config *cfg,
                                                     int64_t ms);

/* WAIT after lock scripts (Redisson's checkLockSyncedSlaves and
 * slavesSyncTimeout), in cluster and Sentinel modes only (ignored with a
 * single server, as Redisson does):
 *   on          after every acquire, unlock and renewal, the same
 *               connection sends WAIT n timeout_ms, n being the master's
 *               connected_slaves (INFO replication, read once per
 *               connection and again when WAIT's answer differs; n = 0:
 *               no WAIT). When no replica acknowledges while n > 0: an
 *               acquire is undone (the unlock script gives the hold back)
 *               and fails with RLOCK_ETIMEDOUT; an unlock is sent again
 *               with the same latch, as after a slow reply, and fails with
 *               RLOCK_ETIMEDOUT once its retries are spent; a renewal
 *               stands. Fewer acknowledgements than n, but some, are
 *               accepted. A stalled replica costs each call up to
 *               timeout_ms.
 *   timeout_ms  [1, 2^31) ms, default 1000 (Redisson's slavesSyncTimeout)
 * Default off (Redisson's is on): WAIT is no consistency guarantee (an
 * acknowledged write can still be lost in a failover), so it buys little
 * for its latency; a fenced lock (rlock_fenced_get) is what keeps a stale
 * holder out. No WAITAOF (AOF fsyncs) is ever asked for: Redisson's locks
 * ask for plain WAIT only (docs/wait.md). Returns 0 or RLOCK_EINVAL (the
 * config unchanged). Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_sync_replicas(rlock_config *cfg, int on,
                                             int64_t timeout_ms);

/* How a cluster client's waiters are woken (Redisson's
 * ClusterServersConfig.shardedSubscriptionMode, plus BOTH):
 *   RLOCK_SHARDED_AUTO  (default) as Redisson 3.28+: the seed is asked
 *               PUBSUB SHARDNUMSUB 0; if it answers (Redis 7+), waiters
 *               SSUBSCRIBE on the master of their lock's slot and unlocks
 *               SPUBLISH, else plain SUBSCRIBE and PUBLISH (an error
 *               answer is judged by INFO server's version, not its text:
 *               before 7.0 the server has no sharded pub/sub; from 7.0
 *               the user was refused PUBSUB, and the fallback is logged)
 *   RLOCK_SHARDED_ON    sharded (connecting fails with RLOCK_ENOTSUP when
 *               the seed has no sharded pub/sub: Redis before 7.0, or a
 *               version it would not tell)
 *   RLOCK_SHARDED_OFF   plain SUBSCRIBE and PUBLISH (Redisson before 3.22,
 *               or set to OFF): every unlock is broadcast to every node
 *   RLOCK_SHARDED_BOTH  for a fleet that mixes both kinds of peers:
 *               waiters SUBSCRIBE and SSUBSCRIBE, so either kind of peer's
 *               unlock wakes them; unlocks SPUBLISH and PUBLISH (a
 *               broadcast to every node, as mode OFF's); refused with
 *               RLOCK_ENOTSUP as ON is
 * A peer that publishes one way while waiters listen the other way costs
 * its waiters a re-check interval per hand-over, never safety.
 * Returns 0 or RLOCK_EINVAL (cfg NULL or an unknown mode). */
#define RLOCK_SHARDED_AUTO 0
#define RLOCK_SHARDED_ON   1
#define RLOCK_SHARDED_OFF  2
#define RLOCK_SHARDED_BOTH 3
RLOCK_API int rlock_config_set_cluster_sharded(rlock_config *cfg, int mode);

/* TLS, used when the server is a rediss:// URI (ignored for redis:// and
 * unix://, as Redisson ignores its ssl settings there):
 *   ca_file      a PEM file of the CA certificates to trust
 *   ca_dir       a directory of them, named by hash (openssl rehash)
 *                With neither, the system's CA store is trusted.
 *   client_cert  a PEM certificate (chain) and its unencrypted PEM key, for
 *                servers that require client certificates (mutual TLS);
 *                both or neither (NULL, NULL clears them)
 *   server_name  the name the server's certificate must hold, instead of
 *                the URI's host (also sent as SNI when it is a DNS name; an
 *                IP address is checked against the certificate's
 *                addresses and not sent)
 *   verify       RLOCK_TLS_VERIFY_FULL (the default): the certificate must
 *                come from a trusted CA and hold the host name;
 *                RLOCK_TLS_VERIFY_CA_ONLY: from a trusted CA, any name;
 *                RLOCK_TLS_VERIFY_NONE_INSECURE: anything, so anyone on
 *                the path can pose as the server (tests only)
 * NULL clears a string setting; "" is RLOCK_EINVAL, as is a server name
 * with spaces or control characters or longer than 253 bytes. Paths are
 * copied as strings; the files are read when a client connects, where an
 * unreadable or malformed one fails with RLOCK_ETLS, as does connecting
 * to a server whose certificate fails these checks, or that refuses the
 * client's certificate (or wants one).
 * Return 0, or RLOCK_EINVAL (the config unchanged) or RLOCK_ENOMEM.
 * Thread-safety: as rlock_config_new().
 * Redisson: BaseConfig.setSslTruststore() and friends (Java key stores;
 * see rlock_config_load_file() for how they map). */
#define RLOCK_TLS_VERIFY_FULL 0
#define RLOCK_TLS_VERIFY_CA_ONLY 1
#define RLOCK_TLS_VERIFY_NONE_INSECURE 2
RLOCK_API int rlock_config_set_tls_ca_file(rlock_config *cfg,
                                           const char *path);
RLOCK_API int rlock_config_set_tls_ca_dir(rlock_config *cfg,
                                          const char *path);
RLOCK_API int rlock_config_set_tls_client_cert(rlock_config *cfg,
                                               const char *cert_path,
                                               const char *key_path);
RLOCK_API int rlock_config_set_tls_server_name(rlock_config *cfg,
                                               const char *name);
RLOCK_API int rlock_config_set_tls_verify(rlock_config *cfg, int mode);

/* Log hook. rlock prints nothing by itself (nothing goes to stderr); what
 * deserves an operator's attention goes to cb, with one of these levels
 * (lower is more severe):
 *   WARN   a missing ACL permission found at connect time; a refused
 *          SUBSCRIBE (waiters fall back to re-checks) or PUBLISH (once per
 *          client); a lock declared lost, with its reason; a renewal that
 *          failed, or came back with less than a third of its lease left
 *   INFO   a command, caller-thread or subscriber connection lost (with
 *          the reason) and reconnected; a script loaded again after
 *          NOSCRIPT (a restarted or flushed server); the server ending a
 *          subscription
 *   DEBUG  first connects, and each failed reconnect of an outage
 * The wording of lines is not API; the counters of rlock_client_stats()
 * are. */
#define RLOCK_LOG_ERROR 1
#define RLOCK_LOG_WARN 2
#define RLOCK_LOG_INFO 3
#define RLOCK_LOG_DEBUG 4

/* A log line: level is RLOCK_LOG_*, message one line of English without a
 * trailing newline (valid during the call only), arg as given to
 * rlock_config_set_log(). */
typedef void (*rlock_log_cb)(int level, const char *message, void *arg);

/* Passes the client's log lines of level <= level to cb (RLOCK_LOG_WARN:
 * errors and warnings); cb NULL turns logging off, the default.
 * cb runs on the client's I/O thread (keep it short: renewals wait behind
 * it), never on the thread of a caller of an rlock function and never
 * while rlock holds a lock of its own. It may call rlock functions except
 * blocking ones (they return RLOCK_EDEADLK there) and rlock_client_free().
 * Lines found while connecting are delivered once the client is up; none
 * is delivered after rlock_client_free() returns.
 * Returns 0, or RLOCK_EINVAL (cfg NULL, or level not an RLOCK_LOG_* value;
 * the config is then unchanged).
 * Ownership: arg is borrowed: it must stay valid while a client made with
 * this config exists. Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_log(rlock_config *cfg, int level,
                                   rlock_log_cb cb, void *arg);

/* Turns the client's counters and histograms (rlock_client_stats()) on,
 * the default, or off (on = 0). Off, the lock calls skip even the clock
 * reads that timing needs; on, they cost a few relaxed atomic additions per
 * call (docs/observability.md has the measurement).
 * Returns 0, or RLOCK_EINVAL (cfg NULL).
 * Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_stats(rlock_config *cfg, int on);

/* Lets the thread that just released an RLock (and a fenced lock, and a
 * read-write lock's write side) take it straight back, as Redisson does
 * (on = 1), or not (on = 0, the default). Off, a thread of this client that
 * released the lock moments ago, or that arrives while others of this
 * client wait, waits its turn (a few ms, or until the next unlock message),
 * so that the waiters the unlock message wakes go first. On, it tries at
 * once: the most acquisitions per second when one process loops on a
 * lock, and waits of seconds for the others. On also turns an RLock's
 * queue off (rlock_config_set_lock_queue()): every waiting process is then
 * woken by each unlock message and they race, as Redisson's waiters do.
 * Either way Redis sees the lock hash, the unlock messages and the latch
 * as Redisson writes them. The config file's rlockLockBarging key (true or
 * false) sets it too.
 * Returns 0, or RLOCK_EINVAL (cfg NULL).
 * Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_lock_barging(rlock_config *cfg, int on);

/* Makes the waiters of an RLock wait in turn (on = 1, the default) or not
 * (on = 0: every waiting process is woken by each unlock message, and they
 * race). On, and with barging off, a waiter that finds the lock taken
 * queues in two rlock-only keys beside Redisson's
 * (redisson_rlock_queue:{N}, a list, and redisson_rlock_timeout:{N}, when
 * each queued waiter goes stale; both expire when idle): only the head of
 * the queue listens on Redisson's channel and takes the lock when it is
 * freed; the others wait on a channel of their own
 * (redisson_lock__channel:{N}:<owner tag>) until their turn comes. Redis
 * sees the lock hash, the unlock messages and the latch as Redisson writes
 * them; Redisson clients on the same lock ignore the queue and may take
 * the lock ahead of it. A queued waiter that stops trying (its process
 * died) loses its place after twice the re-check interval plus 1 s. The
 * config file's rlockLockQueue key (true or false) sets it too.
 * Returns 0, or RLOCK_EINVAL (cfg NULL).
 * Thread-safety: as rlock_config_new(). */
RLOCK_API int rlock_config_set_lock_queue(rlock_config *cfg, int on);

/* Reads a Redisson JSON config file (the format of Config.fromJSON):
 * singleServerConfig's address, username, password, database,
 * connectTimeout, timeout, retryAttempts, retryInterval, clientName,
 * connectionPoolSize, subscriptionsPerConnection, the ssl* keys that have
 * a PEM equivalent (sslTruststore and sslKeystore naming .pem, .crt or
 * .key files, sslEnableEndpointIdentification, sslVerificationMode) and the
 * top-level lockWatchdogTimeout; or, instead of singleServerConfig,
 * sentinelServersConfig's sentinelAddresses and masterName (a
 * redis+sentinel:// server), scanInterval, sentinelUsername,
 * sentinelPassword, masterConnectionPoolSize and the same keys as above;
 * or clusterServersConfig's nodeAddresses (a redis+cluster:// server),
 * scanInterval, shardedSubscriptionMode, masterConnectionPoolSize and the
 * same keys but database. Java key stores (JKS, PKCS#12), their
 * passwords, sslProtocols and sslCiphers are refused by name. See
 * docs/redisson-config.md for what each key does here.
 * Anything malformed or unsupported is rejected, and errbuf (if not NULL)
 * receives a message naming the file, the line and the key.
 * Messages read "FILE:LINE: key.path: why".
 * Returns 0, RLOCK_EINVAL (bad file or argument; see errbuf) or
 * RLOCK_ENOMEM. On failure *out is NULL.
 * Ownership: the caller frees *out with rlock_config_free().
 * Thread-safety: any thread. */
RLOCK_API int rlock_config_load_file(rlock_config **out, const char *path,
                                     char *errbuf, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Client                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct rlock_client rlock_client;

/* Connects to Redis and starts the client's I/O thread (which also runs the
 * watchdog). One client per process is the intended use; every thread shares
 * it. uri is one of
 *   redis://[[user]:password@]host[:port][/db]    (port 6379, db 0 default)
 *   rediss://...   the same with TLS (rlock_config_set_tls_ca_file() and
 *                  the other TLS settings), on every connection
 *   unix:///path/to/redis.sock[?db=N]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/master[/db]
 *                  a master behind Redis Sentinel: the sentinels (port
 *                  26379 default) and the master's name; the user,
 *                  password and db are the master's (the sentinels' own
 *                  are rlock_config_set_sentinel_credentials()); the
 *                  master is found and followed as docs/sentinel.md
 *                  says
 *   rediss+sentinel://...   the same, with TLS to sentinels and master
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...]
 *                  a Redis Cluster, by some of its nodes (port 6379
 *                  default), asked in order until one describes a cluster
 *                  that serves every slot (and answers connecting's
 *                  checks in the command timeout); the user and password
 *                  are every node's; no /db (a cluster has only 0). Every
 *                  lock's calls go to the master serving its name's slot,
 *                  and getters refuse names whose keys would span slots
 *                  with RLOCK_EINVAL (rlock_config_set_cluster_sharded()
 *                  and docs/cluster.md say how waiters are woken)
 *   rediss+cluster://...    the same, with TLS to every node
 * Each may be spelled valkey for redis (valkey://, valkeys://,
 * valkey+sentinel://, valkeys+cluster://, ...), Redisson's other spelling,
 * with the same meaning. Schemes are matched without regard to case.
 * Percent-escapes (%40 etc.) are decoded in user, password and master name.
 * IPv6 hosts go in brackets: redis://[::1]:6380.
 * The connection, AUTH and SELECT are checked before this returns, and so
 * are the user's ACL permissions: SCRIPT LOAD and EVALSHA must be allowed
 * (rlock never sends EVAL); a missing PUBLISH or SUBSCRIBE permission on
 * lock channels costs only wake-ups and is reported through the log hook
 * when the server lets the user ask (ACL DRYRUN), else found when refused.
 * Returns 0; RLOCK_EINVAL (out or uri NULL, or the URI does not parse);
 * RLOCK_ECONN (unreachable; with Sentinel: no sentinel led to a master);
 * RLOCK_EAUTH (AUTH or SELECT refused, by the server or the sentinels, or
 * SCRIPT LOAD or EVALSHA refused by the user's ACL);
 * RLOCK_EPROTO (the server does not speak Redis); RLOCK_ETIMEDOUT;
 * RLOCK_ESERVER (redis+cluster://: no seed describes a cluster serving
 * every slot, or a seed is not a cluster node);
 * RLOCK_ENOTSUP (redis+cluster:// in RLOCK_SHARDED_ON or BOTH, and no seed
 * has sharded pub/sub: Redis before 7.0);
 * RLOCK_ETLS (rediss://: a CA, certificate or key file unusable, the
 * server's certificate not trusted or not for the host, or the server
 * refusing the client's certificate or wanting one; the same with the
 * sentinels of a rediss+sentinel:// URI); RLOCK_ENOMEM. On failure *out is set to NULL.
 * Ownership: the caller frees the client with rlock_client_free().
 * Thread-safety: any thread.
 * Redisson: Redisson.create(config). */
RLOCK_API int rlock_client_connect(rlock_client **out, const char *uri);

/* As rlock_client_connect(), with settings from cfg (NULL: defaults).
 * uri may be NULL when cfg names the server (rlock_config_set_server()).
 * cfg is copied; the caller keeps ownership of it. */
RLOCK_API int rlock_client_connect_with(rlock_client **out, const char *uri,
                                        const rlock_config *cfg);

/* Connects with the settings of a Redisson JSON config file (see
 * rlock_config_load_file()); errors as both functions. */
RLOCK_API int rlock_client_connect_config(rlock_client **out,
                                          const char *path);

/* Releases every lock this client still holds (deleting each one and
 * publishing its unlock message, as a final unlock does), waits for pending
 * calls to fail with RLOCK_ECLOSED, stops the I/O thread and frees the
 * client. NULL is ignored.
 * A thread that is exiting while the client is freed has its holds handled
 * either by its exit (RLOCK_LOST_ABANDONED) or by the free, never both at
 * once: the free waits for exit handlers already running.
 * With a libev loop attached, the free closes the loop's watcher (as
 * rlock_client_attach_loop(c, NULL) does), so the loop is left with nothing
 * of the client's; the pending calls' RLOCK_ECLOSED completions run on the
 * calling thread before it returns. It must therefore be called on that
 * loop's thread (from a completion is fine) or while no thread runs the
 * loop; to free from another thread while the loop runs, detach first on
 * the loop's thread.
 * Ownership: handles still open become inert: every call on them returns
 * RLOCK_ECLOSED (rlock_kind() and rlock_name() still answer), and
 * rlock_free(), rlock_rw_free() and rlock_multi_free() still free them.
 * In a forked child it does nothing: the memory is a copy of the parent's
 * and the I/O thread does not exist there.
 * Thread-safety: any thread except the client's own I/O thread and notifier
 * thread (not from a lost-lock callback, nor from an async completion run
 * on the I/O thread); no other thread may use the client or its handles
 * during the call.
 * Redisson: RedissonClient.shutdown(). */
RLOCK_API void rlock_client_free(rlock_client *c);

/* Returns the client's UUID (36 lowercase characters), the first half of
 * every hash field it writes. A forked child's inherited client still
 * reports the parent's id (and refuses every operation).
 * Ownership: owned by the client, valid until rlock_client_free().
 * Thread-safety: any thread.
 * Redisson: ServiceManager.getId(). */
RLOCK_API const char *rlock_client_id(const rlock_client *c);

/* Returns the id rlock uses for the calling thread in hash fields: a positive
 * number assigned on the thread's first call and never given to another
 * thread of this process, even after the thread exits.
 * Thread-safety: any thread.
 * Redisson: Thread.getId(). */
RLOCK_API uint64_t rlock_thread_id(void);

/* ------------------------------------------------------------------------ */
/* Locks                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct rlock rlock;

/* Waits with no time limit (rlock_trylock's wait_ms) */
#define RLOCK_WAIT_FOREVER (-1)
/* Lease handled by the watchdog (rlock_trylock's lease_ms) */
#define RLOCK_LEASE_WATCHDOG (-1)
/* The longest accepted name, in bytes: Redis's key limit is far larger but
 * a lock name is copied into every script call. */
#define RLOCK_NAME_MAX (64 * 1024)

/* Makes a handle to the lock named name (any bytes but NUL, 1 to
 * RLOCK_NAME_MAX long). Cheap: no Redis traffic. Handles to the same name
 * share state; a handle may be used by any number of threads at once.
 * Returns 0, RLOCK_EINVAL (NULL argument, empty or too long name),
 * RLOCK_ENOMEM, RLOCK_EFORKED or RLOCK_ECLOSED.
 * Ownership: the caller frees the handle with rlock_free(), before or after
 * freeing the client (after it, the handle is inert: see
 * rlock_client_free()). Freeing a handle does not unlock; a lock still held
 * stays held (and renewed) until its owner unlocks it through another
 * handle or the client is freed.
 * Thread-safety: any thread.
 * Redisson: RedissonClient.getLock(name). */
RLOCK_API int rlock_get(rlock_client *c, const char *name, rlock **out);

/* Frees a handle; NULL is ignored. Thread-safety: any thread, once no other
 * thread is using this handle. */
RLOCK_API void rlock_free(rlock *l);

/* Returns the lock's name. Ownership: owned by the handle (valid until
 * rlock_free(), also after the client is freed). */
RLOCK_API const char *rlock_name(const rlock *l);

/* Blocks until the calling thread holds the lock. Reentrant: a thread that
 * holds it takes it again and must unlock as many times. The lease is the
 * watchdog timeout, renewed by the watchdog while the thread holds the lock.
 * How it waits: the thread subscribes to the lock's unlock channel (a fair
 * lock's waiter to a channel of its own) and sleeps between attempts. It
 * tries again when an unlock message wakes it, when the holder's remaining
 * lease (the TTL the failed attempt returned) runs out, after a reconnect of
 * the subscriber (messages sent meanwhile are lost), and otherwise every
 * recheck interval (rlock_config_set_recheck_interval(), 2 s by default), a
 * bounded re-check in case an unlock message was lost (a crashed holder, a
 * raw DEL). A thread arriving while others of this client wait joins them
 * rather than trying first. A spin lock never subscribes: it re-tries after
 * pauses that grow as rlock_spin_set_backoff() says.
 * Returns 0, or RLOCK_ECONN / RLOCK_ETIMEDOUT (Redis unreachable or too
 * slow), RLOCK_EPROTO / RLOCK_ESERVER (the key is not a lock hash),
 * RLOCK_EAUTH (the server's password changed since connecting; the next
 * call authenticates again), RLOCK_ENOMEM, RLOCK_EINVAL, RLOCK_EDEADLK,
 * RLOCK_EFORKED, RLOCK_ECLOSED.
 * Thread-safety: any thread; the caller becomes the owner.
 * Redisson: RLock.lock(). */
RLOCK_API int rlock_lock(rlock *l);

/* Tries to take the lock, waiting at most wait_ms.
 *   wait_ms   0: one attempt; > 0: budget in ms; RLOCK_WAIT_FOREVER: no
 *             limit. Other negative values: RLOCK_EINVAL.
 *   lease_ms  1 to 2^50: the lock expires lease_ms after it is taken and
 *             is not renewed; RLOCK_LEASE_WATCHDOG: watchdog lease and
 *             renewal. 0, other negative values and larger ones:
 *             RLOCK_EINVAL.
 * The wait budget holds even when Redis is slow or down: the call returns
 * within wait_ms plus the command timeout: past wait_ms it only ends the
 * round trip under way and removes a hold a lost attempt may have taken,
 * and never waits out a cluster's failover (RLOCK_ECONN within wait_ms
 * when the lock's master is down). An attempt whose connection
 * dropped is retried at once, then every retry interval, up to the retry
 * attempts and within the budget; if the dropped attempt may have taken the
 * lock, that hold is given back first, and one that cannot be in time
 * (RLOCK_ECONN) expires with its lease.
 * Returns 0 when acquired, RLOCK_ETIMEDOUT when not acquired in time, or an
 * error as rlock_lock().
 * Thread-safety: any thread; the caller becomes the owner.
 * Redisson: RLock.tryLock(waitTime, leaseTime, MILLISECONDS). */
RLOCK_API int rlock_trylock(rlock *l, int64_t wait_ms, int64_t lease_ms);

/* Releases one hold of the calling thread. The last release deletes the key
 * and publishes the unlock message; an inner release resets the lease. The
 * call is idempotent across retries (Redisson's unlock latch): a reply lost
 * to a timeout is retried without releasing twice. A hold being released is
 * never reported lost: a renewal that finds the key gone while the unlock
 * is in flight is judged by the unlock's outcome.
 * Returns 0; RLOCK_ENOTIFY (released, but Redis refused the unlock message,
 * e.g. an ACL user without +publish or a renamed PUBLISH: the hold is gone,
 * and waiters learn of it only when they re-check; the log hook gets a
 * warning the first time); RLOCK_ENOTOWNER (the
 * calling thread does not hold the lock: Redis is not touched); RLOCK_ELOST
 * (the thread held it but it expired, was taken away or the key was
 * overwritten; local state is cleared); RLOCK_ESERVER / RLOCK_EAUTH (Redis
 * refused the release, e.g. OOM at maxmemory or a missing permission:
 * nothing was released, the hold is kept as it was, still renewed, and may
 * be unlocked again); RLOCK_ECONN / RLOCK_ETIMEDOUT after the configured
 * retries (the outcome is unknown: the hold is forgotten locally and the
 * key left to expire).
 * Thread-safety: any thread; must be the owner.
 * Redisson: RLock.unlock(). */
RLOCK_API int rlock_unlock(rlock *l);

/* Deletes the lock whoever holds it and wakes its waiters.
 * Local holds on it become lost: their owners' unlocks return RLOCK_ELOST.
 * Returns 0 whether or not the lock was held (the unlock message is
 * published only if it was), RLOCK_ENOTIFY when it was deleted but Redis
 * refused the unlock message (as rlock_unlock()), or an error.
 * Thread-safety: any thread.
 * Redisson: RLock.forceUnlock(). */
RLOCK_API int rlock_force_unlock(rlock *l);

/* Returns 1 if anyone holds the lock, 0 if not, or an error.
 * Redisson: RLock.isLocked(). */
RLOCK_API int rlock_is_locked(rlock *l);

/* Returns 1 if the calling thread holds the lock, 0 if not (including a
 * hold found lost), or an error. Asks Redis unless the thread has no hold.
 * Redisson: RLock.isHeldByCurrentThread(). */
RLOCK_API int rlock_is_held_by_me(rlock *l);

/* Returns the calling thread's hold count (0 when not held), or an error.
 * Redisson: RLock.getHoldCount(). */
RLOCK_API int rlock_hold_count(rlock *l);

/* Returns the id of the calling thread's hold of l: a positive number that
 * this client gives no other hold, fixed from the acquire that took the
 * hold until its last unlock (reentrant acquires keep it). Lost-lock
 * callbacks carry it, so that a loss can be told apart from a loss of the
 * owner's next hold on the same name. Returns RLOCK_ENOTOWNER when the
 * thread holds nothing here (a hold found lost keeps its id until its
 * unlock), or another error. No Redis traffic.
 * Thread-safety: any thread; about the calling thread's hold. */
RLOCK_API int64_t rlock_hold_id(rlock *l);

/* Returns the lock's remaining lease in ms, -1 if it has no expiry, -2 if it
 * is not locked, or an error (below -100).
 * Redisson: RLock.remainTimeToLive(). */
RLOCK_API int64_t rlock_remaining_ttl(rlock *l);

/* ------------------------------------------------------------------------ */
/* Lost locks                                                               */
/* ------------------------------------------------------------------------ */

/* Why a hold was lost (the reason argument of rlock_lost_cb). */
#define RLOCK_LOST_GONE 1     /* the lock or our field vanished (expired,
                                 deleted, force-unlocked) */
#define RLOCK_LOST_TAKEN 2    /* someone else holds the lock now */
#define RLOCK_LOST_EXPIRED 3  /* renewals failed for a whole lease: it must
                                 have run out (judged on CLOCK_MONOTONIC) */
#define RLOCK_LOST_ABANDONED 4 /* the owning thread exited holding it: the
                                 watchdog stops renewing it and the lease
                                 runs out */

/* Called once per hold found lost, with the lock's name (valid during the
 * call only), the owner (thread id or async owner id), the hold's id (what
 * rlock_hold_id() or rlock_owner_hold_id() returned while it was held) and
 * RLOCK_LOST_*. By then rlock_is_held_by_me() already says 0 and the
 * owner's unlock answers RLOCK_ELOST. A hold that its owner is unlocking is
 * not reported while the unlock is in flight; if the unlock then releases
 * it, it was not lost and nothing is reported. */
typedef void (*rlock_lost_cb)(const char *name, uint64_t owner, uint64_t hold,
                              int reason, void *arg);

/* Sets (cb NULL: clears) the client-wide lost-lock callback. Callbacks run
 * on the client's notifier thread, never the I/O thread, so a slow callback
 * never delays renewals; they may call rlock functions (not
 * rlock_client_free()).
 * Changing the callback is a barrier: once the call returns, the old
 * callback is not running and will not run, so its arg may be freed. It
 * waits for a call of the old one in progress, so do not hold anything that
 * callback waits for. Called from a lost-lock callback itself (on the
 * notifier thread) it does not wait: the only call that can be running is
 * the caller, and the old callback will not run again. Setting the same
 * callback and arg again changes nothing.
 * Returns 0, or RLOCK_EINVAL/EFORKED/ECLOSED, or RLOCK_EDEADLK when called
 * on the client's I/O thread (an async completion with no loop attached)
 * while the old callback is running: waiting there could deadlock, so
 * nothing is changed; try again later.
 * Thread-safety: any thread. */
RLOCK_API int rlock_client_on_lost(rlock_client *c, rlock_lost_cb cb,
                                   void *arg);

/* Sets (cb NULL: clears) the lost-lock callback of one lock name within
 * the client (shared by every handle to that name). It runs before the
 * client-wide one, on the same thread. It is kept while a handle to the
 * name or a hold on it exists. The same barrier as rlock_client_on_lost():
 * once it returns, the old callback is not running, and losses found
 * earlier that had not been reported yet no longer call it (they still
 * call the client-wide one). Returns 0 or an error as above. */
RLOCK_API int rlock_on_lost(rlock *l, rlock_lost_cb cb, void *arg);

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */
/* ------------------------------------------------------------------------ */

/* Each client counts what its locks do: how acquisitions went and how long
 * they waited, how long locks were held, unlock messages, renewals, losses,
 * reconnects and Redis round trips. Counting is lock-free (relaxed atomic
 * additions on the calling thread); rlock_client_stats() copies a
 * snapshot, and rlock_stats_format() writes it as Prometheus text. Counters
 * only grow, from 0 when the client connects; a snapshot is not one atomic
 * moment (two counters read a few ns apart may disagree by a call in
 * flight), but each counter and each histogram's buckets are exact.
 *
 * Histograms are of microseconds, in RLOCK_STATS_BUCKETS fixed buckets:
 * bucket 0 holds 0; then four buckets per power of two, bucket i holding
 * the values above rlock_stats_bucket_le_us(i - 1) up to and including
 * rlock_stats_bucket_le_us(i) (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20,
 * ... so a value is known within 25%), up to 2^36 us (about 19 hours); the
 * last bucket holds everything longer. */
#define RLOCK_STATS_BUCKETS 142

/* One histogram. Its layout is frozen (it sits inside rlock_stats, whose
 * fields never move): RLOCK_STATS_BUCKETS never changes, and a histogram of
 * another shape would be a new type. The library never fills one on its
 * own, only as part of an rlock_stats. */
typedef struct rlock_histogram {
    uint64_t count;  /* values recorded: the sum of the buckets */
    uint64_t sum_us; /* their sum */
    uint64_t max_us; /* the largest (0 when none) */
    uint64_t buckets[RLOCK_STATS_BUCKETS];
} rlock_histogram;

/* A snapshot of one client's statistics. The struct grows at its end only
 * (fields are never removed or reordered): the caller sets size to
 * sizeof(rlock_stats) as its header declares it (RLOCK_STATS_INIT does),
 * and the library fills the fields that fit in both its and the caller's
 * struct, zeroes the caller's fields it does not know, and sets size to
 * what it filled. So a program built against an older rlock.h works with a
 * newer library, and the reverse, as Linux's openat2() struct open_how. */
typedef struct rlock_stats {
    size_t size; /* in: sizeof(rlock_stats); out: the bytes filled */

    /* acquire calls (blocking, async and each lock of a multi-lock; a
     * semaphore's acquires too) that ended: */
    uint64_t acquired_immediately; /* held at the first attempt */
    uint64_t acquired_after_wait;  /* held after one or more failed tries */
    uint64_t acquire_timeouts;     /* RLOCK_ETIMEDOUT: the wait ran out */
    uint64_t acquire_errors;       /* any other error, cancels included */
    uint64_t releases;             /* unlocks that released a hold (0 or
                                      RLOCK_ENOTIFY) */

    /* waiting */
    uint64_t unlock_messages;        /* heard on subscribed lock channels */
    uint64_t unlock_messages_unused; /* ... that found nobody to wake */
    uint64_t rechecks_found_free;    /* acquired by a re-check (the TTL or
                                        the recheck interval ran out) and
                                        not an unlock message: a lost
                                        message, or a lease that expired */

    /* the watchdog */
    uint64_t renewals_sent;    /* holds renewed or tried */
    uint64_t renewals_failed;  /* ... whose call failed (no answer) */
    int64_t lease_margin_min_ms; /* the least lease left when a renewal
                                    came back, -1 before the first */

    /* holds found lost, by RLOCK_LOST_* reason */
    uint64_t lost_gone;
    uint64_t lost_taken;
    uint64_t lost_expired;
    uint64_t lost_abandoned;

    /* connections and traffic */
    uint64_t reconnects;     /* connections opened again after one was
                                lost: command, caller-thread, subscriber */
    uint64_t round_trips;    /* Redis replies to rlock's calls */
    uint64_t script_reloads; /* scripts loaded again after NOSCRIPT */

    /* time from an acquire call to holding the lock (acquisitions only) */
    rlock_histogram wait;
    /* time from taking a hold (reentry aside) to its final release; holds
     * found lost are not timed */
    rlock_histogram hold;

    /* a cluster's answers that sent a call elsewhere or again (0 off a
     * cluster): MOVED (the slot has a new master; an SSUBSCRIBE's MOVED
     * counts too), ASK (a slot migrating: asked again with ASKING), and
     * TRYAGAIN, CLUSTERDOWN, MASTERDOWN, LOADING or READONLY (the call
     * tried again after a back-off) */
    uint64_t cluster_moved;
    uint64_t cluster_ask;
    uint64_t cluster_tryagain;
} rlock_stats;

#define RLOCK_STATS_INIT {.size = sizeof(rlock_stats)}

/* Copies c's statistics into *out (out->size set by the caller: see
 * rlock_stats). Takes no lock and sends nothing, so it is cheap enough to
 * call per scrape, from any thread, callbacks included.
 * Returns 0; RLOCK_EINVAL (c or out NULL, or out->size smaller than the
 * size field itself); RLOCK_ENOTSUP (the client's config turned statistics
 * off: *out is zeroed); RLOCK_EFORKED.
 * Ownership: *out is the caller's. Thread-safety: any thread. */
RLOCK_API int rlock_client_stats(rlock_client *c, rlock_stats *out);

/* Returns the largest value (in us) bucket i of a histogram holds, or
 * UINT64_MAX for the last bucket, or 0 when i is out of range. */
RLOCK_API uint64_t rlock_stats_bucket_le_us(int i);

/* Returns the q-quantile (0 <= q <= 1: 0.5 the median, 0.99 the p99) of h
 * in us: the upper bound of the bucket holding it, at most h->max_us, so
 * within 25% above the true value; q = 1 gives max_us exactly. Returns -1
 * when h is empty, RLOCK_EINVAL for h NULL or q out of range.
 * Thread-safety: any thread. */
RLOCK_API int64_t rlock_stats_quantile(const rlock_histogram *h, double q);

/* Writes s as Prometheus text exposition (format 0.0.4), NUL-terminated,
 * into buf of len bytes, as snprintf does: returns the length the whole
 * text has (without the NUL), so a return >= len means it was cut (buf NULL
 * with len 0 just measures). Counters end in _total; the wait and hold
 * histograms are rlock_wait_seconds and rlock_hold_seconds with le buckets
 * at each power of two from 16 us; HELP and TYPE lines come first. Names:
 *   rlock_acquires_total{result="immediate|after_wait|timeout|error"}
 *   rlock_releases_total, rlock_unlock_messages_total,
 *   rlock_unlock_messages_unused_total, rlock_rechecks_found_free_total,
 *   rlock_renewals_total, rlock_renewals_failed_total,
 *   rlock_lease_margin_min_seconds (NaN before a renewal),
 *   rlock_locks_lost_total{reason="gone|taken|expired|abandoned"},
 *   rlock_reconnects_total, rlock_round_trips_total,
 *   rlock_script_reloads_total,
 *   rlock_cluster_redirects_total{kind="moved|ask"},
 *   rlock_cluster_tryagain_total.
 * Returns RLOCK_EINVAL when s is NULL or its size is too small, or buf is
 * NULL with len > 0. Thread-safety: any thread. Ownership: buf is the
 * caller's. */
RLOCK_API int rlock_stats_format(const rlock_stats *s, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Asynchronous API (libev)                                                 */
/* ------------------------------------------------------------------------ */

/* An event-loop server's lock belongs to a request, not a thread: these
 * calls take an explicit 64-bit owner id, which rlock writes where the
 * blocking API writes the thread id ("<uuid>:<owner>"), as Redisson's
 * lockAsync(threadId) does. Waiting costs no thread: it is driven by the
 * unlock channel and by timers on the client's I/O thread, with the same
 * re-tries as rlock_lock() describes. The blocking API keeps working beside
 * it on the same client. */

struct ev_loop;

/* Returns a fresh owner id, never equal to a thread id rlock gave or will
 * give, nor to another fresh owner id of this process.
 * Thread-safety: any thread. */
RLOCK_API uint64_t rlock_owner_new(void);

/* Completion of an async call: status is 0 or an RLOCK_E* code (for an
 * acquire: RLOCK_ETIMEDOUT when the wait budget ran out, RLOCK_ECANCELED
 * when cancelled). l is the handle the call was made on. */
typedef void (*rlock_done_cb)(rlock *l, uint64_t owner, int status,
                              void *arg);

/* Makes completions run on loop (a libev loop the caller runs), or, with
 * loop NULL, on the client's I/O thread (where they must not block).
 * Attaching starts one ev_async watcher on the loop, which keeps ev_run()
 * running while attached. Detaching (NULL, or another loop) stops it at once,
 * even from inside a completion it delivered, and runs the completions
 * still queued for the old loop on the calling thread. Call it from the
 * loop's thread (or while no thread runs that loop: the watcher is the
 * loop's, and libev loops are not thread-safe), before any async call that
 * should complete there; the loop must outlive the attachment: detach, or
 * free the client, before destroying it. rlock_client_free() detaches
 * too, under the same rule. Returns 0, RLOCK_EINVAL, RLOCK_ENOMEM,
 * RLOCK_EFORKED or RLOCK_ECLOSED. */
RLOCK_API int rlock_client_attach_loop(rlock_client *c, struct ev_loop *loop);

/* Starts acquiring l for owner, with wait_ms and lease_ms as
 * rlock_trylock() takes them; cb runs exactly once when it is done.
 * Returns 0 (cb will run) or, without calling cb, RLOCK_EINVAL (l or cb
 * NULL, owner 0, values out of range), RLOCK_ENOMEM, RLOCK_EFORKED,
 * RLOCK_ECLOSED. rlock_client_free() ends pending calls with RLOCK_ECLOSED.
 * Ownership: l must stay valid until cb has run.
 * Thread-safety: any thread. */
RLOCK_API int rlock_lock_async(rlock *l, uint64_t owner, int64_t wait_ms,
                               int64_t lease_ms, rlock_done_cb cb,
                               void *arg);

/* Releases one hold of owner; cb runs once with what rlock_unlock() would
 * return (0, RLOCK_ENOTIFY, RLOCK_ENOTOWNER, RLOCK_ELOST, RLOCK_ESERVER
 * with the hold kept, or a connection error), with the same meanings.
 * Returns 0 (cb will run) or an error (it will not). */
RLOCK_API int rlock_unlock_async(rlock *l, uint64_t owner, rlock_done_cb cb,
                                 void *arg);

/* Cancels owner's pending acquires of l: their callbacks run with
 * RLOCK_ECANCELED, and a hold an in-flight attempt took is given back, so
 * nothing stays held and no subscription stays behind. An acquire that
 * completed before the cancel reached the I/O thread is not undone (its
 * callback reports 0). Returns 0 or an error. Thread-safety: any thread. */
RLOCK_API int rlock_cancel(rlock *l, uint64_t owner);

/* Returns owner's hold count of l as this client remembers it (0 when not
 * held or found lost); no Redis traffic. */
RLOCK_API int rlock_owner_hold_count(rlock *l, uint64_t owner);

/* Returns the id of owner's hold of l, as rlock_hold_id() does for the
 * calling thread. */
RLOCK_API int64_t rlock_owner_hold_id(rlock *l, uint64_t owner);

/* ------------------------------------------------------------------------ */
/* Other kinds of lock: Redisson's fair, read-write, fenced and spin locks.
 *
 * Each is an rlock handle that every rlock_* lock function above accepts
 * (lock, trylock, unlock, force_unlock, queries, rlock_on_lost, rlock_free),
 * with the same reentrancy, watchdog and lost-lock signalling, and each
 * writes to Redis exactly what its Redisson namesake writes, so C and Java
 * share them. Handles of different kinds on one name are different locks to
 * this client, as they are to Redisson (a fair, fenced or spin lock and a
 * plain lock on one name exclude each other: they share the lock hash).
 * Ownership, thread-safety and errors: as rlock_get(). */

/* The kinds rlock_kind() reports. */
#define RLOCK_KIND_LOCK 0   /* rlock_get: Redisson getLock */
#define RLOCK_KIND_FAIR 1   /* rlock_fair_get: getFairLock */
#define RLOCK_KIND_READ 2   /* rlock_rw_read: getReadWriteLock().readLock() */
#define RLOCK_KIND_WRITE 3  /* rlock_rw_write: ...writeLock() */
#define RLOCK_KIND_FENCED 4 /* rlock_fenced_get: getFencedLock */
#define RLOCK_KIND_SPIN 5   /* rlock_spin_get: getSpinLock */

/* Returns l's RLOCK_KIND_*, or RLOCK_EINVAL when l is NULL. */
RLOCK_API int rlock_kind(const rlock *l);

/* Fair lock: threads of every client acquire in the order they asked,
 * through Redisson's queue list and timeout sorted set; each waiter is
 * woken on its own channel when its turn comes. A waiter that died keeps
 * its place for at most the fair wait timeout (see the config) past the
 * wait it was told, then it is purged. A waiter whose budget runs out
 * leaves the queue. Its scripts take this host's wall clock: keep clocks in
 * sync (NTP), as Redisson requires. */
RLOCK_API int rlock_fair_get(rlock_client *c, const char *name, rlock **out);

/* Read-write lock: any number of readers, or one writer; both sides are
 * reentrant, and a thread holding the write lock may also take the read
 * lock (not the reverse: a reader asking to write waits, as in Redisson).
 * rlock_rw_read() and rlock_rw_write() return the two sides' handles,
 * owned by rw: valid until rlock_rw_free(rw), never passed to rlock_free().
 * rlock_rw_get returns 0, RLOCK_EINVAL, RLOCK_ENOMEM, RLOCK_EFORKED or
 * RLOCK_ECLOSED. */
typedef struct rlock_rw rlock_rw;
RLOCK_API int rlock_rw_get(rlock_client *c, const char *name, rlock_rw **out);
RLOCK_API rlock *rlock_rw_read(rlock_rw *rw);
RLOCK_API rlock *rlock_rw_write(rlock_rw *rw);
RLOCK_API void rlock_rw_free(rlock_rw *rw);

/* Fenced lock: every acquire, reentry included, also draws the next value
 * of a counter that never goes back (Redisson's redisson_lock_token:{name}),
 * so a storage system can refuse writes carrying an older token than one it
 * has seen: a holder that paused past its lease cannot overwrite the work
 * of the next holder. rlock_lock()/rlock_trylock() work too (the token is
 * drawn and not returned). */
RLOCK_API int rlock_fenced_get(rlock_client *c, const char *name, rlock **out);

/* As rlock_lock() / rlock_trylock(); on success *token is the token of this
 * acquisition (>= 1), else it is left unchanged. token may not be NULL. */
RLOCK_API int rlock_fenced_lock(rlock *l, int64_t *token);
RLOCK_API int rlock_fenced_trylock(rlock *l, int64_t wait_ms, int64_t lease_ms,
                                   int64_t *token);

/* Returns the last token drawn on l's name (0 when none yet), or a
 * negative code (RLOCK_ENOTSUP when l is not a fenced lock). */
RLOCK_API int64_t rlock_fenced_token(rlock *l);

/* Spin lock: Redisson's lock that waits by backing off instead of through
 * pub/sub (for clusters where pub/sub traffic is the bottleneck). Its unlock
 * publishes nothing. */
RLOCK_API int rlock_spin_get(rlock_client *c, const char *name, rlock **out);

/* Sets how a spin lock handle backs off between attempts: the first pause
 * is initial_ms, each next one multiplier times the last plus a random
 * 0..(failures - 1) ms, never more than max_ms. Redisson's exponential
 * default is (1, 128, 2); its constant back-off is (d, d, 1). Returns 0, or
 * RLOCK_EINVAL (1 <= initial_ms <= max_ms < 2^31 and 1 <= multiplier <= 16
 * required) or RLOCK_ENOTSUP (not a spin lock). Not while another thread
 * waits on the handle. */
RLOCK_API int rlock_spin_set_backoff(rlock *l, int64_t initial_ms,
                                     int64_t max_ms, int multiplier);

/* ------------------------------------------------------------------------ */
/* Multi-lock and Redlock: several locks taken as one.
 *
 * A multi-lock (Redisson getMultiLock) holds all of its locks or none: the
 * locks may be of any kind and on any clients (Redis servers); each is taken
 * by the calling thread, with exactly the state it writes on its own. When
 * one cannot be taken, those already taken are released, and the round
 * starts again while the wait lasts.
 *
 * A Redlock (Redisson's RedLock, the Redlock algorithm) takes the same lock
 * name on N independent servers and succeeds once a majority (N/2 + 1) is
 * held; each server gets max(time left / N, 1) ms, so a server that is down
 * or stalled costs the caller at most its share. Partial acquisitions are
 * rolled back.
 *
 * *validity_ms (when not NULL) receives how long the caller may count on
 * the locks: lease - elapsed - drift, where drift = lease / 100 + 2 ms and
 * lease is the watchdog timeout when none was given. An acquisition left
 * with no validity is rolled back and reported as RLOCK_ETIMEDOUT.
 *
 * The handles are borrowed: they must outlive m, and must not be locked
 * or unlocked by hand by the thread that holds m. A multi-lock is used by
 * one thread at a time. rlock_*_new return 0, RLOCK_EINVAL (no locks, a
 * NULL one, or more than 64), RLOCK_ECLOSED or RLOCK_EFORKED (a handle
 * that may not be used: see rlock_client_free()) or RLOCK_ENOMEM. The
 * calls below check every handle first in the same way, so a round never
 * takes locks it could not complete. */
typedef struct rlock_multi rlock_multi;
RLOCK_API int rlock_multi_new(rlock *const *locks, size_t n,
                              rlock_multi **out);
RLOCK_API int rlock_redlock_new(rlock *const *locks, size_t n,
                                rlock_multi **out);
RLOCK_API void rlock_multi_free(rlock_multi *m);

/* As rlock_lock() / rlock_trylock() for all the locks (a quorum, for a
 * Redlock). Returns 0, RLOCK_ETIMEDOUT, or the first error that made a
 * lock fail when no lock could be tried at all (e.g. RLOCK_ECONN). */
RLOCK_API int rlock_multi_lock(rlock_multi *m, int64_t *validity_ms);
RLOCK_API int rlock_multi_trylock(rlock_multi *m, int64_t wait_ms,
                                  int64_t lease_ms, int64_t *validity_ms);

/* Releases every lock the calling thread holds through m. Returns 0, or
 * for a multi-lock the first error an unlock reported (the others are
 * still released; RLOCK_ENOTIFY only when all were released); a Redlock ignores errors of servers that are down as
 * long as it released a majority (else RLOCK_ELOST or the error). */
RLOCK_API int rlock_multi_unlock(rlock_multi *m);

/* ------------------------------------------------------------ semaphores */

/* A distributed counting semaphore, Redis state and messages exactly
 * Redisson's RSemaphore: the key `name` holds the permits available (a
 * plain integer), and every call that frees permits publishes the new
 * count on "redisson_sc:{name}", which wakes as many waiters, in this
 * client and in Java Redisson clients alike, as the count can serve
 * (docs/semaphores.md). Permits have no owner: any thread or process
 * may release them, and a process that dies holding some leaks them (use
 * a permit-expirable semaphore where that matters). Non-fair, as
 * Redisson's. */
typedef struct rlock_semaphore rlock_semaphore;

/* Makes a handle to the semaphore named name (1 to RLOCK_NAME_MAX bytes,
 * no NUL). Cheap: no Redis traffic; a new semaphore has no permits until
 * rlock_semaphore_try_set_permits() or rlock_semaphore_add_permits().
 * Returns 0, RLOCK_EINVAL (NULL argument, bad name, or in a cluster a name
 * whose keys would span slots), RLOCK_ENOMEM, RLOCK_EFORKED or
 * RLOCK_ECLOSED.
 * Ownership: the caller frees it with rlock_semaphore_free(), before or
 * after the client (after it, every call answers RLOCK_ECLOSED).
 * Thread-safety: any thread.
 * Redisson: RedissonClient.getSemaphore(name). */
RLOCK_API int rlock_semaphore_get(rlock_client *c, const char *name,
                                  rlock_semaphore **out);

/* Frees a handle; NULL is ignored. Permits taken through it stay taken.
 * Thread-safety: any thread, once no other thread uses the handle. */
RLOCK_API void rlock_semaphore_free(rlock_semaphore *s);

/* Returns the semaphore's name. Ownership: owned by the handle. */
RLOCK_API const char *rlock_semaphore_name(const rlock_semaphore *s);

/* Sets the permits to `permits` (>= 0) if the semaphore has none set yet
 * (its key does not exist), waking waiters; ttl_ms > 0 makes the key
 * expire after that many ms (0: never). Returns 1 (set), 0 (already set:
 * nothing changed) or a negative RLOCK_E* code (RLOCK_EINVAL for a
 * negative count or TTL).
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RSemaphore.trySetPermits(permits[, timeToLive]). */
RLOCK_API int rlock_semaphore_try_set_permits(rlock_semaphore *s,
                                              int permits, int64_t ttl_ms);

/* Takes `permits` (> 0) permits, waiting up to wait_ms for them (0: one
 * try; RLOCK_WAIT_FOREVER: no limit). A waiter sleeps until a release
 * message says enough may be there, re-checking every recheck interval
 * (rlock_config_set_recheck_interval) in case one was lost. The budget
 * holds when Redis is down: no reconnect or resend outlasts wait_ms, and a
 * reply sent by then is awaited at most one command timeout longer.
 * Returns 0 (taken), RLOCK_ETIMEDOUT (not enough permits within wait_ms),
 * RLOCK_EINVAL, RLOCK_EDEADLK (from an rlock callback), or a connection
 * error (RLOCK_ECONN, ...): then the try's reply was lost and the permits
 * may have been taken, as with Redisson, which never retries this script.
 * Thread-safety: any thread; blocks.
 * Redisson: RSemaphore.acquire(permits), tryAcquire(permits, waitTime). */
RLOCK_API int rlock_semaphore_acquire(rlock_semaphore *s, int permits,
                                      int64_t wait_ms);

/* The async acquire, for event-loop servers: cb runs exactly once with
 * what rlock_semaphore_acquire() would return (the same wait, wake-ups and
 * budget), where async completions run (the loop given to
 * rlock_client_attach_loop(), else the client's I/O thread). Returns 0 (cb
 * will run) or, without calling cb, RLOCK_EINVAL (s or cb NULL, permits
 * <= 0, wait_ms negative and not RLOCK_WAIT_FOREVER), RLOCK_ENOMEM,
 * RLOCK_EFORKED or RLOCK_ECLOSED. The call has no owner, so rlock_cancel()
 * does not reach it; rlock_client_free() ends a pending one with
 * RLOCK_ECLOSED (a try then in flight may have taken its permits, as with
 * a connection error).
 * Ownership: s must stay valid until cb has run.
 * Thread-safety: any thread, callbacks included.
 * Redisson: RSemaphore.acquireAsync(permits), tryAcquireAsync(permits,
 * waitTime, unit). */
typedef void (*rlock_semaphore_cb)(rlock_semaphore *s, int status,
                                   void *arg);
RLOCK_API int rlock_semaphore_acquire_async(rlock_semaphore *s, int permits,
                                            int64_t wait_ms,
                                            rlock_semaphore_cb cb, void *arg);

/* Gives `permits` (> 0) permits back (any caller may, taken or not),
 * publishing the new count. rlock_semaphore_release_if_exists() does so
 * only when the semaphore's key exists. Return 0 (release) or 1 / 0
 * (release_if_exists: released, or no such semaphore), or a negative
 * RLOCK_E* code.
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RSemaphore.release(permits), releaseIfExists(permits). */
RLOCK_API int rlock_semaphore_release(rlock_semaphore *s, int permits);
RLOCK_API int rlock_semaphore_release_if_exists(rlock_semaphore *s,
                                                int permits);

/* Reads the permits available into *out (0 when the semaphore does not
 * exist). Returns 0 or a negative RLOCK_E* code.
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RSemaphore.availablePermits(). */
RLOCK_API int rlock_semaphore_available(rlock_semaphore *s, int64_t *out);

/* Takes every available permit; *out (may be NULL) gets how many there
 * were. As Redisson's, the key is rewritten, so a TTL set by
 * rlock_semaphore_try_set_permits() is gone. Returns 0 or a negative code.
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RSemaphore.drainPermits(). */
RLOCK_API int rlock_semaphore_drain(rlock_semaphore *s, int64_t *out);

/* Adds `permits` (negative: takes them away, possibly below 0) and
 * publishes the new count; creates the semaphore at 0 first if needed and,
 * as Redisson's, drops its TTL. *out (may be NULL) gets the new count.
 * Returns 0 or a negative code.
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RSemaphore.addPermits(permits). */
RLOCK_API int rlock_semaphore_add_permits(rlock_semaphore *s, int permits,
                                          int64_t *out);

/* ------------------------------------------- permit-expirable semaphores */

/* A semaphore whose permits each have an id and an optional lease, Redis
 * state and messages exactly Redisson's RPermitExpirableSemaphore: the
 * count in key `name`, the leases in the sorted set "{name}:timeout" (id
 * bytes -> lease end in ms since the epoch), wake-ups on
 * "redisson_sc:{name}". Any process may release a permit by its id, and a
 * permit whose lease ended is given back by the next call of any client
 * on the semaphore (acquire, available, lease update), so a crashed
 * worker cannot leak it.
 *
 * Clocks: as Redisson's, every call computes lease ends and decides what
 * has ended with the calling process's wall clock, not Redis's. A client
 * whose clock runs S ms ahead of the others reclaims their permits S ms
 * before their leases end (two holders at once for up to S ms), and its
 * own permits live S ms longer in the others' eyes; one S ms behind does
 * the reverse. Keep the fleet's clocks in sync (NTP) well within the
 * leases (docs/semaphores.md). */
typedef struct rlock_permit_semaphore rlock_permit_semaphore;

/* A permit id: 32 hex digits (Redisson's form) and a NUL. */
#define RLOCK_PERMIT_ID_SIZE 33
/* No lease: the permit is held until released by id. */
#define RLOCK_PERMIT_LEASE_NONE (-1)

/* Makes a handle; as rlock_semaphore_get() (same codes, ownership and
 * thread-safety; free it with rlock_permit_semaphore_free()).
 * Redisson: RedissonClient.getPermitExpirableSemaphore(name). */
RLOCK_API int rlock_permit_semaphore_get(rlock_client *c, const char *name,
                                         rlock_permit_semaphore **out);
/* Frees a handle; NULL is ignored. Permits taken stay taken. */
RLOCK_API void rlock_permit_semaphore_free(rlock_permit_semaphore *s);

/* Sets the permits if none are set yet: as
 * rlock_semaphore_try_set_permits() without a TTL. Returns 1, 0 or a
 * negative code. Redisson: RPermitExpirableSemaphore.trySetPermits. */
RLOCK_API int rlock_permit_semaphore_try_set_permits(
    rlock_permit_semaphore *s, int permits);

/* Takes one permit, waiting up to wait_ms (0: one try; RLOCK_WAIT_FOREVER:
 * no limit), with a lease of lease_ms (> 0) or RLOCK_PERMIT_LEASE_NONE, and
 * writes its id (NUL-terminated) into id. The wait is woken by release
 * messages and, when every permit is leased, by the earliest lease's end;
 * the budget holds when Redis is down (as rlock_semaphore_acquire()).
 * Returns 0, RLOCK_ETIMEDOUT, RLOCK_EINVAL, RLOCK_EDEADLK, or a connection
 * error (the permit may then have been taken: its lease, if it has one,
 * frees it).
 * Ownership: id is the caller's buffer of RLOCK_PERMIT_ID_SIZE bytes.
 * Thread-safety: any thread; blocks.
 * Redisson: RPermitExpirableSemaphore.tryAcquire(waitTime, leaseTime, unit),
 * acquire(leaseTime, unit). */
RLOCK_API int rlock_permit_semaphore_acquire(rlock_permit_semaphore *s,
                                             int64_t wait_ms,
                                             int64_t lease_ms,
                                             char id[RLOCK_PERMIT_ID_SIZE]);

/* The async acquire, for event-loop servers: cb runs exactly once with
 * what rlock_permit_semaphore_acquire() would return and, when that is 0,
 * the new permit's id (else id is NULL), where async completions run (as
 * rlock_semaphore_acquire_async()). Returns 0 (cb will run) or, without
 * calling cb, RLOCK_EINVAL (s or cb NULL, a bad wait_ms or lease_ms),
 * RLOCK_ENOMEM, RLOCK_EFORKED or RLOCK_ECLOSED. rlock_cancel() does not
 * reach it; rlock_client_free() ends a pending one with RLOCK_ECLOSED (a
 * permit a try in flight took is freed by its lease, if it has one).
 * Ownership: s must stay valid until cb has run; id is borrowed until cb
 * returns (copy it to keep it).
 * Thread-safety: any thread, callbacks included.
 * Redisson: RPermitExpirableSemaphore.tryAcquireAsync(waitTime, leaseTime,
 * unit), acquireAsync(leaseTime, unit). */
typedef void (*rlock_permit_semaphore_cb)(rlock_permit_semaphore *s,
                                          int status, const char *id,
                                          void *arg);
RLOCK_API int rlock_permit_semaphore_acquire_async(
    rlock_permit_semaphore *s, int64_t wait_ms, int64_t lease_ms,
    rlock_permit_semaphore_cb cb, void *arg);

/* Gives back the permit id (taken by any process, in any case of hex).
 * Returns 1 (released), 0 (no such permit, or its lease had ended: then it
 * is given back all the same, as Redisson's), or a negative code
 * (RLOCK_EINVAL for an id that is not 32 hex digits).
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RPermitExpirableSemaphore.tryRelease(permitId). */
RLOCK_API int rlock_permit_semaphore_release(rlock_permit_semaphore *s,
                                             const char *id);

/* Gives the permit id a new lease of lease_ms from now (or
 * RLOCK_PERMIT_LEASE_NONE). Returns 1 (done), 0 (no such permit: released
 * or its lease ended) or a negative code.
 * Thread-safety: any thread; blocks for one round trip.
 * Redisson: RPermitExpirableSemaphore.updateLeaseTime(permitId, lease, unit). */
RLOCK_API int rlock_permit_semaphore_update_lease(rlock_permit_semaphore *s,
                                                  const char *id,
                                                  int64_t lease_ms);

/* Reads the permits available into *out, first giving back those whose
 * lease ended. Returns 0 or a negative code.
 * Redisson: RPermitExpirableSemaphore.availablePermits(). */
RLOCK_API int rlock_permit_semaphore_available(rlock_permit_semaphore *s,
                                               int64_t *out);

/* Adds permits (negative: takes them away); *out (may be NULL) gets the
 * new count. Returns 0 or a negative code.
 * Redisson: RPermitExpirableSemaphore.addPermits(permits). */
RLOCK_API int rlock_permit_semaphore_add_permits(rlock_permit_semaphore *s,
                                                 int permits, int64_t *out);
/* ------------------------------------------------------------------------ */
/* Non-reentrant locks: Redisson's getNonReentrantLock and
 * getNonReentrantFairLock (Redisson 4.4 and later).
 *
 * The same Redis state, channels and messages as the plain lock
 * (rlock_get) and the fair lock (rlock_fair_get) on that name, and the same
 * owner tags: a non-reentrant handle and a reentrant one on one name are
 * one lock, to this client as to Redisson. The only difference is that an
 * owner that holds the lock and asks for it again, through any handle of
 * that name and kind, gets RLOCK_EREENTRY at once (no deadlock, no second
 * hold): rlock_lock() and rlock_trylock() (whatever the wait), the async
 * acquire and a multi-lock's acquire alike. Nothing is changed by the
 * refused call; the first hold stays, with its watchdog. The holder's
 * re-acquire is refused by the lock's script too (Redisson's error reply
 * NON_REENTRANT_REACQUIRE), so a hold Redis has and this client forgot is
 * refused, never counted twice. Every other call (unlock, force unlock,
 * queries, rlock_on_lost, rlock_free) is the reentrant kind's.
 * Ownership, thread-safety and errors: as rlock_get(). */

/* The kinds rlock_kind() reports for these handles. */
#define RLOCK_KIND_NONREENTRANT 6      /* getNonReentrantLock */
#define RLOCK_KIND_NONREENTRANT_FAIR 7 /* getNonReentrantFairLock */

RLOCK_API int rlock_nonreentrant_get(rlock_client *c, const char *name,
                                     rlock **out);
RLOCK_API int rlock_nonreentrant_fair_get(rlock_client *c, const char *name,
                                          rlock **out);

/* ------------------------------------------------------------------------ */
/* Count-down latch: Redisson's RCountDownLatch (getCountDownLatch).
 *
 * A count that processes count down; waiters are let through once it
 * reaches zero. Unlike java.util.concurrent's, it can be set again once
 * open (try_set_count). The same Redis state and messages as Redisson's (a
 * string key holding the count, deleted at zero; the channel
 * redisson_countdownlatch__channel__{name}, "0" when it opens, "1" when a
 * count is set or the latch deleted), so C and Java processes share one
 * latch. A waiter waits on the channel, never polling: it reads the count
 * when it is woken, and at least every re-check interval (see the config),
 * which bounds what a lost message costs.
 *
 * Handles: rlock_latch_get() returns 0, RLOCK_EINVAL (c, name or out NULL,
 * name empty or longer than RLOCK_NAME_MAX, or in a cluster a name whose
 * key and channel fall in different slots), RLOCK_ENOMEM, RLOCK_EFORKED or
 * RLOCK_ECLOSED. Ownership: the name is copied; the caller frees the
 * handle with rlock_latch_free() (NULL is a no-op), before or after its
 * client (calls on a handle whose client was freed return RLOCK_ECLOSED).
 * Thread-safety: a handle may be used by any number of threads at once.
 *
 * The calls below block the calling thread for one round trip (await:
 * until the latch opens or its wait runs out) and return, besides what
 * each says, RLOCK_EINVAL (l NULL), RLOCK_ECLOSED, RLOCK_EFORKED,
 * RLOCK_EDEADLK (called from an rlock callback), RLOCK_ECONN,
 * RLOCK_ETIMEDOUT (Redis too slow), RLOCK_ESERVER or RLOCK_ENOMEM. */
typedef struct rlock_latch rlock_latch;
RLOCK_API int rlock_latch_get(rlock_client *c, const char *name,
                              rlock_latch **out);
RLOCK_API void rlock_latch_free(rlock_latch *l);

/* Sets the count to count (>= 0) if the latch has none (it is open).
 * Returns 1 when set, 0 when it had a count already (nothing changed), or
 * RLOCK_EINVAL for a negative count. Redisson: trySetCount(). */
RLOCK_API int rlock_latch_try_set_count(rlock_latch *l, int64_t count);

/* Counts down by one; at zero the latch opens (its key is deleted) and
 * every waiter, C or Java, is woken. On an open latch it does nothing.
 * Returns 0. Redisson: countDown(). */
RLOCK_API int rlock_latch_count_down(rlock_latch *l);

/* Returns the count (0 when open), or a negative code.
 * Redisson: getCount(). */
RLOCK_API int64_t rlock_latch_count(rlock_latch *l);

/* Deletes the latch (it opens without waking Redisson's waiters, as in
 * Redisson; rlock's find it open at their next re-check). Returns 1 when
 * there was one, else 0. Redisson: delete(). */
RLOCK_API int rlock_latch_delete(rlock_latch *l);

/* Waits until the latch is open: at most wait_ms (0: just look), or
 * RLOCK_WAIT_FOREVER. Returns 0 once it is open, RLOCK_ETIMEDOUT when the
 * wait ran out first or Redis did not answer a read within it, RLOCK_ECONN
 * when Redis could not be reached (after the retry attempts of the config
 * that fit in the wait), or RLOCK_EINVAL (wait_ms below
 * RLOCK_WAIT_FOREVER). Whatever Redis does, a wait never outlasts wait_ms
 * by more than a command timeout. Redisson: await() and
 * await(time, unit). */
RLOCK_API int rlock_latch_await(rlock_latch *l, int64_t wait_ms);

/* The async await, for event-loop servers: cb runs exactly once with what
 * rlock_latch_await() would return, where async completions run (the loop
 * given to rlock_client_attach_loop(), else the client's I/O thread).
 * Returns 0 (cb will run) or, without calling cb, RLOCK_EINVAL (l or cb
 * NULL, wait_ms below RLOCK_WAIT_FOREVER), RLOCK_ENOMEM, RLOCK_EFORKED or
 * RLOCK_ECLOSED. rlock_client_free() ends pending calls with RLOCK_ECLOSED.
 * Ownership: l must stay valid until cb has run.
 * Thread-safety: any thread. */
typedef void (*rlock_latch_cb)(rlock_latch *l, int status, void *arg);
RLOCK_API int rlock_latch_await_async(rlock_latch *l, int64_t wait_ms,
                                      rlock_latch_cb cb, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_H */
