"""Translation between Kafka wire messages (generated codecs) and the Raft core's messages, both ways.

The Raft core deals with one partition (``__cluster_metadata``-0) and flat dataclasses; the wire nests
it in topics and partitions and carries record batches as bytes. Every function here is a plain
field-by-field mapping in one direction. The one door (``core/raft_apis.py``) uses the inbound half
(requests in, answers out); the driver (``node/raft_driver.py``) the outbound half (requests to peers,
their answers back); the simulator's ``--wire`` both.
"""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.group.replicated import OFFSETS_TOPIC
from kraftwire.protocol.api import ApiKey, response_class
from kraftwire.protocol.errors import DecodeError, Errors
from kraftwire.protocol.messages import add_raft_voter_response as arv_resp
from kraftwire.protocol.messages import begin_quorum_epoch_request as bqe_req
from kraftwire.protocol.messages import begin_quorum_epoch_response as bqe_resp
from kraftwire.protocol.messages import describe_quorum_response as dq_resp
from kraftwire.protocol.messages import end_quorum_epoch_request as eqe_req
from kraftwire.protocol.messages import end_quorum_epoch_response as eqe_resp
from kraftwire.protocol.messages import fetch_request as f_req
from kraftwire.protocol.messages import fetch_response as f_resp
from kraftwire.protocol.messages import fetch_snapshot_request as fs_req
from kraftwire.protocol.messages import fetch_snapshot_response as fs_resp
from kraftwire.protocol.messages import remove_raft_voter_response as rrv_resp
from kraftwire.protocol.messages import update_raft_voter_response as urv_resp
from kraftwire.protocol.messages import vote_request as v_req
from kraftwire.protocol.messages import vote_response as v_resp
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID
from kraftwire.protocol.records import decode_batches, encode_batch
from kraftwire.raft import messages as m


class WireError(Exception):
    """A raft request on the wire that does not address ``__cluster_metadata``-0 as expected."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error


def _dir(value: uuid.UUID | None) -> uuid.UUID | None:
    """A wire directory id (zero UUID = unknown) as the core's (None = unknown)."""
    return None if value is None or value.int == 0 else value


def _dir_field(value: uuid.UUID | None, carried: bool, name: str = "replica_directory_id") -> dict[str, Any]:
    """Keyword for a KIP-853 directory id field, only at versions that carry it."""
    return {name: value} if carried and value is not None else {}


def _one_partition(body: Any) -> Any:
    topics = body.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise WireError(Errors.INVALID_REQUEST, "expected exactly one topic partition")
    name = getattr(topics[0], "topic_name", None)
    if name is None:
        name = getattr(topics[0], "topic", None)
    if name is None:
        name = getattr(topics[0], "name", None)
    topic_id = getattr(topics[0], "topic_id", None)
    part = topics[0].partitions[0]
    index = getattr(part, "partition_index", None)
    if index is None:
        index = part.partition
    if (name != METADATA_TOPIC and topic_id != METADATA_TOPIC_ID) or index != 0:
        raise WireError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {name}-{index}")
    return part


# ------------------------------------------------------------------------------- second quorum
# The voters run a second Raft quorum for consumer-group offsets (kraftwire/group/replicated.py). Its
# requests are the same messages naming another topic; the translation below always speaks
# ``__cluster_metadata`` and ``retopic`` renames a body's topics on the way out and back in.
_ZERO_UUID = uuid.UUID(int=0)
OFFSETS_TOPIC_ID = uuid.UUID(int=2)  # fixed, like the metadata topic's 1 (random v4 ids never equal it)
_NAME_OF_ID = {METADATA_TOPIC_ID: METADATA_TOPIC, OFFSETS_TOPIC_ID: OFFSETS_TOPIC}
_ID_OF_NAME = {v: k for k, v in _NAME_OF_ID.items()}


def _topic_entries(body: Any) -> list[Any]:
    entries = getattr(body, "topics", None)
    if entries is None:
        entries = getattr(body, "responses", None)
    return list(entries or [])


def addressed_topic(body: Any) -> str | None:
    """The topic a raft request names (by name, or by id at Fetch v13+); None if it names none."""
    for t in _topic_entries(body):
        for attr in ("topic_name", "topic", "name"):
            name = getattr(t, attr, None)
            if isinstance(name, str) and name:
                return name
        topic_id = getattr(t, "topic_id", None)
        if topic_id is not None:
            return _NAME_OF_ID.get(topic_id, str(topic_id))
    return None


