"""The chaos lab: real voters in network namespaces on tmpfs, a writer with an acknowledged-write
ledger, and the four verdicts every run ends with.

A run = ``ChaosCluster`` up → ``Writer`` creating topics against whichever voter is the active
controller → a nemesis (faults.py) until the deadline → ``heal_all`` → ``verdicts``:
acknowledged writes lost, voters' committed logs identical, nodes alive, longest unavailability.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from processes.harness import FAST, Cluster

from kraftwire.cli.errors import OperatorError
from kraftwire.cli.metadata_quorum import describe
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.records import iter_batches
from kraftwire.storage.meta_properties import random_uuid

from .netlab import Disk, NetLab

PORT = 9093
LEDGER_BROKER = 900        # a registered (fenced) broker the ledger's topics are assigned to
# Answers to a validate-only create that say nothing about whether the topic exists.
_UNDECIDED = frozenset({int(Errors.NOT_CONTROLLER), int(Errors.REQUEST_TIMED_OUT), int(Errors.UNKNOWN_SERVER_ERROR),
                        int(Errors.THROTTLING_QUOTA_EXCEEDED)})


class ChaosCluster(Cluster):
    """``n`` voters, node i in its own namespace at 10.213.T.i:9093 with a ``disk_mb`` tmpfs data dir."""

    def __init__(self, root: Path, n: int = 3, disk_mb: int = 64, extra: list[str] | None = None) -> None:
        self.root, self.n, self.brokers = root, n, []
        self.extra = extra or []
        self.net = NetLab(list(range(1, n + 1)))
        self.disks: dict[int, Disk] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self.deaths: list[str] = []          # nodes that exited while nobody was killing them
        self.expected_down: set[int] = set()
        self.disk_stops: list[int] = []      # nodes that stopped on ENOSPC (restarted once space is back)
        self.journal: list[str] = []         # every fault step with its wall-clock time (--keep writes it)
        try:
            voters = ",".join(f"{i}@{self.net.host(i)}:{PORT}" for i in range(1, n + 1))
            self.configs = []
            for i in range(1, n + 1):
                node_dir = root / f"node{i}"
                self.disks[i] = Disk(node_dir / "data", disk_mb)
                cfg = node_dir / "server.properties"
                cfg.write_text("\n".join([
                    "process.roles=controller", f"node.id={i}", f"controller.quorum.voters={voters}",
                    f"listeners=CONTROLLER://{self.net.host(i)}:{PORT}", "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT", f"log.dirs={node_dir / 'data'}", ""]))
                self.configs.append(cfg)
            self.cluster_id = random_uuid()
            for cfg in self.configs:
                format_storage(load_config(cfg), self.cluster_id, quiet=True)
        except BaseException:
            self.close()
            raise

    def note(self, what: str) -> None:
        """Journal a fault step at the wall-clock time the nodes' logs use."""
        t = time.time()
        self.journal.append(time.strftime("%H:%M:%S", time.localtime(t)) + f",{int(t * 1000) % 1000:03d} {what}")

    def addr(self, node: int) -> str:
        return f"{self.net.host(node)}:{PORT}"

    def start(self, node: int, *extra: str) -> subprocess.Popen:
        args = [sys.executable, "-m", "kraftwire", "server", str(self.configs[node - 1])]
        for o in FAST + self.extra + list(extra):
            args += ["--override", o]
        with open(self.root / f"node{node}" / "server.log", "ab") as log:
            proc = subprocess.Popen(self.net.wrap(node, args), stdout=log, stderr=subprocess.STDOUT)
        self.procs[node] = proc
        self.expected_down.discard(node)
        self.note(f"start node {node}")
        return proc

    def kill(self, node: int, sig: int = signal.SIGKILL) -> None:
        self.check_alive()
        if sig in (signal.SIGKILL, signal.SIGTERM):
            self.expected_down.add(node)
        self.note(f"signal {signal.Signals(sig).name} node {node}")
        super().kill(node, sig)

    def check_alive(self) -> None:
        """Record every node that exited on its own since the last check (with its log's last line)."""
        for node, proc in self.procs.items():
            if node not in self.expected_down and proc.poll() is not None:
                lines = self.log_text(node).strip().splitlines()
                self.expected_down.add(node)
                if any("no space left" in ln.lower() for ln in lines[-80:]):
                    self.disk_stops.append(node)     # stopping on a full disk is Kafka's behaviour too
                    continue
                tail = [ln for ln in lines if ln.strip(" |+-")][-1:] or ["(empty log)"]
                self.deaths.append(f"node {node} exited {proc.returncode}: {tail[0][:300]}")

    async def wait_serving(self, node: int, timeout_s: float = 30.0) -> bool:
        """Wait until a (re)started node accepts connections on its listener, or it exited, or the
        timeout passed; whether it serves. Python start-up on a loaded 2-core box takes 10 s and more:
        a nemesis that does not wait stacks its next fault on a node still starting."""
        with anyio.move_on_after(timeout_s):
            while self.procs[node].poll() is None:
                try:
                    with anyio.fail_after(1.0):
                        stream = await anyio.connect_tcp(self.net.host(node), PORT)
                    await stream.aclose()
                    self.note(f"node {node} serving")
                    return True
                except (OSError, TimeoutError):
                    await anyio.sleep(0.2)
        return False

    async def wait_caught_up(self, node: int, timeout_s: float = 30.0) -> bool:
        """Wait until the leader reports ``node``'s log at the high watermark (a damaged node has
        fetched back what it dropped), or the timeout passed; whether it caught up."""
        with anyio.move_on_after(timeout_s):
            while self.procs[node].poll() is None:
                st = await leader_of(self)
                rows = {r["NodeId"]: r["LogEndOffset"] for r in st["Replication"]} if st is not None else {}
                if st is not None and rows.get(node, -1) >= st["HighWatermark"] > 0:
                    self.note(f"node {node} caught up at {rows[node]}")
                    return True
                await anyio.sleep(0.3)
        return False

    def alive(self) -> list[int]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def close(self) -> None:
        self.stop_all()
        for d in self.disks.values():
            d.close()
        self.net.close()


