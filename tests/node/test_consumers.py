"""Real Kafka clients read __cluster_metadata from an in-process quorum (committed data only)."""

from __future__ import annotations

import anyio
import pytest
from kafka import KafkaConsumer, TopicPartition

from kraftwire.protocol.metadata import decode_record

from .harness import memory_cluster, wait_for

pytestmark = pytest.mark.anyio
TP = TopicPartition("__cluster_metadata", 0)


def leader_of(nodes):
    return next(n for n in nodes if n.core.is_leader)


def committed_values(node):
    """Non-control record values below the node's HW, in offset order (the consumer's expectation)."""
    out = []
    hw = node.core.hw or 0
    for batch in node.log.read(0, 1 << 30):
        if batch.control:
            continue
        for i, rec in enumerate(batch.records):
            if batch.base_offset + i < hw:
                out.append((batch.base_offset + i, rec.value))
    return out


def consume_assigned(port: int, want: int, group: str | None = None) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=8000)
    try:
        if group is None:
            consumer.assign([TP])
            consumer.seek_to_beginning(TP)
        else:
            consumer.subscribe(["__cluster_metadata"])
        got = []
        for msg in consumer:
            got.append((msg.offset, msg.value))
            if len(got) >= want:
                break
        if group is not None:
            consumer.commit()
        return got
    finally:
        consumer.close()


async def test_kafka_python_reads_committed_metadata_records_in_order():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: any(n.voter.controller.controller.active for n in nodes))
        leader = leader_of(nodes)
        target = leader.log.end_offset + 20
        await wait_for(lambda: (leader.core.hw or 0) > target)
        expected = committed_values(leader)
        got = await anyio.to_thread.run_sync(consume_assigned, ports[0], len(expected))
        assert got == expected[: len(got)] and len(got) == len(expected)
        assert decode_record(got[0][1]).type_name == "FeatureLevelRecord"  # the bootstrap record comes first


async def test_consumer_group_commits_and_resumes():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: any(n.voter.controller.controller.active for n in nodes))
        leader = leader_of(nodes)
        target = leader.log.end_offset + 10
        await wait_for(lambda: (leader.core.hw or 0) > target)
        expected = committed_values(leader)
        first = await anyio.to_thread.run_sync(consume_assigned, ports[0], 5, "g1")
        assert first == expected[:5]
        rest = await anyio.to_thread.run_sync(consume_assigned, ports[0], 3, "g1")
        assert rest == expected[5:8]
