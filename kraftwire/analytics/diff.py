"""The metadata image at a point of the log, selected by Spark from the ``kraftwire`` source's rows.

Spark picks the rows that make the image as of an offset (the newest snapshot ending at or below it,
then the log's records after that snapshot up to the offset), resolves a time to the last offset
appended at or before it, and checks the log has no gap on the way; the driver replays the selected
rows' ``json`` through the same ``ImageLoader`` brokers and the metadata shell use. ``kraftwire
analytics diff`` diffs two such images with ``kraftwire.metadata.diff``.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftwire.analytics.rows import SNAPSHOT
from kraftwire.metadata.image import ImageLoader, MetadataImage
from kraftwire.protocol.metadata import record_class
from kraftwire.protocol.runtime import from_json


class PointError(ValueError):
    """The point is outside what the log can rebuild (before its start, after its end, across a gap)."""


def offset_at_time(df: DataFrame, time_ms: int) -> int:
    """The last log offset appended at or before ``time_ms``."""
    log = df.where((F.col("source_type") != SNAPSHOT) & F.col("error").isNull())
    row = log.agg(F.max(F.when(F.col("timestamp_ms") <= time_ms, F.col("offset"))).alias("hit"),
                  F.min("timestamp_ms").alias("first")).collect()[0]
    if row["hit"] is None:
        raise PointError(f"time {time_ms} is before the oldest retained batch (appended at {row['first']})")
    return int(row["hit"])


def image_at(df: DataFrame, offset: int) -> tuple[MetadataImage, dict[str, str]]:
    """The image as of ``offset`` (inclusive) and where it came from."""
    is_snap = F.col("source_type") == SNAPSHOT
    bounds = df.agg(
        F.max(F.when(is_snap & (F.col("snapshot_end_offset") <= offset + 1), F.col("snapshot_end_offset")))
        .alias("snap"),
        F.max(F.when(~is_snap, F.col("offset"))).alias("last"),
    ).collect()[0]
    snap = bounds["snap"]
    start = snap if snap is not None else 0
    if bounds["last"] is None or bounds["last"] < offset:
        if snap is None or snap - 1 != offset:
            raise PointError(f"offset {offset} is after the end of the log (last offset {bounds['last']})")
    log = df.where(~is_snap & (F.col("offset") >= start) & (F.col("offset") <= offset))
    seen = log.agg(F.countDistinct("offset").alias("n"), F.max("error").alias("error")).collect()[0]
    if seen["n"] != offset - start + 1 and offset >= start:
        why = f" ({seen['error']})" if seen["error"] else ""
        raise PointError(f"the log has a gap or is unreadable between offsets {start} and {offset}: "
                         f"{offset - start + 1 - seen['n']} offsets missing{why}")
    picked = log.where(~F.col("is_control") & F.col("error").isNull()).select(
        F.lit(1).alias("part"), "offset", "record_type_id", "json")
    if snap is not None:
        snap_rows = df.where(is_snap & (F.col("snapshot_end_offset") == snap) & ~F.col("is_control")
                             & F.col("error").isNull() & F.col("record_type_id").isNotNull())
        picked = snap_rows.select(F.lit(0).alias("part"), "offset", "record_type_id", "json").unionByName(picked)
    loader = ImageLoader()
    count = 0
    for row in picked.orderBy("part", "offset").toLocalIterator():
        loader.replay(from_json(record_class(row["record_type_id"]), json.loads(row["json"])))
        count += 1
    provenance = {"source": f"spark at offset {offset}",
                  "snapshot": "none" if snap is None else f"end offset {snap}",
                  "lastContainedOffset": str(offset), "lastContainedEpoch": _epoch(df, offset),
                  "logRecordsReplayed": str(count)}
    return loader.image, provenance


def _epoch(df: DataFrame, offset: int) -> str:
    row = df.where((F.col("source_type") != SNAPSHOT) & (F.col("offset") == offset)).select("leader_epoch").first()
    return "-1" if row is None else str(row["leader_epoch"])


def point_offset(df: DataFrame, point: Any) -> int:
    """A ``time_travel.Point``'s offset, resolving a time against the rows' timestamps."""
    return point.offset if point.offset is not None else offset_at_time(df, point.time_ms)
