"""harness.py: scripts/safety's engine. Runs rlock the way Jepsen runs a
database (docs/SAFETY.md): a topology of real servers behind proxies,
a fleet of worker processes recording histories, a nemesis injecting
seeded combined faults, then heal, a liveness window, a scan for leaked
keys and the checker; one result.json and one markdown row per run.

A run passes when it ran (servers up, workers exited cleanly, checker
readable) and its expectation holds:
  strict       no violation of any kind (faults a correct lock survives)
  fenced       no lost update through the fencing store (faults Redis
               cannot survive: failover, restart without persistence,
               a pause past the lease; unfenced violations are reported,
               not failed)
  broken       the broken-lock check: lease far below a client pause, so
               the unfenced kinds MUST show violations (a checker that
               passes everything is a defect) and the fenced kind none
The process exits 0 when every run passed, 1 otherwise.
"""
import argparse
import json
import os
import shlex
import signal
import sys
import time
import traceback
import subprocess

import nemesis as nem
import results
import topologies
from processes import Fleet, Ports
from proxy import ProxyHub
from servers import Node
from workers import Workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CHECKER_TIMEOUT_S = 300
HEAL_GRACE_S = 45
# the watchdog timeout the workers run with (rlock's default; --watchdog-ms is
# never passed): a killed holder's hold lasts that long with --lease-ms -1
WATCHDOG_LEASE_MS = 30000


class Interrupted(Exception):
    pass


def _on_signal(signum, _frame):
    raise Interrupted("signal %d" % signum)


# ---- run settings ---------------------------------------------------------

# wait_ms is longer than a lease: a waiter behind a killed holder gets the
# lock when the lease ends, and a timeout after the heal means a stuck lock
DEFAULTS = dict(threads=3, names=2, lease_ms=3000, wait_ms=8000, hold_ms=5,
                queue="off", sync_replicas=0, seconds=30, liveness_s=8,
                seed=1, java=False, kinds=None, pause_s=None)


def fleet_of(topology, setting):
    """[(process name, kind, async, java)] for a run."""
    if topology == "redlock":
        fleet = [("c1", "redlock", False), ("c2", "redlock", False),
                 ("c3", "redlock", False)]
    elif setting.get("kinds"):
        fleet = [("c%d" % (i + 1), k, False)
                 for i, k in enumerate(setting["kinds"])]
    else:
        fleet = [("c1", "lock", False), ("c2", "lock", True),
                 ("c3", "fair", False), ("c4", "rw", False),
                 ("c5", "fenced", False)]
    out = [(n, k, a, False) for n, k, a in fleet]
    if setting.get("java"):
        # beside the C processes, on their lock names: a Redisson Redlock
        # on the redlock masters, a plain RLock elsewhere
        out.append(("j1", "redlock" if topology == "redlock" else "lock",
                    False, True))
    return out


def setting_label(s):
    parts = ["lease %s" % ("watchdog" if s["lease_ms"] < 0
                           else "%d ms" % s["lease_ms"]),
             "WAIT %d" % s["sync_replicas"] if s["sync_replicas"]
             else "WAIT off", "queue %s" % s["queue"]]
    if s.get("java"):
        parts.append("+Java")
    if s.get("kinds"):
        parts.append("kinds " + "/".join(s["kinds"]))
    return ", ".join(parts)


# ---- one run --------------------------------------------------------------

