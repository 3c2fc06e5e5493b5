"""The broker role of a node core: its replayed image, its lifecycle with the active controller, its snapshots.

A broker replica of ``__cluster_metadata`` (an observer, or the voter's own replica on a combined
node) replays committed batches into its image with the production ``BrokerMetadataListener``
(a Raft listener). This role runs, beside it and on the node core's clock:

* the ``BrokerLifecycle`` machine (registration, heartbeats, lease, controlled shutdown). What it
  wants sent to the active controller comes out of the node core as ``SendController``; the shell
  picks the voter, sends it and reports the answer (``handle_controller_response``) or the failure
  (``handle_controller_failed``). The metadata offset it reports is what the listener replayed;
* optionally (a broker-only node; on a combined node the voter's controller does it) snapshots of
  the replayed image under the replica's ``Snapshotter`` policy, through the node core's
  ``TakeSnapshot``.

Sans-I/O: no clock, socket or thread; transitions are logged, as Kafka's BrokerLifecycleManager does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kraftwire.broker.lifecycle import BrokerLifecycle, BrokerState, LifecycleConfig
from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.core.snapshots import SnapshotJob, snapshot_due
from kraftwire.metadata.snapshot import Snapshotter

log = logging.getLogger(__name__)

#: send(kind, request) -> request id: a request for the active controller (the node core's output)
SendToController = Callable[[str, Any], int]


class BrokerLifecycleRole:
    """A broker's lifecycle machine and image, fed by the node core; see the module docstring."""

    def __init__(self, config: LifecycleConfig, metadata: BrokerMetadataListener | None = None, *,
                 snapshotter: Snapshotter | None = None) -> None:
        self.machine = BrokerLifecycle(config)
        self.metadata = metadata if metadata is not None else BrokerMetadataListener()
        self.snapshotter = snapshotter
        self.core: Any = None
        self.inflight: int | None = None         # the request id of the machine's request in flight
        self.inflight_kind: str | None = None
        self._clock: Callable[[], int] = _unbound_clock
        self._send: SendToController = _unbound_send
        if snapshotter is not None:
            self.metadata.on_commit.append(lambda batches: snapshotter.committed(batches, self._clock()))
            self.metadata.on_snapshot.append(lambda end, epoch: snapshotter.loaded(end, epoch))

    def attach(self, core: Any, *, clock: Callable[[], int], send: SendToController) -> None:
        self.core = core
        self._clock = clock
        self._send = send

    # -- views ------------------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return self.machine.config.node_id

    @property
    def state(self) -> BrokerState:
        return self.machine.state

    @property
    def serving(self) -> bool:
        return self.machine.serving

    @property
    def fatal(self) -> str | None:
        """Why this broker cannot go on (its metadata cannot be applied, or the lifecycle gave up)."""
        if self.metadata.fatal is not None:
            return f"cannot apply committed metadata: {self.metadata.fatal}"
        return self.machine.fatal

    def next_deadline(self) -> int | None:
        times = [self.machine.next_deadline()]   # the lease runs out even while a request is in flight
        if self.snapshotter is not None:
            times.append(self.snapshotter.next_deadline())
        due = [t for t in times if t is not None]
        return min(due) if due else None

    # -- events (called by the node core) ---------------------------------------------------------
    def poll(self, now: int) -> None:
        """Let the machine check its lease and send what is due (it keeps one request in flight at most)."""
        send = self.machine.poll(now, self.metadata.applied_offset)
        if send is not None:
            self.inflight_kind = send.kind
            self.inflight = self._send(send.kind, send.request)
        self._log_events()

    def begin_shutdown(self, now: int) -> None:
        """Controlled shutdown: WantShutDown heartbeats until the controller lets the broker go."""
        self.machine.begin_shutdown(now)
        self.poll(now)

    def handle_response(self, now: int, request_id: int, resp: Any) -> bool:
        """The active controller's answer to request ``request_id``; False if it is not this role's."""
        if request_id != self.inflight:
            return False
        kind, self.inflight, self.inflight_kind = self.inflight_kind, None, None
        if kind == "register":
            self.machine.on_registration(now, resp)
        else:
            self.machine.on_heartbeat(now, resp)
        self.poll(now)
        return True

    def handle_failure(self, now: int, request_id: int) -> bool:
        """Request ``request_id`` got no answer (connection failure, timeout, garbage)."""
        if request_id != self.inflight:
            return False
        self.inflight = self.inflight_kind = None
        self.machine.on_failure(now)
        self.poll(now)
        return True

    def stop(self) -> None:
        """The node stops: an answer still in flight will not be waited for."""
        self.inflight = self.inflight_kind = None

    def snapshot_due(self) -> SnapshotJob | None:
        """A snapshot of the replayed image, when the policy says so (None without a snapshotter)."""
        if self.snapshotter is None or self.metadata.fatal is not None or self.core is None:
            return None
        return snapshot_due(self.snapshotter, self.core, self.metadata.loader, self._clock())

    # -- internals --------------------------------------------------------------------------------
    def _log_events(self) -> None:
        m = self.machine
        for event in m.drain_events():
            if m.fatal is not None and m.state == BrokerState.SHUTDOWN:
                log.error("broker %d: %s", m.config.node_id, event)
            else:
                log.info("broker %d: %s", m.config.node_id, event)


def _unbound_clock() -> int:
    raise RuntimeError("the broker role is not attached to a node core")


def _unbound_send(kind: str, request: Any) -> int:
    raise RuntimeError("the broker role is not attached to a node core")
