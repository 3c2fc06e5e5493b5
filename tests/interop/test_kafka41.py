"""Kafka 4.1 at its defaults (metadata.version 27, 4.1-IV1) and kraftwire, both ways (issue 17).

* kraftwire metadata-shell reads a Kafka 4.1 log directory formatted without --release-version;
* a kraftwire broker joins a Kafka 4.1 controller quorum at its defaults and is unfenced;
* a Kafka 4.1 broker joins a kraftwire quorum formatted at its defaults (4.1-IV1, ELR on), creates a topic
  through it, produces and consumes;
* a cluster at 3.9-IV0 (kraftwire controller, Kafka 4.1 broker) is upgraded with
  ``kafka-features.sh upgrade --release-version 4.1-IV1``: metadata.version 27 and
  eligible.leader.replicas.version 1, the cluster-level min.insync.replicas written with it;
* eligible leader replicas (KIP-966) with a kraftwire controller and two Kafka 4.1 brokers: replicas that
  stop cleanly below min.insync.replicas stay eligible, and one of them leads again when the ISR emptied;
* a kraftwire voter with two Kafka 4.1 controllers, each at its defaults.

Each test runs only against a Kafka 4.1 distribution (skipped for other releases; under CI=true a
missing distribution fails, see tests/interop/kafka.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid

import pytest

from compat.interop import upgrade_41_features
from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.metadata.features import KRAFT_VERSION_UPGRADE
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


def produce(bootstrap: str, topic: str, values: list[str]) -> list[str]:
    """Idempotent acks=all produce; returns the acknowledged values."""
    from confluent_kafka import Producer

    acked: list[str] = []
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "message.timeout.ms": 60000})
    for v in values:
        p.produce(topic, v.encode(), on_delivery=lambda err, m: err is None and acked.append(m.value().decode()))
    assert p.flush(90) == 0
    return acked


def consume(bootstrap: str, topic: str, expect: int, timeout_s: float = 60.0) -> list[str]:
    """Partition 0 of ``topic`` from the beginning, by assignment (no group coordinator needed)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"k41-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    out: list[str] = []
    errors: list[str] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while len(out) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
            elif m is not None:
                errors.append(str(m.error()))
        if len(out) < expect:
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            errors.append(f"watermarks {lo}..{hi}")
    finally:
        c.close()
    if len(out) < expect:
        print(f"consume {topic}: {len(out)}/{expect}; {errors[-5:]}")
    return out


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
        # Kafka 4.1's kafka-topics.sh describes through DescribeTopicPartitions (ELR columns) on a kraftwire broker
        boot = ["--bootstrap-server", broker.bootstrap]
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--create", "--topic", "gamma", "--partitions", "2"])
        assert rc == 0, out
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--describe", "--topic", "gamma"])
        assert rc == 0 and re.search(r"Partition: 1\s+Leader: 2\s+Replicas: 2\s+Isr: 2\s+Elr: \s+LastKnownElr: ", out), out
        assert "Traceback" not in broker.log_text() and broker.running()


