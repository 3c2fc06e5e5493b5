"""Wiped-voter protection on real processes: a voter whose disk was wiped and re-formatted re-joins
(votes for nobody, never stands) until it holds the committed log again, then is an ordinary voter."""

from __future__ import annotations

import shutil
import signal
import time

from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config

from .harness import Cluster

MARKER = "__cluster_metadata-0/rejoining"
REJOINED = "__cluster_metadata-0: re-joined the quorum"   # (the offsets quorum re-joins on its own too)


def since_restart(c: Cluster, node: int) -> str:
    """The node's log since its second start (the first was the fresh quorum's boot)."""
    text = c.log_text(node)
    first = text.find(f"node {node} starting:")
    second = text.find(f"node {node} starting:", first + 1)
    return "" if second < 0 else text[second:]


def test_wiped_and_reformatted_voter_rejoins_then_votes_again(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        c.start_all()
        status = c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 5, [1, 2, 3])
        for n in (1, 2, 3):  # a fresh quorum: every voter re-joined at once (all at epoch 0)
            assert not (c.data_dir(n) / MARKER).exists()
        leader = status["LeaderId"]
        victim = next(n for n in (1, 2, 3) if n != leader)
        c.kill(victim, signal.SIGKILL)
        shutil.rmtree(c.data_dir(victim))                     # the disk is lost...
        format_storage(load_config(c.configs[victim - 1]), c.cluster_id, quiet=True)   # ...and re-formatted
        c.start(victim)
        after = c.wait_status(lambda s: s["HighWatermark"] > status["HighWatermark"] + 5, [leader])
        deadline = time.monotonic() + 30
        while REJOINED not in since_restart(c, victim):   # caught up: the marker goes
            assert time.monotonic() < deadline, since_restart(c, victim)[-2000:]
            time.sleep(0.1)
        while (c.data_dir(victim) / MARKER).exists():   # its unlink is queued for the disk worker
            assert time.monotonic() < deadline, "the re-join marker stayed after the node re-joined"
            time.sleep(0.05)
        text = since_restart(c, victim)
        assert "fresh, or wiped and re-formatted" in text and REJOINED in text
        assert f"[RaftManager id={victim}] Granted vote" not in text.split(REJOINED)[0]
        # An ordinary voter again: with the old leader gone the other two elect a new one.
        c.kill(leader, signal.SIGKILL)
        others = [n for n in (1, 2, 3) if n != leader]
        c.wait_status(lambda s: s["LeaderId"] in others and s["LeaderEpoch"] > after["LeaderEpoch"], others)
    finally:
        c.stop_all()
