"""The broker role of a server (``process.roles=broker``): image, registrant, metadata cache, forwarder.

The broker replays the committed metadata log into its own image (``broker/metadata.py``; on a
broker-only node as a Raft observer, Fetch with ReplicaId = node.id; combined, from the voter's own
replica), registers with the active controller and heartbeats, and snapshots its image under the
voters' policy: all three in the node core's broker role (``core/broker_lifecycle_role.py``), whose
requests for the controller the Raft driver sends. It serves clients:
Metadata and DescribeCluster from the image, DescribeConfigs/DescribeAcls/DescribeUserScramCredentials
from the image, consumer-group requests relayed to the owning voter, and admin writes forwarded to
the active controller in Envelopes (authorized there, as the client inside the Envelope). Its
listeners accept only once it has caught up and been unfenced. ``shutdown()`` is Kafka's
controlled shutdown.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import anyio

from kraftwire.broker.envelope import FORWARDED_APIS
from kraftwire.broker.lifecycle import SECURITY_PROTOCOLS, BrokerLifecycle, BrokerState, LifecycleConfig
from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.broker.metadata_cache import (
    LocalView,
)
from kraftwire.core import BrokerLifecycleRole, DoorPlane
from kraftwire.core.api_registry import ApiRegistry, Features, broker_plane_apis
from kraftwire.core.broker_reads import BrokerReads
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.node import loggers
from kraftwire.node.forwarding import ForwardingManager
from kraftwire.node.group_proxy import GroupRouter
from kraftwire.node.metrics import ForwardingMetrics
from kraftwire.node.role_host import RoleHost
from kraftwire.node.secure import NodeSecurity
from kraftwire.node.snapshots import snapshotter_for
from kraftwire.node.view import LogPartitionView

log = logging.getLogger(__name__)


class BrokerLogView(LogPartitionView):
    """The broker's replica of ``__cluster_metadata`` as clients see it: led by this broker."""

    def __init__(self, core: Any, log_: Any, node_id: int) -> None:
        super().__init__(core, log_)
        self.node_id = node_id

    @property
    def leader_id(self) -> int:
        return self.node_id if self.core.leader_id is not None else -1


