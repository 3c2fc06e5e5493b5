"""The node core: one replica's Raft core and the roles it runs (controller, groups) as one sans-I/O object.

The server and the simulator drive this same class, so the simulator's invariants check the wiring
that production runs. It is fed ``(now, event)`` calls and returns outputs, in the manner of
etcd's Ready/Advance and Kafka's KafkaRaftClient poll loop:

* Raft's own outputs pass through unchanged: ``SendRequest`` (to a peer), ``PersistLog`` (fsync the
  log, then report ``handle_persisted``), ``PersistState`` (write quorum-state durably before anything emitted after it leaves the node),
  ``ReadSnapshotChunk`` (read a FetchSnapshot's bytes from the snapshot, then report
  ``handle_snapshot_chunk``, which gives the answer out);
  its ``SendResponse`` to a request of the door leaves as the door's ``Respond`` (below);
* ``Respond(request_id, body)``: the answer to a controller request handed in with ``submit`` (or a
  group request with ``submit_group``), emitted once the records it wrote are committed (or at once
  when it wrote none);
* ``TakeSnapshot(job)``: frame the committed image, or the offsets state (pure, slow: the server does
  it in a worker thread), then hand the batches back with ``snapshot_framed``. One is in flight at a time;
* ``SendController(request_id, kind, request)``: the broker role's registration or heartbeat for the
  active controller; the shell picks the voter and reports ``handle_controller_response`` or
  ``handle_controller_failed``;
* ``Relay(request_id, kind, request, context)``: a Kafka request that entered the one door,
  ``handle_api`` (``core/api_door.py``), for the shell to carry on (forward to the active controller,
  or its own handler); it reports ``handle_relayed`` or ``handle_relay_failed``. The door's answers
  are ``Respond(request_id, reply)``; a consumer Fetch is ``Read`` (the shell reads, zero-copy, and
  reports ``handle_read``) and, while there is not enough to answer, ``Park(request_id, until_ms)``.
  Raft's own APIs entering the door are handed to the Raft core (``core/raft_apis.py``) and their
  ``SendResponse`` comes out as the door's ``Respond``: ``handle_api`` is the one way a request comes
  in (Raft's from peers, the voter changes, clients'), on a server and in every simulation. The answers
  to this node's own outbound Raft requests come back with ``handle_response``, their failures with
  ``handle_request_failed``.

After every event the core activates the controller when due (this node leads and the epoch's
LeaderChange committed), and a batch appended during the event is written at once rather than at
the next tick. ``next_deadline`` is the latest time ``tick`` must next be called. The metadata
quorum's node core runs the controller role on a voter (``core/controller_role.py``), the broker
role on a broker (``core/broker_lifecycle_role.py``; both on a combined node); the voters' offsets
quorum's runs the group role (``core/group_role.py``).
"""

from __future__ import annotations

from typing import Any

from kraftwire.core.api_door import ApiDoor, Park, Read, Relay
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.controller_role import ControllerRole
from kraftwire.core.group_role import GroupRole
from kraftwire.core.outputs import Audit, Respond, SendController, TakeSnapshot
from kraftwire.core.raft_apis import RaftApis
from kraftwire.core.snapshots import FramingJob, clean_log, store_snapshot
from kraftwire.protocol.framing import Request
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.raft import messages as m
from kraftwire.raft.core import RaftCore
from kraftwire.storage.audit import Origin

NodeOutput = (m.SendRequest | m.SendResponse | m.PersistLog | m.PersistState | m.ReadSnapshotChunk | Respond
              | TakeSnapshot | SendController | Audit | Relay | Read | Park)

#: appends made while the core handles an event can trigger more (a commit the role replays and
#: answers with records): flush that many rounds at most within one event, the rest at the next tick
_FLUSH_ROUNDS = 4


