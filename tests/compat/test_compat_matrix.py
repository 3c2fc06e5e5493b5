"""The compatibility matrix in CI: every client against one real 3-process kraftwire quorum and a broker.

Each client is its own test so a failure names the client; a client that cannot run here (not installed,
no JDK, no npm) is skipped with the reason. The Apache Kafka rows run when Docker or KAFKA_HOME exists.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compat.__main__ import default_cache
from compat.apache import run_apache_rows
from compat.clients import all_clients
from compat.cluster import Quorum
from compat.matrix import GROUP_BATCH, Matrix, render

pytestmark = [pytest.mark.compat, pytest.mark.processes]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    quorum = Quorum(tmp_path_factory.mktemp("compat-quorum"), brokers=1)
    try:
        quorum.start()
        quorum.change_leader()
        quorum.wait_brokers()
        m = Matrix(quorum, default_cache(), timeout_s=60.0)
        assert len(m.expected(2 * GROUP_BATCH).records) >= 2 * GROUP_BATCH
        assert m.expected(1).control_offsets[1:], "the leader change left no control batch inside the log"
        yield m
    finally:
        quorum.stop()


def _marks(name: str):
    return [pytest.mark.java] if name.startswith("java") else []


@pytest.mark.parametrize("name", [pytest.param(c.name, marks=_marks(c.name)) for c in all_clients()])
def test_client(matrix, name):
    client = next(c for c in all_clients() if c.name == name)
    row = matrix.run_client(client)
    print(render([row], list(row.results)))
    failures = {check: r.detail for check, r in row.results.items() if r.status == "fail"}
    assert not failures, failures
    passed = [check for check, r in row.results.items() if r.status == "pass"]
    if not passed:
        pytest.skip(f"{name}: " + "; ".join(sorted({r.detail for r in row.results.values()})))
    # Only a check the client has no API for may be skipped once the client runs at all.
    for check, r in row.results.items():
        if r.status == "skip":
            assert check in client.not_supported, (check, r.detail)


def test_apache_kafka_tools(matrix):
    rows = run_apache_rows(matrix.quorum)
    results = [r for row in rows for r in row.results.values()]
    assert not [r.detail for r in results if r.status == "fail"]
    if all(r.status == "skip" for r in results):
        pytest.skip(results[0].detail)


def test_runner_prints_table_and_exit_status():
    """``python -m compat`` end to end (one client): the table, the versions, exit status 0."""
    proc = subprocess.run([sys.executable, "-m", "compat", "--clients", "kafka-python", "--no-apache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| kafka-python | " in proc.stdout and "| pass | pass | pass | pass |" in proc.stdout
    assert "4 passed, 0 failed, 0 skipped" in proc.stdout
