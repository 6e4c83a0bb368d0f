#!/usr/bin/env python3
"""The safety checker's own tests: hand-made histories with a known verdict
for every check, the search against the plain definition (brute_force.py)
on thousands of small random histories, generated ones from a simulated
lock (sim_lock.py), good and broken, and the command line's output and exit
status.

Times in the hand-made histories are in milliseconds (mono_ns = ms * 1e6).
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402
import sim_lock  # noqa: E402
from brute_force import brute_force_linearizable  # noqa: E402
from brute_force import random_lock_history  # noqa: E402
from checking import exclusion  # noqa: E402
from checking.history import read_histories  # noqa: E402

MS = 1000000
LOCK = "safety:lock:0"


class Script:
    """Writes a hand-made history: one call per operation."""

    def __init__(self, kind="lock", lock=LOCK):
        self.kind = kind
        self.lock = lock
        self.lines = []
        self.seq = 0

    def op(self, owner, op, inv_ms, ret_ms, outcome="ok", mode="x",
           lock=None, **extra):
        """An invoke at inv_ms and, unless outcome is "pending", a
        completion at ret_ms. Returns self, for chaining."""
        self.seq += 1
        base = {"id": "%s-0-%d" % (owner, self.seq), "op": op,
                "proc": owner, "thread": 0, "owner": "uuid-%s:1" % owner,
                "lock": lock or self.lock, "kind": self.kind, "mode": mode}
        invoke = dict(base, type="invoke", mono_ns=int(inv_ms * MS))
        if op == "write" and "value" in extra:
            invoke["value"] = extra["value"]
        self.lines.append(invoke)
        if outcome != "pending":
            self.lines.append(dict(base, type=outcome,
                                   mono_ns=int(ret_ms * MS), **extra))
        return self

    def acquire(self, owner, inv_ms, ret_ms, outcome="ok", **kw):
        return self.op(owner, "acquire", inv_ms, ret_ms, outcome, **kw)

    def release(self, owner, inv_ms, ret_ms, outcome="ok", **kw):
        return self.op(owner, "release", inv_ms, ret_ms, outcome, **kw)

    def write_file(self, directory, name="h.jsonl", tail=""):
        """Writes the lines (in time order) plus tail; returns the path."""
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            for line in sorted(self.lines, key=lambda d: d["mono_ns"]):
                f.write(json.dumps(line) + "\n")
            f.write(tail)
        return path


class CheckerCase(unittest.TestCase):
    """Runs the checks in this process on a Script or on files."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def check(self, script, finals=None, heal_ms=None, bound_ms=1000,
              budget_s=30, tail="", unknown_effect_ms=30000, **fair):
        path = script.write_file(self.tmp.name, tail=tail)
        return self.check_files([path], finals, heal_ms, bound_ms, budget_s,
                                unknown_effect_ms, **fair)

    def check_files(self, paths, finals=None, heal_ms=None, bound_ms=1000,
                    budget_s=30, unknown_effect_ms=30000, lease_ms=None,
                    fair_slack_ms=None):
        history = read_histories(paths)
        heal_ns = None if heal_ms is None else int(heal_ms * MS)
        report = checker.run_checks(history, finals or {}, budget_s,
                                    heal_ns, bound_ms, unknown_effect_ms,
                                    lease_ms, fair_slack_ms)
        return report.totals()


