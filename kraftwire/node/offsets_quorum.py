"""The voters' second Raft quorum: consumer-group offsets replicated as ``__kraftwire_offsets``-0.

Same voters and the same sans-I/O ``RaftCore`` as ``__cluster_metadata``, with its own log directory
(``<metadata.log.dir>/__kraftwire_offsets-0``, quorum-state included) and its own topic name on the
Raft wire (``wire.retopic``), so it never mixes with the metadata log and a Kafka voter never applies
its records. Its leader coordinates every group (docs/groups.md): once the leader's epoch has a
committed LeaderChange (every earlier record committed and applied), the group role of its node core
(``core/group_role.py``) builds a ``GroupCoordinator`` over the replicated state; when it stops leading,
the role drops it and clients are told NOT_COORDINATOR. Its snapshots take the metadata quorum's path:
the group role's ``OffsetsSnapshotter`` makes the node core emit ``TakeSnapshot``, the driver frames it
in a worker thread and the node core stores it and cleans the log. This module is the shell: storage,
the driver, the legacy file's import.

Upgrade: a legacy local ``__consumer_offsets-kraftwire/offsets.log`` is read on start. Its records the
replicated state lacks are appended by this voter when it leads, or relayed to the leader as a simple
OffsetCommit; once they are committed the file is renamed ``offsets.log.imported``.
"""

from __future__ import annotations

import logging
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.core import GroupRole, NodeCore
from kraftwire.group import GroupConfig
from kraftwire.group.replicated import (
    IMPORT_CLIENT_ID,
    OFFSETS_TOPIC,
    OffsetsMachine,
    OffsetsSnapshotter,
)
from kraftwire.group.store import STORE_FILE_NAME, OffsetRecord, StoreRecord, scan_frames, store_dir
from kraftwire.net.client import RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.node.raft_driver import RaftDriver, wall_ms
from kraftwire.raft.config import RaftConfig
from kraftwire.raft.core import RaftCore

log = logging.getLogger(__name__)

OFFSETS_DIR = OFFSETS_TOPIC + "-0"
IMPORTED_SUFFIX = ".imported"
DURABLE_WAIT_S = 30.0


def read_legacy(metadata_log_dir: Path) -> list[StoreRecord]:
    """The live records of a legacy local offsets file (empty if there is none or it was imported)."""
    path = store_dir(metadata_log_dir) / STORE_FILE_NAME
    if not path.exists():
        return []
    from kraftwire.group.store import StoreState

    records, _ = scan_frames(path.read_bytes())
    state = StoreState()
    for r in records:
        state.apply(r)
    return list(state.records())


