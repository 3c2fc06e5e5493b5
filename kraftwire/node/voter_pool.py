"""Pooled client connections to the voters, one request in flight per connection.

A kraftwire server answers the requests of one connection in order, one at a time (as Kafka does), so
requests relayed for many clients over a single shared connection would queue behind each other: a
JoinGroup parked for a rebalance would hold up the very SyncGroup or JoinGroup that completes it.
``VoterPool`` lends each relayed request a connection of its own, keeps a few idle ones for reuse
and closes the rest, so relaying behaves like the clients' own connections.
"""

from __future__ import annotations

import logging
from typing import Any

from anyio.abc import TaskGroup

from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import DecodeError, KafkaProtocolError

log = logging.getLogger(__name__)


class VoterPool:
    """Connections to voters ``{node id: (host, port)}`` for relayed client requests."""

    def __init__(self, voters: dict[int, tuple[str, int]], *, connect_timeout_s: float = 2.0,
                 max_idle: int = 8) -> None:
        self.voters = dict(voters)
        self.connect_timeout_s = connect_timeout_s
        self.max_idle = max_idle
        self._idle: dict[int, list[Connection]] = {}
        self._tg: TaskGroup | None = None
        self.opened = 0  # connections opened so far (tests and logs)

    def attach(self, tg: TaskGroup) -> None:
        self._tg = tg

    async def request(self, node_id: int, body: Any, version: int, timeout_s: float, client_id: str) -> Any:
        """Send ``body`` at ``version`` to voter ``node_id`` under the client's ``client_id``; raises
        RequestFailed (unknown voter, no connection, timeout, unreadable answer)."""
        conn = self._take(node_id)
        conn.client_id = client_id or "kraftwire-relay"
        done = False
        try:
            resp = await conn.request(body, version, timeout_s)
            done = True
            return resp
        except (DecodeError, KafkaProtocolError) as e:
            raise RequestFailed(f"relaying API {body.API_KEY} to node {node_id}: {e}") from e
        finally:
            if done:
                self._give_back(node_id, conn)
            else:  # failed or cancelled mid-request: the connection's state is unknown
                await conn.close()

    def _take(self, node_id: int) -> Connection:
        idle = self._idle.get(node_id)
        if idle:
            return idle.pop()
        addr = self.voters.get(node_id)
        if addr is None or self._tg is None:
            raise RequestFailed(f"no connection to node {node_id}")
        self.opened += 1
        return Connection(self._tg, addr[0], addr[1], client_id="kraftwire-relay",
                          connect_timeout_s=self.connect_timeout_s)

    def _give_back(self, node_id: int, conn: Connection) -> None:
        idle = self._idle.setdefault(node_id, [])
        if len(idle) < self.max_idle and node_id in self.voters:
            idle.append(conn)
        elif self._tg is not None:
            self._tg.start_soon(conn.close)

    async def close(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                await conn.close()
        self._idle.clear()
