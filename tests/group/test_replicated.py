"""The offsets quorum's pure parts: state machine, store, legacy import, Raft topic renaming, and a
broker's router finding and following the coordinating voter."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.core import raft_wire as wire
from kraftwire.group import GroupCoordinator
from kraftwire.group.replicated import (
    OFFSETS_TOPIC,
    OffsetsMachine,
    OffsetsSnapshotter,
    ReplicatedOffsetStore,
    import_request_records,
    missing,
    snapshot_batches,
    to_raft,
)
from kraftwire.group.store import GroupRecord, OffsetRecord, OffsetTombstone, StoreState
from kraftwire.net.client import RequestFailed
from kraftwire.node.group_proxy import GroupRouter, errors_in
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_commit_response as ocr
from kraftwire.protocol.messages.find_coordinator_response import FindCoordinatorResponse
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.heartbeat_response import HeartbeatResponse
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import NotLeaderError, SnapshotId
from kraftwire.raft import messages as m

T = "__cluster_metadata"


def batch(base: int, epoch: int, records) -> RecordBatch:
    return RecordBatch(base, epoch, tuple(to_raft(records)))


def test_machine_applies_committed_records_and_skips_undecodable_ones():
    mach = OffsetsMachine()
    mach.handle_commit([batch(0, 1, [GroupRecord("g", "consumer", 3), OffsetRecord("g", T, 0, 10)]),
                        RecordBatch(2, 1, (Record(value=b"\x07junk"),)),
                        batch(3, 2, [OffsetRecord("g", T, 0, 11), OffsetRecord("g", T, 1, 5),
                                     OffsetTombstone("g", T, 1)])])
    assert {k: r.offset for k, r in mach.state.offsets.items()} == {("g", T, 0): 11}
    assert mach.state.groups["g"].generation == 3
    assert (mach.applied, mach.applied_epoch, mach.undecodable) == (6, 2, 1)


def test_offsets_snapshot_policy_waits_for_min_records_and_four_times_the_live_records():
    mach = OffsetsMachine()
    policy = OffsetsSnapshotter(mach, min_records=4)
    mach.handle_commit([batch(0, 1, [OffsetRecord("g", T, p, 1) for p in range(2)])])
    assert policy.job(0, None) is None                      # 2 records < max(4, 4 * 2 live)
    mach.handle_commit([batch(2, 2, [OffsetRecord("g", T, p % 2, p) for p in range(6)])])
    job = policy.job(7, None)                               # 8 records >= 8
    assert job is not None and job.sid == SnapshotId(8, 2) and job.timestamp_ms == 7
    assert job.state.offsets == mach.state.offsets and job.state is not mach.state
    other = OffsetsMachine()
    other.handle_snapshot(8, job.frame())
    assert other.state.offsets == mach.state.offsets and other.applied == 8
    assert policy.clean_due(7) is None
    policy.stored(job.sid)                                  # stored: clean below it at once, then not again
    assert policy.clean_due(7) == job.sid
    policy.cleaned(7)
    assert policy.clean_due(8) is None and policy.job(8, job.sid) is None
    mach.handle_commit([batch(8, 3, [OffsetRecord("g", T, 0, 99)] * 8)])
    assert policy.job(9, SnapshotId(12, 3)) is None         # the leader's newer snapshot counts as the last one:
    assert policy.job(9, None) is None                      # 4 records since offset 12, not 8
    mach.handle_commit([batch(16, 3, [OffsetRecord("g", T, 1, 99)] * 4)])
    assert policy.job(10, None).sid == SnapshotId(20, 3)


def test_snapshot_rebuilds_the_same_state():
    mach = OffsetsMachine()
    mach.handle_commit([batch(0, 4, [GroupRecord("g", "consumer", 2)] +
                              [OffsetRecord(f"g{i}", T, 0, i, -1, "m", 7) for i in range(5)])])
    sid = SnapshotId(mach.applied, mach.applied_epoch)
    other = OffsetsMachine()
    other.handle_commit([batch(0, 1, [OffsetRecord("stale", T, 0, 1)])])
    other.handle_snapshot(sid.end_offset, snapshot_batches(mach.state, sid, 123))
    assert other.state.offsets == mach.state.offsets and other.state.groups == mach.state.groups
    assert (other.applied, other.applied_epoch) == (6, 4)


def test_store_appends_through_raft_and_refuses_off_the_leader():
    appended: list[list[Record]] = []

    def append(records):
        appended.append(records)
        return list(range(40, 40 + len(records)))

    store = ReplicatedOffsetStore(StoreState(), append)
    coordinator = GroupCoordinator(1, store)
    resp = coordinator.handle(0, 8, 8, ocq.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, topics=[
        ocq.OffsetCommitRequestTopic(name=T, partitions=[ocq.OffsetCommitRequestPartition(0, 99)])])).response
    assert resp.topics[0].partitions[0].error_code == 0 and store.last_offset == 40 and len(appended) == 1

    def refuse(records):
        raise NotLeaderError("node 1 is follower")

    store2 = ReplicatedOffsetStore(StoreState(), refuse)
    coordinator2 = GroupCoordinator(1, store2)
    resp = coordinator2.handle(0, 8, 8, ocq.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, topics=[
        ocq.OffsetCommitRequestTopic(name=T, partitions=[ocq.OffsetCommitRequestPartition(0, 99)])])).response
    assert resp.topics[0].partitions[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert coordinator2.committed("g") == {} and store2.last_offset == -1
    store.close()
    with pytest.raises(OSError):
        store.append([OffsetRecord("g", T, 0, 1)])


def test_legacy_import_never_overwrites():
    replicated = StoreState()
    replicated.apply(OffsetRecord("g", T, 0, 500))
    replicated.apply(GroupRecord("g", "consumer", 9))
    legacy = [OffsetRecord("g", T, 0, 100), OffsetRecord("g", T, 1, 7), GroupRecord("g", "consumer", 2),
              GroupRecord("h", "consumer", 4), OffsetRecord("h", T, 0, 3)]
    assert missing(replicated, legacy) == [OffsetRecord("g", T, 1, 7), GroupRecord("h", "consumer", 4),
                                           OffsetRecord("h", T, 0, 3)]
    coordinator = GroupCoordinator(1, ReplicatedOffsetStore(replicated, lambda rs: list(range(len(rs)))))
    assert coordinator.import_records(legacy, 5) == 3
    assert {k: r.offset for k, r in coordinator.committed("g").items()} == {(T, 0): 500, (T, 1): 7}
    assert coordinator.groups["h"].generation == 4
    body = ocq.OffsetCommitRequest(group_id="h", topics=[ocq.OffsetCommitRequestTopic(name=T, partitions=[
        ocq.OffsetCommitRequestPartition(partition_index=0, committed_offset=8, committed_leader_epoch=2,
                                          committed_metadata="m")])])
    assert import_request_records(body, 9) == [OffsetRecord("h", T, 0, 8, 2, "m", 9)]


@pytest.mark.parametrize("version", [12, 13, 17])
def test_fetch_is_renamed_to_the_offsets_topic_and_back(version):
    msg = m.FetchRequest("c", 2, 500, 10, 1, 1, 0, 1000, 1)
    body = wire.request_to_wire(msg, version)
    assert wire.addressed_topic(body) == wire.METADATA_TOPIC
    wire.retopic(body, OFFSETS_TOPIC)
    decoded = type(body).decode(body.encode(version), version)
    assert wire.addressed_topic(decoded) == OFFSETS_TOPIC
    with pytest.raises(wire.WireError):   # never taken for the metadata partition
        wire.request_from_wire(1, decoded, version)
    wire.retopic(decoded, wire.METADATA_TOPIC)
    assert wire.request_from_wire(1, decoded, version)[1].fetch_offset == 10


def test_vote_is_renamed():
    body = wire.request_to_wire(m.VoteRequest("c", 3, 2, 1, 10, 1), 1)
    assert wire.addressed_topic(wire.retopic(body, OFFSETS_TOPIC)) == OFFSETS_TOPIC


class FakePeers:
    """Voter 2 coordinates until ``moved``; then voter 3 (voter 2 answers NOT_COORDINATOR)."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []
        self.moved = False
        self.down: set[int] = set()

    async def relay(self, node_id, body, version, timeout_s, client_id):
        self.sent.append((node_id, type(body).__name__))
        if node_id in self.down:
            raise RequestFailed("connection refused")
        coordinator = 3 if self.moved else 2
        if type(body).__name__ == "FindCoordinatorRequest":
            return FindCoordinatorResponse(node_id=coordinator, host="h", port=9000 + coordinator)
        return HeartbeatResponse(error_code=0 if node_id == coordinator else int(Errors.NOT_COORDINATOR))


