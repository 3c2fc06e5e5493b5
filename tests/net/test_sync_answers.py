"""The listener and the node's one door (net/server.py ``KafkaServer._respond``): an answer the handler gives
at once (a ``Reply``: a heartbeat the node core answered synchronously) is written without an await; one
it gives later (an awaitable: a commit wait, a relay) is written in order with what follows; a failure of
either answers UNKNOWN_SERVER_ERROR."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest

from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from tests.net.listener_helpers import fallback, read_frame

pytestmark = pytest.mark.anyio


def _heartbeat(broker: int, corr: int) -> bytes:
    return framing.encode_request(BrokerHeartbeatRequest(broker_id=broker), 1, correlation_id=corr)


def _answer(frame: bytes) -> tuple[int, Any]:
    return framing.decode_response(frame, 63, 1)


class _Door:
    """A handler shaped as the node's door: broker 7's answer waits for ``release``, broker 13's fails at
    once, broker 14's fails later, the others are answered at once."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.release = anyio.Event()

    def handle(self, request: Any, ctx: Any) -> Any:
        b = request.body.broker_id
        self.seen.append(b)
        if b == 13:
            raise RuntimeError("a bug in the handler")
        if b in (7, 14):
            return self._later(b, request.api_version)
        return Reply(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), request.api_version)

    async def _later(self, broker: int, version: int) -> Reply:
        if broker == 14:
            raise RuntimeError("a bug in a relay")
        await self.release.wait()
        return Reply(BrokerHeartbeatResponse(should_shut_down=True), version)


async def test_an_answer_given_at_once_is_written_as_encoded() -> None:
    door = _Door()
    server = KafkaServer(door.handle, fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            for corr in range(3):
                sock.sendall(_heartbeat(1, corr))
                with anyio.fail_after(10):
                    frame = await anyio.to_thread.run_sync(read_frame, sock)
                got_corr, body = _answer(frame)
                assert got_corr == corr and body.is_caught_up and not body.is_fenced
                expected = framing.encode_response(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 63, 1, corr)
                assert frame == expected[4:]
            assert door.seen == [1, 1, 1]
        finally:
            sock.close()
            tg.cancel_scope.cancel()


async def test_an_answer_that_waits_is_written_in_order_and_failures_answer_an_error() -> None:
    door = _Door()
    server = KafkaServer(door.handle, fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            sock.sendall(_heartbeat(7, 1) + _heartbeat(2, 2))   # broker 7's answer waits, broker 2's follows
            await anyio.sleep(0.2)
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)                                      # nothing answered before 7's answer
            sock.setblocking(True)
            door.release.set()
            with anyio.fail_after(10):
                first = await anyio.to_thread.run_sync(read_frame, sock)
                second = await anyio.to_thread.run_sync(read_frame, sock)
            assert _answer(first)[0] == 1 and _answer(first)[1].should_shut_down
            assert _answer(second)[0] == 2
            sock.sendall(_heartbeat(13, 3) + _heartbeat(14, 4))
            with anyio.fail_after(10):
                failed = await anyio.to_thread.run_sync(read_frame, sock)
                failed_later = await anyio.to_thread.run_sync(read_frame, sock)
            assert _answer(failed)[0] == 3 and _answer(failed_later)[0] == 4
            assert _answer(failed)[1].error_code == _answer(failed_later)[1].error_code == Errors.UNKNOWN_SERVER_ERROR
            assert server.request_failures == 2
        finally:
            sock.close()
            tg.cancel_scope.cancel()
