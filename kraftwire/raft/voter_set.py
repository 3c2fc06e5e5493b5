"""KIP-853 voter sets: the KRaftVersionRecord and VotersRecord control records, pure.

With kraft.version 1 the quorum's voters are not configured (``controller.quorum.voters``) but read from
the log: ``storage format --standalone | --initial-controllers`` writes a bootstrap snapshot at offset 0
(``00000000000000000000-0000000000.checkpoint``: header, KRaftVersionRecord, VotersRecord, footer), and
the latest VotersRecord — in the newest snapshot or after it in the log — is the voter set, as Kafka's
``KRaftControlRecordStateMachine`` reads it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kraftwire.protocol.control import ControlType, control_key, control_type
from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.messages.k_raft_version_record import KRaftVersionRecord
from kraftwire.protocol.messages.voters_record import Endpoint, KRaftVersionFeature, VotersRecord
from kraftwire.protocol.messages.voters_record import Voter as VoterMsg
from kraftwire.protocol.records import Record, RecordBatch

# The kraft.version range a voter formatted by kraftwire announces in its VotersRecord entry, as Kafka's
# format writes it (0-1); ApiVersions advertises the same range (metadata/features.py).
FORMAT_KRAFT_RANGE = (0, 1)


@dataclass(frozen=True, slots=True)
class VoterNode:
    """One voter: replica id, directory id, listeners ``(name, host, port)``, kraft.version range."""

    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[tuple[str, str, int], ...]
    kraft_range: tuple[int, int] = FORMAT_KRAFT_RANGE

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        return next(((h, p) for n, h, p in self.endpoints if n == listener), None)


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters of a kraft.version 1 quorum, keyed by id (one directory per id, as Kafka's VoterSet)."""

    voters: tuple[VoterNode, ...]

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(v.node_id for v in self.voters)

    def get(self, node_id: int) -> VoterNode | None:
        return next((v for v in self.voters if v.node_id == node_id), None)

    def to_record(self) -> Record:
        msg = VotersRecord(version=0, voters=[
            VoterMsg(v.node_id, v.directory_id, [Endpoint(n, h, p) for n, h, p in v.endpoints],
                     KRaftVersionFeature(*v.kraft_range)) for v in self.voters])
        return Record(value=msg.encode(0), key=control_key(ControlType.KRAFT_VOTERS))

    @classmethod
    def from_record(cls, record: Record) -> VoterSet:
        if record.value is None:
            raise CorruptRecordError("VotersRecord without a value")
        msg = VotersRecord.decode(record.value, 0)
        voters = tuple(VoterNode(v.voter_id, v.voter_directory_id,
                                 tuple((e.name, e.host, e.port) for e in v.endpoints),
                                 (v.k_raft_version_feature.min_supported_version,
                                  v.k_raft_version_feature.max_supported_version)) for v in msg.voters)
        if len({v.node_id for v in voters}) != len(voters):
            raise CorruptRecordError("VotersRecord names a voter twice")
        return cls(voters)


def kraft_version_record(level: int) -> Record:
    return Record(value=KRaftVersionRecord(version=0, k_raft_version=level).encode(0),
                  key=control_key(ControlType.KRAFT_VERSION))


@dataclass(frozen=True, slots=True)
class ControlState:
    """What the KIP-853 control records up to some offset say: kraft.version and the latest voter set."""

    kraft_version: int = 0
    voters: VoterSet | None = None
    voters_offset: int = -1     # offset of the VotersRecord in force (-1: from a snapshot, or none)


def replay_control(state: ControlState, batches: Iterable[RecordBatch], *, in_snapshot: bool = False) -> ControlState:
    """``state`` after the KRaftVersion and Voters control records of ``batches`` (others are skipped)."""
    kv, voters, at = state.kraft_version, state.voters, state.voters_offset
    for b in batches:
        if not b.control:
            continue
        for i, rec in enumerate(b.records):
            kind = control_type(rec)
            if kind == ControlType.KRAFT_VERSION and rec.value is not None:
                kv = KRaftVersionRecord.decode(rec.value, 0).k_raft_version
            elif kind == ControlType.KRAFT_VOTERS:
                voters, at = VoterSet.from_record(rec), (-1 if in_snapshot else b.base_offset + i)
    return ControlState(kv, voters, at)


def control_scan(log: Any, scan_bytes: int = 8 << 20) -> tuple[ControlState, Iterator[list[RecordBatch]]]:
    """The control state of ``log``'s newest snapshot, and the log's batches after it in chunks of at most
    ``scan_bytes`` (``log``: a FileLog, MemoryLog or any ReplicatedLog)."""
    base = ControlState()
    sid = log.latest_snapshot_id()
    if sid is not None:
        base = replay_control(base, log.read_snapshot(sid), in_snapshot=True)
    start = log.start_offset if sid is None else max(sid.end_offset, log.start_offset)

    def chunks() -> Iterator[list[RecordBatch]]:
        offset = start
        while offset < log.end_offset:
            batches = log.read(offset, scan_bytes)
            if not batches:
                return
            yield batches
            offset = batches[-1].next_offset

    return base, chunks()


def read_control_state(log: Any) -> ControlState:
    """kraft.version and the voter set in force at the end of ``log``."""
    state, chunks = control_scan(log)
    for batches in chunks:
        state = replay_control(state, batches)
    return state


def bootstrap_snapshot(voters: VoterSet, timestamp_ms: int = 0) -> list[RecordBatch]:
    """The 0-0 snapshot Kafka's ``format --standalone | --initial-controllers`` writes: header,
    KRaftVersionRecord(1) and VotersRecord in one control batch, then the footer."""
    from kraftwire.protocol.control import snapshot_footer_record, snapshot_header_record

    first = (snapshot_header_record(last_contained_log_timestamp=timestamp_ms), kraft_version_record(1),
             voters.to_record())
    return [RecordBatch(0, 0, first, control=True, base_timestamp=timestamp_ms),
            RecordBatch(len(first), 0, (snapshot_footer_record(),), control=True, base_timestamp=timestamp_ms)]
