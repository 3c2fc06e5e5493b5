"""Snapshot files in FileLog: layout, durability, CRC checks, cleaning, installing, recovery."""

from __future__ import annotations

import pytest

from kraftwire.metadata import bootstrap_records
from kraftwire.protocol.control import ControlType, control_type
from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.metadata import encode_record
from kraftwire.protocol.records import Record, RecordBatch, iter_batches
from kraftwire.raft import OffsetAndEpoch, SnapshotId
from kraftwire.storage.snapshot import (
    encode_batches,
    frame_snapshot,
    parse_snapshot,
    parse_snapshot_name,
    snapshot_name,
    snapshot_records,
)

from .helpers import all_records, open_log, recs

RECORDS = bootstrap_records(21, {"group.version": 1})


def filled(tmp_path, batches=((1, 3), (1, 3), (2, 3), (2, 3), (3, 3)), **kw):
    """A log of 3-record batches with the given epochs: offsets 0..14 in epochs 1,1,2,2,3."""
    log = open_log(tmp_path, **kw)
    for epoch, n in batches:
        log.append_as_leader(recs(n, f"e{epoch}-"), epoch)
    log.flush()
    return log


def snap(log, sid: SnapshotId, records=RECORDS, **kw) -> list[RecordBatch]:
    batches = frame_snapshot(sid, records, **kw)
    log.create_snapshot(sid, batches)
    return batches


def test_names_follow_kafka() -> None:
    sid = SnapshotId(1234, 5)
    assert snapshot_name(sid) == "00000000000000001234-0000000005.checkpoint"
    assert parse_snapshot_name(snapshot_name(sid)) == (sid, "")
    assert parse_snapshot_name(snapshot_name(sid) + ".part") == (sid, ".part")
    assert parse_snapshot_name("00000000000000001234-0000000005.checkpoint.deleted") == (sid, ".deleted")
    for other in ("bootstrap.checkpoint", "00000000000000000000.log", "1234-5.checkpoint"):
        assert parse_snapshot_name(other) is None


def test_framing_is_header_records_footer() -> None:
    sid = SnapshotId(10, 4)
    batches = frame_snapshot(sid, RECORDS, timestamp_ms=99, last_contained_timestamp_ms=42)
    assert [b.base_offset for b in batches] == [0, 1, 1 + len(RECORDS)]
    assert all(b.leader_epoch == 4 and b.base_timestamp == 99 for b in batches)
    assert batches[0].control and control_type(batches[0].records[0]) == ControlType.SNAPSHOT_HEADER
    assert batches[-1].control and control_type(batches[-1].records[0]) == ControlType.SNAPSHOT_FOOTER
    assert snapshot_records(batches) == RECORDS
    # a small batch budget splits the records, still with consecutive offsets
    many = frame_snapshot(sid, RECORDS * 50, max_batch_bytes=200)
    assert len(many) > 5
    assert [b.base_offset for b in many[1:]] == [b.base_offset + len(b.records) for b in many[:-1]]
    assert snapshot_records(parse_snapshot(encode_batches(many))) == RECORDS * 50


def test_create_read_and_serve_chunks(tmp_path) -> None:
    log = filled(tmp_path)
    sid = SnapshotId(9, 2)
    batches = snap(log, sid)
    path = log.dir / "00000000000000000009-0000000002.checkpoint"
    data = path.read_bytes()
    assert data == encode_batches(batches)
    assert log.latest_snapshot_id() == sid
    assert log.snapshot_size(sid) == len(data)
    assert log.read_snapshot(sid) == batches
    chunks = [log.read_snapshot_chunk(sid, pos, 50) for pos in range(0, len(data), 50)]
    assert b"".join(chunks) == data and all(len(c) <= 50 for c in chunks)
    assert log.read_snapshot_chunk(sid, len(data), 50) == b""
    with pytest.raises(KeyError):
        log.snapshot_size(SnapshotId(6, 2))
    with pytest.raises(KeyError):
        log.read_snapshot_chunk(SnapshotId(6, 2), 0, 10)
    assert not list(log.dir.glob("*.part"))
    # creating does not move the log
    assert (log.start_offset, log.end_offset) == (0, 15)


