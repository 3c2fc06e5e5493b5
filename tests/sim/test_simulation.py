"""Seeded simulation: invariants hold across many seeds; deliberate bugs are caught; CLI contract."""

from __future__ import annotations

import pytest

from kraftwire.cli.main import main
from kraftwire.sim.config import ALL_FAULTS, SimConfig
from kraftwire.sim.runner import run_seed, run_seeds

CI_SEEDS = 100  # per voter count: 300 seeds in the default run


@pytest.mark.parametrize("voters,observers", [(1, 2), (3, 1), (5, 2)])
def test_invariants_hold_for_ci_seeds_with_all_faults(voters, observers):
    cfg = SimConfig(voters=voters, observers=observers)
    results = list(run_seeds(range(CI_SEEDS), cfg))
    failures = [f"{r.violations[0]} | {r.repro}" for r in results if not r.ok]
    assert failures == []
    assert sum(r.committed for r in results) > 100 * CI_SEEDS  # real work was replicated
    # Nodes snapshot and clean their logs; lagging ones catch up with FetchSnapshot in most seeds.
    assert sum(r.snapshots for r in results) > 10 * CI_SEEDS
    assert sum(1 for r in results if r.snapshot_downloads) > CI_SEEDS // 2


def test_fault_free_run_elects_once_and_commits_steadily():
    r = run_seed(1, SimConfig(voters=3, observers=1, faults=frozenset()))
    assert r.ok and r.elections == 1 and r.committed > 500


def test_same_seed_same_run():
    cfg = SimConfig(voters=5, observers=1)
    a, b = run_seed(42, cfg), run_seed(42, cfg)
    assert (a.events, a.committed, a.max_epoch) == (b.events, b.committed, b.max_epoch)
    assert run_seed(43, cfg).events != a.events


@pytest.mark.parametrize("bug,voters,observers,snapshots", [
    ("double_vote", 3, 0, True),
    ("observer_counts_for_hw", 3, 2, True),
    ("no_own_epoch_hw_rule", 3, 1, True),
    # Snapshots heal a diverged log too (a fetcher whose epoch the log no longer holds gets one), so
    # this one is hunted without them: caught by log matching or by the post-heal replication check.
    ("no_truncate_on_diverge", 3, 1, False),
    ("snapshot_not_loaded", 3, 1, True),
])
def test_deliberate_bug_is_caught_within_ci_budget(bug, voters, observers, snapshots):
    cfg = SimConfig(voters=voters, observers=observers, bugs=frozenset({bug}),
                    snapshot_records=SimConfig().snapshot_records if snapshots else None)
    for result in run_seeds(range(CI_SEEDS), cfg):
        if not result.ok:
            assert f"--bugs {bug}" in result.repro
            return
    pytest.fail(f"bug {bug} survived {CI_SEEDS} seeds")


def test_cli_reports_seed_count_and_exit_code(capsys):
    assert main(["simulate", "--seeds", "3", "--voters", "3", "--faults", "crash,drop"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "seeds=3 violations=0"


def test_cli_prints_repro_for_failing_seed(capsys):
    code = main(["simulate", "--seed", "0", "--voters", "3", "--observers", "2", "--bugs", "observer_counts_for_hw"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and lines[-1] == "seeds=1 violations=1"
    assert "kraftwire simulate --seed 0 --voters 3 --observers 2 --faults all" in lines[0]


def test_cli_rejects_unknown_fault():
    with pytest.raises(SystemExit):
        main(["simulate", "--faults", "meteor"])


@pytest.mark.slow
@pytest.mark.parametrize(("voters", "seeds"), [(3, 600), (5, 300)])
def test_ci_sample(voters, seeds):
    """The slow sample CI runs (.ci/run): 3- and 5-voter quorums with observers and every fault."""
    cfg = SimConfig(voters=voters, observers=1 + voters % 2, faults=frozenset(ALL_FAULTS))
    failures = [f"{r.violations[0]} | {r.repro}" for r in run_seeds(range(50_000, 50_000 + seeds), cfg) if not r.ok]
    assert failures == []


@pytest.mark.slow
@pytest.mark.parametrize("voters", [1, 3, 5])
def test_soak_10k_seeds(voters):
    n = {1: 2000, 3: 4000, 5: 4000}[voters]
    cfg = SimConfig(voters=voters, observers=voters % 3, faults=frozenset(ALL_FAULTS))
    failures = [f"{r.violations[0]} | {r.repro}" for r in run_seeds(range(10_000, 10_000 + n), cfg) if not r.ok]
    assert failures == []
