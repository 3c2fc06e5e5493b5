"""Reconnect backoff (kraftwire.net.backoff): Kafka's NetworkClient rule, and connections that obey it."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.config import load_config
from kraftwire.net.backoff import AddressBackoff, ExponentialBackoff, ReconnectBackoff
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from tests.ports import CountingListener, free_ports


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_from_the_initial_value_up_to_the_cap() -> None:
    policy = ExponentialBackoff(50, 1000, random_unit=lambda: 0.5)   # factor exactly 1
    assert [policy.backoff_ms(n) for n in range(8)] == [50, 100, 200, 400, 800, 1000, 1000, 1000]


def test_jitter_stays_within_twenty_percent_and_never_above_the_cap() -> None:
    low = ExponentialBackoff(50, 1000, random_unit=lambda: 0.0)
    high = ExponentialBackoff(50, 1000, random_unit=lambda: 0.999999)
    assert low.backoff_ms(0) == pytest.approx(40)
    assert high.backoff_ms(0) == pytest.approx(60, rel=1e-4)
    assert low.backoff_ms(10) == pytest.approx(800)
    assert high.backoff_ms(10) == 1000            # 1200 before the cap


def test_a_cap_below_the_initial_value_is_a_constant_backoff() -> None:
    policy = ExponentialBackoff(500, 100, random_unit=lambda: 0.0)
    assert [policy.backoff_ms(n) for n in range(3)] == [100, 100, 100]
    assert ExponentialBackoff(0, 0).backoff_ms(5) == 0


def test_address_state_waits_after_each_failure_and_resets_on_success() -> None:
    clock = FakeClock()
    state = AddressBackoff(ExponentialBackoff(50, 1000, random_unit=lambda: 0.5), clock)
    assert state.delay_s() == 0
    state.failed()
    assert state.delay_s() == pytest.approx(0.05)
    clock.now += 0.05
    assert state.delay_s() == 0
    state.failed()
    assert state.delay_s() == pytest.approx(0.1)
    for _ in range(10):
        state.failed()
    assert state.delay_s() == pytest.approx(1.0)
    state.succeeded()
    assert state.delay_s() == 0 and state.failures == 0
    state.failed()
    assert state.delay_s() == pytest.approx(0.05)     # from the initial value again


def test_registry_shares_one_state_per_address_and_reads_the_node_keys() -> None:
    backoffs = ReconnectBackoff()
    assert backoffs.for_address("h", 1) is backoffs.for_address("h", 1)
    assert backoffs.for_address("h", 1) is not backoffs.for_address("h", 2)
    cfg = load_config({"process.roles": "controller", "node.id": "1", "controller.quorum.voters": "1@h:1",
                       "listeners": "CONTROLLER://h:1", "reconnect.backoff.ms": "7",
                       "reconnect.backoff.max.ms": "70"})
    policy = ReconnectBackoff.from_config(cfg).policy
    assert (policy.initial_ms, policy.max_ms) == (7, 70)


@pytest.fixture
def slammer():
    listener = CountingListener(free_ports(1)[0])
    yield listener
    listener.close()


async def _fails(conn: Connection) -> str:
    with pytest.raises(RequestFailed) as info:
        await conn.request(ApiVersionsRequest(), 0, 1.0)
    return str(info.value)


async def test_connection_in_backoff_fails_without_dialling(slammer: CountingListener) -> None:
    clock = FakeClock()
    backoffs = ReconnectBackoff(50, 1000, clock=clock, random_unit=lambda: 0.5)
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", slammer.port, backoff=backoffs.for_address("127.0.0.1", slammer.port))
        await _fails(conn)                               # dialled, closed before ApiVersions answered
        assert slammer.accepted == 1
        assert "reconnect backoff" in await _fails(conn)
        await anyio.sleep(0.05)                          # real time passes; the injected clock does not
        assert slammer.accepted == 1
        clock.now += 0.051
        await _fails(conn)
        await anyio.sleep(0.05)
        assert slammer.accepted == 2
        clock.now += 0.05                                # second failure: 100 ms
        assert "reconnect backoff" in await _fails(conn)
        clock.now += 0.051
        await _fails(conn)
        await anyio.sleep(0.05)
        assert slammer.accepted == 3
        tg.cancel_scope.cancel()


async def test_refused_connections_back_off_too() -> None:
    port = free_ports(1)[0]                          # nobody listens there
    clock = FakeClock()
    backoffs = ReconnectBackoff(50, 1000, clock=clock, random_unit=lambda: 0.5)
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", port, backoff=backoffs.for_address("127.0.0.1", port))
        assert "reconnect backoff" not in await _fails(conn)
        assert "reconnect backoff" in await _fails(conn)
        assert backoffs.for_address("127.0.0.1", port).failures == 1
        tg.cancel_scope.cancel()


async def test_peer_client_lanes_and_relays_share_the_peer_backoff(slammer: CountingListener) -> None:
    clock = FakeClock()
    peers = PeerClient({2: ("127.0.0.1", slammer.port)}, security=None, client_id="t",
                       backoff=ReconnectBackoff(50, 1000, clock=clock, random_unit=lambda: 0.5))
    async with anyio.create_task_group() as tg:
        peers.attach(tg)
        with pytest.raises(RequestFailed):
            await peers.send(2, ApiVersionsRequest(), 1.0, lane="raft")
        await anyio.sleep(0.05)
        assert slammer.accepted == 1
        for lane in ("raft", "heartbeats", "forwarding"):
            with pytest.raises(RequestFailed, match="reconnect backoff"):
                await peers.send(2, ApiVersionsRequest(), 1.0, lane=lane)
        with pytest.raises(RequestFailed, match="reconnect backoff"):
            await peers.relay(2, ApiVersionsRequest(), 0, 1.0, "client-1")
        with pytest.raises(RequestFailed, match="reconnect backoff"):
            await peers.open_address(("127.0.0.1", slammer.port), "one-off", 1.0).connect()
        await anyio.sleep(0.05)
        assert slammer.accepted == 1
        clock.now += 0.051                 # the backoff ended: of three lanes asking at once, one dials
        failures: list[str] = []

        async def ask(lane: str) -> None:
            try:
                await peers.send(2, ApiVersionsRequest(), 1.0, lane=lane)
            except RequestFailed as e:
                failures.append(str(e))

        async with anyio.create_task_group() as lanes:
            for lane in ("raft", "offsets-raft", "heartbeats"):
                lanes.start_soon(ask, lane)
        await anyio.sleep(0.05)
        assert slammer.accepted == 2
        assert len(failures) == 3 and sum("reconnect backoff" in f for f in failures) == 2
        await peers.close()
        tg.cancel_scope.cancel()
