'use strict';
/*
 * unlock.js REDIS_URL LOCK_NAME
 *
 * Calls unlock() on a lock this peer never took: someone else's hold (or
 * nobody's). Redisson throws IllegalMonitorStateException there;
 * node-redisson throws RedissonLockError.
 *
 * Events:
 *   {"event":"unlock","ok":true}                 the unlock went through
 *   {"event":"unlock","ok":false,"error":E}      it was refused
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name } = peer.parseArgs('REDIS_URL LOCK_NAME', 0);
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);

    try {
        await lock.unlock();
        peer.emit('unlock', { ok: true });
    } catch (e) {
        peer.emit('unlock', { ok: false, error: String(e.message).split('\n')[0] });
    }
    return 0;
});
