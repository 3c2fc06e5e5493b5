"""Partition reassignment (KIP-455): AlterPartitionReassignments and ListPartitionReassignments.

A move to a target replica list starts with one PartitionChangeRecord: replicas = target + the current
replicas leaving (``removing``), ``adding`` = target replicas new to the partition. The leader brings the
adding replicas into the ISR through AlterPartition; the change that puts every target replica in the ISR
completes the move (partition_change.build_change): removing replicas leave, adding/removing are cleared,
and a target replica takes over if the leader was being removed. A move that needs no new replica (a
reordering, a shrink within the ISR) completes in its first record. Cancelling (null replicas) goes back
to the original replicas, keeping the ISR members that were there before; when only adding replicas are
in the ISR that is an unclean election, refused unless the topic allows one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.controller.cluster import _active_pred, default_dir
from kraftwire.controller.elr import change_options
from kraftwire.controller.partition_change import Election, build_change
from kraftwire.controller.replication import _unclean_enabled
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import RecordVersions
from kraftwire.metadata.image import MetadataImage, Partition, Topic
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_reassignments_response as apr
from kraftwire.protocol.messages import list_partition_reassignments_response as lpr
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

Records = list[MetadataRecord]
MAX_RECORDS_PER_USER_OP = 10_000   # Kafka's QuorumController bound on one operation's records
TOO_LARGE = "Unable to perform excessively large batch operation."


def reassigning(p: Partition) -> bool:
    """Kafka's isReassignmentInProgress: the partition has adding or removing replicas."""
    return bool(p.adding_replicas or p.removing_replicas)


def original_replicas(p: Partition) -> list[int]:
    """The replicas before the ongoing move: all replicas but the adding ones."""
    adding = set(p.adding_replicas)
    return [r for r in p.replicas if r not in adding]


def current_replication_factor(p: Partition) -> int:
    """Kafka's replication factor of a partition, counting a move's target rather than its union."""
    if not reassigning(p):
        return len(p.replicas)
    return len((set(p.replicas) | set(p.adding_replicas)) - set(p.removing_replicas))


def _validate_target(image: MetadataImage, replicas: list[int]) -> None:
    """Kafka's validateManualPartitionAssignment (no replication factor to match)."""
    if not replicas:
        raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes an empty replica list.")
    previous = None
    for r in sorted(replicas):
        if r not in image.brokers:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                               f"broker {r}, but no such broker is registered.")
        if r == previous:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes the broker {r} more than once.")
        previous = r


def _change(ctl: QuorumController, topic: Topic, pid: int, part: Partition,
            target: list[int]) -> PartitionChangeRecord | None:
    image = ctl.image
    current = list(part.replicas)
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    replicas = target + removing
    return build_change(
        topic.id, pid, part, _active_pred(image), RecordVersions(image.metadata_version),
        target_replicas=None if replicas == current else replicas,
        target_removing=removing or None, target_adding=adding or None,
        default_dir=lambda b: default_dir(image, b),
        **change_options(image, topic, ctl.config.static_broker_configs, ctl.config.node_id))


def _cancel(ctl: QuorumController, topic: Topic, pid: int, part: Partition) -> PartitionChangeRecord | None:
    image = ctl.image
    if not reassigning(part):
        raise CommandError(Errors.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")
    replicas = original_replicas(part)
    adding = set(part.adding_replicas)
    isr = [r for r in part.isr if r not in adding]
    unclean = _unclean_enabled(image, topic.name)
    if not isr:
        if not replicas:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               "Invalid replica assignment: addingReplicas contains all replicas.")
        if not unclean:
            raise CommandError(Errors.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for "
                               f"{topic.name}:{pid} because it would require an unclean leader election.")
        isr = [replicas[0]]
    return build_change(
        topic.id, pid, part, _active_pred(image), RecordVersions(image.metadata_version),
        target_isr=isr, target_replicas=replicas, target_adding=[], target_removing=[],
        election=Election.UNCLEAN if unclean else Election.ONLINE,
        default_dir=lambda b: default_dir(image, b),
        **change_options(image, topic, ctl.config.static_broker_configs, ctl.config.node_id))


def _alter_one(ctl: QuorumController, name: str, target: Any, allow_rf_change: bool,
               moved: dict[tuple[Any, int], Partition]) -> PartitionChangeRecord | None:
    image = ctl.image
    topic = image.topic_by_name(name)
    if topic is None:
        raise CommandError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}.")
    pid = target.partition_index
    part = moved.get((topic.id, pid)) or topic.partitions.get(pid)
    if part is None:
        raise CommandError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{pid}.")
    if target.replicas is None:
        rec = _cancel(ctl, topic, pid, part)
    else:
        replicas = list(target.replicas)
        _validate_target(image, replicas)
        if not allow_rf_change and current_replication_factor(part) != len(replicas):
            raise CommandError(Errors.INVALID_REPLICATION_FACTOR, f"The replication factor is changed from "
                               f"{current_replication_factor(part)} to {len(replicas)}")
        rec = _change(ctl, topic, pid, part, replicas)
    if rec is not None:
        # a partition named twice in one request moves from where the first entry left it
        moved[(topic.id, pid)] = part.merge(rec)
    return rec


def alter_reassignments(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """AlterPartitionReassignments (v0-v1): start, change or cancel moves; one result per partition."""
    allow = getattr(req, "allow_replication_factor_change", True) if version >= 1 else True
    change_version = RecordVersions(ctl.image.metadata_version).partition_change
    out: Records = []
    moved: dict[tuple[Any, int], Partition] = {}
    resp = apr.AlterPartitionReassignmentsResponse(error_code=0, error_message=None,
                                                   allow_replication_factor_change=allow)
    for t in req.topics:
        tr = apr.ReassignableTopicResponse(name=t.name)
        resp.responses.append(tr)
        for p in t.partitions:
            code, message = Errors.NONE, None
            try:
                rec = _alter_one(ctl, t.name, p, allow, moved)
            except CommandError as e:
                code, message = e.code, e.message
            else:
                if rec is not None:
                    out.append(MetadataRecord(5, change_version, rec))
                    if len(out) > MAX_RECORDS_PER_USER_OP:
                        raise CommandError(Errors.POLICY_VIOLATION, TOO_LARGE)
            tr.partitions.append(apr.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=int(code), error_message=message))
    return out, resp


def list_reassignments(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """ListPartitionReassignments as a controller command (the committed image; no records)."""
    return [], describe(ctl.committed_image, req)


def describe(image: MetadataImage, req: Any) -> Any:
    """ListPartitionReassignments from a committed image, as any Kafka controller answers it (a read event):
    the moving partitions among all (null topics) or the named ones; unknown topics and partitions, and
    partitions not moving, are left out."""
    resp = lpr.ListPartitionReassignmentsResponse(error_code=0, error_message=None)
    if req.topics is None:
        wanted = [(t, sorted(t.partitions)) for t in sorted(image.topics.values(), key=lambda t: t.name)]
    else:
        wanted = []
        for lt in req.topics:
            t = image.topic_by_name(lt.name)
            if t is not None:
                wanted.append((t, list(lt.partition_indexes)))
    for topic, pids in wanted:
        parts = []
        for pid in pids:
            p = topic.partitions.get(pid)
            if p is not None and reassigning(p):
                parts.append(lpr.OngoingPartitionReassignment(
                    partition_index=pid, replicas=list(p.replicas), adding_replicas=list(p.adding_replicas),
                    removing_replicas=list(p.removing_replicas)))
        if parts:
            resp.topics.append(lpr.OngoingTopicReassignment(name=topic.name, partitions=parts))
    return resp
