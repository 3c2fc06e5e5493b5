"""Scripted brokers over TCP against a 3-process quorum: the controller survives its own failover."""

from __future__ import annotations

import signal
import time
import uuid

import anyio
import pytest

from kraftwire.cli.metadata_quorum import describe
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest

from .harness import Cluster

pytestmark = pytest.mark.processes


async def active_controller(c: Cluster, candidates: list[int]) -> tuple[int, int]:
    """(leader id, high watermark) once one of ``candidates`` answers with a leader."""
    with anyio.fail_after(30):
        while True:
            for n in candidates:
                try:
                    r = await describe(c.addr(n), 2.0)
                    if r["LeaderId"] in candidates:
                        return r["LeaderId"], r["HighWatermark"]
                except Exception:  # noqa: BLE001 - mid-election
                    pass
            await anyio.sleep(0.2)


async def scenario(c: Cluster) -> None:
    async with anyio.create_task_group() as tg:
        leader, hw = await active_controller(c, [1, 2, 3])
        conn = Connection(tg, "127.0.0.1", int(c.addr(leader).split(":")[1]))

        async def call(req, version=None):
            with anyio.fail_after(20):
                while True:
                    resp = await conn.request(req, version, 10.0)
                    if getattr(resp, "error_code", 0) != Errors.NOT_CONTROLLER:
                        return resp
                    await anyio.sleep(0.1)  # controller not yet active after an election

        epochs = {}
        for bid in (101, 102):
            resp = await call(brq.BrokerRegistrationRequest(
                broker_id=bid, cluster_id=c.cluster_id, incarnation_id=uuid.uuid4(),
                listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 9000 + bid, 0)],
                features=[brq.Feature(n, lo, hi) for n, (lo, hi) in BROKER_SUPPORTED_FEATURES.items()], rack=None, log_dirs=[uuid.uuid4()]))
            assert resp.error_code == 0, resp
            epochs[bid] = resp.broker_epoch
        assert epochs[101] != epochs[102]

        async def heartbeat(bid, offset):
            return await call(BrokerHeartbeatRequest(broker_id=bid, broker_epoch=epochs[bid],
                                                     current_metadata_offset=offset))

        with anyio.fail_after(20):
            while True:
                _, hw = await active_controller(c, [leader])
                states = [await heartbeat(b, hw) for b in (101, 102)]
                assert all(s.error_code == 0 for s in states), states
                if not any(s.is_fenced for s in states):
                    break
                await anyio.sleep(0.2)

        topic = ctq.CreatableTopic(name="orders", num_partitions=-1, replication_factor=-1,
                                   assignments=[ctq.CreatableReplicaAssignment(0, [101, 102])])
        created = await call(ctq.CreateTopicsRequest(topics=[topic], timeout_ms=10000))
        assert created.topics[0].error_code == 0, created
        topic_id = created.topics[0].topic_id

        shrink = apq.AlterPartitionRequest(broker_id=101, broker_epoch=epochs[101], topics=[apq.TopicData(
            topic_id=topic_id, partitions=[apq.PartitionData(0, leader_epoch=0, partition_epoch=0,
                                                             new_isr_with_epochs=[apq.BrokerState(101, epochs[101])])])])
        altered = await call(shrink, 3)
        part = altered.topics[0].partitions[0]
        assert altered.error_code == 0 and part.error_code == 0 and part.isr == [101], altered
        # Only the leader may change the ISR.
        wrong = apq.AlterPartitionRequest(broker_id=102, broker_epoch=epochs[102], topics=[apq.TopicData(
            topic_id=topic_id, partitions=[apq.PartitionData(0, leader_epoch=0, partition_epoch=part.partition_epoch,
                                                             new_isr_with_epochs=[apq.BrokerState(102, epochs[102])])])])
        refused = await call(wrong, 3)
        assert refused.topics[0].partitions[0].error_code == Errors.INVALID_REQUEST

        # Every voter of this fresh quorum has joined before the failover: a voter that started on an empty
        # directory and saw the first election happen without it must catch up with the committed log before it
        # may vote (a wiped voter looks the same), and it cannot do that once the only leader it could fetch
        # from is gone (docs/raft.md, *Fresh quorums*). The first leader is killed within ~100 ms otherwise.
        with anyio.fail_after(30):
            while not all("__cluster_metadata-0: re-joined the quorum" in c.log_text(n) for n in (1, 2, 3)):
                await anyio.sleep(0.1)
        # Kill the active controller: the brokers keep their registrations (no fencing, same epochs).
        await conn.close()
        c.kill(leader, signal.SIGKILL)
        survivors = [n for n in (1, 2, 3) if n != leader]
        new_leader, _ = await active_controller(c, survivors)
        conn = Connection(tg, "127.0.0.1", int(c.addr(new_leader).split(":")[1]))
        with anyio.fail_after(20):
            while True:
                _, hw = await active_controller(c, [new_leader])
                states = [await heartbeat(b, hw) for b in (101, 102)]
                if all(s.error_code == 0 and not s.is_fenced for s in states):
                    break
                assert all(s.error_code in (0, Errors.NOT_CONTROLLER) for s in states), states
                await anyio.sleep(0.2)
        again = await call(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(
            name="orders", num_partitions=1, replication_factor=1)], timeout_ms=10000))
        assert again.topics[0].error_code == Errors.TOPIC_ALREADY_EXISTS
        await conn.close()
        tg.cancel_scope.cancel()


def test_brokers_register_create_topic_alter_isr_and_survive_controller_failover(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        c.start_all()
        started = time.monotonic()
        anyio.run(scenario, c)
        assert time.monotonic() - started < 90
    finally:
        c.stop_all()
