"""The broker's channel to the controller quorum: which controller is active, and connections to it.

The active controller is the Raft leader, which the broker learns as an observer of the metadata
log (``leader_hint``). Until it is known, or when the hinted node does not answer or says
NOT_CONTROLLER, the channel tries the voters in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyio.abc import TaskGroup

from kraftwire.net.client import Connection, RequestFailed


class ControllerChannel:
    """Connections to the voters on their controller listener, shared by heartbeats and forwarding."""

    def __init__(self, voters: dict[int, tuple[str, int]], leader_hint: Callable[[], int | None], *,
                 client_id: str, connect_timeout_s: float = 2.0) -> None:
        self.voters = dict(voters)
        self.leader_hint = leader_hint
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self._conns: dict[int, Connection] = {}
        self._tg: TaskGroup | None = None
        self._suspects: set[int] = set()
        self._turn = 0

    def attach(self, tg: TaskGroup) -> None:
        self._tg = tg

    def candidate(self) -> int:
        """The controller to try next: the Raft leader unless it failed us lately, else the next voter
        that has not; once every voter has failed, start over."""
        leader = self.leader_hint()
        if leader is not None and leader in self.voters and leader not in self._suspects:
            return leader
        ids = sorted(self.voters)
        for i in range(len(ids)):
            node = ids[(self._turn + i) % len(ids)]
            if node not in self._suspects:
                return node
        self._suspects.clear()
        return leader if leader is not None and leader in self.voters else ids[self._turn % len(ids)]

    def failed(self, node_id: int) -> None:
        """``node_id`` did not answer, or answered NOT_CONTROLLER: look elsewhere next time."""
        self._suspects.add(node_id)
        self._turn += 1

    def succeeded(self, node_id: int) -> None:
        self._suspects.clear()

    async def send(self, node_id: int, body: Any, timeout_s: float) -> Any:
        """Send ``body`` to ``node_id``; raises RequestFailed."""
        conn = self._conns.get(node_id)
        if conn is None:
            if self._tg is None:
                raise RequestFailed("controller channel not started")
            host, port = self.voters[node_id]
            conn = Connection(self._tg, host, port, client_id=self.client_id,
                              connect_timeout_s=min(self.connect_timeout_s, max(0.05, timeout_s)))
            self._conns[node_id] = conn
        return await conn.request(body, None, max(0.01, timeout_s))

    async def close(self) -> None:
        for conn in self._conns.values():
            await conn.close()
        self._conns.clear()
