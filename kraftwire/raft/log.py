"""Interfaces the Raft core is given: the replicated log and the quorum-state store.

The core never touches files or sockets; it calls these. ``kraftwire.raft.memory`` has in-memory
implementations for the simulator and unit tests; ``kraftwire.storage`` has durable ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kraftwire.protocol.records import Record, RecordBatch


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A log position: an offset and the leader epoch it belongs to (order: offset first)."""

    offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """A snapshot covers every offset below ``end_offset``; ``epoch`` is the epoch of the last one."""

    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What ``quorum-state`` holds: the epoch and, within it, the known leader or the granted vote."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    voters: frozenset[int] = frozenset()


class LogTruncationError(Exception):
    """Asked to remove offsets that are known committed (below the high watermark)."""


class ReplicatedLog(Protocol):
    """The metadata log as the Raft core sees it. Offsets are contiguous from ``start_offset``."""

    @property
    def start_offset(self) -> int:
        """First offset still held in the log (the latest snapshot's end offset after cleaning)."""

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the offset the next appended record gets."""

    @property
    def flushed_offset(self) -> int:
        """Every offset below this is durable and survives a crash."""

    def last_epoch(self) -> int:
        """Epoch of the last batch, else of the latest snapshot, else 0."""

    def append_as_leader(self, records: Sequence[Record], epoch: int, *, control: bool = False,
                         timestamp_ms: int = 0) -> RecordBatch:
        """Append one batch at ``end_offset`` in ``epoch`` and return it with its offsets assigned."""

    def append_as_follower(self, batches: Sequence[RecordBatch]) -> None:
        """Append batches copied from the leader; the first must start at ``end_offset``."""

    def read(self, start_offset: int, max_bytes: int) -> list[RecordBatch]:
        """Whole batches from the one containing ``start_offset``; at least one if any exists."""

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or above ``offset`` (and the epoch entries that start there)."""

    def flush(self) -> None:
        """Make everything appended so far durable (``flushed_offset`` becomes ``end_offset``)."""

    def sync(self) -> None:
        """Make what was appended before the call durable without recording it; may run in another
        thread than every other method (the shell then reports it with ``mark_flushed``)."""

    def mark_flushed(self, offset: int) -> None:
        """A ``sync`` that began when the log ended at ``offset`` has completed."""

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Largest epoch <= ``epoch`` held here and the offset where it ends (Kafka's semantics).

        Returns ``OffsetAndEpoch(end_offset, epoch)`` of that epoch: the first offset of the next
        larger epoch, or the LEO if it is the last. If no such epoch exists, ``(start_offset or 0, 0)``
        per the snapshot, matching Kafka's ``endOffsetForEpoch``.
        """

    def latest_snapshot_id(self) -> SnapshotId | None:
        """The newest snapshot held, if any."""

    # -- snapshots (KIP-630). A snapshot file is a sequence of v2 batches: a SnapshotHeaderRecord
    # control batch, metadata record batches, a SnapshotFooterRecord control batch.

    def create_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        """Durably store a snapshot (complete file content as ``batches``) covering offsets below
        ``snapshot_id.end_offset``, which must be <= the high watermark the caller knows."""

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        """Size in bytes of a stored snapshot; raises KeyError if it is not held."""

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        """Raw bytes of a stored snapshot from ``position`` (FetchSnapshot serving)."""

    def read_snapshot(self, snapshot_id: SnapshotId) -> list[RecordBatch]:
        """All batches of a stored snapshot (header and footer control batches included)."""

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """A follower downloaded ``data`` (a whole snapshot file): store it durably, then replace the
        log with it — every record is removed, ``start_offset == end_offset == flushed_offset ==
        snapshot_id.end_offset`` and ``last_epoch() == snapshot_id.epoch``."""

    def delete_before(self, snapshot_id: SnapshotId) -> None:
        """Log cleaning: drop whole segments/batches entirely below ``snapshot_id.end_offset`` (the
        start offset advances to a batch boundary <= it) and snapshots older than this one."""


class QuorumStateStore(Protocol):
    """Durable election state. ``write`` returns only once the state is durable."""

    def read(self) -> ElectionState | None:
        """The last written state, or None on a fresh node."""

    def write(self, state: ElectionState) -> None:
        """Persist ``state`` atomically."""
