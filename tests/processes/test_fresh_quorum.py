"""A fresh quorum with a minority of its voters never started elects (docs/raft.md, *Fresh quorums*): within
2 x the election timeout of the start of the voter that completed the majority, as Kafka's would."""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest

from .harness import Cluster
from .test_voter_changes_process import DynamicCluster

pytestmark = pytest.mark.processes

ELECTION_TIMEOUT_MS = 1000   # Kafka's default; the harness's FAST 500 ms would leave no room for a loaded box
STAMP = r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO "


def stamp(text: str, pattern: str) -> datetime | None:
    """Time of the first log line matching ``pattern`` (after the timestamp and level)."""
    m = re.search(STAMP + pattern, text, re.MULTILINE)
    return None if m is None else datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")


def elect_with_voters_missing(tmp_path, voters: int, started: list[int], dynamic: bool = False) -> float:
    """Start only ``started`` of a fresh ``voters``-voter quorum; the seconds from the last start to a leader.

    ``dynamic``: kraft.version 1 (format --initial-controllers, voters with directory ids in the log)."""
    c = DynamicCluster(tmp_path, voters) if dynamic else Cluster(tmp_path, voters)
    try:
        for n in started:
            c.start(n, f"controller.quorum.election.timeout.ms={ELECTION_TIMEOUT_MS}")
        deadline = time.monotonic() + 60
        while not (leaders := [n for n in started if f"[RaftManager id={n}] Completed transition to LeaderState"
                               in c.log_text(n)]):
            assert time.monotonic() < deadline, {n: c.log_text(n)[-3000:] for n in started}
            time.sleep(0.1)
        # What an operator sees: DescribeQuorum answered by the leader (before, NOT_LEADER_OR_FOLLOWER forever).
        status = c.wait_status(lambda s: s["LeaderId"] == leaders[0], leaders, timeout=30)
        assert status["CurrentVoters"] == list(range(1, voters + 1))
        logs = {n: c.log_text(n) for n in started}
    finally:
        c.stop_all()
    starts = [stamp(logs[n], rf"node {n} starting:") for n in started]
    elected = [stamp(logs[n], rf"\[RaftManager id={n}\] Completed transition to LeaderState") for n in started]
    assert None not in starts and any(elected), logs
    for n in started:
        # Static: the empty-directory check ends on a fresh majority. kraft.version 1: the directory id in the
        # voter set says who the voter is (as Kafka); nothing to re-join.
        assert (f"[RaftManager id={n}] A fresh quorum:" in logs[n]) != dynamic
        assert ("__cluster_metadata-0: voter started on an empty directory" in logs[n]) != dynamic
    seconds = (min(t for t in elected if t is not None) - max(starts)).total_seconds()
    print(f"{voters} voters{' (kraft.version 1)' if dynamic else ''}, {voters - len(started)} never started: "
          f"leader {seconds:.3f} s after the last start")
    return seconds


def test_fresh_three_voters_with_one_never_started_elect(tmp_path):
    seconds = elect_with_voters_missing(tmp_path, 3, [1, 2])
    assert 0 <= seconds < 2 * ELECTION_TIMEOUT_MS / 1000


@pytest.mark.slow
def test_fresh_five_voters_with_two_never_started_elect(tmp_path):
    seconds = elect_with_voters_missing(tmp_path, 5, [1, 3, 5])
    assert 0 <= seconds < 2 * ELECTION_TIMEOUT_MS / 1000


def test_fresh_dynamic_quorum_with_one_never_started_elects(tmp_path):
    seconds = elect_with_voters_missing(tmp_path, 3, [1, 3], dynamic=True)
    assert 0 <= seconds < 2 * ELECTION_TIMEOUT_MS / 1000
