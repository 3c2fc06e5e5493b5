"""Regressions found by the compatibility matrix, pinned with the client that found them."""

from __future__ import annotations

import anyio
import pytest
from kafka import KafkaAdminClient

from tests.node.harness import memory_cluster, wait_for

pytestmark = [pytest.mark.compat, pytest.mark.anyio]


def quorum_via(port: int) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=[f"127.0.0.1:{port}"], request_timeout_ms=10000)
    try:
        return admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
    finally:
        admin.close()


async def test_kafka_python_describe_metadata_quorum_through_any_node():
    """kafka-python sends DescribeQuorum to whichever node it likes; followers forward it to the leader
    (a Kafka broker forwards it to the active controller) instead of answering NOT_LEADER_OR_FOLLOWER."""
    async with memory_cluster(3) as (nodes, ports):
        leader = await wait_for(lambda: next((n for n in nodes if n.core.is_leader), None))
        await wait_for(lambda: (leader.core.hw or 0) > 0)
        for port in ports:
            part = await anyio.to_thread.run_sync(quorum_via, port)
            assert part["error"] is None, part
            assert part["leader_id"] == leader.cfg.node_id
            assert part["high_watermark"] > 0
            assert sorted(v["replica_id"] for v in part["current_voters"]) == [1, 2, 3]
