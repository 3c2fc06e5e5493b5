"""Kafka's own record classes (kafka-clients 3.9) read kraftwire's segments, index and snapshots.

``tests/storage/java/ReadLog.java`` walks each file like kafka-dump-log: FileRecords batches with
``ensureValid()`` (CRC), control records decoded with ControlRecordUtils, index entries checked
against the batch they point at.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kraftwire.raft import SnapshotId

from .metadata_fixture import populated

pytestmark = pytest.mark.java
SOURCE = Path(__file__).with_name("java") / "ReadLog.java"


def _jars() -> list[Path] | None:
    try:
        dist = importlib.metadata.distribution("shigawire-apache-flink-libraries")
        lib = Path(str(dist.locate_file("pyflink/lib")))
    except importlib.metadata.PackageNotFoundError:
        return None
    jars = [lib / "kafka-clients.jar", lib / "slf4j-api.jar"]
    return jars if all(j.exists() for j in jars) else None


@pytest.fixture(scope="module")
def read_log(tmp_path_factory):
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (javac/java) on PATH")
    jars = _jars()
    if jars is None:
        pytest.skip("kafka-clients.jar not found (pip install shigawire-apache-flink-libraries)")
    out = tmp_path_factory.mktemp("readlog")
    cp = os.pathsep.join(map(str, jars))
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", cp, str(SOURCE)], check=True, timeout=300,
                   capture_output=True)

    def run(*files: Path) -> list[str]:
        proc = subprocess.run(["java", "-cp", os.pathsep.join([str(out), cp]), "ReadLog", *map(str, files)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    return run


def test_kafka_reads_segments_indexes_and_snapshots(tmp_path, read_log) -> None:
    w = populated(tmp_path, segment_bytes=600, index_interval_bytes=64)
    sid = w.snapshot()
    w.log.close()
    d = w.log.dir
    segments = sorted(d.glob("*.log"))
    indexes = sorted(d.glob("*.index"))
    assert len(segments) > 1
    lines = read_log(*segments, *indexes, d / f"{sid.end_offset:020d}-{sid.epoch:010d}.checkpoint")
    batches = [ln.split() for ln in lines if ln.startswith("batch")]
    log_batches = [b for b in batches if b[1].endswith(".log")]
    # every batch valid (ensureValid passed), contiguous offsets, epoch 1, a LeaderChange first
    assert log_batches[0][2:6] == ["0", "0", "1", "true"] and log_batches[0][7] == "LEADER_CHANGE:1"
    offsets = [(int(b[2]), int(b[3])) for b in log_batches]
    assert all(nxt[0] == prev[1] + 1 for prev, nxt in zip(offsets, offsets[1:], strict=False))
    assert offsets[-1][1] == sid.end_offset - 1
    # the snapshot: header control batch first, footer last, offsets from 0, the snapshot's epoch
    snap = [b for b in batches if b[1].endswith(".checkpoint")]
    assert snap[0][2] == "0" and snap[0][5] == "true" and snap[0][7] == f"SNAPSHOT_HEADER:{w.now}"
    assert snap[-1][5] == "true" and snap[-1][7] == "SNAPSHOT_FOOTER:0"
    assert all(b[4] == str(sid.epoch) for b in snap)
    # indexes: entries present and each points at a batch ending at its offset
    assert not [ln for ln in lines if ln.startswith("mismatch")]
    counts = [int(ln.split()[2]) for ln in lines if ln.startswith("index")]
    assert len(counts) == len(indexes) and sum(counts) > len(indexes)


def test_kafka_reads_an_installed_snapshot_and_the_log_after_it(tmp_path, read_log) -> None:
    leader = populated(tmp_path / "leader")
    sid = leader.snapshot()
    data = leader.log.read_snapshot_chunk(sid, 0, leader.log.snapshot_size(sid))
    from .helpers import open_log, recs

    follower = open_log(tmp_path / "follower")
    follower.install_snapshot(SnapshotId(sid.end_offset, sid.epoch), data)
    follower.append_as_leader(recs(2), 2)
    follower.close()
    d = follower.dir
    lines = read_log(*sorted(d.glob("*.log")), *sorted(d.glob("*.checkpoint")))
    seg = [ln.split() for ln in lines if ".log" in ln]
    assert seg == [["batch", f"{sid.end_offset:020d}.log", str(sid.end_offset), str(sid.end_offset + 1), "2",
                    "false", "2"]]
    assert sum(".checkpoint" in ln for ln in lines) >= 3
