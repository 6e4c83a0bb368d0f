#!/usr/bin/env node
// bench.js: the rlock-bench scenarios run with the Node lock libraries a
// user would pick instead of rlock, printing the same JSON fields.
//
//   node bench.js --lib node-redisson|redlock|redlock-fast
//                 --url redis://HOST:PORT --scenario NAME [--workers N]
//                 [--seconds S] [--procs] [--locks K] [--watchdog-ms MS]
//
// Libraries, each as its users run it (default settings):
//   node-redisson  Redisson port: watchdog, unlock messages on pub/sub
//   redlock        redlock 4 over ioredis, defaults (retryDelay 200 ms,
//                  retryJitter 200 ms, retryCount 10); a lock attempt that
//                  gives up is simply tried again, as users loop
//   redlock-fast   the same with the retry delay tuned low (10 ms, jitter
//                  10 ms, unlimited retries)
// Node runs one thread, so "workers" without --procs are concurrent async
// tasks in one process, each with its own lock object; with --procs they
// are forked processes. Timestamps are process.hrtime (CLOCK_MONOTONIC on
// Linux), so they compare across processes as rlock-bench's do.
// redlock has no watchdog: for "held" the program renews every lock with
// lock.extend() every third of the timeout, as its users must.
// "waiters" (node-redisson only: redlock has no waiting on a channel) is
// rlock-bench's scenario of the same name: W lock() calls pending at once,
// each on a lock object of its own (its own owner id), across N names a
// second Redisson instance holds, then handed on name by name.
'use strict';

const { fork } = require('node:child_process');
const Redis = require('ioredis');

// ------------------------------------------------------------------ options

function parseArgs(argv) {
    const o = { workers: 1, seconds: 5, procs: false, locks: 10000,
                names: 1000, waiters: 10000,
                watchdogMs: 0, prefix: `peer-bench:${process.pid}:`,
                child: -1 };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i], v = () => argv[++i];
        switch (a) {
        case '--lib': o.lib = v(); break;
        case '--url': o.url = v(); break;
        case '--scenario': o.scenario = v(); break;
        case '--workers': o.workers = Number(v()); break;
        case '--seconds': o.seconds = Number(v()); break;
        case '--procs': o.procs = true; break;
        case '--locks': o.locks = Number(v()); break;
        case '--names': o.names = Number(v()); break;
        case '--waiters': o.waiters = Number(v()); break;
        case '--watchdog-ms': o.watchdogMs = Number(v()); break;
        case '--prefix': o.prefix = v(); break;
        case '--child': o.child = Number(v()); break;
        default: throw new Error(`unknown argument ${a}`);
        }
    }
    const m = /^redis:\/\/([^:/]+):(\d+)\/?0?$/.exec(o.url || '');
    if (!m || !o.scenario || !LIBS[o.lib])
        throw new Error('usage: bench.js --lib node-redisson|redlock|' +
                        'redlock-fast --url redis://HOST:PORT --scenario NAME');
    o.host = m[1];
    o.port = Number(m[2]);
    if (o.scenario === 'held' && !o.watchdogMs)
        o.watchdogMs = 1000;
    return o;
}

const now = () => Number(process.hrtime.bigint()); // ns, CLOCK_MONOTONIC
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- libraries
// Each makes { newLock(name) -> { lock(), unlock() }, close(), stats }.

function redisson(o) {
    const { Redisson } = require('node-redisson');
    const config = { redis: { options: { host: o.host, port: o.port } } };
    if (o.watchdogMs)
        config.lockWatchdogTimeout = BigInt(o.watchdogMs);
    const r = new Redisson(config);
    return {
        newLock(name) {
            const l = r.getLock(name);
            return { lock: () => l.lock(), unlock: () => l.unlock() };
        },
        // a second client, for a scenario's other process
        other: () => redisson(o),
        close: () => r.quit(),
        stats: {},
    };
}

