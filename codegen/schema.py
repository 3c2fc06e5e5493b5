"""Reading Kafka message-definition JSON (schemas/) into a small typed model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "int64", "float64", "uuid",
              "string", "bytes", "records"}
FIXED_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
                 "float64": "d", "uuid": "16s"}


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi`` None means open-ended ("3+"); empty when lo > hi."""

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version and (self.hi is None or version <= self.hi)


@dataclass
class Field:
    name: str
    type: str
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: str | None
    ignorable: bool
    flexible_override: Versions | None
    about: str
    struct: Struct | None = None  # set for struct and struct-array fields

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    @property
    def attr(self) -> str:
        return snake(self.name)


@dataclass
class Struct:
    name: str
    fields: list[Field]
    versions: Versions
    about: str = ""


@dataclass
class Schema:
    name: str
    kind: str  # request, response, header, metadata, data
    api_key: int | None
    valid: Versions
    flexible: Versions
    root: Struct
    structs: list[Struct] = field(default_factory=list)  # every nested struct, dependency order
    about: str = ""
    listeners: list[str] = field(default_factory=list)
    source: str = ""

    @property
    def versions(self) -> range:
        assert self.valid.hi is not None
        return range(self.valid.lo, self.valid.hi + 1)


_SNAKE1 = re.compile(r"(.)([A-Z][a-z]+)")
_SNAKE2 = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """Kafka's CamelCase field names as Python attribute names (``ThrottleTimeMs`` → ``throttle_time_ms``)."""
    s = _SNAKE2.sub(r"\1_\2", _SNAKE1.sub(r"\1_\2", name)).lower()
    return s + "_" if s in {"type", "id", "hash", "filter", "format", "property", "global", "async"} else s


def module_name(schema_name: str) -> str:
    return snake(schema_name).rstrip("_")


def load(path: Path) -> Schema:
    data = json.loads(path.read_text())
    common = {c["name"]: c for c in data.get("commonStructs", [])}
    structs: dict[str, Struct] = {}
    order: list[Struct] = []

    def make_struct(name: str, spec_fields: list[dict], versions: Versions, about: str) -> Struct:
        st = Struct(name, [], versions, about)
        structs[name] = st
        for f in spec_fields:
            st.fields.append(make_field(f))
        order.append(st)
        return st

    def make_field(f: dict) -> Field:
        fld = Field(
            name=f["name"], type=f["type"], versions=Versions.parse(f.get("versions")),
            nullable_versions=Versions.parse(f.get("nullableVersions")),
            tagged_versions=Versions.parse(f.get("taggedVersions")),
            tag=None if f.get("tag") is None else int(f["tag"]), default=f.get("default"), ignorable=bool(f.get("ignorable", False)),
            flexible_override=Versions.parse(f["flexibleVersions"]) if "flexibleVersions" in f else None,
            about=f.get("about", ""),
        )
        elem = fld.element_type
        if elem not in PRIMITIVES:
            if "fields" in f:
                fld.struct = make_struct(elem, f["fields"], fld.versions, fld.about)
            elif elem in structs:
                fld.struct = structs[elem]
            elif elem in common:
                c = common[elem]
                fld.struct = make_struct(elem, c["fields"], Versions.parse(c.get("versions")), c.get("about", ""))
            else:
                raise ValueError(f"{path.name}: unknown type {elem} of field {fld.name}")
        return fld

    kind = data["type"]
    name = data["name"]
    root = make_struct(name, data["fields"], Versions.parse(data["validVersions"]), data.get("about", ""))
    order.remove(root)
    return Schema(
        name=name, kind=kind, api_key=data.get("apiKey"), valid=Versions.parse(data["validVersions"]),
        flexible=Versions.parse(data.get("flexibleVersions")), root=root, structs=order,
        about=data.get("about", ""), listeners=data.get("listeners", []), source=f"{path.parent.parent.name}/{path.parent.name}/{path.name}",
    )


def load_all(root: Path) -> list[Schema]:
    return [load(p) for p in sorted(root.glob("*/*.json"))]
