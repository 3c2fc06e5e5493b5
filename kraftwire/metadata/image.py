"""The metadata image: an immutable picture of the cluster, rebuilt by replaying metadata records.

``MetadataImage`` is a frozen dataclass whose maps are plain dicts that are never mutated once the
image is built (treat them as read-only). ``MetadataDelta`` applies a batch of records on top of an
image, copying each map (and each topic's partition map) at most once per batch, then freezes the
result with ``apply()``. Unchanged maps and topics are shared between the old and the new image,
so a delta costs O(size of the maps it touches), and replaying a long log is linear when it is
done in large batches.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from kraftwire.metadata.features import METADATA_VERSION
from kraftwire.protocol.messages.abort_transaction_record import AbortTransactionRecord
from kraftwire.protocol.messages.access_control_entry_record import AccessControlEntryRecord
from kraftwire.protocol.messages.begin_transaction_record import BeginTransactionRecord
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.clear_elr_record import ClearElrRecord
from kraftwire.protocol.messages.client_quota_record import ClientQuotaRecord
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.messages.delegation_token_record import DelegationTokenRecord
from kraftwire.protocol.messages.end_transaction_record import EndTransactionRecord
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.fence_broker_record import FenceBrokerRecord
from kraftwire.protocol.messages.no_op_record import NoOpRecord
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.producer_ids_record import ProducerIdsRecord
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.messages.register_controller_record import RegisterControllerRecord
from kraftwire.protocol.messages.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from kraftwire.protocol.messages.remove_delegation_token_record import RemoveDelegationTokenRecord
from kraftwire.protocol.messages.remove_topic_record import RemoveTopicRecord
from kraftwire.protocol.messages.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.messages.unfence_broker_record import UnfenceBrokerRecord
from kraftwire.protocol.messages.unregister_broker_record import UnregisterBrokerRecord
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.protocol.messages.zk_migration_state_record import ZkMigrationStateRecord
from kraftwire.protocol.metadata import MetadataRecord

NO_LEADER = -1
NO_LEADER_CHANGE = -2
MIGRATING_DIR = uuid.UUID(int=0)      # Kafka's DirectoryId.MIGRATING
UNASSIGNED_DIR = uuid.UUID(int=1)     # Kafka's DirectoryId.UNASSIGNED

# ConfigResource types (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


class MetadataReplayError(Exception):
    """A record that cannot be applied to the image: the log and this image disagree. Stop loudly."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker as the last RegisterBrokerRecord and registration changes left it."""

    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[tuple[str, int, int], ...] = ()   # (name, min, max)
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID, ...] = ()

    @property
    def active(self) -> bool:
        """Unfenced and not shutting down: may lead partitions and join ISRs."""
        return not self.fenced and not self.in_controlled_shutdown

    def feature_range(self, name: str) -> tuple[int, int] | None:
        for n, lo, hi in self.features:
            if n == name:
                return lo, hi
        return None


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    features: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition's replica assignment and leadership (Kafka's PartitionRegistration)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    directories: tuple[uuid.UUID, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def merge(self, r: PartitionChangeRecord) -> Partition:
        """The partition after a PartitionChangeRecord: epochs per Kafka (leader epoch on leader change)."""
        replicas = self.replicas if r.replicas is None else tuple(r.replicas)
        dirs = self.directories if r.directories is None else tuple(r.directories)
        if dirs and len(dirs) != len(replicas):
            dirs = (MIGRATING_DIR,) * len(replicas)
        if r.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = r.leader, self.leader_epoch + 1
        lrs = self.leader_recovery_state if r.leader_recovery_state == -1 else r.leader_recovery_state
        return _new_partition(
            replicas, self.isr if r.isr is None else tuple(r.isr), leader, leader_epoch, self.partition_epoch + 1,
            self.removing_replicas if r.removing_replicas is None else tuple(r.removing_replicas),
            self.adding_replicas if r.adding_replicas is None else tuple(r.adding_replicas), lrs, dirs,
            self.elr if r.eligible_leader_replicas is None else tuple(r.eligible_leader_replicas),
            self.last_known_elr if r.last_known_elr is None else tuple(r.last_known_elr),
        )


_SLOT_SETTERS = tuple(getattr(Partition, f.name).__set__ for f in fields(Partition))


def _new_partition(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, leader_epoch: int,
                   partition_epoch: int, removing_replicas: tuple[int, ...], adding_replicas: tuple[int, ...],
                   leader_recovery_state: int, directories: tuple[uuid.UUID, ...], elr: tuple[int, ...],
                   last_known_elr: tuple[int, ...]) -> Partition:
    """A ``Partition`` built through its slots (fields in declaration order): replay builds one per
    partition record, and the frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field)
    costs about 2.5x as much. Equal to ``Partition(...)`` with the same values (a test checks)."""
    p = object.__new__(Partition)
    s = _SLOT_SETTERS
    s[0](p, replicas)
    s[1](p, isr)
    s[2](p, leader)
    s[3](p, leader_epoch)
    s[4](p, partition_epoch)
    s[5](p, removing_replicas)
    s[6](p, adding_replicas)
    s[7](p, leader_recovery_state)
    s[8](p, directories)
    s[9](p, elr)
    s[10](p, last_known_elr)
    return p


@dataclass(frozen=True, slots=True)
class Topic:
    id: uuid.UUID
    name: str
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AclEntry:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class DelegationToken:
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


QuotaEntity = tuple[tuple[str, str | None], ...]   # ((entity_type, entity_name), ...) sorted by type
ConfigKey = tuple[int, str]                          # (resource type, resource name)


def _empty() -> dict[Any, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Everything the metadata log describes. Never mutate its maps; derive a new image instead."""

    features: dict[str, int] = field(default_factory=_empty)
    brokers: dict[int, BrokerRegistration] = field(default_factory=_empty)
    controllers: dict[int, ControllerRegistration] = field(default_factory=_empty)
    topics: dict[uuid.UUID, Topic] = field(default_factory=_empty)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=_empty)
    configs: dict[ConfigKey, dict[str, str]] = field(default_factory=_empty)
    acls: dict[uuid.UUID, AclEntry] = field(default_factory=_empty)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=_empty)
    next_producer_id: int = 0
    scram: dict[tuple[str, int], ScramCredential] = field(default_factory=_empty)
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=_empty)
    zk_migration_state: int = 0

    @property
    def metadata_version(self) -> int:
        return self.features.get(METADATA_VERSION, 0)

    def topic_by_name(self, name: str) -> Topic | None:
        tid = self.topic_ids.get(name)
        return None if tid is None else self.topics[tid]

    def partition(self, topic_id: uuid.UUID, partition_id: int) -> Partition | None:
        t = self.topics.get(topic_id)
        return None if t is None else t.partitions.get(partition_id)

    def replay(self, record: Any) -> MetadataImage:
        """This image with one record applied (use MetadataDelta for batches)."""
        d = MetadataDelta(self)
        d.replay(record)
        return d.apply()

    def replay_all(self, records: Iterable[Any]) -> MetadataImage:
        """This image with ``records`` applied in order, as one delta."""
        d = MetadataDelta(self)
        for r in records:
            d.replay(r)
        return d.apply()


EMPTY_IMAGE = MetadataImage()


class MetadataDelta:
    """Mutable overlay of an image; ``replay`` records, then ``apply()`` for the new image.

    Transaction markers (Begin/End/AbortTransactionRecord) are not state: ``ImageLoader`` buffers
    the records between them; given to a delta directly they are ignored.
    """

    __slots__ = (
        "base", "_features", "_brokers", "_controllers", "_topics", "_topic_ids", "_parts",
        "_configs", "_config_copied", "_acls", "_quotas", "_quota_copied", "_next_pid", "_scram",
        "_tokens", "_zk", "on_partition",
    )

    def __init__(
        self,
        base: MetadataImage,
        on_partition: Callable[[uuid.UUID, int, Partition | None, Partition | None], None] | None = None,
    ) -> None:
        self.base = base
        self._features: dict[Any, Any] | None = None
        self._brokers: dict[Any, Any] | None = None
        self._controllers: dict[Any, Any] | None = None
        self._topics: dict[Any, Any] | None = None
        self._topic_ids: dict[Any, Any] | None = None
        self._parts: dict[uuid.UUID, dict[int, Partition]] = {}
        self._configs: dict[Any, Any] | None = None
        self._config_copied: set[Any] = set()
        self._acls: dict[Any, Any] | None = None
        self._quotas: dict[Any, Any] | None = None
        self._quota_copied: set[Any] = set()
        self._next_pid = base.next_producer_id
        self._scram: dict[Any, Any] | None = None
        self._tokens: dict[Any, Any] | None = None
        self._zk = base.zk_migration_state
        #: called with (topic id, partition id, old, new) on every partition change (for indexes)
        self.on_partition = on_partition

    # -- reads that see this delta's own changes ---------------------------------------------------
    @property
    def features(self) -> dict[str, int]:
        return self.base.features if self._features is None else self._features

    @property
    def brokers(self) -> dict[int, BrokerRegistration]:
        return self.base.brokers if self._brokers is None else self._brokers

    @property
    def topics(self) -> dict[uuid.UUID, Topic]:
        return self.base.topics if self._topics is None else self._topics

    @property
    def topic_ids(self) -> dict[str, uuid.UUID]:
        return self.base.topic_ids if self._topic_ids is None else self._topic_ids

    def partitions(self, tid: uuid.UUID) -> dict[int, Partition] | None:
        p = self._parts.get(tid)
        if p is not None:
            return p
        t = self.topics.get(tid)
        return None if t is None else t.partitions

    # -- copy-on-first-write helpers ------------------------------------------------------------------
    def _w_brokers(self) -> dict[Any, Any]:
        if self._brokers is None:
            self._brokers = dict(self.base.brokers)
        return self._brokers

    def _w_topics(self) -> tuple[dict[Any, Any], dict[Any, Any]]:
        if self._topics is None:
            self._topics = dict(self.base.topics)
            self._topic_ids = dict(self.base.topic_ids)
        return self._topics, self._topic_ids  # type: ignore[return-value]

    def _w_parts(self, tid: uuid.UUID) -> dict[int, Partition]:
        p = self._parts.get(tid)
        if p is None:
            t = self.topics.get(tid)
            if t is None:
                raise MetadataReplayError(f"no topic with id {tid}")
            p = self._parts[tid] = dict(t.partitions)
        return p

    def _w_config(self, key: ConfigKey) -> dict[str, str]:
        if self._configs is None:
            self._configs = dict(self.base.configs)
        c = self._configs.get(key)
        if key not in self._config_copied:
            c = self._configs[key] = dict(c) if c else {}
            self._config_copied.add(key)
        return c  # type: ignore[return-value]

    # -- replay -------------------------------------------------------------------------------------------
    def replay(self, record: Any) -> None:
        """Apply one record (a generated *Record object or a MetadataRecord frame)."""
        msg = record.message if type(record) is MetadataRecord else record
        fn = _HANDLERS.get(type(msg))
        if fn is None:
            raise MetadataReplayError(f"cannot replay {type(msg).__name__}")
        fn(self, msg)

    def _register_broker(self, r: RegisterBrokerRecord) -> None:
        self._w_brokers()[r.broker_id] = BrokerRegistration(
            id=r.broker_id,
            epoch=r.broker_epoch,
            incarnation_id=r.incarnation_id,
            listeners=tuple(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in r.end_points),
            features=tuple((f.name, f.min_supported_version, f.max_supported_version) for f in r.features),
            rack=r.rack,
            fenced=r.fenced,
            in_controlled_shutdown=r.in_controlled_shutdown,
            is_migrating_zk_broker=r.is_migrating_zk_broker,
            directories=tuple(r.log_dirs),
        )

    def _broker_at(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        b = self.brokers.get(broker_id)
        if b is None:
            raise MetadataReplayError(f"{what}: broker {broker_id} is not registered")
        if b.epoch != epoch:
            raise MetadataReplayError(f"{what}: broker {broker_id} has epoch {b.epoch}, record has {epoch}")
        return b

    def _unregister_broker(self, r: UnregisterBrokerRecord) -> None:
        self._broker_at(r.broker_id, r.broker_epoch, "UnregisterBrokerRecord")
        del self._w_brokers()[r.broker_id]

    def _change_broker(self, broker_id: int, epoch: int, what: str, fenced: bool | None,
                       shutdown: bool | None, dirs: tuple[Any, ...] | None = None) -> None:
        b = self._broker_at(broker_id, epoch, what)
        self._w_brokers()[broker_id] = BrokerRegistration(
            b.id, b.epoch, b.incarnation_id, b.listeners, b.features, b.rack,
            b.fenced if fenced is None else fenced,
            b.in_controlled_shutdown if shutdown is None else shutdown,
            b.is_migrating_zk_broker,
            b.directories if dirs is None else dirs,
        )

    def _fence_broker(self, r: FenceBrokerRecord) -> None:
        self._change_broker(r.id_, r.epoch, "FenceBrokerRecord", True, None)

    def _unfence_broker(self, r: UnfenceBrokerRecord) -> None:
        self._change_broker(r.id_, r.epoch, "UnfenceBrokerRecord", False, None)

    def _registration_change(self, r: BrokerRegistrationChangeRecord) -> None:
        fenced = {0: None, 1: True, -1: False}
        if r.fenced not in fenced:
            raise MetadataReplayError(f"BrokerRegistrationChangeRecord: bad fenced value {r.fenced}")
        if r.in_controlled_shutdown not in (0, 1):
            raise MetadataReplayError(
                f"BrokerRegistrationChangeRecord: bad in_controlled_shutdown value {r.in_controlled_shutdown}")
        self._change_broker(r.broker_id, r.broker_epoch, "BrokerRegistrationChangeRecord",
                            fenced[r.fenced], True if r.in_controlled_shutdown == 1 else None,
                            tuple(r.log_dirs) if r.log_dirs else None)

    def _register_controller(self, r: RegisterControllerRecord) -> None:
        if self._controllers is None:
            self._controllers = dict(self.base.controllers)
        self._controllers[r.controller_id] = ControllerRegistration(
            r.controller_id, r.incarnation_id, r.zk_migration_ready,
            tuple(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in r.end_points),
            tuple((f.name, f.min_supported_version, f.max_supported_version) for f in r.features),
        )

    def _feature_level(self, r: FeatureLevelRecord) -> None:
        # Any level is recorded, even one this kraftwire does not support: the node decides what to do
        # about it (features.unsupported_reason), replay itself never fails on a feature level.
        if r.name == METADATA_VERSION and r.feature_level < 1:
            raise MetadataReplayError(f"metadata.version level {r.feature_level} cannot be finalized")
        if self._features is None:
            self._features = dict(self.base.features)
        if r.feature_level == 0:
            self._features.pop(r.name, None)
        else:
            self._features[r.name] = r.feature_level

    def _topic(self, r: TopicRecord) -> None:
        topics, ids = self._w_topics()
        if r.topic_id in topics:
            raise MetadataReplayError(f"TopicRecord: topic id {r.topic_id} already exists")
        if r.name in ids:
            raise MetadataReplayError(f"TopicRecord: topic {r.name!r} already exists")
        topics[r.topic_id] = Topic(r.topic_id, r.name, {})
        ids[r.name] = r.topic_id
        self._parts[r.topic_id] = {}

    def _partition(self, r: PartitionRecord) -> None:
        self.put_partition(r.topic_id, r.partition_id, _new_partition(
            tuple(r.replicas), tuple(r.isr), r.leader, r.leader_epoch, r.partition_epoch,
            tuple(r.removing_replicas), tuple(r.adding_replicas), r.leader_recovery_state, tuple(r.directories),
            tuple(r.eligible_leader_replicas or ()), tuple(r.last_known_elr or ()),
        ))

    def put_partition(self, tid: uuid.UUID, pid: int, new: Partition) -> None:
        """What a PartitionRecord does: set partition ``pid`` of topic ``tid`` to ``new``."""
        parts = self._parts.get(tid)
        if parts is None:
            parts = self._w_parts(tid)
        old = parts.get(pid)
        parts[pid] = new
        if self.on_partition is not None:
            self.on_partition(tid, pid, old, new)

    def _partition_change(self, r: PartitionChangeRecord) -> None:
        parts = self._w_parts(r.topic_id)
        old = parts.get(r.partition_id)
        if old is None:
            raise MetadataReplayError(f"PartitionChangeRecord: no partition {r.topic_id}:{r.partition_id}")
        new = parts[r.partition_id] = old.merge(r)
        if self.on_partition is not None:
            self.on_partition(r.topic_id, r.partition_id, old, new)

    def _clear_elr(self, r: ClearElrRecord) -> None:
        """Empty ELR and last-known ELR of one topic's partitions (every topic's if the name is empty)."""
        if r.topic_name:
            tid = self.topic_ids.get(r.topic_name)
            if tid is None:
                raise MetadataReplayError(f"ClearElrRecord: no topic named {r.topic_name!r}")
            tids = [tid]
        else:
            tids = list(self.topics)
        clear = PartitionChangeRecord(eligible_leader_replicas=[], last_known_elr=[])
        for tid in tids:
            current = self.partitions(tid) or {}
            for pid in [pid for pid, part in current.items() if part.elr or part.last_known_elr]:
                parts = self._w_parts(tid)
                old = parts[pid]
                new = parts[pid] = old.merge(clear)
                if self.on_partition is not None:
                    self.on_partition(tid, pid, old, new)

    def _remove_topic(self, r: RemoveTopicRecord) -> None:
        topics, ids = self._w_topics()
        t = topics.pop(r.topic_id, None)
        if t is None:
            raise MetadataReplayError(f"RemoveTopicRecord: no topic with id {r.topic_id}")
        del ids[t.name]
        parts = self._parts.pop(r.topic_id, t.partitions)
        if self.on_partition is not None:
            for pid, p in parts.items():
                self.on_partition(r.topic_id, pid, p, None)
        key = (TOPIC_RESOURCE, t.name)
        if key in (self.base.configs if self._configs is None else self._configs):
            if self._configs is None:
                self._configs = dict(self.base.configs)
            del self._configs[key]
            self._config_copied.discard(key)

    def _config(self, r: ConfigRecord) -> None:
        key = (r.resource_type, r.resource_name)
        c = self._w_config(key)
        if r.value is None:
            c.pop(r.name, None)
        else:
            c[r.name] = r.value

    def _acl(self, r: AccessControlEntryRecord) -> None:
        if self._acls is None:
            self._acls = dict(self.base.acls)
        if r.id_ in self._acls:
            raise MetadataReplayError(f"AccessControlEntryRecord: ACL {r.id_} already exists")
        self._acls[r.id_] = AclEntry(r.resource_type, r.resource_name, r.pattern_type, r.principal,
                                     r.host, r.operation, r.permission_type)

    def _remove_acl(self, r: RemoveAccessControlEntryRecord) -> None:
        if self._acls is None:
            self._acls = dict(self.base.acls)
        if self._acls.pop(r.id_, None) is None:
            raise MetadataReplayError(f"RemoveAccessControlEntryRecord: no ACL {r.id_}")

    def _quota(self, r: ClientQuotaRecord) -> None:
        key: QuotaEntity = tuple(sorted((e.entity_type, e.entity_name) for e in r.entity))
        if self._quotas is None:
            self._quotas = dict(self.base.quotas)
        if key not in self._quota_copied:
            self._quotas[key] = dict(self._quotas.get(key) or {})
            self._quota_copied.add(key)
        q = self._quotas[key]
        if r.remove:
            q.pop(r.key, None)
        else:
            q[r.key] = r.value

    def _producer_ids(self, r: ProducerIdsRecord) -> None:
        if r.next_producer_id <= self._next_pid:
            raise MetadataReplayError(
                f"ProducerIdsRecord: next id {r.next_producer_id} is not above {self._next_pid}")
        self._next_pid = r.next_producer_id

    def _scram_cred(self, r: UserScramCredentialRecord) -> None:
        if self._scram is None:
            self._scram = dict(self.base.scram)
        self._scram[(r.name, r.mechanism)] = ScramCredential(r.salt, r.stored_key, r.server_key, r.iterations)

    def _remove_scram(self, r: RemoveUserScramCredentialRecord) -> None:
        if self._scram is None:
            self._scram = dict(self.base.scram)
        if self._scram.pop((r.name, r.mechanism), None) is None:
            raise MetadataReplayError(f"RemoveUserScramCredentialRecord: no credential for {r.name!r}")

    def _token(self, r: DelegationTokenRecord) -> None:
        if self._tokens is None:
            self._tokens = dict(self.base.delegation_tokens)
        self._tokens[r.token_id] = DelegationToken(r.owner, r.requester, tuple(r.renewers),
                                                   r.issue_timestamp, r.max_timestamp,
                                                   r.expiration_timestamp)

    def _remove_token(self, r: RemoveDelegationTokenRecord) -> None:
        if self._tokens is None:
            self._tokens = dict(self.base.delegation_tokens)
        if self._tokens.pop(r.token_id, None) is None:
            raise MetadataReplayError(f"RemoveDelegationTokenRecord: no token {r.token_id!r}")

    def _zk_state(self, r: ZkMigrationStateRecord) -> None:
        self._zk = r.zk_migration_state

    def _nothing(self, r: Any) -> None:
        pass

    # -- freeze ------------------------------------------------------------------------------------------
    def apply(self) -> MetadataImage:
        """The new image. The delta must not be used afterwards."""
        b = self.base
        topics, topic_ids = b.topics, b.topic_ids
        if self._parts:
            topics, topic_ids = self._w_topics()
            for tid, parts in self._parts.items():
                t = topics.get(tid)
                if t is not None:
                    topics[tid] = Topic(t.id, t.name, parts)
        elif self._topics is not None:
            topics, topic_ids = self._topics, self._topic_ids  # type: ignore[assignment]
        configs = b.configs
        if self._configs is not None:
            configs = {k: v for k, v in self._configs.items() if v}
        quotas = b.quotas
        if self._quotas is not None:
            quotas = {k: v for k, v in self._quotas.items() if v}
        return MetadataImage(
            features=b.features if self._features is None else self._features,
            brokers=b.brokers if self._brokers is None else self._brokers,
            controllers=b.controllers if self._controllers is None else self._controllers,
            topics=topics,
            topic_ids=topic_ids,
            configs=configs,
            acls=b.acls if self._acls is None else self._acls,
            quotas=quotas,
            next_producer_id=self._next_pid,
            scram=b.scram if self._scram is None else self._scram,
            delegation_tokens=b.delegation_tokens if self._tokens is None else self._tokens,
            zk_migration_state=self._zk,
        )


_HANDLERS: dict[type, Callable[[MetadataDelta, Any], None]] = {
    RegisterBrokerRecord: MetadataDelta._register_broker,
    UnregisterBrokerRecord: MetadataDelta._unregister_broker,
    FenceBrokerRecord: MetadataDelta._fence_broker,
    UnfenceBrokerRecord: MetadataDelta._unfence_broker,
    BrokerRegistrationChangeRecord: MetadataDelta._registration_change,
    RegisterControllerRecord: MetadataDelta._register_controller,
    FeatureLevelRecord: MetadataDelta._feature_level,
    TopicRecord: MetadataDelta._topic,
    PartitionRecord: MetadataDelta._partition,
    PartitionChangeRecord: MetadataDelta._partition_change,
    ClearElrRecord: MetadataDelta._clear_elr,
    RemoveTopicRecord: MetadataDelta._remove_topic,
    ConfigRecord: MetadataDelta._config,
    AccessControlEntryRecord: MetadataDelta._acl,
    RemoveAccessControlEntryRecord: MetadataDelta._remove_acl,
    ClientQuotaRecord: MetadataDelta._quota,
    ProducerIdsRecord: MetadataDelta._producer_ids,
    UserScramCredentialRecord: MetadataDelta._scram_cred,
    RemoveUserScramCredentialRecord: MetadataDelta._remove_scram,
    DelegationTokenRecord: MetadataDelta._token,
    RemoveDelegationTokenRecord: MetadataDelta._remove_token,
    ZkMigrationStateRecord: MetadataDelta._zk_state,
    NoOpRecord: MetadataDelta._nothing,
    BeginTransactionRecord: MetadataDelta._nothing,
    EndTransactionRecord: MetadataDelta._nothing,
    AbortTransactionRecord: MetadataDelta._nothing,
}


class ImageLoader:
    """Replays a committed record stream into images, honouring metadata transactions (KIP-868).

    Records accumulate in one MetadataDelta that is frozen only when ``image`` is read, so
    replaying record by record stays linear. Records between BeginTransactionRecord and
    EndTransactionRecord are held back and applied together at the end; AbortTransactionRecord
    drops them.
    """

    def __init__(self, image: MetadataImage = EMPTY_IMAGE) -> None:
        self._image = image
        self._delta: MetadataDelta | None = None
        self._txn: list[Any] | None = None
        #: partition-change hook handed to every delta (see MetadataDelta.on_partition)
        self.on_partition: Callable[[uuid.UUID, int, Partition | None, Partition | None], None] | None = None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    @property
    def image(self) -> MetadataImage:
        """The image after every record replayed so far (outside an open transaction)."""
        if self._delta is not None:
            self._image = self._delta.apply()
            self._delta = None
        return self._image

    @property
    def features(self) -> dict[str, int]:
        """The finalized features replayed so far, without freezing the pending delta into an image."""
        return self._image.features if self._delta is None else self._delta.features

    def _apply(self, msg: Any) -> None:
        if self._delta is None:
            self._delta = MetadataDelta(self._image, self.on_partition)
        self._delta.replay(msg)

    def replay_partition(self, tid: uuid.UUID, pid: int, partition: Partition) -> None:
        """A PartitionRecord's effect, decoded elsewhere (``metadata.fast``); not inside a transaction."""
        if self._txn is not None:
            raise MetadataReplayError("replay_partition inside a transaction")
        delta = self._delta
        if delta is None:
            delta = self._delta = MetadataDelta(self._image, self.on_partition)
        delta.put_partition(tid, pid, partition)

    def replay(self, record: Any) -> None:
        msg = record.message if type(record) is MetadataRecord else record
        t = type(msg)
        if t is BeginTransactionRecord:
            if self._txn is not None:
                raise MetadataReplayError("BeginTransactionRecord inside a transaction")
            self._txn = []
        elif t is EndTransactionRecord:
            if self._txn is None:
                raise MetadataReplayError("EndTransactionRecord outside a transaction")
            txn, self._txn = self._txn, None
            for m in txn:
                self._apply(m)
        elif t is AbortTransactionRecord:
            if self._txn is None:
                raise MetadataReplayError("AbortTransactionRecord outside a transaction")
            self._txn = None
        elif self._txn is not None:
            if t not in _HANDLERS:
                raise MetadataReplayError(f"cannot replay {t.__name__}")
            self._txn.append(msg)
        else:
            self._apply(msg)