class MutualExclusion(CheckerCase):

    def test_holders_one_after_another_are_valid(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        s.acquire("B", 4, 5).release("B", 6, 7)
        t = self.check(s)
        self.assertEqual(t["mutex_violations"], 0)
        self.assertEqual(t["locks"][LOCK]["exclusion"], "ok")

    def test_two_overlapping_holders_are_a_violation(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 3)
        s.release("A", 4, 5).release("B", 6, 7)
        t = self.check(s)
        self.assertEqual(t["mutex_violations"], 1)
        self.assertEqual(t["locks"][LOCK]["exclusion"], "violation")
        self.assertEqual(t["examples"][0]["check"], "exclusion")

    def test_release_ok_after_another_acquired_is_a_violation(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 3).release("A", 4, 5)
        self.assertEqual(self.check(s)["mutex_violations"], 1)

    def test_acquire_concurrent_with_the_release_is_valid(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 11).release("A", 10, 12)
        s.release("B", 13, 14)
        self.assertEqual(self.check(s)["mutex_violations"], 0)

    def test_waiters_granted_in_turn_are_valid(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 0.5, 6).acquire("C", 0.7, 11)
        s.release("A", 4, 5).release("B", 9, 10).release("C", 12, 13)
        self.assertEqual(self.check(s)["mutex_violations"], 0)

    def test_expiry_then_reacquire_by_another_is_valid(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 30, 31)
        s.release("A", 40, 41, "fail", err="RLOCK_ELOST")
        s.release("B", 42, 43)
        t = self.check(s)
        self.assertEqual(t["mutex_violations"], 0)

    def test_unknown_acquire_that_may_have_happened_explains_a_release(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 3).release("B", 4, 5)
        s.acquire("A", 6, 7, "info", err="RLOCK_EIO").release("A", 8, 9)
        t = self.check(s)
        self.assertEqual(t["mutex_violations"], 0)
        self.assertEqual(t["unknown_ops"], 1)

    def test_same_history_with_that_acquire_failed_is_a_violation(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 3).release("B", 4, 5)
        s.acquire("A", 6, 7, "fail", err="RLOCK_ETIMEDOUT")
        s.release("A", 8, 9)
        self.assertEqual(self.check(s)["mutex_violations"], 1)

    def stale_unknown_acquire(self):
        """A's acquire returns info; a minute later B acquires, then A's
        release returns ok."""
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        s.acquire("A", 10, 11, "info", err="RLOCK_ECONN")
        s.acquire("B", 60000, 60001).release("A", 60010, 60011)
        return s

    def test_unknown_acquire_takes_effect_only_within_the_horizon(self):
        t = self.check(self.stale_unknown_acquire(), unknown_effect_ms=30000)
        self.assertEqual(t["mutex_violations"], 1)

    def test_without_a_horizon_an_unknown_acquire_may_come_any_time(self):
        t = self.check(self.stale_unknown_acquire(), unknown_effect_ms=-1)
        self.assertEqual(t["mutex_violations"], 0)

    def test_unknown_release_does_not_hide_an_overlap(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3, "info", err="RLOCK_EIO")
        s.acquire("B", 4, 5).release("A", 6, 7)
        self.assertEqual(self.check(s)["mutex_violations"], 1)

    def test_killed_process_pending_acquire_and_cut_line_are_valid(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        s.acquire("K", 4, None, "pending")
        s.acquire("B", 5, 6).release("B", 7, 8)
        t = self.check(s, tail='{"id":"K-0-9","type":"inv')
        self.assertEqual(t["mutex_violations"], 0)
        self.assertEqual(t["truncated_lines"], 1)
        self.assertEqual(t["unknown_ops"], 1)

    def test_reentrant_acquires_and_releases_are_valid(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("A", 2, 3)
        s.release("A", 4, 5).release("A", 6, 7)
        self.assertEqual(self.check(s)["mutex_violations"], 0)

    def test_one_release_too_many_is_a_violation(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3).release("A", 4, 5)
        self.assertEqual(self.check(s)["mutex_violations"], 1)

    def test_each_violation_is_counted(self):
        s = Script()
        for base in (0, 100, 200):
            s.acquire("A", base, base + 1).acquire("B", base + 2, base + 3)
            s.release("A", base + 4, base + 5)
            s.release("B", base + 6, base + 7)
        self.assertEqual(self.check(s)["mutex_violations"], 3)

    def test_quiet_instants_cut_the_history_into_pieces(self):
        s = Script()
        for base in (0, 100, 200):
            s.acquire("A", base, base + 1).release("A", base + 2, base + 3)
        t = self.check(s)
        self.assertEqual(t["locks"][LOCK]["pieces"], 3)

    def test_locks_are_checked_apart(self):
        s = Script()
        s.acquire("A", 0, 1, lock="safety:lock:0")
        s.acquire("B", 2, 3, lock="safety:lock:1")
        s.release("A", 4, 5, lock="safety:lock:0")
        s.release("B", 6, 7, lock="safety:lock:1")
        self.assertEqual(self.check(s)["mutex_violations"], 0)


class ReadWrite(CheckerCase):

    def test_readers_together_are_valid(self):
        s = Script(kind="rw", lock="safety:rw:0")
        s.acquire("A", 0, 1, mode="r").acquire("B", 2, 3, mode="r")
        s.release("A", 4, 5, mode="r").release("B", 6, 7, mode="r")
        s.acquire("C", 8, 9).release("C", 10, 11)
        t = self.check(s)
        self.assertEqual(t["rw_violations"], 0)
        self.assertEqual(t["mutex_violations"], 0)

    def test_reader_beside_a_writer_is_a_violation(self):
        s = Script(kind="rw", lock="safety:rw:0")
        s.acquire("A", 0, 1).acquire("B", 2, 3, mode="r")
        s.release("A", 4, 5).release("B", 6, 7, mode="r")
        t = self.check(s)
        self.assertEqual(t["rw_violations"], 1)
        self.assertEqual(t["mutex_violations"], 0)

    def test_writer_beside_a_reader_is_a_violation(self):
        s = Script(kind="rw", lock="safety:rw:0")
        s.acquire("A", 0, 1, mode="r").acquire("B", 2, 3)
        s.release("A", 4, 5, mode="r")
        self.assertEqual(self.check(s)["rw_violations"], 1)

    def test_writer_keeps_its_read_hold_when_it_writes_again(self):
        # A quiet instant falls between A's write and read acquires; the
        # pieces must not forget that A, still the writer, re-enters.
        s = Script(kind="rw", lock="safety:rw:0")
        s.acquire("B", 11, 15).release("B", 16, 19)
        s.acquire("A", 16, 21).acquire("A", 25, 31, mode="r")
        s.acquire("A", 34, 36).release("A", 40, 42, mode="r")
        self.assertEqual(self.check(s)["rw_violations"], 0)

    def test_writer_may_also_read(self):
        s = Script(kind="rw", lock="safety:rw:0")
        s.acquire("A", 0, 1).acquire("A", 2, 3, mode="r")
        s.release("A", 4, 5, mode="r").release("A", 6, 7)
        self.assertEqual(self.check(s)["rw_violations"], 0)


class AgainstBruteForce(unittest.TestCase):
    """The search's shortcuts (cuts, forced releases, kept holds, windows)
    against the plain definition on many small random histories. A reported
    violation must always be one; without unknown operations the verdicts
    must agree exactly (with them the cuts may be lenient: an unknown
    acquire may count once per piece)."""

    def agree(self, seed, count, stall_nodes, horizon=None,
              overlapping=False):
        rng = random.Random(seed)
        for _ in range(count):
            ops = random_lock_history(rng, 14, overlapping)
            expected = brute_force_linearizable(ops, horizon)
            verdict = exclusion.check_lock("L", ops, 10,
                                           stall_nodes=stall_nodes,
                                           horizon_ns=horizon).verdict
            story = "\n".join(o.describe() for o in ops)
            self.assertNotEqual(verdict, exclusion.UNDECIDED, story)
            if verdict == "violation":
                self.assertFalse(expected, story)
            if all(o.certain for o in ops):
                self.assertEqual(verdict == "ok", expected, story)

    def test_search_agrees_with_the_definition(self):
        self.agree(seed=11, count=2500, stall_nodes=1000)

    def test_proofs_by_window_agree_with_the_definition(self):
        # a tiny stall allowance sends every doubt through the windows
        self.agree(seed=12, count=2500, stall_nodes=2)

    def test_unknown_effect_horizon_agrees_with_the_definition(self):
        self.agree(seed=100, count=2500, stall_nodes=2, horizon=2)

    def test_owners_whose_ops_overlap_agree_with_the_definition(self):
        self.agree(seed=14, count=1500, stall_nodes=2, overlapping=True)
        self.agree(seed=211, count=1000, stall_nodes=2, horizon=2,
                   overlapping=True)


class LostUpdates(CheckerCase):

    @staticmethod
    def rmw(s, owner, at, value, kind_lock=None):
        """A holder's read of value and write of value + 1 at time at."""
        kw = {"lock": kind_lock} if kind_lock else {}
        s.op(owner, "read", at, at + 1, value=value, **kw)
        s.op(owner, "write", at + 2, at + 3, value=value + 1, **kw)

    def test_distinct_writes_are_no_lost_update(self):
        s = Script()
        self.rmw(s, "A", 0, 0)
        self.rmw(s, "B", 10, 1)
        t = self.check(s, finals={LOCK: 2})
        self.assertEqual(t["lost_updates_unfenced"], 0)

    def test_two_writes_of_one_value_are_a_lost_update(self):
        s = Script()
        self.rmw(s, "A", 0, 0)
        self.rmw(s, "B", 1, 0)
        t = self.check(s)
        self.assertEqual(t["lost_updates_unfenced"], 1)
        self.assertEqual(t["locks"][LOCK]["duplicate_writes"], 1)

    def test_final_value_below_the_acknowledged_writes_counts(self):
        s = Script()
        for i in range(3):
            self.rmw(s, "A", 10 * i, i)
        t = self.check(s, finals={LOCK: 1})
        self.assertEqual(t["lost_updates_unfenced"], 2)
        self.assertEqual(t["locks"][LOCK]["missing_from_final"], 2)

    def test_fenced_lost_updates_are_counted_apart(self):
        s = Script(kind="fenced", lock="safety:fenced:0")
        self.rmw(s, "A", 0, 0)
        self.rmw(s, "B", 1, 0)
        t = self.check(s)
        self.assertEqual(t["lost_updates_fenced"], 1)
        self.assertEqual(t["lost_updates_unfenced"], 0)

    def test_refused_fenced_write_is_not_acknowledged(self):
        s = Script(kind="fenced", lock="safety:fenced:0")
        self.rmw(s, "A", 0, 0)
        s.op("B", "read", 1, 2, value=0)
        s.op("B", "write", 3, 4, "fail", value=1, err="FENCED")
        self.assertEqual(self.check(s)["lost_updates_fenced"], 0)

    def test_final_value_accepts_the_counter_key(self):
        s = Script()
        self.rmw(s, "A", 0, 0)
        path = s.write_file(self.tmp.name)
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "checker.py"),
             "--final", "safety:counter:%s=0" % LOCK, path],
            capture_output=True, text=True)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r"lost updates unfenced +1\n")


