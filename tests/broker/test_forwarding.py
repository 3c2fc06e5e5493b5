"""ForwardingManager against scripted controllers: retries, error mapping, byte-exact pass-through."""

from __future__ import annotations

import struct

import anyio
import pytest

from kraftwire.broker.envelope import deserialize_principal, host_from_bytes, response_bytes
from kraftwire.core.api_registry import api_versions_response, supported
from kraftwire.net.peers import PeerClient
from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.node.forwarding import ForwardingManager
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import decode_request, decode_response, encode_request, encode_response
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import create_topics_response as ctr
from kraftwire.protocol.messages.envelope_response import EnvelopeResponse
from tests.node.harness import free_ports

pytestmark = pytest.mark.anyio
TABLE = supported({19: (2, 7), 58: (0, 0)})
INNER = ctr.CreateTopicsResponse(topics=[ctr.CreatableTopicResult(name="orders", error_code=0, num_partitions=3,
                                                                  replication_factor=2)])


class FakeController:
    """Answers Envelopes with a fixed error, or unwraps them and answers INNER."""

    def __init__(self, error: int = 0) -> None:
        self.error = error
        self.envelopes = []

    async def handle(self, request, ctx):
        if request.api_key == 18:
            return Reply(api_versions_response(TABLE), request.api_version)
        env = request.body
        self.envelopes.append(env)
        if self.error:
            return Reply(EnvelopeResponse(error_code=self.error), 0)
        inner = decode_request(env.request_data)
        return Reply(EnvelopeResponse(response_data=response_bytes(INNER, 19, inner.api_version,
                                                                   inner.correlation_id)), 0)


async def serve(tg, fake, port):
    server = KafkaServer(fake.handle, lambda: Reply(api_versions_response(TABLE), 0))
    await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", port))


async def client_roundtrip(port: int, frame: bytes) -> bytes:
    async with await anyio.connect_tcp("127.0.0.1", port) as s:
        await s.send(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            data += await s.receive()
        return data


async def run_broker(tg, forwarding, port):
    async def handle(request, ctx):
        if request.api_key == 18:
            return Reply(api_versions_response(TABLE), request.api_version)
        return await forwarding.forward(request, ctx)

    server = KafkaServer(handle, lambda: Reply(api_versions_response(TABLE), 0))
    await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", port))


def create_topics_frame(timeout_ms=5000, corr=31337):
    body = ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(name="orders", num_partitions=3, replication_factor=2)],
                                   timeout_ms=timeout_ms)
    return encode_request(body, 7, corr, "admin-7")


async def test_not_controller_and_dead_controllers_are_skipped_and_the_inner_response_passes_through_exactly():
    stale, good = FakeController(int(Errors.NOT_CONTROLLER)), FakeController()
    p_stale, p_good, p_dead, p_broker = free_ports(4)
    async with anyio.create_task_group() as tg:
        await serve(tg, stale, p_stale)
        await serve(tg, good, p_good)
        channel = PeerClient({1: ("127.0.0.1", p_stale), 2: ("127.0.0.1", p_dead), 3: ("127.0.0.1", p_good)},
                             security=None, leader_hint=lambda: 1, client_id="broker-9", connect_timeout_s=0.5)
        channel.attach(tg)
        fwd = ForwardingManager(channel, retry_backoff_ms=5)
        await run_broker(tg, fwd, p_broker)
        frame = create_topics_frame()
        raw = await client_roundtrip(p_broker, frame)
        assert raw == encode_response(INNER, 19, 7, 31337), "inner response body passed through unchanged"
        assert len(stale.envelopes) == 1 and len(good.envelopes) == 1
        env = good.envelopes[0]
        assert env.request_data == frame[4:], "the client's header and body, as sent"
        assert deserialize_principal(env.request_principal) == "User:ANONYMOUS"
        assert host_from_bytes(env.client_host_address) == "127.0.0.1"
        m = fwd.metrics
        assert m.forwards.total == 1 and m.redirected.total == 3 and m.pending == 0
        await channel.close()
        tg.cancel_scope.cancel()


async def test_cluster_authorization_failure_becomes_unknown_server_error():
    refusing = FakeController(int(Errors.CLUSTER_AUTHORIZATION_FAILED))
    p_ctl, p_broker = free_ports(2)
    async with anyio.create_task_group() as tg:
        await serve(tg, refusing, p_ctl)
        channel = PeerClient({1: ("127.0.0.1", p_ctl)}, security=None, leader_hint=lambda: 1, client_id="broker-9")
        channel.attach(tg)
        fwd = ForwardingManager(channel, retry_backoff_ms=5)
        await run_broker(tg, fwd, p_broker)
        raw = await client_roundtrip(p_broker, create_topics_frame())
        corr, resp = decode_response(raw[4:], 19, 7)
        assert corr == 31337
        assert [(t.name, t.error_code) for t in resp.topics] == [("orders", Errors.UNKNOWN_SERVER_ERROR)]
        assert fwd.metrics.auth_failures == 1 and len(refusing.envelopes) == 1
        await channel.close()
        tg.cancel_scope.cancel()


