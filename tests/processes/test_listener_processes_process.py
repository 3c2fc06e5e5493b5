"""kraftwire.listener.processes in a real `kraftwire server`: its listener processes serve DescribeQuorum, and
when the core process is killed they exit (their socketpair reads end of file) instead of serving on."""

from __future__ import annotations

import os
import signal
import time

import pytest

from .harness import Cluster

pytestmark = pytest.mark.processes


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_listener_processes_serve_and_exit_with_the_core(tmp_path):
    c = Cluster(tmp_path, 1)
    try:
        proc = c.start(1, "kraftwire.listener.processes=2")
        status = c.wait_status(lambda s: s.get("LeaderId") == 1, [1], timeout=30)
        assert status["HighWatermark"] > 0
        deadline = time.monotonic() + 10
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        listeners = _children(proc.pid)
        assert len(listeners) == 2, c.log_text(1)
        assert "through 2 listener processes" in c.log_text(1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)
        deadline = time.monotonic() + 10
        while any(_running(p) for p in listeners) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_running(p) for p in listeners), c.log_text(1)
        assert "the node's core is gone" in c.log_text(1)
    finally:
        c.stop_all()