def test_create_validates_the_id_and_content(tmp_path) -> None:
    log = filled(tmp_path)
    with pytest.raises(ValueError, match="beyond the log end"):
        snap(log, SnapshotId(16, 3))
    with pytest.raises(ValueError, match="has epoch 2"):
        snap(log, SnapshotId(9, 1))  # offset 8 was written in epoch 2
    header_only = frame_snapshot(SnapshotId(3, 1), RECORDS)[:-1]
    with pytest.raises(CorruptRecordError, match="Footer"):
        log.create_snapshot(SnapshotId(3, 1), header_only)
    snap(log, SnapshotId(12, 2))
    with pytest.raises(ValueError, match="older than the latest"):
        snap(log, SnapshotId(6, 1))
    assert log.latest_snapshot_id() == SnapshotId(12, 2)


def test_read_verifies_crcs_and_completeness(tmp_path) -> None:
    log = filled(tmp_path)
    sid = SnapshotId(6, 1)
    snap(log, sid)
    path = log.dir / snapshot_name(sid)
    good = path.read_bytes()
    bad = bytearray(good)
    bad[-30] ^= 0x40
    path.write_bytes(bytes(bad))
    with pytest.raises(CorruptRecordError, match="CRC"):
        log.read_snapshot(sid)
    path.write_bytes(good[:-5])
    with pytest.raises(CorruptRecordError, match="bytes after its last whole batch"):
        log.read_snapshot(sid)
    path.write_bytes(good)
    assert snapshot_records(log.read_snapshot(sid)) == RECORDS


