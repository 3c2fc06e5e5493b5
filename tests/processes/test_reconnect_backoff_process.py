"""A voter whose two peers are down dials each of them about once a second (reconnect backoff), not at
every Raft retry; its CPU in that state is printed (docs/reliability.md records the figure)."""

from __future__ import annotations

import os
import time

import pytest

from tests.ports import CountingListener

from .harness import Cluster

pytestmark = pytest.mark.processes

WINDOW_S = 4.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/<pid>/stat fields 14 and 15)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_voter_with_both_peers_down_dials_each_at_most_twice_a_second(tmp_path):
    cluster = Cluster(tmp_path, 3)
    down = {node: CountingListener(cluster.base_port + node - 1) for node in (2, 3)}
    try:
        proc = cluster.start(1)
        deadline = time.monotonic() + 30
        while not all(peer.accepted for peer in down.values()):     # the node is up and dialling
            assert proc.poll() is None, cluster.log_text(1)
            assert time.monotonic() < deadline, "node 1 never dialled its peers"
            time.sleep(0.05)
        time.sleep(1.0)                                              # the backoff ramps up in its first second
        before = {node: peer.accepted for node, peer in down.items()}
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(WINDOW_S)
        cpu1, t1 = cpu_seconds(proc.pid), time.monotonic()
        rates = {node: (peer.accepted - before[node]) / (t1 - t0) for node, peer in down.items()}
        print(f"connects/s toward down peers: {rates}; node CPU {100 * (cpu1 - cpu0) / (t1 - t0):.1f}%")
        assert proc.poll() is None
        for node, rate in rates.items():
            assert rate <= 2.0, f"node 1 dialled node {node} {rate:.1f} times a second"
        assert all(peer.accepted > before[node] for node, peer in down.items())   # it still tries
    finally:
        cluster.stop_all()
        for peer in down.values():
            peer.close()
