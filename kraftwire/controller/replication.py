"""Topics and partitions: CreateTopics, DeleteTopics, CreatePartitions, AlterPartition, ElectLeaders."""

from __future__ import annotations

import re
import uuid
import zlib
from typing import TYPE_CHECKING, Any

from kraftwire.controller import configs as cfgs
from kraftwire.controller.cluster import _active_pred, check_broker_epoch, default_dir
from kraftwire.controller.elr import change_options
from kraftwire.controller.partition_change import RECOVERING, Election, build_change
from kraftwire.controller.placement import PlacementError, place
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import RecordVersions, wrap
from kraftwire.metadata.image import TOPIC_RESOURCE, MetadataImage, Partition
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_response as apr
from kraftwire.protocol.messages import create_partitions_response as cpr
from kraftwire.protocol.messages import create_topics_response as ctr
from kraftwire.protocol.messages import delete_topics_response as dtr
from kraftwire.protocol.messages import elect_leaders_response as elr
from kraftwire.protocol.messages.allocate_producer_ids_response import AllocateProducerIdsResponse
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.producer_ids_record import ProducerIdsRecord
from kraftwire.protocol.messages.remove_topic_record import RemoveTopicRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

Records = list[MetadataRecord]
MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
RESERVED_TOPIC_IDS = (uuid.UUID(int=0), uuid.UUID(int=1))


def validate_topic_name(name: str) -> None:
    """Kafka's topic name rules; raises CommandError(INVALID_TOPIC_EXCEPTION)."""
    if not name:
        raise CommandError(Errors.INVALID_TOPIC_EXCEPTION, "topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise CommandError(Errors.INVALID_TOPIC_EXCEPTION, "topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME:
        raise CommandError(Errors.INVALID_TOPIC_EXCEPTION,
                           f"topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL.match(name):
        raise CommandError(Errors.INVALID_TOPIC_EXCEPTION,
                           f"topic name {name!r} is illegal, it contains a character other than "
                           "ASCII alphanumerics, '.', '_' and '-'")


def new_topic_id(ctl: QuorumController) -> uuid.UUID:
    while True:
        u = uuid.UUID(int=ctl.rng.getrandbits(128), version=4)
        if u not in RESERVED_TOPIC_IDS and u not in ctl.image.topics:
            return u


def _partition_record(image: MetadataImage, versions: RecordVersions, tid: uuid.UUID, pid: int,
                      replicas: list[int]) -> MetadataRecord:
    ok = _active_pred(image)
    isr = [r for r in replicas if ok(r)]
    rec = PartitionRecord(partition_id=pid, topic_id=tid, replicas=list(replicas), isr=isr,
                          leader=isr[0] if isr else -1, leader_epoch=0, partition_epoch=0)
    if versions.directories:
        rec.directories = [default_dir(image, r) for r in replicas]
    return MetadataRecord(3, versions.partition, rec)


def _check_manual(image: MetadataImage, lists: list[list[int]], rf: int | None) -> None:
    ok = _active_pred(image)
    for i, replicas in enumerate(lists):
        if not replicas:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"the manual partition assignment includes an empty replica list ({i})")
        if len(set(replicas)) != len(replicas):
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"the manual partition assignment includes duplicate replicas: {replicas}")
        for r in replicas:
            if r not in image.brokers:
                raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                   f"the manual partition assignment includes broker {r}, but no such "
                                   "broker is registered")
        if rf is not None and len(replicas) != rf:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"the manual partition assignment includes a partition with {len(replicas)} "
                               f"replica(s), but this is not consistent with the others ({rf})")
        if not any(ok(r) for r in replicas):
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"all brokers in the manual assignment {replicas} are fenced or in "
                               "controlled shutdown")


def _usable_brokers(image: MetadataImage) -> list[Any]:
    return [b for b in image.brokers.values() if b.active]


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