def test_a_brokers_router_finds_the_coordinator_and_follows_it():
    peers = FakePeers()
    router = GroupRouter([(1, "a", 1), (2, "b", 2), (3, "c", 3)], peers, replicated=True)
    hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")

    async def go():
        assert (await router.route(12, 4, hb, "client")).error_code == 0
        assert router.coordinator_id == 2
        assert (await router.route(12, 4, hb, "client")).error_code == 0     # cached: no second lookup
        assert [s for s in peers.sent if s[1] == "FindCoordinatorRequest"] == [(1, "FindCoordinatorRequest")]
        peers.moved = True
        assert (await router.route(12, 4, hb, "client")).error_code == Errors.NOT_COORDINATOR
        assert router.coordinator_id is None                                   # the client retries...
        assert (await router.route(12, 4, hb, "client")).error_code == 0      # ...and reaches voter 3
        assert router.coordinator_id == 3
        peers.down = {1, 2, 3}
        assert (await router.route(12, 4, hb, "client")).error_code == Errors.COORDINATOR_NOT_AVAILABLE
        assert (await router.route(12, 4, hb, "client")).error_code == Errors.COORDINATOR_NOT_AVAILABLE

    anyio.run(go)


def test_errors_in_finds_nested_codes():
    resp = ocr.OffsetCommitResponse(topics=[ocr.OffsetCommitResponseTopic(name=T, partitions=[
        ocr.OffsetCommitResponsePartition(0, 0), ocr.OffsetCommitResponsePartition(1, int(Errors.NOT_COORDINATOR))])])
    assert errors_in(resp) == {0, int(Errors.NOT_COORDINATOR)}


