"""FileLog: appends, reads, truncation, segment rolls, the offset index and the epoch cache."""

from __future__ import annotations

import struct

import pytest

from kraftwire.protocol.records import Record, RecordBatch, decode_batch, iter_batches
from kraftwire.raft import OffsetAndEpoch

from .helpers import all_records, batches_of, open_log, recs


def test_fresh_log_is_empty(tmp_path) -> None:
    log = open_log(tmp_path)
    assert (log.start_offset, log.end_offset, log.flushed_offset, log.last_epoch()) == (0, 0, 0, 0)
    assert log.read(0, 1000) == []
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(0, 0)
    assert [p.name for p in log.segment_paths()] == ["00000000000000000000.log"]
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    assert log.latest_snapshot_id() is None


def test_append_assigns_offsets_and_reads_back(tmp_path) -> None:
    log = open_log(tmp_path)
    b1 = log.append_as_leader(recs(3, "a"), 1, timestamp_ms=1000)
    b2 = log.append_as_leader(recs(2, "b"), 1, control=False, timestamp_ms=2000)
    assert (b1.base_offset, b1.next_offset, b2.base_offset, b2.next_offset) == (0, 3, 3, 5)
    assert log.end_offset == 5 and log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 5
    assert batches_of(log) == [b1, b2]
    # a read starting inside a batch returns that whole batch
    assert log.read(4, 1 << 20) == [b2]
    assert log.read(5, 1 << 20) == [] and log.read(-1, 1 << 20) == []
    # max_bytes bounds the read, but at least one batch comes back
    assert log.read(0, 1) == [b1]
    assert log.read(0, len(b1.raw) + len(b2.raw)) == [b1, b2]
    assert log.read(0, len(b1.raw) + len(b2.raw) - 1) == [b1]
    assert all_records(log)[3] == (3, 1, b"b0")


def test_follower_append_keeps_the_leaders_bytes(tmp_path) -> None:
    leader = open_log(tmp_path / "l")
    leader.append_as_leader(recs(2), 1, timestamp_ms=77)
    leader.append_as_leader([Record(value=None, key=b"\x00\x00\x00\x02")], 2, control=True)
    follower = open_log(tmp_path / "f")
    follower.append_as_follower(leader.read(0, 1 << 20))
    follower.flush()
    assert follower.read_raw(0, 1 << 20) == leader.read_raw(0, 1 << 20)
    assert follower.epochs() == [(1, 0), (2, 2)]
    assert follower.read(2, 100)[0].control


def test_append_validation(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(1), 2)
    with pytest.raises(ValueError):
        log.append_as_leader([], 2)
    with pytest.raises(ValueError):
        log.append_as_leader(recs(1), 1)  # epoch below the last one
    with pytest.raises(ValueError):
        log.append_as_follower([RecordBatch(5, 2, tuple(recs(1)))])  # gap
    assert log.end_offset == 1


def test_data_survives_reopen(tmp_path) -> None:
    log = open_log(tmp_path)
    for e in (1, 1, 2, 4):
        log.append_as_leader(recs(2, f"e{e}"), e)
    before = all_records(log)
    log.close()
    again = open_log(tmp_path)
    assert all_records(again) == before
    assert again.epochs() == [(1, 0), (2, 4), (4, 6)]
    assert again.end_offset == again.flushed_offset == 8


