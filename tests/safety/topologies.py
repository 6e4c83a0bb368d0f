"""topologies.py: the server layouts a safety run can be made on.

single       one master, no persistence (or AOF everysec: single-aof)
sentinel     1 master + 2 replicas, 3 sentinels (quorum 2)
cluster      3 masters + 3 replicas
redlock      5 independent masters
Each gives the URIs a worker is started with, the proxies between a worker
and each node (faults on the client side), the current masters, and a way
to wait until it serves again after the nemesis healed everything.

Single and redlock give each worker its own proxies, so the nemesis can cut
some clients and not others. Sentinel and cluster clients learn addresses
from the servers, which announce one proxy port per node: there the client
side is cut by source address (all clients come from 127.0.0.1), while a
server's replicas, peers and sentinels come from their own addresses.
"""
import resp
from processes import wait_until
from servers import CLIENT_SOURCE, Node, Sentinel

HEALTHY_TIMEOUT_S = 40.0
SENTINEL_MASTER = "safety"


class Topology:
    name = "?"

    def __init__(self, run):
        self.run = run
        self.nodes = []
        self.sentinels = []
        self.worker_proxies = {}  # worker name -> {node name: proxy}

    # ---- what workers get -------------------------------------------------
    def uris(self, worker):
        raise NotImplementedError

    def client_links(self, worker, node):
        """(proxy, sources) that carry worker's traffic to node."""
        per = self.worker_proxies.get(worker)
        if per is not None:
            return per[node.name], ("*",)
        return node.proxy, (CLIENT_SOURCE,)

    def _own_proxy(self, worker, node):
        per = self.worker_proxies.setdefault(worker, {})
        if node.name not in per:
            per[node.name] = self.run.hub.add("%s>%s" % (worker, node.name),
                                              self.run.ports.take(), node.port)
        return per[node.name]

    # ---- state ------------------------------------------------------------
    def masters(self):
        """The live nodes that call themselves master."""
        out = []
        for n in self.nodes:
            try:
                if n.child.alive() and not n.child.paused and n.is_master():
                    out.append(n)
            except (OSError, resp.RespError):
                pass
        return out

    def peer_sources(self, node):
        """Source addresses of every server but node (replicas, peers,
        sentinels): what a split-brain partition cuts node off from."""
        return tuple([n.source for n in self.nodes if n is not node] +
                     [s.source for s in self.sentinels])

    def wait_healthy(self):
        wait_until("%s serves" % self.name, self.healthy, HEALTHY_TIMEOUT_S,
                   poll_s=0.25)

    def healthy(self):
        return all(n.cmd("PING", timeout=1.0) for n in self.nodes)


class Single(Topology):
    def __init__(self, run, aof=False):
        super().__init__(run)
        self.name = "single-aof" if aof else "single"
        extra = (["--appendonly", "yes", "--appendfsync", "everysec"]
                 if aof else [])
        self.nodes = [Node(run, "n0", 0, extra, proxied=False)]

    def start(self):
        self.nodes[0].start()

    def uris(self, worker):
        return ["redis://127.0.0.1:%d" % self._own_proxy(worker,
                                                         self.nodes[0]).port]


class Redlock(Topology):
    name = "redlock"

    def __init__(self, run):
        super().__init__(run)
        self.nodes = [Node(run, "n%d" % i, i, proxied=False) for i in range(5)]

    def start(self):
        for n in self.nodes:
            n.start()

    def uris(self, worker):
        return ["redis://127.0.0.1:%d" % self._own_proxy(worker, n).port
                for n in self.nodes]


class SentinelGroup(Topology):
    name = "sentinel"

    def __init__(self, run):
        super().__init__(run)
        self.nodes = [Node(run, "n%d" % i, i) for i in range(3)]
        for n in self.nodes:
            n.extra += ["--replica-announce-ip", "127.0.0.1",
                        "--replica-announce-port", str(n.proxy.port),
                        "--repl-diskless-sync", "yes",
                        "--repl-diskless-sync-delay", "0",
                        "--repl-ping-replica-period", "1"]
        for n in self.nodes[1:]:
            n.extra += ["--replicaof", "127.0.0.1",
                        str(self.nodes[0].proxy.port)]
        self.sentinels = [Sentinel(run, j, SENTINEL_MASTER,
                                   self.nodes[0].proxy.port)
                          for j in range(3)]

    def start(self):
        for n in self.nodes:
            n.start()
        for s in self.sentinels:
            s.start()
        self.wait_healthy()

    def uris(self, worker):
        return ["redis+sentinel://%s/%s" % (",".join(
            "127.0.0.1:%d" % s.port for s in self.sentinels),
            SENTINEL_MASTER)]

    def master_by_sentinels(self):
        """The node every sentinel names as master, or None."""
        named = set()
        for s in self.sentinels:
            addr = s.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                         SENTINEL_MASTER, timeout=1.0)
            named.add(int(addr[1]))
        if len(named) != 1:
            return None
        port = named.pop()
        return next((n for n in self.nodes if n.proxy.port == port), None)

    def healthy(self):
        m = self.master_by_sentinels()
        if m is None or not m.is_master():
            return False
        if int(m.info("replication").get("connected_slaves", 0)) < 2:
            return False
        for s in self.sentinels:
            info = {}
            for line in resp.text(s.cmd("INFO", "sentinel")).splitlines():
                if line.startswith("master0:"):
                    info = dict(kv.split("=", 1)
                                for kv in line[8:].split(","))
            if info.get("status") != "ok" or info.get("sentinels") != "3":
                return False
        return True


