"""KIP-853 voter changes, pure: the voter sets a log names by offset, and the leader's change rules.

``VoterHistory`` is Kafka's ``KRaftControlRecordStateMachine``: the kraft.version and voter set in force
at the end of the log (the latest KRaftVersionRecord / VotersRecord, in the newest snapshot or after it),
kept up to date as batches are appended and rolled back when the log is truncated. A voter set takes
effect when its VotersRecord is *appended* (leader) or replicated (follower), not when it commits.

``VoterChanges`` is the leader side of AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter with Kafka's rules
(``AddVoterHandler``, ``RemoveVoterHandler``, ``UpdateVoterHandler``): one change at a time, only once
the leader has a high watermark in its epoch and the latest VotersRecord is committed; a new voter must
be fetching and caught up and support the finalized kraft.version (asked with ApiVersions); Add and
Remove are answered when their VotersRecord commits, or REQUEST_TIMED_OUT after
``controller.quorum.request.timeout.ms``; a leader that removed itself resigns after the commit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import messages as m
from kraftwire.raft.voter_set import (
    ControlState,
    VoterNode,
    VoterSet,
    control_scan,
    kraft_version_record,
    replay_control,
)

if TYPE_CHECKING:
    from kraftwire.raft.config import RaftConfig
    from kraftwire.raft.faults import RaftFaults
    from kraftwire.raft.state import Leader, State

SNAPSHOT_OFFSET = -1      # a voter set read from a snapshot is committed by definition
CAUGHT_UP_WINDOW_MS = 3_600_000   # Kafka: an observer that caught up and fetched within the last hour


class VoterHistory:
    """kraft.version and voter sets by log offset, from a snapshot's state plus the log after it."""

    def __init__(self, base: ControlState | None = None) -> None:
        self._sets: list[tuple[int, VoterSet]] = []
        self._versions: list[tuple[int, int]] = []
        self.reset(base or ControlState())

    @classmethod
    def from_log(cls, log: Any, scan_bytes: int = 8 << 20) -> VoterHistory:
        """The history of ``log`` (a ReplicatedLog): its newest snapshot, then every batch after it."""
        base, chunks = control_scan(log, scan_bytes)
        hist = cls(base)
        for batches in chunks:
            hist.on_append(batches)
        return hist

    def reset(self, state: ControlState) -> None:
        """Start over from a snapshot's control state (after installing one)."""
        self._sets = [] if state.voters is None else [(SNAPSHOT_OFFSET, state.voters)]
        self._versions = [(SNAPSHOT_OFFSET, state.kraft_version)]

    def on_append(self, batches: Iterable[RecordBatch]) -> bool:
        """Record the control records of appended ``batches``; True if the voter set changed."""
        changed = False
        for b in batches:
            if not b.control:
                continue
            for i, _ in enumerate(b.records):
                st = replay_control(ControlState(-1), [RecordBatch(b.base_offset + i, b.leader_epoch,
                                                                   (b.records[i],), control=True)])
                if st.voters is not None:
                    self._sets.append((b.base_offset + i, st.voters))
                    changed = True
                if st.kraft_version >= 0:
                    self._versions.append((b.base_offset + i, st.kraft_version))
        return changed

    def truncate(self, end_offset: int) -> bool:
        """The log was cut to ``end_offset``: forget what it no longer holds; True if the set changed."""
        before = len(self._sets)
        self._sets = [e for e in self._sets if e[0] < end_offset]
        self._versions = [e for e in self._versions if e[0] < end_offset] or [(SNAPSHOT_OFFSET, 0)]
        return len(self._sets) != before

    def compact(self, committed: int) -> None:
        """Drop entries superseded by a committed one (below ``committed``); they can never come back."""
        keep = [i for i, (off, _) in enumerate(self._sets) if off < committed]
        if len(keep) > 1:
            self._sets = self._sets[keep[-1]:]
        vkeep = [i for i, (off, _) in enumerate(self._versions) if off < committed]
        if len(vkeep) > 1:
            self._versions = self._versions[vkeep[-1]:]

    def control_records_at(self, end_offset: int) -> tuple[Record, ...]:
        """KRaftVersionRecord and VotersRecord in force below ``end_offset``: what a snapshot ending there
        carries after its header, so the voter set survives log cleaning."""
        sets = [vs for off, vs in self._sets if off < end_offset]
        level = [lv for off, lv in self._versions if off < end_offset]
        if not sets:
            return ()
        return (kraft_version_record(level[-1] if level else 0), sets[-1].to_record())

    @property
    def entries(self) -> tuple[tuple[int, VoterSet], ...]:
        """Every (offset, voter set) still known, oldest first (-1: from the snapshot)."""
        return tuple(self._sets)

    @property
    def latest(self) -> tuple[int, VoterSet] | None:
        """(offset, voter set) of the set in force, or None when the log names none (static quorum)."""
        return self._sets[-1] if self._sets else None

    @property
    def kraft_version(self) -> int:
        return self._versions[-1][1]


