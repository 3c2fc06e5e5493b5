"""Persistence as an output: the active controller's log fsyncs run in a worker thread, never on the
event loop that serves every connection of the node (issue #13, item 3)."""

from __future__ import annotations

import os
import threading

import anyio
import pytest

from kraftwire.group import MemoryOffsetStore
from kraftwire.node.server import Server
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.storage.log import FileLog
from kraftwire.storage.quorum_state import FileQuorumStateStore

from .harness import free_ports, node_config, wait_for

pytestmark = pytest.mark.anyio
WRITES = 150


class FsyncRecorder:
    """Wraps os.fsync: which thread synced which file."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.loop_thread: threading.Thread | None = None
        self._real = os.fsync

    def __call__(self, fd: int) -> None:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = "?"
        self.calls.append((path, threading.current_thread() is self.loop_thread))
        self._real(fd)


async def test_commit_heavy_load_never_fsyncs_the_log_on_the_event_loop(tmp_path, monkeypatch) -> None:
    ports = free_ports(1)
    part = tmp_path / "__cluster_metadata-0"
    node = Server(node_config(1, ports, **{"metadata.max.idle.interval.ms": "0"}),
                log=FileLog(part), store=FileQuorumStateStore(part / "quorum-state"),
                cluster_id="kw-test-cluster-0000001", offset_store=MemoryOffsetStore())
    recorder = FsyncRecorder()
    monkeypatch.setattr(os, "fsync", recorder)
    lags: list[float] = []

    async def probe() -> None:   # the loop-lag probe: how late a 1 ms sleep wakes up
        while True:
            start = anyio.current_time()
            await anyio.sleep(0.001)
            lags.append(anyio.current_time() - start - 0.001)

    async with anyio.create_task_group() as tg:
        recorder.loop_thread = threading.current_thread()
        await tg.start(node.run)
        await wait_for(lambda: node.voter.controller.controller.active)
        recorder.calls.clear()
        tg.start_soon(probe)

        async def write(i: int) -> None:
            req = CreateAclsRequest(creations=[AclCreation(2, f"topic-{i}", 3, f"User:u{i}", "*", 3, 3)])
            resp = await node.voter.submit(req, 3)
            assert resp.results[0].error_code == 0

        async with anyio.create_task_group() as writers:   # 4 concurrent writers, every write acknowledged
            for w in range(4):
                async def writer(w: int = w) -> None:
                    for i in range(w, WRITES, 4):
                        await write(i)
                writers.start_soon(writer)
        tg.cancel_scope.cancel()

    segment_syncs = [(p, on_loop) for p, on_loop in recorder.calls if p.endswith(".log")]
    assert segment_syncs, "the writes were made durable"
    assert not [p for p, on_loop in segment_syncs if on_loop], "a log fsync ran on the event loop"
    acls = node.voter.controller.controller.committed_image.acls
    assert len(acls) == WRITES, "every acknowledged write is committed"
    print(f"loop lag under {WRITES} commits: max {max(lags) * 1000:.1f} ms over {len(lags)} probes; "
          f"{len(segment_syncs)} segment fsyncs, all in worker threads")


async def test_followers_fsync_replicated_batches_in_worker_threads_too(tmp_path, monkeypatch) -> None:
    """A follower's fsync before it announces its offset is a PersistLog as well: under commit-heavy
    load no voter of a 3-node quorum fsyncs a log segment on the (shared) event loop."""
    ports = free_ports(3)
    nodes = []
    for i in (1, 2, 3):
        part = tmp_path / f"n{i}" / "__cluster_metadata-0"
        nodes.append(Server(node_config(i, ports), log=FileLog(part), store=FileQuorumStateStore(part / "quorum-state"),
                          cluster_id="kw-test-cluster-0000001", offset_store=MemoryOffsetStore()))
    recorder = FsyncRecorder()
    monkeypatch.setattr(os, "fsync", recorder)
    async with anyio.create_task_group() as tg:
        recorder.loop_thread = threading.current_thread()
        for node in nodes:
            await tg.start(node.run)
        leader = await wait_for(lambda: next((n for n in nodes if n.voter.controller.controller.active), None))
        followers = [n for n in nodes if n is not leader]
        recorder.calls.clear()

        async def writer(w: int) -> None:
            for i in range(w, WRITES, 4):
                req = CreateAclsRequest(creations=[AclCreation(2, f"topic-{i}", 3, f"User:u{i}", "*", 3, 3)])
                resp = await leader.voter.submit(req, 3)
                assert resp.results[0].error_code == 0

        async with anyio.create_task_group() as writers:
            for w in range(4):
                writers.start_soon(writer, w)
        end = leader.log.end_offset
        await wait_for(lambda: all(f.log.flushed_offset >= end and (f.core.hw or 0) >= end - 1
                                   for f in followers), timeout=30)
        tg.cancel_scope.cancel()

    follower_dirs = [str(tmp_path / f"n{f.cfg.node_id}") for f in followers]
    synced = [(p, on_loop) for p, on_loop in recorder.calls
              if p.endswith(".log") and any(p.startswith(d) for d in follower_dirs)]
    assert synced, "the followers made the replicated batches durable"
    assert not [p for p, on_loop in synced if on_loop], "a follower's log fsync ran on the event loop"
