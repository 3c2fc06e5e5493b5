"""Metadata record frames: how a KRaft metadata record sits in a record's value.

A frame is three unsigned varints — frame version (1), record type (the schema's apiKey) and
record version — followed by the record encoded in that version (Kafka's MetadataRecordSerde).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.messages import METADATA_RECORDS, message_class
from kraftwire.protocol.runtime import read_uvarint, to_json, uvarint

FRAME_VERSION = 1
METADATA_TOPIC = "__cluster_metadata"   # the metadata log's topic, partition 0
METADATA_TOPIC_ID = uuid.UUID(int=1)    # Kafka's fixed id of the metadata topic (AAAAAAAAAAAAAAAAAAAAAQ)
RECORD_TYPES: dict[str, int] = {name: key for key, name in METADATA_RECORDS.items()}


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A decoded frame: the record type id and name, its version, and the record object."""

    type_id: int
    version: int
    message: Any

    @property
    def type_name(self) -> str:
        return METADATA_RECORDS[self.type_id]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name, "version": self.version, "data": to_json(self.message)}


@cache
def record_class(type_id: int) -> Any:
    try:
        return message_class(METADATA_RECORDS[type_id])
    except KeyError:
        raise DecodeError(f"unknown metadata record type {type_id}") from None


def encode_record(message: Any, version: int | None = None) -> bytes:
    """Frame ``message`` (a generated *Record instance) in ``version`` (default: its newest)."""
    cls = type(message)
    type_id = RECORD_TYPES[cls.__name__]
    v = cls.MAX_VERSION if version is None else version
    out = bytearray(uvarint(FRAME_VERSION))
    out += uvarint(type_id)
    out += uvarint(v)
    message.encode_into(out, v)
    return bytes(out)


def decode_record(value: bytes | memoryview) -> MetadataRecord:
    """Decode one framed metadata record; any malformation raises DecodeError."""
    buf = value if type(value) is bytes else bytes(value)
    if len(buf) >= 3 and buf[0] < 0x80 and buf[1] < 0x80 and buf[2] < 0x80:  # three one-byte varints
        frame, type_id, version, pos = buf[0], buf[1], buf[2], 3
    else:
        frame, pos = read_uvarint(buf, 0)
        type_id, pos = read_uvarint(buf, pos) if frame == FRAME_VERSION else (0, pos)
        version, pos = read_uvarint(buf, pos) if frame == FRAME_VERSION else (0, pos)
    if frame != FRAME_VERSION:
        raise DecodeError(f"unsupported metadata record frame version {frame}")
    cls = record_class(type_id)
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise DecodeError(f"{cls.__name__} version {version} is not supported")
    message, end = cls.decode_from(buf, pos, version)
    if end != len(buf):
        raise DecodeError(f"{cls.__name__} v{version}: {len(buf) - end} trailing bytes")
    return MetadataRecord(type_id, version, message)
