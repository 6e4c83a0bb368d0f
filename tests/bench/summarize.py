#!/usr/bin/python3
"""summarize.py: the markdown table of a scripts/bench results file.

  summarize.py tests/bench/results/<date>.jsonl

Reads the JSON lines (a "meta" line, then one object per run), takes the
median of every figure over the runs of each scenario and library, and
prints per scenario: the floor measured by `limit`, rlock's figure and its
ratio to that floor, then each peer's figure with the ratio rlock/peer in
brackets. Last, the targets, each met or missed and by how much.
Standard library only.
"""
import json
import statistics
import sys

PEERS = ["node-redisson", "redlock", "redlock-fast", "redis-py"]
# rlock's other settings and kinds, shown beside it where they were run
VARIANTS = [("rlock-barging", "rlock, barging on"),
            ("rlock-noqueue", "rlock, queue off"), ("rlock-fair", "rlock fair lock"),
            ("rlock-cluster", "rlock, 3-master cluster")]

# (figure, label, better): better is "high" or "low"
FIGURES = {
    "uncontended": [("cycles_per_s", "cycles/s", "high"),
                    ("p50_us", "cycle p50 (us)", "low"),
                    ("p99_us", "cycle p99 (us)", "low")],
    "parallel": [("cycles_per_s", "cycles/s, all threads", "high"),
                 ("p50_us", "cycle p50 (us)", "low"),
                 ("p99_us", "cycle p99 (us)", "low")],
    "contended": [("acq_per_s", "acquisitions/s", "high"),
                  ("handoff_p50_us", "handoff p50 (us)", "low"),
                  ("handoff_p99_us", "handoff p99 (us)", "low"),
                  ("hold_p50_us", "hold p50 (us): lock returned to unlock "
                   "returned", "low"),
                  ("max_wait_ms", "longest wait (ms)", "low"),
                  ("min_acq", "fewest acquisitions of a worker", "high"),
                  ("max_acq", "most acquisitions of a worker", None),
                  ("same_worker_pct", "releaser re-took it (%)", "low"),
                  ("redis_cmds_per_acq", "Redis commands/acq (incl. in scripts)",
                   "low"),
                  ("redis_reads_per_acq", "request batches/acq", "low"),
                  ("redis_cpu_us_per_acq", "Redis CPU per acquisition (us)",
                   "low"),
                  ("redis_cpu_share", "Redis CPU (cores)", None),
                  ("host_idle_share", "machine's CPUs left idle (share)",
                   None),
                  ("lost_increments", "lost increments", "low")],
    "held": [("expired", "locks expired", "low"),
             ("renew_roundtrips_per_tick", "renewal calls per tick", "low"),
             ("bytes_per_lock", "client bytes per lock", "low"),
             ("min_pttl_ms", "smallest lease seen (ms)", "high"),
             ("lease_margin_min_ms", "least lease left at a renewal (ms)",
              "high"),
             ("setup_s", "taking the locks (s)", "low"),
             ("redis_cpu_us_per_s", "Redis CPU per second of the hold (us)",
              "low"),
             ("renew_script_us_per_s", "... in renewal scripts (us/s)", "low"),
             ("sweep_us_per_s", "... in the probes' PTTLs (us/s)", None)],
    "waiters": [("completed", "waiters that got the lock", "high"),
                ("failed", "waiters that failed", "low"),
                ("wake_p50_us", "wake-up p50 (us)", "low"),
                ("wake_p99_us", "wake-up p99 (us)", "low"),
                ("wake_max_ms", "longest wake-up (ms)", "low"),
                ("handovers_per_s", "hand-overs/s", "high"),
                ("bytes_per_waiter", "client bytes per waiter", "low"),
                ("subscriptions", "subscriptions on the server", "low"),
                ("lock_channel_subscribers",
                 "most subscribers of one lock channel", "low"),
                ("waiting_scripts_per_s", "scripts/s while waiting", "low"),
                ("rechecks_found_free", "turns found by a re-check", "low")],
    "names": [("completed", "names locked and released", "high"),
              ("failed", "cycles that failed", "low"),
              ("cycles_per_s", "cycles/s", "high"),
              ("heap_before_bytes", "client heap before (bytes)", None),
              ("heap_peak_bytes", "client heap, largest sample (bytes)",
               "low"),
              ("heap_after_bytes", "client heap after (bytes)", "low"),
              ("heap_growth_per_name", "heap grown per name (bytes)", "low"),
              ("keys_left", "keys left in Redis", "low")],
}

