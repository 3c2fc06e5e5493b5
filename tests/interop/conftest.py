"""Real Kafka releases as peers: ``kafka_dist`` is parametrized over every release found; a failing test's
report carries the tails of every running node's log."""

from __future__ import annotations

import pytest

from tests.interop.kafka import ACTIVE, dist_params, require


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kafka_release" in metafunc.fixturenames:
        metafunc.parametrize("kafka_release", dist_params(), scope="module")


@pytest.fixture(scope="module")
def kafka_dist(kafka_release):
    """The Kafka release of this test (skipped, or failed under CI=true, when there is none)."""
    return require(kafka_release)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and ACTIVE:
        report.sections.append(("Kafka and kraftwire logs", "\n".join(f.report() for f in ACTIVE)))