def retopic(body: Any, name: str) -> Any:
    """Rename the (non-empty) topic names and (non-zero) topic ids of a raft body to ``name``'s."""
    topic_id = _ID_OF_NAME[name]
    for t in _topic_entries(body):
        for attr in ("topic_name", "topic", "name"):
            value = getattr(t, attr, None)
            if isinstance(value, str) and value:
                setattr(t, attr, name)
        value = getattr(t, "topic_id", None)
        if isinstance(value, uuid.UUID) and value.int != 0:
            t.topic_id = topic_id
    return body


# ------------------------------------------------------------------------------- requests in
def request_from_wire(api_key: int, body: Any, version: int) -> tuple[int, m.Request]:
    """(source node id, core request) for an inbound raft request; raises WireError."""
    if api_key == ApiKey.VOTE:
        p = _one_partition(body)
        return p.candidate_id, m.VoteRequest(body.cluster_id, p.candidate_epoch, p.candidate_id,
                                             p.last_offset_epoch, p.last_offset, body.voter_id,
                                             pre_vote=version >= 2 and p.pre_vote,
                                             candidate_directory_id=_dir(p.candidate_directory_id))
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        p = _one_partition(body)
        return p.leader_id, m.BeginQuorumEpochRequest(body.cluster_id, p.leader_id, p.leader_epoch, body.voter_id)
    if api_key == ApiKey.END_QUORUM_EPOCH:
        p = _one_partition(body)
        successors = tuple(p.preferred_successors) or tuple(c.candidate_id for c in p.preferred_candidates)
        return p.leader_id, m.EndQuorumEpochRequest(body.cluster_id, p.leader_id, p.leader_epoch, successors)
    if api_key == ApiKey.FETCH:
        p = _one_partition(body)
        replica = body.replica_state.replica_id if version >= 15 else body.replica_id
        return replica, m.FetchRequest(body.cluster_id, replica, body.max_wait_ms, p.fetch_offset,
                                       p.last_fetched_epoch, p.current_leader_epoch, p.log_start_offset,
                                       p.partition_max_bytes, body.min_bytes,
                                       _dir(getattr(p, "replica_directory_id", None)),
                                       p.high_watermark if version >= 18 else m.UNKNOWN_HIGH_WATERMARK)
    if api_key == ApiKey.DESCRIBE_QUORUM:
        _one_partition(body)
        return -1, m.DescribeQuorumRequest()
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _one_partition(body)
        return body.replica_id, m.FetchSnapshotRequest(
            body.cluster_id, body.replica_id, p.current_leader_epoch,
            m.SnapshotIdField(p.snapshot_id.end_offset, p.snapshot_id.epoch), p.position, body.max_bytes,
            _dir(getattr(p, "replica_directory_id", None)))
    if api_key == ApiKey.ADD_RAFT_VOTER:   # KIP-853 voter changes: an operator's, no replica sends them
        return -1, m.AddRaftVoterRequest(body.cluster_id, body.timeout_ms, body.voter_id, body.voter_directory_id,
                                         _listeners(body.listeners))
    if api_key == ApiKey.REMOVE_RAFT_VOTER:
        return -1, m.RemoveRaftVoterRequest(body.cluster_id, body.voter_id, body.voter_directory_id)
    if api_key == ApiKey.UPDATE_RAFT_VOTER:
        feature = body.k_raft_version_feature
        return -1, m.UpdateRaftVoterRequest(body.cluster_id, body.current_leader_epoch, body.voter_id,
                                            body.voter_directory_id, _listeners(body.listeners),
                                            (feature.min_supported_version, feature.max_supported_version))
    raise WireError(Errors.INVALID_REQUEST, f"API {api_key} is not a raft API")


def _listeners(listeners: list[Any]) -> tuple[tuple[str, str, int], ...]:
    return tuple((lst.name, lst.host, lst.port) for lst in listeners)


def error_answer(api_key: int, error: int) -> Any:
    """The whole-request answer for a Raft request refused with ``error`` before the core saw it."""
    return response_class(api_key)(error_code=error)


