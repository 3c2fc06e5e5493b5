"""The live listener fuzzer against a real 3-voter quorum on loopback (no root needed).

Verdicts: every node alive, the quorum healthy (a leader, committing, every voter caught up),
memory bounded, and no request logged as a server failure.
"""

from __future__ import annotations

import resource
import subprocess
import time

import anyio
import pytest
from processes.harness import Cluster

from .fuzz import FuzzReport, Slowloris, advertised, flood, frame_cases, fuzz_frames, rss_mb

pytestmark = [pytest.mark.slow, pytest.mark.processes]
RSS_GROWTH_MB = 200


class LimitedCluster(Cluster):
    """Voters whose open-file limit (soft and hard) is ``nofile``."""

    nofile = 0

    def start(self, node, *extra):
        if not self.nofile:
            return super().start(node, *extra)
        limit = self.nofile
        real = subprocess.Popen

        def popen(*a, **kw):
            return real(*a, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)), **kw)

        subprocess.Popen = popen
        try:
            return super().start(node, *extra)
        finally:
            subprocess.Popen = real


@pytest.fixture
def cluster(tmp_path):
    c = LimitedCluster(tmp_path, 3)
    yield c
    c.stop_all()


@pytest.fixture
def with_broker(tmp_path):
    c = LimitedCluster(tmp_path, 3, brokers=1)
    yield c
    c.stop_all()


def _target(c: Cluster, n: int) -> tuple[str, int]:
    host, port = c.addr(n).split(":")
    return host, int(port)


def _pid(c: Cluster, n: int) -> int | None:
    return c.procs[n].pid if c.procs[n].poll() is None else None


def _healthy(c: Cluster) -> dict:
    """A leader that commits new offsets while every voter keeps up (polled, bounded)."""
    first = c.wait_status(lambda s: s["LeaderId"] > 0, [1, 2, 3], timeout=30)
    return c.wait_status(lambda s: s["HighWatermark"] > first["HighWatermark"] + 3
                         and s["MaxFollowerLag"] < 50, [1, 2, 3], timeout=30)


def _server_failures(c: Cluster) -> list[str]:
    lines = []
    for n in c.procs:
        lines += [f"node {n}: {ln[:200]}" for ln in c.log_text(n).splitlines()
                  if " ERROR " in ln or " CRITICAL " in ln or "Traceback" in ln]
    return lines


def test_sample_every_advertised_api_and_version_with_malformed_frames(cluster):
    cluster.start_all()
    _healthy(cluster)
    apis = anyio.run(advertised, *_target(cluster, 1))
    assert 18 in apis and 55 in apis and len(apis) > 20
    assert 45 in apis and 46 in apis     # partition reassignment (issue #22)
    assert 48 in apis and 49 in apis     # client quotas (issue #22)
    cases = frame_cases(apis, seed=1)
    report = FuzzReport()
    fuzz_frames({n: _target(cluster, n) for n in (1, 2, 3)}, lambda n: _pid(cluster, n), cluster.start,
                cases, 600.0, report)
    assert report.cases == len(cases) and report.answered > len(apis)
    assert report.findings == []
    assert all(p.poll() is None for p in cluster.procs.values())
    _healthy(cluster)
    for node, (before, peak) in report.rss_mb.items():
        assert peak - before < RSS_GROWTH_MB, f"node {node} grew from {before:.0f} to {peak:.0f} MB"
    assert _server_failures(cluster) == []


def test_sample_connection_flood_beyond_the_fd_limit_and_slow_clients(cluster):
    cluster.nofile = 1024
    cluster.start_all()
    _healthy(cluster)
    status = cluster.describe(1)
    victim = status["LeaderId"]
    host, port = _target(cluster, victim)
    before = rss_mb(_pid(cluster, victim))
    opened = flood(host, port, 1500, hold_s=3.0)
    assert opened > 0
    assert _pid(cluster, victim) is not None, cluster.log_text(victim)[-2000:]
    _healthy(cluster)
    with Slowloris(host, port, 300) as slow:
        still = slow.trickle(rounds=6, pause_s=0.5)
        # While they dribble, everyone else is served.
        _healthy(cluster)
        assert still >= 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and rss_mb(_pid(cluster, victim)) - before > RSS_GROWTH_MB:
        time.sleep(0.5)
    assert rss_mb(_pid(cluster, victim)) - before < RSS_GROWTH_MB
    assert all(p.poll() is None for p in cluster.procs.values())
    assert _server_failures(cluster) == []


def test_sample_broker_listener_every_advertised_api_and_version(with_broker):
    c = with_broker
    c.start_all()
    broker = c.brokers[0]
    c.start(broker)
    _healthy(c)
    deadline = time.monotonic() + 60
    while True:     # the broker answers once it has caught up and registered
        try:
            apis = anyio.run(advertised, *_target(c, broker))
            break
        except Exception:  # noqa: BLE001 - not listening yet
            assert time.monotonic() < deadline, c.log_text(broker)[-2000:]
            time.sleep(0.5)
    assert 0 in apis and 1 in apis and 3 in apis     # Produce, Fetch, Metadata on a broker
    assert 45 in apis and 46 in apis                 # forwarded partition reassignment (issue #22)
    assert {48, 49, 74} <= set(apis)                 # client quotas, ListConfigResources (issue #22)
    cases = frame_cases(apis, seed=2)
    report = FuzzReport()
    fuzz_frames({broker: _target(c, broker)}, lambda n: _pid(c, n), c.start, cases, 600.0, report)
    assert report.cases == len(cases) and report.answered > len(apis)
    assert report.findings == []
    assert all(p.poll() is None for p in c.procs.values())
    _healthy(c)
    before, peak = report.rss_mb[broker]
    assert peak - before < RSS_GROWTH_MB
    assert _server_failures(c) == []
