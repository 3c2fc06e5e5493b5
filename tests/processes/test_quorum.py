"""A real 3-process quorum on 127.0.0.1: election, leader kill -9, SIGSTOP, full restart, wrong cluster."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from kraftwire.protocol.records import decode_batches
from kraftwire.storage.meta_properties import MetaProperties, random_uuid, write_meta

from .harness import Cluster

pytestmark = pytest.mark.processes


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, 3)
    yield c
    c.stop_all()


def committed_log(c: Cluster, node: int, upto: int) -> list[tuple[int, int, bytes | None]]:
    """(offset, epoch, value) of every record below ``upto`` in a node's segments (process stopped)."""
    out = []
    for seg in sorted((c.data_dir(node) / "__cluster_metadata-0").glob("*.log")):
        for b in decode_batches(seg.read_bytes()):
            for i, r in enumerate(b.records):
                if b.base_offset + i < upto:
                    out.append((b.base_offset + i, b.leader_epoch, r.value))
    return out


def test_one_leader_all_voters_and_failover_after_kill9(cluster):
    cluster.start_all()
    status = cluster.wait_status(lambda s: s["LeaderId"] in (1, 2, 3) and s["HighWatermark"] > 2, [1, 2, 3])
    assert status["CurrentVoters"] == [1, 2, 3] and status["CurrentObservers"] == []
    old_leader, old_epoch, old_hw = status["LeaderId"], status["LeaderEpoch"], status["HighWatermark"]
    cluster.kill(old_leader, signal.SIGKILL)
    survivors = [n for n in (1, 2, 3) if n != old_leader]
    new = cluster.wait_status(lambda s: s["LeaderId"] in survivors and s["LeaderEpoch"] > old_epoch
                              and s["HighWatermark"] > old_hw + 5, survivors)
    assert new["LeaderId"] != old_leader
    # The killed node comes back, catches up, and the quorum is whole again.
    cluster.start(old_leader)
    deadline = time.monotonic() + 30
    while True:
        repl = cluster.describe(new["LeaderId"], "--replication")
        rows = {r["NodeId"]: r for r in (repl or {}).get("Replication", [])}
        if set(rows) == {1, 2, 3} and rows[old_leader]["LogEndOffset"] > new["HighWatermark"]:
            break
        assert time.monotonic() < deadline, f"restarted node {old_leader} did not catch up: {repl}"
        time.sleep(0.3)


def test_sigstop_follower_then_resume_and_full_restart_keeps_committed_log(cluster):
    cluster.start_all()
    status = cluster.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 2, [1, 2, 3])
    leader = status["LeaderId"]
    follower = next(n for n in (1, 2, 3) if n != leader)
    cluster.kill(follower, signal.SIGSTOP)
    hw = status["HighWatermark"]
    during = cluster.wait_status(lambda s: s["HighWatermark"] > hw + 5, [leader])  # the other two commit
    cluster.kill(follower, signal.SIGCONT)
    cluster.wait_status(lambda s: s["HighWatermark"] > during["HighWatermark"], [leader])
    final = cluster.describe(leader)
    cluster.stop_all()
    upto = final["HighWatermark"]
    logs = [committed_log(cluster, n, upto) for n in (1, 2, 3)]
    assert len(logs[0]) >= upto - 1
    assert logs[0] == logs[1] == logs[2]
    # Restart everything: same committed prefix, and progress resumes past it.
    cluster.procs.clear()
    cluster.start_all()
    cluster.wait_status(lambda s: s["HighWatermark"] > upto + 3, [1, 2, 3])
    cluster.stop_all()
    after = [committed_log(cluster, n, upto) for n in (1, 2, 3)]
    assert after[0] == logs[0] and after[1] == logs[1] and after[2] == logs[2]


def test_node_of_another_cluster_is_refused(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        # Node 3's storage claims another cluster: its peers reject it, the other two still form a quorum.
        meta_dir = c.data_dir(3)
        write_meta(meta_dir, MetaProperties(random_uuid(), 3, random_uuid()))
        c.start_all()
        status = c.wait_status(lambda s: s["LeaderId"] in (1, 2) and s["HighWatermark"] > 3, [1, 2])
        assert status["LeaderId"] != 3
        repl = c.describe(status["LeaderId"], "--replication")
        row3 = next(r for r in repl["Replication"] if r["NodeId"] == 3)
        assert row3["LogEndOffset"] <= 0  # it never replicated anything
        # Both sides say so at WARN, naming the peer, once per peer and request kind.
        deadline = time.monotonic() + 20
        # Node 3 (on an empty directory) first probes its peers with Fetch, then stands with Votes.
        # (the metadata quorum's lines; the offsets quorum says the same under [OffsetsRaft id=3])
        refused = re.compile(r"\[RaftManager id=3\] Node 1 refused our (Vote|Fetch) with INCONSISTENT_CLUSTER_ID")
        while not refused.search(c.log_text(3)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(refused.findall(c.log_text(3))) == 1
        leader = status["LeaderId"]
        assert re.search(r"\[RaftManager id=\d\] Rejected (Vote|Fetch) from node 3: its cluster id", c.log_text(leader))
        text = "".join(c.log_text(n) for n in (1, 2))
        assert f"Completed transition to LeaderState(epoch={status['LeaderEpoch']}, leader={leader})" in text
        assert "Granted vote to candidate" in text or "Voter" in text
    finally:
        c.stop_all()


def test_node_id_mismatch_refuses_to_start(tmp_path):
    c = Cluster(tmp_path, 1)
    write_meta(c.data_dir(1), MetaProperties(c.cluster_id, 7, random_uuid()))
    out = subprocess.run([sys.executable, "-m", "kraftwire", "server", str(c.configs[0])], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 4   # ExitCode.STORAGE
    assert "node.id=7" in out.stderr and "node.id=1" in out.stderr
