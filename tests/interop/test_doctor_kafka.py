"""``kraftwire doctor`` against Kafka: a Kafka 4.1 quorum (one controller, two brokers, one killed), and a Kafka 3.9
broker holding back a metadata.version upgrade of a kraftwire quorum."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compat.kafka import CONTROLLER_PORT, KafkaNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture
def kafka41(kafka_dist):
    if kafka_dist.version_tuple[:2] != (4, 1):
        pytest.skip(f"this test is about Kafka 4.1 (not {kafka_dist.version})")
    return kafka_dist


def doctor(addr: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", "doctor", "--bootstrap-controller", addr, *extra],
                          capture_output=True, text=True, timeout=120)


def test_doctor_on_a_kafka41_quorum_reports_the_leader_then_a_dead_broker(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        chost, h2, h3 = fleet.hosts(3)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = fleet.add(KafkaNode(kafka41, tmp_path, 1, "controller", chost, voters))
        brokers = [fleet.add(KafkaNode(kafka41, tmp_path, i, "broker", h, voters)) for i, h in ((2, h2), (3, h3))]
        cluster = random_uuid()
        for node in (ctl, *brokers):
            node.format(cluster)
            node.start()
        for node in (ctl, *brokers):
            node.wait_started()
        rc, out = kafka41.run("kafka-topics.sh", ["--bootstrap-server", brokers[0].bootstrap, "--create",
                                                  "--topic", "solo", "--partitions", "2", "--replication-factor",
                                                  "1"])
        assert rc == 0, out
        healthy = wait_for(lambda: (r := doctor(ctl.controller_address)).returncode == 0 and r, 60, "healthy")
        print(healthy.stdout)
        assert healthy.stdout.startswith("ok      [quorum] node 1 leads in epoch ")
        assert "metadata.version=27 (4.1-IV1)" in healthy.stdout
        brokers[1].kill()
        sick = wait_for(lambda: "broker 3 is fenced" in (r := doctor(ctl.controller_address)).stdout and r, 90,
                        "broker 3 reported fenced")
        print(sick.stdout)
        assert sick.returncode == 1
        assert "PROBLEM [brokers] broker 3 is fenced: it stopped fetching the metadata log" in sick.stdout
        assert "DescribeQuorum: log end offset" in sick.stdout        # Kafka lists brokers as observers
        doc = json.loads(doctor(ctl.controller_address, "--json").stdout)
        partitions = [f for f in doc["findings"] if f["area"] == "partitions"]
        solo_on_3 = [e for f in partitions for e in f["evidence"] if e.startswith("solo-") and "(3 fenced)" in e]
        assert all("offline" in f["text"] for f in partitions if f["severity"] == "problem")
        assert solo_on_3 or all(f["severity"] == "ok" for f in partitions)


@pytest.fixture
def kafka39(kafka_dist):
    if kafka_dist.version_tuple[:2] != (3, 9):
        pytest.skip(f"this test is about Kafka 3.9 (not {kafka_dist.version})")
    return kafka_dist


def test_doctor_names_the_kafka39_broker_that_blocks_a_metadata_version_upgrade(kafka39, tmp_path):
    """A kraftwire controller (supports up to 4.1-IV1) at 3.9-IV0 with a Kafka 3.9 broker (up to 3.9-IV0)."""
    with Fleet(tmp_path) as fleet:
        ctl, broker, _ = fleet.kafka_broker_on_a_kraftwire_controller(kafka39, tmp_path, "3.9-IV0")
        addr = ctl.controller_address
        blocked = wait_for(lambda: "blocked by broker 2" in (r := doctor(addr)).stdout and r, 60,
                           "the blocked upgrade reported")
        print(blocked.stdout)
        assert ("PROBLEM [features] upgrade of metadata.version beyond 21 (3.9-IV0) is blocked by broker 2 "
                "(highest supported 21, others up to 27)") in blocked.stdout
        assert "- controller 1: max 27" in blocked.stdout and "- broker 2: max 21" in blocked.stdout
        assert "ok      [brokers] broker 2 is registered and unfenced" in blocked.stdout
