"""Cross-check with kafka-python's own protocol codecs wherever it encodes the same message.

Two generations of kafka-python codecs are compared:
- its JSON-schema ``ApiMessage`` classes (64 of our request/response messages, every version both
  sides support), and
- its legacy hand-written ``Struct`` classes (Metadata, Fetch, ListOffsets, ApiVersions, old versions).

For generated values: kraftwire's bytes must decode in kafka-python to the same field values and
kafka-python must write them back byte for byte. kafka-python drops unknown tagged fields, so those
are left out of the generated values here (test_roundtrip covers them).
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from codegen.schema import Struct
from kraftwire.protocol.messages import REQUESTS, RESPONSES, message_class

from .schema_strategies import message_strategy, schemas

kafka_protocol = pytest.importorskip("kafka.protocol", reason="kafka-python is not installed")
from kafka.protocol.api_message import ApiMessage  # noqa: E402

pytestmark = pytest.mark.compat

ZERO = uuid.UUID(int=0)
NO_OPERATIONS = -(1 << 31)  # Kafka's "authorized operations not requested" sentinel


def _kafka_python_messages() -> dict[str, type]:
    for mod in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" not in mod.name and "generate_stubs" not in mod.name:
            importlib.import_module(mod.name)
    found: dict[str, type] = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            found[cls._json["name"]] = cls
    return found


KP = _kafka_python_messages()


def _shared_pairs() -> list[tuple[str, int]]:
    pairs = []
    for name in sorted(set(REQUESTS.values()) | set(RESPONSES.values())):
        if name not in KP:
            continue
        lo, _, hi = KP[name]._json["validVersions"].partition("-")
        ours = message_class(name)
        for v in range(max(int(lo), ours.MIN_VERSION), min(int(hi or lo), ours.MAX_VERSION) + 1):
            pairs.append((name, v))
    return pairs


PAIRS = _shared_pairs()


# -- a neutral view of values for comparison ------------------------------------------------------

def _from_bitfield(bits: set[int] | None) -> int:
    """kafka-python shows authorized-operations ints as sets of bit numbers (None for the sentinel)."""
    if bits is None:
        return NO_OPERATIONS
    value = sum(1 << b for b in bits)
    return value - (1 << 32) if value >= 1 << 31 else value


def ours_view(st_: Struct, obj: Any, version: int, flexible: bool) -> dict[str, Any]:
    """Field name -> value for the fields ``version`` carries, normalised like kafka-python shows them."""
    out: dict[str, Any] = {}
    for f in st_.fields:
        if version not in f.versions:
            continue
        key = f.attr.rstrip("_")
        value = getattr(obj, f.attr)
        if f.is_struct and value is not None:
            if f.is_array:
                value = [ours_view(f.struct, o, version, flexible) for o in value]
            elif flexible and version in f.tagged_versions and value == type(value)():
                value = None  # an absent tagged struct
            else:
                value = ours_view(f.struct, value, version, flexible)
        elif f.element_type == "uuid":
            value = [None if u == ZERO else u for u in value] if f.is_array else (None if value == ZERO else value)
        elif isinstance(value, memoryview):
            value = bytes(value)
        out[key] = value
    return out


def kp_view(theirs: Any, like: dict[str, Any]) -> dict[str, Any]:
    """kafka-python's object read through the keys of ``like`` (an ours_view)."""
    out: dict[str, Any] = {}
    for key, mine in like.items():
        if key.endswith("authorized_operations"):
            value = getattr(theirs, key) if hasattr(theirs, key) else theirs.authorized_operations
            if value is None or isinstance(value, set):
                value = _from_bitfield(value)
        else:
            value = getattr(theirs, key)
        if isinstance(mine, dict) and value is not None:
            value = kp_view(value, mine)
        elif isinstance(mine, list) and mine and isinstance(mine[0], dict):
            value = [kp_view(v, m) for v, m in zip(value, mine, strict=True)]
        elif isinstance(value, uuid.UUID) and value == ZERO:
            value = None
        elif isinstance(value, list) and value and isinstance(value[0], uuid.UUID):
            value = [None if u == ZERO else u for u in value]
        out[key] = value
    return out


def _decode_kp(cls: type, wire: bytes, version: int) -> Any:
    obj = cls.decode(wire, version=version)
    obj._header = None  # decode leaves the slot unset, which encode(version=...) reads
    return obj


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-v{v}" for n, v in PAIRS])
def test_kafka_python_reads_our_bytes_to_the_same_values_and_writes_them_back(name: str, version: int) -> None:
    schema = schemas()[name]
    flexible = version in schema.flexible
    kp_cls = KP[name]

    @settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(message_strategy(name, version, unknown_tags=False))
    def check(msg: Any) -> None:
        if name == "ApiVersionsResponse":
            # Kafka (and kafka-python) read an ApiVersions error response as v0, whatever was asked
            assume(msg.error_code == 0)
        wire = msg.encode(version)
        theirs = _decode_kp(kp_cls, wire, version)
        mine = ours_view(schema.root, msg, version, flexible)
        assert kp_view(theirs, mine) == mine
        assert bytes(theirs.encode(version=version)) == wire

    check()


