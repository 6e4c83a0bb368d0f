'use strict';
/*
 * trylock.js REDIS_URL LOCK_NAME WAIT_MS [LEASE_MS|watchdog]
 *
 * One tryLock(WAIT_MS, lease). If it succeeds, the lock is given back at
 * once. WAIT_MS 0 is a single attempt.
 *
 * Events:
 *   {"event":"trylock","acquired":A,"waited_ms":W,"field":F}
 *   {"event":"unlocked"}                         only when A was true
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name, rest } = peer.parseArgs('REDIS_URL LOCK_NAME WAIT_MS [LEASE_MS|watchdog]', 1);
    const waitMs = peer.intArg(rest[0], 'wait ms');
    const lease = peer.leaseArg(rest[1]);
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);

    const start = Date.now();
    const acquired = await lock.tryLock(waitMs, lease === undefined ? true : lease);
    peer.emit('trylock', { acquired, waited_ms: Date.now() - start, field: peer.fieldOf(lock) });
    if (acquired) {
        await lock.unlock();
        peer.emit('unlocked', {});
    }
    return 0;
});
