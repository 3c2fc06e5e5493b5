"""A live listener fuzzer: every advertised API and version, well-formed and malformed, plus
connection floods and slow clients, against running nodes.

Each case opens its own connection, sends one frame (or a deliberately broken one), reads whatever
comes back for a moment and closes. A case "kills" a node when the node's process is gone afterwards;
the fuzzer records the case, restarts the node and goes on, so one run lists every finding.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from protocol.schema_strategies import filled

from kraftwire.net.client import Connection
from kraftwire.protocol.api import request_class
from kraftwire.protocol.framing import encode_request
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest

_SIZE = struct.Struct(">i")


@dataclass
class Case:
    name: str
    frame: bytes                 # exactly the bytes written (size prefix included)
    half_close: bool = False     # close right after sending (a frame shorter than its prefix)


@dataclass
class FuzzReport:
    cases: int = 0
    answered: int = 0
    closed: int = 0
    findings: list[str] = field(default_factory=list)
    rss_mb: dict[int, tuple[float, float]] = field(default_factory=dict)   # node → (before, max seen)


def _prefixed(body: bytes) -> bytes:
    return _SIZE.pack(len(body)) + body


def _frames(key: int, version: int) -> list[tuple[str, bytes]]:
    """Valid frames without size prefix: the default body and a fully populated one."""
    cls = request_class(key)
    out = []
    for label, make in (("default", cls), ("filled", lambda: filled(cls.__name__, version))):
        try:
            out.append((label, encode_request(make(), version, 7, "fuzz")[4:]))
        except Exception:  # noqa: BLE001 - a body this version cannot carry; the other one still goes
            continue
    return out


def _mutations(name: str, body: bytes, rng: random.Random) -> list[Case]:
    n = len(body)
    cases = [
        Case(f"{name} truncated/2", _prefixed(body[: max(8, n // 2)])),
        Case(f"{name} truncated-1", _prefixed(body[: max(8, n - 1)])),
        Case(f"{name} header-only", _prefixed(body[:8])),
        Case(f"{name} trailing+3", _prefixed(body + b"\x01\x02\x03")),
        Case(f"{name} trailing+4096", _prefixed(body + rng.randbytes(4096))),
        Case(f"{name} short-frame", _SIZE.pack(n + 100) + body, half_close=True),
    ]
    for i in range(3):
        flipped = bytearray(body)
        for _ in range(1 + i):
            pos = rng.randrange(8, n) if n > 8 else 0
            flipped[pos] ^= 1 << rng.randrange(8)
        cases.append(Case(f"{name} bitflip#{i}", _prefixed(bytes(flipped))))
    if n > 12:
        for label, patch in (("neg-length", b"\xff\xff\xff\xfe"), ("huge-length", b"\x7f\xff\xff\xf0"),
                             ("huge-varint", b"\xff\xff\xff\xff\x07")):
            pos = rng.randrange(8, n - len(patch) + 1) if n - len(patch) > 8 else 8
            patched = body[:pos] + patch + body[pos + len(patch):]
            cases.append(Case(f"{name} {label}@{pos}", _prefixed(patched)))
    return cases


def frame_cases(apis: dict[int, tuple[int, int]], seed: int) -> list[Case]:
    """Every advertised (key, version) well-formed, and each with the malformed variants above."""
    rng = random.Random(seed)
    cases = [Case("size -1", _SIZE.pack(-1)), Case("size 2^31-1", _SIZE.pack(0x7FFFFFFF) + b"x", half_close=True),
             Case("size 0", _SIZE.pack(0)), Case("size 3", _SIZE.pack(3) + b"abc"),
             Case("unknown key 9999", _prefixed(struct.pack(">hhi", 9999, 0, 1) + b"\xff\xff"))]
    for key, (lo, hi) in sorted(apis.items()):
        if key == 18:
            cases.append(Case("ApiVersions v99", _prefixed(struct.pack(">hhih", 18, 99, 1, -1))))
        for version in range(lo, hi + 1):
            for label, body in _frames(key, version):
                name = f"{request_class(key).__name__} v{version} {label}"
                cases.append(Case(name, _prefixed(body)))
                if label == "filled":
                    cases += _mutations(name, body, rng)
        cases.append(Case(f"key {key} v{hi + 1}", _prefixed(struct.pack(">hhih", key, hi + 1, 1, -1))))
    return cases


def send_case(host: str, port: int, case: Case, read_s: float = 0.5) -> bool:
    """Send one case on a new connection; True when some answer came back."""
    try:
        with socket.create_connection((host, port), timeout=2.0) as s:
            s.sendall(case.frame)
            if case.half_close:
                return False
            s.settimeout(read_s)
            try:
                return bool(s.recv(65536))
            except (TimeoutError, OSError):
                return False
    except OSError:
        return False


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def advertised(host: str, port: int) -> dict[int, tuple[int, int]]:
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, port, negotiate=False)
        resp = await conn.request(ApiVersionsRequest(client_software_name="fuzz", client_software_version="1"), 3, 5.0)
        await conn.close()
        tg.cancel_scope.cancel()
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


def fuzz_frames(targets: dict[int, tuple[str, int]], pid_of: Callable[[int], int | None],
                restart: Callable[[int], None], cases: list[Case], budget_s: float,
                report: FuzzReport) -> None:
    """Spread ``cases`` over the nodes (each case to one node, round robin) within ``budget_s``.

    After every case each node's process is checked; a dead node is reported with the last cases it
    was sent (a process takes a moment to exit) and restarted."""
    nodes = sorted(targets)
    recent: dict[int, list[str]] = {n: [] for n in nodes}
    deadline = time.monotonic() + budget_s
    for i, case in enumerate(cases):
        if time.monotonic() > deadline:
            report.findings.append(f"budget of {budget_s:.0f}s spent after {i} of {len(cases)} cases")
            break
        node = nodes[i % len(nodes)]
        host, port = targets[node]
        report.cases += 1
        recent[node] = [*recent[node][-2:], case.name]
        if send_case(host, port, case):
            report.answered += 1
        else:
            report.closed += 1
        _check_nodes(nodes, pid_of, restart, recent, report)
    time.sleep(1.0)
    _check_nodes(nodes, pid_of, restart, recent, report)


def _check_nodes(nodes: list[int], pid_of: Callable[[int], int | None], restart: Callable[[int], None],
                 recent: dict[int, list[str]], report: FuzzReport) -> None:
    for n in nodes:
        if pid_of(n) is None:
            report.findings.append(f"node {n} died after: {' | '.join(recent[n])}")
            restart(n)
        else:
            _note_rss(n, pid_of, report)


def _note_rss(node: int, pid_of: Callable[[int], int | None], report: FuzzReport) -> None:
    pid = pid_of(node)
    if pid is None:
        return
    now = rss_mb(pid)
    before, peak = report.rss_mb.get(node, (now, now))
    report.rss_mb[node] = (before, max(peak, now))


def flood(host: str, port: int, count: int, hold_s: float) -> int:
    """Open up to ``count`` idle connections and hold them; how many the node accepted."""
    socks = []
    try:
        for _ in range(count):
            try:
                s = socket.create_connection((host, port), timeout=2.0)
            except OSError:
                break
            socks.append(s)
        time.sleep(hold_s)
        return len(socks)
    finally:
        for s in socks:
            s.close()


class Slowloris:
    """``count`` connections trickling a frame header one byte at a time (context manager)."""

    def __init__(self, host: str, port: int, count: int) -> None:
        self.socks: list[socket.socket] = []
        for _ in range(count):
            try:
                s = socket.create_connection((host, port), timeout=2.0)
            except OSError:
                break
            s.setblocking(False)
            self.socks.append(s)
        self.frame = _SIZE.pack(1 << 20) + b"\x00\x03\x00\x0c"   # a 1 MiB Metadata request, never finished

    def trickle(self, rounds: int, pause_s: float) -> int:
        """Send one more byte on every connection per round; how many connections are still open."""
        pos = 0
        for _ in range(rounds):
            byte = self.frame[pos:pos + 1] or b"\x00"
            pos += 1
            for s in list(self.socks):
                try:
                    s.send(byte)
                except OSError:
                    self.socks.remove(s)
                    s.close()
            time.sleep(pause_s)
        return len(self.socks)

    def __enter__(self) -> Slowloris:
        return self

    def __exit__(self, *exc: object) -> None:
        for s in self.socks:
            s.close()
