"""resp.py: the few Redis commands the safety harness sends, over RESP2.

The harness talks to servers it started (to configure them, fail them over,
migrate slots and scan for leaked keys) with nothing but the Python standard
library, so that scripts/safety runs wherever python3 and redis-server do.
Every call has a timeout: a server the nemesis has paused must not hang the
harness.
"""
import socket


class RespError(Exception):
    """An error reply (-ERR ..., -MOVED ...), or a broken connection."""


class Conn:
    """One connection to one server. Not thread-safe: one user at a time."""

    def __init__(self, port, host="127.0.0.1", timeout=3.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def cmd(self, *args):
        """Sends one command; returns its reply (bytes, int, list, None).
        Raises RespError on an error reply, OSError on a dead link."""
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(parts))
        reply = self._reply()
        if isinstance(reply, RespError):
            raise reply
        return reply

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RespError("connection closed")
        self.buf += chunk

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RespError("unexpected reply %r" % line[:40])


def command(port, *args, timeout=3.0):
    """One command on a fresh connection; the connection is closed after."""
    with Conn(port, timeout=timeout) as c:
        return c.cmd(*args)


def text(reply):
    """A bulk or status reply as str (info, cluster nodes)."""
    return reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply)
