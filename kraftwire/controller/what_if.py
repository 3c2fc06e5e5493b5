"""What would happen if brokers failed: the controller's own fencing run on a copy of an image.

A failed broker is fenced the way the active controller fences one whose session expired
(``cluster.fence_records``: it leaves every ISR and leadership through ``build_change``, with ELR and
min ISR as the controller applies them). The records go into a private standby ``QuorumController``
that nothing reads and nothing persists; the result compares each partition before and after.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kraftwire.controller.cluster import fence_records
from kraftwire.controller.controller import QuorumController
from kraftwire.controller.elr import topic_min_isr
from kraftwire.controller.result import ControllerConfig
from kraftwire.metadata.image import NO_LEADER, MetadataImage, Partition


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """One partition before and after the failures, with the min ISR the controller applies to it."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader_before: int
    leader_after: int
    isr_before: tuple[int, ...]
    isr_after: tuple[int, ...]
    elr_after: tuple[int, ...]
    min_isr: int

    @property
    def offline(self) -> bool:
        return self.leader_after == NO_LEADER

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr_after) < self.min_isr

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "replicas": list(self.replicas),
                "leaderBefore": self.leader_before, "leaderAfter": self.leader_after,
                "isrBefore": list(self.isr_before), "isrAfter": list(self.isr_after),
                "elrAfter": list(self.elr_after), "minIsr": self.min_isr}


@dataclass(slots=True)
class WhatIf:
    """The failed brokers and what becomes of the partitions (``already_*``: true before the failures)."""

    failed: list[int]
    offline: list[PartitionOutcome] = field(default_factory=list)
    under_min_isr: list[PartitionOutcome] = field(default_factory=list)
    leader_moves: list[PartitionOutcome] = field(default_factory=list)
    already_offline: list[PartitionOutcome] = field(default_factory=list)
    already_under_min_isr: list[PartitionOutcome] = field(default_factory=list)
    records: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"failed": self.failed, "recordsTheControllerWouldWrite": self.records,
                **{key: [p.to_json() for p in getattr(self, attr)] for key, attr in (
                    ("offline", "offline"), ("underMinIsr", "under_min_isr"), ("leaderMoves", "leader_moves"),
                    ("alreadyOffline", "already_offline"), ("alreadyUnderMinIsr", "already_under_min_isr"))}}


def brokers_matching(image: MetadataImage, ids: list[int], racks: list[str]) -> list[int]:
    """The registered brokers named by id or by rack; ValueError names any id or rack not found."""
    unknown = [b for b in ids if b not in image.brokers]
    if unknown:
        raise ValueError(f"no registered broker {', '.join(map(str, unknown))} (registered: "
                         f"{', '.join(map(str, sorted(image.brokers))) or 'none'})")
    chosen = set(ids)
    for rack in racks:
        hits = {b.id for b in image.brokers.values() if b.rack == rack}
        if not hits:
            known = sorted({b.rack for b in image.brokers.values() if b.rack})
            raise ValueError(f"no broker in rack {rack!r} (racks: {', '.join(known) or 'none set'})")
        chosen |= hits
    return sorted(chosen)


def what_if(image: MetadataImage, failed: list[int], config: ControllerConfig | None = None) -> WhatIf:
    """Fence ``failed`` one by one as the controller would and report the partitions' fate."""
    config = config or ControllerConfig()
    ctl = QuorumController(config, image)
    offset, records = 0, 0
    for broker in failed:
        b = ctl.image.brokers.get(broker)
        if b is None or b.fenced:
            continue   # already out of every ISR and leadership
        for rec in fence_records(ctl, broker):
            ctl.replay(offset, rec)
            offset += 1
            records += 1
    after = ctl.image
    out = WhatIf(failed, records=records)
    for tid, topic in image.topics.items():
        for pid, before in topic.partitions.items():
            now = _partition(after, tid, pid) or before
            rf = len(before.replicas)
            o = PartitionOutcome(topic.name, pid, before.replicas, before.leader, now.leader, before.isr, now.isr,
                                 now.elr, topic_min_isr(image, topic.name, rf, config.static_broker_configs,
                                                        config.node_id))
            if before.leader == NO_LEADER:
                out.already_offline.append(o)
            elif o.offline:
                out.offline.append(o)
            elif o.leader_after != o.leader_before:
                out.leader_moves.append(o)
            if len(before.isr) < o.min_isr:
                out.already_under_min_isr.append(o)
            elif o.under_min_isr:
                out.under_min_isr.append(o)
    return out


def _partition(image: MetadataImage, tid: uuid.UUID, pid: int) -> Partition | None:
    t = image.topics.get(tid)
    return None if t is None else t.partitions.get(pid)
