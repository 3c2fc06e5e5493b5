"""Kafka's offset checkpoint files (``log-start-offset-checkpoint`` and friends) in a log directory.

Text format: a version line (0), a count line, then ``<topic> <partition> <offset>`` per line.
Each write replaces the whole file atomically.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kraftwire.storage.fsutil import atomic_write

log = logging.getLogger(__name__)
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"

TopicPartition = tuple[str, int]


def partition_of(directory: Path) -> TopicPartition:
    """The topic-partition a partition directory is named after (``__cluster_metadata-0``)."""
    topic, _, part = Path(directory).name.rpartition("-")
    if not topic or not part.isdigit():
        return Path(directory).name, 0
    return topic, int(part)


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    """The entries of a checkpoint file; a missing or malformed file reads as empty (with a warning)."""
    path = Path(path)
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    try:
        if lines[0].strip() != "0":
            raise ValueError(f"unsupported version {lines[0]!r}")
        count = int(lines[1])
        out: dict[TopicPartition, int] = {}
        for line in lines[2:2 + count]:
            topic, part, offset = line.split()
            out[(topic, int(part))] = int(offset)
        if len(out) != count:
            raise ValueError(f"expected {count} entries, found {len(out)}")
        return out
    except (IndexError, ValueError) as e:
        log.warning("%s: ignoring a malformed offset checkpoint (%s)", path, e)
        return {}


def write_offsets(path: Path, offsets: dict[TopicPartition, int]) -> None:
    lines = ["0", str(len(offsets))] + [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    atomic_write(Path(path), ("\n".join(lines) + "\n").encode())


def update_offset(path: Path, tp: TopicPartition, offset: int) -> None:
    """Set one partition's entry, keeping the others."""
    offsets = read_offsets(path)
    if offsets.get(tp) != offset:
        offsets[tp] = offset
        write_offsets(path, offsets)
