'use strict';
/*
 * nested.js REDIS_URL LOCK_NAME DEPTH
 *
 * Takes the lock DEPTH times through one lock object (one owner, so every
 * hold after the first is a re-entry), then gives back one hold per "unlock"
 * line on stdin. End of stdin gives back whatever is left, then exits.
 *
 * Events:
 *   {"event":"locked","holds":K,"field":F}        after the K-th lock()
 *   {"event":"unlocked","holds":K,"locked":L}     K holds left; L is
 *                                                 isLocked() right after
 *   {"event":"done"}                              all holds given back
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name, rest } = peer.parseArgs('REDIS_URL LOCK_NAME DEPTH', 1);
    const depth = peer.intArg(rest[0], 'depth');
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);

    for (let k = 1; k <= depth; k++) {
        await lock.lock();
        peer.emit('locked', { holds: k, field: peer.fieldOf(lock) });
    }

    let holds = depth;
    let queue = Promise.resolve();
    const unlockOne = async () => {
        if (holds === 0)
            return;
        await lock.unlock();
        holds--;
        peer.emit('unlocked', { holds, locked: await lock.isLocked() });
    };
    await new Promise((resolve, reject) => {
        peer.readCommands(
            (line) => {
                if (line !== 'unlock')
                    return;
                queue = queue.then(unlockOne).then(() => { if (holds === 0) resolve(); }, reject);
            },
            () => {
                queue = queue.then(async () => { while (holds > 0) await unlockOne(); })
                    .then(resolve, reject);
            });
    });
    peer.emit('done', {});
    return 0;
});