def _create_one(ctl: QuorumController, t: Any, taken: set[str], collisions: dict[str, str],
                versions: RecordVersions) -> tuple[uuid.UUID, int, int, Records, dict[str, str]]:
    image = ctl.image
    validate_topic_name(t.name)
    if t.name in taken:
        raise CommandError(Errors.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists")
    other = collisions.get(_collision_key(t.name))
    if other is not None:
        raise CommandError(Errors.INVALID_TOPIC_EXCEPTION,
                           f"topic {t.name!r} collides with existing topic {other!r}")
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            raise CommandError(Errors.INVALID_REQUEST,
                               "both numPartitions or replicationFactor and replicasAssignments were set")
        by_index = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        if sorted(by_index) != list(range(len(t.assignments))):
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               "partitions should be a consecutive 0-based integer sequence")
        lists = [by_index[i] for i in range(len(by_index))]
        _check_manual(image, lists, len(lists[0]))
    else:
        n = ctl.config.default_num_partitions if t.num_partitions == -1 else t.num_partitions
        rf = ctl.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        if n <= 0:
            raise CommandError(Errors.INVALID_PARTITIONS,
                               "number of partitions was set to an invalid non-positive value")
        if rf <= 0:
            raise CommandError(Errors.INVALID_REPLICATION_FACTOR,
                               "replication factor must be larger than 0, or -1 to use the default value")
        try:
            lists = place(_usable_brokers(image), n, rf, start=zlib.crc32(t.name.encode()))
        except PlacementError as e:
            raise CommandError(Errors.INVALID_REPLICATION_FACTOR, f"unable to replicate the partition "
                               f"{rf} time(s): {e}") from None
    topic_configs: dict[str, str] = {}
    for c in t.configs:
        if c.name in topic_configs:
            raise CommandError(Errors.INVALID_REQUEST, f"duplicate config {c.name}")
        cfgs.validate_topic_config(c.name, c.value)
        topic_configs[c.name] = c.value
    tid = new_topic_id(ctl)
    recs: Records = [wrap(TopicRecord(name=t.name, topic_id=tid))]
    for k, v in topic_configs.items():
        recs.append(wrap(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=t.name, name=k, value=v)))
    recs.extend(_partition_record(image, versions, tid, i, r) for i, r in enumerate(lists))
    return tid, len(lists), len(lists[0]), recs, topic_configs


def create_topics(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    names = [t.name for t in req.topics]
    dups = {n for n in names if names.count(n) > 1} if len(set(names)) != len(names) else set()
    taken = set(image.topic_ids)
    collisions = {_collision_key(n): n for n in image.topic_ids}
    out: Records = []
    resp = ctr.CreateTopicsResponse()
    seen: set[str] = set()
    for t in req.topics:
        if t.name in dups:
            if t.name not in seen:
                resp.topics.append(ctr.CreatableTopicResult(
                    name=t.name, error_code=int(Errors.INVALID_REQUEST),
                    error_message=f"duplicate topic name {t.name!r}", configs=None))
                seen.add(t.name)
            continue
        try:
            tid, n, rf, recs, own = _create_one(ctl, t, taken, collisions, versions)
        except CommandError as e:
            resp.topics.append(ctr.CreatableTopicResult(name=t.name, error_code=int(e.code),
                                                        error_message=e.message, configs=None))
            continue
        taken.add(t.name)
        collisions[_collision_key(t.name)] = t.name
        if not req.validate_only:
            out.extend(recs)
        entries = []
        for k, d in cfgs.TOPIC_CONFIGS.items():
            src = cfgs.SOURCE_TOPIC if k in own else cfgs.SOURCE_DEFAULT
            entries.append(ctr.CreatableTopicConfigs(name=k, value=own.get(k, d.default), read_only=False,
                                                     config_source=src, is_sensitive=False))
        resp.topics.append(ctr.CreatableTopicResult(
            name=t.name, topic_id=tid, error_code=0, error_message=None, num_partitions=n,
            replication_factor=rf, configs=entries))
    return out, resp


def delete_topics(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(n, uuid.UUID(int=0)) for n in req.topic_names]
    zero = uuid.UUID(int=0)
    names = [n for n, i in wanted if n is not None and i == zero]
    ids = [i for n, i in wanted if i != zero]
    out: Records = []
    removed: set[uuid.UUID] = set()
    resp = dtr.DeleteTopicsResponse()
    for name, tid in wanted:
        res = dtr.DeletableTopicResult(name=name, topic_id=tid, error_code=0, error_message=None)
        resp.responses.append(res)
        if name is not None and tid != zero:
            res.error_code, res.error_message = int(Errors.INVALID_REQUEST), "both topic name and ID are set"
        elif name is None and tid == zero:
            res.error_code, res.error_message = int(Errors.INVALID_REQUEST), "neither topic name nor ID is set"
        elif (tid == zero and names.count(name) > 1) or (tid != zero and ids.count(tid) > 1):
            res.error_code, res.error_message = int(Errors.INVALID_REQUEST), "duplicate topic in request"
        elif tid == zero:
            found = image.topic_ids.get(name)
            if found is None:
                res.error_code = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                res.topic_id = found
        else:
            t = image.topics.get(tid)
            if t is None:
                res.error_code = int(Errors.UNKNOWN_TOPIC_ID)
            else:
                res.name = t.name
        if res.error_code == 0 and res.topic_id not in removed:
            removed.add(res.topic_id)
            out.append(wrap(RemoveTopicRecord(topic_id=res.topic_id)))
    return out, resp


def create_partitions(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    names = [t.name for t in req.topics]
    out: Records = []
    resp = cpr.CreatePartitionsResponse()
    for t in req.topics:
        res = cpr.CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        resp.results.append(res)
        try:
            if names.count(t.name) > 1:
                raise CommandError(Errors.INVALID_REQUEST, "duplicate topic name in request")
            topic = image.topic_by_name(t.name)
            if topic is None:
                raise CommandError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t.name!r} does not exist")
            cur = len(topic.partitions)
            if t.count <= cur:
                raise CommandError(Errors.INVALID_PARTITIONS,
                                   f"topic currently has {cur} partition(s); {t.count} would not be an increase")
            rf = len(topic.partitions[0].replicas) if 0 in topic.partitions else 1
            extra = t.count - cur
            if t.assignments:
                if len(t.assignments) != extra:
                    raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                       f"attempted to add {extra} additional partition(s), but only "
                                       f"{len(t.assignments)} assignment(s) were specified")
                lists = [list(a.broker_ids) for a in t.assignments]
                _check_manual(image, lists, rf)
            else:
                try:
                    lists = place(_usable_brokers(image), extra, rf,
                                  start=zlib.crc32(t.name.encode()), first_partition=cur)
                except PlacementError as e:
                    raise CommandError(Errors.INVALID_REPLICATION_FACTOR, str(e)) from None
            if not req.validate_only:
                out.extend(_partition_record(image, versions, topic.id, cur + i, r) for i, r in enumerate(lists))
        except CommandError as e:
            res.error_code, res.error_message = int(e.code), e.message
    return out, resp


