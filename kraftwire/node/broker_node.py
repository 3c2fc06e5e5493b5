"""A kraftwire broker process (``process.roles=broker``): observer, registrant, metadata cache, forwarder.

``BrokerNode.run()`` opens the broker's own copy of the metadata log, follows the quorum as a Raft
observer (Fetch with ReplicaId = node.id), replays committed records into its metadata image,
registers with the active controller and heartbeats (``kraftwire.broker.lifecycle``), and serves
clients: Metadata and DescribeCluster from the image, ``__cluster_metadata`` reads from its
replica, DescribeConfigs/DescribeAcls from the image, and admin writes forwarded to the active
controller in Envelopes. ``shutdown()`` is Kafka's controlled shutdown.
"""

from __future__ import annotations

import base64
import logging
import random
import uuid
from functools import partial
from typing import Any

import anyio

from kraftwire.broker.envelope import FORWARDED_APIS
from kraftwire.broker.forwarding import ForwardingManager
from kraftwire.broker.heartbeats import LifecycleDriver
from kraftwire.broker.lifecycle import SECURITY_PROTOCOLS, BrokerLifecycle, BrokerState, LifecycleConfig
from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.broker.metadata_cache import (
    LocalView,
    describe_cluster_response,
    describe_topic_partitions_response,
    live_brokers,
    metadata_response,
)
from kraftwire.config import NodeConfig
from kraftwire.controller import acls as acl_cmds
from kraftwire.controller import configs as config_cmds
from kraftwire.controller import scram as scram_cmds
from kraftwire.controller.result import CommandError
from kraftwire.group import GROUP_APIS
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.net.limits import ConnectionLimits
from kraftwire.net.peers import PeerClient
from kraftwire.net.server import KafkaServer, Reply, RequestContext
from kraftwire.node import reads, serving
from kraftwire.node.apis import (
    BROKER_FORWARDED_APIS,
    BROKER_LOCAL_APIS,
    BROKER_ONLY_APIS,
    RAFT_APIS,
    Dispatcher,
    api_versions_response,
    supported,
)
from kraftwire.node.controller_shell import snapshotter_for
from kraftwire.node.group_proxy import FIND_COORDINATOR, LIST_GROUPS, GroupRouter, find_coordinator, java_hash
from kraftwire.node.group_proxy import error_response as group_error_response
from kraftwire.node.metrics import CombinedMetrics, ForwardingMetrics, RaftMetrics, serve_metrics
from kraftwire.node.node import FatalNodeError, raft_config
from kraftwire.node.raft_driver import RaftDriver, wall_ms
from kraftwire.node.secure import NodeSecurity
from kraftwire.node.snapshots import snapshot_step
from kraftwire.node.view import LogPartitionView
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.framing import Request
from kraftwire.raft.core import RaftCore
from kraftwire.security.sasl import SASL_APIS
from kraftwire.security.settings import ClientSecurity

log = logging.getLogger(__name__)


class BrokerLogView(LogPartitionView):
    """The broker's replica of ``__cluster_metadata`` as clients see it: led by this broker."""

    def __init__(self, core: Any, log_: Any, node_id: int) -> None:
        super().__init__(core, log_)
        self.node_id = node_id

    @property
    def leader_id(self) -> int:
        return self.node_id if self.core.leader_id is not None else -1


def directory_uuid(directory_id: str) -> uuid.UUID:
    """meta.properties' base64url directory.id as the UUID BrokerRegistration carries."""
    try:
        raw = base64.urlsafe_b64decode(directory_id + "==")
        if len(raw) == 16:
            return uuid.UUID(bytes=raw)
    except ValueError:
        pass
    return uuid.uuid4()


async def discover_voters(servers: list[str], listener: str, timeout_s: float,
                          security: ClientSecurity | None) -> dict[int, tuple[str, int]]:
    """Voter ids and controller endpoints from DescribeQuorum v2 on controller.quorum.bootstrap.servers."""
    from kraftwire.protocol.messages import describe_quorum_request as dq

    last: Exception | None = None
    async with anyio.create_task_group() as tg:
        for server in servers:
            host, _, port = server.rpartition(":")
            conn = Connection(tg, host.strip("[]"), int(port), client_id="kraftwire-broker-bootstrap",
                              connect_timeout_s=timeout_s, security=security)
            try:
                resp = await conn.request(dq.DescribeQuorumRequest([dq.TopicData(
                    reads.METADATA_TOPIC, [dq.PartitionData(0)])]), None, timeout_s)
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


