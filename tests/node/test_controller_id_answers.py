"""The active controller a voter tells clients (Metadata, DescribeCluster): only a leader it knows first-hand.

A client that follows Metadata (librdkafka, kafka-python) sends CreateTopics to the controller id it was
told and, librdkafka at least, keeps sending there on NOT_CONTROLLER until its next metadata refresh. A voter
restarted after leading comes back Resigned in its old epoch; naming itself there sent clients to a node
that is no controller (issue #23, context point 4).
"""

from __future__ import annotations

import anyio
import pytest

from kraftwire.group import MemoryOffsetStore
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.raft import ElectionState, MemoryLog, MemoryStateStore

from .harness import free_ports, memory_cluster, node_config, wait_for

pytestmark = pytest.mark.anyio


async def answers(port: int) -> tuple[int, int]:
    """(Metadata controller_id, DescribeCluster controller_id) from the voter at ``port``."""
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", port)
        try:
            meta = await conn.request(MetadataRequest(topics=[]), 12, 2.0)
            cluster = await conn.request(DescribeClusterRequest(), 0, 2.0)
        finally:
            await conn.close()
            tg.cancel_scope.cancel()
    return meta.controller_id, cluster.controller_id


async def test_a_restarted_former_leader_does_not_name_itself_controller():
    ports = free_ports(3)
    store = MemoryStateStore()
    store.write(ElectionState(epoch=5, leader_id=1, voters=frozenset({1, 2, 3})))   # it led epoch 5, then died
    cfg = node_config(1, ports, **{"controller.quorum.election.timeout.ms": "5000"})
    node = Server(cfg, log=MemoryLog(), store=store, cluster_id="kw-test-cluster-0000001",
                  offset_store=MemoryOffsetStore())
    async with anyio.create_task_group() as tg:
        await tg.start(node.run)
        assert node.core.state_name == "resigned" and node.core.leader_id == 1   # Raft's view: its own epoch
        assert await answers(ports[0]) == (-1, -1)
        tg.cancel_scope.cancel()


async def test_after_a_leader_change_every_voter_names_the_leader_or_nobody():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: sum(n.core.is_leader for n in nodes) == 1 and all(n.core.hw for n in nodes))
        old = next(n for n in nodes if n.core.is_leader)
        await wait_for(lambda: all(n.voter.view.controller_id == old.node_id for n in nodes))
        old.driver.call(old.driver.node.resign)
        from_old: list[int] = []
        with anyio.fail_after(10):
            while not any(n.core.is_leader for n in nodes):
                from_old += [cid for cid in await answers(ports[old.node_id - 1]) if not old.core.is_leader]
                await anyio.sleep(0.002)
        # a follower may name the old leader until EndQuorumEpoch reaches it; the resigned one never does
        assert old.node_id not in from_old, from_old
        new = next(n for n in nodes if n.core.is_leader)
        await wait_for(lambda: all(n.voter.view.controller_id == new.node_id for n in nodes))
        for port in ports:
            assert await answers(port) == (new.node_id, new.node_id)


async def test_an_admin_write_at_a_follower_is_answered_by_the_active_controller():
    from kraftwire.protocol.errors import Errors
    from kraftwire.protocol.messages import create_topics_request as ctq

    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: any(n.voter.controller.controller.active for n in nodes) and all(n.core.hw for n in nodes))
        follower = next(n for n in nodes if not n.core.is_leader)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", ports[follower.node_id - 1])
            body = ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("t", 1, 1)], timeout_ms=5000, validate_only=True)
            resp = await conn.request(body, 5, 10.0)
            await conn.close()
            tg.cancel_scope.cancel()
        # no broker is registered: the active controller's own refusal, not the follower's NOT_CONTROLLER
        assert resp.topics[0].error_code == Errors.INVALID_REPLICATION_FACTOR, resp.topics[0]