def _ineligible(image: MetadataImage, states: list[tuple[int, int]]) -> str | None:
    for bid, epoch in states:
        b = image.brokers.get(bid)
        if b is None:
            return f"{bid} not registered"
        if b.in_controlled_shutdown:
            return f"{bid} shutting down"
        if b.fenced:
            return f"{bid} fenced"
        if epoch != -1 and b.epoch != epoch:
            return f"{bid} broker epoch mismatch: requested={epoch} expected={b.epoch}"
    return None


def _validate_alter(image: MetadataImage, broker_id: int, part: Partition | None, pd: Any,
                    states: list[tuple[int, int]], version: int) -> Errors:
    if part is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if pd.leader_epoch > part.leader_epoch or pd.partition_epoch > part.partition_epoch:
        return Errors.NOT_CONTROLLER
    if pd.leader_epoch < part.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if broker_id != part.leader:
        return Errors.INVALID_REQUEST
    if pd.partition_epoch < part.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    new_isr = [b for b, _ in states]
    if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(part.replicas):
        return Errors.INVALID_REQUEST
    if part.leader not in new_isr:
        return Errors.INVALID_REQUEST
    if pd.leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return Errors.INVALID_REQUEST
    if part.leader_recovery_state == 0 and pd.leader_recovery_state == RECOVERING:
        return Errors.INVALID_REQUEST
    if _ineligible(image, states) is not None:
        return Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return Errors.NONE


def _unclean_enabled(image: MetadataImage, topic: str) -> bool:
    v = image.configs.get((TOPIC_RESOURCE, topic), {}).get("unclean.leader.election.enable")
    if v is None:
        v = image.configs.get((4, ""), {}).get("unclean.leader.election.enable", "false")
    return v.strip().lower() == "true"