def test_the_shared_set_is_what_we_expect() -> None:
    names = {n for n, _ in PAIRS}
    for required in ("MetadataRequest", "MetadataResponse", "ApiVersionsRequest", "ApiVersionsResponse",
                     "FetchRequest", "FetchResponse", "ListOffsetsRequest", "ListOffsetsResponse",
                     "DescribeQuorumRequest", "DescribeQuorumResponse", "JoinGroupRequest", "CreateTopicsRequest"):
        assert required in names
    assert len(PAIRS) > 250


# -- kafka-python's legacy hand-written Struct codecs ---------------------------------------------

old = pytest.importorskip("kafka.protocol.old.metadata", reason="kafka-python without legacy structs")
from kafka.protocol.old import api_versions as old_api_versions  # noqa: E402
from kafka.protocol.old import fetch as old_fetch  # noqa: E402
from kafka.protocol.old import list_offsets as old_list_offsets  # noqa: E402
from kafka.protocol.old import metadata as old_metadata  # noqa: E402
from kafka.protocol.old.types import Array, Schema  # noqa: E402

LEGACY_MODULES = {"Metadata": old_metadata, "Fetch": old_fetch, "ListOffsets": old_list_offsets,
                  "ApiVersions": old_api_versions}


def _legacy_pairs() -> list[tuple[str, int, type]]:
    out = []
    for api, mod in LEGACY_MODULES.items():
        for kind in ("Request", "Response"):
            ours = message_class(api + kind)
            for v in range(ours.MIN_VERSION, ours.MAX_VERSION + 1):
                cls = getattr(mod, f"{api}{kind}_v{v}", None)
                if cls is not None:
                    out.append((api + kind, v, cls))
    return out


LEGACY = _legacy_pairs()


def legacy_view(schema: Schema, values: Any) -> dict[str, Any]:
    items = [getattr(values, n) for n in schema.names] if not isinstance(values, tuple | list) else values
    out = {}
    for name, field, value in zip(schema.names, schema.fields, items, strict=False):
        if name == "tags":
            continue
        if isinstance(field, Array) and isinstance(field.array_of, Schema) and value is not None:
            value = [legacy_view(field.array_of, v) for v in value]
        if name == "authorized_operations":
            value = _from_bitfield(value)
        out[name] = value
    return out


def _unwrap(mine: Any, theirs: Any) -> Any:
    """Legacy structs flatten one-field structs (MetadataRequest topics are plain names)."""
    if isinstance(mine, dict) and len(mine) == 1 and not isinstance(theirs, dict):
        return next(iter(mine.values()))
    return mine


def _restrict(mine: Any, theirs: Any) -> Any:
    """``mine`` limited to the keys ``theirs`` has (legacy structs name fewer fields)."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        out = {}
        for key, value in theirs.items():
            # legacy structs call both cluster_ and topic_authorized_operations "authorized_operations"
            mine_key = key if key in mine else next((k for k in mine if k.endswith("_" + key)), key)
            out[key] = _restrict(mine.get(mine_key, "<missing>"), value)
        return out
    if isinstance(theirs, list) and isinstance(mine, list):
        return [_restrict(_unwrap(m, t), t) for m, t in zip(mine, theirs, strict=True)]
    return mine


@pytest.mark.parametrize(("name", "version", "legacy"), LEGACY, ids=[f"{n}-v{v}" for n, v, _ in LEGACY])
def test_legacy_struct_reads_our_bytes_to_the_same_values_and_writes_them_back(name, version, legacy) -> None:
    schema = schemas()[name]
    flexible = version in schema.flexible

    @settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(message_strategy(name, version, unknown_tags=False))
    def check(msg: Any) -> None:
        if name == "ApiVersionsResponse":
            assume(msg.error_code == 0)
        if version in schema.flexible:
            # legacy structs keep tagged fields as raw bytes; compare only the untagged shape
            for f in schema.root.fields:
                if version in f.tagged_versions:
                    setattr(msg, f.attr, getattr(type(msg)(), f.attr))
        wire = msg.encode(version)
        theirs = legacy.decode(wire)
        view = legacy_view(legacy.SCHEMA, theirs)
        assert _restrict(ours_view(schema.root, msg, version, flexible), view) == view
        assert theirs.encode() == wire

    check()


def test_legacy_coverage() -> None:
    names = {(n, v) for n, v, _ in LEGACY}
    assert ("MetadataResponse", 0) in names and ("FetchResponse", 11) in names
    assert ("ListOffsetsRequest", 5) in names and ("ApiVersionsResponse", 3) in names
