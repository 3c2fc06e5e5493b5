"""``PartitionView`` over a node's Raft core and log: what consumers may see of ``__cluster_metadata``."""

from __future__ import annotations

import struct
from typing import Any

_BASE_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch header


def _whole_batches_below(data: bytes, hw: int, max_bytes: int) -> bytes:
    """The leading whole batches of ``data`` that end below ``hw`` and fit ``max_bytes`` (the first always
    fits). Only headers are read: serving a Fetch does not decode records (clients check the CRCs)."""
    pos = 0
    while pos + 27 <= len(data):
        base, length = _BASE_AND_LENGTH.unpack_from(data, pos)
        size = 12 + length
        if pos + size > len(data) or base + _LAST_OFFSET_DELTA.unpack_from(data, pos + 23)[0] >= hw:
            break
        if pos and pos + size > max_bytes:
            break
        pos += size
    return data[:pos]


class LogPartitionView:
    """Leader, epoch and committed data of the local replica, read live from the core and the log."""

    def __init__(self, core: Any, log: Any) -> None:
        self.core = core
        self.log = log

    @property
    def leader_id(self) -> int:
        leader = self.core.leader_id
        return -1 if leader is None else leader

    @property
    def leader_epoch(self) -> int:
        return self.core.epoch

    @property
    def high_watermark(self) -> int:
        hw = self.core.hw
        return 0 if hw is None or hw < 0 else hw

    @property
    def log_start_offset(self) -> int:
        return self.log.start_offset

    def read_committed_raw(self, offset: int, max_bytes: int) -> bytes:
        hw = self.high_watermark
        if hasattr(self.log, "read_raw"):
            return _whole_batches_below(self.log.read_raw(offset, max_bytes), hw, max_bytes)
        out = bytearray()
        for batch in self.log.read(offset, max_bytes):
            if batch.last_offset >= hw:
                break
            raw = batch.raw
            if raw is None:
                from kraftwire.protocol.records import encode_batch

                raw = encode_batch(batch)
            if out and len(out) + len(raw) > max_bytes:
                break
            out += raw
        return bytes(out)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First committed record with timestamp >= ``timestamp``; -1 asks for the max timestamp."""
        hw = self.high_watermark
        offset = self.log.start_offset
        best: tuple[int, int] | None = None
        while offset < hw:
            batches = self.log.read(offset, 1 << 20)
            if not batches:
                break
            for batch in batches:
                for i, rec in enumerate(batch.records):
                    off = batch.base_offset + i
                    if off < offset or off >= hw:
                        continue
                    ts = batch.base_timestamp + rec.timestamp_delta
                    if timestamp == -1:
                        if best is None or ts > best[1]:
                            best = (off, ts)
                    elif ts >= timestamp:
                        return off, ts
                offset = max(offset, batch.next_offset)
        return best
