"""Client requests in bounded slices (net/gate.py): a voter's Raft request that arrives behind a
backlog of client requests is handled before most of that backlog (issue #12: a follower's Fetch or
a Vote must not wait behind thousands of broker requests), and every client request is still
answered, in order per connection."""

from __future__ import annotations

import socket
import struct

import anyio
import pytest

from kraftwire.net.gate import ClientGate, is_priority
from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kraftwire.protocol.messages.vote_request import VoteRequest
from kraftwire.protocol.messages.vote_response import VoteResponse
from tests.net.listener_helpers import fallback, read_frame

pytestmark = pytest.mark.anyio

CLIENTS = 60
PER_SLICE = 8


def test_priority_is_read_from_the_api_key() -> None:
    assert is_priority(framing.encode_request(VoteRequest(), 0, correlation_id=1)[4:])
    assert not is_priority(framing.encode_request(ApiVersionsRequest(), 0, correlation_id=1)[4:])
    assert not is_priority(b"\x00")


async def test_a_vote_behind_a_backlog_of_client_requests_is_handled_first() -> None:
    order: list[int] = []

    async def handler(request, ctx):
        order.append(request.api_key)
        body = VoteResponse() if request.api_key == 52 else BrokerHeartbeatResponse()
        return Reply(body, request.api_version)

    gate = ClientGate(per_slice=PER_SLICE, slice_s=3600.0)   # slices cut by count only
    server = KafkaServer(handler, fallback, gate=gate)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(CLIENTS + 1)]
        try:
            with anyio.fail_after(10):
                while server.connections < len(socks):    # every connection accepted and idle
                    await anyio.sleep(0.01)
            await anyio.sleep(0.05)
            # Without giving the loop a turn: a heartbeat on every client connection, then one Vote.
            for i, s in enumerate(socks[:CLIENTS]):
                s.sendall(framing.encode_request(BrokerHeartbeatRequest(broker_id=i), 1, correlation_id=i))
            socks[-1].sendall(framing.encode_request(VoteRequest(), 0, correlation_id=999))
            with anyio.fail_after(10):
                while len(order) < CLIENTS + 1:
                    await anyio.sleep(0.01)
            for i, s in enumerate(socks):
                s.setblocking(True)
                frame = await anyio.to_thread.run_sync(read_frame, s)
                assert struct.unpack_from(">i", frame)[0] == (999 if i == CLIENTS else i)
        finally:
            for s in socks:
                s.close()
        tg.cancel_scope.cancel()
    vote_at = order.index(52)
    # the Vote waited for at most the slice it arrived in and the next one, never for the backlog
    assert vote_at <= 2 * PER_SLICE, order
    assert gate.deferred >= CLIENTS - 2 * PER_SLICE


async def test_without_a_backlog_nothing_waits() -> None:
    async def handler(request, ctx):
        return Reply(ApiVersionsResponse(), request.api_version)

    gate = ClientGate(per_slice=PER_SLICE, slice_s=3600.0)   # slices cut by count only
    server = KafkaServer(handler, fallback, gate=gate)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            for corr in range(1, 4 * PER_SLICE):     # one at a time: each finds the slice free
                await s.send(framing.encode_request(ApiVersionsRequest(), 0, correlation_id=corr))
                data = b""
                while len(data) < 8:
                    data += await s.receive()
                assert struct.unpack_from(">i", data, 4)[0] == corr
        tg.cancel_scope.cancel()
    assert gate.deferred == 0


async def test_a_slice_that_ran_long_admits_fewer_next_time_and_a_backlog_grows_it_back() -> None:
    import asyncio

    gate = ClientGate(per_slice=64, slice_s=0.0)     # every slice has run long once it holds one
    assert gate.try_enter() and not gate.try_enter()
    waiter = asyncio.ensure_future(gate.enter())
    for _ in range(10):
        await asyncio.sleep(0)
    assert waiter.done() and 8 <= gate.fit < 64, "fit shrank towards what an iteration holds"
    gate.slice_s = 3600.0
    small = gate.fit
    for _ in range(3):                              # a backlog each iteration, iterations short
        while gate.try_enter():
            pass
        waiters = [asyncio.ensure_future(gate.enter()) for _ in range(gate.fit + 1)]
        for _ in range(3):
            await asyncio.sleep(0)
        for w in waiters:
            w.cancel()
    assert gate.fit > small, "a backlog in short iterations lets the slices grow again"
