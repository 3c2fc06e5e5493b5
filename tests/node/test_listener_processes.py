"""kraftwire.listener.processes: a voter's clients served by listener processes, the node core in this process
(node/listener_pool.py, node/listener_process.py). Real subprocesses and sockets on loopback: the voters' Raft
traffic is handed over to the cores, brokers register and heartbeat and an admin write commits through a
listener process, answers keep their order on a pipelining connection, and a killed listener process closes
its clients' connections while new ones are served."""

from __future__ import annotations

import os
import signal
import socket
import struct
import uuid
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import SocketAttribute

from kraftwire.config import ConfigError, load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol import framing
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctr
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.raft import MemoryLog, MemoryStateStore
from tests.net.listener_helpers import read_frame

from .harness import free_ports, node_config, wait_for

pytestmark = pytest.mark.anyio
PROCESSES = {"kraftwire.listener.processes": "2"}


@asynccontextmanager
async def cluster(n: int = 3):
    ports = free_ports(n)
    nodes = [Server(node_config(i, ports, **PROCESSES), log=MemoryLog(), store=MemoryStateStore(),
                    cluster_id="kw-test-cluster-0000001", offset_store=MemoryOffsetStore())
             for i in range(1, n + 1)]
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)
        try:
            active = await wait_for(lambda: next((x for x in nodes if x.voter.controller.controller.active), None),
                                    timeout=30)
            yield nodes, ports, active, ports[nodes.index(active)]
        finally:
            tg.cancel_scope.cancel()


def _registration(broker: int) -> brq.BrokerRegistrationRequest:
    return brq.BrokerRegistrationRequest(
        broker_id=broker, cluster_id="kw-test-cluster-0000001", incarnation_id=uuid.uuid4(),
        listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 19092, 0)],
        features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())],
        rack=None, log_dirs=[uuid.uuid4()])


def _link_of(node: Server, client_port: int):
    """The listener process link serving the client connection from ``client_port``, or None."""
    for link in node.listener_pool.links.values():
        if any(ctx.client_port == client_port for ctx in link.contexts.values()):
            return link
    return None


async def test_registration_heartbeats_and_an_admin_write_through_a_listener_process():
    async with cluster() as (nodes, ports, active, port):
        # the voters' Raft connections were handed over to the cores: a leader was elected and commits
        assert all(len(x.listener_pool.links) == 2 for x in nodes)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", port, client_id="broker-101")
            reg = await conn.request(_registration(101), 3, timeout_s=10)
            assert reg.error_code == 0 and reg.broker_epoch > 0
            local = conn._stream.extra(SocketAttribute.local_address)[1]  # noqa: SLF001
            assert _link_of(active, local) is not None     # relayed by a listener process, not the core's loop
            hb = await conn.request(BrokerHeartbeatRequest(broker_id=101, broker_epoch=reg.broker_epoch,
                                                           current_metadata_offset=1 << 62, want_fence=False), 1)
            assert hb.error_code == 0
            await wait_for(lambda: not active.voter.controller.controller.image.brokers[101].fenced,
                           timeout=10)
            hb = await conn.request(BrokerHeartbeatRequest(broker_id=101, broker_epoch=reg.broker_epoch,
                                                           current_metadata_offset=1 << 62, want_fence=False), 1)
            assert hb.error_code == 0 and not hb.is_fenced
            created = await conn.request(ctr.CreateTopicsRequest(
                topics=[ctr.CreatableTopic("through-a-listener-process", 1, 1, [], [])], timeout_ms=10000), 7,
                timeout_s=15)
            assert created.topics[0].error_code == 0
            assert active.voter.controller.controller.image.topic_by_name("through-a-listener-process") is not None
            await conn.close()
            tg.cancel_scope.cancel()


def _frame(body, version: int, corr: int) -> bytes:
    return framing.encode_request(body, version, correlation_id=corr, client_id="pipeliner")