async def leader_of(c: ChaosCluster, timeout_s: float = 2.0) -> dict | None:
    """The quorum status from the first voter that answers with a leader, or None."""
    for n in range(1, c.n + 1):
        if n in c.expected_down:
            continue
        try:
            st = await describe(c.addr(n), timeout_s)
        except (RequestFailed, OSError, TimeoutError, KafkaProtocolError, OperatorError):
            continue
        if st["LeaderId"] > 0:
            return st
    return None


@dataclass
class Writer:
    """Creates topics one at a time on the active controller; an acknowledged create joins the ledger."""

    c: ChaosCluster
    request_timeout_s: float = 3.0
    acked: list[str] = field(default_factory=list)
    indeterminate: int = 0
    ack_times: list[float] = field(default_factory=list)
    started: float = 0.0
    _seq: int = 0
    _target: int = 1
    _broker_epoch: int = -1

    async def _call(self, tg, body) -> object | None:
        conn = Connection(tg, self.c.net.host(self._target), PORT, connect_timeout_s=1.0)
        try:
            return await conn.request(body, None, self.request_timeout_s)
        except (RequestFailed, KafkaProtocolError, OSError):
            return None
        finally:
            await conn.close()

    async def register_broker(self, tg, deadline_s: float = 30.0) -> None:
        with anyio.fail_after(deadline_s):
            while True:
                resp = await self._call(tg, brq.BrokerRegistrationRequest(
                    broker_id=LEDGER_BROKER, cluster_id=self.c.cluster_id, incarnation_id=uuid.uuid4(),
                    listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 9999, 0)],
                    features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())], rack=None, log_dirs=[uuid.uuid4()]))
                if resp is not None and resp.error_code == 0:
                    self._broker_epoch = resp.broker_epoch
                    return
                self._target = self._target % self.c.n + 1
                await anyio.sleep(0.2)

    async def heartbeats(self, tg, stop: anyio.Event) -> None:
        """Keep the ledger's broker unfenced: one heartbeat a second to whichever voter leads."""
        target = 1
        while not stop.is_set():
            conn = Connection(tg, self.c.net.host(target), PORT, connect_timeout_s=1.0)
            try:
                resp = await conn.request(BrokerHeartbeatRequest(
                    broker_id=LEDGER_BROKER, broker_epoch=self._broker_epoch, current_metadata_offset=1 << 62),
                    None, 2.0)
                if resp.error_code != 0:
                    target = target % self.c.n + 1
            except (RequestFailed, KafkaProtocolError, OSError):
                target = target % self.c.n + 1
            finally:
                await conn.close()
            await anyio.sleep(1.0)

    async def run(self, tg, stop: anyio.Event) -> None:
        tg.start_soon(self.heartbeats, tg, stop)
        self.started = time.monotonic()
        pending: str | None = None
        while not stop.is_set():
            name = pending or f"chaos-{self._seq}"
            if pending is None:
                self._seq += 1
            topic = ctq.CreatableTopic(name=name, num_partitions=-1, replication_factor=-1,
                                       assignments=[ctq.CreatableReplicaAssignment(0, [LEDGER_BROKER])])
            resp = await self._call(tg, ctq.CreateTopicsRequest(topics=[topic], timeout_ms=int(self.request_timeout_s * 1000)))
            code = resp.topics[0].error_code if resp is not None and resp.topics else None
            if code == 0:
                self.acked.append(name)
                self.ack_times.append(time.monotonic())
                pending = None
                continue
            if code == Errors.TOPIC_ALREADY_EXISTS:
                # An earlier unanswered attempt happened (perhaps not yet committed): not acknowledged.
                pending = None
                continue
            # No answer: the create may or may not have happened; retry the same name elsewhere.
            if resp is None:
                self.indeterminate += 1
                pending = name
            elif code not in (Errors.NOT_CONTROLLER,):
                pending = name
            self._target = self._target % self.c.n + 1
            await anyio.sleep(0.05)

    def longest_gap_s(self, until: float) -> float:
        return self.longest_gap(until)[0]

    def longest_gap(self, until: float) -> tuple[float, str]:
        """The longest time without an acknowledged create, and when it began (wall clock)."""
        marks = [self.started, *self.ack_times, until]
        gap, start = max((b - a, a) for a, b in zip(marks, marks[1:], strict=False))
        wall = start + time.time() - time.monotonic()
        return gap, time.strftime("%H:%M:%S", time.localtime(wall)) + f",{int(wall * 1000) % 1000:03d}"

    async def missing(self, tg, deadline_s: float = 60.0) -> list[str]:
        """Acknowledged topics the quorum no longer has: a validate-only create of each must answer
        TOPIC_ALREADY_EXISTS (the controller checks existence first); any other per-topic verdict
        means the topic is absent. No answer or an answer of the moment (NOT_CONTROLLER, timed out,
        an internal error) says nothing about the topic: it is asked again, elsewhere."""
        lost: list[str] = []
        with anyio.fail_after(deadline_s):
            for i in range(0, len(self.acked), 200):
                todo = self.acked[i:i + 200]
                while todo:
                    resp = await self._call(tg, ctq.CreateTopicsRequest(topics=[
                        ctq.CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in todo],
                        timeout_ms=5000, validate_only=True))
                    codes = {t.name: t.error_code for t in resp.topics} if resp is not None else {}
                    settled = {n for n in todo if n in codes and codes[n] not in _UNDECIDED}
                    lost += [n for n in todo if n in settled and codes[n] != Errors.TOPIC_ALREADY_EXISTS]
                    todo = [n for n in todo if n not in settled]
                    if todo:
                        self._target = self._target % self.c.n + 1
                        await anyio.sleep(0.2)
        return lost


