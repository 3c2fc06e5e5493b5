"""KIP-919: every voter registers its listeners, even one with only a controller listener (Kafka's voters
list only registered controllers to admin clients, so an unregistered kraftwire leader cannot be found)."""

from __future__ import annotations

import pytest

from kraftwire.group import MemoryOffsetStore
from kraftwire.node.server import Server
from kraftwire.raft import MemoryLog, MemoryStateStore
from tests.node.harness import memory_cluster, node_config, wait_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_controller_only_voters_register_their_controller_listener():
    async with memory_cluster(3) as (nodes, ports):
        def registered():
            regs = nodes[0].voter.controller.controller.committed_image.controllers
            return len(regs) == 3 and regs
        regs = await wait_for(registered, 20)
        for i, port in enumerate(ports, 1):
            assert [(e.name, e.host, e.port) for e in regs[i].listeners] == [("CONTROLLER", "127.0.0.1", port)]
            assert dict((n, (lo, hi)) for n, lo, hi in regs[i].features)["metadata.version"][1] >= 19


def test_controller_listener_is_registered_beside_advertised_client_listeners():
    cfg = node_config(1, [19001, 19002], listeners="CONTROLLER://127.0.0.1:19001,PLAINTEXT://127.0.0.1:19101",
                      **{"advertised.listeners": "PLAINTEXT://localhost:19101",
                         "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"})
    node = Server(cfg, log=MemoryLog(), store=MemoryStateStore(), cluster_id="kw-test-cluster-0000001",
                offset_store=MemoryOffsetStore())
    assert node.voter.registrar is not None
    names = sorted((e.name, e.host, e.port) for e in node.voter.registrar.endpoints)
    assert names == [("CONTROLLER", "127.0.0.1", 19001), ("PLAINTEXT", "localhost", 19101)]
