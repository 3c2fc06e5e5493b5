"""Helpers the generated codecs in ``kraftwire.protocol.messages`` call (varints, JSON views, errors)."""

from __future__ import annotations

import base64
import gc
import struct
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from kraftwire.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError

ZERO_UUID = uuid.UUID(int=0)
_UUID = uuid.UUID
_new = object.__new__

__all__ = ["DEFAULT", "DecodeError", "EncodeError", "Message", "UnsupportedVersionError", "ZERO_UUID",
           "make_uuid", "read_uvarint", "replace", "uvarint"]


class _Default:
    """The marker of an omitted constructor argument whose default is a fresh list or struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


class Message:
    """Base of every generated message and struct: fields in ``__slots__``, value equality, a repr.

    Generated classes are plain classes (no dataclass construction at import time); they compare
    equal when of the same class with equal fields, and like dataclasses with ``eq`` they are unhashable.
    """

    __slots__ = ()
    _SPEC: tuple = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__qualname__}({inner})"


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while bulk-building long-lived objects without cycles
    (decoding a snapshot or a log, replaying it into an image). Each automatic collection of the
    oldest generation rescans every live object, so with a big image alive the collector, not the
    decoding, dominated snapshot load (3× on 200k partitions); reference counting still frees
    everything as usual, and the collector runs again afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def replace(obj: Any, /, **changes: Any) -> Any:
    """A copy of generated message ``obj`` with ``changes`` applied (``dataclasses.replace`` for messages)."""
    cls = type(obj)
    unknown = set(changes) - set(cls.__slots__)
    if unknown:
        raise TypeError(f"{cls.__name__} has no fields {sorted(unknown)}")
    return cls(**{n: changes[n] if n in changes else getattr(obj, n) for n in cls.__slots__})


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 varint of at most 5 bytes (Kafka's int32 range) at ``pos``."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated unsigned varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def uvarint(n: int) -> bytes:
    """Encode ``n`` (0 <= n < 2**32) as an unsigned varint."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _new_uuid(raw: bytes) -> uuid.UUID:
    u = _new(_UUID)
    object.__setattr__(u, "int", int.from_bytes(raw, "big"))
    object.__setattr__(u, "is_safe", uuid.SafeUUID.unknown)
    return u


_UUIDS: dict[bytes, uuid.UUID] = {}
UUID_CACHE_SIZE = 4096


def make_uuid(raw: bytes) -> uuid.UUID:
    """A UUID from 16 raw bytes, without ``UUID.__init__``'s argument checking (hot path).

    The same ids recur in almost every metadata record (a topic's id in each of its partitions, the
    few log directories in every replica list), so recent ones are shared from a small cache: UUIDs
    are immutable, and a dict hit costs ~0.1 µs against ~1 µs to build one. The cache is emptied when
    it reaches UUID_CACHE_SIZE entries, so hostile input cannot grow it.
    """
    if type(raw) is not bytes:
        raw = bytes(raw)
    u = _UUIDS.get(raw)
    if u is None:
        if len(_UUIDS) >= UUID_CACHE_SIZE:
            _UUIDS.clear()
        u = _UUIDS[raw] = _new_uuid(raw)
    return u


def truncated(what: str) -> DecodeError:
    return DecodeError(f"truncated {what}")


def bad_length(what: str, n: int) -> DecodeError:
    return DecodeError(f"invalid length {n} for {what}")


def not_nullable(what: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"{what} is null but not nullable in version {version}")


def not_in_version(what: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"{what} has a non-default value but version {version} cannot carry it")


# ---------------------------------------------------------------------------------------------
# JSON views: generated classes carry ``_SPEC`` = ((attr, kind, struct_class | None), ...),
# where kind is a schema type such as "int32", "string", "[]int32", "[]struct", "struct".


def to_json(obj: Any) -> Any:
    """A JSON-ready view of a generated message (bytes as base64, UUIDs as Kafka's base64 form too)."""
    if isinstance(obj, Message):
        out: dict[str, Any] = {}
        for attr, _kind, _cls in type(obj)._SPEC:
            out[attr] = to_json(getattr(obj, attr))
        unknown = getattr(obj, "unknown_tagged_fields", None)
        if unknown:
            out["unknown_tagged_fields"] = {str(t): base64.b64encode(v).decode() for t, v in unknown}
        return out
    if isinstance(obj, list):
        return [to_json(v) for v in obj]
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(obj)).decode()
    return obj


