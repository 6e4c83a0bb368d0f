"""A linearizability search in the manner of Wing & Gong and Lowe (the
algorithm Porcupine implements): depth first over the operations that may
come next, with a cache of (linearized set, model state) already explored,
backtracking when no operation can be placed.

Operations (SearchOp) are certain (a finite response time) or unknown (no
response: +infinity). An operation may be placed next when no unplaced
operation returned before it was invoked. The search succeeds once every
certain operation is placed: an unknown one may take effect at any time after
its invoke (up to its "until", if it has one) or never, so it is placed
only where it helps.

Choices are tried in an order that walks a valid history with almost no
backtracking, which is what makes histories of tens of thousands of
operations checkable: certain operations earliest response first, then the
unknown ones, then the certain acquires that would expire a hold whose
owner's next operation is its release. Any order gives the same verdict
(every choice is eventually tried).

Three rules cut the tree without losing a linearization, for lock models
where a release only drops the releaser's own hold and an acquire only ever
takes holds away from others (lease_model.py says why that holds):
  - a release that may be placed now is placed now, and only unknown
    operations are tried instead (placing a release later never helps:
    nothing else needs that hold; but it may end an unknown operation's
    time to take effect); only for an owner whose operations follow one
    another, or another of its own releases might need that hold first;
  - a hold whose owner's next operation is a release, with no unknown
    acquire of that owner left to restore it, must not be taken away: the
    model's step gets these (owner, mode) pairs as "keep" and refuses an
    acquire that would expire one;
  - an unknown acquire is placed only where it can help: right before its
    owner's release (see _worth_placing).

The linearized set is kept as (p, mask, unknown bits): p is the first
unplaced certain operation in invoke order, mask the placed ones after it
(never further than the candidate window), so a cache key stays small however
long the history is.
"""

import bisect
import time

LINEARIZABLE = "linearizable"
NOT_LINEARIZABLE = "not linearizable"
STALLED = "stalled"      # no progress within the caller's node allowance
OUT_OF_TIME = "out of time"


class SearchOp:
    """One operation as the search sees it."""

    __slots__ = ("inv", "ret", "acquire", "owner", "mode", "ref", "until")

    def __init__(self, inv, ret, acquire, owner, mode, ref=None, until=None):
        self.inv = inv
        self.ret = ret          # None: unknown (+infinity)
        self.until = until      # unknown: the latest it may take effect
        self.acquire = acquire
        self.owner = owner
        self.mode = mode
        self.ref = ref          # what the caller wants back (history Op)


