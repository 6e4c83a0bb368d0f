"""servers.py: redis-server processes and their proxies for the safety runs.

A Node is one data server: its real port, the proxy every other party
reaches it through (clients, replicas; it announces that proxy's port), its
own source address (bind-source-addr, so proxies can tell its connections
from clients'), and a working directory that survives a kill -9 so a
restart finds its AOF and nodes.conf. Sentinels get their own addresses and
config files. Server binary: $RLOCK_TEST_REDIS_SERVER, or redis-server.
"""
import os
import shutil

import resp
from processes import Child, wait_until

READY_TIMEOUT_S = 15.0
CLIENT_SOURCE = "127.0.0.1"


def server_binary():
    b = os.environ.get("RLOCK_TEST_REDIS_SERVER") or shutil.which(
        "redis-server")
    if not b:
        raise RuntimeError("no redis-server: set RLOCK_TEST_REDIS_SERVER")
    return b


def node_source(i):
    """Data node i connects out from 127.0.1.(i+1)."""
    return "127.0.1.%d" % (i + 1)


def sentinel_source(j):
    return "127.0.2.%d" % (j + 1)


class Node:
    """One redis-server. extra: more --options (persistence, cluster)."""

    def __init__(self, run, name, index, extra=(), proxied=True):
        self.run, self.name, self.index = run, name, index
        self.port = run.ports.take()
        self.source = node_source(index)
        self.dir = os.path.join(run.dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.proxy = (run.hub.add(name, run.ports.take(), self.port)
                      if proxied else None)
        self.extra = list(extra)
        self.child = None

    @property
    def public_port(self):
        """The port everyone else uses (the proxy's when there is one)."""
        return self.proxy.port if self.proxy else self.port

    def argv(self):
        return [server_binary(), "--port", str(self.port),
                "--bind", "127.0.0.1", "--protected-mode", "no",
                "--bind-source-addr", self.source, "--dir", self.dir,
                "--daemonize", "no", "--save", "", "--appendonly", "no",
                "--logfile", "", "--loglevel", "notice"] + self.extra

    def start(self):
        self.child = self.run.fleet.add(Child(
            self.name, self.argv(), os.path.join(self.dir, "server.log")))
        self.child.start()
        wait_until("%s answers PING" % self.name,
                   lambda: resp.command(self.port, "PING", timeout=1.0),
                   READY_TIMEOUT_S)

    def restart(self):
        """After a kill -9: the same port, directory and settings."""
        if self.child.alive():
            return  # already back (two faults meant the same restart)
        self.child.start()
        wait_until("%s answers PING after restart" % self.name,
                   lambda: resp.command(self.port, "PING", timeout=1.0),
                   READY_TIMEOUT_S)

    def cmd(self, *args, timeout=3.0):
        """A command on the real port, past the proxy."""
        return resp.command(self.port, *args, timeout=timeout)

    def info(self, section):
        out = {}
        for line in resp.text(self.cmd("INFO", section)).splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out

    def is_master(self):
        return self.info("replication").get("role") == "master"


class Sentinel:
    def __init__(self, run, index, master_name, master_port, quorum=2):
        self.run, self.index = run, index
        self.name = "s%d" % index
        self.port = run.ports.take()
        self.source = sentinel_source(index)
        self.dir = os.path.join(run.dir, self.name)
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "sentinel.conf")
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\nprotected-mode no\n"
                    "bind-source-addr %s\ndir %s\n"
                    "sentinel announce-ip 127.0.0.1\n"
                    "sentinel announce-port %d\n"
                    "sentinel monitor %s 127.0.0.1 %d %d\n"
                    "sentinel down-after-milliseconds %s 2000\n"
                    "sentinel failover-timeout %s 4000\n"
                    % (self.port, self.source, self.dir, self.port,
                       master_name, master_port, quorum, master_name,
                       master_name))
        self.child = None

    def start(self):
        self.child = self.run.fleet.add(Child(
            self.name, [server_binary(), self.conf, "--sentinel"],
            os.path.join(self.dir, "sentinel.log")))
        self.child.start()
        wait_until("%s answers PING" % self.name,
                   lambda: resp.command(self.port, "PING", timeout=1.0),
                   READY_TIMEOUT_S)

    def cmd(self, *args, timeout=3.0):
        return resp.command(self.port, *args, timeout=timeout)
