"""What a consumer must see: the committed records of a node's segment files, read as dump-log does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.records import iter_batches


@dataclass(frozen=True)
class LogContents:
    """Non-control records below ``high_watermark`` and the offsets of control records skipped there."""

    records: list[tuple[int, str | None]]  # (offset, value as hex)
    control_offsets: list[int]
    high_watermark: int


def committed_records(log_dir: Path, high_watermark: int) -> LogContents:
    """Read ``*.log`` segments of ``log_dir`` in order, keeping what lies below ``high_watermark``.

    Every batch below the high watermark is whole on disk (the leader writes a batch before it can count
    toward a commit), so a partial batch being written at the tail is simply not reached.
    """
    records: list[tuple[int, str | None]] = []
    control: list[int] = []
    for seg in sorted(log_dir.glob("*.log"), key=lambda p: int(p.stem)):
        try:
            for batch, _, _ in iter_batches(seg.read_bytes(), verify_crc=True):
                for i, rec in enumerate(batch.records):
                    offset = batch.base_offset + i
                    if offset >= high_watermark:
                        return LogContents(records, control, high_watermark)
                    if batch.control:
                        control.append(offset)
                    else:
                        records.append((offset, None if rec.value is None else rec.value.hex()))
        except KafkaProtocolError:  # a batch caught mid-write past the high watermark
            break
    return LogContents(records, control, high_watermark)
