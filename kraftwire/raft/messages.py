"""Messages the Raft core exchanges with its shell (one partition, topic nesting flattened).

Each request and response class carries its Kafka API key (``API_KEY``; AddRaftVoter and RemoveRaftVoter
share ``VoterChangeResponse``, whose key is its request's). Field names are Kafka 3.9's wire fields in snake_case so that the network shell maps them 1:1 to
the JSON schemas (VoteRequest.json, FetchRequest.json, ...). Top-level ``error_code`` is the
response's top-level error; per-partition fields live in a ``*Partition`` dataclass. The single
partition is ``__cluster_metadata-0``; the shell fills topic name / partition index.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.records import RecordBatch
from kraftwire.raft.log import ElectionState, SnapshotId

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    """``CurrentLeader`` of a FetchResponse partition."""

    leader_id: int = NO_LEADER
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """``DivergingEpoch`` of a FetchResponse partition."""

    epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class SnapshotIdField:
    """``SnapshotId`` of a FetchResponse partition."""

    end_offset: int = -1
    epoch: int = -1


# ---------------------------------------------------------------------------------------- Vote
@dataclass(frozen=True, slots=True)
class VoteRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.VOTE
    cluster_id: str | None
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    voter_id: int = -1
    pre_vote: bool = False   # KIP-996 (Vote v2+): asks "would you vote?"; nothing changes on either side
    candidate_directory_id: uuid.UUID | None = None   # KIP-853 (Vote v1+): meta.properties directory.id


@dataclass(frozen=True, slots=True)
class VotePartition:
    error_code: int = 0
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    vote_granted: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.VOTE
    error_code: int = 0
    partition: VotePartition | None = None


# ----------------------------------------------------------------------------- BeginQuorumEpoch
@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.BEGIN_QUORUM_EPOCH
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    voter_id: int = -1


@dataclass(frozen=True, slots=True)
class QuorumEpochPartition:
    """Partition of BeginQuorumEpoch and EndQuorumEpoch responses (same shape in Kafka)."""

    error_code: int = 0
    leader_id: int = NO_LEADER
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.BEGIN_QUORUM_EPOCH
    error_code: int = 0
    partition: QuorumEpochPartition | None = None


# ------------------------------------------------------------------------------- EndQuorumEpoch
@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.END_QUORUM_EPOCH
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.END_QUORUM_EPOCH
    error_code: int = 0
    partition: QuorumEpochPartition | None = None


# ---------------------------------------------------------------------------------------- Fetch
#: What a Fetch below v18 carries as the fetcher's high watermark: "not told", never behind the leader's.
UNKNOWN_HIGH_WATERMARK = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class FetchRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH
    cluster_id: str | None
    replica_id: int
    max_wait_ms: int
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    log_start_offset: int = 0
    max_bytes: int = 8 * 1024 * 1024
    min_bytes: int = 0
    replica_directory_id: uuid.UUID | None = None     # KIP-853 (Fetch v17+)
    high_watermark: int = UNKNOWN_HIGH_WATERMARK      # the fetcher's high watermark (Fetch v18+; -1: none yet)


@dataclass(frozen=True, slots=True)
class FetchPartition:
    error_code: int = 0
    high_watermark: int = -1
    log_start_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    current_leader: LeaderIdAndEpoch = LeaderIdAndEpoch()
    snapshot_id: SnapshotIdField | None = None
    batches: list[RecordBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FetchResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH
    error_code: int = 0
    partition: FetchPartition | None = None


# -------------------------------------------------------------------------------- FetchSnapshot
@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """KIP-630: a replica told to load ``snapshot_id`` reads it from the leader, ``max_bytes`` at a time."""

    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH_SNAPSHOT
    cluster_id: str | None
    replica_id: int
    current_leader_epoch: int
    snapshot_id: SnapshotIdField
    position: int
    max_bytes: int = 0x7FFFFFFF
    replica_directory_id: uuid.UUID | None = None     # KIP-853 (FetchSnapshot v1+)


@dataclass(frozen=True, slots=True)
class FetchSnapshotPartition:
    error_code: int = 0
    snapshot_id: SnapshotIdField = SnapshotIdField()
    current_leader: LeaderIdAndEpoch = LeaderIdAndEpoch()
    size: int = -1
    position: int = -1
    unaligned_records: bytes = b""


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.FETCH_SNAPSHOT
    error_code: int = 0
    partition: FetchSnapshotPartition | None = None


# ------------------------------------------------------------------------------- DescribeQuorum
@dataclass(frozen=True, slots=True)
class DescribeQuorumRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_QUORUM
    pass


@dataclass(frozen=True, slots=True)
class ReplicaStateField:
    """``ReplicaState`` of DescribeQuorum; -1 means unknown."""

    replica_id: int
    log_end_offset: int = -1
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1
    replica_directory_id: uuid.UUID | None = None     # DescribeQuorum v2+


@dataclass(frozen=True, slots=True)
class DescribeQuorumPartition:
    error_code: int = 0
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    high_watermark: int = -1
    current_voters: tuple[ReplicaStateField, ...] = ()
    observers: tuple[ReplicaStateField, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribeQuorumResponse:
    API_KEY: ClassVar[ApiKey] = ApiKey.DESCRIBE_QUORUM
    error_code: int = 0
    partition: DescribeQuorumPartition | None = None


# ------------------------------------------------------------------- KIP-853 voter changes (API 80-82)
Listener = tuple[str, str, int]   # (name, host, port) of a voter endpoint


@dataclass(frozen=True, slots=True)
class AddRaftVoterRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.ADD_RAFT_VOTER
    cluster_id: str | None
    timeout_ms: int
    voter_id: int
    voter_directory_id: uuid.UUID
    listeners: tuple[Listener, ...]


@dataclass(frozen=True, slots=True)
class RemoveRaftVoterRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.REMOVE_RAFT_VOTER
    cluster_id: str | None
    voter_id: int
    voter_directory_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class UpdateRaftVoterRequest:
    API_KEY: ClassVar[ApiKey] = ApiKey.UPDATE_RAFT_VOTER
    cluster_id: str | None
    current_leader_epoch: int
    voter_id: int
    voter_directory_id: uuid.UUID
    listeners: tuple[Listener, ...]
    kraft_range: tuple[int, int]


@dataclass(frozen=True, slots=True)
class VoterChangeResponse:
    """AddRaftVoter / RemoveRaftVoter answer (the same fields); UpdateRaftVoter adds the leader."""

    error_code: int = 0
    error_message: str | None = None
    leader: LeaderIdAndEpoch | None = None   # UpdateRaftVoter's CurrentLeader (the shell adds host/port)


@dataclass(frozen=True, slots=True)
class KraftVersionsRequest:
    """Ask a would-be voter, at ``listeners``, which kraft.version levels it supports (Kafka's leader
    sends it ApiVersions); the shell answers with a ``KraftVersionsResponse``."""

    API_KEY: ClassVar[ApiKey] = ApiKey.API_VERSIONS
    listeners: tuple[Listener, ...]


@dataclass(frozen=True, slots=True)
class KraftVersionsResponse:
    error_code: int = 0
    kraft_range: tuple[int, int] | None = None   # None: the peer advertises no kraft.version


Request = (VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest | FetchSnapshotRequest
           | DescribeQuorumRequest | AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest
           | KraftVersionsRequest)
Response = (VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse
            | FetchSnapshotResponse | DescribeQuorumResponse | VoterChangeResponse | KraftVersionsResponse)

#: The response class of each Raft API whose answer has its own class (the one key → type table).
RESPONSE_OF: dict[ApiKey, type[Response]] = {
    r.API_KEY: r for r in (VoteResponse, BeginQuorumEpochResponse, EndQuorumEpochResponse, FetchResponse,
                           FetchSnapshotResponse, DescribeQuorumResponse)
}


# ---------------------------------------------------------------------------------- core output
@dataclass(frozen=True, slots=True)
class SendRequest:
    """Send ``msg`` to ``dest_id``; answer with ``handle_response(request_id)`` or ``handle_request_failed``."""

    request_id: int
    dest_id: int
    msg: Request


@dataclass(frozen=True, slots=True)
class SendResponse:
    """Answer the inbound request ``request_id`` (the id the shell gave to ``handle_request``)."""

    request_id: int
    msg: Response


@dataclass(frozen=True, slots=True)
class PersistLog:
    """Make the log durable up to ``end_offset`` off the critical path, then call
    ``RaftCore.handle_persisted(now, end_offset)`` (with ``defer_flush``: a leader's own durability
    only moves the high watermark, so its sends need not wait; a fetcher's next Fetch waits for it)."""

    end_offset: int


@dataclass(frozen=True, slots=True)
class PersistState:
    """Write ``state`` to the quorum-state store (with ``defer_state``). Nothing the core emits after it
    may leave the node before the write is durable: a vote granted or an epoch claimed in a request or an
    answer must survive a crash. The shell runs the write off its event loop and holds every later output
    (of this call and of the calls after it) until the write is done; the core does not wait for it."""

    state: ElectionState


@dataclass(frozen=True, slots=True)
class ReadSnapshotChunk:
    """Answer the inbound FetchSnapshot ``request_id`` with ``response`` once its UnalignedRecords hold the bytes
    of snapshot ``snapshot_id`` from ``position``, at most ``max_bytes`` (cut at the snapshot's end). The core
    decided the answer (the snapshot is held, the position inside it); reading the bytes is the shell's I/O (a
    file off the event loop). It hands them back — ``NodeCore.handle_snapshot_chunk``, or ``answer`` where a
    Raft core is driven bare — as None when the snapshot went meanwhile (cleaned away): SNAPSHOT_NOT_FOUND."""

    request_id: int
    snapshot_id: SnapshotId
    position: int
    max_bytes: int
    response: FetchSnapshotResponse

    def answer(self, chunk: bytes | None) -> SendResponse:
        """The answer with the bytes read (None: the snapshot is gone)."""
        p = self.response.partition
        assert p is not None
        if chunk is None:
            part = FetchSnapshotPartition(int(Errors.SNAPSHOT_NOT_FOUND), current_leader=p.current_leader)
        else:
            part = FetchSnapshotPartition(p.error_code, p.snapshot_id, p.current_leader, p.size, p.position, chunk)
        return SendResponse(self.request_id, FetchSnapshotResponse(self.response.error_code, part))


Output = SendRequest | SendResponse | PersistLog | PersistState | ReadSnapshotChunk
