"""Mutual exclusion per lock: the acquire and release operations of one lock
name checked against the lease model (lease_model.py) by the search (wgl.py).

Only what can constrain the model enters the search: acquires and releases
that returned ok, and acquires of unknown outcome whose owner later releases
successfully (an unknown acquire only ever helps its own owner's releases; it
may take effect or not). Failed operations did not happen, and an unknown
release is never needed (not releasing keeps more, which forbids nothing).

Cuts. Each (owner, mode)'s successful operations in program order tell when
its earlier holds can still matter: they matter before an operation if from
there on some prefix releases more than it acquires ("need" > 0); an owner
whose operations overlap in time has no program order, and its holds matter
until its last operation. A lock's history is cut at every instant when no
operation is in flight and no owner's earlier holds can matter; the pieces
are then independent, and each is searched alone. (An unknown acquire goes
into every piece after its invoke where its owner releases and it may still
take effect; this may let it count once per piece, a small leniency.)

Unknown acquires. One that never returned (its process was killed) may take
effect at any time after its invoke. One that returned "info" may take
effect up to a horizon after that line (the checker's --unknown-effect-ms):
the client has given up on it, and it can only still arrive while a fault
holds it back (a slowed link, a paused server that reads it on waking).
Without a bound, a single lost reply would let that owner's every later
release be explained by it.

Proofs. A long piece under contention may have no cut at all. The search
walks a valid one quickly; when it stalls, the operation it is stuck at is
tried in small windows of the history around it: the prefix up to that
operation's response (later responses become unknown), minus each owner's
operations whose holds cannot matter any more. Both steps keep a linearizable
history linearizable, so a window that is not is a proven violation. The
stuck release is then set aside (dropping a release forbids nothing) and the
search resumes, so that each violation is counted once. A piece that can be
neither proven valid nor shown to fail within the time budget is reported
"unknown (search budget)".
"""

import bisect
import time

from . import lease_model
from .wgl import (LINEARIZABLE, NOT_LINEARIZABLE, OUT_OF_TIME, STALLED,
                  Search, SearchOp)

UNDECIDED = "unknown (search budget)"
MS = 1000000


def lock_ops(ops):
    """The acquire and release operations among ops."""
    return [o for o in ops if o.op in ("acquire", "release")]


def _key(o):
    return (o.owner, o.mode)


def _program_orders(certain):
    """{(owner, mode): its certain operations in invoke order}."""
    by_key = {}
    for o in certain:
        by_key.setdefault(_key(o), []).append(o)
    for seq in by_key.values():
        seq.sort(key=lambda o: o.inv)
    return by_key


def _sequential(seq):
    """True if the operations follow one another in time (one thread's)."""
    return all(a.ret < b.inv for a, b in zip(seq, seq[1:]))


def _needs(seq):
    """need[k] for k in 0..len(seq): the most that seq[k:]'s prefixes
    release beyond what they acquire (0 if never)."""
    need = [0] * (len(seq) + 1)
    for k in range(len(seq) - 1, -1, -1):
        d = -1 if seq[k].acquire else 1
        need[k] = max(0, d + need[k + 1])
    return need


def _useful_unknowns(unknown, certain):
    """The unknown acquires whose owner may release that mode after them
    (a release that returned after the acquire's invoke)."""
    last_release = {}
    for o in certain:
        if not o.acquire:
            k = _key(o)
            last_release[k] = max(last_release.get(k, o.ret), o.ret)
    return [u for u in unknown
            if u.acquire and last_release.get(_key(u), -1) > u.inv]


def search_ops(ops, horizon_ns=None):
    """SearchOps for one lock's history Ops: certain ok ones and unknown
    acquires (useful or not; see _useful_unknowns). An info acquire may
    take effect up to horizon_ns after its completion line (None: any
    time); a pending one (no completion) any time."""
    out = []
    for o in lock_ops(ops):
        acquire = o.op == "acquire"
        if o.outcome == "ok":
            out.append(SearchOp(o.inv_ns, o.ret_ns, acquire, o.owner,
                                o.mode, o))
        elif o.outcome in ("info", "pending") and acquire:
            until = None
            if o.outcome == "info" and horizon_ns is not None:
                until = o.done_ns + horizon_ns
            out.append(SearchOp(o.inv_ns, None, True, o.owner, o.mode, o,
                                until))
    return out


def cut(sops):
    """Splits SearchOps into independent pieces (lists), in time order."""
    certain = [o for o in sops if o.ret is not None]
    unknown = [o for o in sops if o.ret is None]
    spans = [(o.inv, o.ret) for o in certain]
    for seq in _program_orders(certain).values():
        if not _sequential(seq):    # no program order: no cut before
            spans.append((float("-inf"), max(o.ret for o in seq)))
            continue
        need = _needs(seq)
        for k, o in enumerate(seq):
            if need[k] > 0:
                start = seq[k - 1].ret if k > 0 else float("-inf")
                spans.append((start, o.inv))
    spans.sort(key=lambda s: s[0])
    blocks = []
    for start, end in spans:
        if blocks and start <= blocks[-1][1]:
            if end > blocks[-1][1]:
                blocks[-1][1] = end
        else:
            blocks.append([start, end])
    pieces = [[] for _ in blocks]
    starts = [b[0] for b in blocks]
    for o in certain:
        pieces[bisect.bisect_right(starts, o.inv) - 1].append(o)
    out = []
    for piece, (start, end) in zip(pieces, blocks):
        if not piece:
            continue
        near = [u for u in unknown if u.inv < end
                and (u.until is None or u.until >= start)]
        out.append(piece + _useful_unknowns(near, piece))
    return out


