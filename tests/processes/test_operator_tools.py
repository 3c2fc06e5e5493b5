"""The operator tools (metadata-shell --at-offset, metadata-diff, what-if, doctor) against a live
kraftwire quorum of three combined nodes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from .harness import Cluster

pytestmark = pytest.mark.processes

PROPS = ["broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=300"]


def rack(node: int) -> str:
    return f"broker.rack={'a' if node == 1 else 'b'}"


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
            c.start(node, *PROPS, rack(node))
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


def all_unfenced(c: Cluster) -> None:
    """Wait until the three brokers are unfenced (a previous test may have restarted one)."""
    wait_for(lambda: kw("metadata-shell", "--bootstrap-controller", controllers(c), "cat",
                        "/cluster/brokers/*/fenced").stdout.split() == ["false"] * 3, 90, "three unfenced brokers")


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


def image_partitions(c: Cluster) -> dict[str, dict[str, str]]:
    out = kw("metadata-shell", "--bootstrap-controller", controllers(c), "find", "/topics")
    tree = kw("metadata-shell", "--bootstrap-controller", controllers(c), "tree", "/topics")
    assert out.returncode == 0 and tree.returncode == 0
    parts: dict[str, dict[str, str]] = {}
    topic = partition = None
    for line in tree.stdout.splitlines()[1:]:
        depth = (len(line) - len(line.lstrip())) // 2
        key, _, value = line.strip().partition(": ")
        if depth == 1:
            topic = key.rstrip(":")
        elif depth == 2 and key.endswith(":"):
            partition = key.rstrip(":")
            parts[f"{topic}-{partition}"] = {}
        elif depth == 3:
            parts[f"{topic}-{partition}"][key] = value
    return parts


def test_what_if_predicts_what_the_controller_does_when_the_broker_dies(quorum) -> None:
    c = quorum
    all_unfenced(c)
    c.admin.create_topics([NewTopic("wi-three", 3, 3, topic_configs={"min.insync.replicas": "3"}),
                           NewTopic("wi-one", 3, 1)])
    wait_for(lambda: {"wi-three-2", "wi-one-2"} <= set(image_partitions(c)), 30, "both topics in the image")
    time.sleep(1)     # let every ISR settle
    text = kw("what-if", "--bootstrap-controller", controllers(c), "--fail", "broker=3")
    assert text.returncode == 0, text.stderr
    doc = json.loads(kw("what-if", "--bootstrap-controller", controllers(c), "--fail", "broker=3", "--json").stdout)
    assert doc["failed"] == [3] and doc["recordsTheControllerWouldWrite"] > 0
    before = image_partitions(c)
    offline = {f"{p['topic']}-{p['partition']}" for p in doc["offline"]}
    on_three = {k for k, p in before.items() if k.startswith("wi-one") and p["replicas"] == "[3]"}
    assert offline == on_three and on_three, (offline, before)
    assert {f"{p['topic']}-{p['partition']}" for p in doc["underMinIsr"]} >= {"wi-three-0", "wi-three-1",
                                                                            "wi-three-2"}
    moves = {f"{p['topic']}-{p['partition']}": p for p in doc["leaderMoves"]}
    assert moves and all(p["leaderBefore"] == 3 and p["leaderAfter"] != 3 for p in moves.values())
    for name in offline:
        assert f"  {name}  replicas [3]: leader 3 -> none" in text.stdout
    by_rack = kw("what-if", "--bootstrap-controller", controllers(c), "--fail", "rack=b")
    assert by_rack.returncode == 0 and "failing brokers 2 (rack b), 3 (rack b)" in by_rack.stdout
    doc_rack = json.loads(kw("what-if", "--bootstrap-controller", controllers(c), "--fail", "rack=b",
                             "--json").stdout)
    assert {f"{p['topic']}-{p['partition']}" for p in doc_rack["offline"]} == {
        k for k, p in before.items() if k.startswith("wi-one") and p["replicas"] != "[1]"}
    bad = kw("what-if", "--bootstrap-controller", controllers(c), "--fail", "rack=z")
    assert bad.returncode == 2 and bad.stderr == "error: --fail: no broker in rack 'z' (racks: a, b)\n"
    assert image_partitions(c) == before       # nothing was written
    c.kill(3)
    try:
        wait_for(lambda: kw("metadata-shell", "--bootstrap-controller", c.addr(1) + "," + c.addr(2), "cat",
                            "/cluster/brokers/3/fenced").stdout.strip() == "true", 60, "broker 3 fenced")
        after = {k: v for k, v in image_partitions(c).items() if k.startswith("wi-")}
        predicted = {f"{p['topic']}-{p['partition']}": p for key in ("offline", "leaderMoves", "underMinIsr")
                     for p in doc[key]}
        for name, p in predicted.items():
            real_leader = int(after[name]["leader"])
            assert real_leader == p["leaderAfter"], (name, after[name], p)
            assert json.loads(after[name]["isr"]) == p["isrAfter"], (name, after[name], p)
    finally:
        c.start(3, *PROPS, rack(3))


def doctor(c: Cluster, *extra: str) -> subprocess.CompletedProcess:
    return kw("doctor", "--bootstrap-controller", controllers(c), *extra)


def test_doctor_explains_a_dead_node_then_a_lost_quorum(quorum) -> None:
    c = quorum
    all_unfenced(c)
    c.admin.create_topics([NewTopic("dr-three", 3, 3, topic_configs={"min.insync.replicas": "3"}),
                           NewTopic("dr-one", 3, 1)])
    def healthy_here() -> bool:   # earlier tests' topics may still be short of replicas: judge ours only
        found = json.loads(doctor(c, "--json").stdout)["findings"]
        return not [f for f in found if f["severity"] == "problem" and (
            f["area"] != "partitions" or any(e.startswith("dr-") for e in f["evidence"]))]

    wait_for(healthy_here, 60, "a healthy report")
    healthy = doctor(c)
    assert "ok      [quorum] node " in healthy.stdout and "ok      [brokers] brokers 1, 2, 3 are registered" \
        in healthy.stdout and "PROBLEM [quorum]" not in healthy.stdout
    c.kill(3)
    try:
        # Fenced first (the lease), then explained as not fetching once its last fetch is stale: wait for both.
        stopped = re.compile(r"PROBLEM \[brokers\] broker 3 is fenced: it (has not fetched|stopped fetching|is not "
                             r"fetching)")
        sick = wait_for(lambda: stopped.search((r := doctor(c)).stdout) and r, 60,
                        "broker 3 reported fenced for not fetching")
        assert sick.returncode == 1
        assert "node 3 (" + c.addr(3) + "): unreachable" in sick.stdout
        offline = [ln for ln in sick.stdout.splitlines() if re.match(r"\s+- dr-one-\d: replicas \[3\]", ln)]
        assert offline and all("(3 fenced)" in ln for ln in offline)
        assert re.search(r"\s+- dr-three-0: replicas \[[0-9, ]+\], isr \[[12], [12]\].*min.insync.replicas 3",
                         sick.stdout)
        doc = json.loads(doctor(c, "--json").stdout)
        assert {f["area"] for f in doc["findings"] if f["severity"] == "problem"} == {"quorum", "brokers",
                                                                                     "partitions"}
        c.kill(2)
        lost = wait_for(lambda: (r := doctor(c)).stdout.startswith("PROBLEM [quorum] no leader answers") and r,
                        60, "no leader reported")
        assert "a leader needs the votes of 2 of 3, and only 1 are reachable" in lost.stdout
        assert lost.returncode == 1
    finally:
        for node in (2, 3):
            if c.procs[node].poll() is not None:
                c.start(node, *PROPS, rack(node))
    one = kw("doctor", "--bootstrap-controller", "127.0.0.1:1")
    assert one.returncode == 7 and "no controller answered" in one.stdout


def test_audit_names_who_created_and_deleted_a_topic_across_a_failover(quorum) -> None:
    c = quorum
    all_unfenced(c)
    admin = KafkaAdminClient(bootstrap_servers=[c.client_addr(n) for n in (1, 2, 3)], request_timeout_ms=5000,
                             client_id="audit-creator")
    admin.create_topics([NewTopic("audited", 1, 3, topic_configs={"retention.ms": "1000"})])
    admin.close()
    dirs = [a for n in (1, 2, 3) for a in ("--log-dir", str(c.data_dir(n)))]
    first = wait_for(lambda: (r := kw("audit", *dirs, "--topic", "audited", "--json")).returncode == 0
                     and json.loads(r.stdout)["entries"] and r, 30, "the creation audited")
    [created] = json.loads(first.stdout)["entries"]
    assert created["api"] == "CreateTopics" and created["client_id"] == "audit-creator"
    assert created["forwarded"] is True and created["principal"] == "User:ANONYMOUS"
    assert created["status"] == "in the log"
    assert "topic created" in created["what"] and "config retention.ms=1000" in created["what"]
    leader = created["node_id"]
    c.kill(leader)
    try:
        rest = [n for n in (1, 2, 3) if n != leader]
        others = ",".join(c.client_addr(n) for n in rest)

        def deleted() -> bool:
            a = KafkaAdminClient(bootstrap_servers=others, request_timeout_ms=5000, client_id="audit-deleter")
            try:
                a.delete_topics(["audited"], timeout_ms=8000)
                return True
            finally:
                a.close()

        wait_for(deleted, 60, "the topic deleted through the new controller")
        rows = wait_for(lambda: len(r := json.loads(kw("audit", *dirs, "--topic", "audited", "--json").stdout)
                                    ["entries"]) >= 2 and r, 30, "the deletion audited")
        gone = rows[-1]
        assert gone["api"] == "DeleteTopics" and gone["client_id"] == "audit-deleter" and gone["what"] == "topic deleted"
        assert gone["node_id"] != leader          # each voter that led keeps its own writes
        text = kw("audit", *dirs, "--topic", "audited").stdout
        assert f"CreateTopics  offsets {created['first_offset']}-{created['last_offset']}  User:ANONYMOUS  client " \
               f"audit-creator from " in text and "DeleteTopics" in text and "client audit-deleter" in text
        mine = json.loads(kw("audit", *dirs, "--principal", "User:ANONYMOUS", "--json").stdout)["entries"]
        assert {r["api"] for r in mine} >= {"CreateTopics", "DeleteTopics", "BrokerHeartbeat"}
        assert json.loads(kw("audit", *dirs, "--principal", "User:nobody", "--json").stdout) == {"entries": []}
    finally:
        c.start(leader, *PROPS, rack(leader))
    damaged = c.data_dir(gone["node_id"]) / "kraftwire-metadata-audit.jsonl"
    with open(damaged, "a") as f:
        f.write('{"first_offset": 3, "torn\n')
    out = kw("audit", *dirs, "--topic", "audited")
    assert out.returncode == 0 and "DeleteTopics" in out.stdout
    assert re.search(r"warning: .*kraftwire-metadata-audit.jsonl: line \d+: not an audit entry", out.stderr)
    none = kw("audit", "--log-dir", str(c.root), "--topic", "audited")
    assert none.returncode == 4 and "no kraftwire-metadata-audit.jsonl in" in none.stderr
