"""Replaying framed metadata record values, with a fast path for PartitionRecord.

A 1M-partition image is almost only PartitionRecords, and the generic path builds three objects per
record before the image sees it (the generated message, its ``MetadataRecord`` frame, the
``Partition``) and walks four dispatch levels. Here a PartitionRecord's value goes straight to a
``Partition`` through the generated tuple decoder (``VALUE_DECODERS``, no message object), and
identical partition states are shared: everything a ``Partition`` holds comes from the bytes after
the topic id, so those bytes (per record version) key a bounded cache of frozen ``Partition``s.
Partitions created together (same replicas, ISR, epochs) then cost a dict lookup and one shared
object instead of a decode and five tuples. Any other value, or a frame this path does not
recognise, returns None and the caller decodes it generically (which also reports malformations).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from kraftwire.metadata.image import ImageLoader, Partition, _new_partition
from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.messages.partition_record import VALUE_DECODERS
from kraftwire.protocol.metadata import FRAME_VERSION, RECORD_TYPES, decode_record
from kraftwire.protocol.runtime import make_uuid

PARTITION_RECORD = RECORD_TYPES["PartitionRecord"]
#: distinct partition states kept per record version (emptied when full, so input cannot grow it)
STATE_CACHE_SIZE = 65_536
_HEAD = struct.Struct(">i16s")   # partition id, topic id: bytes 3..23 of a one-byte-varint frame
_BODY = 3 + _HEAD.size
# version -> decoder of a PartitionRecord value: (fields, end offset)
_PARTITION_DECODERS: dict[int, Callable[[bytes, int, int], tuple[tuple[Any, ...], int]]] = VALUE_DECODERS
_STATES: dict[int, dict[bytes, Partition]] = {v: {} for v in _PARTITION_DECODERS}
_DECODE_ERRORS = (struct.error, IndexError, ValueError, OverflowError, MemoryError)


def partition_from_value(value: bytes | memoryview) -> tuple[uuid.UUID, int, Partition] | None:
    """(topic id, partition id, Partition) of a framed PartitionRecord value; None for any other
    record. Raises DecodeError exactly where ``decode_record`` would for the same bytes."""
    if type(value) is not bytes:
        value = bytes(value)
    if len(value) < _BODY or value[0] != FRAME_VERSION or value[1] != PARTITION_RECORD:
        return None
    version = value[2]
    cache = _STATES.get(version)
    if cache is None:
        return None
    pid, raw = _HEAD.unpack_from(value, 3)
    tail = value[_BODY:]
    p = cache.get(tail)
    if p is None:
        p = _decode_state(value, version)
        if len(cache) >= STATE_CACHE_SIZE:
            cache.clear()
        cache[tail] = p
    return make_uuid(raw), pid, p


def _decode_state(value: bytes, version: int) -> Partition:
    try:
        (_, _, replicas, isr, removing, adding, leader, lrs, leader_epoch, partition_epoch, dirs, elr, last_elr,
         _unknown), end = _PARTITION_DECODERS[version](value, 3, len(value))
    except DecodeError:
        raise
    except _DECODE_ERRORS as e:
        raise DecodeError(f"PartitionRecord v{version}: {e}") from e
    if end != len(value):
        raise DecodeError(f"PartitionRecord v{version}: {len(value) - end} trailing bytes")
    return _new_partition(tuple(replicas), tuple(isr), leader, leader_epoch, partition_epoch, tuple(removing),
                          tuple(adding), lrs, tuple(dirs), tuple(elr or ()), tuple(last_elr or ()))


def replay_value(loader: ImageLoader, value: bytes | memoryview) -> Any | None:
    """Replay one framed record value into ``loader``: None when it took the PartitionRecord fast path,
    else the decoded message (already replayed; callers may look at it, e.g. for broker registrations)."""
    if not loader.in_transaction:
        hit = partition_from_value(value)
        if hit is not None:
            loader.replay_partition(*hit)
            return None
    msg = decode_record(value).message
    loader.replay(msg)
    return msg


def clear_states() -> None:
    """Forget the shared partition states (tests; memory)."""
    for cache in _STATES.values():
        cache.clear()
