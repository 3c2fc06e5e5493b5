"""Every disk write off the event loop (issue #23, item 3), checked against a slow disk
(``compat/slow_disk.py``): with the leader's fsyncs and renames held in flight, it keeps leading and
answers Raft and controller requests; its event loop makes no fsync or rename at all; and a quorum-state
write gates what the driver sends after it (a vote must be durable before its answer leaves)."""

from __future__ import annotations

import os
import random
import threading
from typing import Any

import anyio
import pytest

from compat.slow_disk import SlowDisk
from kraftwire.core import ApiDoor, DoorPlane, NodeCore, RaftApis, raft_wire
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.group import MemoryOffsetStore
from kraftwire.node.raft_driver import RaftDriver
from kraftwire.node.server import Server
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.framing import Request, RequestHeader
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.raft import ElectionState, MemoryLog, MemoryStateStore, RaftConfig, RaftCore
from kraftwire.raft import messages as m
from kraftwire.storage.log import FileLog
from kraftwire.storage.quorum_state import FileQuorumStateStore

from .harness import free_ports, node_config, wait_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _under(directory: str):
    """A SlowDisk filter: calls on files (fds or paths) below ``directory``."""
    def only(args: tuple[Any, ...]) -> bool:
        first = args[0] if args else None
        if isinstance(first, int):
            try:
                first = os.readlink(f"/proc/self/fd/{first}")
            except OSError:
                return False
        return str(first).startswith(directory)
    return only


async def _write(node: Server, i: int) -> None:
    req = CreateAclsRequest(creations=[AclCreation(2, f"topic-{i}", 3, f"User:u{i}", "*", 3, 3)])
    resp = await node.voter.submit(req, 3)
    assert resp.results[0].error_code == 0


async def test_a_leader_with_its_disk_stuck_keeps_leading_and_answering(tmp_path) -> None:
    ports = free_ports(3)
    nodes = []
    for i in (1, 2, 3):
        part = tmp_path / f"n{i}" / "__cluster_metadata-0"
        nodes.append(Server(node_config(i, ports), log=FileLog(part, segment_bytes=512),
                            store=FileQuorumStateStore(part / "quorum-state"), cluster_id="kw-test-cluster-0000001",
                            offset_store=MemoryOffsetStore()))
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)
        leader = await wait_for(lambda: next((n for n in nodes if n.voter.controller.controller.active), None))
        epoch = leader.core.epoch
        disk = SlowDisk(0.02, only=_under(str(tmp_path / f"n{leader.cfg.node_id}"))).install()
        try:
            # 20 ms on every fsync and rename of the leader: writes that roll segments (512 bytes) commit.
            for wave in range(2):
                async with anyio.create_task_group() as writers:
                    for i in range(10 * wave, 10 * wave + 10):
                        writers.start_soon(_write, leader, i)
            assert len(leader.log.segment_paths()) > 1, "the writes rolled a segment"
            # Now hold the leader's disk: a write whose fsync stays in flight.
            disk.gate = threading.Event()
            tg.start_soon(_write, leader, 20)
            await wait_for(lambda: disk.in_flight >= 1)
            # Raft and controller requests are answered while the fsync is in flight.
            answer = await _describe_quorum(leader)
            part = answer.topics[0].partitions[0]
            assert answer.error_code == 0 and part.leader_id == leader.cfg.node_id
            assert disk.in_flight >= 1, "answered while the leader's fsync was still in flight"
            # Several election timeouts pass: followers keep fetching from it, nobody stands.
            await anyio.sleep(3 * 0.3 * 2)
            assert disk.in_flight >= 1
            assert leader.core.leader_id == leader.cfg.node_id and leader.core.epoch == epoch
            assert all(n.core.epoch == epoch and n.core.leader_id == leader.cfg.node_id for n in nodes)
            assert disk.on_loop == [], f"a durable write ran on the event loop: {disk.on_loop[:5]}"
        finally:
            if disk.gate is not None:
                disk.gate.set()
            disk.uninstall()
        assert disk.calls > 0 and disk.on_loop == []
        await wait_for(lambda: len(leader.voter.controller.controller.committed_image.acls) == 21)
        tg.cancel_scope.cancel()


