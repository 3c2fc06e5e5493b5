"""``spark.read.format("kraftwire")``: a PySpark Python data source over KRaft metadata logs.

Files: ``spark.read.format("kraftwire").load(DIR)`` reads a metadata log directory (the log dir
holding ``__cluster_metadata-0``, or that partition directory itself, or one segment/snapshot file)
with one Spark partition per snapshot (``.checkpoint``) file and per ``splitBytes`` (default 4 MiB)
byte range of each segment (``<base>.log``; a range reads the batches that start inside it). The
path must be readable by the executors (a local directory in local mode, a shared one otherwise).

Live: ``.option("bootstrap", "HOST:PORT[,HOST:PORT...]").load()`` reads the committed records of a
running quorum (kraftwire nodes, or Kafka controllers: ``net/metadata_log.py``) from the first listed node
that answers, split into ``partitions`` offset ranges (default 1) between ``startingOffset`` (default: the
log start) and ``endingOffset`` (default: the high watermark when the query is planned).

Streaming: ``spark.readStream.format("kraftwire").option("bootstrap", ...)`` follows the quorum's high
watermark (``startingOffsets`` earliest/latest/N, ``maxRecordsPerTrigger``); offsets are metadata log
offsets, so Spark's checkpoint holds the next log offset to read. A node that fails is replaced by the next
listed one. When a checkpointed offset is below the log start (a snapshot replaced the records), the
micro-batch emits the snapshot's records first (``source_type`` = ``snapshot``, ``snapshot_end_offset``
set, ``offset`` the position inside the snapshot, as for snapshot files) and goes on from its end.

Other options: ``verifyCrc`` (default true), ``chunkRows`` (rows per Arrow batch, default 8192).
Columns: see ``kraftwire.analytics.rows.COLUMNS``. The reader runs entirely in Python workers and
hands Spark Arrow batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kraftwire.analytics.rows import (
    COLUMNS,
    LIVE,
    ROW_FIELDS,
    SCHEMA_DDL,
    SEGMENT,
    SNAPSHOT,
    ColumnBuffer,
    LogFile,
    RowBuffer,
    batch_rows,
    byte_splits,
    file_batches,
    file_rows,
    list_log_files,
    split_range,
)

NAME = "kraftwire"
LIVE_STRETCH = 50_000  # offsets fetched per connection by a live read task
SPLIT_BYTES = 4 << 20  # default ``splitBytes``: segments above it are read as byte ranges of this size


class FilePartition(InputPartition):
    """One snapshot file, or the batches of a segment that start in bytes ``[start, end)``."""

    def __init__(self, file: LogFile, start: int = 0, end: int | None = None) -> None:
        super().__init__((file.path, start, end))
        self.file, self.start, self.end = file, start, end


class RangePartition(InputPartition):
    """Offsets ``[start, end)`` of a live quorum's log. Only the ``first`` range of a read emits the snapshot
    that replaced records below the log start (the others skip to its end), so it is read once."""

    def __init__(self, bootstrap: str, start: int, end: int, first: bool = True) -> None:
        super().__init__((bootstrap, start, end, first))
        self.bootstrap, self.start, self.end, self.first = bootstrap, start, end, first


def ranges(bootstrap: str, start: int, end: int, parts: int) -> list[RangePartition]:
    return [RangePartition(bootstrap, a, b, i == 0) for i, (a, b) in enumerate(split_range(start, end, parts))]


def _flag(options: Any, key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None:
        return default
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"option {key} must be true or false, got {value!r}")


def _int(options: Any, key: str, default: int | None) -> int | None:
    value = options.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"option {key} must be an integer, got {value!r}") from None


def plan_partitions(files: list[LogFile], split: int) -> list[FilePartition]:
    """One partition per snapshot; a segment larger than ``split`` bytes becomes byte ranges of ``split``
    bytes (each worker aligns its range to batch boundaries: ``rows.split_bytes``)."""
    out = []
    for f in files:
        size = os.path.getsize(f.path)
        if f.kind != SEGMENT or size <= split:
            out.append(FilePartition(f))
        else:
            out += [FilePartition(f, lo, hi) for lo, hi in byte_splits(size, split)]
    return out


def plan_files(path: str) -> list[LogFile]:
    """The files a read of ``path`` (directory or single file) covers."""
    if os.path.isfile(path):
        from kraftwire.storage.snapshot import parse_snapshot_name

        name = os.path.basename(path)
        parsed = parse_snapshot_name(name)
        if parsed is not None:
            return [LogFile(path, SNAPSHOT, parsed[0].end_offset, parsed[0].epoch)]
        stem = name[:-4] if name.endswith(".log") else ""
        return [LogFile(path, SEGMENT, int(stem) if stem.isdigit() else 0)]
    return list_log_files(path)


class KraftwireReader(DataSourceReader):
    def __init__(self, options: Any) -> None:
        self.path = options.get("path")
        self.bootstrap = options.get("bootstrap")
        if bool(self.path) == bool(self.bootstrap):
            raise ValueError("kraftwire data source: give exactly one of load(PATH) or option('bootstrap', ...)")
        self.parts = _int(options, "partitions", 1) or 1
        self.starting = _int(options, "startingOffset", None)
        self.ending = _int(options, "endingOffset", None)
        self.verify_crc = _flag(options, "verifyCrc", True)
        self.chunk_rows = max(1, _int(options, "chunkRows", 8192) or 8192)
        self.split_bytes = max(1, _int(options, "splitBytes", SPLIT_BYTES) or SPLIT_BYTES)

    def partitions(self) -> list[InputPartition]:
        if self.path:
            return plan_partitions(plan_files(self.path), self.split_bytes)
        from kraftwire.analytics.live import log_bounds

        lo, hi = log_bounds(self.bootstrap)
        start = lo if self.starting is None else max(lo, self.starting)
        end = hi if self.ending is None else min(hi, self.ending)
        return ranges(self.bootstrap, start, end, self.parts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition, self.verify_crc, self.chunk_rows)


class KraftwireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kraftwire").option("bootstrap", ...)``: follow a node's committed log.

    Offsets are ``{"offset": N}`` (the next log offset to read). ``startingOffsets`` is ``earliest``
    (default: offset 0, so the whole metadata comes, the snapshot first if the log start has moved),
    ``latest`` or an offset; ``maxRecordsPerTrigger`` caps a micro-batch.
    """

    def __init__(self, options: Any) -> None:
        self.bootstrap = options.get("bootstrap")
        if not self.bootstrap or options.get("path"):
            raise ValueError("kraftwire streaming reads need option('bootstrap', 'HOST:PORT') and no path")
        self.parts = _int(options, "partitions", 1) or 1
        self.starting = str(options.get("startingOffsets", "earliest")).lower()
        if self.starting not in ("earliest", "latest") and not self.starting.isdigit():
            raise ValueError(f"startingOffsets must be earliest, latest or an offset, got {self.starting!r}")
        self.max_records = _int(options, "maxRecordsPerTrigger", None)
        self.verify_crc = _flag(options, "verifyCrc", True)
        self.chunk_rows = max(1, _int(options, "chunkRows", 8192) or 8192)
        self.target: int | None = None

    def _bounds(self) -> tuple[int, int]:
        from kraftwire.analytics.live import log_bounds

        return log_bounds(self.bootstrap)

    def initialOffset(self) -> dict:
        lo, hi = self._bounds()
        if self.starting == "earliest":   # offset 0: below a moved log start the snapshot comes first
            return {"offset": 0}
        if self.starting == "latest":
            return {"offset": hi}
        return {"offset": min(max(int(self.starting), lo), hi)}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.max_records) if self.max_records else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._bounds()[1]

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        # Spark before 4.2 calls latestOffset() without arguments.
        hi = self._bounds()[1]
        if self.target is not None:
            hi = min(hi, self.target)
        if start is None:
            return {"offset": hi}
        if isinstance(limit, ReadMaxRows):
            hi = min(hi, start["offset"] + limit.max_rows)
        return {"offset": max(start["offset"], hi)}

    def reportLatestOffset(self) -> dict | None:
        return {"offset": self._bounds()[1]}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return list(ranges(self.bootstrap, start["offset"], end["offset"], self.parts))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(partition, self.verify_crc, self.chunk_rows)


