"""Group placement on voters with a client listener: FindCoordinator on any voter names the owning voter,
at its address on the listener the client came in on; other voters relay the group's requests to it."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.group import MemoryOffsetStore
from kraftwire.group.placement import owner_of
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.raft import MemoryLog, MemoryStateStore

from .harness import free_ports, node_config, wait_for

pytestmark = pytest.mark.anyio


async def call(port: int, body, version: int):
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", port)
        try:
            return await conn.request(body, version, 10.0)
        finally:
            await conn.close()


async def test_find_coordinator_names_the_owner_on_the_clients_listener():
    ports = free_ports(6)
    cports, client_ports = ports[:3], ports[3:]
    nodes = [Server(node_config(i, cports, **{
        "listeners": f"CONTROLLER://127.0.0.1:{cports[i - 1]},PLAINTEXT://127.0.0.1:{client_ports[i - 1]}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}),
        log=MemoryLog(), store=MemoryStateStore(), cluster_id="kw-test-cluster-0000001",
        offset_store=MemoryOffsetStore()) for i in (1, 2, 3)]
    async with anyio.create_task_group() as tg:
        for n in nodes:
            await tg.start(n.run)
        await wait_for(lambda: all(len(n.voter.controller.controller.committed_image.controllers) == 3 for n in nodes), 20)
        voters = [(i, "127.0.0.1", p) for i, p in enumerate(cports, 1)]
        groups = {}
        i = 0
        while len(groups) < 3:
            groups.setdefault(owner_of(f"g{i}", voters)[0], f"g{i}")
            i += 1
        for owner, group in sorted(groups.items()):
            for asked in (1, 2, 3):
                fc = await call(client_ports[asked - 1], FindCoordinatorRequest(key=group, key_type=0), 3)
                assert (fc.error_code, fc.node_id, fc.port) == (0, owner, client_ports[owner - 1]), (group, asked)
                fc = await call(cports[asked - 1], FindCoordinatorRequest(key=group, key_type=0), 3)
                assert (fc.node_id, fc.port) == (owner, cports[owner - 1]), "controller listener stays on it"
            # A commit sent to a voter that does not own the group is relayed and stored by the owner only.
            other = next(n for n in (1, 2, 3) if n != owner)
            oc = await call(client_ports[other - 1], ocq.OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, topics=[ocq.OffsetCommitRequestTopic(
                    name="__cluster_metadata", partitions=[ocq.OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=5)])]), 8)
            assert oc.topics[0].partitions[0].error_code == 0
            holders = [n.cfg.node_id for n in nodes if group in n.voter.groups.coordinator._offsets]
            assert holders == [owner]
        tg.cancel_scope.cancel()