# mixed-java: (figure, side or None for the whole run, label, better)
MIXED = [("acq_per_s", None, "acquisitions/s, whole run", "high"),
         ("acq_per_s", "rlock", "rlock: acquisitions/s", None),
         ("acq_per_s", "java", "Java: acquisitions/s", None),
         ("min_acq", "rlock", "rlock: fewest acquisitions of a process", "high"),
         ("max_acq", "rlock", "rlock: most acquisitions of a process", None),
         ("min_acq", "java", "Java: fewest acquisitions of a process", "high"),
         ("max_acq", "java", "Java: most acquisitions of a process", None),
         ("max_wait_ms", "rlock", "rlock: longest wait (ms)", "low"),
         ("max_wait_ms", "java", "Java: longest wait (ms)", "low"),
         ("wait_p50_us", "rlock", "rlock: wait p50 (us)", "low"),
         ("wait_p50_us", "java", "Java: wait p50 (us)", "low"),
         ("wait_p99_us", "rlock", "rlock: wait p99 (us)", "low"),
         ("wait_p99_us", "java", "Java: wait p99 (us)", "low"),
         ("redis_cmds_per_acq", None, "Redis commands/acq (incl. in scripts)",
          "low"),
         ("lost_increments", None, "lost increments", "low")]

# the scenarios whose figures rlock-bench compares with the floor
FLOORED = {"uncontended", "parallel", "contended", "contended-procs"}
# the floor each figure is compared with: key in vs_limit
VS_LIMIT = {"p50_us", "p99_us", "cycles_per_s", "handoff_p50_us",
            "handoff_p99_us", "acq_per_s"}


def load(path):
    meta, runs = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if "meta" in obj:
                meta = obj["meta"]
            elif "meta_after" in obj:
                meta.update(obj["meta_after"])
            else:
                runs.append(obj)
    return meta, runs


def variant(r):
    s = r.get("scenario", "?")
    if s == "contended":
        return "contended-procs" if r.get("procs") else "contended"
    return s


