"""Broker heartbeat load on a 3-controller quorum: kraftwire side by side with Apache Kafka.

N simulated brokers, each with its own connection, register with the active controller and send a
BrokerHeartbeat every 2 s (Kafka's broker.heartbeat.interval.ms), one in flight per broker, as Kafka's
brokers do (a heartbeat unanswered for the 9 s session is given up and the connection replaced).
Reported per system and N: heartbeat latency p50/p99/max, timeouts (no answer within the 2 s
interval), spurious fences (a broker fenced again, or told its epoch is stale, after it was
unfenced), leader changes of the quorum during the run, the controllers' CPU (and the active one's per
heartbeat, ``cpu_us_per_hb``; with ``--listener-processes N`` kraftwire's controllers run
``kraftwire.listener.processes=N`` and a controller's CPU is its core process's plus its listener
processes', also given apart per heartbeat as ``core_us_per_hb`` and ``listeners_us_per_hb``), and the
busiest load generator process's CPU (near 100% would mean the generator, not the controller, sets the
latency).

    .venv/bin/python benchmarks/heartbeats.py --brokers 2000 5000 10000 --duration 60
    .venv/bin/python benchmarks/heartbeats.py --brokers 2000 --systems kraftwire
    .venv/bin/python benchmarks/heartbeats.py --brokers 10000 --kafka 4.1.0     # issue #25's peer
    .venv/bin/python benchmarks/heartbeats.py --brokers 10000 --kafka 4.1.0 --listener-processes 2

Kafka comes from ../shared/kafka (or KAFKA_HOME); without a JDK or a distribution it is skipped with
the reason printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import random
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compat.kafka import (  # noqa: E402
    CONTROLLER_PORT,
    KafkaNode,
    KafkaUnavailable,
    KraftwireNode,
    find_distributions,
    loopback_hosts,
    missing_java,
)
from kraftwire.cli.metadata_quorum import describe  # noqa: E402
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.protocol.errors import Errors  # noqa: E402
from kraftwire.protocol.framing import decode_response, encode_request  # noqa: E402
from kraftwire.protocol.messages import broker_registration_request as brq  # noqa: E402
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest  # noqa: E402

INTERVAL_S = 2.0
SESSION_S = 9.0     # broker.session.timeout.ms: how long a broker waits before giving a request up
_SIZE = struct.Struct(">i")
_HB = struct.Struct(">hbbb")
FENCING = {int(Errors.STALE_BROKER_EPOCH), int(Errors.BROKER_ID_NOT_REGISTERED)}


@dataclass
class Stats:
    latencies_ms: list[float] = field(default_factory=list)
    timeouts: int = 0
    spurious_fences: int = 0
    not_controller: int = 0
    registered: int = 0
    unfenced: int = 0
    leader_changes: int = 0
    registration_errors: dict[int, int] = field(default_factory=dict)


class _Wire(asyncio.Protocol):
    """A connection that hands each response frame (size prefix stripped) to the waiting request, or
    to ``on_frame`` (the heartbeat phase: callbacks, no task or future per request)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.transport: asyncio.Transport | None = None
        self.on_frame: Callable[[bytes], None] | None = None
        self.on_lost: Callable[[], None] | None = None

    def connection_made(self, transport) -> None:  # noqa: ANN001
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self.buf and len(data) >= 4 and len(data) == 4 + _SIZE.unpack_from(data, 0)[0]:
            self._frame(data[4:])   # the usual case: one whole answer in one read
            return
        self.buf += data
        while len(self.buf) >= 4:
            (size,) = _SIZE.unpack_from(self.buf, 0)
            if len(self.buf) < 4 + size:
                return
            frame = bytes(self.buf[4:4 + size])
            del self.buf[:4 + size]
            self._frame(frame)

    def _frame(self, frame: bytes) -> None:
        if self.on_frame is not None:
            self.on_frame(frame)
        elif self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.on_lost is not None:
            self.on_lost()
        elif self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("closed"))


