"""JBOD (KIP-858): which log directory holds each replica, and what happens when a directory fails.

A broker with several ``log.dirs`` registers their ids (``cluster.register_broker``); its replicas start
UNASSIGNED and the broker reports where it placed each one with AssignReplicasToDirs, which becomes the
``Directories`` field of PartitionChangeRecords. A directory the broker reports offline in its heartbeats
(``OfflineLogDirs``) leaves the registration (a BrokerRegistrationChangeRecord listing the dirs still
online) and every replica in it leaves its ISR and leadership, as Kafka's ReplicationControlManager does
(``handleAssignReplicasToDirs``, ``handleDirectoriesOffline``). A replica in an offline directory may not
be elected leader anywhere (``dir_online``, applied by ``partition_change.build_change``).
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any

from kraftwire.controller.partition_change import build_change
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import RecordVersions, wrap
from kraftwire.metadata.image import MIGRATING_DIR, UNASSIGNED_DIR, MetadataImage, Partition
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import assign_replicas_to_dirs_response as ar
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from collections.abc import Callable

    from kraftwire.controller.controller import QuorumController

log = logging.getLogger("kraftwire.controller")

LOST_DIR = uuid.UUID(int=2)     # Kafka's DirectoryId.LOST
Records = list[MetadataRecord]


def dir_online(image: MetadataImage, broker_id: int, directory: uuid.UUID) -> bool:
    """Kafka's DirectoryId.isOnline against the broker's registered (online) directories: unassigned and
    migrating replicas count as online, a lost one never; a registration without directories (written
    before 3.7-IV2) cannot tell, so everything is online."""
    if directory == UNASSIGNED_DIR or directory == MIGRATING_DIR:
        return True
    if directory == LOST_DIR:
        return False
    b = image.brokers.get(broker_id)
    return b is None or not b.directories or directory in b.directories


def replica_dir(part: Partition, broker_id: int) -> uuid.UUID:
    """The directory of ``broker_id``'s replica of ``part`` (MIGRATING when directories are not tracked)."""
    if not part.directories:
        return MIGRATING_DIR
    try:
        return part.directories[part.replicas.index(broker_id)]
    except ValueError:
        return UNASSIGNED_DIR


def online_check(image: MetadataImage) -> Callable[[int, uuid.UUID], bool] | None:
    """The ``dir_online`` argument of ``build_change`` for ``image`` (None before directory assignment)."""
    return partial(dir_online, image) if RecordVersions(image.metadata_version).directories else None


def _leave(ctl: QuorumController, broker_id: int, parts: list[tuple[Any, int, Partition]]) -> Records:
    """Take ``broker_id`` out of the ISR and leadership of each (topic, partition id, partition)."""
    from kraftwire.controller.cluster import _active_pred
    from kraftwire.controller.elr import change_options

    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    ok = _active_pred(image, exclude=broker_id)
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    out: Records = []
    for t, pid, p in parts:
        rec = build_change(t.id, pid, p, ok, versions, target_isr=[r for r in p.isr if r != broker_id],
                           **change_options(image, t, static, node))
        if rec is not None:
            out.append(MetadataRecord(5, versions.partition_change, rec))
    return out


def directories_offline(ctl: QuorumController, broker_id: int, broker_epoch: int,
                        offline: list[uuid.UUID]) -> Records:
    """A heartbeat's OfflineLogDirs: for the registered directories among them, their replicas leave ISRs
    and leaderships, then the registration keeps only the directories still online (nothing when every
    offline directory was already taken out)."""
    image = ctl.image
    b = image.brokers.get(broker_id)
    if b is None or not offline:
        return []
    gone = [d for d in b.directories if d in offline]
    if not gone:
        return []
    hit = set(gone)
    parts = [(t, pid, p) for t in image.topics.values() for pid, p in t.partitions.items()
             if broker_id in p.replicas and replica_dir(p, broker_id) in hit]
    out = _leave(ctl, broker_id, parts)
    online = [d for d in b.directories if d not in hit]
    out.append(wrap(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch, log_dirs=online),
                    2))
    log.warning("Directories %s of broker %d are offline: %d replicas leave their ISRs and leaderships; "
                "directories still online: %s", [str(d) for d in gone], broker_id, len(parts),
                [str(d) for d in online])
    return out


def assign_replicas_to_dirs(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """AssignReplicasToDirs (73): record each replica's directory; a replica placed in a directory that is
    offline also leaves its ISR and leadership (Kafka's handleAssignReplicasToDirs)."""
    from kraftwire.controller.cluster import _active_pred, check_broker_epoch, default_dir
    from kraftwire.controller.elr import change_options

    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    if not versions.directories:
        raise CommandError(Errors.UNSUPPORTED_VERSION, "directory assignment needs metadata.version 3.7-IV2 or later")
    bid = req.broker_id
    check_broker_epoch(image, bid, req.broker_epoch)
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    ok = _active_pred(image)
    records: Records = []
    moved_offline: list[tuple[Any, int, Partition]] = []
    response = ar.AssignReplicasToDirsResponse(directories=[])
    for d in req.directories:
        offline = not dir_online(image, bid, d.id_)
        rdir = ar.DirectoryData(id_=d.id_, topics=[])
        for rt in d.topics:
            topic = image.topics.get(rt.topic_id)
            rtopic = ar.TopicData(topic_id=rt.topic_id, partitions=[])
            for rp in rt.partitions:
                code = Errors.NONE
                part = None if topic is None else topic.partitions.get(rp.partition_index)
                if topic is None:
                    code = Errors.UNKNOWN_TOPIC_ID
                elif part is None:
                    code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif bid not in part.replicas:
                    code = Errors.NOT_LEADER_OR_FOLLOWER
                else:
                    rec = build_change(topic.id, rp.partition_index, part, ok, versions, target_dirs={bid: d.id_},
                                       default_dir=partial(default_dir, image),
                                       **change_options(image, topic, static, node))
                    if rec is not None:
                        records.append(MetadataRecord(5, versions.partition_change, rec))
                    if offline:
                        moved_offline.append((topic, rp.partition_index, part))
                if code != Errors.NONE:
                    log.warning("AssignReplicasToDirs from broker %d: %s-%d: %s", bid,
                                topic.name if topic is not None else rt.topic_id, rp.partition_index, code.name)
                rtopic.partitions.append(ar.PartitionData(partition_index=rp.partition_index, error_code=int(code)))
            rdir.topics.append(rtopic)
        response.directories.append(rdir)
    if moved_offline:
        records.extend(_leave(ctl, bid, moved_offline))
    return records, response

