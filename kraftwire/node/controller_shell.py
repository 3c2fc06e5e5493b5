"""Connects the sans-I/O QuorumController to the Raft core inside a node.

* It is the core's listener: committed batches are decoded and replayed into the controller on
  every voter (standbys keep an up-to-date image); leadership changes deactivate it.
* It activates the controller only once this node leads and the high watermark has passed the
  epoch's LeaderChange record, i.e. everything before the epoch is replayed.
* Controller API requests are handled on the active controller; their records are appended as one
  batch and the response is released when the records commit (NOT_CONTROLLER if leadership is lost
  first). ``tick`` work (lease expiry, NoOpRecords) runs from a timer task.
* Snapshots (KIP-630), on every voter like Kafka: when the policy says so, the committed image is
  framed off the event loop (the image is immutable) and stored through the Raft core, then the log
  below it is cleaned per the retention settings. A snapshot handed over by Raft (at startup over
  a cleaned log, or installed from the leader) replaces the controller's state.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.controller import QuorumController
from kraftwire.controller.responses import error_response
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter, image_from_snapshot
from kraftwire.node.snapshots import snapshot_step
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.metadata import MetadataRecord, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft.core import NotLeaderError

log = logging.getLogger(__name__)


class _Waiter:
    __slots__ = ("offset", "event", "ok")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.event = anyio.Event()
        self.ok = False


def snapshotter_for(cfg: NodeConfig) -> Snapshotter:
    """Snapshot and retention policy from Kafka's metadata.log.* / metadata.max.retention.* keys."""
    return Snapshotter(
        SnapshotPolicy(max_bytes=cfg["metadata.log.max.record.bytes.between.snapshots"],
                       max_interval_ms=cfg["metadata.log.max.snapshot.interval.ms"]),
        RetentionPolicy(max_bytes=cfg["metadata.max.retention.bytes"], max_ms=cfg["metadata.max.retention.ms"]))