def test_the_group_role_answers_only_what_is_committed_and_not_coordinator_when_leadership_goes():
    from types import SimpleNamespace

    from kraftwire.core.group_role import GroupRole
    from kraftwire.group import GroupConfig
    from kraftwire.group.replicated import OffsetsMachine
    from kraftwire.protocol.messages import join_group_request as jgq

    class Raft(SimpleNamespace):
        @property
        def epoch_start_committed(self) -> bool:   # as RaftCore's: leading, the epoch's first record committed
            return self.is_leader and self.hw is not None and self.hw > self.state.epoch_start_offset

    raft = Raft(is_leader=True, epoch=3, hw=None, state=SimpleNamespace(epoch_start_offset=0))
    written: list = []

    def append(records):
        written.extend(records)
        return list(range(10 + len(written) - len(records), 10 + len(written)))

    role = GroupRole(1, GroupConfig(initial_rebalance_delay_ms=60000), machine=OffsetsMachine())
    role.attach(raft, clock=lambda: 1000, append=append)
    commit = ocq.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, topics=[
        ocq.OffsetCommitRequestTopic(name=T, partitions=[ocq.OffsetCommitRequestPartition(0, 5)])])
    join = jgq.JoinGroupRequest(group_id="j", session_timeout_ms=10000, rebalance_timeout_ms=60000,
                                protocol_type="consumer", protocols=[jgq.JoinGroupRequestProtocol("range", b"")])
    got: list = []
    role.submit(8, 8, commit, "c", "h", got.append)                  # epoch's LeaderChange not committed yet
    assert got.pop().topics[0].partitions[0].error_code == Errors.NOT_COORDINATOR and role.coordinator is None
    raft.hw = 1
    role.settle()                                                     # now it coordinates
    role.submit(8, 8, commit, "c", "h", got.append)
    assert not got and len(written) == 1, "written at offset 10, not answered before it commits"
    raft.hw = 11
    role.settle()
    assert got.pop().topics[0].partitions[0].error_code == 0
    role.submit(8, 8, commit, "c", "h", got.append)                  # offset 11 ...
    raft.is_leader = False                                            # ... and leadership goes before it commits
    role.settle()
    assert got.pop().topics[0].partitions[0].error_code == Errors.NOT_COORDINATOR and role.coordinator is None
    raft.is_leader, raft.epoch, raft.hw, raft.state.epoch_start_offset = True, 4, 20, 15
    role.settle()
    store = role.coordinator.store
    role.submit(11, 3, join, "c", "h", got.append)                    # parked: the initial rebalance delay
    assert not got
    raft.epoch = 5                                                    # another epoch: the coordinator is rebuilt
    role.settle()
    assert got.pop().error_code == Errors.NOT_COORDINATOR and store.closed and role.coordinator.store is not store


