"""Raft's APIs through the one door (core/raft_apis.py): the wire request becomes the Raft core's message, its
answer the door's ``Respond`` — after the quorum-state write a vote needs, when a parked Fetch is woken, once the
shell read a FetchSnapshot's chunk — and DescribeQuorum is the leader's (relayed where the replica does not lead,
its own view when nobody answered)."""

from __future__ import annotations

import random

from kraftwire.core import ApiDoor, DoorPlane, NodeCore, RaftApis, Relay, RelayKind, Respond
from kraftwire.core import raft_wire as wire
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.group.replicated import OFFSETS_TOPIC
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, RequestHeader
from kraftwire.protocol.records import Record
from kraftwire.protocol.requests import RequestContext
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftConfig, RaftCore, SnapshotId
from kraftwire.raft import messages as m
from kraftwire.raft.snapshot import frame

CLUSTER = "kw-raft-apis-test-0001"
NODES = [(1, "n1", 9093, "CONTROLLER"), (2, "n2", 9093, "CONTROLLER"), (3, "n3", 9093, "CONTROLLER")]
CTX = RequestContext("CONTROLLER", "PLAINTEXT", "10.0.0.2", 5555, "User:ANONYMOUS")


def _node(voters: list[int], topic: str | None = None) -> NodeCore:
    raft = RaftCore(1, voters, RaftConfig(defer_flush=True, defer_state=True), MemoryLog(), MemoryStateStore(),
                    random.Random(1), CLUSTER, 0)
    plane = DoorPlane(ApiRegistry.controller(), "here", lambda: ({}, {}, -1))
    return NodeCore(raft, door=ApiDoor({"CONTROLLER": plane}),
                    raft_apis=RaftApis(NODES, topic=topic, ask_leader=topic is None))


def _request(rid: int, msg: m.Request, version: int, topic: str | None = None) -> Request:
    body = wire.request_to_wire(msg, version, [("CONTROLLER", "n2", 9093)])
    if topic is not None:
        wire.retopic(body, topic)
    return Request(RequestHeader(msg.API_KEY, version, rid, "raft-apis-test"), body)


def _leader() -> tuple[NodeCore, int]:
    """A one-voter node run until it leads, its log durable; returns it and the time."""
    node = _node([1])
    now = 0
    while not node.raft.is_leader:
        now += 50
        _durable(node, node.tick(now), now)
    return node, now


def _durable(node: NodeCore, out: list, now: int) -> list:
    """Complete the fsyncs ``out`` asks for (and those they lead to); every output seen."""
    seen = list(out)
    for o in out:
        if isinstance(o, m.PersistLog):
            node.log.sync()
            seen += _durable(node, node.handle_persisted(now, o.end_offset), now)
    return seen


def test_a_granted_vote_is_answered_after_its_quorum_state_write_in_the_same_outputs() -> None:
    node = _node([1, 2, 3])
    vote = m.VoteRequest(CLUSTER, candidate_epoch=1, candidate_id=2, last_offset_epoch=0, last_offset=0, voter_id=1)
    out = node.handle_api(0, -7, _request(-7, vote, 2), CTX)
    kinds = [type(o) for o in out]
    assert m.PersistState in kinds and Respond in kinds
    assert kinds.index(m.PersistState) < kinds.index(Respond), "the vote is written before its answer may leave"
    written = [o.state for o in out if isinstance(o, m.PersistState)][-1]
    assert (written.epoch, written.voted_id) == (1, 2)
    reply = next(o for o in out if isinstance(o, Respond)).body
    part = reply.body.topics[0].partitions[0]
    assert reply.version == 2 and part.vote_granted and part.leader_epoch == 1
    assert reply.body.node_endpoints == [], "no leader known: no endpoint (Kafka's RaftUtil names the leader's only)"
    assert not any(isinstance(o, m.SendResponse) for o in out)