class ControllerShell:
    """RaftListener + async request entry point for the node's QuorumController."""

    def __init__(self, node_id: int, controller: QuorumController, bootstrap: list[MetadataRecord],
                 snapshotter: Snapshotter | None = None) -> None:
        self.node_id = node_id
        self.controller = controller
        self.bootstrap = bootstrap
        self.snapshotter = snapshotter
        self.snapshots_taken = 0
        self.snapshots_loaded = 0
        self.core: Any = None
        self.driver: Any = None
        self._waiters: list[_Waiter] = []
        self._wake = anyio.Event()
        self.metrics: Any = None
        self.fatal: BaseException | None = None
        self.fatal_event = anyio.Event()

    def attach(self, core: Any, driver: Any) -> None:
        self.core = core
        self.driver = driver
        driver.on_change.append(self.maybe_activate)

    # -- RaftListener ---------------------------------------------------------------------------
    def handle_commit(self, batches: list[RecordBatch]) -> None:
        if self.fatal is not None:
            return
        ctl = self.controller
        try:
            ctl.replay_batches(batches)
        except Exception as e:  # a committed record we cannot apply: this replica must stop
            log.critical("cannot apply committed metadata record: %s; stopping", e)
            self.fatal = e
            self.fatal_event.set()
            return
        last = batches[-1].last_offset
        ctl.handle_commit(last)
        if self.metrics is not None:
            self.metrics.committed(last)
        self._release(last)
        snap = self.snapshotter
        if snap is not None and self.driver is not None:
            now = self.driver.clock()
            snap.committed(batches, now)
            if snap.due(now, None) is not None:
                self._wake.set()

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        """Raft hands over a snapshot: it replaces the controller's state (commits resume after it)."""
        if self.fatal is not None:
            return
        if self.controller.active:
            self._step_down("the state is being replaced by a snapshot")
        try:
            image = image_from_snapshot(batches)
            self.controller.load_snapshot(image, end_offset)
        except Exception as e:  # a snapshot we cannot apply: this replica must stop
            log.critical("cannot load the metadata snapshot ending at offset %d: %s; stopping", end_offset, e)
            self.fatal = e
            self.fatal_event.set()
            return
        self.snapshots_loaded += 1
        log.info("metadata image loaded from the snapshot ending at offset %d", end_offset)
        if self.snapshotter is not None:
            self.snapshotter.loaded(end_offset, batches[0].leader_epoch if batches else 0)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        if self.metrics is not None:
            self.metrics.leader_changed(leader_id)
        if self.controller.active and (leader_id != self.node_id or epoch != self.controller.epoch):
            self._step_down(f"leader is now {leader_id} in epoch {epoch}")

    # -- activation -----------------------------------------------------------------------------
    def maybe_activate(self) -> None:
        core = self.core
        ctl = self.controller
        if core is None:
            return
        if ctl.active and (not core.is_leader or core.epoch != ctl.epoch):
            self._step_down("the raft leader resigned")  # e.g. check-quorum: still "leader" of its epoch
            return
        if ctl.active or not core.is_leader:
            return
        state = core.state
        if core.hw is None or core.hw <= state.epoch_start_offset:
            return
        now = self.driver.clock()
        boot = ctl.activate(core.epoch, self._next_offset(), now, self.bootstrap)
        log.info("controller activated in epoch %d at offset %d", core.epoch, ctl.next_offset)
        if boot:
            self._append(boot)
        self._wake.set()

    def _next_offset(self) -> int:
        state = self.core.state
        return self.core.log.end_offset + len(getattr(state, "pending", ()))

    def _append(self, records: list[MetadataRecord]) -> bool:
        """Hand records to raft; on a lost leadership the controller steps down and False is returned."""
        try:
            self.driver.append([Record(value=encode_record(r.message, r.version)) for r in records])
            return True
        except NotLeaderError:
            self._step_down("raft leadership lost before the append")
            return False

    def _step_down(self, why: str) -> None:
        if self.controller.active:
            log.info("controller deactivated: %s", why)
            self.controller.deactivate()
        self._fail_all()

    # -- requests -------------------------------------------------------------------------------
    async def handle(self, body: Any, version: int) -> Any:
        """Run a controller API request; returns the response body to send."""
        ctl = self.controller
        self.maybe_activate()
        if ctl.active:
            ctl.set_next_offset(self._next_offset())
        result = ctl.handle(self.driver.clock(), body, version)
        if result.records:
            if not self._append(result.records):
                return error_response(body, Errors.NOT_CONTROLLER, "leadership lost", version)
            self._wake.set()
        if result.commit_offset < 0:
            return result.response
        waiter = _Waiter(result.commit_offset)
        self._waiters.append(waiter)
        await waiter.event.wait()
        if waiter.ok:
            return result.response
        return error_response(body, Errors.NOT_CONTROLLER, "leadership changed before the write committed",
                              version)

    def _release(self, committed: int) -> None:
        keep = []
        for w in self._waiters:
            if w.offset <= committed:
                w.ok = True
                w.event.set()
            else:
                keep.append(w)
        self._waiters = keep

    def _fail_all(self) -> None:
        for w in self._waiters:
            w.event.set()
        self._waiters = []

    async def run_timer(self) -> None:
        """Drive the controller's periodic work (lease expiry, NoOpRecords) while active."""
        while True:
            ctl = self.controller
            self.maybe_activate()
            if ctl.active:
                ctl.set_next_offset(self._next_offset())
                records = ctl.tick(self.driver.clock())
                if records:
                    self._append(records)
            await self._maybe_snapshot()
            deadlines = [d for d in (ctl.next_deadline(), self.snapshotter and self.snapshotter.next_deadline())
                         if d is not None]
            deadline = min(deadlines) if deadlines else None
            delay = 1.0 if deadline is None else max(0.01, (deadline - self.driver.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()

    # -- snapshots ------------------------------------------------------------------------------
    async def _maybe_snapshot(self) -> None:
        """Take a due snapshot of the committed image, then clean the log as retention allows."""
        snap, core = self.snapshotter, self.core
        if snap is None or core is None or self.fatal is not None:
            return
        if await snapshot_step(snap, core, self.controller, self.driver.clock):
            self.snapshots_taken += 1
