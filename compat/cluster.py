"""A throwaway kraftwire quorum of real ``kraftwire server`` processes on free loopback ports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from kraftwire.cli.metadata_quorum import describe
from kraftwire.cli.quickstart import write_configs
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.storage.meta_properties import random_uuid
from tests.ports import free_ports  # below the ephemeral range: no outgoing socket takes them first

# Quick elections so the matrix does not wait on defaults; a short initial rebalance delay keeps the
# consumer-group checks quick (Kafka's own tests do the same).
# A NoOpRecord every 100 ms gives the log enough committed records to read within seconds.
OVERRIDES = ("controller.quorum.election.timeout.ms=800", "controller.quorum.fetch.timeout.ms=1600",
             "controller.quorum.election.backoff.max.ms=400", "group.initial.rebalance.delay.ms=100",
             "metadata.max.idle.interval.ms=100")


@dataclass
class QuorumStatus:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[int]


def write_broker_config(node_dir: Path, node: int, port: int, voters: str) -> Path:
    """server.properties of a broker-only node (``process.roles=broker``) next to the voters."""
    node_dir.mkdir(parents=True, exist_ok=True)
    cfg = node_dir / "server.properties"
    cfg.write_text("\n".join([
        f"# kraftwire compat broker {node}", "process.roles=broker", f"node.id={node}",
        f"controller.quorum.voters={voters}", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={(node_dir / 'data').resolve()}", "broker.heartbeat.interval.ms=500", ""]))
    return cfg


class Quorum:
    """``n`` voters (ids 1..n) and ``brokers`` broker-only nodes (ids n+1..) formatted with one cluster id;
    ``start()`` runs them, ``stop()`` ends them."""

    def __init__(self, root: Path, n: int = 3, extra: tuple[str, ...] = (), brokers: int = 0) -> None:
        self.root = Path(root)
        self.n = n
        self.extra = extra
        self.cluster_id = random_uuid()
        self.broker_ids = list(range(n + 1, n + brokers + 1))
        ports = free_ports(n + brokers)
        # write_configs numbers ports from a base; rewrite them to the free ports we were given.
        self.configs = write_configs(self.root, n, ports[0])
        quorum = ",".join(f"{i}@127.0.0.1:{p}" for i, p in enumerate(ports[:n], 1))
        for i, cfg in enumerate(self.configs, 1):
            lines = []
            for line in cfg.read_text().splitlines():
                if line.startswith("controller.quorum.voters="):
                    line = f"controller.quorum.voters={quorum}"
                elif line.startswith("listeners="):
                    line = f"listeners=CONTROLLER://127.0.0.1:{ports[i - 1]}"
                lines.append(line)
            cfg.write_text("\n".join(lines) + "\n")
            meta = Path(load_config(cfg).metadata_log_dir) / "meta.properties"
            if meta.exists():  # a data directory kept from an earlier run: keep its cluster id
                self.cluster_id = dict(ln.split("=", 1) for ln in meta.read_text().splitlines()
                                       if "=" in ln and not ln.startswith("#"))["cluster.id"].strip()
            format_storage(load_config(cfg), self.cluster_id, ignore_formatted=True, quiet=True)
        for b in self.broker_ids:
            cfg = write_broker_config(self.root / f"node{b}", b, ports[b - 1], quorum)
            format_storage(load_config(cfg), self.cluster_id, ignore_formatted=True, quiet=True)
            self.configs.append(cfg)
        self.ports = ports
        self.procs: dict[int, subprocess.Popen] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(self.addr(i) for i in range(1, self.n + 1))

    def addr(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node - 1]}"

    def log_dir(self, node: int) -> Path:
        return Path(load_config(self.configs[node - 1]).metadata_log_dir) / "__cluster_metadata-0"

    @property
    def voters(self) -> list[tuple[int, str, int]]:
        return [(i, "127.0.0.1", self.ports[i - 1]) for i in range(1, self.n + 1)]

    def start(self) -> None:
        for i in range(1, self.n + 1 + len(self.broker_ids)):
            self.start_node(i)

    def start_node(self, node: int) -> None:
        cfg = self.configs[node - 1]
        args = [sys.executable, "-m", "kraftwire", "server", str(cfg)]
        for o in OVERRIDES + self.extra:
            args += ["--override", o]
        out = open(cfg.parent / "server.log", "ab")  # noqa: SIM115 - the child keeps it
        self.procs[node] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)

    def stop_node(self, node: int) -> None:
        """Graceful stop (SIGTERM: a leader resigns with EndQuorumEpoch first)."""
        proc = self.procs.pop(node)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def change_leader(self, timeout_s: float = 60.0) -> QuorumStatus:
        """Stop the leader, wait for another to be elected, restart the old one: the log then holds a
        LeaderChange control batch between data batches, as any long-lived cluster's does."""
        before = self.wait_ready(timeout_s=timeout_s)
        self.stop_node(before.leader_id)
        deadline = time.monotonic() + timeout_s
        while True:
            now = self.status()
            if now is not None and now.leader_id not in (-1, before.leader_id) and now.leader_epoch > before.leader_epoch:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"no new leader within {timeout_s}s after stopping node {before.leader_id}")
            time.sleep(0.3)
        self.start_node(before.leader_id)
        return self.wait_ready(min_hw=now.high_watermark + 1, timeout_s=timeout_s)

    def status(self, timeout_s: float = 5.0) -> QuorumStatus | None:
        """The quorum as DescribeQuorum reports it (asking each node in turn), None if nobody answers."""
        for i in range(1, self.n + 1):
            try:
                d = anyio.run(describe, self.addr(i), timeout_s)
            except Exception:  # noqa: BLE001 - not up yet, or no leader yet: try the next node
                continue
            return QuorumStatus(d["LeaderId"], d["LeaderEpoch"], d["HighWatermark"],
                                sorted(d["CurrentVoters"]))
        return None

    def wait_ready(self, min_hw: int = 1, timeout_s: float = 60.0) -> QuorumStatus:
        """Wait for a leader whose high watermark has reached ``min_hw`` (committed metadata)."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            dead = [i for i, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"kraftwire node(s) {dead} exited; see {self.root}/node*/server.log")
            last = self.status()
            if last is not None and last.leader_id >= 0 and last.high_watermark >= min_hw:
                return last
            time.sleep(0.3)
        raise TimeoutError(f"no leader with high watermark >= {min_hw} within {timeout_s}s (last: {last})")

    def wait_brokers(self, timeout_s: float = 60.0) -> None:
        """Wait until every broker serves (unfenced, caught up) and lists all the brokers."""
        deadline = time.monotonic() + timeout_s
        for b in self.broker_ids:
            while True:
                try:
                    listed = anyio.run(_live_brokers, self.addr(b), 5.0)
                except Exception:  # noqa: BLE001 - still starting
                    listed = None
                if listed == self.broker_ids:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {b} not serving within {timeout_s}s (lists {listed}); "
                                       f"see {self.root}/node{b}/server.log")
                time.sleep(0.3)

    def committed_offset(self, group: str, timeout_s: float = 10.0) -> tuple[int, int]:
        """(coordinating voter, committed offset of ``group`` on __cluster_metadata-0), asked of that voter
        (the one a voter's FindCoordinator names: the offsets quorum's leader, docs/groups.md)."""
        _, host, port = self.voters[0]
        owner = anyio.run(_find_coordinator, host, port, group, timeout_s)
        _, host, port = next(v for v in self.voters if v[0] == owner)
        return owner, anyio.run(_offset_fetch, host, port, group, timeout_s)

    def stop(self) -> None:
        """SIGTERM everything: brokers first, so that their controlled shutdown finds the controllers up."""
        brokers = [p for i, p in self.procs.items() if i in self.broker_ids]
        voters = [p for i, p in self.procs.items() if i not in self.broker_ids]
        for group in (brokers, voters):
            for p in group:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in group:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()

    def __enter__(self) -> Quorum:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _live_brokers(addr: str, timeout_s: float) -> list[int] | None:
    host, _, port = addr.rpartition(":")
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, int(port), client_id="kraftwire-compat", connect_timeout_s=timeout_s)
        try:
            resp = await conn.request(DescribeClusterRequest(), 0, timeout_s)
        finally:
            await conn.close()
    return None if resp.error_code else sorted(b.broker_id for b in resp.brokers)


async def _find_coordinator(host: str, port: int, group: str, timeout_s: float) -> int:
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, port, client_id="kraftwire-compat", connect_timeout_s=timeout_s)
        try:
            resp = await conn.request(FindCoordinatorRequest(key=group, key_type=0), 3, timeout_s)
        finally:
            await conn.close()
    if resp.error_code:
        raise RequestFailed(f"FindCoordinator for {group} failed: {resp}")
    return resp.node_id


async def _offset_fetch(host: str, port: int, group: str, timeout_s: float) -> int:
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, port, client_id="kraftwire-compat", connect_timeout_s=timeout_s)
        try:
            resp = await conn.request(ofq.OffsetFetchRequest(group_id=group, topics=[ofq.OffsetFetchRequestTopic(
                name="__cluster_metadata", partition_indexes=[0])]), 7, timeout_s)
        finally:
            await conn.close()
    if resp.error_code or resp.topics[0].partitions[0].error_code:
        raise RequestFailed(f"OffsetFetch for {group} failed: {resp}")
    return resp.topics[0].partitions[0].committed_offset
