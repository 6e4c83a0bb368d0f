"""results.py: what a safety run measured besides the checker's verdict.

- leaked keys: a SCAN of every master after the workers stopped, for the
  keys rlock and Redisson leave (lock hashes, rw timeout keys, fair-lock
  queue and timeout keys, unlock latches, pub/sub channels are not keys):
  names as src/proto/keys.c and the Lua scripts make them. A key with no
  TTL outlives every lease: a leak. A key with a TTL will expire (a killed
  worker's lock, for instance) and is listed apart. So are a fair lock's
  queue and timeout keys that hold only the places of waiters that never
  left (a killed worker's queued threads): Redisson's fair-lock protocol
  gives them no TTL, and the next acquire or unlock of that lock purges
  each once its deadline passed. They are a leak when they do not match
  (a queued owner with no deadline would block the queue for good).
- longest unavailability: the longest stretch with no acquire ok on any
  lock while some acquire was waiting.
- the markdown row of the run for docs/SAFETY.md.
"""
import bisect
import glob
import json
import os

import resp

# Prefixes of the keys a lock named safety:* leaves on its server. The
# fenced lock's token counter is kept on purpose (tokens must never go
# back), so it is not a leak.
LOCK_KEY_PATTERNS = ("*safety:*",)
KEPT_BY_DESIGN = ("redisson_lock_token", "safety:token")


def scan_keys(node):
    """{key: ttl_ms} of every key matching LOCK_KEY_PATTERNS on node."""
    out = {}
    with resp.Conn(node.port, timeout=3.0) as c:
        for pattern in LOCK_KEY_PATTERNS:
            cursor = b"0"
            for _ in range(10000):
                cursor, keys = c.cmd("SCAN", cursor, "MATCH", pattern,
                                     "COUNT", 1000)
                for k in keys:
                    out[k.decode(errors="replace")] = c.cmd("PTTL", k)
                if cursor == b"0":
                    break
    return out


FAIR_QUEUE, FAIR_TIMEOUT = "redisson_lock_queue:", "redisson_lock_timeout:"


def fair_places_left_ms(node, key):
    """For a fair lock's queue or timeout key: ms until the last queued
    place's deadline (by the server's clock; negative when passed), or None
    when the queue and the deadlines do not match."""
    braced = key.split(":", 1)[1]
    with resp.Conn(node.port, timeout=3.0) as c:
        queued = c.cmd("LRANGE", FAIR_QUEUE + braced, 0, -1)
        flat = c.cmd("ZRANGE", FAIR_TIMEOUT + braced, 0, -1, "WITHSCORES")
        secs, micros = c.cmd("TIME")
    deadlines = dict(zip(flat[0::2], (float(v) for v in flat[1::2])))
    if not queued or sorted(queued) != sorted(deadlines):
        return None
    now_ms = int(secs) * 1000 + int(micros) // 1000
    return int(max(deadlines.values()) - now_ms)


def leaked_keys(masters):
    """({node: [key]}, {node: {key: ttl}}, {node: {key: ms}}):
    never-expiring; expiring; fair queue keys of places left by waiters that
    never left, with the ms until the last one's deadline."""
    leaked, expiring, queued = {}, {}, {}
    for n in masters:
        try:
            keys = scan_keys(n)
        except (OSError, resp.RespError) as e:
            leaked[n.name] = ["(scan failed: %s)" % e]
            continue
        for k, ttl in sorted(keys.items()):
            if any(k.startswith(p) or p in k for p in KEPT_BY_DESIGN):
                continue
            left = None
            if ttl == -1 and k.startswith((FAIR_QUEUE, FAIR_TIMEOUT)):
                try:
                    left = fair_places_left_ms(n, k)
                except (OSError, resp.RespError, ValueError):
                    left = None
            if left is not None:
                queued.setdefault(n.name, {})[k] = left
            elif ttl == -1:
                leaked.setdefault(n.name, []).append(k)
            elif ttl >= 0:
                expiring.setdefault(n.name, {})[k] = ttl
    return leaked, expiring, queued


def read_history(paths):
    """Every complete JSON line of every history (a killed worker's last
    line may be cut short: skipped)."""
    events = []
    for p in paths:
        with open(p, errors="replace") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    return events


def longest_unavailability_ms(events):
    """Longest time between two acquire oks (on any lock) during which an
    acquire was outstanding: clients trying, nobody getting in."""
    acquires = {}
    oks = []
    for e in events:
        if e.get("op") != "acquire":
            continue
        a = acquires.setdefault(e["id"], [None, None])
        if e["type"] == "invoke":
            a[0] = e["mono_ns"]
        else:
            a[1] = e["mono_ns"]
            if e["type"] == "ok":
                oks.append(e["mono_ns"])
    if not acquires:
        return None
    oks.sort()
    end = max([e["mono_ns"] for e in events])
    waiting = sorted((a[0], a[1] if a[1] is not None else end)
                     for a in acquires.values() if a[0] is not None)
    invokes = [i for i, _ in waiting]
    reach, latest = [], 0  # latest completion among the first k invokes
    for _, c in waiting:
        latest = max(latest, c)
        reach.append(latest)
    longest, start = 0, invokes[0]
    for t in oks + [end]:
        # from when in (start, t) was somebody waiting?
        k = bisect.bisect_left(invokes, start)
        if k and reach[k - 1] > start:
            since = start  # an earlier acquire still waited at start
        elif k < len(invokes) and invokes[k] < t:
            since = invokes[k]
        else:
            since = t
        longest = max(longest, t - since)
        start = max(start, t)
    return longest / 1e6


