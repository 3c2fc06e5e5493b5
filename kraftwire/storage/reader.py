"""Read-only access to metadata on disk: a snapshot file, a segment, or a whole log directory.

Unlike ``FileLog`` nothing here repairs or rewrites files, so it is safe to point at a live node's
directory or at a copy. A torn or corrupt tail ends the read with a warning instead of truncating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.metadata import MetadataRecord, decode_record
from kraftwire.protocol.records import RecordBatch, iter_batches
from kraftwire.raft import SnapshotId
from kraftwire.storage import StorageError
from kraftwire.storage.snapshot import parse_snapshot, parse_snapshot_name, snapshot_records

PARTITION_DIR = "__cluster_metadata-0"


class BatchSpan(NamedTuple):
    """Where a batch of the log sits: its offsets, leader epoch and append time (epoch ms)."""

    base: int
    last: int
    epoch: int
    time_ms: int


def batch_span(batch: RecordBatch) -> BatchSpan:
    """A batch's span; its append time is its largest record timestamp (KRaft writes one per batch)."""
    delta = max((r.timestamp_delta for r in batch.records), default=0)
    return BatchSpan(batch.base_offset, batch.last_offset, batch.leader_epoch, batch.base_timestamp + delta)


@dataclass(slots=True)
class MetadataSource:
    """What was read: snapshot records (if any), then log records at their offsets, and the span of
    every batch read (control batches and batches below the snapshot included)."""

    source: str
    snapshot_id: SnapshotId | None = None
    snapshot: list[MetadataRecord] = field(default_factory=list)
    records: list[tuple[int, MetadataRecord]] = field(default_factory=list)
    last_offset: int = -1
    last_epoch: int = -1
    warnings: list[str] = field(default_factory=list)
    batches: list[BatchSpan] = field(default_factory=list)


def read_snapshot_file(path: Path) -> MetadataSource:
    """A ``.checkpoint`` file (a KIP-630 snapshot or Kafka's ``bootstrap.checkpoint``)."""
    try:
        batches = parse_snapshot(Path(path).read_bytes())
        records = snapshot_records(batches)
    except KafkaProtocolError as e:
        raise StorageError(f"{path}: not a valid snapshot ({e})") from None
    parsed = parse_snapshot_name(Path(path).name)
    sid = parsed[0] if parsed is not None and not parsed[1] else None
    out = MetadataSource(str(path), sid, records)
    if sid is not None:
        out.last_offset, out.last_epoch = sid.end_offset - 1, sid.epoch
    return out


def _read_segment(path: Path, out: MetadataSource, skip_below: int, expected: int | None,
                  upto: int | None = None) -> int | None:
    """Append a segment's records (up to offset ``upto`` when given) to ``out``; returns the next
    expected offset, None after a bad tail or past ``upto``."""
    data = path.read_bytes()
    end = 0
    try:
        for batch, pos, size in iter_batches(data, verify_crc=True):
            if expected is not None and batch.base_offset != expected:
                out.warnings.append(f"{path.name}: batch at position {pos} has offset {batch.base_offset}, "
                                    f"expected {expected}; stopping there")
                return None
            if upto is not None and batch.base_offset > upto:
                return None
            end = pos + size
            expected = batch.next_offset
            out.batches.append(batch_span(batch))
            if batch.next_offset <= skip_below:
                continue
            if batch.control:
                if upto is not None and batch.last_offset >= upto:   # the point is a control record
                    out.last_offset, out.last_epoch = upto, batch.leader_epoch
                    return None
                continue
            for i, rec in enumerate(batch.records):
                offset = batch.base_offset + i
                if offset < skip_below or rec.value is None or (upto is not None and offset > upto):
                    continue
                try:
                    out.records.append((offset, decode_record(rec.value)))
                except KafkaProtocolError as e:
                    raise StorageError(f"{path}: record at offset {offset} cannot be decoded ({e})") from None
            out.last_offset, out.last_epoch = batch.last_offset, batch.leader_epoch
            if upto is not None and batch.last_offset >= upto:
                out.last_offset = upto
                return None
    except KafkaProtocolError as e:
        out.warnings.append(f"{path.name}: {e} at position {end}; stopping there")
        return None
    if end != len(data):
        out.warnings.append(f"{path.name}: {len(data) - end} bytes of a partial batch at the end; ignored")
        return None
    return expected


def read_log_dir(path: Path, upto: int | None = None, from_start: bool = False) -> MetadataSource:
    """The latest valid snapshot of a partition (or metadata log) directory plus the segments after it;
    with ``upto``, the image as of that offset: the newest snapshot at or below it plus the records
    up to it (``last_offset`` tells how far the log really went); ``from_start`` also decodes the records
    the snapshot covers (every retained record)."""
    directory = Path(path)
    if (directory / PARTITION_DIR).is_dir():
        directory = directory / PARTITION_DIR
    out = MetadataSource(str(directory))
    snaps = sorted((p for p in directory.iterdir() if (n := parse_snapshot_name(p.name)) and not n[1]),
                   key=lambda p: parse_snapshot_name(p.name)[0].end_offset)  # type: ignore[index]
    if upto is not None:
        snaps = [p for p in snaps if parse_snapshot_name(p.name)[0].end_offset <= upto + 1]  # type: ignore[index]
    for snap in reversed(snaps):
        try:
            loaded = read_snapshot_file(snap)
        except StorageError as e:
            out.warnings.append(f"{e}; trying an older snapshot")
            continue
        out.snapshot_id, out.snapshot = loaded.snapshot_id, loaded.snapshot
        out.last_offset, out.last_epoch = loaded.last_offset, loaded.last_epoch
        break
    segments = sorted(directory.glob("*.log"), key=lambda p: int(p.stem) if p.stem.isdigit() else -1)
    segments = [s for s in segments if s.stem.isdigit()]
    if not segments and out.snapshot_id is None:
        raise StorageError(f"{directory}: no snapshot (*.checkpoint) and no log segment (*.log) found")
    skip_below = out.snapshot_id.end_offset if out.snapshot_id and not from_start else 0
    if segments and int(segments[0].stem) > skip_below and not from_start:
        if upto is not None:
            raise StorageError(f"{directory}: offset {upto} is before the log start {int(segments[0].stem)} "
                               "and no snapshot ends at or below it; pick a later offset or time")
        raise StorageError(f"{directory}: the log starts at offset {int(segments[0].stem)} but no snapshot "
                           f"covers the offsets below it")
    expected: int | None = None
    for seg in segments:
        nxt = _read_segment(seg, out, skip_below, expected, upto)
        if nxt is None:
            break
        expected = nxt
    return out


def read_metadata(path: Path) -> MetadataSource:
    """Dispatch on what ``path`` is: a directory, a ``.log`` segment, or a snapshot file."""
    path = Path(path)
    if path.is_dir():
        return read_log_dir(path)
    if not path.is_file():
        raise StorageError(f"{path}: no such file or directory")
    if path.suffix == ".log":
        out = MetadataSource(str(path))
        _read_segment(path, out, 0, None)
        return out
    return read_snapshot_file(path)
