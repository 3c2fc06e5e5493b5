"""Chaos runs of real voters: every fault ends with the same verdicts.

``-k sample`` is the CI sample (a short run of each fault on 3 voters and a mixed run on 5); the
``long`` runs are the documented 5-minute ones (docs/reliability.md).
"""

from __future__ import annotations

import os

import pytest

from .faults import KNOWN_BROKEN, NEMESES
from .netlab import lab_available
from .run import run_chaos

pytestmark = [pytest.mark.slow, pytest.mark.processes]


@pytest.fixture(autouse=True)
def _lab():
    reason = lab_available()
    if reason:
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            pytest.fail(reason)
        pytest.skip(reason)


FAULTS = sorted(f for f in NEMESES if f != "mixed" and f not in KNOWN_BROKEN)


def _check(v) -> None:
    assert v.acked > 0, f"nothing was acknowledged: {v.line()}"
    assert v.faults > 0
    assert v.lost == [], f"acknowledged creates lost: {v.lost[:10]} ({v.line()})"
    assert v.logs_identical, v.line()
    assert v.compared_offsets > 0
    assert v.deaths == [], v.deaths
    assert v.unhealed == "", v.line()


@pytest.mark.parametrize("fault", FAULTS)
def test_sample_3_voters(tmp_path, fault):
    _check(run_chaos(tmp_path, fault, 3, 12.0, seed=1))


def test_sample_mixed_5_voters(tmp_path):
    _check(run_chaos(tmp_path, "mixed", 5, 20.0, seed=2))


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("fault", [*FAULTS, "mixed"])
def test_long(tmp_path, fault, voters):
    v = run_chaos(tmp_path, fault, voters, 300.0, seed=voters)
    _check(v)
    assert v.longest_unavailable_s < 30, v.line()