async def heal_all(c: ChaosCluster, catch_up_s: float = 60.0) -> tuple[dict | None, str]:
    """Undo every fault, restart stopped nodes, wait for a leader and every voter caught up.

    Returns the final status and "" — or the last status seen and why the quorum did not heal."""
    c.net.heal()
    for d in c.disks.values():
        d.free()
    for p in list(c.procs.values()):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
    c.check_alive()
    for n in range(1, c.n + 1):
        if n not in c.procs or c.procs[n].poll() is not None:
            c.start(n)
    last = None
    with anyio.move_on_after(catch_up_s):
        while True:
            st = await leader_of(c)
            if st is not None:
                last = st
                rows = {r["NodeId"]: r["LogEndOffset"] for r in st["Replication"]}
                if len(rows) == c.n and min(rows.values()) >= st["HighWatermark"] > 0:
                    return st, ""
            c.check_alive()
            await anyio.sleep(0.3)
    c.check_alive()
    if last is None:
        return None, f"no leader within {catch_up_s:.0f}s of healing"
    lagging = {r["NodeId"]: r["LogEndOffset"] for r in last["Replication"] if r["LogEndOffset"] < last["HighWatermark"]}
    return last, f"voters {lagging} (log end offsets) still behind high watermark {last['HighWatermark']} " \
                 f"{catch_up_s:.0f}s after healing"


