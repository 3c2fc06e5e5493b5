"""Kafka's connection limits on our listeners: max.connections, max.connections.per.ip(.overrides),
a raised open-files limit at start, and the counters behind the socket-server metrics."""

from __future__ import annotations

import resource
import subprocess
import sys

import anyio
import pytest

from kraftwire.config import ConfigError, load_config
from kraftwire.net.limits import ConnectionLimits
from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse
from tests.net.listener_helpers import fallback

pytestmark = pytest.mark.anyio


async def _answer(request, ctx):
    return Reply(ApiVersionsResponse(), request.api_version)


FRAME = framing.encode_request(ApiVersionsRequest(), 0, correlation_id=9)


async def _served(stream, wait_s: float) -> bool:
    """Whether an ApiVersions request on ``stream`` is answered within ``wait_s``."""
    try:
        await stream.send(FRAME)
    except (anyio.BrokenResourceError, OSError):
        return False
    with anyio.move_on_after(wait_s):
        try:
            return len(await stream.receive()) >= 4
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return False
    return False


async def _with_server(limits: ConnectionLimits, body) -> None:
    server = KafkaServer(_answer, fallback, limits=limits)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        await body(server, port)
        tg.cancel_scope.cancel()


async def test_per_ip_limit_closes_the_extra_connection_and_counts_it():
    async def body(server, port):
        a = await anyio.connect_tcp("127.0.0.1", port)
        b = await anyio.connect_tcp("127.0.0.1", port)
        assert await _served(a, 5) and await _served(b, 5)
        c = await anyio.connect_tcp("127.0.0.1", port)
        assert not await _served(c, 2)                 # closed right after accept
        assert server.limits.rejected["max.connections.per.ip"] == 1
        assert 'connections_rejected_total{reason="max.connections.per.ip"} 1' in server.render()
        await a.aclose()
        with anyio.fail_after(10):                     # a slot freed: the next one is served
            while True:
                d = await anyio.connect_tcp("127.0.0.1", port)
                if await _served(d, 2):
                    break
                await d.aclose()
        for s in (b, c, d):
            await s.aclose()

    await _with_server(ConnectionLimits(per_ip=2), body)


async def test_per_ip_override_raises_one_hosts_limit():
    async def body(server, port):
        streams = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(4)]
        assert all([await _served(s, 5) for s in streams])
        assert server.limits.by_ip["127.0.0.1"] == 4
        for s in streams:
            await s.aclose()

    await _with_server(ConnectionLimits(per_ip=1, overrides={"127.0.0.1": 4}), body)


async def test_max_connections_pauses_accepting_until_one_closes():
    async def body(server, port):
        a = await anyio.connect_tcp("127.0.0.1", port)
        b = await anyio.connect_tcp("127.0.0.1", port)
        assert await _served(a, 5) and await _served(b, 5)
        c = await anyio.connect_tcp("127.0.0.1", port)  # queued by the kernel, not accepted
        assert not await _served(c, 1)
        assert server.limits.blocked >= 1
        await a.aclose()
        with anyio.fail_after(10):
            while True:
                try:
                    got = len(await c.receive()) >= 4
                except anyio.EndOfStream:
                    got = False
                if got:
                    break
        assert 'accept_blocked_total' in server.render()
        for s in (b, c):
            await s.aclose()

    await _with_server(ConnectionLimits(max_connections=2), body)


def test_limits_come_from_the_kafka_keys():
    cfg = load_config({
        "process.roles": "controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
        "listeners": "CONTROLLER://127.0.0.1:9093", "max.connections": "100", "max.connections.per.ip": "10",
        "max.connections.per.ip.overrides": "10.0.0.1:50, client.example:0"})
    limits = ConnectionLimits.from_config(cfg)
    assert (limits.max_connections, limits.per_ip) == (100, 10)
    assert limits.limit_for("10.0.0.1") == 50 and limits.limit_for("client.example") == 0
    assert limits.limit_for("10.0.0.2") == 10
    assert limits.admit("client.example") == "max.connections.per.ip"
    with pytest.raises(ConfigError, match="host:count"):
        load_config({
            "process.roles": "controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
            "listeners": "CONTROLLER://127.0.0.1:9093", "max.connections.per.ip.overrides": "10.0.0.1"})


def test_server_start_raises_the_soft_open_files_limit_to_the_hard_one():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"hard RLIMIT_NOFILE is {hard}; nothing to raise")
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "from kraftwire.net.limits import raise_open_files_limit\n"
            "print(*raise_open_files_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    old, new, now = map(int, out.stdout.split())
    assert old == 256 and new == now and now > 256
