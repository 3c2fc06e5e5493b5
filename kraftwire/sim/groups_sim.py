"""Consumer groups through the doors under faults (``kraftwire simulate --groups``).

The voters run the offsets quorum (``__kraftwire_offsets``-0): each incarnation is the production node core
with the production group role (``core/group_role.py``) over the production ``OffsetsMachine``, and the
production door (``ApiDoor``) with a voter's controller plane (``VoterReads``: FindCoordinator names the
coordinating voter, ``placement.coordinating_voter`` over this voter's view of the offsets leader). In a
server the voter's door sits on its metadata quorum's node core; which node core holds it does not change a
group request's route. Brokers hold the production broker plane's door (``BrokerReads``: FindCoordinator
names the broker itself, COORDINATOR_NOT_AVAILABLE while it is not serving); no metadata quorum runs here,
so a broker's door is driven directly (``ApiDoor.handle``, what ``NodeCore.handle_api`` calls). Brokers crash
(their relays in flight lost) and come back as new incarnations (an empty coordinator lookup) that serve
after catching up.

Consumers send real requests (FindCoordinator v3, JoinGroup v5, SyncGroup v3, Heartbeat v3, OffsetCommit v7,
OffsetFetch v7, LeaveGroup v3, then joining again as a new member) to a voter's or a broker's door. A group request comes out of a voter's door as ``Relay``
GROUP and the simulated shell submits it to that voter's group role (``NodeCore.submit_group``), as
``GroupShell.route`` does with the offsets quorum; out of a broker's door it goes to the voter that the
broker's ``placement.CoordinatorLookup`` names (found by asking the voters with FindCoordinator through their
doors, dropped after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS or no
answer), as ``GroupRouter`` does. Consumers follow the coordinator errors as Kafka clients do (look the
coordinator up again; rejoin on UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS); the leader
assigns the topic's partitions round-robin; a simple committer (``assign()``, generation -1) commits to a
group of its own. Voters snapshot the offsets state and clean their logs as the production
``OffsetsSnapshotter`` says (framed inline). Every Raft fault applies to the voters; clients and brokers lose messages with the
network's drop rate and cannot reach a voter cut off from every other voter.

Invariants, after every event:

* **no answer of a durable write leaves before its records commit** — when the group role answers an
  OffsetCommit without error, its offsets are in the committed log; when it answers a JoinGroup without
  error, the group's record of that generation is;
* **an acknowledged OffsetCommit is never lost** — an OffsetFetch answered without error returns, for a
  partition, the commit of the latest acknowledged (before the fetch was sent) or a later committed one;
* **one generation, one membership** — JoinGroup answers of one group's generation agree on the leader and
  protocol, each member is in the leader's member list, a consumer's generations never go back, and the
  assignments SyncGroup hands out in one generation are the leader's: one per member, no partition twice.

Deliberate bugs (``--bugs``): ``group_answers_before_commit`` (the group role answers as soon as the
coordinator wrote), ``group_serves_after_leadership`` (a voter's coordinator keeps serving after its node
stopped leading the offsets quorum), ``coordinator_starts_without_offsets`` and
``coordinator_starts_without_generations`` (a new coordinator is built over the replicated state without its
committed offsets, or without its groups' generation records).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from kraftwire.broker.metadata_cache import LocalView
from kraftwire.core import ApiDoor, DoorPlane, NodeCore, Relay, Respond, TakeSnapshot
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.core.broker_reads import BrokerReads
from kraftwire.core.group_role import GroupRole
from kraftwire.core.raft_apis import RaftApis
from kraftwire.core.voter_reads import VoterReads
from kraftwire.group import GroupConfig
from kraftwire.group.placement import KEY_TYPE_GROUP, CoordinatorLookup, coordinating_voter
from kraftwire.group.replicated import OffsetsMachine, OffsetsSnapshotter
from kraftwire.group.responses import error_response
from kraftwire.group.store import GroupRecord, OffsetRecord, decode_record
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages import heartbeat_request as hbq
from kraftwire.protocol.messages import join_group_request as jgq
from kraftwire.protocol.messages import leave_group_request as lgq
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages import sync_group_request as sgq
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.raft import RaftCore
from kraftwire.sim.cluster import SimNode, Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.door_sim import LISTENER as VOTERS_LISTENER
from kraftwire.sim.door_sim import request_of
from kraftwire.sim.invariants import Violation

GROUP_BUGS = frozenset({"group_answers_before_commit", "group_serves_after_leadership",
                        "coordinator_starts_without_offsets", "coordinator_starts_without_generations"})
LISTENER = "PLAINTEXT"       # the brokers' listener
VOTER_LISTENER = VOTERS_LISTENER   # the voters' controller listener, where Raft's requests come in too
TOPIC = "t"
PARTITIONS = 4
GROUPS = ("g0", "g1")
SIMPLE_GROUP = "s0"
CONSUMERS_PER_GROUP = 3
BROKERS = 2
NET = 100   # an event kind of this simulation: a callable payload (a delivery, a timer, a shell step)
MOVED = frozenset({int(Errors.NOT_COORDINATOR), int(Errors.COORDINATOR_NOT_AVAILABLE),
                   int(Errors.COORDINATOR_LOAD_IN_PROGRESS)})
REJOIN = frozenset({int(Errors.REBALANCE_IN_PROGRESS), int(Errors.ILLEGAL_GENERATION)})
UNKNOWN_MEMBER = int(Errors.UNKNOWN_MEMBER_ID)
SESSION_MS, REBALANCE_MS = 800, 1200
VERSIONS = {ApiKey.FIND_COORDINATOR: 3, ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3,
            ApiKey.OFFSET_COMMIT: 7, ApiKey.OFFSET_FETCH: 7, ApiKey.LEAVE_GROUP: 3}


def group_config() -> GroupConfig:
    """Kafka's coordinator with the simulation's short timers; topic ``t`` has ``PARTITIONS`` partitions."""
    return GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=100,
                       partition_exists=lambda topic, p: topic == TOPIC and 0 <= p < PARTITIONS)


class _EagerGroupRole(GroupRole):
    """Deliberate bug: answers as soon as the coordinator wrote, not once the records committed."""

    def _after_write(self, answers: list[Any]) -> None:
        for req, resp in answers:
            req.answer(resp)


class _StaleGroupRole(GroupRole):
    """Deliberate bug: the coordinator keeps serving after this node stopped leading the offsets quorum."""

    def settle(self) -> None:
        raft = self.raft
        if raft is None or self.machine is None:
            return
        if self.term.due(raft):
            self._activate()
        self._release()


class _ForgetfulGroupRole(GroupRole):
    """Deliberate bug: a new coordinator is built over the replicated state without its offsets (``offsets``)
    or without its groups' generation records (``generations``)."""

    forgets = "offsets"

    def _activate(self) -> None:
        machine = self.machine
        assert machine is not None
        real = machine.state
        machine.state = real.copy()
        if self.forgets == "offsets":
            machine.state.offsets.clear()
        else:
            machine.state.groups.clear()
        try:
            super()._activate()
        finally:
            machine.state = real