function redlock(settings) {
    return (o) => {
        const Redlock = require('redlock');
        const client = new Redis({ host: o.host, port: o.port });
        const rl = settings ? new Redlock([client], settings)
                            : new Redlock([client]);
        rl.on('clientError', () => {});
        // renewals ("held") must not retry: an extend of a lock that has
        // expired would otherwise retry forever with retryCount -1
        const renewer = new Redlock([client], { ...settings, retryCount: 0 });
        renewer.on('clientError', () => {});
        // a lease users would give a short critical section; "held" uses
        // the watchdog timeout and renews it by hand
        const ttl = o.watchdogMs || 10000;
        const stats = { lock_errors: 0 };
        return {
            newLock(name) {
                let held = null;
                return {
                    async lock() {
                        for (;;) {
                            try {
                                held = await rl.lock(name, ttl);
                                return;
                            } catch (e) {
                                if (e.name !== 'LockError')
                                    throw e;
                                stats.lock_errors++;
                            }
                        }
                    },
                    async unlock() {
                        await held.unlock();
                        held = null;
                    },
                    async extend() {
                        held = await renewer.extend(held, ttl);
                    },
                };
            },
            close: async () => client.disconnect(),
            stats,
            ttl,
        };
    };
}

const LIBS = {
    'node-redisson': redisson,
    redlock: redlock(null),
    'redlock-fast': redlock({ retryDelay: 10, retryJitter: 10,
                              retryCount: -1 }),
};

// -------------------------------------------------------------------- stats

function pct(values, p) {
    if (values.length === 0)
        return 0;
    const s = Float64Array.from(values).sort();
    const rank = Math.min(s.length, Math.max(1, Math.ceil(p / 100 * s.length)));
    return s[rank - 1] / 1000; // ns -> us
}

function round(x) {
    if (!isFinite(x) || x === 0)
        return isFinite(x) ? 0 : -1;
    return Number(x.toPrecision(3));
}

// Counters from INFO, as rlock-bench reads them (see tests/bench/redis.c).
async function counters(c) {
    const cs = await c.info('commandstats');
    const all = await c.info('all');
    const out = { calls: 0, info: 0, scripts: 0, scriptUsec: 0, pttlUsec: 0 };
    for (const m of cs.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
        const n = Number(m[2]);
        out.calls += n;
        if (m[1] === 'info')
            out.info += n;
        if (/^(eval|evalsha|eval_ro|evalsha_ro)$/.test(m[1])) {
            out.scripts += n;
            out.scriptUsec += Number(m[3]);
        }
        if (m[1] === 'pttl')
            out.pttlUsec += Number(m[3]);
    }
    const field = (name) =>
        Number((new RegExp(`^${name}:(\\d+)`, 'm').exec(all) || [])[1] || 0);
    out.reads = field('total_reads_processed');
    // Redis's own CPU time, seconds with a fraction, to microseconds
    const cpu = (name) =>
        Number((new RegExp(`^${name}:([\\d.]+)`, 'm').exec(all) || [])[1] || 0);
    out.cpuUs = Math.round((cpu('used_cpu_sys') + cpu('used_cpu_user')) * 1e6);
    return out;
}

// ------------------------------------------------------------ cycle loops

async function cycles(o, lib, n) {
    const until = now() + o.seconds * 1e9;
    const lat = [];
    let count = 0;
    const start = now();
    await Promise.all(Array.from({ length: n }, async (_, i) => {
        const l = lib.newLock(`${o.prefix}cycle:${i}`);
        let t0 = now();
        while (t0 < until) {
            await l.lock();
            await l.unlock();
            const t1 = now();
            lat.push(t1 - t0);
            count++;
            t0 = t1;
        }
    }));
    const elapsed = (now() - start) / 1e9;
    return { cycles_per_s: round(count / elapsed), p50_us: round(pct(lat, 50)),
             p99_us: round(pct(lat, 99)), cycles: count };
}

// ---------------------------------------------------------------- contended

// How long after the end workers may take to finish their last acquire:
// a library that loses a wake-up can leave a waiter asleep for a whole
// lease; such workers are left behind and counted as "unfinished".
const GRACE_MS = 2000;

// One worker's loop; appends its records [lock_call, lock_ret, unlock_ret,
// worker] (ns) to recs.
async function contendedWorker(o, lib, counter, index, until, recs) {
    const l = lib.newLock(`${o.prefix}contended`);
    const key = `${o.prefix}counter`;
    while (now() < until) {
        const t0 = now();
        await l.lock();
        const t1 = now();
        const v = Number(await counter.get(key));
        await counter.set(key, v + 1);
        await l.unlock();
        recs.push([t0, t1, now(), index]);
    }
    recs.finished = true;
}