class Run:
    """One topology x fault mix x setting; owns every process it starts."""

    def __init__(self, out_dir, topology, faults, setting, expect, tools):
        self.topology_name, self.fault_names = topology, faults
        self.setting, self.expect, self.tools = setting, expect, tools
        stamp = time.strftime("%Y%m%d-%H%M%S")
        label = "+".join(faults) or "none"
        if len(faults) > 2:  # keep directory names short
            label = "%s+%d-more" % (faults[0], len(faults) - 1)
        self.run_id = "%s-%s-%s-s%d" % (stamp, topology, label,
                                        setting["seed"])
        self.dir = os.path.join(out_dir, self.run_id)
        for sub in ("history", "logs"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.ports, self.fleet, self.hub = Ports(), Fleet(), None
        self.store = None

    def log(self, msg):
        line = "[%s %s] %s" % (time.strftime("%H:%M:%S"), self.run_id, msg)
        print(line, flush=True)
        with open(os.path.join(self.dir, "run.log"), "a") as f:
            f.write(line + "\n")

    def execute(self):
        result = dict(run_id=self.run_id, dir=self.dir,
                      topology=self.topology_name, faults=self.fault_names,
                      fault_mix=self.fault_names,
                      setting=setting_label(self.setting),
                      settings=self.setting, expect=self.expect,
                      reproduce=results.reproduce(self.topology_name,
                                          self.fault_names, self.setting,
                                          self.expect),
                      passed=False, problems=[])
        self.hub = ProxyHub()
        try:
            self._execute(result)
        except Interrupted:
            result["problems"].append("interrupted")
            raise
        except Exception as e:  # noqa: BLE001 - a broken run is a result
            result["problems"].append("harness: %s: %s" % (
                type(e).__name__, e))
            self.log(traceback.format_exc())
        finally:
            self.fleet.stop_all()
            self.hub.close()
            result["passed"] = not result["problems"]
            with open(os.path.join(self.dir, "result.json"), "w") as f:
                json.dump(result, f, indent=1, default=str)
        return result

    def _execute(self, result):
        s = self.setting
        if s.get("java") and not self.tools.get("java"):
            result["problems"].append(
                "no Java worker: run scripts/deps (compat/java) or pass "
                "--java-worker")
            return
        self.store = Node(self, "store", 99, proxied=False)
        self.store.start()
        topo = topologies.make(self.topology_name, self)
        self.log("starting %s" % topo.name)
        topo.start()
        faults = nem.expand(self.fault_names, topo.name)
        result["faults"] = faults
        s = dict(s, worker_seconds=s["seconds"] + s["liveness_s"] +
                 HEAL_GRACE_S + 60)
        workers = Workers(self, topo, s, self.tools["worker"],
                          self.tools.get("java"))
        for name, kind, is_async, java in fleet_of(topo.name, s):
            workers.start(name, kind, is_async, java)
        self.log("%d workers; nemesis: %s for %d s" % (
            len(workers.all), ", ".join(faults) or "none", s["seconds"]))
        n = nem.Nemesis(self, topo, workers, faults, s["seed"],
                        s["lease_ms"])
        if s.get("pause_s"):
            n.fixed_pause_s = s["pause_s"]
        t0 = time.monotonic()
        n.run_schedule(s["seconds"])
        time.sleep(max(0.0, t0 + s["seconds"] - time.monotonic()))
        stuck = n.stop()
        if stuck:
            result["problems"].append("fault threads still running: %s"
                                      % stuck)
        n.heal()
        result["faults_injected"] = sorted(n.log,
                                           key=lambda e: e["start_mono_ns"])
        try:
            topo.wait_healthy()
        except TimeoutError as e:
            result["problems"].append("not healthy after heal: %s" % e)
        heal_ns = time.monotonic_ns()
        result["heal_mono_ns"] = heal_ns
        self.log("healed; liveness window %d s" % s["liveness_s"])
        time.sleep(s["liveness_s"])
        codes = workers.stop_all()
        result["worker_exit"] = codes
        for name, code in codes.items():
            if code not in (0, "killed -9"):
                result["problems"].append("worker %s exit %s" % (name, code))
        masters = topo.masters()
        result["masters_after"] = [m.name for m in masters]
        result["leaked_keys"], result["expiring_keys"], \
            result["queued_places"] = results.leaked_keys(masters)
        finals = results.final_counters(self.store)
        result["final_counters"] = finals
        histories = workers.histories()
        events = results.read_history(histories)
        result["longest_unavailability_ms"] = \
            results.longest_unavailability_ms(events)
        result["fenced_refusals"] = sum(
            1 for e in events if e.get("type") == "fail" and
            str(e.get("err", "")).startswith("FENCED"))
        result["checker"], result["checker_exit"] = self.check(
            histories, heal_ns, finals, s)
        self.judge(result)

    def check(self, histories, heal_ns, finals, s):
        out = os.path.join(self.dir, "checker.json")
        bound = max(s["lease_ms"], 0) + s["wait_ms"] + 5000
        # a killed holder's hold lasts its lease (the watchdog's 30 s when
        # renewed); a queued fair waiter's place, the wait it was given
        lease = s["lease_ms"] if s["lease_ms"] >= 0 else WATCHDOG_LEASE_MS
        argv = list(self.tools["checker"]) + [
            "--json", out, "--liveness-bound-ms", str(bound),
            "--heal-mono-ns", str(heal_ns), "--lease-ms", str(lease),
            "--fair-slack-ms", str(s["wait_ms"])]
        for lock, v in sorted(finals.items()):
            argv += ["--final", "%s=%d" % (lock, v)]
        argv += histories
        with open(os.path.join(self.dir, "checker.txt"), "w") as f:
            try:
                code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                      timeout=CHECKER_TIMEOUT_S).returncode
            except subprocess.TimeoutExpired:
                return None, "timeout"
        try:
            with open(out) as f:
                return json.load(f), code
        except (OSError, ValueError):
            return None, code

    def judge(self, result):
        c, code, p = result["checker"], result["checker_exit"], \
            result["problems"]
        if c is None or code not in (0, 1):
            p.append("checker exit %s, no verdict" % code)
            return
        unfenced = c.get("mutex_violations", 0) + c.get("rw_violations", 0) \
            + c.get("lost_updates_unfenced", 0)
        if c.get("undecided_locks"):
            p.append("the checker could not decide %s lock(s) in its time "
                     "budget" % c["undecided_locks"])
        if self.expect == "strict":
            if code != 0:
                p.append("violations where a correct lock has none")
            leaked = sum(len(v) for v in result["leaked_keys"].values())
            if leaked:
                p.append("%d leaked keys" % leaked)
        if c.get("lost_updates_fenced", 0):
            p.append("%d lost updates through the fencing store"
                     % c["lost_updates_fenced"])
        if self.expect == "broken" and not result["fenced_refusals"]:
            p.append("broken-lock check: the fencing store refused nothing, "
                     "so no pause hit a fenced holder: the check proves "
                     "nothing about fencing")
        if self.expect == "broken" and unfenced == 0:
            p.append("broken-lock check: the unfenced kinds paused past a "
                     "%d ms lease show no violation: the checker or the "
                     "run cannot see a broken lock" % self.setting["lease_ms"])