def test_a_rebalance_timer_after_leadership_went_answers_not_coordinator():
    """Regression (found by ``kraftwire simulate --groups``): Raft lost the leadership in the tick that ran the
    coordinator's timers; the rebalance they completed could not write its generation record (the append is
    refused), yet its JoinGroup answers left with that generation, which the next coordinator hands out again."""
    from types import SimpleNamespace

    from kraftwire.core.group_role import GroupRole
    from kraftwire.group import GroupConfig
    from kraftwire.group.replicated import OffsetsMachine
    from kraftwire.protocol.messages import join_group_request as jgq

    class Raft(SimpleNamespace):
        @property
        def epoch_start_committed(self) -> bool:
            return self.is_leader and self.hw is not None and self.hw > self.state.epoch_start_offset

    raft = Raft(is_leader=True, epoch=3, hw=1, state=SimpleNamespace(epoch_start_offset=0))
    now = [1000]

    def append(records):
        if not raft.is_leader:
            raise NotLeaderError("node 1 is resigned in epoch 3")
        return [1]

    role = GroupRole(1, GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=100),
                     machine=OffsetsMachine())
    role.attach(raft, clock=lambda: now[0], append=append)
    role.settle()
    join = jgq.JoinGroupRequest(group_id="j", session_timeout_ms=1000, rebalance_timeout_ms=1000, member_id="",
                                protocol_type="consumer", protocols=[jgq.JoinGroupRequestProtocol("range", b"")])
    got: list = []
    role.submit(11, 3, join, "c", "h", got.append)        # v3: joins at once, parked for the initial delay
    assert not got
    raft.is_leader = False                                # Raft resigned in the tick ...
    now[0] = 1200
    role.tick()                                           # ... that runs the rebalance deadline
    assert [r.error_code for r in got] == [Errors.NOT_COORDINATOR] and role.coordinator is None


def test_coordinator_lookup_asks_in_turn_and_forgets_a_moved_coordinator():
    """The pure decisions GroupRouter and the groups simulation share (group/placement.py)."""
    from types import SimpleNamespace

    from kraftwire.group.placement import CoordinatorLookup, coordinating_voter, owner_of
    from kraftwire.group.responses import error_response

    voters = [(1, "a", 1), (2, "b", 2), (3, "c", 3)]
    assert coordinating_voter("g", voters, replicated=True, leader_id=2) == (2, "b", 2)
    assert coordinating_voter("g", voters, replicated=True, leader_id=None) is None
    assert coordinating_voter("g", voters, replicated=False, leader_id=2) == owner_of("g", voters)
    lookup = CoordinatorLookup()
    ids = [1, 2, 3]
    assert lookup.probes(ids) == [1, 2, 3]
    assert not lookup.found(ids, 1, SimpleNamespace(error_code=int(Errors.COORDINATOR_NOT_AVAILABLE), node_id=-1))
    assert lookup.found(ids, 2, SimpleNamespace(error_code=0, node_id=3)) and lookup.coordinator_id == 3
    assert lookup.probes(ids) == [2, 3, 1]                     # next time: the voter that answered first
    commit_ok = ocr.OffsetCommitResponse(topics=[ocr.OffsetCommitResponseTopic(name=T, partitions=[
        ocr.OffsetCommitResponsePartition(0, 0)])])
    lookup.answered(3, 8, commit_ok)
    assert lookup.coordinator_id == 3
    lookup.answered(3, 8, error_response(8, 8, ocq.OffsetCommitRequest(group_id="g", topics=[
        ocq.OffsetCommitRequestTopic(name=T, partitions=[ocq.OffsetCommitRequestPartition(0, 1)])]),
        int(Errors.NOT_COORDINATOR)))
    assert lookup.coordinator_id is None                       # moved: look it up again
    lookup.found(ids, 1, SimpleNamespace(error_code=0, node_id=1))
    lookup.unreachable(2)
    assert lookup.coordinator_id == 1
    lookup.unreachable(1)
    assert lookup.coordinator_id is None
    lookup.none_found()
    assert lookup.probes(ids) == [2, 3, 1]
