"""Snapshot content as the Raft layer sees it (KIP-630): framing, validation, bytes.

A snapshot is a run of v2 batches stamped with the snapshot's epoch, offsets counting from 0 inside
the snapshot: a control batch opening with a SnapshotHeaderRecord, data batches, and a control batch
holding the SnapshotFooterRecord. These helpers are pure (no files); kraftwire.storage keeps the
checkpoint files, the in-memory log keeps the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from kraftwire.protocol.control import (
    ControlType,
    control_type,
    snapshot_footer_record,
    snapshot_header_record,
)
from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.records import Record, RecordBatch, encode_batch, iter_batches
from kraftwire.protocol.runtime import gc_paused
from kraftwire.raft.log import SnapshotId

DEFAULT_BATCH_BYTES = 1 << 20


def frame(sid: SnapshotId, records: Iterable[Record], *, timestamp_ms: int = 0,
          last_contained_timestamp_ms: int = 0, max_batch_bytes: int = DEFAULT_BATCH_BYTES,
          control: Sequence[Record] = ()) -> list[RecordBatch]:
    """Header batch, ``records`` cut into batches of about ``max_batch_bytes``, footer batch.

    ``control`` records follow the header in its batch, as Kafka puts KRaftVersionRecord and VotersRecord
    there in a kraft.version 1 quorum (KIP-853)."""
    header = snapshot_header_record(last_contained_log_timestamp=last_contained_timestamp_ms)
    out = [RecordBatch(0, sid.epoch, (header, *control), control=True, base_timestamp=timestamp_ms)]
    offset = 1 + len(control)
    pending: list[Record] = []
    size = 0
    for rec in records:
        cost = 16 + len(rec.value or b"") + len(rec.key or b"")
        if pending and size + cost > max_batch_bytes:
            out.append(RecordBatch(offset, sid.epoch, tuple(pending), base_timestamp=timestamp_ms))
            offset += len(pending)
            pending, size = [], 0
        pending.append(rec)
        size += cost
    if pending:
        out.append(RecordBatch(offset, sid.epoch, tuple(pending), base_timestamp=timestamp_ms))
        offset += len(pending)
    out.append(RecordBatch(offset, sid.epoch, (snapshot_footer_record(),), control=True,
                           base_timestamp=timestamp_ms))
    return out


def check_framing(batches: Sequence[RecordBatch]) -> None:
    """Raise CorruptRecordError unless ``batches`` open with a header and close with a footer."""
    if not batches:
        raise CorruptRecordError("snapshot has no batches")
    first, last = batches[0], batches[-1]
    if not (first.control and first.records and control_type(first.records[0]) == ControlType.SNAPSHOT_HEADER):
        raise CorruptRecordError("snapshot does not start with a SnapshotHeaderRecord control batch")
    if not (last.control and last.records and control_type(last.records[-1]) == ControlType.SNAPSHOT_FOOTER):
        raise CorruptRecordError("snapshot does not end with a SnapshotFooterRecord control batch")


def with_raw(batches: Sequence[RecordBatch]) -> list[RecordBatch]:
    """The same batches carrying their encoded bytes, so storing them later costs no encoding."""
    return [b if b.raw is not None else replace(b, raw=encode_batch(b)) for b in batches]


def encode(batches: Sequence[RecordBatch]) -> bytes:
    return b"".join(b.raw if b.raw is not None else encode_batch(b) for b in batches)


def parse(data: bytes) -> list[RecordBatch]:
    """Every batch of a whole snapshot, CRCs and framing checked (CorruptRecordError otherwise)."""
    batches: list[RecordBatch] = []
    end = 0
    with gc_paused():
        for batch, pos, size in iter_batches(data, verify_crc=True):
            batches.append(batch)
            end = pos + size
    if end != len(data):
        raise CorruptRecordError(f"snapshot has {len(data) - end} bytes after its last whole batch")
    check_framing(batches)
    return batches


def data_batches(batches: Iterable[RecordBatch]) -> list[RecordBatch]:
    """The non-control batches of a snapshot (its content)."""
    return [b for b in batches if not b.control]
