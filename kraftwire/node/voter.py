"""The voter role of a server (``process.roles=controller``): Raft voter, quorum controller, groups.

It composes the controller role (``core/controller_role``, which the server's node core runs beside
Raft), the group coordinator (``node/group_shell``, to which the door relays group requests) and the
KIP-919 registration of this voter's listeners, and gives the node core's door its controller plane
(``door_plane``: the controller APIs, Envelopes, Metadata/DescribeCluster/FindCoordinator from
``core/voter_reads``; the Raft APIs are the door's own, ``core/raft_apis.py``). Its shell handlers are
the voter changes'. Its authorization reads the controller's committed image.

A client's admin write (``FORWARDED_APIS``) reaching a voter that is not the active controller is
forwarded there in an Envelope, as a broker does (``node/forwarding``): a client that follows
Metadata and keeps sending to the controller it last heard of (librdkafka does until its next
metadata refresh) is answered by the active controller instead of NOT_CONTROLLER after every
election. Envelopes and brokers' own requests still get NOT_CONTROLLER.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.core import ControllerObserver, ControllerRole, DoorPlane, GroupRole
from kraftwire.core.api_registry import (
    ApiRegistry,
    Features,
    controller_plane_apis,
)
from kraftwire.core.voter_reads import VoterReads
from kraftwire.group import FileOffsetStore, GroupConfig, GroupCoordinator, store_dir
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import KRAFT_VERSION, SUPPORTED_FEATURES
from kraftwire.net.client import RequestFailed
from kraftwire.node import loggers
from kraftwire.node.controller_registration import ControllerRegistrar
from kraftwire.node.forwarding import ForwardingManager
from kraftwire.node.group_shell import GroupShell
from kraftwire.node.metrics import ForwardingMetrics
from kraftwire.node.offsets_quorum import OffsetsQuorum
from kraftwire.node.raft_driver import wall_ms
from kraftwire.node.role_host import RoleHost
from kraftwire.node.secure import NodeSecurity
from kraftwire.node.snapshots import snapshotter_for
from kraftwire.node.view import LogPartitionView
from kraftwire.node.voter_changes import VoterChangeApis
from kraftwire.storage.audit import Origin

log = logging.getLogger(__name__)


class _ControllerMetrics(ControllerObserver):
    """The controller role's reports, into the server's metrics (built after the role)."""

    def __init__(self, server: RoleHost) -> None:
        self.server = server

    def appended(self, offsets: list[int]) -> None:
        if self.server.metrics is not None:
            self.server.metrics.appended(offsets)

    def committed(self, batches: list[Any]) -> None:
        if self.server.metrics is not None:
            self.server.metrics.committed(batches[-1].last_offset)

    def leader_changed(self, leader_id: int | None) -> None:
        if self.server.metrics is not None:
            self.server.metrics.leader_changed(leader_id)


class VoterRole:
    """A voter's controller and group coordinator, and the APIs of the controller listeners."""

    where = "here"

    def __init__(self, server: RoleHost, bootstrap: list[Any] | None, offset_store: Any) -> None:
        cfg = self.cfg = server.cfg
        self.server = server
        self.node_id = cfg.node_id
        snapshotter = snapshotter_for(cfg)
        snapshotter.control = server.snapshot_control
        self.snapshotter = snapshotter
        self.voter_changes = VoterChangeApis(server, snapshotter)
        self.controller = ControllerRole(cfg.node_id, QuorumController(ControllerConfig(
            node_id=cfg.node_id, cluster_id=server.cluster_id, quorum_node_ids=tuple(server.voters),
            session_timeout_ms=cfg["broker.session.timeout.ms"],
            max_idle_interval_ms=cfg["metadata.max.idle.interval.ms"],
            default_num_partitions=cfg["num.partitions"],
            default_replication_factor=cfg["default.replication.factor"],
            token_secret_key=cfg["delegation.token.secret.key"] or None,
            token_max_lifetime_ms=cfg["delegation.token.max.lifetime.ms"],
            token_renew_ms=cfg["delegation.token.expiry.time.ms"],
            token_expiry_check_interval_ms=cfg["delegation.token.expiry.check.interval.ms"],
            static_broker_configs={k: str(v) for k, v in cfg.raw.items()   # group.*: GROUP config bounds
                                   if k == "min.insync.replicas" or k.startswith("group.")})),
            bootstrap or bootstrap_records(), snapshotter=snapshotter, observer=_ControllerMetrics(server))
        self.controller.on_fatal.append(lambda e: server.stop(str(e)))
        server.raft_listeners.add(self.controller)
        self.security = NodeSecurity(cfg, self.image, bootstrap=bootstrap)
        client = (cfg.advertised() or cfg.listeners)[0]
        group_config = GroupConfig.from_properties(cfg.raw, host=client.host, port=client.port)
        group_voters = [(v.node_id, v.host, v.port) for v in cfg.voters]
        # Group offsets: replicated by the voters' offsets quorum, or each owner's local file (docs/groups.md).
        self.offsets: OffsetsQuorum | None = None
        if offset_store is None and cfg["kraftwire.group.offsets.replication"] == "raft":
            self.offsets = OffsetsQuorum(cfg, server.peers, server.raft_config, server.cluster_id,
                                         group_config=group_config, directory_id=server.directory_id,
                                         disk=server.disk)
            self.groups = GroupShell(self.offsets.groups, wall_ms, server.peers, group_voters, node_id=cfg.node_id,
                                     replicated=self.offsets.submit, leader=self.offsets.leader_id)
        else:
            if offset_store is None:
                offset_store = FileOffsetStore(store_dir(cfg.metadata_log_dir))
            local = GroupRole(cfg.node_id, group_config,
                              coordinator=GroupCoordinator(cfg.node_id, offset_store, group_config))
            self.groups = GroupShell(local, wall_ms, server.peers, group_voters, node_id=cfg.node_id)
        self.apis = controller_plane_apis()
        self.forwarding = ForwardingManager(server.peers, ForwardingMetrics(),
                                            default_timeout_ms=cfg["request.timeout.ms"],
                                            retry_backoff_ms=max(10, cfg["controller.quorum.retry.backoff.ms"]))
        self.opening: dict[str, Any] = {}   # controller listeners accept at once
        self.view: Any = None
        # Every voter of a multi-voter quorum registers its listeners (KIP-919), as Kafka's controllers do: the
        # others learn its client listeners from it, and Kafka voters list only registered controllers to admin
        # clients (an unregistered kraftwire leader cannot be found through them).
        listener = cfg.controller_listener
        names = set(cfg["controller.listener.names"]) if cfg.is_broker else {e.name for e in cfg.listeners}
        advertised = [e for e in cfg.advertised() if e.name in names]
        advertised += [e for e in cfg.listeners if e.name == listener and all(a.name != listener for a in advertised)]
        self.registrar: ControllerRegistrar | None = None
        if len(cfg.voters) > 1 or server.voter_set is not None:   # a dynamic quorum may gain Kafka voters
            self.registrar = ControllerRegistrar(
                cfg.node_id, [(e.name, e.host, e.port, cfg.security_protocol(e.name)) for e in advertised],
                self.image, self._send_registration)

    def image(self) -> Any:
        return self.controller.controller.committed_image

    def features(self) -> Features:
        """Finalized levels with kraft.version (from KRaftVersionRecord, as Kafka reports it)."""
        ctl = self.controller.controller
        finalized = ctl.committed_image.features
        if self.server.voter_set is not None:
            finalized = {**finalized, KRAFT_VERSION: 1}
        return SUPPORTED_FEATURES, finalized, ctl.committed_offset

    def attach(self, core: Any, driver: Any) -> None:
        self.view = LogPartitionView(core, self.server.log)
        self.voter_changes.attach(driver)

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            if self.offsets is not None:
                await tg.start(self.offsets.run)
            if self.server.voter_set is not None:
                tg.start_soon(self.voter_changes.keep_entry_current)
                if self.cfg["controller.quorum.auto.join.enable"] == "true":
                    tg.start_soon(self.voter_changes.auto_join)
            tg.start_soon(self.groups.run_timer)
            if self.registrar is not None:
                tg.start_soon(self.registrar.run)
            task_status.started()

    def door_plane(self) -> DoorPlane:
        """The controller plane of the node core's door: controller APIs for the controller role, the
        image-answered ones from its committed image, ApiVersions, refusals and authorization."""
        advertised: dict[str, tuple[str, int]] = {}
        for e in self.cfg.advertised():
            advertised.setdefault(e.name, (e.host, e.port))
        server = self.server
        return DoorPlane(ApiRegistry.controller(), self.where, self.features, gate=self.security.gate,
                         controller=self.controller,
                         describe_logger=lambda name, v: loggers.describe(self.node_id, name, v),
                         voter=VoterReads(self.node_id, server.cluster_id, advertised, lambda: server.voters,
                                          self.image, lambda: self.view, self.groups.router.owner))

    async def submit(self, body: Any, version: int, origin: Origin | None = None) -> Any:
        """A controller API request, run by the node core; its answer once it may be sent."""
        driver = self.server.driver
        if driver is None:   # built before the roles run; a request cannot arrive earlier
            raise RuntimeError("the metadata quorum's driver is not built yet")
        return await driver.submit(body, version, origin)

    # -- helpers --------------------------------------------------------------------------------
    async def _send_registration(self, body: Any) -> Any:
        """Our ControllerRegistration: applied directly when we are active, else sent to the leader."""
        if self.controller.controller.active:
            return await self.submit(body, 0)
        leader = self.view.leader_id
        if leader is None or leader < 0 or leader == self.node_id:
            return None
        try:
            return await self.server.peers.relay(leader, body, 0, self.cfg["controller.quorum.request.timeout.ms"] / 1000,
                                                 "kraftwire-controller-registration")
        except RequestFailed as e:
            log.debug("controller registration to node %d failed: %s", leader, e)
            return None
