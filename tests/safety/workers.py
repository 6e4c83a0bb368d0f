"""workers.py: the client processes of a safety run.

Each worker is one safety_worker (or Java worker) process writing its own
history file. A fleet is described by specs (name, kind, async); the run
starts them all, the nemesis may pause, kill -9 and replace them or start
an extra one under a skewed clock, and the run stops them with SIGTERM.
Binaries: --worker / $RLOCK_SAFETY_WORKER (a command line, split like a
shell would), --java / $RLOCK_SAFETY_JAVA_WORKER.
"""
import glob
import os
import threading

from processes import Child

STOP_GRACE_S = 10.0


def faketime_env(offset_s):
    """The environment that runs a worker with its wall clock offset_s
    seconds off: libfaketime (the faketime package's multi-threaded
    library) preloaded into the worker itself, with CLOCK_MONOTONIC left
    true (DONT_FAKE_MONOTONIC=1) so its history stays comparable, and
    without libfaketime's "monotonic fix" (FAKETIME_FORCE_MONOTONIC_FIX=0),
    which shifts the deadline of a pthread_cond_timedwait on a
    CLOCK_MONOTONIC condition variable by the fake offset: with it, a worker
    5 s behind ended thousands of 3 s waits with RLOCK_ETIMEDOUT at once,
    which a real skewed clock does not do (rlock's deadlines are monotonic).
    Not the faketime command: it would stand between the harness and the
    worker, which then outlives a SIGTERM or kill -9 meant for it. None
    when the library is missing."""
    libs = glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") + \
        glob.glob("/usr/lib/faketime/libfaketimeMT.so.1")
    if not libs:
        return None
    return dict(os.environ, LD_PRELOAD=libs[0], FAKETIME="%+ds" % offset_s,
                DONT_FAKE_MONOTONIC="1", FAKETIME_FORCE_MONOTONIC_FIX="0")


class Worker:
    def __init__(self, name, kind, argv, history, child, is_async=False,
                 java=False, skew_s=0):
        self.name, self.kind, self.argv = name, kind, argv
        self.history, self.child = history, child
        self.is_async, self.java, self.skew_s = is_async, java, skew_s
        self.killed = False


class Workers:
    """The run's client processes, by name (c1, c2, c1r1 for a
    replacement of c1, x1 for an extra skewed client)."""

    def __init__(self, run, topology, settings, worker_cmd, java_cmd=None):
        self.run, self.topology, self.settings = run, topology, settings
        self.worker_cmd = worker_cmd
        self.java_cmd = java_cmd
        self.all = []
        self.replacements = 0
        self.extras = 0
        self.lock = threading.Lock()  # fault threads start workers too

    def live(self):
        return [w for w in self.all if w.child.alive() and not w.killed]

    def _argv(self, name, kind, is_async, java):
        s = self.settings
        cmd = list(self.java_cmd if java else self.worker_cmd)
        for uri in self.topology.uris(name):
            cmd += ["--uri", uri]
        cmd += ["--store", "redis://127.0.0.1:%d" % self.run.store.port,
                "--process", name, "--kind", kind,
                "--threads", str(s["threads"]), "--names", str(s["names"]),
                "--seconds", str(s["worker_seconds"]),
                "--lease-ms", str(s["lease_ms"]),
                "--wait-ms", str(s["wait_ms"]),
                "--hold-ms", str(s["hold_ms"]),
                "--queue", s["queue"],
                "--history", os.path.join(self.run.dir, "history",
                                          name + ".jsonl"),
                "--seed", str(s["seed"] * 1000 + len(self.all))]
        if s["sync_replicas"]:
            cmd += ["--sync-replicas", str(s["sync_replicas"])]
        if is_async:
            cmd.append("--async")
        return cmd

    def start(self, name, kind, is_async=False, java=False, skew_s=0):
        argv = self._argv(name, kind, is_async, java)
        env = None
        if skew_s:
            env = faketime_env(skew_s)
            if env is None:
                raise RuntimeError("faketime not installed (scripts/deps)")
        child = self.run.fleet.add(Child(
            name, argv, os.path.join(self.run.dir, "logs", name + ".log"),
            env=env))
        w = Worker(name, kind, argv, argv[argv.index("--history") + 1],
                   child, is_async=is_async, java=java, skew_s=skew_s)
        child.start()
        with self.lock:
            self.all.append(w)
        return w

    def replace(self, w):
        """A new process in place of a killed one, same kind and mode."""
        with self.lock:
            self.replacements += 1
            name = "%sr%d" % (w.name, self.replacements)
        return self.start(name, w.kind, w.is_async, w.java)

    def start_skewed(self, kind, skew_s):
        with self.lock:
            self.extras += 1
            name = "x%d" % self.extras
        return self.start(name, kind, skew_s=skew_s)

    def stop_all(self):
        """SIGTERM to every live worker; returns {name: exit code}."""
        codes = {}
        for w in self.all:
            if w.child.alive():
                w.child.resume()
                w.child.signal(15)
        for w in self.all:
            if w.killed:
                codes[w.name] = "killed -9"
                continue
            code = w.child.wait(STOP_GRACE_S)
            if code is None:
                w.child.kill9()
                code = "hung: killed -9 after SIGTERM"
            codes[w.name] = code
        return codes

    def histories(self):
        return [w.history for w in self.all if os.path.exists(w.history)]
