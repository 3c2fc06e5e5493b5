"""Recovery after losing a majority for good (issue #23 item 5), under faults.

A kraft.version 1 quorum (``ReconfigSimulation``: nodes 1..V formatted with their voter set, spares 101..
without) runs with the usual faults (no voter changes yet). At a drawn time every voter but one — the
survivor, drawn too — is lost for good (process and disk), and the survivor is stopped. The survivor's
directory goes through the same pure code ``kraftwire storage recover-as-single-voter`` runs
(``kraftwire.raft.recovery``: ``plan`` then ``make_single_voter``); the spares are re-formatted empty (as
the tool tells the operator), the survivor restarts, and the admin adds voters back with AddRaftVoter
(and sometimes removes one) while the faults go on until the heal.

Invariants, on top of the voter-change ones (``ReconfigChecker``), checked from the recovery on by a
checker whose committed log starts as the survivor's whole log before the rewrite:

* the report: "committed for certain" ends exactly at the last high watermark the survivor recorded
  durably (the end of the newest snapshot it created or loaded, or its log start), everything below it was
  committed by the old quorum as the survivor holds it, the records reported unproven are exactly the
  survivor's records from there on, and every record the old quorum committed that the new one does not
  keep lies at or above that boundary (what the report says may be lost);
* the recovered quorum's log is a prefix-extension of the survivor's: every node's log below its high
  watermark equals the survivor's log wherever that had a record;
* nothing committed after the recovery is lost: majority durability under every voter set in force from
  the recovery on, leader completeness, monotonic high watermarks, and after the heal a leader that
  commits new appends with every live node caught up;
* the voters come back: after the heal the admin only adds, and by the end the quorum has as many voters
  as before the loss (or the survivor and every spare, if there are fewer spares).
"""

from __future__ import annotations

from typing import Any

from kraftwire.raft.recovery import Survey, make_single_voter, plan
from kraftwire.raft.voter_set import VoterSet
from kraftwire.sim.cluster import RESTART, SimNode
from kraftwire.sim.config import SimConfig
from kraftwire.sim.invariants import InvariantChecker, Violation, batch_at, chain_digest
from kraftwire.sim.reconfig_sim import CHANGE, ReconfigChecker, ReconfigSimulation

LOSS = 200


