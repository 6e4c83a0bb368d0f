"""test_proxy.py: the nemesis's proxy does to a link what it is told.

An echo server stands for Redis; each test breaks the link one way and
checks what a client sees. Run: python3 tests/safety/test_proxy.py
"""
import socket
import threading
import time
import unittest

from proxy import Fault, ProxyHub


def echo_server():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve(c):
        with c:
            while True:
                try:
                    data = c.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                c.sendall(data)

    def accept():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProxyTest(unittest.TestCase):
    def setUp(self):
        self.srv = echo_server()
        self.hub = ProxyHub()
        self.proxy = self.hub.add("test", free_port(),
                                  self.srv.getsockname()[1])

    def tearDown(self):
        self.hub.close()
        self.srv.close()

    def connect(self, source="127.0.0.1"):
        c = socket.socket()
        c.settimeout(1.0)
        c.bind((source, 0))
        c.connect(("127.0.0.1", self.proxy.port))
        self.addCleanup(c.close)
        return c

    def roundtrip(self, c, data=b"ping"):
        c.sendall(data)
        return c.recv(4096)

    def assertDead(self, c):
        """The link is reset or closed: a send or receive fails or ends."""
        try:
            c.sendall(b"x")
            self.assertEqual(c.recv(4096), b"")
        except (ConnectionResetError, BrokenPipeError):
            pass

    def test_forwards_both_ways(self):
        self.assertEqual(self.roundtrip(self.connect()), b"ping")

    def test_cut_resets_open_links(self):
        c = self.connect()
        self.roundtrip(c)
        self.proxy.set_fault(Fault("cut"))
        self.assertDead(c)

    def test_cut_refuses_new_links_until_healed(self):
        self.proxy.set_fault(Fault("cut"))
        try:
            self.assertDead(self.connect())
        except ConnectionResetError:
            pass  # reset while connecting: refused, as wanted
        self.proxy.heal()
        self.assertEqual(self.roundtrip(self.connect()), b"ping")

    def test_drop_up_swallows_requests_and_keeps_the_link(self):
        c = self.connect()
        self.proxy.set_fault(Fault("drop", "up"))
        c.sendall(b"lost")
        with self.assertRaises(socket.timeout):
            c.recv(4096)

    def test_drop_down_swallows_replies(self):
        c = self.connect()
        self.proxy.set_fault(Fault("drop", "down"))
        c.sendall(b"lost")
        with self.assertRaises(socket.timeout):
            c.recv(4096)

    def test_heal_resets_a_link_that_lost_bytes(self):
        c = self.connect()
        self.proxy.set_fault(Fault("drop", "both"))
        c.sendall(b"lost")
        time.sleep(0.2)
        self.proxy.heal()
        self.assertDead(c)

    def test_slow_delays_every_chunk(self):
        c = self.connect()
        self.proxy.set_fault(Fault("slow", delay_ms=300))
        t = time.monotonic()
        self.assertEqual(self.roundtrip(c), b"ping")
        self.assertGreaterEqual(time.monotonic() - t, 0.5)  # 300 ms each way

    def test_fault_by_source_spares_other_senders(self):
        self.proxy.set_fault(Fault("cut"), sources=("127.0.1.7",))
        self.assertEqual(self.roundtrip(self.connect()), b"ping")
        try:
            self.assertDead(self.connect("127.0.1.7"))
        except ConnectionResetError:
            pass


if __name__ == "__main__":
    unittest.main()
