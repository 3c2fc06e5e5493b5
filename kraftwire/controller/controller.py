"""The quorum controller, sans-I/O: committed replay, an uncommitted overlay, command handlers.

The caller (the node) owns Raft, time and sockets:

* committed records from the Raft listener go to ``replay`` / ``replay_batch`` (in log order);
* ``activate`` when Raft says we lead and everything up to the epoch start has been replayed,
  ``deactivate`` when leadership is lost (uncommitted effects are dropped);
* ``handle(now, request)`` returns a ControllerResult: append its records, tell the controller
  ``handle_commit(offset)`` as the high watermark advances, and send the response once the
  committed offset reaches ``result.commit_offset``;
* ``tick(now)`` returns periodic records (lease-expiry fencing, leader rebalancing, NoOpRecord);
  call it again at ``next_deadline()`` at the latest.
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from kraftwire.controller import (
    acls,
    cluster,
    configs,
    delegation_tokens,
    quotas,
    reassignment,
    replication,
    scram,
)
from kraftwire.controller import feature_control as features_cmd
from kraftwire.controller.dir_index import DirectoryIndex
from kraftwire.controller.directories import assign_replicas_to_dirs
from kraftwire.controller.elr import cluster_min_isr_record
from kraftwire.controller.result import CommandError, ControllerConfig, ControllerResult
from kraftwire.controller.sessions import Session
from kraftwire.metadata.fast import partition_from_value
from kraftwire.metadata.features import (
    ELR_VERSION,
    METADATA_VERSION,
    RecordVersions,
    unsupported_reason,
    wrap,
)
from kraftwire.metadata.image import (
    EMPTY_IMAGE,
    NO_LEADER,
    ImageLoader,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
    Partition,
)
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.end_transaction_record import EndTransactionRecord
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.no_op_record import NoOpRecord
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.metadata import MetadataRecord, decode_record
from kraftwire.protocol.runtime import gc_paused

FENCES_PER_TICK = 16   # stale brokers fenced by one ``tick`` (each write copies the broker map)


class LeadershipIndex:
    """Mutable index over the latest image: partitions led per broker and leaderless partitions."""

    __slots__ = ("leaders", "leaderless")

    def __init__(self) -> None:
        self.leaders: dict[int, int] = {}
        self.leaderless: set[tuple[uuid.UUID, int]] = set()

    def rebuild(self, image: MetadataImage) -> None:
        self.leaders.clear()
        self.leaderless.clear()
        for tid, t in image.topics.items():
            for pid, p in t.partitions.items():
                self.update(tid, pid, None, p)

    def update(self, tid: uuid.UUID, pid: int, old: Partition | None, new: Partition | None) -> None:
        if old is not None:
            if old.leader == NO_LEADER:
                self.leaderless.discard((tid, pid))
            else:
                self.leaders[old.leader] -= 1
        if new is not None:
            if new.leader == NO_LEADER:
                self.leaderless.add((tid, pid))
            else:
                self.leaders[new.leader] = self.leaders.get(new.leader, 0) + 1


class QuorumController:
    """One controller node's metadata state machine (active or standby)."""

    def __init__(self, config: ControllerConfig | None = None, image: MetadataImage = EMPTY_IMAGE,
                 offset: int = -1, seed: int | None = None) -> None:
        self.config = config or ControllerConfig()
        self.rng = random.Random(seed)
        self.index = LeadershipIndex()
        self.dirs = DirectoryIndex()   # registration's duplicate-directory check (cluster.register_broker)
        self._loader = ImageLoader(image)
        self._loader.on_partition = self.index.update
        self._committed = image
        self._committed_offset = offset
        self._committed_reg: dict[int, int] = {}
        self._latest = image
        self._reg_offsets: dict[int, int] = {}
        self._pending: deque[tuple[int, MetadataImage, dict[int, int]]] = deque()
        #: offset of the last record written that changed the state (not a NoOpRecord): what a request
        #: writing nothing waits for before its answer, read from the latest image, may be sent
        self._last_change = offset
        self._active = False
        self._epoch = -1
        self._next_offset = offset + 1
        self.sessions: dict[int, Session] = {}
        self._last_write_ms = 0
        self._next_rebalance_ms = 0
        self._next_token_sweep_ms = 0
        self.last_heartbeat_state: str | None = None
        self.index.rebuild(image)
        self.dirs.rebuild(image)

    # -- views --------------------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self._active

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def image(self) -> MetadataImage:
        """The latest image, including uncommitted effects of our own commands."""
        if not self._active:
            self._sync_loader()
        return self._latest

    @property
    def committed_image(self) -> MetadataImage:
        if not self._active:
            self._sync_loader()
        return self._committed

    @property
    def committed_offset(self) -> int:
        return self._committed_offset

    @property
    def in_transaction(self) -> bool:
        """A metadata transaction (KIP-868) is open in the committed replay: no snapshot may be cut here."""
        return self._loader.in_transaction

    @property
    def next_offset(self) -> int:
        """The offset the next appended record will get (active controller)."""
        return self._next_offset

    @property
    def versions(self) -> RecordVersions:
        return RecordVersions(self._latest.metadata_version)

    @property
    def committed_features(self) -> dict[str, int]:
        """Finalized features of the committed state (cheap: a standby's pending replay is not frozen)."""
        return self._committed.features if self._active else self._loader.features

    def unsupported(self, supported: dict[str, tuple[int, int]] | None = None) -> str | None:
        """One line saying which committed feature level this node lacks (and who needs it), or None."""
        return unsupported_reason(self.committed_features, supported)

    def new_uuid(self) -> uuid.UUID:
        """A random (seedable) UUID for new topics and ACLs."""
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def register_offset(self, broker_id: int) -> int | None:
        """Offset of the broker's latest RegisterBrokerRecord in the latest image."""
        return self._reg_offsets.get(broker_id)

    # -- committed replay (standby, and anyone catching up) ----------------------------------------------
    def replay(self, offset: int, record: Any) -> None:
        """Apply one committed record at ``offset`` (log order). Raises MetadataReplayError."""
        if self._active:
            if offset < self._next_offset:
                self.handle_commit(offset)
                return
            raise MetadataReplayError(f"active controller saw a foreign record at offset {offset}")
        msg = record.message if type(record) is MetadataRecord else record
        self.dirs.note(msg)
        self._loader.replay(msg)
        if type(msg) is RegisterBrokerRecord and not self._loader.in_transaction:
            self._reg_offsets[msg.broker_id] = offset
        self._committed_offset = offset
        self._next_offset = offset + 1

    def replay_batch(self, records: Iterable[tuple[int, Any]]) -> None:
        """``replay`` for many (offset, record) pairs; the image is materialized lazily."""
        for offset, record in records:
            self.replay(offset, record)

    def replay_batches(self, batches: Iterable[Any]) -> None:
        """Replay committed v2 record batches of metadata records (offsets already applied are skipped).

        The active controller already holds its own records' effects, so it only advances its
        committed offset and does not decode them again.
        """
        if self._active:
            for batch in batches:
                if batch.records:
                    self.replay(batch.base_offset + len(batch.records) - 1, None)
            return
        loader = self._loader
        with gc_paused():
            for batch in batches:
                for i, rec in enumerate(batch.records):
                    offset = batch.base_offset + i
                    value = rec.value
                    if value is None or offset <= self._committed_offset:
                        continue
                    # PartitionRecords (most of a big log) go straight to the image (metadata.fast)
                    hit = None if loader.in_transaction else partition_from_value(value)
                    if hit is None:
                        self.replay(offset, decode_record(value))
                    else:
                        loader.replay_partition(*hit)
                        self._committed_offset = offset
                        self._next_offset = offset + 1

    def load_snapshot(self, image: MetadataImage, end_offset: int) -> None:
        """Replace the state with a snapshot's image (covering offsets below ``end_offset``)."""
        if self._active:
            raise RuntimeError("cannot load a snapshot while active")
        self._loader = ImageLoader(image)
        self._loader.on_partition = self.index.update
        self._committed = self._latest = image
        self._committed_offset = end_offset - 1
        self._next_offset = end_offset
        # Registration offsets are not in snapshots: use the epoch (its original offset).
        self._reg_offsets = {b.id: b.epoch for b in image.brokers.values()}
        self.index.rebuild(image)
        self.dirs.rebuild(image)

    def _sync_loader(self) -> None:
        img = self._loader.image
        if img is not self._latest:
            self._committed = self._latest = img

    def handle_commit(self, last_offset: int) -> None:
        """Raft's high watermark moved: offsets up to ``last_offset`` are committed."""
        if last_offset <= self._committed_offset:
            return
        self._committed_offset = last_offset
        while self._pending and self._pending[0][0] <= last_offset:
            _, self._committed, self._committed_reg = self._pending.popleft()

    # -- leadership -----------------------------------------------------------------------------------------
    def activate(self, epoch: int, next_offset: int, now: int,
                 bootstrap: list[MetadataRecord] | None = None) -> list[MetadataRecord]:
        """Become the active controller for ``epoch``; returns records to append first (maybe empty).

        Every registered broker gets a fresh lease from ``now``, so a failover fences nobody.
        If the log holds no metadata.version yet, ``bootstrap`` (see features.bootstrap_records) is
        returned for the caller to append.
        """
        self._sync_loader()
        if self._loader.in_transaction:
            raise RuntimeError("cannot activate inside an open metadata transaction")
        self._active = True
        self._epoch = epoch
        self._next_offset = next_offset
        self._committed_reg = dict(self._reg_offsets)
        self._pending.clear()
        self._last_change = self._committed_offset
        self.sessions = {bid: Session(now) for bid in self._latest.brokers}
        self._last_write_ms = now
        self._next_rebalance_ms = now + self.config.leader_imbalance_check_interval_ms
        self._next_token_sweep_ms = now + self.config.token_expiry_check_interval_ms
        if METADATA_VERSION not in self._latest.features and bootstrap:
            records = list(bootstrap)
            if any(type(r.message) is FeatureLevelRecord and r.message.name == ELR_VERSION
                   and r.message.feature_level > 0 for r in records):
                # Kafka's activation on an empty log: ELR on from the start comes with a cluster-level
                # min.insync.replicas (the static value), in the same transaction.
                end = next((i for i, r in enumerate(records) if type(r.message) is EndTransactionRecord),
                           len(records))
                records.insert(end, cluster_min_isr_record(self.config.static_broker_configs))
            self._write(records)
            return records
        return []

    def deactivate(self) -> None:
        """Leadership lost: forget uncommitted effects and heartbeat sessions."""
        if not self._active:
            return
        self._active = False
        self._epoch = -1
        self._pending.clear()
        self._latest = self._committed
        self._reg_offsets = dict(self._committed_reg)
        self._loader = ImageLoader(self._committed)
        self._loader.on_partition = self.index.update
        self._next_offset = self._committed_offset + 1
        self._last_change = self._committed_offset
        self.sessions = {}
        self.index.rebuild(self._committed)
        self.dirs.rebuild(self._committed)

    def set_next_offset(self, offset: int) -> None:
        """Tell the active controller the log end moved for reasons of its own (control records)."""
        self._next_offset = offset

    # -- writing --------------------------------------------------------------------------------------------
    def _write(self, records: list[MetadataRecord]) -> int:
        """Apply our own records to the latest image; returns the offset of the last one."""
        if not records:
            return self._next_offset - 1
        delta = MetadataDelta(self._latest, on_partition=self.index.update)
        reg = self._reg_offsets
        copied = False
        off = self._next_offset
        for r in records:
            msg = r.message
            delta.replay(msg)
            self.dirs.note(msg)
            if type(msg) is RegisterBrokerRecord:
                if not copied:
                    reg = dict(reg)
                    copied = True
                reg[msg.broker_id] = off
            off += 1
        self._latest = delta.apply()
        self._reg_offsets = reg
        last = off - 1
        if any(type(r.message) is not NoOpRecord for r in records):
            self._last_change = last
        self._next_offset = off
        self._pending.append((last, self._latest, reg))
        return last

    def _finish(self, records: list[MetadataRecord], response: Any, now: int | None = None,
                atomic: bool = True) -> ControllerResult:
        if records and now is not None:
            self._last_write_ms = now
        last = self._write(records) if records else self._last_change
        wait = last if last > self._committed_offset else -1
        return ControllerResult(records, response, wait, atomic)

    # -- commands -------------------------------------------------------------------------------------------
    def handle(self, now: int, request: Any, api_version: int | None = None) -> ControllerResult:
        """Handle a controller API request; see ControllerResult for what to do with the result."""
        version = type(request).MAX_VERSION if api_version is None else api_version
        fn = _COMMANDS.get(type(request).__name__)
        if fn is None:
            return ControllerResult([], request.error_response(version, Errors.INVALID_REQUEST,
                                                               "not a controller API"))
        if not self._active:
            return ControllerResult([], request.error_response(version, Errors.NOT_CONTROLLER))
        try:
            records, response = fn(self, now, request, version)
        except CommandError as e:
            return ControllerResult([], request.error_response(version, e.code, e.message))
        except MetadataReplayError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in a handler must not kill the controller
            return ControllerResult([], request.error_response(version, Errors.UNKNOWN_SERVER_ERROR,
                                                               f"{type(e).__name__}: {e}"))
        post = _AFTER_WRITE.get(type(request).__name__)
        result = self._finish(records, response, now)
        if post is not None:
            post(self, request, result)
        return result

    # -- periodic work --------------------------------------------------------------------------------------
    def tick(self, now: int) -> list[MetadataRecord]:
        """Records for time-driven work: fence brokers whose lease expired (one at a time, each
        seeing the previous one's effects; at most ``FENCES_PER_TICK``, as Kafka fences one stale
        broker per controller event), rebalance preferred leaders, and write a NoOpRecord when the
        log has been idle for metadata.max.idle.interval.ms."""
        if not self._active:
            return []
        out: list[MetadataRecord] = []
        for _ in range(FENCES_PER_TICK):   # the rest at the next tick: the loop serves others between
            stale = cluster.find_stale_broker(self, now)
            if stale is None:
                break
            cluster.log.info("Broker %d's session expired (no heartbeat for %d ms)", stale,
                             self.config.session_timeout_ms)
            recs = cluster.fence_records(self, stale)
            self._write(recs)
            self.sessions.pop(stale, None)
            out.extend(recs)
        if self.config.auto_leader_rebalance and now >= self._next_rebalance_ms:
            self._next_rebalance_ms = now + self.config.leader_imbalance_check_interval_ms
            recs = replication.rebalance_records(self, self.config.max_elections_per_rebalance)
            self._write(recs)
            out.extend(recs)
        if self.config.token_secret_key and now >= self._next_token_sweep_ms:
            self._next_token_sweep_ms = now + self.config.token_expiry_check_interval_ms
            recs = delegation_tokens.sweep_records(self, now)
            self._write(recs)
            out.extend(recs)
        idle = self.config.max_idle_interval_ms
        if not out and idle and now - self._last_write_ms >= idle and self._latest.metadata_version >= 5:
            recs = [wrap(NoOpRecord())]
            self._write(recs)
            out.extend(recs)
        if out:
            self._last_write_ms = now
        return out

    def next_deadline(self) -> int | None:
        """The earliest time ``tick`` has work to do (None when standby)."""
        if not self._active:
            return None
        cands = []
        # The oldest session, fenced or not: no unfenced lease ends before it. A fenced broker's lease
        # end only makes ``tick`` renew it at the back (cluster.find_stale_broker), once per session
        # timeout, instead of every look scanning the sessions of all brokers not heartbeating yet.
        for s in self.sessions.values():
            cands.append(s.last_seen_ms + self.config.session_timeout_ms + 1)
            break
        if self.config.max_idle_interval_ms:
            cands.append(self._last_write_ms + self.config.max_idle_interval_ms)
        if self.config.auto_leader_rebalance:
            cands.append(self._next_rebalance_ms)
        if self.config.token_secret_key:
            cands.append(self._next_token_sweep_ms)
        return min(cands) if cands else None