async def test_a_heartbeat_that_changes_nothing_is_answered_while_noop_records_wait_for_the_disk(tmp_path) -> None:
    """The disks of the leader and of one follower held (no majority can make a record durable; the other
    follower keeps the leader in office): NoOpRecords (metadata.max.idle.interval.ms) pile up uncommitted, and
    a caught-up, unfenced broker's heartbeat, which writes nothing, is answered at once (docs/reliability.md,
    *A slow disk*); before, it waited for the NoOpRecords to commit, i.e. for the disk."""
    import uuid

    from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
    from kraftwire.protocol.messages import broker_registration_request as brq
    from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest

    ports = free_ports(3)
    cid = "kw-test-cluster-0000001"
    nodes = []
    for i in (1, 2, 3):
        part = tmp_path / f"n{i}" / "__cluster_metadata-0"
        nodes.append(Server(node_config(i, ports), log=FileLog(part), store=FileQuorumStateStore(part / "quorum-state"),
                            cluster_id=cid, offset_store=MemoryOffsetStore()))
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)
        leader = await wait_for(lambda: next((n for n in nodes if n.voter.controller.controller.active), None))
        reg = await leader.voter.submit(brq.BrokerRegistrationRequest(
            broker_id=10, cluster_id=cid, incarnation_id=uuid.uuid4(), listeners=[brq.Listener("PLAINTEXT", "h", 9092, 0)],
            features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())],
            rack=None, log_dirs=[uuid.uuid4()]), 4)
        assert reg.error_code == 0, reg
        beat = BrokerHeartbeatRequest(broker_id=10, broker_epoch=reg.broker_epoch, current_metadata_offset=1 << 62)
        first = await leader.voter.submit(beat, 1)      # unfences it: answered once that record commits
        assert first.error_code == 0 and not first.is_fenced
        ctl = leader.voter.controller.controller
        # Every voter's own ControllerRegistration committed and seen first: a registration still pending
        # when the disk is held is a state change the heartbeat rightly waits for (only NoOps are skipped).
        await wait_for(lambda: all(n.voter.registrar is None or n.voter.registrar.current() for n in nodes)
                       and len(ctl.committed_image.controllers) == 3)
        follower = next(n for n in nodes if n is not leader)
        held = [_under(str(tmp_path / f"n{n.cfg.node_id}")) for n in (leader, follower)]
        disk = SlowDisk(0.0, only=lambda args: any(f(args) for f in held)).install()
        disk.gate = threading.Event()
        try:
            await wait_for(lambda: disk.in_flight >= 2 and ctl.next_offset - 1 > ctl.committed_offset)
            with anyio.fail_after(10):   # the gate holds for 60 s: before, it waited for the gate
                again = await leader.voter.submit(beat, 1)
            assert again.error_code == 0 and not again.is_fenced
            assert disk.in_flight >= 1 and ctl.next_offset - 1 > ctl.committed_offset, "answered while uncommitted"
        finally:
            disk.gate.set()
            disk.uninstall()
        tg.cancel_scope.cancel()


class _GatedMemoryStore(MemoryStateStore):
    """A Raft core's quorum-state store whose writes wait at a gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.written: list[ElectionState] = []

    def write(self, state: ElectionState) -> None:
        self.gate.wait(30)
        super().write(state)
        self.written.append(state)


async def test_a_vote_through_the_door_leaves_only_once_its_quorum_state_is_durable() -> None:
    """A Kafka Vote request through the node core's door (``RaftDriver.handle_api``): its answer is held behind
    the quorum-state write the Raft core asked for in the same event."""
    store = _GatedMemoryStore()
    raft = RaftCore(1, [1, 2, 3], RaftConfig(defer_flush=True, defer_state=True), MemoryLog(), store,
                    random.Random(1), "c", 1_000)
    plane = DoorPlane(ApiRegistry.controller(), "here", lambda: ({}, {}, -1))
    node = NodeCore(raft, door=ApiDoor({"CONTROLLER": plane}), raft_apis=RaftApis())
    driver = RaftDriver(node, peers=None, request_timeout_ms=1000, leader_endpoints=[],  # type: ignore[arg-type]
                        clock=lambda: 1_000)
    vote = m.VoteRequest(cluster_id="c", candidate_epoch=5, candidate_id=2, last_offset_epoch=0, last_offset=0,
                         voter_id=1)
    request = Request(RequestHeader(ApiKey.VOTE, 2, 1, "voter-2"), raft_wire.request_to_wire(vote, 2, []))
    ctx = RequestContext("CONTROLLER", "PLAINTEXT", "10.0.0.2", 5555, "User:ANONYMOUS")
    answers: list[Any] = []
    async with anyio.create_task_group() as tg:
        await tg.start(driver.run)

        async def ask() -> None:
            out = driver.handle_api(request, ctx)
            answers.append(out if out is None or isinstance(out, Reply) else await out)

        tg.start_soon(ask)
        await wait_for(lambda: driver._writing)
        await anyio.sleep(0.3)
        assert answers == [] and store.written == [], "the vote's answer did not leave before it was durable"
        store.gate.set()
        await wait_for(lambda: len(answers) == 1)
        assert store.written[-1].voted_id == 2 and answers[0].body.topics[0].partitions[0].vote_granted
        tg.cancel_scope.cancel()


def _both_quorums(tmp_path, ports: list[int]) -> list[Server]:
    """Three voters on files: the metadata quorum's log and the offsets quorum (``metadata.log.dir``)."""
    nodes = []
    for i in (1, 2, 3):
        part = tmp_path / f"n{i}" / "__cluster_metadata-0"
        cfg = node_config(i, ports, **{"metadata.log.dir": str(tmp_path / f"n{i}"), "group.initial.rebalance.delay.ms": "0"})
        nodes.append(Server(cfg, log=FileLog(part), store=FileQuorumStateStore(part / "quorum-state"),
                            cluster_id="kw-test-cluster-0000001"))
    return nodes


