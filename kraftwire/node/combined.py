"""A combined node (``process.roles=broker,controller``, the layout of Kafka's example server.properties).

As in Kafka, one process runs both roles over one replica of ``__cluster_metadata``: the controller
half is a voter serving the controller listeners (Raft, controller APIs, groups), the broker half
serves the other listeners, registers with the active controller (possibly itself), heartbeats and
forwards admin writes. Each half replays the committed log into its own image.
"""

from __future__ import annotations

from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.node.broker_node import BrokerNode
from kraftwire.node.node import Node


class CombinedNode:
    """Controller and broker roles in one process."""

    def __init__(self, cfg: NodeConfig, **storage: Any) -> None:
        names = set(cfg["controller.listener.names"])
        self.cfg = cfg
        self.controller_node = Node(cfg, serve=[e for e in cfg.listeners if e.name in names], **storage)
        self.broker = BrokerNode(cfg, voter=self.controller_node)
        self.bound: dict[str, tuple[str, int]] = {}

    @property
    def core(self) -> Any:
        return self.controller_node.core

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve both roles until cancelled or until either stops; ``task_status`` gets every bound listener."""
        async with anyio.create_task_group() as tg:
            self.bound.update(await tg.start(self.controller_node.run))
            self.bound.update(await tg.start(self.broker.run))
            task_status.started(dict(self.bound))

    async def shutdown(self) -> None:
        """The broker's controlled shutdown first (its leaderships move away), then the voter resigns."""
        await self.broker.shutdown()
        await self.controller_node.shutdown()
