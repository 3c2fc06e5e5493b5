"""Consumer groups through the doors under faults (``kraftwire/sim/groups_sim.py``): consumers find the
coordinator at voters and brokers, join, sync, heartbeat, commit and fetch offsets while the offsets quorum's
voters crash, restart and lose their leadership; each invariant's deliberate bug is caught, and the same
seeds run clean without it."""

from __future__ import annotations

import pytest

from kraftwire.sim.config import SimConfig
from kraftwire.sim.groups_sim import GroupsSimulation

SEEDS = range(8)


def run(seed: int, bugs: frozenset[str] = frozenset()) -> GroupsSimulation:
    sim = GroupsSimulation(seed, SimConfig(voters=3, observers=0, groups=True, bugs=bugs))
    sim.result = sim.run()
    return sim


@pytest.mark.parametrize("seed", SEEDS)
def test_groups_through_the_doors_under_every_fault(seed):
    sim = run(seed)
    assert sim.result.ok, sim.result.violations
    stats = sim.stats
    # the workload really ran through failovers: commits acknowledged and fetched back, rebalances, moves
    assert stats.get("commits acked", 0) > 30 and stats.get("fetches checked", 0) > 20, stats
    assert stats.get("joins", 0) >= 6 and stats.get("syncs", 0) >= 6, stats
    assert stats.get("coordinator moved", 0) > 0, stats


def test_brokers_relay_to_the_coordinator_they_look_up_and_die_meanwhile():
    sims = [run(seed) for seed in SEEDS]
    assert all(s.result.ok for s in sims)
    assert sum(s.stats.get("broker relays answered", 0) for s in sims) > 20
    assert sum(s.stats.get("broker lookups", 0) for s in sims) > 2
    # brokers died and came back (a fresh lookup, not serving at first); members left and joined again
    assert sum(s.stats.get("broker crashes", 0) for s in sims) > 4
    assert sum(s.stats.get("leaves", 0) for s in sims) > 4


@pytest.mark.parametrize("bug, message", [
    ("group_answers_before_commit", "before"),                 # durable answers only once committed
    ("group_serves_after_leadership", "before"),               # (its held answers leave on the follower's commits)
    ("coordinator_starts_without_offsets", "OffsetFetch"),     # an acknowledged commit is never lost
    ("coordinator_starts_without_generations", "generation"),  # one generation, one membership
])
def test_each_deliberate_bug_is_caught(bug, message):
    """Each invariant's bug is caught on a few seeds (the clean runs of the same seeds are the tests above)."""
    found = [v for seed in range(8) for v in run(seed, frozenset({bug})).result.violations]
    assert found and all(message in v for v in found), found
