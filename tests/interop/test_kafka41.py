"""Kafka 4.1 at its defaults (metadata.version 27, 4.1-IV1) and kraftwire, both ways (issue 17).

* kraftwire metadata-shell reads a Kafka 4.1 log directory formatted without --release-version;
* a kraftwire broker joins a Kafka 4.1 controller quorum at its defaults and is unfenced;
* a Kafka 4.1 broker joins a kraftwire quorum formatted at 4.1-IV1, creates a topic through it;
* a cluster at 3.9-IV0 (kraftwire controller, Kafka 4.1 broker) is upgraded to 4.1-IV1 with
  kafka-features.sh; ``--release-version 4.1-IV1`` is refused because it also asks for
  eligible.leader.replicas.version 1, which the kraftwire controller does not implement.

Each test runs only against a Kafka 4.1 distribution (skipped for other releases; under CI=true a
missing distribution fails, see tests/interop/kafka.py).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture
def kafka41(kafka_dist):
    if kafka_dist.version_tuple[:2] != (4, 1):
        pytest.skip(f"this test is about Kafka 4.1 (not {kafka_dist.version})")
    return kafka_dist


def kraftwire_cli(*args: str, timeout_s: float = 60) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=timeout_s)
    return p.returncode, p.stdout + p.stderr


def shell(directory, command: str) -> str:
    rc, out = kraftwire_cli("metadata-shell", "--snapshot", str(directory), *command.split())
    assert rc == 0, out
    return out.strip()


def test_metadata_shell_reads_a_kafka41_log_at_its_default_level(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        [host] = fleet.hosts(1)
        node = fleet.add(KafkaNode(kafka41, tmp_path, 1, "broker,controller", host, [(1, host, CONTROLLER_PORT)]))
        node.format(random_uuid())   # Kafka's defaults: no --release-version
        node.start()
        node.wait_started()
        rc, out = kafka41.run("kafka-topics.sh", ["--bootstrap-server", node.bootstrap, "--create", "--topic",
                                                  "alpha", "--partitions", "2"])
        assert rc == 0, out
        wait_for(lambda: "alpha" in shell(node.metadata_dir, "ls /topics"), 60, "topic alpha in the log")
        assert shell(node.metadata_dir, "cat /features/metadata.version") == "27"
        assert shell(node.metadata_dir, "cat /features/eligible.leader.replicas.version") == "1"
        assert shell(node.metadata_dir, "cat /topics/alpha/1/leader") == "1"
        assert shell(node.metadata_dir, "cat /topics/alpha/0/eligibleLeaderReplicas") == "[]"


def test_kraftwire_broker_joins_a_kafka41_quorum_at_its_defaults(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        chost, bhost = fleet.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = fleet.add(KafkaNode(kafka41, tmp_path, 1, "controller", chost, voters))
        cluster = random_uuid()
        ctl.format(cluster)
        ctl.start()
        ctl.wait_started()
        broker = KraftwireNode(tmp_path, 2, "broker", bhost, voters)
        fleet.add(broker)
        fleet.watch("kraftwire broker", broker.log_path)
        broker.format(cluster)
        broker.start()
        broker.wait_started()

        def unfenced() -> bool:
            rc, out = kraftwire_cli("metadata-shell", "--snapshot", str(ctl.metadata_dir),
                                    "cat", "/cluster/brokers/2/fenced")
            return rc == 0 and out.strip() == "false"

        wait_for(unfenced, 90, "kraftwire broker 2 unfenced by the Kafka 4.1 controller")
        assert "Traceback" not in broker.log_text() and broker.running()


def test_kafka41_broker_joins_a_kraftwire_quorum_at_41_iv1(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        chost, bhost = fleet.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = KraftwireNode(tmp_path, 1, "controller", chost, voters)
        fleet.add(ctl)
        fleet.watch("kraftwire controller", ctl.log_path)
        cluster = random_uuid()
        assert "metadata.version 27" in ctl.format(cluster)
        ctl.start()
        ctl.wait_started()
        broker = fleet.add(KafkaNode(kafka41, tmp_path, 2, "broker", bhost, voters))
        broker.format(cluster)
        broker.start()
        broker.wait_started()
        rc, out = kafka41.run("kafka-topics.sh", ["--bootstrap-server", f"{bhost}:{BROKER_PORT}", "--create",
                                                  "--topic", "beta", "--partitions", "1"])
        assert rc == 0, out
        rc, out = kafka41.run("kafka-features.sh", ["--bootstrap-server", f"{bhost}:{BROKER_PORT}", "describe"])
        assert rc == 0, out
        assert "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3" in out and "FinalizedVersionLevel: 4.1-IV1" in out


def test_upgrade_from_39_iv0_to_41_iv1_with_kafka_features(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        chost, bhost = fleet.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = KraftwireNode(tmp_path, 1, "controller", chost, voters)
        fleet.add(ctl)
        fleet.watch("kraftwire controller", ctl.log_path)
        cluster = random_uuid()
        ctl.format(cluster, release_version="3.9-IV0")
        ctl.start()
        ctl.wait_started()
        broker = fleet.add(KafkaNode(kafka41, tmp_path, 2, "broker", bhost, voters))
        broker.format(cluster, release_version="3.9-IV0")
        broker.start()
        broker.wait_started()
        boot = ["--bootstrap-server", f"{bhost}:{BROKER_PORT}"]
        rc, out = kafka41.run("kafka-features.sh", [*boot, "upgrade", "--release-version", "4.1-IV1"])
        assert rc != 0 and "eligible.leader.replicas.version" in out, out
        rc, out = kafka41.run("kafka-features.sh", [*boot, "upgrade", "--feature", "metadata.version=27",
                                                    "--feature", "group.version=1", "--feature",
                                                    "transaction.version=2"])
        assert rc == 0, out

        def finalized() -> str:
            return shell(ctl.metadata_dir, "cat /features/metadata.version")

        wait_for(lambda: finalized() == "27", 60, "metadata.version 27 committed")
        time.sleep(1)  # the broker applies the new level; it must stay up
        assert broker.running() and ctl.running()
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--create", "--topic", "after", "--partitions", "1"])
        assert rc == 0, out


def test_kraftwire_voter_in_a_kafka41_controller_quorum(kafka41, tmp_path):
    """Two Kafka 4.1 controllers and a kraftwire voter, each formatted at its defaults: whichever bootstrap the
    first leader commits, the quorum has a leader and every node stays up; with ELR finalized (a Kafka
    leader's bootstrap) the kraftwire voter replays but says once that it will not become active."""
    with Fleet(tmp_path) as fleet:
        hosts = fleet.hosts(3)
        voters = [(i + 1, hosts[i], CONTROLLER_PORT) for i in range(3)]
        cluster = random_uuid()
        kafkas = [fleet.add(KafkaNode(kafka41, tmp_path, i + 1, "controller", hosts[i], voters)) for i in range(2)]
        kw = KraftwireNode(tmp_path, 3, "controller", hosts[2], voters)
        fleet.add(kw)
        fleet.watch("kraftwire voter", kw.log_path)
        for n in kafkas:
            n.format(cluster)
        kw.format(cluster)
        for n in (*kafkas, kw):
            n.start()
        for n in (*kafkas, kw):
            n.wait_started()

        def status() -> str | None:
            rc, out = kafka41.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", kafkas[0].controller_address,
                                                               "describe", "--status"], timeout_s=60)
            return out if rc == 0 and "LeaderId:" in out and "LeaderId:               -1" not in out else None

        out = wait_for(status, 90, "a quorum leader")
        assert '"id": 3' in out
        wait_for(lambda: shell(kw.metadata_dir, "cat /features/metadata.version") == "27", 60,
                 "metadata.version 27 replayed by the kraftwire voter")
        elr = kraftwire_cli("metadata-shell", "--snapshot", str(kw.metadata_dir), "cat",
                            "/features/eligible.leader.replicas.version")[1].strip()
        lines = [x for x in kw.log_text().splitlines() if "will not become active" in x]
        if elr == "1":
            assert len(lines) == 1 and "eligible.leader.replicas.version 1" in lines[0], lines
        else:
            assert lines == []
        assert kw.running() and all(n.running() for n in kafkas)
        assert "Traceback" not in kw.log_text()