# ---- plans ----------------------------------------------------------------

def broken_lock_plan(seconds):
    """Lease 200 ms, clients paused 1.5 s over and over: unfenced kinds
    must break, the fenced kind must not lose an update. Critical sections
    of up to 400 ms outlast the lease about half the time, pause or not, so
    that stale holders are sure to reach the store (with sections of up to
    100 ms only the random pauses made them, and one run in a few had the
    fencing store refuse nothing, proving nothing)."""
    return ("single", ["pause-client"],
            dict(lease_ms=200, hold_ms=400, pause_s=1.5, seconds=seconds,
                 kinds=["lock", "lock", "fenced", "fenced"]), "broken")


def short_plan(a):
    """CI: a strict single run, a sentinel run, the broken-lock check."""
    secs = a.seconds or 15
    return [
        ("single", ["partition-client", "slow-link", "kill-client"],
         dict(seconds=secs), "strict"),
        ("sentinel", ["split-brain", "failover", "pause-client"],
         dict(seconds=secs + 5), "fenced"),
        broken_lock_plan(16),
    ]


def full_plan(a):
    """The matrix: each topology x fault mix x setting, a Java fleet per
    topology, and the broken-lock check. The redlock Java fleet came last,
    after the broken-lock check, so that every other run kept its seed."""
    secs = a.seconds or 60
    plan = []
    strict = ["partition-client", "partition-oneway", "blackhole",
              "slow-link", "kill-client", "pubsub-kill"]
    for topo in topologies.TOPOLOGIES:
        replicated = topo in ("sentinel", "cluster")
        plan.append((topo, strict, dict(seconds=secs), "strict"))
        for mix in ("process", "all"):
            plan.append((topo, [mix], dict(seconds=secs), "fenced"))
            plan.append((topo, [mix], dict(seconds=secs, queue="on"),
                         "fenced"))
            if replicated:
                plan.append((topo, [mix], dict(seconds=secs,
                                               sync_replicas=1), "fenced"))
        if replicated:
            plan.append((topo, ["partition"], dict(seconds=secs), "fenced"))
        if topo != "redlock":
            plan.append((topo, ["all"], dict(seconds=secs, java=True),
                         "fenced"))
    plan.append(broken_lock_plan(20))
    plan.append(("redlock", ["all"], dict(seconds=secs, java=True), "fenced"))
    return plan


def custom_plan(a):
    topos = a.topology.split(",") if a.topology else ["single"]
    faults = a.faults.split(",") if a.faults else ["all"]
    if faults == ["none"]:
        faults = []
    return [(t, faults, dict(seconds=a.seconds or 30),
             a.expect or "fenced") for t in topos]


# ---- tools ----------------------------------------------------------------

def find_tools(a):
    worker = a.worker or os.environ.get("RLOCK_SAFETY_WORKER")
    if worker:
        worker = shlex.split(worker)
    else:
        build = a.build or os.path.join(ROOT, "build")
        for cand in ("tests/safety/safety_worker", "tests/safety_worker",
                     "safety_worker"):
            if os.access(os.path.join(build, cand), os.X_OK):
                worker = [os.path.join(build, cand)]
                break
    if not worker:
        sys.exit("safety: no safety_worker: build the tests "
                 "(cmake --build build --target safety_worker) or pass "
                 "--worker / RLOCK_SAFETY_WORKER")
    checker = shlex.split(a.checker or os.environ.get(
        "RLOCK_SAFETY_CHECKER", "")) or [
        sys.executable, os.path.join(ROOT, "tests/safety/checker.py")]
    tools = dict(worker=worker, checker=checker)
    java = a.java_worker or os.environ.get("RLOCK_SAFETY_JAVA_WORKER")
    tools["java"] = shlex.split(java) if java else default_java_worker()
    return tools


