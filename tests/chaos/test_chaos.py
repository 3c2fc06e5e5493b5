"""Chaos runs of real voters: every fault ends with the same verdicts.

``-k sample`` is the CI sample (a short run of each fault on 3 voters, a mixed run on 5, and short runs
where real admin clients create topics after each fault); the ``long`` runs are the documented 5-minute
ones (docs/reliability.md).
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


def _check_clients(v) -> None:
    assert v.clients, "no admin client library installed (confluent-kafka, kafka-python)"
    for tally in v.clients:
        assert tally.reached > 0, tally.line()
        assert tally.beyond_first == 0, tally.line()


@pytest.mark.parametrize("fault", ["kill9", "partition", "sigstop"])
def test_sample_clients_reach_the_controller(tmp_path, fault):
    """After each fault, librdkafka and kafka-python admin clients bootstrapped at every voter create topics
    for 3 s: at most one NOT_CONTROLLER each per fault (issue #23 item 6)."""
    v = run_chaos(tmp_path, fault, 3, 8.0, seed=3, clients_s=3.0)
    _check(v)
    _check_clients(v)


@pytest.mark.parametrize("fault", ["kill9", "partition", "sigstop", "mixed"])
def test_long_clients_reach_the_controller(tmp_path, fault):
    v = run_chaos(tmp_path, fault, 3, 120.0, seed=4, clients_s=10.0)
    _check(v)
    _check_clients(v)


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("fault", [*FAULTS, "mixed"])
def test_long(tmp_path, fault, voters):
    v = run_chaos(tmp_path, fault, voters, 300.0, seed=voters)
    _check(v)
    assert v.longest_unavailable_s < 30, v.line()



def _check_rolling(v) -> None:
    assert v.acked > 0 and v.altered > 0, v.lines()
    assert v.lost == [], f"acknowledged creates lost: {v.lost[:10]} ({v.lines()})"
    assert v.alters_lost == [], f"acknowledged alters lost: {v.alters_lost[:10]} ({v.lines()})"
    assert v.unexpected_fences == [], f"brokers fenced outside their own restart: {v.unexpected_fences} ({v.lines()})"
    assert v.deaths == [] and v.unhealed == "", v.lines()
    assert all(r.rejoined != float("inf") for r in v.restarts), v.lines()


def _newest_kafka():
    from tests.interop.kafka import distributions, unavailable

    dists, reason = distributions()
    if not dists:
        unavailable(reason)
    return dists[-1]


def test_sample_rolling_restart(tmp_path):
    """Issue #23 item 4: every voter and a broker restarted one at a time (SIGTERM, rejoin, next) under the
    writer's load: nothing acknowledged lost, no broker fenced but the one restarting."""
    from .rolling import run_rolling

    v = run_rolling(tmp_path, voters=3, brokers=1, rounds=1)
    _check_rolling(v)
    assert len(v.restarts) == 4


def test_long_rolling_restarts(tmp_path):
    from .rolling import run_rolling

    v = run_rolling(tmp_path, voters=3, brokers=2, rounds=3)
    _check_rolling(v)
    print("\n".join(v.lines()))


@pytest.mark.kafka
def test_sample_rolling_restart_kafka_broker_on_kraftwire(tmp_path):
    """Issue #23 item 4: the same rolling restart with a Kafka 4.1 broker (a JVM in the lab's namespace) on
    the kraftwire voters (≈ 50 s; run it under flock /work/kafka.lock)."""
    from .rolling import run_rolling

    v = run_rolling(tmp_path, voters=3, brokers=1, rounds=1, mode="kafka-brokers", dist=_newest_kafka())
    print("\n".join(v.lines()))
    _check_rolling(v)
    assert len(v.restarts) == 4


@pytest.mark.kafka
def test_rolling_restart_kafka_brokers_on_kraftwire(tmp_path):
    """Two Kafka brokers, two rounds (the documented form; slow-only)."""
    from .rolling import run_rolling

    v = run_rolling(tmp_path, voters=3, brokers=2, rounds=2, mode="kafka-brokers", dist=_newest_kafka())
    print("\n".join(v.lines()))
    _check_rolling(v)
    assert len(v.restarts) == 10


@pytest.mark.kafka
def test_rolling_restart_kafka_baseline(tmp_path):
    """The baseline: Kafka's own controllers and brokers through the same scenario. Its figures are what
    docs/reliability.md compares with; only the run itself is asserted (every node rejoined, the writer
    was acknowledged), not Kafka's verdicts."""
    from .rolling import run_rolling

    v = run_rolling(tmp_path, voters=3, brokers=2, rounds=1, mode="kafka", dist=_newest_kafka())
    print("\n".join(v.lines()))
    assert v.acked > 0 and v.altered > 0 and v.unhealed == "", v.lines()
    assert all(r.rejoined != float("inf") for r in v.restarts), v.lines()
