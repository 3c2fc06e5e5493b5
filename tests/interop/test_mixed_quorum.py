"""(d) mixed quorums, per release: kraftwire and Kafka voters elect each other, and their logs agree.

One cluster per release and module: 1 kraftwire voter and 2 Kafka voters (compat/interop.py)."""

from __future__ import annotations

import pytest

from compat.interop import MIXED_QUORUM_CHECKS, MixedQuorum
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(kafka_dist, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"mixed-{kafka_dist.version}")
    c = MixedQuorum(kafka_dist, root)
    with Fleet(root) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        yield c


@pytest.mark.parametrize("check", [fn for _, _, fn in MIXED_QUORUM_CHECKS],
                         ids=[fn.__name__.removeprefix("check_") for _, _, fn in MIXED_QUORUM_CHECKS])
def test_cell(cluster, check):
    result = check(cluster)
    print(f"{check.__name__}: {result.status}: {result.detail}")
    assert result.status == "pass", result.detail