def default_java_worker():
    """The compat/java driver of the newest Redisson in versions.txt, in
    its safety mode (scripts/deps builds it), or None."""
    jdir = os.path.join(ROOT, "compat", "java")
    try:
        with open(os.path.join(jdir, "versions.txt")) as f:
            versions = [v.strip() for v in f if v[:1].isdigit()]
    except OSError:
        return None
    newest = max(versions, key=lambda v: [int(x) for x in v.split(".")])
    build = os.path.join(jdir, "build", newest)
    if not os.path.isdir(os.path.join(build, "classes")):
        return None
    return ["java", "-cp", "%s/classes:%s/lib/*" % (build, build), "Driver",
            "safety"]


# ---- main -----------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(
        prog="scripts/safety",
        description="Jepsen-style safety runs of rlock (docs/SAFETY.md)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--short", action="store_true",
                   help="the CI run: single + sentinel + broken-lock check")
    g.add_argument("--full", action="store_true", help="the whole matrix")
    g.add_argument("--broken-lock", action="store_true",
                   help="only the broken-lock check")
    g.add_argument("--table", metavar="DIR",
                   help="print docs/SAFETY.md's table from the result.json "
                   "files under DIR, and run nothing")
    p.add_argument("--topology", help="comma list: " +
                   ",".join(topologies.TOPOLOGIES))
    p.add_argument("--faults", help="comma list of faults or mixes: " +
                   ",".join(list(nem.MIXES) + list(nem.FAULTS)))
    p.add_argument("--seconds", type=int, help="nemesis time per run")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lease-ms", type=int)
    p.add_argument("--wait-ms", type=int, help="acquire wait budget")
    p.add_argument("--queue", choices=("on", "off"))
    p.add_argument("--sync-replicas", type=int)
    p.add_argument("--expect", choices=("strict", "fenced", "broken"))
    p.add_argument("--java", action="store_true",
                   help="add a Java Redisson worker to the fleet")
    p.add_argument("--worker", help="worker command (default: the build's "
                   "safety_worker)")
    p.add_argument("--java-worker", help="Java worker command")
    p.add_argument("--checker", help="checker command")
    p.add_argument("--build", help="build directory (default: build)")
    p.add_argument("--out", help="results directory (default: "
                   "<build>/safety)")
    return p.parse_args(argv)


def main(argv=None):
    a = parse(argv)
    if a.table:
        print(results.docs_table(a.table))
        return 0
    tools = find_tools(a)
    out = a.out or os.path.join(a.build or os.path.join(ROOT, "build"),
                                "safety")
    os.makedirs(out, exist_ok=True)
    if a.short:
        plan = short_plan(a)
    elif a.full:
        plan = full_plan(a)
    elif a.broken_lock:
        plan = [broken_lock_plan(a.seconds or 12)]
    else:
        plan = custom_plan(a)
    signal.signal(signal.SIGTERM, _on_signal)
    rows, failed, t0 = [], 0, time.monotonic()
    try:
        for i, (topo, faults, overrides, expect) in enumerate(plan):
            setting = dict(DEFAULTS, seed=a.seed + i)
            for k in ("lease_ms", "wait_ms", "queue", "sync_replicas"):
                if getattr(a, k) is not None:
                    setting[k] = getattr(a, k)
            setting.update(overrides)
            if a.java:
                setting["java"] = True
            r = Run(out, topo, faults, setting, expect, tools).execute()
            rows.append(results.markdown_row(r))
            if not r["passed"]:
                failed += 1
                print("FAILED %s: %s" % (r["run_id"], "; ".join(
                    r["problems"])), flush=True)
            print("reproduce: " + r["reproduce"], flush=True)
            print(results.markdown_row(r), flush=True)
    except (KeyboardInterrupt, Interrupted):
        print("safety: interrupted; every server and worker stopped",
              file=sys.stderr)
        return 130
    with open(os.path.join(out, "table.md"), "a") as f:
        f.write("\n" + results.ROW_HEADER + "\n" + results.ROW_RULE + "\n")
        f.write("\n".join(rows) + "\n")
    print("\n" + results.ROW_HEADER + "\n" + results.ROW_RULE)
    print("\n".join(rows))
    print("safety: %d passed, %d failed (%.0f s)" % (
        len(plan) - failed, failed, time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