def median(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def fmt(v):
    if v is None:
        return "n/a"
    if v == int(v) and abs(v) >= 1:
        return "{:,}".format(int(v))
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "{:.1f}".format(v)
    return "{:.2f}".format(v).rstrip("0").rstrip(".") if v else "0"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def cluster(med, target):
    """The cluster's targets, where scripts/bench --cluster ran: routing costs
    no round trip in steady state, and locks spread over 3 masters go
    faster than on one server, in the same run."""
    v = med("uncontended", "rlock-cluster", "p50_us")
    one = med("uncontended", "rlock", "p50_us")
    if v is None:
        return
    r = ratio(v, one)
    target("cluster: uncontended p50 within 1.2x of the single server's "
           "(no extra round trip)", r, "1.2x", r is not None and r <= 1.2,
           r is not None and "%sx" % fmt(r))
    v = med("parallel", "rlock-cluster", "cycles_per_s")
    one = med("parallel", "rlock", "cycles_per_s")
    target("cluster: parallel cycles/s on 3 masters above the single "
           "server's", v, "> %s" % fmt(one), one is not None and v is not None
           and v > one)


def handover_goals(meta, med, target):
    """The goals for many processes on one RLock (rlock's queue on): the
    ring's orderly floor and the best barging peer, measured in the same
    run; waits, spread, commands and batches per acquisition."""
    workers = meta.get("workers")
    scen = "contended-procs"
    best = max([x for x in (med(scen, p, "acq_per_s") for p in PEERS)
                if x is not None] or [0])
    ring = med("ring", "rlock", "acq_per_s")
    v = med(scen, "rlock", "acq_per_s")
    r = ratio(v, ring)
    target("RLock, %s processes: at least 0.95x the ring floor" % workers,
           r, "0.95x", r is not None and r >= 0.95,
           r is not None and "%sx" % fmt(r))
    r = ratio(v, best)
    target("RLock, %s processes: at least 1.2x the best peer" % workers,
           r, "1.2x", r is not None and r >= 1.2,
           r is not None and "%sx" % fmt(r))
    v = med(scen, "rlock", "max_wait_ms")
    target("RLock, %s processes: longest wait under 50 ms" % workers, v,
           "50 ms", v is not None and v < 50)
    lo, hi = med(scen, "rlock", "min_acq"), med(scen, "rlock", "max_acq")
    spread = hi / lo if lo else None
    target("RLock, %s processes: per-worker acquisitions within 1.5x"
           % workers, spread, "1.5x", spread is not None and spread <= 1.5,
           spread is not None and "%sx" % fmt(spread))
    v = med(scen, "rlock", "redis_cmds_per_acq")
    target("RLock, %s processes: at most 16 Redis commands per acquisition"
           % workers, v, "16", v is not None and v <= 16)
    v = med(scen, "rlock", "redis_reads_per_acq")
    target("RLock, %s processes: at most 4 request batches per acquisition"
           % workers, v, "4", v is not None and v <= 4)


def breakdown(groups, med, w):
    """Where a hand-over's Redis commands go: each command's calls per
    acquisition, rlock's RLock beside the ring's floor, in the same run."""
    by = "redis_cmds_by_command"
    names = []
    for scen in ("contended-procs", "ring"):
        for r in groups.get((scen, "rlock"), []):
            for name in r.get(by) or {}:
                if name not in names:
                    names.append(name)
    if not names:
        return
    rows = []
    for name in names:
        mine = med("contended-procs", "rlock", name, by) or 0
        ring = med("ring", "rlock", name, by) or 0
        rows.append((mine, ring, name))
    rows.sort(key=lambda row: (-(row[0] - row[1]), row[2]))
    w("**Where the commands go** (calls per acquisition, inside scripts "
      "included; RLock with its queue and the ring in the same run)")
    w("")
    w("| command | RLock | ring | RLock more |")
    w("|---|---:|---:|---:|")
    for mine, ring, name in rows:
        if mine < 0.05 and ring < 0.05:
            continue
        w("| %s | %s | %s | %s |" % (name, fmt(mine), fmt(ring),
                                     fmt(mine - ring)))
    w("| all | %s | %s | %s |" % (
        fmt(sum(r[0] for r in rows)), fmt(sum(r[1] for r in rows)),
        fmt(sum(r[0] - r[1] for r in rows))))
    w("")


def mixed(meta, groups, med, w):
    """The mixed fleet: rlock's processes and the real Java Redisson's JVMs
    on one lock, each side's figures for each setting of rlock."""
    libs = [(lib, label) for lib, label in
            [("rlock", "rlock")] + VARIANTS if ("mixed-java", lib) in groups]
    if not libs:
        return
    w("**mixed-java: %s rlock processes and %s JVMs of Java Redisson %s on "
      "one lock**" % (meta.get("rlock_procs", "?"), meta.get("java_procs", "?"),
                      meta.get("redisson", "?")))
    w("")
    w("| figure | " + " | ".join(label for _, label in libs) + " |")
    w("|---|" + "---:|" * len(libs))
    for field, side, label, better in MIXED:
        arrow = {"high": " ↑", "low": " ↓"}.get(better, "")
        w("| %s%s | %s |" % (label, arrow, " | ".join(
            fmt(med("mixed-java", lib, field, side)) for lib, _ in libs)))
    w("")


def main():
    meta, runs = load(sys.argv[1])
    groups = {}
    errors = []
    for r in runs:
        key = (variant(r), r.get("library"))
        if "error" in r:
            errors.append("%s %s run %s: %s" % (key[0], key[1], r.get("run"),
                                                r["error"]))
            continue
        groups.setdefault(key, []).append(r)

    def med(scen, lib, field, sub=None):
        rs = groups.get((scen, lib), [])
        return median([(r.get(sub) or {}).get(field) if sub else r.get(field)
                       for r in rs])

    out = []
    w = out.append
    w("Measured %s on %s CPU(s), %s, Redis %s, rlock %s; medians of %s"
      " run(s) of %s s; load average before the run: %s, after: %s." % (
          meta.get("date", "?"), meta.get("nproc", "?"), meta.get("cpu", "?"),
          meta.get("redis_version", "?"), meta.get("commit", "?"),
          meta.get("runs", "?"), meta.get("seconds", "?"),
          meta.get("loadavg_before", "?"), meta.get("loadavg_after", "?")))
    w("")
    w("Floor (`limit`, plain hiredis, rlock's own scripts): PING p50 %s us,"
      " EVALSHA p50 %s us (lock %s, unlock %s), %s EVALSHA/s pipelined x16,"
      " %s lock+unlock pairs/s on %s connections." % (
          fmt(med("limit", "rlock", "ping_rtt_p50_us")),
          fmt(med("limit", "rlock", "evalsha_rtt_p50_us")),
          fmt(med("limit", "rlock", "evalsha_lock_rtt_p50_us")),
          fmt(med("limit", "rlock", "evalsha_unlock_rtt_p50_us")),
          fmt(med("limit", "rlock", "evalsha_pipelined_per_s")),
          fmt(med("limit", "rlock", "evalsha_pairs_per_s")),
          meta.get("threads", "?")))
    w("")
    titles = {
        "uncontended": "uncontended: one thread, one lock",
        "contended": "contended: %s threads on one lock (Node: async tasks "
                     "in one process)" % meta.get("workers", "?"),
        "contended-procs": "contended: %s processes on one lock"
                           % meta.get("workers", "?"),
        "parallel": "parallel: %s threads, a lock each (Node: async tasks)"
                    % meta.get("threads", "?"),
        "held": "held: %s locks for several watchdog timeouts of %s ms"
                % (meta.get("locks", "?"), meta.get("watchdog_ms", "?")),
        "waiters": "waiters: %s async waiters on one libev loop, 10 per name"
                   % meta.get("waiters", "?"),
        "names": "names: %s distinct names, each locked and released once"
                 % meta.get("names", "?"),
    }
    for scen in ["uncontended", "contended", "contended-procs", "parallel",
                 "held", "waiters", "names"]:
        if not any(k[0] == scen for k in groups):
            continue
        figs = FIGURES["contended" if scen.startswith("contended") else scen]
        variants = [v for v in VARIANTS if (scen, v[0]) in groups]
        w("**%s**" % titles[scen])
        w("")
        w("| figure | rlock | rlock / floor | " +
          "".join("%s | " % v[1] for v in variants) +
          " | ".join("%s (rlock/peer)" % p for p in PEERS) + " |")
        w("|---|---:|---:|" + "---:|" * (len(variants) + len(PEERS)))
        for field, label, better in figs:
            mine = med(scen, "rlock", field)
            floor = (fmt(med(scen, "rlock", field, "vs_limit"))
                     if field in VS_LIMIT and scen in FLOORED else "")
            cells = []
            for p in PEERS:
                theirs = med(scen, p, field)
                if theirs is None:
                    cells.append("n/a")
                    continue
                rr = ratio(mine, theirs)
                cells.append("%s (%s)" % (fmt(theirs), fmt(rr))
                             if rr is not None else fmt(theirs))
            arrow = {"high": " ↑", "low": " ↓"}.get(better, "")
            extra = "".join("%s | " % fmt(med(scen, v[0], field))
                            for v in variants)
            w("| %s%s | %s | %s | %s%s |" % (label, arrow, fmt(mine), floor,
                                             extra, " | ".join(cells)))
        w("")

    mixed(meta, groups, med, w)
    v = med("fanout", "rlock", "acq_per_s")
    if v is not None:
        w("**fanout: the ceiling of one RLock whose unlock channel %s other "
          "processes hear**" % fmt(med("fanout", "rlock", "listeners")))
        w("")
        w("One process locks, makes two round trips and unlocks with nobody "
          "contending; the others only read its unlock messages: %s "
          "acquisitions/s, %s Redis commands per acquisition (Redisson's "
          "acquire and release scripts, and the two round trips left out)."
          % (fmt(v), fmt(med("fanout", "rlock", "redis_cmds_per_acq"))))
        w("")
    v = med("ring", "rlock", "acq_per_s")
    if v is not None:
        mine = med("contended-procs", "rlock", "acq_per_s")
        w("**ring: the floor of an orderly hand-over between %s processes, "
          "no library**" % fmt(med("ring", "rlock", "workers")))
        w("")
        w("Each process takes the lock with Redisson's acquire script only "
          "when the release before it told it on a channel of its own, makes "
          "the same two round trips and releases: %s acquisitions/s, %s Redis "
          "commands and %s request batches per acquisition (Redis CPU %s us "
          "per acquisition, %s cores; machine idle %s), fewest/most "
          "acquisitions of a process %s/%s. rlock's RLock in the same run: "
          "%s of it."
          % (fmt(v), fmt(med("ring", "rlock", "redis_cmds_per_acq")),
             fmt(med("ring", "rlock", "redis_reads_per_acq")),
             fmt(med("ring", "rlock", "redis_cpu_us_per_acq")),
             fmt(med("ring", "rlock", "redis_cpu_share")),
             fmt(med("ring", "rlock", "host_idle_share")),
             fmt(med("ring", "rlock", "min_acq")),
             fmt(med("ring", "rlock", "max_acq")),
             "%sx" % fmt(ratio(mine, v)) if mine is not None else "n/a"))
        w("")
        breakdown(groups, med, w)
    w("**Targets**")
    w("")
    w("| target | measured | |")
    w("|---|---|---|")

    def target(name, value, limit, ok, shown=None):
        if value is None:
            w("| %s | n/a | not measured |" % name)
            return
        w("| %s | %s | %s |" % (name, shown or fmt(value),
                                "met" if ok else "missed (target %s)" % limit))

    v = med("uncontended", "rlock", "p50_us", "vs_limit")
    target("uncontended p50 within 1.1x of two EVALSHA", v, "1.1x",
           v is not None and v <= 1.1, v is not None and "%sx" % fmt(v))
    cluster(med, target)
    for scen in ["contended-procs", "contended"]:
        tag = "procs" if scen.endswith("procs") else "threads"
        v = med(scen, "rlock", "handoff_p50_us", "vs_limit")
        target("handoff p50 within 2x of RTT + EVALSHA (%s)" % tag, v, "2x",
               v is not None and v <= 2, v is not None and "%sx" % fmt(v))
        v = med(scen, "rlock", "handoff_p99_us", "vs_limit")
        target("handoff p99 within 5x (%s)" % tag, v, "5x",
               v is not None and v <= 5, v is not None and "%sx" % fmt(v))
        v = med(scen, "rlock", "max_wait_ms")
        target("longest wait under 100 ms (%s)" % tag, v, "100 ms",
               v is not None and v < 100)
        lo, hi = med(scen, "rlock", "min_acq"), med(scen, "rlock", "max_acq")
        spread = hi / lo if lo else None
        target("per-worker acquisitions within 2x (%s)" % tag, spread, "2x",
               spread is not None and spread <= 2,
               spread is not None and "%sx" % fmt(spread))
        v = med(scen, "rlock", "acq_per_s")
        best = max([x for x in (med(scen, p, "acq_per_s") for p in PEERS)
                    if x is not None] or [0])
        target("acquisitions/s above every peer (%s)" % tag,
               v if best > 0 else None,
               "> %s" % fmt(best), v is not None and v > best)
        v = med(scen, "rlock", "redis_reads_per_acq")
        target("request batches per acquisition at most 4 (%s)" % tag, v,
               "4", v is not None and v <= 4)
    handover_goals(meta, med, target)
    v = med("parallel", "rlock", "cycles_per_s", "vs_limit")
    target("parallel at least 60% of the EVALSHA pair ceiling", v, "0.6",
           v is not None and v >= 0.6, v is not None and "%sx" % fmt(v))
    v = med("held", "rlock", "expired")
    target("held: no lock expired", v, "0", v == 0)
    v = med("held", "rlock", "renew_roundtrips_per_tick")
    locks = meta.get("locks") or 10000
    target("held: renewals batched (~locks/100 calls per tick)", v,
           "~%d" % (locks // 100), v is not None and v <= locks / 50)
    v = med("held", "rlock", "bytes_per_lock")
    target("held: under 1 KiB per lock", v, "1024", v is not None and v < 1024)
    if errors:
        w("")
        w("Failed runs:")
        for e in errors:
            w("- " + e)
    print("\n".join(out))


if __name__ == "__main__":
    main()
