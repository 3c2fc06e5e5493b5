"""Consumer groups and quorum descriptions through kraftwire broker processes.

3 controller + 2 broker processes. kafka-python and confluent-kafka consumers subscribe with a group.id
through broker A, commit and close; broker A is killed (-9); new consumers of the same groups,
bootstrapped to broker B, resume exactly after the committed offsets (group state lives on the
coordinating voter, not on the broker). The coordinating controller is then restarted and the consumer
resumes again from the replicated offsets (through B, which finds the new coordinator). ``kraftwire metadata-quorum --bootstrap-server BROKER`` works.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import anyio
import pytest

from .harness import Cluster
from .test_broker_process import PROPS, committed_records, live_brokers, until
from .test_offsets_replicated import coordinator

pytestmark = pytest.mark.processes

A, B = 4, 5
CONTROLLER_PROPS = [*PROPS, "group.initial.rebalance.delay.ms=100"]
BATCH = 20


def kafka_python_group(addr: str, group: str, count: int) -> list[int]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=addr, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=40000, request_timeout_ms=30000)
    try:
        consumer.subscribe(["__cluster_metadata"])
        got = []
        for msg in consumer:
            got.append(msg.offset)
            if len(got) >= count:
                break
        consumer.commit()
        return got
    finally:
        consumer.close()


def confluent_group(addr: str, group: str, count: int) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": addr, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["__cluster_metadata"])
        got: list[int] = []
        deadline = time.monotonic() + 40
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert not msg.error(), msg.error()
            got.append(msg.offset())
        if got:
            consumer.commit(offsets=[TopicPartition("__cluster_metadata", 0, got[-1] + 1)], asynchronous=False)
        return got
    finally:
        consumer.close()


def metadata_quorum(c: Cluster, node: int, what: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", "--bootstrap-server", c.addr(node),
                          "--timeout", "10", "describe", what, "--json"], capture_output=True, text=True, timeout=40)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def truth(c: Cluster, at_least: int) -> list[int]:
    """Offsets of the committed non-control records on controller 1, once there are ``at_least``."""
    async def enough():
        offsets = [o for o, _ in await committed_records(c, 1)]
        return offsets if len(offsets) >= at_least else None

    return anyio.run(until, enough, 30, f"{at_least} committed records")


def test_groups_and_describe_quorum_through_brokers_survive_a_broker_kill(tmp_path):
    c = Cluster(tmp_path, 3, brokers=2, broker_props=PROPS)
    try:
        for node in (1, 2, 3):
            c.start(node, *CONTROLLER_PROPS)
        for node in (A, B):
            c.start(node)
        for node in (A, B):
            anyio.run(until, lambda node=node: _equals(live_brokers(c, node), [A, B]), 30, f"broker {node} serving")

        status = metadata_quorum(c, A, "--status")
        assert status["LeaderId"] in (1, 2, 3) and status["CurrentVoters"] == [1, 2, 3]
        assert {A, B} <= set(status["CurrentObservers"]) and status["ClusterId"] == c.cluster_id
        rows = metadata_quorum(c, B, "--replication")["Replication"]
        assert {r["NodeId"]: r["Status"] for r in rows}[A] == "Observer"

        offsets = truth(c, 3 * BATCH)
        groups = {"kafka-python": "kp-group", "confluent-kafka": "ck-group"}
        readers = {"kafka-python": kafka_python_group, "confluent-kafka": confluent_group}
        for name, read in readers.items():
            assert read(c.addr(A), groups[name], BATCH) == offsets[:BATCH], name

        c.kill(A, signal.SIGKILL)
        # Until A is fenced B still lists it, and kafka-python 3.0 lets a refused connection to a listed
        # broker escape from poll(); a real Kafka cluster looks the same after a crash.
        anyio.run(until, lambda: _equals(live_brokers(c, B), [B]), 20, "A fenced")
        for name, read in readers.items():
            assert read(c.addr(B), groups[name], BATCH) == offsets[BATCH:2 * BATCH], f"{name} resumes on B"

        owner = coordinator(c, [1, 2, 3], group=groups["kafka-python"])
        c.kill(owner, signal.SIGTERM)
        c.start(owner, *CONTROLLER_PROPS)
        got = kafka_python_group(c.addr(B), groups["kafka-python"], BATCH)
        assert got == offsets[2 * BATCH:3 * BATCH], "offsets survive a restart of the coordinating controller"
        assert "Traceback" not in c.log_text(B)
    finally:
        c.stop_all()


async def _equals(aw, expected):
    return (await aw) == expected
