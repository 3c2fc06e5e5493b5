"""(c) a kraftwire broker on a Kafka controller quorum and (e) kraftwire's tools on Kafka's files, per release.

One cluster per release and module: 3 Kafka controllers and 1 kraftwire broker (compat/interop.py)."""

from __future__ import annotations

import pytest

from compat.interop import KAFKA_CONTROLLER_CHECKS, KafkaControllers
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(kafka_dist, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"kfc-{kafka_dist.version}")
    c = KafkaControllers(kafka_dist, root)
    with Fleet(root) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        yield c


@pytest.mark.parametrize("check", [fn for _, _, fn in KAFKA_CONTROLLER_CHECKS],
                         ids=[fn.__name__.removeprefix("check_") for _, _, fn in KAFKA_CONTROLLER_CHECKS])
def test_cell(cluster, check):
    result = check(cluster)
    print(f"{check.__name__}: {result.status}: {result.detail}")
    assert result.status == "pass", result.detail
