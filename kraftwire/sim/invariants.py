"""Safety and liveness invariants, checked after every simulated event.

``committed`` is the global committed log as first observed: offset -> (epoch, record value). Every
node's log below its high watermark must match it; every high watermark only grows (per node
incarnation); a voter wiped and not yet re-joined is counted as holding the committed prefix for the
majority-durability check (it votes for nobody until it has it again, see docs/raft.md).

Snapshots: offsets below a node's log start are held by its snapshot instead. ``digests[k]`` chains
the committed data records below offset k; a replica's state machine reports its own chain (after
commits, after creating or loading a snapshot) and it must equal the global one at that offset, so
a snapshot that lost, reordered or invented a record, or a replica that skipped loading one, is caught.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from kraftwire.protocol.records import RecordBatch
from kraftwire.raft import MemoryLog, SnapshotId

if TYPE_CHECKING:
    from kraftwire.sim.cluster import SimNode, Simulation

Entry = tuple[int, bytes | None]


GENESIS = b"\x00" * 12


class Violation(Exception):
    """An invariant does not hold."""


def chain_digest(prev: bytes, offset: int, epoch: int, value: bytes | None) -> bytes:
    """The state-machine digest after applying one more committed data record."""
    return hashlib.blake2b(prev + struct.pack(">qi", offset, epoch) + (value or b""), digest_size=12).digest()


def batch_at(log: MemoryLog, offset: int) -> RecordBatch | None:
    if offset < log.start_offset or offset >= log.end_offset:
        return None
    i = bisect_right(log._bases, offset) - 1
    return log._batches[i] if i >= 0 else None


def entry_at(log: MemoryLog, offset: int) -> Entry | None:
    batch = batch_at(log, offset)
    if batch is None:
        return None
    rec = batch.records[offset - batch.base_offset]
    return batch.leader_epoch, rec.value


def held(log: MemoryLog, offset: int) -> bool:
    """``offset`` is durably held: in the flushed log or below the log start (in the snapshot)."""
    if offset < log.start_offset:
        latest = log.latest_snapshot_id()
        return latest is not None and latest.end_offset > offset
    return offset < log.flushed_offset


class InvariantChecker:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.committed: list[Entry] = []
        # Per committed offset, an upper bound of the epoch whose leader committed it: the epoch of
        # the node that first saw it below its HW (a follower's HW comes from its current leader),
        # kept non-decreasing along offsets. Leader completeness is about *commit* epochs: an
        # old-epoch entry committed by a later leader need not be in a leader elected before that.
        self.commit_epochs: list[int] = []
        self.leaders: dict[int, int] = {}
        self.leader_since: dict[int, int] = {}   # epoch -> time its leader was first seen
        self.last_hw: dict[int, int | None] = {}
        self.last_epoch: dict[int, int] = {}
        self.max_counter = 0
        self.counter_at_heal: int | None = None
        self.committed_at_heal = 0
        self.majority = len(sim.voter_ids) // 2 + 1
        self._reported: list[tuple[int, list[RecordBatch]]] = []
        self.digests: list[bytes] = [GENESIS]
        self._states: list[tuple[int, str, int, int | None, bytes | None]] = []   # (node, what, end, epoch, digest)
        self.snapshots_created = 0
        self.snapshots_loaded = 0

    # ------------------------------------------------------------------------------ lifecycle
    def on_start(self, node: SimNode) -> None:
        self.last_hw[node.node_id] = None

    def on_crash(self, node: SimNode, wiped: bool) -> None:
        self.last_hw[node.node_id] = None
        if wiped:
            self.last_epoch.pop(node.node_id, None)

    def on_heal(self) -> None:
        self.counter_at_heal = self.sim.append_counter
        self.committed_at_heal = len(self.committed)

    # ------------------------------------------------------------------------------ per event
    def after_event(self, node: SimNode | None) -> None:
        if node is not None and node.core is not None:
            self._check_node(node)
        if self._reported:
            self._check_reported()
        if self._states:
            self._check_states()
        self._check_majority()
        if self.sim.cfg.stable_leader_check:
            self._check_stable_leader()

    def _check_stable_leader(self) -> None:
        """KIP-996: no replica moves past the epoch of a leader that every voter could reach."""
        sim = self.sim
        live = [n for n in sim.nodes.values() if n.core is not None]
        leaders = [n for n in live if n.core is not None and n.core.is_leader]
        if not leaders:
            return
        leader = max(leaders, key=lambda n: n.core.epoch if n.core is not None else -1)
        assert leader.core is not None
        epoch = leader.core.epoch
        since = self.leader_since.get(epoch, sim.now)
        if sim.was_isolated(leader.node_id, since) or self._majority_recently_cut_off(leader.node_id, since):
            return
        for n in live:
            if n.core is not None and n.core.epoch > epoch:
                raise Violation(f"node {n.node_id} moved to epoch {n.core.epoch} while node {leader.node_id}, "
                                f"leader of epoch {epoch} since t={since}, was never cut off (pre-vote broken)")

    def _majority_recently_cut_off(self, leader: int, since: int) -> bool:
        """A majority of voters was cut off from the leader, one after another, recently enough that each may
        still be without a leader it trusts: a voter back from isolation may be prospective and grant the
        pre-vote of the next one cut off (Kafka 4.x grants it too), so the leader's epoch may legitimately end."""
        sim = self.sim
        r = sim.cfg.raft
        window = 2 * (r.fetch_timeout_ms + r.election_timeout_ms)
        cut = {n for n, start, end in sim.isolations
               if n != leader and n in sim.voter_ids and (end < 0 or end >= since) and (end < 0 or sim.now - end <= window)}
        return len(cut) >= len(sim.voter_ids) // 2 + 1

    def _check_node(self, node: SimNode) -> None:
        core = node.core
        assert core is not None
        nid = node.node_id
        saved = node.store.read()
        if saved is None or saved.epoch != core.epoch:
            raise Violation(f"node {nid}: persisted epoch {saved and saved.epoch} != in-memory epoch {core.epoch}")
        prev = self.last_epoch.get(nid)
        if prev is not None and saved.epoch < prev:
            raise Violation(f"node {nid}: persisted epoch went back from {prev} to {saved.epoch}")
        self.last_epoch[nid] = saved.epoch
        if core.is_leader:
            owner = self.leaders.setdefault(core.epoch, nid)
            self.leader_since.setdefault(core.epoch, self.sim.now)
            if owner != nid:
                raise Violation(f"two leaders in epoch {core.epoch}: nodes {owner} and {nid}")
            if owner == nid and not getattr(core, "_sim_checked_leader", False):
                core._sim_checked_leader = True  # type: ignore[attr-defined]
                self._check_leader_completeness(node, core.epoch)
        self.check_hw(node)

    def check_hw(self, node: SimNode) -> None:
        """HW monotonic and within the flushed log; the prefix it newly covers joins ``committed``.

        Also called before a node cleans its log, so that what it committed is observed first.
        """
        core = node.core
        assert core is not None
        nid = node.node_id
        hw = core.hw
        last = self.last_hw.get(nid)
        if last is not None and (hw is None or hw < last):
            raise Violation(f"node {nid}: high watermark decreased from {last} to {hw}")
        if hw is not None:
            if hw > node.log.flushed_offset:
                raise Violation(f"node {nid}: high watermark {hw} above its flushed offset {node.log.flushed_offset}")
            if last is None or hw > last:
                self._check_prefix(node, 0 if last is None else last, hw)
            self.last_hw[nid] = hw
        if last is not None and node.log.end_offset < last:
            raise Violation(f"node {nid}: log truncated to {node.log.end_offset} below its high watermark {last}")

    def _check_prefix(self, node: SimNode, start: int, end: int) -> None:
        log = node.log
        if start < log.start_offset:
            # Below the log start the snapshot holds the prefix; it was checked when it was made.
            covered = min(end, log.start_offset)
            if covered > len(self.committed):
                raise Violation(f"node {node.node_id}: its snapshot covers offsets up to {covered}, "
                                f"beyond the committed {len(self.committed)}")
            start = covered
        for off in range(start, end):
            batch = batch_at(log, off)
            if batch is None:
                raise Violation(f"node {node.node_id}: offset {off} below high watermark {end} missing")
            e = (batch.leader_epoch, batch.records[off - batch.base_offset].value)
            if off < len(self.committed):
                if self.committed[off] != e:
                    raise Violation(f"node {node.node_id}: committed offset {off} is {e} here but "
                                    f"{self.committed[off]} elsewhere")
            else:
                self.committed.append(e)
                seen = node.core.epoch if node.core is not None else 0
                self.commit_epochs.append(max(seen, self.commit_epochs[-1] if self.commit_epochs else 0))
                prev = self.digests[-1]
                self.digests.append(prev if batch.control else chain_digest(prev, off, e[0], e[1]))
                v = e[1]
                if v is not None and v[:1] == b"w":
                    self.max_counter = max(self.max_counter, int(v[1:]))

    def _check_leader_completeness(self, node: SimNode, epoch: int) -> None:
        # Every entry committed by the leader of an earlier epoch must be in a new leader's log.
        n = bisect_left(self.commit_epochs, epoch)
        if n == 0 or n - 1 < node.log.start_offset:
            return  # nothing, or only what its snapshot holds
        if entry_at(node.log, n - 1) != self.committed[n - 1]:
            raise Violation(f"leader {node.node_id} of epoch {epoch} lacks committed offset {n - 1}")

    def _check_majority(self) -> None:
        c = len(self.committed)
        if c == 0:
            return
        want = self.committed[c - 1]
        holders = 0
        for vid in self.sim.voter_ids:
            node = self.sim.nodes[vid]
            if node.rejoining:
                holders += 1
            elif held(node.log, c - 1) and (c - 1 < node.log.start_offset or entry_at(node.log, c - 1) == want):
                holders += 1
        if holders < self.majority:
            raise Violation(f"only {holders} voters durably hold committed offset {c - 1} "
                            f"(majority {self.majority})")

    def on_commit_callback(self, nid: int, batches: list[RecordBatch]) -> None:
        self._reported.append((nid, batches))

    def _check_reported(self) -> None:
        reported, self._reported = self._reported, []
        for nid, batches in reported:
            self._check_batches(nid, batches)

    def _check_batches(self, nid: int, batches: list[RecordBatch]) -> None:
        for b in batches:
            if b.control:
                raise Violation(f"node {nid}: control batch at {b.base_offset} reported as committed data")
            for i, r in enumerate(b.records):
                off = b.base_offset + i
                if off >= len(self.committed) or self.committed[off] != (b.leader_epoch, r.value):
                    raise Violation(f"node {nid}: reported uncommitted or different record at offset {off}")

    # ------------------------------------------------------------------------------ state machines
    def on_state(self, nid: int, what: str, end: int, digest: bytes | None, epoch: int | None = None) -> None:
        """A replica's state machine covers offsets below ``end`` with ``digest`` (checked after the event).

        ``what`` is "commit", "snapshot" (created; ``epoch`` = its epoch) or "load" (handed over by raft).
        A state machine without a digest (the controller) passes None: only the id is checked then.
        """
        if what == "snapshot":
            self.snapshots_created += 1
        elif what == "load":
            self.snapshots_loaded += 1
        self._states.append((nid, what, end, epoch, digest))

    def _check_states(self) -> None:
        states, self._states = self._states, []
        for nid, what, end, epoch, digest in states:
            if end > len(self.committed):
                raise Violation(f"node {nid}: {what} at offset {end} beyond the committed {len(self.committed)}")
            if epoch is not None and end > 0 and self.committed[end - 1][0] != epoch:
                raise Violation(f"node {nid}: {what} {SnapshotId(end, epoch)} but offset {end - 1} "
                                f"has epoch {self.committed[end - 1][0]}")
            if digest is not None and self.digests[end] != digest:
                raise Violation(f"node {nid}: state after {what} up to offset {end} differs from the committed log")

    # ------------------------------------------------------------------------------ end
    def check_first_leader(self) -> None:
        """A fresh quorum with a majority running elects within ``first_leader_within_ms`` of the start."""
        if not self.leaders:
            sim = self.sim
            raise Violation(f"liveness: no leader {sim.cfg.first_leader_within_ms} ms after the start of a fresh "
                            f"quorum ({len(sim.never_started)} of {len(sim.voter_ids)} voters never started)")

    def check_liveness(self) -> None:
        sim = self.sim
        for node in sim.nodes.values():
            if node.core is not None and node.core.hw is not None:
                self._check_prefix(node, 0, node.core.hw)
        leaders = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            raise Violation(f"liveness: no leader {sim.cfg.liveness_deadline - sim.cfg.heal_at} ms after faults healed")
        for node in sim.nodes.values():
            core = node.core
            if core is not None and (core.hw is None or core.hw < self.committed_at_heal):
                raise Violation(f"liveness: node {node.node_id} ({core.state_name}, epoch {core.epoch}) has not "
                                f"replicated what was committed before the heal ({self.committed_at_heal}; "
                                f"its high watermark {core.hw})")
        heal = self.counter_at_heal or 0
        if self.max_counter <= heal:
            raise Violation(f"liveness: no append made after the heal committed within "
                            f"{sim.cfg.liveness_deadline - sim.cfg.heal_at} ms")
