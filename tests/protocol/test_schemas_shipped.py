"""schemas/ carries the layouts Kafka shipped: every version compared with the release that defines it.

kafka-clients.jar embeds its clients/src/main/resources/common/message/*.json, kafka-metadata.jar its
common/metadata/*.json. Kafka 4.0 removed old versions (KIP-896) and added new ones; kraftwire keeps
serving the old ones, so each schema of ours spans both releases. For every version of every schema,
the layout at that version (fields present, their types, nullability, tags and defaults, flexibility)
must equal Kafka 4.1's when 4.1 defines the version, else Kafka 3.9's. Only the prose may differ.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from codegen.schema import Versions

from . import kafka_java
from .schema_strategies import ROOT

pytestmark = pytest.mark.java

# Field names kraftwire kept from Kafka 3.9 where 4.1 renamed a field without changing the wire.
RENAMED = {("VoteRequest", "ReplicaEpoch"): "CandidateEpoch", ("VoteRequest", "ReplicaId"): "CandidateId",
           ("VoteRequest", "ReplicaDirectoryId"): "CandidateDirectoryId"}


def _json_with_comments(text: str) -> dict:
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def _jar_schemas(jar: Path, prefixes: tuple[str, ...]) -> dict[str, dict]:
    out = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.startswith(prefixes) and name.endswith(".json"):
                data = _json_with_comments(z.read(name).decode())
                out[data["name"]] = data
    return out


def _norm_default(value: object) -> str | None:
    return None if value is None else str(value).lower()


def at_version(schema: dict, v: int, *, theirs: bool = False) -> dict:
    """What ``schema`` puts on the wire at version ``v``."""
    flexible = v in Versions.parse(schema.get("flexibleVersions"))
    structs = {c["name"]: c["fields"] for c in schema.get("commonStructs", [])}

    def fields(fs: list[dict]) -> list[tuple]:
        out = []
        for f in fs:
            if v not in Versions.parse(f["versions"]):
                continue
            name = RENAMED.get((schema["name"], f["name"]), f["name"]) if theirs else f["name"]
            tagged = flexible and v in Versions.parse(f.get("taggedVersions"))
            sub = f.get("fields") or structs.get(f["type"].removeprefix("[]"))
            out.append((name, f["type"], v in Versions.parse(f.get("nullableVersions")), tagged,
                        int(f["tag"]) if tagged else None, _norm_default(f.get("default")),
                        f.get("flexibleVersions"), fields(sub) if sub else None))
        return out

    return {"apiKey": schema.get("apiKey"), "type": schema["type"], "flexible": flexible,
            "fields": fields(schema["fields"])}


def _versions(schema: dict) -> range:
    vr = Versions.parse(schema["validVersions"])
    assert vr.hi is not None
    return range(vr.lo, vr.hi + 1)


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def shipped39() -> dict[str, dict]:
    lib = kafka_java.jar_dir()
    if lib is None:
        _missing("kafka-clients 3.9 jar not found (pip install shigawire-apache-flink-libraries)")
    return _jar_schemas(lib / "kafka-clients.jar", ("common/message/",))


@pytest.fixture(scope="module")
def shipped41() -> dict[str, dict]:
    lib = kafka_java.kafka41_libs()
    if lib is None:
        _missing("no Apache Kafka 4.1 distribution (KAFKA_HOME, KRAFTWIRE_KAFKA_DISTS or ../shared/kafka)")
    return {**_jar_schemas(lib / "kafka-clients-4.1.0.jar", ("common/message/",)),
            **_jar_schemas(lib / "kafka-metadata-4.1.0.jar", ("common/metadata/",))}


OURS = sorted(p for d in ("message", "control", "metadata") for p in (ROOT / "schemas" / d).glob("*.json"))


@pytest.mark.parametrize("path", OURS, ids=[p.stem for p in OURS])
def test_every_version_matches_the_release_that_defines_it(shipped39: dict, shipped41: dict, path: Path) -> None:
    ours = json.loads(path.read_text())
    name = ours["name"]
    new, old = shipped41.get(name), shipped39.get(name)
    assert new is not None or old is not None, f"{name} is not a message Kafka ships"
    for v in _versions(ours):
        ref = new if new is not None and v in _versions(new) else old
        assert ref is not None and v in _versions(ref), f"{name} v{v}: no Kafka release defines it"
        assert at_version(ours, v) == at_version(ref, v, theirs=True), f"{name} v{v}"
    if new is not None:  # kraftwire knows every version Kafka 4.1 ships, and no newer one
        assert max(_versions(ours)) == max(_versions(new)), name


def test_4_1_messages_kraftwire_lacks_are_not_half_there(shipped41: dict) -> None:
    """Every metadata record Kafka 4.1 writes has a schema here (a 4.1 log must replay)."""
    records = {n for n, s in shipped41.items() if s["type"] == "metadata"}
    ours = {json.loads(p.read_text())["name"] for p in OURS}
    assert records <= ours, sorted(records - ours)


def test_about_texts_are_our_own(shipped39: dict, shipped41: dict) -> None:
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
        for shipped in (shipped39, shipped41):
            if ours["name"] not in shipped:
                continue
            theirs = abouts(shipped[ours["name"]]["fields"], "")
            for key, text in abouts(ours["fields"], "").items():
                if len(text) > 30 and text == theirs.get(key):
                    copied.append(f"{ours['name']}.{key}")
    assert not copied, copied