class BrokerRole:
    """A broker's image, lifecycle, forwarding and group relaying, and the APIs of its listeners."""

    where = "by a broker"

    def __init__(self, server: RoleHost) -> None:
        cfg = self.cfg = server.cfg
        self.server = server
        self.node_id = cfg.node_id
        self.metadata = BrokerMetadataListener()
        self.metadata.on_fatal.append(lambda e: server.stop(f"cannot apply committed metadata: {e}"))
        server.raft_listeners.add(self.metadata)
        self.security = NodeSecurity(cfg, lambda: self.metadata.image, skip=FORWARDED_APIS)
        controller_names = set(cfg["controller.listener.names"])
        self.advertised = {e.name: e for e in cfg.advertised() if e.name not in controller_names}
        self.rack = cfg["broker.rack"] or None
        # The broker snapshots its own image and cleans its log under the voters' policy (KIP-630); on a
        # combined node the voter does it for the shared replica.
        self.role = BrokerLifecycleRole(LifecycleConfig(
            node_id=cfg.node_id, cluster_id=server.cluster_id, incarnation_id=uuid.uuid4(),
            listeners=tuple((e.name, e.host, e.port, SECURITY_PROTOCOLS[cfg.security_protocol(e.name)])
                            for e in self.advertised.values()),
            features=tuple((n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())),
            log_dirs=(server.directory_id or uuid.uuid4(),), rack=self.rack,
            heartbeat_interval_ms=cfg["broker.heartbeat.interval.ms"],
            session_timeout_ms=cfg["broker.session.timeout.ms"],
            initial_registration_timeout_ms=cfg["initial.broker.registration.timeout.ms"],
            retry_backoff_ms=max(10, cfg["controller.quorum.retry.backoff.ms"]),
            max_backoff_ms=max(100, min(1000, cfg["broker.heartbeat.interval.ms"]))),
            self.metadata, snapshotter=snapshotter_for(cfg) if server.voter is None else None)
        self.lifecycle: BrokerLifecycle = self.role.machine
        self.stopped = anyio.Event()        # controlled shutdown done, or the broker gave up
        self.first_serving = anyio.Event()  # first unfenced (caught up)
        self.forwarding_metrics = ForwardingMetrics()
        self.forwarding = ForwardingManager(server.peers, self.forwarding_metrics,
                                            default_timeout_ms=cfg["request.timeout.ms"],
                                            retry_backoff_ms=max(10, cfg["controller.quorum.retry.backoff.ms"]))
        # Consumer groups live on the voters: group requests are relayed to the coordinating voter (the
        # offsets quorum's leader, or the hash owner).
        self.groups = GroupRouter(self._voter_list(), server.peers,
                                  replicated=cfg["kraftwire.group.offsets.replication"] == "raft")
        self.apis = broker_plane_apis()
        # Client listeners are bound at once but accept only once the broker has caught up with the
        # metadata log and been unfenced: a restarted broker must not answer from an empty image.
        self.opening: dict[str, Any] = {
            "open_when": self.first_serving,
            "waiting_for": f"broker {cfg.node_id} has caught up with the metadata log and been unfenced"}
        self.view: Any = None

    @property
    def state(self) -> BrokerState:
        return self.lifecycle.state

    def features(self) -> Features:
        return BROKER_SUPPORTED_FEATURES, self.metadata.image.features, self.metadata.applied_offset

    def _voter_list(self) -> list[tuple[int, str, int]]:
        return [(i, h, p) for i, (h, p) in sorted(self.server.voters.items())]

    @property
    def snapshots_taken(self) -> int:
        """Snapshots of this broker's own image (a broker-only node; combined, the voter takes them)."""
        node = self.server.node
        return 0 if node is None or self.role.snapshotter is None else node.snapshots_taken

    def attach(self, core: Any, driver: Any) -> None:
        self.view = BrokerLogView(core, self.server.log, self.node_id)
        self.groups.set_voters(self._voter_list())   # a broker may have learnt the voters at start
        self.driver = driver
        driver.on_change.append(self._lifecycle_moved)

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        self.driver.poke()   # the node core's first tick sends the registration
        task_status.started()
        await self.stopped.wait()
        if self.lifecycle.fatal is not None:
            self.server.stop(self.lifecycle.fatal)

    def door_plane(self) -> DoorPlane:
        """The broker plane of the node core's door: ApiVersions, refusals, authorization (not of what it
        forwards: the controller authorizes the client inside the Envelope) and the forwarded admin writes."""
        return DoorPlane(ApiRegistry.broker(), self.where, self.features, gate=self.security.gate,
                         broker=BrokerReads(self.node_id, self.server.cluster_id, lambda: self.metadata.image,
                                            self.local_view, lambda: self.lifecycle.serving,
                                            self.cfg["delegation.token.secret.key"] or None,
                                            lambda name, v: loggers.describe(self.node_id, name, v)))

    # -- lifecycle ------------------------------------------------------------------------------
    def _lifecycle_moved(self) -> None:
        """After every node core event that moved something: open the listeners once first unfenced,
        report the end of the lifecycle."""
        m = self.lifecycle
        if m.serving:
            self.first_serving.set()
        if m.state == BrokerState.SHUTDOWN:
            self.stopped.set()

    async def shutdown(self, timeout_s: float | None = None) -> None:
        """Controlled shutdown: WantShutDown heartbeats until the controller lets us go."""
        if timeout_s is None:
            timeout_s = 2 * self.cfg["broker.session.timeout.ms"] / 1000 + 5
        node, driver = self.server.node, self.server.driver
        if node is not None and driver is not None:
            driver.call(node.begin_shutdown)
        else:
            self.lifecycle.begin_shutdown(0)   # never started: nothing registered, stops at once
            self._lifecycle_moved()
        with anyio.move_on_after(timeout_s) as scope:
            await self.stopped.wait()
        if scope.cancelled_caught:
            log.warning("broker %d: controlled shutdown did not finish within %.0fs; stopping anyway",
                        self.node_id, timeout_s)
        else:
            log.info("broker %d: controlled shutdown complete", self.node_id)

    # -- handlers -------------------------------------------------------------------------------
    def local_view(self, listener: str) -> LocalView:
        ep = self.advertised.get(listener)
        host, port = (ep.host, ep.port) if ep is not None else self.server.bound.get(listener, ("", 0))
        core = self.server.core
        return LocalView(node_id=self.node_id, host=host, port=port, rack=self.rack,
                         serving=self.lifecycle.serving,
                         raft_leader_known=core is not None and core.leader_id is not None,
                         raft_epoch=0 if core is None else core.epoch, voters=tuple(sorted(self.server.voters)))