async def test_retries_stop_at_the_clients_timeout_with_request_timed_out():
    nobody = FakeController(int(Errors.NOT_CONTROLLER))
    p_ctl, p_broker = free_ports(2)
    async with anyio.create_task_group() as tg:
        await serve(tg, nobody, p_ctl)
        channel = PeerClient({1: ("127.0.0.1", p_ctl)}, security=None, leader_hint=lambda: None, client_id="broker-9")
        channel.attach(tg)
        fwd = ForwardingManager(channel, retry_backoff_ms=20)
        await run_broker(tg, fwd, p_broker)
        started = anyio.current_time()
        raw = await client_roundtrip(p_broker, create_topics_frame(timeout_ms=400))
        elapsed = anyio.current_time() - started
        _, resp = decode_response(raw[4:], 19, 7)
        assert resp.topics[0].error_code == Errors.REQUEST_TIMED_OUT
        assert 0.35 <= elapsed < 3
        assert len(nobody.envelopes) >= 3 and fwd.metrics.timeouts == 1
        await channel.close()
        tg.cancel_scope.cancel()


def test_channel_prefers_the_raft_leader_then_tries_every_other_voter():
    hint = [2]
    ch = PeerClient({1: ("h", 1), 2: ("h", 2), 3: ("h", 3)}, security=None, leader_hint=lambda: hint[0], client_id="x")
    assert ch.candidate() == 2
    ch.failed(2)
    tried = {2}
    for _ in range(2):
        node = ch.candidate()
        assert node not in tried
        tried.add(node)
        ch.failed(node)
    assert tried == {1, 2, 3}
    assert ch.candidate() == 2          # everyone failed: start over with the leader
    ch.failed(2)
    ch.succeeded(3)
    assert ch.candidate() == 2
    hint[0] = None
    assert ch.candidate() in (1, 2, 3)


def test_forwarding_metrics_render_in_prometheus_text():
    from kraftwire.node.metrics import CombinedMetrics, ForwardingMetrics

    clock = [100.0]
    m = ForwardingMetrics(clock=lambda: clock[0])
    t = m.started()
    m.envelope_sent()
    m.envelope_sent()
    clock[0] += 0.25
    m.finished(t)
    m.auth_failures += 1
    text = CombinedMetrics(m).render()
    values = {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.splitlines()
                                       if line and not line.startswith("#"))}
    p = ForwardingMetrics.PREFIX
    assert values[p + "num_client_forwarding_to_controller_count"] == 0
    assert values[p + "num_client_forwarding_to_controller_total"] == 1
    assert values[p + "num_messages_redirected_total"] == 2
    assert values[p + "request_forwarding_to_controller_authorization_fail_total"] == 1
    assert values[p + "forwarding_latency_max"] == 250
    assert f"# TYPE {p}num_messages_redirected_rate gauge" in text
    assert f"# TYPE {p}num_messages_redirected_total counter" in text   # cumulative counts are counters


async def test_health_ready_and_observer_state_over_http():
    """/health answers while serving, /ready only once leader and high watermark are known; a non-voter
    following the leader reports Kafka's raft state "observer"."""
    from types import SimpleNamespace

    import anyio

    from kraftwire.node.metrics import RaftMetrics, serve_metrics

    core = SimpleNamespace(node_id=7, voters=frozenset({1, 2, 3}), state_name="follower", leader_id=None,
                           hw=None, epoch=3, voted_for=lambda: None)
    log_ = SimpleNamespace(end_offset=10, last_epoch=lambda: 3)

    async def get(port: int, path: str) -> str:
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            await s.send(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            data = b""
            while True:
                try:
                    data += await s.receive()
                except anyio.EndOfStream:
                    return data.decode()

    async with anyio.create_task_group() as tg:
        _, port = await tg.start(serve_metrics, RaftMetrics(core, log_), "127.0.0.1", 0)
        assert (await get(port, "/health")).startswith("HTTP/1.0 200 OK")
        not_ready = await get(port, "/ready")
        assert not_ready.startswith("HTTP/1.0 503") and not_ready.endswith("no known leader\n")
        core.leader_id, core.hw = 1, 8
        assert (await get(port, "/ready")).startswith("HTTP/1.0 200 OK")
        text = await get(port, "/metrics")
        assert 'kafka_server_raft_metrics_current_state{state="observer"} 1.0' in text
        assert (await get(port, "/nope")).startswith("HTTP/1.0 404")
        tg.cancel_scope.cancel()
