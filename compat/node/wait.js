'use strict';
/*
 * wait.js REDIS_URL LOCK_NAME [HOLD_MS]
 *
 * Waits for the lock with lock() (no time limit, watchdog lease), reports
 * when it got it, holds it HOLD_MS ms (default 0), unlocks and exits.
 *
 * node-redisson subscribes to the lock channel only after its second
 * attempt fails, and listens only a moment after the server has the
 * subscription, so a caller that wants to test the wake-up must release the
 * lock only once the peer says "listening" (PUBSUB NUMSUB is too early); see
 * compat/README.md.
 *
 * Events:
 *   {"event":"waiting"}                          about to call lock()
 *   {"event":"listening","channel":C}            its wait hears C now
 *   {"event":"acquired","waited_ms":W,"field":F}
 *   {"event":"unlocked"}
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name, rest } = peer.parseArgs('REDIS_URL LOCK_NAME [HOLD_MS]', 0);
    const holdMs = rest[0] === undefined ? 0 : peer.intArg(rest[0], 'hold ms');
    const redisson = peer.connect(url);
    peer.announceListening(redisson);
    const lock = redisson.getLock(name);

    peer.emit('waiting', {});
    const start = Date.now();
    await lock.lock();
    peer.emit('acquired', { waited_ms: Date.now() - start, field: peer.fieldOf(lock) });
    await peer.sleep(holdMs);
    await lock.unlock();
    peer.emit('unlocked', {});
    return 0;
});
