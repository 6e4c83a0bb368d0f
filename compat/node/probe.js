'use strict';
/*
 * probe.js REDIS_URL LOCK_NAME
 *
 * What this peer sees of the lock: isLocked(), then one tryLock(0) (given
 * back at once if it succeeds).
 *
 * Events:
 *   {"event":"probe","locked":L,"acquired":A}
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name } = peer.parseArgs('REDIS_URL LOCK_NAME', 0);
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);

    const locked = await lock.isLocked();
    const acquired = await lock.tryLock(0, true);
    if (acquired)
        await lock.unlock();
    peer.emit('probe', { locked, acquired });
    return 0;
});
