"""Async shell of the group role on a voter: routes the group requests its door relays (``Relay`` GROUP) to
the node that coordinates the group.

Two placements (``kraftwire.group.offsets.replication``, docs/groups.md):

* ``raft`` (default): the leader of the voters' offsets quorum (``kraftwire.node.offsets_quorum``)
  coordinates every group; its coordinator writes through Raft and no answer leaves before the records
  it depends on are committed (``core/group_role.py``). Other voters answer NOT_COORDINATOR and name the leader
  in FindCoordinator; brokers relay to it.
* ``local``: every group has one coordinator node, the voter at ``hash(group id) % voters``
  (``kraftwire.node.group_proxy``), with the offsets in its local file; a group request that reaches
  another node is relayed to the owner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from kraftwire.core import GroupRole
from kraftwire.group.placement import owner_of
from kraftwire.net.peers import PeerClient
from kraftwire.node.group_proxy import GroupRouter
from kraftwire.protocol.api import ApiKey

__all__ = ["GroupShell", "owner_of"]

Submit = Callable[[int, int, Any, str, str], Awaitable[Any]]


class GroupShell:
    """Serves group APIs through a ``GroupRole`` (``kraftwire.core.group_role``).

    ``replicated`` (raft placement) is the offsets quorum's ``submit``: its node core runs ``role``
    beside the quorum's Raft core and ticks it; ``leader`` names the coordinating voter. Without it
    (local placement) ``role`` holds the local coordinator and this shell drives it: each request's
    answer callback becomes an awaitable, and a timer task runs the coordinator's timers.
    """

    def __init__(self, role: GroupRole, clock: Callable[[], int], peers: PeerClient | None,
                 voters: list[tuple[int, str, int]], *, node_id: int, replicated: Submit | None = None,
                 leader: Callable[[], int | None] | None = None) -> None:
        self.role = role
        self.clock = clock
        self.node_id = node_id
        self.voters = voters
        self.replicated = replicated
        if replicated is None:
            role.clock = clock
        self.router = GroupRouter(self.voters, peers, local_id=self.node_id, leader=leader)
        self._wake = anyio.Event()

    @property
    def coordinator(self) -> Any:
        """The coordinator this node runs now (None: raft placement, not the offsets quorum's leader)."""
        return self.role.coordinator

    # -- requests ----------------------------------------------------------------------------------
    async def route(self, api_key: int, version: int, body: Any, client_id: str, client_host: str = "") -> Any:
        """The answer to a group request the voter's door relays (``Relay`` GROUP; FindCoordinator the door
        answers itself, from ``router.owner``)."""
        submit = self.replicated or self._submit_local

        async def local(request: Any) -> Any:
            return await submit(api_key, version, request, client_id, client_host)

        if self.replicated is not None or api_key == ApiKey.LIST_GROUPS:
            # raft placement: answered here (NOT_COORDINATOR off the leader); ListGroups: groups held here
            return await local(body)
        return await self.router.route(api_key, version, body, client_id, local=local)

    async def _submit_local(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        box: list[Any] = []
        done = anyio.Event()

        def answer(response: Any) -> None:
            box.append(response)
            done.set()

        self.role.submit(api_key, version, body, client_id, client_host, answer)
        self._wake.set()   # the coordinator's deadlines may have moved
        if not box:
            await done.wait()
        return box[0]

    async def run_timer(self) -> None:
        """The local coordinator's timers (the raft placement's run in the offsets quorum's node core)."""
        if self.replicated is not None:
            return
        while True:
            self.role.tick()
            deadline = self.role.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()
