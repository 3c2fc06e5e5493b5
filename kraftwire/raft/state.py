"""The roles of a replica: small records of what each role must remember and when it acts next."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kraftwire.protocol.records import Record
from kraftwire.raft.log import SnapshotId


@dataclass(slots=True)
class Unattached:
    """A voter that knows an epoch but neither a leader nor a vote in it."""

    epoch: int
    election_deadline: int
    name = "unattached"


@dataclass(slots=True)
class Voted:
    """A voter that granted its (persisted) vote in ``epoch`` to ``voted_id``."""

    epoch: int
    voted_id: int
    election_deadline: int
    name = "voted"


@dataclass(slots=True)
class Candidate:
    """Voted for itself in ``epoch``; collects votes, or backs off after losing."""

    epoch: int
    retries: int
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until: int | None = None
    name = "candidate"


@dataclass(slots=True)
class Prospective:
    """KIP-996 pre-vote: asks voters whether they would vote for us, still in ``epoch``.

    Nothing is persisted on entering it: ``leader_id`` / ``voted_id`` are the previous role's (the
    leader we followed, ourselves if we led ``epoch``, or the vote we granted) and it returns to that
    role when the pre-vote is lost. A pre-vote majority makes it a candidate in ``epoch + 1``.
    """

    epoch: int
    leader_id: int | None
    voted_id: int | None
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    retries: int = 0   # elections lost in a row (the candidate's backoff grows with them)
    name = "prospective"


@dataclass(slots=True)
class SnapshotDownload:
    """A snapshot the leader told us to load (KIP-630), received so far up to ``len(data)``."""

    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)


@dataclass(slots=True)
class Follower:
    """Knows the leader of ``epoch`` and fetches from it (a voter or an observer).

    While ``snapshot`` is set it sends FetchSnapshot instead of Fetch until the snapshot is whole.
    """

    epoch: int
    leader_id: int
    fetch_deadline: int
    snapshot: SnapshotDownload | None = None
    last_fetch_ok: int | None = None   # time of the last successful answer from the leader
    leader_hw: int = -1                # the highest high watermark the leader has told us
    name = "follower"


@dataclass(slots=True)
class Observer:
    """A non-voter (or a wiped voter re-joining) without a known leader: asks voters in turn."""

    epoch: int
    next_index: int = 0
    name = "observer"


@dataclass(slots=True)
class Resigned:
    """A former leader of ``epoch``: it may not vote in it; tells voters (EndQuorumEpoch) and waits."""

    epoch: int
    election_deadline: int
    preferred_successors: tuple[int, ...]
    unacked: set[int]
    shutting_down: bool = False
    name = "resigned"


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one replica's replication (DescribeQuorum's ReplicaState)."""

    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1
    directory_id: uuid.UUID | None = None   # the ReplicaDirectoryId of its last Fetch
    hw_sent: int = -1   # the high watermark of the last answer it was given (what a Fetch before v18 knows)

    def update(self, fetch_offset: int, now: int, leader_end: int) -> None:
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = now
        elif self.leader_end_at_last_fetch >= 0 and fetch_offset >= self.leader_end_at_last_fetch:
            self.last_caught_up_ms = self.last_fetch_ms
        self.end_offset = fetch_offset
        self.last_fetch_ms = now
        self.leader_end_at_last_fetch = leader_end


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch the leader holds (long poll) until data, an HW change or ``deadline``."""

    request_id: int
    source_id: int
    fetch_offset: int
    max_bytes: int
    deadline: int
    hw_at_park: int | None


@dataclass(slots=True)
class Leader:
    """Leader of ``epoch``: replication progress, HW, endorsements, check-quorum, pending appends."""

    epoch: int
    epoch_start_offset: int
    voters: dict[int, ReplicaProgress]
    observers: dict[int, ReplicaProgress]
    unendorsed: set[int]
    check_quorum_deadline: int
    bqe_next_ms: int = 0
    hw: int | None = None
    fetched_voters: set[int] = field(default_factory=set)
    pending: list[Record] = field(default_factory=list)
    linger_deadline: int | None = None
    parked: dict[int, ParkedFetch] = field(default_factory=dict)
    name = "leader"


State = Unattached | Voted | Prospective | Candidate | Follower | Observer | Resigned | Leader


class IllegalTransition(RuntimeError):
    """A role change Raft does not allow: a bug in the core, never a peer's doing."""


# Moves within one epoch: a vote, a leader learnt, an election started, won or given up, a resignation.
_SAME_EPOCH: dict[type, frozenset[type]] = {
    Unattached: frozenset({Voted, Follower, Prospective, Observer}),
    Voted: frozenset({Follower, Prospective, Observer}),   # Observer: a voter set without us (KIP-853)
    Prospective: frozenset({Unattached, Voted, Follower, Resigned}),   # back to the role it left
    Candidate: frozenset({Leader, Follower, Prospective}),
    Leader: frozenset({Resigned}),
    Resigned: frozenset({Prospective}),
    Follower: frozenset({Prospective, Observer}),
    Observer: frozenset({Follower, Unattached, Voted}),   # Voted: KIP-853, any replica may grant a vote
}
# Roles a replica may take in a higher epoch. Leader and Resigned only follow a won election in the
# same epoch; a Prospective keeps its epoch; only a leader never stands as a candidate directly.
_NEW_EPOCH = frozenset({Unattached, Voted, Follower, Observer, Candidate})


def check_transition(old: State, new: State) -> None:
    """Raise ``IllegalTransition`` unless Raft allows ``old`` → ``new``."""
    if new.epoch == old.epoch:
        if type(new) in _SAME_EPOCH[type(old)]:
            return
    elif new.epoch > old.epoch:
        if type(new) in _NEW_EPOCH and not (type(new) is Candidate and type(old) is Leader):
            return
    raise IllegalTransition(f"{old.name} in epoch {old.epoch} -> {new.name} in epoch {new.epoch}")
