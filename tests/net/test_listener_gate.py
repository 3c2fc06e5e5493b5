"""A listener bound before its node is ready accepts only once it is (a restarted broker, issue #12)."""

from __future__ import annotations

import struct

import anyio
import pytest

from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_requests_sent_before_the_gate_opens_are_answered_after_it_only() -> None:
    ready = anyio.Event()
    handled_when_ready: list[bool] = []

    async def handler(request, ctx):
        handled_when_ready.append(ready.is_set())
        return Reply(ApiVersionsResponse(), request.api_version)

    def fallback() -> Reply:
        return Reply(ApiVersionsResponse(error_code=int(Errors.UNSUPPORTED_VERSION)), 0)

    async with anyio.create_task_group() as tg:
        server = KafkaServer(handler, fallback)
        _, port = await tg.start(lambda task_status: server.serve(
            ListenerSpec("PLAINTEXT", "127.0.0.1", 0), task_status, open_when=ready, waiting_for="the test"))
        assert port > 0, "the port is bound (and known) before the gate opens"
        async with await anyio.connect_tcp("127.0.0.1", port) as s:   # the kernel's backlog takes it
            await s.send(framing.encode_request(ApiVersionsRequest(), 0, correlation_id=5))
            for _ in range(20):              # give a wrongly open listener every chance to answer
                await anyio.sleep(0.01)
            assert handled_when_ready == [] and server.connections == 0
            ready.set()
            data = b""
            with anyio.fail_after(10):
                while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                    data += await s.receive()
        corr, resp = framing.decode_response(data[4:], 18, 0)
        assert corr == 5 and resp.error_code == 0
        assert handled_when_ready == [True]
        tg.cancel_scope.cancel()