class Broker:
    """One simulated broker: its own connection, one request in flight. Heartbeats are pre-encoded
    (only the correlation id changes), their answers parsed in place, and the heartbeat phase runs
    on loop callbacks (``_Heartbeats``), so one generator process keeps thousands of brokers on time
    with most of its loop idle."""

    def __init__(self, broker_id: int, cluster_id: str, hosts: list[str]) -> None:
        self.id = broker_id
        self.cluster_id = cluster_id
        self.hosts = hosts
        self.target = 0
        self.epoch = -1
        self.unfenced = False
        self.wire: _Wire | None = None
        self.corr = 0
        self.frame = bytearray()

    async def _send(self, frame: bytes | bytearray, timeout_s: float) -> bytes:
        loop = asyncio.get_running_loop()
        if self.wire is None:
            _, self.wire = await asyncio.wait_for(
                loop.create_connection(_Wire, self.hosts[self.target], CONTROLLER_PORT), timeout_s)
        self.wire.waiter = loop.create_future()
        self.wire.transport.write(frame)
        return await asyncio.wait_for(self.wire.waiter, timeout_s)

    def _drop(self) -> None:
        if self.wire is not None and self.wire.transport is not None:
            self.wire.transport.abort()
        self.wire = None

    def _next_controller(self) -> None:
        self._drop()
        self.target = (self.target + 1) % len(self.hosts)

    async def register(self, stats: Stats, stop: float) -> None:
        while time.time() < stop:
            req = brq.BrokerRegistrationRequest(
                broker_id=self.id, cluster_id=self.cluster_id, incarnation_id=uuid.uuid4(),
                listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 20000 + self.id % 40000, 0)],
                features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())], rack=None, log_dirs=[uuid.uuid4()])
            self.corr += 1
            try:
                resp = decode_response(await self._send(encode_request(req, 3, self.corr, "sim"), 10.0),
                                       req.API_KEY, 3)[1]
            except (TimeoutError, OSError, ConnectionError):
                self._next_controller()
                await asyncio.sleep(0.5)
                continue
            if resp.error_code == 0:
                self.epoch = resp.broker_epoch
                stats.registered += 1
                self.frame = bytearray(encode_request(BrokerHeartbeatRequest(
                    broker_id=self.id, broker_epoch=self.epoch, current_metadata_offset=1 << 62), 1, 0,
                    f"sim-broker-{self.id}"))
                return
            stats.registration_errors[resp.error_code] = stats.registration_errors.get(resp.error_code, 0) + 1
            self._next_controller()
            await asyncio.sleep(0.5)

    # -- the heartbeat phase: callbacks on the generator's loop ----------------------------------
    def start_heartbeats(self, hb: _Heartbeats) -> None:
        self.hb = hb
        self.sent = 0.0
        self.inflight = False
        self.next_at = time.time() + random.uniform(0, INTERVAL_S)
        self._at(self.next_at)

    def _at(self, wall: float) -> None:
        loop = self.hb.loop
        loop.call_at(loop.time() + max(0.0, wall - time.time()), self._beat)

    def _beat(self) -> None:
        hb = self.hb
        if time.time() >= hb.window.stop.value:
            hb.finished(self)
            return
        if self.wire is None:
            hb.loop.create_task(self._reconnect())
            return
        self.next_at += INTERVAL_S
        self.corr += 1
        _SIZE.pack_into(self.frame, 8, self.corr)
        self.wire.on_frame = self._answered
        self.wire.on_lost = self._lost
        self.inflight = True
        self.sent = time.time()
        self.wire.transport.write(self.frame)

    async def _reconnect(self) -> None:
        loop = self.hb.loop
        try:
            _, self.wire = await asyncio.wait_for(
                loop.create_connection(_Wire, self.hosts[self.target], CONTROLLER_PORT), SESSION_S)
        except (TimeoutError, OSError):
            self.wire = None
            self._next_controller()
            self.next_at = time.time() + 0.5
            self._at(self.next_at)
            return
        self.next_at = time.time()
        self._beat()

    def _failed(self) -> None:
        """No answer within the session, or the connection went: reconnect, as a broker would."""
        self.inflight = False
        if self.sent >= self.hb.window.start.value:
            self.hb.stats.timeouts += 1
        self._drop()
        self.next_at = time.time()
        self._at(self.next_at)

    def _lost(self) -> None:
        self.wire = None          # the next heartbeat reconnects
        if self.inflight:
            self._failed()

    def _answered(self, frame: bytes) -> None:
        if not self.inflight:
            return
        self.inflight = False
        stats, measure_from = self.hb.stats, self.hb.window.start.value
        now = time.time()
        sent = self.sent
        took = (now - sent) * 1000
        if took > INTERVAL_S * 1000 and sent >= measure_from:
            stats.timeouts += 1   # answered, but after the next heartbeat was due
        while self.next_at < now:
            self.next_at += INTERVAL_S
        # header v1: correlation id, empty tag section; body: throttle i32, error i16, 3 booleans
        error, _caught_up, is_fenced, _shut = _HB.unpack_from(frame, 9)
        if error == Errors.NOT_CONTROLLER:
            stats.not_controller += 1
            self._next_controller()
            self.next_at = now + 0.05
            self._at(self.next_at)
            return
        fenced = error in FENCING or (error == 0 and is_fenced)
        if sent >= measure_from:
            stats.latencies_ms.append(took)
            if fenced and self.unfenced:
                stats.spurious_fences += 1
        if error == 0 and not is_fenced and not self.unfenced:
            self.unfenced = True
            stats.unfenced += 1
        self.unfenced = self.unfenced and not fenced
        self._at(self.next_at)


