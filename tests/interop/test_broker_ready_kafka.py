"""A Kafka broker on a kraftwire controller is usable as soon as it says it started: librdkafka's
``AdminClient.create_topics`` sent right then finds the controller (issue seen with Kafka 3.7 brokers).

The broker declares itself started once its heartbeat says it is unfenced, but lists itself in Metadata only
when its metadata log shows the unfencing committed. librdkafka asks Metadata once for the controller and,
with no broker listed, gave up ("Failed while waiting for controller"). The kraftwire leader used to park
the broker's next Fetch (before v18 it does not say which high watermark it knows) although its last answer
carried the unfencing record before it committed, so the broker learned the commit only at MaxWaitMs.
Each release runs against Kafka's own controller too, the baseline."""

from __future__ import annotations

import pytest

from compat.interop import release_levels
from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("controller", ["kraftwire", "kafka"])
def test_create_topics_right_after_the_broker_started(kafka_dist, tmp_path, controller):
    from confluent_kafka.admin import AdminClient, NewTopic

    with Fleet(tmp_path) as fleet:
        chost, bhost = fleet.hosts(2)
        voters = [(1, chost, CONTROLLER_PORT)]
        if controller == "kafka":
            ctl = fleet.add(KafkaNode(kafka_dist, tmp_path, 1, "controller", chost, voters))
            level = None
        else:
            ctl = fleet.add(KraftwireNode(tmp_path, 1, "controller", chost, voters))
            fleet.watch("kraftwire controller", ctl.log_path)
            level, _ = release_levels(kafka_dist)
        cluster = random_uuid()
        fleet.start(ctl, cluster, level)
        fleet.start(KafkaNode(kafka_dist, tmp_path, 2, "broker", bhost, voters), cluster, level)
        admin = AdminClient({"bootstrap.servers": f"{bhost}:{BROKER_PORT}"})
        created = admin.create_topics([NewTopic("ready", 3, 1)], operation_timeout=20, request_timeout=25)
        created["ready"].result(30)   # raises "Failed while waiting for controller" when the broker lagged
        wait_for(lambda: "ready" in admin.list_topics(timeout=10).topics, 30, "the broker knowing the new topic")
