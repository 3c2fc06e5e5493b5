"""Pre-vote (KIP-996) in the simulator: a replica that was cut off cannot depose a healthy leader.

The regression behind it: without pre-vote an isolated follower stood again and again, raising its
epoch (13 -> 27 on a real cluster), and its first Vote request after the partition healed deposed
the working leader.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import FAST_RAFT, SimConfig
from kraftwire.sim.runner import run_seeds

CI_SEEDS = 60
ISOLATE = frozenset({"isolate"})


def run_until(sim: Simulation, t: int) -> None:
    while sim.now < t and sim.step():
        pass


def leader_of(sim: Simulation) -> tuple[int, int]:
    (node,) = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
    return node.node_id, node.core.epoch


def isolate_a_follower_and_rejoin(pre_vote: bool) -> tuple[tuple[int, int], tuple[int, int], int, Simulation]:
    """(leader, epoch) before, after, and the epoch the cut-off follower reached while alone."""
    cfg = SimConfig(voters=3, observers=0, faults=frozenset(), duration_ms=12000,
                    raft=replace(FAST_RAFT, pre_vote=pre_vote))
    sim = Simulation(11, cfg)
    sim.start()
    run_until(sim, 1500)
    before = leader_of(sim)
    victim = next(v for v in sim.voter_ids if v != before[0])
    pairs = {(victim, o) for o in sim.voter_ids if o != victim} | {(o, victim) for o in sim.voter_ids if o != victim}
    sim.blocked.update(pairs)
    run_until(sim, 1500 + 20 * cfg.raft.election_timeout_ms)   # 20 election timeouts alone
    alone_epoch = sim.nodes[victim].core.epoch
    sim.blocked.difference_update(pairs)
    run_until(sim, 1500 + 20 * cfg.raft.election_timeout_ms + 3000)
    return before, leader_of(sim), alone_epoch, sim


def test_isolated_follower_that_rejoins_cannot_depose_a_healthy_leader():
    before, after, alone_epoch, sim = isolate_a_follower_and_rejoin(pre_vote=True)
    assert after == before                      # same leader, same epoch
    assert alone_epoch == before[1]             # pre-votes fail alone: no epoch bump at all
    leader = sim.nodes[before[0]]
    for v in sim.voter_ids:                     # the cut-off follower caught up again
        assert sim.nodes[v].core.epoch == before[1]
        assert sim.nodes[v].core.hw is not None and sim.nodes[v].core.hw >= leader.core.hw - 8


def test_without_pre_vote_the_rejoining_follower_deposes_the_leader():
    # Kafka 3.9's behaviour, the regression itself: proves the scenario above discriminates.
    before, after, alone_epoch, _ = isolate_a_follower_and_rejoin(pre_vote=False)
    assert alone_epoch > before[1] + 5
    assert after[1] > before[1]


@pytest.mark.parametrize("voters,observers", [(3, 1), (5, 1)])
def test_isolations_never_depose_a_leader_that_was_never_cut_off(voters, observers):
    cfg = SimConfig(voters=voters, observers=observers, faults=ISOLATE, duration_ms=8000)
    results = list(run_seeds(range(CI_SEEDS), cfg))
    assert [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok] == []
    assert sum(r.committed for r in results) > 100 * CI_SEEDS


def test_broken_pre_vote_is_caught_by_the_stable_leader_check():
    # Mutation: a replica whose pre-vote is lost stands anyway (bumps the epoch), as without pre-vote.
    cfg = SimConfig(voters=3, observers=0, faults=ISOLATE, duration_ms=8000, bugs=frozenset({"prevote_lost_stands"}))
    for result in run_seeds(range(CI_SEEDS), cfg):
        if not result.ok:
            assert "pre-vote broken" in result.violations[0] and "--bugs prevote_lost_stands" in result.repro
            return
    pytest.fail(f"a broken pre-vote survived {CI_SEEDS} seeds")


@pytest.mark.parametrize("old", [frozenset({3}), frozenset({2, 3})])
def test_mixed_quorum_with_voters_without_pre_vote_still_elects_under_faults(old):
    # Voters at Vote v1 (Kafka 3.9) get no pre-vote: the prospective stands at once (Kafka 4.x).
    cfg = SimConfig(voters=3, observers=1, old_vote_nodes=old)
    results = list(run_seeds(range(40), cfg))
    assert [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok] == []
    assert sum(r.committed for r in results) > 100 * 40
