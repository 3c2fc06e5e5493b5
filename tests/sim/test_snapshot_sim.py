"""Snapshots in the simulations: a voter that was down while the others snapshotted and cleaned
their logs catches up with FetchSnapshot (raft state machine and quorum controller alike)."""

from __future__ import annotations

from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import ControllerSimulation
from kraftwire.sim.runner import run_seeds

SCRIPTED = SimConfig(voters=3, observers=1, faults=frozenset(), duration_ms=8000,
                     snapshot_records=(12, 12), snapshot_clean_p=1.0)


def run_until(sim: Simulation, t: int) -> None:
    while sim.now < t and sim.step():
        pass


def standby_voter(sim: Simulation) -> int:
    return next(v for v in sim.voter_ids if sim.nodes[v].core is not None and not sim.nodes[v].core.is_leader)


def test_voter_down_while_others_clean_their_logs_catches_up_with_fetch_snapshot():
    sim = Simulation(5, SCRIPTED)
    sim.start()
    run_until(sim, 1000)
    victim = standby_voter(sim)
    end_at_crash = sim.nodes[victim].log.end_offset
    sim.crash(victim, restart_after=2500)
    run_until(sim, 3400)
    starts = [sim.nodes[v].log.start_offset for v in sim.voter_ids if v != victim]
    assert min(starts) > end_at_crash            # nobody can serve it from the log any more
    downloads = sim.snapshot_downloads
    while sim.step():                            # to the end, liveness included
        pass
    node = sim.nodes[victim]
    assert sim.snapshot_downloads > downloads
    assert node.log.start_offset >= min(starts) and node.log.latest_snapshot_id() is not None
    # It committed past what no log could serve it any more (the leader may just have cleaned further).
    assert node.core.hw is not None and node.core.hw > max(starts)
    # Its state machine (snapshot + log after it) matches the committed log: checked on every commit.
    assert sim.checker.snapshots_loaded >= 1


def test_controller_standby_down_while_others_clean_catches_up_with_fetch_snapshot():
    sim = ControllerSimulation(3, SCRIPTED)
    sim.start()
    run_until(sim, 1500)
    victim = standby_voter(sim)
    sim.crash(victim, restart_after=2500)
    run_until(sim, 4200)
    assert all(sim.nodes[v].log.start_offset > 0 for v in sim.voter_ids if v != victim)
    while sim.step():
        pass
    shell = sim.shells[victim]
    assert shell.snapshots_loaded >= 1 and sim.snapshot_downloads >= 1
    active = next(s for s in sim.shells.values() if s.ctl.active)
    for _ in range(5000):  # the run may end mid-round-trip: step on until both applied the same prefix
        if shell.ctl.committed_offset == active.ctl.committed_offset or not sim.step():
            break
    assert shell.ctl.committed_offset == active.ctl.committed_offset
    assert shell.ctl.committed_image == active.ctl.committed_image
    assert set(shell.ctl.committed_image.topic_ids) >= sim.checker.acked_topics


def test_without_snapshots_the_simulation_still_holds():
    cfg = SimConfig(voters=3, observers=1, snapshot_records=None)
    results = list(run_seeds(range(30), cfg))
    assert [r.violations for r in results if not r.ok] == []
    assert sum(r.snapshots for r in results) == 0
