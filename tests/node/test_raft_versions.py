"""Raft requests are sent at a version the peer advertised: ApiVersions comes first on every connection
(a Kafka 3.7 voter takes Vote/BeginQuorumEpoch v0 and Fetch up to v16 and closes the socket otherwise)."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.core import raft_wire as wire
from kraftwire.core.node_core import NodeCore
from kraftwire.net.peers import PeerClient
from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.node.raft_driver import RaftDriver
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import ApiVersion, ApiVersionsResponse
from kraftwire.raft import messages as m

pytestmark = pytest.mark.anyio
KAFKA_37 = {18: (0, 3), 52: (0, 0), 53: (0, 0), 54: (0, 0), 1: (0, 16), 55: (0, 1), 59: (0, 0)}


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Peer:
    """A voter that advertises Kafka 3.7's raft versions and closes the connection on anything newer."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    async def handle(self, request, ctx):
        key, version = request.api_key, request.api_version
        if key == 18:
            return Reply(ApiVersionsResponse(api_keys=[ApiVersion(k, lo, hi) for k, (lo, hi) in KAFKA_37.items()]),
                         version)
        self.seen.append((key, version))
        if version > KAFKA_37[key][1]:
            raise ConnectionError(f"API {key} v{version} is not served")
        if key == 52:
            return Reply(wire.response_to_wire(52, m.VoteResponse(0, m.VotePartition(0, 2, 1, True)), version, []),
                         version)
        return None


class Core:
    """Just enough of a RaftCore: one Vote to node 2 at the first tick, then the outcome."""

    def __init__(self) -> None:
        self.sent = False
        self.outcome: list[object] = []
        self.done = anyio.Event()

    def tick(self, now):
        if self.sent:
            return []
        self.sent = True
        return [m.SendRequest(1, 2, m.VoteRequest("cid", 1, 1, 0, 0))]

    def next_deadline(self):
        return None

    def handle_response(self, now, rid, msg):
        self.outcome.append(msg)
        self.done.set()
        return []

    def handle_request_failed(self, now, rid):
        self.outcome.append("failed")
        self.done.set()
        return []


async def test_first_vote_goes_out_at_the_peers_version():
    peer, core = Peer(), Core()
    async with anyio.create_task_group() as tg:
        server = KafkaServer(peer.handle, lambda: Reply(ApiVersionsResponse(error_code=int(
            Errors.UNSUPPORTED_VERSION)), 0))
        host, port = await tg.start(server.serve, ListenerSpec("CONTROLLER", "127.0.0.1", 0))
        peers = PeerClient({2: (host, port)}, security=None, client_id="raft-test")
        peers.attach(tg)
        driver = RaftDriver(NodeCore(core), peers, request_timeout_ms=2000, leader_endpoints=[])
        await tg.start(driver.run)
        with anyio.fail_after(10):
            await core.done.wait()
        await peers.close()
        tg.cancel_scope.cancel()
    assert peer.seen == [(52, 0)]
    assert core.outcome and isinstance(core.outcome[0], m.VoteResponse) and core.outcome[0].partition.vote_granted
