"""Brokers in-process against a 3-controller quorum: registration, metadata cache, forwarding."""

from __future__ import annotations

import time
from dataclasses import replace

import anyio
import pytest

from kraftwire.broker.lifecycle import BrokerState
from kraftwire.net.client import Connection
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest
from tests.node.harness import free_ports, wait_for

from .harness import all_running, broker_cluster, make_broker

pytestmark = pytest.mark.anyio


async def request(port: int, body, version=None, timeout=15.0):
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", port)
        try:
            return await conn.request(body, version, timeout)
        finally:
            await conn.close()
            tg.cancel_scope.cancel()


def leaders(image, name):
    t = image.topic_by_name(name)
    return None if t is None else {pid: p.leader for pid, p in t.partitions.items()}


async def test_brokers_register_unfence_and_describe_the_cluster():
    async with broker_cluster() as c:
        await all_running(c)
        ctl = c.active().voter.controller.controller
        regs = ctl.committed_image.brokers
        assert {11, 12} <= set(regs) and not regs[11].fenced and not regs[12].fenced
        assert regs[11].listeners[0].name == "PLAINTEXT" and regs[11].listeners[0].port == c.port(11)
        assert c.broker(11).broker.lifecycle.broker_epoch == regs[11].epoch
        md = await request(c.port(11), MetadataRequest(topics=None), 12)
        assert sorted(b.node_id for b in md.brokers) == [11, 12]
        assert md.controller_id == 11 and md.cluster_id == c.broker(11).cluster_id
        cm = next(t for t in md.topics if t.name == "__cluster_metadata")
        assert cm.partitions[0].leader_id == 11
        dc = await request(c.port(12), DescribeClusterRequest(), 1)
        assert dc.error_code == 0 and dc.controller_id == 12
        assert sorted((b.broker_id, b.port) for b in dc.brokers) == sorted((b, c.port(b)) for b in (11, 12))
        dc = await request(c.port(12), DescribeClusterRequest(endpoint_type=2), 1)
        assert dc.error_code == Errors.MISMATCHED_ENDPOINT_TYPE


