"""The listener's fast path (net/server.py ``KafkaServer._inline``): a BrokerHeartbeat arriving on an idle
plaintext connection is answered from ``data_received`` by the handler's synchronous form, with the same
bytes the ordinary path sends; an answer that waits for a commit is finished by the connection's task,
in order with what follows; a failure answers UNKNOWN_SERVER_ERROR; without a fast form the ordinary
handler answers."""

from __future__ import annotations

import socket
import struct
from typing import Any

import anyio
import pytest

from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.node.apis import Dispatcher
from kraftwire.protocol import framing
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _fallback() -> Reply:
    return Reply(ApiVersionsResponse(error_code=int(Errors.UNSUPPORTED_VERSION)), 0)


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out
    return exactly(struct.unpack(">i", exactly(4))[0])


def _heartbeat(broker: int, corr: int) -> bytes:
    return framing.encode_request(BrokerHeartbeatRequest(broker_id=broker), 1, correlation_id=corr)


def _answer(frame: bytes) -> tuple[int, Any]:
    return framing.decode_response(frame, 63, 1)


class _Paths:
    """A handler and its fast form that record which one answered; broker 7's answer waits for ``release``."""

    def __init__(self) -> None:
        self.slow: list[int] = []
        self.fast: list[int] = []
        self.release = anyio.Event()

    async def handler(self, request: Any, ctx: Any) -> Reply:
        self.slow.append(request.body.broker_id)
        return Reply(BrokerHeartbeatResponse(is_fenced=True), request.api_version)

    def fast_form(self, request: Any, ctx: Any) -> Any:
        b = request.body.broker_id
        self.fast.append(b)
        if b == 13:
            raise RuntimeError("a bug in the handler")
        if b == 7:
            return self._later(request.api_version)
        return Reply(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), request.api_version)

    async def _later(self, version: int) -> Reply:
        await self.release.wait()
        return Reply(BrokerHeartbeatResponse(should_shut_down=True), version)




async def test_heartbeats_take_the_fast_path_and_answer_as_the_ordinary_path_would() -> None:
    paths = _Paths()
    server = KafkaServer(paths.handler, _fallback, fast=lambda key, version, listener: paths.fast_form)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            for corr in range(3):
                sock.sendall(_heartbeat(1, corr))
                with anyio.fail_after(10):
                    frame = await anyio.to_thread.run_sync(_read_frame, sock)
                got_corr, body = _answer(frame)
                assert got_corr == corr and body.is_caught_up and not body.is_fenced
                expected = framing.encode_response(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 63, 1, corr)
                assert frame == expected[4:]
            assert paths.fast == [1, 1, 1] and paths.slow == []
        finally:
            sock.close()
            tg.cancel_scope.cancel()


async def test_an_answer_that_waits_is_finished_in_order_and_a_failure_answers_an_error() -> None:
    paths = _Paths()
    server = KafkaServer(paths.handler, _fallback, fast=lambda key, version, listener: paths.fast_form)
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
            paths.release.set()
            with anyio.fail_after(10):
                first = await anyio.to_thread.run_sync(_read_frame, sock)
                second = await anyio.to_thread.run_sync(_read_frame, sock)
            assert _answer(first)[0] == 1 and _answer(first)[1].should_shut_down
            assert _answer(second)[0] == 2
            sock.sendall(_heartbeat(13, 3))
            with anyio.fail_after(10):
                failed = await anyio.to_thread.run_sync(_read_frame, sock)
            assert _answer(failed)[0] == 3
            assert _answer(failed)[1].error_code == int(Errors.UNKNOWN_SERVER_ERROR)
            assert server.request_failures == 1
            assert 7 in paths.fast and 13 in paths.fast
        finally:
            sock.close()
            tg.cancel_scope.cancel()


async def test_without_a_fast_form_the_ordinary_handler_answers() -> None:
    paths = _Paths()
    server = KafkaServer(paths.handler, _fallback, fast=lambda key, version, listener: None)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        sock = socket.create_connection(("127.0.0.1", port))
        try:
            sock.sendall(_heartbeat(5, 9))
            with anyio.fail_after(10):
                frame = await anyio.to_thread.run_sync(_read_frame, sock)
            assert _answer(frame)[0] == 9 and not _answer(frame)[1].is_caught_up
            assert paths.slow == [5] and paths.fast == []
        finally:
            sock.close()
            tg.cancel_scope.cancel()


async def _handler(request: Any, ctx: Any) -> Reply:
    return Reply(BrokerHeartbeatResponse(), request.api_version)


def test_the_dispatcher_offers_a_fast_form_only_for_served_versions() -> None:
    d = Dispatcher({63: (0, 1), 18: (0, 3)}, "on the test plane")
    with pytest.raises(ValueError):
        d.on_fast(63, lambda request, ctx: Reply(BrokerHeartbeatResponse(), 1))   # no handler to speed up
    d.on(63, _handler)

    def form(request: Any, ctx: Any) -> Reply:
        return Reply(BrokerHeartbeatResponse(), 1)

    d.on_fast(63, form)
    assert d.fast_handler(63, 1) is form and d.fast_handler(63, 0) is form
    assert d.fast_handler(63, 2) is None        # not served: the ordinary path refuses it
    assert d.fast_handler(18, 0) is None        # no fast form
