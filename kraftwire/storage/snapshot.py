"""KIP-630 snapshot files: naming, framing, validation and the per-directory snapshot store.

A snapshot of the metadata log is the file ``<endOffset:020d>-<epoch:010d>.checkpoint`` in the
partition directory. Its content is a run of v2 record batches whose offsets count from 0 inside
the file, all stamped with the snapshot's epoch: a control batch whose first record is a
SnapshotHeaderRecord, batches of framed metadata records, and a control batch holding the
SnapshotFooterRecord. Files are written as ``<name>.checkpoint.part``, fsynced, renamed and the
directory fsynced, so a crash leaves either no snapshot or a whole one; leftover ``.part`` files
(and ``.deleted`` ones, Kafka's rename-before-delete) are removed when the store opens.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.metadata import MetadataRecord, decode_record, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import check_framing, frame
from kraftwire.raft.snapshot import encode as encode_batches
from kraftwire.raft.snapshot import parse as parse_snapshot
from kraftwire.storage.fsutil import atomic_write, fsync_dir
from kraftwire.storage.journal import DiskJournal

__all__ = ["SnapshotStore", "check_framing", "encode_batches", "frame_snapshot", "parse_snapshot",
           "parse_snapshot_name", "snapshot_name", "snapshot_records"]

log = logging.getLogger(__name__)

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETED_SUFFIX = SUFFIX + ".deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$")
DEFAULT_BATCH_BYTES = 1 << 20


def snapshot_name(sid: SnapshotId) -> str:
    return f"{sid.end_offset:020d}-{sid.epoch:010d}{SUFFIX}"


def parse_snapshot_name(name: str) -> tuple[SnapshotId, str] | None:
    """(id, "" | ".part" | ".deleted") for a snapshot file name, else None."""
    m = _NAME.match(name)
    if m is None:
        return None
    return SnapshotId(int(m.group(1)), int(m.group(2))), m.group(3) or ""


# -- content ----------------------------------------------------------------------------------------
def frame_snapshot(sid: SnapshotId, records: Iterable[MetadataRecord], *, timestamp_ms: int = 0,
                   last_contained_timestamp_ms: int = 0,
                   max_batch_bytes: int = DEFAULT_BATCH_BYTES) -> list[RecordBatch]:
    """The batches of a snapshot file holding metadata ``records`` (header, data batches, footer)."""
    return frame(sid, (Record(value=encode_record(r.message, r.version)) for r in records),
                 timestamp_ms=timestamp_ms, last_contained_timestamp_ms=last_contained_timestamp_ms,
                 max_batch_bytes=max_batch_bytes)




def snapshot_records(batches: Iterable[RecordBatch]) -> list[MetadataRecord]:
    """The framed metadata records of a snapshot (control batches skipped)."""
    return [decode_record(r.value) for b in batches if not b.control
            for r in b.records if r.value is not None]



# -- files ------------------------------------------------------------------------------------------
def write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via ``path.part``: write, fsync, rename, fsync the directory."""
    atomic_write(path, data, suffix=".part")


class SnapshotStore:
    """The snapshot files of one partition directory."""

    def __init__(self, directory: Path, journal: DiskJournal | None = None) -> None:
        self.dir = Path(directory)
        self.journal = journal   # with one, writes and removals are queued for the disk worker
        self._sizes: dict[SnapshotId, int] = {}   # held snapshots and their sizes (FetchSnapshot asks, no stat)
        self._unwritten: dict[SnapshotId, bytes] = {}   # held, and served from memory, until on disk
        for path in self.dir.iterdir():
            parsed = parse_snapshot_name(path.name)
            if parsed is None:
                continue
            sid, kind = parsed
            if kind:
                log.info("%s: removing an unfinished or deleted snapshot file", path)
                path.unlink(missing_ok=True)
            else:
                self._sizes[sid] = path.stat().st_size

    def ids(self) -> list[SnapshotId]:
        """Held snapshots, oldest first."""
        return sorted(self._sizes, key=lambda s: (s.end_offset, s.epoch))

    def latest(self) -> SnapshotId | None:
        ids = self.ids()
        return ids[-1] if ids else None

    def earliest(self) -> SnapshotId | None:
        ids = self.ids()
        return ids[0] if ids else None

    def __contains__(self, sid: object) -> bool:
        return sid in self._sizes

    def path(self, sid: SnapshotId) -> Path:
        return self.dir / snapshot_name(sid)

    def _held(self, sid: SnapshotId) -> Path:
        if sid not in self._sizes:
            raise KeyError(f"no snapshot {snapshot_name(sid)} in {self.dir}")
        return self.path(sid)

    def write(self, sid: SnapshotId, data: bytes) -> None:
        """Hold a snapshot: written durably at once, or (with a journal) queued and served from memory
        until the disk worker has written it; anything queued after it (log cleaning) runs after."""
        if self.journal is None:
            write_durably(self.path(sid), data)
        else:
            self._unwritten[sid] = data
            self.journal.call(lambda: self._store(sid, data))
        self._sizes[sid] = len(data)

    def _store(self, sid: SnapshotId, data: bytes) -> None:
        """(The disk worker.) The file is in place before the in-memory copy is dropped."""
        write_durably(self.path(sid), data)
        if self._unwritten.get(sid) is data:
            del self._unwritten[sid]

    def size(self, sid: SnapshotId) -> int:
        """The snapshot's size in bytes, known since it was written or opened (KeyError: not held)."""
        if sid not in self._sizes:
            raise KeyError(f"no snapshot {snapshot_name(sid)} in {self.dir}")
        return self._sizes[sid]

    def read_chunk(self, sid: SnapshotId, position: int, max_bytes: int) -> bytes:
        if position < 0 or max_bytes < 0:
            raise ValueError(f"bad snapshot read position {position} / size {max_bytes}")
        data = self._unwritten.get(sid)
        if data is not None and sid in self._sizes:
            return data[position:position + max_bytes]
        with open(self._held(sid), "rb") as f:
            return os.pread(f.fileno(), max_bytes, position)

    def read(self, sid: SnapshotId) -> list[RecordBatch]:
        path = self._held(sid)
        data = self._unwritten.get(sid)
        try:
            return parse_snapshot(data if data is not None else path.read_bytes())
        except CorruptRecordError as e:
            raise CorruptRecordError(f"{path}: {e}") from None

    def remove(self, sids: Iterable[SnapshotId]) -> None:
        """Forget and delete these snapshots."""
        gone = [s for s in sids if s in self._sizes]
        for s in gone:
            self._sizes.pop(s, None)
            self._unwritten.pop(s, None)
            if self.journal is None:
                self.path(s).unlink(missing_ok=True)
            else:
                self.journal.unlink(self.path(s))
        if gone and self.journal is None:
            fsync_dir(self.dir)
        elif gone:
            self.journal.fsync_dir(self.dir)

    def delete_before(self, sid: SnapshotId) -> list[SnapshotId]:
        """Delete every snapshot older than ``sid``; returns the ids removed."""
        gone = [s for s in self._sizes if (s.end_offset, s.epoch) < (sid.end_offset, sid.epoch)]
        self.remove(gone)
        return gone
