"""Rolling restarts in the chaos lab (issue #23, item 4): every voter, then every broker, of a running
kraftwire cluster is stopped with SIGTERM, restarted, and waited for until it has rejoined, one at a
time, while the lab's writer creates topics without pause.

Verdicts: acknowledged creates lost (the ledger, ``Writer.missing``), brokers the controller fenced other
than the one restarting (every fencing record of the committed metadata log, by its batch's append time,
against each broker's own restart window; the ledger's broker is never restarted, so any fencing of it
is a finding), deaths, and the longest write unavailability of each restart (the longest time without an
acknowledged create from the SIGTERM to 2 s after the node rejoined).

The writer creates topics and alters the newest one's ``retention.ms`` (IncrementalAlterConfigs) without
pause; an acknowledged alter must be in the committed metadata log at the end (its ConfigRecord). The same
scenario runs with real Kafka brokers on the kraftwire quorum (``--kafka-brokers``) and, as the baseline,
with Kafka's own controllers and brokers (``--kafka``), each JVM in its node's namespace, with the same
quorum timings (``processes.harness.FAST``).

    sudo .venv/bin/python -m tests.chaos.rolling --voters 3 --brokers 2 --rounds 1 [--kafka-brokers | --kafka]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from processes.harness import FAST

from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.messages import incremental_alter_configs_request as iac
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.fence_broker_record import FenceBrokerRecord
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import iter_batches
from kraftwire.storage.meta_properties import random_uuid

from .lab import LEDGER_BROKER, PORT, ChaosCluster, Writer, leader_of
from .netlab import Disk, NetLab

BROKER_PORT = 9092
SETTLE_S = 2.0     # after a node rejoined: part of its restart's window, then the next node goes
KAFKA_HEAP = "-Xmx512m -Xms256m"
# Kafka nodes get the lab's quorum timings (processes.harness.FAST) and the Kafka settings the interop
# tests use on a small machine.
KAFKA_COMMON = ["num.network.threads=2", "num.io.threads=2", "num.recovery.threads.per.data.dir=1"]
KAFKA_BROKER = ["num.partitions=1", "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=false",
                "inter.broker.listener.name=PLAINTEXT"]
MODES = ("kraftwire", "kafka-brokers", "kafka")   # kraftwire only; Kafka brokers on kraftwire voters; Kafka only


class RollingCluster(ChaosCluster):
    """``n`` voters (1..n) and ``brokers`` brokers (n+1..), each in its own namespace with a tmpfs; with
    ``mode`` "kafka-brokers" the brokers, with "kafka" every node, are Kafka ``dist``'s JVMs."""

    def __init__(self, root: Path, n: int = 3, brokers: int = 2, disk_mb: int = 64, mode: str = "kraftwire",
                 dist: object | None = None) -> None:  # noqa: D107
        self.root, self.n, self.extra, self.mode, self.dist = root, n, [], mode, dist
        self.brokers = list(range(n + 1, n + brokers + 1))
        self.net = NetLab(list(range(1, n + brokers + 1)))
        self.disks: dict[int, Disk] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self.deaths: list[str] = []
        self.expected_down: set[int] = set()
        self.disk_stops: list[int] = []
        self.journal: list[str] = []
        try:
            voters = ",".join(f"{i}@{self.net.host(i)}:{PORT}" for i in range(1, n + 1))
            self.configs = []
            self.cluster_id = random_uuid()
            for i in range(1, n + brokers + 1):
                node_dir = root / f"node{i}"
                kafka = self.is_kafka(i)
                self.disks[i] = Disk(node_dir / "data", disk_mb * (4 if kafka else 1))
                host = self.net.host(i)
                if i <= n:
                    lines = ["process.roles=controller", f"listeners=CONTROLLER://{host}:{PORT}"]
                    if kafka:
                        lines += [*FAST, *KAFKA_COMMON]
                else:
                    lines = ["process.roles=broker", f"listeners=PLAINTEXT://{host}:{BROKER_PORT}",
                             "broker.heartbeat.interval.ms=500", "broker.session.timeout.ms=6000"]
                    if kafka:
                        lines += [f"advertised.listeners=PLAINTEXT://{host}:{BROKER_PORT}", *KAFKA_COMMON, *KAFKA_BROKER]
                cfg = node_dir / "server.properties"
                cfg.write_text("\n".join([
                    *lines, f"node.id={i}", f"controller.quorum.voters={voters}", "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={node_dir / 'data'}", ""]))
                self.configs.append(cfg)
                if kafka:
                    rc, out = dist.run("kafka-storage.sh", ["format", "-t", self.cluster_id, "-c", str(cfg)])   # type: ignore[attr-defined]
                    if rc != 0:
                        raise RuntimeError(f"kafka-storage.sh format of node {i} exited {rc}: {out.strip()[-600:]}")
                else:
                    format_storage(load_config(cfg), self.cluster_id, quiet=True)
        except BaseException:
            self.close()
            raise

    def is_kafka(self, node: int) -> bool:
        return self.mode == "kafka" or (self.mode == "kafka-brokers" and node > self.n)

    def start(self, node: int, *extra: str) -> subprocess.Popen:
        if not self.is_kafka(node):
            return super().start(node, *extra)
        node_dir = self.root / f"node{node}"
        env = dict(os.environ, KAFKA_HEAP_OPTS=KAFKA_HEAP, LOG_DIR=str(node_dir / "logs"))
        env.pop("KAFKA_LOG4J_OPTS", None)
        env.pop("JMX_PORT", None)
        argv = [str(self.dist.script("kafka-server-start.sh")), str(self.configs[node - 1])]   # type: ignore[attr-defined]
        with open(node_dir / "server.log", "ab") as log:
            proc = subprocess.Popen(self.net.wrap(node, argv), stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs[node] = proc
        self.expected_down.discard(node)
        self.note(f"start node {node} (Kafka {self.dist.version})")   # type: ignore[attr-defined]
        return proc

    async def terminate(self, node: int, timeout_s: float = 60.0) -> None:
        """SIGTERM ``node`` and wait for it to exit without holding the event loop (the writer runs on it:
        a blocking wait counted a JVM's shutdown time as write unavailability); SIGKILL after ``timeout_s``."""
        self.check_alive()
        self.expected_down.add(node)
        self.note(f"signal SIGTERM node {node}")
        proc = self.procs[node]
        proc.send_signal(signal.SIGTERM)
        with anyio.move_on_after(timeout_s):
            while proc.poll() is None:
                await anyio.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            self.note(f"node {node} killed: no exit {timeout_s:.0f} s after SIGTERM")
        self.note(f"node {node} exited")

    def start_all(self) -> None:
        for i in range(1, self.n + len(self.brokers) + 1):
            self.start(i)

    def stop_all(self) -> None:
        """Brokers first (their controlled shutdown needs a controller), then the voters."""
        for group in (self.brokers, list(range(1, self.n + 1))):
            procs = [self.procs[i] for i in group if i in self.procs and self.procs[i].poll() is None]
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    async def broker_rejoined(self, node: int, timeout_s: float = 60.0) -> bool:
        """The broker serves on its listener and its own image lists it unfenced (DescribeCluster)."""
        with anyio.move_on_after(timeout_s):
            while self.procs[node].poll() is None:
                try:
                    async with anyio.create_task_group() as tg:
                        conn = Connection(tg, self.net.host(node), BROKER_PORT, connect_timeout_s=1.0)
                        try:
                            resp = await conn.request(DescribeClusterRequest(), None, 2.0)
                        finally:
                            await conn.close()
                    if resp.error_code == 0 and any(b.broker_id == node and not b.is_fenced for b in resp.brokers):
                        self.note(f"broker {node} rejoined (unfenced)")
                        return True
                except (RequestFailed, KafkaProtocolError, OSError, ExceptionGroup):   # not serving yet
                    pass
                await anyio.sleep(0.3)
        return False


class RollingWriter(Writer):
    """The lab's writer, plus alters: every 0.1 s the newest acknowledged topic's ``retention.ms`` is set to
    a new value with IncrementalAlterConfigs on the same controller; acknowledged alters join ``altered``.
    Every acknowledged write (create or alter) counts for the unavailability."""

    def __init__(self, c: ChaosCluster) -> None:
        super().__init__(c)
        self.altered: list[tuple[str, str]] = []
        self._alter_seq = 0

    async def alters(self, tg, stop: anyio.Event) -> None:
        while not stop.is_set():
            await anyio.sleep(0.1)
            if not self.acked:
                continue
            self._alter_seq += 1
            topic, value = self.acked[-1], str(3_600_000 + self._alter_seq)
            resp = await self._call(tg, iac.IncrementalAlterConfigsRequest(resources=[iac.AlterConfigsResource(
                resource_type=2, resource_name=topic, configs=[iac.AlterableConfig("retention.ms", 0, value)])]))
            if resp is not None and resp.responses and resp.responses[0].error_code == 0:
                self.altered.append((topic, value))
                self.ack_times.append(time.monotonic())

    async def run(self, tg, stop: anyio.Event) -> None:
        tg.start_soon(self.alters, tg, stop)
        await super().run(tg, stop)


def topic_configs(c: RollingCluster, node: int) -> set[tuple[str, str]]:
    """(topic, retention.ms) of every topic ConfigRecord in a stopped node's metadata log."""
    out = set()
    for seg in sorted((c.data_dir(node) / "__cluster_metadata-0").glob("*.log")):
        for batch, _, _ in iter_batches(seg.read_bytes()):
            if batch.control:
                continue
            for r in batch.records:
                msg = decode_record(r.value).message if r.value is not None else None
                if isinstance(msg, ConfigRecord) and msg.resource_type == 2 and msg.name == "retention.ms":
                    out.add((msg.resource_name, msg.value or ""))
    return out


@dataclass
class Restart:
    node: int
    role: str
    began: float            # monotonic, at the SIGTERM
    rejoined: float         # monotonic (inf: never)
    wall_began: float
    wall_rejoined: float
    longest_unavailable_s: float = 0.0
    unavailable_from: str = ""   # wall clock, as in the nodes' logs and the journal

    def line(self) -> str:
        took = "never" if self.rejoined == float("inf") else f"{self.rejoined - self.began:.1f}s"
        return (f"{self.role} {self.node}: rejoined after {took}, longest write unavailability "
                f"{self.longest_unavailable_s:.2f}s (from {self.unavailable_from})")


@dataclass
class RollingVerdicts:
    acked: int
    lost: list[str]
    restarts: list[Restart]
    fenced: list[tuple[int, float]]            # (broker, wall time) of every fencing record
    unexpected_fences: list[tuple[int, float]]
    deaths: list[str]
    indeterminate: int
    unhealed: str = ""
    notes: list[str] = field(default_factory=list)
    altered: int = 0
    alters_lost: list[tuple[str, str]] = field(default_factory=list)
    mode: str = "kraftwire"

    def lines(self) -> list[str]:
        return [f"mode={self.mode} acked={self.acked} lost={len(self.lost)} alters_acked={self.altered} "
                f"alters_lost={len(self.alters_lost)} restarts={len(self.restarts)} fences={len(self.fenced)} "
                f"unexpected_fences={len(self.unexpected_fences)} deaths={len(self.deaths)} "
                f"indeterminate={self.indeterminate}" + (f" UNHEALED: {self.unhealed}" if self.unhealed else ""),
                *(r.line() for r in self.restarts)]


def fencings(c: RollingCluster, node: int) -> list[tuple[int, float]]:
    """(broker id, append time in seconds) of every fencing record in a stopped node's metadata log."""
    out = []
    for seg in sorted((c.data_dir(node) / "__cluster_metadata-0").glob("*.log")):
        for batch, _, _ in iter_batches(seg.read_bytes()):
            if batch.control:
                continue
            for r in batch.records:
                if r.value is None:
                    continue
                msg = decode_record(r.value).message
                if isinstance(msg, BrokerRegistrationChangeRecord) and msg.fenced == 1:
                    out.append((msg.broker_id, batch.base_timestamp / 1000))
                elif isinstance(msg, FenceBrokerRecord):
                    out.append((msg.id_, batch.base_timestamp / 1000))
    return out


def _gap(ack_times: list[float], start: float, end: float) -> tuple[float, float]:
    """The longest time without an acknowledged write within [start, end], and when it began (monotonic)."""
    marks = [start, *(t for t in ack_times if start < t < end), end]
    return max((b - a, a) for a, b in zip(marks, marks[1:], strict=False))


async def _rolling(c: RollingCluster, rounds: int) -> RollingVerdicts:
    writer = RollingWriter(c)
    restarts: list[Restart] = []
    async with anyio.create_task_group() as tg:
        await writer.register_broker(tg)
        for b in c.brokers:
            if not await c.broker_rejoined(b, 180.0):
                raise RuntimeError(f"broker {b} never joined: {c.log_text(b)[-2000:]}")
        stop = anyio.Event()
        tg.start_soon(writer.run, tg, stop)
        await anyio.sleep(SETTLE_S)
        for _ in range(rounds):
            for node in [*range(1, c.n + 1), *c.brokers]:
                role = "voter" if node <= c.n else "broker"
                began, wall = time.monotonic(), time.time()
                await c.terminate(node)           # waits for the process to exit (controlled shutdown)
                c.start(node)
                if role == "voter":
                    ok = await c.wait_serving(node, 120) and await c.wait_caught_up(node, 60)
                else:
                    ok = await c.broker_rejoined(node, 180.0 if c.is_kafka(node) else 60.0)
                rejoined = time.monotonic() if ok else float("inf")
                restarts.append(Restart(node, role, began, rejoined, wall, time.time() if ok else float("inf")))
                await anyio.sleep(SETTLE_S)
                c.check_alive()
        stop.set()
        ended = time.monotonic()
        for r in restarts:
            r.longest_unavailable_s, since = _gap(writer.ack_times, r.began, min(r.rejoined + SETTLE_S, ended))
            r.unavailable_from = time.strftime("%H:%M:%S", time.localtime(r.wall_began + since - r.began)) + \
                f",{int((r.wall_began + since - r.began) * 1000) % 1000:03d}"
        unhealed = ""
        with anyio.move_on_after(60) as scope:
            while await leader_of(c) is None:
                await anyio.sleep(0.3)
        if scope.cancelled_caught:
            unhealed = "no leader 60 s after the last restart"
        lost = await writer.missing(tg) if not unhealed else []
        tg.cancel_scope.cancel()
    teardown = time.time()   # the brokers' controlled shutdowns from here on are the run's end, not findings
    c.stop_all()
    fenced = [(b, t) for b, t in fencings(c, 1) if t < teardown]
    configs = set().union(*(topic_configs(c, v) for v in range(1, c.n + 1)))
    alters_lost = [a for a in writer.altered if a not in configs]
    windows = {r.node: [] for r in restarts}
    for r in restarts:
        windows[r.node].append((r.wall_began - 1.0, r.wall_rejoined + SETTLE_S))
    unexpected = [(b, t) for b, t in fenced
                  if not any(lo <= t <= hi for lo, hi in windows.get(b, []))]
    return RollingVerdicts(len(writer.acked), lost, restarts, fenced, unexpected, c.deaths, writer.indeterminate,
                           unhealed, altered=len(writer.altered), alters_lost=alters_lost, mode=c.mode)


def run_rolling(root: Path, voters: int = 3, brokers: int = 2, rounds: int = 1, mode: str = "kraftwire",
                dist: object | None = None) -> RollingVerdicts:
    """A cluster up, ``rounds`` rolling restarts of every node under the writer's load, torn down after.
    ``mode``: see ``MODES``; the Kafka modes need ``dist`` (a ``compat.kafka.KafkaDist``)."""
    c = RollingCluster(root, voters, brokers, mode=mode, dist=dist)
    try:
        c.start_all()
        return anyio.run(_rolling, c, rounds)
    finally:
        c.stop_all()
        (root / "journal.txt").write_text("".join(f"{line}\n" for line in c.journal))
        c.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--voters", type=int, default=3, choices=(3, 5))
    p.add_argument("--brokers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--root", type=Path, default=None, help="keep the nodes' logs here")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--kafka-brokers", action="store_true", help="Kafka brokers on the kraftwire voters")
    kind.add_argument("--kafka", action="store_true", help="the baseline: Kafka controllers and brokers")
    p.add_argument("--kafka-home", type=Path, default=None, help="Kafka distribution (default: the newest found)")
    args = p.parse_args()
    import tempfile

    mode = "kafka" if args.kafka else "kafka-brokers" if args.kafka_brokers else "kraftwire"
    dist = None
    if mode != "kraftwire":
        from compat.kafka import dist_at, find_distributions

        dist = dist_at(args.kafka_home) if args.kafka_home else find_distributions()[-1]
    with tempfile.TemporaryDirectory(prefix="kw-rolling-") as tmp:
        v = run_rolling(args.root or Path(tmp), args.voters, args.brokers, args.rounds, mode, dist)
    for line in v.lines():
        print(line)
    print(f"ledger broker {LEDGER_BROKER} fencings: {[t for b, t in v.fenced if b == LEDGER_BROKER]}")
    ok = not v.lost and not v.alters_lost and not v.unexpected_fences and not v.deaths and not v.unhealed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