async def test_answers_keep_request_order_on_a_pipelining_connection():
    async with cluster() as (_nodes, _ports, active, port):
        def pipeline() -> list[int]:
            with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
                frames = [_frame(ApiVersionsRequest(), 0, 1)]
                corr = 2
                for broker in (201, 202, 203):   # registrations wait for their commit; heartbeats between are
                    frames.append(_frame(_registration(broker), 3, corr))   # answered at once by the core
                    corr += 1
                    for _ in range(5):
                        frames.append(_frame(BrokerHeartbeatRequest(broker_id=broker, broker_epoch=1 << 40), 1, corr))
                        corr += 1
                sock.sendall(b"".join(frames))
                return [struct.unpack_from(">i", read_frame(sock))[0] for _ in frames]
        got = await anyio.to_thread.run_sync(pipeline)
        assert got == list(range(1, 20))
        assert all(b in active.voter.controller.controller.image.brokers for b in (201, 202, 203))


def _api_versions_answered(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_frame(ApiVersionsRequest(), 0, 7))
        return struct.unpack_from(">ih", read_frame(sock)) == (7, 0)


async def test_a_killed_listener_process_closes_its_clients_and_new_connections_are_served():
    async with cluster() as (_nodes, _ports, active, port):
        pool = active.listener_pool
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            sock.sendall(_frame(ApiVersionsRequest(), 0, 1))
            await anyio.to_thread.run_sync(read_frame, sock)
            link = await wait_for(lambda: _link_of(active, sock.getsockname()[1]), timeout=5)
            os.kill(link.proc.pid, signal.SIGKILL)

            def closed() -> bool:
                try:
                    return sock.recv(1) == b""
                except ConnectionError:
                    return True
            assert await anyio.to_thread.run_sync(closed)
        finally:
            sock.close()
        await wait_for(lambda: pool.restarts == 1, timeout=10)
        for _ in range(6):   # whichever process the kernel gives them to, the others or the restarted one
            assert await anyio.to_thread.run_sync(_api_versions_answered, port)
        await wait_for(lambda: len(pool.links) == 2 and all(x.proc.poll() is None for x in pool.links.values()),
                       timeout=10)
        assert active.server.connections >= 0


async def test_a_consumer_fetch_connection_is_handed_over_to_the_core():
    """kafka-python asks Metadata and ListOffsets (relayed by a listener process), then Fetch: its connection
    moves to the core, which serves the records as before."""
    from kafka import KafkaConsumer, TopicPartition

    async with cluster() as (_nodes, _ports, active, port):
        await wait_for(lambda: (active.core.hw or 0) > 5, timeout=10)
        tp = TopicPartition("__cluster_metadata", 0)

        def consume() -> list[int]:
            consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", auto_offset_reset="earliest",
                                     enable_auto_commit=False, consumer_timeout_ms=8000)
            try:
                consumer.assign([tp])
                consumer.seek_to_beginning(tp)
                got = []
                for msg in consumer:
                    got.append(msg.offset)
                    if len(got) >= 3:
                        break
                return got
            finally:
                consumer.close()
        before = active.listener_pool.handoffs
        offsets = await anyio.to_thread.run_sync(consume)
        assert len(offsets) == 3 and offsets == sorted(offsets)
        assert active.listener_pool.handoffs > before   # the consumer's Fetch connection moved to the core


def test_listener_processes_refuse_what_they_do_not_serve():
    ports = free_ports(1)
    with pytest.raises(ConfigError, match="PLAINTEXT listeners only"):
        node_config(1, ports, **PROCESSES, **{"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT"})
    quorum = f"1@127.0.0.1:{ports[0]}"
    with pytest.raises(ConfigError, match="controller-only nodes"):
        load_config({"process.roles": "broker", "node.id": "2", "controller.quorum.voters": quorum,
                     "listeners": "PLAINTEXT://127.0.0.1:0", **PROCESSES})
