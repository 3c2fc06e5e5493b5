"""`kraftwire storage recover-as-single-voter` on real processes (issue #23, item 5): three dynamic voters,
two killed with kill -9 for good, the third stopped and recovered; it leads alone with every committed
write, and a controller is added back with add-controller."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from .test_voter_changes_process import DynamicCluster

pytestmark = [pytest.mark.processes, pytest.mark.slow]
WRITES = 12


def _kraftwire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=90)


def _acl(c: DynamicCluster, node: int, *args: str) -> subprocess.CompletedProcess:
    return _kraftwire("acls", "--bootstrap-controller", c.addr(node), *args)


def _listed(c: DynamicCluster, node: int) -> set[str]:
    out = _acl(c, node, "--list")
    assert out.returncode == 0, out.stderr
    return {f"topic-{i}" for i in range(WRITES) if f"topic-{i}" in out.stdout}


def _log_end(c: DynamicCluster, leader: int, node: int) -> int:
    rows = (c.describe(leader, "--replication") or {}).get("Replication", [])
    return next((r["LogEndOffset"] for r in rows if r["NodeId"] == node), -1)


def _wait(pred, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.3)


def test_the_survivor_of_a_lost_majority_becomes_a_one_voter_quorum(tmp_path):
    c = DynamicCluster(tmp_path, 3, joining=1)   # node 4: formatted --no-initial-controllers, added back later
    try:
        for i in (1, 2, 3):
            c.start(i)
        st = c.wait_status(lambda s: s.get("LeaderId", -1) >= 0 and sorted(s["CurrentVoters"]) == [1, 2, 3],
                           [1, 2, 3], 60)
        for i in range(WRITES):   # acknowledged writes: committed by the quorum
            out = _acl(c, st["LeaderId"], "--add", "--allow-principal", f"User:u{i}", "--operation", "Read",
                       "--topic", f"topic-{i}")
            assert out.returncode == 0, out.stderr
        # The majority is lost for good: the survivor is a voter that was not leading (the worst case).
        survivor = next(i for i in (1, 2, 3) if i != st["LeaderId"])
        # It holds every committed write (it had fetched them): what the test then checks is that recovery
        # keeps them. (One behind the high watermark would lose the tail: the tool says so, it cannot help it.)
        hw = c.describe(st["LeaderId"])["HighWatermark"]
        _wait(lambda: _log_end(c, st["LeaderId"], survivor) >= hw)
        for i in (1, 2, 3):
            if i != survivor:
                c.kill(i, signal.SIGKILL)
        c.kill(survivor, signal.SIGTERM)
        cfg = str(c.configs[survivor - 1])
        refused = _kraftwire("storage", "recover-as-single-voter", "-c", cfg)
        assert refused.returncode == 2 and "--i-understand-data-loss" in refused.stderr, refused.stderr
        assert "Committed for certain" in refused.stdout and "Not proven committed" in refused.stdout
        done = _kraftwire("storage", "recover-as-single-voter", "-c", cfg, "--i-understand-data-loss")
        assert done.returncode == 0, done.stderr
        assert f"Node {survivor} is now the only voter" in done.stdout and "add-controller" in done.stdout
        c.start(survivor)
        c.wait_status(lambda s: s["LeaderId"] == survivor and s["CurrentVoters"] == [survivor], [survivor], 60)
        assert _listed(c, survivor) == {f"topic-{i}" for i in range(WRITES)}, "every acknowledged write is there"
        out = _acl(c, survivor, "--add", "--allow-principal", "User:after", "--operation", "Read", "--topic", "after")
        assert out.returncode == 0, out.stderr   # the one-voter quorum commits
        # Add a controller back (KIP-853): node 4 fetches as an observer, then add-controller.
        c.start(4)
        c.wait_status(lambda s: 4 in s["CurrentObservers"], [survivor], 60)
        added = _kraftwire("metadata-quorum", "--bootstrap-controller", c.addr(survivor), "--timeout", "20",
                           "--command-config", str(c.configs[3]), "add-controller")
        assert added.returncode == 0, added.stderr
        c.wait_status(lambda s: sorted(s["CurrentVoters"]) == sorted([survivor, 4]), [survivor, 4], 60)
        assert _listed(c, 4) == {f"topic-{i}" for i in range(WRITES)}
    finally:
        c.stop_all()
