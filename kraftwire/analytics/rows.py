"""Metadata log records as flat rows: the pure-Python half of the ``kraftwire`` Spark data source.

Nothing here imports Spark, so the node, tests and tools can use it too. A row holds where the
record sits (file, offsets, epoch, timestamp), what it is (control or metadata, type name/id,
version), the whole record as JSON, and typed copies of the fields most analyses need.

Typed columns are normalised across record types: ``fenced`` is true/false when a record sets the
broker's fencing state (RegisterBrokerRecord, BrokerRegistrationChangeRecord, Fence/Unfence) and
null when it leaves it alone; ``leader``/``isr``/``replicas`` are null on a PartitionChangeRecord
that does not change them; a LeaderChange control record puts the elected replica in ``leader``.
Topic ids use Kafka's printable form (URL-safe base64 without padding, as kafka-topics shows them).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwire.protocol.control import CONTROL_MESSAGES, ControlType, control_type
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch, iter_batches
from kraftwire.protocol.runtime import to_json

PARTITION_DIR = "__cluster_metadata-0"
SEGMENT, SNAPSHOT, LIVE = "segment", "snapshot", "live"

# (column, Spark SQL type) in row order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"),               # file name (or host:port for a live read)
    ("source_type", "string"),          # segment | snapshot | live
    ("snapshot_end_offset", "bigint"),  # a snapshot's end offset; null outside snapshots
    ("offset", "bigint"),               # log offset (offset inside the file for snapshots)
    ("batch_base_offset", "bigint"),
    ("leader_epoch", "int"),            # the batch's partition leader epoch (the Raft epoch)
    ("timestamp", "timestamp"),
    ("timestamp_ms", "bigint"),
    ("is_control", "boolean"),
    ("record_type", "string"),          # schema name, e.g. PartitionChangeRecord, LeaderChangeMessage
    ("record_type_id", "int"),          # metadata apiKey, or the control type for control records
    ("version", "int"),
    ("json", "string"),
    ("broker_id", "int"),
    ("broker_epoch", "bigint"),
    ("topic_id", "string"),
    ("topic_name", "string"),
    ("partition", "int"),
    ("leader", "int"),
    ("isr", "array<int>"),
    ("replicas", "array<int>"),
    ("fenced", "boolean"),
    ("in_controlled_shutdown", "boolean"),
    ("error", "string"),                # why the record (or the rest of the file) could not be decoded
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
# What a row tuple holds: every column but ``timestamp``, which readers derive from ``timestamp_ms``.
ROW_FIELDS = tuple(name for name in COLUMN_NAMES if name != "timestamp")
SCHEMA_DDL = ", ".join(f"`{name}` {kind}" for name, kind in COLUMNS)

_TYPED = ("broker_id", "broker_epoch", "topic_id", "topic_name", "partition", "leader", "isr", "replicas",
          "fenced", "in_controlled_shutdown")
_NO_TYPED: tuple[Any, ...] = (None,) * len(_TYPED)
_I16 = struct.Struct(">h")


_PLAIN = frozenset({"bool", "float64", "int8", "int16", "int32", "int64", "uint16", "string", "[]int32", "[]string"})


def _converter(kind: str, sub: Any) -> Callable[[Any], Any] | None:
    """How ``to_json`` renders a field of this schema kind; None when the value is already JSON."""
    if kind in _PLAIN:
        return None
    if kind == "uuid":
        return str
    if kind == "[]uuid":
        return lambda v: None if v is None else [str(x) for x in v]
    if kind == "struct":
        return lambda v: None if v is None else json_view(v)
    if kind == "[]struct":
        return lambda v: None if v is None else [json_view(x) for x in v]
    return to_json


_VIEWS: dict[type, tuple[tuple[str, Callable[[Any], Any] | None], ...]] = {}


def json_view(msg: Any) -> dict[str, Any]:
    """Exactly ``to_json(msg)`` for a generated message, several times faster (per-class plans)."""
    plan = _VIEWS.get(type(msg))
    if plan is None:
        plan = _VIEWS[type(msg)] = tuple((attr, _converter(kind, sub)) for attr, kind, sub in type(msg)._SPEC)
    out = {}
    for attr, conv in plan:
        value = getattr(msg, attr)
        out[attr] = value if conv is None else conv(value)
    if msg.unknown_tagged_fields:
        out["unknown_tagged_fields"] = {str(t): base64.b64encode(v).decode() for t, v in msg.unknown_tagged_fields}
    return out


_dumps = json.JSONEncoder(separators=(",", ":")).encode


_KAFKA_UUIDS: dict[uuid.UUID, str] = {}


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's printable form of a UUID (cached: a log names the same topics over and over)."""
    text = _KAFKA_UUIDS.get(value)
    if text is None:
        if len(_KAFKA_UUIDS) > 100_000:
            _KAFKA_UUIDS.clear()
        text = _KAFKA_UUIDS[value] = base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    return text


