"""A sans-I/O classic consumer-group coordinator (Kafka's pre-KIP-848 ``GroupCoordinator``).

No sockets, clocks or tasks: the caller passes the time and the decoded request body, and gets back the
response body to encode -- now, or later.

API
---
``GroupCoordinator(node_id, store, config=GroupConfig())``
    Loads committed offsets and group generations from ``store`` (:mod:`kraftwire.group.store`).

Request handlers, all ``(now, request, version, client_id="", client_host="") -> Result``:
    ``handle_find_coordinator`` (10), ``handle_join`` (11), ``handle_heartbeat`` (12),
    ``handle_leave`` (13), ``handle_sync`` (14), ``handle_offset_commit`` (8), ``handle_offset_fetch`` (9),
    ``handle_list_groups`` (16), ``handle_describe_groups`` (15); or ``handle(now, api_key, version,
    request, client_id, client_host)`` for any key in :data:`GROUP_APIS`. ``request`` is the generated
    ``...Request`` dataclass decoded at ``version``; every response is the matching generated
    ``...Response`` and encodes at ``version``.

``Result = Done | Pending``
    ``Done(response, completions)``: answer this request with ``response`` now.
    ``Pending(key, completions)``: the request is parked (JoinGroup until the rebalance completes,
    SyncGroup of a follower until the leader's assignment arrives); its answer will come back as a
    :class:`Completion` with this ``key`` from a later call.
    Both carry ``completions``: answers to *other* parked requests that this call completed (the last
    member's JoinGroup completes everyone's; the leader's SyncGroup completes the followers').

``Completion(key, response)``
    The answer to the request parked under ``key``. Every parked request gets exactly one completion,
    unless the coordinator is dropped. A shell that stopped waiting (client disconnected) just ignores it.

``tick(now) -> list[Completion]``
    Runs every timer due at ``now`` (initial join delay, rebalance timeout, session expiry, pending-member
    and pending-sync expiry, offset retention). ``next_deadline() -> int | None`` is the earliest time
    ``tick`` has work (None: nothing scheduled). Handlers also run due timers, before and after the
    request, so they may return completions of timers too.

Driving it: keep one coordinator per node; call it from one task (it is not thread-safe); after every
call deliver ``completions`` to the waiters registered under their keys, re-read ``next_deadline()`` and
sleep until then (or until the next request) before calling ``tick``. ``now`` is wall-clock epoch
milliseconds (it also stamps commits and drives offset retention), never decreasing.

Durability: ``handle_offset_commit`` appends the offsets to the store with ``sync=True`` (fsync) before
returning ``Done``; a failed write answers COORDINATOR_NOT_AVAILABLE and changes nothing. The store is
the only I/O this class performs.

This node is the coordinator of every group, so NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS are never
returned; FindCoordinator answers ``(node_id, config.host, config.port)`` for groups.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kraftwire.group.config import GroupConfig
from kraftwire.group.placement import find_coordinator
from kraftwire.group.responses import (
    heartbeat_response,
    join_response,
    leave_response,
    sync_response,
)
from kraftwire.group.state import Group, GroupState, Member, Waiter, new_member_id
from kraftwire.group.store import (
    GroupRecord,
    GroupTombstone,
    OffsetRecord,
    OffsetStore,
    OffsetTombstone,
    StoreRecord,
)
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_groups_request import DescribeGroupsRequest
from kraftwire.protocol.messages.describe_groups_response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.join_group_request import JoinGroupRequest
from kraftwire.protocol.messages.leave_group_request import LeaveGroupRequest, MemberIdentity
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest
from kraftwire.protocol.messages.list_groups_response import ListedGroup, ListGroupsResponse
from kraftwire.protocol.messages.offset_commit_request import OffsetCommitRequest
from kraftwire.protocol.messages.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kraftwire.protocol.messages.offset_fetch_request import OffsetFetchRequest
from kraftwire.protocol.messages.offset_fetch_response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from kraftwire.protocol.messages.sync_group_request import SyncGroupRequest

log = logging.getLogger(__name__)

# API key -> (min, max) version served; merge into the node's ApiVersions table.
GROUP_APIS: dict[int, tuple[int, int]] = {
    ApiKey.OFFSET_COMMIT: (0, 10),   # v10: topic ids
    ApiKey.OFFSET_FETCH: (0, 10),    # v10: topic ids
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
}

GROUP_TYPE_CLASSIC = "classic"
# READ, DELETE and DESCRIBE (AclOperation codes 3, 6, 8): what DescribeGroups reports when asked.
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
_MAX_TIMER_ROUNDS = 64


@dataclass(frozen=True, slots=True)
class Completion:
    """The answer to the request parked under ``key``."""

    key: int
    response: Any


@dataclass(frozen=True, slots=True)
class Done:
    """Answer this request with ``response`` now; ``completions`` answer other parked requests."""

    response: Any
    completions: tuple[Completion, ...] = ()


@dataclass(frozen=True, slots=True)
class Pending:
    """This request is parked under ``key``; ``completions`` answer other parked requests."""

    key: int
    completions: tuple[Completion, ...] = ()


Result = Done | Pending


class GroupCoordinator:
    """Classic consumer groups and committed offsets for one node (see the module docstring)."""

    def __init__(self, node_id: int, store: OffsetStore, config: GroupConfig | None = None) -> None:
        self.node_id = node_id
        self.store = store
        self.config = config or GroupConfig()
        self.groups: dict[str, Group] = {}  # read-only for callers
        self._offsets: dict[str, dict[tuple[str, int], OffsetRecord]] = {}
        self._keys = itertools.count(1)
        self._out: list[Completion] = []
        self._next_retention_check: int | None = None
        self._load()

    def _load(self) -> None:
        state = self.store.load()
        for rec in state.groups.values():
            self.groups[rec.group_id] = Group(
                rec.group_id, generation=rec.generation, protocol_type=rec.protocol_type or None,
                state_timestamp=rec.state_timestamp)
        for rec in state.offsets.values():
            self._offsets.setdefault(rec.group_id, {})[(rec.topic, rec.partition)] = rec
            if rec.group_id not in self.groups:
                self.groups[rec.group_id] = Group(rec.group_id, state_timestamp=rec.commit_timestamp)

    # ------------------------------------------------------------------------------------------
    # Public driving API

    def handle(self, now: int, api_key: int, version: int, request: Any, client_id: str = "",
               client_host: str = "") -> Result:
        """Dispatch by API key (one of :data:`GROUP_APIS`)."""
        handler = {
            8: self.handle_offset_commit, 9: self.handle_offset_fetch, 10: self.handle_find_coordinator,
            11: self.handle_join, 12: self.handle_heartbeat, 13: self.handle_leave, 14: self.handle_sync,
            15: self.handle_describe_groups, 16: self.handle_list_groups,
        }.get(api_key)
        if handler is None:
            raise ValueError(f"API key {api_key} is not a group API")
        return handler(now, request, version, client_id, client_host)

    def tick(self, now: int) -> list[Completion]:
        """Run the timers due at ``now``; returns the parked requests they completed."""
        self._out = []
        self._advance(now)
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> int | None:
        """The earliest time at which :meth:`tick` has something to do, or None."""
        best = self._next_retention_check
        for d in self._deadlines():
            if best is None or d < best:
                best = d
        return best

    def close(self) -> None:
        self.store.close()

    def import_records(self, records: Sequence[StoreRecord], now: int) -> int:
        """Adopt offsets (and group generations) from elsewhere -- an upgrade's legacy offsets file --
        without overwriting: only partitions without a commit and unknown groups. Returns how many were
        stored; raises ``OSError`` if the store refused them (nothing changes then)."""
        todo: list[StoreRecord] = []
        for r in records:
            if isinstance(r, OffsetRecord):
                if (r.topic, r.partition) not in self._offsets.get(r.group_id, {}):
                    todo.append(r)
            elif isinstance(r, GroupRecord) and r.group_id not in self.groups:
                todo.append(r)
        if not todo:
            return 0
        self.store.append(todo, sync=True)
        for r in todo:
            if isinstance(r, GroupRecord):
                self.groups[r.group_id] = Group(r.group_id, generation=r.generation,
                                                protocol_type=r.protocol_type or None,
                                                state_timestamp=r.state_timestamp)
        for r in todo:
            if isinstance(r, OffsetRecord):
                self._offsets.setdefault(r.group_id, {})[(r.topic, r.partition)] = r
                if r.group_id not in self.groups:
                    self.groups[r.group_id] = Group(r.group_id, state_timestamp=now)
        return len(todo)

    # ------------------------------------------------------------------------------------------
    # Plumbing

    def _begin(self, now: int) -> None:
        self._out = []
        self._advance(now)

    def _finish(self, now: int, answer: Any) -> Result:
        """``answer`` is a response body or the :class:`Waiter` of the parked request."""
        self._advance(now)
        out, self._out = self._out, []
        if isinstance(answer, Waiter):
            for i, c in enumerate(out):
                if c.key == answer.key:
                    del out[i]
                    return Done(c.response, tuple(out))
            return Pending(answer.key, tuple(out))
        return Done(answer, tuple(out))

    def _waiter(self, version: int) -> Waiter:
        return Waiter(next(self._keys), version)

    def _complete(self, waiter: Waiter, response: Any) -> None:
        self._out.append(Completion(waiter.key, response))

    def _deadlines(self) -> Iterator[int]:
        for g in self.groups.values():
            if g.join_deadline is not None:
                yield g.join_deadline
            if g.sync_deadline is not None:
                yield g.sync_deadline
            yield from g.pending_members.values()
            for m in g.members.values():
                if m.heartbeat_deadline is not None:
                    yield m.heartbeat_deadline

    def _advance(self, now: int) -> None:
        if self._next_retention_check is None:
            self._next_retention_check = now + self.config.offsets_retention_check_interval_ms
        for _ in range(_MAX_TIMER_ROUNDS):
            if not self._run_due(now):
                return
        log.warning("group timers still due after %d rounds at %d", _MAX_TIMER_ROUNDS, now)

    def _run_due(self, now: int) -> bool:
        fired = False
        for group in list(self.groups.values()):
            for mid, deadline in list(group.pending_members.items()):
                if deadline <= now and mid in group.pending_members:
                    fired = True
                    del group.pending_members[mid]
                    self._try_complete_join(group, now)
            for member in list(group.members.values()):
                d = member.heartbeat_deadline
                if d is not None and d <= now and group.members.get(member.member_id) is member:
                    fired = True
                    member.heartbeat_deadline = None
                    if member.expires_at_deadline():
                        log.info("group %s: member %s failed (session expired)", group.group_id, member.member_id)
                        self._remove_member_and_update(group, member, now)
            if group.join_deadline is not None and group.join_deadline <= now:
                fired = True
                self._on_join_deadline(group, now)
            if group.sync_deadline is not None and group.sync_deadline <= now:
                fired = True
                self._on_sync_deadline(group, now)
        if self._next_retention_check is not None and self._next_retention_check <= now:
            fired = True
            self._next_retention_check = now + self.config.offsets_retention_check_interval_ms
            self._expire_offsets(now)
        return fired

    # ------------------------------------------------------------------------------------------
    # FindCoordinator

    def handle_find_coordinator(self, now: int, req: FindCoordinatorRequest, version: int,
                                client_id: str = "", client_host: str = "") -> Result:
        self._begin(now)
        me = (self.node_id, self.config.host, self.config.port)
        return self._finish(now, find_coordinator(version, req, lambda _key: me))

    # ------------------------------------------------------------------------------------------
    # JoinGroup

    def handle_join(self, now: int, req: JoinGroupRequest, version: int, client_id: str = "",
                    client_host: str = "") -> Result:
        self._begin(now)
        return self._finish(now, self._join(now, req, version, client_id, client_host))

    def _join(self, now: int, req: JoinGroupRequest, version: int, client_id: str, client_host: str) -> Any:
        cfg = self.config
        member_id = req.member_id
        if not req.group_id:
            return join_response(version, Errors.INVALID_GROUP_ID, member_id)
        session = req.session_timeout_ms
        rebalance = req.rebalance_timeout_ms if version >= 1 and req.rebalance_timeout_ms >= 0 else session
        if not cfg.min_session_timeout_ms <= session <= cfg.max_session_timeout_ms:
            return join_response(version, Errors.INVALID_SESSION_TIMEOUT, member_id)
        is_unknown = member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                return join_response(version, Errors.UNKNOWN_MEMBER_ID, member_id)
            group = self.groups[req.group_id] = Group(req.group_id, state_timestamp=now)
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if not self._accept_joining(group, member_id):
            group.remove(member_id)
            self._try_complete_join(group, now)
            return join_response(version, Errors.GROUP_MAX_SIZE_REACHED, "")
        if group.is_(GroupState.DEAD):
            return join_response(version, Errors.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(req.protocol_type, protocols):
            return join_response(version, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if is_unknown:
            answer = self._join_new_member(now, group, req, version, protocols, session, rebalance,
                                           client_id, client_host)
        else:
            answer = self._join_current_member(now, group, req, version, protocols, session, rebalance,
                                               client_id, client_host)
        self._try_complete_join(group, now)
        return answer

    def _accept_joining(self, group: Group, member_id: str) -> bool:
        limit = self.config.max_group_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        member = group.members.get(member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return (member is not None and member.awaiting_join) or group.num_awaiting_join < limit
        return member is not None or len(group.members) < limit

    def _join_new_member(self, now: int, group: Group, req: JoinGroupRequest, version: int,
                         protocols: list[tuple[str, bytes]], session: int, rebalance: int,
                         client_id: str, client_host: str) -> Any:
        instance_id = req.group_instance_id
        new_id = new_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None:
                return self._replace_static_member(now, group, instance_id, old_id, new_id, protocols,
                                                   session, rebalance, version)
        elif version >= 4:
            # Hand out the id first; the member comes back with it (KIP-394).
            group.pending_members[new_id] = now + session
            return join_response(version, Errors.MEMBER_ID_REQUIRED, new_id)
        return self._add_member_and_rebalance(now, group, new_id, instance_id, client_id, client_host,
                                              req.protocol_type, protocols, session, rebalance, version)

    def _join_current_member(self, now: int, group: Group, req: JoinGroupRequest, version: int,
                             protocols: list[tuple[str, bytes]], session: int, rebalance: int,
                             client_id: str, client_host: str) -> Any:
        member_id = req.member_id
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                return join_response(version, Errors.UNKNOWN_MEMBER_ID, member_id)
            return self._add_member_and_rebalance(now, group, member_id, None, client_id, client_host,
                                                  req.protocol_type, protocols, session, rebalance, version)
        error = self._validate_member(group, member_id, req.group_instance_id)
        if error is not None:
            return join_response(version, error, member_id)
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(now, group, member, protocols, session, rebalance, version)
        if state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # A retry of a join whose answer got lost: repeat this generation's answer.
                return self._current_join_answer(group, member_id, version, with_members=group.is_leader(member_id))
            return self._update_member_and_rebalance(now, group, member, protocols, session, rebalance, version)
        if state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # The leader rejoining is how it asks for a new assignment (e.g. topic metadata changed).
                return self._update_member_and_rebalance(now, group, member, protocols, session, rebalance,
                                                         version)
            return self._current_join_answer(group, member_id, version, with_members=False)
        return join_response(version, Errors.UNKNOWN_MEMBER_ID, member_id)

    def _current_join_answer(self, group: Group, member_id: str, version: int, *, with_members: bool,
                             leader: str | None = None, skip_assignment: bool = False) -> Any:
        return join_response(
            version, Errors.NONE, member_id, generation=group.generation, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name, leader=leader if leader is not None else (group.leader_id or ""),
            members=self._member_metadata(group) if with_members else (), skip_assignment=skip_assignment)

    def _member_metadata(self, group: Group) -> list[tuple[str, str | None, bytes]]:
        assert group.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                for m in group.members.values()]

    def _validate_member(self, group: Group, member_id: str, instance_id: str | None) -> Errors | None:
        """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID for a request claiming ``member_id`` (Kafka's check)."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return Errors.FENCED_INSTANCE_ID
            return None
        return None if group.has(member_id) else Errors.UNKNOWN_MEMBER_ID

    def _park_join(self, member: Member, version: int) -> Waiter:
        """Park ``member``'s JoinGroup; an older parked join of the same member is answered first."""
        if member.join_waiter is not None:
            self._complete(member.join_waiter, join_response(
                member.join_waiter.version, Errors.REBALANCE_IN_PROGRESS, member.member_id))
        waiter = member.join_waiter = self._waiter(version)
        return waiter

    def _park_sync(self, member: Member, version: int) -> Waiter:
        if member.sync_waiter is not None:
            self._complete(member.sync_waiter, sync_response(member.sync_waiter.version,
                                                             Errors.REBALANCE_IN_PROGRESS))
        waiter = member.sync_waiter = self._waiter(version)
        return waiter

    def _add_member_and_rebalance(self, now: int, group: Group, member_id: str, instance_id: str | None,
                                  client_id: str, client_host: str, protocol_type: str,
                                  protocols: list[tuple[str, bytes]], session: int, rebalance: int,
                                  version: int) -> Waiter:
        member = Member(member_id, instance_id, client_id, client_host, rebalance, session, protocol_type,
                        protocols, is_new=True)
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation == 0:
            group.new_member_added = True
        group.add(member)
        waiter = self._park_join(member, version)
        # A new member cannot heartbeat yet; bound how long its first join may stay parked.
        member.heartbeat_deadline = now + self.config.new_member_join_timeout_ms
        self._maybe_prepare_rebalance(group, now)
        return waiter

    def _update_member_and_rebalance(self, now: int, group: Group, member: Member,
                                     protocols: list[tuple[str, bytes]], session: int, rebalance: int,
                                     version: int) -> Waiter:
        group.update_protocols(member, protocols)
        member.session_timeout_ms = session
        member.rebalance_timeout_ms = rebalance
        waiter = self._park_join(member, version)
        self._maybe_prepare_rebalance(group, now)
        return waiter

    def _replace_static_member(self, now: int, group: Group, instance_id: str, old_id: str, new_id: str,
                               protocols: list[tuple[str, bytes]], session: int, rebalance: int,
                               version: int) -> Any:
        """A known group.instance.id joins with no member id: it takes over the old member's place."""
        old_leader = group.leader_id
        member = group.members[old_id]
        # Fence whoever still waits under the old id.
        if member.join_waiter is not None:
            self._complete(member.join_waiter, join_response(member.join_waiter.version,
                                                             Errors.FENCED_INSTANCE_ID, old_id))
            member.join_waiter = None
        if member.sync_waiter is not None:
            self._complete(member.sync_waiter, sync_response(member.sync_waiter.version,
                                                             Errors.FENCED_INSTANCE_ID))
            member.sync_waiter = None
        group.replace_static_member(instance_id, old_id, new_id)
        member.heartbeat_deadline = now + member.session_timeout_ms
        group.update_protocols(member, protocols)
        member.session_timeout_ms = session
        member.rebalance_timeout_ms = rebalance
        state = group.state
        if state is GroupState.STABLE:
            if group.select_protocol() == group.protocol_name:
                # Same protocol: no rebalance; the member keeps its assignment (SyncGroup returns it).
                is_leader = group.is_leader(new_id)
                if version >= 9 and is_leader:
                    return self._current_join_answer(group, new_id, version, with_members=True,
                                                     skip_assignment=True)
                # Older clients: report the old leader id so a returning leader does not reassign.
                return self._current_join_answer(group, new_id, version, with_members=False,
                                                 leader=old_leader or "")
            waiter = self._park_join(member, version)
            self._maybe_prepare_rebalance(group, now)
            return waiter
        waiter = self._park_join(member, version)
        if state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now)
        return waiter

    # -- rebalance machinery -----------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now: int) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now)

    def _prepare_rebalance(self, group: Group, now: int) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_error(group, Errors.REBALANCE_IN_PROGRESS)
        group.sync_deadline = None
        group.pending_sync.clear()
        if group.is_(GroupState.EMPTY):
            delay = self.config.initial_rebalance_delay_ms
            group.initial_join = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            group.new_member_added = False
            group.join_deadline = now + delay
        else:
            group.initial_join = False
            group.join_deadline = now + group.rebalance_timeout_ms
        group.transition(GroupState.PREPARING_REBALANCE, now)
        log.info("group %s: preparing to rebalance (generation %d)", group.group_id, group.generation)
        self._try_complete_join(group, now)

    def _try_complete_join(self, group: Group, now: int) -> None:
        if (group.is_(GroupState.PREPARING_REBALANCE) and not group.initial_join
                and group.has_all_members_joined()):
            self._complete_join(group, now)

    def _on_join_deadline(self, group: Group, now: int) -> None:
        if not group.is_(GroupState.PREPARING_REBALANCE):
            group.join_deadline = None
            return
        if group.initial_join and group.new_member_added and group.initial_remaining_ms != 0:
            # Members keep arriving: wait another delay, within the rebalance timeout.
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            group.join_deadline = now + delay
            return
        self._complete_join(group, now)

    def _complete_join(self, group: Group, now: int) -> None:
        group.join_deadline = None
        group.initial_join = False
        for m in group.not_yet_rejoined():
            if m.group_instance_id is None:
                log.info("group %s: removing member %s, which did not rejoin", group.group_id, m.member_id)
                self._drop_member(group, m)
        if group.is_(GroupState.DEAD):
            return
        if not group.maybe_elect_joined_leader() and group.members:
            # Only static members that have not rejoined remain: wait for them (or their session expiry).
            group.join_deadline = now + group.rebalance_timeout_ms
            return
        group.init_next_generation(now)
        self._persist_group(group)
        if group.is_(GroupState.EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            return
        log.info("group %s: generation %d with %d members, protocol %s", group.group_id, group.generation,
                 len(group.members), group.protocol_name)
        for m in group.members.values():
            if m.join_waiter is not None:
                w, m.join_waiter = m.join_waiter, None
                self._complete(w, self._current_join_answer(group, m.member_id, w.version,
                                                            with_members=group.is_leader(m.member_id)))
            m.heartbeat_deadline = now + m.session_timeout_ms
            m.is_new = False
            group.pending_sync.add(m.member_id)
        group.sync_deadline = now + group.rebalance_timeout_ms
        group.sync_generation = group.generation

    def _on_sync_deadline(self, group: Group, now: int) -> None:
        group.sync_deadline = None
        if group.generation != group.sync_generation or group.state not in (
                GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.pending_sync:
            missing = sorted(group.pending_sync)
            log.info("group %s: removing members that never sent SyncGroup: %s", group.group_id, missing)
            for mid in missing:
                m = group.members.get(mid)
                if m is not None:
                    self._drop_member(group, m)
            self._prepare_rebalance(group, now)

    def _remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline = None

    def _drop_member(self, group: Group, member: Member) -> None:
        """Remove a member, answering whatever it has parked with UNKNOWN_MEMBER_ID."""
        if member.join_waiter is not None:
            self._complete(member.join_waiter, join_response(member.join_waiter.version,
                                                             Errors.UNKNOWN_MEMBER_ID, ""))
            member.join_waiter = None
        if member.sync_waiter is not None:
            self._complete(member.sync_waiter, sync_response(member.sync_waiter.version,
                                                             Errors.UNKNOWN_MEMBER_ID))
            member.sync_waiter = None
        group.remove(member.member_id)

    def _remove_member_and_update(self, group: Group, member: Member, now: int) -> None:
        self._drop_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now)

    def _reset_and_propagate_error(self, group: Group, error: Errors) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error, None)

    def _propagate_assignment(self, group: Group, error: Errors, now: int | None) -> None:
        ok = error == Errors.NONE
        for m in group.members.values():
            if m.sync_waiter is None:
                continue
            w, m.sync_waiter = m.sync_waiter, None
            self._complete(w, sync_response(
                w.version, error, protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None, assignment=m.assignment if ok else b""))
            if now is not None:
                m.heartbeat_deadline = now + m.session_timeout_ms

    def _persist_group(self, group: Group) -> None:
        rec = GroupRecord(group.group_id, group.protocol_type, group.generation, group.protocol_name,
                          group.leader_id, group.state_timestamp)
        try:
            self.store.append([rec], sync=True)
        except OSError as e:
            # Members are not durable anyway; a lost generation record only matters after a crash.
            log.warning("group %s: could not persist generation %d: %s", group.group_id, group.generation, e)

    # ------------------------------------------------------------------------------------------
    # SyncGroup

    def handle_sync(self, now: int, req: SyncGroupRequest, version: int, client_id: str = "",
                    client_host: str = "") -> Result:
        self._begin(now)
        return self._finish(now, self._sync(now, req, version))

    def _sync(self, now: int, req: SyncGroupRequest, version: int) -> Any:
        if not req.group_id:
            return sync_response(version, Errors.INVALID_GROUP_ID)
        if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            return sync_response(version, Errors.INCONSISTENT_GROUP_PROTOCOL)
        group = self.groups.get(req.group_id)
        if group is None:
            return sync_response(version, Errors.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.DEAD):
            return sync_response(version, Errors.COORDINATOR_NOT_AVAILABLE)
        error = self._validate_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation:
            error = Errors.ILLEGAL_GENERATION
        if error is None and req.protocol_type is not None and req.protocol_type != group.protocol_type:
            error = Errors.INCONSISTENT_GROUP_PROTOCOL
        if error is None and req.protocol_name is not None and req.protocol_name != group.protocol_name:
            error = Errors.INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            return sync_response(version, error)
        member = group.members[req.member_id]
        if group.is_(GroupState.EMPTY):
            return sync_response(version, Errors.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return sync_response(version, Errors.REBALANCE_IN_PROGRESS)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            waiter = self._park_sync(member, version)
            self._remove_pending_sync(group, member.member_id)
            if group.is_leader(member.member_id):
                given = {a.member_id: a.assignment for a in req.assignments}
                for m in group.members.values():
                    m.assignment = given.get(m.member_id, b"")
                group.transition(GroupState.STABLE, now)
                self._propagate_assignment(group, Errors.NONE, now)
                log.info("group %s: generation %d is stable", group.group_id, group.generation)
            return waiter
        # Stable: the assignment is known, answer right away.
        self._remove_pending_sync(group, member.member_id)
        member.heartbeat_deadline = now + member.session_timeout_ms
        return sync_response(version, Errors.NONE, protocol_type=group.protocol_type,
                             protocol_name=group.protocol_name, assignment=member.assignment)

    # ------------------------------------------------------------------------------------------
    # Heartbeat

    def handle_heartbeat(self, now: int, req: HeartbeatRequest, version: int, client_id: str = "",
                         client_host: str = "") -> Result:
        self._begin(now)
        return self._finish(now, heartbeat_response(version, self._heartbeat(now, req)))

    def _heartbeat(self, now: int, req: HeartbeatRequest) -> Errors:
        if not req.group_id:
            return Errors.INVALID_GROUP_ID
        group = self.groups.get(req.group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation:
            return Errors.ILLEGAL_GENERATION
        if group.is_(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID
        member = group.members[req.member_id]
        member.heartbeat_deadline = now + member.session_timeout_ms
        if group.is_(GroupState.PREPARING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    # ------------------------------------------------------------------------------------------
    # LeaveGroup

    def handle_leave(self, now: int, req: LeaveGroupRequest, version: int, client_id: str = "",
                     client_host: str = "") -> Result:
        self._begin(now)
        leaving = req.members if version >= 3 else [MemberIdentity(member_id=req.member_id)]
        if not req.group_id:
            return self._finish(now, leave_response(version, Errors.INVALID_GROUP_ID, []))
        group = self.groups.get(req.group_id)
        if group is not None and group.is_(GroupState.DEAD):
            return self._finish(now, leave_response(version, Errors.COORDINATOR_NOT_AVAILABLE, []))
        results = []
        for ident in leaving:
            err = Errors.UNKNOWN_MEMBER_ID if group is None else self._leave_one(now, group, ident)
            results.append((ident.member_id, ident.group_instance_id, err))
        return self._finish(now, leave_response(version, Errors.NONE, results))

    def _leave_one(self, now: int, group: Group, ident: MemberIdentity) -> Errors:
        member_id, instance_id = ident.member_id, ident.group_instance_id
        if member_id == "":
            # Administrative removal by group.instance.id.
            current = group.static_members.get(instance_id) if instance_id is not None else None
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            member_id = current
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            self._try_complete_join(group, now)
            return Errors.NONE
        else:
            error = self._validate_member(group, member_id, instance_id)
            if error is not None:
                return error
        log.info("group %s: member %s left", group.group_id, member_id)
        self._remove_member_and_update(group, group.members[member_id], now)
        return Errors.NONE

    # ------------------------------------------------------------------------------------------
    # OffsetCommit

    def handle_offset_commit(self, now: int, req: OffsetCommitRequest, version: int, client_id: str = "",
                             client_host: str = "") -> Result:
        self._begin(now)
        return self._finish(now, self._offset_commit(now, req, version))

    def _offset_commit(self, now: int, req: OffsetCommitRequest, version: int) -> OffsetCommitResponse:
        errors: dict[tuple[Any, int], Errors] = {}
        order: list[tuple[Any, int]] = []
        valid: list[tuple[str, Any]] = []
        for topic in req.topics:
            # v10 names topics by id (KIP-848); an id this node does not know: UNKNOWN_TOPIC_ID, as Kafka 4.x
            name = topic.name if version < 10 else self.config.topic_name(topic.topic_id)
            for p in topic.partitions:
                if name is None:
                    order.append((topic.topic_id, p.partition_index))
                    errors[(topic.topic_id, p.partition_index)] = Errors.UNKNOWN_TOPIC_ID
                    continue
                tp = (name, p.partition_index)
                order.append(tp)
                if self.config.partition_exists(name, p.partition_index):
                    valid.append((name, p))
                else:
                    errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if valid:
            generation = req.generation_id_or_member_epoch if version >= 1 else -1
            member_id = req.member_id if version >= 1 else ""
            instance_id = req.group_instance_id
            group = self.groups.get(req.group_id)
            error: Errors | None = None
            if group is None:
                if generation < 0:
                    # Not using group management (assign() + commit): create the group to hold offsets.
                    group = self.groups[req.group_id] = Group(req.group_id, state_timestamp=now)
                else:
                    error = Errors.ILLEGAL_GENERATION
            if group is not None:
                error = self._validate_commit(group, generation, member_id, instance_id)
                if error is None and group.is_(GroupState.COMPLETING_REBALANCE):
                    error = Errors.REBALANCE_IN_PROGRESS
            if error is not None:
                for name, p in valid:
                    errors[(name, p.partition_index)] = error
            else:
                assert group is not None
                if group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
                    m = group.members[member_id]
                    m.heartbeat_deadline = now + m.session_timeout_ms
                self._store_offsets(now, group, valid, errors)
        return self._commit_response(order, errors, version)

    def _validate_commit(self, group: Group, generation: int, member_id: str,
                         instance_id: str | None) -> Errors | None:
        if group.is_(GroupState.DEAD):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.is_(GroupState.EMPTY):
            return None  # a simple (non-member) commit to a group with no members
        if generation >= 0 or member_id != "" or instance_id is not None:
            error = self._validate_member(group, member_id, instance_id)
            if error is None and generation != group.generation:
                error = Errors.ILLEGAL_GENERATION
            return error
        if not group.is_(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID  # only members may commit while the group has members
        return None

    def _store_offsets(self, now: int, group: Group, valid: list[tuple[str, Any]],
                       errors: dict[tuple[str, int], Errors]) -> None:
        records: list[OffsetRecord] = []
        limit = self.config.offset_metadata_max_bytes
        for name, p in valid:
            meta = p.committed_metadata
            if meta is not None and len(meta.encode()) > limit:
                errors[(name, p.partition_index)] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            records.append(OffsetRecord(group.group_id, name, p.partition_index, p.committed_offset,
                                        p.committed_leader_epoch, meta if meta is not None else "", now))
        if not records:
            return
        try:
            self.store.append(records, sync=True)
        except OSError as e:
            log.error("group %s: could not store offsets: %s", group.group_id, e)
            for r in records:
                errors[(r.topic, r.partition)] = Errors.COORDINATOR_NOT_AVAILABLE
            return
        committed = self._offsets.setdefault(group.group_id, {})
        for r in records:
            committed[(r.topic, r.partition)] = r
            errors[(r.topic, r.partition)] = Errors.NONE

    def _commit_response(self, order: list[tuple[Any, int]], errors: dict[tuple[Any, int], Errors],
                         version: int) -> OffsetCommitResponse:
        topics: dict[Any, OffsetCommitResponseTopic] = {}
        for key, part in order:
            t = topics.get(key)
            if t is None:
                if isinstance(key, str):
                    t = OffsetCommitResponseTopic(name=key)
                    if version >= 10:
                        t.topic_id = self.config.topic_id(key) or t.topic_id
                else:
                    t = OffsetCommitResponseTopic(name="", topic_id=key)
                topics[key] = t
            t.partitions.append(OffsetCommitResponsePartition(part, int(errors.get((key, part), Errors.NONE))))
        return OffsetCommitResponse(topics=list(topics.values()))

    # ------------------------------------------------------------------------------------------
    # OffsetFetch

    def handle_offset_fetch(self, now: int, req: OffsetFetchRequest, version: int, client_id: str = "",
                            client_host: str = "") -> Result:
        self._begin(now)
        if version >= 8:
            groups = []
            for g in req.groups:
                groups.append(OffsetFetchResponseGroup(group_id=g.group_id, topics=self._fetch_group_topics(
                    g, version), error_code=0))
            return self._finish(now, OffsetFetchResponse(groups=groups))
        wanted = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
        topics_v0 = [
            OffsetFetchResponseTopic(name, [
                OffsetFetchResponsePartition(p, off, epoch if version >= 5 else -1, meta, 0)
                for p, off, epoch, meta in parts])
            for name, parts in self._fetch_offsets(req.group_id, wanted)]
        return self._finish(now, OffsetFetchResponse(topics=topics_v0, error_code=0))

    def _fetch_group_topics(self, g: Any, version: int) -> list[OffsetFetchResponseTopics]:
        """One group of OffsetFetch v8+; v10 names topics by id (unknown ids: UNKNOWN_TOPIC_ID; asked for all
        topics, those without an id are left out, as Kafka 4.x does)."""
        unknown: list[OffsetFetchResponseTopics] = []
        wanted: list[tuple[str, list[int]]] | None = None
        if g.topics is not None:
            wanted = []
            for t in g.topics:
                name = t.name if version < 10 else self.config.topic_name(t.topic_id)
                if name is None:
                    unknown.append(OffsetFetchResponseTopics(name="", topic_id=t.topic_id, partitions=[
                        OffsetFetchResponsePartitions(p, -1, -1, "", int(Errors.UNKNOWN_TOPIC_ID))
                        for p in t.partition_indexes]))
                else:
                    wanted.append((name, list(t.partition_indexes)))
        topics = []
        for name, parts in self._fetch_offsets(g.group_id, wanted):
            topic = OffsetFetchResponseTopics(name=name, partitions=[
                OffsetFetchResponsePartitions(p, off, epoch, meta, 0) for p, off, epoch, meta in parts])
            if version >= 10:
                tid = self.config.topic_id(name)
                if tid is None:
                    continue
                topic.topic_id = tid
            topics.append(topic)
        return topics + unknown

    def _fetch_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]] | None
                       ) -> list[tuple[str, list[tuple[int, int, int, str | None]]]]:
        """(topic, [(partition, offset, leader epoch, metadata)]): all committed when ``wanted`` is None,
        else the requested partitions with offset -1 where nothing is committed."""
        committed = self._offsets.get(group_id, {})
        if wanted is None:
            by_topic: dict[str, list[tuple[int, int, int, str | None]]] = {}
            for (topic, part), r in sorted(committed.items()):
                by_topic.setdefault(topic, []).append((part, r.offset, r.leader_epoch, r.metadata))
            return list(by_topic.items())
        out = []
        for topic, parts in wanted:
            rows = []
            for part in parts:
                r = committed.get((topic, part))
                rows.append((part, -1, -1, "") if r is None else (part, r.offset, r.leader_epoch, r.metadata))
            out.append((topic, rows))
        return out

    def committed(self, group_id: str) -> dict[tuple[str, int], OffsetRecord]:
        """The committed offsets of a group, by (topic, partition)."""
        return dict(self._offsets.get(group_id, {}))

    # ------------------------------------------------------------------------------------------
    # ListGroups / DescribeGroups

    def handle_list_groups(self, now: int, req: ListGroupsRequest, version: int, client_id: str = "",
                           client_host: str = "") -> Result:
        self._begin(now)
        states = {s.lower() for s in req.states_filter} if version >= 4 else set()
        types = {t.lower() for t in req.types_filter} if version >= 5 else set()
        listed = []
        if not types or GROUP_TYPE_CLASSIC in types:
            for g in sorted(self.groups.values(), key=lambda g: g.group_id):
                if g.is_(GroupState.DEAD) or (states and g.state.value.lower() not in states):
                    continue
                listed.append(ListedGroup(
                    group_id=g.group_id, protocol_type=g.protocol_type or "",
                    group_state=g.state.value if version >= 4 else "",
                    group_type=GROUP_TYPE_CLASSIC if version >= 5 else ""))
        return self._finish(now, ListGroupsResponse(error_code=0, groups=listed))

    def handle_describe_groups(self, now: int, req: DescribeGroupsRequest, version: int, client_id: str = "",
                               client_host: str = "") -> Result:
        self._begin(now)
        ops = GROUP_AUTHORIZED_OPERATIONS if version >= 3 and req.include_authorized_operations else -2**31
        described = []
        for gid in req.groups:
            g = self.groups.get(gid)
            if g is None or g.is_(GroupState.DEAD):
                # v6+ (KIP-1043) names a missing group, as Kafka 4.x's coordinator does; before, it is "Dead"
                missing = version >= 6
                described.append(DescribedGroup(
                    error_code=int(Errors.GROUP_ID_NOT_FOUND) if missing else 0, group_id=gid,
                    group_state=GroupState.DEAD.value, protocol_type="", protocol_data="",
                    authorized_operations=ops, error_message=f"Group {gid} not found." if missing else None))
                continue
            stable = g.is_(GroupState.STABLE) and g.protocol_name is not None
            members = [
                DescribedGroupMember(
                    member_id=m.member_id, group_instance_id=m.group_instance_id if version >= 4 else None,
                    client_id=m.client_id, client_host=m.client_host,
                    member_metadata=m.metadata(g.protocol_name) if stable and g.protocol_name else b"",
                    member_assignment=m.assignment if stable else b"")
                for m in g.members.values()]
            described.append(DescribedGroup(
                error_code=0, group_id=gid, group_state=g.state.value, protocol_type=g.protocol_type or "",
                protocol_data=(g.protocol_name or "") if stable else "", members=members,
                authorized_operations=ops))
        return self._finish(now, DescribeGroupsResponse(groups=described))

    # ------------------------------------------------------------------------------------------
    # Offset retention

    def _expire_offsets(self, now: int) -> None:
        """Drop offsets of member-less groups past retention, then groups left with nothing."""
        retention = self.config.offsets_retention_ms
        records: list[Any] = []
        for gid, group in list(self.groups.items()):
            committed = self._offsets.get(gid, {})
            if group.is_(GroupState.EMPTY) and committed:
                expired = []
                for tp, r in committed.items():
                    base = group.state_timestamp if group.protocol_type and group.state_timestamp >= 0 \
                        else r.commit_timestamp
                    if base + retention <= now:
                        expired.append(tp)
                for tp in expired:
                    del committed[tp]
                    records.append(OffsetTombstone(gid, tp[0], tp[1]))
                if expired:
                    log.info("group %s: expired %d offsets", gid, len(expired))
            if group.is_(GroupState.EMPTY) and not committed and not group.pending_members:
                group.transition(GroupState.DEAD, now)
                del self.groups[gid]
                self._offsets.pop(gid, None)
                records.append(GroupTombstone(gid))
        if records:
            try:
                self.store.append(records, sync=True)
            except OSError as e:
                log.warning("could not persist offset expiry: %s", e)
