"""Liveness once the faults are healed: every acquire invoked after the heal
instant must return ok within the bound. Reported as stuck: each such
acquire that returned ok later than the bound, returned otherwise than ok
(timed out, refused, unknown), or never returned although the histories go
on past the bound; and each acquire invoked during the faults that was
still waiting a bound after the heal. With the counts of each, and the
slowest ok acquire invoked after the heal. (An acquire invoked during the
faults that gives up soon after the heal waited mostly for the faults: it
is not judged.)

A fair lock's faults end later when a process was killed during them with
threads queued for it: nothing heals their places. Redisson's
fair-lock protocol (which rlock writes exactly) keeps each queued thread's
place, with no TTL, until a deadline a slack after the one before it (the
holder's lease for the first), so a killed process's k queued threads keep
the lock from everyone for up to lease + k * slack after the kill, the lock
free all the while. A fair waiter that began before then and did not get
the lock in time is counted apart (behind_dead_places), not as stuck.
"""


class Stuck:
    """One waiter that did not get the lock in time after the heal."""

    def __init__(self, op, wait_ms, why):
        self.op = op
        self.wait_ms = wait_ms
        self.why = why

    def to_json(self):
        return {"check": "liveness", "what": self.why,
                "wait_ms": round(self.wait_ms, 1), "op": self.op.to_json()}

    def describe(self):
        return "%s: %s after %.0f ms: %s" % (self.op.lock, self.why,
                                             self.wait_ms, self.op.describe())


class LivenessVerdict:
    """What the waiters after the heal show."""

    def __init__(self):
        self.stuck = []
        self.slowest_ms = None   # slowest ok acquire invoked after the heal
        self.counts = {"judged": 0, "ok": 0, "late": 0, "failed": 0,
                       "unknown": 0, "never_returned": 0,
                       # fair waiters that did not get the lock in time
                       # but began before a killed process's queued
                       # places ended
                       "behind_dead_places": 0}

    def _stuck(self, op, wait_ns, why, count):
        self.counts[count] += 1
        self.stuck.append(Stuck(op, wait_ns / 1e6, why))


def dead_fair_places(ops, heal_ns, lease_ms, slack_ms):
    """{fair lock: instant} until which the places of the threads a killed
    process left queued for it may stand (see the module comment). A
    process was killed when its history ends before the heal; its queued
    threads are its fair acquires that never returned."""
    last = {}
    for o in ops:
        at = o.done_ns if o.done_ns is not None else o.inv_ns
        last[o.proc] = max(last.get(o.proc, 0), at)
    queued = {}
    for o in ops:
        if (o.op == "acquire" and o.kind == "fair" and
                o.outcome == "pending" and last[o.proc] < heal_ns):
            queued[(o.proc, o.lock)] = queued.get((o.proc, o.lock), 0) + 1
    places = {}
    for (proc, lock), k in queued.items():
        end = last[proc] + (lease_ms + k * slack_ms) * 1e6
        places[lock] = max(places.get(lock, 0), end)
    return places


def check_liveness(ops, heal_ns, bound_ms, end_ns, places=None):
    """A LivenessVerdict for the acquires among ops; end_ns is the last
    instant the histories cover; places, dead_fair_places()'s: a waiter
    for a fair lock that began before its dead places ended is not stuck
    whatever it got (None: none is excused)."""
    verdict = LivenessVerdict()
    bound_ns = bound_ms * 1e6
    for o in ops:
        if o.op != "acquire":
            continue
        done = o.done_ns if o.done_ns is not None else end_ns
        since = max(o.inv_ns, heal_ns)
        if done < heal_ns or done - since <= bound_ns and (
                o.outcome == "pending" or o.inv_ns < heal_ns):
            continue    # over before the heal, or too soon to judge
        verdict.counts["judged"] += 1
        if o.outcome == "ok" and o.inv_ns >= heal_ns:
            took = (o.ret_ns - o.inv_ns) / 1e6
            verdict.slowest_ms = max(verdict.slowest_ms or 0, took)
        if o.outcome == "ok" and o.ret_ns - since <= bound_ns:
            verdict.counts["ok"] += 1
        elif o.inv_ns < (places or {}).get(o.lock, 0):
            verdict.counts["behind_dead_places"] += 1
        elif o.outcome == "ok":
            verdict._stuck(o, o.ret_ns - since, "acquired too late", "late")
        elif o.outcome == "fail":
            verdict._stuck(o, o.ret_ns - since, "acquire failed (%s)"
                           % (o.err or "fail"), "failed")
        elif o.outcome == "info":
            verdict._stuck(o, o.done_ns - since, "acquire outcome unknown "
                           "(%s)" % (o.err or "info"), "unknown")
        else:
            verdict._stuck(o, end_ns - since, "acquire never returned",
                           "never_returned")
    return verdict