// In a forked worker process: connect, report ready, run on "go".
async function childMain(o) {
    const lib = LIBS[o.lib](o);
    const counter = new Redis({ host: o.host, port: o.port });
    await counter.ping();
    const recs = [];
    const finish = () => process.send(
        { type: 'done', recs, stats: lib.stats,
          unfinished: recs.finished ? 0 : 1 },
        () => process.exit(0));
    process.on('message', async (m) => {
        if (m.type === 'stop')
            return finish();
        if (m.type !== 'go')
            return;
        await contendedWorker(o, lib, counter, o.child, m.until, recs);
        finish();
    });
    process.send({ type: 'ready' });
}

async function contended(o, lib, c) {
    const key = `${o.prefix}counter`;
    await c.set(key, 0);
    let recs = [];
    const extra = {};
    let before;
    let start;
    if (o.procs) {
        const kids = [];
        for (let i = 0; i < o.workers; i++) {
            const args = process.argv.slice(2).concat(['--child', String(i),
                                                       '--prefix', o.prefix]);
            const kid = fork(__filename, args, { stdio: 'inherit' });
            kid.on('error', () => {}); // a "stop" to a child that just left
            kids.push(kid);
        }
        await Promise.all(kids.map((k) => new Promise((res) =>
            k.once('message', res))));
        before = await counters(c);
        start = now();
        const until = start + o.seconds * 1e9;
        const done = kids.map((k) => new Promise((res) => k.on('message', (m) => {
            if (m.type === 'done')
                res(m);
        })));
        kids.forEach((k) => k.send({ type: 'go', until }));
        const late = setTimeout(() => kids.forEach((k) => {
            if (k.connected && k.exitCode === null)
                k.send({ type: 'stop' }, () => {});
        }), o.seconds * 1e3 + GRACE_MS);
        extra.unfinished = 0;
        for (const m of await Promise.all(done)) {
            recs = recs.concat(m.recs);
            extra.unfinished += m.unfinished;
            for (const [k, v] of Object.entries(m.stats))
                extra[k] = (extra[k] || 0) + v;
        }
        clearTimeout(late);
    } else {
        const counter = new Redis({ host: o.host, port: o.port });
        await counter.ping();
        before = await counters(c);
        start = now();
        const until = start + o.seconds * 1e9;
        const parts = Array.from({ length: o.workers }, () => []);
        await Promise.race([
            Promise.all(parts.map((p, i) =>
                contendedWorker(o, lib, counter, i, until, p))),
            sleep(o.seconds * 1e3 + GRACE_MS),
        ]);
        recs = parts.flat();
        extra.unfinished = parts.filter((p) => !p.finished).length;
        Object.assign(extra, lib.stats);
    }
    const value = Number(await c.get(key));
    const after = await counters(c);
    return { ...report(o, recs, start, value, before, after), ...extra };
}

// The same figures as tests/bench/contended.c, from records sorted by the
// time each lock call returned (the order the lock was taken in).
function report(o, recs, start, value, before, after) {
    recs.sort((a, b) => a[1] - b[1]);
    const acq = new Array(o.workers).fill(0);
    const handoff = [], hold = [];
    let end = start, maxWait = 0, same = 0;
    recs.forEach((r, k) => {
        acq[r[3]]++;
        hold.push(r[2] - r[1]);
        end = Math.max(end, r[2]);
        maxWait = Math.max(maxWait, r[1] - r[0]);
        if (k > 0) {
            handoff.push(Math.max(0, r[1] - recs[k - 1][2]));
            same += r[3] === recs[k - 1][3] ? 1 : 0;
        }
    });
    const total = recs.length, per = Math.max(total, 1);
    const info = after.info - before.info;
    return {
        acq_per_s: round(total / ((end - start) / 1e9)),
        // a worker cut off after its SET but before its record is not a
        // lost increment (at most one: the holder)
        lost_increments: Math.max(0, total - value),
        handoff_p50_us: round(pct(handoff, 50)),
        handoff_p99_us: round(pct(handoff, 99)),
        hold_p50_us: round(pct(hold, 50)),
        max_wait_ms: round(maxWait / 1e6),
        min_acq: Math.min(...acq),
        max_acq: Math.max(...acq),
        redis_cmds_per_acq: round((after.calls - before.calls - info -
                                   2 * total) / per),
        redis_reads_per_acq: round((after.reads - before.reads - info -
                                    2 * total) / per),
        same_worker_pct: round(total > 1 ? 100 * same / (total - 1) : 0),
        acquisitions: total,
        procs: o.procs,
    };
}

// --------------------------------------------------------------------- held