class Search:
    """A resumable search over one history.

    step(state, acquire, owner, mode, keep) -> next state or None is the
    model; keep is the set of (owner, mode) holds that must survive."""

    def __init__(self, ops, step, init):
        self.certain = sorted((o for o in ops if o.ret is not None),
                              key=lambda o: (o.inv, o.ret))
        self.unknown = sorted((o for o in ops if o.ret is None),
                              key=lambda o: o.inv)
        self.step = step
        n = len(self.certain)
        self.inv = [o.inv for o in self.certain]
        self.ret = [o.ret for o in self.certain]
        self.by_ret = sorted(range(n), key=self.ret.__getitem__)
        self.uinv = [o.inv for o in self.unknown]
        self.lin = bytearray(n)
        self.ulin = 0
        self.seen = set()
        self.nodes = 0
        self.best_depth = -1
        self.culprit = None     # the certain op the deepest attempt stuck at
        self.best_state = init
        self.best_kept = {}
        self.depth = 0          # certain ops placed on the current path
        self.maxinv = float("-inf")   # latest invoke placed on the path
        self.verdict = None
        self.since_progress = 0
        self.stack = []
        self.chosen = []
        self._index_keys()
        first = self._open(init, 0, 0)
        if first is True:
            self.verdict = LINEARIZABLE
        else:
            self.stack.append(first)

    def _index_keys(self):
        """Per (owner, mode): its certain ops in order and how many are
        placed, its unknown ops; then the needed and keep sets."""
        self.seqs = {}
        for i, o in enumerate(self.certain):
            self.seqs.setdefault((o.owner, o.mode), []).append(i)
        self.sequential = set()
        self.needs = {}
        for k, seq in self.seqs.items():
            if all(self.certain[a].ret < self.certain[b].inv
                   for a, b in zip(seq, seq[1:])):
                self.sequential.add(k)
            need = [0] * (len(seq) + 1)   # releases beyond acquires ahead
            for at in range(len(seq) - 1, -1, -1):
                step = -1 if self.certain[seq[at]].acquire else 1
                need[at] = max(0, step + need[at + 1])
            self.needs[k] = need
        self.placed = dict.fromkeys(self.seqs, 0)
        self.useqs = {}
        for j, o in enumerate(self.unknown):
            self.useqs.setdefault((o.owner, o.mode), []).append(j)
        self.needed = set()     # next op a release (a hint for the order)
        self.keep = set()       # ... and nothing unknown can restore it
        for k in self.seqs:
            self._update_keep(k)

    def _update_keep(self, k):
        """Recomputes whether (owner, mode) k's hold is needed and kept."""
        seq = self.seqs.get(k)
        pc = self.placed.get(k, 0)
        if k not in self.sequential or pc >= len(seq) \
                or self.certain[seq[pc]].acquire:
            self.needed.discard(k)
            self.keep.discard(k)
            return
        self.needed.add(k)
        release_ret = self.certain[seq[pc]].ret
        for j in self.useqs.get(k, ()):
            if self.uinv[j] >= release_ret:
                break
            until = self.unknown[j].until
            if not (self.ulin >> j) & 1 and (until is None
                                             or until >= self.maxinv):
                self.keep.discard(k)    # an unknown acquire may restore it
                return
        self.keep.add(k)

    def _open(self, state, p, r):
        """A frame for the node after the last placement: True if every
        certain op is placed, None if this node was explored before."""
        lin, n = self.lin, len(self.certain)
        while p < n and lin[p]:
            p += 1
        by_ret = self.by_ret
        while r < n and lin[by_ret[r]]:
            r += 1
        if r == n:
            return True
        minret = self.ret[by_ret[r]]
        inv = self.inv
        cands = []
        mask = 0
        i = p
        while i < n and inv[i] < minret:
            if lin[i]:
                mask |= 1 << (i - p)
            else:
                cands.append(i)
            i += 1
        key = (p, mask, self.ulin, state)
        if key in self.seen:
            return None
        self.seen.add(key)
        if self.depth > self.best_depth:
            self.best_depth = self.depth
            self.culprit = self.certain[by_ret[r]]
            self.best_state = state
            self.best_kept = {k: self.certain[self.seqs[k][self.placed[k]]]
                              for k in self.keep}
            self.since_progress = 0
        uend = bisect.bisect_left(self.uinv, minret)
        good, bad = [], []
        step, certain, needed = self.step, self.certain, self.needed
        for i in cands:
            o = certain[i]
            if not o.acquire:
                if step(state, False, o.owner, o.mode) is None:
                    continue        # not now: o does not hold it
                if (o.owner, o.mode) in self.sequential:
                    good, bad = [i], []   # forced: see above
                    break
                good.append(i)
            elif step(state, True, o.owner, o.mode, needed) is None:
                bad.append(i)       # expires a hold still needed: try late
            else:
                good.append(i)
        ret = self.ret.__getitem__
        if len(good) > 1:
            good.sort(key=ret)
        if len(bad) > 1:
            bad.sort(key=ret)
        # good, next good, next unknown, unknown end, state, p, r, minret,
        # bad, next bad, latest invoke placed
        return [good, 0, 0, uend, state, p, r, minret, bad, 0, self.maxinv]

    def _next_choice(self, frame):
        """The next (is_unknown, index, new state) the frame allows, or None:
        the likely certain ops first, then the unknown ones, then the
        certain ones that expire a hold still needed."""
        step, state, keep = self.step, frame[4], self.keep
        certain = self.certain
        good = frame[0]
        gi = frame[1]
        while gi < len(good):
            o = certain[good[gi]]
            gi += 1
            ns = step(state, o.acquire, o.owner, o.mode, keep)
            if ns is not None:
                frame[1] = gi
                return (False, good[gi - 1], ns)
        frame[1] = gi
        uj = frame[2]
        while uj < frame[3]:
            j = uj
            uj += 1
            if (self.ulin >> j) & 1:
                continue
            o = self.unknown[j]
            if o.until is not None and o.until < frame[10]:
                continue        # too late for it now
            if not self._worth_placing(o):
                continue
            ns = step(state, o.acquire, o.owner, o.mode, keep)
            if ns is not None:
                frame[2] = uj
                return (True, j, ns)
        frame[2] = uj
        bad = frame[8]
        bi = frame[9]
        while bi < len(bad):
            o = certain[bad[bi]]
            bi += 1
            ns = step(state, o.acquire, o.owner, o.mode, keep)
            if ns is not None:
                frame[9] = bi
                return (False, bad[bi - 1], ns)
        frame[9] = bi
        return None

    def _worth_placing(self, o):
        """Whether an unknown acquire may help now. It can only help its own
        owner's releases of that mode, and placing it right before the
        release it helps is never worse than earlier (others keep their
        holds longer). So: only when that owner's next op of the mode is a
        release, or when releases outnumber acquires somewhere ahead (a
        reentrant count it could supply)."""
        k = (o.owner, o.mode)
        if k not in self.seqs:
            return False        # nothing of that owner and mode to help
        if k not in self.sequential:
            return True         # no program order to reason with
        pc = self.placed[k]
        seq = self.seqs[k]
        if pc >= len(seq):
            return False
        return not self.certain[seq[pc]].acquire or self.needs[k][pc] > 0

    def _mark(self, is_unknown, index, on):
        """Places (on) or unplaces an op, keeping the needed and keep sets
        up to date."""
        if is_unknown:
            self.ulin ^= 1 << index
            o = self.unknown[index]
        else:
            self.lin[index] = 1 if on else 0
            self.depth += 1 if on else -1
            o = self.certain[index]
            self.placed[(o.owner, o.mode)] += 1 if on else -1
        self._update_keep((o.owner, o.mode))

    def blamed_release(self):
        """The release the deepest attempt could not explain: the op it was
        stuck at if that is a release; if it is an acquire (refused because
        it would expire a hold that must be kept), the release of that
        hold. None if neither is known."""
        o = self.culprit
        if o is None or not o.acquire:
            return o
        writer, _, readers = self.best_state
        victims = []
        if writer is not None and writer != o.owner:
            victims.append((writer, "x"))
        if o.mode == "x":   # every other read hold goes
            victims += [(who, "r") for who, _ in readers if who != o.owner]
        for k in victims:
            if k in self.best_kept:
                return self.best_kept[k]
        return None

    def run(self, stall_nodes=None, deadline=None):
        """Searches on; returns LINEARIZABLE, NOT_LINEARIZABLE, STALLED (no
        deeper point reached within stall_nodes nodes) or OUT_OF_TIME
        (time.monotonic() passed deadline). Stalled or out of time, run()
        may be called again to go on."""
        if self.verdict is not None:
            return self.verdict
        self.since_progress = 0
        stack, chosen = self.stack, self.chosen
        while stack:
            self.nodes += 1
            self.since_progress += 1
            if stall_nodes is not None and self.since_progress > stall_nodes:
                return STALLED
            if deadline is not None and (self.nodes & 1023) == 0 \
                    and time.monotonic() > deadline:
                return OUT_OF_TIME
            frame = stack[-1]
            choice = self._next_choice(frame)
            if choice is None:
                stack.pop()
                if chosen:
                    is_unknown, index = chosen.pop()
                    self.maxinv = stack[-1][10]
                    self._mark(is_unknown, index, False)
                continue
            is_unknown, index, ns = choice
            o = self.unknown[index] if is_unknown else self.certain[index]
            self.maxinv = max(frame[10], o.inv)
            self._mark(is_unknown, index, True)
            nxt = self._open(ns, frame[5], frame[6])
            if nxt is True:
                self.verdict = LINEARIZABLE
                return self.verdict
            if nxt is None:
                self.maxinv = frame[10]
                self._mark(is_unknown, index, False)
                continue
            stack.append(nxt)
            chosen.append((is_unknown, index))
        self.verdict = NOT_LINEARIZABLE
        return self.verdict

