#!/usr/bin/python3
"""redis_py_bench.py: the rlock-bench scenarios run with redis-py's Lock
(Debian's python3-redis), printing the same JSON fields as rlock-bench.

  redis_py_bench.py --url redis://HOST:PORT --scenario NAME [--workers N]
                    [--seconds S] [--procs] [--locks K] [--watchdog-ms MS]

The lock is used as its users run it: Redis.lock(name) with its defaults
(no timeout, polling every 0.1 s while it waits). Workers are threads of
one process sharing one Redis client (its pool gives each thread a
connection), or with --procs forked processes. Timestamps are
time.monotonic_ns(), CLOCK_MONOTONIC, so they compare across processes.

redis-py's Lock has no watchdog: for "held" the locks get a timeout of
--watchdog-ms and one renewal thread extends every lock (Lock.extend with
replace_ttl) every third of it, as its users must. bytes_per_lock comes
from tracemalloc (Python objects do not live in malloc's heap).
"""
import argparse
import json
import math
import multiprocessing
import os
import re
import sys
import threading
import time
import tracemalloc

import redis

now = time.monotonic_ns


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--scenario", required=True,
                   choices=["uncontended", "contended", "parallel", "held"])
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--procs", action="store_true")
    p.add_argument("--locks", type=int, default=10000)
    p.add_argument("--watchdog-ms", type=int, default=0)
    p.add_argument("--prefix", default="peer-bench:%d:" % os.getpid())
    o = p.parse_args()
    m = re.match(r"^redis://([^:/]+):(\d+)/?0?$", o.url)
    if not m:
        p.error("--url must be redis://HOST:PORT")
    o.host, o.port = m.group(1), int(m.group(2))
    if o.scenario == "held" and not o.watchdog_ms:
        o.watchdog_ms = 1000
    return o


def client(o):
    return redis.Redis(host=o.host, port=o.port)


def pct(values, p):
    """Nearest-rank percentile of ns values, in us."""
    if not values:
        return 0
    s = sorted(values)
    rank = min(len(s), max(1, math.ceil(p / 100 * len(s))))
    return s[rank - 1] / 1000


def rnd(x):
    """3 significant digits, as rlock-bench prints."""
    if x == 0 or not math.isfinite(x):
        return 0 if math.isfinite(x) else -1
    r = round(x, 2 - int(math.floor(math.log10(abs(x)))))
    return int(r) if r == int(r) else r


def counters(c):
    """INFO counters as rlock-bench reads them (tests/bench/redis.c)."""
    out = {"calls": 0, "info": 0, "scripts": 0, "script_usec": 0,
           "pttl_usec": 0}
    for name, stats in c.info("commandstats").items():
        n = stats["calls"]
        out["calls"] += n
        cmd = name[len("cmdstat_"):]
        if cmd == "info":
            out["info"] += n
        if cmd in ("eval", "evalsha", "eval_ro", "evalsha_ro"):
            out["scripts"] += n
            out["script_usec"] += stats["usec"]
        if cmd == "pttl":
            out["pttl_usec"] += stats["usec"]
    info = c.info("all")
    out["reads"] = info.get("total_reads_processed", 0)
    # Redis's own CPU time (seconds with a fraction) in microseconds
    out["cpu_us"] = round((info.get("used_cpu_sys", 0) +
                           info.get("used_cpu_user", 0)) * 1e6)
    return out


# --------------------------------------------------------------- cycles


def cycles(o, n):
    c = client(o)
    until = now() + int(o.seconds * 1e9)
    lat = [[] for _ in range(n)]

    def run(i):
        lk = c.lock("%scycle:%d" % (o.prefix, i))
        t0 = now()
        while t0 < until:
            lk.acquire()
            lk.release()
            t1 = now()
            lat[i].append(t1 - t0)
            t0 = t1

    start = now()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = (now() - start) / 1e9
    allv = [v for part in lat for v in part]
    return {"cycles_per_s": rnd(len(allv) / elapsed),
            "p50_us": rnd(pct(allv, 50)), "p99_us": rnd(pct(allv, 99)),
            "cycles": len(allv)}


# ------------------------------------------------------------ contended


def contended_worker(o, c, index, until, out):
    """One worker's loop; appends (lock_call, lock_ret, unlock_ret, index)
    records to out."""
    lk = c.lock("%scontended" % o.prefix)
    key = "%scounter" % o.prefix
    while now() < until:
        t0 = now()
        lk.acquire()
        t1 = now()
        v = int(c.get(key))
        c.set(key, v + 1)
        lk.release()
        out.append((t0, t1, now(), index))


def child_main(o, index, ready, go, results):
    c = client(o)
    c.ping()
    ready.put(index)
    until = go.get()
    recs = []
    contended_worker(o, c, index, until, recs)
    results.put(recs)


