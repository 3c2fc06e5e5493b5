"""Simulation sweeps on Spark find exactly what the local simulator finds."""

from __future__ import annotations

import pytest

from kraftwire.analytics.sweep import seed_ranges
from kraftwire.cli.main import main
from kraftwire.sim.config import SimConfig
from kraftwire.sim.runner import run_seeds

BUG = "no_own_epoch_hw_rule"  # the leader may advance the HW on an older epoch's entries


def test_seed_ranges_are_contiguous_and_cover_every_seed():
    chunks = seed_ranges(range(10, 33), 5)
    assert [len(c) for c in chunks] == [5, 5, 5, 4, 4]
    assert [s for c in chunks for s in c] == list(range(10, 33))
    assert seed_ranges([7], 8) == [[7]] and seed_ranges([], 3) == []


def _key(results):
    return [(r.seed, r.violations, r.repro, r.events, r.committed, r.elections, r.max_epoch) for r in results]


@pytest.mark.spark
def test_spark_sweep_finds_the_same_violations_as_a_local_run(spark):
    from kraftwire.analytics.sweep import spark_sweep

    cfg = SimConfig(voters=3, observers=1, bugs=frozenset({BUG}))
    seeds = range(120)
    local = list(run_seeds(seeds, cfg))
    remote = spark_sweep(spark, seeds, cfg, tasks=7)
    assert _key(remote) == _key(local)
    failing = [r for r in remote if not r.ok]
    assert len(failing) >= 3  # the bug is caught, and more than once
    assert all(f"--bugs {BUG}" in r.repro and f"--seed {r.seed} " in r.repro for r in failing)


@pytest.mark.spark
def test_simulate_cli_with_spark_prints_what_the_local_run_prints(spark, capsys):
    args = ["simulate", "--seeds", "60", "--start-seed", "100", "--voters", "3", "--observers", "1", "--bugs", BUG]
    local_code = main(args)
    local_out = capsys.readouterr().out
    spark_code = main([*args, "--spark", "--master", "local[2]", "--tasks", "5"])
    spark_out = capsys.readouterr().out
    assert (spark_code, spark_out) == (local_code, local_out)
    assert local_code == 1 and local_out.splitlines()[-1].startswith("seeds=60 violations=")
    assert main(["simulate", "--seeds", "12", "--spark", "--master", "local[2]"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "seeds=12 violations=0"
