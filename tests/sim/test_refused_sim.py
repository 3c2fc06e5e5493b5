"""Crashed processes whose connections are refused (``SimConfig.refuse_when_down``): followers stand without
waiting for their fetch timeout (``RaftConfig.refused_standoff_ms``), and every safety invariant holds."""

from __future__ import annotations

from dataclasses import replace

from kraftwire.raft import RaftConfig
from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import FAST_RAFT, SimConfig
from kraftwire.sim.runner import run_seeds

SEEDS = 40


def test_faults_with_refused_connections_keep_every_invariant():
    cfg = SimConfig(voters=3, observers=1, refuse_when_down=True, raft=replace(FAST_RAFT, refused_standoff_ms=100))
    results = list(run_seeds(range(SEEDS), cfg))
    assert [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok] == []
    assert sum(r.committed for r in results) > 100 * SEEDS


def elected_after_crash(seed: int, refuse: bool) -> int:
    """Kafka's default timeouts: ms from the leader's crash to a new leader."""
    cfg = SimConfig(voters=3, observers=0, faults=frozenset(), raft=RaftConfig(), refuse_when_down=refuse,
                    duration_ms=30_000, fault_until_ms=30_000, liveness_bound_ms=1)
    sim = Simulation(seed, cfg)
    sim.start()
    while sim.now < 5000 and sim.step():
        pass
    (old,) = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
    sim.crash(old.node_id)
    t0 = sim.now
    while sim.step():
        if any(n.core is not None and n.core.is_leader for n in sim.nodes.values()):
            return sim.now - t0
    raise AssertionError("no new leader")


def test_a_dead_leader_is_replaced_before_any_fetch_timeout_could_fire():
    shortest = RaftConfig().fetch_timeout_ms // 2        # fetch_timeout_jitter 0.5
    refused = [elected_after_crash(seed, True) for seed in range(20)]
    silent = [elected_after_crash(seed, False) for seed in range(20)]
    assert max(refused) < shortest, refused
    assert min(silent) >= shortest - RaftConfig().fetch_max_wait_ms, silent   # the fetch timeout decides