# ------------------------------------------------------------------------------ responses out
def response_to_wire(api_key: int, resp: m.Response, version: int, nodes: list[tuple[int, str, int, str]]
                     ) -> Any:
    """The wire response body for a core response to an ``api_key`` request. ``nodes``: (id, host, port,
    listener) of voters."""
    parts: list[Any]
    if isinstance(resp, m.VoteResponse):
        p = resp.partition
        parts = [] if p is None else [v_resp.PartitionData(0, p.error_code, p.leader_id, p.leader_epoch,
                                                           p.vote_granted)]
        return v_resp.VoteResponse(resp.error_code, _topics(v_resp.TopicData, parts),
                                   _leader_endpoint(v_resp.NodeEndpoint, nodes, version >= 1, None if p is None else p.leader_id))
    if isinstance(resp, m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse):
        begin = isinstance(resp, m.BeginQuorumEpochResponse)
        mod: Any = bqe_resp if begin else eqe_resp
        qp = resp.partition
        parts = [] if qp is None else [mod.PartitionData(0, qp.error_code, qp.leader_id, qp.leader_epoch)]
        cls = mod.BeginQuorumEpochResponse if begin else mod.EndQuorumEpochResponse
        return cls(resp.error_code, _topics(mod.TopicData, parts),
                   _leader_endpoint(mod.NodeEndpoint, nodes, version >= 1, None if qp is None else qp.leader_id))
    if isinstance(resp, m.FetchResponse):
        return fetch_response_to_wire(resp, version, nodes)
    if isinstance(resp, m.DescribeQuorumResponse):
        dp = resp.partition
        parts = []
        if dp is not None:
            def states(rs: tuple[m.ReplicaStateField, ...]) -> list[dq_resp.ReplicaState]:
                return [dq_resp.ReplicaState(r.replica_id, log_end_offset=r.log_end_offset,
                                             last_fetch_timestamp=r.last_fetch_timestamp,
                                             last_caught_up_timestamp=r.last_caught_up_timestamp,
                                             **_dir_field(r.replica_directory_id, version >= 2)) for r in rs]
            parts = [dq_resp.PartitionData(0, dp.error_code, None if dp.error_code else "", dp.leader_id,
                                           dp.leader_epoch, dp.high_watermark, states(dp.current_voters),
                                           states(dp.observers))]
        dq_nodes = []
        if version >= 2:
            dq_nodes = [dq_resp.Node(i, [dq_resp.Listener(name, h, port)]) for i, h, port, name in nodes]
        return dq_resp.DescribeQuorumResponse(resp.error_code, None if resp.error_code else "",
                                              _topics(dq_resp.TopicData, parts), dq_nodes)
    if isinstance(resp, m.FetchSnapshotResponse):
        return fetch_snapshot_response_to_wire(resp, version, nodes)
    if isinstance(resp, m.VoterChangeResponse):
        return voter_change_response_to_wire(api_key, resp, nodes)
    raise ValueError(api_key)


def voter_change_response_to_wire(api_key: int, resp: m.VoterChangeResponse,
                                  nodes: list[tuple[int, str, int, str]]) -> Any:
    """AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter's answer; UpdateRaftVoter's CurrentLeader names the
    leader's endpoint among ``nodes`` (empty host, port 0 when it is not one of them)."""
    if api_key == ApiKey.ADD_RAFT_VOTER:
        return arv_resp.AddRaftVoterResponse(error_code=resp.error_code, error_message=resp.error_message)
    if api_key == ApiKey.REMOVE_RAFT_VOTER:
        return rrv_resp.RemoveRaftVoterResponse(error_code=resp.error_code, error_message=resp.error_message)
    leader = resp.leader or m.LeaderIdAndEpoch()
    host, port = next(((h, p) for i, h, p, _ in nodes if i == leader.leader_id), ("", 0))
    return urv_resp.UpdateRaftVoterResponse(error_code=resp.error_code, current_leader=urv_resp.CurrentLeader(
        leader_id=leader.leader_id, leader_epoch=leader.leader_epoch, host=host, port=port))


def _topics(cls: Any, parts: list[Any]) -> list[Any]:
    return [cls(METADATA_TOPIC, parts)] if parts else []


def _leader_endpoint(cls: Any, nodes: list[tuple[int, str, int, str]], carried: bool, leader_id: int | None
                     ) -> list[Any]:
    """NodeEndpoints as Kafka's Raft answers fill it (``RaftUtil``): the leader's endpoint alone, when the
    version carries the field and the leader and its endpoint are known."""
    if not carried or leader_id is None or leader_id < 0:
        return []
    return [cls(i, h, p) for i, h, p, _ in nodes if i == leader_id][:1]


