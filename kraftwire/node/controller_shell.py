"""The anyio side of a voter's controller role (``kraftwire.core.controller_role``).

The role holds all the logic (replay, activation, commit waiters, step-down, snapshots due); this
shell only gives it a clock and the Raft driver's append, turns its answer callbacks into awaitable
results, runs its periodic work from a timer task and frames due snapshots in a worker thread.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.controller import QuorumController
from kraftwire.core.controller_role import ControllerObserver, ControllerRole
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter
from kraftwire.node.raft_driver import wall_ms
from kraftwire.node.snapshots import snapshot_step
from kraftwire.protocol.metadata import MetadataRecord
from kraftwire.protocol.records import RecordBatch

log = logging.getLogger(__name__)


def snapshotter_for(cfg: NodeConfig) -> Snapshotter:
    """Snapshot and retention policy from Kafka's metadata.log.* / metadata.max.retention.* keys."""
    return Snapshotter(
        SnapshotPolicy(max_bytes=cfg["metadata.log.max.record.bytes.between.snapshots"],
                       max_interval_ms=cfg["metadata.log.max.snapshot.interval.ms"]),
        RetentionPolicy(max_bytes=cfg["metadata.max.retention.bytes"], max_ms=cfg["metadata.max.retention.ms"]))


class _Metrics(ControllerObserver):
    def __init__(self, shell: ControllerShell) -> None:
        self.shell = shell

    def committed(self, batches: list[RecordBatch]) -> None:
        if self.shell.metrics is not None:
            self.shell.metrics.committed(batches[-1].last_offset)

    def leader_changed(self, leader_id: int | None) -> None:
        if self.shell.metrics is not None:
            self.shell.metrics.leader_changed(leader_id)


class ControllerShell:
    """Async entry points of the node's controller role; ``role`` is the Raft core's listener."""

    def __init__(self, node_id: int, controller: QuorumController, bootstrap: list[MetadataRecord],
                 snapshotter: Snapshotter | None = None) -> None:
        self.driver: Any = None
        self.metrics: Any = None
        self.role = ControllerRole(node_id, controller, bootstrap, clock=self._clock, append=self._append,
                                   snapshotter=snapshotter, observer=_Metrics(self))
        self.role.on_wake.append(self._poke)
        self.role.on_fatal.append(lambda e: self.fatal_event.set())
        self.fatal_event = anyio.Event()
        self._wake = anyio.Event()
        self.snapshots_taken = 0

    @property
    def controller(self) -> QuorumController:
        return self.role.controller

    @property
    def fatal(self) -> BaseException | None:
        return self.role.fatal

    @property
    def snapshots_loaded(self) -> int:
        return self.role.snapshots_loaded

    def attach(self, core: Any, driver: Any) -> None:
        self.driver = driver
        self.role.attach(core)
        driver.on_change.append(self.role.maybe_activate)

    def maybe_activate(self) -> None:
        self.role.maybe_activate()

    def _clock(self) -> int:
        return self.driver.clock() if self.driver is not None else wall_ms()

    def _append(self, records: list[Any]) -> Any:
        return self.driver.append(records)

    def _poke(self) -> None:
        self._wake.set()

    async def handle(self, body: Any, version: int) -> Any:
        """Run a controller API request; returns the response body once it may be sent. An answer given
        at once (a heartbeat that writes nothing) returns without a trip through the event loop."""
        box: list[Any] = []
        done: list[anyio.Event] = []

        def answer(response: Any) -> None:
            box.append(response)
            if done:
                done[0].set()

        started = time.monotonic()
        self.role.submit(body, version, answer)
        if self.metrics is not None:   # the controller's own work, commit wait excluded (Kafka's processing time)
            self.metrics.controller_processed((time.monotonic() - started) * 1000)
        if not box:
            done.append(anyio.Event())
            await done[0].wait()
        return box[0]

    async def run_timer(self) -> None:
        """Drive the role's periodic work (lease expiry, NoOpRecords, snapshots)."""
        while True:
            self.role.tick()
            await self._maybe_snapshot()
            deadline = self.role.next_deadline()
            delay = 1.0 if deadline is None else max(0.01, (deadline - self._clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()

    async def _maybe_snapshot(self) -> None:
        snap, core = self.role.snapshotter, self.role.core
        if snap is None or core is None or self.role.fatal is not None:
            return
        if await snapshot_step(snap, core, self.role.controller, self._clock):
            self.snapshots_taken += 1
