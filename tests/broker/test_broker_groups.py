"""Consumer groups through brokers: the broker is every group's coordinator for its clients and relays
group requests to the voter that owns the group (kraftwire.node.group_proxy)."""

from __future__ import annotations

import threading

import anyio
import pytest
from kafka import KafkaConsumer

from kraftwire.group.placement import java_hash, owner_of
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages.describe_groups_request import DescribeGroupsRequest
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest
from tests.node.harness import wait_for

from .harness import all_running, broker_cluster
from .test_broker_inprocess import request

pytestmark = pytest.mark.anyio
GROUP_PROPS = {"group.initial.rebalance.delay.ms": "100"}


def committed_offsets(node) -> list[int]:
    """Offsets of the non-control records below the node's high watermark, in order."""
    hw = node.core.hw or 0
    return [b.base_offset + i for b in node.log.read(0, 1 << 30) if not b.control
            for i in range(len(b.records)) if b.base_offset + i < hw]


def voters(c) -> list[tuple[int, str, int]]:
    return [(i + 1, "127.0.0.1", p) for i, p in enumerate(c.controller_ports)]


def owner_node(c, group: str):
    return c.controllers[owner_of(group, voters(c))[0] - 1]


def groups_owned_by_each(c, prefix: str) -> list[str]:
    """One group name per voter, each owned by a different voter."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < len(c.controllers):
        name = f"{prefix}-{i}"
        found.setdefault(owner_of(name, voters(c))[0], name)
        i += 1
    return [found[k] for k in sorted(found)]


def committed(node, group: str) -> int | None:
    rec = node.voter.groups.coordinator._offsets.get(group, {}).get(("__cluster_metadata", 0))
    return None if rec is None else rec.offset


def consume_in_group(port: int, group: str, want: int) -> list[int]:
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=15000, client_id=f"reader-{group}")
    try:
        consumer.subscribe(["__cluster_metadata"])
        got = []
        for msg in consumer:
            got.append(msg.offset)
            if len(got) >= want:
                break
        consumer.commit()
        return got
    finally:
        consumer.close()


def list_with_kafka_python(port: int) -> list[str]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
    try:
        return [g["group_id"] for g in admin.list_groups()]
    finally:
        admin.close()


async def test_kafka_python_group_through_a_broker_commits_on_the_owner_and_resumes_on_another_broker():
    async with broker_cluster(controller_extra=GROUP_PROPS) as c:
        await all_running(c)
        group = "via-broker"
        fc = await request(c.port(11), FindCoordinatorRequest(key=group, key_type=0), 3)
        assert (fc.error_code, fc.node_id, fc.port) == (0, 11, c.port(11)), "the broker coordinates for its clients"
        await wait_for(lambda: c.broker(11).broker.metadata.applied_offset > 30, 10)
        first = await anyio.to_thread.run_sync(consume_in_group, c.port(11), group, 10)
        assert len(first) == 10 and first == sorted(first)
        owner = owner_node(c, group)
        assert committed(owner, group) == first[-1] + 1, "the offset lives on the owning voter"
        assert all(committed(n, group) is None for n in c.controllers if n is not owner)
        rest = await anyio.to_thread.run_sync(consume_in_group, c.port(12), group, 5)
        offsets = committed_offsets(c.active())
        assert first == offsets[:10]
        assert rest == offsets[10:15], "a consumer on another broker resumes where the group committed"


async def test_members_relayed_by_one_broker_rebalance_without_waiting_on_each_other():
    """Both members' JoinGroups park at the owner at the same time: each relayed request has its own
    connection (over one shared connection the second would queue behind the first, parked one)."""
    async with broker_cluster(broker_ids=(11,), controller_extra=GROUP_PROPS) as c:
        await all_running(c)
        group = "shared-group"
        stop = threading.Event()
        assigned: dict[str, list] = {}

        def member(port: int, name: str) -> None:
            consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id=group, client_id=name,
                                     auto_offset_reset="earliest", enable_auto_commit=False,
                                     session_timeout_ms=6000, heartbeat_interval_ms=500)
            try:
                consumer.subscribe(["__cluster_metadata"])
                while not stop.is_set():
                    consumer.poll(200)
                    assigned[name] = sorted(consumer.assignment())
            finally:
                consumer.close()

        async def described():
            resp = await request(c.port(11), DescribeGroupsRequest(groups=[group]), 5)
            g = resp.groups[0]
            return g if g.group_state == "Stable" and len(g.members) == 2 else None

        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, member, c.port(11), "member-a")
            tg.start_soon(anyio.to_thread.run_sync, member, c.port(11), "member-b")
            try:
                g = None
                with anyio.fail_after(20):
                    while g is None:
                        g = await described()
                        await anyio.sleep(0.2)
                assert sorted(m.client_id for m in g.members) == ["member-a", "member-b"]
                assert all(m.member_id.startswith(m.client_id + "-") for m in g.members)
                await wait_for(lambda: sum(len(v) for v in assigned.values()) == 1, 15)  # one partition, one owner
            finally:
                stop.set()
        owner = owner_node(c, group)
        assert group in owner.voter.groups.coordinator.groups
        assert all(group not in n.voter.groups.coordinator.groups for n in c.controllers if n is not owner)


async def test_multi_group_requests_are_split_by_owner_and_answered_in_order():
    async with broker_cluster() as c:
        await all_running(c)
        names = groups_owned_by_each(c, "split")
        for i, name in enumerate(names):  # a simple (generation -1) commit per group
            resp = await request(c.port(11), ocq.OffsetCommitRequest(
                group_id=name, generation_id_or_member_epoch=-1, member_id="", topics=[ocq.OffsetCommitRequestTopic(
                    name="__cluster_metadata", partitions=[ocq.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=10 + i)])]), 8)
            assert resp.topics[0].partitions[0].error_code == 0
        ordered = list(reversed(names)) + ["never-used"]
        dg = await request(c.port(12), DescribeGroupsRequest(groups=ordered), 5)
        assert [g.group_id for g in dg.groups] == ordered
        assert [g.group_state for g in dg.groups] == ["Empty"] * len(names) + ["Dead"]
        of = await request(c.port(12), ofq.OffsetFetchRequest(groups=[
            ofq.OffsetFetchRequestGroup(group_id=n, topics=None) for n in ordered]), 8)
        assert [g.group_id for g in of.groups] == ordered
        offsets = {g.group_id: [p.committed_offset for t in g.topics for p in t.partitions] for g in of.groups}
        assert offsets == {**{n: [10 + i] for i, n in enumerate(names)}, "never-used": []}
        # Each broker lists its share (hash over the brokers its Metadata lists): tools that ask every
        # broker, as Kafka's do, see each group exactly once.
        shares = [await request(c.port(b), ListGroupsRequest(), 4) for b in (11, 12)]
        assert all(lg.error_code == 0 for lg in shares)
        listed = [g.group_id for lg in shares for g in lg.groups]
        assert sorted(listed) == sorted(names)
        for b, lg in zip((11, 12), shares, strict=True):
            assert all((11, 12)[(java_hash(g.group_id) & 0x7FFFFFFF) % 2] == b for g in lg.groups)
        listed = await anyio.to_thread.run_sync(list_with_kafka_python, c.port(12))
        assert sorted(listed) == sorted(names), "kafka-python concatenates every broker's answer"
        for node in c.controllers:  # a voter lists only the groups it coordinates, as a Kafka broker does
            own = await request(c.controller_ports[node.cfg.node_id - 1], ListGroupsRequest(), 4)
            assert [g.group_id for g in own.groups] == [n for n in names if owner_node(c, n) is node]


async def test_an_unreachable_owner_is_coordinator_not_available():
    async with broker_cluster() as c:
        await all_running(c)
        group = groups_owned_by_each(c, "down")[0]
        owner = owner_node(c, group)
        c.stop(owner.cfg.node_id)
        await wait_for(lambda: c.active() is not None, 15)
        hb = await request(c.port(11), HeartbeatRequest(group_id=group, generation_id=1, member_id="m"), 4)
        assert hb.error_code == Errors.COORDINATOR_NOT_AVAILABLE
        of = await request(c.port(11), ofq.OffsetFetchRequest(group_id=group, topics=None), 7)
        assert of.error_code == Errors.COORDINATOR_NOT_AVAILABLE


async def test_describe_quorum_through_a_broker_is_the_leaders_answer():
    async with broker_cluster() as c:
        await all_running(c)
        leader = c.active()
        req = DescribeQuorumRequest(topics=[TopicData("__cluster_metadata", [PartitionData(0)])])
        for version in (0, 1, 2):
            resp = await request(c.port(11), req, version)
            part = resp.topics[0].partitions[0]
            assert resp.error_code == 0 and part.error_code == 0, resp
            assert part.leader_id == leader.cfg.node_id
            assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3]
            assert {11, 12} <= {o.replica_id for o in part.observers}
            if version >= 2:
                assert sorted(n.node_id for n in resp.nodes) == [1, 2, 3]
        c.stop(leader.cfg.node_id)
        new = await wait_for(lambda: (a := c.active()) is not None and a is not leader and a, 15)
        await wait_for(lambda: c.broker(11).core.leader_id == new.cfg.node_id, 15)
        resp = await request(c.port(11), req, 1)
        assert resp.topics[0].partitions[0].leader_id == new.cfg.node_id
