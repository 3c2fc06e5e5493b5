"""Three real nodes on loopback (memory storage): election, replication and describe over the wire."""

from __future__ import annotations

import pytest

from kraftwire.cli.metadata_quorum import describe

from .harness import memory_cluster, wait_for

pytestmark = pytest.mark.anyio


def leaders(nodes):
    return [n for n in nodes if n.core.is_leader]


async def test_three_nodes_elect_one_leader_and_replicate():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: len(leaders(nodes)) == 1)
        leader = leaders(nodes)[0]
        target = leader.log.end_offset + 5  # the active controller writes NoOpRecords while idle
        await wait_for(lambda: all((n.core.hw or 0) > target for n in nodes))
        assert {n.view.leader_id for n in nodes} == {leader.cfg.node_id}
        result = await describe(f"127.0.0.1:{ports[0]}", 5.0)
        assert result["LeaderId"] == leader.cfg.node_id
        assert result["CurrentVoters"] == [1, 2, 3]
        assert result["HighWatermark"] > target
        assert result["ClusterId"] == "kw-test-cluster-0000001"
