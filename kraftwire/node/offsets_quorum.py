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
import uuid
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from kraftwire.config import NodeConfig
from kraftwire.core import GroupRole
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
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.node.node_storage import open_quorum_log, recover_voter_log
from kraftwire.node.replica import assemble_replica
from kraftwire.raft import RaftConfig

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
                 group_config: GroupConfig, disk: DiskWorker, directory_id: uuid.UUID | None = None) -> None:
        self.node_id = cfg.node_id
        self.group_config = group_config
        self.metadata_dir = Path(cfg.metadata_log_dir)
        self.log, self.store = open_quorum_log(self.metadata_dir / OFFSETS_DIR, cfg)
        recover_voter_log(self.log, self.store, cfg, fresh="offsets quorum started on an empty directory (fresh, or wiped)")
        self.machine = OffsetsMachine()
        self.legacy = read_legacy(self.metadata_dir)
        # The group coordinator runs in the node core, beside this quorum's Raft core (core/group_role.py).
        self.snapshotter = OffsetsSnapshotter(self.machine)
        self.groups = GroupRole(cfg.node_id, group_config, machine=self.machine, legacy=self.legacy,
                                snapshotter=self.snapshotter)
        replica = assemble_replica(cfg, self.log, self.store, voters=[v.node_id for v in cfg.voters],
                                   raft_config=raft_config, cluster_id=cluster_id, listener=self.machine, peers=peers,
                                   disk=disk, voter=True, directory_id=directory_id, groups=self.groups,
                                   topic=OFFSETS_TOPIC, lane="offsets-raft", log_tag="OffsetsRaft")
        self.core, self.driver = replica.core, replica.driver
        self.driver.on_change.append(self._changed)
        self.peers = peers
        self._import_task = False
        self._tg: TaskGroup | None = None   # this quorum's tasks: its driver, a follower's legacy relay

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the driver (and, on a follower upgrading from a local file, the relay of its legacy offsets)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(self.driver.run)
            task_status.started()

    # -- leadership ----------------------------------------------------------------------------
    def leader_id(self) -> int | None:
        leader = self.core.leader_id
        return None if leader is None or leader < 0 else leader

    async def submit(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        """A group request, answered by the node core's group role once durable."""
        return await self.driver.submit_group(api_key, version, body, client_id, client_host)

    def _changed(self) -> None:
        if self.legacy and self.groups.imported:
            self._legacy_done()
        elif self.legacy and self.groups.coordinator is None and not self._import_task \
                and self.leader_id() not in (None, self.node_id) \
                and self._tg is not None:
            self._import_task = True
            self._tg.start_soon(self._relay_legacy)

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

