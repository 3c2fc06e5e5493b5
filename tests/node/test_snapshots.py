"""Snapshots on real nodes (memory or file storage, loopback TCP): voters snapshot and clean their
logs, a node that was down meanwhile catches up with FetchSnapshot, a restart loads the local
snapshot first; and the FetchSnapshot wire mapping survives the generated codecs."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.core import raft_wire as wire
from kraftwire.group import MemoryOffsetStore
from kraftwire.node.server import Server
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.fetch_snapshot_request import FetchSnapshotRequest
from kraftwire.protocol.messages.fetch_snapshot_response import FetchSnapshotResponse
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.raft import messages as m

from .harness import free_ports, node_config, wait_for

CLUSTER = "kw-test-cluster-0000001"
SNAPSHOT_PROPS = {
    "metadata.log.max.record.bytes.between.snapshots": "600",   # a snapshot every few writes
    "metadata.max.retention.bytes": "0",                         # clean the log below each one
    "metadata.max.idle.interval.ms": "0",                        # no NoOpRecords: a quiet log at the end
}


class Storage:
    """Each node's metadata log and quorum state: in memory, or FileLog files under ``root``."""

    def __init__(self, kind: str, root) -> None:
        self.kind = kind
        self.root = root
        self.memory: dict[int, tuple[MemoryLog, MemoryStateStore]] = {}

    def open(self, node_id: int):
        if self.kind == "memory":
            return self.memory.setdefault(node_id, (MemoryLog(), MemoryStateStore()))
        from kraftwire.storage.log import FileLog
        from kraftwire.storage.quorum_state import FileQuorumStateStore

        part = self.root / f"node{node_id}" / "__cluster_metadata-0"
        return FileLog(part, segment_bytes=2048), FileQuorumStateStore(part / "quorum-state")

    def close(self, log) -> None:
        if self.kind == "file":
            log.close()


def make_node(node_id: int, ports: list[int], storage: Storage) -> Server:
    log, store = storage.open(node_id)
    return Server(node_config(node_id, ports, **SNAPSHOT_PROPS), log=log, store=store, cluster_id=CLUSTER,
                offset_store=MemoryOffsetStore())


async def start(tg, node: Server) -> anyio.CancelScope:
    """Run ``node`` in its own cancel scope (so a test can stop it alone)."""
    scope = anyio.CancelScope()

    async def runner(task_status=anyio.TASK_STATUS_IGNORED):
        with scope:
            await node.run(task_status=task_status)

    await tg.start(runner)
    return scope


def active(nodes: list[Server]) -> Server | None:
    up = [n for n in nodes if n.voter.controller.controller.active]
    return up[0] if len(up) == 1 else None


async def write_acls(nodes: list[Server], first: int, count: int) -> None:
    for i in range(first, first + count):
        leader = await wait_for(lambda: active(nodes))
        req = CreateAclsRequest(creations=[AclCreation(2, f"topic-{i}", 3, f"User:u{i}", "*", 3, 3)])
        resp = await leader.voter.submit(req, 3)
        assert resp.results[0].error_code in (0, Errors.NOT_CONTROLLER)


def settled(nodes: list[Server]) -> bool:
    offsets = {n.voter.controller.controller.committed_offset for n in nodes}
    return len(offsets) == 1 and all(n.core.hw is not None for n in nodes)


pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "file"])
def storage(request, tmp_path) -> Storage:
    return Storage(request.param, tmp_path)


async def test_node_that_was_down_catches_up_with_fetch_snapshot(storage):
    ports = free_ports(3)
    nodes = [make_node(i, ports, storage) for i in (1, 2, 3)]
    async with anyio.create_task_group() as tg:
        for n in nodes[:2]:
            await start(tg, n)
        await write_acls(nodes[:2], 0, 30)
        # Both running voters snapshotted and cleaned their logs past the bootstrap records.
        await wait_for(lambda: all(n.log.start_offset > 10 and n.node.snapshots_taken for n in nodes[:2]))
        late = nodes[2]
        await start(tg, late)
        await write_acls(nodes, 30, 5)
        await wait_for(lambda: settled(nodes), timeout=20)
        assert late.voter.controller.snapshots_loaded >= 1            # came from the leader: its disk was empty
        assert late.log.start_offset > 0 and late.log.latest_snapshot_id() is not None
        images = [n.voter.controller.controller.committed_image for n in nodes]
        assert images[0] == images[1] == images[2]
        assert len(images[2].acls) == 35
        tg.cancel_scope.cancel()
    for n in nodes:
        storage.close(n.log)


