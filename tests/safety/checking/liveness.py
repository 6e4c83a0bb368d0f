"""Liveness once the faults are healed: every acquire waiting after the heal
instant must return ok within the bound. An acquire's wait is counted from
its invoke or from the heal, whichever is later (one invoked during the
faults and still waiting long after the heal is stuck too). Reported: each
acquire that returned otherwise than ok, returned ok later than the bound,
or never returned although the histories go on past the bound; and the
slowest ok acquire invoked after the heal.
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


def check_liveness(ops, heal_ns, bound_ms, end_ns):
    """(list of Stuck, slowest ok acquire after the heal in ms or None)."""
    stuck = []
    slowest = None
    bound_ns = bound_ms * 1e6
    for o in ops:
        if o.op != "acquire":
            continue
        if o.done_ns is not None and o.done_ns < heal_ns:
            continue
        since = max(o.inv_ns, heal_ns)
        if o.outcome == "ok":
            wait = o.ret_ns - since
            if o.inv_ns >= heal_ns:
                total = (o.ret_ns - o.inv_ns) / 1e6
                slowest = total if slowest is None else max(slowest, total)
            if wait > bound_ns:
                stuck.append(Stuck(o, wait / 1e6, "acquired too late"))
        elif o.outcome == "fail":
            stuck.append(Stuck(o, (o.ret_ns - since) / 1e6,
                               "acquire failed (%s)" % (o.err or "fail")))
        elif o.outcome == "info":
            stuck.append(Stuck(o, (o.done_ns - since) / 1e6,
                               "acquire outcome unknown (%s)"
                               % (o.err or "info")))
        elif end_ns - since > bound_ns:
            stuck.append(Stuck(o, (end_ns - since) / 1e6,
                               "acquire never returned"))
    return stuck, slowest