async function held(o, lib, c) {
    const n = o.locks;
    const locks = new Array(n);
    if (global.gc)
        global.gc();
    const mem0 = process.memoryUsage();
    // redlock: renew by hand every third of the lease, from the start (a
    // lock acquired early must be renewed while later ones are acquired)
    let renewing = null, stop = false;
    const lost = new Uint8Array(n);
    if (lib.ttl) {
        renewing = (async () => {
            while (!stop) {
                const started = now();
                await Promise.all(locks.map(async (l, i) => {
                    if (!l || !l.ready || lost[i])
                        return;
                    try {
                        await l.extend();
                    } catch (e) {
                        lost[i] = 1; // expired before it was renewed
                    }
                }));
                const left = lib.ttl / 3 - (now() - started) / 1e6;
                await sleep(Math.max(left, 1));
            }
        })();
    }
    const t0 = now();
    // --workers concurrent acquirers, each awaiting its own locks in turn
    let next = 0;
    await Promise.all(Array.from({ length: o.workers }, async () => {
        while (next < n) {
            const i = next++;
            const l = lib.newLock(`${o.prefix}held:${i}`);
            await l.lock();
            l.ready = true;
            locks[i] = l;
        }
    }));
    const t1 = now();
    const before = await counters(c);
    const hold = Math.max(o.seconds * 1e3, 3 * o.watchdogMs);
    const holdStart = now();
    const gone = new Uint8Array(n);
    let minPttl = -1, sweeps = 0;
    while ((now() - holdStart) / 1e6 < hold) {
        const p = c.pipeline();
        for (let i = 0; i < n; i++)
            p.pttl(`${o.prefix}held:${i}`);
        const res = await p.exec();
        res.forEach(([err, v], i) => {
            if (err || v <= 0)
                gone[i] = 1;
            else if (minPttl < 0 || v < minPttl)
                minPttl = v;
        });
        sweeps++;
        await sleep(o.watchdogMs / 10);
    }
    const holdNs = now() - holdStart;
    const after = await counters(c);
    if (global.gc)
        global.gc();
    const mem1 = process.memoryUsage();
    stop = true;
    if (renewing)
        await renewing;
    for (let i = 0; i < n; i++) {
        try {
            await locks[i].unlock();
        } catch (e) {
            lost[i] = 1; // gone already
        }
    }
    let expired = 0;
    for (let i = 0; i < n; i++)
        expired += lost[i] || gone[i] ? 1 : 0;
    const heap = (m) => m.heapUsed + m.external;
    const ticks = holdNs / (o.watchdogMs * 1e6 / 3);
    const perS = (a, b) => round((a - b) / (holdNs / 1e9));
    return {
        locks: n,
        expired,
        renew_roundtrips_per_tick: round((after.scripts - before.scripts) /
                                         ticks),
        bytes_per_lock: round((heap(mem1) - heap(mem0)) / n),
        rss_bytes_per_lock: round((mem1.rss - mem0.rss) / n),
        min_pttl_ms: minPttl,
        watchdog_ms: o.watchdogMs,
        hold_s: round(holdNs / 1e9),
        watchdog_periods: round(holdNs / (o.watchdogMs * 1e6)),
        sweeps,
        acquire_per_s: round(n / ((t1 - t0) / 1e9)),
        setup_s: round((t1 - t0) / 1e9),
        redis_cpu_us_per_s: perS(after.cpuUs, before.cpuUs),
        renew_script_us_per_s: perS(after.scriptUsec, before.scriptUsec),
        sweep_us_per_s: perS(after.pttlUsec, before.pttlUsec),
    };
}

// ------------------------------------------------------------------ waiters

// Subscriptions of every client (CLIENT LIST sub + ssub).
async function serverSubscriptions(c) {
    const list = await c.client('LIST');
    let n = 0;
    for (const m of list.matchAll(/ s?sub=(\d+)/g))
        n += Number(m[1]);
    return n;
}

