"""Crash points: power loss between write and fsync, torn tails, bad CRCs, leftover temp files."""

from __future__ import annotations

import logging
import os

from kraftwire.protocol.records import RecordBatch, encode_batch, iter_batches

from .helpers import PowerLoss, all_records, open_log, recs


def test_power_loss_drops_only_unflushed_appends(tmp_path) -> None:
    with PowerLoss() as power:
        log = open_log(tmp_path)
        log.append_as_leader(recs(3, "a"), 1)
        log.append_as_leader(recs(3, "b"), 1)
        log.flush()
        acked = all_records(log)
        log.append_as_leader(recs(3, "c"), 2)  # written, never fsynced
        power.crash(log)
        again = open_log(tmp_path)
        assert all_records(again) == acked
        assert again.end_offset == again.flushed_offset == 6
        assert again.epochs() == [(1, 0)]


def test_process_kill_keeps_what_reached_the_os(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(2), 1)
    log.append_as_leader(recs(2), 2)
    expected = all_records(log)
    for seg in log._segments:  # kill -9: no flush, no fsync, but the page cache survives
        os.close(seg.fd)
        os.close(seg.index_fd)
    again = open_log(tmp_path)
    assert all_records(again) == expected


def test_partial_write_is_a_torn_tail(tmp_path, caplog) -> None:
    with PowerLoss() as power:
        log = open_log(tmp_path)
        log.append_as_leader(recs(4, "a"), 1)
        log.flush()
        acked = all_records(log)
        size = log.segment_paths()[0].stat().st_size
        log.append_as_leader(recs(4, "b"), 1)
        path = log.segment_paths()[0]
        for extra in (1, 11, 40):  # inside the header, inside the records
            power.crash(log, extra=extra)
            assert path.stat().st_size == size + extra
            with caplog.at_level(logging.WARNING):
                log = open_log(tmp_path)
            assert "torn tail" in caplog.text
            assert all_records(log) == acked and path.stat().st_size == size
            log.append_as_leader(recs(4, "b"), 1)  # the next crash tears the same write again


def test_torn_tail_written_directly(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(2), 1)
    acked = all_records(log)
    log.close()
    extra = encode_batch(RecordBatch(2, 1, tuple(recs(5))))
    path = log.dir / "00000000000000000000.log"
    with open(path, "ab") as f:
        f.write(extra[: len(extra) // 2])
    again = open_log(tmp_path)
    assert all_records(again) == acked
    again.append_as_leader(recs(1, "z"), 1)
    again.close()
    assert all_records(open_log(tmp_path))[-1] == (2, 1, b"z0")


def test_corrupt_crc_in_the_last_batch(tmp_path, caplog) -> None:
    log = open_log(tmp_path)
    for i in range(3):
        log.append_as_leader(recs(2, f"b{i}"), 1)
    log.close()
    path = log.dir / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    (_, pos, size), = [t for t in iter_batches(bytes(data)) if t[0].base_offset == 4]
    data[pos + size - 1] ^= 0xFF  # flip a bit in the last record's value
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        again = open_log(tmp_path)
    assert "CRC" in caplog.text
    assert again.end_offset == 4 and path.stat().st_size == pos
    assert [v for _, _, v in all_records(again)] == [b"b00", b"b01", b"b10", b"b11"]


def test_corruption_in_an_early_segment_drops_everything_after_it(tmp_path) -> None:
    log = open_log(tmp_path, segment_bytes=150)
    for i in range(8):
        log.append_as_leader(recs(2, f"s{i}"), 1)
    segs = log.segment_paths()
    log.close()
    assert len(segs) >= 3
    data = bytearray(segs[1].read_bytes())
    data[-1] ^= 1
    segs[1].write_bytes(bytes(data))
    again = open_log(tmp_path, segment_bytes=150)
    assert [p.name for p in again.segment_paths()] == [s.name for s in segs[:2]]
    assert not segs[2].exists()
    held = all_records(again)
    assert held and [o for o, _, _ in held] == list(range(len(held)))  # still a prefix, no gaps


def test_zero_filled_tail_is_truncated(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(2), 1)
    log.close()
    path = log.dir / "00000000000000000000.log"
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\x00" * 4096)  # a preallocated or half-persisted region
    again = open_log(tmp_path)
    assert again.end_offset == 2 and path.stat().st_size == size


def test_a_segment_that_does_not_continue_the_log_is_removed(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(3), 1)
    log.close()
    stray = log.dir / "00000000000000000009.log"
    stray.write_bytes(b"")
    again = open_log(tmp_path)
    assert not stray.exists() and again.end_offset == 3


def test_crash_right_after_a_roll(tmp_path) -> None:
    with PowerLoss() as power:
        log = open_log(tmp_path, segment_bytes=120)
        for i in range(4):
            log.append_as_leader(recs(2, f"x{i}"), 1)
            log.flush()
        acked = all_records(log)
        log.append_as_leader(recs(2, "lost"), 1)  # lands in a fresh segment, unflushed
        power.crash(log)
        again = open_log(tmp_path, segment_bytes=120)
        assert all_records(again) == acked


def test_leftover_temp_files_are_ignored_and_removed(tmp_path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(recs(2), 3)
    log.close()
    (log.dir / "leader-epoch-checkpoint.tmp").write_bytes(b"")
    (log.dir / "00000000000000000000.index.tmp").write_bytes(b"\x00\x00")
    again = open_log(tmp_path)
    assert again.epochs() == [(3, 0)]
    assert not (log.dir / "leader-epoch-checkpoint.tmp").exists()
    assert not (log.dir / "00000000000000000000.index.tmp").exists()
