"""Liveness once the faults are healed: every acquire invoked after the heal
instant must return ok within the bound. Reported as stuck: each such
acquire that returned ok later than the bound, returned otherwise than ok
(timed out, refused, unknown), or never returned although the histories go
on past the bound; and each acquire invoked during the faults that was
still waiting a bound after the heal. With the counts of each, and the
slowest ok acquire invoked after the heal. (An acquire invoked during the
faults that gives up soon after the heal waited mostly for the faults: it
is not judged.)
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
                       "unknown": 0, "never_returned": 0}

    def _stuck(self, op, wait_ns, why, count):
        self.counts[count] += 1
        self.stuck.append(Stuck(op, wait_ns / 1e6, why))


def check_liveness(ops, heal_ns, bound_ms, end_ns):
    """A LivenessVerdict for the acquires among ops; end_ns is the last
    instant the histories cover."""
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
        if o.outcome == "ok":
            if o.inv_ns >= heal_ns:
                took = (o.ret_ns - o.inv_ns) / 1e6
                verdict.slowest_ms = max(verdict.slowest_ms or 0, took)
            if o.ret_ns - since > bound_ns:
                verdict._stuck(o, o.ret_ns - since, "acquired too late",
                               "late")
            else:
                verdict.counts["ok"] += 1
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
