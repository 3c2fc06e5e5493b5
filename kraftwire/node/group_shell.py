"""Async shell around the sans-I/O GroupCoordinator: parks pending joins/syncs, runs its timers.

Every group has one coordinator node, the same whichever node is asked: the voter at
``hash(group id) % voters`` (``kraftwire.node.group_proxy``). FindCoordinator answers that node; a
group request that reaches another node anyway is relayed to the owner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.group import Completion, Done, GroupCoordinator
from kraftwire.net.peers import PeerClient
from kraftwire.node.group_proxy import FIND_COORDINATOR, LIST_GROUPS, GroupRouter, find_coordinator, owner_of

__all__ = ["GroupShell", "owner_of"]


class GroupShell:
    """Serves group APIs: immediate answers return at once, parked ones when their completion arrives."""

    def __init__(self, coordinator: GroupCoordinator, clock: Callable[[], int], peers: PeerClient,
                 voters: list[tuple[int, str, int]] | None = None) -> None:
        self.coordinator = coordinator
        self.clock = clock
        self.voters = voters or [(coordinator.node_id, coordinator.config.host, coordinator.config.port)]
        self.router = GroupRouter(self.voters, peers, local_id=coordinator.node_id)
        self._parked: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._wake = anyio.Event()

    async def handle(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        if api_key == FIND_COORDINATOR and body.key_type == 0:
            return find_coordinator(version, body, self.router.owner)

        async def local(request: Any) -> Any:
            return await self._local(api_key, version, request, client_id, client_host)

        if api_key in (FIND_COORDINATOR, LIST_GROUPS):  # other key types; ListGroups: the groups held here
            return await local(body)
        return await self.router.route(api_key, version, body, client_id, local)

    async def _local(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        result = self.coordinator.handle(self.clock(), api_key, version, body, client_id, client_host)
        if isinstance(result, Done):
            self._complete(result.completions)
            self._wake.set()
            return result.response
        event = anyio.Event()
        box: list[Any] = []
        self._parked[result.key] = (event, box)
        self._complete(result.completions)
        self._wake.set()
        try:
            await event.wait()
        finally:
            self._parked.pop(result.key, None)
        return box[0]

    def _complete(self, completions: tuple[Completion, ...] | list[Completion]) -> None:
        for c in completions:
            parked = self._parked.pop(c.key, None)
            if parked is not None:  # the client may have gone away; then the answer is dropped
                parked[1].append(c.response)
                parked[0].set()

    async def run_timer(self) -> None:
        self._complete(self.coordinator.tick(self.clock()))
        while True:
            deadline = self.coordinator.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()
            self._complete(self.coordinator.tick(self.clock()))