@dataclass(slots=True)
class PendingChange:
    """The one Add or Remove in progress (Kafka's AddVoterHandlerState / RemoveVoterHandlerState)."""

    kind: str                       # "add" | "remove"
    request_id: int                 # the inbound request to answer
    epoch: int
    voter: VoterNode
    deadline: int
    record_offset: int | None = None   # the VotersRecord, once appended
    versions_request: int | None = None   # add: the ApiVersions probe in flight


def _answer(err: Errors, message: str | None = None) -> m.VoterChangeResponse:
    return m.VoterChangeResponse(int(err), message)


class ChangeHost(Protocol):
    """The narrow view of the Raft core the voter-change handlers work through (``RaftCore`` is one):
    what it is, and the four things they may do — answer, append a voter set, probe a new voter's
    kraft.version range, check a request's leader epoch."""

    @property
    def cluster_id(self) -> str | None: ...
    @property
    def config(self) -> RaftConfig: ...
    @property
    def faults(self) -> RaftFaults: ...
    @property
    def history(self) -> VoterHistory | None: ...
    @property
    def listener_name(self) -> str | None: ...
    @property
    def state(self) -> State: ...
    @property
    def epoch(self) -> int: ...
    @property
    def is_voter(self) -> bool: ...
    @property
    def leader_id(self) -> int | None: ...

    def respond(self, request_id: int, msg: m.Response) -> None: ...
    def append_voters(self, now: int, voters: VoterSet) -> int: ...
    def send_versions_probe(self, now: int, dest: int, msg: m.KraftVersionsRequest) -> int: ...
    def leader_check(self, current_leader_epoch: int) -> Errors | None: ...


