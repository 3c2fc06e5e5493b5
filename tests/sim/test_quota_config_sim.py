"""Client quotas and topic configs in the controller simulation (kraftwire.sim.quota_config_sim): valid, refused
and validate_only AlterClientQuotas and IncrementalAlterConfigs under controller failovers and broker crashes,
and a controller that applies validate_only requests caught."""

from __future__ import annotations

from typing import Any

import pytest

from kraftwire.controller import controller
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import run_controller_seed
from kraftwire.sim.quota_config_sim import INVALID, VALID, VALIDATE_ONLY


def test_acknowledged_changes_hold_and_refused_ones_never_apply_over_20_seeds() -> None:
    counts = {VALID: 0, INVALID: 0, VALIDATE_ONLY: 0, "acked": 0, "refused": 0, "unknown": 0}
    exact = 0
    for seed in range(20):
        result, sim = run_controller_seed(seed, SimConfig())
        assert result.ok, f"seed {seed}: {result.violations}"
        for k, v in sim.quota_configs.counts.items():
            counts[k] += v
        exact += sim.quota_configs.exact_checks
    # the runs really sent every kind, had changes acknowledged and refused, lost answers to the faults,
    # and compared acknowledged values exactly in the final images
    assert counts[VALID] > 150 and counts[INVALID] > 40 and counts[VALIDATE_ONLY] > 40, counts
    assert counts["acked"] > 100 and counts["refused"] > 20 and counts["unknown"] > 20, counts
    assert exact > 500, exact


def test_a_controller_applying_validate_only_quota_changes_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = controller._COMMANDS["AlterClientQuotasRequest"]

    def applies_anyway(ctl: Any, now: int, req: Any, version: int) -> Any:
        dry, req.validate_only = req.validate_only, False
        try:
            return real(ctl, now, req, version)
        finally:
            req.validate_only = dry

    monkeypatch.setitem(controller._COMMANDS, "AlterClientQuotasRequest", applies_anyway)
    found = None
    for seed in range(20):
        result, _ = run_controller_seed(seed, SimConfig())
        if not result.ok:
            found = result.violations[0]
            break
    assert found is not None and "refused or validate_only change" in found, found
