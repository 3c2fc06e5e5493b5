"""A kraftwire process: one server composing the roles that ``process.roles`` names.

``Server`` opens the metadata log directory once (refusing a node.id/cluster.id mismatch), runs one
Raft core over it through one ``RaftDriver``, reaches the other nodes through one ``PeerClient`` and
answers every listener through one ``KafkaServer``. The roles bring their handlers and tasks:

- ``VoterRole`` (``process.roles=controller``): Raft voter, quorum controller, group coordinator;
- ``BrokerRole`` (``process.roles=broker``): an observer of the metadata log (or, combined, the
  voter's own replica) with its own image, registration and heartbeats, forwarding of admin writes.

Each listener belongs to one *plane*, as Kafka's ControllerApis and KafkaApis split them: the
controller listeners to the voter's, the others to the broker's (a single-role node has one plane
for all). A plane is one door plane of the node core (``core/api_door.DoorPlane``: ApiVersions,
refusals, one authorization gate and where every advertised API goes); the server carries out what the
door hands back: a ``Read`` (a consumer Fetch or ListOffsets, read from its view of the log), a ``Relay``
(an Envelope to the active controller, a group request to its coordinator, DescribeQuorum to the leader,
BROKER_LOGGER changes). A Raft request naming the voters' offsets quorum enters that quorum's node core,
through a door over the same planes. ``run()`` serves until cancelled or until a role stops the
node; ``shutdown()`` is the broker's controlled shutdown, then the voter's resignation.
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.core import (
    ApiDoor,
    DoorPlane,
    FanOutListener,
    Read,
    Relay,
    RelayKind,
    reads,
)
from kraftwire.core.api_registry import api_versions_response
from kraftwire.group.replicated import OFFSETS_TOPIC
from kraftwire.net.backoff import ReconnectBackoff
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.net.limits import ConnectionLimits
from kraftwire.net.peers import PeerClient
from kraftwire.net.server import KafkaServer
from kraftwire.node import loggers
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.node.listener_pool import ListenerPool
from kraftwire.node.metrics import CombinedMetrics, RaftMetrics, serve_metrics
from kraftwire.node.node_storage import NodeStorage, open_node_storage
from kraftwire.node.raft_driver import RaftDriver, wall_ms
from kraftwire.node.replica import assemble_replica, quorum_raft_config
from kraftwire.node.secure import outbound_security
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.framing import Request
from kraftwire.protocol.metadata import METADATA_TOPIC
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.security.sasl import SASL_APIS
from kraftwire.security.settings import ClientSecurity
from kraftwire.storage.audit import AuditWriter

log = logging.getLogger(__name__)
Address = tuple[str, int]


class FatalNodeError(RuntimeError):
    """The node cannot continue safely (e.g. a committed record it cannot apply)."""


async def discover_voters(servers: list[str], listener: str, timeout_s: float,
                          security: ClientSecurity | None, backoff: ReconnectBackoff) -> dict[int, Address]:
    """Voter ids and controller endpoints from DescribeQuorum v2 on controller.quorum.bootstrap.servers
    (a server that refused lately is skipped until its reconnect backoff ends)."""
    from kraftwire.protocol.messages import describe_quorum_request as dq

    last: Exception | None = None
    async with anyio.create_task_group() as tg:
        for server in servers:
            host, _, port = server.rpartition(":")
            host = host.strip("[]")
            conn = Connection(tg, host, int(port), client_id="kraftwire-broker-bootstrap",
                              connect_timeout_s=timeout_s, security=security,
                              backoff=backoff.for_address(host, int(port)))
            try:
                resp = await conn.request(dq.DescribeQuorumRequest([dq.TopicData(
                    METADATA_TOPIC, [dq.PartitionData(0)])]), None, timeout_s)
            except (RequestFailed, KafkaProtocolError) as e:
                last = e
                continue
            finally:
                await conn.close()
            found = {}
            for node in resp.nodes:
                eps = [e for e in node.listeners if e.name == listener] or list(node.listeners)
                if eps:
                    found[node.node_id] = (eps[0].host, eps[0].port)
            if found:
                tg.cancel_scope.cancel()
                return found
    raise FatalNodeError(f"no voter endpoints from controller.quorum.bootstrap.servers {servers}: {last}")


class Plane:
    """What a set of listeners serves: the role behind them and its node core's door plane (ApiVersions,
    refusals, authorization, where each API goes)."""

    def __init__(self, role: Any, door: DoorPlane) -> None:
        self.role = role
        self.door = door


class Server:
    """One kraftwire process; ``log``/``store``/``cluster_id``/``directory_id`` may be injected (tests)."""

    def __init__(self, cfg: NodeConfig, *, log: Any = None, store: Any = None, cluster_id: str | None = None,
                 directory_id: uuid.UUID | None = None, bootstrap: list[Any] | None = None,
                 offset_store: Any = None, storage: NodeStorage | None = None) -> None:
        from kraftwire.node.broker_role import BrokerRole
        from kraftwire.node.voter import VoterRole

        self.cfg = cfg
        self.node_id = cfg.node_id
        self.voter_set: Any = None           # KIP-853 voter set read from the log (no controller.quorum.voters)
        self.snapshot_control: tuple[Any, ...] = ()   # the control records every snapshot of it carries
        self._started_ms: int | None = None  # when the opened log was ready: the Raft core's start
        if log is None:
            storage = storage or open_node_storage(cfg)
            log, store, cluster_id, directory_id, bootstrap = (storage.log, storage.store, storage.cluster_id,
                                                               storage.directory_id, storage.bootstrap)
            self.dir_locks = storage.dir_locks   # Kafka's .lock, held for the process life
            self.voter_set, self.snapshot_control = storage.voter_set, storage.snapshot_control
            self._started_ms = storage.opened_ms
        self.log, self.store = log, store
        self.cluster_id: str = cluster_id or ""
        self.directory_id = directory_id   # KIP-853 ReplicaDirectoryId of its Fetches
        self.voters: dict[int, Address] = {v.node_id: (v.host, v.port) for v in cfg.voters}
        self.raft_config = quorum_raft_config(cfg)
        self.core: Any = None                # the Raft core of __cluster_metadata
        self.node: Any = None                # the node core around it (core/node_core.py)
        self.driver: Any = None
        self.metrics: Any = None
        # One Raft core, several listeners: each role replays the committed log into its own image.
        self.raft_listeners = FanOutListener([])
        # Every request to another node goes through this one client (lanes per purpose: Raft's own,
        # heartbeats, forwarding; relays for requests made on a client's behalf).
        self.disk = DiskWorker()   # the node's one disk worker (both quorums' drivers)
        self.peers = PeerClient(self.voters, security=outbound_security(cfg), client_id=f"kraftwire-{cfg.node_id}",
                                leader_hint=self.leader_hint, backoff=ReconnectBackoff.from_config(cfg),
                                connect_timeout_s=cfg["controller.quorum.request.timeout.ms"] / 1000)
        self.voter = VoterRole(self, bootstrap, offset_store) if cfg.is_controller else None
        self.broker = BrokerRole(self) if cfg.is_broker else None
        self.roles = [r for r in (self.voter, self.broker) if r is not None]
        self.planes = {role: self._plane(role) for role in self.roles}
        controller_names = set(cfg["controller.listener.names"])
        self.listener_plane = {ep.name: self.planes[self.voter if self.voter is not None and (
            self.broker is None or ep.name in controller_names) else self.broker] for ep in cfg.listeners}
        self.door = ApiDoor({name: plane.door for name, plane in self.listener_plane.items()})
        self.offsets_driver: RaftDriver | None = None   # the voters' offsets quorum's (Raft requests by topic)
        offsets = None if self.voter is None else self.voter.offsets
        if offsets is not None:
            offsets.driver.node.open_door(ApiDoor({name: plane.door for name, plane in self.listener_plane.items()}))
            offsets.driver.relay, offsets.driver.read = self._relay, self._read
            self.offsets_driver = offsets.driver
        # the listeners hand every request to the Raft driver's door (``_build_raft`` binds it)
        self.server = KafkaServer(_no_core_yet, self._api_versions_fallback,
                                  max_request_bytes=cfg["socket.request.max.bytes"],
                                  idle_timeout_s=cfg["connections.max.idle.ms"] / 1000,
                                  limits=ConnectionLimits.from_config(cfg))
        if self.voters:
            self._build_raft()
        # kraftwire.listener.processes: the controller listeners' clients served by listener processes
        self.listener_pool = (ListenerPool(self.server, cfg["kraftwire.listener.processes"])
                              if cfg["kraftwire.listener.processes"] else None)
        self.bound: dict[str, Address] = {}
        self._fatal: str | None = None
        self._fatal_event = anyio.Event()

    # -- construction ---------------------------------------------------------------------------
    def _build_raft(self) -> None:
        """The Raft core and its driver (a broker bootstrapping from controller.quorum.bootstrap.servers
        builds them once it has learnt the voters)."""
        cfg, log_ = self.cfg, self.log
        # The core starts when its log was opened (Kafka initializes the Raft client there, before the
        # controller and the request handlers are built): its election timer runs while the roles are built.
        now, self._started_ms = min(self._started_ms or wall_ms(), wall_ms()), None
        voter = self.voter is not None   # DescribeQuorum lists the voters; BeginQuorumEpoch names our endpoint
        replica = assemble_replica(
            cfg, log_, self.store, voters=list(self.voters), raft_config=self.raft_config, cluster_id=self.cluster_id,
            listener=self.raft_listeners, peers=self.peers, disk=self.disk, voter=voter,
            directory_id=self.directory_id, now_ms=now, controller=None if self.voter is None else self.voter.controller,
            broker=None if self.broker is None else self.broker.role, listener_name=cfg.controller_listener,
            epoch_start_records=self._epoch_start_records(), voter_history=self._voter_history(), door=self.door)
        self.core, self.node, self.driver = replica.core, replica.node, replica.driver
        self.driver.relay = self._relay
        self.driver.read = self._read
        if self.offsets_driver is not None:   # the offsets quorum's Raft requests (by the topic they name)
            self.driver.quorums[OFFSETS_TOPIC] = self.offsets_driver
        # Every request, direct or from an Envelope, enters the node core's one door: the ``Reply`` at once
        # when the core answered (the listener writes it without awaiting), else an awaitable of it.
        self.server.handler = self.driver.handle_api
        self.metrics = RaftMetrics(self.core, log_, controller=None if self.voter is None else self.voter.controller)
        self.driver.metrics = self.metrics
        from kraftwire.storage.log import FileLog

        if voter and isinstance(log_, FileLog):   # the controller's writes: who asked, beside the log
            self.driver.audit = AuditWriter(cfg.metadata_log_dir)
        for role in self.roles:
            role.attach(self.core, self.driver)

    def _voter_history(self) -> Any:
        """KIP-853: a controller whose voters come from its log follows the voter set in force there."""
        if self.voter_set is None:
            return None
        from kraftwire.raft.reconfig import VoterHistory

        return VoterHistory.from_log(self.log)

    async def _discover_voters(self) -> dict[int, Address]:
        """The voters, from controller.quorum.bootstrap.servers; a joining controller (KIP-853) retries, as Kafka's
        observers do, until a voter answers (it may start before them)."""
        cfg = self.cfg
        while True:
            try:
                return await discover_voters(cfg["controller.quorum.bootstrap.servers"], cfg.controller_listener,
                                             cfg["controller.quorum.request.timeout.ms"] / 1000, self.peers.security,
                                             self.peers.backoff)
            except FatalNodeError as e:
                if self.voter_set is None:
                    raise
                log.info("%s; retrying", e)
                await anyio.sleep(cfg["controller.quorum.retry.backoff.ms"] / 1000 + 0.5)

    def _epoch_start_records(self) -> Any:
        """KIP-853: a new leader of a log-held voter set appends KRaftVersion and Voters after LeaderChange."""
        if self.voter_set is None:
            return None
        from kraftwire.node.dynamic_quorum import EpochStartRecords

        return EpochStartRecords(self.log)

    def _plane(self, role: Any) -> Plane:
        """A plane: the role and its door plane, which must route every API the role advertises (the
        listener answers SASL's itself)."""
        door = role.door_plane()
        door.check(role.apis, answered_elsewhere=SASL_APIS)
        return Plane(role, door)

    def _api_versions_fallback(self) -> Reply:
        return Reply(api_versions_response(self.roles[0].apis, int(Errors.UNSUPPORTED_VERSION)), 0)

    # -- running --------------------------------------------------------------------------------
    def leader_hint(self) -> int | None:
        return None if self.core is None else self.core.leader_id

    def stop(self, why: str) -> None:
        """A role cannot go on: ``run`` raises FatalNodeError naming ``why``."""
        if self._fatal is None:
            self._fatal = why
            self._fatal_event.set()

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``task_status`` gets the bound listener addresses."""
        cfg = self.cfg
        async with anyio.create_task_group() as tg:
            self.peers.attach(tg)
            if self.core is None:
                self.voters = await self._discover_voters()
                self.peers.set_peers(self.voters)
                self._build_raft()
            log.info("node %d starting: roles %s, cluster %s, voters %s, log end offset %d", cfg.node_id,
                     ",".join(cfg.roles), self.cluster_id, sorted(self.voters), self.log.end_offset)
            await tg.start(self.driver.run)
            for role in self.roles:
                await tg.start(role.run)
            if cfg["kraftwire.metrics.port"]:
                parts = [self.metrics] + ([self.broker.forwarding_metrics] if self.broker is not None else [])
                host, port = await tg.start(serve_metrics, CombinedMetrics(*parts, self.server),
                                            cfg["kraftwire.metrics.host"], cfg["kraftwire.metrics.port"])
                log.info("metrics on http://%s:%d/metrics", host, port)
            for ep in cfg.listeners:
                role = self.listener_plane[ep.name].role
                serve = self.server.serve if self.listener_pool is None else self.listener_pool.serve
                self.bound[ep.name] = await tg.start(partial(serve, role.security.spec(ep), **role.opening))
            task_status.started(dict(self.bound))
            await self._fatal_event.wait()
            raise FatalNodeError(f"node {cfg.node_id} stopped: {self._fatal}")

    async def shutdown(self, timeout_s: float | None = None, grace_s: float = 2.0) -> None:
        """The broker's controlled shutdown (its leaderships move away), then the voter resigns."""
        if self.broker is not None:
            await self.broker.shutdown(timeout_s)
        offsets = None if self.voter is None else self.voter.offsets
        drivers = [self.driver] + ([] if offsets is None else [offsets.driver])
        leading = [d for d in drivers if d is not None and d.core.is_leader]
        if self.voter is not None and leading:
            for driver in leading:
                driver.call(driver.node.resign)   # EndQuorumEpoch; give it a moment to leave
            with anyio.move_on_after(grace_s):
                await anyio.sleep(min(grace_s, 0.2))
        self.log.flush()
        if offsets is not None:
            offsets.close()
        await self.peers.close()

    # -- the door and what the shell serves ----------------------------------------------------
    async def _relay(self, relay: Relay) -> Reply | None:
        """What the door relays: to the active controller in an Envelope, a group request to its coordinating
        voter, DescribeQuorum to the quorum leader, BROKER_LOGGER changes to this process's log levels."""
        plane = self.listener_plane[relay.context.listener]
        request = relay.request
        if relay.kind is RelayKind.FORWARD:
            return await plane.role.forwarding.forward(request, relay.context)
        if relay.kind is RelayKind.GROUP:
            v = request.api_version
            return Reply(await plane.role.groups.route(request.api_key, v, request.body, request.header.client_id or "",
                                                       relay.context.client_host), v)
        if relay.kind is RelayKind.LOGGERS:
            return Reply(loggers.alter_response(self.node_id, request.body), request.api_version)
        if relay.kind is RelayKind.DESCRIBE_QUORUM:
            v = request.api_version
            answer = await self.describe_quorum(request.body, v, request.header.client_id or "")
            return None if answer is None else Reply(answer, v)   # None: the door gives this replica's view
        raise ValueError(f"no shell carries a {relay.kind} relay")

    def _read(self, read: Read) -> tuple[Any, int]:
        """The door's ``Read``: a consumer Fetch answer from the role's view of the log (zero-copy slices) and
        its record bytes, or a ListOffsets answer (a timestamp's offset is looked up in the log)."""
        request = read.request
        role = self.listener_plane[read.context.listener].role
        if request.api_key == ApiKey.LIST_OFFSETS:
            return reads.list_offsets_response(request.body, request.api_version, role.view), 0
        return reads.consumer_fetch_response(request.body, request.api_version, role.view)

    async def describe_quorum(self, body: Any, version: int, client_id: str) -> Any:
        """DescribeQuorum at a replica that does not lead (the door relays it): ask the leader (following
        NOT_LEADER_OR_FOLLOWER hints; an observer then every voter) and relay its answer, as a Kafka broker
        forwards it to the controller (kafka-python and Java Admin via bootstrap.servers ask any node). A
        voter asks only the leader it knows: with none known (an election) it answers at once, as Kafka's
        controllers do, instead of asking voters that would ask the others in turn until the client gives up.
        None when nobody answered: the door gives this replica's own view."""
        tried = {self.node_id}
        hint = self.leader_hint()
        order = [hint] if hint is not None and hint in self.voters else []
        if self.voter is None:
            order += sorted(self.voters)
        budget = anyio.current_time() + self.driver.request_timeout_s * len(self.voters)
        while order and anyio.current_time() < budget:
            node = order.pop(0)
            if node in tried:
                continue
            tried.add(node)
            try:
                resp = await self.peers.relay(node, body, version, max(0.1, budget - anyio.current_time()),
                                              client_id or "kraftwire-describe-quorum")
            except RequestFailed as e:
                log.debug("DescribeQuorum via node %d failed: %s", node, e)
                continue
            part = _not_leader(resp)
            if part is not None:
                if part.leader_id in self.voters and part.leader_id not in tried:
                    order.insert(0, part.leader_id)
                continue
            return resp
        return None


def _no_core_yet(request: Request, ctx: RequestContext) -> Reply | None:
    raise RuntimeError("a request reached the node before its Raft core was built")


def _not_leader(resp: Any) -> Any:
    """The partition of a DescribeQuorum answer refused with NOT_LEADER_OR_FOLLOWER, else None."""
    part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
    return part if part is not None and part.error_code == Errors.NOT_LEADER_OR_FOLLOWER else None
