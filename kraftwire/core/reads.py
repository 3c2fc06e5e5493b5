"""The client-facing read path of ``__cluster_metadata`` partition 0.

Consumers (ReplicaId -1) get Metadata, ListOffsets and Fetch answers built from the local replica,
and only ever see committed data: everything a consumer reads lies below the high watermark.
The module is pure request → response code over a ``PartitionView``: a voter's door answers Metadata
with it (``core/voter_reads.py``); the shell reads Fetch and ListOffsets through its view of the log when
the door asks (``Read``), and the door parks a Fetch that found too little.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    PartitionData,
    SnapshotId,
)
from kraftwire.protocol.messages.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kraftwire.protocol.messages.metadata_response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
READ_COMMITTED = 1


class PartitionView(Protocol):
    """What the read path needs from the node's replica of the metadata log."""

    @property
    def leader_id(self) -> int:
        """Current leader id, -1 when unknown."""

    @property
    def leader_epoch(self) -> int: ...

    @property
    def high_watermark(self) -> int:
        """The committed end: consumers read strictly below it (0 when unknown)."""

    @property
    def log_start_offset(self) -> int: ...

    def read_committed(self, offset: int, max_bytes: int) -> Any:
        """Whole batches from the one holding ``offset``, all below the high watermark: bytes, or an
        object with ``len()`` the response encoder sets aside (a ``storage.file_slice.FileSlice``)."""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first committed record with timestamp >= ``timestamp``."""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


def metadata_response(request: Any, version: int, *, view: PartitionView, brokers: list[BrokerInfo],
                      voters: list[int], cluster_id: str, controller_id: int) -> MetadataResponse:
    """Metadata listing ``__cluster_metadata`` (partition 0, leader, epoch, voters as replicas/ISR)."""
    wanted = request.topics
    names: list[tuple[str | None, uuid.UUID]] = []
    if wanted is None or (version == 0 and not wanted):
        names.append((METADATA_TOPIC, METADATA_TOPIC_ID))
    else:
        for t in wanted:
            names.append((t.name, getattr(t, "topic_id", None) or uuid.UUID(int=0)))
    topics = []
    for name, topic_id in names:
        if name == METADATA_TOPIC or (name is None and topic_id == METADATA_TOPIC_ID):
            leader = view.leader_id
            part = MetadataResponsePartition(
                error_code=0 if leader >= 0 else int(Errors.LEADER_NOT_AVAILABLE),
                partition_index=0, leader_id=leader, leader_epoch=view.leader_epoch,
                replica_nodes=list(voters), isr_nodes=list(voters))
            topics.append(MetadataResponseTopic(error_code=0, name=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                                is_internal=True, partitions=[part]))
        else:
            code = Errors.UNKNOWN_TOPIC_ID if name is None else Errors.UNKNOWN_TOPIC_OR_PARTITION
            topics.append(MetadataResponseTopic(error_code=int(code), name=name, topic_id=topic_id))
    return MetadataResponse(
        brokers=[MetadataResponseBroker(b.node_id, b.host, b.port, b.rack) for b in brokers],
        cluster_id=cluster_id, controller_id=controller_id, topics=topics)


def list_offsets_response(request: Any, version: int, view: PartitionView) -> ListOffsetsResponse:
    """Earliest (-2), latest (-1), max-timestamp (-3) or by-timestamp offsets; latest = the HW."""
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            r = ListOffsetsPartitionResponse(partition_index=p.partition_index)
            if t.name != METADATA_TOPIC or p.partition_index != 0:
                r.error_code = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            elif (err := _epoch_error(p.current_leader_epoch, view)) is not None:
                r.error_code = err
            elif view.leader_id < 0:
                r.error_code = int(Errors.LEADER_NOT_AVAILABLE)
            else:
                offset, ts = _lookup(p.timestamp, view)
                if version == 0:
                    r.old_style_offsets = [] if offset < 0 else [offset]
                else:
                    r.offset, r.timestamp = offset, ts
                    r.leader_epoch = view.leader_epoch if version >= 4 else -1
            parts.append(r)
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)


def _lookup(timestamp: int, view: PartitionView) -> tuple[int, int]:
    if timestamp == EARLIEST:
        return view.log_start_offset, -1
    if timestamp == LATEST:
        return view.high_watermark, -1
    if timestamp == MAX_TIMESTAMP:
        found = view.offset_for_timestamp(-1)
        return found if found else (-1, -1)
    found = view.offset_for_timestamp(timestamp)
    return found if found else (-1, -1)


def _epoch_error(requested: int, view: PartitionView) -> int | None:
    """Kafka's fencing of a client's leader epoch: older → FENCED, newer → UNKNOWN."""
    if requested < 0:
        return None
    if requested < view.leader_epoch:
        return int(Errors.FENCED_LEADER_EPOCH)
    if requested > view.leader_epoch:
        return int(Errors.UNKNOWN_LEADER_EPOCH)
    return None


def consumer_fetch_response(request: Any, version: int, view: PartitionView) -> tuple[FetchResponse, int]:
    """A consumer Fetch answer and the number of record bytes in it (0 → the caller may long-poll)."""
    budget = request.max_bytes if version >= 3 else 1 << 30
    total = 0
    responses = []
    for t in request.topics:
        name = t.topic if version < 13 else (METADATA_TOPIC if t.topic_id == METADATA_TOPIC_ID else None)
        parts = []
        for p in t.partitions:
            pd = PartitionData(partition_index=p.partition, high_watermark=view.high_watermark,
                               last_stable_offset=view.high_watermark, log_start_offset=view.log_start_offset,
                               aborted_transactions=None if version >= 4 else [], records=b"")
            if name is None:
                pd.error_code = int(Errors.UNKNOWN_TOPIC_ID)
            elif name != METADATA_TOPIC or p.partition != 0:
                pd.error_code = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            elif (err := _epoch_error(getattr(p, "current_leader_epoch", -1), view)) is not None:
                pd.error_code = err
                pd.current_leader = LeaderIdAndEpoch(view.leader_id, view.leader_epoch)
            elif p.fetch_offset < view.log_start_offset or p.fetch_offset > view.high_watermark:
                pd.error_code = int(Errors.OFFSET_OUT_OF_RANGE)
                snapshot = getattr(view, "latest_snapshot_id", None)
                if version >= 12 and snapshot is not None and p.fetch_offset < view.log_start_offset:
                    # Below the log start the records live in the snapshot: name it, as Raft does for its
                    # fetchers (a tagged field consumers ignore; kraftwire's readers fetch it: net/metadata_log).
                    pd.snapshot_id = SnapshotId(end_offset=snapshot.end_offset, epoch=snapshot.epoch)
            elif p.fetch_offset < view.high_watermark and total < budget:
                limit = min(p.partition_max_bytes, budget - total) if version >= 3 else p.partition_max_bytes
                # Kafka returns at least one whole batch even past the limit, so progress is always possible.
                data = view.read_committed(p.fetch_offset, max(1, limit))
                pd.records = data
                total += len(data)
            parts.append(pd)
        responses.append(FetchableTopicResponse(topic=t.topic if version < 13 else "", topic_id=t.topic_id
                                                if version >= 13 else uuid.UUID(int=0), partitions=parts))
    return FetchResponse(responses=responses, session_id=0), total