def committed_records(c: ChaosCluster, node: int, upto: int) -> dict[int, tuple[int, bytes | None]]:
    """offset → (epoch, value) of every record below ``upto`` in a stopped node's segments."""
    out: dict[int, tuple[int, bytes | None]] = {}
    for seg in sorted((c.data_dir(node) / "__cluster_metadata-0").glob("*.log")):
        for batch, _, _ in iter_batches(seg.read_bytes()):
            for i, r in enumerate(batch.records):
                if batch.base_offset + i < upto:
                    out[batch.base_offset + i] = (batch.leader_epoch, r.value)
    return out


@dataclass
class Verdicts:
    acked: int
    lost: list[str]
    logs_identical: bool
    compared_offsets: int
    deaths: list[str]
    longest_unavailable_s: float
    faults: int
    indeterminate: int
    unhealed: str = ""
    disk_stops: int = 0
    longest_unavailable_from: str = ""     # wall clock, as in the nodes' logs
    clients: list = field(default_factory=list)   # admin_probe.Tally per client kind (runs with --clients)

    @property
    def not_controller_beyond_first(self) -> int:
        return sum(t.beyond_first for t in self.clients)

    def line(self) -> str:
        return (f"acked={self.acked} lost={len(self.lost)} logs_identical={self.logs_identical} "
                f"(over {self.compared_offsets} committed offsets) deaths={len(self.deaths)} "
                f"longest_unavailable={self.longest_unavailable_s:.1f}s (from {self.longest_unavailable_from}) faults={self.faults} "
                f"indeterminate={self.indeterminate} stopped_on_full_disk={self.disk_stops}"
                + (f" not_controller_beyond_first={self.not_controller_beyond_first}" if self.clients else "")
                + (f" UNHEALED: {self.unhealed}" if self.unhealed else ""))

    @property
    def ok(self) -> bool:
        return (not self.lost and self.logs_identical and not self.deaths and not self.unhealed
                and self.not_controller_beyond_first == 0)


def compare_logs(c: ChaosCluster, hw: int) -> tuple[bool, int]:
    """Whether every voter holds the same record at every committed offset they all have."""
    logs = [committed_records(c, n, hw) for n in range(1, c.n + 1)]
    common = set.intersection(*(set(log) for log in logs))
    same = all(logs[0][o] == log[o] for log in logs[1:] for o in common)
    return same, len(common)