def alter_partition(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """KIP-497 AlterPartition (v0-v3): the partition leader proposes a new ISR."""
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    check_broker_epoch(image, req.broker_id, req.broker_epoch)
    ok = _active_pred(image)
    out: Records = []
    resp = apr.AlterPartitionResponse()
    zero = uuid.UUID(int=0)
    for td in req.topics:
        rt = apr.TopicData(topic_name=td.topic_name, topic_id=td.topic_id)
        resp.topics.append(rt)
        tid = td.topic_id if version > 1 else image.topic_ids.get(td.topic_name)
        topic = None if tid is None or tid == zero else image.topics.get(tid)
        if topic is None:
            err = Errors.UNKNOWN_TOPIC_ID if version > 1 else Errors.UNKNOWN_TOPIC_OR_PARTITION
            rt.partitions.extend(apr.PartitionData(partition_index=pd.partition_index, error_code=int(err))
                                 for pd in td.partitions)
            continue
        for pd in td.partitions:
            pid = pd.partition_index
            if version < 3:
                states = [(b, -1) for b in pd.new_isr]
            else:
                states = [(s.broker_id, s.broker_epoch) for s in pd.new_isr_with_epochs]
            part = topic.partitions.get(pid)
            err = _validate_alter(image, req.broker_id, part, pd, states, version)
            if err is not Errors.NONE:
                rt.partitions.append(apr.PartitionData(partition_index=pid, error_code=int(err)))
                continue
            assert part is not None
            election = Election.UNCLEAN if _unclean_enabled(image, topic.name) else Election.ONLINE
            rec = build_change(topic.id, pid, part, ok, versions, target_isr=[b for b, _ in states],
                               election=election, target_recovery_state=pd.leader_recovery_state,
                               **change_options(image, topic, ctl.config.static_broker_configs,
                                                ctl.config.node_id))
            if rec is not None:
                out.append(MetadataRecord(5, versions.partition_change, rec))
                part = part.merge(rec)
                if rec.leader not in (req.broker_id, -2):
                    err = Errors.NEW_LEADER_ELECTED if version > 1 else Errors.FENCED_LEADER_EPOCH
                    rt.partitions.append(apr.PartitionData(partition_index=pid, error_code=int(err)))
                    continue
            rt.partitions.append(apr.PartitionData(
                partition_index=pid, error_code=0, leader_id=part.leader, leader_epoch=part.leader_epoch,
                isr=list(part.isr), leader_recovery_state=part.leader_recovery_state,
                partition_epoch=part.partition_epoch))
    return out, resp


def _elect_one(image: MetadataImage, versions: RecordVersions, topic: str, pid: int, unclean: bool,
               out: Records, static: dict[str, str], node_id: int) -> Errors:
    t = image.topic_by_name(topic)
    part = None if t is None else t.partitions.get(pid)
    if part is None or t is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if (not unclean and part.replicas and part.leader == part.replicas[0]) or (unclean and part.leader != -1):
        return Errors.ELECTION_NOT_NEEDED
    rec = build_change(t.id, pid, part, _active_pred(image), versions,
                       election=Election.UNCLEAN if unclean else Election.PREFERRED,
                       **change_options(image, t, static, node_id))
    if rec is None:
        return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE if unclean else Errors.PREFERRED_LEADER_NOT_AVAILABLE
    out.append(MetadataRecord(5, versions.partition_change, rec))
    return Errors.NONE


def elect_leaders(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    if req.election_type not in (0, 1):
        raise CommandError(Errors.INVALID_REQUEST, f"unknown election type {req.election_type}")
    unclean = req.election_type == 1
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    out: Records = []
    resp = elr.ElectLeadersResponse()
    if req.topic_partitions is None:
        for name in sorted(image.topic_ids):
            tr = elr.ReplicaElectionResult(topic=name)
            resp.replica_election_results.append(tr)
            for pid in sorted(image.topic_by_name(name).partitions):  # type: ignore[union-attr]
                err = _elect_one(image, versions, name, pid, unclean, out, static, node)
                if err is not Errors.ELECTION_NOT_NEEDED:
                    tr.partition_result.append(elr.PartitionResult(pid, int(err), None))
    else:
        for tp in req.topic_partitions:
            tr = elr.ReplicaElectionResult(topic=tp.topic)
            resp.replica_election_results.append(tr)
            for pid in tp.partitions:
                err = _elect_one(image, versions, tp.topic, pid, unclean, out, static, node)
                tr.partition_result.append(elr.PartitionResult(pid, int(err), None))
    return out, resp


def rebalance_records(ctl: QuorumController, max_elections: int) -> Records:
    """Preferred-leader elections for partitions led by a non-preferred replica (auto rebalance)."""
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    ok = _active_pred(image)
    out: Records = []
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    for tid, t in image.topics.items():
        for pid, p in t.partitions.items():
            if p.replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr and ok(p.replicas[0]):
                rec = build_change(tid, pid, p, ok, versions, election=Election.PREFERRED,
                                   **change_options(image, t, static, node))
                if rec is not None:
                    out.append(MetadataRecord(5, versions.partition_change, rec))
                    if len(out) >= max_elections:
                        return out
    return out


def allocate_producer_ids(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    check_broker_epoch(image, req.broker_id, req.broker_epoch)
    start = image.next_producer_id
    size = ctl.config.producer_id_block_size
    rec = ProducerIdsRecord(broker_id=req.broker_id, broker_epoch=req.broker_epoch,
                            next_producer_id=start + size)
    return [wrap(rec)], AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=size)
