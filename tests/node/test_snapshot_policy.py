"""The node's snapshot decisions (kraftwire.metadata.snapshot): policy, retention, framing."""

from __future__ import annotations

from kraftwire.config import load_config
from kraftwire.controller import QuorumController
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.snapshot import (
    RetentionPolicy,
    SnapshotPolicy,
    Snapshotter,
    image_from_snapshot,
    snapshot_batches,
)
from kraftwire.node.snapshots import snapshotter_for
from kraftwire.protocol.control import ControlType, control_type
from kraftwire.protocol.metadata import encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import encode, parse


def batch(base: int, n: int, epoch: int = 3, size: int = 100) -> RecordBatch:
    return RecordBatch(base, epoch, tuple(Record(value=b"x" * size) for _ in range(n)), base_timestamp=base)


def test_interval_rule_fires_only_with_waiting_records():
    p = SnapshotPolicy(max_bytes=0, max_interval_ms=1000)
    assert p.next_deadline() is None and not p.due_at(5000)
    assert not p.note_committed(2, 50, now_ms=100)
    assert p.next_deadline() == 1100 and not p.due_at(1099) and p.due_at(1100)
    p.snapshot_taken(10)
    assert p.next_deadline() is None and not p.due_at(9999)


def test_retention_limits():
    sid = SnapshotId(10, 1)
    r = RetentionPolicy(max_bytes=1000, max_ms=-1)
    r.note_committed(600, 0)
    r.snapshot_taken(sid)
    assert r.due(10**9) is None                 # 600 bytes below the snapshot: within the limit
    r.note_committed(600, 5)
    r.snapshot_taken(SnapshotId(20, 1))
    assert r.due(6) == SnapshotId(20, 1)
    r.cleaned(6)
    assert r.due(10**9) is None and r.uncleaned_bytes == 0
    aged = RetentionPolicy(max_bytes=-1, max_ms=500)
    aged.note_committed(10, 100)
    aged.snapshot_taken(sid)
    assert aged.due(599) is None and aged.due(600) == sid
    assert RetentionPolicy(max_bytes=0).due(0) is None            # no snapshot yet: nothing to clean below
    eager = RetentionPolicy(max_bytes=0)
    eager.snapshot_taken(sid)
    assert eager.due(0) == sid


def test_snapshotter_ids_follow_committed_batches_and_skip_older_than_held():
    s = Snapshotter(SnapshotPolicy(max_records=5, max_bytes=0), RetentionPolicy(max_bytes=0))
    s.committed([batch(0, 2, epoch=1)], 10)
    assert s.due(10, None) is None
    s.committed([batch(2, 3, epoch=2)], 20)
    assert s.due(20, None) == SnapshotId(5, 2) and s.last_timestamp_ms == 2
    assert s.due(20, SnapshotId(7, 2)) is None     # the log already holds a newer one (installed)
    s.committed([batch(5, 5, epoch=2)], 30)
    sid = s.due(30, None)
    assert sid == SnapshotId(10, 2)
    s.stored(sid)
    assert s.due(31, None) is None and s.clean_due(31) == sid
    s.loaded(40, 4)
    assert s.position == SnapshotId(40, 4) and s.policy.records_since == 0


def test_snapshot_content_round_trips_the_committed_image():
    ctl = QuorumController()
    for off, rec in enumerate(bootstrap_records(21)):
        ctl.replay(off, rec)
    sid = SnapshotId(ctl.committed_offset + 1, 1)
    batches = snapshot_batches(ctl.committed_image, sid, timestamp_ms=77, last_contained_timestamp_ms=66)
    assert control_type(batches[0].records[0]) == ControlType.SNAPSHOT_HEADER
    assert control_type(batches[-1].records[-1]) == ControlType.SNAPSHOT_FOOTER
    assert all(b.leader_epoch == 1 and b.raw is not None for b in batches)
    assert [b.base_offset for b in batches] == [0, 1, 1 + len(batches[1].records)]
    again = parse(encode(batches))
    assert image_from_snapshot(again) == ctl.committed_image
    values = [r.value for b in again if not b.control for r in b.records]
    assert values == [encode_record(r.message, r.version) for r in bootstrap_records(21)]


def test_snapshotter_from_kafka_config_keys():
    cfg = load_config({"process.roles": "controller", "node.id": "1", "controller.quorum.voters": "1@h:1",
                       "listeners": "CONTROLLER://h:1",
                       "metadata.log.max.record.bytes.between.snapshots": "12345",
                       "metadata.log.max.snapshot.interval.ms": "600", "metadata.max.retention.bytes": "-1",
                       "metadata.max.retention.ms": "900"})
    s = snapshotter_for(cfg)
    assert (s.policy.max_bytes, s.policy.max_interval_ms) == (12345, 600)
    assert (s.retention.max_bytes, s.retention.max_ms) == (-1, 900)
    default = snapshotter_for(load_config({"process.roles": "controller", "node.id": "1",
                                           "controller.quorum.voters": "1@h:1", "listeners": "CONTROLLER://h:1"}))
    assert (default.policy.max_bytes, default.policy.max_interval_ms) == (20 << 20, 3_600_000)
    assert (default.retention.max_bytes, default.retention.max_ms) == (100 << 20, 7 * 24 * 3600 * 1000)
