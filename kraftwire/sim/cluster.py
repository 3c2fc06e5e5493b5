"""Deterministic discrete-event simulation of a quorum: simulated clock, network, disks and faults.

Single-threaded: one heap of ``(time, seq, kind, payload)`` events and one seeded ``random.Random``
for everything (network, faults, workload, and each node's own generator derived from it), so a seed
reproduces a run exactly. Invariants are checked after every event (``kraftwire.sim.invariants``).

Each replica's state machine is a digest chained over the committed data records it applied; every
``snapshot_records`` records (drawn per node) it stores a snapshot of that digest through its core and,
most of the time, cleans its log below it. Replicas that fall behind a cleaned log (crashed, wiped,
partitioned, slow) therefore catch up with FetchSnapshot.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field, replace
from typing import Any

from kraftwire.core import NodeCore, RaftApis, Respond, TakeSnapshot
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftCore, RaftFaults, SimulatedCrash, SnapshotId
from kraftwire.raft import messages as m
from kraftwire.raft.snapshot import data_batches, frame
from kraftwire.sim.config import SeedResult, SimConfig
from kraftwire.sim.door_sim import DOOR_BUGS, context_of
from kraftwire.sim.invariants import GENESIS, InvariantChecker, Violation, chain_digest
from kraftwire.sim.wire import RaftWire, SenderCheck, WireCodec, raft_door

(DELIVER_REQ, DELIVER_RESP, REQ_TIMEOUT, TICK, RESTART, APPEND, FAULT, HEAL, END, UNDO, PERSISTED, FIRST_LEADER,
 REFUSED, READ_CHUNK) = range(14)


DIGEST_KEY = b"digest"


class _Listener:
    """One incarnation's state machine: a digest of the committed data records, snapshotted now and then."""

    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.digest = GENESIS
        self.since = 0

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        checker = self.sim.checker
        checker.on_commit_callback(self.node_id, batches)
        for b in batches:
            for i, r in enumerate(b.records):
                self.digest = chain_digest(self.digest, b.base_offset + i, b.leader_epoch, r.value)
            self.since += len(b.records)
        last = batches[-1]
        checker.on_state(self.node_id, "commit", last.next_offset, self.digest)
        every = self.sim.snapshot_every.get(self.node_id)
        if every and self.since >= every:
            self.since = 0
            self.sim.take_snapshot(self.node_id, SnapshotId(last.next_offset, last.leader_epoch), self.digest)

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        values = [r.value for b in data_batches(batches) for r in b.records if r.key == DIGEST_KEY]
        if len(values) != 1 or values[0] is None:
            raise Violation(f"node {self.node_id}: snapshot ending at {end_offset} has no digest record")
        self.digest = values[0]
        self.since = 0
        self.sim.checker.on_state(self.node_id, "load", end_offset, self.digest,
                                  batches[0].leader_epoch if batches else None)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        pass


@dataclass(slots=True)
class SimNode:
    node_id: int
    is_voter: bool
    log: MemoryLog = field(default_factory=lambda: MemoryLog(deferred_cuts=True))   # truncations durable at a sync
    store: MemoryStateStore = field(default_factory=MemoryStateStore)
    core: RaftCore | None = None       # this incarnation's Raft core (what the invariants read)
    node: NodeCore | None = None       # the production node core around it: every event goes through it
    incarnation: int = 0
    tick_at: int | None = None
    tick_due: int | None = None        # the node core deadline ``tick_at`` serves
    rejoining: bool = False
    slow_extra: int = 0
    crash_mode: str = "crash"
    pending: set[int] = field(default_factory=set)   # request ids awaiting a response or timeout
    pending_to: dict[int, int] = field(default_factory=dict)   # with ``refuse_when_down``: request id -> dest