def test_rafts_own_checks_answer_as_before_and_a_foreign_partition_is_refused_at_once() -> None:
    node = _node([1, 2, 3])
    alien = m.VoteRequest("another-cluster", 1, 2, 0, 0, voter_id=1)
    [answer] = [o for o in node.handle_api(0, -1, _request(-1, alien, 2), CTX) if isinstance(o, Respond)]
    assert answer.body.body.error_code == Errors.INCONSISTENT_CLUSTER_ID
    begin = _request(-2, m.BeginQuorumEpochRequest(CLUSTER, 2, 3, voter_id=1), 1)
    begin.body.topics[0].topic_name = "elsewhere"
    [answer] = node.handle_api(0, -2, begin, CTX)
    assert answer.request_id == -2 and answer.body.body.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert node.raft.epoch == 0, "a request the door refused never reached Raft"


def test_a_replicas_fetch_is_answered_by_raft_and_a_parked_one_when_its_wait_is_over() -> None:
    node, now = _leader()
    epoch, end = node.raft.epoch, node.log.end_offset
    fetch = m.FetchRequest(CLUSTER, 5, 0, 0, 0, epoch, 0, 1 << 20, 1)
    [answer] = [o for o in node.handle_api(now, -1, _request(-1, fetch, 17), CTX) if isinstance(o, Respond)]
    part = answer.body.body.responses[0].partitions[0]
    assert part.error_code == 0 and part.records and part.high_watermark == end
    assert [(e.node_id, e.host) for e in answer.body.body.node_endpoints] == [(1, "n1")], "the leader's alone"
    [v16] = [o for o in node.handle_api(now, -3, _request(-3, fetch, 16), CTX) if isinstance(o, Respond)]
    assert v16.body.body.node_endpoints == [], "Kafka fills NodeEndpoints in Raft's Fetch answers from v17"
    parked = m.FetchRequest(CLUSTER, 5, 500, end, epoch, epoch, 0, 1 << 20, 1)
    out = node.handle_api(now, -2, _request(-2, parked, 17), CTX)
    assert not [o for o in out if isinstance(o, Respond)], "nothing new: Raft keeps it"
    assert node.next_deadline() <= now + 500
    later = [o for o in node.tick(now + 500) if isinstance(o, Respond)]
    assert [o.request_id for o in later] == [-2] and later[0].body.body.responses[0].partitions[0].records == b""


def test_describe_quorum_is_the_leaders_relayed_elsewhere_and_its_own_view_when_nobody_answers() -> None:
    node, now = _leader()
    ask = _request(-1, m.DescribeQuorumRequest(), 2)
    [answer] = [o for o in node.handle_api(now, -1, ask, CTX) if isinstance(o, Respond)]
    assert answer.body.body.topics[0].partitions[0].leader_id == 1
    follower = _node([1, 2, 3])
    [relay] = [o for o in follower.handle_api(0, -2, _request(-2, m.DescribeQuorumRequest(), 2), CTX)
               if not isinstance(o, m.PersistState)]
    assert isinstance(relay, Relay) and relay.kind is RelayKind.DESCRIBE_QUORUM
    [own] = follower.handle_relayed(0, -2, None)
    assert own.body.body.topics[0].partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER


def test_a_second_quorums_requests_and_answers_name_its_topic() -> None:
    node = _node([1, 2, 3], topic=OFFSETS_TOPIC)
    out = node.handle_api(0, -1, _request(-1, m.DescribeQuorumRequest(), 2, OFFSETS_TOPIC), CTX)
    [answer] = [o for o in out if isinstance(o, Respond | Relay)]
    assert isinstance(answer, Respond), "the offsets quorum answers DescribeQuorum from its replica"
    assert answer.body.body.topics[0].topic_name == OFFSETS_TOPIC
    begin = m.BeginQuorumEpochRequest(CLUSTER, 2, 3, voter_id=1)
    [answer] = [o for o in node.handle_api(0, -2, _request(-2, begin, 1, OFFSETS_TOPIC), CTX) if isinstance(o, Respond)]
    assert answer.body.body.topics[0].topic_name == OFFSETS_TOPIC
    assert (node.raft.leader_id, node.raft.epoch) == (2, 3)


# -- FetchSnapshot: the core decides, the shell reads the chunk (``ReadSnapshotChunk``) ------------------------
def _snapshotting_leader(topic: str | None = None) -> tuple[NodeCore, int, SnapshotId, bytes]:
    """A leader holding a snapshot of its committed log (some hundred bytes); the snapshot's bytes."""
    node = _node([1], topic)
    now = 0
    while not node.raft.is_leader:
        now += 50
        _durable(node, node.tick(now), now)
    node.append(now, [Record(value=b"v%d" % i) for i in range(8)])
    while node.raft.hw != node.log.end_offset:
        now += 50
        _durable(node, node.tick(now), now)
    sid = SnapshotId(node.raft.hw, node.raft.epoch)
    node.raft.create_snapshot(sid, frame(sid, [Record(key=b"k%d" % i, value=b"x" * 40) for i in range(6)]))
    return node, now, sid, node.log.read_snapshot_chunk(sid, 0, 1 << 20)


