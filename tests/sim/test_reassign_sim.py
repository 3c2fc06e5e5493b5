"""Partition reassignment in the controller simulation (kraftwire.sim.reassign_sim): moves, cancellations and the
leaders' ISR expansions under controller failovers and broker crashes, and a mutation of completion caught."""

from __future__ import annotations

import pytest

from kraftwire.controller import partition_change
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import run_controller_seed


def test_moves_complete_or_are_cancelled_over_40_seeds() -> None:
    started = completed = cancelled = expansions = 0
    for seed in range(40):
        result, sim = run_controller_seed(seed, SimConfig())
        assert result.ok, f"seed {seed}: {result.violations}"
        moves = sim.checker.moves
        started += moves.started
        completed += moves.completed
        cancelled += moves.cancelled
        expansions += sim.moves.expansions
    # the runs really moved partitions, both ways out of a move, through the leaders' AlterPartition
    assert started > 40 and completed > 20 and cancelled > 5 and expansions > 40, (started, completed, cancelled)


def test_a_completion_before_the_targets_are_in_sync_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def hasty(t) -> None:   # removes the leaving replicas as soon as one staying replica is in the ISR
        if not t.adding and not t.removing:
            return
        gone = set(t.removing)
        isr = [r for r in t.isr if r not in gone]
        if isr:
            t.isr, t.replicas, t.adding, t.removing = isr, [r for r in t.replicas if r not in gone], [], []

    monkeypatch.setattr(partition_change, "_complete_reassignment", hasty)
    found = None
    for seed in range(40):
        result, _ = run_controller_seed(seed, SimConfig())
        if not result.ok:
            found = result.violations[0]
            break
    # caught when a pending move ends, or when the move's first record already completes it
    assert found is not None and ("a move ended with replicas" in found or "outside a move" in found), found