def _tri(flag: int) -> bool | None:
    """BrokerRegistrationChangeRecord's int8 flags: 1 = set, -1 = cleared, 0 = unchanged."""
    return True if flag > 0 else (False if flag < 0 else None)


def _lst(value: list[int] | None) -> list[int] | None:
    return None if value is None else list(value)


# Per record type: message -> the _TYPED tuple.
_EXTRACT: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "RegisterBrokerRecord": lambda m: (m.broker_id, m.broker_epoch, None, None, None, None, None, None,
                                       bool(m.fenced), bool(m.in_controlled_shutdown)),
    "BrokerRegistrationChangeRecord": lambda m: (m.broker_id, m.broker_epoch, None, None, None, None, None, None,
                                                 _tri(m.fenced), _tri(m.in_controlled_shutdown)),
    "FenceBrokerRecord": lambda m: (m.id_, m.epoch, None, None, None, None, None, None, True, None),
    "UnfenceBrokerRecord": lambda m: (m.id_, m.epoch, None, None, None, None, None, None, False, None),
    "UnregisterBrokerRecord": lambda m: (m.broker_id, m.broker_epoch) + (None,) * 8,
    "TopicRecord": lambda m: (None, None, kafka_uuid(m.topic_id), m.name) + (None,) * 6,
    "RemoveTopicRecord": lambda m: (None, None, kafka_uuid(m.topic_id)) + (None,) * 7,
    "PartitionRecord": lambda m: (None, None, kafka_uuid(m.topic_id), None, m.partition_id, m.leader,
                                  list(m.isr), list(m.replicas), None, None),
    "PartitionChangeRecord": lambda m: (None, None, kafka_uuid(m.topic_id), None, m.partition_id,
                                        None if m.leader == -2 else m.leader, _lst(m.isr), _lst(m.replicas),
                                        None, None),
}


@dataclass(frozen=True, slots=True)
class Decoded:
    """What a record value decodes to: type, version, JSON text, typed fields, or an error."""

    type_name: str | None
    type_id: int | None
    version: int | None
    json: str | None
    typed: tuple[Any, ...] = _NO_TYPED
    error: str | None = None


#: decoded values kept for reuse (emptied when full, so a log cannot grow it without bound)
DECODED_CACHE_SIZE = 1 << 16
_DECODED: dict[bytes, Decoded] = {}


def decode_metadata(value: bytes | None) -> Decoded:
    """What a metadata record value decodes to. Decoding is a function of the bytes alone, and a
    metadata log repeats values (the same ISR shrink and expand of a partition, over and over; a
    PartitionChangeRecord holds no epoch), so recent values are decoded once: a repeat costs a dict
    lookup instead of ~20 µs of decoding and JSON. Rows of equal values share their ``isr`` and
    ``replicas`` lists; treat rows as read-only."""
    if value is None:
        return Decoded(None, None, None, None, error="record has no value")
    if type(value) is not bytes:
        value = bytes(value)
    d = _DECODED.get(value)
    if d is None:
        d = _decode_metadata(value)
        if len(_DECODED) >= DECODED_CACHE_SIZE:
            _DECODED.clear()
        _DECODED[value] = d
    return d


