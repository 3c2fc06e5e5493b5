"""A broker that starts behind the leader's log start catches up from a snapshot (KIP-630)."""

from __future__ import annotations

import pytest

from kraftwire.broker.lifecycle import BrokerState
from kraftwire.controller import image_to_records
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.raft.log import SnapshotId
from kraftwire.storage.snapshot import frame_snapshot
from tests.node.harness import free_ports, wait_for

from .harness import all_running, broker_cluster, make_broker
from .test_broker_inprocess import request

pytestmark = pytest.mark.anyio


def snapshot_and_truncate(node) -> int:
    """Snapshot a controller's committed image and drop the log below it; returns the snapshot end."""
    ctl = node.controller.controller
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
        await wait_for(lambda: all(n.controller.controller.committed_image.topic_by_name("orders")
                                   for n in c.controllers), 10)
        ends = [snapshot_and_truncate(n) for n in c.controllers]
        assert all(n.log.start_offset > 0 for n in c.controllers)
        port = free_ports(1)[0]
        late = make_broker(12, port, c.controller_ports)
        c.brokers[12] = late
        c.broker_ports[12] = port
        await c.start(late)
        await all_running(c)
        assert late.state == BrokerState.RUNNING
        assert late.log.start_offset >= min(ends), "the broker's log begins with the downloaded snapshot"
        assert late.metadata.image.topic_by_name("orders") is not None
        assert set(late.metadata.image.brokers) >= {11, 12}
        await wait_for(lambda: late.metadata.applied_offset > max(ends) + 5, 10)  # replay goes on after it
