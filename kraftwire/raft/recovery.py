"""Recovery after losing a majority for good, pure: what a surviving voter's log proves, and the rewrite that
makes it a one-voter quorum (``kraftwire storage recover-as-single-voter`` runs this on the directory's files;
the simulator runs it on a simulated survivor's memory log, kraftwire.sim.recovery_sim).

What the survivor proves is bounded by the last high watermark it recorded durably: KRaft keeps the high
watermark in memory, and a snapshot is only taken of committed records, so the end of its latest snapshot
(or its log start) is that bound. Everything below it was committed by the old quorum and is kept as it is;
every record from it on is *unproven*: kept and committed by the new quorum whether or not the old one had
committed it; whatever the old quorum committed from that offset on and this node holds differently or not at
all is lost. That is what the report says, exactly.

The rewrite works on any ``ReplicatedLog`` and ``QuorumStateStore``: at kraft.version 1 a control batch
with a VotersRecord naming this node alone (its directory id and endpoints, from the set in force) goes at
the log end in a new epoch; at both versions quorum-state names this node as the only voter with no leader
and no vote, in an epoch above every epoch the directory knew, so the node stands at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kraftwire.raft.faults import NO_FAULTS, RaftFaults
from kraftwire.raft.log import ElectionState
from kraftwire.raft.reconfig import VoterHistory
from kraftwire.raft.voter_set import VoterNode, VoterSet

_SCAN_BYTES = 8 << 20


class RecoveryRefused(ValueError):
    """This directory cannot become the new quorum; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Survey:
    """What the survivor's log holds and what recovering from it keeps, commits and cannot know."""

    node_id: int
    kraft_version: int
    voters: tuple[int, ...]
    quorum_epoch: int
    start_offset: int
    end_offset: int
    last_epoch: int
    proven_end: int          # the last high watermark the node recorded durably: offsets below are committed
    unproven_records: int    # records from proven_end to end_offset
    unproven_batches: int
    unproven_epochs: tuple[int, int] | None

    def lines(self) -> list[str]:
        kind = "dynamic (KIP-853)" if self.kraft_version >= 1 else "static (controller.quorum.voters)"
        out = [f"Node {self.node_id}: metadata log offsets {self.start_offset} to {self.end_offset - 1} "
               f"(log end {self.end_offset}, last epoch {self.last_epoch}), quorum epoch {self.quorum_epoch}, "
               f"kraft.version {self.kraft_version} {kind}, voters {list(self.voters)}.",
               (f"Committed for certain: every offset below {self.proven_end} (the last high watermark this node "
                "recorded, its latest snapshot; snapshots hold only committed records)." if self.proven_end > 0
                else "Committed for certain: nothing this node can prove (it holds no snapshot beyond offset 0; "
                "snapshots hold only committed records).")]
        if self.unproven_records:
            lo, hi = self.unproven_epochs or (0, 0)
            out.append(f"Not proven committed: offsets {self.proven_end} to {self.end_offset - 1} ({self.unproven_records} "
                       f"records in {self.unproven_batches} batches, epochs {lo}-{hi}): they are kept and the new "
                       "quorum commits them, including any the old quorum never acknowledged.")
        else:
            out.append("Not proven committed: nothing (the log ends at the latest snapshot).")
        out.append(f"May be lost: whatever the old quorum committed from offset {self.proven_end} on that this node "
                   "holds differently or never received; nothing here can tell how much: recover the survivor with "
                   "the longest log.")
        return out


def control_state(log: Any) -> tuple[int, VoterSet | None]:
    """kraft.version and the voter set in force at the end of ``log`` (None: the log names none)."""
    hist = VoterHistory.from_log(log, _SCAN_BYTES)
    latest = hist.latest
    return hist.kraft_version, None if latest is None else latest[1]


def survey(node_id: int, log: Any, saved: ElectionState | None, kraft_version: int,
           voters: tuple[int, ...], faults: RaftFaults = NO_FAULTS) -> Survey:
    """What ``log`` holds, for the report (``faults``: the simulator's deliberate bugs)."""
    sid = log.latest_snapshot_id()
    proven = max(sid.end_offset if sid is not None else 0, log.start_offset)
    end = log.end_offset
    if faults.recovery_claims_log_end:
        proven = max(proven, end)
    records = batches = 0
    epochs: list[int] = []
    offset = proven
    while offset < end:
        got = log.read(offset, _SCAN_BYTES)
        if not got:
            break
        for b in got:
            records += b.next_offset - max(b.base_offset, offset)
            batches += 1
            epochs.append(b.leader_epoch)
        offset = got[-1].next_offset
    return Survey(node_id, kraft_version, voters, saved.epoch if saved else 0, log.start_offset, end,
                  log.last_epoch(), proven, records, batches, (min(epochs), max(epochs)) if epochs else None)


def plan(node_id: int, log: Any, saved: ElectionState | None, static_voters: Iterable[int] = (),
         faults: RaftFaults = NO_FAULTS) -> tuple[Survey, VoterNode | None]:
    """Survey the survivor and check it can become the new quorum; its entry of the voter set in force
    (kraft.version 1) or None (static quorum: the voters are ``static_voters`` and quorum-state's)."""
    kraft_version, in_force = control_state(log)
    dynamic = kraft_version >= 1 and in_force is not None
    me: VoterNode | None = None
    if dynamic:
        assert in_force is not None
        voters = tuple(sorted(in_force.ids))
        me = in_force.get(node_id)
    else:
        voters = tuple(sorted(set(static_voters) | set(saved.voters if saved else ())))
    if node_id not in voters:
        raise RecoveryRefused(f"node {node_id} is not a voter of this quorum (voters {list(voters)}): only a voter's "
                              "log can become the new quorum")
    if voters == (node_id,):
        raise RecoveryRefused(f"node {node_id} is already the only voter: start it as it is")
    return survey(node_id, log, saved, kraft_version, voters, faults), me


def make_single_voter(log: Any, store: Any, found: Survey, me: VoterNode | None, timestamp_ms: int,
                      faults: RaftFaults = NO_FAULTS) -> int:
    """Rewrite the survivor (``plan``'s result) as a one-voter quorum; the new quorum-state epoch."""
    epoch = max(found.quorum_epoch, found.last_epoch) + 1
    if faults.recovery_truncates_unproven and found.proven_end < log.end_offset:
        log.truncate_to(found.proven_end)
    if me is not None:
        alone = VoterSet((VoterNode(me.node_id, me.directory_id, me.endpoints, me.kraft_range),))
        log.append_as_leader([alone.to_record()], epoch, control=True, timestamp_ms=timestamp_ms)
        log.flush()
    store.write(ElectionState(epoch, None, None, frozenset({found.node_id})))
    return epoch
