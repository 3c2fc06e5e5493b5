"""Durable state of the group coordinator: committed offsets and a little per-group metadata.

Two implementations of :class:`OffsetStore`:

* :class:`FileOffsetStore` -- an append-only local file, ``<metadata log dir>/__consumer_offsets-kraftwire/
  offsets.log``. Every record is a frame ``[u32 length][u32 CRC-32C of payload][payload]`` (big endian);
  :meth:`~FileOffsetStore.append` with ``sync=True`` fsyncs before returning, so a caller may acknowledge
  the commit afterwards. On open the file is replayed; the first frame that is short or fails its CRC marks
  a torn tail, and the file is truncated there. When the file grows past ``compact_ratio`` times the size of
  the live records (and past ``compact_min_bytes``), it is rewritten: live records go to ``offsets.log.tmp``,
  which is fsynced and renamed over the log, and the directory is fsynced.
* :class:`MemoryOffsetStore` -- the same contract in memory (for tests; "restart" = build a new coordinator
  over the same instance).

Payload layout (format version 0): ``u8 version, u8 type`` then the fields of the record type; strings are
``i32 length + UTF-8`` (length -1 = null).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import crc32c

from kraftwire.storage.fsutil import atomic_write, fsync_dir

log = logging.getLogger(__name__)

STORE_DIR_NAME = "__consumer_offsets-kraftwire"
STORE_FILE_NAME = "offsets.log"
FORMAT_VERSION = 0


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    """A committed offset of one partition for one group."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class OffsetTombstone:
    """Deletes the committed offset of one partition (offset expiry)."""

    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """The durable part of a group: written whenever a new generation forms.

    ``state_timestamp`` is when that generation formed (for an empty generation: when the group emptied).
    """

    group_id: str
    protocol_type: str | None
    generation: int
    protocol_name: str | None = None
    leader: str | None = None
    state_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class GroupTombstone:
    """Deletes a group (and, by convention, the coordinator has already tombstoned its offsets)."""

    group_id: str


StoreRecord = OffsetRecord | OffsetTombstone | GroupRecord | GroupTombstone
PartitionKey = tuple[str, str, int]  # (group id, topic, partition)


@dataclass(slots=True)
class StoreState:
    """The live records: the latest group record per group and the latest offset per partition."""

    groups: dict[str, GroupRecord] = field(default_factory=dict)
    offsets: dict[PartitionKey, OffsetRecord] = field(default_factory=dict)

    def apply(self, record: StoreRecord) -> None:
        if isinstance(record, OffsetRecord):
            self.offsets[(record.group_id, record.topic, record.partition)] = record
        elif isinstance(record, OffsetTombstone):
            self.offsets.pop((record.group_id, record.topic, record.partition), None)
        elif isinstance(record, GroupRecord):
            self.groups[record.group_id] = record
        elif isinstance(record, GroupTombstone):
            self.groups.pop(record.group_id, None)
        else:  # pragma: no cover - type guard
            raise TypeError(f"not a store record: {record!r}")

    def records(self) -> Iterator[StoreRecord]:
        """Every live record, groups first (a compacted log replays to the same state)."""
        yield from self.groups.values()
        yield from self.offsets.values()

    def copy(self) -> StoreState:
        return StoreState(dict(self.groups), dict(self.offsets))


class OffsetStore(Protocol):
    """What the coordinator needs from durable storage."""

    def load(self) -> StoreState:
        """The live state as of the last durable append (called once, when the coordinator starts)."""
        ...

    def append(self, records: Sequence[StoreRecord], *, sync: bool = True) -> None:
        """Append records atomically as far as replay is concerned; durable on return when ``sync``.

        Raises ``OSError`` if the records could not be written; the store is then unchanged.
        """
        ...

    def close(self) -> None: ...


class MemoryOffsetStore:
    """An in-memory :class:`OffsetStore`; ``fail_next`` makes the next append raise (error-path tests)."""

    def __init__(self) -> None:
        self.state = StoreState()
        self.appended: list[StoreRecord] = []
        self.syncs = 0
        self.fail_next: OSError | None = None

    def load(self) -> StoreState:
        return self.state.copy()

    def append(self, records: Sequence[StoreRecord], *, sync: bool = True) -> None:
        if self.fail_next is not None:
            err, self.fail_next = self.fail_next, None
            raise err
        for r in records:
            self.state.apply(r)
        self.appended.extend(records)
        if sync:
            self.syncs += 1

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------
# Record codec

