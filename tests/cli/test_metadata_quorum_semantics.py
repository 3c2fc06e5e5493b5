"""kafka-metadata-quorum.sh's numbers: Lag and MaxFollowerLag from the leader's log end offset,
MaxFollowerLagTimeMs from the leader's last caught-up time (MetadataQuorumCommand, Kafka 3.9)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from kraftwire.cli.bootstrap import parse_bootstrap
from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.cli.metadata_quorum import _result


def replica(i: int, leo: int, fetch: int = -1, caught: int = -1) -> NS:
    return NS(replica_id=i, log_end_offset=leo, last_fetch_timestamp=fetch, last_caught_up_timestamp=caught)


def quorum(voters, observers=(), leader=1, hw=90) -> dict:
    part = NS(leader_id=leader, leader_epoch=4, high_watermark=hw, current_voters=list(voters),
              observers=list(observers))
    return _result(NS(cluster_id="c"), None, part)


def test_lag_is_measured_from_the_leaders_log_end_offset() -> None:
    r = quorum([replica(2, 95, 1000, 900), replica(1, 100, 1200, 1200), replica(3, 80, 1100, 700)],
               [replica(7, 60, 1000, 500)])
    rows = {row["NodeId"]: row for row in r["Replication"]}
    assert [row["Status"] for row in r["Replication"]] == ["Leader", "Follower", "Follower", "Observer"]
    assert [row["NodeId"] for row in r["Replication"]] == [1, 2, 3, 7]
    assert (rows[1]["Lag"], rows[2]["Lag"], rows[3]["Lag"], rows[7]["Lag"]) == (0, 5, 20, 40)
    assert r["MaxFollowerLag"] == 20           # 100 - 80, not hw - 80
    assert r["MaxFollowerLagTimeMs"] == 500    # leader caught up 1200, node 3 at 700
    assert r["HighWatermark"] == 90


def test_caught_up_quorum_and_unknown_timestamps() -> None:
    # the leader comes first among the lowest: Kafka reports 0 and 0
    r = quorum([replica(1, 100, 5, 5), replica(2, 100, 5, 4)])
    assert (r["MaxFollowerLag"], r["MaxFollowerLagTimeMs"]) == (0, 0)
    # a follower first among equals: the lag is 0 but the time is the leader's minus its own
    r = quorum([replica(2, 100, 5, 4), replica(1, 100, 5, 5)])
    assert (r["MaxFollowerLag"], r["MaxFollowerLagTimeMs"]) == (0, 1)
    r = quorum([replica(1, 100, 5, 5), replica(2, 10)])
    assert (r["MaxFollowerLag"], r["MaxFollowerLagTimeMs"]) == (90, -1)


def test_bootstrap_lists() -> None:
    assert parse_bootstrap("a:1, b:2,[::1]:3") == [("a", 1), ("b", 2), ("::1", 3)]
    for bad in ("a", "a:x", ":1", "", "a:70000"):
        with pytest.raises(OperatorError) as e:
            parse_bootstrap(bad, "--bootstrap-controller")
        assert e.value.code == ExitCode.USAGE and "--bootstrap-controller" in str(e.value)