class BrokerNode:
    """One broker-only kraftwire process."""

    def __init__(self, cfg: NodeConfig, *, log: Any = None, store: Any = None, cluster_id: str | None = None,
                 directory_id: uuid.UUID | None = None, voter: Any = None) -> None:
        """Open the broker's storage (``log``/``store``/``cluster_id`` may be injected in tests). With
        ``voter`` (a combined node's controller half) the broker follows that voter's replica instead."""
        self.cfg = cfg
        self.voter = voter
        if voter is not None:
            log, store, cluster_id = voter.log, voter.store, voter.cluster_id
            directory_id = voter.directory_id
        elif log is None:
            from kraftwire.storage.data_dirs import open_data_dirs
            from kraftwire.storage.log import FileLog
            from kraftwire.storage.quorum_state import FileQuorumStateStore

            meta, self.dir_locks = open_data_dirs(cfg)  # Kafka's .lock, held for the process life
            cluster_id = meta.cluster_id
            directory_id = directory_uuid(meta.directory_id)
            log = FileLog(cfg.metadata_log_dir / "__cluster_metadata-0",
                          segment_bytes=cfg["metadata.log.segment.bytes"])
            store = FileQuorumStateStore(cfg.metadata_log_dir / "__cluster_metadata-0" / "quorum-state")
        self.cluster_id: str = cluster_id or ""
        self.log = log
        self.directory_id = directory_id   # KIP-853 ReplicaDirectoryId of its Fetches
        self.store = store
        self.metadata = BrokerMetadataListener()
        # The broker snapshots its own image and cleans its log under the voters' policy (KIP-630).
        self.snapshotter = snapshotter_for(cfg)
        self.snapshots_taken = 0
        self._snapshot_wake = anyio.Event()
        self.metadata.on_commit.append(self._committed)
        self.metadata.on_snapshot.append(lambda end, epoch: self.snapshotter.loaded(end, epoch))
        self.voters: dict[int, tuple[str, int]] = {v.node_id: (v.host, v.port) for v in cfg.voters}
        self.core: Any = None
        self.driver: Any = None
        # Forwarded admin writes are authorized by the controller, as the client inside the Envelope.
        self.security = NodeSecurity(cfg, lambda: self.metadata.image, skip=FORWARDED_APIS)
        # Every request to a voter (Raft's own, heartbeats, forwarded Envelopes, relayed group requests and
        # DescribeQuorum) goes through one peer client; heartbeats and forwarding have lanes of their own,
        # so that neither waits behind the other (a controller answers one connection's requests in order).
        self.peers = PeerClient(self.voters, security=self.security.outbound, leader_hint=self._leader_hint,
                                client_id=f"kraftwire-broker-{cfg.node_id}",
                                connect_timeout_s=cfg["controller.quorum.request.timeout.ms"] / 1000)
        self.view: Any = None
        self.raft_metrics: Any = None
        if voter is not None:
            self._share_raft(voter)
        elif self.voters:
            self._build_raft()
        controller_names = set(cfg["controller.listener.names"])
        self.advertised = {e.name: e for e in cfg.advertised() if e.name not in controller_names}
        rack = cfg["broker.rack"] or None
        self.rack = rack
        self.lifecycle = BrokerLifecycle(LifecycleConfig(
            node_id=cfg.node_id, cluster_id=self.cluster_id, incarnation_id=uuid.uuid4(),
            listeners=tuple((e.name, e.host, e.port, SECURITY_PROTOCOLS[cfg.security_protocol(e.name)])
                            for e in self.advertised.values()),
            features=tuple((n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())),
            log_dirs=(directory_id or uuid.uuid4(),), rack=rack,
            heartbeat_interval_ms=cfg["broker.heartbeat.interval.ms"],
            session_timeout_ms=cfg["broker.session.timeout.ms"],
            initial_registration_timeout_ms=cfg["initial.broker.registration.timeout.ms"],
            retry_backoff_ms=max(10, cfg["controller.quorum.retry.backoff.ms"]),
            max_backoff_ms=max(100, min(1000, cfg["broker.heartbeat.interval.ms"]))))
        self.lifecycle_driver = LifecycleDriver(self.lifecycle, self.peers, lambda: self.metadata.applied_offset,
                                                wall_ms, request_timeout_ms=cfg["controller.quorum.request.timeout.ms"])
        self.metadata.on_change.append(self.lifecycle_driver.wake)
        self.forwarding_metrics = ForwardingMetrics()
        self.forwarding = ForwardingManager(self.peers, self.forwarding_metrics,
                                            default_timeout_ms=cfg["request.timeout.ms"],
                                            retry_backoff_ms=max(10, cfg["controller.quorum.retry.backoff.ms"]))
        # Consumer groups live on the voters: group requests are relayed to the coordinating voter (the
        # offsets quorum's leader, or the hash owner) over connections of their own (a parked JoinGroup
        # must not hold up other requests).
        self.groups = GroupRouter(self._voter_list(), self.peers,
                                  replicated=cfg["kraftwire.group.offsets.replication"] == "raft")
        self.apis = supported({**BROKER_FORWARDED_APIS, **BROKER_LOCAL_APIS, **GROUP_APIS, 55: RAFT_APIS[55],
                               75: BROKER_ONLY_APIS[75],
                               **SASL_APIS}, raft=False)
        self.dispatcher = self._dispatcher()
        self.server = KafkaServer(self.handle, lambda: Reply(api_versions_response(
            self.apis, int(Errors.UNSUPPORTED_VERSION)), 0),
            max_request_bytes=cfg["socket.request.max.bytes"],
            idle_timeout_s=cfg["connections.max.idle.ms"] / 1000, limits=ConnectionLimits.from_config(cfg))
        self.bound: dict[str, tuple[str, int]] = {}
        self._fatal: str | None = None
        self._fatal_event = anyio.Event()
        self.metadata.on_fatal.append(lambda e: self._stop(f"cannot apply committed metadata: {e}"))

    # -- construction helpers -------------------------------------------------------------------
    def _build_raft(self) -> None:
        cfg = self.cfg
        self.core = RaftCore(cfg.node_id, frozenset(self.voters), raft_config(cfg), self.log, self.store,
                             random.Random(), self.cluster_id, wall_ms(), listener=self.metadata,
                             directory_id=self.directory_id)
        self.driver = RaftDriver(self.core, self.peers,
                                 request_timeout_ms=cfg["controller.quorum.request.timeout.ms"], nodes=[],
                                 leader_endpoints=[])
        self.view = BrokerLogView(self.core, self.log, cfg.node_id)
        self.raft_metrics = RaftMetrics(self.core, self.log)
        self.driver.metrics = self.raft_metrics

    def _share_raft(self, voter: Any) -> None:
        """Combined mode: the voter's core feeds this broker's image too (its own replay, as in Kafka)."""
        voter.raft_listeners.add(self.metadata)
        self.core, self.driver = voter.core, voter.driver
        self.view = BrokerLogView(self.core, self.log, self.cfg.node_id)
        self.raft_metrics = voter.metrics

    def _voter_list(self) -> list[tuple[int, str, int]]:
        return [(i, h, p) for i, (h, p) in sorted(self.voters.items())]

    def _leader_hint(self) -> int | None:
        return None if self.core is None else self.core.leader_id

    def _stop(self, why: str) -> None:
        if self._fatal is None:
            self._fatal = why
            self._fatal_event.set()

    # -- running --------------------------------------------------------------------------------
    @property
    def state(self) -> BrokerState:
        return self.lifecycle.state

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``task_status`` gets the bound listener addresses."""
        cfg = self.cfg
        async with anyio.create_task_group() as tg:
            self.peers.attach(tg)
            if self.core is None:
                self.voters = await discover_voters(cfg["controller.quorum.bootstrap.servers"],
                                                    cfg.controller_listener,
                                                    cfg["controller.quorum.request.timeout.ms"] / 1000,
                                                    self.security.outbound)
                self.peers.set_peers(self.voters)
                self.groups.set_voters(self._voter_list())
                self._build_raft()
            log.info("broker %d starting: cluster %s, voters %s, log end offset %d", cfg.node_id,
                     self.cluster_id, sorted(self.voters), self.log.end_offset)
            if self.voter is None:   # a combined node's voter runs the shared core and its snapshots
                await tg.start(self.driver.run)
                tg.start_soon(self._snapshots)
            await tg.start(self.lifecycle_driver.run)
            tg.start_soon(self._watch_lifecycle)
            if cfg["kraftwire.metrics.port"] and self.voter is None:   # combined: the voter serves them
                host, port = await tg.start(serve_metrics, CombinedMetrics(self.raft_metrics, self.forwarding_metrics,
                                                                           self.server),
                                            cfg["kraftwire.metrics.host"], cfg["kraftwire.metrics.port"])
                log.info("metrics on http://%s:%d/metrics", host, port)
            # Client listeners are bound now but accept only once the broker has caught up with the
            # metadata log and been unfenced: a restarted broker must not answer from an empty image.
            for ep in (cfg.broker_listeners() if self.voter is not None else cfg.listeners):
                self.bound[ep.name] = await tg.start(partial(
                    self.server.serve, self.security.spec(ep), open_when=self.lifecycle_driver.first_serving,
                    waiting_for=f"broker {cfg.node_id} has caught up with the metadata log and been unfenced"))
            task_status.started(dict(self.bound))
            await self._fatal_event.wait()
            raise FatalNodeError(f"broker {cfg.node_id} stopped: {self._fatal}")

    def _committed(self, batches: list[Any]) -> None:
        now = wall_ms()
        self.snapshotter.committed(batches, now)
        if self.snapshotter.due(now, None) is not None:
            self._snapshot_wake.set()

    async def _snapshots(self) -> None:
        """Snapshot the replayed image when the policy says so; clean the log below as retention allows."""
        snap = self.snapshotter
        while True:
            if self.metadata.fatal is None and await snapshot_step(snap, self.core, self.metadata.loader, wall_ms):
                self.snapshots_taken += 1
            deadline = snap.next_deadline()
            delay = 1.0 if deadline is None else max(0.01, (deadline - wall_ms()) / 1000)
            self._snapshot_wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._snapshot_wake.wait()

    async def _watch_lifecycle(self) -> None:
        await self.lifecycle_driver.stopped.wait()
        if self.lifecycle.fatal is not None:
            self._stop(self.lifecycle.fatal)

    async def shutdown(self, timeout_s: float | None = None) -> None:
        """Controlled shutdown: WantShutDown heartbeats until the controller lets us go."""
        if timeout_s is None:
            timeout_s = 2 * self.cfg["broker.session.timeout.ms"] / 1000 + 5
        self.lifecycle_driver.begin_shutdown()
        with anyio.move_on_after(timeout_s) as scope:
            await self.lifecycle_driver.stopped.wait()
        if scope.cancelled_caught:
            log.warning("broker %d: controlled shutdown did not finish within %.0fs; stopping anyway",
                        self.cfg.node_id, timeout_s)
        else:
            log.info("broker %d: controlled shutdown complete", self.cfg.node_id)
        if self.voter is None:
            self.log.flush()
        await self.peers.close()

    # -- request dispatch ----------------------------------------------------------------------
    def local_view(self, listener: str) -> LocalView:
        ep = self.advertised.get(listener)
        host, port = (ep.host, ep.port) if ep is not None else self.bound.get(listener, ("", 0))
        core = self.core
        return LocalView(node_id=self.cfg.node_id, host=host, port=port, rack=self.rack,
                         serving=self.lifecycle.serving,
                         raft_leader_known=core is not None and core.leader_id is not None,
                         raft_epoch=0 if core is None else core.epoch, voters=tuple(sorted(self.voters)))

    async def handle(self, request: Request, ctx: RequestContext) -> Reply | None:
        """Every request passes the authorizer's rules (forwarded admin writes: at the controller)."""
        return await self.security.handle(request, ctx, self._dispatch)

    def _dispatcher(self) -> Dispatcher:
        """Every API a broker serves, with its handler (one table; ApiVersions answered from it)."""
        d = Dispatcher(self.apis, "by a broker", features=lambda: (
            BROKER_SUPPORTED_FEATURES, self.metadata.image.features, self.metadata.applied_offset))
        d.on(3, self._on_metadata)
        d.on(60, self._on_describe_cluster)
        d.on(75, self._on_describe_topic_partitions)
        d.on([k for k in FORWARDED_APIS if k in self.apis], self.forwarding.forward)
        d.on(1, self._on_fetch)
        d.on(2, self._on_list_offsets)
        d.on(BROKER_LOCAL_APIS, self._on_describe)
        d.on(FIND_COORDINATOR, self._on_find_coordinator)
        d.on(LIST_GROUPS, self._on_list_groups)
        d.on([k for k in GROUP_APIS if k not in (FIND_COORDINATOR, LIST_GROUPS)], self._on_group)
        d.on(55, self._on_describe_quorum)
        d.on(0, self._on_produce)
        d.check(answered_elsewhere=SASL_APIS)
        return d

    async def _dispatch(self, request: Request, ctx: RequestContext) -> Reply | None:
        return await self.dispatcher.dispatch(request, ctx)

    async def _on_metadata(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(metadata_response(request.body, v, image=self.metadata.image, listener=ctx.listener,
                                       local=self.local_view(ctx.listener), cluster_id=self.cluster_id), v)

    async def _on_describe_cluster(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(describe_cluster_response(request.body, v, image=self.metadata.image, listener=ctx.listener,
                                               local=self.local_view(ctx.listener), cluster_id=self.cluster_id), v)

    async def _on_describe_topic_partitions(self, request: Request, ctx: RequestContext) -> Reply:
        resp = describe_topic_partitions_response(request.body, image=self.metadata.image, listener=ctx.listener,
                                                  local=self.local_view(ctx.listener))
        return Reply(resp, request.api_version)

    async def _on_fetch(self, request: Request, ctx: RequestContext) -> Reply:
        body, version = request.body, request.api_version
        replica = body.replica_state.replica_id if version >= 15 else body.replica_id
        if replica >= 0:  # not a voter: the core answers NOT_LEADER_OR_FOLLOWER
            return Reply(await self.driver.handle_inbound(1, body, version), version)
        return Reply(await serving.consumer_fetch(body, version, self.view, lambda: self.driver.changed), version)

    async def _on_list_offsets(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(reads.list_offsets_response(request.body, v, self.view), v)

    async def _on_describe(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(self._describe(request.api_key, request.body, v), v)

    async def _on_find_coordinator(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(find_coordinator(v, request.body, lambda _group: self._coordinator(ctx.listener)), v)

    async def _on_list_groups(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(await self._list_groups(request.body, v, request.header.client_id or "", ctx.listener), v)

    async def _on_group(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(await self.groups.route(request.api_key, v, request.body, request.header.client_id or ""), v)

    async def _on_describe_quorum(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(await self._describe_quorum(request.body, v, request.header.client_id or ""), v)

    async def _on_produce(self, request: Request, ctx: RequestContext) -> Reply | None:
        return serving.refuse_produce(request.body, request.api_version)

    def _coordinator(self, listener: str) -> tuple[int, str, int] | None:
        """This broker, as every group's coordinator for its clients (it relays to the owning voter);
        none while it is not serving, so that clients look for another broker."""
        if not self.lifecycle.serving:
            return None
        local = self.local_view(listener)
        return self.cfg.node_id, local.host, local.port

    async def _list_groups(self, body: Any, version: int, client_id: str, listener: str) -> Any:
        """This broker's share of every voter's groups: the groups whose hash picks it among the brokers its
        Metadata lists on ``listener``. Admin tools ask every listed broker, so each group is listed once."""
        if not self.lifecycle.serving:
            return group_error_response(LIST_GROUPS, version, body)
        resp = await self.groups.list_groups(version, body, client_id)
        ids = [b[0] for b in live_brokers(self.metadata.image, listener, self.local_view(listener))]
        resp.groups = [g for g in resp.groups
                       if ids[(java_hash(g.group_id) & 0x7FFFFFFF) % len(ids)] == self.cfg.node_id]
        return resp

    async def _describe_quorum(self, body: Any, version: int, client_id: str) -> Any:
        """DescribeQuorum is the quorum leader's to answer: ask it (following NOT_LEADER_OR_FOLLOWER
        hints, then every voter) and relay its answer, as a Kafka broker forwards it to the controller."""
        tried: set[int] = set()
        hint = self._leader_hint()
        order = ([hint] if hint is not None and hint in self.voters else []) + sorted(self.voters)
        budget = anyio.current_time() + self.cfg["controller.quorum.request.timeout.ms"] / 1000 * len(self.voters)
        while order and anyio.current_time() < budget:
            node = order.pop(0)
            if node in tried:
                continue
            tried.add(node)
            try:
                resp = await self.peers.relay(node, body, version, max(0.1, budget - anyio.current_time()),
                                                client_id)
            except RequestFailed as e:
                log.debug("DescribeQuorum via controller %d failed: %s", node, e)
                continue
            part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
            if part is not None and part.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
                if part.leader_id in self.voters and part.leader_id not in tried:
                    order.insert(0, part.leader_id)
                continue
            return resp
        return await self.driver.handle_inbound(55, body, version)  # nobody answered: the observer's own view

    def _describe(self, key: int, body: Any, version: int) -> Any:
        """DescribeAcls / DescribeConfigs / DescribeUserScramCredentials from the local image (retriable
        error while not serving)."""
        if not self.lifecycle.serving:
            return body.error_response(version, Errors.REQUEST_TIMED_OUT,
                                       f"broker {self.cfg.node_id} is fenced or catching up; retry")
        image = self.metadata.image
        try:
            if key == 29:
                return acl_cmds.describe(image, body)
            if key == 32:
                return config_cmds.describe(image, body, version, {})
            return scram_cmds.describe(image, body)
        except CommandError as e:
            return body.error_response(version, e.code, e.message)