class NodeCore:
    """RaftCore plus the roles it runs (controller, broker, groups; each optional), driven by events;
    every event returns outputs."""

    def __init__(self, raft: RaftCore, controller: ControllerRole | None = None,
                 groups: GroupRole | None = None, broker: BrokerLifecycleRole | None = None,
                 door: ApiDoor | None = None, raft_apis: RaftApis | None = None) -> None:
        self.raft = raft
        self.controller = controller
        self.groups = groups
        self.broker = broker
        self.door: ApiDoor | None = None
        self.raft_apis = raft_apis if raft_apis is not None else RaftApis()
        self.raft_apis.attach(raft, self._clock)
        self.snapshots_taken = 0
        self._now = 0
        self._appended = False
        self._answers: list[NodeOutput] = []
        self._snapshot: FramingJob | None = None   # framing in flight
        self._controller_ids = 0
        # whose state this replica snapshots: the controller's image (voters), else the broker's own, or
        # the offsets quorum's state (its group role)
        self._snapshots: Any = next((role for role in (controller, broker, groups)
                                     if role is not None and role.snapshotter is not None), None)
        if controller is not None:
            controller.attach(raft, clock=self._clock, append=self._append)
        if groups is not None:
            groups.attach(raft, clock=self._clock, append=self._append)
        if broker is not None:
            broker.attach(raft, clock=self._clock, send=self._send_controller)
        if door is not None:
            self.open_door(door)

    def open_door(self, door: ApiDoor) -> None:
        """Requests enter this node core through ``door`` (the voters' offsets quorum gets the listeners'
        door once the server built it)."""
        self.door = door
        door.attach(self._emit, self._read_mark, self.raft_apis)

    # -- state the shells read --------------------------------------------------------------------
    @property
    def log(self) -> Any:
        return self.raft.log

    def next_deadline(self) -> int | None:
        """The latest time at which ``tick`` must next be called (None: only on events)."""
        times = [self.raft.next_deadline()]
        if self.controller is not None:
            times.append(self.controller.next_deadline())
        if self.groups is not None:
            times.append(self.groups.next_deadline())
        if self.broker is not None:
            times.append(self.broker.next_deadline())
        if self.door is not None:
            times.append(self.door.next_deadline())
        due = [t for t in times if t is not None]
        return min(due) if due else None

    # -- Raft events ------------------------------------------------------------------------------
    def tick(self, now: int) -> list[NodeOutput]:
        """Timers: Raft's (elections, fetch timeouts, linger), the controller's (leases, NoOpRecords),
        the broker's (heartbeats, its lease), log cleaning under the retention policy."""
        self._now = now
        out: list[NodeOutput] = list(self.raft.tick(now))
        if self.controller is not None:
            self.controller.tick()
        snaps = self._snapshots
        if snaps is not None and snaps.fatal is None:
            clean_log(snaps.snapshotter, self.raft, now)
        if self.groups is not None:
            self.groups.tick()
        return self._settle(now, out)

    def handle_response(self, now: int, request_id: int, msg: m.Response) -> list[NodeOutput]:
        """A peer's answer to this node's ``SendRequest(request_id)``."""
        self._now = now
        return self._settle(now, list(self.raft.handle_response(now, request_id, msg)))

    def handle_request_failed(self, now: int, request_id: int, refused: bool = False) -> list[NodeOutput]:
        """No answer to this node's ``SendRequest(request_id)``; ``refused``: nothing listens at the
        destination's address."""
        self._now = now
        return self._settle(now, list(self.raft.handle_request_failed(now, request_id, refused)))

    def handle_persisted(self, now: int, end_offset: int) -> list[NodeOutput]:
        """The ``PersistLog(end_offset)`` fsync finished."""
        self._now = now
        return self._settle(now, list(self.raft.handle_persisted(now, end_offset)))

    def resign(self, now: int) -> list[NodeOutput]:
        """Graceful shutdown: a leader resigns (EndQuorumEpoch to the voters)."""
        self._now = now
        return self._settle(now, list(self.raft.resign(now)))

    def append(self, now: int, records: list[Record]) -> list[int]:
        """Records of a state machine that writes through Raft directly (the offsets quorum, the
        simulator's workload); the leader writes them at its next tick. Returns their offsets."""
        self._now = now
        return self.raft.append(now, records)

    # -- controller events ------------------------------------------------------------------------
    def submit(self, now: int, request_id: int, request: Any, version: int,
               origin: Origin | None = None) -> list[NodeOutput]:
        """A controller API request; ``Respond(request_id, ...)`` comes out once it may be answered, and
        ``Audit`` when it wrote records and its ``origin`` is known."""
        self._now = now
        ctl = self.controller
        if ctl is None:
            raise TypeError("this node core has no controller role")
        ctl.submit(request, version, lambda body: self._answers.append(Respond(request_id, body)), origin)
        return self._audited(self._settled_request(now))

    def submit_group(self, now: int, request_id: int, api_key: int, version: int, body: Any, client_id: str = "",
                     client_host: str = "") -> list[NodeOutput]:
        """A group API request; ``Respond(request_id, ...)`` once its answer is durable (or it parked and
        was completed, or leadership moved: NOT_COORDINATOR)."""
        self._now = now
        groups = self.groups
        if groups is None:
            raise TypeError("this node core has no group role")
        groups.submit(api_key, version, body, client_id, client_host,
                      lambda resp: self._answers.append(Respond(request_id, resp)))
        return self._settled_request(now)

    # -- the one door (core/api_door.py) ---------------------------------------------------------
    def handle_api(self, now: int, connection: int, request: Request, context: RequestContext) -> list[NodeOutput]:
        """A Kafka request a listener decoded; ``connection`` is the shell's id for it, which its
        ``Respond`` (the answer to write) or ``Relay`` (I/O for the shell) carries. An API or version the
        listener's plane does not serve raises ``RefusedRequest`` (the shell closes the connection)."""
        self._now = now
        if self.door is None:
            raise TypeError("this node core has no API door")
        self.door.handle(now, connection, request, context)
        apis = self.raft_apis
        if apis.asked:   # Raft's request: its state may have moved (votes, progress, a commit)
            apis.asked = False
            out: list[NodeOutput] = list(apis.out)
            apis.out = []
            return self._audited(self._settle(now, out))
        return self._audited(self._settled_request(now))

    def handle_relayed(self, now: int, connection: int, reply: Reply | None) -> list[NodeOutput]:
        """The shell's answer to the ``Relay`` of ``connection``: its ``Respond`` comes out."""
        self._now = now
        if self.door is not None:
            self.door.relayed(connection, reply)
        return self._settled_request(now)

    def handle_read(self, now: int, connection: int, body: Any, size: int) -> list[NodeOutput]:
        """What the shell's ``Read`` of ``connection`` found (a Fetch answer holding ``size`` record bytes):
        its ``Respond``, or ``Park`` until there may be more (or ``Read`` again at once)."""
        self._now = now
        if self.door is not None:
            self.door.read_done(now, connection, body, size)
        return self._settled_request(now)

    def handle_snapshot_chunk(self, now: int, read: m.ReadSnapshotChunk, chunk: bytes | None) -> list[NodeOutput]:
        """The bytes the shell read for the Raft core's ``ReadSnapshotChunk`` (None: the snapshot went meanwhile,
        SNAPSHOT_NOT_FOUND): the FetchSnapshot's answer comes out (the door's ``Respond`` for a request of the
        door). Nothing else moves."""
        self._now = now
        return self.raft_apis.answers([read.answer(chunk)])

    def handle_relay_failed(self, now: int, connection: int) -> list[NodeOutput]:
        """The shell failed the ``Relay`` of ``connection`` itself (it answered or closed the connection)."""
        self._now = now
        if self.door is not None:
            self.door.relay_failed(connection)
        return self._settled_request(now)

    # -- broker events ----------------------------------------------------------------------------
    def handle_controller_response(self, now: int, request_id: int, body: Any) -> list[NodeOutput]:
        """The active controller answered the ``SendController(request_id)``."""
        self._now = now
        if self.broker is not None:
            self.broker.handle_response(now, request_id, body)
        return self._settle(now, [])

    def handle_controller_failed(self, now: int, request_id: int) -> list[NodeOutput]:
        """The ``SendController(request_id)`` got no answer (connection failure, timeout)."""
        self._now = now
        if self.broker is not None:
            self.broker.handle_failure(now, request_id)
        return self._settle(now, [])

    def begin_shutdown(self, now: int) -> list[NodeOutput]:
        """The broker's controlled shutdown (Kafka's SIGTERM): its leaderships move away first."""
        self._now = now
        if self.broker is not None:
            self.broker.begin_shutdown(now)
        return self._settle(now, [])

    # -- snapshots and stopping -------------------------------------------------------------------
    def snapshot_framed(self, now: int, sid: Any, batches: list[RecordBatch] | None) -> list[NodeOutput]:
        """The batches of the ``TakeSnapshot`` in flight (None: framing failed); stored if the log
        still allows it, then the log is cleaned as retention says."""
        self._now = now
        job, self._snapshot = self._snapshot, None
        snaps = self._snapshots
        if job is not None and job.sid == sid and batches is not None and snaps is not None and snaps.fatal is None:
            if store_snapshot(snaps.snapshotter, self.raft, sid, batches):
                self.snapshots_taken += 1
            clean_log(snaps.snapshotter, self.raft, now)
        return self._settle(now, [])

    def stop(self, now: int) -> list[NodeOutput]:
        """The node stops: every request waiting for a commit is answered NOT_CONTROLLER."""
        self._now = now
        if self.controller is not None:
            self.controller.stop()
        if self.groups is not None:
            self.groups.stop()
        if self.broker is not None:
            self.broker.stop()
        out: list[NodeOutput] = list(self._answers)
        self._answers = []
        return out

    # -- internals --------------------------------------------------------------------------------
    def _clock(self) -> int:
        return self._now

    def _emit(self, out: NodeOutput) -> None:
        self._answers.append(out)

    def _read_mark(self) -> tuple[int | None, int, int | None]:
        """What a parked consumer Fetch waits to change: the high watermark, the epoch, the leader."""
        raft = self.raft
        return raft.hw, raft.epoch, raft.leader_id

    def _audited(self, out: list[NodeOutput]) -> list[NodeOutput]:
        """``out`` with the audit entries of the writes the controller role made during the event."""
        ctl = self.controller
        if ctl is not None and ctl.audits:
            out += [Audit(e) for e in ctl.audits]
            ctl.audits.clear()
        return out

    def _send_controller(self, kind: str, request: Any) -> int:
        self._controller_ids += 1
        self._answers.append(SendController(self._controller_ids, kind, request))
        return self._controller_ids

    def _append(self, records: list[Record]) -> list[int]:
        offsets = self.raft.append(self._now, records)
        self._appended = True
        return offsets

    def _settled_request(self, now: int) -> list[NodeOutput]:
        """After a request that wrote nothing (most heartbeats, reads) only its answer can come out:
        Raft did not move, so there is nothing to activate, write, release or snapshot."""
        if self._appended:
            return self._settle(now, [])
        out: list[NodeOutput] = list(self._answers)
        self._answers = []
        return out

    def _settle(self, now: int, out: list[NodeOutput]) -> list[NodeOutput]:
        """After an event: let the broker send what is due, activate the controller if due, write what
        was appended, release answers and broker requests, ask for a due snapshot."""
        ctl = self.controller
        groups = self.groups
        if self.broker is not None:
            self.broker.poll(now)   # the replayed offset or the clock may let it ask to be unfenced
        for _ in range(_FLUSH_ROUNDS):
            if ctl is not None:
                ctl.maybe_activate()
            if groups is not None:
                groups.settle()
            if not self._appended:
                break
            self._appended = False
            out.extend(self.raft.tick(now))   # an idle leader writes and replicates the batch now
        if self.door is not None:
            self.door.wake(now)   # parked consumer Fetches whose high watermark moved, or whose wait is over
        if self._answers:
            out.extend(self._answers)
            self._answers = []
        snaps = self._snapshots
        if snaps is not None and self._snapshot is None:
            job = snaps.snapshot_due()
            if job is not None:
                self._snapshot = job
                out.append(TakeSnapshot(job))
        return self.raft_apis.answers(out)   # the Raft core's answers to requests of the door, as its Respond
