"""The metadata as of a point of the log: an offset, or a time matched against batch append times.

Shared by ``metadata-shell --at-offset/--at-time`` and ``metadata-diff``. A point is read from a log
directory (the newest snapshot at or below it plus the log's records up to it), a segment, or a
live controller (its committed log cut at the point). Times are ISO-8601 (``2026-11-27T22:10:00Z``;
no zone means UTC) or epoch milliseconds; a time names the last batch appended at or before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.storage.reader import BatchSpan, MetadataSource, read_log_dir, read_metadata


@dataclass(frozen=True, slots=True)
class Point:
    """An offset (inclusive) or a time (epoch ms) of the metadata log."""

    offset: int | None = None
    time_ms: int | None = None

    def __str__(self) -> str:
        if self.offset is not None:
            return f"offset {self.offset}"
        return f"time {format_ms(self.time_ms or 0)}"


def format_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: str) -> int:
    """Epoch ms from ISO-8601 or epoch-ms text; OperatorError (usage) when neither."""
    text = text.strip()
    if re.fullmatch(r"\d{1,16}", text):
        return int(text)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise OperatorError(f"cannot read {text!r} as a time: use ISO-8601 (2026-11-27T22:10:00Z) or epoch "
                            "milliseconds", ExitCode.USAGE) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def parse_offset(text: str) -> int:
    if not re.fullmatch(r"\d{1,19}", text.strip()):
        raise OperatorError(f"cannot read {text!r} as an offset: a whole number >= 0 is expected", ExitCode.USAGE)
    return int(text)


def parse_point(text: str) -> Point:
    """``N`` or ``offset:N`` is an offset; ``time:MS`` or ISO-8601 text is a time."""
    kind, sep, rest = text.partition(":")
    if sep and kind in ("offset", "time"):
        return Point(offset=parse_offset(rest)) if kind == "offset" else Point(time_ms=parse_time(rest))
    if text.strip().isdigit():
        return Point(offset=parse_offset(text))
    return Point(time_ms=parse_time(text))


def offset_at_time(spans: list[BatchSpan], time_ms: int, where: str) -> int:
    """The last offset of the last batch appended at or before ``time_ms``."""
    if not spans:
        raise OperatorError(f"{where}: the log holds no batches to match a time against", ExitCode.USAGE)
    if time_ms < spans[0].time_ms:
        raise OperatorError(f"{where}: {format_ms(time_ms)} is before the oldest retained batch (offset "
                            f"{spans[0].base}, appended {format_ms(spans[0].time_ms)})", ExitCode.USAGE)
    found = spans[0]
    for span in spans:
        if span.time_ms <= time_ms:
            found = span
    return found.last


def _check_reached(src: MetadataSource, offset: int, where: str) -> None:
    if src.last_offset >= offset:
        return
    if src.warnings:
        raise OperatorError(f"{where}: offset {offset} cannot be reached: {src.warnings[0]}", ExitCode.STORAGE)
    raise OperatorError(f"{where}: offset {offset} is after the end of the log (last offset {src.last_offset})",
                        ExitCode.USAGE)


def read_at(path: str | Path, point: Point) -> MetadataSource:
    """The image's records as of ``point`` from a log directory or a segment file."""
    path = Path(path)
    if path.is_file() and path.suffix != ".log":
        raise OperatorError(f"{path}: a snapshot file holds one point in time; give the log directory to choose "
                            "an offset or time", ExitCode.USAGE)
    offset = point.offset
    if offset is None:
        offset = offset_at_time(read_metadata(path).batches, point.time_ms or 0, str(path))
    if path.is_dir():
        src = read_log_dir(path, upto=offset)
    else:
        src = cut(read_metadata(path), offset, str(path))
    _check_reached(src, offset, str(path))
    src.source = f"{src.source} at {point}" + (f" (offset {offset})" if point.offset is None else "")
    return src


def cut(src: MetadataSource, offset: int, where: str) -> MetadataSource:
    """``src`` (log records from offset 0, no snapshot) as of ``offset``."""
    _check_reached(src, offset, where)
    if src.snapshot_id is not None and src.snapshot_id.end_offset > offset + 1:
        raise OperatorError(f"{where}: offset {offset} is below the snapshot the source starts from "
                            f"(end offset {src.snapshot_id.end_offset})", ExitCode.USAGE)
    epoch = next((s.epoch for s in src.batches if s.base <= offset <= s.last), src.last_epoch)
    return replace(src, records=[(o, r) for o, r in src.records if o <= offset], last_offset=offset,
                   last_epoch=epoch, batches=[s for s in src.batches if s.base <= offset])


def live_at(src: MetadataSource, point: Point) -> MetadataSource:
    """A live fetch (``metadata_shell.load_live``) cut at ``point``."""
    offset = point.offset
    if offset is None:
        offset = offset_at_time(src.batches, point.time_ms or 0, src.source)
    out = cut(src, offset, src.source)
    out.source = f"{src.source} at {point}" + (f" (offset {offset})" if point.offset is None else "")
    return out
