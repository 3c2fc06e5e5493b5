"""Group offsets replicated by the voters' offsets quorum (kraftwire.group.offsets.replication=raft).

Real Nodes on loopback, metadata in memory, the offsets quorum on files: the leader of the offsets
quorum coordinates every group, other voters answer NOT_COORDINATOR and name it in FindCoordinator,
every voter's replicated state holds an acknowledged commit, and after the coordinator stops another
voter takes over with the same offsets. A legacy local offsets file is imported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from kraftwire.group.store import STORE_FILE_NAME, FileOffsetStore, OffsetRecord, store_dir
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.raft.memory import MemoryLog, MemoryStateStore

from .harness import free_ports, node_config, wait_for

pytestmark = pytest.mark.anyio
TOPIC = "__cluster_metadata"


async def call(port: int, body, version: int):
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, "127.0.0.1", port)
        try:
            return await conn.request(body, version, 10.0)
        finally:
            await conn.close()


def commit(group: str, offset: int) -> ocq.OffsetCommitRequest:
    return ocq.OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, topics=[
        ocq.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            ocq.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])


async def fetched(port: int, group: str) -> tuple[int, int]:
    resp = await call(port, ofq.OffsetFetchRequest(group_id=group, topics=[
        ofq.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]), 5)
    p = resp.topics[0].partitions[0]
    return p.error_code, p.committed_offset


class Cluster:
    """Three voters, each in a cancel scope of its own (``stop`` = the process dies)."""

    def __init__(self, tmp: Path, ports: list[int]) -> None:
        self.tmp, self.ports = tmp, ports
        self.nodes: dict[int, Server] = {}
        self.scopes: dict[int, anyio.CancelScope] = {}

    def make(self, i: int) -> Server:
        return Server(node_config(i, self.ports, **{"metadata.log.dir": str(self.tmp / f"n{i}"),
                                                  "group.initial.rebalance.delay.ms": "0"}),
                    log=MemoryLog(), store=MemoryStateStore(), cluster_id="kw-test-cluster-0000001")

    async def start(self, tg, i: int) -> None:
        node = self.nodes[i] = self.make(i)
        scope = self.scopes[i] = anyio.CancelScope()

        async def run(task_status=anyio.TASK_STATUS_IGNORED) -> None:
            with scope:
                await node.run(task_status=task_status)

        await tg.start(run)

    def stop(self, i: int) -> None:
        self.scopes[i].cancel()
        self.nodes[i].voter.offsets.close()

    def coordinator(self, among: list[int]) -> int | None:
        leaders = {self.nodes[i].voter.offsets.leader_id() for i in among}
        active = [i for i in among if self.nodes[i].voter.groups.coordinator is not None]
        return active[0] if len(leaders) == 1 and active == list(leaders) else None


async def test_the_offsets_quorum_leader_coordinates_and_a_successor_keeps_the_offsets(tmp_path):
    ports = free_ports(3)
    c = Cluster(tmp_path, ports)
    async with anyio.create_task_group() as tg:
        for i in (1, 2, 3):
            await c.start(tg, i)
        owner = await wait_for(lambda: c.coordinator([1, 2, 3]), 20)
        for asked in (1, 2, 3):
            fc = await call(ports[asked - 1], FindCoordinatorRequest(key="g", key_type=0), 3)
            assert (fc.error_code, fc.node_id, fc.port) == (0, owner, ports[owner - 1])
        other = next(i for i in (1, 2, 3) if i != owner)
        oc = await call(ports[other - 1], commit("g", 7), 8)
        assert oc.topics[0].partitions[0].error_code == Errors.NOT_COORDINATOR
        oc = await call(ports[owner - 1], commit("g", 42), 8)
        assert oc.topics[0].partitions[0].error_code == 0
        # acknowledged = committed by a majority; every voter applies it
        await wait_for(lambda: all(("g", TOPIC, 0) in c.nodes[i].voter.offsets.machine.state.offsets for i in (1, 2, 3)), 10)
        assert await fetched(ports[owner - 1], "g") == (0, 42)

        c.stop(owner)
        rest = [i for i in (1, 2, 3) if i != owner]
        successor = await wait_for(lambda: c.coordinator(rest), 30)
        assert successor != owner
        fc = await call(ports[successor - 1], FindCoordinatorRequest(key="g", key_type=0), 3)
        assert (fc.error_code, fc.node_id) == (0, successor)
        assert await fetched(ports[successor - 1], "g") == (0, 42)
        oc = await call(ports[successor - 1], commit("g", 43), 8)
        assert oc.topics[0].partitions[0].error_code == 0
        assert await fetched(ports[successor - 1], "g") == (0, 43)
        tg.cancel_scope.cancel()


async def test_replicas_snapshot_the_offsets_and_a_wiped_voter_loads_the_leaders_snapshot(tmp_path):
    ports = free_ports(3)
    c = Cluster(tmp_path, ports)
    async with anyio.create_task_group() as tg:
        for i in (1, 2, 3):
            await c.start(tg, i)
        owner = await wait_for(lambda: c.coordinator([1, 2, 3]), 20)
        victim = next(i for i in (1, 2, 3) if i != owner)
        c.stop(victim)
        for i in (1, 2, 3):
            if i != victim:
                c.nodes[i].voter.offsets.snapshotter.min_records = 5
        for n in range(30):
            oc = await call(ports[owner - 1], commit(f"s{n % 4}", n), 8)
            assert oc.topics[0].partitions[0].error_code == 0
        # 4 live offsets: a snapshot after max(5, 16) records, and the log below it is gone
        await wait_for(lambda: c.nodes[owner].voter.offsets.driver.node.snapshots_taken > 0, 10)
        assert c.nodes[owner].voter.offsets.log.start_offset > 0
        shutil.rmtree(tmp_path / f"n{victim}" / "__kraftwire_offsets-0")
        await c.start(tg, victim)
        back = c.nodes[victim].voter.offsets
        await wait_for(lambda: back.machine.state.offsets == c.nodes[owner].voter.offsets.machine.state.offsets, 20)
        assert back.log.latest_snapshot_id() is not None
        assert {k[0]: r.offset for k, r in back.machine.state.offsets.items()} == {
            "s0": 28, "s1": 29, "s2": 26, "s3": 27}
        tg.cancel_scope.cancel()


async def test_legacy_offset_files_of_every_voter_are_imported_without_overwriting(tmp_path):
    ports = free_ports(3)
    for i in (1, 2, 3):   # the files the local placement left: each voter its own groups
        legacy = FileOffsetStore(store_dir(tmp_path / f"n{i}"))
        legacy.append([OffsetRecord(f"old{i}", TOPIC, 0, 100 + i, -1, "m", 1)])
        legacy.close()
    c = Cluster(tmp_path, ports)
    async with anyio.create_task_group() as tg:
        for i in (1, 2, 3):
            await c.start(tg, i)
        owner = await wait_for(lambda: c.coordinator([1, 2, 3]), 20)
        for i in (1, 2, 3):
            assert await wait_for(lambda i=i: fetched_now(c, owner, f"old{i}"), 20) == 100 + i
        await wait_for(lambda: all(not (store_dir(tmp_path / f"n{i}") / STORE_FILE_NAME).exists() for i in (1, 2, 3)),
                       20)
        assert all((store_dir(tmp_path / f"n{i}") / (STORE_FILE_NAME + ".imported")).exists() for i in (1, 2, 3))
        tg.cancel_scope.cancel()


def fetched_now(c: Cluster, owner: int, group: str) -> int | None:
    coordinator = c.nodes[owner].voter.groups.coordinator
    rec = None if coordinator is None else coordinator.committed(group).get((TOPIC, 0))
    return None if rec is None else rec.offset
