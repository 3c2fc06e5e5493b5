"""The ``kraftwire`` Spark data source: schema, one partition per file, exact coverage, live reads."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kraftwire.analytics.rows import COLUMN_NAMES, SEGMENT, list_log_files
from kraftwire.analytics.scenario import churn_log
from kraftwire.protocol.records import iter_batches
from tests.ports import free_ports

pytestmark = pytest.mark.spark


def expected_records(root: Path) -> Counter:
    """(file name, offset) of every record in every file, straight from the batch reader."""
    out: Counter = Counter()
    for f in list_log_files(root):
        for batch, _, _ in iter_batches(Path(f.path).read_bytes()):
            for i in range(len(batch.records)):
                out[(Path(f.path).name, batch.base_offset + i)] += 1
    return out


def test_schema_and_one_partition_per_file(spark, demo_dir):
    df = spark.read.format("kraftwire").load(str(demo_dir))
    assert tuple(df.columns) == COLUMN_NAMES
    types = dict(df.dtypes)
    assert (types["offset"], types["timestamp"], types["isr"], types["fenced"]) == \
        ("bigint", "timestamp", "array<int>", "boolean")
    assert df.rdd.getNumPartitions() == len(list_log_files(demo_dir)) == 4


def test_partitions_cover_every_record_exactly_once(spark, demo_dir):
    from pyspark.sql import functions as F

    df = spark.read.format("kraftwire").load(str(demo_dir))
    rows = df.select(F.spark_partition_id().alias("pid"), "source", "offset", "error").collect()
    assert all(r["error"] is None for r in rows)
    assert Counter((r["source"], r["offset"]) for r in rows) == expected_records(demo_dir)
    # Each Spark partition is exactly one file.
    files_per_partition: dict[int, set[str]] = {}
    for r in rows:
        files_per_partition.setdefault(r["pid"], set()).add(r["source"])
    assert sorted(len(v) for v in files_per_partition.values()) == [1, 1, 1, 1]
    assert len({next(iter(v)) for v in files_per_partition.values()}) == 4


def test_many_segments_read_in_parallel_cover_the_log(spark, tmp_path):
    n = churn_log(tmp_path, 6000, partitions=60, per_request=20, segment_bytes=16 << 10)
    segments = [f for f in list_log_files(tmp_path) if f.kind == SEGMENT]
    assert len(segments) > 10
    df = spark.read.format("kraftwire").option("chunkRows", "100").load(str(tmp_path))
    assert df.rdd.getNumPartitions() == len(segments)
    stats = df.selectExpr("count(*) AS n", "count(DISTINCT offset) AS d", "min(offset) AS lo",
                          "max(offset) AS hi", "count(error) AS errors",
                          "sum(CAST(record_type = 'PartitionChangeRecord' AS INT)) AS changes").collect()[0]
    assert (stats["n"], stats["d"], stats["lo"], stats["hi"], stats["errors"]) == (n, n, 0, n - 1, 0)
    assert stats["changes"] > n - 200


def test_single_file_and_partition_directory(spark, demo_dir):
    seg = [f for f in list_log_files(demo_dir) if f.kind == SEGMENT][1]
    one = spark.read.format("kraftwire").load(seg.path)
    assert one.rdd.getNumPartitions() == 1
    assert one.count() == sum(v for (name, _), v in expected_records(demo_dir).items() if name == Path(seg.path).name)
    inner = spark.read.format("kraftwire").load(str(demo_dir / "__cluster_metadata-0"))
    assert inner.count() == sum(expected_records(demo_dir).values())


def test_bad_options_are_reported(spark, demo_dir, tmp_path):
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    with pytest.raises((PySparkException, Py4JJavaError), match="exactly one of"):
        spark.read.format("kraftwire").option("bootstrap", "127.0.0.1:1").load(str(demo_dir)).count()
    with pytest.raises((PySparkException, Py4JJavaError), match="not a directory"):
        spark.read.format("kraftwire").load(str(tmp_path / "missing")).count()


# -- live ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def live_node(tmp_path_factory):
    """One `kraftwire server` (single voter) writing NoOpRecords every 50 ms."""
    from kraftwire.analytics.live import log_bounds
    from kraftwire.cli.quickstart import write_configs
    from kraftwire.cli.storage import format_storage
    from kraftwire.config import load_config
    from kraftwire.storage.meta_properties import random_uuid

    root = tmp_path_factory.mktemp("live")
    port = free_ports(1)[0]
    cfg = write_configs(root, 1, port)[0]
    format_storage(load_config(cfg), random_uuid(), quiet=True)
    log = open(root / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "kraftwire", "server", str(cfg),
                             "--override", "metadata.max.idle.interval.ms=50"], stdout=log, stderr=subprocess.STDOUT)
    addr = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if log_bounds(addr)[1] >= 40:
                    break
            except Exception:  # noqa: BLE001 - still starting
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"node did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
        yield addr, root / "node1" / "data"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_live_read_over_fetch_equals_the_files(spark, live_node):
    from kraftwire.analytics.live import log_bounds

    addr, data_dir = live_node
    start, hw = log_bounds(addr)
    live = (spark.read.format("kraftwire").option("bootstrap", addr).option("partitions", "3")
            .option("endingOffset", str(hw)).load())
    assert live.rdd.getNumPartitions() == 3
    cols = [c for c in COLUMN_NAMES if c not in ("source", "source_type")]
    got = live.select(*cols).orderBy("offset").collect()
    assert [r["offset"] for r in got] == list(range(start, hw))
    files = (spark.read.format("kraftwire").load(str(data_dir)).filter("source_type = 'segment'")
             .filter(f"offset < {hw}").select(*cols).orderBy("offset").collect())
    assert got == files
    kinds = Counter(r["record_type"] for r in got)
    assert kinds["LeaderChangeMessage"] == 1 and kinds["FeatureLevelRecord"] >= 1 and kinds["NoOpRecord"] > 20
    assert {r["source"] for r in live.select("source").distinct().collect()} == {addr}


def test_analytics_cli_over_a_live_node(spark, live_node, tmp_path, capsys):
    from kraftwire.cli.main import main

    addr, _ = live_node
    assert main(["analytics", "elections", "--bootstrap", addr, "--partitions", "2", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "elections: 1 (epochs 1..1; epochs that elected nobody: 0)"
    rows = spark.read.parquet(str(tmp_path / "elections.parquet")).collect()
    assert [(r["epoch"], r["leader_id"], r["voters"], r["offset"]) for r in rows] == [(1, 1, [1], 0)]


def test_streaming_read_follows_the_log_in_bounded_micro_batches(spark, live_node, tmp_path):
    addr, _ = live_node
    checkpoint, out = str(tmp_path / "checkpoint"), str(tmp_path / "out")

    def run() -> list[int]:
        q = (spark.readStream.format("kraftwire").option("bootstrap", addr).option("maxRecordsPerTrigger", "25")
             .load().select("offset", "record_type")
             .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
        assert q.awaitTermination(180)
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    sizes = run()
    assert max(sizes) <= 25 and len(sizes) >= 2
    first = sorted(r["offset"] for r in spark.read.parquet(out).collect())
    assert first == list(range(first[0], first[0] + len(first))) and len(first) >= 40
    time.sleep(1.0)  # the node keeps committing NoOpRecords
    run()  # resumes from the checkpoint
    both = sorted(r["offset"] for r in spark.read.parquet(out).collect())
    assert both[:len(first)] == first and len(both) > len(first)
    assert both == list(range(first[0], first[0] + len(both)))  # no gap, no duplicate


def test_byte_range_splits_equal_the_one_process_rows(spark, tmp_path):
    from kraftwire.analytics.rows import ROW_FIELDS, file_rows

    churn_log(tmp_path, 3000, partitions=40, per_request=10, segment_bytes=32 << 10)
    files = list_log_files(tmp_path)
    expected = sorted((r for f in files for r in file_rows(f)), key=lambda r: (r[0], r[3]))
    for split in ("1000", "7777"):
        df = spark.read.format("kraftwire").option("splitBytes", split).option("chunkRows", "50").load(str(tmp_path))
        assert df.rdd.getNumPartitions() > len(files)
        rows = [tuple(r[name] for name in ROW_FIELDS) for r in df.select(*ROW_FIELDS).collect()]
        rows.sort(key=lambda r: (r[0], r[3]))
        assert rows == expected
