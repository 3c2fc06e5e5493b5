"""Fresh quorums with machines missing elect (docs/raft.md, *Fresh quorums*): a voter on an empty directory
takes part once a majority, itself included, answered with no history, and its election timer runs from its
own start. Both sides have a mutation test: ignoring the peers' history loses committed data (wiped voters,
caught by the safety invariants); waiting for every voter never elects (caught by the first-leader check)."""

from __future__ import annotations

import pytest

from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import FAST_RAFT, SimConfig
from kraftwire.sim.runner import run_seed, run_seeds

SEEDS = 60
T = FAST_RAFT.election_timeout_ms            # timers are drawn in [T, 2T)
# Every running voter's timer has fired by 2T; one split vote costs a candidate's timeout and a backoff.
FIRST_LEADER_BOUND = 2 * (2 * T) + FAST_RAFT.election_backoff_max_ms


def fresh(voters: int, missing: int, **kw) -> SimConfig:
    settings = {"faults": frozenset(), "duration_ms": 2000, "first_leader_within_ms": FIRST_LEADER_BOUND, **kw}
    return SimConfig(voters=voters, never_started=missing, **settings)


@pytest.mark.parametrize("voters,missing", [(3, 1), (5, 1), (5, 2)])
def test_fresh_quorum_with_f_voters_never_started_elects(voters, missing):
    results = list(run_seeds(range(SEEDS), fresh(voters, missing)))
    assert [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok] == []
    firsts = sorted(r.first_leader_ms for r in results)
    assert firsts[-1] <= FIRST_LEADER_BOUND
    assert firsts[len(firsts) // 2] < 2 * T   # most elect at the first timer that fires
    assert all(r.committed > 100 for r in results)


def test_majority_missing_never_elects():
    # 2 of 3 never started: the one running voter must not elect itself (a majority never answered).
    r = run_seed(0, fresh(3, 2))
    assert not r.ok and "liveness: no leader" in r.violations[0] and r.first_leader_ms is None


def test_election_timer_runs_from_each_voters_own_start():
    # Voters start up to 3 s apart. A voter whose timer ran out while it waited for a majority stands the
    # moment the majority is there: the first leader comes well within one election timeout of the last
    # check that completed (a timer started at that check could not fire before T).
    gaps = []
    for seed in range(SEEDS):
        sim = Simulation(seed, fresh(3, 1, start_spread_ms=3000, duration_ms=8000,
                                     first_leader_within_ms=3000 + 2 * FIRST_LEADER_BOUND))
        result = sim.run()
        assert result.ok, result.violations
        live = [v for v in sim.voter_ids if v not in sim.never_started]
        first, second = sorted(sim.started_at[v] for v in live)
        checked = max(sim.rejoined_at[v] for v in live)
        # The first voter's timer ran out before the second started, and both checks were done before the
        # second voter's own timer could fire (else the two may stand together: a split vote).
        if second - first >= 2 * T and checked + T // 4 <= second + T:
            gaps.append(result.first_leader_ms - checked)
    assert len(gaps) >= 10
    assert max(gaps) < T // 4, gaps


def test_wiped_voters_stay_safe():
    # Wipes among the faults (the simulator never leaves a majority without history: the fault model).
    results = list(run_seeds(range(SEEDS), SimConfig(voters=3, faults=frozenset({"wipe", "crash", "partition",
                                                                                   "drop", "delay"}))))
    assert [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok] == []


def test_mutation_ignoring_peers_history_is_caught_by_the_safety_invariants():
    cfg = SimConfig(voters=3, bugs=frozenset({"rejoin_ignores_history"}))
    for result in run_seeds(range(100), cfg):
        if not result.ok:
            assert "liveness" not in result.violations[0], result.violations[0]
            return
    pytest.fail("rejoin_ignores_history survived 100 seeds")


@pytest.mark.parametrize("voters,missing", [(3, 1), (5, 2)])
def test_mutation_waiting_for_every_voter_is_caught_by_the_first_leader_check(voters, missing):
    r = run_seed(0, fresh(voters, missing, bugs=frozenset({"rejoin_waits_for_all"})))
    assert not r.ok and "liveness: no leader" in r.violations[0]
    assert run_seed(0, fresh(voters, missing)).ok


def test_wipe_fault_keeps_the_proviso():
    # Voters 1 and 2 took part (epoch 1), voter 3 never did: wiping 1 or 2 would leave a majority without a
    # history, which no rule can tell from a fresh quorum (docs/raft.md); wiping 3 loses nothing.
    from kraftwire.raft import ElectionState

    sim = Simulation(0, SimConfig(voters=3, faults=frozenset()))
    for v, epoch in ((1, 1), (2, 1), (3, 0)):
        sim.nodes[v].store.write(ElectionState(epoch=epoch, leader_id=None, voted_id=None, voters=frozenset({1, 2, 3})))
    assert not sim._history_survives_wipe(1) and not sim._history_survives_wipe(2)
    assert sim._history_survives_wipe(3) and sim._history_survives_wipe(101)
    sim.nodes[3].store.write(ElectionState(epoch=1, leader_id=1, voted_id=None, voters=frozenset({1, 2, 3})))
    assert all(sim._history_survives_wipe(v) for v in (1, 2, 3))
    for v in (1, 2, 3):   # nobody has a history: a wipe forgets nothing
        sim.nodes[v].store.write(ElectionState(epoch=0, leader_id=None, voted_id=None, voters=frozenset({1, 2, 3})))
    assert all(sim._history_survives_wipe(v) for v in (1, 2, 3))


def test_beyond_the_proviso_no_rule_can_be_safe(monkeypatch: pytest.MonkeyPatch):
    # The wipe fault allowed to leave a majority without history: a wiped voter and one that never took part
    # look like a fresh quorum to each other and elect, and the commits only the third voter held are lost
    # (about 1 seed in 30; seed 33 since elections and truncations make their logs durable off the loop).
    # The fresh-quorum liveness above and this safety cannot both hold (docs/raft.md).
    monkeypatch.setattr(Simulation, "_history_survives_wipe", lambda self, nid: True)
    r = Simulation(33, SimConfig(voters=3, faults=frozenset({"wipe", "crash", "partition", "isolate"}))).run()
    assert r.violations and "durably hold committed offset" in r.violations[0], r.violations


def test_cli_fresh_quorum_flags(capsys: pytest.CaptureFixture[str]):
    from kraftwire.cli.main import main

    args = ["simulate", "--seeds", "2", "--voters", "3", "--faults", "none", "--duration-ms", "1500",
            "--first-leader-within-ms", str(FIRST_LEADER_BOUND)]
    assert main([*args, "--never-started", "1"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "seeds=2 violations=0"
    assert main([*args, "--never-started", "2"]) == 1
    out = capsys.readouterr().out
    assert "liveness: no leader" in out and "--never-started 2 --first-leader-within-ms" in out
    assert main([*args, "--never-started", "3"]) == 2
    assert "--never-started must be between 0 and 2" in capsys.readouterr().err