class OffsetsQuorum:
    """Storage, Raft core and driver of the offsets quorum on one voter, and group hand-over."""

    def __init__(self, cfg: NodeConfig, peers: PeerClient, raft_config: RaftConfig, cluster_id: str, *,
                 nodes: list[tuple[int, str, int, str]], leader_endpoints: list[tuple[str, str, int]],
                 group_config: GroupConfig, directory_id: Any = None, disk: Any = None) -> None:
        from kraftwire.storage.log import FileLog
        from kraftwire.storage.quorum_state import FileQuorumStateStore

        self.node_id = cfg.node_id
        self.group_config = group_config
        self.metadata_dir = Path(cfg.metadata_log_dir)
        directory = self.metadata_dir / OFFSETS_DIR
        self.log = FileLog(directory, segment_bytes=cfg["metadata.log.segment.bytes"])
        self.store = FileQuorumStateStore(directory / "quorum-state")
        voters = [v.node_id for v in cfg.voters]
        saved = self.store.read()
        if saved is not None:
            self.log.discard_epochs_above(saved.epoch)
        elif len(voters) > 1 and cfg.node_id in voters and self.log.end_offset == 0:
            # Fresh or wiped: only the other voters can tell (raft/core.py re-joining).
            self.log.mark_rejoining("offsets quorum started on an empty directory (fresh, or wiped)")
        self.machine = OffsetsMachine()
        floor = getattr(self.log, "vote_floor", None)
        self.core = RaftCore(cfg.node_id, frozenset(voters), replace(raft_config, defer_flush=True), self.log,
                             self.store, random.Random(), cluster_id, wall_ms(), listener=self.machine,
                             rejoining=bool(getattr(self.log, "rejoining", False)) and floor is None,
                             directory_id=directory_id, vote_floor=floor)
        self.core.log_tag = "OffsetsRaft"   # its log lines: [OffsetsRaft id=N] (kraftwire.raft.story)
        self.legacy = read_legacy(self.metadata_dir)
        # The group coordinator runs in the node core, beside this quorum's Raft core (core/group_role.py).
        self.snapshotter = OffsetsSnapshotter(self.machine)
        self.groups = GroupRole(cfg.node_id, group_config, machine=self.machine, legacy=self.legacy,
                                snapshotter=self.snapshotter)
        self.driver = RaftDriver(NodeCore(self.core, groups=self.groups), peers,
                                 request_timeout_ms=raft_config.request_timeout_ms, nodes=nodes,
                                 leader_endpoints=leader_endpoints, topic=OFFSETS_TOPIC, lane="offsets-raft",
                                 disk=disk)
        self.driver.on_change.append(self._changed)
        self.peers = peers
        self._import_task = False

    # -- leadership ----------------------------------------------------------------------------
    def leader_id(self) -> int | None:
        leader = self.core.leader_id
        return None if leader is None or leader < 0 else leader

    async def submit(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        """A group request, answered by the node core's group role once durable."""
        return await self.driver.submit_group(api_key, version, body, client_id, client_host)

    def _changed(self) -> None:
        core = self.core
        if getattr(self.log, "rejoining", False) and not core.rejoining and core.vote_floor is None:
            self.log.rejoined()
        if self.legacy and self.groups.imported:
            self._legacy_done()
        elif self.legacy and self.groups.coordinator is None and not self._import_task \
                and self.leader_id() not in (None, self.node_id) \
                and self.driver._tg is not None:
            self._import_task = True
            self.driver._tg.start_soon(self._relay_legacy)

    async def _relay_legacy(self) -> None:
        """A follower's legacy offsets go to the leader as simple OffsetCommits (imported, not overwriting)."""
        from kraftwire.protocol.messages import offset_commit_request as ocq

        try:
            while self.legacy:
                leader = self.leader_id()
                if leader is None or leader == self.node_id:
                    return
                todo = [r for r in self.legacy if isinstance(r, OffsetRecord)]
                by_group: dict[str, list[OffsetRecord]] = {}
                for r in todo:
                    by_group.setdefault(r.group_id, []).append(r)
                ok = True
                for group, recs in by_group.items():
                    topics: dict[str, list[Any]] = {}
                    for r in recs:
                        topics.setdefault(r.topic, []).append(ocq.OffsetCommitRequestPartition(
                            partition_index=r.partition, committed_offset=r.offset,
                            committed_leader_epoch=r.leader_epoch, committed_metadata=r.metadata))
                    body = ocq.OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                                   topics=[ocq.OffsetCommitRequestTopic(name=t, partitions=ps)
                                                           for t, ps in topics.items()])
                    try:
                        resp = await self.peers.relay(leader, body, 8, DURABLE_WAIT_S, IMPORT_CLIENT_ID)
                    except RequestFailed as e:
                        log.info("offsets import to node %d failed: %s", leader, e)
                        ok = False
                        break
                    if any(p.error_code for t in resp.topics for p in t.partitions):
                        ok = False
                        break
                if ok:
                    self._legacy_done()
                    return
                await anyio.sleep(1.0)
        finally:
            self._import_task = False

    def _legacy_done(self) -> None:
        path = store_dir(self.metadata_dir) / STORE_FILE_NAME
        try:
            path.replace(path.with_name(STORE_FILE_NAME + IMPORTED_SUFFIX))
        except OSError as e:
            log.warning("offsets quorum: could not rename %s after importing it: %s", path, e)
            return
        self.legacy = []
        self.groups.legacy = []
        log.info("offsets quorum: the local %s is imported into the replicated offsets", STORE_FILE_NAME)

    def close(self) -> None:
        self.log.flush()