_Command = Callable[[QuorumController, int, Any, int], tuple[list[MetadataRecord], Any]]

_COMMANDS: dict[str, _Command] = {
    "BrokerRegistrationRequest": cluster.register_broker,
    "BrokerHeartbeatRequest": cluster.heartbeat,
    "AssignReplicasToDirsRequest": assign_replicas_to_dirs,
    "UnregisterBrokerRequest": cluster.unregister_broker,
    "ControllerRegistrationRequest": cluster.register_controller,
    "CreateTopicsRequest": replication.create_topics,
    "DeleteTopicsRequest": replication.delete_topics,
    "CreatePartitionsRequest": replication.create_partitions,
    "AlterPartitionRequest": replication.alter_partition,
    "ElectLeadersRequest": replication.elect_leaders,
    "AllocateProducerIdsRequest": replication.allocate_producer_ids,
    "AlterPartitionReassignmentsRequest": reassignment.alter_reassignments,
    "ListPartitionReassignmentsRequest": reassignment.list_reassignments,
    "DescribeConfigsRequest": configs.describe_configs,
    "AlterConfigsRequest": configs.alter_configs,
    "IncrementalAlterConfigsRequest": configs.incremental_alter_configs,
    "CreateAclsRequest": acls.create_acls,
    "DeleteAclsRequest": acls.delete_acls,
    "DescribeAclsRequest": acls.describe_acls,
    "UpdateFeaturesRequest": features_cmd.update_features,
    "AlterClientQuotasRequest": quotas.alter_client_quotas,
    "DescribeClientQuotasRequest": quotas.describe_client_quotas,
    "AlterUserScramCredentialsRequest": scram.alter_credentials,
    "DescribeUserScramCredentialsRequest": scram.describe_credentials,
    "TokenRequest": delegation_tokens.handle,
}

_AFTER_WRITE: dict[str, Callable[[QuorumController, Any, ControllerResult], None]] = {
    "BrokerHeartbeatRequest": cluster.after_heartbeat,
}
