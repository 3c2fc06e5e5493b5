"""Shared builders for the storage tests: logs, records, simulated crashes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.storage import journal as journal_module
from kraftwire.storage import log as log_module
from kraftwire.storage.log import FileLog

PARTITION = "__cluster_metadata-0"


def recs(n: int, tag: str = "r") -> list[Record]:
    return [Record(value=f"{tag}{i}".encode()) for i in range(n)]


def open_log(root: Path, **kw: Any) -> FileLog:
    return FileLog(root / PARTITION, **kw)


def all_records(log: Any) -> list[tuple[int, int, bytes | None]]:
    """(offset, epoch, value) of every record held, from the start offset."""
    out = []
    offset = log.start_offset
    while offset < log.end_offset:
        batches = log.read(offset, 1 << 30)
        assert batches, f"no batch at {offset}"
        for b in batches:
            for i, r in enumerate(b.records):
                if b.base_offset + i >= offset:
                    out.append((b.base_offset + i, b.leader_epoch, r.value))
            offset = b.next_offset
    return out


def batches_of(log: Any) -> list[RecordBatch]:
    return log.read(log.start_offset, 1 << 30) if log.end_offset > log.start_offset else []


class _TrackingOs:
    """``os`` as seen by kraftwire.storage.log, remembering each file's size at its last fsync."""

    def __init__(self) -> None:
        self.durable: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777) -> int:
        existed = os.path.exists(path)
        fd = os.open(path, flags, mode)
        if not existed:
            self.durable[os.readlink(f"/proc/self/fd/{fd}")] = 0
        return fd

    def fsync(self, fd: int) -> None:
        os.fsync(fd)
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if os.path.isfile(path):
            self.durable[path] = os.fstat(fd).st_size


class PowerLoss:
    """Simulates losing the page cache: unfsynced bytes of segment files vanish at ``crash``.

    Install with ``PowerLoss.install(monkeypatch_like)``; ``crash(log, extra)`` closes the log's
    files without flushing, then cuts every segment to its last fsynced size plus ``extra`` bytes
    of what was written after it (a partially persisted write).
    """

    def __init__(self) -> None:
        self.os = _TrackingOs()

    def __enter__(self) -> PowerLoss:
        self._saved = log_module.os
        log_module.os = self.os  # type: ignore[assignment]
        journal_module.os = self.os  # type: ignore[assignment]   (the log's queued fsyncs)
        return self

    def __exit__(self, *exc: object) -> None:
        log_module.os = self._saved  # type: ignore[assignment]
        journal_module.os = self._saved  # type: ignore[assignment]

    def crash(self, log: FileLog, extra: int = 0) -> None:
        for seg in log._segments:
            os.close(seg.fd)
            os.close(seg.index_fd)
        log._segments = []
        for path in sorted(log.dir.glob("*.log")):
            size = path.stat().st_size
            keep = min(size, self.os.durable.get(str(path.resolve()), 0) + extra)
            os.truncate(path, keep)
            self.os.durable[str(path.resolve())] = keep
