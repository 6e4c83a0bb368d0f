'use strict';
/*
 * force_unlock.js REDIS_URL LOCK_NAME
 *
 * forceUnlock(): deletes the lock whoever holds it and publishes the unlock
 * message if there was one.
 *
 * Events:
 *   {"event":"force_unlock","deleted":D}         D: a lock was deleted
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name } = peer.parseArgs('REDIS_URL LOCK_NAME', 0);
    const redisson = peer.connect(url);
    const deleted = await redisson.getLock(name).forceUnlock();
    peer.emit('force_unlock', { deleted });
    return 0;
});
