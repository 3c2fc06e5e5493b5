"""The operator tools (metadata-shell --at-offset, metadata-diff, what-if, doctor) against a live
kraftwire quorum of three combined nodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from .harness import Cluster

pytestmark = pytest.mark.processes

PROPS = ["broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=300"]


def kw(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *argv], capture_output=True, text=True,
                          timeout=timeout)


def wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - retried until the deadline
            last = e
        time.sleep(0.3)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    c = Cluster(Path(tmp_path_factory.mktemp("ops")), 3, combined=True)
    try:
        for node in (1, 2, 3):
            c.start(node, *PROPS)
        admin = wait_for(lambda: KafkaAdminClient(bootstrap_servers=[c.client_addr(n) for n in (1, 2, 3)],
                                                  request_timeout_ms=5000), 60, "an admin client")
        wait_for(lambda: len(admin.describe_cluster()["brokers"]) == 3, 60, "three brokers")
        c.admin = admin
        yield c
        admin.close()
    finally:
        c.stop_all()


def controllers(c: Cluster) -> str:
    return ",".join(c.addr(n) for n in (1, 2, 3))


def last_offset(c: Cluster) -> int:
    out = kw("metadata-shell", "--bootstrap-controller", controllers(c), "cat", "/provenance/lastContainedOffset")
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_time_travel_and_diff_on_a_live_quorum(quorum) -> None:
    c = quorum
    c.admin.create_topics([NewTopic("travel", 2, 3, topic_configs={"retention.ms": "60000"})])
    wait_for(lambda: "travel" in kw("metadata-shell", "--bootstrap-controller", controllers(c), "ls",
                                    "/topics").stdout, 30, "the topic in the image")
    created = last_offset(c)
    c.admin.delete_topics(["travel"])
    wait_for(lambda: "travel" not in kw("metadata-shell", "--bootstrap-controller", controllers(c), "ls",
                                        "/topics").stdout, 30, "the topic gone")
    then = kw("metadata-shell", "--bootstrap-controller", controllers(c), "--at-offset", str(created),
              "cat", "/configs/TOPIC/travel/retention.ms", "/topics/travel/1/replicas")
    assert then.returncode == 0, then.stderr
    assert then.stdout.splitlines()[0] == "60000" and len(json.loads(then.stdout.splitlines()[1])) == 3
    now = last_offset(c)
    doc = json.loads(kw("metadata-diff", "--bootstrap-controller", controllers(c), str(created), str(now),
                        "--json").stdout)
    removed = {ch["path"]: ch["before"] for ch in doc["changes"] if ch["change"] == "removed"}
    assert set(removed["/topics/travel"]) == {"id", "0", "1"}
    assert removed["/topics/travel"]["1"]["replicas"] == then.stdout.splitlines()[1]
    assert removed["/configs/TOPIC"] == {"travel": {"retention.ms": "60000"}}   # its only topic config went
    after = kw("metadata-diff", "--bootstrap-controller", controllers(c), "0", str(now + 10_000))
    assert after.returncode == 2 and "after the end of the log" in after.stderr