def _leading(nodes: list[Server], quorum: str) -> Server | None:
    """The node leading ``quorum`` ("metadata" or "offsets") with its epoch's start committed, if one does."""
    cores = [(n, n.core if quorum == "metadata" else n.voter.offsets.core) for n in nodes]
    return next((n for n, core in cores if core.epoch_start_committed), None)


def _core(node: Server, quorum: str) -> Any:
    return node.core if quorum == "metadata" else node.voter.offsets.core


@pytest.mark.parametrize("how", ["resign", "kill"])
async def test_elections_on_both_quorums_with_slow_disks_write_nothing_durable_on_the_event_loop(tmp_path, how) -> None:
    """Both quorums change leader (their leaders resign, or the node leading the metadata quorum dies and the
    offsets quorum's leader resigns if it is another) while every fsync and rename of the survivors takes
    30 ms: the candidates, the new leaders and any follower that truncates make their logs durable in the disk
    worker (docs/raft.md, *Where the disk is touched*), so no survivor's event loop makes a durable write."""
    ports = free_ports(3)
    nodes = _both_quorums(tmp_path, ports)
    scopes = {n.cfg.node_id: anyio.CancelScope() for n in nodes}

    async def run(node: Server, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        with scopes[node.cfg.node_id]:
            await node.run(task_status=task_status)

    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(run, node)
        before = {q: await wait_for(lambda q=q: _leading(nodes, q), 20) for q in ("metadata", "offsets")}
        epochs = {q: _core(before[q], q).epoch for q in before}
        gone = before["metadata"] if how == "kill" else None
        survivors = [n for n in nodes if n is not gone]
        under = [_under(str(tmp_path / f"n{n.cfg.node_id}")) for n in survivors]
        disk = SlowDisk(0.03, only=lambda args: any(f(args) for f in under)).install()
        try:
            if gone is not None:
                scopes[gone.cfg.node_id].cancel()   # the process dies: nothing flushed, nothing closed
            for q, leader in before.items():
                if leader is not gone:
                    driver = leader.driver if q == "metadata" else leader.voter.offsets.driver
                    driver.call(driver.node.resign)
            after = {q: await wait_for(lambda q=q: (n := _leading(survivors, q)) is not None
                                       and _core(n, q).epoch > epochs[q] and n, 30) for q in before}
            # every survivor follows the new leaders (a resigned leader truncates what it alone held, if anything)
            await wait_for(lambda: all(_core(n, q).leader_id == after[q].cfg.node_id and _core(n, q).epoch == _core(after[q], q).epoch
                                       and _core(n, q).hw is not None for n in survivors for q in after), 20)
        finally:
            disk.uninstall()
        assert disk.calls > 0, "the slow disk saw the elections' writes"
        assert disk.on_loop == [], f"a durable write ran on the event loop: {disk.on_loop[:3]}"
        tg.cancel_scope.cancel()


async def _describe_quorum(server: Server) -> Any:
    """DescribeQuorum through the server's door, as a client on its controller listener asks it."""
    body = DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                   partitions=[PartitionData(partition_index=0)])])
    request = Request(RequestHeader(ApiKey.DESCRIBE_QUORUM, 2, 1, "test"), body)
    ctx = RequestContext(server.cfg.controller_listener, "PLAINTEXT", "127.0.0.1", 5555, "User:ANONYMOUS")
    answer = server.server.handler(request, ctx)
    reply = answer if answer is None or type(answer) is Reply else await answer
    assert reply is not None
    return reply.body
