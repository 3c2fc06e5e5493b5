"""KIP-853 formats across implementations (Kafka 3.9 and 4.x; 3.7 has no dynamic quorums):

* a controller directory formatted by Kafka's ``kafka-storage.sh format --standalone`` is served by kraftwire: it
  leads its one-voter quorum, and Kafka's ``kafka-metadata-quorum.sh describe --status | --replication`` shows
  the voter with the directory id Kafka's format chose;
* and the reverse: a directory formatted by ``kraftwire storage format --standalone`` is served by a Kafka
  controller, and Kafka's dump-log reads kraftwire's bootstrap snapshot as it reads its own.

Voter changes across implementations: tests/interop/test_voter_changes.py."""

from __future__ import annotations

import json
import re

import pytest

from compat.interop import (
    MixedQuorum,
    check_leadership_both_ways,
    check_logs_identical,
    check_mixed_quorum_forms,
)
from compat.kafka import CONTROLLER_PORT, KafkaNode, KraftwireNode, loopback_hosts, start_all, wait_for
from kraftwire.storage.meta_properties import random_uuid, read_meta
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]
SNAPSHOT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _dynamic(node: KafkaNode | KraftwireNode) -> None:
    """No controller.quorum.voters: the voters come from the log; bootstrap.servers names this controller."""
    node.properties.pop("controller.quorum.voters", None)
    node.properties["controller.quorum.bootstrap.servers"] = node.controller_address
    node.config.write_text("".join(f"{k}={v}\n" for k, v in node.properties.items()))


def _describe(dist, node, what: str) -> str:
    rc, out = dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", node.controller_address, "describe",
                                                    what], timeout_s=90)
    assert rc == 0, out[-400:]
    return out


@pytest.fixture
def release(kafka_dist):
    if kafka_dist.version.startswith("3.7"):
        pytest.skip("Kafka 3.7 has no dynamic quorums (KIP-853 shipped in 3.9)")
    return kafka_dist


def test_kafka_standalone_format_served_by_kraftwire(release, tmp_path):
    host = loopback_hosts(1)[0]
    cid = random_uuid()
    kafka = KafkaNode(release, tmp_path / "k", 1, "controller", host, [(1, host, CONTROLLER_PORT)])
    _dynamic(kafka)
    kafka.format(cid, release_version="3.9-IV0", extra=["--standalone"])
    directory = read_meta(kafka.data).directory_id
    node = KraftwireNode(tmp_path, 1, "controller", host, [(1, host, CONTROLLER_PORT)])
    node.properties["log.dirs"] = str(kafka.data)
    _dynamic(node)
    with Fleet(tmp_path) as fleet:
        fleet.nodes = [node]
        node.start()
        node.wait_started()
        status = wait_for(lambda: (o := _describe(release, node, "--status")) and "LeaderId:               1" in o
                          and o, 60, "kraftwire leading the Kafka-formatted quorum")
        voters = json.loads(re.search(r"CurrentVoters:\s+(\[.*\])", status).group(1))
        assert voters == [{"id": 1, "directoryId": directory, "endpoints": [f"CONTROLLER://{host}:{CONTROLLER_PORT}"]}]
        rows = _describe(release, node, "--replication")
        assert re.search(rf"^1\s+{directory}\s+\d+\s+0\s+.*Leader", rows, re.M), rows


def test_kraftwire_standalone_format_served_by_kafka(release, tmp_path):
    host = loopback_hosts(1)[0]
    cid = random_uuid()
    node = KraftwireNode(tmp_path, 1, "controller", host, [(1, host, CONTROLLER_PORT)])
    _dynamic(node)
    node.format(cid, release_version="3.9-IV0", extra=["--standalone"])
    directory = read_meta(node.data).directory_id
    rc, out = release.run("kafka-dump-log.sh", ["--cluster-metadata-decoder", "--files", str(node.data / SNAPSHOT)])
    assert rc == 0 and '"kRaftVersion":1' in out, out[-400:]
    assert f'"voterId":1,"voterDirectoryId":"{directory}","endpoints":[{{"name":"CONTROLLER","host":"{host}",' \
           f'"port":{CONTROLLER_PORT}}}]' in out, out[-400:]
    kafka = KafkaNode(release, tmp_path / "k", 1, "controller", host, [(1, host, CONTROLLER_PORT)])
    kafka.properties["log.dirs"] = str(node.data)
    _dynamic(kafka)
    with Fleet(tmp_path) as fleet:
        fleet.nodes = [kafka]
        kafka.start()
        kafka.wait_started(120)
        status = wait_for(lambda: (o := _describe(release, kafka, "--status")) and "LeaderId:               1" in o
                          and o, 60, "Kafka leading the kraftwire-formatted quorum")
        assert f'"directoryId": "{directory}"' in status, status


def test_mixed_initial_controllers_quorum(release, tmp_path):
    """1 kraftwire and 2 Kafka voters formatted with the same ``--initial-controllers`` (kraft.version 1): the
    mixed-quorum row (d) — a leader described through a Kafka voter, leadership both ways, identical logs."""
    c = MixedQuorum(release, tmp_path)
    dirs = {i: random_uuid() for i in c.nodes}
    spec = ",".join(f"{i}@{n.host}:{CONTROLLER_PORT}:{dirs[i]}" for i, n in sorted(c.nodes.items()))
    for node in c.nodes.values():
        _dynamic(node)
        node.properties["controller.quorum.bootstrap.servers"] = c.voter_addrs()
        node.config.write_text("".join(f"{k}={v}\n" for k, v in node.properties.items()))
        node.format(c.cluster_id, release_version="3.9-IV0", extra=["--initial-controllers", spec])
    with Fleet(tmp_path) as fleet:
        fleet.nodes = list(c.nodes.values())
        start_all(c.nodes.values(), 150)
        c.wait_leader(90)
        for check in (check_mixed_quorum_forms, check_leadership_both_ways, check_logs_identical):
            result = check(c)
            print(f"{check.__name__}: {result.status}: {result.detail}")
            assert result.status == "pass", result.detail
