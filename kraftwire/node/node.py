"""A kraftwire node process: storage + Raft core + network listeners, wired together.

``Node.run()`` opens the metadata log directory (refusing a node.id/cluster.id mismatch), builds
the Raft core over the durable log and quorum-state store, starts one Kafka-protocol listener per
``listeners`` entry and serves requests until cancelled. A graceful stop resigns leadership with
EndQuorumEpoch first.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.controller import scram as scram_cmds
from kraftwire.core.listeners import FanOutListener
from kraftwire.group import GROUP_APIS, FileOffsetStore, GroupConfig, GroupCoordinator, store_dir
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import KRAFT_VERSION, SUPPORTED_FEATURES
from kraftwire.net.client import RequestFailed
from kraftwire.net.limits import ConnectionLimits
from kraftwire.net.peers import PeerClient
from kraftwire.net.server import KafkaServer, Reply, RequestContext
from kraftwire.node import reads, serving
from kraftwire.node.apis import (
    CONTROLLER_APIS,
    ENVELOPE_APIS,
    Dispatcher,
    api_versions_response,
    supported,
)
from kraftwire.node.bootstrap import read_bootstrap
from kraftwire.node.controller_registration import ControllerRegistrar, listener_endpoint
from kraftwire.node.controller_shell import ControllerShell, snapshotter_for
from kraftwire.node.envelope import ENVELOPE, handle_envelope
from kraftwire.node.group_shell import GroupShell
from kraftwire.node.metrics import CombinedMetrics, RaftMetrics, serve_metrics
from kraftwire.node.offsets_quorum import OffsetsQuorum
from kraftwire.node.raft_driver import RaftDriver, wall_ms
from kraftwire.node.secure import NodeSecurity
from kraftwire.node.view import LogPartitionView
from kraftwire.node.wire import OFFSETS_TOPIC, addressed_topic
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages.describe_cluster_response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from kraftwire.raft.config import RaftConfig
from kraftwire.raft.core import RaftCore
from kraftwire.security.sasl import SASL_APIS

log = logging.getLogger(__name__)

RAFT_KEYS = (52, 53, 54, 55, 59)


class FatalNodeError(RuntimeError):
    """The node cannot continue safely (e.g. a committed record it cannot apply)."""


def raft_config(cfg: NodeConfig) -> RaftConfig:
    return RaftConfig(
        election_timeout_ms=cfg["controller.quorum.election.timeout.ms"],
        fetch_timeout_ms=cfg["controller.quorum.fetch.timeout.ms"],
        election_backoff_max_ms=cfg["controller.quorum.election.backoff.max.ms"],
        request_timeout_ms=cfg["controller.quorum.request.timeout.ms"],
        retry_backoff_ms=cfg["controller.quorum.retry.backoff.ms"],
        append_linger_ms=cfg["controller.quorum.append.linger.ms"],
        defer_flush=True,
    )


class Node:
    """A controller (voter) process, or the controller half of a combined node (``node.combined``)."""

    def __init__(self, cfg: NodeConfig, *, log: Any = None, store: Any = None, cluster_id: str | None = None,
                 bootstrap: list[Any] | None = None, offset_store: Any = None,
                 serve: list[Any] | None = None) -> None:
        """Open the node's storage; ``log``/``store``/``cluster_id`` may be injected (tests). ``serve``
        limits the listeners this node answers on (combined mode: the controller listeners)."""
        self.cfg = cfg
        directory_id = None
        self.voter_set = None            # KIP-853 voter set read from the log (no controller.quorum.voters)
        snapshot_control: tuple = ()
        self.serve_listeners = list(cfg.listeners if serve is None else serve)
        if log is None:
            from kraftwire.node.broker_node import directory_uuid
            from kraftwire.storage.data_dirs import open_data_dirs
            from kraftwire.storage.log import FileLog
            from kraftwire.storage.quorum_state import FileQuorumStateStore

            meta, self.dir_locks = open_data_dirs(cfg)  # Kafka's .lock, held for the process life
            cluster_id = meta.cluster_id
            directory_id = directory_uuid(meta.directory_id) if meta.directory_id else None
            log = FileLog(cfg.metadata_log_dir / "__cluster_metadata-0",
                          segment_bytes=cfg["metadata.log.segment.bytes"])
            if not cfg.voters:   # KIP-853: the voter set is in the log (storage format --standalone ...)
                from kraftwire.node.dynamic_quorum import resolve_voters

                self.voter_set, snapshot_control = resolve_voters(cfg, log, directory_id)
            store = FileQuorumStateStore(cfg.metadata_log_dir / "__cluster_metadata-0" / "quorum-state")
            saved = store.read()
            if saved is not None:
                log.discard_epochs_above(saved.epoch)
            elif (len(cfg.voters) > 1 and any(v.node_id == cfg.node_id for v in cfg.voters)
                    and log.end_offset == 0 and log.latest_snapshot_id() is None):
                # Fresh or wiped? Only the other voters can tell: re-join until they say (raft/core.py).
                log.mark_rejoining("voter started on an empty directory (fresh, or wiped and re-formatted)")
            bootstrap = read_bootstrap(cfg.metadata_log_dir)
        self.directory_id = directory_id
        self.cluster_id: str = cluster_id or ""
        self.log = log
        self.store = store
        self.voters = [v.node_id for v in cfg.voters]
        snapshotter = snapshotter_for(cfg)
        snapshotter.control = snapshot_control
        self.controller = ControllerShell(cfg.node_id, QuorumController(ControllerConfig(
            node_id=cfg.node_id, cluster_id=self.cluster_id, quorum_node_ids=tuple(self.voters),
            session_timeout_ms=cfg["broker.session.timeout.ms"],
            max_idle_interval_ms=cfg["metadata.max.idle.interval.ms"],
            default_num_partitions=cfg["num.partitions"],
            default_replication_factor=cfg["default.replication.factor"],
            static_broker_configs={k: str(cfg[k]) for k in ("min.insync.replicas",) if k in cfg.raw})),
            bootstrap or bootstrap_records(),
            snapshotter)
        # More listeners (a combined node's broker metadata) may join before the first commit.
        self.raft_listeners = FanOutListener([self.controller.role])
        self.core = RaftCore(cfg.node_id, frozenset(self.voters), raft_config(cfg), self.log, self.store,
                             random.Random(), self.cluster_id, wall_ms(), listener=self.raft_listeners,
                             rejoining=bool(getattr(self.log, "rejoining", False))
                             and getattr(self.log, "vote_floor", None) is None,
                             directory_id=directory_id, vote_floor=getattr(self.log, "vote_floor", None),
                             epoch_start_records=self._epoch_start_records())
        listener = cfg.controller_listener
        self.nodes = [(v.node_id, v.host, v.port, listener) for v in cfg.voters]
        own = [e for e in cfg.advertised() if e.name == listener]
        self.security = NodeSecurity(cfg, lambda: self.controller.controller.committed_image, bootstrap=bootstrap)
        # Every request to another voter (Raft's, its ControllerRegistration, a client's relayed group
        # request or DescribeQuorum) goes through this one client; Raft has a lane of its own, so that
        # nothing queues behind a follower's parked Fetch long-poll.
        self.peers = PeerClient({v.node_id: (v.host, v.port) for v in cfg.voters}, security=self.security.outbound,
                                client_id=f"kraftwire-{cfg.node_id}", leader_hint=lambda: self.core.leader_id,
                                connect_timeout_s=cfg["controller.quorum.request.timeout.ms"] / 1000)
        self.driver = RaftDriver(self.core, self.peers,
                                 request_timeout_ms=cfg["controller.quorum.request.timeout.ms"], nodes=self.nodes,
                                 leader_endpoints=[(e.name, e.host, e.port) for e in own])
        self.controller.attach(self.core, self.driver)
        if self.core.rejoining or self.core.vote_floor is not None:  # damage discarded on open: clear once back
            self.driver.on_change.append(self._maybe_rejoined)
        self.metrics = RaftMetrics(self.core, self.log, controller=self.controller.role)
        self.driver.metrics = self.controller.metrics = self.metrics
        client = (cfg.advertised() or cfg.listeners)[0]
        group_config = GroupConfig.from_properties(cfg.raw, host=client.host, port=client.port)
        group_voters = [(v.node_id, v.host, v.port) for v in cfg.voters]
        # Group offsets: replicated by the voters' offsets quorum, or each owner's local file (docs/groups.md).
        self.offsets: OffsetsQuorum | None = None
        if offset_store is None and cfg["kraftwire.group.offsets.replication"] == "raft":
            self.offsets = OffsetsQuorum(cfg, self.peers, raft_config(cfg), self.cluster_id, nodes=self.nodes,
                                         leader_endpoints=[(e.name, e.host, e.port) for e in own],
                                         group_config=group_config, directory_id=directory_id)
            self.groups = GroupShell(None, wall_ms, self.peers, group_voters, node_id=cfg.node_id,
                                     leader=self.offsets.leader_id, durable=self.offsets.durable)
            self.offsets.attach(self.groups)
        else:
            if offset_store is None:
                offset_store = FileOffsetStore(store_dir(cfg.metadata_log_dir))
            self.groups = GroupShell(GroupCoordinator(cfg.node_id, offset_store, group_config), wall_ms,
                                     self.peers, voters=group_voters)
        self.view = LogPartitionView(self.core, self.log)
        self.apis = supported({**CONTROLLER_APIS, **GROUP_APIS, **ENVELOPE_APIS, **SASL_APIS})
        self.dispatcher = self._dispatcher()
        self.server = KafkaServer(self.handle, lambda: Reply(api_versions_response(
            self.apis, int(Errors.UNSUPPORTED_VERSION)), 0),
            max_request_bytes=cfg["socket.request.max.bytes"],
            idle_timeout_s=cfg["connections.max.idle.ms"] / 1000, limits=ConnectionLimits.from_config(cfg))
        self.bound: dict[str, tuple[str, int]] = {}
        # Every voter of a multi-voter quorum registers its listeners (KIP-919), as Kafka's controllers do: the
        # others learn its client listeners from it, and Kafka voters list only registered controllers to admin
        # clients (an unregistered kraftwire leader cannot be found through them).
        served = {e.name for e in self.serve_listeners}
        advertised = [e for e in cfg.advertised() if e.name in served]
        advertised += [e for e in cfg.listeners if e.name == listener and all(a.name != listener for a in advertised)]
        self.registrar: ControllerRegistrar | None = None
        if len(cfg.voters) > 1:
            self.registrar = ControllerRegistrar(
                cfg.node_id, [(e.name, e.host, e.port, cfg.security_protocol(e.name)) for e in advertised],
                lambda: self.controller.controller.committed_image, self._send_registration)

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``task_status`` gets the bound listener addresses."""
        log.info("node %d starting: cluster %s, voters %s, log end offset %d", self.cfg.node_id, self.cluster_id,
                 self.voters, self.log.end_offset)
        async with anyio.create_task_group() as tg:
            self.peers.attach(tg)
            await tg.start(self.driver.run)
            if self.offsets is not None:
                await tg.start(self.offsets.driver.run)
            tg.start_soon(self.controller.run_timer)
            tg.start_soon(self.groups.run_timer)
            if self.registrar is not None:
                tg.start_soon(self.registrar.run)
            if self.cfg["kraftwire.metrics.port"]:
                host, port = await tg.start(serve_metrics, CombinedMetrics(self.metrics, self.server),
                                            self.cfg["kraftwire.metrics.host"], self.cfg["kraftwire.metrics.port"])
                log.info("metrics on http://%s:%d/metrics", host, port)
            for ep in self.serve_listeners:
                self.bound[ep.name] = await tg.start(self.server.serve, self.security.spec(ep))
            task_status.started(dict(self.bound))
            await self.controller.fatal_event.wait()
            raise FatalNodeError(f"node {self.cfg.node_id} stopped: {self.controller.fatal}")

    async def shutdown(self, grace_s: float = 2.0) -> None:
        """Resign leadership (EndQuorumEpoch) and give the message a moment to leave."""
        resigned = False
        for core, driver in self._quorums():
            if getattr(core, "is_leader", False):
                driver.call(core.resign)
                resigned = True
        if resigned:
            with anyio.move_on_after(grace_s):
                await anyio.sleep(min(grace_s, 0.2))
        self.log.flush()
        if self.offsets is not None:
            self.offsets.close()
        await self.peers.close()

    # -- request dispatch ----------------------------------------------------------------------
    async def handle(self, request: Request, ctx: RequestContext) -> Reply | None:
        """Every request, direct or from an Envelope, passes the authorizer's rules first."""
        return await self.security.handle(request, ctx, self._dispatch)

    def _epoch_start_records(self) -> Any:
        if self.voter_set is None:
            return None
        from kraftwire.node.dynamic_quorum import EpochStartRecords

        return EpochStartRecords(self.log)

    def _finalized(self) -> dict[str, int]:
        """The finalized levels, kraft.version included (from KRaftVersionRecord, as Kafka reports it)."""
        features = self.controller.controller.committed_image.features
        if self.voter_set is None:
            return features
        return {**features, KRAFT_VERSION: 1}

    def _dispatcher(self) -> Dispatcher:
        """Every API a voter serves, with its handler (one table; ApiVersions answered from it)."""
        d = Dispatcher(self.apis, "here", features=lambda: (
            SUPPORTED_FEATURES, self._finalized(), self.controller.controller.committed_offset))
        d.on(55, self._on_describe_quorum)
        d.on([k for k in RAFT_KEYS if k != 55], self._on_raft)
        d.on(1, self._on_fetch)
        d.on(3, self._on_metadata)
        d.on(2, self._on_list_offsets)
        d.on(GROUP_APIS, self._on_group)
        d.on(50, self._on_describe_scram)   # any controller answers from its committed image
        d.on([k for k in CONTROLLER_APIS if k != 50], self._on_controller)
        d.on(60, self._on_describe_cluster)
        d.on(ENVELOPE, self._on_envelope)
        d.on(0, self._on_produce)
        d.check(answered_elsewhere=SASL_APIS)
        return d

    async def _dispatch(self, request: Request, ctx: RequestContext) -> Reply | None:
        return await self.dispatcher.dispatch(request, ctx)

    def _quorums(self) -> list[tuple[Any, RaftDriver]]:
        quorums: list[tuple[Any, RaftDriver]] = [(self.core, self.driver)]
        if self.offsets is not None:
            quorums.append((self.offsets.core, self.offsets.driver))
        return quorums

    def _raft_driver(self, body: Any) -> RaftDriver:
        """The quorum a raft request addresses: the offsets quorum's topic, else the metadata quorum."""
        if self.offsets is not None and addressed_topic(body) == OFFSETS_TOPIC:
            return self.offsets.driver
        return self.driver

    async def _on_describe_quorum(self, request: Request, ctx: RequestContext) -> Reply:
        driver = self._raft_driver(request.body)
        if driver is not self.driver:
            return Reply(await driver.handle_inbound(55, request.body, request.api_version), request.api_version)
        return Reply(await self._describe_quorum(request.body, request.api_version), request.api_version)

    async def _on_raft(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        driver = self._raft_driver(request.body)
        return Reply(await driver.handle_inbound(request.api_key, request.body, v), v)

    async def _on_fetch(self, request: Request, ctx: RequestContext) -> Reply:
        body, version = request.body, request.api_version
        replica = body.replica_state.replica_id if version >= 15 else body.replica_id
        if replica >= 0:
            return Reply(await self._raft_driver(body).handle_inbound(1, body, version), version)
        return Reply(await serving.consumer_fetch(body, version, self.view, lambda: self.driver.changed), version)

    async def _on_metadata(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(reads.metadata_response(request.body, v, view=self.view, brokers=self._brokers(ctx.listener),
                                             voters=self.voters, cluster_id=self.cluster_id,
                                             controller_id=self.view.leader_id), v)

    async def _on_list_offsets(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(reads.list_offsets_response(request.body, v, self.view), v)

    async def _on_group(self, request: Request, ctx: RequestContext) -> Reply:
        key, v = request.api_key, request.api_version
        resp = await self.groups.handle(key, v, request.body, request.header.client_id or "", ctx.client_host)
        return Reply(self._own_coordinator(resp, v, ctx.listener) if key == 10 else resp, v)

    async def _on_describe_scram(self, request: Request, ctx: RequestContext) -> Reply:
        image = self.controller.controller.committed_image
        return Reply(scram_cmds.describe(image, request.body), request.api_version)

    async def _on_controller(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(await self.controller.handle(request.body, v), v)

    async def _on_describe_cluster(self, request: Request, ctx: RequestContext) -> Reply:
        v = request.api_version
        return Reply(self._describe_cluster(request.body, v, ctx.listener), v)

    async def _on_envelope(self, request: Request, ctx: RequestContext) -> Reply:
        self.controller.maybe_activate()
        return Reply(await handle_envelope(request.body, ctx, active=self.controller.controller.active,
                                           served=self.apis, dispatch=self.handle), request.api_version)

    async def _on_produce(self, request: Request, ctx: RequestContext) -> Reply | None:
        return serving.refuse_produce(request.body, request.api_version)

    def _maybe_rejoined(self) -> None:
        if not self.core.rejoining and self.core.vote_floor is None and getattr(self.log, "rejoining", False):
            self.log.rejoined()

    def _own_endpoint(self, listener: str | None) -> tuple[str, int] | None:
        """This node's advertised address on ``listener`` (clients stay on the listener they came in on)."""
        for ep in self.cfg.advertised():
            if ep.name == listener:
                return ep.host, ep.port
        return None

    def _brokers(self, listener: str | None = None) -> list[reads.BrokerInfo]:
        """The voters at their addresses on ``listener`` (this node's advertised one, the others' from their
        ControllerRegistration), or at their controller-listener address when that listener is unknown."""
        own = self._own_endpoint(listener)
        regs = self.controller.controller.committed_image.controllers
        out = []
        for i, h, p, _ in self.nodes:
            addr = own if own and i == self.cfg.node_id else listener_endpoint(regs.get(i), listener)
            out.append(reads.BrokerInfo(i, *(addr or (h, p))))
        return out

    async def _send_registration(self, body: Any) -> Any:
        """Our ControllerRegistration: applied directly when we are active, else sent to the leader."""
        self.controller.maybe_activate()
        if self.controller.controller.active:
            return await self.controller.handle(body, 0)
        leader = self.view.leader_id
        if leader is None or leader < 0 or leader == self.cfg.node_id:
            return None
        try:
            return await self.peers.relay(leader, body, 0, self.driver.request_timeout_s,
                                          "kraftwire-controller-registration")
        except RequestFailed as e:
            log.debug("controller registration to node %d failed: %s", leader, e)
            return None

    def _own_coordinator(self, resp: Any, version: int, listener: str) -> Any:
        """FindCoordinator names the owning voter at its address on the client's listener (as Metadata
        lists it), so that clients stay on the listener they came in on."""
        addrs = {b.node_id: (b.host, b.port) for b in self._brokers(listener)}
        for c in resp.coordinators if version >= 4 else [resp]:
            if c.error_code == 0 and c.node_id in addrs:
                c.host, c.port = addrs[c.node_id]
        return resp

    async def _describe_quorum(self, body: Any, version: int) -> Any:
        """DescribeQuorum; a follower asks the leader for the client, as a Kafka broker forwards it to the
        active controller (kafka-python and Java Admin via bootstrap.servers ask any node)."""
        resp = await self.driver.handle_inbound(55, body, version)
        part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
        leader = self.view.leader_id
        if (part is None or part.error_code != Errors.NOT_LEADER_OR_FOLLOWER or leader < 0
                or leader == self.cfg.node_id):
            return resp
        try:
            return await self.peers.relay(leader, body, version, self.driver.request_timeout_s,
                                          "kraftwire-describe-quorum")
        except RequestFailed as e:
            log.debug("DescribeQuorum forwarded to leader %d failed: %s", leader, e)
            return resp

    def _describe_cluster(self, body: Any, version: int, listener: str | None = None) -> DescribeClusterResponse:
        endpoint_type = getattr(body, "endpoint_type", 1)
        resp = DescribeClusterResponse(cluster_id=self.cluster_id, controller_id=self.view.leader_id,
                                       brokers=[DescribeClusterBroker(b.node_id, b.host, b.port, b.rack)
                                                for b in self._brokers(listener)])
        if version >= 1:
            resp.endpoint_type = endpoint_type
        return resp
