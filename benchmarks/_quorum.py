"""Shared by the side-by-side benchmarks: one quorum of either system laid out the same way.

``start(system, root, controllers, brokers)`` formats and starts ``controllers`` voters (and ``brokers``
brokers) of kraftwire or of Apache Kafka (``KAFKA_RELEASE``, from ``../shared/kafka``) on their own
loopback addresses with the same server.properties; ``Quorum.stop()`` ends every process by PID.
The quorum timeouts are Kafka's defaults in both systems (the compat layer's test values are faster).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compat.kafka import (  # noqa: E402
    BROKER_PORT,
    CONTROLLER_PORT,
    KafkaNode,
    KraftwireNode,
    find_distributions,
    loopback_hosts,
    missing_java,
)
from kraftwire.cli.metadata_quorum import describe  # noqa: E402
from kraftwire.storage.meta_properties import random_uuid  # noqa: E402

KAFKA_RELEASE = os.environ.get("KRAFTWIRE_BENCH_KAFKA", "3.9.0")
# Kafka's defaults (KafkaConfig / QuorumConfig), written out so that neither system runs faster settings.
KAFKA_DEFAULTS = {
    "controller.quorum.election.timeout.ms": "1000", "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.election.backoff.max.ms": "1000", "controller.quorum.request.timeout.ms": "2000",
    "controller.quorum.append.linger.ms": "25", "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "9000",
}


def kafka_missing() -> str | None:
    """Why Kafka cannot run here (no JDK, no distribution of ``KAFKA_RELEASE``), or None."""
    reason = missing_java()
    if reason:
        return reason
    if not [d for d in find_distributions() if d.version == KAFKA_RELEASE]:
        return f"no Kafka {KAFKA_RELEASE} distribution under ../shared/kafka"
    return None


def kafka_dist():  # noqa: ANN201
    return next(d for d in find_distributions() if d.version == KAFKA_RELEASE)


@dataclass
class Quorum:
    system: str
    controllers: list
    brokers: list
    cluster_id: str

    @property
    def nodes(self) -> list:
        return self.controllers + self.brokers

    @property
    def controller_addrs(self) -> str:
        return ",".join(n.controller_address for n in self.controllers)

    def launch(self) -> None:
        for node in self.nodes:
            node.start()

    def wait_started(self, timeout_s: float = 120.0) -> None:
        for node in self.nodes:
            node.wait_started(timeout_s)

    def stop(self) -> None:
        for node in self.nodes:
            try:
                node.stop(timeout_s=10.0)
            except Exception:  # noqa: BLE001 - keep stopping the others; kill() is by PID
                node.kill()


def build(system: str, root: Path, controllers: int = 3, brokers: int = 0,
          props: dict[str, str] | None = None, broker_system: str | None = None) -> Quorum:
    """Write configs and format every node (not started); brokers are of ``broker_system`` (default: ``system``)."""
    hosts = loopback_hosts(controllers + brokers, (CONTROLLER_PORT, BROKER_PORT))
    voters = [(i + 1, h, CONTROLLER_PORT) for i, h in enumerate(hosts[:controllers])]
    settings = dict(KAFKA_DEFAULTS, **(props or {}))

    def make(kind: str, i: int, roles: str, h: str):  # noqa: ANN202
        if kind == "kafka":
            return KafkaNode(kafka_dist(), root, i, roles, h, voters, props=settings)
        return KraftwireNode(root, i, roles, h, voters, props=settings)
    ctl = [make(system, i, "controller", h) for i, h, _ in voters]
    brk = [make(broker_system or system, controllers + 1 + k, "broker", hosts[controllers + k]) for k in range(brokers)]
    cluster_id = random_uuid()   # never starts with "-" (CLIs would read it as an option)
    q = Quorum(system, ctl, brk, cluster_id)
    for node in q.nodes:
        node.format(cluster_id)
    return q


async def _leader_once(addr: str, timeout_s: float) -> tuple[int, int] | None:
    try:
        with anyio.fail_after(timeout_s):
            r = await describe(addr, timeout_s)
        return r["LeaderId"], r["LeaderEpoch"]
    except Exception:  # noqa: BLE001 - a node starting or mid-election may not answer
        return None


def leader_of(addr: str, timeout_s: float = 0.5) -> tuple[int, int] | None:
    """(leader id, epoch) as the voter at ``addr`` reports it over DescribeQuorum, or None."""
    return anyio.run(_leader_once, addr, timeout_s)


async def _describe_once(addr: str, timeout_s: float) -> dict | None:
    try:
        with anyio.fail_after(timeout_s):
            return await describe(addr, timeout_s)
    except Exception:  # noqa: BLE001 - a node starting or mid-election may not answer
        return None


def quorum_from(addr: str, timeout_s: float = 0.5) -> dict | None:
    """DescribeQuorum as the node at ``addr`` (or the leader it names) answers it, or None."""
    return anyio.run(_describe_once, addr, timeout_s)


def wait_leader(q: Quorum, timeout_s: float = 120.0, interval_s: float = 0.02) -> tuple[int, int]:
    """Poll the voters in turn until one names a leader; (leader id, epoch)."""
    deadline = time.monotonic() + timeout_s
    k = 0
    while time.monotonic() < deadline:
        seen = leader_of(q.controllers[k % len(q.controllers)].controller_address)
        k += 1
        if seen is not None and seen[0] > 0:
            return seen
        time.sleep(interval_s)
    raise TimeoutError(f"{q.system}: no leader within {timeout_s:.0f} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (and its reaped children) from /proc, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def jvm_or_python_pid(node) -> int:  # noqa: ANN001
    """The PID that does the work: Kafka's start script execs java, kraftwire runs python directly."""
    return node.proc.pid
