"""(a) Kafka's tools on kraftwire and (b) real Kafka brokers on a kraftwire controller quorum, per Kafka release.

One cluster per release and module: 3 kraftwire voters and 2 Kafka brokers (compat/interop.py). The checks run
in order on it; each is a cell of ``python -m compat --kafka``.
"""

from __future__ import annotations

import pytest

from compat.interop import KRAFTWIRE_CONTROLLER_CHECKS, KraftwireControllers
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(kafka_dist, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"kwc-{kafka_dist.version}")
    c = KraftwireControllers(kafka_dist, root)
    with Fleet(root) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        yield c


@pytest.mark.parametrize("check", [fn for _, _, fn in KRAFTWIRE_CONTROLLER_CHECKS],
                         ids=[fn.__name__.removeprefix("check_") for _, _, fn in KRAFTWIRE_CONTROLLER_CHECKS])
def test_cell(cluster, check):
    result = check(cluster)
    print(f"{check.__name__}: {result.status}: {result.detail}")
    assert result.status == "pass", result.detail
