"""The asyncio-protocol listener (net/framed.py): pipelined requests answered in order with bounded
queueing, a bad size prefix after good frames, idle connections closed, clients that never read."""

from __future__ import annotations

import socket
import struct

import anyio
import pytest

from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.api_versions_response import ApiVersion, ApiVersionsResponse
from tests.net.listener_helpers import fallback

pytestmark = pytest.mark.anyio


def _req(corr: int) -> bytes:
    return framing.encode_request(ApiVersionsRequest(), 0, correlation_id=corr)


async def _read_answers(stream, count: int, timeout_s: float = 10.0) -> list[int]:
    """The correlation ids of the next ``count`` answers on ``stream``."""
    data, corrs = b"", []
    with anyio.fail_after(timeout_s):
        while len(corrs) < count:
            while len(data) >= 4 and len(data) >= 4 + struct.unpack_from(">i", data)[0]:
                size = struct.unpack_from(">i", data)[0]
                corrs.append(struct.unpack_from(">i", data, 4)[0])
                data = data[4 + size:]
            if len(corrs) < count:
                data += await stream.receive()
    return corrs


async def _closed(stream, timeout_s: float = 10.0) -> bool:
    with anyio.move_on_after(timeout_s):
        while True:
            try:
                await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return True
    return False


async def test_pipelined_requests_are_answered_in_order_one_at_a_time():
    active, most = 0, 0

    async def handler(request, ctx):
        nonlocal active, most
        active += 1
        most = max(most, active)
        await anyio.sleep(0.001 * (request.correlation_id % 3))   # some answer at once, some later
        active -= 1
        return Reply(ApiVersionsResponse(), request.api_version)

    server = KafkaServer(handler, fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            await s.send(b"".join(_req(i) for i in range(1, 201)))     # far beyond MAX_QUEUED at once
            assert await _read_answers(s, 200) == list(range(1, 201))
        assert most == 1, "a connection's requests are handled one after another"
        tg.cancel_scope.cancel()


async def test_a_bad_size_after_good_frames_answers_them_then_closes(caplog):
    server = KafkaServer(lambda r, c: _answer(r), fallback, max_request_bytes=1 << 16)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            await s.send(_req(1) + _req(2) + struct.pack(">i", 1 << 20) + b"x" * 64)
            assert await _read_answers(s, 2) == [1, 2]
            assert await _closed(s)
        assert "request size 1048576 outside 0..65536" in caplog.text
        tg.cancel_scope.cancel()


async def _answer(request):
    return Reply(ApiVersionsResponse(), request.api_version)


async def test_an_idle_connection_is_closed_a_busy_one_is_not():
    async def handler(request, ctx):
        if request.correlation_id == 2:
            await anyio.sleep(1.0)          # longer than the idle timeout: still answered
        return Reply(ApiVersionsResponse(), request.api_version)

    server = KafkaServer(handler, fallback, idle_timeout_s=0.3)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            await s.send(_req(2))
            assert await _read_answers(s, 1) == [2]
            assert await _closed(s, 10), "nothing sent for longer than connections.max.idle.ms"
        with anyio.fail_after(10):
            while server.connections:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()


async def test_a_client_that_never_reads_stops_its_connection_not_the_listener():
    big = ApiVersionsResponse(api_keys=[ApiVersion(k, 0, 1) for k in range(2000)])   # 12 KB an answer
    handled = 0

    async def handler(request, ctx):
        nonlocal handled
        handled += 1
        return Reply(big, request.api_version)

    server = KafkaServer(handler, fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        greedy = socket.create_connection(("127.0.0.1", port))
        greedy.setblocking(False)
        frame = _req(1)
        frames, sent = frame * 1000, 0
        with anyio.move_on_after(3):       # send until the server stops reading us (back-pressure)
            while sent < len(frame) * 200_000:
                try:
                    sent += greedy.send(frames[sent % len(frames):])
                except BlockingIOError:
                    await anyio.sleep(0.05)
        # the kernel may still hold what was sent: let the server work through it until it stops
        stalled = -1
        with anyio.move_on_after(10):
            while handled != stalled:
                stalled = handled
                await anyio.sleep(0.3)
        await anyio.sleep(0.5)
        assert handled == stalled < sent // len(frame), "the server kept handling requests nobody reads"
        assert server.connections == 1, "the greedy client's connection is paused, not closed"
        async with await anyio.connect_tcp("127.0.0.1", port) as s:   # the listener still serves others
            await s.send(_req(7))
            assert await _read_answers(s, 1) == [7]
        greedy.close()
        tg.cancel_scope.cancel()
