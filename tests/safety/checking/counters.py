"""Lost updates on the counters that the critical sections increment.

A holder reads safety:counter:<lock> (value v) and writes v+1. Under mutual
exclusion every acknowledged write carries a different value. So each
acknowledged write of a value that another acknowledged write also wrote is
a lost update (two holders read the same value), and so is every
acknowledged write missing from the final value when the harness gives it
(--final): replication that dropped writes on a failover shows there.
The larger of the two counts is the counter's lost updates (they may be the
same losses seen twice).
"""

COUNTER_PREFIX = "safety:counter:"


class CounterVerdict:
    """What one lock's counter shows."""

    def __init__(self, lock, fenced):
        self.lock = lock
        self.fenced = fenced
        self.acked_writes = 0
        self.duplicates = 0        # acknowledged writes of a repeated value
        self.final = None
        self.deficit = 0           # acknowledged writes the final value lacks
        self.examples = []         # lists of Ops writing one value

    @property
    def lost(self):
        return max(self.duplicates, self.deficit)


def parse_finals(items):
    """{lock name: final value} from KEY=VALUE strings; KEY is the counter's
    key or the lock's name. Raises ValueError on a malformed item."""
    finals = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError("--final wants KEY=VALUE, got %r" % item)
        if key.startswith(COUNTER_PREFIX):
            key = key[len(COUNTER_PREFIX):]
        finals[key] = int(value)
    return finals


def check_counters(ops, finals, fenced_kinds=("fenced",)):
    """{lock: CounterVerdict} for every lock with writes or a final value."""
    writes = {}
    kinds = {}
    for o in ops:
        kinds.setdefault(o.lock, o.kind)
        if o.op == "write" and o.outcome == "ok" and o.value is not None:
            writes.setdefault(o.lock, []).append(o)
    out = {}
    for lock in set(writes) | set(finals):
        verdict = CounterVerdict(lock, kinds.get(lock) in fenced_kinds)
        acked = writes.get(lock, [])
        verdict.acked_writes = len(acked)
        by_value = {}
        for o in acked:
            by_value.setdefault(o.value, []).append(o)
        for value in sorted(by_value, key=str):
            same = by_value[value]
            if len(same) > 1:
                verdict.duplicates += len(same) - 1
                if len(verdict.examples) < 3:
                    verdict.examples.append(same)
        if lock in finals:
            verdict.final = finals[lock]
            verdict.deficit = max(0, len(acked) - finals[lock])
        out[lock] = verdict
    return out