class Tokens(CheckerCase):

    def script(self, *acquires):
        s = Script(kind="fenced", lock="safety:fenced:0")
        for owner, inv, ret, token in acquires:
            s.acquire(owner, inv, ret, token=token)
            s.release(owner, ret + 1, ret + 2)
        return s

    def test_increasing_tokens_are_valid(self):
        s = self.script(("A", 0, 1, 1), ("B", 10, 11, 2), ("C", 20, 21, 5))
        self.assertEqual(self.check(s)["token_violations"], 0)

    def test_token_going_back_is_a_violation(self):
        s = self.script(("A", 0, 1, 7), ("B", 10, 11, 3))
        t = self.check(s)
        self.assertEqual(t["token_violations"], 1)
        self.assertEqual(t["locks"]["safety:fenced:0"]["token_violations"], 1)

    def test_concurrent_acquires_may_carry_tokens_in_either_order(self):
        s = Script(kind="fenced", lock="safety:fenced:0")
        s.acquire("A", 0, 10, token=2).acquire("B", 1, 5, token=1)
        s.release("B", 6, 7, "fail", err="RLOCK_ELOST")
        s.release("A", 11, 12)
        self.assertEqual(self.check(s)["token_violations"], 0)

    def test_one_token_for_two_acquisitions_is_a_violation(self):
        s = Script(kind="fenced", lock="safety:fenced:0")
        s.acquire("A", 0, 10, token=4).acquire("B", 1, 5, token=4)
        self.assertEqual(self.check(s)["token_violations"], 1)


