"""``PartitionView`` over a node's Raft core and log: what consumers may see of ``__cluster_metadata``."""

from __future__ import annotations

from typing import Any

from kraftwire.protocol.runtime import BIG_BLOB
from kraftwire.storage.file_slice import FileSlice


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
    def controller_id(self) -> int:
        """The active controller as clients are told it (Metadata, DescribeCluster): -1 unless this node
        knows the leader of the current epoch first-hand (``RaftCore.known_leader_id``)."""
        leader = self.core.known_leader_id
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

    @property
    def latest_snapshot_id(self) -> Any:
        """The newest snapshot (end offset, epoch), None without one: a consumer Fetch below the log start
        is told to read it."""
        return self.log.latest_snapshot_id()

    def read_committed_raw(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, all below the high watermark, as bytes."""
        data = self.read_committed(offset, max_bytes, zero_copy=False)
        return data if isinstance(data, bytes) else data.materialize()

    def read_committed(self, offset: int, max_bytes: int, *, zero_copy: bool = True) -> bytes | FileSlice:
        """``read_committed_raw``, as a ``FileSlice`` of the segment files when it is big enough for the
        encoder to set it aside (``BIG_BLOB``): the answer is then sent without Python touching the bytes.
        The cut is two bisections on the log's batch positions; no batch header is read."""
        hw = self.high_watermark
        if hasattr(self.log, "read_slice"):
            if zero_copy:
                try:
                    data = self.log.read_slice(offset, max_bytes, hw)
                except OSError:   # no descriptor to spare (EMFILE): this answer is read into memory
                    return self.log.read_raw(offset, max_bytes, hw)
                return data if len(data) >= BIG_BLOB else data.materialize()
            return self.log.read_raw(offset, max_bytes, hw)
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
