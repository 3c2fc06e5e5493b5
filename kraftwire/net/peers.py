"""A node's one client to the other nodes of its quorum: connections by node id, leader hints, security.

Every request a node sends to a voter goes through ``PeerClient``: Raft's own requests, a broker's
heartbeats and forwarded Envelopes, a controller's registration, relayed group requests and
DescribeQuorum. Two kinds of connection serve them:

- a *lane* (``send``, ``connect``) is one long-lived multiplexed connection per peer and purpose
  (``"raft"``, ``"heartbeats"``, ``"forwarding"``): a controller answers one connection's requests
  in order, so purposes that must not wait behind each other (a parked Raft Fetch long-poll, a
  heartbeat, an admin write) get lanes of their own;
- a *relay* (``relay``) lends each request a pooled connection of its own, one request in flight,
  keeping a few idle ones: a JoinGroup parked for a rebalance must not hold up the SyncGroup that
  completes it.

Security is explicit (the node's inter-node ``ClientSecurity``, or None for PLAINTEXT), and every
connection exchanges ApiVersions before its first request, so the version of each request is
chosen from the peer's answer. ``candidate``/``failed``/``succeeded`` track which voter to ask for
the active controller: the Raft leader (``leader_hint``) unless it failed lately, else each other
voter in turn. Every failure (no connection, timeout, unreadable answer) raises ``RequestFailed``.

Every connection it opens (lanes, relays, and one-off ones from ``open_address``) shares one
``ReconnectBackoff``: a peer that refused us is not dialled again before its backoff ends
(``reconnect.backoff.ms`` doubling up to ``reconnect.backoff.max.ms``); a request for it fails at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from anyio.abc import TaskGroup

from kraftwire.net.backoff import ReconnectBackoff
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import DecodeError, KafkaProtocolError
from kraftwire.security.settings import ClientSecurity

log = logging.getLogger(__name__)

Address = tuple[str, int]


class PeerClient:
    """Connections from this node to peers ``{node id: (host, port)}``; ``attach`` a task group first."""

    def __init__(self, peers: dict[int, Address], *, security: ClientSecurity | None, client_id: str,
                 connect_timeout_s: float = 2.0, leader_hint: Callable[[], int | None] | None = None,
                 max_idle: int = 8, backoff: ReconnectBackoff | None = None) -> None:
        self.peers = dict(peers)
        self.backoff = backoff if backoff is not None else ReconnectBackoff()
        self.security = security
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.leader_hint = leader_hint or (lambda: None)
        self.max_idle = max_idle
        self.opened = 0   # relay connections opened so far (tests and logs)
        self._lanes: dict[tuple[int, str], Connection] = {}
        self._idle: dict[int, list[Connection]] = {}
        self._tg: TaskGroup | None = None
        self._suspects: set[int] = set()
        self._turn = 0

    def attach(self, tg: TaskGroup) -> None:
        """The task group the connections' reader tasks run in (the node's, for its whole life)."""
        self._tg = tg

    @property
    def attached(self) -> bool:
        return self._tg is not None

    def set_peers(self, peers: dict[int, Address]) -> None:
        """Replace the address table (a broker that discovered the voters at start)."""
        self.peers = dict(peers)

    def _open(self, node_id: int, client_id: str, connect_timeout_s: float) -> Connection:
        addr = self.peers.get(node_id)
        if addr is None:
            raise RequestFailed(f"no connection to node {node_id}")
        return self.open_address(addr, client_id, connect_timeout_s)

    def open_address(self, addr: Address, client_id: str, connect_timeout_s: float, *,
                     negotiate: bool = True) -> Connection:
        """A new (unconnected) connection to ``addr`` with this node's security and reconnect backoff;
        the caller closes it."""
        if self._tg is None:
            raise RequestFailed(f"no connection to {addr[0]}:{addr[1]}: the peer client is not attached")
        return Connection(self._tg, addr[0], addr[1], client_id=client_id, connect_timeout_s=connect_timeout_s,
                          negotiate=negotiate, security=self.security, backoff=self.backoff.for_address(*addr))

    # -- lanes: one multiplexed connection per peer and purpose ---------------------------------
    async def connect(self, node_id: int, lane: str, timeout_s: float | None = None) -> Connection:
        """The lane's connection to ``node_id``, connected and with the peer's API versions known."""
        conn = self._lanes.get((node_id, lane))
        if conn is None:
            limit = self.connect_timeout_s if timeout_s is None else min(self.connect_timeout_s, max(0.05, timeout_s))
            conn = self._open(node_id, f"{self.client_id}-{lane}", limit)
            self._lanes[(node_id, lane)] = conn
        await conn.connect()
        return conn

    async def send(self, node_id: int, body: Any, timeout_s: float, *, lane: str, version: int | None = None) -> Any:
        """Send ``body`` (at the highest version both sides support unless ``version``) on a lane."""
        try:
            conn = await self.connect(node_id, lane, timeout_s)
            return await conn.request(body, version, max(0.01, timeout_s))
        except (DecodeError, KafkaProtocolError) as e:
            raise RequestFailed(f"API {body.API_KEY} to node {node_id}: {e}") from e

    # -- relays: one request in flight per pooled connection ------------------------------------
    async def relay(self, node_id: int, body: Any, version: int, timeout_s: float, client_id: str) -> Any:
        """Send ``body`` at ``version`` to ``node_id`` under a client's ``client_id`` on a connection of its own."""
        idle = self._idle.get(node_id)
        if idle:
            conn = idle.pop()
        else:
            conn = self._open(node_id, "kraftwire-relay", self.connect_timeout_s)
            self.opened += 1
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

    def _give_back(self, node_id: int, conn: Connection) -> None:
        idle = self._idle.setdefault(node_id, [])
        if len(idle) < self.max_idle and node_id in self.peers:
            idle.append(conn)
        elif self._tg is not None:
            self._tg.start_soon(conn.close)

    # -- which voter is the active controller ---------------------------------------------------
    def candidate(self) -> int:
        """The controller to try next: the Raft leader unless it failed us lately, else the next voter
        that has not; once every voter has failed, start over."""
        leader = self.leader_hint()
        if leader is not None and leader in self.peers and leader not in self._suspects:
            return leader
        ids = sorted(self.peers)
        for i in range(len(ids)):
            node = ids[(self._turn + i) % len(ids)]
            if node not in self._suspects:
                return node
        self._suspects.clear()
        return leader if leader is not None and leader in self.peers else ids[self._turn % len(ids)]

    def failed(self, node_id: int) -> None:
        """``node_id`` did not answer, or answered NOT_CONTROLLER: look elsewhere next time."""
        self._suspects.add(node_id)
        self._turn += 1

    def succeeded(self, node_id: int) -> None:
        self._suspects.clear()

    async def close(self) -> None:
        conns = list(self._lanes.values()) + [c for idle in self._idle.values() for c in idle]
        self._lanes.clear()
        self._idle.clear()
        for conn in conns:
            await conn.close()
