"""Quorum controller on the simulated quorum, with brokers (the production broker node core) and an admin agent.

Every voter runs the production ``ControllerRole`` (``kraftwire.core.controller_role``: replay,
activation, commit waiters, step-down, snapshots due) in its node core on simulated time. Every
broker is a Raft observer whose node core runs the production broker role
(``kraftwire.core.broker_lifecycle_role``): it fetches and replays the metadata log into its own
image, snapshots it, registers, heartbeats, asks to be unfenced once caught up, asks for controlled
shutdown, crashes (kill -9, torn writes, wiped disks, the raft faults) and comes back with a new
incarnation. An admin agent creates topics. Brokers' and admin requests cross the simulated network
(latency, loss, crashes), so controller failovers land mid-registration, mid-controlled-shutdown and
between heartbeats.

Checked after every event, on top of the raft invariants:

* one epoch per registration: every acknowledged registration's epoch is the offset of a committed
  RegisterBrokerRecord for that broker and incarnation, and an incarnation gets a new epoch only if
  another incarnation registered that broker id in between;
* no fenced broker leads a partition, in any controller's committed image or the active one's latest;
* an acknowledged CreateTopics is in the responder's committed image, and at the end in every
  replica's image; replicas that replayed the same offsets hold the same topics and brokers;
* snapshots (each voter and broker snapshots its committed image every few records and mostly cleans
  its log): every snapshot id is a committed position, two snapshots at one id hold equal images
  (a broker's and a controller's too), and a replica loading a snapshot (restart, or FetchSnapshot
  from the leader) gets exactly that image;
* every broker's image: replayed records are committed ones, no fenced broker leads a partition in
  it, and at the end it equals every controller's image at the same offset; a broker is never
  unfenced before it has replayed its own registration; every broker up at the end is unfenced;
* partition reassignments (``reassign_sim``: a mover client and a data-plane stand-in for the
  partition leaders): ISR, adding and removing replicas within the replicas in every image, a move
  ends only complete (every replica in the ISR) or cancelled, and none is still moving at the end;
* client quotas and topic configs (``quota_config_sim``: a client sending AlterClientQuotas and
  IncrementalAlterConfigs, valid, refused and validate_only): acknowledged changes in every image at the
  end, refused and validate_only ones in none, every image's quotas and configs as replaying the log once;
* every request enters a node core through its door (``NodeCore.handle_api``) with its principal
  (``door_sim``): no write is authorized that the ACLs of the image the gate read deny; a client's
  write forwarded in an Envelope (``forward_sim``) is applied at most once and under its principal;
  a broker's Metadata answer, through its door (``metadata_sim``), never names a fenced leader, and its
  Metadata, DescribeCluster and DescribeConfigs answers list the brokers and configs of its image.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from kraftwire.broker.lifecycle import BrokerState, LifecycleConfig
from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.core import (
    Audit,
    BrokerLifecycleRole,
    ControllerObserver,
    ControllerRole,
    NodeCore,
    Relay,
    RelayKind,
    Respond,
    SendController,
    TakeSnapshot,
)
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES, LATEST_LEVEL
from kraftwire.metadata.image import MetadataImage
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch
from kraftwire.protocol.requests import Reply
from kraftwire.raft import RaftCore, SimulatedCrash, SnapshotId
from kraftwire.sim.cluster import TICK, UNDO, SimNode, Simulation
from kraftwire.sim.config import SeedResult, SimConfig
from kraftwire.sim.door_sim import (
    ACL_ADMIN,
    ACL_EXTRA,
    ALICE,
    AclWorkload,
    check_authorized_writes,
    context_of,
    controller_door,
    request_of,
)
from kraftwire.sim.forward_sim import Forwarder, controller_class, unwrapped
from kraftwire.sim.invariants import InvariantChecker, Violation
from kraftwire.sim.metadata_sim import BROKER_LISTENER, READER, MetadataReader, broker_door
from kraftwire.sim.quota_config_sim import QUOTA_CLIENT, QuotaConfigWorkload, check_quotas_and_configs
from kraftwire.sim.reassign_sim import CATCH_UP, MOVER, MoveChecker, ReassignWorkload, check_partition

CTICK, AGENT_WAKE, AGENT_REQ, AGENT_RESP, AGENT_TIMEOUT = range(20, 25)
NOT_CONTROLLER = int(Errors.NOT_CONTROLLER)


@dataclass(frozen=True, slots=True)
class ControllerSimConfig:
    """Agents and controller timing on top of the raft ``SimConfig``."""

    brokers: int = 4
    session_timeout_ms: int = 900
    heartbeat_interval_ms: int = 150
    agent_request_timeout_ms: int = 600
    topic_interval_ms: tuple[int, int] = (150, 400)
    broker_fault_interval_ms: int = 700   # mean gap between broker crashes / controlled shutdowns
    controller_tick_ms: int = 50
    timer_lag_ms: int = 50                # how late a node core's timer may fire


# ---------------------------------------------------------------------------------------- controller glue
class SimControllerShell(ControllerObserver):
    """One voter incarnation's controller role (the production ``ControllerRole``, run by the node
    core beside Raft), observed by the invariant checker."""

    def __init__(self, sim: ControllerSimulation, node: SimNode) -> None:
        self.sim = sim
        self.node = node
        every = sim.snapshot_every.get(node.node_id)
        snapshotter = None
        if every:
            # Retention is the simulator's fault choice (snapshot_clean_p per snapshot), not a policy.
            snapshotter = Snapshotter(SnapshotPolicy(max_records=every, max_bytes=0),
                                      RetentionPolicy(max_bytes=-1, max_ms=-1))
        controller = controller_class(sim.cfg.bugs)(sim.ctl_config, seed=sim.rng.getrandbits(32))
        self.role = ControllerRole(node.node_id, controller,
                                   sim.bootstrap, snapshotter=snapshotter, observer=self)
        self._was_active = False

    @property
    def ctl(self) -> QuorumController:
        return self.role.controller

    @property
    def snapshots_loaded(self) -> int:
        return self.role.snapshots_loaded

    # observer: the invariants -----------------------------------------------------------------
    def committed(self, batches: list[RecordBatch]) -> None:
        self.sim.checker.on_commit_callback(self.node.node_id, batches)

    def image(self, image: MetadataImage, which: str) -> None:
        if which != "snapshot":
            self.sim.checker.check_image(self.node.node_id, image, which)

    def snapshot_loaded(self, end_offset: int, epoch: int, image: MetadataImage) -> None:
        sid = SnapshotId(end_offset, epoch)
        self.sim.checker.on_state(self.node.node_id, "load", end_offset, None, sid.epoch)
        expected = self.sim.snapshot_images.get(sid)
        if expected is not None and expected != image:
            raise Violation(f"node {self.node.node_id}: snapshot {sid} loaded a different image than was stored")
        self.sim.checker.check_image(self.node.node_id, image, "snapshot")

    def interrupted(self, request: Any) -> None:
        what = type(request).__name__
        if what == "BrokerHeartbeatRequest" and request.want_shut_down:
            what = "ControlledShutdown"
        self.sim.interrupted[what] = self.sim.interrupted.get(what, 0) + 1

    def after_event(self) -> None:
        """After the node core ran an event: count activations (the core activated if due)."""
        active = self.ctl.active
        if active and not self._was_active:
            self.sim.activations += 1
        self._was_active = active


# ---------------------------------------------------------------------------------------- agents
@dataclass(slots=True)
class BrokerAgent:
    """What the simulation keeps about one broker across its incarnations: the voter it believes is
    the active controller and its current incarnation's broker role (inside that node core)."""

    broker_id: int
    role: BrokerLifecycleRole | None = None   # one per incarnation
    target: int = 1                           # the voter it believes is the active controller

    @property
    def incarnation(self) -> uuid.UUID | None:
        return None if self.role is None else self.role.machine.config.incarnation_id