def final_counters(store):
    """{lock name: counter value} from the store."""
    out = {}
    with resp.Conn(store.port, timeout=3.0) as c:
        cursor = b"0"
        for _ in range(10000):
            cursor, keys = c.cmd("SCAN", cursor, "MATCH", "safety:counter:*",
                                 "COUNT", 1000)
            for k in keys:
                v = c.cmd("GET", k)
                if v is not None:
                    out[k.decode()[len("safety:counter:"):]] = int(v)
            if cursor == b"0":
                break
    return out


def reproduce(topology, faults, s, expect):
    """The one command that makes this run again."""
    if expect == "broken":
        return "scripts/safety --broken-lock --seconds %d --seed %d" % (
            s["seconds"], s["seed"])
    cmd = ["scripts/safety", "--topology", topology,
           "--faults", ",".join(faults) or "none",
           "--seconds", str(s["seconds"]), "--seed", str(s["seed"]),
           "--lease-ms", str(s["lease_ms"]), "--wait-ms", str(s["wait_ms"]),
           "--queue", s["queue"],
           "--expect", expect]
    if s["sync_replicas"]:
        cmd += ["--sync-replicas", str(s["sync_replicas"])]
    if s.get("java"):
        cmd.append("--java")
    return " ".join(cmd)


ROW_HEADER = ("| run | topology | faults | setting | ops | unknown | "
              "mutex | rw | lost (unfenced) | lost (fenced) | tokens | "
              "stuck | slowest after heal ms | longest unavail. ms | "
              "leaked keys | expect | verdict |")
ROW_RULE = "|" + "---|" * (ROW_HEADER.count("|") - 1)


def _n(c, k):
    v = c.get(k)
    return "-" if v is None else (("%.0f" % v) if isinstance(v, float)
                                  else str(v))


def markdown_row(result):
    c = result.get("checker") or {}
    leaked = sum(len(v) for v in result.get("leaked_keys", {}).values())
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        result["run_id"], result["topology"], ",".join(result["faults"]),
        result["setting"], _n(c, "ops"), _n(c, "unknown_ops"),
        _n(c, "mutex_violations"), _n(c, "rw_violations"),
        _n(c, "lost_updates_unfenced"), _n(c, "lost_updates_fenced"),
        _n(c, "token_violations"), _n(c, "stuck_waiters"),
        _n(c, "slowest_acquire_after_heal_ms"),
        "-" if result.get("longest_unavailability_ms") is None
        else "%.0f" % result["longest_unavailability_ms"],
        leaked, result["expect"], "PASS" if result["passed"] else "FAIL")


DOCS_HEADER = ("| topology | faults | setting | ops | unknown | mutex | rw | "
               "lost (unfenced) | lost (fenced) | tokens back | stuck | "
               "slowest after heal ms | longest unavailable ms | leaked keys "
               "| expect | verdict | reproduce |")


def docs_table(out_dir):
    """docs/SAFETY.md's table: one row per result.json under out_dir, in
    the order the runs were made."""
    rows = [DOCS_HEADER, "|" + "---|" * (DOCS_HEADER.count("|") - 1)]
    for path in sorted(glob.glob(os.path.join(out_dir, "*", "result.json"))):
        with open(path) as f:
            r = json.load(f)
        c = r.get("checker") or {}
        leaked = sum(len(v) for v in r.get("leaked_keys", {}).values())
        unavail = r.get("longest_unavailability_ms")
        rows.append("| %s |" % " | ".join([
            r["topology"], ", ".join(r.get("fault_mix") or r["faults"]),
            r["setting"], _n(c, "ops"), _n(c, "unknown_ops"),
            _n(c, "mutex_violations"), _n(c, "rw_violations"),
            _n(c, "lost_updates_unfenced"), _n(c, "lost_updates_fenced"),
            _n(c, "token_violations"), _n(c, "stuck_waiters"),
            _n(c, "slowest_acquire_after_heal_ms"),
            "-" if unavail is None else "%.0f" % unavail, str(leaked),
            r["expect"], "pass" if r["passed"] else
            "FAIL: " + "; ".join(r["problems"]).replace("|", "/"),
            "`%s`" % reproduce(r["topology"], r.get("fault_mix") or
                               r["faults"], r["settings"], r["expect"])]))
    return "\n".join(rows)
