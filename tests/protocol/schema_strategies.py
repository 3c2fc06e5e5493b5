"""Hypothesis strategies for generated messages, built from the parsed schemas in schemas/.

For a (schema, version) pair the strategy produces instances of the generated class holding only
values that version can carry: fields absent from the version keep their defaults, nulls appear only
in nullable versions, tagged fields take arbitrary values, and flexible structs may carry unknown
tagged fields (tags no field of that struct declares) that must survive a round trip.
"""

from __future__ import annotations

import uuid
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from codegen.schema import Field, Schema, Struct, load_all
from kraftwire.protocol.messages import message_class

ROOT = Path(__file__).resolve().parents[2]
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}
MAX_LIST = 2  # elements per array: nested arrays multiply, and every shape is still exercised


@cache
def schemas() -> dict[str, Schema]:
    return {s.name: s for s in load_all(ROOT / "schemas")}


def schema_versions() -> list[tuple[str, int]]:
    """Every (schema name, valid version) pair."""
    return [(s.name, v) for s in schemas().values() for v in s.versions]


def _struct_class(schema: Schema, st_: Struct) -> type:
    root = message_class(schema.name)
    if st_ is schema.root:
        return root
    return getattr(__import__(root.__module__, fromlist=["_"]), st_.name)


def _text() -> st.SearchStrategy[str]:
    # any encodable text, including multi-byte UTF-8 (lengths are byte counts on the wire)
    return st.text(st.characters(exclude_categories=("Cs",)), max_size=8)


def _primitive(kind: str, version: int) -> st.SearchStrategy:
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.uuids(allow_nil=True)
    if kind == "string":
        return _text()
    if kind in ("bytes", "records"):
        return st.binary(max_size=12)
    raise ValueError(kind)


def _field(schema: Schema, f: Field, version: int, flexible: bool, unknown: bool) -> st.SearchStrategy:
    if f.is_struct:
        elem = struct_strategy(schema.name, f.struct.name, version, flexible, unknown)
    else:
        elem = _primitive(f.element_type, version)
    value = st.lists(elem, max_size=MAX_LIST) if f.is_array else elem
    if version in f.nullable_versions:
        value = st.none() | value
    return value


def _unknown_tags(st_: Struct) -> st.SearchStrategy:
    declared = {f.tag for f in st_.fields if f.tag is not None}
    tags = st.lists(st.integers(0, 300).filter(lambda t: t not in declared), min_size=1, max_size=2, unique=True)
    entries = tags.flatmap(lambda ts: st.tuples(*[st.tuples(st.just(t), st.binary(max_size=6)) for t in sorted(ts)]))
    return st.none() | entries.map(list)


@cache
def struct_strategy(schema_name: str, struct_name: str, version: int, flexible: bool,
                    unknown: bool = True) -> st.SearchStrategy:
    schema = schemas()[schema_name]
    st_ = schema.root if struct_name == schema.root.name else next(
        s for s in schema.structs if s.name == struct_name)
    cls = _struct_class(schema, st_)
    kwargs = {}
    for f in st_.fields:
        if version in f.versions:
            kwargs[f.attr] = st.deferred(lambda f=f: _field(schema, f, version, flexible, unknown))
    if flexible and unknown:
        kwargs["unknown_tagged_fields"] = _unknown_tags(st_)
    return st.builds(cls, **kwargs)


def message_strategy(name: str, version: int, unknown_tags: bool = True) -> st.SearchStrategy:
    """Instances of message ``name`` valid in ``version`` (``unknown_tags``: add undeclared tagged fields)."""
    schema = schemas()[name]
    return struct_strategy(name, schema.root.name, version, version in schema.flexible, unknown_tags)


# -- a deterministic, fully populated instance ------------------------------------------------------

_FILL = {"bool": True, "int8": -7, "int16": 300, "uint16": 65000, "int32": -70000, "int64": 1 << 40,
         "float64": 2.5, "string": "ü-x", "bytes": b"\x00\xff", "records": b"rec"}
FILL_UUID = uuid.UUID("0123456789abcdef0123456789abcdef")


def filled(name: str, version: int) -> Any:
    """Message ``name`` with every field ``version`` carries set to a non-default value.

    Arrays hold two elements, nullable fields are non-null, and flexible structs carry one unknown
    tagged field, so the encoding exercises every field of the version.
    """
    schema = schemas()[name]
    return _filled(schema, schema.root, version, version in schema.flexible)


def _filled(schema: Schema, st_: Struct, version: int, flexible: bool) -> Any:
    kwargs: dict[str, Any] = {}
    for f in st_.fields:
        if version not in f.versions:
            continue
        if f.is_struct:
            elem = _filled(schema, f.struct, version, flexible)
            value = [elem, _filled(schema, f.struct, version, flexible)] if f.is_array else elem
        else:
            elem = FILL_UUID if f.element_type == "uuid" else _FILL[f.element_type]
            value = [elem, elem] if f.is_array else elem
        kwargs[f.attr] = value
    if flexible:
        declared = {f.tag for f in st_.fields if f.tag is not None}
        kwargs["unknown_tagged_fields"] = [(max(declared, default=0) + 40, b"?")]
    return _struct_class(schema, st_)(**kwargs)
