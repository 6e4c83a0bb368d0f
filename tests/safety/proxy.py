"""proxy.py: loopback TCP proxies the nemesis can cut, black-hole and slow.

Every link the safety harness may want to break goes through one of these:
a Proxy listens on 127.0.0.1:<port> and forwards to one server's real port.
Servers announce the proxy ports (cluster-announce-port/bus-port,
replica-announce-port, the address sentinels monitor), so redirects and
sentinel answers send clients through the proxies too.

A fault is set per proxy and per class of sender, told apart by the source
address: clients connect from 127.0.0.1, each server from its own address in
127.0.1.0/24 or 127.0.2.0/24 (bind-source-addr). So one proxy in front of a
master can cut the master's replicas and sentinels while clients still reach
it: the split brain of a partitioned Sentinel group.

Faults:
  cut         existing connections are reset, new ones reset at once
  drop DIR    bytes going DIR ("up": to the server, "down": to the sender,
              "both") are swallowed; connections stay open (a black hole)
  slow MS     every chunk waits MS milliseconds before it is passed on
Healing lifts the fault. A connection that lost bytes to a black hole is
reset when healed: its RESP stream is broken, and a real partition long
enough to matter ends with timed-out connections too.

All proxies share one asyncio loop in one daemon thread (ProxyHub); the
control methods may be called from any thread and wait at most a few
seconds.
"""
import asyncio
import socket
import struct
import threading

CONTROL_TIMEOUT_S = 5.0


class Fault:
    def __init__(self, kind, direction="both", delay_ms=0):
        assert kind in ("cut", "drop", "slow")
        assert direction in ("up", "down", "both")
        self.kind, self.direction, self.delay_ms = kind, direction, delay_ms

    def applies(self, direction):
        return self.direction in ("both", direction)

    def __repr__(self):
        if self.kind == "slow":
            return "slow %d ms %s" % (self.delay_ms, self.direction)
        return self.kind if self.kind == "cut" else "drop %s" % self.direction


def _reset(writer):
    """Closes with RST, as a refused or torn connection looks to a client."""
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


class _Link:
    """One accepted connection and its upstream."""

    def __init__(self, source, down_writer):
        self.source = source
        self.down_writer = down_writer  # towards the sender
        self.up_writer = None  # towards the server
        self.tainted = False  # lost bytes to a black hole

    def reset(self):
        for w in (self.down_writer, self.up_writer):
            if w is not None:
                _reset(w)


class Proxy:
    """Forwards 127.0.0.1:port to 127.0.0.1:target (name says what link)."""

    def __init__(self, hub, name, port, target):
        self.hub, self.name, self.port, self.target = hub, name, port, target
        self.faults = {}  # source address (or "*") -> Fault
        self.links = set()
        self.server = None

    # ---- control, from any thread ----------------------------------------
    def set_fault(self, fault, sources=("*",)):
        """Applies fault to senders from these addresses ("*": everyone)."""
        self.hub.run(self._set(fault, tuple(sources)))

    def heal(self):
        self.hub.run(self._heal())

    def retarget(self, target):
        """The server moved to another real port (a restart on a new one)."""
        self.target = target

    # ---- inside the loop ---------------------------------------------------
    def fault_for(self, source):
        return self.faults.get(source) or self.faults.get("*")

    async def _set(self, fault, sources):
        for s in sources:
            self.faults[s] = fault
        if fault.kind == "cut":
            for link in list(self.links):
                if self.fault_for(link.source) is not None and \
                        self.fault_for(link.source).kind == "cut":
                    link.reset()

    async def _heal(self):
        self.faults.clear()
        for link in list(self.links):
            if link.tainted:
                link.reset()

    async def start(self):
        self.server = await asyncio.start_server(self._accept, "127.0.0.1",
                                                 self.port, reuse_address=True)

    async def stop(self):
        if self.server is not None:
            self.server.close()
        for link in list(self.links):
            link.reset()

    async def _accept(self, reader, writer):
        peer = writer.get_extra_info("peername")
        link = _Link(peer[0] if peer else "?", writer)
        fault = self.fault_for(link.source)
        if fault is not None and fault.kind == "cut":
            _reset(writer)
            return
        try:
            up_reader, link.up_writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", self.target), 3.0)
        except (OSError, asyncio.TimeoutError):
            _reset(writer)  # the server is down: refuse as it would
            return
        self.links.add(link)
        try:
            await asyncio.gather(self._pump(link, reader, link.up_writer, "up"),
                                 self._pump(link, up_reader, writer, "down"))
        finally:
            self.links.discard(link)
            link.reset()

    async def _pump(self, link, reader, writer, direction):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                fault = self.fault_for(link.source)
                if fault is not None and fault.applies(direction):
                    if fault.kind == "cut":
                        break
                    if fault.kind == "drop":
                        link.tainted = True
                        continue
                    await asyncio.sleep(fault.delay_ms / 1000.0)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            link.reset()


class ProxyHub:
    """The loop thread every Proxy runs in. close() stops them all."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever,
                                       name="proxies", daemon=True)
        self.thread.start()
        self.proxies = []

    def run(self, coro):
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(CONTROL_TIMEOUT_S)

    async def _cancel_tasks(self):
        tasks = [t for t in asyncio.all_tasks()
                 if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks, timeout=2.0) if tasks else None

    def add(self, name, port, target):
        p = Proxy(self, name, port, target)
        self.run(p.start())
        self.proxies.append(p)
        return p

    def heal_all(self):
        for p in self.proxies:
            p.heal()

    def close(self):
        for p in self.proxies:
            try:
                self.run(p.stop())
            except Exception:  # noqa: BLE001 - closing at exit, keep going
                pass
        try:
            self.run(self._cancel_tasks())
        except Exception:  # noqa: BLE001 - closing at exit, keep going
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CONTROL_TIMEOUT_S)
