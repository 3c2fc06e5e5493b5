"""Kafka command-line habits against a real 3-voter quorum: bootstrap lists, admin verbs that follow the
active controller, --timeout honoured, Kafka's error names."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from kraftwire.cli.errors import ExitCode
from tests.processes.harness import Cluster

pytestmark = pytest.mark.processes

AUTHORIZER = ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found=true"]


def kraftwire(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    """Three voters that all answer; a node that lost its port to another process on this shared machine
    exits with PORT_IN_USE, and the quorum is started again on other ports."""
    for _attempt in range(3):
        c = Cluster(tmp_path_factory.mktemp("habits"), 3)
        for i in (1, 2, 3):
            c.start(i, *AUTHORIZER)
        try:
            for i in (1, 2, 3):
                c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 0, [i])
        except AssertionError:
            codes = [p.poll() for p in c.procs.values()]
            c.stop_all()
            if ExitCode.PORT_IN_USE in codes:
                continue
            raise
        try:
            yield c
        finally:
            c.stop_all()
        return
    pytest.fail("could not find three free ports for the quorum")


def test_bootstrap_lists_skip_dead_addresses(quorum) -> None:
    dead = "127.0.0.1:1"
    out = kraftwire("metadata-quorum", "--bootstrap-controller", f"{dead},{quorum.addr(2)}", "describe", "--status")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ClusterId:") and f"ClusterId:              {quorum.cluster_id}" in out.stdout
    out = kraftwire("metadata-quorum", "--bootstrap-controller", f"{dead},127.0.0.1:2", "--timeout", "3",
                    "describe", "--status")
    assert out.returncode == ExitCode.UNREACHABLE and out.stderr.count("error: ") == 1, out.stderr
    assert "none of 127.0.0.1:1, 127.0.0.1:2 answered" in out.stderr


def test_acls_follow_the_active_controller_from_any_voter(quorum) -> None:
    status = quorum.wait_status(lambda s: s["LeaderId"] > 0, [1])
    followers = [n for n in (1, 2, 3) if n != status["LeaderId"]]
    addrs = ",".join(quorum.addr(n) for n in followers)
    out = kraftwire("acls", "--bootstrap-controller", addrs, "--add", "--allow-principal", "User:alice",
                    "--operation", "Read", "--topic", "orders")
    assert out.returncode == 0, out.stderr
    assert "Adding ACLs for resource `TOPIC:orders`: User:alice from * ALLOW READ" in out.stdout
    out = kraftwire("acls", "--bootstrap-controller", quorum.addr(followers[0]), "--list", "--topic", "orders")
    assert out.returncode == 0 and "principal=User:alice" in out.stdout, out


def test_timeout_is_honoured_against_a_stopped_node(quorum) -> None:
    status = quorum.wait_status(lambda s: s["LeaderId"] > 0, [1, 2, 3])
    victim = next(n for n in (1, 2, 3) if n != status["LeaderId"])
    quorum.kill(victim, signal.SIGSTOP)
    try:
        started = time.monotonic()
        out = kraftwire("metadata-quorum", "--bootstrap-controller", quorum.addr(victim), "--timeout", "2",
                        "describe", "--status")
        elapsed = time.monotonic() - started
    finally:
        quorum.kill(victim, signal.SIGCONT)
    assert out.returncode == ExitCode.UNREACHABLE, out.stderr
    assert "within --timeout 2 s" in out.stderr and "Traceback" not in out.stderr
    assert elapsed < 20   # bounded by --timeout plus interpreter start, not the default 10 s per request


def test_console_consumer_flags_and_hidden_noops(quorum) -> None:
    import json

    addrs = f"127.0.0.1:1,{quorum.addr(1)}"
    started = time.monotonic()
    out = kraftwire("console-consumer", "--bootstrap-server", addrs, "--from-beginning", "--timeout-ms", "1500")
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - started < 30      # NoOps every 100 ms no longer keep it alive
    types = [json.loads(line).get("payload", {}).get("type") for line in out.stdout.splitlines()]
    assert types and "NoOpRecord" not in types and "FeatureLevelRecord" in types
    out = kraftwire("console-consumer", "--bootstrap-server", addrs, "--from-beginning", "--include-noop",
                    "--max-messages", "12")
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 0 and len(lines) == 12
    assert any(r["payload"]["type"] == "NoOpRecord" for r in lines)
