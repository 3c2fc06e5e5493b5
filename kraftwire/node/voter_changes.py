"""A voter's KIP-853 I/O: what AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter (82) need from
the shell.

The requests themselves enter the node core's one door and are answered by the Raft core
(``core/raft_apis.py``, rules in ``raft/reconfig.py``). This module probes a voter being added with
ApiVersions (its kraft.version range, as Kafka's leader does), keeps the node's peer table and the voters
the Raft answers list on the voter set in force (its endpoints come from the log), sends UpdateRaftVoter
while this voter's entry is out of date, and (``controller.quorum.auto.join.enable``) asks to be added.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from kraftwire.net.client import RequestFailed
from kraftwire.node.role_host import RoleHost
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.messages.add_raft_voter_request import AddRaftVoterRequest, Listener
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.raft import messages as m

log = logging.getLogger(__name__)

KRAFT_VERSION = "kraft.version"


class VoterChangeApis:
    """Serves APIs 80-82 on a voter and follows the voter set in force (endpoints, peer addresses)."""

    def __init__(self, server: RoleHost, snapshotter: Any) -> None:
        self.server = server
        self.snapshotter = snapshotter   # the voter's: its snapshots name the committed voter set
        self._latest: Any = None

    def attach(self, driver: Any) -> None:
        driver.versions_probe = self.probe
        driver.on_change.append(self.follow)
        self.follow()

    def follow(self) -> None:
        """The voter set in force may have changed: peers, DescribeQuorum nodes, snapshot control records."""
        core = self.server.core
        if core is None or core.history is None:
            return
        latest = core.history.latest
        control = core.snapshot_control(core.hw or 0)
        if control:
            self.snapshotter.control = control   # the set committed: what a snapshot of committed state names
        if latest is None or latest is self._latest:
            return
        self._latest = latest
        listener = self.server.cfg.controller_listener
        addresses = dict(self.server.voters)
        nodes = []
        for v in latest[1].voters:
            ep = v.endpoint(listener)
            if ep is not None:
                addresses[v.node_id] = ep
                nodes.append((v.node_id, ep[0], ep[1], listener))
        self.server.voters = addresses
        self.server.peers.set_peers(addresses)
        if self.server.driver is not None:
            self.server.driver.nodes = nodes   # DescribeQuorum v2 lists the voters at their endpoints

    def own_endpoints(self) -> list[tuple[str, str, int]]:
        """This controller's endpoints on its controller listener (advertised if given, else bound)."""
        cfg = self.server.cfg
        name = cfg.controller_listener
        eps = [(e.name, e.host, e.port) for e in cfg.advertised() if e.name == name]
        return eps or [(e.name, e.host, e.port) for e in cfg.listeners if e.name == name]

    async def keep_entry_current(self) -> None:
        """Kafka 4.x voters: while our entry in the voter set in force names other endpoints or another
        kraft.version range than ours (e.g. the listener moved), send the leader UpdateRaftVoter."""
        from kraftwire.metadata.features import SUPPORTED_FEATURES
        from kraftwire.protocol.messages import update_raft_voter_request as urv

        server = self.server
        interval = server.cfg["controller.quorum.request.timeout.ms"] / 1000
        ours = SUPPORTED_FEATURES[KRAFT_VERSION]
        while True:
            await anyio.sleep(interval)
            core, driver = server.core, server.driver
            if core is None or driver is None or core.history is None:
                continue
            latest = core.history.latest
            if latest is None or not core.is_voter or core.leader_id is None or server.directory_id is None:
                continue
            me = latest[1].get(server.node_id)
            endpoints = self.own_endpoints()
            if me is None or not endpoints or (set(me.endpoints) == set(endpoints) and me.kraft_range == ours):
                continue
            # the leader rewrites its own entry too, as Kafka's does: the request goes to its own listener, so
            # it takes the one door (and its authorization) like any voter's
            addr = server.bound.get(server.cfg.controller_listener) if core.is_leader else server.voters.get(core.leader_id)
            if addr is None or not server.peers.attached:
                continue
            body = urv.UpdateRaftVoterRequest(
                cluster_id=server.cluster_id, current_leader_epoch=core.epoch, voter_id=server.node_id,
                voter_directory_id=server.directory_id, listeners=[urv.Listener(n, h, p) for n, h, p in endpoints],
                k_raft_version_feature=urv.KRaftVersionFeature(*ours))
            conn = server.peers.open_address(addr, f"kraftwire-{server.node_id}", interval)
            try:
                resp = await conn.request(body, 0, interval + 1)
                log.info("UpdateRaftVoter for node %d (endpoints %s) answered %s", server.node_id, endpoints,
                         Errors(resp.error_code).name)
            except (RequestFailed, KafkaProtocolError, TimeoutError, OSError) as e:
                log.info("UpdateRaftVoter to the leader %d failed: %s", core.leader_id, e)
            finally:
                await conn.close()

    async def auto_join(self) -> None:
        """``controller.quorum.auto.join.enable`` (Kafka 4.x): while this controller is an observer of a dynamic
        quorum that knows its leader, ask the leader to add it (AddRaftVoter with its own key and endpoints)."""
        server = self.server
        interval = server.cfg["controller.quorum.request.timeout.ms"] / 1000
        while True:
            await anyio.sleep(interval)
            core = server.core
            if (core is None or core.is_voter or not core.dynamic or core.leader_id is None or core.hw is None
                    or server.directory_id is None):
                continue
            addr = server.voters.get(core.leader_id)
            if addr is None or not server.peers.attached:
                continue
            body = AddRaftVoterRequest(cluster_id=server.cluster_id, timeout_ms=int(interval * 1000),
                                       voter_id=server.node_id, voter_directory_id=server.directory_id,
                                       listeners=[Listener(n, h, p) for n, h, p in self.own_endpoints()])
            conn = server.peers.open_address(addr, f"kraftwire-{server.node_id}", interval)
            try:
                resp = await conn.request(body, 0, interval + 1)
                log.info("auto-join: AddRaftVoter for node %d answered %s %s", server.node_id,
                         Errors(resp.error_code).name, resp.error_message or "")
            except (RequestFailed, KafkaProtocolError, TimeoutError, OSError) as e:
                log.info("auto-join: AddRaftVoter to the leader %d failed: %s", core.leader_id, e)
            finally:
                await conn.close()

    async def probe(self, msg: m.KraftVersionsRequest) -> m.KraftVersionsResponse:
        """ApiVersions to a voter being added, at its controller listener: its kraft.version range."""
        listener = self.server.cfg.controller_listener
        ep = next(((h, p) for n, h, p in msg.listeners if n == listener), None)
        peers = self.server.peers
        if ep is None or not peers.attached:
            return m.KraftVersionsResponse(int(Errors.INVALID_REQUEST))
        timeout = self.server.cfg["controller.quorum.request.timeout.ms"] / 1000
        conn = peers.open_address(ep, f"kraftwire-{self.server.node_id}", timeout, negotiate=False)
        try:
            with anyio.fail_after(timeout):
                resp = await conn.request(ApiVersionsRequest(client_software_name="kraftwire",
                                                             client_software_version="0.1.0"), 4, timeout)
        except (RequestFailed, KafkaProtocolError, TimeoutError, OSError) as e:
            log.info("AddRaftVoter: ApiVersions to %s:%s failed: %s", ep[0], ep[1], e)
            return m.KraftVersionsResponse(int(Errors.REQUEST_TIMED_OUT))
        finally:
            await conn.close()
        if resp.error_code:
            return m.KraftVersionsResponse(resp.error_code)
        rng = next(((f.min_version, f.max_version) for f in resp.supported_features if f.name == KRAFT_VERSION), None)
        return m.KraftVersionsResponse(0, rng)

