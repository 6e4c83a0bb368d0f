/*
 * fake_server.h: a TCP server on a free loopback port that is not Redis,
 * for misuse tests: it answers the first connections as Redis would for
 * rlock's connect check (PING, AUTH, SELECT, CLIENT, SCRIPT LOAD of rlock's
 * own scripts), and misbehaves on the others in one chosen way.
 *
 * It runs on its own thread; fs_stop() closes every connection, which is
 * also how a test gives a call that hangs on it its thread back.
 * fs_start() fails the running cmocka test if it cannot start.
 */
#ifndef RLOCK_TEST_FAKE_SERVER_H
#define RLOCK_TEST_FAKE_SERVER_H

/* What a fake server does on the connections it does not answer as Redis. */
typedef enum fs_mode {
    FS_SILENT,    /* reads, never writes */
    FS_CLOSE,     /* closes at once */
    FS_GARBAGE,   /* binary junk at once */
    FS_BANNER,    /* an SSH banner at once */
    FS_STATUS_OK, /* "+OK" to every command */
    FS_ERR,       /* "-ERR ..." to every command */
    FS_NOAUTH,    /* "-NOAUTH ..." to every command */
    FS_DEEP,      /* an array nested deeper than any reader allows */
    FS_HUGE_BULK, /* "$1000000000" and then nothing */
    FS_TRICKLE,   /* "$1000000000" and then one byte every 20 ms */
} fs_mode;

typedef struct fake_server fake_server;

/* Starts a server that answers its first redis_conns connections as Redis
 * and misbehaves on the rest as mode says. */
fake_server *fs_start(fs_mode mode, int redis_conns);

/* "redis://127.0.0.1:<port>", owned by the server. */
const char *fs_url(const fake_server *s);

/* Closes every connection and the listener, joins the thread, frees s. */
void fs_stop(fake_server *s);

#endif