def contended(o, c):
    key = "%scounter" % o.prefix
    c.set(key, 0)
    recs = []
    if o.procs:
        ctx = multiprocessing.get_context("fork")
        ready, go, results = ctx.Queue(), ctx.Queue(), ctx.Queue()
        kids = [ctx.Process(target=child_main, args=(o, i, ready, go, results))
                for i in range(o.workers)]
        for k in kids:
            k.start()
        for _ in kids:
            ready.get()
        before = counters(c)
        start = now()
        until = start + int(o.seconds * 1e9)
        for _ in kids:
            go.put(until)
        for _ in kids:
            recs.extend(results.get())
        for k in kids:
            k.join()
    else:
        wc = client(o)
        wc.ping()
        parts = [[] for _ in range(o.workers)]
        before = counters(c)
        start = now()
        until = start + int(o.seconds * 1e9)
        threads = [threading.Thread(target=contended_worker,
                                    args=(o, wc, i, until, parts[i]))
                   for i in range(o.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        recs = [r for part in parts for r in part]
    value = int(c.get(key))
    after = counters(c)
    return report(o, recs, start, value, before, after)


def report(o, recs, start, value, before, after):
    """The figures of tests/bench/contended.c, from records sorted by the
    time each acquire returned (the order the lock was taken in)."""
    recs.sort(key=lambda r: r[1])
    acq = [0] * o.workers
    handoff, hold = [], []
    end, max_wait, same = start, 0, 0
    for k, r in enumerate(recs):
        acq[r[3]] += 1
        hold.append(r[2] - r[1])
        end = max(end, r[2])
        max_wait = max(max_wait, r[1] - r[0])
        if k > 0:
            handoff.append(max(0, r[1] - recs[k - 1][2]))
            same += r[3] == recs[k - 1][3]
    total = len(recs)
    per = max(total, 1)
    info = after["info"] - before["info"]
    return {
        "acq_per_s": rnd(total / ((end - start) / 1e9)),
        "lost_increments": total - value,
        "handoff_p50_us": rnd(pct(handoff, 50)),
        "handoff_p99_us": rnd(pct(handoff, 99)),
        "hold_p50_us": rnd(pct(hold, 50)),
        "max_wait_ms": rnd(max_wait / 1e6),
        "min_acq": min(acq),
        "max_acq": max(acq),
        "redis_cmds_per_acq": rnd((after["calls"] - before["calls"] - info
                                   - 2 * total) / per),
        "redis_reads_per_acq": rnd((after["reads"] - before["reads"] - info
                                    - 2 * total) / per),
        "same_worker_pct": rnd(100 * same / (total - 1) if total > 1 else 0),
        "acquisitions": total,
        "procs": o.procs,
    }


# ----------------------------------------------------------------- held


def held(o, c):
    n = o.locks
    ttl = o.watchdog_ms / 1000
    locks = [None] * n
    lost = [False] * n
    stop = threading.Event()
    ready = [0]  # locks acquired so far, in index order

    def renew():
        # every third of the lease, extend each lock acquired so far
        while not stop.is_set():
            started = time.monotonic()
            for i in range(ready[0]):
                if not lost[i]:
                    try:
                        locks[i].extend(ttl, replace_ttl=True)
                    except redis.exceptions.LockError:
                        lost[i] = True
            left = ttl / 3 - (time.monotonic() - started)
            stop.wait(max(left, 0.001))

    tracemalloc.start()
    mem0 = tracemalloc.get_traced_memory()[0]
    renewer = threading.Thread(target=renew)
    renewer.start()
    t0 = now()
    for i in range(n):
        lk = c.lock("%sheld:%d" % (o.prefix, i), timeout=ttl,
                    thread_local=False)
        lk.acquire()
        locks[i] = lk
        ready[0] = i + 1
    t1 = now()
    before = counters(c)
    hold = max(o.seconds, 3 * ttl) * 1e9
    hold_start = now()
    gone = [False] * n
    min_pttl, sweeps = -1, 0
    while now() - hold_start < hold:
        p = c.pipeline(transaction=False)
        for i in range(n):
            p.pttl("%sheld:%d" % (o.prefix, i))
        for i, v in enumerate(p.execute()):
            if v <= 0:
                gone[i] = True
            elif min_pttl < 0 or v < min_pttl:
                min_pttl = v
        sweeps += 1
        time.sleep(ttl / 10)
    hold_ns = now() - hold_start
    after = counters(c)
    mem1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    stop.set()
    renewer.join()
    for i in range(n):
        try:
            locks[i].release()
        except redis.exceptions.LockError:
            lost[i] = True
    ticks = hold_ns / (o.watchdog_ms * 1e6 / 3)
    return {
        "locks": n,
        "expired": sum(1 for i in range(n) if lost[i] or gone[i]),
        "renew_roundtrips_per_tick": rnd((after["scripts"] - before["scripts"])
                                         / ticks),
        "bytes_per_lock": rnd((mem1 - mem0) / n),
        "min_pttl_ms": min_pttl,
        "watchdog_ms": o.watchdog_ms,
        "hold_s": rnd(hold_ns / 1e9),
        "watchdog_periods": rnd(hold_ns / (o.watchdog_ms * 1e6)),
        "sweeps": sweeps,
        "acquire_per_s": rnd(n / ((t1 - t0) / 1e9)),
        "setup_s": rnd((t1 - t0) / 1e9),
        "redis_cpu_us_per_s": rnd((after["cpu_us"] - before["cpu_us"])
                                  / (hold_ns / 1e9)),
        "renew_script_us_per_s": rnd((after["script_usec"]
                                      - before["script_usec"])
                                     / (hold_ns / 1e9)),
        "sweep_us_per_s": rnd((after["pttl_usec"] - before["pttl_usec"])
                              / (hold_ns / 1e9)),
    }


def main():
    o = parse_args()
    c = client(o)
    out = {"scenario": o.scenario, "library": "redis-py",
           "workers": o.workers, "seconds": o.seconds,
           "redis_version": c.info("server")["redis_version"],
           "redis_py_version": redis.__version__}
    # connection and release script are warm before the clock starts
    warm = c.lock("%swarm" % o.prefix)
    warm.acquire()
    warm.release()
    if o.scenario == "uncontended":
        out.update(cycles(o, 1))
    elif o.scenario == "parallel":
        out.update(cycles(o, o.workers))
    elif o.scenario == "contended":
        out.update(contended(o, c))
    else:
        out.update(held(o, c))
    out["ok"] = not out.get("lost_increments") and not out.get("expired")
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