class _GenerationlessGroupRole(_ForgetfulGroupRole):
    forgets = "generations"


def group_role_class(bugs: frozenset[str]) -> type[GroupRole]:
    if "group_answers_before_commit" in bugs:
        return _EagerGroupRole
    if "group_serves_after_leadership" in bugs:
        return _StaleGroupRole
    if "coordinator_starts_without_offsets" in bugs:
        return _ForgetfulGroupRole
    if "coordinator_starts_without_generations" in bugs:
        return _GenerationlessGroupRole
    return GroupRole


def offsets_records(entries: list[Any], start: int = 0) -> Iterator[tuple[int, Any]]:
    """(position, decoded record) of the offsets records among committed log ``entries`` from ``start``
    (control records such as LeaderChange skipped)."""
    for i in range(start, len(entries)):
        value = entries[i][1]
        if value is None:
            continue
        try:
            yield i, decode_record(value)
        except ValueError:   # not an offsets record
            continue


class OffsetsListener:
    """The production offsets state machine of one voter incarnation, its commits shown to the simulation's
    checker; ``loaded`` is called for every snapshot it loads."""

    def __init__(self, sim: Simulation, nid: int, loaded: Callable[[], None]) -> None:
        self.sim, self.nid, self.loaded = sim, nid, loaded
        self.machine = OffsetsMachine()

    def handle_commit(self, batches: list[Any]) -> None:
        self.sim.checker.on_commit_callback(self.nid, batches)
        self.machine.handle_commit(batches)

    def handle_snapshot(self, end_offset: int, batches: list[Any]) -> None:
        self.machine.handle_snapshot(end_offset, batches)
        self.loaded()

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.machine.handle_leader_change(leader_id, epoch)


