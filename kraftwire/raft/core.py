"""``RaftCore``: the sans-I/O KIP-595 state machine (Kafka 3.9 behaviour, see docs/raft.md).

The shell feeds events in (``handle_request``, ``handle_response``, ``handle_request_failed``,
``tick``) with the current time in ms and performs the returned outputs (``SendRequest`` /
``SendResponse``). It calls ``tick`` no later than ``next_deadline()``. The core owns the ids of the
requests it sends; the shell owns the ids of inbound requests. Committed data batches, loaded snapshots
and leader changes are reported synchronously to the optional ``listener`` during these calls.

Snapshots (KIP-630): the state machine stores snapshots of committed state through
``create_snapshot`` and cleans the log below one with ``delete_before``. A leader answers a Fetch it
cannot serve from its log (below the log start, or with an epoch older than the log holds) with the
latest SnapshotId; the follower downloads it with FetchSnapshot, installs it and fetches on from its
end offset. A listener whose position is below the log start is handed the snapshot first. The leader
decides a FetchSnapshot's answer (the snapshot held, the position inside it, how many bytes) and leaves
reading the chunk to the shell (``ReadSnapshotChunk``: a file read off the event loop).

Durability: everything the core relies on (votes, appended batches) is made durable *before* an
output that depends on it is returned: the quorum-state store before a vote is granted, the log
(``flush``) before a Fetch announces its offset and before the leader counts its own end offset.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kraftwire.protocol.control import leader_change_record
from kraftwire.protocol.errors import DecodeError, Errors
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import messages as m
from kraftwire.raft import story
from kraftwire.raft.config import RaftConfig
from kraftwire.raft.faults import NO_FAULTS, RaftFaults
from kraftwire.raft.log import (
    ElectionState,
    LogTruncationError,
    OffsetAndEpoch,
    QuorumStateStore,
    ReplicatedLog,
    SnapshotId,
)
from kraftwire.raft.reconfig import VoterChanges, VoterHistory
from kraftwire.raft.state import (
    Candidate,
    Follower,
    Leader,
    Observer,
    ParkedFetch,
    Prospective,
    ReplicaProgress,
    Resigned,
    SnapshotDownload,
    State,
    Unattached,
    Voted,
    check_transition,
)
from kraftwire.raft.voter_set import VoterSet

NONE = int(Errors.NONE)
_LEADERLESS = (Unattached, Voted, Prospective, Candidate, Observer)


class NotLeaderError(Exception):
    """``append`` on a replica that is not the leader."""


class RaftFatalError(Exception):
    """The replica cannot continue safely (e.g. a leader of another cluster)."""


class RaftListener(Protocol):
    def handle_commit(self, batches: list[RecordBatch]) -> None:
        """Committed data batches (never control batches), in offset order, each exactly once."""

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """The known leader or epoch changed (``leader_id`` None while unknown)."""


class SnapshotListener(Protocol):
    """Optional: a listener with this method is handed snapshots (others never see one)."""

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        """Replace the state with the snapshot covering offsets below ``end_offset``.

        ``batches`` is the whole snapshot as stored (header and footer control batches included,
        every batch stamped with the snapshot's epoch). Commits continue from ``end_offset``.
        """


class Kind(Enum):
    """What an outbound request is for (its answer is handled by kind)."""

    PREVOTE = "prevote"
    VOTE = "vote"
    BEGIN_EPOCH = "bqe"
    END_EPOCH = "eqe"
    FETCH = "fetch"
    PROBE = "probe"          # a re-joining voter's Fetch to learn a voter's epoch
    SNAPSHOT = "snapshot"
    VERSIONS = "versions"    # KIP-853: ApiVersions to a voter being added (its kraft.version range)


@dataclass(slots=True)
class _Inflight:
    dest: int
    kind: Kind
    epoch: int
    fetch_offset: int = -1   # fetch: the fetch offset; snapshot: the position asked for
    last_epoch: int = -1     # fetch: the epoch of the log's last batch when it was sent


@dataclass(slots=True)
class _Rejoin:
    """A voter started without its history (fresh, or wiped): it neither votes nor stands until this completes."""

    unprobed: set[int]
    election_deadline: int            # its election timer runs from its own start (Kafka's), used on a fresh quorum
    floor_epoch: int | None = None
    target_hw: int | None = None


class RaftCore:
    """One replica of the metadata quorum. ``node_id`` not in ``voters`` (or None) is an observer."""

    def __init__(self, node_id: int | None, voters: Iterable[int], config: RaftConfig, log: ReplicatedLog,
                 store: QuorumStateStore, rng: random.Random, cluster_id: str | None, now_ms: int,
                 listener: RaftListener | None = None, *, rejoining: bool = False,
                 directory_id: uuid.UUID | None = None, vote_floor: tuple[int, int] | None = None,
                 faults: RaftFaults = NO_FAULTS,
                 epoch_start_records: Callable[[], Sequence[Record]] | None = None,
                 voter_history: VoterHistory | None = None, listener_name: str | None = None) -> None:
        self.node_id = -1 if node_id is None else node_id
        # KIP-853: with a history the voters are the latest VotersRecord of the log (``voters`` is then only
        # where a replica whose log names no set yet looks for the leader); without one they are fixed.
        self.history = voter_history
        self.listener_name = listener_name     # controller listener a new voter must have an endpoint on
        self._static_voters = tuple(sorted(set(voters)))
        self._changes = VoterChanges(self)
        # KIP-853: records a new leader writes after LeaderChange in the same control batch (the shell's
        # KRaftVersion/Voters copy of a bootstrap voter set the log does not hold yet, as Kafka's leader does).
        self._epoch_start_records = epoch_start_records
        self.directory_id = directory_id  # meta.properties directory.id (KIP-853 ReplicaDirectoryId)
        # (epoch, end offset) an undamaged log of ours reached at most (see ``vote_floor``).
        self._vote_floor = vote_floor
        self.voters: tuple[int, ...] = self._voter_ids()
        self.is_voter = self.node_id in self.voters
        self.config = config
        self.log = log
        self.store = store
        self.rng = rng
        self.cluster_id = cluster_id
        self.listener = listener
        self.faults = faults
        self.majority = len(self.voters) // 2 + 1
        self.hw: int | None = None            # this replica's high watermark (exclusive); None = unknown
        self._applied = 0                      # commits reported up to here
        self._next_id = 1
        self._inflight: dict[int, _Inflight] = {}
        self._busy: dict[int, int] = {}       # dest -> request id in flight
        self._backoff: dict[int, int] = {}    # dest -> no request before this time
        self._out: list[m.Output] = []
        self._persist_inflight: int | None = None   # end offset of the PersistLog the shell is running
        self._truncated = False   # a truncation not yet made durable by a PersistLog (with defer_flush)
        self._persisted: ElectionState | None = store.read()
        self._reported_leader: tuple[int | None, int] | None = None
        self._rejoin: _Rejoin | None = None
        if rejoining and self.is_voter and len(self.voters) > 1:
            self._rejoin = _Rejoin(unprobed=set(self.voters) - {self.node_id},
                                   election_deadline=now_ms + self._election_timeout())
        self.state: State = self._initial_state(now_ms)
        self._persist()  # the shell's first ``tick`` produces the initial sends

    # ------------------------------------------------------------------------------ properties
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        st = self.state
        if isinstance(st, Leader | Resigned):
            return self.node_id
        if isinstance(st, Follower):
            return st.leader_id
        if isinstance(st, Prospective) and st.leader_id != self.node_id:
            return st.leader_id
        return None

    @property
    def known_leader_id(self) -> int | None:
        """The leader this replica knows to lead now: itself as Leader, or the leader that has answered its
        Fetch in the current epoch. Unlike ``leader_id`` it is never a leader remembered from quorum-state
        or one that resigned (a restarted former leader comes back Resigned and is no leader): what a
        node tells clients as the active controller."""
        st = self.state
        if isinstance(st, Leader):
            return self.node_id
        if isinstance(st, Follower) and st.last_fetch_ok is not None:
            return st.leader_id
        return None

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, Leader)

    @property
    def epoch_start_committed(self) -> bool:
        """This replica leads and the first record of its epoch (the LeaderChange) is committed, so is
        everything earlier: a role that runs only on the leader may start (``core/leadership.py``)."""
        st = self.state
        return isinstance(st, Leader) and self.hw is not None and self.hw > st.epoch_start_offset

    @property
    def state_name(self) -> str:
        return self.state.name

    @property
    def rejoining(self) -> bool:
        return self._rejoin is not None

    @property
    def can_elect(self) -> bool:
        """May vote and stand (a voter that is not re-joining after a wipe, or an interim member)."""
        return (self.is_voter or self._interim_member) and self._rejoin is None

    @property
    def _interim_member(self) -> bool:
        """KIP-853 / Raft dissertation 4.2.2: a replica the *uncommitted* latest voter set leaves out but the set
        before it names still stands for election (votes counted in the latest set): until that set commits it
        may hold the only log that has it, e.g. a leader that removed itself and crashed before the commit."""
        if self.history is None or self.is_voter:
            return False
        entries = self.history.entries
        return (len(entries) >= 2 and entries[-1][0] >= (self.hw or 0)
                and self.node_id in entries[-2][1].ids)

    @property
    def may_vote(self) -> bool:
        """May grant votes: a voter, or with a dynamic quorum any replica not re-joining (KIP-853: the
        candidate's voter set may be newer than ours, so a replica it names answers whatever ours says)."""
        return self.can_elect or (self.dynamic and self._rejoin is None)

    @property
    def can_stand(self) -> bool:
        """May stand for election: may vote, and its log is not below its vote floor."""
        return self.can_elect and self._vote_floor is None

    @property
    def vote_floor(self) -> tuple[int, int] | None:
        """Set when the shell dropped batches whose epoch it could not trust (a damaged header).

        Their true epoch was at most the floor's epoch, so until our log reaches the floor we vote
        only for candidates at least as up to date as the floor (as strict as Raft with our lost
        tail) and never stand (our log lacks entries we may have acknowledged).
        """
        return self._vote_floor

    def _up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        ours = (self.log.last_epoch(), self.log.end_offset)
        if self._vote_floor is not None:
            ours = max(ours, self._vote_floor)
        return (last_epoch, last_offset) >= ours

    def voted_for(self) -> int | None:
        st = self.state
        if isinstance(st, Voted):
            return st.voted_id
        if isinstance(st, Candidate | Leader | Resigned):
            return self.node_id
        if isinstance(st, Prospective):
            return st.voted_id
        return self._persisted.voted_id if self._persisted and self._persisted.epoch == st.epoch else None

    # ------------------------------------------------------------------------------ events in
    def tick(self, now: int) -> list[m.Output]:
        self._poll(now)
        return self._drain()

    def handle_request(self, now: int, request_id: int, source_id: int, msg: m.Request) -> list[m.Output]:
        if isinstance(msg, m.VoteRequest):
            self._on_vote_request(now, request_id, msg)
        elif isinstance(msg, m.FetchRequest):
            self._on_fetch_request(now, request_id, source_id, msg)
        elif isinstance(msg, m.BeginQuorumEpochRequest):
            self._on_begin_epoch_request(now, request_id, msg)
        elif isinstance(msg, m.EndQuorumEpochRequest):
            self._on_end_epoch_request(now, request_id, msg)
        elif isinstance(msg, m.FetchSnapshotRequest):
            self._on_fetch_snapshot_request(now, request_id, msg)
        elif isinstance(msg, m.DescribeQuorumRequest):
            self._respond(request_id, self.describe_quorum(now))
        elif isinstance(msg, m.AddRaftVoterRequest):
            self._changes.handle_add(now, request_id, msg)
        elif isinstance(msg, m.RemoveRaftVoterRequest):
            self._changes.handle_remove(now, request_id, msg)
        elif isinstance(msg, m.UpdateRaftVoterRequest):
            self._changes.handle_update(now, request_id, msg)
        else:
            raise TypeError(f"not a raft request: {msg!r}")
        self._poll(now)
        return self._drain()

    def handle_response(self, now: int, request_id: int, msg: m.Response) -> list[m.Output]:
        req = self._inflight.pop(request_id, None)
        if req is not None:
            if self._busy.get(req.dest) == request_id:
                del self._busy[req.dest]
            if isinstance(msg, m.VoteResponse):
                self._on_vote_response(now, req, msg)
            elif isinstance(msg, m.FetchResponse):
                self._on_fetch_response(now, req, msg)
            elif isinstance(msg, m.FetchSnapshotResponse):
                self._on_fetch_snapshot_response(now, req, msg)
            elif isinstance(msg, m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse):
                self._on_epoch_response(now, req, msg)
            elif isinstance(msg, m.KraftVersionsResponse):
                self._changes.on_versions(now, request_id, msg)
        self._poll(now)
        return self._drain()

    def handle_request_failed(self, now: int, request_id: int, refused: bool = False) -> list[m.Output]:
        """Request ``request_id`` got no answer; ``refused``: its destination refused the connection
        (nothing listens at its address), not a timeout or a connection closed mid-way."""
        req = self._inflight.pop(request_id, None)
        if req is not None:
            if self._busy.get(req.dest) == request_id:
                del self._busy[req.dest]
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            st = self.state
            if req.kind is Kind.FETCH and isinstance(st, Observer) and st.epoch == req.epoch:
                st.next_index += 1
            if refused and self.config.refused_standoff_ms is not None:
                if req.kind in (Kind.FETCH, Kind.SNAPSHOT):
                    self._leader_refused(now, req)
                elif req.kind in (Kind.VOTE, Kind.PREVOTE):
                    self._voter_refused(now, req)
            if req.kind is Kind.VERSIONS:
                self._changes.on_versions(now, request_id, None)
        self._poll(now)
        return self._drain()

    def append(self, now: int, records: Sequence[Record]) -> list[int]:
        """Queue ``records`` for the leader's next batch; returns their offsets (committed once HW > offset)."""
        st = self.state
        if not isinstance(st, Leader):
            raise NotLeaderError(f"node {self.node_id} is {st.name} in epoch {st.epoch}")
        if not records:
            return []
        base = self.log.end_offset + len(st.pending)
        if not st.pending:
            # Adaptive batching: an idle pipeline (all we wrote is committed) writes at once; while a
            # batch is replicating, appends gather until it commits, capped by append.linger.ms.
            idle = st.hw is not None and st.hw >= self.log.end_offset
            st.linger_deadline = now if idle else now + self.config.append_linger_ms
        st.pending.extend(records)
        return list(range(base, base + len(records)))

    def resign(self, now: int) -> list[m.Output]:
        """Graceful shutdown: a leader resigns (EndQuorumEpoch to voters) and stays resigned."""
        st = self.state
        if isinstance(st, Leader):
            self._to_resigned(now, shutting_down=True)
        elif isinstance(st, Resigned):
            st.shutting_down = True
        self._poll(now)
        return self._drain()

    def snapshot_control(self, end_offset: int) -> tuple[Record, ...]:
        """The KRaftVersion/Voters records a snapshot ending at ``end_offset`` must carry (KIP-853), or ()."""
        return () if self.history is None else self.history.control_records_at(end_offset)

    def create_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        """Store the state machine's snapshot covering offsets below ``snapshot_id.end_offset``.

        Only committed state may be snapshotted: the end offset must not pass the high watermark
        nor what the listener has been given; the log checks the epoch and the framing.
        """
        end = snapshot_id.end_offset
        if self.hw is None or end > self.hw or end > self._applied:
            raise ValueError(f"snapshot {snapshot_id} is beyond the committed offset "
                             f"(high watermark {self.hw}, delivered {self._applied})")
        self.log.create_snapshot(snapshot_id, batches)
        story.snapshot_written(self, snapshot_id)

    def delete_before(self, snapshot_id: SnapshotId) -> None:
        """Log cleaning: drop the log prefix below a held snapshot and every older snapshot."""
        self.log.delete_before(snapshot_id)
        if self.history is not None:
            self.history.compact(self.log.start_offset)

    def next_deadline(self) -> int | None:
        """The latest time at which ``tick`` must next be called (None: only on events)."""
        st = self.state
        times: list[int] = []
        if isinstance(st, Unattached | Voted):
            if self.can_stand or not self.can_elect:
                times.append(st.election_deadline)
        elif isinstance(st, Candidate):
            times.append(st.backoff_until if st.backoff_until is not None else st.election_deadline)
        elif isinstance(st, Prospective):
            times.append(st.election_deadline)
        elif isinstance(st, Follower):
            times.append(st.fetch_deadline)
        elif isinstance(st, Resigned):
            if not st.shutting_down:
                times.append(st.election_deadline)
        elif isinstance(st, Leader):
            if self._checks_quorum:
                times.append(st.check_quorum_deadline)
            if st.linger_deadline is not None:
                times.append(st.linger_deadline)
            if st.unendorsed:
                times.append(st.bqe_next_ms)
            times.extend(p.deadline for p in st.parked.values())
            change = self._changes.next_deadline()
            if change is not None:
                times.append(change)
        times.extend(t for d, t in self._backoff.items() if d not in self._busy)
        return min(times) if times else None

    # ------------------------------------------------------------------------------ plumbing
    def _drain(self) -> list[m.Output]:
        if self.config.defer_flush:
            self._request_persist()
        else:
            self._flush()
        out, self._out = self._out, []
        return out

    def _request_persist(self) -> None:
        """One PersistLog in flight at a time, covering the log end (and a truncation) when it was asked for."""
        end = self.log.end_offset
        if self._persist_inflight is None and (self.log.flushed_offset < end or self._truncated):
            self._persist_inflight = end
            self._truncated = False
            self._out.append(m.PersistLog(end))

    def handle_persisted(self, now: int, end_offset: int) -> list[m.Output]:
        """The shell finished the ``PersistLog(end_offset)`` fsync: a leader's own copy counts now; a
        follower may raise its high watermark over it and announce it in its next Fetch."""
        self._persist_inflight = None
        self.log.mark_flushed(end_offset)
        st = self.state
        if isinstance(st, Leader):
            self._leader_progress(now, st)
        elif isinstance(st, Follower) and st.leader_hw >= 0:
            self._raise_hw(min(self.log.flushed_offset, st.leader_hw))
        self._poll(now)   # a fetcher's next Fetch waited for this
        return self._drain()

    def _durable(self) -> bool:
        """True when the whole log is fsynced, a truncation included, and no PersistLog is running (with
        ``defer_flush``, a fetcher sends nothing that claims its log end, and changes its log, only then; a
        candidate sends its Vote requests, which claim its log end, only then)."""
        return (self._persist_inflight is None and not self._truncated
                and self.log.flushed_offset >= self.log.end_offset)

    def _flush(self) -> None:
        if self.log.flushed_offset < self.log.end_offset:
            self.log.flush()

    def _respond(self, request_id: int, msg: m.Response) -> None:
        self._out.append(m.SendResponse(request_id, msg))

    # -- what the voter-change handlers may do (``raft/reconfig.ChangeHost``; append_voters,
    # send_versions_probe and leader_check below are also part of it)
    def respond(self, request_id: int, msg: m.Response) -> None:
        """Answer request ``request_id`` (an output of the current event)."""
        self._respond(request_id, msg)

    def _can_send(self, dest: int, now: int) -> bool:
        return dest not in self._busy and self._backoff.get(dest, 0) <= now

    def _send(self, now: int, dest: int, kind: Kind, msg: m.Request, fetch_offset: int = -1,
              last_epoch: int = -1) -> None:
        rid = self._next_id
        self._next_id += 1
        self._inflight[rid] = _Inflight(dest, kind, self.state.epoch, fetch_offset, last_epoch)
        self._busy[dest] = rid
        self._backoff.pop(dest, None)
        self._out.append(m.SendRequest(rid, dest, msg))

    def _election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randint(0, t - 1) if t > 0 else 0

    def _fetch_timeout(self) -> int:
        f = self.config.fetch_timeout_ms
        spread = int(f * self.config.fetch_timeout_jitter)
        return f - self.rng.randint(0, spread) if spread > 0 else f

    def _persist(self) -> None:
        st = self.state
        leader = st.leader_id if isinstance(st, Prospective) else self.leader_id
        voted = self.voted_for()
        new = ElectionState(epoch=st.epoch, leader_id=leader, voted_id=voted, voters=frozenset(self.voters))
        if new != self._persisted:
            if self.config.defer_state:
                self._out.append(m.PersistState(new))   # the shell holds what follows until it is durable
            else:
                self.store.write(new)
            self._persisted = new
        key = (self.leader_id, st.epoch)
        if key != self._reported_leader:
            self._reported_leader = key
            if self.listener is not None:
                self.listener.handle_leader_change(self.leader_id, st.epoch)

    def _reset_connections(self) -> None:
        self._busy.clear()
        self._backoff.clear()

    # ------------------------------------------------------------------------------ KIP-853 voter set
    def _voter_ids(self) -> tuple[int, ...]:
        latest = None if self.history is None else self.history.latest
        return self._static_voters if latest is None else tuple(sorted(latest[1].ids))

    @property
    def dynamic(self) -> bool:
        """The voters come from the log (kraft.version 1), not from the configuration."""
        return self.history is not None and self.history.latest is not None

    @property
    def _checks_quorum(self) -> bool:
        """Only a sole voter leading itself is exempt (a leader outside the set in force is not)."""
        return len(self.voters) > 1 or not self.is_voter

    def _votes(self, ids: set[int]) -> int:
        """How many of ``ids`` are voters of the set in force (grants of a replaced set do not count)."""
        return len(ids) if not self.dynamic else sum(1 for v in ids if v in self.voters)

    def _apply_voters(self, now: int) -> None:
        """The voter set in force changed (appended, replicated, truncated away or loaded from a snapshot)."""
        ids = self._voter_ids()
        if ids == self.voters:
            return
        old = set(self.voters)
        self.voters = ids
        self.is_voter = self.node_id in ids
        self.majority = len(ids) // 2 + 1
        story.voters_changed(self, sorted(old), list(ids))
        st = self.state
        if isinstance(st, Leader):
            # check-quorum counts fetches of the new set from now on (a sole voter's deadline is stale)
            st.check_quorum_deadline = now + int(self.config.fetch_timeout_ms * self.config.check_quorum_factor)
            st.fetched_voters.clear()
            for v in set(ids) - old:
                st.voters[v] = st.observers.pop(v) if v in st.observers else ReplicaProgress()
                if v != self.node_id and st.voters[v].end_offset is None:
                    st.unendorsed.add(v)
            for v in old - set(ids):
                st.observers[v] = st.voters.pop(v)
                st.unendorsed.discard(v)
                st.fetched_voters.discard(v)
            self._leader_progress(now, st)
        elif not self.can_elect:
            # A replica the new set leaves out votes no more and stands no more (Kafka's isVoter checks).
            if isinstance(st, Unattached | Voted):
                self._set_state(Observer(st.epoch))
            elif isinstance(st, Prospective):
                self._prevote_lost(now, st)
            elif isinstance(st, Candidate):
                self._to_unattached(now, st.epoch + 1)
        elif isinstance(st, Observer) and self.can_elect:
            self._set_state(Unattached(st.epoch, now + self._election_timeout()))

    def append_voters(self, now: int, voters: VoterSet) -> int:
        """Leader: write ``voters`` as a VotersRecord now (after any gathered data); it is in force at once."""
        st = self.state
        assert isinstance(st, Leader) and self.history is not None
        if st.pending:
            records, st.pending, st.linger_deadline = st.pending, [], None
            self.log.append_as_leader(records, st.epoch, timestamp_ms=now)
        offset = self.log.end_offset
        rec = voters.to_record()
        self.log.append_as_leader([rec], st.epoch, control=True, timestamp_ms=now)
        self.history.on_append([RecordBatch(offset, st.epoch, (rec,), control=True)])
        self._apply_voters(now)
        if not self.config.defer_flush:
            self._flush()
        self._leader_progress(now, st)
        return offset

    def send_versions_probe(self, now: int, dest: int, msg: m.KraftVersionsRequest) -> int:
        rid = self._next_id
        self._send(now, dest, Kind.VERSIONS, msg)
        return rid

    # ------------------------------------------------------------------------------ transitions
    def _initial_state(self, now: int) -> State:
        saved = self._persisted
        log_epoch = self.log.last_epoch()
        if saved is None or saved.epoch < log_epoch:
            return self._leaderless(now, max(log_epoch, saved.epoch if saved else 0))
        if saved.leader_id == self.node_id and (self.is_voter or self._interim_member):
            # Never lead the old epoch again: come back resigned in it (Kafka 3.9).
            return Resigned(saved.epoch, now + self._election_timeout(), (), set())
        if saved.voted_id == self.node_id and saved.leader_id is None and (self.is_voter or self._interim_member) and self._rejoin is None:
            return Candidate(saved.epoch, 1, now + self._election_timeout(), granted={self.node_id})
        if saved.leader_id is not None and saved.leader_id >= 0:
            return Follower(saved.epoch, saved.leader_id, now + self._fetch_timeout())
        if saved.voted_id is not None and (self.is_voter or self._interim_member):
            return Voted(saved.epoch, saved.voted_id, now + self._election_timeout())
        return self._leaderless(now, saved.epoch)

    def _leaderless(self, now: int, epoch: int) -> Unattached | Observer:
        if self.can_elect:
            return Unattached(epoch, now + self._election_timeout())
        return Observer(epoch)

    def _set_state(self, st: State) -> None:
        old = self.state
        if isinstance(old, Leader) and not isinstance(st, Leader):
            for parked in old.parked.values():
                self._respond(parked.request_id, self._fetch_error(Errors.NOT_LEADER_OR_FOLLOWER, st))
            old.parked.clear()
            self._changes.leadership_lost()
        check_transition(old, st)
        self.state = st
        story.transition(self, old, st)
        self._reset_connections()
        self._persist()

    def _to_unattached(self, now: int, epoch: int) -> None:
        self._set_state(self._leaderless(now, epoch))

    def _to_follower(self, now: int, epoch: int, leader_id: int) -> None:
        self._set_state(Follower(epoch, leader_id, now + self._fetch_timeout()))

    def _to_prospective(self, now: int) -> None:
        """An election timer fired: ask for pre-votes (KIP-996) in the current epoch, or stand at once."""
        if not self.config.pre_vote:
            self._to_candidate(now)
            return
        old = self.state
        leader = self.node_id if isinstance(old, Resigned) else self.leader_id
        retries = old.retries if isinstance(old, Candidate) else 0
        self._set_state(Prospective(old.epoch, leader, self.voted_for(), now + self._election_timeout(),
                                    granted={self.node_id}, retries=retries))
        self._maybe_win_prevote(now)

    def _maybe_win_prevote(self, now: int) -> None:
        st = self.state
        if isinstance(st, Prospective) and self._votes(st.granted) >= self.majority:
            self._to_candidate(now)

    def _prevote_lost(self, now: int, st: Prospective) -> None:
        """Back to the role we came from, with a fresh timer; nothing was persisted meanwhile."""
        if self.faults.prevote_lost_stands:
            self._to_candidate(now)
            return
        if st.leader_id == self.node_id:
            self._set_state(Resigned(st.epoch, now + self._election_timeout(), (), set()))
        elif st.leader_id is not None:
            self._to_follower(now, st.epoch, st.leader_id)
        elif st.voted_id is not None:
            self._set_state(Voted(st.epoch, st.voted_id, now + self._election_timeout()))
        else:
            self._set_state(Unattached(st.epoch, now + self._election_timeout()))

    def _to_candidate(self, now: int) -> None:
        old = self.state
        retries = old.retries + 1 if isinstance(old, Candidate | Prospective) else 1
        if not self.config.defer_flush:
            self._flush()  # the offsets a Vote request claims must be durable (defer_flush: see _poll_candidate)
        self._set_state(Candidate(old.epoch + 1, retries, now + self._election_timeout(), granted={self.node_id}))
        self._maybe_win(now)

    def _maybe_win(self, now: int) -> None:
        st = self.state
        if isinstance(st, Candidate) and self._votes(st.granted) >= self.majority:
            self._to_leader(now)

    def _to_leader(self, now: int) -> None:
        epoch = self.state.epoch
        st = self.state
        granted = sorted(st.granted) if isinstance(st, Candidate) else [self.node_id]
        start = self.log.end_offset
        voters = {v: ReplicaProgress() for v in self.voters}
        leader = Leader(epoch, start, voters, {}, set(self.voters) - {self.node_id},
                        now + int(self.config.fetch_timeout_ms * self.config.check_quorum_factor), bqe_next_ms=now)
        self._set_state(leader)
        extra = list(self._epoch_start_records()) if self._epoch_start_records is not None else []
        first = [leader_change_record(self.node_id, self.voters, granted), *extra]
        self.log.append_as_leader(first, epoch, control=True, timestamp_ms=now)
        if extra and self.history is not None and self.history.on_append([RecordBatch(start, epoch, tuple(first),
                                                                                      control=True)]):
            self._apply_voters(now)
        if not self.config.defer_flush:
            self._flush()   # (defer_flush: a PersistLog, as for any leader append; it counts once durable)
        self._leader_progress(now, leader)

    def _to_resigned(self, now: int, *, shutting_down: bool = False) -> None:
        st = self.state
        assert isinstance(st, Leader)
        others = [v for v in self.voters if v != self.node_id]
        # Preferred successors: most replicated first (ties by id for determinism).
        others.sort(key=lambda v: (-(e if (e := st.voters[v].end_offset) is not None else -1), v))
        self._set_state(Resigned(st.epoch, now + self._election_timeout(), tuple(others), set(others),
                                 shutting_down=shutting_down))

    def _observe_leader(self, now: int, leader_id: int, epoch: int) -> None:
        """Adopt what a peer says about the leader/epoch if it is news (``maybeTransition``)."""
        st = self.state
        if epoch > st.epoch:
            if leader_id >= 0 and leader_id != self.node_id:
                self._to_follower(now, epoch, leader_id)
            else:
                self._to_unattached(now, epoch)
        elif (epoch == st.epoch and leader_id >= 0 and leader_id != self.node_id
              and isinstance(st, _LEADERLESS) and not (isinstance(st, Prospective) and st.leader_id is not None)):
            self._to_follower(now, epoch, leader_id)

    # ------------------------------------------------------------------------------ poll
    def _poll(self, now: int) -> None:
        if self._backoff:
            self._backoff = {d: t for d, t in self._backoff.items() if t > now}
        for _ in range(8):  # a transition may enable the new role's first actions at once
            st = self.state
            self._poll_state(now, st)
            if self.state is st:
                break
        if self._rejoin is not None and self._rejoin.unprobed:
            self._send_probes(now)
        self._deliver_commits()

    def _poll_state(self, now: int, st: State) -> None:
        if isinstance(st, Leader):
            self._poll_leader(now, st)
        elif isinstance(st, Candidate):
            self._poll_candidate(now, st)
        elif isinstance(st, Prospective):
            self._poll_prospective(now, st)
        elif isinstance(st, Follower):
            self._poll_follower(now, st)
        elif isinstance(st, Unattached | Voted):
            if self.can_stand and (now >= st.election_deadline or len(self.voters) == 1):
                self._to_prospective(now)
            elif not self.can_elect and now >= st.election_deadline:
                self._set_state(Observer(st.epoch))   # a non-voter that voted goes back to looking for the leader
        elif isinstance(st, Observer):
            self._poll_observer(now, st)
        elif isinstance(st, Resigned):
            self._poll_resigned(now, st)

    def _poll_leader(self, now: int, st: Leader) -> None:
        outside = (not self.is_voter and st.hw is not None and self.history is not None
                   and self.history.latest is not None and self.history.latest[0] < st.hw)
        if self._changes.poll(now, st) or outside or (self._checks_quorum and now >= st.check_quorum_deadline):
            self._to_resigned(now)   # check-quorum, or we removed ourselves and that commit is in
            return
        if st.pending and (st.linger_deadline is None or now >= st.linger_deadline
                           or len(st.pending) >= self.config.max_batch_records):
            records, st.pending, st.linger_deadline = st.pending, [], None
            self.log.append_as_leader(records, st.epoch, timestamp_ms=now)
            if not self.config.defer_flush:
                self._flush()
            self._leader_progress(now, st)
        if st.unendorsed and now >= st.bqe_next_ms:
            for v in sorted(st.unendorsed):
                if self._can_send(v, now):
                    self._send(now, v, Kind.BEGIN_EPOCH, m.BeginQuorumEpochRequest(self.cluster_id, self.node_id, st.epoch, v))
            st.bqe_next_ms = now + self.config.fetch_timeout_ms // 2
        for parked in list(st.parked.values()):
            if (now >= parked.deadline or self.log.end_offset > parked.fetch_offset
                    or st.hw != parked.hw_at_park):
                del st.parked[parked.request_id]
                self._answer_fetch(st, parked.request_id, parked.source_id, parked.fetch_offset, parked.max_bytes)

    def _poll_candidate(self, now: int, st: Candidate) -> None:
        if self._votes(st.granted) >= self.majority:
            self._to_leader(now)
            return
        if st.backoff_until is not None:
            if now >= st.backoff_until:
                self._to_prospective(now)
            return
        if now >= st.election_deadline:
            self._start_backoff(now, st)
            return
        if self.config.defer_flush and not self._durable():
            return   # the log end a Vote request claims must be durable first: its PersistLog is running
        req = m.VoteRequest(self.cluster_id, st.epoch, self.node_id, self.log.last_epoch(), self.log.end_offset,
                            candidate_directory_id=self.directory_id)
        for v in self.voters:
            if v not in st.granted and v not in st.rejected and self._can_send(v, now):
                self._send(now, v, Kind.VOTE, req)

    def _poll_prospective(self, now: int, st: Prospective) -> None:
        if self._votes(st.granted) >= self.majority:
            self._to_candidate(now)
            return
        if now >= st.election_deadline or len(self.voters) - self._votes(st.rejected) < self.majority:
            self._prevote_lost(now, st)
            return
        req = m.VoteRequest(self.cluster_id, st.epoch, self.node_id, self.log.last_epoch(), self.log.end_offset,
                            pre_vote=True, candidate_directory_id=self.directory_id)
        for v in self.voters:
            if v not in st.granted and v not in st.rejected and self._can_send(v, now):
                self._send(now, v, Kind.PREVOTE, req)

    def _start_backoff(self, now: int, st: Candidate) -> None:
        cap = min(self.config.election_backoff_max_ms,
                  self.config.election_backoff_base_ms << min(20, st.retries))
        st.backoff_until = now + self.rng.randint(0, cap)

    def _poll_follower(self, now: int, st: Follower) -> None:
        if now >= st.fetch_deadline:
            if self.can_stand:
                self._to_prospective(now)
            else:
                self._set_state(Observer(st.epoch, next_index=self.rng.randrange(len(self.voters))))
            return
        if self._can_send(st.leader_id, now) and (not self.config.defer_flush or self._durable()):
            if st.snapshot is not None:
                self._send_fetch_snapshot(now, st)
            else:
                self._send_fetch(now, st.leader_id, st.epoch, self.config.fetch_max_wait_ms, Kind.FETCH)

    def _poll_observer(self, now: int, st: Observer) -> None:
        if not self.voters or self._busy or (self.config.defer_flush and not self._durable()):
            return
        for i in range(len(self.voters)):
            dest = self.voters[(st.next_index + i) % len(self.voters)]
            if dest != self.node_id and self._can_send(dest, now):
                st.next_index += i
                self._send_fetch(now, dest, st.epoch, 0, Kind.FETCH)
                return

    def _poll_resigned(self, now: int, st: Resigned) -> None:
        for v in sorted(st.unacked):
            if self._can_send(v, now):
                self._send(now, v, Kind.END_EPOCH, m.EndQuorumEpochRequest(self.cluster_id, self.node_id, st.epoch,
                                                                  st.preferred_successors))
        if not st.shutting_down and now >= st.election_deadline:
            if self.can_stand:
                self._to_prospective(now)
            else:
                self._to_unattached(now, st.epoch + 1)

    def _send_fetch(self, now: int, dest: int, epoch: int, max_wait: int, kind: Kind) -> None:
        if not self.config.defer_flush:
            self._flush()  # the leader counts our fetch offset as replicated: it must be durable (defer_flush:
                           # a fetch is only sent once ``_durable``)
        offset, last_epoch = self.log.end_offset, self.log.last_epoch()
        req = m.FetchRequest(self.cluster_id, self.node_id, max_wait, offset, last_epoch, epoch,
                             self.log.start_offset, self.config.fetch_max_bytes,
                             replica_directory_id=self.directory_id,
                             high_watermark=-1 if self.hw is None else self.hw)
        self._send(now, dest, kind, req, offset, last_epoch)

    def _send_fetch_snapshot(self, now: int, st: Follower) -> None:
        dl = st.snapshot
        assert dl is not None
        position = len(dl.data)
        req = m.FetchSnapshotRequest(self.cluster_id, self.node_id, st.epoch,
                                     m.SnapshotIdField(dl.snapshot_id.end_offset, dl.snapshot_id.epoch),
                                     position, self.config.fetch_snapshot_max_bytes, self.directory_id)
        self._send(now, st.leader_id, Kind.SNAPSHOT, req, position)

    def _send_probes(self, now: int) -> None:
        rj = self._rejoin
        assert rj is not None
        if self.config.defer_flush and not self._durable():
            return
        for v in sorted(rj.unprobed):
            if self._can_send(v, now):
                self._send_fetch(now, v, self.state.epoch, 0, Kind.PROBE)

    # ------------------------------------------------------------------------------ Vote
    def _on_vote_request(self, now: int, rid: int, req: m.VoteRequest) -> None:
        if req.cluster_id is not None and self.cluster_id is not None and req.cluster_id != self.cluster_id:
            story.rejected_peer(self, req.candidate_id, "Vote", "cluster", req.cluster_id)
            self._respond(rid, m.VoteResponse(int(Errors.INCONSISTENT_CLUSTER_ID)))
            return
        if req.last_offset_epoch < 0 or req.last_offset < 0 or req.last_offset_epoch > req.candidate_epoch:
            self._respond(rid, m.VoteResponse(int(Errors.INVALID_REQUEST)))
            return
        if (req.pre_vote and self._rejoin is not None and req.candidate_epoch == 0 and req.last_offset == 0
                and req.last_offset_epoch == 0):
            # A pre-vote at epoch 0 from a voter with an empty log says what its answer to our probe would: it has
            # no history. It counts as that answer, so a voter that started first (its probes still in reconnect
            # backoff) does not turn away the very pre-vote that would have made it part of a fresh majority.
            self._probed(now, req.candidate_id)
        if req.candidate_epoch < self.state.epoch:
            self._respond(rid, self._vote_response(Errors.FENCED_LEADER_EPOCH, False))
            return
        if req.candidate_epoch > self.state.epoch:
            # Raft's rule (not Kafka 3.9's): only granting a vote restarts the election timer, so
            # a candidate that cannot win does not keep postponing the voters that could.
            old = self.state
            self._to_unattached(now, req.candidate_epoch)
            st = self.state
            if isinstance(st, Unattached):
                if isinstance(old, Unattached | Voted):
                    st.election_deadline = old.election_deadline
                elif isinstance(old, Candidate):
                    st.election_deadline = old.backoff_until if old.backoff_until is not None else old.election_deadline
        if req.pre_vote:
            # KIP-996: answer "would you vote?" and change nothing (no vote, no timer reset).
            granted = self._can_grant_prevote(now, req)
            story.prevote(self, req, granted)
            self._respond(rid, self._vote_response(Errors.NONE, granted))
            return
        granted = self._can_grant(req)
        if granted and isinstance(self.state, Unattached | Voted | Observer):
            if not isinstance(self.state, Voted):
                self._set_state(Voted(self.state.epoch, req.candidate_id, now + self._election_timeout()))
        story.vote(self, req, granted)
        self._respond(rid, self._vote_response(Errors.NONE, granted))

    def _can_grant(self, req: m.VoteRequest) -> bool:
        st = self.state
        if not self.may_vote or (req.candidate_id not in self.voters and not self.dynamic):
            return False
        up_to_date = self._up_to_date(req.last_offset_epoch, req.last_offset)
        if isinstance(st, Unattached) or (isinstance(st, Observer) and self.voted_for() is None):
            return up_to_date
        if isinstance(st, Voted):
            if st.voted_id == req.candidate_id:
                return True
            return self.faults.double_vote and up_to_date
        if isinstance(st, Candidate):
            return req.candidate_id == self.node_id
        return False

    def _can_grant_prevote(self, now: int, req: m.VoteRequest) -> bool:
        """Kafka 4.x's pre-vote rule: we would vote (log up to date) and we have no healthy leader.

        A follower that heard from its leader within the shortest fetch timeout any follower draws
        rejects, so a replica that was cut off cannot start an election against a working leader. A
        resigned leader grants (unlike Kafka): it protects no leader, and with a voter re-joining it
        may be the only one whose grant can end the leaderless epoch.
        """
        st = self.state
        if not self.may_vote or (req.candidate_id not in self.voters and not self.dynamic):
            return False
        if isinstance(st, Leader):
            return False
        if isinstance(st, Follower) and st.last_fetch_ok is not None:
            quiet_ms = self.config.fetch_timeout_ms - int(self.config.fetch_timeout_ms * self.config.fetch_timeout_jitter)
            if now - st.last_fetch_ok < quiet_ms:
                return False
        return self._up_to_date(req.last_offset_epoch, req.last_offset)

    def _vote_response(self, err: Errors, granted: bool) -> m.VoteResponse:
        leader = self.leader_id
        return m.VoteResponse(NONE, m.VotePartition(int(err), -1 if leader is None else leader,
                                                    self.state.epoch, granted))

    def _on_vote_response(self, now: int, req: _Inflight, resp: m.VoteResponse) -> None:
        st = self.state
        if (resp.error_code == Errors.UNSUPPORTED_VERSION and req.kind is Kind.PREVOTE
                and isinstance(st, Prospective) and st.epoch == req.epoch):
            # A voter that predates Vote v2 cannot answer a pre-vote: stand at once (Kafka 4.x).
            self._to_candidate(now)
            return
        if resp.error_code == Errors.INCONSISTENT_CLUSTER_ID:
            story.refused_by_peer(self, req.dest, "Vote", "INCONSISTENT_CLUSTER_ID")
        if resp.error_code != NONE or resp.partition is None:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        p = resp.partition
        self._observe_leader(now, p.leader_id, p.leader_epoch)
        st = self.state
        if p.error_code != NONE:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        if isinstance(st, Prospective) and req.kind is Kind.PREVOTE and p.leader_epoch == st.epoch == req.epoch:
            (st.granted if p.vote_granted else st.rejected).add(req.dest)
            self._maybe_win_prevote(now)
            return
        if (not isinstance(st, Candidate) or req.kind is not Kind.VOTE or p.leader_epoch != st.epoch
                or req.epoch != st.epoch):
            return
        story.vote_result(self, req.dest, st.epoch, p.vote_granted)
        if p.vote_granted:
            st.granted.add(req.dest)
            self._maybe_win(now)
        else:
            st.rejected.add(req.dest)
            if len(self.voters) - self._votes(st.rejected) < self.majority and st.backoff_until is None:
                self._start_backoff(now, st)

    # ------------------------------------------------------------------------------ Begin/EndQuorumEpoch
    def _epoch_partition(self, err: Errors) -> m.QuorumEpochPartition:
        leader = self.leader_id
        return m.QuorumEpochPartition(int(err), -1 if leader is None else leader, self.state.epoch)

    def _on_begin_epoch_request(self, now: int, rid: int, req: m.BeginQuorumEpochRequest) -> None:
        if req.cluster_id is not None and self.cluster_id is not None and req.cluster_id != self.cluster_id:
            story.rejected_peer(self, req.leader_id, "BeginQuorumEpoch", "cluster", req.cluster_id)
            self._respond(rid, m.BeginQuorumEpochResponse(int(Errors.INCONSISTENT_CLUSTER_ID)))
            return
        if req.leader_epoch < self.state.epoch:
            self._respond(rid, m.BeginQuorumEpochResponse(NONE, self._epoch_partition(Errors.FENCED_LEADER_EPOCH)))
            return
        self._observe_leader(now, req.leader_id, req.leader_epoch)
        err = Errors.NONE if self.leader_id == req.leader_id else Errors.INVALID_REQUEST
        self._respond(rid, m.BeginQuorumEpochResponse(NONE, self._epoch_partition(err)))

    def _on_end_epoch_request(self, now: int, rid: int, req: m.EndQuorumEpochRequest) -> None:
        if req.cluster_id is not None and self.cluster_id is not None and req.cluster_id != self.cluster_id:
            story.rejected_peer(self, req.leader_id, "EndQuorumEpoch", "cluster", req.cluster_id)
            self._respond(rid, m.EndQuorumEpochResponse(int(Errors.INCONSISTENT_CLUSTER_ID)))
            return
        if req.leader_epoch < self.state.epoch:
            self._respond(rid, m.EndQuorumEpochResponse(NONE, self._epoch_partition(Errors.FENCED_LEADER_EPOCH)))
            return
        self._observe_leader(now, req.leader_id, req.leader_epoch)
        st = self.state
        if isinstance(st, Follower) and st.leader_id == req.leader_id and self.can_elect:
            st.fetch_deadline = min(st.fetch_deadline, now + self._successor_backoff(req.preferred_successors))
            st.last_fetch_ok = None  # the leader is leaving: pre-vote for its successor
        self._respond(rid, m.EndQuorumEpochResponse(NONE, self._epoch_partition(Errors.NONE)))

    def _leader_refused(self, now: int, req: _Inflight) -> None:
        """Our leader refused the connection: it is gone, so do not wait for the fetch timeout (the
        ``refused_standoff_ms`` rule of RaftConfig). Only the first refusal since a successful Fetch
        counts (``last_fetch_ok``), so a follower cut off that way pre-votes at most once per fetch timeout."""
        st, standoff = self.state, self.config.refused_standoff_ms or 0
        if not isinstance(st, Follower) or st.leader_id != req.dest or st.epoch != req.epoch or st.last_fetch_ok is None:
            return
        st.last_fetch_ok = None   # no healthy leader: grant pre-votes, as after its EndQuorumEpoch
        if self.can_stand:
            delay = self.rng.randint(0, standoff) if standoff > 0 else 0
            st.fetch_deadline = min(st.fetch_deadline, now + delay)
            story.leader_refused(self, st.leader_id, st.epoch, st.fetch_deadline - now)

    def _voter_refused(self, now: int, req: _Inflight) -> None:
        """A voter whose process is gone will not answer this round: count it as a rejection, so a round that
        can no longer win ends now (a candidate backs off, a prospective goes back) instead of at its timeout."""
        st = self.state
        if isinstance(st, Candidate) and req.kind is Kind.VOTE and req.epoch == st.epoch:
            st.rejected.add(req.dest)
            if len(self.voters) - self._votes(st.rejected) < self.majority and st.backoff_until is None:
                self._start_backoff(now, st)
        elif isinstance(st, Prospective) and req.kind is Kind.PREVOTE and req.epoch == st.epoch:
            st.rejected.add(req.dest)   # _poll_prospective ends a round that can no longer win

    def _successor_backoff(self, successors: Sequence[int]) -> int:
        """Kafka 3.9's strict exponential delay for our position in the preferred successors."""
        cap = self.config.election_backoff_max_ms
        n = len(successors)
        pos = successors.index(self.node_id) if self.node_id in successors else n
        if pos == 0:
            return 0
        if pos >= n:
            return cap
        return min(cap, (cap >> (n - 1)) << (pos - 1))

    def _on_epoch_response(self, now: int, req: _Inflight,
                           resp: m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse) -> None:
        if resp.error_code != NONE or resp.partition is None:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        p = resp.partition
        self._observe_leader(now, p.leader_id, p.leader_epoch)
        st = self.state
        if p.error_code != NONE or req.epoch != st.epoch:
            return
        if req.kind is Kind.BEGIN_EPOCH and isinstance(st, Leader):
            st.unendorsed.discard(req.dest)
        elif req.kind is Kind.END_EPOCH and isinstance(st, Resigned):
            st.unacked.discard(req.dest)

    # ------------------------------------------------------------------------------ Fetch (leader side)
    def _fetch_error(self, err: Errors, st: State | None = None) -> m.FetchResponse:
        st = st or self.state
        leader = self.node_id if isinstance(st, Leader | Resigned) else getattr(st, "leader_id", None)
        if leader is None or (isinstance(st, Prospective) and leader == self.node_id):
            leader = -1
        return m.FetchResponse(NONE, m.FetchPartition(int(err), -1, self.log.start_offset,
                                                      current_leader=m.LeaderIdAndEpoch(leader, st.epoch)))

    def _fetch_data(self, st: Leader, fetch_offset: int, max_bytes: int,
                    diverging: OffsetAndEpoch | None = None) -> m.FetchResponse:
        batches: list[RecordBatch] = []
        if diverging is None and fetch_offset < self.log.end_offset:
            batches = self.log.read(fetch_offset, max_bytes)
        return m.FetchResponse(NONE, m.FetchPartition(
            NONE, -1 if st.hw is None else st.hw, self.log.start_offset,
            diverging_epoch=None if diverging is None else m.EpochEndOffset(diverging.epoch, diverging.offset),
            current_leader=m.LeaderIdAndEpoch(self.node_id, st.epoch), batches=batches))

    def _on_fetch_request(self, now: int, rid: int, source: int, req: m.FetchRequest) -> None:
        if req.cluster_id is not None and self.cluster_id is not None and req.cluster_id != self.cluster_id:
            story.rejected_peer(self, source, "Fetch", "cluster", req.cluster_id)
            self._respond(rid, m.FetchResponse(int(Errors.INCONSISTENT_CLUSTER_ID)))
            return
        if (req.fetch_offset < 0 or req.last_fetched_epoch < 0
                or req.last_fetched_epoch > req.current_leader_epoch):
            self._respond(rid, self._fetch_error(Errors.INVALID_REQUEST))
            return
        st = self.state
        err = self.leader_check(req.current_leader_epoch)
        if err is not None:
            self._respond(rid, self._fetch_error(err))
            return
        assert isinstance(st, Leader)
        replica = req.replica_id
        self._heard_from_voter(now, st, replica)
        snapshot = self._snapshot_needed(req.fetch_offset, req.last_fetched_epoch)
        if snapshot is not None:
            self._respond(rid, self._fetch_snapshot_id(st, snapshot))
            return
        diverging = self._divergence(req.fetch_offset, req.last_fetched_epoch)
        if diverging is not None:
            self._respond(rid, self._fetch_data(st, req.fetch_offset, req.max_bytes, diverging))
            return
        known_hw = req.high_watermark   # Fetch v18 says what the fetcher knows (Kafka 4.1)
        if replica >= 0 and replica != self.node_id:
            table = st.voters if replica in st.voters else st.observers
            progress = table.setdefault(replica, ReplicaProgress())
            progress.update(req.fetch_offset, now, self.log.end_offset)
            if req.replica_directory_id is not None:
                progress.directory_id = req.replica_directory_id
            if known_hw == m.UNKNOWN_HIGH_WATERMARK and progress.hw_sent >= 0:
                known_hw = progress.hw_sent   # before v18: what our last answer told it
            self._leader_progress(now, st)
        # A fetcher whose high watermark is behind ours is answered at once: parked, it would learn the new one
        # only with new data or at MaxWaitMs (an observer whose last answer carried a record before it
        # committed would apply it half a second late).
        behind = st.hw is not None and known_hw < st.hw
        if req.fetch_offset >= self.log.end_offset and req.max_wait_ms > 0 and not behind:
            st.parked[rid] = ParkedFetch(rid, replica, req.fetch_offset, req.max_bytes, now + req.max_wait_ms, st.hw)
            return
        self._answer_fetch(st, rid, replica, req.fetch_offset, req.max_bytes)

    def _answer_fetch(self, st: Leader, rid: int, replica: int, fetch_offset: int, max_bytes: int) -> None:
        """Answer a replica's Fetch with what the log holds from ``fetch_offset``, noting the high watermark
        the answer tells it."""
        resp = self._fetch_data(st, fetch_offset, max_bytes)
        progress = st.voters.get(replica) or st.observers.get(replica)
        if progress is not None and resp.partition is not None:
            progress.hw_sent = resp.partition.high_watermark
        self._respond(rid, resp)

    def _heard_from_voter(self, now: int, st: Leader, replica: int) -> None:
        """A voter fetched in our epoch: it endorses us, and counts toward check-quorum."""
        if replica in st.voters and replica != self.node_id:
            st.unendorsed.discard(replica)
            st.fetched_voters.add(replica)
            if len(st.fetched_voters) >= self.majority - (1 if self.is_voter else 0):
                st.fetched_voters.clear()
                st.check_quorum_deadline = now + int(self.config.fetch_timeout_ms * self.config.check_quorum_factor)

    def _snapshot_needed(self, fetch_offset: int, last_fetched_epoch: int) -> SnapshotId | None:
        """The snapshot a fetcher must load because our log cannot answer it, else None.

        Kafka's rule, for a log whose start may sit a little below its snapshot (batch boundary):
        the fetch offset is below the log start; or it is at the log start but not at the end of a
        snapshot of the same epoch; or the fetcher's last epoch is older than every epoch the log
        still holds, so where it diverges is no longer known here.
        """
        start = self.log.start_offset
        if start == 0:
            return None
        latest = self.log.latest_snapshot_id()
        if latest is None:
            return None
        if fetch_offset < start:
            return latest
        if fetch_offset == start:
            if latest.end_offset == start and latest.epoch == last_fetched_epoch:
                return None
            return latest
        if start < self.log.end_offset:
            held = self.log.read(start, 1)
            first_epoch = held[0].leader_epoch if held else latest.epoch
        else:
            first_epoch = latest.epoch
        return latest if last_fetched_epoch < first_epoch else None

    def _fetch_snapshot_id(self, st: Leader, sid: SnapshotId) -> m.FetchResponse:
        return m.FetchResponse(NONE, m.FetchPartition(
            NONE, -1 if st.hw is None else st.hw, self.log.start_offset,
            current_leader=m.LeaderIdAndEpoch(self.node_id, st.epoch),
            snapshot_id=m.SnapshotIdField(sid.end_offset, sid.epoch)))

    def _divergence(self, fetch_offset: int, last_fetched_epoch: int) -> OffsetAndEpoch | None:
        """None if (offset, epoch) is a prefix of our log, else the largest common epoch and its end."""
        if fetch_offset == 0 and last_fetched_epoch == 0:
            return None
        end = self.log.end_offset_for_epoch(last_fetched_epoch)
        if end.epoch != last_fetched_epoch or fetch_offset > end.offset:
            return end
        return None

    def _leader_progress(self, now: int, st: Leader) -> None:
        """Recompute the HW after our log or a replica's fetch offset moved."""
        own = st.voters[self.node_id] if self.is_voter else st.observers.setdefault(self.node_id, ReplicaProgress())
        own.end_offset = self.log.flushed_offset
        own.last_fetch_ms = own.last_caught_up_ms = now
        offsets = [p.end_offset if p.end_offset is not None else -1 for p in st.voters.values()]
        if self.faults.observer_counts_for_hw:
            offsets += [p.end_offset if p.end_offset is not None else -1 for p in st.observers.values()]
        offsets.sort(reverse=True)
        # A majority's durable copies commit an offset; like Kafka's leader, ours also waits for its own
        # (with defer_flush that fsync overlaps replication instead of preceding it).
        quorum = len(self._static_voters if self.faults.hw_old_majority else self.voters)
        candidate = min(offsets[min(quorum // 2, len(offsets) - 1)], own.end_offset)
        if candidate <= 0:
            return
        if candidate <= st.epoch_start_offset and not self.faults.no_own_epoch_hw_rule:
            return
        if st.hw is None or candidate > st.hw:
            st.hw = candidate
            self._raise_hw(candidate)
            if st.pending and candidate >= self.log.end_offset:
                st.linger_deadline = now  # the previous batch committed: write the gathered one now

    def _raise_hw(self, value: int) -> None:
        if self.hw is None or value > self.hw:
            self.hw = value

    # ------------------------------------------------------------------------------ Fetch (fetcher side)
    def _on_fetch_response(self, now: int, req: _Inflight, resp: m.FetchResponse) -> None:
        if resp.error_code == Errors.INCONSISTENT_CLUSTER_ID:
            st = self.state
            if isinstance(st, Follower) and st.leader_id == req.dest:
                raise RaftFatalError(f"node {req.dest} belongs to another cluster than {self.cluster_id!r}")
            # Not the leader we follow (a probe, or an observer asking around): a peer of another
            # cluster holds no vote of ours and can never lead us; ask the next one.
            story.refused_by_peer(self, req.dest, "Fetch", "INCONSISTENT_CLUSTER_ID")
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            if isinstance(st, Observer) and req.kind is Kind.FETCH:
                st.next_index += 1
            self._probed(now, req.dest)
            return
        p = resp.partition
        if resp.error_code != NONE or p is None:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        self._observe_leader(now, p.current_leader.leader_id, p.current_leader.leader_epoch)
        rj = self._rejoin
        if self._probed(now, req.dest):
            return
        if req.kind is Kind.PROBE:
            return
        st = self.state
        if p.error_code != NONE:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            if isinstance(st, Observer):
                st.next_index += 1
            return
        if not isinstance(st, Follower) or st.leader_id != req.dest or st.epoch != req.epoch:
            return
        if req.fetch_offset != self.log.end_offset or req.last_epoch != self.log.last_epoch():
            # Stale: our log moved since the request was sent. The end offset alone is not enough: a late
            # answer to a Fetch sent before a truncation can find the log re-grown to the same end offset
            # with another epoch's entries (a diverging epoch it names no longer applies to them).
            return
        st.fetch_deadline = now + self._fetch_timeout()
        st.last_fetch_ok = now
        if p.snapshot_id is not None:
            # Our log cannot continue from the leader's: load its snapshot first. Our HW does not
            # move on this answer (our log may hold stale entries the snapshot will replace).
            sid = SnapshotId(p.snapshot_id.end_offset, p.snapshot_id.epoch)
            if sid.end_offset >= max(self.hw or 0, self.log.start_offset):
                st.snapshot = SnapshotDownload(sid)
            else:
                self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        if p.diverging_epoch is not None:
            if self.faults.no_truncate_on_diverge:
                return
            local = self.log.end_offset_for_epoch(p.diverging_epoch.epoch)
            cut = min(p.diverging_epoch.end_offset, local.offset)
            if self.hw is not None and cut < self.hw:
                raise LogTruncationError(
                    f"node {self.node_id}: leader {req.dest} epoch {st.epoch} asks to truncate to {cut} "
                    f"below high watermark {self.hw}")
            story.truncation(self, req.dest, st.epoch, cut, self.log.end_offset)
            before = self.log.end_offset
            self.log.truncate_to(cut)
            # defer_flush: the cut is made durable by the next PersistLog, in the shell's disk worker; nothing
            # is appended and no Fetch claims the new end before (a crash must never bring the cut records
            # back beside new ones).
            self._truncated = self._truncated or (self.config.defer_flush and cut < before)
            if self.history is not None and self.history.truncate(cut):
                self._apply_voters(now)
        elif p.batches:
            batches = p.batches
            if batches[0].base_offset < self.log.end_offset:
                batches = [b for b in batches if b.base_offset >= self.log.end_offset]
            if batches and batches[0].base_offset == self.log.end_offset:
                self.log.append_as_follower(batches)
                if self.history is not None and self.history.on_append(batches):
                    self._apply_voters(now)   # a voter set takes effect when it reaches the log (KIP-853)
        if not self.config.defer_flush:
            self._flush()
        if p.high_watermark >= 0 and p.diverging_epoch is None:
            st.leader_hw = max(st.leader_hw, p.high_watermark)
            self._raise_hw(min(self.log.flushed_offset, p.high_watermark))
        if self._vote_floor is not None and (self.log.last_epoch(), self.log.end_offset) >= self._vote_floor:
            self._vote_floor = None   # our log holds again at least what the damaged one did
        if rj is not None and rj.floor_epoch is not None and st.epoch >= rj.floor_epoch:
            if rj.target_hw is None and p.high_watermark >= 0:
                rj.target_hw = p.high_watermark
            if rj.target_hw is not None and self.hw is not None and self.hw >= rj.target_hw:
                self._rejoin = None
                self._persist()

    def _probed(self, now: int, dest: int) -> bool:
        """A re-joining voter heard from ``dest``; True if that ended the re-join (a fresh quorum)."""
        rj = self._rejoin
        if rj is None or dest not in rj.unprobed:
            return False
        # Any Fetch answer from a voter (a probe, or a fetch from the leader we follow) sent after the
        # restart shows its epoch; the leader is never probed separately (it is busy with fetches).
        rj.unprobed.discard(dest)
        if self._fresh_majority(rj):
            # A majority, ourselves included, answered and every answer said epoch 0 (an answer with a
            # higher epoch would have raised ours): none of them ever saw a candidate, so no election
            # and no commit can have happened without one of them (docs/raft.md, *Fresh quorums*).
            self._rejoin = None
            story.fresh_quorum(self, len(self.voters) - len(rj.unprobed), len(self.voters))
            st = self.state
            if isinstance(st, Observer):
                # Unattached with the timer drawn at our start: if it already ran out we stand at once.
                self._set_state(Unattached(st.epoch, rj.election_deadline))
            return True
        if rj.unprobed:
            return False
        rj.floor_epoch = self.state.epoch
        return False

    def _fresh_majority(self, rj: _Rejoin) -> bool:
        """A majority of the voters (ourselves included) answered and none of them has a history."""
        answered = len(self.voters) - len(rj.unprobed)
        needed = len(self.voters) if self.faults.rejoin_waits_for_all else self.majority
        if answered < needed:
            return False
        return self.faults.rejoin_ignores_history or self._nothing_ever_happened()

    def _nothing_ever_happened(self) -> bool:
        return self.state.epoch == 0 and self.log.end_offset == 0 and self.log.latest_snapshot_id() is None

    # ------------------------------------------------------------------------------ FetchSnapshot
    def _snapshot_error(self, err: Errors) -> m.FetchSnapshotResponse:
        leader = self.leader_id
        return m.FetchSnapshotResponse(NONE, m.FetchSnapshotPartition(
            int(err), current_leader=m.LeaderIdAndEpoch(-1 if leader is None else leader, self.state.epoch)))

    def leader_check(self, current_leader_epoch: int) -> Errors | None:
        """The error for a Fetch/FetchSnapshot naming ``current_leader_epoch``, None if we lead it."""
        st = self.state
        if current_leader_epoch < st.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > st.epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        if not isinstance(st, Leader):
            return Errors.NOT_LEADER_OR_FOLLOWER
        return None

    def _on_fetch_snapshot_request(self, now: int, rid: int, req: m.FetchSnapshotRequest) -> None:
        if req.cluster_id is not None and self.cluster_id is not None and req.cluster_id != self.cluster_id:
            self._respond(rid, m.FetchSnapshotResponse(int(Errors.INCONSISTENT_CLUSTER_ID)))
            return
        st = self.state
        err = self.leader_check(req.current_leader_epoch)
        if err is not None:
            self._respond(rid, self._snapshot_error(err))
            return
        assert isinstance(st, Leader)
        sid = SnapshotId(req.snapshot_id.end_offset, req.snapshot_id.epoch)
        try:
            size = self.log.snapshot_size(sid)
        except KeyError:
            self._respond(rid, self._snapshot_error(Errors.SNAPSHOT_NOT_FOUND))
            return
        if req.position < 0 or req.position >= size:
            self._respond(rid, self._snapshot_error(Errors.POSITION_OUT_OF_RANGE))
            return
        self._heard_from_voter(now, st, req.replica_id)
        # the answer is decided; its bytes (at most MaxBytes from Position, cut at the end) are the shell's to read
        self._out.append(m.ReadSnapshotChunk(rid, sid, req.position, max(0, min(req.max_bytes, size)),
                                             m.FetchSnapshotResponse(NONE, m.FetchSnapshotPartition(
                                                 NONE, req.snapshot_id, m.LeaderIdAndEpoch(self.node_id, st.epoch),
                                                 size, req.position))))

    def _on_fetch_snapshot_response(self, now: int, req: _Inflight, resp: m.FetchSnapshotResponse) -> None:
        if resp.error_code == Errors.INCONSISTENT_CLUSTER_ID:
            raise RaftFatalError(f"node {req.dest} belongs to another cluster than {self.cluster_id!r}")
        p = resp.partition
        if resp.error_code != NONE or p is None:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        self._observe_leader(now, p.current_leader.leader_id, p.current_leader.leader_epoch)
        st = self.state
        if not isinstance(st, Follower) or st.leader_id != req.dest or st.epoch != req.epoch:
            return
        dl = st.snapshot
        if dl is None or len(dl.data) != req.fetch_offset:
            return  # stale: the download restarted or moved on since this was asked
        if p.error_code != NONE:
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            if p.error_code in (Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE):
                st.snapshot = None  # the leader cleaned it up (or we lost track): Fetch anew
            return
        sid = dl.snapshot_id
        if ((p.snapshot_id.end_offset, p.snapshot_id.epoch) != (sid.end_offset, sid.epoch)
                or p.position != len(dl.data) or p.size < 0 or len(dl.data) + len(p.unaligned_records) > p.size):
            st.snapshot = None  # an answer that does not fit what we asked: start over
            self._backoff[req.dest] = now + self.config.retry_backoff_ms
            return
        st.fetch_deadline = now + self._fetch_timeout()
        st.last_fetch_ok = now
        dl.data += p.unaligned_records
        if len(dl.data) < p.size:
            return
        st.snapshot = None
        self._install_snapshot(now, sid, bytes(dl.data))

    def _install_snapshot(self, now: int, sid: SnapshotId, data: bytes) -> None:
        """A whole snapshot arrived: it replaces our log; the listener loads it on the next delivery."""
        if self.hw is not None and sid.end_offset < self.hw:
            return  # never give up committed entries we hold for an older snapshot
        try:
            self.log.install_snapshot(sid, data)
        except DecodeError:
            return  # corrupt in transit: the next Fetch asks for it again
        story.snapshot_installed(self, sid, len(data))
        if self.history is not None:
            self.history = VoterHistory.from_log(self.log)
            self._apply_voters(now)
        self._raise_hw(sid.end_offset)
        if self.faults.snapshot_not_loaded:
            self._applied = max(self._applied, sid.end_offset)

    # ------------------------------------------------------------------------------ commits
    def _load_snapshot_if_behind(self) -> None:
        """Give the listener the latest snapshot when its position fell below the log start."""
        start = self.log.start_offset
        if self._applied >= start:
            return
        sid = self.log.latest_snapshot_id()
        if sid is None or sid.end_offset < start:
            raise RaftFatalError(f"node {self.node_id}: log starts at {start} but no snapshot covers it")
        batches = self.log.read_snapshot(sid)
        story.snapshot_loaded(self, sid, len(batches))
        self._applied = sid.end_offset
        handler = getattr(self.listener, "handle_snapshot", None)
        if handler is not None:
            handler(sid.end_offset, batches)

    def _deliver_commits(self) -> None:
        self._load_snapshot_if_behind()
        hw = self.hw
        if hw is None or hw <= self._applied:
            return
        ready: list[RecordBatch] = []
        offset = self._applied
        while offset < hw:
            batches = self.log.read(offset, 1 << 20)
            progressed = False
            for b in batches:
                if b.next_offset > hw:
                    break
                if b.next_offset > offset:
                    if b.base_offset < offset:  # a snapshot ended inside this batch: deliver the rest
                        b = RecordBatch(offset, b.leader_epoch, b.records[offset - b.base_offset:], b.control,
                                        b.base_timestamp)
                    if not b.control:
                        ready.append(b)
                    offset = b.next_offset
                    progressed = True
            if not progressed:
                break
        self._applied = offset
        if ready and self.listener is not None:
            self.listener.handle_commit(ready)

    # ------------------------------------------------------------------------------ DescribeQuorum
    def describe_quorum(self, now: int) -> m.DescribeQuorumResponse:
        st = self.state
        if not isinstance(st, Leader):
            leader = self.leader_id
            return m.DescribeQuorumResponse(NONE, m.DescribeQuorumPartition(
                int(Errors.NOT_LEADER_OR_FOLLOWER), -1 if leader is None else leader, st.epoch))

        def rows(table: dict[int, ReplicaProgress]) -> tuple[m.ReplicaStateField, ...]:
            return tuple(m.ReplicaStateField(rid, -1 if p.end_offset is None else p.end_offset,
                                             p.last_fetch_ms, p.last_caught_up_ms, p.directory_id)
                         for rid, p in sorted(table.items()))

        voters = tuple(m.ReplicaStateField(self.node_id, self.log.end_offset, now, now, self.directory_id)
                       if r.replica_id == self.node_id else r for r in rows(st.voters))
        return m.DescribeQuorumResponse(NONE, m.DescribeQuorumPartition(
            NONE, self.node_id, st.epoch, -1 if st.hw is None else st.hw, voters, rows(st.observers)))
