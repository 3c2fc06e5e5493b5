"""Pure entry points: ``run_seed(seed, cfg)`` and ``run_seeds(seeds, cfg)`` (picklable for Spark)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import ALL_FAULTS, SeedResult, SimConfig


def repro_command(seed: int, cfg: SimConfig) -> str:
    faults = "all" if set(cfg.faults) == set(ALL_FAULTS) else (",".join(sorted(cfg.faults)) or "none")
    cmd = (f"kraftwire simulate --seed {seed} --voters {cfg.voters} --observers {cfg.observers} "
           f"--faults {faults} --duration-ms {cfg.duration_ms}")
    if cfg.controller:
        cmd += " --controller"
        if cfg.metadata_version:
            cmd += f" --metadata-version {cfg.metadata_version}"
    if cfg.wire:
        cmd += " --wire"
    if cfg.reconfig:
        cmd += " --reconfig"
    if cfg.recovery:
        cmd += " --recovery"
    if cfg.groups:
        cmd += " --groups"
    if cfg.never_started:
        cmd += f" --never-started {cfg.never_started}"
    if cfg.start_spread_ms:
        cmd += f" --start-spread-ms {cfg.start_spread_ms}"
    if cfg.first_leader_within_ms is not None:
        cmd += f" --first-leader-within-ms {cfg.first_leader_within_ms}"
    if cfg.bugs:
        cmd += f" --bugs {','.join(sorted(cfg.bugs))}"
    return cmd


def run_seed(seed: int, cfg: SimConfig) -> SeedResult:
    """Simulate one seed; deterministic for a given (seed, cfg)."""
    if cfg.controller:
        from kraftwire.sim.controller_sim import ControllerSimulation

        result = ControllerSimulation(seed, cfg).run()
    elif cfg.groups:
        from kraftwire.sim.groups_sim import GroupsSimulation

        result = GroupsSimulation(seed, cfg).run()
    elif cfg.recovery:
        from kraftwire.sim.recovery_sim import RecoverySimulation

        rsim = RecoverySimulation(seed, cfg)
        result = rsim.run()
        result.voter_changes = rsim.changes_ok
        result.recovery = rsim.summary()
    elif cfg.reconfig:
        from kraftwire.sim.reconfig_sim import ReconfigSimulation

        sim = ReconfigSimulation(seed, cfg)
        result = sim.run()
        result.voter_changes = sim.changes_ok
    else:
        result = Simulation(seed, cfg).run()
    result.repro = repro_command(seed, cfg)
    return result


def run_seeds(seeds: Iterable[int], cfg: SimConfig) -> Iterator[SeedResult]:
    for seed in seeds:
        yield run_seed(seed, cfg)