def test_segments_roll_and_reads_cross_them(tmp_path) -> None:
    log = open_log(tmp_path, segment_bytes=200)
    for i in range(12):
        log.append_as_leader(recs(2, f"s{i}"), 1 + i // 4)
    names = [p.name for p in log.segment_paths()]
    assert len(names) > 3 and names[0] == "00000000000000000000.log"
    bases = [int(n[:20]) for n in names]
    # each segment starts where the previous one ends and holds whole batches
    for path, base in zip(log.segment_paths(), bases, strict=True):
        data = path.read_bytes()
        got = list(iter_batches(data))
        assert got and got[0][0].base_offset == base
        assert sum(size for _, _, size in got) == len(data)
    assert len(batches_of(log)) == 12
    assert [v for _, _, v in all_records(log)][-2:] == [b"s110", b"s111"]
    log.close()
    assert len(batches_of(open_log(tmp_path, segment_bytes=200))) == 12


def test_offset_index_matches_kafkas_layout(tmp_path) -> None:
    log = open_log(tmp_path, index_interval_bytes=150)
    for i in range(20):
        log.append_as_leader(recs(3, f"i{i}"), 1)
    log.close()
    index = (log.dir / "00000000000000000000.index").read_bytes()
    data = (log.dir / "00000000000000000000.log").read_bytes()
    assert len(index) % 8 == 0 and len(index) // 8 > 3
    last = -1
    for rel, pos in struct.iter_unpack(">ii", index):
        # kafka-dump-log's check: the batch at `pos` has `rel` (relative) as its last offset
        (batch, _, _), *_ = iter_batches(data[pos:])
        assert batch.last_offset == rel
        assert rel > last
        last = rel


def test_truncate_at_a_batch_boundary_and_inside_a_batch(tmp_path) -> None:
    log = open_log(tmp_path, segment_bytes=200)
    for i in range(10):
        log.append_as_leader(recs(3, f"t{i}"), 1 + i // 3)
    log.flush()
    full = all_records(log)
    log.truncate_to(15)
    assert log.end_offset == 15 and log.flushed_offset == 15
    assert all_records(log) == full[:15]
    log.truncate_to(13)  # inside batch 12..14: the prefix 12 survives as its own batch
    assert log.end_offset == 13
    assert all_records(log) == full[:13]
    assert log.read(12, 1 << 20)[-1].records == (Record(value=b"t40"),)
    assert log.epochs() == [(1, 0), (2, 9)]
    log.truncate_to(100)  # beyond the end: nothing
    assert log.end_offset == 13
    log.truncate_to(0)
    assert log.end_offset == 0 and log.epochs() == [] and log.last_epoch() == 0
    assert [p.name for p in log.segment_paths()] == ["00000000000000000000.log"]
    log.append_as_leader(recs(1), 7)
    log.close()
    again = open_log(tmp_path, segment_bytes=200)
    assert all_records(again) == [(0, 7, b"r0")]
    assert again.epochs() == [(7, 0)]


def test_truncation_removes_later_segments_and_their_indexes(tmp_path) -> None:
    log = open_log(tmp_path, segment_bytes=150)
    for _ in range(10):
        log.append_as_leader(recs(2), 1)
    segs = log.segment_paths()
    cut = int(segs[2].name[:20])
    log.truncate_to(cut)
    # the segment starting at the cut goes too; the one before it now ends the log
    assert log.segment_paths() == segs[:2] and log.end_offset == cut
    for gone in segs[2:]:
        assert not gone.exists() and not gone.with_suffix(".index").exists()
    log.append_as_leader(recs(1), 1)
    assert log.read(cut, 100)[0].base_offset == cut


def test_epoch_cache_and_end_offset_for_epoch(tmp_path) -> None:
    log = open_log(tmp_path)
    for epoch, n in ((1, 3), (1, 2), (3, 4), (6, 1)):
        log.append_as_leader(recs(n), epoch)
    assert log.epochs() == [(1, 0), (3, 5), (6, 9)]
    assert log.last_epoch() == 6
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(5, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(5, 1)  # largest epoch <= 2 is 1
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(9, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(9, 3)
    assert log.end_offset_for_epoch(6) == OffsetAndEpoch(10, 6)  # the last epoch ends at the LEO
    assert log.end_offset_for_epoch(99) == OffsetAndEpoch(10, 6)
    # Kafka's leader-epoch-checkpoint text format
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n3 5\n6 9\n"
    log.truncate_to(7)
    assert log.epochs() == [(1, 0), (3, 5)]
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n3 5\n"


def test_epoch_cache_is_rebuilt_from_segments_not_trusted(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(2), 2)
    log.append_as_leader(recs(2), 5)
    log.close()
    (log.dir / "leader-epoch-checkpoint").write_text("0\n1\n9 0\n")
    again = open_log(tmp_path)
    assert again.epochs() == [(2, 0), (5, 2)]
    assert (again.dir / "leader-epoch-checkpoint").read_text() == "0\n2\n2 0\n5 2\n"


def test_raw_batches_are_valid_kafka_v2(tmp_path) -> None:
    log = open_log(tmp_path)
    b = log.append_as_leader(recs(2), 4, timestamp_ms=123)
    raw = log.read_raw(0, 1 << 20)
    again = decode_batch(raw)
    assert again == b and again.leader_epoch == 4 and again.base_timestamp == 123
    assert raw[16] == 2  # magic


def test_index_is_kept_current_while_open(tmp_path) -> None:
    log = open_log(tmp_path, index_interval_bytes=100)
    for i in range(12):
        log.append_as_leader(recs(2, f"k{i}"), 1)
    index = log.dir / "00000000000000000000.index"
    entries = list(struct.iter_unpack(">ii", index.read_bytes()))
    assert len(entries) > 3 and entries == log._segments[0].index_entries
    log.truncate_to(9)
    kept = list(struct.iter_unpack(">ii", index.read_bytes()))
    assert kept == entries[: len(kept)] and all(pos < log._segments[0].size for _, pos in kept)
