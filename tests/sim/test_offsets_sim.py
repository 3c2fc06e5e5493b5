"""The offsets quorum under faults: the simulator runs the production ``OffsetsMachine`` as every replica's
state machine over a workload of offset commits (crashes, torn writes, wiped disks, partitions, message
loss and reordering, snapshots of the offsets state with log cleaning).

After every event, each live replica's offsets state must equal the replay of the committed log up to
what it applied (so a committed -- acknowledged -- offset is never lost or changed, through snapshots and
restarts on wiped disks); at the end every replica holds the newest committed offset of every partition.
"""

from __future__ import annotations

import pytest

from kraftwire.group.replicated import OffsetsMachine, snapshot_batches, to_raft
from kraftwire.group.store import OffsetRecord, StoreState, decode_record
from kraftwire.protocol.records import RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.sim.cluster import APPEND, Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.invariants import Violation

GROUPS = 3


def replay(entries) -> StoreState:
    state = StoreState()
    for _, value in entries:
        if value is None:
            continue
        try:
            state.apply(decode_record(value))
        except ValueError:   # control records (LeaderChange) are no offsets records
            continue
    return state


class _OffsetsListener:
    def __init__(self, sim: OffsetsSimulation, nid: int) -> None:
        self.sim, self.nid = sim, nid
        self.machine = OffsetsMachine()
        self.since = 0

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        self.sim.checker.on_commit_callback(self.nid, batches)
        self.machine.handle_commit(batches)
        self.since += sum(len(b.records) for b in batches)
        every = self.sim.snapshot_every.get(self.nid)
        if every and self.since >= every:
            self.since = 0
            last = batches[-1]
            sid = SnapshotId(last.next_offset, last.leader_epoch)
            core = self.sim.nodes[self.nid].core
            core.create_snapshot(sid, snapshot_batches(self.machine.state, sid, self.sim.now))
            self.sim.offsets_snapshots += 1
            if self.sim.rng.random() < self.sim.cfg.snapshot_clean_p:
                self.sim.checker.check_hw(self.sim.nodes[self.nid])
                core.delete_before(sid)

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        self.machine.handle_snapshot(end_offset, batches)
        self.sim.offsets_loads += 1

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.machine.handle_leader_change(leader_id, epoch)


class OffsetsSimulation(Simulation):
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        super().__init__(seed, cfg)
        self.listeners: dict[int, _OffsetsListener] = {}
        self.offsets_snapshots = 0
        self.offsets_loads = 0
        self._checked: dict[int, tuple[int, int]] = {}

    def _listener_for(self, nid: int) -> _OffsetsListener:
        listener = self.listeners[nid] = _OffsetsListener(self, nid)
        return listener

    def _append(self):
        lo, hi = self.cfg.append_interval_ms
        self.schedule(self.now + self.rng.randint(lo, hi), APPEND)
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            return None
        node = self.rng.choice(leaders)
        records = []
        for _ in range(self.rng.randint(1, 4)):
            self.append_counter += 1
            n = self.append_counter
            records.append(OffsetRecord(f"g{n % GROUPS}", "t", n % 2, n, -1, f"m{n}", self.now))
        self._run_core(node, lambda c: (c.append(self.now, to_raft(records)), [])[1])
        return node

    def step(self) -> bool:
        more = super().step()
        for nid, node in self.nodes.items():
            listener = self.listeners.get(nid)
            if node.core is None or listener is None:
                continue
            m = listener.machine
            key = (id(listener), m.applied)
            if self._checked.get(nid) == key:
                continue
            self._checked[nid] = key
            want = replay(self.checker.committed[:m.applied])
            # the liveness check counts committed appends by their counter (here: the committed offset)
            self.checker.max_counter = max([self.checker.max_counter, *(r.offset for r in want.offsets.values())])
            if m.state.offsets != want.offsets:
                raise Violation(f"node {nid}: offsets state at {m.applied} differs from the committed log's replay")
        return more

    def final_check(self) -> None:
        want = replay(self.checker.committed).offsets
        for nid, node in self.nodes.items():
            if node.core is None:
                continue
            m = self.listeners[nid].machine
            if m.applied >= len(self.checker.committed) - 8 and node.core.hw == len(self.checker.committed):
                assert m.state.offsets == want, f"node {nid} misses committed offsets"


def run(seed: int, cfg: SimConfig) -> OffsetsSimulation:
    sim = OffsetsSimulation(seed, cfg)
    result = sim.run()
    assert result.ok, (seed, result.violations)
    return sim


@pytest.mark.parametrize("seed", range(6))
def test_offsets_under_every_fault(seed):
    sim = run(seed, SimConfig(voters=3, observers=0, duration_ms=5000, snapshot_records=(8, 40)))
    assert len(sim.checker.committed) > 20
    sim.final_check()


def test_snapshots_of_the_offsets_state_are_taken_and_loaded():
    loads = snaps = 0
    for seed in range(100, 103):
        sim = run(seed, SimConfig(voters=3, observers=0, duration_ms=5000, snapshot_records=(8, 20),
                                  snapshot_clean_p=1.0, faults=frozenset({"crash", "wipe", "partition"})))
        snaps += sim.offsets_snapshots
        loads += sim.offsets_loads
    assert snaps > 0 and loads > 0


def test_a_broken_state_machine_is_caught():
    """Mutation check: a machine that drops every third committed record must be reported."""
    original = OffsetsMachine.handle_commit

    def lossy(self, batches):
        original(self, [RecordBatch(b.base_offset, b.leader_epoch, b.records[:-1])
                        if b.base_offset % 3 == 0 and len(b.records) > 1 else b for b in batches])
        if batches:
            self.applied = batches[-1].next_offset

    OffsetsMachine.handle_commit = lossy
    try:
        found = any(not OffsetsSimulation(seed, SimConfig(voters=3, observers=0, duration_ms=3000,
                                                          snapshot_records=None)).run().ok for seed in range(5))
    finally:
        OffsetsMachine.handle_commit = original
    assert found