class Liveness(CheckerCase):

    def test_waiter_stuck_after_the_heal_is_reported(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        s.acquire("B", 100, 2600).release("B", 2601, 2602)
        t = self.check(s, heal_ms=50, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 1)
        self.assertEqual(t["examples"][-1]["check"], "liveness")

    def test_waiter_that_never_returned_is_stuck(self):
        s = Script()
        s.acquire("B", 100, None, "pending")
        s.acquire("A", 200, 201).release("A", 3000, 3001)
        t = self.check(s, heal_ms=50, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 1)

    def test_acquire_failing_after_the_heal_is_stuck(self):
        s = Script()
        s.acquire("A", 100, 3100, "fail", err="RLOCK_ETIMEDOUT")
        t = self.check(s, heal_ms=50, bound_ms=10000)
        self.assertEqual(t["stuck_waiters"], 1)
        self.assertEqual(t["liveness"]["failed"], 1)

    def test_waiter_the_histories_end_too_soon_to_judge_is_not_stuck(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        s.acquire("B", 100, None, "pending")
        s.acquire("C", 200, 201).release("C", 300, 301)
        t = self.check(s, heal_ms=50, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 0)
        self.assertEqual(t["liveness"]["judged"], 1)

    def test_waiter_from_the_faults_giving_up_soon_after_is_unjudged(self):
        s = Script()
        s.acquire("A", 0, 3000, "fail", err="RLOCK_ETIMEDOUT")
        t = self.check(s, heal_ms=2900, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 0)
        self.assertEqual(t["liveness"]["judged"], 0)

    def test_waiter_from_the_faults_waiting_past_the_bound_is_stuck(self):
        s = Script()
        s.acquire("A", 0, 5000).release("A", 5001, 5002)
        t = self.check(s, heal_ms=2900, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 1)
        self.assertEqual(t["liveness"]["late"], 1)

    def test_prompt_waiters_after_the_heal_pass(self):
        s = Script()
        s.acquire("A", 0, 900)    # slow, but during the faults
        s.release("A", 901, 902)
        s.acquire("B", 100, 950).release("B", 951, 952)
        s.acquire("C", 1000, 1040).release("C", 1041, 1042)
        t = self.check(s, heal_ms=800, bound_ms=1000)
        self.assertEqual(t["stuck_waiters"], 0)
        self.assertEqual(t["slowest_acquire_after_heal_ms"], 40.0)

    @staticmethod
    def killed_with_two_queued(waiter_inv_ms, waiter_ret_ms):
        """Fair lock: process K holds, and two of its threads queue (their
        acquires never return: K is killed at 11 ms, before the heal at
        50 ms); W, of another process, fails after a 3 s wait."""
        s = Script(kind="fair")
        s.acquire("K", 0, 1)
        s.acquire("K", 10, None, "pending").acquire("K", 11, None, "pending")
        s.acquire("W", waiter_inv_ms, waiter_ret_ms, "fail",
                  err="RLOCK_ETIMEDOUT")
        return s

    def test_fair_waiter_behind_a_killed_process_s_places_is_not_stuck(self):
        # the places last until 11 + 1000 (lease) + 2 * 1000 (slack) ms
        s = self.killed_with_two_queued(100, 3100)
        t = self.check(s, heal_ms=50, bound_ms=10000, lease_ms=1000,
                       fair_slack_ms=1000)
        self.assertEqual(t["stuck_waiters"], 0)
        self.assertEqual(t["liveness"]["behind_dead_places"], 1)

    def test_fair_waiter_getting_in_behind_dead_places_counts_ok(self):
        s = self.killed_with_two_queued(100, 200)
        s.lines = [line for line in s.lines if line["proc"] != "W"]
        s.acquire("W", 100, 200)
        t = self.check(s, heal_ms=50, bound_ms=10000, lease_ms=1000,
                       fair_slack_ms=1000)
        self.assertEqual(t["liveness"]["ok"], 1)
        self.assertEqual(t["liveness"]["behind_dead_places"], 0)

    def test_fair_waiter_behind_dead_places_is_stuck_without_slack(self):
        s = self.killed_with_two_queued(100, 3100)
        t = self.check(s, heal_ms=50, bound_ms=10000)
        self.assertEqual(t["stuck_waiters"], 1)

    def test_fair_waiter_after_the_dead_places_ended_is_stuck(self):
        s = self.killed_with_two_queued(3100, 6100)
        t = self.check(s, heal_ms=50, bound_ms=10000, lease_ms=1000,
                       fair_slack_ms=1000)
        self.assertEqual(t["stuck_waiters"], 1)

    def test_without_a_heal_time_there_is_no_liveness_check(self):
        s = Script()
        s.acquire("B", 100, 5000).release("B", 5001, 5002)
        t = self.check(s)
        self.assertEqual(t["stuck_waiters"], 0)
        self.assertIsNone(t["slowest_acquire_after_heal_ms"])


class Generated(CheckerCase):
    """Histories from the simulated lock (sim_lock.py)."""

    def run_sim(self, **kw):
        sim = sim_lock.SimLock(**kw).run()
        path = os.path.join(self.tmp.name, "sim.jsonl")
        sim.write(path)
        began = time.process_time()   # CPU time: load does not count
        totals = self.check_files([path], finals=sim.final)
        return sim, totals, time.process_time() - began

    def test_large_good_history_is_valid_within_seconds(self):
        sim, t, seconds = self.run_sim(seed=7, threads=16, procs=4, locks=2,
                                       ops=6000, unknown=0.01, void=0.01)
        self.assertGreaterEqual(t["ops"], 6000)
        self.assertGreater(t["unknown_ops"], 0)
        self.assertEqual(t["mutex_violations"], 0)
        self.assertEqual(t["lost_updates_unfenced"], 0)
        self.assertEqual(t["undecided_locks"], 0)
        self.assertLess(seconds, 10)   # about 1 s of CPU

    def test_broken_lock_with_overlapping_holders_fails(self):
        sim, t, _ = self.run_sim(seed=3, threads=8, locks=1, ops=1200,
                                 overlap=0.05)
        self.assertGreater(t["mutex_violations"], 0)
        self.assertGreater(t["lost_updates_unfenced"], 0)

    def test_search_out_of_budget_is_undecided_not_good(self):
        sim = sim_lock.SimLock(seed=5, threads=8, ops=6000).run()
        path = os.path.join(self.tmp.name, "sim.jsonl")
        sim.write(path)
        t = self.check_files([path], budget_s=0)
        self.assertEqual(t["undecided_locks"], 1)
        self.assertIn(t["locks"][sim.locks[0]]["exclusion"],
                      ("unknown (search budget)",))


class CommandLine(CheckerCase):

    def run_checker(self, *args):
        return subprocess.run([sys.executable,
                               os.path.join(HERE, "checker.py")] + list(args),
                              capture_output=True, text=True)

    def test_good_history_exits_0_and_writes_the_json(self):
        s = Script()
        s.acquire("A", 0, 1).release("A", 2, 3)
        out_json = os.path.join(self.tmp.name, "out.json")
        out = self.run_checker("--json", out_json,
                               s.write_file(self.tmp.name))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        with open(out_json) as f:
            t = json.load(f)
        for field in ("ops", "locks", "mutex_violations", "rw_violations",
                      "lost_updates_unfenced", "lost_updates_fenced",
                      "token_violations", "stuck_waiters",
                      "slowest_acquire_after_heal_ms", "unknown_ops",
                      "examples"):
            self.assertIn(field, t)
        self.assertEqual(t["ops"], 2)

    def test_violation_exits_1(self):
        s = Script()
        s.acquire("A", 0, 1).acquire("B", 2, 3).release("A", 4, 5)
        out = self.run_checker(s.write_file(self.tmp.name))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("VIOLATIONS", out.stdout)

    def test_several_files_make_one_history(self):
        a, b = Script(), Script()
        a.acquire("A", 0, 1)
        b.acquire("B", 2, 3)
        a.release("A", 4, 5)
        out = self.run_checker(a.write_file(self.tmp.name, "a.jsonl"),
                               b.write_file(self.tmp.name, "b.jsonl"))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)

    def test_missing_file_exits_2(self):
        out = self.run_checker(os.path.join(self.tmp.name, "none.jsonl"))
        self.assertEqual(out.returncode, 2)

    def test_unreadable_line_before_the_last_exits_2(self):
        path = os.path.join(self.tmp.name, "bad.jsonl")
        with open(path, "w") as f:
            f.write("not json\n")
            f.write(json.dumps({"id": "A-0-1", "type": "invoke",
                                "op": "acquire", "mono_ns": 1}) + "\n")
        out = self.run_checker(path)
        self.assertEqual(out.returncode, 2)
        self.assertIn(":1:", out.stderr)

    def test_heal_and_bound_options_turn_liveness_on(self):
        s = Script()
        s.acquire("B", 100, 2600).release("B", 2601, 2602)
        out = self.run_checker("--heal-mono-ns", str(50 * MS),
                               "--liveness-bound-ms", "1000",
                               s.write_file(self.tmp.name))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertRegex(out.stdout, r"stuck waiters +1\n")


if __name__ == "__main__":
    unittest.main()
