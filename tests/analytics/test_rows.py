"""The pure-Python row decoder over real controller-written logs (no Spark needed)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from kraftwire.analytics.rows import (
    ROW_FIELDS,
    SEGMENT,
    SNAPSHOT,
    file_rows,
    kafka_uuid,
    list_log_files,
    split_range,
)
from kraftwire.analytics.scenario import DEMO_START_MS, MINUTE, ScenarioError, ScenarioLog, demo_log
from kraftwire.protocol.records import iter_batches
from kraftwire.storage.reader import read_metadata


def rows_of(root: Path, kind: str = SEGMENT) -> dict[int, dict]:
    out = {}
    for f in list_log_files(root):
        if f.kind == kind:
            for r in file_rows(f):
                d = dict(zip(ROW_FIELDS, r, strict=True))
                out[d["offset"]] = d
    return out


def minute(d: dict) -> float:
    return (d["timestamp_ms"] - DEMO_START_MS) / MINUTE


def test_files_are_listed_in_offset_order(demo_dir):
    files = list_log_files(demo_dir)
    segs = [f for f in files if f.kind == SEGMENT]
    snaps = [f for f in files if f.kind == SNAPSHOT]
    assert len(segs) >= 3 and [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
    assert [(s.base_offset, s.snapshot_epoch) for s in snaps] == [(46, 4)]
    # Each segment starts where the previous one ended.
    for prev, nxt in zip(segs, segs[1:], strict=False):
        batches = [b for b, _, _ in iter_batches(Path(prev.path).read_bytes())]
        assert batches[-1].next_offset == nxt.base_offset
    # The partition directory itself works too.
    assert list_log_files(demo_dir / "__cluster_metadata-0") == files


def test_every_segment_record_becomes_one_row_in_log_order(demo_dir):
    rows = rows_of(demo_dir)
    assert sorted(rows) == list(range(46))
    assert all(r["error"] is None for r in rows.values())
    # Metadata rows agree with the storage reader (which skips control records).
    meta = {o: rec for f in list_log_files(demo_dir) if f.kind == SEGMENT
            for o, rec in read_metadata(Path(f.path)).records}
    assert {o for o, r in rows.items() if not r["is_control"]} == set(meta)
    for off, rec in meta.items():
        assert rows[off]["record_type"] == rec.type_name and rows[off]["version"] == rec.version


def test_typed_columns_of_broker_records(demo_dir):
    r = rows_of(demo_dir)
    reg = r[2]
    assert (reg["record_type"], reg["record_type_id"], reg["broker_id"], reg["broker_epoch"], reg["fenced"],
            reg["in_controlled_shutdown"], minute(reg)) == ("RegisterBrokerRecord", 0, 101, 2, True, False, 1.0)
    assert json.loads(reg["json"])["broker_id"] == 101
    unfence = r[5]
    assert (unfence["record_type"], unfence["broker_id"], unfence["fenced"], unfence["in_controlled_shutdown"]) == \
        ("BrokerRegistrationChangeRecord", 101, False, None)
    assert (r[19]["broker_id"], r[19]["fenced"], minute(r[19])) == (103, True, 40.0)
    cs = r[25]
    assert (cs["broker_id"], cs["fenced"], cs["in_controlled_shutdown"], minute(cs)) == (102, None, True, 90.0)
    rereg = r[31]
    assert (rereg["broker_id"], rereg["broker_epoch"], rereg["fenced"]) == (102, 31, True)
    gone = r[45]
    assert (gone["record_type"], gone["broker_id"], gone["broker_epoch"], gone["fenced"]) == \
        ("UnregisterBrokerRecord", 104, 35, None)


def test_typed_columns_of_topic_and_partition_records(demo_dir):
    r = rows_of(demo_dir)
    topic = r[8]
    assert (topic["record_type"], topic["topic_name"]) == ("TopicRecord", "orders")
    tid = topic["topic_id"]
    assert tid == kafka_uuid(uuid.UUID(json.loads(topic["json"])["topic_id"]))
    assert len(tid) == 22 and "=" not in tid
    p2 = r[11]
    assert (p2["record_type"], p2["topic_id"], p2["partition"], p2["leader"], p2["isr"], p2["replicas"]) == \
        ("PartitionRecord", tid, 2, 103, [103, 101, 102], [103, 101, 102])
    shrink = r[14]  # an ISR-only change: leader and replicas unchanged -> null
    assert (shrink["partition"], shrink["isr"], shrink["leader"], shrink["replicas"], minute(shrink)) == \
        (0, [101, 102], None, None, 20.0)
    moved = r[18]  # 103 fenced: orders-2 gets a new leader
    assert (moved["partition"], moved["leader"], moved["isr"]) == (2, 101, [101, 102])
    removed = r[42]
    assert (removed["record_type"], removed["topic_id"], removed["topic_name"]) == \
        ("RemoveTopicRecord", r[12]["topic_id"], None)


def test_control_records_and_epochs(demo_dir):
    r = rows_of(demo_dir)
    lc = {o: d for o, d in r.items() if d["is_control"]}
    assert sorted(lc) == [0, 20, 43]
    assert [(d["leader_epoch"], d["leader"], d["record_type"], d["record_type_id"], d["version"], minute(d))
            for d in lc.values()] == [(1, 1, "LeaderChangeMessage", 2, 0, 0.0),
                                      (3, 2, "LeaderChangeMessage", 2, 0, 60.0),
                                      (4, 1, "LeaderChangeMessage", 2, 0, 160.0)]
    assert json.loads(lc[20]["json"])["granting_voters"] == [{"voter_id": 2, "voter_directory_id":
                                                              "00000000-0000-0000-0000-000000000000"},
                                                             {"voter_id": 1, "voter_directory_id":
                                                              "00000000-0000-0000-0000-000000000000"}]
    assert {d["leader_epoch"] for o, d in r.items() if o < 20} == {1}
    assert {d["leader_epoch"] for o, d in r.items() if 20 <= o < 43} == {3}
    assert all(d["batch_base_offset"] <= o for o, d in r.items())


def test_snapshot_rows(demo_dir):
    snap = rows_of(demo_dir, SNAPSHOT)
    types = [snap[o]["record_type"] for o in sorted(snap)]
    assert types[0] == "SnapshotHeaderRecord" and types[-1] == "SnapshotFooterRecord"
    assert all(d["snapshot_end_offset"] == 46 and d["leader_epoch"] == 4 for d in snap.values())
    brokers = {d["broker_id"]: d for d in snap.values() if d["record_type"] == "RegisterBrokerRecord"}
    assert {b: (d["broker_epoch"], d["fenced"]) for b, d in brokers.items()} == \
        {101: (2, False), 102: (31, False), 103: (4, False)}
    assert sorted(d["topic_name"] for d in snap.values() if d["record_type"] == "TopicRecord") == ["audit", "orders"]


def test_old_metadata_version_uses_fence_and_unfence_records(tmp_path):
    demo_log(tmp_path, metadata_version=5).close()
    r = rows_of(tmp_path)
    fencing = [(d["record_type"], d["broker_id"], d["fenced"], minute(d)) for d in r.values()
               if d["record_type"] in ("FenceBrokerRecord", "UnfenceBrokerRecord")]
    assert fencing[3:] == [("FenceBrokerRecord", 103, True, 40.0), ("UnfenceBrokerRecord", 103, False, 70.0),
                           ("FenceBrokerRecord", 102, True, 91.0), ("UnfenceBrokerRecord", 102, False, 106.0),
                           ("UnfenceBrokerRecord", 104, False, 121.0)]


def test_corrupt_batch_ends_the_file_with_an_error_row(demo_dir, tmp_path):
    shutil.copytree(demo_dir, tmp_path / "copy")
    segs = [f for f in list_log_files(tmp_path / "copy") if f.kind == SEGMENT]
    path = Path(segs[1].path)
    data = bytearray(path.read_bytes())
    batches = list(iter_batches(bytes(data)))
    victim, pos, size = batches[2]
    data[pos + size - 1] ^= 0xFF  # breaks the CRC of the third batch
    path.write_bytes(bytes(data))
    rows = [dict(zip(ROW_FIELDS, r, strict=True)) for r in file_rows(segs[1])]
    good, bad = rows[:-1], rows[-1]
    assert [d["offset"] for d in good] == list(range(segs[1].base_offset, victim.base_offset))
    assert bad["offset"] == victim.base_offset and bad["record_type"] is None
    assert "CRC" in bad["error"]
    # Without CRC checks the damaged batch is parsed anyway; whatever it holds, no exception escapes.
    lax = [dict(zip(ROW_FIELDS, r, strict=True)) for r in file_rows(segs[1], verify_crc=False)]
    assert lax[:len(good)] == good


def test_torn_tail_is_ignored(demo_dir, tmp_path):
    shutil.copytree(demo_dir, tmp_path / "copy")
    last = [f for f in list_log_files(tmp_path / "copy") if f.kind == SEGMENT][-1]
    data = Path(last.path).read_bytes()
    Path(last.path).write_bytes(data[:-7])
    rows = [dict(zip(ROW_FIELDS, r, strict=True)) for r in file_rows(last)]
    assert rows and all(d["error"] is None for d in rows) and rows[-1]["offset"] < 45


def test_scenario_refuses_impossible_steps(tmp_path):
    s = ScenarioLog(tmp_path)
    with pytest.raises(ScenarioError):
        s.register(1)  # no leader yet
    s.at(0).elect(1, 1)
    with pytest.raises(ScenarioError):
        s.at(5).at(4)
    with pytest.raises(ScenarioError):
        s.elect(1, 2)
    s.close()


@pytest.mark.parametrize("start,end,parts,expected", [
    (0, 10, 3, [(0, 4), (4, 7), (7, 10)]),
    (5, 7, 4, [(5, 6), (6, 7)]),
    (3, 3, 2, []),
    (0, 1, 0, [(0, 1)]),
])
def test_split_range(start, end, parts, expected):
    assert split_range(start, end, parts) == expected


def test_json_column_is_exactly_the_dump_log_view(demo_dir):
    """The fast JSON view renders every record of the log and the snapshot as ``to_json`` does."""
    from kraftwire.analytics.rows import json_view
    from kraftwire.cli.dump_log import record_json
    from kraftwire.protocol.metadata import decode_record
    from kraftwire.protocol.runtime import to_json

    seen = set()
    for f in list_log_files(demo_dir):
        for batch, _, _ in iter_batches(Path(f.path).read_bytes()):
            for i, rec in enumerate(batch.records):
                if batch.control:
                    payload = record_json(batch, i, True)["record"].get("payload")
                    if payload is not None:
                        row = next(d for d in (dict(zip(ROW_FIELDS, r, strict=True)) for r in file_rows(f))
                                   if d["offset"] == batch.base_offset + i)
                        assert json.loads(row["json"]) == payload
                    continue
                msg = decode_record(rec.value).message
                assert json_view(msg) == to_json(msg)
                seen.add(type(msg).__name__)
    assert {"RegisterBrokerRecord", "PartitionRecord", "PartitionChangeRecord", "TopicRecord",
            "FeatureLevelRecord", "BrokerRegistrationChangeRecord"} <= seen