def _decode_metadata(value: bytes) -> Decoded:
    try:
        rec = decode_record(value)
    except KafkaProtocolError as e:
        return Decoded(None, None, None, None, error=f"undecodable metadata record: {e}")
    name = rec.type_name
    extract = _EXTRACT.get(name)
    return Decoded(name, rec.type_id, rec.version, _dumps(json_view(rec.message)),
                   extract(rec.message) if extract is not None else _NO_TYPED)


def decode_control(key: bytes | None, value: bytes | None) -> Decoded:
    from kraftwire.protocol.messages import message_class
    from kraftwire.protocol.records import Record

    kind = control_type(Record(value=value, key=key))
    if kind is None:
        return Decoded(None, None, None, None, error="control record with an unknown key")
    name = CONTROL_MESSAGES.get(kind)
    if name is None or value is None or len(value) < 2:
        return Decoded(kind.name, int(kind), None, None)
    (version,) = _I16.unpack_from(value)
    cls = message_class(name)
    try:
        msg = cls.decode(value, min(max(version, cls.MIN_VERSION), cls.MAX_VERSION))
    except KafkaProtocolError as e:
        return Decoded(name, int(kind), version, None, error=f"undecodable control record: {e}")
    typed = _NO_TYPED
    if kind == ControlType.LEADER_CHANGE:
        typed = (None,) * 5 + (msg.leader_id,) + (None,) * 4
    return Decoded(name, int(kind), version, _dumps(json_view(msg)), typed)


class RowBuffer:
    """Rows collected a chunk at a time and handed out as column lists (Arrow-friendly)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)

    def take(self) -> dict[str, list[Any]]:
        rows, self.rows = self.rows, []
        if not rows:
            return {name: [] for name in ROW_FIELDS}
        return {name: list(col) for name, col in zip(ROW_FIELDS, zip(*rows, strict=True), strict=True)}


class ColumnBuffer:
    """Rows kept as one list per ``ROW_FIELDS`` column, filled a whole batch at a time: the same values
    ``batch_rows`` gives, without building a tuple per row and transposing them for Arrow."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in ROW_FIELDS]
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add_row(self, row: tuple[Any, ...]) -> None:
        for col, value in zip(self.cols, row, strict=True):
            col.append(value)
        self.n += 1

    def add_batch(self, batch: RecordBatch, source: str, source_type: str, snapshot_end: int | None) -> None:
        """Every record of ``batch`` (as ``batch_rows(batch, source, source_type, snapshot_end)``)."""
        recs = batch.records
        k = len(recs)
        if not k:
            return
        base = batch.base_offset
        if batch.control:
            ds = [decode_control(r.key, r.value) for r in recs]
        else:
            ds = [decode_metadata(r.value) for r in recs]
        c = self.cols
        ts = batch.base_timestamp
        for i, value in enumerate((source, source_type, snapshot_end)):
            c[i] += [value] * k
        c[3] += range(base, base + k)
        c[4] += [base] * k
        c[5] += [batch.leader_epoch] * k
        c[6] += [ts + r.timestamp_delta for r in recs]
        c[7] += [batch.control] * k
        c[8] += [d.type_name for d in ds]
        c[9] += [d.type_id for d in ds]
        c[10] += [d.version for d in ds]
        c[11] += [d.json for d in ds]
        typed = list(zip(*[d.typed for d in ds], strict=True))
        for j, col in enumerate(typed, 12):
            c[j] += col
        c[12 + len(_TYPED)] += [d.error for d in ds]
        self.n += k

    def take(self) -> dict[str, list[Any]]:
        cols, self.cols, self.n = self.cols, [[] for _ in ROW_FIELDS], 0
        return dict(zip(ROW_FIELDS, cols, strict=True))