async function waiters(o, lib, c) {
    if (!lib.other)
        throw new Error(`${o.lib} has no waiters on a channel`);
    const holderLib = lib.other();
    const per = Math.floor(o.waiters / o.names), total = per * o.names;
    const name = (i) => `${o.prefix}waiters:${i}`;
    const held = [];
    for (let i = 0; i < o.names; i++) {
        const l = holderLib.newLock(name(i));
        await l.lock();
        held.push(l);
    }
    if (global.gc)
        global.gc();
    const mem0 = process.memoryUsage();
    // unlockedAt[i][k]: the k-th unlock of name i returned; wokeAt: the
    // k-th waiter of name i got it
    const unlockedAt = Array.from({ length: o.names }, () => []);
    const wokeAt = Array.from({ length: o.names }, () => []);
    let unlocking = false, early = 0, failed = 0;
    const t0 = now();
    const done = [];
    for (let w = 0; w < total; w++) {
        const i = w % o.names, l = lib.newLock(name(i));
        done.push(l.lock().then(async () => {
            if (!unlocking)
                early++;
            const k = wokeAt[i].length;
            wokeAt[i].push(now());
            await l.unlock();
            unlockedAt[i][k + 1] = now();
        }, () => { failed++; }));
    }
    // settled: the server's subscriptions the same for half a second
    let subs = -1, same = 0;
    for (let t = 0; t < 300 && same < 5; t++) {
        await sleep(100);
        const n = await serverSubscriptions(c);
        same = n === subs && n > 0 ? same + 1 : 0;
        subs = n;
    }
    const t1 = now();
    if (global.gc)
        global.gc();
    const mem1 = process.memoryUsage();
    let most = 0;
    for (let i = 0; i < o.names; i++) {
        const [, n] = await c.pubsub('NUMSUB',
                                     `redisson_lock__channel:{${name(i)}}`);
        most = Math.max(most, Number(n));
    }
    const before = await counters(c);
    await sleep(o.seconds * 1000);
    const after = await counters(c);
    unlocking = true;
    const t2 = now();
    for (let i = 0; i < o.names; i++) {
        await held[i].unlock();
        unlockedAt[i][0] = now();
    }
    await Promise.all(done);
    const t3 = now();
    const lat = [];
    for (let i = 0; i < o.names; i++)
        wokeAt[i].forEach((t, k) => {
            const u = unlockedAt[i][k];
            lat.push(u && t > u ? t - u : 0); // ns
        });
    await holderLib.close();
    const heap = (m) => m.heapUsed + m.external;
    return {
        waiters: total,
        names: o.names,
        completed: lat.length,
        failed,
        woken_before_unlock: early,
        wake_p50_us: round(pct(lat, 50)),
        wake_p99_us: round(pct(lat, 99)),
        wake_max_ms: round(lat.reduce((a, b) => Math.max(a, b), 0) / 1e6),
        handovers_per_s: round(total / ((t3 - t2) / 1e9)),
        bytes_per_waiter: round((heap(mem1) - heap(mem0)) / total),
        rss_bytes_per_waiter: round((mem1.rss - mem0.rss) / total),
        subscriptions: subs,
        lock_channel_subscribers: most,
        waiting_scripts_per_s: round((after.scripts - before.scripts) /
                                     o.seconds),
        setup_s: round((t1 - t0) / 1e9),
    };
}

// --------------------------------------------------------------------- main

async function main() {
    const o = parseArgs(process.argv.slice(2));
    if (o.child >= 0)
        return childMain(o);
    const c = new Redis({ host: o.host, port: o.port });
    const version = /redis_version:(\S+)/.exec(await c.info('server'))[1];
    const out = { scenario: o.scenario, library: o.lib, workers: o.workers,
                  seconds: o.seconds, redis_version: version };
    let figures;
    // connections and scripts are warm before the clock starts
    const lib = LIBS[o.lib](o);
    const warm = lib.newLock(`${o.prefix}warm`);
    await warm.lock();
    await warm.unlock();
    switch (o.scenario) {
    case 'uncontended': figures = await cycles(o, lib, 1); break;
    case 'parallel': figures = await cycles(o, lib, o.workers); break;
    case 'contended': figures = await contended(o, lib, c); break;
    case 'held': figures = await held(o, lib, c); break;
    case 'waiters': figures = await waiters(o, lib, c); break;
    default: throw new Error(`unknown scenario ${o.scenario}`);
    }
    Object.assign(out, figures);
    out.ok = !out.lost_increments && !out.expired && !out.failed &&
             !out.woken_before_unlock;
    await lib.close();
    c.disconnect();
    // stdout is a pipe or a file here, written synchronously; exit at once
    // so that a library's leftover timers cannot fail after the run
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(out.ok ? 0 : 3);
}

main().catch((e) => {
    console.error(`bench.js: ${e.stack || e}`);
    process.exit(1);
});