def test_kafka41_broker_joins_a_kraftwire_quorum_at_41_iv1(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        _, broker, formatted = fleet.kafka_broker_on_a_kraftwire_controller(kafka41, tmp_path)
        assert "metadata.version 27" in formatted
        bhost = broker.host
        rc, out = kafka41.run("kafka-topics.sh", ["--bootstrap-server", f"{bhost}:{BROKER_PORT}", "--create",
                                                  "--topic", "beta", "--partitions", "1"])
        assert rc == 0, out
        rc, out = kafka41.run("kafka-features.sh", ["--bootstrap-server", f"{bhost}:{BROKER_PORT}", "describe"])
        assert rc == 0, out
        assert "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3" in out and "FinalizedVersionLevel: 4.1-IV1" in out
        assert re.search(r"Feature: eligible\.leader\.replicas\.version\s.*FinalizedVersionLevel: 1", out), out
        values = [f"v{i}" for i in range(200)]
        assert sorted(produce(f"{bhost}:{BROKER_PORT}", "beta", values)) == sorted(values)
        assert sorted(consume(f"{bhost}:{BROKER_PORT}", "beta", len(values))) == sorted(values)


def test_upgrade_from_39_iv0_to_41_iv1_with_kafka_features(kafka41, tmp_path):
    with Fleet(tmp_path) as fleet:
        ctl, broker, _ = fleet.kafka_broker_on_a_kraftwire_controller(kafka41, tmp_path, "3.9-IV0")
        bhost = broker.host
        boot = ["--bootstrap-server", f"{bhost}:{BROKER_PORT}"]
        rc, out = kafka41.run("kafka-features.sh", [*boot, "upgrade", "--release-version", "4.1-IV1"])
        if not KRAFT_VERSION_UPGRADE:
            # Kafka 4.1's release defaults include kraft.version 1 (KIP-853), which kraftwire does not build yet:
            # the whole request is refused, naming it; every other 4.1 default is then upgraded explicitly.
            assert rc != 0 and "kraft.version" in out, out
            rc, out = kafka41.run("kafka-features.sh", [*boot, "upgrade", *upgrade_41_features()])
        assert rc == 0, out

        def finalized() -> str:
            return shell(ctl.metadata_dir, "cat /features/metadata.version")

        wait_for(lambda: finalized() == "27", 60, "metadata.version 27 committed")
        assert shell(ctl.metadata_dir, "cat /features/eligible.leader.replicas.version") == "1"
        assert shell(ctl.metadata_dir, "cat /features/transaction.version") == "2"
        rc, out = kafka41.run("kafka-features.sh", [*boot, "describe"])
        assert rc == 0 and "FinalizedVersionLevel: 4.1-IV1" in out, out
        assert re.search(r"Feature: eligible\.leader\.replicas\.version\s.*FinalizedVersionLevel: 1", out), out
        time.sleep(1)  # the broker applies the new level; it must stay up
        assert broker.running() and ctl.running()
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--create", "--topic", "after", "--partitions", "1"])
        assert rc == 0, out


def test_kraftwire_voter_in_a_kafka41_controller_quorum(kafka41, tmp_path):
    """Two Kafka 4.1 controllers and a kraftwire voter, each formatted at its defaults: whichever bootstrap the
    first leader commits, the quorum has a leader, ELR is finalized, and every node stays up, the kraftwire voter
    ready to become active (it supports every finalized level)."""
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
        assert elr == "1"   # every node's bootstrap turns ELR on, and kraftwire implements it
        assert [x for x in kw.log_text().splitlines() if "will not become active" in x] == []
        assert kw.running() and all(n.running() for n in kafkas)
        assert "Traceback" not in kw.log_text()


def _partition_state(ctl: KraftwireNode, topic: str) -> tuple[str, str, str, str]:
    """(leader, isr, elr, lastKnownElr) of partition 0 in the kraftwire controller's log."""
    return tuple(shell(ctl.metadata_dir, f"cat /topics/{topic}/0/{f}")
                 for f in ("leader", "isr", "eligibleLeaderReplicas", "lastKnownElr"))  # type: ignore[return-value]


def test_elr_with_kafka41_brokers_on_a_kraftwire_controller(kafka41, tmp_path):
    """KIP-966 on a kraftwire controller at its defaults, with two Kafka 4.1 brokers and a topic of RF 2 and
    min.insync.replicas 2: the replica stopped first joins the ELR (the ISR fell below 2), the last ISR member's
    controlled shutdown empties the ISR and joins it too (leader remembered in lastKnownElr); the first replica
    restarts cleanly and, being eligible, leads again; the other one returns, the ISR is full again and every
    acknowledged message is read; `kafka-topics.sh --describe` shows the ELR."""
    with Fleet(tmp_path) as fleet:
        chost, h1, h2 = fleet.hosts(3)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = KraftwireNode(tmp_path, 1, "controller", chost, voters)
        fleet.add(ctl)
        fleet.watch("kraftwire controller", ctl.log_path)
        cluster = random_uuid()
        ctl.format(cluster)
        ctl.start()
        ctl.wait_started()
        fast = {"replica.lag.time.max.ms": "4000", "offsets.topic.replication.factor": "2",
                "transaction.state.log.replication.factor": "2"}
        brokers = {i: fleet.add(KafkaNode(kafka41, tmp_path, i, "broker", h, voters, props=fast))
                   for i, h in ((2, h1), (3, h2))}
        for b in brokers.values():
            b.format(cluster)
            b.start()
        for b in brokers.values():
            b.wait_started()
        boot = ["--bootstrap-server", brokers[2].bootstrap]
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--create", "--topic", "elr", "--replica-assignment", "2:3",
                                                  "--config", "min.insync.replicas=2"])
        assert rc == 0, out
        wait_for(lambda: _partition_state(ctl, "elr")[:2] == ("2", "[2, 3]"), 60, "elr-0 led by 2 with ISR 2,3")
        values = [f"e{i}" for i in range(50)]
        assert sorted(produce(brokers[2].bootstrap, "elr", values)) == sorted(values)

        brokers[3].stop()                           # controlled shutdown: ISR [2] < 2, so 3 becomes eligible
        wait_for(lambda: _partition_state(ctl, "elr") == ("2", "[2]", "[3]", "[]"), 60, "3 in the ELR of elr-0")
        rc, out = kafka41.run("kafka-topics.sh", [*boot, "--describe", "--topic", "elr"])
        assert rc == 0 and re.search(r"Isr: 2\s+Elr: 3\s+LastKnownElr: ", out), out

        brokers[2].stop()                           # the last ISR member: ISR empties, both eligible
        wait_for(lambda: _partition_state(ctl, "elr") == ("-1", "[]", "[2, 3]", "[2]"), 60,
                 "elr-0 leaderless with ELR 2,3 and last known leader 2")
        brokers[3].start()                          # a clean restart keeps its ELR seat: it leads, no data lost
        brokers[3].wait_started()
        wait_for(lambda: _partition_state(ctl, "elr") == ("3", "[3]", "[2]", "[]"), 90,
                 "eligible replica 3 elected leader of elr-0")
        # Below min ISR a Kafka 4.x leader holds its high watermark (KIP-966): the other replica's return (clean,
        # still eligible) and the leader's AlterPartition take the ISR back to 2, which clears the ELR.
        brokers[2].start()
        brokers[2].wait_started()
        wait_for(lambda: (s := _partition_state(ctl, "elr"))[0] == "3" and s[1] in ("[2, 3]", "[3, 2]")
                 and s[2:] == ("[]", "[]"), 90, "broker 2 back in the ISR of elr-0, ELR cleared")
        assert sorted(consume(brokers[3].bootstrap, "elr", len(values))) == sorted(values)
        assert ctl.running() and "Traceback" not in ctl.log_text()
