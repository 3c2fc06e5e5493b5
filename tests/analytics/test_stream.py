"""Live reads of a running quorum (net/metadata_log.QuorumLog) and the Spark streaming source over it:
a log whose start moved past the reader (the snapshot comes first), a leader killed between micro-batches,
and a file sink that holds every committed offset exactly once across query restarts."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kraftwire.metadata import EMPTY_IMAGE  # noqa: E402
from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.net.metadata_log import QuorumLog, parse_addresses  # noqa: E402
from kraftwire.protocol.messages import incremental_alter_configs_request as iac  # noqa: E402
from kraftwire.protocol.metadata import decode_record  # noqa: E402
from kraftwire.storage.snapshot import snapshot_records  # noqa: E402
from tests.processes.harness import Cluster  # noqa: E402

# A snapshot every few writes and the log cleaned below each one: the log start keeps moving.
CLEANING = ("metadata.log.max.record.bytes.between.snapshots=600", "metadata.max.retention.bytes=0",
            "metadata.log.segment.bytes=2048", "metadata.max.idle.interval.ms=200")


def _bootstrap(c: Cluster) -> str:
    return ",".join(c.addr(i) for i in range(1, c.n + 1))


async def _set_retention(addr: str, value: int) -> None:
    host, _, port = addr.rpartition(":")
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, int(port), client_id="test-stream")
        try:
            req = iac.IncrementalAlterConfigsRequest(resources=[iac.AlterConfigsResource(
                resource_type=4, resource_name="", configs=[iac.AlterableConfig(
                    name="log.retention.ms", config_operation=0, value=str(value))])])
            resp = await conn.request(req, None, 10.0)
            if resp.responses[0].error_code:
                raise RuntimeError(f"IncrementalAlterConfigs: {resp.responses[0].error_code}")
        finally:
            await conn.close()
            tg.cancel_scope.cancel()


def set_retention(c: Cluster, value: int, timeout_s: float = 30.0) -> None:
    """Write the cluster-wide ``log.retention.ms`` = ``value`` (a write a quorum without brokers takes) at
    whichever voter is the active controller."""
    deadline = time.monotonic() + timeout_s
    while True:
        for i in range(1, c.n + 1):
            if c.procs.get(i) is None or c.procs[i].poll() is not None:
                continue
            try:
                anyio.run(_set_retention, c.addr(i), value)
                return
            except Exception:  # noqa: BLE001 - not the controller, or mid-election
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"could not write log.retention.ms={value} within {timeout_s:.0f} s")
        time.sleep(0.2)


def wait_log_start_above(c: Cluster, offset: int, timeout_s: float = 60.0) -> tuple[int, int]:
    log = QuorumLog(parse_addresses(_bootstrap(c)))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            start, hw = anyio.run(log.bounds)
            if start > offset:
                return start, hw
        except Exception:  # noqa: BLE001 - starting
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the log start never passed {offset}")
        time.sleep(0.3)


@pytest.fixture
def cleaning_quorum(tmp_path):
    c = Cluster(tmp_path, 3)
    for i in range(1, 4):
        c.start(i, *CLEANING)
    try:
        yield c
    finally:
        c.stop_all()


def test_reading_below_the_log_start_gets_the_snapshot_then_the_records_after_it(cleaning_quorum):
    c = cleaning_quorum
    set_retention(c, 111_111_111)
    start, hw = wait_log_start_above(c, 0)
    snaps: list = []
    batches: list = []
    log = QuorumLog(parse_addresses(_bootstrap(c)))
    anyio.run(log.read, 0, hw, batches.append, lambda sid, b: snaps.append((sid, b)))
    assert len(snaps) == 1
    sid, snap = snaps[0]
    _, hw_after = anyio.run(log.bounds)   # the quorum may have taken a newer snapshot since hw was read
    assert start <= sid.end_offset <= hw_after
    offsets = [b.base_offset + i for b in batches for i in range(len(b.records))]
    kept = [o for o in offsets if sid.end_offset <= o < hw]
    assert kept == list(range(sid.end_offset, hw)), "the records after the snapshot, each once, in order"
    image = EMPTY_IMAGE.replay_all(snapshot_records(snap))
    image = image.replay_all([decode_record(r.value) for b in batches if not b.control for i, r in enumerate(b.records)
                              if r.value is not None and sid.end_offset <= b.base_offset + i < hw])
    assert any(v.get("log.retention.ms") == "111111111" for v in image.configs.values())


def test_a_dead_first_address_is_skipped(cleaning_quorum):
    c = cleaning_quorum
    c.wait_status(lambda s: s.get("LeaderId", -1) > 0, [1, 2, 3])
    c.kill(1, signal.SIGKILL)
    start, hw = anyio.run(QuorumLog(parse_addresses(_bootstrap(c)), timeout_s=5.0).bounds)
    assert hw > 0 and start >= 0


@pytest.mark.spark
def test_stream_into_a_file_sink_survives_a_leader_kill_and_holds_each_offset_once(spark, cleaning_quorum, tmp_path):
    c = cleaning_quorum
    set_retention(c, 222_222_222)
    wait_log_start_above(c, 0)   # the stream starts below the log start: the snapshot comes first
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_once() -> None:
        q = (spark.readStream.format("kraftwire").option("bootstrap", _bootstrap(c)).load()
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert q.exception() is None

    run_once()
    first = spark.read.parquet(str(out))
    assert first.filter("source_type = 'snapshot'").count() > 0
    assert first.filter("json like '%222222222%'").count() >= 1

    leader = c.wait_status(lambda s: s.get("LeaderId", -1) > 0, [1, 2, 3])["LeaderId"]
    c.kill(leader, signal.SIGKILL)
    set_retention(c, 333_333_333)
    run_once()
    run_once()   # nothing new, or only NoOps: no offset twice

    rows = spark.read.parquet(str(out))
    live = sorted(r["offset"] for r in rows.filter("source_type = 'live'").select("offset").collect())
    assert live and len(live) == len(set(live)), "no live rows, or an offset was written twice"
    snap_ends = {r[0] for r in rows.filter("source_type = 'snapshot'").select("snapshot_end_offset").distinct()
                 .collect()}
    # No gap: every live offset follows the one before it, or starts right where a snapshot ends (the log
    # start moved past the checkpoint between micro-batches, so that micro-batch began with the snapshot).
    for prev, cur in zip([None, *live], live, strict=False):
        assert cur - 1 == prev or cur in snap_ends, f"offset {cur} follows neither {cur - 1} nor a snapshot"
    assert rows.filter("json like '%333333333%'").count() >= 1, "the write after the leader kill is in the sink"
