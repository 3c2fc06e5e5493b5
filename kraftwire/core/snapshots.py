"""Taking a replica's metadata snapshot and cleaning its log, without I/O of its own.

Every replica of ``__cluster_metadata`` (voters and broker observers, as in Kafka) snapshots the
image it replayed under its ``Snapshotter`` policy, then deletes the log below the snapshot when
retention allows. The steps are split so that a shell can frame the (immutable) image wherever it
likes: the server in a worker thread, the simulator inline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kraftwire.metadata.image import MetadataImage
from kraftwire.metadata.snapshot import Snapshotter, snapshot_batches
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId

log = logging.getLogger(__name__)


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


def store_snapshot(snap: Snapshotter, core: Any, sid: SnapshotId, batches: list[RecordBatch]) -> bool:
    """Hand framed batches to the Raft core; False when the log moved on meanwhile."""
    try:
        core.create_snapshot(sid, batches)
    except (ValueError, KeyError) as e:   # e.g. a newer snapshot was installed from the leader
        log.info("snapshot %s not stored: %s", sid, e)
        return False
    snap.stored(sid)
    log.info("metadata snapshot stored at offset %d epoch %d", sid.end_offset, sid.epoch)
    return True


def clean_log(snap: Snapshotter, core: Any, now: int) -> SnapshotId | None:
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