@dataclass(slots=True)
class AdminAgent:
    target: int = 1
    next_topic: int = 0
    current: str | None = None    # topic being created (retried with the same name until answered)
    inflight: int | None = None


# ---------------------------------------------------------------------------------------- checker
class ControllerChecker(InvariantChecker):
    def __init__(self, sim: ControllerSimulation) -> None:
        super().__init__(sim)
        self.csim = sim
        self.reg_epochs: dict[tuple[int, uuid.UUID], int] = {}
        self.acked_topics: set[str] = set()
        self.topic_acks_after_heal = 0
        self.moves = MoveChecker()

    def after_event(self, node: Any) -> None:
        super().after_event(node)
        self.moves.follow(self.committed)

    def check_image(self, nid: int, image: MetadataImage, which: str) -> None:
        check_quotas_and_configs(nid, which, image)
        for topic in image.topics.values():
            for pid, p in topic.partitions.items():
                check_partition(nid, which, topic.name, pid, p)
                if p.leader < 0:
                    continue
                b = image.brokers.get(p.leader)
                if b is None or b.fenced:
                    state = "unregistered" if b is None else "fenced"
                    raise Violation(f"node {nid} {which} image: {state} broker {p.leader} leads "
                                    f"{topic.name}-{pid}")

    def on_registration_ack(self, broker_id: int, incarnation: uuid.UUID, epoch: int) -> None:
        key = (broker_id, incarnation)
        prev = self.reg_epochs.setdefault(key, epoch)
        if prev != epoch and not self._replaced_between(broker_id, incarnation, prev, epoch):
            raise Violation(f"broker {broker_id} incarnation {incarnation} got epochs {prev} and {epoch}")
        self.reg_epochs[key] = epoch
        if epoch >= len(self.committed):
            raise Violation(f"broker {broker_id} acknowledged epoch {epoch} is not committed")
        value = self.committed[epoch][1]
        msg = decode_record(value).message if value else None
        if not (isinstance(msg, RegisterBrokerRecord) and msg.broker_id == broker_id
                and msg.incarnation_id == incarnation and msg.broker_epoch == epoch):
            raise Violation(f"broker {broker_id} epoch {epoch} is not the offset of its RegisterBrokerRecord "
                            f"(offset holds {type(msg).__name__})")

    def _replaced_between(self, broker_id: int, incarnation: uuid.UUID, first: int, second: int) -> bool:
        """Another incarnation registered ``broker_id`` between the two epochs (e.g. a registration a
        dead process sent just before it died, delivered late): only then may a re-registration of
        ``incarnation`` get a new epoch."""
        for offset in range(min(first, second) + 1, min(max(first, second), len(self.committed))):
            value = self.committed[offset][1]
            msg = decode_record(value).message if value else None
            if (isinstance(msg, RegisterBrokerRecord) and msg.broker_id == broker_id
                    and msg.incarnation_id != incarnation):
                return True
        return False

    def on_topic_answer(self, name: str, responder: SimControllerShell) -> None:
        """When a controller answers CreateTopics with success (checked then: the answer may reach the
        client after the responder has crashed and restarted with a shorter committed prefix)."""
        if responder.ctl.committed_image.topic_by_name(name) is None:
            raise Violation(f"CreateTopics {name} acknowledged by node {responder.node.node_id} "
                            "but not in its committed image")

    def on_topic_ack(self, name: str) -> None:
        self.acked_topics.add(name)
        if self.sim.healed:
            self.topic_acks_after_heal += 1

    def check_liveness(self) -> None:
        sim = self.csim
        leaders = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            raise Violation("liveness: no raft leader after the heal")
        if not any(s.ctl.active for s in sim.shells.values()):
            raise Violation("liveness: no active controller after the heal")
        if self.topic_acks_after_heal == 0:
            raise Violation("liveness: no CreateTopics acknowledged after the heal")
        by_offset: dict[int, tuple[int, Any]] = {}
        images = [(nid, shell.ctl.committed_image, shell.ctl.committed_offset) for nid, shell in sim.shells.items()
                  if sim.nodes[nid].core is not None]
        images += [(bid, a.role.metadata.image, a.role.metadata.applied_offset) for bid, a in sim.agents.items()
                   if a.role is not None and sim.nodes[bid].core is not None]
        for nid, image, offset in images:
            missing = [t for t in self.acked_topics if t not in image.topic_ids and offset >= self._acked_by]
            if missing:
                raise Violation(f"node {nid}: acknowledged topics {sorted(missing)[:5]} missing from its image")
            other = by_offset.setdefault(offset, (nid, image))
            if other[1] != image:
                raise Violation(f"nodes {other[0]} and {nid} replayed to offset {offset} but hold different images")
        for bid, agent in sim.agents.items():
            role = agent.role
            if role is not None and sim.nodes[bid].core is not None and not role.serving:
                raise Violation(f"liveness: broker {bid} is up but not serving after the heal "
                                f"({role.state.name}, replayed to {role.metadata.applied_offset})")
        sim.moves.check_settled(self.moves.image)
        sim.quota_configs.check_end(images, self.committed)
        sim.acl_clients.check_end()
        sim.forwarder.check_end(self.committed)

    @property
    def _acked_by(self) -> int:
        return self.csim.last_topic_ack_offset


