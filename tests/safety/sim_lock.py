"""A simulated lock service and its clients, writing histories in the safety
worker's format: the checker's tests use it for large histories whose
verdict is known by construction.

Threads loop: acquire (waiting up to wait_ns), read the counter, write it
plus one, release. Some acquires may report an unknown outcome
(info): with probability unknown one that was granted (the thread goes on
into its critical section), with probability void one that was not (the
thread gives up and tries again). The lock grants in invoke order, one
holder at a time,
unless it is broken: then with probability overlap a waiter is granted at
once although another holds it, and both later release ok. The counter is a
register: reads return the last write linearized before them.
"""

import heapq
import json
import random

MS = 1000000


class SimLock:
    """One simulated run; lines() gives the history lines in time order."""

    def __init__(self, seed=1, threads=8, procs=2, locks=1, ops=2000,
                 overlap=0.0, unknown=0.0, void=0.0, kind="lock",
                 wait_ns=3000 * MS):
        self.rng = random.Random(seed)
        self.threads = threads
        self.procs = procs
        self.locks = ["safety:%s:%d" % (kind, i) for i in range(locks)]
        self.kind = kind
        self.ops = ops
        self.overlap = overlap
        self.unknown = unknown
        self.void = void
        self.wait_ns = wait_ns
        self.lines = []
        self.counter_events = []   # (time, "r"/"w", line dict)
        self.seq = {}

    def _line(self, thread, op, lock, inv, done, outcome, **extra):
        """Appends an invoke and (unless outcome is None) a completion."""
        proc = "c%d" % (thread % self.procs)
        seq = self.seq.get(thread, 0)
        self.seq[thread] = seq + 1
        base = {"id": "%s-%d-%d" % (proc, thread, seq), "op": op,
                "proc": proc, "thread": thread, "lock": lock,
                "owner": "uuid-%s:%d" % (proc, thread), "kind": self.kind,
                "mode": "x"}
        inv_line = dict(base, type="invoke", mono_ns=inv)
        self.lines.append(inv_line)
        if outcome is None:
            return inv_line, None
        done_line = dict(base, type=outcome, mono_ns=done, **extra)
        self.lines.append(done_line)
        return inv_line, done_line

    def run(self):
        """Simulates; returns self."""
        rng = self.rng
        free_at = {lock: 0 for lock in self.locks}
        queue = [(rng.randrange(5 * MS), t) for t in range(self.threads)]
        heapq.heapify(queue)
        done = 0
        while done < self.ops:
            inv, t = heapq.heappop(queue)
            lock = rng.choice(self.locks)
            latency = rng.randrange(100000, 400000)
            broken = self.overlap and rng.random() < self.overlap
            grant = inv + latency if broken else max(inv, free_at[lock]) \
                + latency
            if grant - inv > self.wait_ns:
                self._line(t, "acquire", lock, inv, inv + self.wait_ns,
                           "fail", err="RLOCK_ETIMEDOUT")
                heapq.heappush(queue, (inv + self.wait_ns + MS, t))
                done += 1
                continue
            if self.void and rng.random() < self.void:
                self._line(t, "acquire", lock, inv, inv + latency, "info",
                           err="RLOCK_EIO")
                heapq.heappush(queue, (inv + latency + MS, t))
                done += 1
                continue
            unknown = self.unknown and rng.random() < self.unknown
            self._line(t, "acquire", lock, inv, grant + latency,
                       "info" if unknown else "ok",
                       **({"err": "RLOCK_EIO"} if unknown else {}))
            now = grant + latency + rng.randrange(0, 3 * MS)
            now = self._rmw(t, lock, now)
            now += rng.randrange(0, 3 * MS)
            release_at = now + latency
            self._line(t, "release", lock, now, release_at + latency, "ok")
            if not broken:
                free_at[lock] = max(free_at[lock], release_at)
            heapq.heappush(queue, (release_at + latency
                                   + rng.randrange(0, 2 * MS), t))
            done += 2
        self._fill_counter()
        self.lines.sort(key=lambda line: line["mono_ns"])
        return self

    def _rmw(self, t, lock, now):
        """The read-modify-write inside the critical section."""
        rng = self.rng
        r_inv = now
        r_done = r_inv + rng.randrange(100000, 300000)
        _, read = self._line(t, "read", lock, r_inv, r_done, "ok")
        self.counter_events.append(((r_inv + r_done) // 2, "r", read, lock))
        w_inv = r_done + rng.randrange(10000, 50000)
        w_done = w_inv + rng.randrange(100000, 300000)
        winv, write = self._line(t, "write", lock, w_inv, w_done, "ok")
        self.counter_events.append(((w_inv + w_done) // 2, "w",
                                    (winv, write, read), lock))
        return w_done

    def _fill_counter(self):
        """Gives reads and writes their values, in linearization order."""
        value = {lock: 0 for lock in self.locks}
        for _, what, ref, lock in sorted(self.counter_events,
                                         key=lambda e: e[0]):
            if what == "r":
                ref["value"] = value[lock]
            else:
                winv, write, read = ref
                winv["value"] = write["value"] = read["value"] + 1
                value[lock] = write["value"]
        self.final = value

    def write(self, path):
        """Writes the history as JSON lines to path."""
        with open(path, "w") as f:
            for line in self.lines:
                f.write(json.dumps(line) + "\n")
