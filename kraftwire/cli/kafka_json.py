"""Messages as Kafka's generated ``*JsonConverter.write(message, version)`` prints them.

Field names in lowerCamelCase, only the fields the version carries, tagged fields only when they
differ from their default, UUIDs in Kafka's base64 form, bytes in base64; compact JSON. Which fields
a version carries comes from the message definitions in ``schemas/`` (a source checkout); without
them every field is printed.
"""

from __future__ import annotations

import base64
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@cache
def _schema_paths() -> dict[str, Path]:
    out = {}
    for kind in ("metadata", "control"):
        for path in sorted((SCHEMAS / kind).glob("*.json")):
            out[json.loads(path.read_text())["name"]] = path
    return out


@cache
def _schema(name: str) -> Any:
    path = _schema_paths().get(name)
    if path is None:
        return None
    from codegen.schema import load

    return load(path).root


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _value(v: Any, struct: Any, version: int) -> Any:
    if isinstance(v, list):
        return [_value(x, struct, version) for x in v]
    if isinstance(v, uuid.UUID):
        return base64.urlsafe_b64encode(v.bytes).decode().rstrip("=")
    if isinstance(v, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(type(v), "_SPEC"):
        return _struct(v, struct, version)
    return v


def _struct(obj: Any, struct: Any, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if struct is None:     # no schema at hand: every field, names from the attributes
        for attr, _kind, _sub in type(obj)._SPEC:
            name = "".join(p.capitalize() for p in attr.rstrip("_").split("_"))
            out[_camel(name)] = _value(getattr(obj, attr), None, version)
        return out
    defaults = type(obj)()
    for f in struct.fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if version in f.tagged_versions and value == getattr(defaults, f.attr):
            continue
        out[_camel(f.name)] = _value(value, f.struct, version)
    return out


def to_kafka_json(message: Any, version: int) -> dict[str, Any]:
    """The JSON object Kafka's converter writes for ``message`` at ``version``."""
    return _struct(message, _schema(type(message).__name__), version)


def dumps(obj: Any) -> str:
    """Jackson's compact ``JsonNode.toString()``."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def record_type_name(class_name: str) -> str:
    """MetadataRecordType's enum name: ``FeatureLevelRecord`` → ``FEATURE_LEVEL_RECORD``."""
    from codegen.schema import snake

    return snake(class_name).rstrip("_").upper()
