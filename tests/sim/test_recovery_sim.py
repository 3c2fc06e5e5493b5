"""Recovery after losing a majority for good (kraftwire.sim.recovery_sim): the survivor goes through the pure
code of ``kraftwire storage recover-as-single-voter`` and voters are added back under faults."""

from __future__ import annotations

import pytest

from kraftwire.sim.config import SimConfig
from kraftwire.sim.recovery_sim import RecoverySimulation
from kraftwire.sim.runner import run_seed

CFG = SimConfig(recovery=True, observers=2)


def _run(seeds: range, cfg: SimConfig) -> list[dict[str, int]]:
    out = []
    for seed in seeds:
        sim = RecoverySimulation(seed, cfg)
        r = sim.run()
        assert r.ok, (r.violations, run_seed(seed, cfg).repro)
        out.append(sim.summary())
    return out


def test_a_survivor_becomes_the_quorum_and_voters_come_back_under_faults() -> None:
    runs = _run(range(25), CFG)
    assert all(s for s in runs)                                   # every seed lost its majority and recovered
    assert sum(s["adds_after_recovery"] for s in runs) >= 25      # AddRaftVoter answered, not only refused
    # The seeds cover what the report is about: unproven records kept, and committed records the survivor
    # never had (lost, all at or above the boundary: the invariant), and snapshots that move the boundary.
    assert sum(s["kept_unproven"] for s in runs) > 0
    assert any(s["old_committed_lost"] for s in runs)
    assert any(s["boundary"] > 0 for s in runs)


@pytest.mark.parametrize("bug", ["recovery_truncates_unproven", "recovery_claims_log_end"])
def test_invariants_catch_a_broken_recovery(bug: str) -> None:
    bad = [s for s in range(20) if not run_seed(s, SimConfig(recovery=True, observers=2, bugs=frozenset({bug}))).ok]
    assert len(bad) >= 5, f"{bug} caught on seeds {bad} only"


@pytest.mark.slow
def test_recovery_sample_three_and_five_voters() -> None:
    runs = _run(range(100, 300), CFG)
    # a survivor holding committed offsets with other records (its tail from an older epoch): lost too,
    # above the boundary (seeds 105, 191, 243 and 282)
    assert any(s["lost_inside_log"] for s in runs)
    _run(range(300, 360), SimConfig(recovery=True, voters=5, observers=4))