def fetch_response_to_wire(resp: m.FetchResponse, version: int, nodes: list[tuple[int, str, int, str]]
                           ) -> f_resp.FetchResponse:
    p = resp.partition
    parts = []
    if p is not None:
        pd = f_resp.PartitionData(0, p.error_code, p.high_watermark, -1, p.log_start_offset)
        if p.diverging_epoch is not None:
            pd.diverging_epoch = f_resp.EpochEndOffset(p.diverging_epoch.epoch, p.diverging_epoch.end_offset)
        pd.current_leader = f_resp.LeaderIdAndEpoch(p.current_leader.leader_id, p.current_leader.leader_epoch)
        if p.snapshot_id is not None:
            pd.snapshot_id = f_resp.SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch)
        pd.aborted_transactions = None
        pd.records = b"".join(b.raw if b.raw is not None else encode_batch(b) for b in p.batches)
        parts.append(pd)
    topic = f_resp.FetchableTopicResponse(METADATA_TOPIC if version < 13 else "",
                                          METADATA_TOPIC_ID if version >= 13 else _ZERO_UUID, parts)
    leader = None if p is None else p.current_leader.leader_id
    endpoints = _leader_endpoint(f_resp.NodeEndpoint, nodes, version >= 17, leader)   # v16's field is KIP-951's
    return f_resp.FetchResponse(0, resp.error_code, 0, [topic] if parts else [], endpoints)


def fetch_snapshot_response_to_wire(resp: m.FetchSnapshotResponse, version: int,
                                    nodes: list[tuple[int, str, int, str]]) -> fs_resp.FetchSnapshotResponse:
    p = resp.partition
    topics = []
    if p is not None:
        part = fs_resp.PartitionSnapshot(
            0, p.error_code, fs_resp.SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            fs_resp.LeaderIdAndEpoch(p.current_leader.leader_id, p.current_leader.leader_epoch),
            p.size, p.position, p.unaligned_records)
        topics = [fs_resp.TopicSnapshot(METADATA_TOPIC, [part])]
    leader = None if p is None else p.current_leader.leader_id
    return fs_resp.FetchSnapshotResponse(0, resp.error_code, topics,
                                         _leader_endpoint(fs_resp.NodeEndpoint, nodes, version >= 1, leader))


# ----------------------------------------------------------------------------- requests out
def request_to_wire(msg: m.Request, version: int, leader_endpoints: list[tuple[str, str, int]] | None = None
                    ) -> Any:
    """The wire request body for a core request we send to a peer."""
    part: Any
    eps: list[Any]
    if isinstance(msg, m.VoteRequest):
        if msg.pre_vote and version < 2:
            raise WireError(Errors.UNSUPPORTED_VERSION, f"Vote v{version} has no PreVote (KIP-996 needs v2)")
        part = v_req.PartitionData(0, msg.candidate_epoch, msg.candidate_id,
                                   last_offset_epoch=msg.last_offset_epoch, last_offset=msg.last_offset,
                                   pre_vote=msg.pre_vote,
                                   **_dir_field(msg.candidate_directory_id, version >= 1, "candidate_directory_id"))
        return v_req.VoteRequest(msg.cluster_id, msg.voter_id if version >= 1 else -1,
                                 [v_req.TopicData(METADATA_TOPIC, [part])])
    if isinstance(msg, m.BeginQuorumEpochRequest):
        part = bqe_req.PartitionData(0, leader_id=msg.leader_id, leader_epoch=msg.leader_epoch)
        eps = [bqe_req.LeaderEndpoint(*e) for e in leader_endpoints or []] if version >= 1 else []
        return bqe_req.BeginQuorumEpochRequest(msg.cluster_id, msg.voter_id if version >= 1 else -1,
                                               [bqe_req.TopicData(METADATA_TOPIC, [part])], eps)
    if isinstance(msg, m.EndQuorumEpochRequest):
        if version >= 1:
            part = eqe_req.PartitionData(0, msg.leader_id, msg.leader_epoch,
                                         preferred_candidates=[eqe_req.ReplicaInfo(c)
                                                               for c in msg.preferred_successors])
            eps = [eqe_req.LeaderEndpoint(*e) for e in leader_endpoints or []]
        else:
            part = eqe_req.PartitionData(0, msg.leader_id, msg.leader_epoch, list(msg.preferred_successors))
            eps = []
        return eqe_req.EndQuorumEpochRequest(msg.cluster_id, [eqe_req.TopicData(METADATA_TOPIC, [part])], eps)
    if isinstance(msg, m.FetchRequest):
        part = f_req.FetchPartition(0, msg.current_leader_epoch, msg.fetch_offset, msg.last_fetched_epoch,
                                    msg.log_start_offset, msg.max_bytes,
                                    **_dir_field(msg.replica_directory_id, version >= 17))
        if version >= 18:
            part.high_watermark = msg.high_watermark
        topic = f_req.FetchTopic(METADATA_TOPIC if version < 13 else "",
                                 METADATA_TOPIC_ID if version >= 13 else _ZERO_UUID, [part])
        req = f_req.FetchRequest(cluster_id=msg.cluster_id, max_wait_ms=msg.max_wait_ms, min_bytes=msg.min_bytes,
                                 max_bytes=msg.max_bytes, topics=[topic])
        if version >= 15:
            req.replica_state = f_req.ReplicaState(msg.replica_id, -1)
        else:
            req.replica_id = msg.replica_id
        return req
    if isinstance(msg, m.FetchSnapshotRequest):
        part = fs_req.PartitionSnapshot(0, msg.current_leader_epoch,
                                        fs_req.SnapshotId(msg.snapshot_id.end_offset, msg.snapshot_id.epoch),
                                        msg.position, **_dir_field(msg.replica_directory_id, version >= 1))
        return fs_req.FetchSnapshotRequest(msg.cluster_id, msg.replica_id, msg.max_bytes,
                                           [fs_req.TopicSnapshot(METADATA_TOPIC, [part])])
    if isinstance(msg, m.DescribeQuorumRequest):
        from kraftwire.protocol.messages import describe_quorum_request as dq_req

        return dq_req.DescribeQuorumRequest([dq_req.TopicData(METADATA_TOPIC, [dq_req.PartitionData(0)])])
    raise ValueError(type(msg).__name__)


