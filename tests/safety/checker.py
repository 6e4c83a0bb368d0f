#!/usr/bin/env python3
"""rlock's safety checker: reads the safety workers' histories and checks
that the locks behaved as locks must: mutual and read-write exclusion, lost
updates, fencing tokens and liveness after a heal (tests/safety/checking/
has one module per check, each saying what it checks and why).

  checker.py [--json OUT] [--liveness-bound-ms B] [--heal-mono-ns T]
             [--lease-ms L --fair-slack-ms W] [--final KEY=VALUE]...
             [--budget-s S] [--unknown-effect-ms MS] HISTORY...

Exit status: 0 no violation of any kind, 1 violations, 2 unreadable input
or bad arguments. A lock whose search did not finish within the budget is
reported "unknown (search budget)", neither good nor bad.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from checking import counters, exclusion, liveness, tokens  # noqa: E402
from checking.history import HistoryError, read_histories  # noqa: E402
from checking.report import Report  # noqa: E402


def parse_args(argv):
    """The command line; exits 2 on a bad one (argparse's own status)."""
    p = argparse.ArgumentParser(
        description="Checks rlock safety histories (JSON lines).")
    p.add_argument("histories", nargs="+", metavar="HISTORY")
    p.add_argument("--json", metavar="OUT",
                   help="also write the verdicts as a JSON object to OUT")
    p.add_argument("--liveness-bound-ms", type=float, default=30000,
                   metavar="B", help="after the heal, acquires must succeed "
                   "within B ms (default 30000)")
    p.add_argument("--heal-mono-ns", type=int, metavar="T",
                   help="CLOCK_MONOTONIC instant the faults were healed; "
                   "turns the liveness check on")
    p.add_argument("--lease-ms", type=float, metavar="L",
                   help="the lease a killed holder's hold keeps; with "
                   "--fair-slack-ms, a fair lock's liveness is judged once "
                   "a killed process's queued threads lost their places")
    p.add_argument("--fair-slack-ms", type=float, metavar="W",
                   help="how long past the one before it a queued fair "
                   "waiter keeps its place (the workers' wait)")
    p.add_argument("--final", action="append", default=[],
                   metavar="KEY=VALUE", help="a counter's value after the "
                   "run (KEY: safety:counter:<lock> or the lock name)")
    p.add_argument("--budget-s", type=float, default=120, metavar="S",
                   help="search time for all locks together (default 120); "
                   "a lock's share is what is left over the locks left")
    p.add_argument("--unknown-effect-ms", type=float, default=30000,
                   metavar="MS", help="an acquire that returned info may "
                   "take effect up to MS after that line (default 30000; "
                   "-1: any time)")
    return p.parse_args(argv)


def run_checks(history, finals, budget_s, heal_ns=None, bound_ms=30000,
               unknown_effect_ms=30000, lease_ms=None, fair_slack_ms=None):
    """Runs every check on a History; returns the Report. budget_s is the
    search time for all locks: each gets an even share of what is left, so
    a lock decided quickly leaves its time to the others. With lease_ms
    and fair_slack_ms, a fair lock heals once a killed process's queued
    threads lost their places (checking/liveness.py)."""
    horizon_ns = None if unknown_effect_ms < 0 \
        else int(unknown_effect_ms * 1e6)
    report = Report(history)
    report.count_ops()
    by_lock = {}
    for o in history.ops:
        by_lock.setdefault(o.lock, []).append(o)
    locks = [(lock, ops) for lock, ops in
             sorted(by_lock.items(), key=lambda kv: str(kv[0]))
             if exclusion.lock_ops(ops)]
    deadline = time.monotonic() + budget_s
    for left, (lock, ops) in zip(range(len(locks), 0, -1), locks):
        share = max(0.0, deadline - time.monotonic()) / left
        report.exclusion[lock] = exclusion.check_lock(
            lock, ops, share, horizon_ns=horizon_ns)
    report.counters = counters.check_counters(history.ops, finals)
    report.tokens = tokens.check_tokens(history.ops)
    if heal_ns is not None:
        places = None
        if lease_ms is not None and fair_slack_ms is not None:
            places = liveness.dead_fair_places(history.ops, heal_ns,
                                               lease_ms, fair_slack_ms)
        report.liveness = liveness.check_liveness(
            history.ops, heal_ns, bound_ms, history.last_ns, places)
    return report


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        finals = counters.parse_finals(args.final)
        history = read_histories(args.histories)
    except (HistoryError, ValueError) as e:
        print("checker: %s" % e, file=sys.stderr)
        return 2
    report = run_checks(history, finals, args.budget_s, args.heal_mono_ns,
                        args.liveness_bound_ms, args.unknown_effect_ms,
                        args.lease_ms, args.fair_slack_ms)
    totals = report.totals()
    print("\n".join(report.summary(totals)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(totals, f, indent=1, sort_keys=True)
            f.write("\n")
    return 1 if Report.violated(totals) else 0


if __name__ == "__main__":
    sys.exit(main())