def window(sops, t0, t1):
    """The sub-history that proves a violation if it is not linearizable:
    operations invoked by t1 (responses after t1 become unknown), less each
    (owner, mode)'s operations that returned before t0 and whose holds
    cannot matter any more."""
    certain, unknown = [], []
    for o in sops:
        if o.inv > t1:
            continue
        if o.ret is not None and o.ret <= t1:
            certain.append(o)
        elif o.acquire:     # took effect by its response, if at all
            unknown.append(o if o.ret is None else
                           SearchOp(o.inv, None, True, o.owner, o.mode, o.ref,
                                    o.ret))
    kept = []
    for seq in _program_orders(certain).values():
        if not _sequential(seq):    # no program order to reason with
            kept.extend(seq)
            continue
        need = _needs(seq)
        first = 0
        for k, o in enumerate(seq):
            if o.ret >= t0:
                break
            if need[k + 1] == 0:
                first = k + 1
        kept.extend(seq[first:])
    return kept + _useful_unknowns(unknown, kept)


def _prove(sops, culprit, start, deadline, max_window=2000):
    """Looks for a window around culprit that is not linearizable: the
    window's ops, or None. Windows end at the culprit's response or at the
    response of one of the releases that follow it (the other side of an
    overlap may finish later), and reach back further and further, up to
    max_window certain ops."""
    later = sorted(o.ret for o in sops if o.ret is not None
                   and not o.acquire and o.ret > culprit.ret)
    ends = [culprit.ret] + [later[i] for i in (0, 1, 3, 7, 15)
                            if i < len(later)]
    for t1 in ends:
        delta = max(2 * (culprit.ret - culprit.inv), MS)
        while time.monotonic() < deadline:
            t0 = t1 - delta
            sub = window(sops, t0, t1)
            verdict, _ = _search_to_end(
                sub, min(deadline, time.monotonic() + 2))
            if verdict == NOT_LINEARIZABLE:
                return sub
            if verdict != LINEARIZABLE or t0 <= start \
                    or sum(o.ret is not None for o in sub) > max_window:
                break
            delta *= 4
    return None


def _search_to_end(sops, deadline):
    search = Search(sops, lease_model.step, lease_model.FREE)
    return search.run(deadline=deadline), search


class Violation:
    """One release that no order of the operations explains."""

    def __init__(self, lock, culprit, context):
        self.lock = lock
        self.culprit = culprit    # history Op
        self.context = context    # history Ops around it

    def to_json(self):
        return {"check": "exclusion", "lock": self.lock,
                "what": "release ok that no linearization explains",
                "op": self.culprit.to_json(),
                "context": [o.to_json() for o in self.context]}

    def describe(self):
        lines = ["%s: %s ok, yet no order of the operations leaves %s "
                 "holding it then" % (self.lock, self.culprit.op,
                                      self.culprit.owner)]
        lines += ["    " + o.describe() for o in self.context]
        return "\n".join(lines)


def _context(sops, culprit):
    """The culprit's owner's last acquire before it and the acquires of
    others that completed between that acquire and the culprit's response."""
    mine = [o for o in sops if o.acquire and o.owner == culprit.owner
            and o.mode == culprit.mode and o.inv < culprit.inv]
    since = max((o.inv for o in mine), default=culprit.inv)
    others = [o for o in sops if o.acquire and o.owner != culprit.owner
              and o.ret is not None and since <= o.ret <= culprit.ret]
    picked = sorted(mine, key=lambda o: o.inv)[-1:] + \
        sorted(others, key=lambda o: o.ret)[:5]
    return [o.ref for o in picked] + [culprit.ref]


class LockVerdict:
    """What the exclusion check found on one lock."""

    def __init__(self, lock):
        self.lock = lock
        self.pieces = 0
        self.undecided_pieces = 0
        self.violations = []
        self.nodes = 0
        self.seconds = 0.0

    @property
    def verdict(self):
        if self.violations:
            return "violation"
        if self.undecided_pieces:
            return UNDECIDED
        return "ok"


def _check_piece(lock, sops, deadline, verdict, stall_nodes):
    """Searches one piece, proving and setting aside each violation (the
    search starts again without it: dropping a release forbids nothing)."""
    start = min(o.inv for o in sops)
    while True:
        search = Search(sops, lease_model.step, lease_model.FREE)
        allowance = stall_nodes
        while True:
            result = search.run(stall_nodes=allowance, deadline=deadline)
            if result != STALLED:
                break
            blamed = search.blamed_release()
            if blamed is not None and _prove(sops, blamed, start, deadline):
                break
            allowance *= 4         # stalled but not proven: search on
        verdict.nodes += search.nodes
        if result == LINEARIZABLE:
            return
        blamed = search.blamed_release()
        if result == OUT_OF_TIME or blamed is None:
            verdict.undecided_pieces += 1
            return
        verdict.violations.append(
            Violation(lock, blamed.ref, _context(sops, blamed)))
        sops = [o for o in sops if o is not blamed]


def check_lock(lock, ops, budget_s, stall_nodes=1000, horizon_ns=None):
    """Checks one lock's operations (history Ops); a LockVerdict.
    horizon_ns: how long after its completion line an info acquire may
    still take effect (None: any time)."""
    began = time.monotonic()
    deadline = began + budget_s
    verdict = LockVerdict(lock)
    for piece in cut(search_ops(ops, horizon_ns)):
        verdict.pieces += 1
        if time.monotonic() > deadline:
            verdict.undecided_pieces += 1
            continue
        _check_piece(lock, piece, deadline, verdict, stall_nodes)
    verdict.seconds = time.monotonic() - began
    return verdict
