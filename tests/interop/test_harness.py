"""The real-Kafka harness itself: release discovery, addresses, and one node of each release up and down."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compat.kafka import (
    CONTROLLER_PORT,
    KafkaNode,
    KafkaUnavailable,
    dist_at,
    find_distributions,
    loopback_hosts,
)
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet, Missing, dist_params, unavailable


def fake_release(root, version: str):
    (root / "bin").mkdir(parents=True)
    (root / "libs").mkdir()
    (root / "bin" / "kafka-server-start.sh").write_text("#!/bin/sh\n")
    (root / "libs" / f"kafka-clients-{version}.jar").write_bytes(b"")
    return root


def test_release_found_by_its_client_jar(tmp_path):
    assert dist_at(tmp_path) is None
    d = dist_at(fake_release(tmp_path / "k", "3.10.2"))
    assert d is not None and d.version == "3.10.2" and d.at_least(3, 9) and not d.at_least(4, 0)


def test_kafka_home_lists_releases_oldest_first(tmp_path, monkeypatch):
    a, b = fake_release(tmp_path / "a", "4.1.0"), fake_release(tmp_path / "b", "3.7.0")
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("KRAFTWIRE_KAFKA_DISTS", f"{a}:{b}")
    monkeypatch.setattr("compat.kafka.missing_java", lambda: None)
    assert [d.version for d in find_distributions()] == ["3.7.0", "4.1.0"]
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))  # not a release: the reason names the variable
    with pytest.raises(KafkaUnavailable, match="KAFKA_HOME"):
        find_distributions()


def test_missing_release_fails_under_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and no JDK"):
        unavailable("no JDK")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="no JDK"):
        unavailable("no JDK")
    monkeypatch.setenv("KAFKA_HOME", "/nonexistent")
    [param] = dist_params()
    assert isinstance(param.values[0], Missing) and "KAFKA_HOME" in param.values[0]


def test_loopback_hosts_are_distinct_and_bindable():
    hosts = loopback_hosts(5)
    assert len(set(hosts)) == 5 and all(h.startswith("127.") for h in hosts)


@pytest.mark.kafka
def test_node_formats_starts_answers_and_stops(kafka_dist, tmp_path):
    """A combined node of the release starts; kraftwire's metadata-quorum describes it; stop ends the JVM."""
    with Fleet(tmp_path) as fleet:
        [host] = fleet.hosts(1)
        node = fleet.add(KafkaNode(kafka_dist, tmp_path, 1, "broker,controller", host,
                                   [(1, host, CONTROLLER_PORT)]))
        cluster = random_uuid()
        node.format(cluster, release_version="3.7-IV4")
        node.start()
        node.wait_started()
        out = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", "--bootstrap-controller",
                              node.controller_address, "describe", "--status", "--json"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        assert status["ClusterId"] == cluster and status["LeaderId"] == 1
        pid = node.proc.pid
        fleet.stop()
        assert not node.running()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