class VoterChanges:
    """The leader's voter-change handlers; owned by one Raft core, seen through ``ChangeHost``."""

    def __init__(self, core: ChangeHost) -> None:
        self.core = core
        self.pending: PendingChange | None = None

    # ---------------------------------------------------------------------- checks shared by the three
    def _common(self, now: int, st: Leader, what: str) -> tuple[Errors, str] | None:
        self.expire(now)
        if self.pending is not None and not self.core.faults.two_changes_in_flight:
            return Errors.REQUEST_TIMED_OUT, "Request timed out waiting for leader to handle previous voter change request"
        if st.hw is None:
            return (Errors.REQUEST_TIMED_OUT,
                    "Request timed out waiting for leader to establish HWM and fence previous voter changes")
        hist = self.core.history
        if hist is None or hist.kraft_version < 1:
            level = 0 if hist is None else hist.kraft_version
            return Errors.UNSUPPORTED_VERSION, f"Cluster doesn't support {what} voter because the kraft.version feature is {level}"
        latest = hist.latest
        if self.core.faults.two_changes_in_flight and latest is not None:
            return None
        if latest is None or latest[0] >= st.hw:
            at = None if latest is None else latest[0]
            return (Errors.REQUEST_TIMED_OUT, f"Request timed out waiting for voters to commit the latest voter "
                                              f"change at {at} with HWM {st.hw}")
        return None

    def _leader(self, cluster_id: str | None) -> Leader | m.VoterChangeResponse:
        from kraftwire.raft.state import Leader
        core = self.core
        if cluster_id is not None and core.cluster_id is not None and cluster_id != core.cluster_id:
            return _answer(Errors.INCONSISTENT_CLUSTER_ID,
                           f'The given id "{cluster_id}" doesn\'t match the cluster id "{core.cluster_id}"')
        if not isinstance(core.state, Leader):
            return _answer(Errors.NOT_LEADER_OR_FOLLOWER)
        return core.state

    # ---------------------------------------------------------------------- AddRaftVoter
    def handle_add(self, now: int, rid: int, req: m.AddRaftVoterRequest) -> None:
        core = self.core
        st = self._leader(req.cluster_id)
        if isinstance(st, m.VoterChangeResponse):
            core.respond(rid, st)
            return
        if req.voter_id < 0 or req.voter_directory_id == uuid.UUID(int=0):
            core.respond(rid, _answer(Errors.INVALID_REQUEST, "Add voter request didn't include a valid voter"))
            return
        if core.listener_name is not None and not any(n == core.listener_name for n, _, _ in req.listeners):
            core.respond(rid, _answer(Errors.INVALID_REQUEST, (
                f"Add voter request didn't include the endpoint ({list(req.listeners)}) for the default listener "
                f"{core.listener_name}")))
            return
        err = self._common(now, st, "adding")
        if err is not None:
            core.respond(rid, _answer(*err))
            return
        voters = core.history.latest[1]   # type: ignore[union-attr,index]
        if req.voter_id in voters.ids:
            core.respond(rid, _answer(Errors.DUPLICATE_VOTER, (
                f"The voter id for ReplicaKey(id={req.voter_id}, directoryId={req.voter_directory_id}) is already "
                f"part of the set of voters {sorted(voters.ids)}.")))
            return
        node = VoterNode(req.voter_id, req.voter_directory_id, tuple(req.listeners))
        self.pending = PendingChange("add", rid, st.epoch, node, now + core.config.request_timeout_ms)
        self.pending.versions_request = core.send_versions_probe(now, req.voter_id,
                                                                  m.KraftVersionsRequest(tuple(req.listeners)))

    def on_versions(self, now: int, request_id: int, resp: m.KraftVersionsResponse | None) -> None:
        """The new voter's ApiVersions answer (None: the request failed)."""
        p = self.pending
        core = self.core
        if p is None or p.kind != "add" or p.versions_request != request_id or p.record_offset is not None:
            return
        p.versions_request = None
        st = core.state
        if resp is None or resp.error_code != 0:
            err = "no answer" if resp is None else Errors(resp.error_code).name
            self._finish(_answer(Errors.REQUEST_TIMED_OUT,
                                 f"Aborted add voter operation for since API_VERSIONS returned an error {err}"))
            return
        level = core.history.kraft_version if core.history is not None else 0
        rng = resp.kraft_range
        if rng is None or not rng[0] <= level <= rng[1]:
            shown = f"(min: {rng[0]}, max: {rng[1]}" if rng is not None else "(min: 0, max: 0)"
            self._finish(_answer(Errors.INVALID_REQUEST, (
                f"Aborted add voter operation for {self._key(p.voter)} since the kraft.version range {shown} "
                f"doesn't support the finalized version {level}")))
            return
        progress = st.observers.get(p.voter.node_id)   # type: ignore[union-attr]
        caught_up = (progress is not None and progress.last_caught_up_ms > 0 and progress.last_fetch_ms > 0
                     and progress.last_fetch_ms > now - CAUGHT_UP_WINDOW_MS
                     and progress.directory_id in (None, p.voter.directory_id))
        if not caught_up:
            self._finish(_answer(Errors.REQUEST_TIMED_OUT,
                                 f"Aborted add voter operation for {self._key(p.voter)} since it is lagging behind"))
            return
        voters = core.history.latest[1]   # type: ignore[union-attr,index]
        node = VoterNode(p.voter.node_id, p.voter.directory_id, p.voter.endpoints, (rng[0], rng[1]))
        p.record_offset = core.append_voters(now, VoterSet((*voters.voters, node)))

    # ---------------------------------------------------------------------- RemoveRaftVoter
    def handle_remove(self, now: int, rid: int, req: m.RemoveRaftVoterRequest) -> None:
        core = self.core
        st = self._leader(req.cluster_id)
        if isinstance(st, m.VoterChangeResponse):
            core.respond(rid, st)
            return
        if req.voter_id < 0 or req.voter_directory_id == uuid.UUID(int=0):
            core.respond(rid, _answer(Errors.INVALID_REQUEST, "Remove voter request didn't include a valid voter"))
            return
        err = self._common(now, st, "removing")
        if err is not None:
            core.respond(rid, _answer(*err))
            return
        voters = core.history.latest[1]   # type: ignore[union-attr,index]
        old = voters.get(req.voter_id)
        if old is None or old.directory_id != req.voter_directory_id or len(voters.voters) == 1:
            core.respond(rid, _answer(Errors.VOTER_NOT_FOUND, (
                f"Cannot remove voter ReplicaKey(id={req.voter_id}, directoryId={req.voter_directory_id}) from "
                f"the set of voters {sorted(voters.ids)}")))
            return
        self.pending = PendingChange("remove", rid, st.epoch, old, now + core.config.request_timeout_ms)
        self.pending.record_offset = core.append_voters(
            now, VoterSet(tuple(v for v in voters.voters if v.node_id != req.voter_id)))

    # ---------------------------------------------------------------------- UpdateRaftVoter
    def handle_update(self, now: int, rid: int, req: m.UpdateRaftVoterRequest) -> None:
        core = self.core
        st = core.state

        def answer(err: Errors) -> None:
            core.respond(rid, m.VoterChangeResponse(int(err), None, m.LeaderIdAndEpoch(
                -1 if core.leader_id is None else core.leader_id, core.epoch)))

        if req.cluster_id is not None and core.cluster_id is not None and req.cluster_id != core.cluster_id:
            answer(Errors.INCONSISTENT_CLUSTER_ID)
            return
        lead_err = core.leader_check(req.current_leader_epoch)
        if lead_err is not None:
            answer(lead_err)
            return
        lo, hi = req.kraft_range
        if (req.voter_id < 0 or req.voter_directory_id == uuid.UUID(int=0) or lo < 0 or hi < 0 or hi < lo
                or (core.listener_name is not None and not any(n == core.listener_name for n, _, _ in req.listeners))):
            answer(Errors.INVALID_REQUEST)
            return
        err = self._common(now, st, "updating")   # type: ignore[arg-type]
        if err is not None:
            answer(err[0])
            return
        level = core.history.kraft_version   # type: ignore[union-attr]
        if not lo <= level <= hi:
            answer(Errors.INVALID_REQUEST)
            return
        voters = core.history.latest[1]   # type: ignore[union-attr,index]
        old = voters.get(req.voter_id)
        if old is None or old.directory_id != req.voter_directory_id:
            answer(Errors.VOTER_NOT_FOUND)
            return
        node = VoterNode(req.voter_id, req.voter_directory_id, tuple(req.listeners), (lo, hi))
        if node != old:
            core.append_voters(now, VoterSet(tuple(node if v.node_id == req.voter_id else v for v in voters.voters)))
        answer(Errors.NONE)   # Kafka answers at once, without waiting for the commit

    # ---------------------------------------------------------------------- progress
    def expire(self, now: int) -> None:
        p = self.pending
        if p is not None and now >= p.deadline:
            self._finish(_answer(Errors.REQUEST_TIMED_OUT))

    def poll(self, now: int, st: Leader) -> bool:
        """Complete the change whose record committed; True when the leader must resign (removed itself)."""
        self.expire(now)
        p = self.pending
        if p is None or p.record_offset is None or st.hw is None or st.hw <= p.record_offset:
            return False
        self._finish(_answer(Errors.NONE))
        return p.kind == "remove" and not self.core.is_voter

    def next_deadline(self) -> int | None:
        return None if self.pending is None else self.pending.deadline

    def leadership_lost(self) -> None:
        if self.pending is not None:
            self._finish(_answer(Errors.NOT_LEADER_OR_FOLLOWER))

    def _finish(self, resp: m.VoterChangeResponse) -> None:
        p, self.pending = self.pending, None
        if p is not None:
            self.core.respond(p.request_id, resp)

    @staticmethod
    def _key(v: VoterNode) -> str:
        return f"ReplicaKey(id={v.node_id}, directoryId={v.directory_id})"
