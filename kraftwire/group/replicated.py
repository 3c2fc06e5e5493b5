"""Committed offsets replicated through a Raft log of their own (sans-I/O).

The voters run a second Raft quorum (``__kraftwire_offsets``-0, same voters as ``__cluster_metadata``)
whose records are the offsets-store records of :mod:`kraftwire.group.store` (one record value = one
``encode_record`` payload). Its leader coordinates every group:

* :class:`OffsetsMachine` is that log's Raft listener on every voter: it applies committed records to a
  :class:`~kraftwire.group.store.StoreState` (the replicated state a new leader starts from) and tracks
  the leader.
* :class:`ReplicatedOffsetStore` is the leader coordinator's :class:`~kraftwire.group.store.OffsetStore`:
  ``append`` hands the records to Raft (``NotLeaderError`` becomes ``OSError``, which the coordinator
  answers COORDINATOR_NOT_AVAILABLE) and remembers the last offset, which the shell waits to see
  committed before it lets the answers out.
* :class:`OffsetsSnapshotter` says when a replica snapshots its state (the node core's ``TakeSnapshot``,
  framed by the shell off the event loop as the metadata quorum's; ``OffsetsSnapshotJob.frame``) and
  cleans its log below it.
* :func:`missing` picks the records of a legacy local ``offsets.log`` that the replicated state lacks
  (upgrades import them; a partition already committed through Raft is never overwritten).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from kraftwire.group.store import (
    GroupRecord,
    OffsetRecord,
    StoreRecord,
    StoreState,
    decode_record,
    encode_record,
)
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import data_batches, frame

__all__ = ["IMPORT_CLIENT_ID", "OFFSETS_TOPIC", "SNAPSHOT_MIN_RECORDS", "OffsetsMachine", "OffsetsSnapshotJob",
           "OffsetsSnapshotter", "ReplicatedOffsetStore", "missing", "snapshot_batches", "to_raft"]

OFFSETS_TOPIC = "__kraftwire_offsets"
# The client id under which a voter relays its legacy offsets to the leader (imported, never overwriting).
IMPORT_CLIENT_ID = "kraftwire-offsets-import"
# A replica snapshots its offsets state (and cleans its log below) once this many records, and four
# times the live records, were committed since its last snapshot (as the local file compacted).
SNAPSHOT_MIN_RECORDS = 20_000


def to_raft(records: Sequence[StoreRecord]) -> list[Record]:
    """Raft records carrying ``records`` (the value is the store's record payload)."""
    return [Record(value=encode_record(r)) for r in records]


class OffsetsMachine:
    """The replicated offsets state of one voter: a Raft listener over ``__kraftwire_offsets``."""

    def __init__(self) -> None:
        self.state = StoreState()
        self.applied = 0           # next offset to apply (every committed record below it is in ``state``)
        self.applied_epoch = 0     # the leader epoch of the record at ``applied - 1`` (a snapshot's epoch)
        self.leader_id: int | None = None
        self.epoch = 0
        self.undecodable = 0       # records that did not decode (skipped; logged by the shell)
        self.on_change: list[Callable[[], None]] = []

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        for b in batches:
            for r in b.records:
                if r.value is None:
                    continue
                try:
                    self.state.apply(decode_record(r.value))
                except (ValueError, struct.error, UnicodeDecodeError):
                    self.undecodable += 1
            self.applied = b.base_offset + len(b.records)
            self.applied_epoch = b.leader_epoch
        self._changed()

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader_id, self.epoch = leader_id, epoch
        self._changed()

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        """A snapshot replaces the state (its data batches hold every live record)."""
        self.state = StoreState()
        self.applied = 0
        self.handle_commit(data_batches(batches))
        self.applied = end_offset
        self.applied_epoch = batches[0].leader_epoch if batches else 0
        self._changed()

    def _changed(self) -> None:
        for fn in self.on_change:
            fn()


class ReplicatedOffsetStore:
    """The active coordinator's store: appends go to the offsets quorum's leader log.

    ``append_raft`` is the Raft driver's append (raises ``NotLeaderError`` off the leader) and returns
    the offsets of the records; ``state`` is the committed state when the coordinator was built.
    """

    def __init__(self, state: StoreState, append_raft: Callable[[list[Record]], list[int]]) -> None:
        self._state = state
        self._append = append_raft
        self.last_offset = -1      # the offset of the last record appended (the shell waits for its commit)
        self.closed = False

    def load(self) -> StoreState:
        return self._state.copy()

    def append(self, records: Sequence[StoreRecord], *, sync: bool = True) -> None:
        if self.closed:
            raise OSError("this node no longer coordinates the groups")
        if not records:
            return
        try:
            offsets = self._append(to_raft(records))
        except Exception as e:  # NotLeaderError and anything else: nothing was appended
            raise OSError(f"offsets quorum append failed: {e}") from e
        if offsets:
            self.last_offset = max(self.last_offset, offsets[-1])

    def close(self) -> None:
        self.closed = True


def import_request_records(body: object, now: int) -> list[StoreRecord]:
    """The offsets an import OffsetCommit (``IMPORT_CLIENT_ID``) carries, as store records."""
    group = getattr(body, "group_id", "")
    return [OffsetRecord(group, t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                         p.committed_metadata if p.committed_metadata is not None else "", now)
            for t in getattr(body, "topics", []) for p in t.partitions]


def snapshot_batches(state: StoreState, sid: SnapshotId, now_ms: int) -> list[RecordBatch]:
    """A snapshot of the offsets state at ``sid`` (every live record; ``OffsetsMachine.handle_snapshot``
    rebuilds the same state from it)."""
    return frame(sid, to_raft(list(state.records())), timestamp_ms=now_ms)


@dataclass(frozen=True, slots=True)
class OffsetsSnapshotJob:
    """A due snapshot of the offsets state: the committed state at ``sid`` (a copy) and its timestamp."""

    sid: SnapshotId
    state: StoreState
    timestamp_ms: int

    def frame(self) -> list[RecordBatch]:
        """The snapshot's batches (pure; may run in any thread)."""
        return snapshot_batches(self.state, self.sid, self.timestamp_ms)


class OffsetsSnapshotter:
    """When a replica of the offsets quorum snapshots its committed state, and cleans its log below it.

    The node core asks ``job`` after every event (``core/group_role.GroupRole.snapshot_due``); a due
    snapshot is stored with ``stored`` and the log below it cleaned at once (``clean_due``/``cleaned``):
    the offsets log keeps no history beyond its latest snapshot, as the local file compacted.
    """

    kind: ClassVar[str] = "offsets"

    def __init__(self, machine: OffsetsMachine, min_records: int = SNAPSHOT_MIN_RECORDS) -> None:
        self.machine = machine
        self.min_records = min_records
        self.end = 0                              # end offset of the latest snapshot (ours or the leader's)
        self._clean: SnapshotId | None = None     # a stored snapshot the log is still to be cleaned below

    def job(self, now_ms: int, latest: SnapshotId | None) -> OffsetsSnapshotJob | None:
        """The snapshot to take now of the applied state, if ``min_records`` and four times the live
        records were committed since ``latest`` (or since the last one this replica stored)."""
        if latest is not None and latest.end_offset > self.end:
            self.end = latest.end_offset
        m = self.machine
        live = len(m.state.offsets) + len(m.state.groups)
        if m.applied - self.end < max(self.min_records, 4 * live):
            return None
        return OffsetsSnapshotJob(SnapshotId(m.applied, m.applied_epoch), m.state.copy(), now_ms)

    def stored(self, sid: SnapshotId) -> None:
        self.end = max(self.end, sid.end_offset)
        self._clean = sid

    def clean_due(self, now_ms: int) -> SnapshotId | None:
        return self._clean

    def cleaned(self, now_ms: int) -> None:
        self._clean = None


def missing(replicated: StoreState, legacy: Iterable[StoreRecord]) -> list[StoreRecord]:
    """Records of a legacy offsets file the replicated state lacks: offsets of partitions with no
    replicated commit, and group records of groups it does not know (generations are not rolled back)."""
    out: list[StoreRecord] = []
    for r in legacy:
        if isinstance(r, OffsetRecord):
            if (r.group_id, r.topic, r.partition) not in replicated.offsets:
                out.append(r)
        elif isinstance(r, GroupRecord) and r.group_id not in replicated.groups:
            out.append(r)
    return out
