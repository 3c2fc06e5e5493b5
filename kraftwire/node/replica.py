"""One replica of a Raft quorum on this node, assembled the same way for both quorums.

A kraftwire node runs a replica of ``__cluster_metadata`` (``node/server.py``: voters, and brokers as
observers) and, on a voter, one of the voters' offsets quorum ``__kraftwire_offsets`` (``node/offsets_quorum.py``).
Both are put together here, with their differences as parameters:

* ``node_storage.open_quorum_log`` (storage modules only, so that the server opens its log before it
  imports the roles): the log and its quorum-state in the quorum's directory; a voter drops what its log
  holds above the epoch it saved (a damaged batch header), and a voter of a multi-voter quorum starting on
  an empty directory re-joins (only the other voters can tell a fresh directory from a wiped one);
* ``assemble_replica``: the ``RaftCore`` over it (with its listener: the metadata quorum's fan-out of
  roles, the offsets quorum's ``OffsetsMachine``), the ``NodeCore`` with the roles it runs (controller,
  broker, groups), and the ``RaftDriver`` on the node's one peer client and one disk worker (the offsets
  quorum on its own topic name and lane); the re-join marker is cleared once Raft says the replica is back.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kraftwire.config import NodeConfig
from kraftwire.core import ApiDoor, BrokerLifecycleRole, ControllerRole, GroupRole, NodeCore, RaftApis
from kraftwire.net.peers import PeerClient
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.node.raft_driver import RaftDriver, wall_ms
from kraftwire.protocol.records import Record
from kraftwire.raft import RaftConfig, RaftCore, RaftListener
from kraftwire.raft.reconfig import VoterHistory


def quorum_raft_config(cfg: NodeConfig) -> RaftConfig:
    """Both quorums' Raft settings: Kafka's ``controller.quorum.*``; fsyncs and quorum-state writes are
    outputs the driver runs in the disk worker."""
    return RaftConfig(
        election_timeout_ms=cfg["controller.quorum.election.timeout.ms"],
        fetch_timeout_ms=cfg["controller.quorum.fetch.timeout.ms"],
        election_backoff_max_ms=cfg["controller.quorum.election.backoff.max.ms"],
        request_timeout_ms=cfg["controller.quorum.request.timeout.ms"],
        retry_backoff_ms=cfg["controller.quorum.retry.backoff.ms"],
        append_linger_ms=cfg["controller.quorum.append.linger.ms"],
        defer_flush=True,
        defer_state=True,
    )


def voter_nodes(cfg: NodeConfig) -> list[tuple[int, str, int, str]]:
    """The voters at their controller-listener addresses, as DescribeQuorum lists them."""
    listener = cfg.controller_listener
    return [(v.node_id, v.host, v.port, listener) for v in cfg.voters]


def own_endpoints(cfg: NodeConfig) -> list[tuple[str, str, int]]:
    """This voter's own controller endpoint, as its BeginQuorumEpoch names it."""
    listener = cfg.controller_listener
    return [(e.name, e.host, e.port) for e in cfg.advertised() if e.name == listener]


@dataclass
class Replica:
    """A quorum replica of this node: its Raft core, the node core around it and the driver running it."""

    core: RaftCore
    node: NodeCore
    driver: RaftDriver


def assemble_replica(cfg: NodeConfig, log: Any, store: Any, *, voters: Sequence[int], raft_config: RaftConfig,
                     cluster_id: str, listener: RaftListener, peers: PeerClient, disk: DiskWorker, voter: bool,
                     directory_id: uuid.UUID | None, now_ms: int | None = None,
                     controller: ControllerRole | None = None, broker: BrokerLifecycleRole | None = None,
                     groups: GroupRole | None = None, topic: str | None = None, lane: str = "raft",
                     log_tag: str | None = None, listener_name: str | None = None,
                     epoch_start_records: Callable[[], Sequence[Record]] | None = None,
                     voter_history: VoterHistory | None = None, door: ApiDoor | None = None) -> Replica:
    """The Raft core over ``log``/``store`` (started at ``now_ms``, default now), the node core running the
    given roles, and its driver. A ``voter`` lists the voters in DescribeQuorum and names its own endpoint in
    BeginQuorumEpoch; ``topic``/``lane`` put a second quorum on its own topic name and peer lane;
    ``log_tag`` prefixes its Raft log lines; the KIP-853 parts (``listener_name``, ``epoch_start_records``,
    ``voter_history``) and the one door of the node's listeners (``door``) are the metadata quorum's."""
    vote_floor = getattr(log, "vote_floor", None)
    core = RaftCore(cfg.node_id, frozenset(voters), raft_config, log, store, random.Random(), cluster_id,
                    wall_ms() if now_ms is None else now_ms, listener=listener,
                    rejoining=bool(getattr(log, "rejoining", False)) and vote_floor is None,
                    directory_id=directory_id, vote_floor=vote_floor, epoch_start_records=epoch_start_records,
                    voter_history=voter_history, listener_name=listener_name)
    if log_tag is not None:
        core.log_tag = log_tag   # its log lines: [<tag> id=N] (kraftwire.raft.story)
    # DescribeQuorum is the leader's: the metadata quorum relays it there, the offsets quorum answers its own
    raft_apis = RaftApis(voter_nodes(cfg) if voter else [], topic=topic, ask_leader=topic is None)
    node = NodeCore(core, controller, groups=groups, broker=broker, door=door, raft_apis=raft_apis)
    driver = RaftDriver(node, peers, leader_endpoints=own_endpoints(cfg) if voter else [],
                        request_timeout_ms=raft_config.request_timeout_ms, lane=lane, disk=disk)
    if core.rejoining or core.vote_floor is not None:   # damage discarded on open: clear the marker once back
        driver.on_change.append(lambda: _clear_rejoined(core, log))
    return Replica(core, node, driver)


def _clear_rejoined(core: RaftCore, log: Any) -> None:
    if not core.rejoining and core.vote_floor is None and getattr(log, "rejoining", False):
        log.rejoined()
