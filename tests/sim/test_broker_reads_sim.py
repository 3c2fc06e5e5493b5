"""Brokers answer Metadata, DescribeCluster and DescribeConfigs through their door from their own image, in the
controller simulation (kraftwire.sim.metadata_sim), and the deliberate bugs its invariants catch."""

from __future__ import annotations

import pytest

from kraftwire.sim import metadata_sim
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import run_controller_seed


def test_brokers_answer_metadata_and_describe_cluster_through_their_door_from_their_image() -> None:
    answers = partitions = cluster = after_fence = configs = 0
    for seed in range(6):
        result, sim = run_controller_seed(seed, SimConfig(controller=True, wire=seed % 2 == 1))
        assert result.ok, f"seed {seed}: {result.violations}"
        answers += sim.reader.answers
        partitions += sim.reader.partitions_seen
        cluster += sim.reader.cluster_answers
        after_fence += sim.reader.after_fence
        configs += sim.reader.configs_checked
        for bid in sim.agents:
            node = sim.nodes[bid].node
            assert node is None or node.door is not None
    assert answers > 200 and partitions > 2000 and cluster > 50 and after_fence > 20 and configs > 100


def test_mutation_metadata_from_a_stale_image_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    bugs = frozenset({"metadata_stale_image"})
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(8)]
    assert sum(not r.ok for r in results) >= 7, [r.seed for r in results if r.ok]
    # The fenced-leader invariant alone (the broker-list and config checks off) catches it too.
    monkeypatch.setattr(metadata_sim, "check_broker_list", lambda *args: None)
    monkeypatch.setattr(metadata_sim, "check_config_answer", lambda *args: 0)
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(8)]
    caught = [r for r in results if not r.ok]
    assert len(caught) >= 5, [r.seed for r in results if r.ok]
    assert "Metadata answer names fenced broker" in caught[0].violations[0]


def test_mutation_reads_that_ignore_fencing_are_caught_by_the_broker_lists() -> None:
    bugs = frozenset({"reads_ignore_fencing"})
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(4)]
    caught = [r for r in results if not r.ok]
    assert len(caught) >= 3, [r.seed for r in results if r.ok]
    assert "answer lists brokers" in caught[0].violations[0] or "is not fenced" in caught[0].violations[0]


def test_mutation_reads_that_ignore_configs_are_caught_by_describe_configs() -> None:
    bugs = frozenset({"reads_ignore_configs"})
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(4)]
    caught = [r for r in results if not r.ok]
    assert len(caught) >= 3, [r.seed for r in results if r.ok]
    assert "DescribeConfigs of" in caught[0].violations[0] and "its image sets" in caught[0].violations[0]