class Simulation:
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        self.seed = seed
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.raft = cfg.raft
        self.bugs = RaftFaults.named(cfg.bugs - DOOR_BUGS)   # test-only deliberate bugs (mutation tests)
        self.now = 0
        self._heap: list[tuple[int, int, int, Any]] = []
        self._seq = 0
        self.voter_ids = list(range(1, cfg.voters + 1))
        self.observer_ids = list(range(101, 101 + cfg.observers))
        self.codec = WireCodec() if cfg.wire else None   # --wire: messages through real bytes too
        self.raft_wire = RaftWire(self.voter_ids + self.observer_ids, self.codec)
        self.nodes = {i: SimNode(i, True) for i in self.voter_ids}
        self.nodes.update({i: SimNode(i, False) for i in self.observer_ids})
        # a Raft request in a node core's door (its negative connection id) -> (src, incarnation, rid), API key
        self.inbound: dict[int, tuple[int, int, int]] = {}
        self._next_inbound = 1
        self.door_raft: dict[int, int] = {}
        self.blocked: set[tuple[int, int]] = set()
        self.drop_p = 0.0
        self.dup_p = 0.0
        self.extra_delay = 0
        self.reorder_p = 0.0
        self.healed = False
        self.append_counter = 0
        self.checker = InvariantChecker(self)
        self.events = 0
        self.faults = sorted(cfg.faults)
        self.snapshot_every: dict[int, int] = {}
        self.snapshot_downloads = 0   # FetchSnapshot answers that completed a snapshot
        self.isolations: list[list[int]] = []   # [node, start, end (or -1 while cut off)]
        self.never_started: set[int] = set()    # voters that never run (SimConfig.never_started)
        self.started_at: dict[int, int] = {}     # node -> time of its first start
        self.rejoined_at: dict[int, int] = {}    # voter -> time it first ended a re-join (e.g. found a fresh quorum)
        if cfg.snapshot_records is not None:
            lo, hi = cfg.snapshot_records
            self.snapshot_every = {nid: self.rng.randint(lo, hi) for nid in self.nodes}

    # ------------------------------------------------------------------------------ scheduling
    def schedule(self, at: int, kind: int, payload: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, kind, payload))

    def start(self) -> None:
        """Boot every node (but the never-started ones) and schedule the workload, faults, heal and end."""
        if self.cfg.never_started:
            self.never_started = set(self.rng.sample(self.voter_ids, self.cfg.never_started))
        for nid, node in self.nodes.items():
            # As a production voter on an empty directory: re-joining until the others say they are fresh.
            node.rejoining = node.is_voter and len(self.voter_ids) > 1
            if nid in self.never_started:
                continue
            if self.cfg.start_spread_ms:
                self.schedule(self.rng.randint(0, self.cfg.start_spread_ms), RESTART, (nid, node.incarnation))
            else:
                self._start(nid, rejoining=node.rejoining)
        if self.cfg.first_leader_within_ms is not None:
            self.schedule(self.cfg.first_leader_within_ms, FIRST_LEADER)
        self.schedule(0, APPEND)
        if self.faults:
            self.schedule(self.rng.randint(0, self.cfg.fault_interval_ms), FAULT)
        self.schedule(self.cfg.heal_at, HEAL)
        self.schedule(self.cfg.liveness_deadline, END)

    def step(self) -> bool:
        """Process one event and check the invariants; False once the run is over."""
        if not self._heap:
            return False
        at, _, kind, payload = heapq.heappop(self._heap)
        self.now = at
        if kind == END:
            self.checker.check_liveness()
            return False
        node = self._dispatch(kind, payload)
        self.events += 1
        self.checker.after_event(node)
        return True

    def run(self) -> SeedResult:
        result = SeedResult(self.seed)
        try:
            self.start()
            while self.step():
                pass
        except Violation as v:
            result.violations.append(f"t={self.now} {v}")
        except Exception as exc:  # noqa: BLE001 - a core exception is a finding, not a crash of the sim
            result.violations.append(f"t={self.now} {type(exc).__name__}: {exc}")
        result.events = self.events
        result.committed = len(self.checker.committed)
        result.max_epoch = max((n.store.read().epoch for n in self.nodes.values() if n.store.read()), default=0)
        result.elections = len(self.checker.leaders)
        result.first_leader_ms = min(self.checker.leader_since.values(), default=None)
        result.snapshots = self.checker.snapshots_created
        result.snapshot_loads = self.checker.snapshots_loaded
        result.snapshot_downloads = self.snapshot_downloads
        return result

    # ------------------------------------------------------------------------------ nodes
    def _start(self, nid: int, rejoining: bool) -> None:
        node = self.nodes[nid]
        node.incarnation += 1
        node.pending.clear()
        node.rejoining = rejoining
        self.started_at.setdefault(nid, self.now)
        try:
            raft = replace(self.raft, pre_vote=False) if nid in self.cfg.old_vote_nodes else self.raft
            node.core = RaftCore(nid, self.voter_ids, raft, node.log, node.store,
                                 random.Random(self.rng.getrandbits(64)), self.cfg.cluster_id, self.now,
                                 self._listener_for(nid), rejoining=rejoining, faults=self.bugs)
            node.node = self._node_core(nid, node.core)
        except SimulatedCrash:
            node.log.crash()
            self.schedule(self.now + self.rng.randint(20, 500), RESTART, (nid, node.incarnation))
            return
        self.checker.on_start(node)
        node.tick_at = None
        self._run_core(node, lambda c: c.tick(self.now))

    def _listener_for(self, nid: int) -> Any:
        """The raft listener for a new incarnation of node ``nid`` (subclasses plug in their own)."""
        return _Listener(self, nid)

    def _node_core(self, nid: int, core: RaftCore) -> NodeCore:
        """The node core around a new incarnation's Raft core (subclasses add the roles they simulate); Raft's
        requests enter it through its door, as on a server."""
        return NodeCore(core, self._controller_for(nid), door=raft_door(), raft_apis=self.raft_apis())

    def raft_apis(self) -> RaftApis:
        """The Raft APIs of a node core's door (listing the voters, as a server's), checking senders."""
        return self.raft_wire.raft_apis()

    def _controller_for(self, nid: int) -> Any:
        """The controller role the node core of node ``nid`` runs (None: Raft with a digest state machine)."""
        return None

    def take_snapshot(self, nid: int, sid: SnapshotId, digest: bytes) -> None:
        """Store node ``nid``'s state at ``sid`` as a snapshot; usually clean the log below it too."""
        core = self.nodes[nid].core
        assert core is not None
        core.create_snapshot(sid, frame(sid, [Record(value=digest, key=DIGEST_KEY)], timestamp_ms=self.now))
        self.checker.on_state(nid, "snapshot", sid.end_offset, digest, sid.epoch)
        if self.rng.random() < self.cfg.snapshot_clean_p:
            self.checker.check_hw(self.nodes[nid])  # observe the committed prefix before it goes
            core.delete_before(sid)

    def crash(self, nid: int, mode: str = "crash", restart_after: int | None = None, wipe: bool = False) -> None:
        node = self.nodes[nid]
        if node.core is None:
            return
        # A node that dies inside an event may already have told its state machine of commits in it: observe
        # the high watermark it reached first, so that what it reported is checked against what it committed.
        self.checker.check_hw(node)
        node.core = None
        node.node = None
        node.incarnation += 1
        node.pending.clear()
        node.pending_to.clear()
        node.tick_at = None
        if self.cfg.refuse_when_down:   # its process is gone: the others' connections to it are closed
            for other in self.nodes.values():
                lost = [rid for rid, dest in other.pending_to.items() if dest == nid and rid in other.pending]
                other.pending_to = {rid: d for rid, d in other.pending_to.items() if rid in other.pending and d != nid}
                for rid in lost:
                    self.schedule(self.now + self._latency(nid, other.node_id), REQ_TIMEOUT,
                                  (other.node_id, other.incarnation, rid))
        if mode == "torn_write":
            node.log.tear_last_write()
        else:
            node.log.crash()
        node.store.fail_next = False
        if wipe:
            node.log.wipe()
            node.store.wipe()
            node.rejoining = node.is_voter
        self.checker.on_crash(node, wiped=wipe)
        if restart_after is not None:
            self.schedule(self.now + restart_after, RESTART, (nid, node.incarnation))

    def _run_core(self, node: SimNode, fn: Any) -> None:
        """Feed one event to ``node``'s node core (``fn(node_core)``) and route what comes out."""
        core = node.core
        if core is None or node.node is None:
            return
        try:
            outputs = fn(node.node)
        except SimulatedCrash:
            self.crash(node.node_id, node.crash_mode, restart_after=self.rng.randint(20, 500))
            return
        self._route(node, outputs)
        if node.core is core:
            if node.rejoining and not core.rejoining:
                self.rejoined_at.setdefault(node.node_id, self.now)
            node.rejoining = core.rejoining
            self._schedule_tick(node)

    def _schedule_tick(self, node: SimNode) -> None:
        assert node.node is not None
        deadline = node.node.next_deadline()
        if deadline is None:
            node.tick_at = None
            return
        at = max(deadline, self.now) + node.slow_extra
        if node.tick_at != at:
            node.tick_at = at
            self.schedule(at, TICK, (node.node_id, node.incarnation, at))

    # ------------------------------------------------------------------------------ network
    def _latency(self, a: int, b: int) -> int:
        lo, hi = self.cfg.latency_ms
        d = self.rng.randint(lo, hi) + self.extra_delay
        if self.reorder_p and self.rng.random() < self.reorder_p:
            d += self.rng.randint(0, 150)
        return d + self.nodes[a].slow_extra + self.nodes[b].slow_extra

    def _lost(self, a: int, b: int) -> bool:
        return (a, b) in self.blocked or (self.drop_p > 0 and self.rng.random() < self.drop_p)

    def _route(self, node: SimNode, outputs: list[m.Output]) -> None:
        if not self._write_state(node, outputs):
            return
        src = node.node_id
        for out in outputs:
            if isinstance(out, m.PersistState):
                continue
            if isinstance(out, m.PersistLog):
                # A node's fsync completes after a disk latency of its own, unless the node crashes
                # first (then the data it covered was never durable: MemoryLog.crash drops it).
                lo, hi = self.cfg.fsync_latency_ms
                self.schedule(self.now + self.rng.randint(lo, hi) + node.slow_extra, PERSISTED,
                              (src, node.incarnation, out.end_offset))
            elif isinstance(out, Respond):
                key = self.door_raft.pop(out.request_id, None)
                if key is None:
                    self._on_respond(node, out)
                else:   # the door's answer to a Raft request, back to the requester's Raft core
                    self._answer_raft(node, out.request_id, self.raft_wire.answer(key, out.body))
            elif isinstance(out, TakeSnapshot):
                self._on_take_snapshot(node, out)
            elif isinstance(out, m.ReadSnapshotChunk):   # the store's I/O, an event of its own (a page-cache read)
                self.schedule(self.now + self.rng.randint(0, 2) + node.slow_extra, READ_CHUNK,
                              (src, node.incarnation, out))
            elif isinstance(out, m.SendRequest):
                node.pending.add(out.request_id)
                if self.cfg.refuse_when_down:
                    node.pending_to[out.request_id] = out.dest_id
                self.schedule(self.now + self.raft.request_timeout_ms, REQ_TIMEOUT,
                              (src, node.incarnation, out.request_id))
                if (isinstance(out.msg, m.VoteRequest) and out.msg.pre_vote
                        and out.dest_id in self.cfg.old_vote_nodes):
                    # The peer's ApiVersions stop at Vote v1: the sender's client fails the request.
                    self.schedule(self.now + 1, DELIVER_RESP, (src, node.incarnation, out.request_id,
                                                               m.VoteResponse(int(Errors.UNSUPPORTED_VERSION))))
                    continue
                msg = self.raft_wire.request(src, out.msg)
                copies = 2 if self.dup_p and self.rng.random() < self.dup_p else 1
                for _ in range(copies):
                    if not self._lost(src, out.dest_id):
                        self.schedule(self.now + self._latency(src, out.dest_id), DELIVER_REQ,
                                      (src, node.incarnation, out.request_id, out.dest_id, msg))
            else:   # Raft's requests all come in through the door, which turns their answers into Respond
                raise TypeError(f"node {src}: {type(out).__name__} for request {out.request_id} outside the door")

    def _answer_raft(self, node: SimNode, inbound_id: int, msg: m.Response) -> None:
        """Carry the door's answer to a Raft request back to the requester."""
        origin = self.inbound.pop(inbound_id, None)
        if origin is None:
            return
        p = msg.partition if isinstance(msg, m.FetchSnapshotResponse) else None
        if p is not None and p.error_code == 0 and p.position + len(p.unaligned_records) == p.size:
            self.snapshot_downloads += 1
        src = node.node_id
        dest, inc, rid = origin
        copies = 2 if self.dup_p and self.rng.random() < self.dup_p else 1
        for _ in range(copies):
            if not self._lost(src, dest):
                self.schedule(self.now + self._latency(src, dest), DELIVER_RESP, (dest, inc, rid, msg))

    def _write_state(self, node: SimNode, outputs: list[Any]) -> bool:
        """As the server's driver: an event's quorum-state write is durable before any of its outputs
        leaves the node. False if the node died in it (a crash armed on the store): nothing is sent."""
        states = [o for o in outputs if type(o) is m.PersistState]
        if not states or node.core is None:
            return node.core is not None
        try:
            node.store.write(states[-1].state)
        except SimulatedCrash:
            self.crash(node.node_id, node.crash_mode, restart_after=self.rng.randint(20, 500))
            return False
        return True

    def _on_respond(self, node: SimNode, out: Respond) -> None:
        raise TypeError(f"node {node.node_id} answered a controller request in a simulation without controllers")

    def _on_take_snapshot(self, node: SimNode, out: TakeSnapshot) -> None:
        raise TypeError(f"node {node.node_id} asked for a controller snapshot in a simulation without controllers")

    # ------------------------------------------------------------------------------ dispatch
    def _dispatch(self, kind: int, payload: Any) -> SimNode | None:
        now = self.now
        if kind == DELIVER_REQ:
            src, inc, rid, dest, msg = payload
            node = self.nodes[dest]
            if (src, dest) in self.blocked:
                return None
            if node.core is None:
                if self.cfg.refuse_when_down:   # nothing listens there: the sender's connection is refused
                    self.schedule(now + self._latency(dest, src), REFUSED, (src, inc, rid))
                return None
            self.deliver(node, src, (src, inc, rid), msg)
            return node
        if kind == DELIVER_RESP:
            dest, inc, rid, msg = payload
            node = self.nodes[dest]
            if node.core is None or node.incarnation != inc:
                return None
            node.pending.discard(rid)
            self._run_core(node, lambda c: c.handle_response(now, rid, msg))
            return node
        if kind in (REQ_TIMEOUT, REFUSED):
            nid, inc, rid = payload
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc or rid not in node.pending:
                return None
            node.pending.discard(rid)
            refused = kind == REFUSED
            self._run_core(node, lambda c: c.handle_request_failed(now, rid, refused))
            return node
        if kind == TICK:
            nid, inc, at = payload
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc or node.tick_at != at:
                return None
            node.tick_at = None
            self._run_core(node, lambda c: c.tick(now))
            return node
        if kind == RESTART:
            nid, inc = payload
            node = self.nodes[nid]
            if node.core is None and node.incarnation == inc:
                self._start(nid, rejoining=node.rejoining)
            return node
        if kind == PERSISTED:
            nid, inc, end = payload
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc:
                return None
            self._run_core(node, lambda c: c.handle_persisted(now, end))
            return node
        if kind == READ_CHUNK:   # a FetchSnapshot's bytes from the in-memory snapshot store (None: cleaned away)
            nid, inc, read = payload
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc:
                return None
            try:
                chunk: bytes | None = node.log.read_snapshot_chunk(read.snapshot_id, read.position, read.max_bytes)
            except KeyError:
                chunk = None
            self._run_core(node, lambda c: c.handle_snapshot_chunk(now, read, chunk))
            return node
        if kind == APPEND:
            return self._append()
        if kind == FAULT:
            if not self.healed:
                self._inject()
                self.schedule(now + self.rng.randint(1, 2 * self.cfg.fault_interval_ms), FAULT)
            return None
        if kind == FIRST_LEADER:
            self.checker.check_first_leader()
        elif kind == HEAL:
            self._heal()
        elif kind == UNDO:
            payload()
        return None

    def connection(self) -> int:
        """A new connection id for a Raft request in a door (negative: apart from the simulation's agents')."""
        self._next_inbound += 1
        return -self._next_inbound

    def deliver(self, node: SimNode, src: int | str, origin: tuple[int, int, int], request: Request,
                conn: int | None = None) -> None:
        """Hand a Raft request from ``src`` (a node, or a client agent's name) to ``node``'s door, as its listener
        does, on connection ``conn`` (default: a new one); the door's answer goes back to ``origin``
        (requester, its incarnation, its request id)."""
        if conn is None:
            conn = self.connection()
        self.inbound[conn] = origin
        self.door_raft[conn] = request.api_key
        self._run_core(node, lambda c: self._door(c, conn, src, request))

    def _door(self, core: NodeCore, conn: int, src: int | str, request: Request) -> list[Any]:
        apis = core.raft_apis
        if isinstance(apis, SenderCheck):
            apis.sender = src
        try:
            return core.handle_api(self.now, conn, request, context_of(src))
        finally:
            if isinstance(apis, SenderCheck):
                apis.sender = None

    def _append(self) -> SimNode | None:
        lo, hi = self.cfg.append_interval_ms
        self.schedule(self.now + self.rng.randint(lo, hi), APPEND)
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            return None
        node = self.rng.choice(leaders)
        records = []
        for _ in range(self.rng.randint(1, 4)):
            self.append_counter += 1
            records.append(Record(value=b"w%d" % self.append_counter))
        self._run_core(node, lambda c: (c.append(self.now, records), [])[1])
        return node

    # ------------------------------------------------------------------------------ faults
    def _up(self, voters_only: bool = False) -> list[int]:
        return [i for i, n in self.nodes.items() if n.core is not None and (n.is_voter or not voters_only)]

    def _inject(self) -> None:
        fault = self.rng.choice(self.faults)
        r = self.rng
        ids = list(self.nodes)
        dur = r.randint(100, 1500)
        if fault in ("crash", "crash_unflushed", "torn_write"):
            up = self._up()
            if not up:
                return
            nid = r.choice(up)
            node = self.nodes[nid]
            if fault == "crash":
                self.crash(nid, "crash", restart_after=r.randint(20, 1000))
            else:
                # Die inside the next flush / state write: whatever was not yet durable is lost
                # (torn_write: the unflushed tail partly reached the disk, its last batch torn).
                node.crash_mode = fault
                if r.random() < 0.7:
                    node.log.fail_next = True
                else:
                    node.store.fail_next = True
        elif fault == "wipe":
            if any(n.rejoining for n in self.nodes.values()):
                return
            # A sole voter's disk is the whole quorum: wiping it is data loss no protocol can undo.
            up = [i for i in self._up() if (len(self.voter_ids) > 1 or not self.nodes[i].is_voter)
                  and self._history_survives_wipe(i)]
            if up:
                self.crash(r.choice(up), "crash", restart_after=r.randint(50, 1000), wipe=True)
        elif fault == "partition":
            if r.random() < 0.5:
                a = r.choice(ids)
                pairs = {(a, b) for b in ids if b != a} | {(b, a) for b in ids if b != a}
            else:
                side = set(r.sample(ids, r.randint(1, max(1, len(ids) - 1))))
                pairs = {(a, b) for a in side for b in ids if b not in side}
                pairs |= {(b, a) for a, b in pairs}
            self._for(dur, lambda: self.blocked.update(pairs), lambda: self.blocked.difference_update(pairs))
        elif fault == "asymmetric":
            a, b = r.sample(ids, 2) if len(ids) > 1 else (ids[0], ids[0])
            self._for(dur, lambda: self.blocked.add((a, b)), lambda: self.blocked.discard((a, b)))
        elif fault == "drop":
            p = r.uniform(0.02, 0.3)
            self._for(dur, lambda: setattr(self, "drop_p", p), lambda: setattr(self, "drop_p", 0.0))
        elif fault == "duplicate":
            p = r.uniform(0.05, 0.5)
            self._for(dur, lambda: setattr(self, "dup_p", p), lambda: setattr(self, "dup_p", 0.0))
        elif fault == "delay":
            d = r.randint(10, 300)
            self._for(dur, lambda: setattr(self, "extra_delay", d), lambda: setattr(self, "extra_delay", 0))
        elif fault == "reorder":
            p = r.uniform(0.1, 0.6)
            self._for(dur, lambda: setattr(self, "reorder_p", p), lambda: setattr(self, "reorder_p", 0.0))
        elif fault == "isolate":
            if any(end < 0 for _, _, end in self.isolations):
                return
            a = r.choice(ids)
            pairs = {(a, b) for b in ids if b != a} | {(b, a) for b in ids if b != a}
            span = [a, self.now, -1]
            self.isolations.append(span)

            def rejoin() -> None:
                self.blocked.difference_update(pairs)
                span[2] = self.now

            self.blocked.update(pairs)
            self.schedule(self.now + r.randint(5, 15) * self.raft.election_timeout_ms, UNDO, rejoin)
        elif fault == "slow":
            node = self.nodes[r.choice(ids)]
            d = r.randint(20, 300)
            self._for(dur, lambda: setattr(node, "slow_extra", d), lambda: setattr(node, "slow_extra", 0))

    def _history_survives_wipe(self, nid: int) -> bool:
        """Wiping ``nid`` stays within the fault model of the fresh-quorum rule (docs/raft.md): once the
        quorum has a history, fewer than a majority of its voters may be without one (at epoch 0: never
        took part, or lost their disk) — as Raft assumes no majority fails, counting amnesia as failure."""
        def epoch(v: int) -> int:
            saved = self.nodes[v].store.read()
            return 0 if saved is None or v == nid else saved.epoch
        if not self.nodes[nid].is_voter or all(epoch(v) == 0 for v in self.voter_ids):
            return True
        blank = sum(1 for v in self.voter_ids if epoch(v) == 0)
        return blank < len(self.voter_ids) // 2 + 1

    def _for(self, duration: int, start: Any, stop: Any) -> None:
        start()
        self.schedule(self.now + duration, UNDO, stop)

    def was_isolated(self, nid: int, since: int) -> bool:
        """Node ``nid`` was cut off by an ``isolate`` fault at some time since ``since``."""
        return any(n == nid and (end < 0 or end >= since) for n, _, end in self.isolations)

    def _heal(self) -> None:
        self.healed = True
        self.blocked.clear()
        for span in self.isolations:
            if span[2] < 0:
                span[2] = self.now
        self.drop_p = self.dup_p = self.reorder_p = 0.0
        self.extra_delay = 0
        for node in self.nodes.values():
            node.slow_extra = 0
            node.log.fail_next = node.store.fail_next = False
            if node.core is None and node.node_id not in self.never_started:
                self._start(node.node_id, rejoining=node.rejoining)
        self.checker.on_heal()
