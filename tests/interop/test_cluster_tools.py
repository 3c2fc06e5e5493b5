"""Kafka's day-two tools on a cluster of Kafka brokers whose controller is kraftwire (issue #22, "how it is checked"):
``kafka-cluster.sh``, ``kafka-leader-election.sh``, ``kafka-consumer-groups.sh``, ``kafka-transactions.sh`` and
``kafka-log-dirs.sh``, each release's own tools against its own brokers.

Two clusters of one controller and two Kafka brokers of the release: ``kraftwire`` (a kraftwire controller) and
``kafka`` (a Kafka controller, the baseline: a step that fails there is a wrong test). The writes these tools
cause reach the controller as Kafka brokers send them: CreateTopics for the internal ``__consumer_offsets`` and
``__transaction_state`` topics, AllocateProducerIds for the transactional producer, ElectLeaders.
"""

from __future__ import annotations

import json

import pytest

from compat.interop import release_levels
from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
KINDS = ("kraftwire", "kafka")


@pytest.fixture(scope="module", params=KINDS)
def cluster(request, kafka_dist, tmp_path_factory):
    """(kind, dist, bootstrap servers, cluster id) of one controller and two Kafka brokers (ids 2, 3)."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"tools-{kind}-{kafka_dist.version}")
    with Fleet(root) as fleet:
        chost, h2, h3 = fleet.hosts(3)
        voters = [(1, chost, CONTROLLER_PORT)]
        if kind == "kafka":
            ctl = fleet.add(KafkaNode(kafka_dist, root, 1, "controller", chost, voters))
        else:
            ctl = fleet.add(KraftwireNode(root, 1, "controller", chost, voters))
            fleet.watch("kraftwire controller", ctl.log_path)
        brokers = [fleet.add(KafkaNode(kafka_dist, root, i, "broker", h, voters)) for i, h in ((2, h2), (3, h3))]
        cluster_id = random_uuid()
        level = None if kind == "kafka" else release_levels(kafka_dist)[0]
        for node in (ctl, *brokers):
            node.format(cluster_id, release_version=level)
        ctl.start()
        ctl.wait_started()
        for b in brokers:
            b.start()
        for b in brokers:
            b.wait_started()
        bootstrap = ",".join(f"{b.host}:{BROKER_PORT}" for b in brokers)
        wait_for(lambda: kafka_dist.run("kafka-topics.sh", ["--bootstrap-server", bootstrap, "--create", "--topic",
                                                            "tools", "--partitions", "2", "--replication-factor",
                                                            "2", "--if-not-exists"], timeout_s=90)[0] == 0,
                 90, "both brokers take a replicated topic")
        yield kind, kafka_dist, bootstrap, cluster_id


def tool(cluster, script: str, *args: str) -> tuple[int, str]:
    _, dist, bootstrap, _ = cluster
    return dist.run(script, ["--bootstrap-server", bootstrap, *args], timeout_s=120)


def test_cluster_id_and_preferred_leader_election(cluster):
    _, dist, bootstrap, cluster_id = cluster
    rc, out = dist.run("kafka-cluster.sh", ["cluster-id", "--bootstrap-server", bootstrap], timeout_s=120)
    assert rc == 0 and f"Cluster ID: {cluster_id}" in out, out
    # Every leader is already the preferred one: the controller answers ELECTION_NOT_NEEDED per partition.
    rc, out = tool(cluster, "kafka-leader-election.sh", "--election-type", "preferred", "--topic", "tools",
                   "--partition", "0")
    assert rc == 0 and "Valid replica already elected for partitions tools-0" in out, out
    rc, out = tool(cluster, "kafka-leader-election.sh", "--election-type", "preferred", "--topic", "missing-topic",
                   "--partition", "0")
    assert "missing-topic-0" in out and ("does not exist" in out or "UnknownTopicOrPartition" in out), out


def test_consumer_groups_list_and_describe(cluster):
    from confluent_kafka import Consumer, Producer

    _, _, bootstrap, _ = cluster
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        # Both partitions explicitly: librdkafka's sticky partitioner may put all 20 keyless records on one, and an
        # empty group's --describe lists only the partitions it committed.
        p.produce("tools", value=f"m{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tools-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["tools"])
    got = 0
    deadline_polls = 120
    while got < 20 and deadline_polls:
        msg = c.poll(1.0)
        deadline_polls -= 1
        if msg is not None and msg.error() is None:
            got += 1
    assert got == 20
    c.commit(asynchronous=False)
    c.close()
    rc, out = tool(cluster, "kafka-consumer-groups.sh", "--list")
    assert rc == 0 and "tools-group" in out.split(), out
    rc, out = tool(cluster, "kafka-consumer-groups.sh", "--describe", "--group", "tools-group")
    assert rc == 0, out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("tools-group")]
    assert {r[1] for r in rows} == {"tools"} and len(rows) == 2, out
    assert sum(int(r[3]) for r in rows) == 20 and all(r[5] == "0" for r in rows), out   # offsets, lag


def test_transactions_list_and_describe(cluster):
    from confluent_kafka import Producer

    _, _, bootstrap, _ = cluster
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tools-tx"})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce("tools", value=b"in a transaction")
    p.commit_transaction(60)
    rc, out = tool(cluster, "kafka-transactions.sh", "list")
    assert rc == 0 and "tools-tx" in out, out
    rc, out = tool(cluster, "kafka-transactions.sh", "describe", "--transactional-id", "tools-tx")
    assert rc == 0 and "CompleteCommit" in out, out


def test_log_dirs_describe(cluster):
    rc, out = tool(cluster, "kafka-log-dirs.sh", "--describe", "--topic-list", "tools")
    assert rc == 0, out
    doc = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    held = {(p["partition"], b["broker"]) for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]}
    assert held == {("tools-0", 2), ("tools-0", 3), ("tools-1", 2), ("tools-1", 3)}, out
