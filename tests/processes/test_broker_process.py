"""3 controller processes + 2 kraftwire broker processes: unfencing, forwarding, kill -9, controlled shutdown."""

from __future__ import annotations

import signal
import time

import anyio
import pytest

from kraftwire.net.client import Connection
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.protocol.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import decode_batches

from .harness import Cluster

pytestmark = pytest.mark.processes

SESSION_MS = 2000
PROPS = [f"broker.session.timeout.ms={SESSION_MS}", "broker.heartbeat.interval.ms=200"]
A, B = 4, 5
CONTROLLERS = (1, 2, 3)


async def call(c: Cluster, node: int, body, version=None, timeout: float = 10.0):
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", int(c.addr(node).split(":")[1]))
        try:
            return await conn.request(body, version, timeout)
        finally:
            await conn.close()
            tg.cancel_scope.cancel()


async def until(pred, timeout: float, what: str):
    """Poll the async ``pred`` until it returns a truthy value; connection failures count as 'not yet'."""
    deadline = anyio.current_time() + timeout
    last = None
    while anyio.current_time() < deadline:
        try:
            last = await pred()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - a node may be (re)starting
            last = e
        await anyio.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


async def live_brokers(c: Cluster, node: int) -> list[int] | None:
    """Brokers listed by ``node``'s DescribeCluster while it serves; None while it does not."""
    resp = await call(c, node, DescribeClusterRequest(), 0)
    return None if resp.error_code else sorted(b.broker_id for b in resp.brokers)


async def topic_leaders(c: Cluster, node: int, name: str) -> dict[int, int] | None:
    resp = await call(c, node, MetadataRequest(topics=[MetadataRequestTopic(name=name)]), 12)
    t = resp.topics[0]
    if t.error_code or not t.partitions:
        return None
    return {p.partition_index: p.leader_id for p in t.partitions}


async def committed_records(c: Cluster, node: int) -> list[tuple[int, object]]:
    """Every committed metadata record on ``node``'s replica, read like a consumer (Fetch, ReplicaId -1)."""
    out: list[tuple[int, object]] = []
    offset = 0
    while True:
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 22, isolation_level=1,
                           topics=[FetchTopic(topic="__cluster_metadata", partitions=[
                               FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 22)])])
        part = (await call(c, node, req, 12)).responses[0].partitions[0]
        assert part.error_code == 0, part
        batches = decode_batches(part.records) if part.records else []
        for b in batches:
            if not b.control:
                out.extend((b.base_offset + i, decode_record(r.value).message) for i, r in enumerate(b.records)
                           if b.base_offset + i >= offset)
            offset = max(offset, b.next_offset)
        if not batches or offset >= part.high_watermark:
            return out


def create_with_kafka_python(c: Cluster, node: int, name: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=c.addr(node), request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(name, 4, 2)], timeout_ms=15000)
    finally:
        admin.close()


async def scenario(c: Cluster) -> None:
    # 1. Both brokers register, catch up and are unfenced; each lists both.
    for node in (A, B):
        await until(lambda node=node: _equals(live_brokers(c, node), [A, B]), 30, f"broker {node} serving")

    # 2. An admin CreateTopics sent to a broker (kafka-python) is forwarded; every node sees the topic.
    await anyio.to_thread.run_sync(create_with_kafka_python, c, A, "alpha")
    for node in (A, B):
        leaders = await until(lambda node=node: topic_leaders(c, node, "alpha"), 15, f"alpha on broker {node}")
        assert len(leaders) == 4 and set(leaders.values()) == {A, B}
    for node in CONTROLLERS:
        records = await until(lambda node=node: _topic_records(c, node, "alpha"), 15, f"alpha on controller {node}")
        assert len(records) == 1

    # 3. kill -9 broker B: fenced once its session times out, its leaderships move to A.
    c.kill(B, signal.SIGKILL)
    killed = time.monotonic()
    await until(lambda: _equals(live_brokers(c, A), [A]), 20, "B fenced")
    fenced_after = time.monotonic() - killed
    assert fenced_after >= (SESSION_MS - 300) / 1000, f"fenced after {fenced_after:.2f}s, before the session timeout"
    await until(lambda: _all_led_by(topic_leaders(c, A, "alpha"), {A}), 10, "alpha led by A")

    # 4. B comes back (new incarnation) and is unfenced again.
    c.start(B)
    await until(lambda: _equals(live_brokers(c, A), [A, B]), 30, "B back")
    await until(lambda: _equals(live_brokers(c, B), [A, B]), 30, "B serving")

    # 5. A raw CreateTopics v7 sent to B is forwarded too.
    topic = ctq.CreatableTopic(name="beta", num_partitions=6, replication_factor=2)
    resp = await call(c, B, ctq.CreateTopicsRequest(topics=[topic], timeout_ms=15000), 7, 20)
    assert resp.topics[0].error_code == 0, resp
    beta_id = resp.topics[0].topic_id
    before = await until(lambda: topic_leaders(c, B, "beta"), 15, "beta on B")
    assert A in before.values(), before

    # 6. SIGTERM A: controlled shutdown moves its leaderships to B before the process exits.
    before_offset = max(o for o, _ in await committed_records(c, 1))
    started = time.monotonic()
    c.kill(A, signal.SIGTERM)
    assert c.procs[A].returncode == 0
    assert time.monotonic() - started < SESSION_MS / 1000 + 5
    assert "controlled shutdown complete" in c.log_text(A)
    after = await until(lambda: _all_led_by(topic_leaders(c, B, "beta"), {B}), 10, "beta led by B")
    assert len(after) == 6
    async def fenced_log():
        records = await committed_records(c, 1)
        return records if any(isinstance(r, BrokerRegistrationChangeRecord) and r.broker_id == A and r.fenced == 1
                              and o > before_offset for o, r in records) else None

    log = await until(fenced_log, 10, "A's fencing committed on controller 1")
    fence = [o for o, r in log if isinstance(r, BrokerRegistrationChangeRecord) and r.broker_id == A and r.fenced == 1]
    shutdown = [o for o, r in log if isinstance(r, BrokerRegistrationChangeRecord) and r.broker_id == A
                and r.in_controlled_shutdown == 1]
    moves = [o for o, r in log if isinstance(r, PartitionChangeRecord) and r.topic_id == beta_id and r.leader == B]
    assert shutdown and fence and moves
    last_fence = fence[-1]
    moved = [o for o in moves if o > shutdown[-1]]
    assert len(moved) == sum(1 for leader in before.values() if leader == A)
    assert max(moved) < last_fence, "leaderships must move before the broker is let go"


async def _equals(aw, expected):
    return (await aw) == expected


async def _all_led_by(aw, leaders: set[int]):
    got = await aw
    return got if got and set(got.values()) == leaders else None


async def _topic_records(c: Cluster, node: int, name: str):
    return [r for _, r in await committed_records(c, node) if isinstance(r, TopicRecord) and r.name == name]


def test_brokers_unfence_forward_admin_writes_and_hand_over_leaderships(tmp_path):
    c = Cluster(tmp_path, 3, brokers=2, broker_props=PROPS)
    try:
        for node in CONTROLLERS:
            c.start(node, *PROPS)
        for node in (A, B):
            c.start(node)
        started = time.monotonic()
        anyio.run(scenario, c)
        assert time.monotonic() - started < 90
    finally:
        c.stop_all()