class _View:
    """A voter's replica view (only Metadata reads it; FindCoordinator does not)."""

    controller_id = -1


@dataclass(slots=True)
class _Broker:
    """A broker's door and the state of its group relays (``GroupRouter``'s, made by the same pure parts)."""

    bid: int
    door: ApiDoor
    lookup: CoordinatorLookup = field(default_factory=CoordinatorLookup)
    out: list[Any] = field(default_factory=list)
    up: bool = True
    serving_at: int = 0   # a restarted broker catches up first: FindCoordinator COORDINATOR_NOT_AVAILABLE until then


@dataclass(slots=True)
class _Consumer:
    cid: int
    group: str
    simple: bool = False
    state: str = "find"            # find, join, sync, stable
    coordinator: int | None = None
    member_id: str = ""
    generation: int = -1
    is_leader: bool = False
    members: list[str] = field(default_factory=list)
    owned: list[int] = field(default_factory=list)
    inflight: int | None = None    # the request id awaiting an answer
    last_generation: int = -1


def _assign(members: list[str]) -> dict[str, list[int]]:
    ordered = sorted(members)
    out: dict[str, list[int]] = {m: [] for m in ordered}
    for p in range(PARTITIONS):
        out[ordered[p % len(ordered)]].append(p)
    return out


def _encode(parts: list[int]) -> bytes:
    return ",".join(map(str, parts)).encode()


def _decode(data: bytes | None) -> list[int]:
    return [int(x) for x in data.decode().split(",") if x] if data else []


