"""The offsets quorum under faults: every voter runs the production node core with the production group
role (``core/group_role.py``) over the production ``OffsetsMachine``; clients send OffsetCommit requests to
random voters (crashes, torn writes, wiped disks, partitions, message loss and reordering, snapshots of the
offsets state with log cleaning: the production path, the group role's ``OffsetsSnapshotter`` making the node
core emit ``TakeSnapshot``, framed here inline and handed back to ``snapshot_framed``).

After every event, each live replica's offsets state must equal the replay of the committed log up to
what it applied (so a committed offset is never lost or changed, through snapshots and restarts on wiped
disks); every OffsetCommit answered without error is in the committed log when the answer leaves; at the
end every replica holds the newest committed offset of every partition.
"""

from __future__ import annotations

import pytest

from kraftwire.core.group_role import GroupRole
from kraftwire.core.node_core import NodeCore, Respond, TakeSnapshot
from kraftwire.group import GroupConfig
from kraftwire.group.replicated import OffsetsMachine, OffsetsSnapshotter
from kraftwire.group.store import OffsetRecord, StoreState, decode_record
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.records import RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.sim.cluster import APPEND, SimNode, Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.groups_sim import OffsetsListener, offsets_records
from kraftwire.sim.invariants import Violation
from kraftwire.sim.wire import raft_door

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


class _SimSnapshotter(OffsetsSnapshotter):
    """The production policy; whether the log is cleaned below a stored snapshot is the simulator's fault
    choice (``snapshot_clean_p``), so replicas also keep logs that reach below their snapshot."""

    def __init__(self, sim: OffsetsSimulation, machine: OffsetsMachine, min_records: int) -> None:
        super().__init__(machine, min_records)
        self.sim = sim

    def stored(self, sid: SnapshotId) -> None:
        super().stored(sid)
        if self.sim.rng.random() >= self.sim.cfg.snapshot_clean_p:
            self.cleaned(self.sim.now)