def test_delete_before_moves_the_start_and_cleans(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    assert len(log.segment_paths()) >= 3
    old, sid = SnapshotId(3, 1), SnapshotId(9, 2)
    snap(log, old)
    snap(log, sid)
    later = all_records(log)[9:]
    log.delete_before(sid)
    assert log.start_offset == 9 and log.end_offset == 15
    assert all_records(log) == later
    assert log.read(8, 1 << 20) == [] and log.read(9, 1 << 20)[0].base_offset == 9
    # whole segments below the start are gone; the first left holds offset 9
    first = int(log.segment_paths()[0].name[:20])
    assert first <= 9 and not (log.dir / "00000000000000000000.log").exists()
    # older snapshots are gone, the latest stays
    assert not (log.dir / snapshot_name(old)).exists() and (log.dir / snapshot_name(sid)).exists()
    with pytest.raises(KeyError):
        log.snapshot_size(old)
    assert log.epochs() == [(2, 9), (3, 12)]
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(9, 2)  # below the log: the snapshot answers
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(12, 2)
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\n__cluster_metadata 0 9\n"
    # the new start survives a restart
    log.close()
    again = open_log(tmp_path, segment_bytes=200)
    assert (again.start_offset, again.end_offset) == (9, 15)
    assert all_records(again) == later and again.epochs() == [(2, 9), (3, 12)]
    assert again.latest_snapshot_id() == sid


def test_delete_before_snaps_to_a_batch_boundary(tmp_path) -> None:
    log = filled(tmp_path)
    sid = SnapshotId(10, 2)  # offset 10 is inside batch 9..11
    snap(log, sid)
    log.delete_before(sid)
    assert log.start_offset == 9
    assert all_records(log)[0][0] == 9


def test_delete_before_everything(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    sid = SnapshotId(15, 3)
    snap(log, sid)
    log.delete_before(sid)
    assert log.start_offset == log.end_offset == 15
    assert [p.name for p in log.segment_paths()] == ["00000000000000000015.log"]
    assert log.last_epoch() == 3 and log.read(15, 100) == []
    log.append_as_leader(recs(1), 4)
    log.close()
    again = open_log(tmp_path, segment_bytes=200)
    assert (again.start_offset, again.end_offset, again.last_epoch()) == (15, 16, 4)


def test_delete_before_needs_a_held_snapshot(tmp_path) -> None:
    log = filled(tmp_path)
    with pytest.raises(KeyError):
        log.delete_before(SnapshotId(6, 1))
    assert log.start_offset == 0


def test_install_replaces_the_log(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    old = SnapshotId(6, 1)
    snap(log, old)
    sid = SnapshotId(40, 7)
    data = encode_batches(frame_snapshot(sid, RECORDS))
    log.install_snapshot(sid, data)
    assert log.start_offset == log.end_offset == log.flushed_offset == 40
    assert log.last_epoch() == 7 and log.epochs() == []
    assert log.read(0, 1 << 20) == [] and log.read(40, 1 << 20) == []
    assert log.end_offset_for_epoch(7) == OffsetAndEpoch(40, 7)
    assert log.latest_snapshot_id() == sid and (log.dir / snapshot_name(sid)).read_bytes() == data
    assert not (log.dir / snapshot_name(old)).exists()
    assert sorted(p.name for p in log.dir.glob("*.log")) == ["00000000000000000040.log"]
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    with pytest.raises(ValueError):
        log.append_as_leader(recs(1), 6)  # below the snapshot's epoch
    log.append_as_follower([RecordBatch(40, 7, tuple(recs(2)))])
    log.close()
    again = open_log(tmp_path, segment_bytes=200)
    assert (again.start_offset, again.end_offset, again.epochs()) == (40, 42, [(7, 40)])
    assert snapshot_records(again.read_snapshot(sid)) == RECORDS


def test_install_rejects_bad_bytes_before_touching_anything(tmp_path) -> None:
    log = filled(tmp_path)
    sid = SnapshotId(40, 7)
    data = encode_batches(frame_snapshot(sid, RECORDS))
    for bad in (data[:-3], data[:20], b"", data[:-10] + bytes(10)):
        with pytest.raises(CorruptRecordError):
            log.install_snapshot(sid, bad)
    body = bytearray(data)
    body[80] ^= 1
    with pytest.raises(CorruptRecordError):
        log.install_snapshot(sid, bytes(body))
    no_footer = encode_batches(frame_snapshot(sid, RECORDS)[:-1])
    with pytest.raises(CorruptRecordError):
        log.install_snapshot(sid, no_footer)
    assert (log.start_offset, log.end_offset) == (0, 15) and log.latest_snapshot_id() is None
    assert not list(log.dir.glob("*.checkpoint*"))


def test_startup_removes_partial_and_deleted_snapshot_files(tmp_path) -> None:
    log = filled(tmp_path)
    snap(log, SnapshotId(6, 1))
    log.close()
    (log.dir / "00000000000000000012-0000000003.checkpoint.part").write_bytes(b"half a snap")
    (log.dir / "00000000000000000003-0000000001.checkpoint.deleted").write_bytes(b"old")
    (tmp_path / "bootstrap.checkpoint").write_bytes(b"not ours")
    again = open_log(tmp_path)
    assert again.latest_snapshot_id() == SnapshotId(6, 1)
    assert sorted(p.name for p in again.dir.glob("*.checkpoint*")) == [snapshot_name(SnapshotId(6, 1))]
    assert (tmp_path / "bootstrap.checkpoint").exists()
    # a log starting below its snapshot is fine
    assert (again.start_offset, again.end_offset) == (0, 15)


def test_crash_after_download_before_truncation_finishes_on_open(tmp_path) -> None:
    """The snapshot file is durable but the old log was never replaced (Kafka's recovery rule)."""
    log = filled(tmp_path)
    log.close()
    sid = SnapshotId(40, 7)
    (log.dir / snapshot_name(sid)).write_bytes(encode_batches(frame_snapshot(sid, RECORDS)))
    again = open_log(tmp_path)
    assert again.start_offset == again.end_offset == 40 and again.last_epoch() == 7
    assert sorted(p.name for p in again.dir.glob("*.log")) == ["00000000000000000040.log"]


def test_crash_halfway_through_install_finishes_on_open(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    segs = log.segment_paths()
    log.close()
    sid = SnapshotId(40, 7)
    (log.dir / snapshot_name(sid)).write_bytes(encode_batches(frame_snapshot(sid, RECORDS)))
    for p in segs[len(segs) // 2:]:  # install removes the newest segments first
        p.unlink()
    again = open_log(tmp_path, segment_bytes=200)
    assert again.start_offset == again.end_offset == 40


def test_a_newer_snapshot_in_the_same_epoch_but_within_the_log_keeps_the_log(tmp_path) -> None:
    log = filled(tmp_path)
    snap(log, SnapshotId(15, 3))
    log.close()
    again = open_log(tmp_path)
    assert (again.start_offset, again.end_offset) == (0, 15)


def test_log_start_without_a_covering_snapshot_is_discarded_and_rejoins(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    sid = SnapshotId(9, 2)
    snap(log, sid)
    log.delete_before(sid)
    log.close()
    (log.dir / snapshot_name(sid)).unlink()
    again = open_log(tmp_path, segment_bytes=200)
    assert "no snapshot covers" in again.damage and again.rejoining
    assert (again.start_offset, again.end_offset) == (0, 0) and again.epochs() == []
    again.close()
    third = open_log(tmp_path, segment_bytes=200)   # a restart before re-joining still re-joins
    assert third.damage is None and third.rejoining
    third.rejoined()
    assert not open_log(tmp_path, segment_bytes=200).rejoining


def test_damaged_snapshot_below_the_log_start_is_set_aside_and_the_log_restarts(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    sid = SnapshotId(9, 2)
    snap(log, sid)
    log.delete_before(sid)
    log.close()
    path = log.dir / snapshot_name(sid)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    (log.dir / "quorum-state").write_text("kept")
    again = open_log(tmp_path, segment_bytes=200)
    assert "damaged" in again.damage and again.rejoining
    assert (again.start_offset, again.end_offset) == (0, 0) and again.latest_snapshot_id() is None
    assert path.with_name(path.name + ".damaged").read_bytes() == bytes(data)   # kept for the operator
    assert (log.dir / "quorum-state").read_text() == "kept"


def test_crash_between_start_checkpoint_and_segment_deletion(tmp_path) -> None:
    log = filled(tmp_path, segment_bytes=200)
    sid = SnapshotId(9, 2)
    snap(log, sid)
    log.close()
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\n__cluster_metadata 0 9\n")
    again = open_log(tmp_path, segment_bytes=200)
    assert again.start_offset == 9 and not (again.dir / "00000000000000000000.log").exists()
    assert again.epochs()[0] == (2, 9)


def test_snapshot_batches_are_plain_v2_for_dump_log(tmp_path) -> None:
    log = filled(tmp_path)
    sid = SnapshotId(6, 1)
    snap(log, sid)
    data = (log.dir / snapshot_name(sid)).read_bytes()
    batches = [b for b, _, _ in iter_batches(data)]
    values = [r.value for b in batches if not b.control for r in b.records]
    assert values == [encode_record(r.message, r.version) for r in RECORDS]
    assert all(isinstance(r, Record) for b in batches for r in b.records)


def test_a_batch_epoch_above_any_the_node_knew_is_dropped_and_the_node_rejoins(tmp_path) -> None:
    log = filled(tmp_path)                       # epochs 1, 1, 2, 2, 3 (3 records each)
    log.close()
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    pos = 0
    for _ in range(4):                           # the fifth (newest) batch
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    data[pos + 13] ^= 0x10                       # its leader epoch, outside the CRC: 3 -> 1,048,579
    seg.write_bytes(bytes(data))
    again = open_log(tmp_path)
    assert again.last_epoch() > 1000 and again.end_offset == 15   # the CRC cannot tell
    assert not again.discard_epochs_above(again.last_epoch())
    assert again.discard_epochs_above(3)
    assert again.end_offset == 12 and again.last_epoch() == 2 and again.rejoining
    assert "never knew an epoch above 3" in again.damage
    assert again.vote_floor == (3, 15)            # what the undamaged log reached at most


def test_a_second_damage_before_rejoining_never_lowers_the_vote_floor(tmp_path) -> None:
    # Chaos, epoch corruption at 300 s: a voter damaged again before it re-joined wrote a floor at its
    # shortened log's end, forgetting what it had acknowledged before the first damage.
    log = filled(tmp_path)                       # epochs 1, 1, 2, 2, 3 (3 records each)
    log.close()
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"

    def damage_newest(batches_before: int) -> None:
        data = bytearray(seg.read_bytes())
        pos = 0
        for _ in range(batches_before):
            pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        data[pos + 13] ^= 0x10
        seg.write_bytes(bytes(data))

    damage_newest(4)
    first = open_log(tmp_path)
    assert first.discard_epochs_above(3) and first.vote_floor == (3, 15)
    first.close()
    damage_newest(3)                             # the new newest batch (epoch 2, offsets 9-11)
    second = open_log(tmp_path)
    assert second.discard_epochs_above(3)
    assert second.end_offset == 9 and second.vote_floor == (3, 15)
