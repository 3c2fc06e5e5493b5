"""Safety and liveness invariants, checked after every simulated event.

``committed`` is the global committed log as first observed: offset -> (epoch, record value). Every
node's log below its high watermark must match it; every high watermark only grows (per node
incarnation); a voter wiped and not yet re-joined is counted as holding the committed prefix for the
majority-durability check (it votes for nobody until it has it again, see docs/raft.md).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from kraftwire.protocol.records import RecordBatch
from kraftwire.raft.memory import MemoryLog

if TYPE_CHECKING:
    from kraftwire.sim.cluster import SimNode, Simulation

Entry = tuple[int, bytes | None]


class Violation(Exception):
    """An invariant does not hold."""


def entry_at(log: MemoryLog, offset: int) -> Entry | None:
    bases = log._bases
    i = bisect_right(bases, offset) - 1
    if i < 0 or offset >= log.end_offset:
        return None
    batch = log._batches[i]
    rec = batch.records[offset - batch.base_offset]
    return batch.leader_epoch, rec.value


class InvariantChecker:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.committed: list[Entry] = []
        self.committed_epochs: list[int] = []
        self.leaders: dict[int, int] = {}
        self.last_hw: dict[int, int | None] = {}
        self.last_epoch: dict[int, int] = {}
        self.max_counter = 0
        self.counter_at_heal: int | None = None
        self.majority = len(sim.voter_ids) // 2 + 1
        self._reported: list[tuple[int, list[RecordBatch]]] = []

    # ------------------------------------------------------------------------------ lifecycle
    def on_start(self, node: SimNode) -> None:
        self.last_hw[node.node_id] = None

    def on_crash(self, node: SimNode, wiped: bool) -> None:
        self.last_hw[node.node_id] = None
        if wiped:
            self.last_epoch.pop(node.node_id, None)

    def on_heal(self) -> None:
        self.counter_at_heal = self.sim.append_counter

    # ------------------------------------------------------------------------------ per event
    def after_event(self, node: SimNode | None) -> None:
        if node is not None and node.core is not None:
            self._check_node(node)
        if self._reported:
            self._check_reported()
        self._check_majority()

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
            if owner != nid:
                raise Violation(f"two leaders in epoch {core.epoch}: nodes {owner} and {nid}")
            if owner == nid and not getattr(core, "_sim_checked_leader", False):
                core._sim_checked_leader = True  # type: ignore[attr-defined]
                self._check_leader_completeness(node, core.epoch)
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
        for off in range(start, end):
            e = entry_at(log, off)
            if e is None:
                raise Violation(f"node {node.node_id}: offset {off} below high watermark {end} missing")
            if off < len(self.committed):
                if self.committed[off] != e:
                    raise Violation(f"node {node.node_id}: committed offset {off} is {e} here but "
                                    f"{self.committed[off]} elsewhere")
            else:
                self.committed.append(e)
                self.committed_epochs.append(e[0])
                v = e[1]
                if v is not None and v[:1] == b"w":
                    self.max_counter = max(self.max_counter, int(v[1:]))

    def _check_leader_completeness(self, node: SimNode, epoch: int) -> None:
        # Every entry committed in an earlier epoch must be in a new leader's log.
        n = bisect_left(self.committed_epochs, epoch)
        if n == 0:
            return
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
            elif node.log.flushed_offset >= c and entry_at(node.log, c - 1) == want:
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

    # ------------------------------------------------------------------------------ end
    def check_liveness(self) -> None:
        sim = self.sim
        for node in sim.nodes.values():
            if node.core is not None and node.core.hw is not None:
                self._check_prefix(node, 0, node.core.hw)
        leaders = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            raise Violation(f"liveness: no leader {sim.cfg.liveness_deadline - sim.cfg.heal_at} ms after faults healed")
        heal = self.counter_at_heal or 0
        if self.max_counter <= heal:
            raise Violation(f"liveness: no append made after the heal committed within "
                            f"{sim.cfg.liveness_deadline - sim.cfg.heal_at} ms")