class OffsetsSimulation(Simulation):
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        super().__init__(seed, cfg)
        self.listeners: dict[int, OffsetsListener] = {}
        self.offsets_snapshots = 0
        self.offsets_loads = 0
        self._checked: dict[int, tuple[int, int]] = {}
        self.commits: dict[int, tuple[str, int]] = {}     # request id -> (group, partition) it commits
        self.answers: dict[int, int] = {}                 # error code -> answers
        self._commit_index: set[tuple[str, int, int]] = set()
        self._indexed = 0
        self._acked: list[tuple[int, int]] = []           # (responder, request id) answered without error

    def _loaded(self) -> None:
        self.offsets_loads += 1

    def _listener_for(self, nid: int) -> OffsetsListener:
        listener = self.listeners[nid] = OffsetsListener(self, nid, self._loaded)
        return listener

    def _node_core(self, nid: int, core) -> NodeCore:
        """The production node core and group role, over this incarnation's offsets machine."""
        config = GroupConfig(partition_exists=lambda topic, partition: topic == "t")
        machine = self.listeners[nid].machine
        every = self.snapshot_every.get(nid)
        snapshotter = _SimSnapshotter(self, machine, every) if every else None
        return NodeCore(core, groups=GroupRole(nid, config, machine=machine, snapshotter=snapshotter),
                        door=raft_door(), raft_apis=self.raft_apis())

    def _on_take_snapshot(self, node: SimNode, out: TakeSnapshot) -> None:
        """Frame the group role's due snapshot inline and hand it back (the server frames it in a thread)."""
        sid = out.job.sid
        self.checker.check_hw(node)   # observe the committed prefix before the node core may clean below it
        batches = out.job.frame()
        self._run_core(node, lambda c: c.snapshot_framed(self.now, sid, batches))
        if node.core is not None and node.core.log.latest_snapshot_id() == sid:
            self.offsets_snapshots += 1

    def _append(self):
        """A client's OffsetCommit to a voter: mostly the one it found coordinating, sometimes another."""
        lo, hi = self.cfg.append_interval_ms
        self.schedule(self.now + self.rng.randint(lo, hi), APPEND)
        up = [n for n in self.nodes.values() if n.core is not None and n.is_voter]
        if not up:
            return None
        leaders = [n for n in up if n.core.is_leader]
        node = self.rng.choice(leaders if leaders and self.rng.random() < 0.8 else up)
        self.append_counter += 1
        n = self.append_counter
        commit = ocq.OffsetCommitRequest(group_id=f"g{n % GROUPS}", generation_id_or_member_epoch=-1, topics=[
            ocq.OffsetCommitRequestTopic(name="t", partitions=[
                ocq.OffsetCommitRequestPartition(partition_index=n % 2, committed_offset=n,
                                                 committed_metadata=f"m{n}")])])
        self.commits[n] = (f"g{n % GROUPS}", n % 2)
        self._run_core(node, lambda c: c.submit_group(self.now, n, 8, 8, commit, "client", "host"))
        return node

    def _on_respond(self, node, out: Respond) -> None:
        error = out.body.topics[0].partitions[0].error_code
        self.answers[error] = self.answers.get(error, 0) + 1
        if error:
            return
        self._acked.append((node.node_id, out.request_id))   # checked once the checker has seen this event

    def _check_acks(self) -> None:
        committed = self._committed_commits()
        for nid, n in self._acked:
            group, partition = self.commits[n]
            if (group, partition, n) not in committed:
                raise Violation(f"node {nid} acknowledged OffsetCommit {n} of {group}-{partition} "
                                "before it was committed")
        self._acked.clear()

    def _committed_commits(self) -> set[tuple[str, int, int]]:
        entries = self.checker.committed
        for _, r in offsets_records(entries, self._indexed):
            if isinstance(r, OffsetRecord):
                self._commit_index.add((r.group_id, r.partition, r.offset))
        self._indexed = len(entries)
        return self._commit_index

    def step(self) -> bool:
        more = super().step()
        if self._acked:
            self._check_acks()
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
    assert sim.answers.get(0, 0) > 10 and sim.answers.get(int(Errors.NOT_COORDINATOR), 0) > 0, sim.answers
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
                        if b.base_offset % 3 == 0 else b for b in batches])
        if batches:
            self.applied = batches[-1].next_offset

    OffsetsMachine.handle_commit = lossy
    try:
        found = any(not OffsetsSimulation(seed, SimConfig(voters=3, observers=0, duration_ms=3000,
                                                          snapshot_records=None)).run().ok for seed in range(5))
    finally:
        OffsetsMachine.handle_commit = original
    assert found


def test_a_group_role_answering_before_the_commit_is_caught(monkeypatch):
    """Mutation check: a group role that answers as soon as the coordinator wrote must be reported."""
    def eager(self, answers):
        for req, resp in answers:
            req.answer(resp)

    monkeypatch.setattr(GroupRole, "_after_write", eager)
    violations = [v for seed in range(5) for v in OffsetsSimulation(seed, SimConfig(
        voters=3, observers=0, duration_ms=3000, snapshot_records=None)).run().violations]
    assert any("before it was committed" in v for v in violations), violations


def test_a_snapshot_that_loses_an_offset_is_caught(monkeypatch):
    """Mutation check: the production snapshot path framing a state without one of its offsets must be
    reported (a replica loading it, or replaying after it, differs from the committed log)."""
    from kraftwire.group.replicated import OffsetsSnapshotJob, snapshot_batches

    def lossy(self):
        state = self.state.copy()
        if state.offsets:
            state.offsets.pop(next(iter(state.offsets)))
        return snapshot_batches(state, self.sid, self.timestamp_ms)

    monkeypatch.setattr(OffsetsSnapshotJob, "frame", lossy)
    assert any(not OffsetsSimulation(seed, SimConfig(
        voters=3, observers=0, duration_ms=5000, snapshot_records=(8, 20), snapshot_clean_p=1.0,
        faults=frozenset({"crash", "wipe", "partition"}))).run().ok for seed in range(100, 103))
