"""Taking a replica's snapshot and cleaning its log, without I/O of its own: one path for both quorums.

Every replica of ``__cluster_metadata`` (voters and broker observers, as in Kafka) snapshots the
image it replayed under its ``Snapshotter`` policy, then deletes the log below the snapshot when
retention allows; every replica of the voters' offsets quorum snapshots its offsets state under
``group/replicated.OffsetsSnapshotter`` and cleans below it at once. Either way the node core emits
``TakeSnapshot(job)``, the shell frames the job (``FramingJob.frame``: pure, slow; the server in a
worker thread, the simulator inline) and hands the batches back to ``NodeCore.snapshot_framed``,
which stores them (``store_snapshot``) and cleans the log (``clean_log``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kraftwire.metadata.image import MetadataImage
from kraftwire.metadata.snapshot import Snapshotter, snapshot_batches
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId

log = logging.getLogger(__name__)


class FramingJob(Protocol):
    """A due snapshot the shell frames off the event loop: its id and its batches."""

    @property
    def sid(self) -> SnapshotId: ...

    def frame(self) -> list[RecordBatch]: ...


class SnapshotPolicy(Protocol):
    """What ``store_snapshot`` and ``clean_log`` report to and ask of a replica's snapshot policy
    (``metadata/snapshot.Snapshotter``, ``group/replicated.OffsetsSnapshotter``)."""

    kind: ClassVar[str]   # what the snapshots hold, for the log line: "metadata", "offsets"

    def stored(self, sid: SnapshotId) -> None: ...
    def clean_due(self, now_ms: int) -> SnapshotId | None: ...
    def cleaned(self, now_ms: int) -> None: ...


@dataclass(frozen=True, slots=True)
class SnapshotJob:
    """A due snapshot: the committed image at ``sid`` and what its header records."""

    sid: SnapshotId
    image: MetadataImage
    timestamp_ms: int
    last_contained_timestamp_ms: int
    control: tuple[Record, ...] = ()

    def frame(self) -> list[RecordBatch]:
        """The snapshot's batches (pure; may run in any thread)."""
        return snapshot_batches(self.image, self.sid, timestamp_ms=self.timestamp_ms,
                                last_contained_timestamp_ms=self.last_contained_timestamp_ms, control=self.control)


def snapshot_due(snap: Snapshotter, core: Any, ctl: Any, now: int) -> SnapshotJob | None:
    """The snapshot to take now, if the policy says so and ``ctl``'s committed image is exactly the
    state below the snapshot's end offset (and no metadata transaction is open there)."""
    sid = snap.due(now, core.log.latest_snapshot_id())
    if sid is None or ctl.committed_offset != sid.end_offset - 1 or ctl.in_transaction:
        return None
    return SnapshotJob(sid, ctl.committed_image, now, snap.last_timestamp_ms, snap.control)


def store_snapshot(snap: SnapshotPolicy, core: Any, sid: SnapshotId, batches: list[RecordBatch]) -> bool:
    """Hand framed batches to the Raft core; False when the log moved on meanwhile."""
    try:
        core.create_snapshot(sid, batches)
    except (ValueError, KeyError) as e:   # e.g. a newer snapshot was installed from the leader
        log.info("snapshot %s not stored: %s", sid, e)
        return False
    snap.stored(sid)
    log.info("%s snapshot stored at offset %d epoch %d", snap.kind, sid.end_offset, sid.epoch)
    return True


def clean_log(snap: SnapshotPolicy, core: Any, now: int) -> SnapshotId | None:
    """Delete the log below the latest snapshot when retention says so; the snapshot cleaned below."""
    clean = snap.clean_due(now)
    if clean is None:
        return None
    try:
        core.delete_before(clean)
    except (ValueError, KeyError) as e:
        log.info("log not cleaned below snapshot %s: %s", clean, e)
        clean = None
    snap.cleaned(now)
    return clean
