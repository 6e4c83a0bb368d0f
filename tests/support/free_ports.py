#!/usr/bin/env python3
"""free_ports.py N: prints N distinct free loopback ports for the shell
tests' servers, on one line; free_ports() gives them to the safety harness.

Ports come from below the kernel's ephemeral range, as the C harness's
rt_free_port() picks them: a port in that range can be taken, between the
pick and the server's bind, by the source port of another test's outgoing
connection. Each port's port + 10000 is free and below the range too: a
Redis 6.2 cluster node's bus.
"""
import random
import socket
import sys


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def binds(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(n, taken=()):
    """n distinct free ports, none of them in taken."""
    top = max(ephemeral_low() - 10000, 11000)
    ports = []
    for _ in range(1000 * n):
        p = random.randrange(10000, top)
        if (p != 6379 and p not in ports and p not in taken and binds(p)
                and binds(p + 10000)):
            ports.append(p)
            if len(ports) == n:
                return ports
    raise SystemExit("free_ports.py: no free loopback ports")


if __name__ == "__main__":
    print(*free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
