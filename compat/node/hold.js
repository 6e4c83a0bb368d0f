'use strict';
/*
 * hold.js REDIS_URL LOCK_NAME HOLD_MS [LEASE_MS|watchdog]
 *
 * Takes the lock with lock() (waiting as long as it takes), holds it for
 * HOLD_MS ms (-1: until told), then unlocks and exits. The line "unlock" on
 * stdin, or the end of stdin, releases it early.
 *
 * Events:
 *   {"event":"locked","field":F,"waited_ms":W}   F is the hash field written
 *   {"event":"unlocked"}                         the unlock succeeded
 *   {"event":"error","error":E}                  the unlock threw (status 1)
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name, rest } = peer.parseArgs('REDIS_URL LOCK_NAME HOLD_MS [LEASE_MS|watchdog]', 1);
    const holdMs = peer.intArg(rest[0], 'hold ms');
    const lease = peer.leaseArg(rest[1]);
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);

    const start = Date.now();
    await lock.lock(lease === undefined ? true : lease);
    peer.emit('locked', { field: peer.fieldOf(lock), waited_ms: Date.now() - start });

    await new Promise((resolve) => {
        if (holdMs >= 0)
            setTimeout(resolve, holdMs);
        peer.readCommands((line) => { if (line === 'unlock') resolve(); }, resolve);
    });
    await lock.unlock();
    peer.emit('unlocked', {});
    return 0;
});
