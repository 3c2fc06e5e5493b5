"""Partition reassignment through kraftwire brokers: AlterPartitionReassignments and ListPartitionReassignments
forwarded in Envelopes, and the moving partition's adding/removing replicas in every broker's image."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_reassignments_request as arq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import list_partition_reassignments_request as lrq
from tests.node.harness import wait_for

from .harness import all_running, broker_cluster
from .test_broker_inprocess import request

pytestmark = pytest.mark.anyio


def _alter(replicas: dict[tuple[str, int], list[int] | None]) -> arq.AlterPartitionReassignmentsRequest:
    topics: dict[str, list] = {}
    for (name, pid), r in replicas.items():
        topics.setdefault(name, []).append(arq.ReassignablePartition(pid, r))
    return arq.AlterPartitionReassignmentsRequest(topics=[arq.ReassignableTopic(n, ps) for n, ps in topics.items()])


def _partition(c, node: int, pid: int, name: str = "moving"):
    t = c.broker(node).broker.metadata.image.topic_by_name(name)
    return None if t is None else t.partitions.get(pid)


async def test_reassignment_forwarded_and_seen_by_every_broker():
    async with broker_cluster() as c:
        await all_running(c)
        topics = [ctq.CreatableTopic(name=n, num_partitions=-1, replication_factor=-1, assignments=[
            ctq.CreatableReplicaAssignment(0, a)]) for n, a in (("moving", [11]), ("ordered", [11, 12]))]
        created = await request(c.port(11), ctq.CreateTopicsRequest(topics=topics), 7)
        assert [t.error_code for t in created.topics] == [0, 0]
        resp = await request(c.port(12), _alter({("moving", 0): [12], ("moving", 7): [11], ("ordered", 0): [12, 11]}), 1)
        assert resp.error_code == 0
        assert [(t.name, p.partition_index, p.error_code) for t in resp.responses for p in t.partitions] == [
            ("moving", 0, 0), ("moving", 7, Errors.UNKNOWN_TOPIC_OR_PARTITION), ("ordered", 0, 0)]
        # kraftwire brokers host no data and never grow the ISR: "moving" keeps moving; the reordering
        # of "ordered" needed no new replica and completed at once
        await wait_for(lambda: all((p := _partition(c, b, 0)) is not None and p.adding_replicas == (12,)
                                   for b in (11, 12)), 10)
        assert all(_partition(c, b, 0, "ordered").replicas == (12, 11) for b in (11, 12))
        p = _partition(c, 11, 0)
        assert p.replicas == (12, 11) and p.removing_replicas == (11,) and p.isr == (11,)
        listed = await request(c.port(11), lrq.ListPartitionReassignmentsRequest(topics=None), 0)
        assert listed.error_code == 0
        assert [(t.name, [(q.partition_index, q.replicas, q.adding_replicas, q.removing_replicas)
                          for q in t.partitions]) for t in listed.topics] == [("moving", [(0, [12, 11], [12], [11])])]
        assert c.broker(11).broker.forwarding_metrics.forwards.total >= 2
        for port in c.controller_ports:   # a read: every controller answers it from its committed image
            for _ in range(50):
                got = await request(port, lrq.ListPartitionReassignmentsRequest(topics=None), 0)
                if got.topics:
                    break
                await anyio.sleep(0.2)   # a standby's committed image may trail the brokers' by a fetch
            assert got.error_code == 0 and [t.name for t in got.topics] == ["moving"], (port, got)
        resp = await request(c.port(11), _alter({("moving", 0): None}), 0)
        assert resp.responses[0].partitions[0].error_code == 0
        await wait_for(lambda: all(_partition(c, b, 0).replicas == (11,) for b in (11, 12)), 10)
        listed = await request(c.port(12), lrq.ListPartitionReassignmentsRequest(
            topics=[lrq.ListPartitionReassignmentsTopics("moving", [0, 1])]), 0)
        assert listed.topics == []


async def test_oversized_plan_through_a_broker_is_refused_whole():
    """More records than Kafka lets one controller operation write: POLICY_VIOLATION for the whole plan (and
    each partition), nothing written, the nodes keep serving."""
    async with broker_cluster() as c:
        await all_running(c)
        n = 10_001
        topic = ctq.CreatableTopic(name="wide", num_partitions=n, replication_factor=1)
        created = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=60000), 7, timeout=60)
        assert created.topics[0].error_code == 0
        await wait_for(lambda: (t := c.broker(12).broker.metadata.image.topic_by_name("wide")) is not None
                       and len(t.partitions) == n, 30)
        parts = c.broker(12).broker.metadata.image.topic_by_name("wide").partitions
        plan = arq.AlterPartitionReassignmentsRequest(topics=[arq.ReassignableTopic("wide", [
            arq.ReassignablePartition(pid, [12 if p.replicas == (11,) else 11]) for pid, p in sorted(parts.items())])])
        resp = await request(c.port(12), plan, 1, timeout=60)
        assert (resp.error_code, resp.error_message) == (Errors.POLICY_VIOLATION,
                                                         "Unable to perform excessively large batch operation.")
        codes = {p.error_code for t in resp.responses for p in t.partitions}
        assert codes == {Errors.POLICY_VIOLATION} and sum(len(t.partitions) for t in resp.responses) == n
        listed = await request(c.port(11), lrq.ListPartitionReassignmentsRequest(topics=None), 0)
        assert listed.error_code == 0 and listed.topics == []
