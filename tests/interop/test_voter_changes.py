"""KIP-853 voter changes across implementations (Kafka 4.1; 3.x releases are skipped: the matrix runs these cells
for 4.1 only):

* Kafka 4.1's own ``kafka-metadata-quorum.sh add-controller | remove-controller`` against a kraftwire-led quorum,
  adding and removing a Kafka 4.1 controller (formatted ``--no-initial-controllers``, fetching as an observer):
  a mixed quorum whose voters change;
* kraftwire's ``metadata-quorum remove-controller | add-controller`` against a Kafka 4.1 quorum of two.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from compat.kafka import CONTROLLER_PORT, KafkaNode, KraftwireNode, loopback_hosts, wait_for
from kraftwire.storage.meta_properties import random_uuid, read_meta
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]


@pytest.fixture
def release(kafka_dist):
    if not kafka_dist.version.startswith("4."):
        pytest.skip(f"voter-change cells run against Kafka 4.x only (this is {kafka_dist.version})")
    return kafka_dist


def _dynamic(node, bootstrap: str) -> None:
    node.properties.pop("controller.quorum.voters", None)
    node.properties["controller.quorum.bootstrap.servers"] = bootstrap
    node.config.write_text("".join(f"{k}={v}\n" for k, v in node.properties.items()))


def _voters(dist, address: str) -> list[dict]:
    rc, out = dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", address, "describe", "--status"],
                       timeout_s=90)
    if rc != 0:
        return []
    found = re.search(r"CurrentVoters:\s+(\[.*\])", out)
    return json.loads(found.group(1)) if found else []


def _observers(dist, address: str) -> str:
    rc, out = dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", address, "describe", "--status"],
                       timeout_s=90)
    return out if rc == 0 else ""


def test_kafka_tool_adds_and_removes_a_kafka_controller_on_a_kraftwire_quorum(release, tmp_path):
    h1, h2 = loopback_hosts(2)
    cid = random_uuid()
    boot = f"{h1}:{CONTROLLER_PORT}"
    lead = KraftwireNode(tmp_path, 1, "controller", h1, [(1, h1, CONTROLLER_PORT)])
    _dynamic(lead, boot)
    lead.format(cid, extra=["--standalone"])
    kafka = KafkaNode(release, tmp_path / "k", 2, "controller", h2, [(1, h1, CONTROLLER_PORT)])
    _dynamic(kafka, boot)
    kafka.format(cid, extra=["--no-initial-controllers"])
    kdir = read_meta(kafka.data).directory_id
    with Fleet(tmp_path) as fleet:
        fleet.nodes = [lead, kafka]
        lead.start()
        lead.wait_started()
        wait_for(lambda: [v["id"] for v in _voters(release, boot)] == [1], 60, "kraftwire leading alone")
        kafka.start()
        kafka.wait_started(150)
        wait_for(lambda: re.search(r"CurrentObservers:\s+\[.*\"id\": 2", _observers(release, boot)), 90,
                 "the Kafka controller fetching from kraftwire as an observer")
        rc, out = release.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", boot, "--command-config",
                                                           str(kafka.config), "add-controller"], timeout_s=120)
        assert rc == 0 and f"Added controller 2 with directory id {kdir}" in out, out[-800:]
        voters = wait_for(lambda: (v := _voters(release, boot)) and len(v) == 2 and v, 60, "two voters")
        assert {v["id"]: v["directoryId"] for v in voters}[2] == kdir
        # the Kafka voter's log holds the VotersRecord kraftwire's leader appended, and it follows that leader
        wait_for(lambda: [v["id"] for v in _voters(release, f"{h2}:{CONTROLLER_PORT}")] == [1, 2], 60,
                 "the Kafka voter describing the new voter set")
        rc, out = release.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", boot, "remove-controller",
                                                           "--controller-id", "2", "--controller-directory-id", kdir],
                              timeout_s=120)
        assert rc == 0 and f"KRaft controller 2 with directory id {kdir}" in out, out[-800:]
        wait_for(lambda: [v["id"] for v in _voters(release, boot)] == [1], 60, "back to one voter")


def _kraftwire_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", *args], capture_output=True,
                          text=True, timeout=90)


def test_kraftwire_cli_removes_and_adds_a_kafka_controller(release, tmp_path):
    hosts = loopback_hosts(2)
    cid = random_uuid()
    dirs = {i: random_uuid() for i in (1, 2)}
    boot = ",".join(f"{h}:{CONTROLLER_PORT}" for h in hosts)
    spec = ",".join(f"{i}@{hosts[i - 1]}:{CONTROLLER_PORT}:{dirs[i]}" for i in (1, 2))
    nodes = []
    for i in (1, 2):
        node = KafkaNode(release, tmp_path, i, "controller", hosts[i - 1], [(1, hosts[0], CONTROLLER_PORT)])
        _dynamic(node, boot)
        node.format(cid, extra=["--initial-controllers", spec])
        nodes.append(node)
    with Fleet(tmp_path) as fleet:
        fleet.nodes = nodes
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait_started(150)
        wait_for(lambda: len(_voters(release, boot)) == 2, 90, "the Kafka quorum of two")
        out = _kraftwire_cli("--bootstrap-controller", boot, "--timeout", "30", "remove-controller",
                             "--controller-id", "2", "--controller-directory-id", dirs[2])
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == f"Removed  KRaft controller 2 with directory id {dirs[2]}"
        wait_for(lambda: [v["id"] for v in _voters(release, boot)] == [1], 90, "one voter left")
        wait_for(lambda: re.search(r"CurrentObservers:\s+\[.*\"id\": 2", _observers(release, boot)), 90,
                 "the removed controller fetching as an observer")
        deadline_ok = wait_for(lambda: (o := _kraftwire_cli("--bootstrap-controller", boot, "--timeout", "30",
                                                            "--command-config", str(nodes[1].config),
                                                            "add-controller")).returncode == 0 and o, 90,
                               "kraftwire's add-controller accepted by the Kafka leader")
        assert deadline_ok.stdout.strip() == (f"Added controller 2 with directory id {dirs[2]} and endpoints: "
                                              f"CONTROLLER://{hosts[1]}:{CONTROLLER_PORT}")
        wait_for(lambda: len(_voters(release, boot)) == 2, 90, "two voters again")
        dup = _kraftwire_cli("--bootstrap-controller", boot, "--timeout", "30", "--command-config",
                             str(nodes[1].config), "add-controller")
        assert dup.returncode == 1 and "DUPLICATE_VOTER" in dup.stderr, dup.stderr


def test_kraftwire_controller_joins_a_kafka_quorum(release, tmp_path):
    """A kraftwire controller formatted ``--no-initial-controllers`` fetches from a Kafka 4.1 leader as an observer
    and is added by Kafka's own ``add-controller``; then removed again."""
    h1, h2 = loopback_hosts(2)
    cid = random_uuid()
    boot = f"{h1}:{CONTROLLER_PORT}"
    kafka = KafkaNode(release, tmp_path / "k", 1, "controller", h1, [(1, h1, CONTROLLER_PORT)])
    _dynamic(kafka, boot)
    kafka.format(cid, extra=["--standalone"])
    node = KraftwireNode(tmp_path, 2, "controller", h2, [(1, h1, CONTROLLER_PORT)])
    _dynamic(node, boot)
    node.format(cid, extra=["--no-initial-controllers"])
    ndir = read_meta(node.data).directory_id
    with Fleet(tmp_path) as fleet:
        fleet.nodes = [kafka, node]
        kafka.start()
        kafka.wait_started(150)
        node.start()
        node.wait_started()
        wait_for(lambda: re.search(r"CurrentObservers:\s+\[.*\"id\": 2", _observers(release, boot)), 90,
                 "the kraftwire controller fetching from Kafka as an observer")
        rc, out = release.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", boot, "--command-config",
                                                           str(node.config), "add-controller"], timeout_s=120)
        assert rc == 0 and f"Added controller 2 with directory id {ndir}" in out, out[-800:]
        voters = wait_for(lambda: (v := _voters(release, boot)) and len(v) == 2 and v, 60, "two voters")
        assert {v["id"]: v["directoryId"] for v in voters}[2] == ndir
        rc, out = release.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", boot, "remove-controller",
                                                           "--controller-id", "2", "--controller-directory-id", ndir],
                              timeout_s=120)
        assert rc == 0, out[-800:]
        wait_for(lambda: [v["id"] for v in _voters(release, boot)] == [1], 60, "back to the Kafka voter alone")
