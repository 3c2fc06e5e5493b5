"""Leader election and ISR changes for one partition (Kafka's PartitionChangeBuilder, ELR off).

Eligible leader replicas (KIP-966) need metadata.version 4.0-IV0, above what kraftwire finalizes, so
ISR/ELR handling follows the pre-ELR rules: the ISR never becomes empty (the last member stays, the
partition becomes leaderless), and an unclean election resets the ISR to the new leader.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from enum import Enum

from kraftwire.metadata.features import RecordVersions
from kraftwire.metadata.image import NO_LEADER, NO_LEADER_CHANGE, Partition
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord

RECOVERED = 0
RECOVERING = 1


class Election(Enum):
    PREFERRED = "preferred"   # the first replica if it is eligible, else as ONLINE
    ONLINE = "online"         # keep a valid leader, else the first eligible ISR member
    UNCLEAN = "unclean"       # as ONLINE, then any acceptable replica (ISR reset to it)


def _elect(part: Partition, isr: Sequence[int], replicas: Sequence[int], ok: Callable[[int], bool],
           election: Election) -> tuple[int, bool]:
    def valid(r: int) -> bool:
        return r in isr and ok(r)

    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if part.leader != NO_LEADER and valid(part.leader):
        return part.leader, False
    for r in replicas:
        if valid(r):
            return r, False
    if election is Election.UNCLEAN:
        for r in replicas:
            if ok(r):
                return r, True
    return NO_LEADER, False


def build_change(
    topic_id: uuid.UUID,
    partition_id: int,
    part: Partition,
    acceptable: Callable[[int], bool],
    versions: RecordVersions,
    *,
    target_isr: Sequence[int] | None = None,
    election: Election = Election.ONLINE,
    target_recovery_state: int | None = None,
) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord moving ``part`` towards ``target_isr`` with a valid leader, or None.

    ``acceptable(broker)`` says whether a broker may lead (normally: registered, unfenced and not in
    controlled shutdown). The current leader is kept while it is valid (in the target ISR and
    acceptable) unless ``election`` is PREFERRED and the first replica is valid.
    """
    isr = list(part.isr if target_isr is None else target_isr)
    rec = PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)
    leader, unclean = _elect(part, isr, part.replicas, acceptable, election)
    if leader != part.leader:
        rec.leader = leader
        if unclean:
            rec.isr = [leader]
            if part.leader_recovery_state != RECOVERING:
                rec.leader_recovery_state = RECOVERING
    if rec.isr is None and isr and tuple(isr) != part.isr:
        rec.isr = isr
    if (versions.epoch_bump_on_isr_shrink and rec.leader == NO_LEADER_CHANGE and rec.isr is not None
            and not set(part.isr) <= set(rec.isr)):
        rec.leader = part.leader
    if (target_recovery_state is not None and rec.leader_recovery_state == -1
            and target_recovery_state != part.leader_recovery_state):
        rec.leader_recovery_state = target_recovery_state
    if rec.leader == NO_LEADER_CHANGE and rec.isr is None and rec.leader_recovery_state == -1:
        return None
    return rec
