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
def test_cell(cluster, check, request):
    if check.__name__ == "check_leadership_both_ways" and cluster.dist.version.startswith("4."):
        # Known gap (docs/compatibility.md): right after a Kafka leader dies, the Kafka 4.x follower still counts
        # its leader as recent and rejects kraftwire's pre-vote, then stands itself and wins the race.
        request.applymarker(pytest.mark.xfail(reason="Kafka 4.x voters out-race kraftwire's pre-vote", strict=False))
    result = check(cluster)
    print(f"{check.__name__}: {result.status}: {result.detail}")
    assert result.status == "pass", result.detail
