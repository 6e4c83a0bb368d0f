"""nemesis.py: a seeded random schedule of combined faults, and each fault.

The schedule is drawn up front from the seed (when, which fault, how long);
the targets are drawn when a fault starts, from the state then (the current
master, the live workers), with a random generator of that fault's own, so
a seed replays the same schedule. Faults start every 1-3 s and last longer,
so two or three are often active at once: combined faults. Every fault is
recorded with its start and end on CLOCK_MONOTONIC (time.monotonic_ns, the
clock the histories use). stop() ends every active fault early and undoes
it; heal() then lifts whatever is left: proxies healed, paused processes
continued, killed servers restarted.
"""
import random
import threading
import time

import resp
from proxy import Fault
from slots import key_slot
from workers import STOP_GRACE_S

JOIN_TIMEOUT_S = 30.0

# fault name -> topologies it applies to (None: all)
FAULTS = {
    "partition-client": None,   # client(s) cut from a master
    "partition-oneway": None,   # one direction of client<->master dropped
    "blackhole": None,          # both directions dropped, links kept
    "slow-link": None,          # client<->master delayed 50-500 ms
    "split-brain": ("sentinel", "cluster"),  # master cut from its peers
    "pause-client": None,       # SIGSTOP a worker past its lease
    "pause-server": None,       # SIGSTOP a server
    "kill-server": None,        # kill -9 a server, restart it
    "kill-client": None,        # kill -9 a worker, start a replacement
    "failover": ("sentinel", "cluster"),  # SENTINEL / CLUSTER FAILOVER
    "migrate": ("cluster",),    # move a lock's slot under load
    "skew": None,               # an extra worker with its clock off by secs
    "pubsub-kill": None,        # CLIENT KILL TYPE pubsub on every node
}

MIXES = {
    "partition": ["partition-client", "partition-oneway", "blackhole",
                  "slow-link", "split-brain"],
    "process": ["pause-client", "pause-server", "kill-server",
                "kill-client"],
    "admin": ["failover", "migrate", "skew", "pubsub-kill"],
}
MIXES["all"] = MIXES["partition"] + MIXES["process"] + MIXES["admin"]


def expand(names, topology):
    """Fault names (mixes expanded) that apply to topology, in order."""
    out = []
    for n in names:
        for f in MIXES.get(n, [n]):
            if f not in FAULTS:
                raise ValueError("unknown fault %r (known: %s)" % (
                    f, ", ".join(list(MIXES) + list(FAULTS))))
            where = FAULTS[f]
            if (where is None or topology in where) and f not in out:
                out.append(f)
    return out