def read_partition(partition: InputPartition, verify_crc: bool, chunk_rows: int) -> Iterator[Any]:
    """Arrow record batches of ``chunk_rows`` rows for one file or live offset range."""
    import pyarrow as pa

    schema = arrow_schema()
    buf: RowBuffer | ColumnBuffer = RowBuffer()

    def flush() -> Any:
        cols = buf.take()
        ms = pa.array(cols["timestamp_ms"], pa.int64())
        arrays = []
        for field in schema:
            if field.name == "timestamp":
                arrays.append(pa.compute.multiply(ms, 1000).cast(field.type))
            elif field.name == "timestamp_ms":
                arrays.append(ms)
            else:
                arrays.append(pa.array(cols[field.name], field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    if isinstance(partition, FilePartition):   # files: columns filled a batch at a time
        buf = ColumnBuffer()
        f = partition.file
        name = os.path.basename(f.path)
        for batch, error in file_batches(f, verify_crc=verify_crc, start=partition.start, end=partition.end):
            if batch is None:
                buf.add_row(error)
            else:
                buf.add_batch(batch, name, f.kind, f.snapshot_end)
            if len(buf) >= chunk_rows:
                yield flush()
        if len(buf):
            yield flush()
        return
    for row in _rows(partition, verify_crc):
        buf.add(row)
        if len(buf) >= chunk_rows:
            yield flush()
    if len(buf):
        yield flush()


def _rows(partition: InputPartition, verify_crc: bool) -> Iterator[tuple[Any, ...]]:
    if isinstance(partition, FilePartition):
        yield from file_rows(partition.file, verify_crc=verify_crc, start=partition.start, end=partition.end)
        return
    assert isinstance(partition, RangePartition)
    from kraftwire.analytics.live import fetch_range

    # Fetch a bounded stretch at a time so memory stays small on long ranges.
    lo = partition.start
    while lo < partition.end:
        hi = min(partition.end, lo + LIVE_STRETCH)
        batches: list[Any] = []
        snapshots: list[tuple[Any, list[Any]]] = []
        fetch_range(partition.bootstrap, lo, hi, batches.append, _collect(snapshots))
        for sid, snap in snapshots:   # the records below the log start, as the snapshot holds them
            if partition.first:
                for batch in snap:
                    yield from batch_rows(batch, partition.bootstrap, SNAPSHOT, sid.end_offset)
            lo = max(lo, sid.end_offset)
        for batch in batches:
            yield from batch_rows(batch, partition.bootstrap, LIVE, None, lo, hi)
        lo = max(lo, hi)


def _collect(into: list[tuple[Any, list[Any]]]) -> Any:
    return lambda sid, batches: into.append((sid, batches))


_ARROW: dict[str, Any] = {}


def arrow_schema() -> Any:
    """The Arrow schema matching ``SCHEMA_DDL`` exactly (Spark checks field types and list names)."""
    import pyarrow as pa

    if "schema" not in _ARROW:
        kinds = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "boolean": pa.bool_(),
                 "timestamp": pa.timestamp("us", tz="UTC"),
                 "array<int>": pa.list_(pa.field("element", pa.int32()))}
        _ARROW["schema"] = pa.schema([pa.field(name, kinds[kind]) for name, kind in COLUMNS])
    return _ARROW["schema"]


class KraftwireDataSource(DataSource):
    """Rows of a KRaft metadata log; register with ``spark.dataSource.register(KraftwireDataSource)``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KraftwireReader(self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KraftwireStreamReader(self.options)


assert set(ROW_FIELDS) | {"timestamp"} == {name for name, _ in COLUMNS}
