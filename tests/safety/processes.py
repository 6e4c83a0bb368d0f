"""processes.py: child processes the safety harness owns, and free ports.

Every server and worker is started with PR_SET_PDEATHSIG, so none outlives
the harness even when it is killed with -9, and is tracked in a Fleet that
stops them all at exit (SIGTERM, then SIGKILL after a grace period): a
Ctrl-C or a failed run leaves nothing listening.

PR_SET_PDEATHSIG fires when the thread that forked the child ends, not the
process: so every child is forked by the Fleet's one spawner thread, which
lives as long as the run, never by the nemesis's short-lived fault threads.
"""
import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, "support"))
from free_ports import free_ports  # noqa: E402  (tests/support)

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 5.0


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG,
                                                signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class Ports:
    """Free loopback ports, never 6379, never the same one twice a run
    (tests/support/free_ports.py: below the kernel's ephemeral range, each
    with port + 10000 free, an old server's cluster bus)."""

    def __init__(self):
        self.given = {6379}

    def take(self):
        port = free_ports(1, self.given)[0]
        self.given.add(port)
        return port


class Child:
    """One started process: argv, log file, and what was done to it."""

    def __init__(self, name, argv, log_path, env=None, cwd=None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.env, self.cwd = env, cwd
        self.proc = None
        self.paused = False
        self.spawner = None  # the Fleet's, set by Fleet.add

    def _popen(self):
        log = open(self.log_path, "ab")
        try:
            return subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                preexec_fn=_die_with_parent)
        finally:
            log.close()

    def start(self):
        self.proc = self.spawner.spawn(self._popen)
        self.paused = False

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def pause(self):
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False

    def kill9(self):
        self.signal(signal.SIGCONT)  # a stopped process dies either way
        self.signal(signal.SIGKILL)
        self.wait(STOP_GRACE_S)
        self.paused = False

    def wait(self, timeout):
        """Returns the exit code, or None when still running at timeout."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace=STOP_GRACE_S):
        """SIGTERM (a paused one is resumed first), SIGKILL after grace."""
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.resume()
        self.signal(signal.SIGTERM)
        code = self.wait(grace)
        if code is None:
            self.kill9()
            code = self.proc.returncode
        return code


class Spawner:
    """The one thread that forks a run's children (see the top)."""

    def __init__(self):
        self.requests = queue.Queue()
        self.thread = threading.Thread(target=self._serve, name="spawner",
                                       daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            job = self.requests.get()
            if job is None:
                return
            popen, box, done = job
            try:
                box.append(popen())
            except Exception as e:  # noqa: BLE001 - handed to the caller
                box.append(e)
            done.set()

    def spawn(self, popen):
        box, done = [], threading.Event()
        self.requests.put((popen, box, done))
        if not done.wait(30.0):
            raise RuntimeError("spawner thread did not answer")
        if isinstance(box[0], Exception):
            raise box[0]
        return box[0]

    def close(self):
        self.requests.put(None)


class Fleet:
    """Every child of a run, to stop them all however the run ends."""

    def __init__(self):
        self.children = []
        self.lock = threading.Lock()
        self.spawner = Spawner()

    def add(self, child):
        child.spawner = self.spawner
        with self.lock:
            self.children.append(child)
        return child

    def stop_all(self):
        with self.lock:
            children = list(self.children)
        for c in reversed(children):
            try:
                c.stop(grace=2.0)
            except Exception:  # noqa: BLE001 - stopping at exit, keep going
                pass
        self.spawner.close()


def wait_until(what, predicate, timeout_s, poll_s=0.1):
    """Polls predicate (exceptions count as false) until true or timeout;
    raises TimeoutError naming what was awaited."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception as e:  # noqa: BLE001 - a server not up yet
            last = e
        time.sleep(poll_s)
    raise TimeoutError("%s: not within %.0f s (last: %s)" % (what, timeout_s,
                                                            last))
