"""The anyio server and client speak real Kafka framing to each other and to bad peers."""

from __future__ import annotations

import struct

import anyio
import pytest

from kraftwire.net.client import Connection, RequestFailed
from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import ApiVersion, ApiVersionsResponse
from kraftwire.protocol.messages.describe_quorum_request import DescribeQuorumRequest
from kraftwire.protocol.messages.describe_quorum_response import DescribeQuorumResponse

pytestmark = pytest.mark.anyio

KEYS = [ApiVersion(18, 0, 3), ApiVersion(55, 0, 2)]


def api_versions(error: int = 0) -> Reply:
    return Reply(ApiVersionsResponse(error_code=error, api_keys=list(KEYS)), 0)


async def handler(request, ctx):
    if request.api_key == 18:
        return Reply(ApiVersionsResponse(api_keys=list(KEYS)), request.api_version)
    if request.api_key == 55:
        await anyio.sleep(0.05 if request.header.client_id == "slow" else 0)
        return Reply(DescribeQuorumResponse(error_code=int(Errors.NOT_LEADER_OR_FOLLOWER),
                                            error_message=request.header.client_id), request.api_version)
    return None


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def start(tg, **kw):
    server = KafkaServer(handler, lambda: api_versions(int(Errors.UNSUPPORTED_VERSION)), **kw)
    host, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
    return server, host, port


async def test_negotiates_and_answers_in_order():
    async with anyio.create_task_group() as tg:
        _, host, port = await start(tg)
        conn = Connection(tg, host, port, client_id="slow")
        resp = await conn.request(DescribeQuorumRequest())
        assert conn.versions[55] == (0, 2)
        assert resp.error_code == Errors.NOT_LEADER_OR_FOLLOWER and resp.error_message == "slow"
        results = []

        async def one(i):
            results.append((i, (await conn.request(DescribeQuorumRequest(), 2)).error_code))

        async with anyio.create_task_group() as inner:
            for i in range(5):
                inner.start_soon(one, i)
        assert sorted(results) == [(i, 6) for i in range(5)]
        await conn.close()
        tg.cancel_scope.cancel()


async def _raw_exchange(port: int, payload: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as s:
        await s.send(payload)
        data = b""
        with anyio.move_on_after(2):
            while True:
                try:
                    data += await s.receive()
                except anyio.EndOfStream:
                    break
        return data


async def test_unsupported_api_versions_gets_v0_error_reply():
    async with anyio.create_task_group() as tg:
        _, _, port = await start(tg)
        # ApiVersions v99, correlation id 7, client id "x"
        body = struct.pack(">hhih", 18, 99, 7, 1) + b"x"
        data = await _raw_exchange(port, struct.pack(">i", len(body)) + body)
        size, corr = struct.unpack_from(">ii", data)
        assert corr == 7 and size == len(data) - 4
        resp = ApiVersionsResponse.decode(data[8:], 0)
        assert resp.error_code == Errors.UNSUPPORTED_VERSION
        assert [(k.api_key, k.max_version) for k in resp.api_keys] == [(18, 3), (55, 2)]
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("payload", [
    struct.pack(">i", 200 << 20),                       # over socket.request.max.bytes
    struct.pack(">i", -5),                              # negative size
    struct.pack(">i", 6) + b"\x00\x37\x00\x09\x00\x00",  # too short for a header
    struct.pack(">i", 12) + struct.pack(">hhih", 999, 0, 1, -1) + b"zz",  # unknown api key
    struct.pack(">i", 10) + struct.pack(">hhih", 55, 2, 1, 40),  # client id longer than frame
])
async def test_bad_frames_close_the_connection_and_server_survives(payload):
    async with anyio.create_task_group() as tg:
        server, host, port = await start(tg, max_request_bytes=1 << 20)
        assert await _raw_exchange(port, payload) == b""
        conn = Connection(tg, host, port)
        assert (await conn.request(DescribeQuorumRequest())).error_code == Errors.NOT_LEADER_OR_FOLLOWER
        await conn.close()
        tg.cancel_scope.cancel()


async def test_connect_failure_raises_request_failed():
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", 1, connect_timeout_s=0.5)
        with pytest.raises(RequestFailed):
            await conn.request(DescribeQuorumRequest())
