"""Simulation sweeps on Spark: seed ranges as tasks, results gathered on the driver.

Each task runs ``kraftwire.sim.runner.run_seeds`` over one contiguous range of seeds, exactly as the
local simulator would, so a seed's result (violations, reproduction command) is the same wherever
it runs. Results come back sorted by seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kraftwire.analytics.rows import split_range
from kraftwire.sim.config import SeedResult, SimConfig


def seed_ranges(seeds: Sequence[int], tasks: int) -> list[list[int]]:
    """``seeds`` cut into at most ``tasks`` contiguous chunks of nearly equal size."""
    return [list(seeds[lo:hi]) for lo, hi in split_range(0, len(seeds), tasks)]


def _run_chunks(cfg: SimConfig, chunks: Iterator[list[int]]) -> Iterator[SeedResult]:
    from kraftwire.sim.runner import run_seeds

    for chunk in chunks:
        yield from run_seeds(chunk, cfg)


def spark_sweep(spark: Any, seeds: Sequence[int], cfg: SimConfig, tasks: int | None = None) -> list[SeedResult]:
    """Run every seed as part of a Spark task; ``tasks`` defaults to 4 x the default parallelism."""
    sc = spark.sparkContext
    n = tasks or 4 * sc.defaultParallelism
    chunks = seed_ranges(list(seeds), n)
    if not chunks:
        return []
    rdd = sc.parallelize(chunks, len(chunks))
    results = rdd.mapPartitions(lambda part: _run_chunks(cfg, part)).collect()
    return sorted(results, key=lambda r: r.seed)
