'use strict';
/*
 * lib/peer.js: what every peer program shares.
 *
 * A peer program is one node-redisson client doing one scripted thing to one
 * lock, for the C compat tests (compat/test_*.c) to watch. They all take
 *
 *     node <program>.js REDIS_URL LOCK_NAME [program arguments...]
 *
 * and write one JSON object per line on stdout, each with
 *     "event"  what happened ("locked", "unlocked", "error", ...)
 *     "t"      Date.now() when it happened
 * plus event fields. Nothing else goes to stdout; diagnostics go to stderr.
 *
 * Programs that hold a lock read stdin: the line "unlock" asks them to
 * release one hold now, and end of input releases everything and exits, so
 * a peer never outlives the test that fed it. As a last resort every peer
 * exits by itself after RLOCK_PEER_MAX_MS (default 30000) ms.
 *
 * Exit status: 0 when the program did what it was asked (a tryLock that
 * fails is still a success: the answer is in its output), 1 when a lock
 * operation failed unexpectedly, 2 on bad arguments, 3 on the guard timeout.
 */
const readline = require('node:readline');
const { Redisson } = require('node-redisson');

/* Writes one event line. */
function emit(event, fields) {
    process.stdout.write(JSON.stringify({ event, t: Date.now(), ...fields }) + '\n');
}

/* Reports an error event and exits with status. */
function fail(status, message) {
    emit('error', { error: String(message) });
    process.exit(status);
}

/* Parses an integer argument or fails with status 2. */
function intArg(value, what) {
    if (value === undefined || !/^-?[0-9]+$/.test(value))
        fail(2, `${what}: expected an integer, got ${JSON.stringify(value)}`);
    return Number(value);
}

/* Parses argv: returns { url, name, rest } or fails with status 2. */
function parseArgs(usage, minRest) {
    const args = process.argv.slice(2);
    if (args.length < 2 + minRest)
        fail(2, `usage: node ${require('node:path').basename(process.argv[1])} ${usage}`);
    return { url: args[0], name: args[1], rest: args.slice(2) };
}

/* Creates a node-redisson client for redis://[user:pass@]host:port[/db].
 * lockWatchdogTimeout comes from RLOCK_PEER_WATCHDOG_MS (default 30000, as
 * Redisson's). */
function connect(url) {
    let u;
    try {
        u = new URL(url);
    } catch (e) {
        fail(2, `bad Redis URL ${JSON.stringify(url)}`);
    }
    const options = {
        host: u.hostname,
        port: Number(u.port || 6379),
        db: Number(u.pathname.replace(/^\//, '') || 0),
        connectTimeout: 5000,
        maxRetriesPerRequest: 3,
    };
    if (u.username)
        options.username = decodeURIComponent(u.username);
    if (u.password)
        options.password = decodeURIComponent(u.password);
    const watchdog = BigInt(process.env.RLOCK_PEER_WATCHDOG_MS || '30000');
    return new Redisson({ redis: { options }, lockWatchdogTimeout: watchdog });
}

/* The hash field node-redisson writes for lock: "<client id>:<lock id>". */
function fieldOf(lock) {
    return lock.getClientName(lock.clientId);
}

/* Emits {"event":"listening","channel":C} each time the client's waits
 * really listen on a channel. node-redisson's subscribeOnce() sends
 * SUBSCRIBE and attaches its message listener only once the reply has been
 * read, in a later microtask; a message that arrives in the same read as
 * that reply is emitted before the listener exists, and is lost (the waiter
 * then sleeps until the lock's TTL). PUBSUB NUMSUB counts the subscription
 * as soon as the server has it, so it cannot tell a caller when an unlock
 * message will be heard; this event can. */
function announceListening(redisson) {
    const executor = redisson.commandExecutor;
    const subscribeOnce = executor.subscribeOnce.bind(executor);
    executor.subscribeOnce = async (channel, listener) => {
        await subscribeOnce(channel, listener);
        emit('listening', { channel });
    };
}

/* Lease argument: "watchdog" (or absent) means the watchdog lease. */
function leaseArg(value) {
    if (value === undefined || value === 'watchdog')
        return undefined;
    return intArg(value, 'lease ms');
}

function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/* Calls onLine(line) for every stdin line and onEnd() at end of input. */
function readCommands(onLine, onEnd) {
    const rl = readline.createInterface({ input: process.stdin });
    rl.on('line', (line) => onLine(line.trim()));
    rl.on('close', onEnd);
    return rl;
}

/* Starts the guard that ends a forgotten peer. */
function startGuard() {
    const ms = Number(process.env.RLOCK_PEER_MAX_MS || '30000');
    setTimeout(() => fail(3, `guard: still running after ${ms} ms`), ms).unref();
}

/* Runs main(); any exception becomes an error event and status 1.  The
 * process exits explicitly: node-redisson leaves timers behind (see
 * compat/README.md), which would keep it alive for up to a lease. */
function run(main) {
    startGuard();
    main().then(
        (status) => process.exit(status === undefined ? 0 : status),
        (e) => fail(1, e && e.stack ? e.stack.split('\n')[0] : e));
}

module.exports = {
    emit, fail, intArg, parseArgs, connect, fieldOf, leaseArg, sleep,
    readCommands, run, announceListening,
};
