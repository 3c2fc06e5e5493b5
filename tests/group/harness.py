"""A test driver for GroupCoordinator: wire round trips, a fake clock and parked-request bookkeeping.

Every request goes through ``encode(version)``/``decode`` first (so version-dependent defaults are what a
real client would produce) and every response -- immediate or completed later -- is encoded and decoded at
the request's version, proving it is encodable there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kraftwire.group import Completion, Done, GroupConfig, GroupCoordinator, MemoryOffsetStore, Pending
from kraftwire.protocol.api import request_class, response_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kraftwire.protocol.messages.leave_group_request import LeaveGroupRequest, MemberIdentity
from kraftwire.protocol.messages.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kraftwire.protocol.messages.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kraftwire.protocol.messages.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID

META = "__cluster_metadata"
T0 = 1_700_000_000_000
CFG = GroupConfig(host="kw-host", port=19092, initial_rebalance_delay_ms=100, min_session_timeout_ms=10)
SESSION = 1_000
REBALANCE = 2_000


def topic_id(name: str) -> uuid.UUID:
    """The id a v10 client sends for ``name``: Kafka's for the metadata topic, a made-up one otherwise."""
    return METADATA_TOPIC_ID if name == METADATA_TOPIC else uuid.uuid5(uuid.NAMESPACE_OID, name)


def named(t: Any, version: int) -> str:
    """A response topic's name (v10 carries ids only; ids map back through ``topic_id``'s rule)."""
    if version < 10 or t.name:
        return t.name
    return METADATA_TOPIC if t.topic_id == METADATA_TOPIC_ID else f"id:{t.topic_id}"


def roundtrip(msg: Any, version: int) -> Any:
    """``msg`` encoded at ``version`` and decoded again (raises if not encodable there)."""
    return type(msg).decode(msg.encode(version), version)