class Nemesis:
    def __init__(self, run, topology, workers, faults, seed, lease_ms):
        self.run, self.topo, self.workers = run, topology, workers
        self.faults = faults
        self.seed = seed
        self.lease_ms = lease_ms
        self.fixed_pause_s = None  # the broken-lock check's pause
        self.pause_turn = 0
        self.claimed = set()  # names of processes a fault is acting on
        self.log = []
        self.stopping = threading.Event()
        self.threads = []
        self.lock = threading.Lock()

    # ---- schedule ---------------------------------------------------------
    def plan(self, seconds):
        """[(offset_s, fault)], drawn from the seed alone."""
        rng = random.Random(self.seed)
        out, t = [], 1.0
        while self.faults and t < seconds - 2.0:
            out.append((t, rng.choice(self.faults)))
            t += rng.uniform(1.0, 3.0)
        return out

    def run_schedule(self, seconds):
        """Starts each planned fault at its time; returns when the last has
        started (they end on their own, or at stop())."""
        t0 = time.monotonic()
        for i, (offset, name) in enumerate(self.plan(seconds)):
            if self.stopping.wait(max(0.0, t0 + offset - time.monotonic())):
                return
            rng = random.Random(self.seed * 7919 + i)
            th = threading.Thread(target=self._one, args=(name, rng),
                                  name="fault-%s" % name, daemon=True)
            th.start()
            self.threads.append(th)

    def _one(self, name, rng):
        entry = {"fault": name, "start_mono_ns": time.monotonic_ns()}
        try:
            getattr(self, "_" + name.replace("-", "_"))(rng, entry)
        except Exception as e:  # noqa: BLE001 - a fault that could not be made is recorded, not fatal
            entry["error"] = "%s: %s" % (type(e).__name__, e)
        entry["end_mono_ns"] = time.monotonic_ns()
        with self.lock:
            self.log.append(entry)

    def hold(self, seconds):
        """Keeps a fault on for seconds, or until stop()."""
        self.stopping.wait(seconds)

    def stop(self):
        self.stopping.set()
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for th in self.threads:
            th.join(max(0.1, deadline - time.monotonic()))
        return [th.name for th in self.threads if th.is_alive()]

    def heal(self):
        """Lifts everything, whatever the fault threads managed to undo."""
        self.run.hub.heal_all()
        for n in self.topo.nodes + self.topo.sentinels:
            if n.child.paused:
                n.child.resume()
            if not n.child.alive():
                n.restart()
        for w in self.workers.all:
            if w.child.paused:
                w.child.resume()

    # ---- targets ----------------------------------------------------------
    def claim(self, candidates, rng):
        """One of candidates (processes with .name) no other fault is
        pausing or killing, now claimed; None when all are. Two faults on
        one process would undo each other (a restart of a server another
        fault just restarted)."""
        with self.lock:
            free = [c for c in candidates if c.name not in self.claimed]
            if not free:
                return None
            c = rng.choice(free)
            self.claimed.add(c.name)
            return c

    def unclaim(self, c):
        with self.lock:
            self.claimed.discard(c.name)

    def server_target(self, rng):
        """Mostly the master, sometimes any node; claimed."""
        if rng.random() < 0.7:
            n = self.claim([self.master(rng)], rng)
            if n is not None:
                return n
        return self.claim(self.topo.nodes, rng)

    def master(self, rng):
        """The current master (sentinel: as the sentinels say), or any."""
        if self.topo.name == "sentinel":
            try:
                m = self.topo.master_by_sentinels()
                if m is not None:
                    return m
            except (OSError, resp.RespError):
                pass
        masters = self.topo.masters() or self.topo.nodes
        return rng.choice(masters)

    def client_links(self, rng):
        """(description, [(proxy, sources)]) of client links to break."""
        if self.topo.worker_proxies:  # single, redlock: some workers only
            live = [w for w in self.workers.live()]
            ws = rng.sample(live, max(1, len(live) // 2)) if live else []
            nodes = self.topo.nodes
            if len(nodes) > 1:  # redlock: a majority of the masters
                nodes = rng.sample(nodes, len(nodes) // 2 + 1)
            links = [self.topo.client_links(w.name, n)
                     for w in ws for n in nodes]
            return ("%s <-> %s" % ("+".join(w.name for w in ws),
                                   "+".join(n.name for n in nodes)), links)
        m = self.master(rng)
        return ("clients <-> %s" % m.name, [self.topo.client_links(None, m)])

    def _links_fault(self, rng, entry, fault, seconds):
        what, links = self.client_links(rng)
        entry.update(target=what, detail=repr(fault))
        for proxy, sources in links:
            proxy.set_fault(fault, sources)
        self.hold(seconds)
        for proxy, _ in links:
            proxy.heal()

    # ---- the faults -------------------------------------------------------
    def _partition_client(self, rng, entry):
        self._links_fault(rng, entry, Fault("cut"), rng.uniform(2, 8))

    def _partition_oneway(self, rng, entry):
        self._links_fault(rng, entry, Fault("drop", rng.choice(["up", "down"])),
                          rng.uniform(2, 8))

    def _blackhole(self, rng, entry):
        self._links_fault(rng, entry, Fault("drop", "both"), rng.uniform(2, 8))

    def _slow_link(self, rng, entry):
        self._links_fault(rng, entry,
                          Fault("slow", delay_ms=rng.randint(50, 500)),
                          rng.uniform(2, 8))

    def _split_brain(self, rng, entry):
        """The master loses its replicas and sentinels (cluster: the other
        nodes, both ways) while clients still reach it."""
        m = self.master(rng)
        cut = Fault("cut")
        touched = [m.proxy]
        m.proxy.set_fault(cut, self.topo.peer_sources(m))
        if self.topo.name == "cluster":
            touched.append(m.bus_proxy)
            m.bus_proxy.set_fault(cut, self.topo.peer_sources(m))
            for n in self.topo.nodes:
                if n is not m:
                    for p in (n.proxy, n.bus_proxy):
                        p.set_fault(cut, (m.source,))
                        touched.append(p)
        seconds = rng.uniform(6, 10)
        entry.update(target=m.name, detail="cut from peers %.1f s" % seconds)
        self.hold(seconds)
        for p in touched:
            p.heal()

    def _pause_client(self, rng, entry):
        live = [w for w in self.workers.live() if not w.child.paused]
        if not live:
            entry["detail"] = "no live worker"
            return
        if self.fixed_pause_s:  # every worker in turn: each kind is hit
            with self.lock:
                turn = live[self.pause_turn % len(live)]
                self.pause_turn += 1
            w = self.claim([turn], rng)
        else:
            w = self.claim(live, rng)
        if w is None:
            entry["detail"] = "every worker busy with another fault"
            return
        lease = self.lease_ms if self.lease_ms > 0 else 30000
        seconds = self.fixed_pause_s or min(
            lease / 1000.0 + rng.uniform(0.5, 1.5), 12.0)
        entry.update(target=w.name, detail="SIGSTOP %.1f s (lease %d ms)"
                     % (seconds, lease))
        w.child.pause()
        self.hold(seconds)
        w.child.resume()
        self.unclaim(w)

    def _pause_server(self, rng, entry):
        n = self.server_target(rng)
        if n is None:
            entry["detail"] = "every server busy with another fault"
            return
        seconds = rng.uniform(2, 8)
        entry.update(target=n.name, detail="SIGSTOP %.1f s" % seconds)
        n.child.pause()
        self.hold(seconds)
        n.child.resume()
        self.unclaim(n)

    def _kill_server(self, rng, entry):
        n = self.server_target(rng)
        if n is None:
            entry["detail"] = "every server busy with another fault"
            return
        seconds = rng.uniform(1, 4)
        entry.update(target=n.name, detail="kill -9, restart after %.1f s"
                     % seconds)
        try:
            n.child.kill9()
            self.hold(seconds)
            n.restart()
        finally:
            self.unclaim(n)

    def _kill_client(self, rng, entry):
        w = self.claim(self.workers.live(), rng)
        if w is None:
            entry["detail"] = "every worker busy with another fault"
            return
        w.killed = True
        w.child.kill9()
        self.hold(0.5)
        r = self.workers.replace(w)
        entry.update(target=w.name, detail="kill -9, replaced by %s" % r.name)

    def _failover(self, rng, entry):
        if self.topo.name == "sentinel":
            before = self.master(rng)
            for s in self.topo.sentinels:
                try:
                    s.cmd("SENTINEL", "FAILOVER", "safety")
                    break
                except (OSError, resp.RespError) as e:
                    entry["refused"] = str(e)
            entry.update(target=before.name, detail="SENTINEL FAILOVER")
        else:
            m = self.master(rng)
            replicas = self.topo.replicas_of(m)
            if not replicas:
                entry.update(target=m.name, detail="no replica to promote")
                return
            r = rng.choice(replicas)
            r.cmd("CLUSTER", "FAILOVER")
            entry.update(target=m.name, detail="CLUSTER FAILOVER on %s"
                         % r.name)
        self.hold(rng.uniform(2, 5))

    def _migrate(self, rng, entry):
        """Moves the slot of one lock name to another master, key by key,
        with pauses so clients meet ASK and MOVED on the way."""
        kinds = sorted({w.kind for w in self.workers.all})
        name = "safety:%s:%d" % (rng.choice(kinds),
                                 rng.randrange(self.workers.settings["names"]))
        slot = key_slot(name)
        masters = self.topo.masters()
        owner = self._slot_owner(masters[0], slot)
        src = next((m for m in masters if self.topo.node_id(m) == owner),
                   None)
        if src is None:
            entry.update(target=name, detail="slot %d: owner not found" % slot)
            return
        dst = rng.choice([m for m in masters if m is not src])
        sid, did = self.topo.node_id(src), self.topo.node_id(dst)
        entry.update(target=name, detail="slot %d %s -> %s" % (
            slot, src.name, dst.name))
        dst.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", sid)
        src.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", did)
        self.hold(rng.uniform(0.2, 1.0))
        for _ in range(100):
            keys = src.cmd("CLUSTER", "GETKEYSINSLOT", slot, 10)
            if not keys:
                break
            for k in keys:
                try:
                    src.cmd("MIGRATE", "127.0.0.1", dst.port, k, 0, 5000)
                except resp.RespError as e:
                    if "NOKEY" not in str(e):
                        raise
            self.hold(rng.uniform(0.05, 0.3))
        for n in [dst, src] + [m for m in masters if m not in (src, dst)]:
            n.cmd("CLUSTER", "SETSLOT", slot, "NODE", did)

    def _slot_owner(self, n, slot):
        for line in resp.text(n.cmd("CLUSTER", "NODES")).splitlines():
            f = line.split()
            for r in f[8:]:
                if r.startswith("["):
                    continue
                lo, _, hi = r.partition("-")
                if int(lo) <= slot <= int(hi or lo):
                    return f[0]
        return None

    def _skew(self, rng, entry):
        kinds = [w.kind for w in self.workers.all if not w.java]
        skew = rng.choice([-1, 1]) * rng.randint(2, 10)
        seconds = rng.uniform(4, 10)
        w = self.workers.start_skewed(rng.choice(kinds), skew)
        entry.update(target=w.name, detail="%s worker, wall clock %+d s, "
                     "for %.1f s" % (w.kind, skew, seconds))
        self.hold(seconds)
        # a worker stuck on a paused or cut server may take a while to
        # finish its operation; one that never does is killed and noted
        if w.child.stop(grace=STOP_GRACE_S) is None or \
                w.child.proc.returncode == -9:
            w.killed = True
            entry["detail"] += "; no exit %d s after SIGTERM: killed -9" \
                % STOP_GRACE_S

    def _pubsub_kill(self, rng, entry):
        killed = 0
        for n in self.topo.nodes:
            try:
                killed += n.cmd("CLIENT", "KILL", "TYPE", "pubsub")
            except (OSError, resp.RespError):
                pass
        entry.update(target="all nodes", detail="%d pubsub clients" % killed)
