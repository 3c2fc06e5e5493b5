"""The bootstrap checkpoint: metadata records `storage format` leaves for the first leader to commit.

Kafka writes ``bootstrap.checkpoint`` in the metadata log directory: a snapshot-format file
(header control batch, metadata records, footer control batch). We read and write the same shape.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kraftwire.protocol.control import snapshot_footer_record, snapshot_header_record
from kraftwire.protocol.metadata import MetadataRecord, decode_record, encode_record
from kraftwire.protocol.records import Record, RecordBatch, decode_batches, encode_batch
from kraftwire.storage.fsutil import atomic_write

log = logging.getLogger(__name__)
FILE = "bootstrap.checkpoint"


def write_bootstrap(log_dir: Path, records: list[MetadataRecord], timestamp_ms: int = 0) -> Path:
    """Write the checkpoint atomically (temp file, fsync, rename, directory fsync)."""
    path = Path(log_dir) / FILE
    batches = [
        RecordBatch(0, 0, (snapshot_header_record(last_contained_log_timestamp=timestamp_ms),), control=True),
        RecordBatch(1, 0, tuple(Record(value=encode_record(r.message, r.version)) for r in records)),
        RecordBatch(1 + len(records), 0, (snapshot_footer_record(),), control=True),
    ]
    atomic_write(path, b"".join(encode_batch(b) for b in batches))
    return path


def read_bootstrap(log_dir: Path) -> list[MetadataRecord] | None:
    """The checkpoint's metadata records, or None when there is none (defaults then apply)."""
    path = Path(log_dir) / FILE
    if not path.exists():
        return None
    out = []
    for batch in decode_batches(path.read_bytes()):
        if batch.control:
            continue
        out.extend(decode_record(r.value) for r in batch.records if r.value is not None)
    return out
