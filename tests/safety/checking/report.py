"""The checker's verdicts gathered into the JSON object of the shared design
and a human summary."""

MAX_EXAMPLES = 20


class Report:
    """Everything the checks found, per lock and in total."""

    def __init__(self, history):
        self.history = history
        self.locks = {}           # lock -> dict of per-lock figures
        self.exclusion = {}       # lock -> exclusion.LockVerdict
        self.counters = {}        # lock -> counters.CounterVerdict
        self.tokens = {}          # lock -> [(earlier, later)]
        self.liveness = None      # liveness.LivenessVerdict, if checked

    def _lock(self, lock):
        return self.locks.setdefault(lock, {
            "kind": None, "ops": 0, "unknown_ops": 0, "lost_signals": 0})

    def count_ops(self):
        """Per-lock operation counts from the history."""
        for o in self.history.ops:
            entry = self._lock(o.lock)
            entry["kind"] = entry["kind"] or o.kind
            entry["ops"] += 1
            if not o.certain:
                entry["unknown_ops"] += 1
        for line in self.history.lost_signals:
            self._lock(line.get("lock"))["lost_signals"] += 1

    def totals(self):
        """The JSON object (see the shared design)."""
        mutex = rw = 0
        examples = []
        undecided = 0
        for lock, v in sorted(self.exclusion.items()):
            entry = self._lock(lock)
            entry.update({"exclusion": v.verdict, "pieces": v.pieces,
                          "undecided_pieces": v.undecided_pieces,
                          "exclusion_violations": len(v.violations),
                          "search_nodes": v.nodes,
                          "search_seconds": round(v.seconds, 3)})
            if entry["kind"] == "rw":
                rw += len(v.violations)
            else:
                mutex += len(v.violations)
            if v.undecided_pieces:
                undecided += 1
            examples += [x.to_json() for x in v.violations[:3]]
        lost = {True: 0, False: 0}
        for lock, c in sorted(self.counters.items()):
            self._lock(lock).update({
                "acked_writes": c.acked_writes, "final": c.final,
                "duplicate_writes": c.duplicates,
                "missing_from_final": c.deficit, "lost_updates": c.lost})
            lost[c.fenced] += c.lost
            for same in c.examples[:1]:
                examples.append({"check": "lost update", "lock": lock,
                                 "what": "acknowledged writes of one value",
                                 "ops": [o.to_json() for o in same]})
        token_bad = 0
        for lock, pairs in sorted(self.tokens.items()):
            self._lock(lock)["token_violations"] = len(pairs)
            token_bad += len(pairs)
            for a, b in pairs[:2]:
                examples.append({"check": "tokens", "lock": lock,
                                 "what": "token not above an earlier one",
                                 "ops": [a.to_json(), b.to_json()]})
        stuck = self.liveness.stuck if self.liveness else []
        slowest = self.liveness.slowest_ms if self.liveness else None
        examples += [s.to_json() for s in stuck[:5]]
        return {
            "ops": len(self.history.ops),
            "locks": self.locks,
            "mutex_violations": mutex,
            "rw_violations": rw,
            "lost_updates_unfenced": lost[False],
            "lost_updates_fenced": lost[True],
            "token_violations": token_bad,
            "stuck_waiters": len(stuck),
            "slowest_acquire_after_heal_ms":
                None if slowest is None else round(slowest, 1),
            "liveness": self.liveness.counts if self.liveness else None,
            "unknown_ops": len(self.history.unknown_ops()),
            "lost_signals": len(self.history.lost_signals),
            "undecided_locks": undecided,
            "truncated_lines": self.history.truncated_lines,
            "orphan_completions": self.history.orphan_completions,
            "examples": examples[:MAX_EXAMPLES],
        }

    @staticmethod
    def violated(totals):
        """True if any check found a violation."""
        return any(totals[k] for k in (
            "mutex_violations", "rw_violations", "lost_updates_unfenced",
            "lost_updates_fenced", "token_violations", "stuck_waiters"))

    def summary(self, totals):
        """The human-readable summary (a list of lines)."""
        out = ["%d operations (%d unknown, %d lost-lock signals, %d cut "
               "lines ignored) on %d locks"
               % (totals["ops"], totals["unknown_ops"], totals["lost_signals"],
                  totals["truncated_lines"], len(self.locks))]
        for lock, e in sorted(self.locks.items()):
            line = "  %-24s %-7s %6d ops" % (lock, e["kind"], e["ops"])
            if "exclusion" in e:
                line += "  exclusion: %s" % e["exclusion"]
                if e["exclusion_violations"]:
                    line += " (%d)" % e["exclusion_violations"]
                if e["undecided_pieces"] and e["exclusion_violations"]:
                    line += " (%d pieces undecided)" % e["undecided_pieces"]
                line += " [pieces %d, %.2f s]" % (e["pieces"],
                                                  e["search_seconds"])
            if "lost_updates" in e:
                line += "  lost updates: %d of %d writes" % (
                    e["lost_updates"], e["acked_writes"])
            if e.get("token_violations"):
                line += "  token violations: %d" % e["token_violations"]
            out.append(line)
        for key in ("mutex_violations", "rw_violations",
                    "lost_updates_unfenced", "lost_updates_fenced",
                    "token_violations"):
            out.append("%-28s %d" % (key.replace("_", " "), totals[key]))
        if self.liveness:
            out.append("%-28s %d" % ("stuck waiters", totals["stuck_waiters"]))
            behind = self.liveness.counts["behind_dead_places"]
            if behind:
                out.append("%-28s %d" % ("behind killed fair waiters",
                                         behind))
            slow = totals["slowest_acquire_after_heal_ms"]
            out.append("%-28s %s" % ("slowest acquire after heal",
                                     "none" if slow is None
                                     else "%.1f ms" % slow))
        if totals["undecided_locks"]:
            out.append("undecided (search budget) on %d locks"
                       % totals["undecided_locks"])
        for v in self.exclusion.values():
            for x in v.violations[:3]:
                out.append(x.describe())
        for lock, c in sorted(self.counters.items()):
            for same in c.examples[:1]:
                out.append("%s: lost update, value %s written by %d holders"
                           % (lock, same[0].value, len(same)))
                out += ["    " + o.describe() for o in same]
        for lock, pairs in sorted(self.tokens.items()):
            for a, b in pairs[:2]:
                out.append("%s: token %s after token %s" % (lock, b.token,
                                                            a.token))
                out += ["    " + a.describe(), "    " + b.describe()]
        if self.liveness:
            out += [s.describe() for s in self.liveness.stuck[:5]]
        out.append("verdict: %s" % ("VIOLATIONS" if self.violated(totals)
                                    else "ok"))
        return out