_T_OFFSET, _T_OFFSET_TOMBSTONE, _T_GROUP, _T_GROUP_TOMBSTONE = 1, 2, 3, 4
_FRAME = struct.Struct(">II")  # payload length, CRC-32C of payload
_HEAD = struct.Struct(">BB")
_I32 = struct.Struct(">i")
_P_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
MAX_RECORD_BYTES = 16 << 20


def _put_str(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I32.pack(-1)
    else:
        b = s.encode()
        out += _I32.pack(len(b))
        out += b


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def i32(self) -> int:
        (v,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return v

    def i64(self) -> int:
        (v,) = _I64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return v

    def str(self) -> str | None:
        n = self.i32()
        if n < 0:
            return None
        end = self.pos + n
        if end > len(self.buf):
            raise ValueError("string runs past the record")
        s = self.buf[self.pos:end].decode()
        self.pos = end
        return s

    def req_str(self) -> str:
        s = self.str()
        if s is None:
            raise ValueError("null where a string is required")
        return s


def encode_record(record: StoreRecord) -> bytes:
    """The payload of one record (no frame)."""
    out = bytearray()
    if isinstance(record, OffsetRecord):
        out += _HEAD.pack(FORMAT_VERSION, _T_OFFSET)
        _put_str(out, record.group_id)
        _put_str(out, record.topic)
        out += _P_I32.pack(record.partition)
        out += _I64.pack(record.offset)
        out += _P_I32.pack(record.leader_epoch)
        _put_str(out, record.metadata)
        out += _I64.pack(record.commit_timestamp)
    elif isinstance(record, OffsetTombstone):
        out += _HEAD.pack(FORMAT_VERSION, _T_OFFSET_TOMBSTONE)
        _put_str(out, record.group_id)
        _put_str(out, record.topic)
        out += _P_I32.pack(record.partition)
    elif isinstance(record, GroupRecord):
        out += _HEAD.pack(FORMAT_VERSION, _T_GROUP)
        _put_str(out, record.group_id)
        _put_str(out, record.protocol_type)
        out += _P_I32.pack(record.generation)
        _put_str(out, record.protocol_name)
        _put_str(out, record.leader)
        out += _I64.pack(record.state_timestamp)
    elif isinstance(record, GroupTombstone):
        out += _HEAD.pack(FORMAT_VERSION, _T_GROUP_TOMBSTONE)
        _put_str(out, record.group_id)
    else:
        raise TypeError(f"not a store record: {record!r}")
    return bytes(out)


def decode_record(payload: bytes) -> StoreRecord:
    """Inverse of :func:`encode_record`; raises ``ValueError``/``struct.error`` on malformed input."""
    version, kind = _HEAD.unpack_from(payload, 0)
    if version != FORMAT_VERSION:
        raise ValueError(f"unknown offsets-store record version {version}")
    r = _Reader(payload)
    r.pos = 2
    rec: StoreRecord
    if kind == _T_OFFSET:
        rec = OffsetRecord(r.req_str(), r.req_str(), r.i32(), r.i64(), r.i32(), r.str(), r.i64())
    elif kind == _T_OFFSET_TOMBSTONE:
        rec = OffsetTombstone(r.req_str(), r.req_str(), r.i32())
    elif kind == _T_GROUP:
        rec = GroupRecord(r.req_str(), r.str(), r.i32(), r.str(), r.str(), r.i64())
    elif kind == _T_GROUP_TOMBSTONE:
        rec = GroupTombstone(r.req_str())
    else:
        raise ValueError(f"unknown offsets-store record type {kind}")
    if r.pos != len(payload):
        raise ValueError("trailing bytes in offsets-store record")
    return rec


def frame(payload: bytes) -> bytes:
    return _FRAME.pack(len(payload), crc32c.crc32c(payload)) + payload


def scan_frames(data: bytes) -> tuple[list[StoreRecord], int]:
    """Decode frames from the start of ``data``; returns the records and the end of the last good one.

    Stops at the first frame that is incomplete, fails its CRC or does not decode (a torn tail).
    """
    records: list[StoreRecord] = []
    pos = 0
    n = len(data)
    while pos + _FRAME.size <= n:
        length, crc = _FRAME.unpack_from(data, pos)
        start = pos + _FRAME.size
        end = start + length
        if length > MAX_RECORD_BYTES or end > n:
            break
        payload = data[start:end]
        if crc32c.crc32c(payload) != crc:
            break
        try:
            records.append(decode_record(payload))
        except (ValueError, struct.error, UnicodeDecodeError):
            break
        pos = end
    return records, pos


class FileOffsetStore:
    """The append-only file store (see the module docstring for the format).

    ``directory`` is the store's own directory (use :func:`store_dir` to derive it from the metadata log
    directory); it is created if missing. Not thread-safe: use it from the coordinator's caller only.
    """

    def __init__(self, directory: str | os.PathLike[str], *, compact_ratio: float = 4.0,
                 compact_min_bytes: int = 1 << 20, fsync: bool = True) -> None:
        self.dir = Path(directory)
        self.path = self.dir / STORE_FILE_NAME
        self.tmp_path = self.dir / (STORE_FILE_NAME + ".tmp")
        self.compact_ratio = compact_ratio
        self.compact_min_bytes = compact_min_bytes
        self.fsync = fsync
        self.state = StoreState()
        self.live_bytes = 0  # framed size of the live records
        self.size = 0  # bytes of the log file
        self.compactions = 0
        self.truncated_bytes = 0  # torn tail dropped on open
        self._f = None
        self._open()

    # -- lifecycle ---------------------------------------------------------------------------

    def _open(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.tmp_path.unlink()  # a compaction that never got renamed
        except FileNotFoundError:
            pass
        data = self.path.read_bytes() if self.path.exists() else b""
        records, good = scan_frames(data)
        for r in records:
            self.state.apply(r)
        f = open(self.path, "r+b" if self.path.exists() else "w+b")  # noqa: SIM115 - kept open
        if good < len(data):
            self.truncated_bytes = len(data) - good
            log.warning("offsets store %s: ignoring a torn tail of %d bytes at offset %d",
                        self.path, self.truncated_bytes, good)
            f.truncate(good)
            if self.fsync:
                os.fsync(f.fileno())
        f.seek(good)
        self._f = f
        self.size = good
        self.live_bytes = self._measure_live()
        if not self.path.exists():  # pragma: no cover - created by open() above
            raise OSError(f"could not create {self.path}")
        if self.fsync and not data:
            fsync_dir(self.dir)

    def _measure_live(self) -> int:
        return sum(len(encode_record(r)) + _FRAME.size for r in self.state.records())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    # -- the OffsetStore contract ------------------------------------------------------------

    def load(self) -> StoreState:
        return self.state.copy()

    def append(self, records: Sequence[StoreRecord], *, sync: bool = True) -> None:
        if self._f is None:
            raise OSError("offsets store is closed")
        if not records:
            return
        blob = b"".join(frame(encode_record(r)) for r in records)
        f = self._f
        try:
            f.write(blob)
            f.flush()
            if sync and self.fsync:
                os.fsync(f.fileno())
        except OSError:
            # Leave no partial frame behind: later appends would otherwise sit after a torn record.
            try:
                f.truncate(self.size)
                f.seek(self.size)
            except OSError:  # pragma: no cover - disk gone; refuse further writes
                self.close()
            raise
        self.size += len(blob)
        self._apply_live(records)
        if self.size > self.compact_min_bytes and self.size > self.compact_ratio * max(self.live_bytes, 1):
            self.compact()

    def _apply_live(self, records: Iterable[StoreRecord]) -> None:
        for r in records:
            old = self._live_for(r)
            if old is not None:
                self.live_bytes -= len(encode_record(old)) + _FRAME.size
            self.state.apply(r)
            new = self._live_for(r)
            if new is not None:
                self.live_bytes += len(encode_record(new)) + _FRAME.size

    def _live_for(self, r: StoreRecord) -> StoreRecord | None:
        if isinstance(r, OffsetRecord | OffsetTombstone):
            return self.state.offsets.get((r.group_id, r.topic, r.partition))
        return self.state.groups.get(r.group_id)

    def compact(self) -> None:
        """Rewrite the log to its live records: temp file, fsync, rename, directory fsync."""
        blob = b"".join(frame(encode_record(r)) for r in self.state.records())
        atomic_write(self.path, blob, suffix=".tmp", sync=self.fsync)
        if self._f is not None:
            self._f.close()
        self._f = open(self.path, "r+b")  # noqa: SIM115 - kept open
        self._f.seek(0, os.SEEK_END)
        self.size = len(blob)
        self.live_bytes = len(blob)
        self.compactions += 1
        log.info("offsets store %s compacted to %d bytes", self.path, self.size)


def store_dir(metadata_log_dir: str | os.PathLike[str]) -> Path:
    """Where a node keeps its offsets store, given its metadata log directory."""
    return Path(metadata_log_dir) / STORE_DIR_NAME