class Cluster(Topology):
    name = "cluster"

    def __init__(self, run):
        super().__init__(run)
        self.nodes = []
        for i in range(6):
            n = Node(run, "n%d" % i, i)
            bus = run.ports.take()
            n.bus_proxy = run.hub.add("n%d-bus" % i, run.ports.take(), bus)
            n.extra += ["--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf",
                        "--cluster-port", str(bus),
                        "--cluster-announce-ip", "127.0.0.1",
                        "--cluster-announce-port", str(n.proxy.port),
                        "--cluster-announce-bus-port", str(n.bus_proxy.port),
                        "--cluster-node-timeout", "3000",
                        "--repl-diskless-sync", "yes",
                        "--repl-diskless-sync-delay", "0",
                        "--repl-ping-replica-period", "1"]
            self.nodes.append(n)

    def node_id(self, n):
        return resp.text(n.cmd("CLUSTER", "MYID"))

    def start(self):
        for n in self.nodes:
            n.start()
        for i, n in enumerate(self.nodes):
            n.cmd("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        for i in range(3):
            lo, hi = i * 16384 // 3, (i + 1) * 16384 // 3 - 1
            self.nodes[i].cmd("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for n in self.nodes[1:]:
            self.nodes[0].cmd("CLUSTER", "MEET", "127.0.0.1", n.proxy.port,
                              n.bus_proxy.port)
        for i in range(3):
            master, replica = self.nodes[i], self.nodes[i + 3]
            mid = self.node_id(master)
            wait_until("%s knows %s" % (replica.name, master.name),
                       lambda: mid in resp.text(replica.cmd("CLUSTER",
                                                            "NODES")),
                       HEALTHY_TIMEOUT_S)
            wait_until("%s replicates %s" % (replica.name, master.name),
                       lambda: replica.cmd("CLUSTER", "REPLICATE", mid),
                       HEALTHY_TIMEOUT_S, poll_s=0.25)
        self.wait_healthy()

    def uris(self, worker):
        return ["redis+cluster://%s" % ",".join(
            "127.0.0.1:%d" % n.proxy.port for n in self.nodes[:3])]

    def healthy(self):
        masters = 0
        for n in self.nodes:
            info = resp.text(n.cmd("CLUSTER", "INFO"))
            if "cluster_state:ok" not in info:
                return False
            rep = n.info("replication")
            if rep.get("role") == "slave":
                if rep.get("master_link_status") != "up":
                    return False
            else:
                masters += 1
        return masters == 3

    def masters(self):
        """Masters that own slots (a failed-over master turns replica)."""
        return [n for n in super().masters()
                if n.info("replication").get("connected_slaves") is not None
                and self._owns_slots(n)]

    def _owns_slots(self, n):
        for line in resp.text(n.cmd("CLUSTER", "NODES")).splitlines():
            f = line.split()
            if "myself" in f[2]:
                return len(f) > 8
        return False

    def replicas_of(self, master):
        mid = self.node_id(master)
        out = []
        for n in self.nodes:
            if n is master or not n.child.alive() or n.child.paused:
                continue
            try:
                for line in resp.text(n.cmd("CLUSTER", "NODES")).splitlines():
                    f = line.split()
                    if "myself" in f[2] and f[3] == mid:
                        out.append(n)
            except (OSError, resp.RespError):
                pass
        return out


def make(name, run):
    if name == "single":
        return Single(run)
    if name == "single-aof":
        return Single(run, aof=True)
    if name == "sentinel":
        return SentinelGroup(run)
    if name == "cluster":
        return Cluster(run)
    if name == "redlock":
        return Redlock(run)
    raise ValueError("unknown topology %r" % name)


TOPOLOGIES = ("single", "single-aof", "sentinel", "cluster", "redlock")