class _Heartbeats:
    """The heartbeat phase of one generator process: every broker's timer and answer are callbacks on
    this loop (a task, a future and a ``wait_for`` per heartbeat cost more CPU than the controller's
    answer; the generator shares the 2 cores with it). A sweep every 0.5 s gives up heartbeats
    unanswered for the 9 s session."""

    def __init__(self, brokers: list[Broker], stats: Stats, window: _Window) -> None:
        self.loop = asyncio.get_running_loop()
        self.brokers = brokers
        self.stats = stats
        self.window = window
        self.running = set(brokers)
        self.done = self.loop.create_future()

    def finished(self, broker: Broker) -> None:
        self.running.discard(broker)
        if not self.running and not self.done.done():
            self.done.set_result(None)

    async def run(self) -> None:
        if not self.brokers:
            return
        for b in self.brokers:
            b.start_heartbeats(self)
        while not self.done.done():
            await asyncio.wait([self.done], timeout=0.5)
            now = time.time()
            for b in self.brokers:
                if b.inflight and now - b.sent > SESSION_S:
                    b._failed()


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (a kraftwire node's listener processes)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


async def watch_leader(addrs: list[str], stats: Stats, stop: float) -> None:
    last = None
    while time.time() < stop:
        for a in addrs:
            try:
                st = await describe(a, 2.0)
            except Exception:  # noqa: BLE001 - mid-election or overloaded: try the next one
                continue
            now = (st["LeaderId"], st["LeaderEpoch"])
            if last is not None and now != last:
                stats.leader_changes += 1
            last = now
            break
        await asyncio.sleep(1.0)


class _Window:
    """Measurement window shared with the generator processes (set once everyone registered)."""

    def __init__(self, procs: int) -> None:
        import multiprocessing as mp

        self.start = mp.RawValue("d", float("inf"))
        self.stop = mp.RawValue("d", float("inf"))
        self.ready = mp.RawArray("i", procs)


async def _drive(hosts: list[str], cluster_id: str, ids: range, reg_deadline: float, window: _Window,
                 slot: int) -> Stats:
    """One generator process: register ``ids`` (250 at a time), then heartbeat until the window ends."""
    stats = Stats()
    brokers = [Broker(i, cluster_id, hosts) for i in ids]
    for i in range(0, len(brokers), 250):
        await asyncio.gather(*(b.register(stats, reg_deadline) for b in brokers[i:i + 250]))
    window.ready[slot] = 1
    await _Heartbeats([b for b in brokers if b.epoch >= 0], stats, window).run()
    for b in brokers:
        b._drop()
    return stats


def _worker(args: tuple, out) -> None:  # noqa: ANN001
    out.put(asyncio.run(_drive(*args)))


def load(hosts: list[str], cluster_id: str, n: int, duration_s: float, pids: list[int], procs: int) -> dict:
    """Registration (at most 120 s), 15 s of warm-up, then ``duration_s`` measured, over ``procs``
    generator processes."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    window = _Window(procs)
    per = -(-n // procs)
    chunks = [range(1000 + k * per, 1000 + min(n, (k + 1) * per)) for k in range(procs)]
    out = ctx.Queue()
    reg_deadline = time.time() + 120
    workers = [ctx.Process(target=_worker, args=((hosts, cluster_id, ids, reg_deadline, window, k), out))
               for k, ids in enumerate(chunks)]
    for w in workers:
        w.start()
    stats = Stats()
    try:
        while not all(window.ready) and time.time() < reg_deadline:
            time.sleep(0.2)
        window.start.value = time.time() + 15
        window.stop.value = window.start.value + duration_s
        time.sleep(15)
        kids = [children(p) for p in pids]   # listener processes (kraftwire.listener.processes)
        cpu0 = [cpu_s(p) for p in pids]
        kid0 = [sum(cpu_s(k) for k in ks) for ks in kids]
        gen0 = [cpu_s(w.pid) for w in workers]
        t0 = time.time()
        addrs = [f"{h}:{CONTROLLER_PORT}" for h in hosts]
        asyncio.run(watch_leader(addrs, stats, window.stop.value))
        elapsed = time.time() - t0
        core = [(cpu_s(p) - c) / elapsed * 100 for p, c in zip(pids, cpu0, strict=True)]
        lst = [(sum(cpu_s(k) for k in ks) - c) / elapsed * 100 for ks, c in zip(kids, kid0, strict=True)]
        cpu = [a + b for a, b in zip(core, lst, strict=True)]
        gen = [(cpu_s(w.pid) - c) / elapsed * 100 for w, c in zip(workers, gen0, strict=True)]
        parts = [out.get(timeout=60) for _ in workers]
    finally:
        for w in workers:
            w.join(timeout=10)
            if w.is_alive():
                w.kill()
                w.join()
    for part in parts:
        stats.latencies_ms += part.latencies_ms
        for k in ("timeouts", "spurious_fences", "not_controller", "registered", "unfenced"):
            setattr(stats, k, getattr(stats, k) + getattr(part, k))
        for code, count in part.registration_errors.items():
            stats.registration_errors[code] = stats.registration_errors.get(code, 0) + count
    if stats.registration_errors:
        print(f"  registration errors (code: count): {stats.registration_errors}", flush=True)
    busiest = cpu.index(max(cpu))
    lat = sorted(stats.latencies_ms) or [float("nan")]
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
    return {"brokers": n, "registered": stats.registered, "heartbeats": len(stats.latencies_ms),
            "p50_ms": pick(0.50), "p99_ms": pick(0.99), "max_ms": lat[-1], "timeouts": stats.timeouts,
            "spurious_fences": stats.spurious_fences, "leader_changes": stats.leader_changes,
            "not_controller": stats.not_controller, "cpu_max_pct": max(cpu), "cpu_sum_pct": sum(cpu),
            "gen_cpu_max_pct": max(gen), "window": (window.start.value, window.stop.value),
            # the busiest controller's (the active one's) CPU over the window per heartbeat answered in it
            "cpu_us_per_hb": max(cpu) / 100 * elapsed / max(1, len(stats.latencies_ms)) * 1e6,
            # the same split: the active controller's core process, and its listener processes together
            "core_us_per_hb": core[busiest] / 100 * elapsed / max(1, len(stats.latencies_ms)) * 1e6,
            "listeners_us_per_hb": lst[busiest] / 100 * elapsed / max(1, len(stats.latencies_ms)) * 1e6}


def kafka_dist(release: str | None):  # noqa: ANN201
    """The peer: Kafka ``release`` from ../shared/kafka, or by default the newest 3.x (the issue #15 peer)."""
    dists = find_distributions()
    if release:
        found = [d for d in dists if d.version == release]
        if not found:
            raise KafkaUnavailable(f"no Kafka {release} distribution (found {[d.version for d in dists]})")
        return found[0]
    return ([d for d in dists if d.version_tuple < (4,)] or dists)[-1]


def run_system(system: str, n: int, duration_s: float, root: Path, procs: int = 2, keep: Path | None = None,
               kafka: str | None = None, listener_processes: int = 0) -> dict:
    hosts = loopback_hosts(3, (CONTROLLER_PORT,))
    voters = [(i + 1, h, CONTROLLER_PORT) for i, h in enumerate(hosts)]
    props = {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "2000"}
    if system == "kraftwire":
        if listener_processes:
            props["kraftwire.listener.processes"] = str(listener_processes)
        nodes = [KraftwireNode(root, i, "controller", h, voters, props=props) for i, h, _ in voters]
    else:
        dist = kafka_dist(kafka)
        nodes = [KafkaNode(dist, root, i, "controller", h, voters, props=props) for i, h, _ in voters]
    cluster_id = "-"
    while cluster_id.startswith("-"):   # as Kafka's Uuid.randomUuid: a leading '-' reads as an option
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    try:
        for node in nodes:
            node.format(cluster_id)
            node.start()
        for node in nodes:
            node.wait_started()
        row = load(hosts, cluster_id, n, duration_s, [node.proc.pid for node in nodes], procs)
    finally:
        for node in nodes:
            node.stop()
        if keep is not None:   # the nodes' logs, for a look at elections after the run
            import shutil

            for node in nodes:
                dest = keep / f"{system}-{n}" / node.dir.name
                dest.mkdir(parents=True, exist_ok=True)
                for f in node.dir.rglob("*.log"):
                    if f.is_file() and "__cluster_metadata" not in str(f):
                        shutil.copy(f, dest / f.name)
    label = system if system == "kraftwire" else f"kafka {nodes[0].dist.version}"
    return {"system": label, **row}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, nargs="+", default=[2000, 5000, 10000])
    p.add_argument("--duration", type=float, default=60.0, help="measured seconds per run (after warm-up)")
    p.add_argument("--procs", type=int, default=2, help="load generator processes")
    p.add_argument("--keep-logs", type=Path, default=None, help="copy the nodes' logs here")
    p.add_argument("--systems", nargs="+", default=["kraftwire", "kafka"], choices=["kraftwire", "kafka"])
    p.add_argument("--kafka", default=os.environ.get("KRAFTWIRE_BENCH_KAFKA"),
                   help="the peer's Kafka release, e.g. 4.1.0 (default: $KRAFTWIRE_BENCH_KAFKA, else the newest 3.x)")
    p.add_argument("--listener-processes", type=int, default=0,
                   help="kraftwire's kraftwire.listener.processes (0: the core's event loop serves the clients)")
    args = p.parse_args()
    systems = list(args.systems)
    if "kafka" in systems:
        reason = missing_java() or (None if find_distributions() else "no Kafka distribution found")
        if reason:
            print(f"kafka skipped: {reason}")
            systems.remove("kafka")
    cols = ["system", "brokers", "registered", "heartbeats", "p50_ms", "p99_ms", "max_ms", "timeouts",
            "spurious_fences", "leader_changes", "not_controller", "cpu_max_pct", "cpu_sum_pct", "gen_cpu_max_pct",
            "cpu_us_per_hb", "core_us_per_hb", "listeners_us_per_hb"]
    print(" | ".join(cols))
    for n in args.brokers:
        for system in systems:
            with tempfile.TemporaryDirectory(prefix=f"hb-{system}-") as tmp:
                try:
                    row = run_system(system, n, args.duration, Path(tmp), args.procs, args.keep_logs, args.kafka,
                                     args.listener_processes)
                except (KafkaUnavailable, RuntimeError, TimeoutError) as e:
                    print(f"{system} at {n}: failed: {str(e)[:300]}")
                    continue
            print(" | ".join(f"{row[c]:.1f}" if isinstance(row[c], float) else str(row[c]) for c in cols),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