async def test_restart_loads_the_local_snapshot_then_replays_the_log_after_it(storage):
    ports = free_ports(3)
    nodes = [make_node(i + 1, ports, storage) for i in range(3)]
    async with anyio.create_task_group() as tg:
        scopes = [await start(tg, n) for n in nodes]
        await write_acls(nodes, 0, 20)
        await wait_for(lambda: settled(nodes) and all(n.log.start_offset > 0 for n in nodes))
        victim = next(i for i, n in enumerate(nodes) if not n.voter.controller.controller.active)
        scopes[victim].cancel()
        await anyio.sleep(0.05)
        storage.close(nodes[victim].log)
        others = [n for i, n in enumerate(nodes) if i != victim]
        await write_acls(others, 20, 3)
        reborn = make_node(victim + 1, ports, storage)
        assert reborn.log.start_offset > 0 and reborn.log.latest_snapshot_id() is not None
        nodes[victim] = reborn
        await start(tg, reborn)
        await wait_for(lambda: settled(nodes), timeout=20)
        assert reborn.voter.controller.snapshots_loaded >= 1
        assert reborn.voter.controller.controller.committed_image == others[0].voter.controller.controller.committed_image
        assert len(reborn.voter.controller.controller.committed_image.acls) == 23
        tg.cancel_scope.cancel()
    for n in nodes:
        storage.close(n.log)


# ------------------------------------------------------------------------------------------ wire
@pytest.mark.parametrize("version", [0, 1])
def test_fetch_snapshot_request_round_trips_through_the_codec(version):
    core_req = m.FetchSnapshotRequest("cid", 3, 7, m.SnapshotIdField(120, 6), 4096, 1 << 20)
    body = wire.request_to_wire(core_req, version)
    decoded = FetchSnapshotRequest.decode(body.encode(version), version)
    assert wire.request_from_wire(59, decoded, version) == (3, core_req)


@pytest.mark.parametrize("version", [0, 1])
def test_fetch_snapshot_response_round_trips_through_the_codec(version):
    core_resp = m.FetchSnapshotResponse(0, m.FetchSnapshotPartition(
        0, m.SnapshotIdField(120, 6), m.LeaderIdAndEpoch(1, 7), 9000, 4096, b"\x01\x02\x03"))
    nodes = [(1, "h1", 9093, "CONTROLLER")]
    body = wire.response_to_wire(59, core_resp, version, nodes)
    decoded = FetchSnapshotResponse.decode(body.encode(version), version)
    assert wire.response_from_wire(59, decoded) == core_resp
    assert [e.node_id for e in decoded.node_endpoints] == ([1] if version >= 1 else [])


def test_fetch_snapshot_for_another_partition_is_refused():
    core_req = m.FetchSnapshotRequest("cid", 3, 7, m.SnapshotIdField(120, 6), 0)
    body = wire.request_to_wire(core_req, 1)
    body.topics[0].name = "other-topic"
    with pytest.raises(wire.WireError) as e:
        wire.request_from_wire(59, body, 1)
    assert e.value.error == Errors.UNKNOWN_TOPIC_OR_PARTITION


async def test_voter_with_a_damaged_snapshot_recovers_from_the_leader_and_keeps_its_votes(tmp_path):
    storage = Storage("file", tmp_path)
    ports = free_ports(3)
    nodes = [make_node(i + 1, ports, storage) for i in range(3)]
    async with anyio.create_task_group() as tg:
        scopes = [await start(tg, n) for n in nodes]
        await write_acls(nodes, 0, 20)
        await wait_for(lambda: settled(nodes) and all(n.log.start_offset > 0 for n in nodes))
        victim = next(i for i, n in enumerate(nodes) if not n.voter.controller.controller.active)
        scopes[victim].cancel()
        await anyio.sleep(0.05)
        storage.close(nodes[victim].log)
        part = tmp_path / f"node{victim + 1}" / "__cluster_metadata-0"
        saved_state = (part / "quorum-state").read_text()
        snap = max(part.glob("*.checkpoint"))
        data = bytearray(snap.read_bytes())
        data[len(data) // 2] ^= 0xFF                      # damage below the log start
        snap.write_bytes(bytes(data))
        others = [n for i, n in enumerate(nodes) if i != victim]
        await write_acls(others, 20, 3)
        reborn = make_node(victim + 1, ports, storage)   # starts: no refusal, no manual re-format
        assert reborn.log.damage is not None and reborn.core.rejoining
        assert (part / "quorum-state").read_text() == saved_state   # votes kept
        nodes[victim] = reborn
        await start(tg, reborn)
        await wait_for(lambda: settled(nodes) and not reborn.core.rejoining, timeout=20)
        assert reborn.voter.controller.snapshots_loaded >= 1                # fetched from the leader
        assert reborn.voter.controller.controller.committed_image == others[0].voter.controller.controller.committed_image
        assert len(reborn.voter.controller.controller.committed_image.acls) == 23
        await wait_for(lambda: not (part / "rejoining").exists())
        tg.cancel_scope.cancel()
    for n in nodes:
        storage.close(n.log)