class RecoverySimulation(ReconfigSimulation):
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        super().__init__(seed, cfg)
        self.checker = KnownHwChecker(self)
        self.loss_at = self.rng.randint(cfg.heal_at // 4, cfg.heal_at // 2)
        self.survivor: int | None = None
        self.lost: set[int] = set()
        self.survey: Survey | None = None
        self.known_hw: dict[int, int] = {}   # node -> end of the newest snapshot it created or loaded
        self.kept_unproven = 0               # records kept from the boundary on
        self.old_committed_lost = 0          # records the old quorum committed that the new one does not keep
        self.lost_inside_log = 0             # of those, offsets the survivor held with another record
        self.hw_above_boundary = 0           # how far the survivor's in-memory HW was above the boundary
        self.adds_after_recovery = 0
        self.target = min(len(self.voter_ids), 1 + len(self.observer_ids))   # voters the admin brings back

    def start(self) -> None:
        super().start()
        self.schedule(self.loss_at, LOSS)

    def _dispatch(self, kind: int, payload: Any) -> Any:
        if kind == LOSS:
            self._lose_majority()
            return None
        if kind == CHANGE and self.healed and self.survivor is not None and len(self._voters_now()) < self.target:
            self.schedule(self.now + self.rng.randint(150, 600), CHANGE)   # the admin goes on until all are back
        return super()._dispatch(kind, payload)

    def _voters_now(self) -> tuple[int, ...]:
        """The voter set of the newest leader (empty: none)."""
        leaders = [n.core for n in self.nodes.values() if n.core is not None and n.core.is_leader]
        return max(leaders, key=lambda c: c.epoch).voters if leaders else ()

    def _admin_pick(self, voters: set[int]) -> tuple[bool, int] | None:
        if self.survivor is None:
            return None   # the old quorum runs as formatted
        outside = [i for i in self.nodes if i not in voters and i not in self.lost]
        if outside and (len(voters) < self.target or self.rng.random() < 0.5):
            return True, self.rng.choice(outside)
        if len(voters) > 1 and not self.healed and self.rng.random() < 0.3:
            return False, self.rng.choice(sorted(voters))
        return None

    def _route(self, node: Any, outputs: list[Any]) -> None:
        before = self.changes_ok
        super()._route(node, outputs)
        if self.survivor is not None:
            self.adds_after_recovery += self.changes_ok - before

    def summary(self) -> dict[str, int]:
        """What the recovery kept and lost, and how far the voters grew back (empty before the loss)."""
        if self.survey is None:
            return {}
        return {"survivor": self.survivor or 0, "boundary": self.survey.proven_end,
                "log_end": self.survey.end_offset, "kept_unproven": self.kept_unproven,
                "old_committed_lost": self.old_committed_lost, "lost_inside_log": self.lost_inside_log,
                "hw_above_boundary": self.hw_above_boundary,
                "adds_after_recovery": self.adds_after_recovery}

    # ------------------------------------------------------------------------------ the loss and the tool
    def _stop(self, nid: int) -> SimNode:
        node = self.nodes[nid]
        if node.core is not None:
            self.crash(nid, "crash")
        else:
            node.incarnation += 1   # a restart already scheduled never happens
        node.log.fail_next = node.store.fail_next = False
        return node

    def _lose_majority(self) -> None:
        old = self.checker
        self.survivor = s = self.rng.choice(self.voter_ids)
        up = self.nodes[s].core
        hw_at_loss = up.hw if up is not None else None
        for nid in self.voter_ids:
            node = self._stop(nid)
            if nid != s:
                self.lost.add(nid)
                self.never_started.add(nid)
                node.log.wipe()
                node.store.wipe()
        node = self.nodes[s]
        log = node.log
        start = log.start_offset
        before = [(off, batch_at(log, off)) for off in range(start, log.end_offset)]
        found, me = plan(s, log, node.store.read(), faults=self.bugs)
        self._check_report(found, node, old, hw_at_loss)
        make_single_voter(log, node.store, found, me, self.now, faults=self.bugs)
        self.survey = found
        for nid in self.observer_ids:   # spares: formatted again on empty directories, started again
            spare = self._stop(nid)
            spare.log.wipe()
            spare.store.wipe()
            self.known_hw.pop(nid, None)
            self.schedule(self.now + self.rng.randint(20, 400), RESTART, (nid, spare.incarnation))
        self.checker = RecoveryChecker(self, old, start, before, log.end_offset - 1, me)
        self.schedule(self.now + self.rng.randint(20, 300), RESTART, (s, node.incarnation))

    def _check_report(self, found: Survey, node: SimNode, old: InvariantChecker, hw_at_loss: int | None) -> None:
        log = node.log
        boundary = max(self.known_hw.get(node.node_id, 0), log.start_offset)
        if found.proven_end != boundary:
            raise Violation(f"recovery of node {node.node_id}: reports offsets below {found.proven_end} committed, "
                            f"but the last high watermark it recorded durably is {boundary}")
        if hw_at_loss is not None and hw_at_loss < boundary:
            raise Violation(f"recovery of node {node.node_id}: its snapshot ends at {boundary}, above its high "
                            f"watermark {hw_at_loss}")
        self.hw_above_boundary = max(0, (hw_at_loss or boundary) - boundary)
        if found.proven_end > len(old.committed):
            raise Violation(f"recovery of node {node.node_id}: reports offsets below {found.proven_end} committed, "
                            f"the old quorum committed {len(old.committed)}")
        for off in range(log.start_offset, min(found.proven_end, log.end_offset)):
            b = batch_at(log, off)
            assert b is not None
            if (b.leader_epoch, b.records[off - b.base_offset].value) != old.committed[off]:
                raise Violation(f"recovery of node {node.node_id}: offset {off} is reported committed but the old "
                                f"quorum committed {old.committed[off]} there")
        unproven = max(0, log.end_offset - found.proven_end)
        if found.unproven_records != unproven:
            raise Violation(f"recovery of node {node.node_id}: reports {found.unproven_records} unproven records, "
                            f"its log holds {unproven} from offset {found.proven_end}")
        self.kept_unproven = unproven
        lost = []
        for off, entry in enumerate(old.committed):
            b = batch_at(log, off) if off >= log.start_offset else None
            if off >= log.start_offset and (b is None or (b.leader_epoch, b.records[off - b.base_offset].value) != entry):
                lost.append(off)
        if lost and lost[0] < found.proven_end:
            raise Violation(f"recovery of node {node.node_id}: committed offset {lost[0]} is lost, below the "
                            f"boundary {found.proven_end} the report calls committed for certain")
        self.old_committed_lost = len(lost)
        self.lost_inside_log = sum(1 for off in lost if off < log.end_offset)   # held differently, not missing


class KnownHwChecker(ReconfigChecker):
    """Also records, per node, the end of the newest snapshot it created or loaded: the last high watermark
    it knows durably (``RecoverySimulation.known_hw``)."""

    def on_state(self, nid: int, what: str, end: int, digest: bytes | None, epoch: int | None = None) -> None:
        super().on_state(nid, what, end, digest, epoch)
        if what in ("snapshot", "load"):
            known = self.sim.known_hw   # type: ignore[attr-defined]
            known[nid] = max(known.get(nid, 0), end)


class RecoveryChecker(KnownHwChecker):
    """The voter-change invariants from the recovery on, over a committed log seeded with the survivor's log."""

    def __init__(self, sim: RecoverySimulation, old: InvariantChecker, start: int,
                 before: list[tuple[int, Any]], floor: int, me: Any) -> None:
        super().__init__(sim)
        self.floor = floor                     # where the recovery's VotersRecord went (the survivor's log end)
        self.recovered = frozenset({sim.survivor}) if me is None else VoterSet((me,)).ids
        self.committed = list(old.committed[:start])
        self.commit_epochs = [0] * len(self.committed)
        self.digests = list(old.digests[:start + 1])
        for off, b in before:
            entry = (b.leader_epoch, b.records[off - b.base_offset].value)
            self.committed.append(entry)
            self.commit_epochs.append(0)
            prev = self.digests[-1]
            self.digests.append(prev if b.control else chain_digest(prev, off, entry[0], entry[1]))

    def _history(self, node: Any) -> tuple[tuple[int, VoterSet], ...]:
        """Only the voter sets from the recovery on. A set read from a snapshot (offset -1) is one of them when
        the node's snapshot ends past the recovery's VotersRecord and its log after the snapshot does not reach
        back to that record."""
        entries = node.core.history.entries
        logged = [off for off, _ in entries if off >= 0]
        sid = node.log.latest_snapshot_id()
        snapshot_after = (not logged or logged[0] > self.floor) and sid is not None and sid.end_offset > self.floor
        return tuple((off, vs) for off, vs in entries if off >= self.floor or (off < 0 and snapshot_after))

    def _sets_before_any(self) -> list[frozenset[int]]:
        return [self.recovered]

    def check_liveness(self) -> None:
        super().check_liveness()
        sim = self.sim
        voters = sim._voters_now()   # type: ignore[attr-defined]
        if len(voters) < sim.target:   # type: ignore[attr-defined]
            raise Violation(f"liveness: the recovered quorum has voters {list(voters)} "
                            f"{sim.cfg.liveness_deadline - sim.cfg.heal_at} ms after the heal; the admin adds "
                            f"voters back until it has {sim.target}")   # type: ignore[attr-defined]
