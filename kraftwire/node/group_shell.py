"""Async shell around the sans-I/O GroupCoordinator: parks pending joins/syncs, runs its timers.

Two placements (``kraftwire.group.offsets.replication``, docs/groups.md):

* ``raft`` (default): the leader of the voters' offsets quorum (``kraftwire.node.offsets_quorum``)
  coordinates every group; its coordinator writes through Raft and no answer leaves before the records
  it depends on are committed (``durable``). Other voters answer NOT_COORDINATOR and name the leader
  in FindCoordinator; brokers relay to it.
* ``local``: every group has one coordinator node, the voter at ``hash(group id) % voters``
  (``kraftwire.node.group_proxy``), with the offsets in its local file; a group request that reaches
  another node is relayed to the owner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from kraftwire.group import Completion, Done, GroupCoordinator
from kraftwire.group.replicated import IMPORT_CLIENT_ID, import_request_records
from kraftwire.net.peers import PeerClient
from kraftwire.node.group_proxy import (
    FIND_COORDINATOR,
    LIST_GROUPS,
    NOT_COORDINATOR,
    OFFSET_COMMIT,
    GroupRouter,
    error_response,
    find_coordinator,
    owner_of,
)
from kraftwire.protocol.messages.list_groups_response import ListGroupsResponse

__all__ = ["GroupShell", "owner_of"]

Durable = Callable[[int], Awaitable[bool]]


class GroupShell:
    """Serves group APIs: immediate answers return at once, parked ones when their completion arrives.

    ``coordinator`` is None on a node that does not coordinate groups now (raft placement, not the
    leader); ``leader`` then names the coordinating voter and ``durable(offset)`` waits until the
    offsets log committed ``offset`` (False: leadership was lost first).
    """

    def __init__(self, coordinator: GroupCoordinator | None, clock: Callable[[], int], peers: PeerClient,
                 voters: list[tuple[int, str, int]] | None = None, *, node_id: int | None = None,
                 leader: Callable[[], int | None] | None = None, durable: Durable | None = None) -> None:
        self.coordinator = coordinator
        self.clock = clock
        self.node_id = coordinator.node_id if coordinator is not None else node_id
        if voters is None:
            assert coordinator is not None
            voters = [(coordinator.node_id, coordinator.config.host, coordinator.config.port)]
        self.voters = voters
        self.replicated = leader is not None
        self.durable = durable
        self.router = GroupRouter(self.voters, peers, local_id=self.node_id, leader=leader)
        self._parked: dict[int, tuple[anyio.Event, list[Any], tuple[int, int, Any]]] = {}
        self._wake = anyio.Event()

    # -- coordinator hand-over (raft placement) --------------------------------------------------
    def activate(self, coordinator: GroupCoordinator) -> None:
        """This node now coordinates the groups with ``coordinator`` (built from the committed state)."""
        self.deactivate()
        self.coordinator = coordinator
        self._wake.set()

    def deactivate(self) -> None:
        """Stop coordinating: parked requests are answered NOT_COORDINATOR (clients find the new one)."""
        coordinator, self.coordinator = self.coordinator, None
        if coordinator is not None:
            coordinator.close()
        for key in list(self._parked):
            self._fail(key)

    # -- requests ----------------------------------------------------------------------------------
    async def handle(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        if api_key == FIND_COORDINATOR:   # every key type: groups where the router says, others refused
            return find_coordinator(version, body, self.router.owner)

        async def local(request: Any) -> Any:
            return await self._local(api_key, version, request, client_id, client_host)

        if self.replicated or api_key == LIST_GROUPS:
            # raft placement: answered here (NOT_COORDINATOR off the leader); ListGroups: groups held here
            return await local(body)
        return await self.router.route(api_key, version, body, client_id, local)

    async def _local(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        coordinator = self.coordinator
        if coordinator is None:
            if api_key == LIST_GROUPS:
                return ListGroupsResponse()   # a voter that coordinates nothing lists nothing
            return error_response(api_key, version, body, NOT_COORDINATOR)
        if api_key == OFFSET_COMMIT and client_id == IMPORT_CLIENT_ID and self.replicated:
            return await self._import(coordinator, version, body)
        result = coordinator.handle(self.clock(), api_key, version, body, client_id, client_host)
        if isinstance(result, Done):
            ok = await self._settle(coordinator, result.completions)
            return result.response if ok else error_response(api_key, version, body, NOT_COORDINATOR)
        event = anyio.Event()
        box: list[Any] = []
        self._parked[result.key] = (event, box, (api_key, version, body))
        try:
            await self._settle(coordinator, result.completions)
            await event.wait()
        finally:
            self._parked.pop(result.key, None)
        return box[0]

    async def _import(self, coordinator: GroupCoordinator, version: int, body: Any) -> Any:
        """A voter's legacy offsets relayed during an upgrade: adopted where no commit exists yet."""
        try:
            coordinator.import_records(import_request_records(body, self.clock()), self.clock())
        except OSError:
            return error_response(OFFSET_COMMIT, version, body, NOT_COORDINATOR)
        ok = await self._settle(coordinator, ())
        return error_response(OFFSET_COMMIT, version, body, 0 if ok else NOT_COORDINATOR)

    async def _settle(self, coordinator: GroupCoordinator, completions: Any) -> bool:
        """Deliver ``completions`` once everything the coordinator wrote so far is committed (raft
        placement) -- reads included, so no client sees an offset that could still be lost."""
        self._wake.set()
        ok = True
        last = getattr(coordinator.store, "last_offset", -1)
        if self.durable is not None and last >= 0:
            ok = await self.durable(last) and self.coordinator is coordinator
        for c in completions:
            if ok:
                self._complete_one(c)
            else:
                self._fail(c.key)
        return ok

    def _complete_one(self, c: Completion) -> None:
        parked = self._parked.pop(c.key, None)
        if parked is not None:  # the client may have gone away; then the answer is dropped
            parked[1].append(c.response)
            parked[0].set()

    def _fail(self, key: int) -> None:
        parked = self._parked.pop(key, None)
        if parked is not None:
            api_key, version, body = parked[2]
            parked[1].append(error_response(api_key, version, body, NOT_COORDINATOR))
            parked[0].set()

    async def run_timer(self) -> None:
        while True:
            coordinator = self.coordinator
            if coordinator is not None:
                await self._settle(coordinator, coordinator.tick(self.clock()))
            deadline = None if coordinator is None else coordinator.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()
