"""In-process clusters: controller and broker Servers on loopback with memory storage."""

from __future__ import annotations

import uuid
from contextlib import asynccontextmanager

import anyio

from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.node.server import Server
from kraftwire.raft import MemoryLog, MemoryStateStore
from tests.node.harness import free_ports, wait_for

CLUSTER_ID = "kw-broker-test-cluster01"
TIMING = {"controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "1500",
          "controller.quorum.election.backoff.max.ms": "300", "controller.quorum.request.timeout.ms": "1000",
          "metadata.max.idle.interval.ms": "50", "broker.session.timeout.ms": "1500",
          "broker.heartbeat.interval.ms": "100"}


def controller_config(node_id: int, ports: list[int], **extra: str):
    quorum = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    props = {"process.roles": "controller", "node.id": str(node_id), "controller.quorum.voters": quorum,
             "listeners": f"CONTROLLER://127.0.0.1:{ports[node_id - 1]}", "controller.listener.names": "CONTROLLER",
             **TIMING}
    props.update(extra)
    return load_config(props)


def broker_config(node_id: int, port: int, controller_ports: list[int], **extra: str):
    quorum = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(controller_ports))
    props = {"process.roles": "broker", "node.id": str(node_id), "controller.quorum.voters": quorum,
             "listeners": f"PLAINTEXT://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER", **TIMING}
    props.update(extra)
    return load_config(props)


def make_broker(node_id: int, port: int, controller_ports: list[int], **extra: str) -> Server:
    return Server(broker_config(node_id, port, controller_ports, **extra), log=MemoryLog(),
                      store=MemoryStateStore(), cluster_id=CLUSTER_ID, directory_id=uuid.uuid4())


class Running:
    """Handles on the running nodes; ``failures`` collects what a node's run() raised."""

    def __init__(self, tg, controllers, controller_ports, brokers, broker_ports):
        self.tg = tg
        self.controllers = controllers
        self.controller_ports = controller_ports
        self.brokers = brokers
        self.broker_ports = broker_ports
        self.failures: dict[int, BaseException] = {}
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.stopped: set[int] = set()

    def active(self):
        return next((n for n in self.controllers
                     if n.voter.controller.controller.active and n.cfg.node_id not in self.stopped), None)

    def broker(self, node_id: int) -> Server:
        return self.brokers[node_id]

    def port(self, node_id: int) -> int:
        return self.broker_ports[node_id]

    async def start(self, node) -> None:
        scope = anyio.CancelScope()
        self.scopes[node.cfg.node_id] = scope

        async def runner(task_status=anyio.TASK_STATUS_IGNORED):
            with scope:
                try:
                    await node.run(task_status=task_status)
                except Exception as e:  # noqa: BLE001 - recorded for the test to inspect
                    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
                        e = e.exceptions[0]
                    self.failures[node.cfg.node_id] = e

        await self.tg.start(runner)

    def stop(self, node_id: int) -> None:
        """Stop a node abruptly (like kill -9: no controlled shutdown)."""
        self.scopes[node_id].cancel()
        self.stopped.add(node_id)


@asynccontextmanager
async def broker_cluster(broker_ids: tuple[int, ...] = (11, 12), controllers: int = 3,
                         controller_extra: dict[str, str] | None = None, **broker_extra: str):
    ports = free_ports(controllers + len(broker_ids))
    cports, bports = ports[:controllers], dict(zip(broker_ids, ports[controllers:], strict=True))
    cnodes = [Server(controller_config(i, cports, **(controller_extra or {})), log=MemoryLog(), store=MemoryStateStore(), cluster_id=CLUSTER_ID,
                   offset_store=MemoryOffsetStore()) for i in range(1, controllers + 1)]
    bnodes = {b: make_broker(b, bports[b], cports, **broker_extra) for b in broker_ids}
    async with anyio.create_task_group() as tg:
        running = Running(tg, cnodes, cports, bnodes, bports)
        for node in cnodes:
            await running.start(node)
        for node in bnodes.values():
            await running.start(node)
        try:
            yield running
        finally:
            tg.cancel_scope.cancel()


async def all_running(c: Running, timeout: float = 20.0) -> None:
    from kraftwire.broker.lifecycle import BrokerState

    ids = set(c.brokers)

    def settled():
        for b in c.brokers.values():
            if b.broker.state != BrokerState.RUNNING or not b.broker.lifecycle.serving:
                return False
            regs = b.broker.metadata.image.brokers
            if any(i not in regs or regs[i].fenced for i in ids):
                return False
        return True

    await wait_for(settled, timeout)
