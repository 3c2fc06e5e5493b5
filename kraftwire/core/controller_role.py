"""The controller role of a voter: the one wiring between its Raft core and its QuorumController.

The server and the simulator both run this class (the simulator's invariants therefore check the
wiring that runs in production). It is sans-I/O: time comes from an injected clock, records go
to the Raft core through an injected ``append``, answers leave through callbacks.

* It is the Raft core's listener: committed batches are replayed on every voter (standbys keep an
  up-to-date image); leadership changes deactivate the controller.
* It activates the controller only once this node leads and the high watermark has passed the
  epoch's LeaderChange record, i.e. everything before the epoch is replayed (``core/leadership.py``,
  shared with the group role: when to start and stop, answers held until their records commit).
* ``submit`` runs a controller request; its records are appended as one batch and the answer is
  released when they commit (NOT_CONTROLLER if leadership is lost first).
* ``tick`` runs periodic work (lease expiry, NoOpRecords); ``snapshot_due`` says when the committed
  image should be snapshotted (see ``kraftwire.core.snapshots``).
* A committed record or snapshot it cannot apply makes the role ``fatal``: the process must stop.
  A metadata.version this kraftwire lacks is not that: the role ``parked`` stops replaying there and
  never activates, and another feature level it lacks (``unsupported``) only keeps it from
  activating; either is logged once, naming the level and the release needing it
  (``kraftwire.metadata.support``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kraftwire.controller import QuorumController
from kraftwire.core.leadership import LeaderTerm
from kraftwire.core.snapshots import SnapshotJob, snapshot_due
from kraftwire.metadata.image import MetadataImage
from kraftwire.metadata.snapshot import Snapshotter, image_from_snapshot
from kraftwire.metadata.support import park_reason
from kraftwire.protocol.api import API_NAMES
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.metadata import MetadataRecord, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import NotLeaderError
from kraftwire.storage.audit import AuditEntry, Origin

log = logging.getLogger(__name__)

Done = Callable[[Any], None]


class ControllerObserver:
    """What the role reports as it goes; the default ignores everything. The simulator's invariant
    checker and the server's metrics are observers."""

    def committed(self, batches: list[RecordBatch]) -> None:
        """Committed batches, before they are replayed."""

    def image(self, image: MetadataImage, which: str) -> None:
        """An image the role now holds: "committed", "latest" (active, with its own uncommitted
        records) or "snapshot" (loaded)."""

    def snapshot_loaded(self, end_offset: int, epoch: int, image: MetadataImage) -> None:
        """A snapshot replaced the state."""

    def leader_changed(self, leader_id: int | None) -> None:
        """Raft reported a new leader (or none)."""

    def appended(self, offsets: list[int]) -> None:
        """Records were handed to Raft at these offsets (committed once the high watermark passes)."""

    def interrupted(self, request: Any) -> None:
        """An accepted request lost its answer to a leadership change before its records committed."""


class _Waiter:
    __slots__ = ("request", "version", "response", "done")

    def __init__(self, request: Any, version: int, response: Any, done: Done) -> None:
        self.request = request
        self.version = version
        self.response = response
        self.done = done


