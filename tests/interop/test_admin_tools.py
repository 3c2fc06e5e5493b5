"""Kafka's admin tools for client quotas, client metrics subscriptions and group configs (issue #22 items 2-3).

Each release's tools run against three clusters of one controller and one broker:

* ``kraftwire``: a Kafka broker of the release on a kraftwire controller (the broker forwards the writes);
* ``kafka``: the same Kafka broker on a Kafka controller of the release, the baseline — a step that fails
  here is a wrong test;
* ``kraftwire-broker``: a kraftwire broker on a kraftwire controller (it forwards the writes and answers the
  reads from its image).

The steps: ``kafka-configs.sh --entity-type clients|users|ips`` add, describe and delete quotas (a fractional
byte rate refused with Kafka's words); ``kafka-client-metrics.sh --alter/--describe/--delete`` (an interval
below 100 ms refused); ``kafka-configs.sh --entity-type groups`` (Kafka 4.1: bounded by the broker's
``group.consumer.*`` settings).
"""

from __future__ import annotations

import pytest

from compat.interop import release_levels
from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
KINDS = ("kraftwire", "kafka", "kraftwire-broker")


@pytest.fixture(scope="module", params=KINDS)
def cluster(request, kafka_dist, tmp_path_factory):
    """(tool runner, bootstrap server) of a running one-controller, one-broker cluster of ``request.param``."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"admin-{kind}-{kafka_dist.version}")
    with Fleet(root) as fleet:
        chost, bhost = fleet.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        if kind == "kafka":
            ctl = fleet.add(KafkaNode(kafka_dist, root, 1, "controller", chost, voters))
        else:
            ctl = fleet.add(KraftwireNode(root, 1, "controller", chost, voters))
            fleet.watch("kraftwire controller", ctl.log_path)
        if kind == "kraftwire-broker":
            broker = fleet.add(KraftwireNode(root, 2, "broker", bhost, voters))
            fleet.watch("kraftwire broker", broker.log_path)
        else:
            broker = fleet.add(KafkaNode(kafka_dist, root, 2, "broker", bhost, voters))
        cluster_id = random_uuid()
        level = None if kind == "kafka" else release_levels(kafka_dist)[0]   # what the release's broker supports
        for node in (ctl, broker):
            node.format(cluster_id, release_version=level)
        ctl.start()
        ctl.wait_started()
        broker.start()
        broker.wait_started()
        bootstrap = f"{bhost}:{BROKER_PORT}"
        wait_for(lambda: kafka_dist.run("kafka-configs.sh", ["--bootstrap-server", bootstrap, "--describe",
                                                             "--entity-type", "brokers", "--entity-name", "2"],
                                        timeout_s=60)[0] == 0, 60, "the broker answers admin requests")
        yield kind, kafka_dist, bootstrap


def configs(cluster, *args: str) -> tuple[int, str]:
    _, dist, bootstrap = cluster
    return dist.run("kafka-configs.sh", ["--bootstrap-server", bootstrap, *args], timeout_s=90)


def describe_until(cluster, args: list[str], present: list[str], absent: list[str] = ()) -> str:
    """``--describe`` output once it shows ``present`` and not ``absent`` (brokers learn the change from the
    metadata log a moment after the write is acknowledged)."""
    seen = {"out": ""}

    def ok() -> bool:
        rc, out = configs(cluster, "--describe", *args)
        seen["out"] = out
        return rc == 0 and all(p in out for p in present) and not any(a in out for a in absent)

    wait_for(ok, 30, f"describe {' '.join(args)} shows {present}, not {list(absent)}")
    return seen["out"]


def test_client_quotas_add_describe_delete(cluster):
    client = ["--entity-type", "clients", "--entity-name", "app1"]
    rc, out = configs(cluster, "--alter", *client, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    assert rc == 0 and "Completed updating config for client app1." in out, out
    rc, out = configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice",
                      "--add-config", "request_percentage=50")
    assert rc == 0, out
    rc, out = configs(cluster, "--alter", "--entity-type", "users", "--entity-default",
                      "--add-config", "producer_byte_rate=4096")
    assert rc == 0, out
    rc, out = configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type",
                      "clients", "--entity-name", "app1", "--add-config", "controller_mutation_rate=2.5")
    assert rc == 0, out
    rc, out = configs(cluster, "--alter", "--entity-type", "ips", "--entity-name", "10.1.2.3",
                      "--add-config", "connection_creation_rate=10")
    assert rc == 0, out
    describe_until(cluster, client, ["producer_byte_rate=1024", "consumer_byte_rate=2048"])
    describe_until(cluster, ["--entity-type", "users", "--entity-name", "alice"], ["request_percentage=50"])
    describe_until(cluster, ["--entity-type", "users", "--entity-default"], ["producer_byte_rate=4096"])
    describe_until(cluster, ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                             "--entity-name", "app1"], ["controller_mutation_rate=2.5"])
    describe_until(cluster, ["--entity-type", "ips", "--entity-name", "10.1.2.3"], ["connection_creation_rate=10"])
    rc, out = configs(cluster, "--alter", *client, "--add-config", "producer_byte_rate=1.5")
    assert rc != 0 and "producer_byte_rate cannot be a fractional value" in out, out
    rc, out = configs(cluster, "--alter", *client, "--delete-config", "producer_byte_rate")
    assert rc == 0, out
    describe_until(cluster, client, ["consumer_byte_rate=2048"], ["producer_byte_rate"])


def test_client_metrics_subscription(cluster):
    _, dist, bootstrap = cluster
    tool = ["--bootstrap-server", bootstrap]
    rc, out = dist.run("kafka-client-metrics.sh", [*tool, "--alter", "--name", "sub1", "--metrics",
                                                   "org.apache.kafka.producer.", "--interval", "1000", "--match",
                                                   "client_software_name=apache-kafka-java"], timeout_s=90)
    assert rc == 0 and "Altered client metrics config for sub1." in out, out

    def described() -> str:
        return dist.run("kafka-client-metrics.sh", [*tool, "--describe", "--name", "sub1"], timeout_s=90)[1]

    wait_for(lambda: "interval.ms=1000" in described(), 30, "the subscription is described")
    out = described()
    assert "metrics=org.apache.kafka.producer." in out and "client_software_name=apache-kafka-java" in out, out
    rc, out = dist.run("kafka-client-metrics.sh", [*tool, "--alter", "--name", "sub1", "--interval", "50"],
                       timeout_s=90)
    assert rc != 0 and "interval must be between 100 and 3600000" in out, out
    rc, out = dist.run("kafka-client-metrics.sh", [*tool, "--delete", "--name", "sub1"], timeout_s=90)
    assert rc == 0, out
    wait_for(lambda: "interval.ms" not in described(), 30, "the subscription is gone")


def test_group_configs(cluster):
    _, dist, _ = cluster
    if dist.version_tuple[:2] < (4, 1):
        pytest.skip(f"kafka-configs.sh --entity-type groups is checked with Kafka 4.1 (not {dist.version})")
    group = ["--entity-type", "groups", "--entity-name", "g1"]
    rc, out = configs(cluster, "--alter", *group, "--add-config", "consumer.session.timeout.ms=50000")
    assert rc == 0 and "Completed updating config for group g1." in out, out
    describe_until(cluster, group, ["consumer.session.timeout.ms=50000"])
    rc, out = configs(cluster, "--alter", *group, "--add-config", "consumer.heartbeat.interval.ms=1000")
    assert rc != 0 and ("consumer.heartbeat.interval.ms must be greater than or equal to "
                        "group.consumer.min.heartbeat.interval.ms") in out, out
    rc, out = configs(cluster, "--alter", *group, "--delete-config", "consumer.session.timeout.ms")
    assert rc == 0, out
    describe_until(cluster, group, [], ["consumer.session.timeout.ms=50000"])


def test_broker_loggers_alter_and_describe(cluster):
    """``kafka-configs --entity-type broker-loggers``: a broker changes its own log levels (a Kafka broker handles
    BROKER_LOGGER itself before forwarding anything; a kraftwire broker too) and describes them."""
    args = ["--entity-type", "broker-loggers", "--entity-name", "2"]
    rc, out = configs(cluster, "--alter", *args, "--add-config", "root=WARN")
    assert rc == 0 and "Completed updating config" in out, out
    assert "root=WARN" in describe_until(cluster, args, ["root=WARN"])
    rc, out = configs(cluster, "--alter", *args, "--add-config", "root=INFO")
    assert rc == 0, out
    describe_until(cluster, args, ["root=INFO"])
    rc, out = configs(cluster, "--alter", "--entity-type", "broker-loggers", "--entity-name", "1",
                      "--add-config", "root=WARN")
    assert rc != 0, out   # another node's loggers: refused by the broker asked (Kafka: the node id is not ours)
