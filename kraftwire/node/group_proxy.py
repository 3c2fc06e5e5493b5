"""Where each consumer group lives, and relaying group requests to that voter.

Every group has exactly one coordinator in a kraftwire cluster, the same whichever node is asked: the
voter at ``hash(group id) % voters`` (Kafka places a group on a ``__consumer_offsets`` partition the
same way). Its state and committed offsets are kept by that voter only.

``GroupRouter`` serves group requests on a node that does not hold the group: always on a broker,
and on a voter when a client sends a group request to it anyway. It sends the request to the owner
over a relay connection of its own (``PeerClient.relay``) (a parked JoinGroup must not block other members), under
the client's own client id, and relays the answer. Requests naming several groups (DescribeGroups,
OffsetFetch v8+) are split by owner and the answers merged in the request's order; ListGroups on a
broker asks every voter. When the owner cannot be reached the client gets COORDINATOR_NOT_AVAILABLE,
on which Kafka clients look the coordinator up again and retry.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kraftwire.group.placement import KEY_TYPE_GROUP, CoordinatorLookup, Voter, coordinating_voter, errors_in
from kraftwire.group.responses import error_response
from kraftwire.net.client import RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_groups_response as dgr
from kraftwire.protocol.messages import offset_fetch_response as ofr
from kraftwire.protocol.messages.list_groups_response import ListGroupsResponse
from kraftwire.protocol.runtime import replace

log = logging.getLogger(__name__)

__all__ = ["GroupRouter", "errors_in", "group_key"]

UNAVAILABLE = int(Errors.COORDINATOR_NOT_AVAILABLE)
NOT_COORDINATOR = int(Errors.NOT_COORDINATOR)
# A follower's SyncGroup may wait for the leader's assignment up to the rebalance timeout, which the
# request does not carry: allow Kafka's default max.poll.interval.ms (5 min) and a margin.
SYNC_WAIT_S = 330.0
REQUEST_WAIT_S = 30.0

Local = Callable[[Any], Awaitable[Any]]


def group_key(api_key: int, version: int, body: Any) -> str | None:
    """The group a request addresses (the first one for multi-group requests), None if none."""
    if hasattr(body, "group_id") and not (api_key == ApiKey.OFFSET_FETCH and version >= 8):
        return body.group_id
    groups = getattr(body, "groups", None)
    if groups:
        first = groups[0]
        return first if isinstance(first, str) else first.group_id
    return None


def _timeout_s(api_key: int, version: int, body: Any) -> float:
    if api_key == ApiKey.JOIN_GROUP:
        rebalance = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        return max(rebalance, body.session_timeout_ms, 0) / 1000 + REQUEST_WAIT_S
    return SYNC_WAIT_S if api_key == ApiKey.SYNC_GROUP else REQUEST_WAIT_S


class GroupRouter:
    """Sends group requests to the voters that own their groups; ``local_id`` is this node's id if it
    is a voter (its own groups are served by the ``local`` callable passed to ``route``).

    Placements: ``hash`` (``owner_of``) unless ``replicated``, when one voter -- the leader of the
    offsets quorum -- coordinates every group. A voter passes ``leader`` (its offsets core knows it);
    a broker (``replicated=True``) asks the voters with FindCoordinator and caches the answer until a
    relayed answer says the coordinator moved or the voter cannot be reached.
    """

    def __init__(self, voters: list[Voter], peers: PeerClient, local_id: int | None = None, *,
                 leader: Callable[[], int | None] | None = None, replicated: bool = False) -> None:
        self.voters = sorted(voters)
        self.peers = peers
        self.local_id = local_id
        self.leader = leader
        self.replicated = replicated or leader is not None
        self.lookup = CoordinatorLookup()   # a broker's cached answer (raft placement)

    @property
    def coordinator_id(self) -> int | None:
        return self.lookup.coordinator_id

    def set_voters(self, voters: list[Voter]) -> None:
        self.voters = sorted(voters)

    def owner(self, group_id: str) -> Voter | None:
        """The voter coordinating ``group_id`` as far as this node knows (None: unknown now)."""
        node = self.leader() if self.leader is not None else self.coordinator_id
        return coordinating_voter(group_id, self.voters, replicated=self.replicated, leader_id=node)

    async def _owner_id(self, group_id: str) -> int | None:
        if self.replicated and self.leader is None and self.coordinator_id is None:
            await self._discover()
        owner = self.owner(group_id)
        return None if owner is None else owner[0]

    async def _discover(self) -> None:
        """Ask the voters in turn which of them coordinates the groups (FindCoordinator v3)."""
        from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest

        ids = [v[0] for v in self.voters]
        for node_id in self.lookup.probes(ids):
            try:
                resp = await self.peers.relay(node_id, FindCoordinatorRequest(key="", key_type=KEY_TYPE_GROUP), 3,
                                              REQUEST_WAIT_S / 6, "kraftwire-find-coordinator")
            except RequestFailed as e:
                log.debug("voter %d did not say who coordinates groups: %s", node_id, e)
                continue
            if self.lookup.found(ids, node_id, resp):
                return
        self.lookup.none_found()

    async def route(self, api_key: int, version: int, body: Any, client_id: str, client_host: str = "", *,
                    local: Local | None = None) -> Any:
        """The answer to a group request (not FindCoordinator); groups owned here go to ``local`` (the owner
        sees the relaying node's address, not ``client_host``)."""
        if api_key == ApiKey.LIST_GROUPS:
            return await self.list_groups(version, body, client_id, local)
        if api_key == ApiKey.DESCRIBE_GROUPS:
            found = await self._split(api_key, version, body, client_id, local, lambda g: g)
            return dgr.DescribeGroupsResponse(groups=found)
        if api_key == ApiKey.OFFSET_FETCH and version >= 8:
            found = await self._split(api_key, version, body, client_id, local, lambda g: g.group_id)
            return ofr.OffsetFetchResponse(groups=found)
        owner = await self._owner_id(group_key(api_key, version, body) or "")
        if owner is None:
            return error_response(api_key, version, body)
        return await self._send(owner, api_key, version, body, client_id, local)

    async def list_groups(self, version: int, body: Any, client_id: str, local: Local | None = None) -> Any:
        """ListGroups over every voter: each lists the groups it coordinates (no group is listed twice)."""
        groups: list[Any] = []
        error = 0
        for node_id, _, _ in self.voters:
            resp = await self._send(node_id, ApiKey.LIST_GROUPS, version, body, client_id, local)
            error = error or resp.error_code
            groups.extend(resp.groups)
        return ListGroupsResponse(error_code=error, groups=sorted(groups, key=lambda g: g.group_id))

    async def _split(self, api_key: int, version: int, body: Any, client_id: str, local: Local | None,
                     group_of: Callable[[Any], str]) -> list[Any]:
        """Send each owner the entries of ``body.groups`` it owns; the answers' entries in request order."""
        owners: dict[int | None, list[Any]] = {}
        for entry in body.groups:
            owners.setdefault(await self._owner_id(group_of(entry)), []).append(entry)
        by_group: dict[str, Any] = {}
        for node_id, mine in owners.items():
            part = replace(body, groups=mine)
            if node_id is None:
                resp = error_response(api_key, version, part)
            else:
                resp = await self._send(node_id, api_key, version, part, client_id, local)
            by_group.update((g.group_id, g) for g in resp.groups)
        return [by_group[group_of(e)] for e in body.groups if group_of(e) in by_group]

    async def _send(self, node_id: int, api_key: int, version: int, body: Any, client_id: str,
                    local: Local | None) -> Any:
        if node_id == self.local_id and local is not None:
            return await local(body)
        try:
            resp = await self.peers.relay(node_id, body, version, _timeout_s(api_key, version, body), client_id)
        except RequestFailed as e:
            log.info("group coordinator %d unreachable for API %d: %s", node_id, api_key, e)
            self.lookup.unreachable(node_id)
            return error_response(api_key, version, body)
        self.lookup.answered(node_id, api_key, resp)   # the offsets quorum's leader moved: look it up again next time
        return resp