class ControllerRole:
    """RaftListener, activation, commit waiters and periodic work of one voter's controller."""

    def __init__(self, node_id: int, controller: QuorumController, bootstrap: list[MetadataRecord], *,
                 snapshotter: Snapshotter | None = None, observer: ControllerObserver | None = None) -> None:
        self.node_id = node_id
        self.controller = controller
        self.bootstrap = bootstrap
        self.clock: Callable[[], int] = _unbound_clock
        self._append_records: Callable[[list[Record]], Any] = _unbound_append
        self.snapshotter = snapshotter
        self.observer = observer or ControllerObserver()
        self.core: Any = None
        self.fatal: BaseException | None = None
        self.on_fatal: list[Callable[[BaseException], None]] = []
        self.on_wake: list[Callable[[], None]] = []    # new deadlines or due work: the shell re-polls
        self.snapshots_loaded = 0
        #: audit entries of the writes made since the node core last collected them (an output: the shell
        #: writes them beside the log, off the event loop)
        self.audits: list[AuditEntry] = []
        self._last_offsets: list[int] = []
        #: the epoch the controller is active in and the answers waiting for their records to commit
        self.term: LeaderTerm[_Waiter] = LeaderTerm()
        #: set when the log finalized a metadata.version this node lacks: replay stops, the node stays up
        self.parked: str | None = None
        #: set while another finalized feature level is one this controller lacks: it will not activate
        self.unsupported: str | None = None

    def attach(self, core: Any, *, clock: Callable[[], int], append: Callable[[list[Record]], Any]) -> None:
        """Bind the role to its Raft core, the time of the event being handled and the core's append
        (``kraftwire.core.node_core.NodeCore`` does this)."""
        self.core = core
        self.clock = clock
        self._append_records = append

    # -- RaftListener ---------------------------------------------------------------------------
    def handle_commit(self, batches: list[RecordBatch]) -> None:
        if self.fatal is not None or self.parked is not None or not batches:
            return
        ctl = self.controller
        self.observer.committed(batches)
        try:
            ctl.replay_batches(batches)
        except Exception as e:  # noqa: BLE001 - a committed record we cannot apply: this replica must stop
            if not self._park(park_reason(ctl.committed_features, batches)):
                self._fail(f"cannot apply committed metadata record: {e}", e)
            return
        self._check_features()
        if self.parked is not None:
            return
        last = batches[-1].last_offset
        ctl.handle_commit(last)
        self.observer.image(ctl.committed_image, "committed")
        self._release(last)
        snap = self.snapshotter
        if snap is not None:
            now = self.clock()
            snap.committed(batches, now)
            if snap.due(now, None) is not None:
                self._wake()

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        """Raft hands over a snapshot: it replaces the controller's state (commits resume after it)."""
        if self.fatal is not None or self.parked is not None:
            return
        if self.term.active:
            self._step_down("the state is being replaced by a snapshot")
        try:
            image = image_from_snapshot(batches)
            self.controller.load_snapshot(image, end_offset)
        except Exception as e:  # noqa: BLE001 - a snapshot we cannot apply: this replica must stop
            if self._park(park_reason({}, batches)):
                return
            self._fail(f"cannot load the metadata snapshot ending at offset {end_offset}: {e}", e)
            return
        epoch = batches[0].leader_epoch if batches else 0
        self.snapshots_loaded += 1
        log.info("metadata image loaded from the snapshot ending at offset %d", end_offset)
        self._check_features()
        self.observer.snapshot_loaded(end_offset, epoch, image)
        self.observer.image(image, "snapshot")
        if self.snapshotter is not None:
            self.snapshotter.loaded(end_offset, epoch)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.observer.leader_changed(leader_id)
        if self.term.superseded(self.node_id, leader_id, epoch):
            self._step_down(f"leader is now {leader_id} in epoch {epoch}")

    # -- activation -----------------------------------------------------------------------------
    def maybe_activate(self) -> None:
        """Activate once this node leads and its epoch's LeaderChange committed; step down when the
        Raft core no longer leads the controller's epoch (e.g. check-quorum resigned it)."""
        core, ctl, term = self.core, self.controller, self.term
        if core is None or self.fatal is not None or self.parked is not None:
            return
        if term.ended(core):
            self._step_down("the raft leader resigned")
            return
        if self.unsupported is not None or not term.due(core):
            return
        boot = ctl.activate(core.epoch, self.next_offset(), self.clock(), self.bootstrap)
        term.begin(core.epoch)
        log.info("controller activated in epoch %d at offset %d", core.epoch, ctl.next_offset)
        if boot:
            self._append(boot)
        self._wake()

    def next_offset(self) -> int:
        """The offset the next appended record gets (pending records included)."""
        core = self.core
        end: int = core.log.end_offset
        return end + len(getattr(core.state, "pending", ()))

    def _append(self, records: list[MetadataRecord]) -> bool:
        """Hand records to Raft; on a lost leadership the controller steps down and False is returned."""
        try:
            offsets = self._append_records([Record(value=encode_record(r.message, r.version)) for r in records])
        except NotLeaderError:
            self._step_down("raft leadership lost before the append")
            return False
        self._last_offsets = list(offsets or [])
        self.observer.appended(offsets or [])
        self.observer.image(self.controller.image, "latest")
        return True

    def _step_down(self, why: str) -> None:
        if self.controller.active:
            log.info("controller deactivated: %s", why)
            self.controller.deactivate()
        for w in self.term.end():
            self.observer.interrupted(w.request)
            w.done(_not_controller(w.request, w.version, "leadership changed before the write committed"))

    def stop(self) -> None:
        """The node stops: every waiting request is answered NOT_CONTROLLER."""
        self._step_down("the node is stopping")

    # -- requests -------------------------------------------------------------------------------
    def submit(self, request: Any, version: int, done: Done, origin: Origin | None = None) -> None:
        """Run a controller API request; ``done(response)`` once its records commit (or at once). A
        request that writes, with its ``origin`` known, leaves an entry in ``audits``."""
        ctl = self.controller
        self.maybe_activate()
        if ctl.active:
            ctl.set_next_offset(self.next_offset())
        result = ctl.handle(self.clock(), request, version)
        if result.records:
            if not self._append(result.records):
                done(_not_controller(request, version, "leadership lost"))
                return
            if origin is not None and self._last_offsets:
                self.audits.append(self._audit_entry(request, origin))
            self._wake()
        if result.commit_offset < 0:
            done(result.response)
            return
        self.term.hold(result.commit_offset, _Waiter(request, version, result.response, done))

    def _audit_entry(self, request: Any, origin: Origin) -> AuditEntry:
        key = getattr(type(request), "API_KEY", -1)
        return AuditEntry(first_offset=self._last_offsets[0], last_offset=self._last_offsets[-1],
                          epoch=self.controller.epoch, time_ms=self.clock(), node_id=self.node_id, api_key=key,
                          api=API_NAMES.get(key, type(request).__name__), principal=origin.principal,
                          client_id=origin.client_id, client_host=origin.client_host, listener=origin.listener,
                          forwarded=origin.forwarded)

    def _release(self, committed: int) -> None:
        for w in self.term.release(committed + 1):
            w.done(w.response)

    # -- periodic work --------------------------------------------------------------------------
    def tick(self) -> None:
        """Lease expiry and NoOpRecords on the active controller."""
        ctl = self.controller
        self.maybe_activate()
        if ctl.active:
            ctl.set_next_offset(self.next_offset())
            records = ctl.tick(self.clock())
            if records:
                self._append(records)

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (self.controller.next_deadline(),
                                 self.snapshotter.next_deadline() if self.snapshotter else None) if d is not None]
        return min(deadlines) if deadlines else None

    def snapshot_due(self) -> SnapshotJob | None:
        """The snapshot of the committed image to take now, if any."""
        if self.snapshotter is None or self.core is None or self.fatal is not None:
            return None
        return snapshot_due(self.snapshotter, self.core, self.controller, self.clock())

    # -- internals ------------------------------------------------------------------------------
    def _check_features(self) -> None:
        """Park on an unsupported metadata.version; refuse activation on another unsupported feature."""
        ctl = self.controller
        if self._park(park_reason(ctl.committed_features)):
            return
        reason = ctl.unsupported()
        if reason != self.unsupported:
            self.unsupported = reason
            if reason is not None:
                log.error("this controller will not become active: %s", reason)
                self._step_down("unsupported feature level")

    def _park(self, reason: str | None) -> bool:
        """Stop following the log (once) because of ``reason``; the node keeps running. True if parked."""
        if reason is None:
            return False
        if self.parked is None:
            self.parked = reason
            log.error("metadata replay stopped, this controller will not become active: %s", reason)
            self._step_down("unsupported metadata")
        return True

    def _fail(self, why: str, e: BaseException) -> None:
        log.critical("%s; stopping", why)
        self.fatal = e
        for fn in self.on_fatal:
            fn(e)

    def _wake(self) -> None:
        for fn in self.on_wake:
            fn()


def _unbound_clock() -> int:
    raise RuntimeError("ControllerRole used before attach()")


def _unbound_append(records: list[Record]) -> Any:
    raise NotLeaderError("the controller role is not attached to a Raft core")


def _not_controller(request: Any, version: int, message: str) -> Any:
    return request.error_response(version, Errors.NOT_CONTROLLER, message)