def from_json(cls: type, data: dict[str, Any]) -> Any:
    """Build a generated message from ``to_json``'s form; missing keys take the schema defaults."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    known = {attr: (kind, sub) for attr, kind, sub in cls._SPEC}
    extra = set(data) - set(known) - {"unknown_tagged_fields"}
    if extra:
        raise ValueError(f"{cls.__name__}: unknown fields {sorted(extra)}")
    kwargs: dict[str, Any] = {}
    for attr, value in data.items():
        if attr == "unknown_tagged_fields":
            kwargs[attr] = [(int(t), base64.b64decode(v)) for t, v in sorted(value.items(), key=lambda kv: int(kv[0]))]
            continue
        kind, sub = known[attr]
        kwargs[attr] = _value_from_json(kind, sub, value)
    return cls(**kwargs)


def _value_from_json(kind: str, sub: type | None, value: Any) -> Any:
    if value is None:
        return None
    if kind.startswith("[]"):
        return [_value_from_json(kind[2:], sub, v) for v in value]
    if kind == "struct":
        assert sub is not None
        return from_json(sub, value)
    if kind == "uuid":
        return uuid.UUID(value)
    if kind in ("bytes", "records"):
        return base64.b64decode(value)
    return value


INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}

pack_error = struct.error


SMALL_ARRAY = 64  # arrays of fixed-width items shorter than this use a precompiled struct


@cache
def array_structs(code: str) -> tuple[struct.Struct, ...]:
    """``struct.Struct('>{n}{code}')`` for every n below SMALL_ARRAY (replica lists and the like); shared
    by every generated module."""
    return tuple(struct.Struct(f">{n}{code}") for n in range(SMALL_ARRAY))


BIG_BLOB = 1 << 15  # records blobs at least this large are not copied into the encode buffer


class Chunked(bytearray):
    """An encode buffer that sets large ``records`` blobs aside instead of copying them in.

    Generated encoders record ``(position, blob)`` in ``blobs`` for big record sets; ``result``
    then builds the final bytes with one allocation and one copy of each blob, or ``pieces`` hands
    them out uncopied (a blob may then be a file slice that is sent with sendfile). Growing a bytearray
    by a megabyte and copying it out again costs two fresh allocations per message, which on a
    busy allocator means page-faulting them in every time.
    """

    __slots__ = ("blobs",)

    def __init__(self, initial: bytes | int = b"") -> None:
        super().__init__(initial)
        self.blobs: list[tuple[int, Any]] = []

    def total(self) -> int:
        """Length of ``result()``."""
        return len(self) + sum(len(b) for _, b in self.blobs)

    def result(self) -> bytes:
        if not self.blobs:
            return bytes(self)
        pieces = self.pieces()
        data = b"".join([p.materialize() if hasattr(p, "materialize") else p for p in pieces])
        for p in pieces:
            if type(p) is memoryview:
                p.release()
        return data

    def pieces(self) -> list[Any]:
        """The result as a list of buffers and set-aside blobs, in order, nothing copied. A blob with a
        ``materialize`` method (a file slice) stays an object: the caller sends or reads it."""
        view = memoryview(self)
        parts: list[Any] = []
        prev = 0
        for pos, blob in self.blobs:
            if pos > prev:
                parts.append(view[prev:pos])
            parts.append(blob)
            prev = pos
        if prev < len(self):
            parts.append(view[prev:])
        return parts

    def has_files(self) -> bool:
        """Whether a set-aside blob is not a buffer (it has ``materialize``)."""
        return any(hasattr(b, "materialize") for _, b in self.blobs)


def write_tags(out: bytearray, tagged: list[tuple[int, bytes | bytearray]]) -> None:
    """A tagged-field section: count, then (tag, size, data) in ascending tag order."""
    out += uvarint(len(tagged))
    for tag, data in tagged:
        out += uvarint(tag)
        out += uvarint(len(data))
        out += data