@dataclass
class Harness:
    config: GroupConfig = CFG
    store: Any = field(default_factory=MemoryOffsetStore)
    now: int = T0
    coord: GroupCoordinator = field(init=False)
    completed: dict[int, Any] = field(default_factory=dict)  # key -> decoded response
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)  # key -> (api key, version)

    def __post_init__(self) -> None:
        self.coord = GroupCoordinator(7, self.store, self.config)

    def restart(self, store: Any | None = None) -> None:
        """A new coordinator over the same (or a reopened) store; parked requests are forgotten."""
        self.coord.close()
        if store is not None:
            self.store = store
        self.coord = GroupCoordinator(7, self.store, self.config)
        self.completed.clear()  # keys are per coordinator instance
        self.versions.clear()

    # -- plumbing ------------------------------------------------------------------------------

    def _take(self, completions: tuple[Completion, ...] | list[Completion]) -> None:
        for c in completions:
            api_key, version = self.versions[c.key]
            assert isinstance(c.response, response_class(api_key))
            assert c.key not in self.completed, f"key {c.key} completed twice"
            self.completed[c.key] = roundtrip(c.response, version)

    def call(self, api_key: int, req: Any, version: int, client_id: str = "client") -> Done | Pending:
        assert isinstance(req, request_class(api_key))
        wire_req = roundtrip(req, version)
        result = self.coord.handle(self.now, api_key, version, wire_req, client_id, "/127.0.0.1")
        if isinstance(result, Pending):
            self.versions[result.key] = (api_key, version)
        self._take(result.completions)
        return result

    def done(self, api_key: int, req: Any, version: int, client_id: str = "client") -> Any:
        """Call and require an immediate answer; returns the decoded response."""
        result = self.call(api_key, req, version, client_id)
        assert isinstance(result, Done), result
        return roundtrip(result.response, version)

    def answer(self, result: Done | Pending) -> Any:
        """The (decoded) response of a call, whether immediate or completed since."""
        if isinstance(result, Done):
            return result.response
        assert result.key in self.completed, f"request {result.key} still parked"
        return self.completed[result.key]

    def is_parked(self, result: Done | Pending) -> bool:
        return isinstance(result, Pending) and result.key not in self.completed

    def advance(self, ms: int) -> None:
        self.now += ms
        self._take(self.coord.tick(self.now))

    def run_until_idle(self, limit_ms: int = 10_000_000) -> None:
        """Tick at each deadline while time stays within ``limit_ms`` from now."""
        end = self.now + limit_ms
        while (d := self.coord.next_deadline()) is not None and d <= end:
            self.now = max(self.now, d)
            self._take(self.coord.tick(self.now))

    def settle(self, *results: Done | Pending) -> None:
        """Advance deadline by deadline until none of ``results`` is parked any more."""
        for _ in range(100):
            if not any(self.is_parked(r) for r in results):
                return
            self.advance_to_deadline()
        raise AssertionError("requests still parked")

    def advance_to_deadline(self) -> None:
        d = self.coord.next_deadline()
        assert d is not None
        self.now = max(self.now, d)
        self._take(self.coord.tick(self.now))

    # -- API helpers ---------------------------------------------------------------------------

    def join(self, group: str, member_id: str = "", *, version: int = 5, client_id: str = "client",
             protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),), protocol_type: str = "consumer",
             session: int = SESSION, rebalance: int = REBALANCE, instance: str | None = None) -> Done | Pending:
        req = JoinGroupRequest(group_id=group, session_timeout_ms=session,
                               rebalance_timeout_ms=rebalance if version >= 1 else -1, member_id=member_id,
                               group_instance_id=instance, protocol_type=protocol_type,
                               protocols=[JoinGroupRequestProtocol(n, m) for n, m in protocols])
        return self.call(11, req, version, client_id)

    def join_new(self, group: str, *, version: int = 5, client_id: str = "client", **kw: Any) -> tuple[str, Done | Pending]:
        """A dynamic member's two-step join (MEMBER_ID_REQUIRED, then rejoin with the id) on v4+."""
        first = self.join(group, version=version, client_id=client_id, **kw)
        if version < 4 or kw.get("instance") is not None:
            return "", first
        resp = self.answer(first)
        assert resp.error_code == Errors.MEMBER_ID_REQUIRED, resp
        assert resp.member_id.startswith(client_id + "-")
        return resp.member_id, self.join(group, resp.member_id, version=version, client_id=client_id, **kw)

    def sync(self, group: str, member_id: str, generation: int, *, version: int = 3,
             assignments: dict[str, bytes] | None = None, protocol_type: str | None = "consumer",
             protocol_name: str | None = "range", instance: str | None = None) -> Done | Pending:
        req = SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                               group_instance_id=instance,
                               protocol_type=protocol_type if version >= 5 else None,
                               protocol_name=protocol_name if version >= 5 else None,
                               assignments=[SyncGroupRequestAssignment(m, a) for m, a in (assignments or {}).items()])
        return self.call(14, req, version)

    def heartbeat(self, group: str, member_id: str, generation: int, *, version: int = 3,
                  instance: str | None = None) -> int:
        req = HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                               group_instance_id=instance)
        return self.done(12, req, version).error_code

    def leave(self, group: str, *members: str, version: int = 3,
              identities: list[MemberIdentity] | None = None) -> Any:
        if version >= 3:
            req = LeaveGroupRequest(group_id=group,
                                    members=identities or [MemberIdentity(member_id=m) for m in members])
        else:
            (member,) = members
            req = LeaveGroupRequest(group_id=group, member_id=member)
        return self.done(13, req, version)

    def commit(self, group: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
               member_id: str = "", version: int = 7, metadata: str | None = "",
               leader_epoch: int = -1) -> dict[tuple[str, int], int]:
        topics: dict[str, OffsetCommitRequestTopic] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, OffsetCommitRequestTopic(name=t, topic_id=topic_id(t))).partitions.append(
                OffsetCommitRequestPartition(partition_index=p, committed_offset=off,
                                             committed_leader_epoch=leader_epoch if version >= 6 else -1,
                                             committed_metadata=metadata))
        req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation if version >= 1 else -1,
                                  member_id=member_id if version >= 1 else "", topics=list(topics.values()))
        resp = self.done(8, req, version)
        return {(named(t, version), p.partition_index): p.error_code for t in resp.topics for p in t.partitions}

    def fetch(self, group: str, partitions: dict[str, list[int]] | None, *, version: int = 7
              ) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
        """(topic, partition) -> (offset, leader epoch, metadata, error)."""
        if version >= 8:
            topics = None if partitions is None else [
                OffsetFetchRequestTopics(name=t, topic_id=topic_id(t), partition_indexes=ps)
                for t, ps in partitions.items()]
            req = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=topics)])
            resp = self.done(9, req, version)
            (g,) = resp.groups
            assert g.group_id == group and g.error_code == 0
            topics_out = g.topics
        else:
            topics_v = None if partitions is None else [OffsetFetchRequestTopic(t, ps) for t, ps in partitions.items()]
            req = OffsetFetchRequest(group_id=group, topics=topics_v)
            resp = self.done(9, req, version)
            topics_out = resp.topics
        return {(named(t, version), p.partition_index):
                (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
                for t in topics_out for p in t.partitions}

    # -- whole flows ---------------------------------------------------------------------------

    def form_group(self, group: str, n: int, *, version: int = 5, sync_version: int = 3,
                   assignments: dict[int, bytes] | None = None) -> tuple[list[str], int, str]:
        """n dynamic members join and sync; returns (member ids, generation, leader)."""
        pending = []
        for i in range(n):
            mid, res = self.join_new(group, version=version, client_id=f"c{i}")
            assert self.is_parked(res)
            pending.append(res)
        self.settle(*pending)  # the (extended) initial rebalance delay
        answers = [self.answer(r) for r in pending]
        gens = {a.generation_id for a in answers}
        assert len(gens) == 1 and all(a.error_code == 0 for a in answers)
        generation = gens.pop()
        leader = answers[0].leader
        ids = [a.member_id for a in answers]
        follower_syncs = [self.sync(group, m, generation, version=sync_version) for m in ids if m != leader]
        assign = {ids[i]: a for i, a in (assignments or {}).items()}
        lead = self.sync(group, leader, generation, version=sync_version, assignments=assign)
        assert isinstance(lead, Done)
        for r in follower_syncs:
            assert self.answer(r).error_code == 0
        return ids, generation, leader