async def test_create_topics_sent_to_a_broker_is_forwarded_and_reaches_every_image():
    async with broker_cluster() as c:
        await all_running(c)
        seen = []
        for node in c.controllers:
            original = node.door.handle

            def recording(now, rid, req, ctx, original=original):   # the Envelope's inner request enters the door
                if req.api_key == 19:
                    seen.append(ctx)
                return original(now, rid, req, ctx)

            node.door.handle = recording
        topic = ctq.CreatableTopic(name="orders", num_partitions=4, replication_factor=2)
        resp = await request(c.port(12), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
        assert resp.topics[0].error_code == 0, resp
        assert resp.topics[0].num_partitions == 4
        assert seen and seen[0].principal == "User:ANONYMOUS" and seen[0].forwarded
        assert seen[0].client_host == "127.0.0.1"
        again = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
        assert again.topics[0].error_code == Errors.TOPIC_ALREADY_EXISTS
        images = [n.voter.controller.controller.committed_image for n in c.controllers]
        images += [b.broker.metadata.image for b in c.brokers.values()]
        await wait_for(lambda: all(n.voter.controller.controller.committed_image.topic_by_name("orders")
                                   for n in c.controllers)
                       and all(b.broker.metadata.image.topic_by_name("orders") for b in c.brokers.values()), 10)
        md = await request(c.port(11), MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 12)
        t = md.topics[0]
        assert t.error_code == 0 and t.topic_id == resp.topics[0].topic_id
        assert len(t.partitions) == 4
        assert all(sorted(p.replica_nodes) == [11, 12] and sorted(p.isr_nodes) == [11, 12] for p in t.partitions)
        assert {p.leader_id for p in t.partitions} == {11, 12}
        by_id = await request(c.port(11), MetadataRequest(topics=[MetadataRequestTopic(topic_id=t.topic_id,
                                                                                        name=None)]), 12)
        assert by_id.topics[0].name == "orders"
        assert c.broker(12).broker.forwarding_metrics.forwards.total == 1
        assert c.broker(12).broker.forwarding_metrics.pending == 0
        # Metrics: the broker is an observer with broker metadata metrics; controllers count the cluster.
        from kraftwire.node.metrics import CombinedMetrics

        broker_text = CombinedMetrics(c.broker(12).metrics).render()
        assert 'kafka_server_raft_metrics_current_state{state="observer"} 1.0' in broker_text
        assert "kafka_server_broker_metadata_metrics_last_applied_record_offset" in broker_text
        assert "kafka_controller_kafkacontroller" not in broker_text
        texts = [CombinedMetrics(n.metrics).render() for n in c.controllers]
        assert sum("kafka_controller_kafkacontroller_activecontrollercount 1.0" in t for t in texts) == 1
        assert any("kafka_controller_kafkacontroller_globalpartitioncount 4.0" in t for t in texts)
        assert any("kafka_controller_kafkacontroller_activebrokercount 2.0" in t for t in texts)
        # the active controller timed the registrations, heartbeats and CreateTopics it processed
        active = next(t for t in texts if "kafka_controller_kafkacontroller_activecontrollercount 1.0" in t)
        count = next(float(line.rsplit(" ", 1)[1]) for line in active.splitlines()
                     if line.startswith("kafka_controller_controllereventmanager_eventqueueprocessingtimems_count"))
        assert count >= 3


async def test_kafka_python_admin_creates_a_topic_through_a_broker():
    from kafka.admin import KafkaAdminClient, NewTopic

    async with broker_cluster() as c:
        await all_running(c)

        def create():
            admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{c.port(11)}", request_timeout_ms=15000)
            try:
                admin.create_topics([NewTopic("payments", 3, 2)], timeout_ms=10000)
                for _ in range(100):  # brokers learn the new topic from the log a moment later
                    described = admin.describe_topics(["payments"])
                    if described[0]["error_code"] == 0:
                        return described
                    time.sleep(0.05)
                return described
            finally:
                admin.close()

        described = await anyio.to_thread.run_sync(create)
        assert described[0]["name"] == "payments" and len(described[0]["partitions"]) == 3
        ctl = c.active().voter.controller.controller
        assert ctl.committed_image.topic_by_name("payments") is not None


async def test_broker_reregisters_after_its_registration_is_removed():
    async with broker_cluster() as c:
        await all_running(c)
        ctl_node = c.active()
        old_epoch = c.broker(11).broker.lifecycle.broker_epoch
        resp = await request(c.controller_ports[ctl_node.cfg.node_id - 1], UnregisterBrokerRequest(broker_id=11), 0)
        assert resp.error_code == 0
        await wait_for(lambda: c.broker(11).broker.lifecycle.broker_epoch > old_epoch
                       and c.broker(11).broker.state == BrokerState.RUNNING, 15)
        assert 11 in c.active().voter.controller.controller.committed_image.brokers


async def test_duplicate_broker_id_retries_then_stops_the_newcomer():
    """Kafka's broker retries DUPLICATE_BROKER_REGISTRATION until initial.broker.registration.timeout.ms."""
    async with broker_cluster(broker_ids=(11,)) as c:
        await all_running(c)
        intruder = make_broker(11, 0, c.controller_ports)
        intruder.cfg.values["listeners"] = []  # no client listener needed for this one
        intruder.broker.lifecycle.config = replace(intruder.broker.lifecycle.config, initial_registration_timeout_ms=1500)
        await c.start(intruder)
        await wait_for(lambda: 11 in c.failures, 15)
        assert "DUPLICATE_BROKER_REGISTRATION" in str(c.failures[11])
        assert c.broker(11).broker.state == BrokerState.RUNNING


async def test_controlled_shutdown_moves_leaders_before_the_broker_stops():
    async with broker_cluster() as c:
        await all_running(c)
        topic = ctq.CreatableTopic(name="orders", num_partitions=6, replication_factor=2)
        resp = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
        assert resp.topics[0].error_code == 0
        await wait_for(lambda: leaders(c.broker(11).broker.metadata.image, "orders"), 10)
        assert 11 in leaders(c.active().voter.controller.controller.committed_image, "orders").values()
        with anyio.fail_after(15):
            await c.broker(11).shutdown()
        assert c.broker(11).broker.state == BrokerState.SHUTDOWN
        image = c.active().voter.controller.controller.committed_image
        assert set(leaders(image, "orders").values()) == {12}
        assert all(p.isr == (12,) for p in image.topic_by_name("orders").partitions.values())
        assert image.brokers[11].fenced


async def test_killed_broker_is_fenced_after_the_session_timeout_and_loses_its_leaderships():
    async with broker_cluster() as c:
        await all_running(c)
        topic = ctq.CreatableTopic(name="orders", num_partitions=6, replication_factor=2)
        resp = await request(c.port(12), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
        assert resp.topics[0].error_code == 0
        c.stop(12)
        killed = anyio.current_time()

        def fenced():
            for img in (c.active().voter.controller.controller.committed_image, c.broker(11).broker.metadata.image):
                if not img.brokers[12].fenced or set(leaders(img, "orders").values()) != {11}:
                    return False
            return True

        await wait_for(fenced, 15)
        assert anyio.current_time() - killed >= 1.5 - 0.2   # broker.session.timeout.ms, less one heartbeat
        md = await request(c.port(11), MetadataRequest(topics=None), 12)
        assert [b.node_id for b in md.brokers] == [11]


async def test_broker_finds_the_voters_from_bootstrap_servers():
    async with broker_cluster(broker_ids=()) as c:
        servers = ",".join(f"127.0.0.1:{p}" for p in c.controller_ports)
        port = free_ports(1)[0]
        broker = make_broker(21, port, c.controller_ports, **{"controller.quorum.voters": "",
                                                               "controller.quorum.bootstrap.servers": servers})
        assert broker.core is None
        c.brokers[21] = broker
        c.broker_ports[21] = port
        await c.start(broker)
        assert sorted(broker.voters) == [1, 2, 3]
        await all_running(c)
        md = await request(port, MetadataRequest(topics=None), 12)
        assert [b.node_id for b in md.brokers] == [21]


async def test_consumers_read_the_metadata_log_from_a_broker():
    from tests.node.test_consumers import committed_values, consume_assigned

    async with broker_cluster(broker_ids=(11,)) as c:
        await all_running(c)
        broker = c.broker(11)
        expected = committed_values(broker)
        assert len(expected) >= 3  # bootstrap, registration, unfencing at least
        got = await anyio.to_thread.run_sync(consume_assigned, c.port(11), len(expected))
        leader = next(n for n in c.controllers if n.core.is_leader)
        assert got == expected
        assert got == committed_values(leader)[: len(got)], "the broker's replica equals the leader's log"


async def test_forwarding_and_heartbeats_follow_a_controller_failover():
    async with broker_cluster() as c:
        await all_running(c)
        old = c.active()
        epochs = {b: c.broker(b).broker.lifecycle.broker_epoch for b in (11, 12)}
        c.stop(old.cfg.node_id)
        topic = ctq.CreatableTopic(name="after-failover", num_partitions=2, replication_factor=2)
        resp = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=15000), 7, 20)
        assert resp.topics[0].error_code == 0, resp
        new = c.active()
        assert new is not None and new is not old
        assert new.voter.controller.controller.committed_image.topic_by_name("after-failover") is not None
        await all_running(c)
        assert {b: c.broker(b).broker.lifecycle.broker_epoch for b in (11, 12)} == epochs, "no re-registration needed"
        assert not any(r.fenced for r in new.voter.controller.controller.committed_image.brokers.values())