class GroupsSimulation(Simulation):
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        super().__init__(seed, replace(cfg, bugs=cfg.bugs - GROUP_BUGS))
        self.group_bugs = cfg.bugs & GROUP_BUGS
        self.listeners: dict[int, OffsetsListener] = {}
        self.brokers = {201 + i: self._broker(201 + i) for i in range(BROKERS)}
        cid = 300
        self.consumers: list[_Consumer] = []
        for g in GROUPS:
            for _ in range(CONSUMERS_PER_GROUP):
                cid += 1
                self.consumers.append(_Consumer(cid, g))
        self.consumers.append(_Consumer(cid + 1, SIMPLE_GROUP, simple=True))
        self._ids = 0
        self.conns: dict[int, tuple[Any, Callable[[Any], None]]] = {}   # door request id -> (endpoint, reply to)
        self.submits: dict[int, tuple[int, int, int, Request]] = {}    # group role request -> (voter, inc, conn, req)
        self._pending_acks: list[tuple[int, Request, Any]] = []           # group role answers to check post-event
        self._offsets_at: dict[int, int] = {}      # committed offset value -> its log position
        self._generations: set[tuple[str, int]] = set()
        self._indexed = 0
        self.acked: dict[tuple[str, int], int] = {}     # (group, partition) -> log position of the latest acked commit
        self.joins: dict[tuple[str, int], tuple[str, str | None]] = {}   # (group, gen) -> (leader, protocol)
        self.leader_members: dict[tuple[str, int], set[str]] = {}
        self.joined: dict[tuple[str, int], set[str]] = {}
        self.assigned: dict[tuple[str, int], dict[str, list[int]]] = {}
        self.stats: dict[str, int] = {}

    # -- nodes ---------------------------------------------------------------------------------------
    def _listener_for(self, nid: int) -> OffsetsListener:
        listener = self.listeners[nid] = OffsetsListener(self, nid, lambda: self._count("offsets snapshots loaded"))
        return listener

    def _node_core(self, nid: int, core: RaftCore) -> NodeCore:
        machine = self.listeners[nid].machine
        every = self.snapshot_every.get(nid)
        role = group_role_class(self.group_bugs)(nid, group_config(), machine=machine,
                                                 snapshotter=OffsetsSnapshotter(machine, every) if every else None)
        return NodeCore(core, groups=role, door=self._voter_door(nid), raft_apis=self.raft_apis())

    def _voter_door(self, nid: int) -> ApiDoor:
        voters = [(v, f"v{v}", 9093) for v in self.voter_ids]

        def coordinator(group: str) -> Any:
            core = self.nodes[nid].core
            leader = None if core is None or core.leader_id is None or core.leader_id < 0 else core.leader_id
            return coordinating_voter(group, voters, replicated=True, leader_id=leader)

        reads = VoterReads(nid, self.cfg.cluster_id, {VOTER_LISTENER: (f"v{nid}", 9093)},
                           lambda: {v: (f"v{v}", 9093) for v in self.voter_ids}, MetadataImage, _View,
                           coordinator)
        plane = DoorPlane(ApiRegistry.controller(), "on this simulated voter", lambda: ({}, {}, -1), voter=reads)
        return ApiDoor({VOTER_LISTENER: plane})

    def _broker(self, bid: int, serving_at: int = 0) -> _Broker:
        """A broker incarnation: the production broker plane's door; it serves from ``serving_at``."""
        holder: list[_Broker] = []

        def serving() -> bool:
            return self.now >= holder[0].serving_at

        def view(listener: str) -> LocalView:
            return LocalView(bid, f"b{bid}", 9092, None, serving(), True, 0, tuple(self.voter_ids))

        reads = BrokerReads(bid, self.cfg.cluster_id, MetadataImage, view, serving)
        door = ApiDoor({LISTENER: DoorPlane(ApiRegistry.broker(), "by this simulated broker", lambda: ({}, {}, 0),
                                            broker=reads)})
        broker = _Broker(bid, door, serving_at=serving_at)
        holder.append(broker)
        door.attach(broker.out.append, lambda: (None, 0, None), RaftApis())
        return broker

    def _broker_faults(self) -> None:
        """Until the heal, now and then a broker dies (kill -9: its relays in flight are lost with it) and comes
        back a new incarnation that serves after catching up."""
        if self.healed:
            return
        bid = self.rng.choice(list(self.brokers))
        if self.brokers[bid].up:
            self.brokers[bid].up = False
            self._count("broker crashes")
            down = self.rng.randint(50, 800)

            def restart() -> None:
                self.brokers[bid] = self._broker(bid, self.now + self.rng.randint(0, 300))
            self._later(down, restart)
        self._later(self.rng.randint(200, 1500), self._broker_faults)

    def _on_take_snapshot(self, node: SimNode, out: TakeSnapshot) -> None:
        """Frame the group role's due snapshot inline and hand it back (the server frames it in a thread); the
        production policy then cleans the log below it, so lagging replicas catch up with FetchSnapshot."""
        self.checker.check_hw(node)   # observe the committed prefix before the node core may clean below it
        batches = out.job.frame()
        self._run_core(node, lambda c: c.snapshot_framed(self.now, out.job.sid, batches))
        self._count("offsets snapshots")

    # -- the network between clients, brokers and voters --------------------------------------------
    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _reachable(self, a: int, b: int) -> bool:
        """Clients and brokers reach a voter unless it is cut off from every other voter (or the message is lost)."""
        for v in (a, b):
            if v in self.nodes and len(self.voter_ids) > 1 and all(
                    (v, w) in self.blocked for w in self.voter_ids if w != v):
                return False
        return not (self.drop_p and self.rng.random() < self.drop_p)

    def _deliver(self, a: int, b: int, fn: Callable[[], SimNode | None]) -> None:
        if not self._reachable(a, b):
            return
        lo, hi = self.cfg.latency_ms
        d = self.rng.randint(lo, hi) + self.extra_delay
        for v in (a, b):
            if v in self.nodes:
                d += self.nodes[v].slow_extra
        self.schedule(self.now + d, NET, fn)

    def _later(self, delay: int, fn: Callable[[], SimNode | None]) -> None:
        self.schedule(self.now + delay, NET, fn)

    def _dispatch(self, kind: int, payload: Any) -> SimNode | None:
        if kind == NET:
            return payload()
        return super()._dispatch(kind, payload)

    def _request(self, src: int, dest: int, request: Request, ctx: RequestContext,
                 reply_to: Callable[[Any], None]) -> None:
        """``request`` from ``src`` into the door of ``dest`` (a voter or a broker); ``reply_to(reply)``
        runs back at ``src`` if the answer arrives."""
        ctx = replace(ctx, listener=LISTENER if dest in self.brokers else VOTER_LISTENER)

        def arrive() -> SimNode | None:
            conn = self._next_id()
            self.conns[conn] = (src, reply_to)
            if dest in self.brokers:
                broker = self.brokers[dest]
                if not broker.up:
                    self.conns.pop(conn)
                    return None
                broker.door.handle(self.now, conn, request, ctx)
                self._broker_outputs(broker)
                return None
            node = self.nodes[dest]
            if node.core is None:
                self.conns.pop(conn)
                return None
            self._run_core(node, lambda c: c.handle_api(self.now, conn, request, ctx))
            return node
        self._deliver(src, dest, arrive)

    def _answer(self, endpoint: int, conn: int, reply: Any) -> None:
        held = self.conns.pop(conn, None)
        if held is None:
            return
        src, reply_to = held
        self._deliver(endpoint, src, lambda: (reply_to(reply), None)[1])

    # -- voters: the door's answers and relays, the group role's answers -----------------------------
    def _route(self, node: SimNode, outputs: list[Any]) -> None:
        relays = [o for o in outputs if isinstance(o, Relay)]
        super()._route(node, [o for o in outputs if not isinstance(o, Relay)] if relays else outputs)
        for relay in relays:
            self._later(0, self._shell_submit(node.node_id, node.incarnation, relay))

    def _shell_submit(self, nid: int, inc: int, relay: Relay) -> Callable[[], SimNode | None]:
        """``GroupShell.route`` with the offsets quorum: the relayed group request goes to this voter's group role."""
        def submit() -> SimNode | None:
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc:
                return None
            request = relay.request
            sub = self._next_id()
            self.submits[sub] = (nid, inc, relay.request_id, request)
            self._run_core(node, lambda c: c.submit_group(
                self.now, sub, request.api_key, request.api_version, request.body,
                request.header.client_id or "", relay.context.client_host))
            return node
        return submit

    def _on_respond(self, node: SimNode, out: Respond) -> None:
        sub = self.submits.pop(out.request_id, None)
        if sub is None:
            self._answer(node.node_id, out.request_id, out.body)
            return
        nid, inc, conn, request = sub
        self._pending_acks.append((nid, request, out.body))

        def relayed() -> SimNode | None:
            n = self.nodes[nid]
            if n.core is None or n.incarnation != inc:
                return None
            self._run_core(n, lambda c: c.handle_relayed(self.now, conn, Reply(out.body, request.api_version)))
            return n
        self._later(0, relayed)

    # -- brokers: FindCoordinator and ListGroups' share in the door, relays as GroupRouter ------------
    def _broker_outputs(self, broker: _Broker) -> None:
        out, broker.out[:] = list(broker.out), []
        for o in out:
            if isinstance(o, Respond):
                self._answer(broker.bid, o.request_id, o.body)
            elif isinstance(o, Relay):
                self._broker_route(broker, o)

    def _broker_route(self, broker: _Broker, relay: Relay) -> None:
        request = relay.request
        key, version, body = request.api_key, request.api_version, request.body
        done = [False]

        def finish(resp: Any) -> None:
            if not done[0] and self.brokers[broker.bid] is broker and broker.up:   # else it died meanwhile
                done[0] = True
                broker.door.relayed(relay.request_id, Reply(resp, version))
                self._broker_outputs(broker)

        def send(owner: int | None) -> None:
            if owner is None:
                finish(error_response(key, version, body))
                return

            def answered(reply: Any) -> None:
                if not done[0]:
                    broker.lookup.answered(owner, key, reply.body)
                    self._count("broker relays answered")
                finish(reply.body)

            def no_answer() -> SimNode | None:
                if not done[0]:
                    broker.lookup.unreachable(owner)
                    finish(error_response(key, version, body))
                return None

            ctx = RequestContext(LISTENER, "PLAINTEXT", f"b{broker.bid}", 40000, "User:broker")
            self._request(broker.bid, owner, request, ctx, answered)
            wait = REBALANCE_MS + 1000 if key == ApiKey.JOIN_GROUP else 3000 if key == ApiKey.SYNC_GROUP else 1000
            self._later(wait, no_answer)

        if broker.lookup.coordinator_id is not None:
            send(broker.lookup.coordinator_id)
        else:
            self._discover(broker, list(self.voter_ids), send)

    def _discover(self, broker: _Broker, ids: list[int], then: Callable[[int | None], None]) -> None:
        """``GroupRouter._discover``: ask the voters in turn (FindCoordinator v3) through their doors."""
        probes = broker.lookup.probes(ids)
        self._count("broker lookups")
        step = [0, False]   # next probe, settled

        def ask() -> None:
            if step[0] >= len(probes):
                broker.lookup.none_found()
                step[1] = True
                then(None)
                return
            asked = probes[step[0]]
            step[0] += 1
            mine = step[0]

            def answered(reply: Any) -> None:
                if step[1] or step[0] != mine:
                    return
                if broker.lookup.found(ids, asked, reply.body):
                    step[1] = True
                    then(broker.lookup.coordinator_id)
                else:
                    ask()

            def timeout() -> None:
                if not step[1] and step[0] == mine:
                    ask()
                return None

            find = request_of(FindCoordinatorRequest(key="", key_type=KEY_TYPE_GROUP), 3, 0, "kraftwire-find-coordinator")
            ctx = RequestContext(LISTENER, "PLAINTEXT", f"b{broker.bid}", 40000, "User:broker")
            self._request(broker.bid, asked, find, ctx, answered)
            self._later(500, timeout)
        ask()

    # -- consumers ------------------------------------------------------------------------------------
    def start(self) -> None:
        super().start()
        if "crash" in self.cfg.faults:
            self._later(self.rng.randint(0, 1000), self._broker_faults)
        for c in self.consumers:
            self._later(self.rng.randint(0, 300), self._wake(c))

    def _append(self) -> SimNode | None:
        return None   # the workload is the consumers'

    def _wake(self, c: _Consumer) -> Callable[[], None]:
        def wake() -> None:
            if c.inflight is None:
                self._act(c)
        return wake

    def _count(self, name: str) -> None:
        self.stats[name] = self.stats.get(name, 0) + 1

    def _send(self, c: _Consumer, dest: int, body: Any, on_answer: Callable[[Any], None], timeout: int) -> None:
        rid = self._next_id()
        c.inflight = rid
        version = VERSIONS[body.API_KEY]
        request = request_of(body, version, rid, f"consumer-{c.cid}")
        ctx = RequestContext(LISTENER, "PLAINTEXT", f"c{c.cid}", 50000, "User:consumer")

        def answered(reply: Any) -> None:
            if c.inflight == rid:
                c.inflight = None
                on_answer(reply.body)

        def timed_out() -> None:
            if c.inflight == rid:
                c.inflight = None
                self._count("timeouts")
                self._retry(c, "find", 20)
        self._request(c.cid, dest, request, ctx, answered)
        self._later(timeout, timed_out)

    def _retry(self, c: _Consumer, state: str, delay: int) -> None:
        c.state = state
        if state == "find":
            c.coordinator = None
        self._later(delay + self.rng.randint(0, 30), self._wake(c))

    def _act(self, c: _Consumer) -> None:
        if c.state == "find":
            dest = self.rng.choice(list(self.voter_ids) + list(self.brokers))
            self._send(c, dest, FindCoordinatorRequest(key=c.group, key_type=KEY_TYPE_GROUP),
                       lambda r: self._found(c, r), 500)
        elif c.state == "join":
            body = jgq.JoinGroupRequest(group_id=c.group, session_timeout_ms=SESSION_MS,
                                        rebalance_timeout_ms=REBALANCE_MS, member_id=c.member_id,
                                        protocol_type="consumer",
                                        protocols=[jgq.JoinGroupRequestProtocol(name="range", metadata=b"m")])
            self._send(c, c.coordinator, body, lambda r: self._joined(c, r), REBALANCE_MS + 1500)
        elif c.state == "sync":
            gen = c.generation
            assignments = [sgq.SyncGroupRequestAssignment(member_id=m, assignment=_encode(p))
                           for m, p in _assign(c.members).items()] if c.is_leader else []
            body = sgq.SyncGroupRequest(group_id=c.group, generation_id=gen, member_id=c.member_id,
                                        assignments=assignments)
            self._send(c, c.coordinator, body, lambda r: self._synced(c, gen, r), 3500)
        else:
            self._stable_step(c)

    def _found(self, c: _Consumer, resp: Any) -> None:
        if resp.error_code != 0:
            self._count("no coordinator found")
            self._retry(c, "find", 50)
            return
        c.coordinator = resp.node_id
        self._retry(c, "stable" if c.simple else "join", 0)

    def _common_errors(self, c: _Consumer, error: int) -> bool:
        """What a Kafka consumer does on a coordinator or membership error (True: handled)."""
        if error in MOVED:
            self._count("coordinator moved")
            self._retry(c, "find", 50)
        elif error == UNKNOWN_MEMBER:
            c.member_id, c.generation = "", -1
            self._retry(c, "join", 10)
        elif error in REJOIN:
            self._retry(c, "join", 10)
        elif error:
            self._count(f"error {error}")
            self._retry(c, "find", 100)
        else:
            return False
        return True

    def _joined(self, c: _Consumer, resp: Any) -> None:
        if resp.error_code == int(Errors.MEMBER_ID_REQUIRED):
            c.member_id = resp.member_id
            self._retry(c, "join", 0)
            return
        if self._common_errors(c, resp.error_code):
            return
        self._check_join(c, resp)
        c.member_id, c.generation = resp.member_id, resp.generation_id
        c.is_leader = resp.leader == resp.member_id
        c.members = [m.member_id for m in resp.members]
        self._count("joins")
        self._retry(c, "sync", 0)

    def _synced(self, c: _Consumer, generation: int, resp: Any) -> None:
        if self._common_errors(c, resp.error_code):
            return
        c.owned = _decode(resp.assignment)
        self._check_assignment(c, generation, c.owned)
        self._count("syncs")
        self._retry(c, "stable", 0)

    def _stable_step(self, c: _Consumer) -> None:
        r = self.rng.random()
        parts = list(range(PARTITIONS)) if c.simple else c.owned
        dest = c.coordinator
        if r < 0.45 and parts:
            p = self.rng.choice(parts)
            self.append_counter += 1
            value = self.append_counter
            body = ocq.OffsetCommitRequest(
                group_id=c.group, generation_id_or_member_epoch=-1 if c.simple else c.generation,
                member_id="" if c.simple else c.member_id,
                topics=[ocq.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                    ocq.OffsetCommitRequestPartition(partition_index=p, committed_offset=value)])])
            self._send(c, dest, body, lambda resp: self._committed(c, p, value, resp), 1000)
        elif r < 0.75:
            floors = {p: self.acked.get((c.group, p)) for p in range(PARTITIONS)}
            body = ofq.OffsetFetchRequest(group_id=c.group, topics=[
                ofq.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=list(range(PARTITIONS)))])
            self._send(c, dest, body, lambda resp: self._fetched(c, floors, resp), 1000)
        elif not c.simple and r < 0.78:
            body = lgq.LeaveGroupRequest(group_id=c.group, members=[lgq.MemberIdentity(member_id=c.member_id)])
            self._send(c, dest, body, lambda resp: self._left(c, resp), 1000)
        elif not c.simple:
            body = hbq.HeartbeatRequest(group_id=c.group, generation_id=c.generation, member_id=c.member_id)
            self._send(c, dest, body, lambda resp: self._beat(c, resp), 1000)
        else:
            self._retry(c, "stable", 50)

    def _again(self, c: _Consumer) -> None:
        self._retry(c, "stable", self.rng.randint(20, 150))

    def _left(self, c: _Consumer, resp: Any) -> None:
        """Left the group (a consumer closed or unsubscribed): back as a new member a little later."""
        if self._common_errors(c, resp.error_code):
            return
        self._count("leaves")
        c.member_id, c.generation, c.owned = "", -1, []
        self._retry(c, "join", self.rng.randint(50, 400))

    def _beat(self, c: _Consumer, resp: Any) -> None:
        if not self._common_errors(c, resp.error_code):
            self._again(c)

    def _committed(self, c: _Consumer, partition: int, value: int, resp: Any) -> None:
        error = resp.topics[0].partitions[0].error_code
        if self._common_errors(c, error):
            return
        pos = self._committed_offsets().get(value)
        if pos is None:
            raise Violation(f"consumer {c.cid}: OffsetCommit {value} of {c.group}-{partition} acknowledged "
                            "but not in the committed log")
        key = (c.group, partition)
        self.acked[key] = max(self.acked.get(key, -1), pos)
        self._count("commits acked")
        self._again(c)

    def _fetched(self, c: _Consumer, floors: dict[int, int | None], resp: Any) -> None:
        if self._common_errors(c, resp.error_code):
            return
        offsets = self._committed_offsets()
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    continue
                floor = floors.get(p.partition_index)
                if floor is None:
                    continue
                pos = offsets.get(p.committed_offset)
                if pos is None or pos < floor:
                    raise Violation(f"consumer {c.cid}: OffsetFetch of {c.group}-{p.partition_index} returned "
                                    f"{p.committed_offset} (log position {pos}), older than the commit at log "
                                    f"position {floor} acknowledged before the fetch was sent")
        self._count("fetches checked")
        self._again(c)

    # -- invariants ------------------------------------------------------------------------------------
    def _committed_offsets(self) -> dict[int, int]:
        """Committed offset value -> its log position (each value is committed once at most: values are unique)."""
        entries = self.checker.committed
        for i, r in offsets_records(entries, self._indexed):
            if isinstance(r, OffsetRecord):
                self._offsets_at.setdefault(r.offset, i)
                self.checker.max_counter = max(self.checker.max_counter, r.offset)
            elif isinstance(r, GroupRecord):
                self._generations.add((r.group_id, r.generation))
        self._indexed = len(entries)
        return self._offsets_at

    def _check_durable_answers(self) -> None:
        """The group role's answers of this event: what they depend on is committed."""
        offsets = self._committed_offsets()
        for nid, request, body in self._pending_acks:
            key = request.api_key
            if key == ApiKey.OFFSET_COMMIT:
                for t, tr in zip(request.body.topics, body.topics, strict=False):
                    for p, pr in zip(t.partitions, tr.partitions, strict=False):
                        if pr.error_code == 0 and p.committed_offset not in offsets:
                            raise Violation(f"voter {nid} answered OffsetCommit {p.committed_offset} of "
                                            f"{request.body.group_id}-{p.partition_index} before it was committed")
            elif key == ApiKey.JOIN_GROUP and body.error_code == 0 and \
                    (request.body.group_id, body.generation_id) not in self._generations:
                raise Violation(f"voter {nid} answered JoinGroup of {request.body.group_id} with generation "
                                f"{body.generation_id} before the generation's record was committed")
        self._pending_acks.clear()

    def _check_join(self, c: _Consumer, resp: Any) -> None:
        key = (c.group, resp.generation_id)
        if resp.generation_id < c.last_generation:
            raise Violation(f"consumer {c.cid}: {c.group} generation went back from {c.last_generation} "
                            f"to {resp.generation_id}")
        c.last_generation = resp.generation_id
        seen = self.joins.setdefault(key, (resp.leader, resp.protocol_name))
        if seen != (resp.leader, resp.protocol_name):
            raise Violation(f"{c.group} generation {resp.generation_id}: leader/protocol {seen} and "
                            f"{(resp.leader, resp.protocol_name)} both answered")
        joined = self.joined.setdefault(key, set())
        joined.add(resp.member_id)
        if resp.members:
            members = {m.member_id for m in resp.members}
            if self.leader_members.setdefault(key, members) != members:
                raise Violation(f"{c.group} generation {resp.generation_id}: two member lists")
        listed = self.leader_members.get(key)
        if listed is not None and not joined <= listed:
            raise Violation(f"{c.group} generation {resp.generation_id}: members {sorted(joined - listed)} "
                            "joined it but are not in its leader's member list")

    def _check_assignment(self, c: _Consumer, generation: int, parts: list[int]) -> None:
        given = self.assigned.setdefault((c.group, generation), {})
        before = given.setdefault(c.member_id, parts)
        if before != parts:
            raise Violation(f"{c.group} generation {generation}: member {c.member_id} assigned {before} and {parts}")
        owners: dict[int, str] = {}
        for member, mine in given.items():
            for p in mine:
                if owners.setdefault(p, member) != member:
                    raise Violation(f"{c.group} generation {generation}: partition {p} assigned to "
                                    f"{owners[p]} and {member}")

    def step(self) -> bool:
        more = super().step()
        if self._pending_acks:
            self._check_durable_answers()
        else:
            self._committed_offsets()   # the liveness check counts the committed offsets' values
        return more


def run_groups(seed: int, cfg: SimConfig) -> GroupsSimulation:
    sim = GroupsSimulation(seed, cfg)
    sim.result = sim.run()
    return sim
