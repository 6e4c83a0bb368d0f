'use strict';
/*
 * contend.js REDIS_URL LOCK_NAME COUNTER_KEY ITERATIONS [THINK_MS [SLICE_MS]]
 *
 * Connects, reports "ready" and waits for the line "go" on stdin, so that a
 * test can start every contender at once. Then ITERATIONS times: take the
 * lock, read COUNTER_KEY with GET, pause 1 ms, write the value + 1 with SET,
 * append "p" to the list COUNTER_KEY:log (who held the lock, in order),
 * unlock, pause THINK_MS ms (default 2; the lock is not fair: without a
 * pause between turns the releasing side takes it straight back). The
 * read-modify-write is deliberately not atomic: only the lock keeps
 * increments from being lost.
 *
 * The lock is taken with tryLock(SLICE_MS) (default 250) in a loop rather
 * than lock(): node-redisson's lock() can miss an unlock message and then
 * sleeps out the holder's whole lease (compat/README.md), which would make
 * this program slow, not wrong.
 *
 * Events:
 *   {"event":"ready"}
 *   {"event":"done","iterations":N,"attempts":A,"ms":T}
 */
const peer = require('./lib/peer');

peer.run(async () => {
    const { url, name, rest } = peer.parseArgs('REDIS_URL LOCK_NAME COUNTER_KEY ITERATIONS [THINK_MS [SLICE_MS]]', 2);
    const counterKey = rest[0];
    const iterations = peer.intArg(rest[1], 'iterations');
    const thinkMs = rest[2] === undefined ? 2 : peer.intArg(rest[2], 'think ms');
    const slice = rest[3] === undefined ? 250 : peer.intArg(rest[3], 'slice ms');
    const redisson = peer.connect(url);
    const lock = redisson.getLock(name);
    const redis = redisson.redis;

    await redis.ping();
    peer.emit('ready', {});
    await new Promise((resolve) => {
        peer.readCommands((line) => { if (line === 'go') resolve(); }, resolve);
    });

    const start = Date.now();
    let attempts = 0;
    for (let i = 0; i < iterations; i++) {
        do {
            attempts++;
        } while (!(await lock.tryLock(slice, true)));
        const value = Number((await redis.get(counterKey)) || 0);
        await peer.sleep(1);
        await redis.set(counterKey, String(value + 1));
        await redis.rpush(`${counterKey}:log`, 'p');
        await lock.unlock();
        await peer.sleep(thinkMs);
    }
    peer.emit('done', { iterations, attempts, ms: Date.now() - start });
    return 0;
});
