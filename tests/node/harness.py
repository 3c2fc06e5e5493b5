"""In-process clusters of real Nodes on loopback (memory storage) for network-level tests."""

from __future__ import annotations

from contextlib import asynccontextmanager

import anyio

from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.node.server import Server
from kraftwire.raft import MemoryLog, MemoryStateStore
from tests.ports import free_ports

__all__ = ["free_ports", "memory_cluster", "node_config", "wait_for"]


def node_config(node_id: int, ports: list[int], **extra: str):
    quorum = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    props = {"process.roles": "controller", "node.id": str(node_id), "controller.quorum.voters": quorum,
             "listeners": f"CONTROLLER://127.0.0.1:{ports[node_id - 1]}",
             "controller.listener.names": "CONTROLLER",
             "controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "1500",
             "controller.quorum.election.backoff.max.ms": "300", "controller.quorum.request.timeout.ms": "1000",
             "metadata.max.idle.interval.ms": "20"}
    props.update(extra)
    return load_config(props)


@asynccontextmanager
async def memory_cluster(n: int = 3, cluster_id: str = "kw-test-cluster-0000001"):
    ports = free_ports(n)
    nodes = [Server(node_config(i, ports), log=MemoryLog(), store=MemoryStateStore(), cluster_id=cluster_id,
                 offset_store=MemoryOffsetStore())
             for i in range(1, n + 1)]
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)
        try:
            yield nodes, ports
        finally:
            tg.cancel_scope.cancel()


async def wait_for(pred, timeout: float = 10.0, interval: float = 0.02):
    with anyio.fail_after(timeout):
        while True:
            value = pred()
            if value:
                return value
            await anyio.sleep(interval)
