"""Snapshot content (KIP-630) at the image level, and when to take one.

``image_to_records`` lists the records that, replayed into an empty image, rebuild an equal image;
kraftwire/storage/snapshot.py frames them (header, batches, footer) into a checkpoint file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kraftwire.controller.features import METADATA_VERSION, RecordVersions, wrap
from kraftwire.controller.image import MetadataImage
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
from kraftwire.protocol.metadata import MetadataRecord


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
                list(p.elr) if v >= 2 else None, list(p.last_known_elr) if v >= 2 else None,
            ))
    for (rtype, rname), kv in image.configs.items():
        for k, v in kv.items():
            yield wrap(ConfigRecord(resource_type=rtype, resource_name=rname, name=k, value=v))
    for entity, kv in image.quotas.items():
        for k, v in kv.items():
            yield wrap(ClientQuotaRecord(entity=[EntityData(t, n) for t, n in entity], key=k, value=v))
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


@dataclass(slots=True)
class SnapshotPolicy:
    """Snapshot when this many records or bytes were committed since the last snapshot.

    Defaults follow Kafka's ``metadata.log.max.record.bytes.between.snapshots`` (20 MiB); the
    record count limit is kraftwire's own (0 disables it).
    """

    max_records: int = 0
    max_bytes: int = 20 * 1024 * 1024
    records_since: int = 0
    bytes_since: int = 0
    last_snapshot_offset: int = -1

    def note_committed(self, records: int, nbytes: int) -> bool:
        """Count newly committed records; True when a snapshot is due."""
        self.records_since += records
        self.bytes_since += nbytes
        return self.due

    @property
    def due(self) -> bool:
        return bool((self.max_records and self.records_since >= self.max_records)
                    or (self.max_bytes and self.bytes_since >= self.max_bytes))

    def snapshot_taken(self, end_offset: int) -> None:
        self.records_since = 0
        self.bytes_since = 0
        self.last_snapshot_offset = end_offset