def batch_rows(batch: RecordBatch, source: str, source_type: str, snapshot_end: int | None,
               lo: int = 0, hi: int | None = None) -> Iterator[tuple[Any, ...]]:
    """One row (fields as ``ROW_FIELDS``) per record of ``batch`` whose offset lies in ``[lo, hi)``."""
    base = batch.base_offset
    for i, rec in enumerate(batch.records):
        offset = base + i
        if offset < lo or (hi is not None and offset >= hi):
            continue
        ts = batch.base_timestamp + rec.timestamp_delta
        d = decode_control(rec.key, rec.value) if batch.control else decode_metadata(rec.value)
        yield (source, source_type, snapshot_end, offset, base, batch.leader_epoch, ts, batch.control,
               d.type_name, d.type_id, d.version, d.json, *d.typed, d.error)


def error_row(source: str, source_type: str, snapshot_end: int | None, offset: int | None,
              message: str) -> tuple[Any, ...]:
    """A row standing for an unreadable rest of a file (a corrupt batch)."""
    return (source, source_type, snapshot_end, offset, None, None, None, None, None, None, None, None,
            *_NO_TYPED, message)


def split_range(start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into at most ``parts`` contiguous, non-empty, nearly equal ranges."""
    n = end - start
    if n <= 0:
        return []
    parts = max(1, min(parts, n))
    step, extra = divmod(n, parts)
    out = []
    lo = start
    for i in range(parts):
        hi = lo + step + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out



# -- files -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LogFile:
    """One readable file of a metadata log directory."""

    path: str
    kind: str                      # SEGMENT or SNAPSHOT
    base_offset: int               # segment base offset, or the snapshot's end offset
    snapshot_epoch: int | None = None

    @property
    def snapshot_end(self) -> int | None:
        return self.base_offset if self.kind == SNAPSHOT else None


def partition_dir(path: str | os.PathLike[str]) -> Path:
    """The ``__cluster_metadata-0`` directory for a log dir or the partition dir itself."""
    p = Path(path)
    return p / PARTITION_DIR if (p / PARTITION_DIR).is_dir() else p


def list_log_files(path: str | os.PathLike[str]) -> list[LogFile]:
    """Segments (``<base>.log``) and finished snapshots (``<end>-<epoch>.checkpoint``), in offset order."""
    from kraftwire.storage.snapshot import parse_snapshot_name

    directory = partition_dir(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{path}: not a directory")
    out: list[LogFile] = []
    for entry in directory.iterdir():
        name = entry.name
        if name.endswith(".log") and name[:-4].isdigit():
            out.append(LogFile(str(entry), SEGMENT, int(name[:-4])))
            continue
        parsed = parse_snapshot_name(name)
        if parsed is not None and not parsed[1]:
            sid = parsed[0]
            out.append(LogFile(str(entry), SNAPSHOT, sid.end_offset, sid.epoch))
    out.sort(key=lambda f: (f.base_offset, f.kind != SNAPSHOT))
    return out


def file_rows(f: LogFile, *, verify_crc: bool = True, start: int = 0,
              end: int | None = None) -> Iterator[tuple[Any, ...]]:
    """Rows of every whole batch in one file; a corrupt batch ends the file with an error row.

    ``start``/``end`` (bytes) read one split of the file: the batches that *start* in ``[start, end)``
    (see ``split_bytes``), so splits that tile a file read each batch exactly once.
    """
    name = os.path.basename(f.path)
    for batch, error in file_batches(f, verify_crc=verify_crc, start=start, end=end):
        if batch is None:
            yield error
        else:
            yield from batch_rows(batch, name, f.kind, f.snapshot_end)


def file_batches(f: LogFile, *, verify_crc: bool = True, start: int = 0,
                 end: int | None = None) -> Iterator[tuple[RecordBatch | None, Any]]:
    """``file_rows`` a batch at a time: (batch, None) per whole batch, then (None, error row) if a corrupt
    batch ends the file (or the split)."""
    name = os.path.basename(f.path)
    if start == 0 and end is None:
        base, data = 0, Path(f.path).read_bytes()
    else:
        base, data = split_bytes(f.path, start, end)
    snap_end = f.snapshot_end
    next_offset: int | None = None
    at = base
    try:
        for batch, pos, size in iter_batches(data, verify_crc=verify_crc):
            yield batch, None
            next_offset = batch.next_offset
            at = base + pos + size
    except KafkaProtocolError as e:
        yield None, error_row(name, f.kind, snap_end, next_offset, f"corrupt batch at position {at}: {e}")


# -- byte-range splits of one file -------------------------------------------------------------------------
_BATCH_HEAD = struct.Struct(">qi")      # base offset, length (of the rest of the batch)
_INDEX_ENTRY = struct.Struct(">ii")     # a segment's .index: relative offset, batch position
_MIN_BATCH_LENGTH = 49                  # a v2 batch header after its offset and length fields


def byte_splits(size: int, split: int) -> list[tuple[int, int]]:
    """``[0, size)`` cut into ranges of ``split`` bytes (the last one may be shorter; one range for an
    empty file). The ranges need not fall on batch boundaries: ``split_bytes`` aligns them."""
    split = max(1, split)
    return [(lo, min(size, lo + split)) for lo in range(0, max(size, 1), split)]


def _index_floor(path: str, start: int, size: int) -> int:
    """The greatest batch position at or below ``start`` that the segment's ``.index`` names (0 without one)."""
    best = 0
    try:
        raw = Path(path).with_suffix(".index").read_bytes()
    except OSError:
        return 0
    for _, pos in _INDEX_ENTRY.iter_unpack(raw[: len(raw) - len(raw) % 8]):
        if pos > start or pos >= size:
            break
        best = max(best, pos)
    return best


def split_bytes(path: str, start: int, end: int | None) -> tuple[int, bytes]:
    """(position, bytes) of the whole batches of ``path`` that start at a position in ``[start, end)``.

    The first batch boundary at or after ``start`` is found by walking batch headers (12 bytes each)
    from the segment index's nearest entry below ``start``; reading stops before the first batch that
    starts at or after ``end``, so the last batch read may end beyond ``end``. A header that cannot
    begin a batch is reported (through the reader) only by the split whose range holds it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        end = size if end is None else min(end, size)
        pos = _index_floor(path, start, size) if start else 0
        if start and pos:   # trust an index entry only if it points at a plausible batch header
            head = os.pread(fd, 17, pos)
            if (len(head) < 17 or head[16] != 2
                    or not _MIN_BATCH_LENGTH <= _BATCH_HEAD.unpack_from(head)[1] <= size - pos - 12):
                pos = 0
        while pos < start:
            head = os.pread(fd, 12, pos)
            if len(head) < 12:
                return size, b""
            length = _BATCH_HEAD.unpack(head)[1]
            if length < _MIN_BATCH_LENGTH:
                return pos, b""   # corrupt before this split: the split holding it reports it
            pos += 12 + length
        if pos >= end:
            return pos, b""
        data = bytearray(os.pread(fd, end - pos, pos))
        walk = 0
        while pos + walk < end:   # find where the batch that starts last before ``end`` ends
            if walk + 12 > len(data):
                data += os.pread(fd, walk + 12 - len(data), pos + len(data))
                if walk + 12 > len(data):
                    break
            length = _BATCH_HEAD.unpack_from(data, walk)[1]
            if length < _MIN_BATCH_LENGTH:
                break
            walk += 12 + length
        if walk > len(data):
            data += os.pread(fd, walk - len(data), pos + len(data))
        # a walk stopped short (corrupt header, partial tail) hands over the rest for the reader to judge
        return pos, bytes(data[:walk]) if pos + walk >= end else bytes(data)
    finally:
        os.close(fd)
