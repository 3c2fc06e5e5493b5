"""Control records of the metadata log (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters).

A control record's key is exactly 4 bytes: int16 key version (0) and int16 control type.
Values are the flexible-version messages defined in schemas/.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from kraftwire.protocol.records import Record


class ControlType(IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# The message each KRaft control record type carries (the schema names under schemas/control).
CONTROL_MESSAGES = {
    ControlType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlType.KRAFT_VOTERS: "VotersRecord",
}


_KEY = struct.Struct(">hh")


def control_key(kind: ControlType) -> bytes:
    return _KEY.pack(0, int(kind))


def control_type(record: Record) -> ControlType | None:
    """The control type named by a control record's key, or None if the key is not one."""
    key = record.key
    if key is None or len(key) < 4:
        return None
    version, kind = _KEY.unpack_from(key)
    try:
        return ControlType(kind)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class LeaderChange:
    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def leader_change_record(leader_id: int, voters: Sequence[int], granting_voters: Sequence[int]) -> Record:
    """LeaderChangeMessage v0: written by a new leader as the first record of its epoch."""
    body = bytearray(struct.pack(">hi", 0, leader_id))
    for group in (voters, granting_voters):
        body += _uvarint(len(group) + 1)
        for v in group:
            body += struct.pack(">i", v) + b"\x00"
    body += b"\x00"
    return Record(value=bytes(body), key=control_key(ControlType.LEADER_CHANGE))


def snapshot_header_record(version: int = 0, last_contained_log_timestamp: int = 0) -> Record:
    """SnapshotHeaderRecord v0: the first record of every snapshot file."""
    body = struct.pack(">hq", version, last_contained_log_timestamp) + b"\x00"
    return Record(value=body, key=control_key(ControlType.SNAPSHOT_HEADER))


def snapshot_footer_record(version: int = 0) -> Record:
    """SnapshotFooterRecord v0: the last record of every snapshot file."""
    return Record(value=struct.pack(">h", version) + b"\x00", key=control_key(ControlType.SNAPSHOT_FOOTER))