def _fetch_snapshot(node: NodeCore, sid: SnapshotId, position: int, max_bytes: int, version: int = 1,
                    epoch: int | None = None, topic: str | None = None) -> Request:
    msg = m.FetchSnapshotRequest(CLUSTER, 2, node.raft.epoch if epoch is None else epoch,
                                 m.SnapshotIdField(sid.end_offset, sid.epoch), position, max_bytes)
    return _request(-position - 1, msg, version, topic)


def test_a_fetch_snapshot_chunk_is_read_by_the_shell_and_a_download_takes_several() -> None:
    for topic in (None, OFFSETS_TOPIC):
        node, now, sid, data = _snapshotting_leader(topic)
        assert len(data) > 200
        got = b""
        while len(got) < len(data):
            rid = -len(got) - 1
            out = node.handle_api(now, rid, _fetch_snapshot(node, sid, len(got), 100, topic=topic), CTX)
            [read] = [o for o in out if isinstance(o, m.ReadSnapshotChunk | Respond)]
            assert isinstance(read, m.ReadSnapshotChunk), "the Raft core reads no snapshot bytes itself"
            assert (read.snapshot_id, read.position, read.max_bytes) == (sid, len(got), 100)
            chunk = node.log.read_snapshot_chunk(read.snapshot_id, read.position, read.max_bytes)
            [answer] = node.handle_snapshot_chunk(now, read, chunk)
            assert isinstance(answer, Respond) and answer.request_id == rid
            body = answer.body.body
            (part,) = body.topics[0].partitions
            assert body.topics[0].name == (topic or "__cluster_metadata")
            assert (body.error_code, part.error_code, part.size, part.position) == (0, 0, len(data), len(got))
            assert (part.snapshot_id.end_offset, part.snapshot_id.epoch) == (sid.end_offset, sid.epoch)
            assert part.current_leader.leader_id == 1 and 0 < len(part.unaligned_records) <= 100
            got += bytes(part.unaligned_records)
        assert got == data, "the chunks (the last one cut at the end) are the snapshot's bytes"


def test_fetch_snapshot_errors_are_the_cores_answered_at_once_without_a_read() -> None:
    node, now, sid, data = _snapshotting_leader()
    cases = [(SnapshotId(sid.end_offset + 1, sid.epoch), 0, None, Errors.SNAPSHOT_NOT_FOUND),
             (sid, len(data), None, Errors.POSITION_OUT_OF_RANGE),
             (sid, -1, None, Errors.POSITION_OUT_OF_RANGE),
             (sid, 0, node.raft.epoch - 1, Errors.FENCED_LEADER_EPOCH),
             (sid, 0, node.raft.epoch + 1, Errors.UNKNOWN_LEADER_EPOCH)]
    for i, (asked, position, epoch, error) in enumerate(cases):
        request = _fetch_snapshot(node, asked, position, 100, 0, epoch)
        out = node.handle_api(now, -100 - i, request, CTX)
        assert not [o for o in out if isinstance(o, m.ReadSnapshotChunk)]
        [answer] = [o for o in out if isinstance(o, Respond)]
        (part,) = answer.body.body.topics[0].partitions
        assert part.error_code == error and part.unaligned_records == b""


def test_a_snapshot_cleaned_away_before_its_chunk_is_read_answers_snapshot_not_found() -> None:
    node, now, sid, data = _snapshotting_leader()
    [read] = [o for o in node.handle_api(now, -1, _fetch_snapshot(node, sid, 0, 100), CTX)
              if isinstance(o, m.ReadSnapshotChunk)]
    [answer] = node.handle_snapshot_chunk(now, read, None)
    (part,) = answer.body.body.topics[0].partitions
    assert part.error_code == Errors.SNAPSHOT_NOT_FOUND and part.current_leader.leader_id == 1
