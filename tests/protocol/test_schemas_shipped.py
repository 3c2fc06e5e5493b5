"""schemas/ carries the layouts Kafka shipped: compare with the message JSON inside kafka-clients 3.9.

kafka-clients.jar embeds its clients/src/main/resources/common/message/*.json. Every schema of ours
that Kafka also ships there must agree on everything that shapes the wire (names, types, versions,
nullable/tagged versions, tags, defaults, ignorable, flexible overrides); only the prose may differ.
Metadata records live in another Kafka jar and are checked by the round-trip and golden tests instead.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from . import kafka_java
from .schema_strategies import ROOT

pytestmark = pytest.mark.java

WIRE_KEYS = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default",
             "flexibleVersions", "ignorable")


def _json_with_comments(text: str) -> dict:
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def _fields(fields: list[dict]) -> list[dict]:
    out = []
    for f in fields:
        d = {k: f.get(k) for k in WIRE_KEYS}
        d["default"] = None if d["default"] is None else str(d["default"]).lower()
        d["ignorable"] = bool(d["ignorable"])
        if "fields" in f:
            d["fields"] = _fields(f["fields"])
        out.append(d)
    return out


def wire_shape(schema: dict) -> dict:
    return {
        "apiKey": schema.get("apiKey"), "type": schema["type"], "validVersions": schema["validVersions"],
        "flexibleVersions": schema.get("flexibleVersions"), "fields": _fields(schema["fields"]),
        "commonStructs": {c["name"]: _fields(c["fields"]) for c in schema.get("commonStructs", [])},
    }


@pytest.fixture(scope="module")
def shipped() -> dict[str, dict]:
    lib = kafka_java.jar_dir()
    if lib is None:
        pytest.skip("kafka-clients.jar not found (pip install shigawire-apache-flink-libraries)")
    with zipfile.ZipFile(lib / "kafka-clients.jar") as jar:
        out = {}
        for name in jar.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                data = _json_with_comments(jar.read(name).decode())
                out[data["name"]] = data
        return out


OURS = sorted(p for d in ("message", "control") for p in (ROOT / "schemas" / d).glob("*.json"))


@pytest.mark.parametrize("path", OURS, ids=[p.stem for p in OURS])
def test_schema_matches_what_kafka_shipped(shipped: dict, path: Path) -> None:
    ours = json.loads(path.read_text())
    assert ours["name"] in shipped, f"{ours['name']} is not a message kafka-clients ships"
    assert wire_shape(ours) == wire_shape(shipped[ours["name"]])


def test_about_texts_are_our_own(shipped: dict) -> None:
    """Same facts, own words: no field description is copied verbatim from Kafka's JSON."""
    def abouts(fields: list[dict], prefix: str) -> dict[str, str]:
        out = {}
        for f in fields:
            out[prefix + f["name"]] = f.get("about", "")
            out.update(abouts(f.get("fields", []), prefix + f["name"] + "."))
        return out

    copied = []
    for path in OURS:
        ours = json.loads(path.read_text())
        theirs = abouts(shipped[ours["name"]]["fields"], "")
        for key, text in abouts(ours["fields"], "").items():
            if len(text) > 30 and text == theirs.get(key):
                copied.append(f"{ours['name']}.{key}")
    assert not copied, copied
