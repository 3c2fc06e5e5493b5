"""Snapshot content (KIP-630) at the image level, when to take one, and when to clean the log.

``image_to_records`` lists the records that, replayed into an empty image, rebuild an equal image;
``snapshot_batches`` frames them (header, batches, footer) as the Raft layer stores them, and
``image_from_snapshot`` reads such batches back. ``SnapshotPolicy`` says when a snapshot is due
(Kafka's ``metadata.log.max.record.bytes.between.snapshots`` and
``metadata.log.max.snapshot.interval.ms``); ``RetentionPolicy`` says when the log below the latest
snapshot may go (``metadata.max.retention.bytes`` / ``.ms``). All of it is pure: the node and the
simulator call it and hand the results to the Raft core.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

from kraftwire.metadata.fast import replay_value
from kraftwire.metadata.features import METADATA_VERSION, RecordVersions, wrap
from kraftwire.metadata.image import EMPTY_IMAGE, ImageLoader, MetadataImage
from kraftwire.protocol.messages.access_control_entry_record import AccessControlEntryRecord
from kraftwire.protocol.messages.client_quota_record import ClientQuotaRecord, EntityData
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.messages.delegation_token_record import DelegationTokenRecord
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.producer_ids_record import ProducerIdsRecord
from kraftwire.protocol.messages.register_broker_record import (
    BrokerEndpoint,
    BrokerFeature,
    RegisterBrokerRecord,
)
from kraftwire.protocol.messages.register_controller_record import (
    ControllerEndpoint,
    ControllerFeature,
    RegisterControllerRecord,
)
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.protocol.messages.zk_migration_state_record import ZkMigrationStateRecord
from kraftwire.protocol.metadata import MetadataRecord, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.protocol.runtime import gc_paused
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import frame, with_raw


def iter_image_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    """The snapshot content of ``image`` as framed records, metadata.version first."""
    versions = RecordVersions(image.metadata_version)
    if METADATA_VERSION in image.features:
        yield wrap(FeatureLevelRecord(name=METADATA_VERSION, feature_level=image.features[METADATA_VERSION]))
    for name, level in sorted(image.features.items()):
        if name != METADATA_VERSION:
            yield wrap(FeatureLevelRecord(name=name, feature_level=level))
    if image.zk_migration_state:
        yield wrap(ZkMigrationStateRecord(zk_migration_state=image.zk_migration_state))
    rb_version = max(versions.register_broker, 3 if any(b.directories for b in image.brokers.values()) else 0)
    for b in image.brokers.values():
        yield wrap(RegisterBrokerRecord(
            broker_id=b.id, is_migrating_zk_broker=b.is_migrating_zk_broker,
            incarnation_id=b.incarnation_id, broker_epoch=b.epoch,
            end_points=[BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in b.listeners],
            features=[BrokerFeature(n, lo, hi) for n, lo, hi in b.features],
            rack=b.rack, fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown,
            log_dirs=list(b.directories),
        ), max(rb_version, 1 if b.in_controlled_shutdown else 0))
    for c in image.controllers.values():
        yield wrap(RegisterControllerRecord(
            controller_id=c.id, incarnation_id=c.incarnation_id, zk_migration_ready=c.zk_migration_ready,
            end_points=[ControllerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in c.listeners],
            features=[ControllerFeature(n, lo, hi) for n, lo, hi in c.features],
        ))
    p_version = versions.partition
    for t in image.topics.values():
        yield wrap(TopicRecord(name=t.name, topic_id=t.id))
        tid = t.id
        for pid, p in t.partitions.items():
            v = p_version
            if p.elr or p.last_known_elr:
                v = 2
            elif p.directories and v < 1:
                v = 1
            yield MetadataRecord(3, v, PartitionRecord(
                pid, tid, list(p.replicas), list(p.isr), list(p.removing_replicas),
                list(p.adding_replicas), p.leader, p.leader_recovery_state, p.leader_epoch,
                p.partition_epoch, list(p.directories),
                # as Kafka's PartitionRegistration.toRecord: ELR fields only when not empty
                list(p.elr) if p.elr else None, list(p.last_known_elr) if p.last_known_elr else None,
            ))
    for (rtype, rname), settings in image.configs.items():
        for name, value in settings.items():
            yield wrap(ConfigRecord(resource_type=rtype, resource_name=rname, name=name, value=value))
    for entity, quotas in image.quotas.items():
        for key, quota in quotas.items():
            yield wrap(ClientQuotaRecord(entity=[EntityData(kind, n) for kind, n in entity], key=key, value=quota))
    if image.next_producer_id:
        yield wrap(ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id))
    for aid, a in image.acls.items():
        yield wrap(AccessControlEntryRecord(
            id_=aid, resource_type=a.resource_type, resource_name=a.resource_name,
            pattern_type=a.pattern_type, principal=a.principal, host=a.host, operation=a.operation,
            permission_type=a.permission_type))
    for (name, mech), s in image.scram.items():
        yield wrap(UserScramCredentialRecord(name=name, mechanism=mech, salt=s.salt, stored_key=s.stored_key,
                                             server_key=s.server_key, iterations=s.iterations))
    for token_id, d in image.delegation_tokens.items():
        yield wrap(DelegationTokenRecord(
            owner=d.owner, requester=d.requester, renewers=list(d.renewers),
            issue_timestamp=d.issue_timestamp, max_timestamp=d.max_timestamp,
            expiration_timestamp=d.expiration_timestamp, token_id=token_id))


def image_to_records(image: MetadataImage) -> list[MetadataRecord]:
    """The snapshot content of ``image``: replayed into an empty image it gives an equal image."""
    return list(iter_image_records(image))


def snapshot_batches(image: MetadataImage, sid: SnapshotId, *, timestamp_ms: int = 0,
                     last_contained_timestamp_ms: int = 0, control: tuple[Record, ...] = ()) -> list[RecordBatch]:
    """The content of a snapshot of ``image`` with id ``sid``, ready for ``create_snapshot``.

    The batches carry their encoded bytes: all the CPU work happens here (the node runs this in a
    worker thread), storing them is only I/O.
    """
    records = (Record(value=encode_record(r.message, r.version)) for r in iter_image_records(image))
    return with_raw(frame(sid, records, timestamp_ms=timestamp_ms,
                          last_contained_timestamp_ms=last_contained_timestamp_ms, control=control))


def image_from_snapshot(batches: Iterable[RecordBatch]) -> MetadataImage:
    """Replay a snapshot's metadata records (control batches skipped) into an empty image.

    Raises MetadataReplayError (or a DecodeError) when the content cannot be applied.
    """
    loader = ImageLoader(EMPTY_IMAGE)
    with gc_paused():
        for batch in batches:
            if batch.control:
                continue
            for rec in batch.records:
                if rec.value is not None:
                    replay_value(loader, rec.value)
        return loader.image


@dataclass(slots=True)
class SnapshotPolicy:
    """Snapshot when this many records or bytes were committed since the last snapshot, or when
    committed records have waited ``max_interval_ms`` for one.

    Defaults follow Kafka's ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB) and
    ``metadata.log.max.snapshot.interval.ms`` (here 0 = off unless configured; Kafka's default is
    one hour); the record count limit is kraftwire's own (0 disables it).
    """

    max_records: int = 0
    max_bytes: int = 20 * 1024 * 1024
    records_since: int = 0
    bytes_since: int = 0
    last_snapshot_offset: int = -1
    max_interval_ms: int = 0
    waiting_since_ms: int | None = None   # when the oldest record not in a snapshot was committed

    def note_committed(self, records: int, nbytes: int, now_ms: int | None = None) -> bool:
        """Count newly committed records; True when a snapshot is due."""
        if records and self.waiting_since_ms is None and now_ms is not None:
            self.waiting_since_ms = now_ms
        self.records_since += records
        self.bytes_since += nbytes
        return self.due if now_ms is None else self.due_at(now_ms)

    @property
    def due(self) -> bool:
        return bool((self.max_records and self.records_since >= self.max_records)
                    or (self.max_bytes and self.bytes_since >= self.max_bytes))

    def due_at(self, now_ms: int) -> bool:
        """``due``, or committed records have waited ``max_interval_ms`` for a snapshot."""
        if self.due:
            return True
        return bool(self.max_interval_ms and self.records_since and self.waiting_since_ms is not None
                    and now_ms - self.waiting_since_ms >= self.max_interval_ms)

    def next_deadline(self) -> int | None:
        """When the interval rule fires next (None: nothing waits, or the rule is off)."""
        if not (self.max_interval_ms and self.records_since and self.waiting_since_ms is not None):
            return None
        return self.waiting_since_ms + self.max_interval_ms

    def snapshot_taken(self, end_offset: int) -> None:
        self.records_since = 0
        self.bytes_since = 0
        self.last_snapshot_offset = end_offset
        self.waiting_since_ms = None

    def reset(self, end_offset: int) -> None:
        """The state was replaced by a snapshot ending at ``end_offset``: nothing waits for one."""
        self.snapshot_taken(end_offset)


@dataclass(slots=True)
class RetentionPolicy:
    """When the log below the latest snapshot may be deleted (Kafka's ``metadata.max.retention.*``).

    Kafka keeps the log before its latest snapshot until the log and snapshots together pass
    ``metadata.max.retention.bytes`` or grow older than ``metadata.max.retention.ms``. We count the
    log bytes committed below the latest snapshot since the last cleaning, and their age; -1
    disables a limit, 0 cleans at every snapshot.
    """

    max_bytes: int = 100 * 1024 * 1024
    max_ms: int = 7 * 24 * 3600 * 1000
    uncleaned_bytes: int = 0              # committed since the last cleaning
    bytes_below_snapshot: int = 0         # of those, below the latest snapshot
    oldest_ms: int | None = None          # when the oldest uncleaned byte was committed
    snapshot: SnapshotId | None = None    # the latest snapshot not yet cleaned below

    def note_committed(self, nbytes: int, now_ms: int) -> None:
        if nbytes and self.oldest_ms is None:
            self.oldest_ms = now_ms
        self.uncleaned_bytes += nbytes

    def snapshot_taken(self, sid: SnapshotId) -> None:
        self.snapshot = sid
        self.bytes_below_snapshot = self.uncleaned_bytes

    def due(self, now_ms: int) -> SnapshotId | None:
        """The snapshot to clean the log below now, if a limit is passed."""
        if self.snapshot is None:
            return None
        by_size = self.max_bytes == 0 or 0 < self.max_bytes < self.bytes_below_snapshot
        by_age = self.max_ms == 0 or (self.max_ms > 0 and self.oldest_ms is not None
                                      and now_ms - self.oldest_ms >= self.max_ms)
        return self.snapshot if by_size or by_age else None

    def cleaned(self, now_ms: int) -> None:
        self.uncleaned_bytes -= self.bytes_below_snapshot
        self.bytes_below_snapshot = 0
        self.snapshot = None
        self.oldest_ms = now_ms if self.uncleaned_bytes > 0 else None


def batch_bytes(batch: RecordBatch) -> int:
    """A batch's size on disk (exact when its bytes are known, else the v2 layout's estimate)."""
    if batch.raw is not None:
        return len(batch.raw)
    return 61 + sum(20 + len(r.key or b"") + len(r.value or b"") for r in batch.records)


@dataclass(slots=True)
class Snapshotter:
    """Follows a replica's committed position and says when to snapshot and when to clean.

    The caller replays committed batches into its controller and reports them here
    (``committed``); when ``due`` returns an id, the controller's committed image is exactly the
    state below that id's end offset: frame it with ``snapshot_batches``, store it with the Raft
    core's ``create_snapshot``, report ``stored``, then apply ``clean_due`` with ``delete_before``.
    """

    kind: ClassVar[str] = "metadata"     # what its snapshots hold (``core/snapshots.py`` log lines)
    policy: SnapshotPolicy
    retention: RetentionPolicy
    position: SnapshotId | None = None   # end offset and epoch of the last committed data batch
    last_timestamp_ms: int = 0           # timestamp of that batch (the header's LastContainedLogTimestamp)
    control: tuple[Record, ...] = ()     # KRaftVersion/Voters records every snapshot carries (kraft.version 1)

    def committed(self, batches: list[RecordBatch], now_ms: int) -> None:
        if not batches:
            return
        nbytes = sum(batch_bytes(b) for b in batches)
        last = batches[-1]
        self.position = SnapshotId(last.next_offset, last.leader_epoch)
        self.last_timestamp_ms = last.base_timestamp
        self.policy.note_committed(sum(len(b.records) for b in batches), nbytes, now_ms)
        self.retention.note_committed(nbytes, now_ms)

    def loaded(self, end_offset: int, epoch: int) -> None:
        """The state was replaced by a snapshot (restart, or a follower installing the leader's)."""
        self.position = SnapshotId(end_offset, epoch)
        self.policy.reset(end_offset)

    def due(self, now_ms: int, latest: SnapshotId | None) -> SnapshotId | None:
        """The id of the snapshot to take now, if one is due and would be newer than ``latest``."""
        pos = self.position
        if pos is None or not self.policy.due_at(now_ms):
            return None
        if latest is not None and (latest.end_offset, latest.epoch) >= (pos.end_offset, pos.epoch):
            self.policy.snapshot_taken(latest.end_offset)
            return None
        return pos

    def stored(self, sid: SnapshotId) -> None:
        self.policy.snapshot_taken(sid.end_offset)
        self.retention.snapshot_taken(sid)

    def clean_due(self, now_ms: int) -> SnapshotId | None:
        return self.retention.due(now_ms)

    def cleaned(self, now_ms: int) -> None:
        self.retention.cleaned(now_ms)

    def next_deadline(self) -> int | None:
        return self.policy.next_deadline()