# ------------------------------------------------------------------------------ responses in
def response_from_wire(api_key: int, body: Any) -> m.Response:
    """The core response for a wire response to a request we sent; raises DecodeError if malformed."""
    part = None
    topics = body.responses if api_key == ApiKey.FETCH else body.topics
    if api_key == ApiKey.FETCH_SNAPSHOT:
        return _fetch_snapshot_response_from_wire(body, topics)
    if topics:
        if len(topics) != 1 or len(topics[0].partitions) != 1:
            raise DecodeError("raft response must carry exactly one partition")
        part = topics[0].partitions[0]
    if api_key == ApiKey.VOTE:
        return m.VoteResponse(body.error_code, None if part is None else m.VotePartition(
            part.error_code, part.leader_id, part.leader_epoch, part.vote_granted))
    if api_key in (ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        qp = None if part is None else m.QuorumEpochPartition(part.error_code, part.leader_id, part.leader_epoch)
        return (m.BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else m.EndQuorumEpochResponse)(body.error_code, qp)
    if api_key == ApiKey.FETCH:
        if part is None:
            return m.FetchResponse(body.error_code, None)
        de = part.diverging_epoch
        sid = part.snapshot_id
        batches = decode_batches(part.records) if part.records else []
        return m.FetchResponse(body.error_code, m.FetchPartition(
            part.error_code, part.high_watermark, part.log_start_offset,
            m.EpochEndOffset(de.epoch, de.end_offset) if de.epoch >= 0 else None,
            m.LeaderIdAndEpoch(part.current_leader.leader_id, part.current_leader.leader_epoch),
            m.SnapshotIdField(sid.end_offset, sid.epoch) if sid.epoch >= 0 and sid.end_offset >= 0 else None,
            batches))
    raise ValueError(api_key)


def _fetch_snapshot_response_from_wire(body: Any, topics: list[Any]) -> m.FetchSnapshotResponse:
    if not topics:
        return m.FetchSnapshotResponse(body.error_code, None)
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise DecodeError("FetchSnapshot response must carry exactly one partition")
    p = topics[0].partitions[0]
    sid, cl = p.snapshot_id, p.current_leader
    data = bytes(p.unaligned_records) if p.unaligned_records is not None else b""
    return m.FetchSnapshotResponse(body.error_code, m.FetchSnapshotPartition(
        p.error_code, m.SnapshotIdField(sid.end_offset, sid.epoch), m.LeaderIdAndEpoch(cl.leader_id, cl.leader_epoch),
        p.size, p.position, data))
