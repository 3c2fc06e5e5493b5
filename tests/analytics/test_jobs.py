"""Each analytics job on the scripted demo log (see kraftwire.analytics.scenario.demo_log): the exact
intervals, counts and gaps the script implies, worked out by hand from its timetable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraftwire.analytics.scenario import DEMO_START_MS, MINUTE, ScenarioLog
from kraftwire.cli.main import main

pytestmark = pytest.mark.spark
T0 = DEMO_START_MS


def m(minutes: float | None) -> int | None:
    return None if minutes is None else T0 + round(minutes * MINUTE)


@pytest.fixture(scope="module")
def ev(spark, demo_dir):
    from kraftwire.analytics import jobs

    frame = jobs.events(spark.read.format("kraftwire").load(str(demo_dir))).persist()
    yield frame
    frame.unpersist()


def test_events_skip_the_snapshot_when_the_log_starts_at_zero(spark, demo_dir, ev):
    from kraftwire.analytics import jobs

    base = jobs.baseline(spark.read.format("kraftwire").load(str(demo_dir)))
    assert (base.log_start, base.snapshot_end) == (0, None)
    assert ev.count() == 46 and ev.filter("from_snapshot").count() == 0


def test_membership_intervals(ev):
    from kraftwire.analytics import jobs

    got = sorted((r["broker_id"], r["broker_epoch"], r["state"], r["start_ms"], r["end_ms"], r["ended_by"])
                 for r in jobs.membership(ev).collect())
    expected = sorted([
        (101, 2, "registered", m(1), None, None),
        (101, 2, "fenced", m(1), m(2), "unfenced"),
        (101, 2, "unfenced", m(2), None, None),
        (102, 3, "registered", m(1), m(105), "reregistered"),
        (102, 3, "fenced", m(1), m(2), "unfenced"),
        (102, 3, "unfenced", m(2), m(90), "controlled_shutdown"),
        (102, 3, "controlled_shutdown", m(90), m(91), "fenced"),
        (102, 3, "fenced", m(91), m(105), "reregistered"),
        (102, 31, "registered", m(105), None, None),
        (102, 31, "fenced", m(105), m(106), "unfenced"),
        (102, 31, "unfenced", m(106), None, None),
        (103, 4, "registered", m(1), None, None),
        (103, 4, "fenced", m(1), m(2), "unfenced"),
        (103, 4, "unfenced", m(2), m(40), "fenced"),
        (103, 4, "fenced", m(40), m(70), "unfenced"),
        (103, 4, "unfenced", m(70), None, None),
        (104, 35, "registered", m(120), m(170), "unregistered"),
        (104, 35, "fenced", m(120), m(121), "unfenced"),
        (104, 35, "unfenced", m(121), m(170), "unregistered"),
    ])
    assert got == expected


def test_fencing_episodes(ev):
    from kraftwire.analytics import jobs

    got = sorted((r["broker_id"], r["cause"], r["start_ms"], r["duration_ms"], r["ended_by"])
                 for r in jobs.fencing(ev).collect())
    assert got == sorted([
        (101, "registration", m(1), MINUTE, "unfenced"),
        (102, "registration", m(1), MINUTE, "unfenced"),
        (102, "controlled_shutdown", m(91), 14 * MINUTE, "reregistered"),
        (102, "registration", m(105), MINUTE, "unfenced"),
        (103, "registration", m(1), MINUTE, "unfenced"),
        (103, "fenced_while_active", m(40), 30 * MINUTE, "unfenced"),
        (104, "registration", m(120), MINUTE, "unfenced"),
    ])


def test_elections_epochs_and_gaps(ev):
    from kraftwire.analytics import jobs

    got = [(r["epoch"], r["leader_id"], r["timestamp_ms"], r["voters"], r["granting_voters"], r["previous_epoch"],
            r["epochs_skipped"], r["gap_ms"], r["records"]) for r in jobs.elections(ev).collect()]
    assert got == [
        (1, 1, m(0), [1, 2, 3], [1, 2], None, None, None, 20),
        (3, 2, m(60), [1, 2, 3], [2, 1], 1, 1, 20 * MINUTE, 23),   # epoch 1's last write: the fencing at 40
        (4, 1, m(160), [1, 2, 3], [1, 2], 3, 0, 10 * MINUTE, 3),   # epoch 3's last write: the deletion at 150
    ]


def test_isr_churn_per_hour_and_top_partitions(ev):
    from kraftwire.analytics import jobs

    hourly, top = jobs.isr_churn(ev, top_n=3)
    got = [(r["topic_name"], r["partition"], r["hour_ms"], r["shrinks"], r["expands"]) for r in hourly.collect()]
    assert sorted(got) == sorted([
        ("orders", 0, m(0), 2, 1), ("orders", 1, m(0), 1, 0), ("orders", 2, m(0), 1, 0),
        ("orders", 0, m(60), 1, 2), ("orders", 1, m(60), 1, 1), ("orders", 2, m(60), 1, 2),
        ("payments", 0, m(60), 1, 0),
        ("orders", 1, m(120), 1, 2), ("audit", 0, m(120), 1, 0),
    ])
    assert [(r["rank"], r["topic_name"], r["partition"], r["shrinks"], r["expands"]) for r in top.collect()] == \
        [(1, "orders", 0, 3, 3), (2, "orders", 1, 3, 3), (3, "orders", 2, 2, 2)]


def test_topic_history(ev):
    from kraftwire.analytics import jobs

    got = [(r["topic_name"], r["created_ms"], r["deleted_ms"], r["lifetime_ms"], r["partitions"], r["in_snapshot"])
           for r in jobs.topics(ev).collect()]
    assert got == [("orders", m(5), None, None, 3, False),
                   ("payments", m(6), m(150), 144 * MINUTE, 1, False),
                   ("audit", m(125), None, None, 1, False)]


def test_a_truncated_log_starts_from_its_snapshot(spark, tmp_path):
    """Segments below a snapshot deleted (as a node does): the snapshot is the baseline."""
    from kraftwire.analytics import jobs
    from kraftwire.raft.log import SnapshotId

    s = ScenarioLog(tmp_path, segment_bytes=600)
    s.at(0).elect(1, 1)
    for b in (1, 2):
        s.at(1).register(b)
        s.heartbeat(b)
    s.at(2).create_topic("t", [[1, 2]])
    sid: SnapshotId = s.at(3).snapshot()
    s.at(10).alter_isr("t", {0: [1]})
    s.at(20).expire(2)
    s.at(30).delete_topic("t")
    s.log.delete_before(sid)
    s.close()
    df = spark.read.format("kraftwire").load(str(tmp_path))
    base = jobs.baseline(df)
    assert base.snapshot_end == sid.end_offset and 0 < base.log_start <= sid.end_offset
    ev = jobs.events(df, base)
    assert ev.filter("NOT from_snapshot").agg({"offset": "min"}).collect()[0][0] == sid.end_offset
    states = sorted((r["broker_id"], r["state"], r["start_ms"], r["end_ms"]) for r in jobs.membership(ev).collect())
    assert states == sorted([(1, "registered", m(3), None), (1, "unfenced", m(3), None),
                             (2, "registered", m(3), None), (2, "unfenced", m(3), m(20)), (2, "fenced", m(20), None)])
    topics = [(r["topic_name"], r["created_ms"], r["deleted_ms"], r["in_snapshot"]) for r in jobs.topics(ev).collect()]
    assert topics == [("t", m(3), m(30), True)]
    churn = [(r["shrinks"], r["expands"]) for r in jobs.isr_churn(ev)[1].collect()]
    assert churn == [(1, 0)]  # only the change after the snapshot; [1,2] -> [1] (2's fencing changes nothing)


def test_cli_writes_parquet_charts_and_summary(spark, demo_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["analytics", "all", "--log-dir", str(demo_dir), "--out", str(out), "--master", "local[2]",
                 "--top", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    summary = (out / "summary.txt").read_text().splitlines()
    assert summary == printed[:len(summary)]
    assert summary == [
        "log: 46 records up to 2026-01-05T02:50:00Z",
        "membership: 4 brokers, 5 registrations; at the end unfenced: 101, 102, 103; unregistered: 104",
        "fencing: 2 episodes after being unfenced (5 more while registering); longest 30m00s broker 103 "
        "from 2026-01-05T00:40:00Z (fenced_while_active); fenced at the end: none",
        "elections: 3 (epochs 1..4; epochs that elected nobody: 1); longest gap 20m00s before epoch 3 (leader 2)",
        "isr-churn: 10 shrinks, 8 expands on 5 partitions; busiest orders-0 (6 changes); "
        "busiest hour 2026-01-05T01:00:00Z (9 changes)",
        "topics: 3 seen, 1 deleted (payments), 2 live (orders, audit)",
    ]
    for png in ("membership", "fencing", "elections", "isr-churn", "topics"):
        assert (out / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    top = spark.read.parquet(str(out / "isr_churn_top.parquet")).orderBy("rank").collect()
    assert [(r["topic_name"], r["partition"]) for r in top] == [("orders", 0), ("orders", 1)]
    assert spark.read.parquet(str(out / "membership.parquet")).count() == 19


def test_cli_single_job_and_errors(spark, demo_dir, tmp_path, capsys):
    out = tmp_path / "one"
    assert main(["analytics", "topics", "--log-dir", str(demo_dir), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["summary.txt", "topics.parquet", "topics.png"]
    assert main(["analytics", "topics", "--log-dir", str(tmp_path / "nope"), "--out", str(out)]) == 2  # USAGE
    assert "no such directory" in capsys.readouterr().err
    assert main(["analytics", "topics", "--bootstrap", "127.0.0.1:1", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "connect" in err[0].lower()
    with pytest.raises(SystemExit):
        main(["analytics", "topics", "--out", str(out)])  # no source


def test_demo_log_verb(tmp_path, capsys):
    assert main(["analytics", "demo-log", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "__cluster_metadata-0").is_dir()
    assert main(["analytics", "demo-log", str(tmp_path / "d")]) == 1
    shutil.rmtree(tmp_path / "d")
    assert main(["analytics", "demo-log", "--no-snapshot", str(tmp_path / "d")]) == 0
    assert not list(Path(tmp_path / "d" / "__cluster_metadata-0").glob("*.checkpoint"))