# ---------------------------------------------------------------------------------------- simulation
class ControllerSimulation(Simulation):
    """The raft simulation with a controller on every voter and scripted agents as the workload."""

    def __init__(self, seed: int, cfg: SimConfig, ccfg: ControllerSimConfig | None = None) -> None:
        self.ccfg = ccfg or ControllerSimConfig()
        super().__init__(seed, replace(cfg, observers=self.ccfg.brokers))   # the brokers are the observers
        self.checker = ControllerChecker(self)
        self.ctl_config = ControllerConfig(cluster_id=cfg.cluster_id, session_timeout_ms=self.ccfg.session_timeout_ms,
                                           max_idle_interval_ms=500, default_replication_factor=2,
                                           auto_leader_rebalance=False)
        self.metadata_version = cfg.metadata_version or LATEST_LEVEL
        self.bootstrap = bootstrap_records(self.metadata_version)
        self.shells: dict[int, SimControllerShell] = {}
        self.agents = {bid: BrokerAgent(bid) for bid in self.observer_ids}
        self.admin = AdminAgent()
        self.moves = ReassignWorkload(self)
        self.quota_configs = QuotaConfigWorkload(self)
        self.acl_clients = AclWorkload(self)
        self.forwarder = Forwarder(self)
        self.reader = MetadataReader(self)
        self._agent_seq = 0
        self._agent_calls: dict[int, tuple[Any, Any, Any]] = {}   # seq -> (agent key, life, request)
        self.activations = 0
        self.shutdowns = 0
        self.shutdown_timeouts = 0   # controlled shutdowns that stopped anyway (the server's timeout)
        self.interrupted: dict[str, int] = {}   # request kind -> answers lost to a controller failover
        self.last_topic_ack_offset = -1
        self._answered_offsets: dict[int, int] = {}   # admin seq -> responder's committed offset then
        self.snapshot_images: dict[SnapshotId, MetadataImage] = {}

    # nodes get a fresh controller or broker role per incarnation (it replays the log from the start)
    def _start(self, nid: int, rejoining: bool) -> None:
        node = self.nodes[nid]
        if node.is_voter:
            self.shells[nid] = SimControllerShell(self, node)
        super()._start(nid, rejoining)
        if node.core is not None and node.is_voter:
            self.schedule(self.now + self.ccfg.controller_tick_ms, CTICK, (nid, node.incarnation))

    def _listener_for(self, nid: int) -> Any:
        if nid in self.agents:
            return self._broker_role(nid).metadata
        return self.shells[nid].role

    def _controller_for(self, nid: int) -> Any:
        return self.shells[nid].role if nid in self.shells else None

    def _node_core(self, nid: int, core: RaftCore) -> NodeCore:
        agent = self.agents.get(nid)
        if agent is None:
            role = self.shells[nid].role
            return NodeCore(core, role, door=controller_door(role, self.cfg.bugs), raft_apis=self.raft_apis())
        door = broker_door(nid, agent.role, self.cfg.cluster_id, tuple(self.voter_ids), self.cfg.bugs)
        return NodeCore(core, broker=agent.role, door=door, raft_apis=self.raft_apis())

    def _broker_role(self, bid: int) -> BrokerLifecycleRole:
        """A new incarnation of broker ``bid``: the production broker role over the production metadata
        listener, observed by the checker."""
        agent, ccfg, node = self.agents[bid], self.ccfg, self.nodes[bid]
        every = self.snapshot_every.get(bid)
        snapshotter = Snapshotter(SnapshotPolicy(max_records=every, max_bytes=0),
                                  RetentionPolicy(max_bytes=-1, max_ms=-1)) if every else None
        metadata = BrokerMetadataListener()
        metadata.on_commit.append(lambda batches: self._broker_committed(bid, metadata, batches))
        metadata.on_snapshot.append(lambda end, epoch: self._broker_loaded(bid, metadata, end, epoch))
        metadata.on_fatal.append(lambda e: self._broker_fatal(bid, e))
        agent.role = BrokerLifecycleRole(LifecycleConfig(
            node_id=bid, cluster_id=self.cfg.cluster_id, incarnation_id=uuid.UUID(int=bid << 32 | node.incarnation),
            listeners=(("PLAINTEXT", f"b{bid}", 9092, 0),),
            features=tuple((n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())),
            log_dirs=(uuid.UUID(int=bid << 64 | 1),),
            heartbeat_interval_ms=ccfg.heartbeat_interval_ms, session_timeout_ms=ccfg.session_timeout_ms,
            retry_backoff_ms=20, max_backoff_ms=100, shutdown_heartbeat_ms=50,
            initial_registration_timeout_ms=10 ** 9), metadata, snapshotter=snapshotter)   # never gives up
        return agent.role

    def _broker_committed(self, bid: int, metadata: BrokerMetadataListener, batches: list[RecordBatch]) -> None:
        self.checker.on_commit_callback(bid, batches)
        self.checker.check_image(bid, metadata.image, "broker")
        self.reader.after_commit(bid, metadata.image)

    def _broker_loaded(self, bid: int, metadata: BrokerMetadataListener, end: int, epoch: int) -> None:
        self.checker.on_state(bid, "load", end, None, epoch)
        expected = self.snapshot_images.get(SnapshotId(end, epoch))
        if expected is not None and expected != metadata.image:
            raise Violation(f"broker {bid}: snapshot {SnapshotId(end, epoch)} loaded a different image than was stored")
        self.checker.check_image(bid, metadata.image, "broker snapshot")

    def _broker_fatal(self, bid: int, e: BaseException) -> None:
        raise Violation(f"broker {bid} cannot apply committed metadata: {e}")

    def _schedule_tick(self, node: SimNode) -> None:
        """The node core's timer, late by up to ``timer_lag_ms`` (a loaded event loop wakes its timer
        task late): requests that arrive meanwhile are handled before the due work, e.g. a broker's
        new incarnation registering between its session's expiry and the controller's tick."""
        assert node.node is not None
        deadline = node.node.next_deadline()
        if deadline is None:
            node.tick_at = None
            return
        if node.tick_at is not None and node.tick_at >= max(deadline, self.now) and node.tick_due == deadline:
            return   # already scheduled for this deadline
        at = max(deadline, self.now) + node.slow_extra + self.rng.randint(0, self.ccfg.timer_lag_ms)
        node.tick_at, node.tick_due = at, deadline
        self.schedule(at, TICK, (node.node_id, node.incarnation, at))

    def _on_take_snapshot(self, node: SimNode, out: TakeSnapshot) -> None:
        """Frame the node core's due snapshot inline and hand it back; usually clean the log below it."""
        sid, image = out.job.sid, out.job.image
        other = self.snapshot_images.setdefault(sid, image)
        if other != image:
            raise Violation(f"node {node.node_id}: snapshot {sid} holds another image than an earlier one at that id")
        batches = out.job.frame()
        self._run_core(node, lambda c: c.snapshot_framed(self.now, sid, batches))
        core = node.core
        if core is None or core.log.latest_snapshot_id() != sid:
            return
        self.checker.on_state(node.node_id, "snapshot", sid.end_offset, None, sid.epoch)
        if self.rng.random() < self.cfg.snapshot_clean_p:
            self.checker.check_hw(node)
            core.delete_before(sid)

    def _on_respond(self, node: SimNode, out: Respond) -> None:
        if self.forwarder.on_respond(node, out.request_id, out.body):
            return   # an Envelope's answer, or its inner request's
        body = out.body.body if isinstance(out.body, Reply) else out.body   # the door answers with a Reply
        self._answer(out.request_id, node.node_id, node.incarnation, body)

    def crash(self, nid: int, mode: str = "crash", restart_after: int | None = None, wipe: bool = False) -> None:
        node = self.nodes[nid]
        if node.node is not None:   # waiting requests are answered NOT_CONTROLLER as the node goes
            self._route(node, node.node.stop(self.now))
            if nid in self.shells:
                self.shells[nid]._was_active = False
        if nid in self.agents:
            self.agents[nid].role = None
        super().crash(nid, mode, restart_after, wipe)

    def _run_core(self, node: SimNode, fn: Any) -> None:
        super()._run_core(node, fn)
        shell = self.shells.get(node.node_id)
        if shell is not None and node.core is not None and shell.node is node:
            shell.after_event()
        agent = self.agents.get(node.node_id)
        role = None if agent is None else agent.role
        if role is None:
            return
        if role.serving and role.metadata.applied_offset < role.machine.broker_epoch:
            raise Violation(f"broker {node.node_id} is unfenced before replaying its own registration (broker "
                            f"epoch {role.machine.broker_epoch}, replayed to {role.metadata.applied_offset})")
        if role.state == BrokerState.SHUTDOWN:
            self._broker_stopped(node, role)

    def _broker_stopped(self, node: SimNode, role: BrokerLifecycleRole) -> None:
        """The broker's lifecycle ended: controlled shutdown done, so the process exits."""
        if role.machine.fatal is not None:
            raise Violation(f"broker {node.node_id} stopped: {role.machine.fatal}")
        self.shutdowns += 1
        self._exit_broker(node)

    def _exit_broker(self, node: SimNode) -> None:
        """The broker process exits (its log flushed, as a clean stop does) and starts again later."""
        mode = "crash"
        try:
            node.log.flush()
        except SimulatedCrash:   # an armed disk fault: the process dies in its last flush
            mode = node.crash_mode
        self.crash(node.node_id, mode, restart_after=self.rng.randint(200, 1500))

    def _route(self, node: SimNode, outputs: list[Any]) -> None:
        sends = [o for o in outputs if type(o) is SendController]
        relays = [o for o in outputs if type(o) is Relay]
        rest = [o for o in outputs if type(o) not in (SendController, Relay, Audit)]
        super()._route(node, rest)
        if node.core is None:   # it died writing its quorum-state: nothing of the event left it
            return
        for relay in relays:
            self._on_relay(node, relay)
        for out in sends:
            agent = self.agents[node.node_id]
            self._send(node.node_id, (node.incarnation, out.request_id), agent.target, out.request)

    # workload ----------------------------------------------------------------------------------
    def start(self) -> None:
        for agent in self.agents.values():
            agent.target = self.rng.choice(self.voter_ids)
        super().start()
        self.admin.target = self.rng.choice(self.voter_ids)
        self.schedule(self.rng.randint(200, 500), AGENT_WAKE, ("admin", 0))
        self.moves.start()
        self.quota_configs.start()
        self.acl_clients.start()
        self.reader.start()
        if self.faults:
            self.schedule(self.rng.randint(0, self.ccfg.broker_fault_interval_ms), AGENT_WAKE, ("fault", 0))

    def _append(self) -> None:
        return None   # the agents are the workload; raw appends would not be metadata records

    def _dispatch(self, kind: int, payload: Any) -> SimNode | None:
        if kind < CTICK:
            return super()._dispatch(kind, payload)
        if kind == CTICK:
            nid, inc = payload
            node = self.nodes[nid]
            if node.core is None or node.incarnation != inc:
                return None
            self._run_core(node, lambda c: c.tick(self.now))
            self.schedule(self.now + self.ccfg.controller_tick_ms, CTICK, payload)
            return node
        if kind == AGENT_WAKE:
            self._wake(*payload)
        elif kind == AGENT_REQ:
            seq, dest, request, agent = payload
            node = self.nodes[dest]
            if node.core is None:
                return None
            codec = self.codec
            version = type(request).MAX_VERSION if codec is None else codec.version(request.API_KEY)
            self._handle_api(node, seq, request_of(request, version, seq, str(agent)), context_of(agent))
            return node
        elif kind == AGENT_RESP:
            seq, dest, response = payload
            self._on_response(seq, dest, response)
        elif kind == AGENT_TIMEOUT:
            self._on_response(payload, None, None)
        return None

    def _handle_api(self, node: SimNode, conn: int, request: Any, context: Any) -> None:
        """A request through the node core's door (``NodeCore.handle_api``), as a listener hands it in."""
        shell = self.shells.get(node.node_id)
        agent = self.agents.get(node.node_id)
        serving = False
        if shell is not None:
            image = shell.ctl.committed_image   # what the gate reads
        elif agent is not None and agent.role is not None:
            image = agent.role.metadata.image   # what the broker answers from
            serving = agent.role.serving
            context = replace(context, listener=BROKER_LISTENER)
        else:
            return

        def run(core: NodeCore) -> list[Any]:
            outputs = core.handle_api(self.now, conn, request, context)
            if shell is None:
                self.reader.on_handled(node.node_id, image, serving, request, outputs)
                return outputs
            client_request, forwarded = unwrapped(request)   # the door unwraps Envelopes itself
            check_authorized_writes(node.node_id, image, client_request, outputs)
            self.forwarder.check_writes(node.node_id, client_request, forwarded, outputs)
            return outputs
        self._run_core(node, run)

    def _on_relay(self, node: SimNode, relay: Relay) -> None:
        """What the shell does with a ``Relay``: a client's write that reached an inactive voter is forwarded in
        an Envelope (``forward_sim``; alice's and the ACL admin's) or answered NOT_CONTROLLER (the client
        follows the hint). The door unwraps Envelopes itself."""
        request = relay.request
        if relay.kind is RelayKind.FORWARD and self.forwarder.wants(relay):
            self.forwarder.start(node, relay)
            return
        if relay.kind is RelayKind.FORWARD:
            version = request.api_version
            reply = Reply(request.body.error_response(version, NOT_CONTROLLER, "not the active controller"), version)
            self._run_core(node, lambda c: c.handle_relayed(self.now, relay.request_id, reply))
            return
        raise Violation(f"node {node.node_id}: the door relayed {type(request.body).__name__} ({relay.kind}), "
                        "which the simulation's clients never expect")

    def _answer(self, seq: int, dest: int, inc: int, response: Any) -> None:
        if self.nodes[dest].incarnation != inc:
            return
        call = self._agent_calls.get(seq)
        if call is not None and call[0] == "admin" and response.topics and response.topics[0].error_code == 0:
            shell = self.shells[dest]
            self.checker.on_topic_answer(response.topics[0].name, shell)
            self._answered_offsets[seq] = shell.ctl.committed_offset
        if call is not None and call[0] == QUOTA_CLIENT:
            self.quota_configs.on_answer(seq, self.shells[dest], response)
        if self.drop_p and self.rng.random() < self.drop_p:
            return
        if self.codec is not None and call is not None:
            response = self.codec.kafka_response(call[2].API_KEY, response)
        self.schedule(self.now + self._latency(dest, dest), AGENT_RESP, (seq, dest, response))

    def _send(self, key: Any, life: Any, target: int, request: Any) -> int:
        self._agent_seq += 1
        seq = self._agent_seq
        self._agent_calls[seq] = (key, life, request)
        self.schedule(self.now + self.ccfg.agent_request_timeout_ms, AGENT_TIMEOUT, seq)
        if not (self.drop_p and self.rng.random() < self.drop_p):
            wired = request if self.codec is None else self.codec.kafka_request(request)
            self.schedule(self.now + self._latency(target, target), AGENT_REQ, (seq, target, wired, key))
        return seq

    def wake_agent(self, at: int, key: str) -> None:
        self.schedule(at, AGENT_WAKE, (key, 0))

    def send_agent(self, key: str, target: int, request: Any) -> int:
        """Send a scripted client's request; its answer (or None on timeout) comes back to its agent."""
        return self._send(key, 0, target, request)

    def retarget(self, current: int) -> int:
        return self._retarget(current)

    def _retarget(self, current: int) -> int:
        """The next voter to ask after NOT_CONTROLLER or no answer: the leader the refusing voter knows
        (what a client learns from Metadata's ControllerId), else a random other voter."""
        node = self.nodes.get(current)
        hint = None if node is None or node.core is None else node.core.leader_id
        if hint is not None and hint != current and self.rng.random() < 0.8:
            return hint
        others = [v for v in self.voter_ids if v != current] or self.voter_ids
        return self.rng.choice(others)

    # agent behaviour ---------------------------------------------------------------------------
    def _wake(self, key: Any, life: int) -> None:
        if key == "fault":
            if not self.healed:
                self._broker_fault()
                self.schedule(self.now + self.rng.randint(1, 2 * self.ccfg.broker_fault_interval_ms),
                              AGENT_WAKE, ("fault", 0))
            return
        if key == "admin":
            self._admin_step()
            return
        if key in (MOVER, CATCH_UP):
            self.moves.wake(key)
            return
        if key == QUOTA_CLIENT:
            self.quota_configs.wake()
            return
        if key in (ALICE, ACL_ADMIN, ACL_EXTRA):
            self.acl_clients.wake(key)
            return
        if key == READER:
            self.reader.wake()
            return
        raise ValueError(f"unknown agent {key!r}")

    def _broker_fault(self) -> None:
        """A broker process goes: kill -9 (a new incarnation later), or a controlled shutdown."""
        up = [bid for bid, a in self.agents.items() if a.role is not None and self.nodes[bid].core is not None]
        if not up:
            return
        bid = self.rng.choice(up)
        node = self.nodes[bid]
        if self.rng.random() < 0.5:
            self.crash(bid, "crash", restart_after=self.rng.randint(300, 2500))
        else:
            role = self.agents[bid].role
            if role is not None and role.machine.registered:
                self._run_core(node, lambda c: c.begin_shutdown(self.now))
                # As the server's controlled shutdown: it stops anyway after twice the session timeout
                # (a broker that is the last ISR member of a partition keeps its leadership until then).
                inc = node.incarnation
                self.schedule(self.now + 2 * self.ccfg.session_timeout_ms, UNDO,
                              lambda: self._shutdown_timed_out(bid, inc))

    def _shutdown_timed_out(self, bid: int, incarnation: int) -> None:
        node, role = self.nodes[bid], self.agents[bid].role
        if (node.core is None or node.incarnation != incarnation or role is None
                or role.state != BrokerState.PENDING_CONTROLLED_SHUTDOWN):
            return
        self.shutdown_timeouts += 1
        self._exit_broker(node)

    def _admin_step(self) -> None:
        adm = self.admin
        lo, hi = self.ccfg.topic_interval_ms
        self.schedule(self.now + self.rng.randint(lo, hi), AGENT_WAKE, ("admin", 0))
        if adm.inflight is not None:
            return
        if adm.current is None:
            adm.current = f"t{adm.next_topic}"
            adm.next_topic += 1
        topic = ctq.CreatableTopic(name=adm.current, num_partitions=2, replication_factor=2)
        adm.inflight = self._send("admin", 0, adm.target, ctq.CreateTopicsRequest(topics=[topic], timeout_ms=5000))

    def _on_response(self, seq: int, dest: int | None, response: Any) -> None:
        call = self._agent_calls.pop(seq, None)
        if call is None:
            return   # answered already, or timed out already
        key, life, request = call
        if key == "admin":
            self._admin_response(seq, dest, response)
            return
        if key in (MOVER, CATCH_UP):
            self.moves.on_response(key, seq, response)
            return
        if key == QUOTA_CLIENT:
            self.quota_configs.on_response(seq, response)
            return
        if key in (ALICE, ACL_ADMIN, ACL_EXTRA):
            self.acl_clients.on_response(key, seq, response)
            return
        if key == READER:
            self.reader.on_response(response)
            return
        node, agent = self.nodes[key], self.agents[key]
        incarnation, rid = life
        if node.incarnation != incarnation or node.core is None or agent.role is None:
            return   # the broker process that asked is gone
        if response is None:
            agent.target = self._retarget(agent.target)
            self._run_core(node, lambda c: c.handle_controller_failed(self.now, rid))
            return
        if response.error_code == NOT_CONTROLLER:
            agent.target = self._retarget(agent.target)
        if (isinstance(request, brq.BrokerRegistrationRequest) and response.error_code == 0
                and agent.role.inflight == rid):
            self.checker.on_registration_ack(key, request.incarnation_id, response.broker_epoch)
        self._run_core(node, lambda c: c.handle_controller_response(self.now, rid, response))

    def _admin_response(self, seq: int, dest: int | None, response: Any) -> None:
        adm = self.admin
        if adm.inflight != seq:
            return
        adm.inflight = None
        if response is None or response.topics[0].error_code == NOT_CONTROLLER:
            adm.target = self._retarget(adm.target)
            return
        code = response.topics[0].error_code
        if code == 0:
            self.last_topic_ack_offset = max(self.last_topic_ack_offset, self._answered_offsets.pop(seq))
            self.checker.on_topic_ack(adm.current)
            adm.current = None
        elif code == int(Errors.TOPIC_ALREADY_EXISTS):
            adm.current = None   # an earlier try committed but its answer was lost
        elif code == int(Errors.INVALID_REPLICATION_FACTOR):
            pass                 # too few unfenced brokers right now: try again later
        else:
            raise Violation(f"CreateTopics {adm.current}: unexpected error {Errors(code).name}")

    # results -----------------------------------------------------------------------------------
    def run(self) -> SeedResult:
        result = super().run()
        result.committed = len(self.checker.committed)
        return result


def run_controller_seed(seed: int, cfg: SimConfig | None = None,
                        ccfg: ControllerSimConfig | None = None) -> tuple[SeedResult, ControllerSimulation]:
    """Run one seed; the finished simulation is returned for its counters."""
    sim = ControllerSimulation(seed, cfg or SimConfig(), ccfg)
    return sim.run(), sim
