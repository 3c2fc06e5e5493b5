"""pytest side of the real-Kafka harness (``compat/kafka.py``): which releases to run, node fleets that
always stop their JVMs, and server logs attached to the report of a failing test.

Under ``CI=true`` a missing JDK or Kafka distribution fails the test; elsewhere it is skipped with the
reason. Tests take one release through the ``kafka_dist`` fixture (parametrized over every release found).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from compat.kafka import KafkaDist, KafkaNode, KafkaUnavailable, find_distributions, loopback_hosts

#: fleets whose nodes may be running; their logs go into the report of a test that fails meanwhile.
ACTIVE: list[Fleet] = []


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> None:
    """Fail under CI=true (a CI run must have every tool), skip with the reason elsewhere."""
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def distributions() -> tuple[list[KafkaDist], str]:
    try:
        return find_distributions(), ""
    except KafkaUnavailable as e:
        return [], str(e)


class Missing(str):
    """The parameter standing for "no release here": its text is the reason."""


def dist_params() -> list:
    """pytest params: one per release found (id ``kafka-3.9.0``), or one that skips/fails with the reason."""
    dists, reason = distributions()
    if not dists:
        return [pytest.param(Missing(reason), id="no-kafka")]
    return [pytest.param(d, id=f"kafka-{d.version}") for d in dists]


def require(dist: KafkaDist | Missing) -> KafkaDist:
    if isinstance(dist, Missing):
        unavailable(str(dist))
    assert isinstance(dist, KafkaDist)
    return dist


class Fleet:
    """Kafka nodes of one test or module: each gets its own loopback address; ``stop()`` ends them all."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.nodes: list[KafkaNode] = []
        self.extra_logs: list[tuple[str, Path]] = []

    def __enter__(self) -> Fleet:
        ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self in ACTIVE:
            ACTIVE.remove(self)

    def hosts(self, n: int) -> list[str]:
        return loopback_hosts(n)

    def add(self, node: KafkaNode) -> KafkaNode:
        self.nodes.append(node)
        return node

    def start(self, node: Any, cluster: str, release_version: str | None = None) -> Any:
        """``node`` added (unless it is), formatted for ``cluster`` (at ``release_version``, else its default),
        started and running."""
        if node not in self.nodes:
            self.add(node)
        node.format(cluster, release_version=release_version)
        node.start()
        node.wait_started()
        return node

    def watch(self, name: str, path: Path) -> None:
        """Also attach ``path`` (e.g. a kraftwire server.log) to the report of a failing test."""
        self.extra_logs.append((name, Path(path)))

    def kafka_broker_on_a_kraftwire_controller(self, dist: KafkaDist, root: Path,
                                               release_version: str | None = None) -> tuple[Any, KafkaNode, str]:
        """One kraftwire controller (node 1) and one Kafka broker of ``dist`` (node 2) on it, formatted (at
        ``release_version``, else each side's default) and started: (controller, broker, controller format's
        output)."""
        from compat.kafka import CONTROLLER_PORT, KraftwireNode
        from kraftwire.storage.meta_properties import random_uuid

        chost, bhost = self.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = KraftwireNode(root, 1, "controller", chost, voters)
        self.add(ctl)
        self.watch("kraftwire controller", ctl.log_path)
        cluster = random_uuid()
        formatted = ctl.format(cluster, release_version=release_version)
        ctl.start()
        ctl.wait_started()
        broker = self.start(KafkaNode(dist, root, 2, "broker", bhost, voters), cluster, release_version)
        return ctl, broker, formatted

    def stop(self) -> None:
        """Stop brokers first (controlled shutdown needs the controllers), then the rest; kill on timeout."""
        for node in sorted(self.nodes, key=lambda n: n.is_controller):
            node.stop(timeout_s=20.0)

    def report(self, lines: int = 60) -> str:
        parts = [n.log_tail(lines) for n in self.nodes]
        for name, path in self.extra_logs:
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {name} {path} ---\n" + "\n".join(tail))
        return "\n".join(parts)
