"""The API coverage table: every API Kafka 4.1's controller advertises is served by kraftwire's controller or
refused with a documented reason, the listeners kraftwire reads are Kafka 4.1's, and docs/compatibility.md
holds the table as generated (it cannot drift)."""

from __future__ import annotations

import json
import os
import re
import zipfile

import pytest
from protocol import kafka_java

from kraftwire.core.api_registry import broker_plane_apis, controller_plane_apis
from kraftwire.node import api_coverage as cov


def test_every_kafka_controller_api_is_served_or_refused_with_a_reason() -> None:
    served = controller_plane_apis()
    apis = cov.kafka_apis()
    missing = [f"{a.key} {a.name}" for a in apis.values()
               if cov.CONTROLLER in a.listeners and a.key not in served and not cov.CONTROLLER_REFUSED.get(a.key)]
    assert missing == [], ("Kafka 4.1 controller APIs neither served by kraftwire's controller nor refused with a "
                           f"reason in kraftwire/core/api_registry.py CONTROLLER_REFUSED: {missing}")
    both = sorted(set(served) & set(cov.CONTROLLER_REFUSED))
    assert both == [], f"served now, so drop their CONTROLLER_REFUSED reasons in core/api_registry.py: {both}"
    stale = sorted(k for k in cov.CONTROLLER_REFUSED if cov.CONTROLLER not in apis[k].listeners)
    assert stale == [], f"CONTROLLER_REFUSED names APIs Kafka's controller does not advertise: {stale}"


def test_every_kafka_broker_api_is_served_or_refused_with_a_reason() -> None:
    served = broker_plane_apis()
    apis = cov.kafka_apis()
    missing = [f"{a.key} {a.name}" for a in apis.values()
               if cov.BROKER in a.listeners and a.key not in served and not cov.BROKER_REFUSED.get(a.key)]
    assert missing == [], f"Kafka 4.1 broker APIs without a kraftwire broker answer or reason: {missing}"
    both = sorted(set(served) & set(cov.BROKER_REFUSED))
    assert both == [], f"served now, so drop their BROKER_REFUSED reasons in core/api_registry.py: {both}"


def test_api_keys_are_complete_and_named_once() -> None:
    apis = cov.kafka_apis()
    assert sorted(apis) == list(range(93))
    assert len({a.name for a in apis.values()}) == 93


def _jar_requests() -> dict[int, tuple[str, frozenset[str]]]:
    lib = kafka_java.kafka41_libs()
    if lib is None:
        reason = "no Apache Kafka 4.1 distribution (KAFKA_HOME, KRAFTWIRE_KAFKA_DISTS or ../shared/kafka)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    out = {}
    with zipfile.ZipFile(lib / "kafka-clients-4.1.0.jar") as z:
        for n in z.namelist():
            if n.startswith("common/message/") and n.endswith("Request.json"):
                d = json.loads(re.sub(r"^\s*//.*$", "", z.read(n).decode(), flags=re.MULTILINE))
                out[d["apiKey"]] = (d["name"][: -len("Request")], frozenset(d.get("listeners") or ()))
    return out


def test_listeners_are_kafka_41s() -> None:
    """The schemas' listeners and ``UNMODELLED`` say what Kafka 4.1's request JSON says, key by key."""
    ours = {k: (a.name, a.listeners) for k, a in cov.kafka_apis().items()}
    assert ours == _jar_requests()


def test_compatibility_doc_holds_the_generated_table() -> None:
    doc = cov.DOC.read_text()
    assert cov.with_table(doc, cov.render()) == doc, (
        "docs/compatibility.md's API coverage table is stale: run `python -m kraftwire.node.api_coverage`")


def test_the_table_says_what_the_node_tables_say() -> None:
    lines = {int(line.split("|")[1]): line for line in cov.render().splitlines()[2:]}
    assert "refused: delegation tokens" in lines[38] or "served" in lines[38].split("|")[4]
    assert lines[49].split("|")[4].strip() == "served v0-1"
    assert lines[49].split("|")[6].strip() == "forwarded to the active controller v0-1"
    assert lines[48].split("|")[4].strip() == "served v0-1 (kraftwire only)"
    assert lines[48].split("|")[6].strip() == "served from its image v0-1"
    assert "ZooKeeper-era" in lines[4]
