"""After the active controller is killed (kill -9, restarted a moment later), admin clients that follow Metadata
(librdkafka, kafka-python) bootstrapped at every voter reach the new active controller: at most one
NOT_CONTROLLER each (the one that makes it look again), then answers from the controller."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.chaos.admin_probe import AdminProbe, available_kinds

from .harness import Cluster

pytestmark = pytest.mark.processes


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, 3)
    yield c
    c.stop_all()


def test_clients_reach_the_new_controller_after_kill9_of_the_old(cluster):
    kinds = available_kinds()
    assert kinds, "no admin client library installed (confluent-kafka, kafka-python)"
    cluster.start_all()
    leader = cluster.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 5, [1, 2, 3])["LeaderId"]
    bootstrap = ",".join(cluster.addr(i) for i in (1, 2, 3))
    probes = [AdminProbe(kind, bootstrap) for kind in kinds]
    try:
        with ThreadPoolExecutor(len(probes)) as pool:
            warm = list(pool.map(lambda p: p.window(1.5), probes))
            assert all(t.reached for t in warm), [t.line() for t in warm]   # each knows the controller
            cluster.kill(leader)
            after = [pool.submit(p.window, 10.0) for p in probes]
            time.sleep(1.5)
            cluster.start(leader)               # back as a former leader, resigned in its old epoch
            tallies = [f.result() for f in after]
    finally:
        for p in probes:
            p.close()
    print("; ".join(t.line() for t in tallies))
    for t in tallies:
        assert t.reached > 0, t.line()
        assert t.beyond_first == 0, t.line()
