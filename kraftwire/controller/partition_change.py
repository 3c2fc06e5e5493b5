"""Leader election and ISR/ELR changes for one partition (Kafka 4.1's PartitionChangeBuilder).

With eligible leader replicas (KIP-966, ``eligible.leader.replicas.version`` 1) the ISR may become
empty: replicas that leave an ISR smaller than ``min.insync.replicas`` move to the ELR (unless they
shut down uncleanly), an ELR member may be elected when the ISR is empty, and the last leader is
kept in LastKnownElr when the partition becomes leaderless, so that it can lead again alone. With
ELR off the pre-4.0 rules hold: the ISR never becomes empty (the last member stays, the partition
becomes leaderless) and an unclean election resets the ISR to the new leader.

A partition reassignment (KIP-455) rides on the same builder: the target replica list and its adding /
removing replicas are part of the change, and any change whose ISR holds every target replica completes
the reassignment (the removing replicas leave the replica list and the ISR, a new leader is elected if
the old one is being removed).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from enum import Enum

from kraftwire.metadata.features import RecordVersions
from kraftwire.metadata.image import NO_LEADER, NO_LEADER_CHANGE, UNASSIGNED_DIR, Partition
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord

RECOVERED = 0
RECOVERING = 1


class Election(Enum):
    PREFERRED = "preferred"   # the first replica if it is eligible, else as ONLINE
    ONLINE = "online"         # keep a valid leader, else the first eligible ISR (or ELR) member
    UNCLEAN = "unclean"       # as ONLINE, then any acceptable replica (ISR reset to it)


class _Target:
    """The partition state a change aims at (Kafka's builder fields)."""

    __slots__ = ("isr", "elr", "last_known_elr", "replicas", "adding", "removing")

    def __init__(self, part: Partition, isr: Sequence[int], replicas: Sequence[int] | None,
                 adding: Sequence[int] | None, removing: Sequence[int] | None) -> None:
        self.isr = list(isr)
        self.elr = list(part.elr)
        self.last_known_elr = list(part.last_known_elr)
        self.replicas = list(part.replicas if replicas is None else replicas)
        self.adding = list(part.adding_replicas if adding is None else adding)
        self.removing = list(part.removing_replicas if removing is None else removing)


def _complete_reassignment(t: _Target) -> None:
    """Kafka's completion test: once the ISR (without the removing replicas) holds every replica that
    stays, the removing replicas leave both lists and adding/removing are cleared."""
    if not t.adding and not t.removing:
        return
    isr, replicas = t.isr, t.replicas
    if t.removing:
        gone = set(t.removing)
        isr = [r for r in t.isr if r not in gone]
        replicas = [r for r in t.replicas if r not in gone]
        if not isr or not replicas:
            return
    if not set(replicas) <= set(isr):
        return
    t.isr, t.replicas, t.adding, t.removing = isr, replicas, [], []


def _populate_elr(part: Partition, t: _Target, min_isr: int, unclean_shutdown: Sequence[int]) -> None:
    """Replicas leaving an ISR below min ISR join the ELR; a full-enough ISR clears both ELR lists."""
    if len(t.isr) >= min_isr:
        t.elr, t.last_known_elr = [], []
        return
    in_isr = set(t.isr)
    candidates = set(t.elr) | set(part.isr)
    t.elr = sorted(r for r in candidates if r not in in_isr and r not in unclean_shutdown)
    candidates |= set(t.last_known_elr)
    t.last_known_elr = sorted(r for r in candidates if r not in in_isr and r not in t.elr)


def _elect(part: Partition, t: _Target, ok: Callable[[int], bool], election: Election,
           elr_on: bool) -> tuple[int, bool]:
    def valid(r: int) -> bool:
        return (r in t.isr or (not t.isr and r in t.elr)) and ok(r)

    def last_known_leader() -> bool:
        return (elr_on and not t.elr and not t.isr and len(part.last_known_elr) == 1
                and ok(part.last_known_elr[0]))

    replicas = t.replicas
    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if part.leader != NO_LEADER and valid(part.leader):
        return part.leader, False
    for r in replicas:
        if valid(r):
            return r, False
    if last_known_leader():
        return part.last_known_elr[0], True
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
    elr: bool = False,
    min_isr: int = 1,
    unclean_shutdown: Sequence[int] = (),
    target_replicas: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    default_dir: Callable[[int], uuid.UUID] | None = None,
    target_dirs: dict[int, uuid.UUID] | None = None,
    dir_online: Callable[[int, uuid.UUID], bool] | None = None,
) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord moving ``part`` towards ``target_isr`` with a valid leader, or None.

    ``acceptable(broker)`` says whether a broker may lead (normally: registered, unfenced and not in
    controlled shutdown). The current leader is kept while it is valid (in the target ISR and
    acceptable) unless ``election`` is PREFERRED and the first replica is valid. ``elr`` turns on
    KIP-966 with the topic's effective ``min_isr``; ``unclean_shutdown`` replicas never join the ELR.
    ``target_replicas`` / ``target_adding`` / ``target_removing`` (None: unchanged) move the partition's
    assignment; ``default_dir(broker)`` names the directory of a replica new to the partition (metadata
    versions with directory assignment); ``target_dirs`` moves replicas to other directories (KIP-858);
    ``dir_online(broker, directory)`` (``directories.online_check``) keeps replicas in offline
    directories from being elected, as Kafka's LeaderAcceptor does.
    """
    if dir_online is not None and part.directories:
        dirs = dict(zip(part.replicas, part.directories, strict=False))
        base = acceptable

        def acceptable(r: int) -> bool:
            return base(r) and dir_online(r, dirs.get(r, UNASSIGNED_DIR))

    t = _Target(part, part.isr if target_isr is None else target_isr, target_replicas, target_adding,
                target_removing)
    rec = PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)
    _complete_reassignment(t)
    if elr:
        _populate_elr(part, t, min_isr, unclean_shutdown)
    leader, unclean = _elect(part, t, acceptable, election, elr)
    if leader != part.leader:
        if leader in t.elr:
            t.isr = [leader]
            t.elr = [r for r in t.elr if r != leader]
        rec.leader = leader
        if unclean:
            rec.isr = [leader]
            if part.leader_recovery_state != RECOVERING:
                rec.leader_recovery_state = RECOVERING
    if rec.leader == NO_LEADER_CHANGE and not set(part.replicas) <= set(t.replicas):
        rec.leader = part.leader   # replicas leave: a new leader epoch fences them
    _record_elr(part, t, rec, elr)
    if rec.isr is None and (t.isr or elr) and tuple(t.isr) != part.isr:
        rec.isr = t.isr
    if (versions.epoch_bump_on_isr_shrink and rec.leader == NO_LEADER_CHANGE and rec.isr is not None
            and not set(part.isr) <= set(rec.isr)):
        rec.leader = part.leader
    if elr:
        _record_last_known_leader(part, rec)
    _record_assignment(part, t, rec, versions, default_dir, target_dirs)
    if (target_recovery_state is not None and rec.leader_recovery_state == -1
            and target_recovery_state != part.leader_recovery_state):
        rec.leader_recovery_state = target_recovery_state
    if (rec.leader == NO_LEADER_CHANGE and rec.isr is None and rec.leader_recovery_state == -1
            and rec.eligible_leader_replicas is None and rec.last_known_elr is None and rec.replicas is None
            and rec.adding_replicas is None and rec.removing_replicas is None and rec.directories is None):
        return None
    return rec


def _record_assignment(part: Partition, t: _Target, rec: PartitionChangeRecord, versions: RecordVersions,
                       default_dir: Callable[[int], uuid.UUID] | None,
                       target_dirs: dict[int, uuid.UUID] | None) -> None:
    """Replicas (with their directories), adding and removing replicas where the target differs."""
    moved = t.replicas and tuple(t.replicas) != part.replicas
    if moved:
        rec.replicas = t.replicas
    if versions.directories and (moved or target_dirs):
        known = dict(zip(part.replicas, part.directories, strict=False))   # none before 3.7
        known.update(target_dirs or {})
        dirs = [known[r] if r in known else default_dir(r) if default_dir else UNASSIGNED_DIR for r in t.replicas]
        if moved or tuple(dirs) != part.directories:
            rec.directories = dirs
    if tuple(t.removing) != part.removing_replicas:
        rec.removing_replicas = t.removing
    if tuple(t.adding) != part.adding_replicas:
        rec.adding_replicas = t.adding


def _record_elr(part: Partition, t: _Target, rec: PartitionChangeRecord, elr: bool) -> None:
    """ELR fields of the record; an unclean election or ELR off empties both lists."""
    if rec.isr is not None or not elr:
        t.elr, t.last_known_elr = [], []
    if tuple(t.elr) != part.elr:
        rec.eligible_leader_replicas = t.elr
    # LastKnownElr holds the last known leader (Kafka's balanced recovery): it is set or cleared
    # below, and kept while the partition stays leaderless.


def _record_last_known_leader(part: Partition, rec: PartitionChangeRecord) -> None:
    """Remember the leader when the ISR first empties; forget it once the partition has a leader."""
    if rec.isr is not None and not rec.isr and (len(part.last_known_elr) != 1
                                                or part.last_known_elr[0] != part.leader):
        rec.last_known_elr = [part.leader]
    elif ((rec.leader >= 0 or (part.leader != NO_LEADER and rec.leader != NO_LEADER))
          and part.last_known_elr):
        rec.last_known_elr = []
