"""A broker that starts behind the leader's log start catches up from a snapshot (KIP-630)."""

from __future__ import annotations

import uuid

import pytest

from kraftwire.broker.lifecycle import BrokerState
from kraftwire.metadata import image_to_records
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.raft import SnapshotId
from kraftwire.storage.snapshot import frame_snapshot
from tests.node.harness import free_ports, wait_for

from .harness import all_running, broker_cluster, make_broker
from .test_broker_inprocess import request

pytestmark = pytest.mark.anyio


def snapshot_and_truncate(node) -> int:
    """Snapshot a controller's committed image and drop the log below it; returns the snapshot end."""
    ctl = node.voter.controller.controller
    image, last = ctl.committed_image, ctl.committed_offset
    end = last + 1
    epoch = node.log.read(last, 1 << 20)[0].leader_epoch
    sid = SnapshotId(end, epoch)
    node.log.create_snapshot(sid, frame_snapshot(sid, image_to_records(image)))
    node.log.delete_before(sid)
    return end


async def test_new_broker_loads_a_snapshot_then_follows_the_log():
    async with broker_cluster(broker_ids=(11,)) as c:
        await all_running(c)
        topic = ctq.CreatableTopic(name="orders", num_partitions=3, replication_factor=1)
        resp = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
        assert resp.topics[0].error_code == 0
        await wait_for(lambda: all(n.voter.controller.controller.committed_image.topic_by_name("orders")
                                   for n in c.controllers), 10)
        ends = [snapshot_and_truncate(n) for n in c.controllers]
        assert all(n.log.start_offset > 0 for n in c.controllers)
        port = free_ports(1)[0]
        late = make_broker(12, port, c.controller_ports)
        c.brokers[12] = late
        c.broker_ports[12] = port
        await c.start(late)
        await all_running(c)
        assert late.broker.state == BrokerState.RUNNING
        assert late.log.start_offset >= min(ends), "the broker's log begins with the downloaded snapshot"
        assert late.broker.metadata.image.topic_by_name("orders") is not None
        assert set(late.broker.metadata.image.brokers) >= {11, 12}
        await wait_for(lambda: late.broker.metadata.applied_offset > max(ends) + 5, 10)  # replay goes on after it


SNAPSHOT_PROPS = {"metadata.log.max.record.bytes.between.snapshots": "600",  # a snapshot every few batches
                  "metadata.max.retention.bytes": "0"}                       # clean the log below each one


async def test_broker_snapshots_its_own_image_cleans_its_log_and_restarts_from_the_snapshot():
    from kraftwire.metadata.snapshot import image_from_snapshot
    from kraftwire.node.server import Server

    from .harness import CLUSTER_ID, broker_config

    async with broker_cluster(broker_ids=(11,), **SNAPSHOT_PROPS) as c:
        await all_running(c)
        broker = c.broker(11)
        # Every voter's ControllerRegistration first, so that only NoOps follow the broker's snapshot.
        await wait_for(lambda: len(broker.broker.metadata.image.controllers) == len(c.controllers), 15)
        for i in range(3):
            topic = ctq.CreatableTopic(name=f"snap-{i}", num_partitions=2, replication_factor=1)
            resp = await request(c.port(11), ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000), 7)
            assert resp.topics[0].error_code == 0
        created = max(n.voter.controller.controller.committed_offset for n in c.controllers)
        await wait_for(lambda: broker.broker.metadata.image.topic_by_name("snap-2") is not None, 10)
        # Its own snapshots: the controllers (default policy, 20 MiB) have taken none to download.
        await wait_for(lambda: (sid := broker.log.latest_snapshot_id()) is not None and sid.end_offset > created, 15)
        assert broker.broker.snapshots_taken >= 1 and broker.broker.metadata.snapshots_loaded == 0
        assert all(n.log.latest_snapshot_id() is None and n.log.start_offset == 0 for n in c.controllers)
        await wait_for(lambda: broker.log.start_offset > created, 10)  # cleaned below the snapshot
        sid = broker.log.latest_snapshot_id()
        assert image_from_snapshot(broker.log.read_snapshot(sid)) == broker.broker.metadata.image  # NoOps since

        # Restart on the same log: the image comes from the local snapshot, then the log after it.
        log, store = broker.log, broker.store
        c.stop(11)
        await wait_for(lambda: c.active().voter.controller.controller.committed_image.brokers[11].fenced, 15)
        reborn = Server(broker_config(11, c.port(11), c.controller_ports, **SNAPSHOT_PROPS), log=log,
                            store=store, cluster_id=CLUSTER_ID, directory_id=uuid.uuid4())
        c.brokers[11] = reborn
        await c.start(reborn)
        await all_running(c)
        assert reborn.broker.metadata.snapshots_loaded >= 1
        assert all(reborn.broker.metadata.image.topic_by_name(f"snap-{i}") is not None for i in range(3))
        await wait_for(lambda: reborn.broker.snapshots_taken >= 1, 10)
