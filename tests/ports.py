"""Free loopback ports for tests, chosen below the kernel's ephemeral range.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` lies in the ephemeral range (Linux:
``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999): free when chosen, it can be taken by any
outgoing connection on the box (a node dialling its peers, another test) before the node binds it,
and the node then fails with "port ... is already in use". Ports below that range are only ever
taken by an explicit bind. Each port is handed out once per test process.
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

_handed: set[int] = set()
_rng = random.Random()


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_LOW, _HIGH = 20000, min(_ephemeral_start(), 65536) - 1


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(n: int, offsets: list[int] | None = None) -> int:
    """A base port with ``n`` consecutive free ports, or free ports at base + each of ``offsets``."""
    wanted = list(range(n)) if offsets is None else offsets
    for _ in range(500):
        base = _rng.randrange(_LOW, _HIGH - max(wanted))
        ports = [base + o for o in wanted]
        if not _handed.intersection(ports) and all(_bindable(p) for p in ports):
            _handed.update(ports)
            return base
    raise RuntimeError("no free port block below the ephemeral range")


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports (not necessarily consecutive)."""
    out: list[int] = []
    for _ in range(50 * n + 100):
        if len(out) == n:
            break
        port = _rng.randrange(_LOW, _HIGH)
        if port not in _handed and _bindable(port):
            _handed.add(port)
            out.append(port)
    if len(out) < n:
        raise RuntimeError("no free ports below the ephemeral range")
    return out


class CountingListener:
    """Listens on ``port``, accepts every connection and closes it at once, counting them: a peer that is
    down but whose dialling can be counted (a refused connect leaves no trace on the listening side)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)
        self.sock.settimeout(0.05)
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:   # the accept timeout included
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
