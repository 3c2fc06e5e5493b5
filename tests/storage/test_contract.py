"""The ReplicatedLog contract, run against FileLog and MemoryLog alike: both must give the same answers.

Snapshot tests skip for an implementation that does not provide the snapshot methods yet
(``NotImplementedError`` or a missing method), so they start checking MemoryLog as soon as it has them.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraftwire.metadata import bootstrap_records
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import MemoryLog, OffsetAndEpoch, SnapshotId
from kraftwire.storage.snapshot import encode_batches, frame_snapshot

from .helpers import all_records, batches_of, open_log, recs


@pytest.fixture(params=["file", "memory"])
def log(request, tmp_path) -> Any:
    if request.param == "memory":
        yield MemoryLog()
        return
    lg = open_log(tmp_path, segment_bytes=256)
    yield lg
    lg.close()


def fill(log: Any, plan=((1, 3), (1, 2), (2, 4), (4, 1), (4, 3))) -> None:
    """Batches of (epoch, n records): offsets 0..12, epochs 1 at 0, 2 at 5, 4 at 9."""
    for epoch, n in plan:
        log.append_as_leader(recs(n, f"e{epoch}."), epoch)
    log.flush()


def test_empty(log) -> None:
    assert (log.start_offset, log.end_offset, log.flushed_offset, log.last_epoch()) == (0, 0, 0, 0)
    assert log.read(0, 1 << 20) == []
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(0, 0)
    assert log.latest_snapshot_id() is None


def test_leader_appends(log) -> None:
    b = log.append_as_leader([Record(value=b"a"), Record(value=None, key=b"k")], 3, timestamp_ms=55)
    assert (b.base_offset, b.leader_epoch, b.base_timestamp, b.next_offset) == (0, 3, 55, 2)
    c = log.append_as_leader([Record(value=b"\x00\x00")], 3, control=True)
    assert c.base_offset == 2 and c.control
    assert log.end_offset == 3 and log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 3
    assert batches_of(log) == [b, c]


def test_follower_appends(log) -> None:
    batches = [RecordBatch(0, 1, tuple(recs(2))), RecordBatch(2, 2, tuple(recs(1)), base_timestamp=9)]
    log.append_as_follower(batches)
    assert log.end_offset == 3 and log.last_epoch() == 2
    assert batches_of(log) == batches


@pytest.mark.parametrize("bad", [
    RecordBatch(1, 1, tuple(recs(1))),  # does not start at the end
    RecordBatch(0, 1, ()),              # empty
])
def test_rejected_appends(log, bad) -> None:
    with pytest.raises(ValueError):
        log.append_as_follower([bad])
    assert log.end_offset == 0


def test_epoch_may_not_go_backwards(log) -> None:
    log.append_as_leader(recs(1), 5)
    with pytest.raises(ValueError):
        log.append_as_leader(recs(1), 4)
    with pytest.raises(ValueError):
        log.append_as_follower([RecordBatch(1, 4, tuple(recs(1)))])
    assert log.end_offset == 1


def test_reads(log) -> None:
    fill(log)
    every = batches_of(log)
    assert [b.base_offset for b in every] == [0, 3, 5, 9, 10]
    assert log.read(6, 1 << 20) == every[2:]     # from the batch containing offset 6
    assert log.read(0, 1) == every[:1]           # at least one batch
    assert log.read(12, 1) == every[-1:]
    assert log.read(13, 1 << 20) == []
    part = log.read(0, 150)                      # some prefix, never a broken batch
    assert part and part == every[:len(part)]
    assert all_records(log)[9] == (9, 4, b"e4.0")


def test_truncation(log) -> None:
    fill(log)
    full = all_records(log)
    log.truncate_to(99)
    assert log.end_offset == 13
    log.truncate_to(10)  # a batch boundary
    assert (log.end_offset, log.flushed_offset, log.last_epoch()) == (10, 10, 4)
    assert all_records(log) == full[:10]
    log.truncate_to(7)  # inside the epoch-2 batch 5..8
    assert (log.end_offset, log.last_epoch()) == (7, 2)
    assert all_records(log) == full[:7]
    assert [b.base_offset for b in batches_of(log)] == [0, 3, 5]
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(7, 2)
    log.append_as_leader(recs(1, "new"), 5)
    assert all_records(log)[-1] == (7, 5, b"new0")
    log.truncate_to(0)
    assert (log.end_offset, log.last_epoch()) == (0, 0) and log.read(0, 1 << 20) == []


def test_end_offset_for_epoch(log) -> None:
    fill(log)
    expected = {0: (0, 0), 1: (5, 1), 2: (9, 2), 3: (9, 2), 4: (13, 4), 7: (13, 4)}
    for epoch, (offset, found) in expected.items():
        assert log.end_offset_for_epoch(epoch) == OffsetAndEpoch(offset, found), epoch
    assert log.last_epoch() == 4


def test_unflushed_appends_are_not_flushed(log) -> None:
    fill(log)
    log.append_as_leader(recs(2), 4)
    assert (log.flushed_offset, log.end_offset) == (13, 15)
    log.flush()
    assert log.flushed_offset == 15


# -- snapshots ------------------------------------------------------------------------------------------
RECORDS = bootstrap_records(21)


def test_snapshot_round_trip(log) -> None:
    fill(log)
    sid = SnapshotId(9, 2)
    batches = frame_snapshot(sid, RECORDS)
    data = encode_batches(batches)
    log.create_snapshot(sid, batches)
    assert log.latest_snapshot_id() == sid
    assert log.snapshot_size(sid) == len(data)
    assert b"".join(log.read_snapshot_chunk(sid, p, 40) for p in range(0, len(data), 40)) == data
    assert log.read_snapshot(sid) == batches
    with pytest.raises(KeyError):
        log.snapshot_size(SnapshotId(5, 1))
    assert (log.start_offset, log.end_offset) == (0, 13)


def test_delete_before(log) -> None:
    fill(log)
    old, sid = SnapshotId(5, 1), SnapshotId(9, 2)
    log.create_snapshot(old, frame_snapshot(old, RECORDS))
    log.create_snapshot(sid, frame_snapshot(sid, RECORDS))
    later = all_records(log)[9:]
    log.delete_before(sid)
    assert log.start_offset == 9 and log.end_offset == 13
    assert all_records(log) == later
    assert log.latest_snapshot_id() == sid
    with pytest.raises(KeyError):
        log.snapshot_size(old)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(13, 4)
    assert log.last_epoch() == 4


def test_delete_before_inside_a_batch(log) -> None:
    fill(log)
    sid = SnapshotId(7, 2)  # inside batch 5..8
    log.create_snapshot(sid, frame_snapshot(sid, RECORDS))
    log.delete_before(sid)
    assert 5 <= log.start_offset <= 7
    assert log.read(log.start_offset, 1 << 20)[0].base_offset == log.start_offset


def test_install_snapshot(log) -> None:
    fill(log)
    sid = SnapshotId(30, 6)
    data = encode_batches(frame_snapshot(sid, RECORDS))
    log.install_snapshot(sid, data)
    assert log.start_offset == log.end_offset == log.flushed_offset == 30
    assert log.last_epoch() == 6 and log.latest_snapshot_id() == sid
    assert log.read(0, 1 << 20) == [] and log.read(30, 1 << 20) == []
    assert log.snapshot_size(sid) == len(data)
    assert log.read_snapshot(sid) == frame_snapshot(sid, RECORDS)
    log.append_as_follower([RecordBatch(30, 6, tuple(recs(2)))])
    assert (log.end_offset, log.last_epoch()) == (32, 6)
    assert log.end_offset_for_epoch(6) == OffsetAndEpoch(32, 6)
