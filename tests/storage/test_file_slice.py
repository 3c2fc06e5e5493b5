"""Committed reads cut by bisection (``read_raw(below=)``, ``read_slice``) and the ``FileSlice`` they hand out:
the same whole batches a decoding reader would pick, and bytes that stay readable when the segments go."""

from __future__ import annotations

import os

import pytest

from kraftwire.metadata import bootstrap_records
from kraftwire.protocol.records import Record, decode_batches
from kraftwire.raft import SnapshotId
from kraftwire.storage.file_slice import FileSlice
from kraftwire.storage.log import FileLog
from kraftwire.storage.snapshot import frame_snapshot


def _log(path, segment_bytes: int = 700) -> FileLog:
    log = FileLog(path, segment_bytes=segment_bytes, index_interval_bytes=100)
    for i in range(30):
        log.append_as_leader([Record(bytes([i]) * (5 + i % 7)) for _ in range(1 + i % 3)], 1 + i // 10)
    log.flush()
    return log


def _snapshot_at_end(log: FileLog) -> SnapshotId:
    sid = SnapshotId(log.end_offset, log.last_epoch())
    log.create_snapshot(sid, frame_snapshot(sid, bootstrap_records(21, {})))
    return sid


def _reference(log: FileLog, start: int, max_bytes: int, below: int) -> bytes:
    """Decode batch after batch from ``start``: whole ones ending at or below ``below``, the first always,
    the later ones while the total fits ``max_bytes``."""
    out = bytearray()
    offset = start
    while offset < log.end_offset:
        batches = log.read(offset, 1)
        if not batches:
            break
        batch = batches[0]
        if batch.next_offset > below or (out and len(out) + len(batch.raw) > max_bytes):
            break
        out += batch.raw
        offset = batch.next_offset
    return bytes(out)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module")
def shared_log(tmp_path_factory):
    log = _log(tmp_path_factory.mktemp("shared"))
    yield log
    log.close()


@pytest.mark.parametrize("below", [0, 1, 2, 13, 24, 40, 59, 1000])
@pytest.mark.parametrize("start", [0, 1, 5, 23, 24, 44])
@pytest.mark.parametrize("max_bytes", [1, 90, 300, 1000, 1 << 20])
def test_committed_reads_pick_the_batches_a_decoding_reader_picks(shared_log, below, start, max_bytes):
    log = shared_log
    assert len(log.segment_paths()) > 3
    below = min(below, log.end_offset)
    expected = _reference(log, start, max_bytes, below)
    assert log.read_raw(start, max_bytes, below) == expected
    piece = log.read_slice(start, max_bytes, below)
    assert len(piece) == len(expected) and piece.materialize() == expected
    if expected:
        first = decode_batches(expected)[0]
        assert first.base_offset <= start < first.next_offset


def test_read_raw_without_below_reads_to_the_log_end(tmp_path):
    log = _log(tmp_path)
    assert log.read_raw(0, 1 << 30) == _reference(log, 0, 1 << 30, log.end_offset)
    assert b"".join(b.raw for b in log.read(0, 1 << 30)) == log.read_raw(0, 1 << 30)


def test_a_slice_outlives_the_segments_it_reads(tmp_path):
    log = _log(tmp_path)
    end = log.end_offset
    expected = log.read_raw(0, 1 << 20, end)
    piece = log.read_slice(0, 1 << 20, end)
    first = log.segment_paths()[0]
    # retention: a snapshot at the end, then every segment below it is deleted
    log.delete_before(_snapshot_at_end(log))
    assert not first.exists()
    assert piece.materialize() == expected


def test_a_slice_outlives_a_snapshot_install(tmp_path):
    log = _log(tmp_path)
    expected = log.read_raw(3, 500, 20)
    piece = log.read_slice(3, 500, 20)
    donor = _log(tmp_path / "donor")
    sid = _snapshot_at_end(donor)
    log.install_snapshot(sid, donor.snapshots.path(sid).read_bytes())
    assert log.start_offset == log.end_offset == sid.end_offset
    assert piece.materialize() == expected


def test_a_slice_cut_short_by_truncation_is_an_error_not_short_bytes(tmp_path):
    log = _log(tmp_path, segment_bytes=1 << 20)
    piece = log.read_slice(0, 1 << 20, log.end_offset)
    os.truncate(log.segment_paths()[0], 50)
    with pytest.raises(OSError, match="no longer there"):
        piece.materialize()


def test_slices_close_their_descriptors(tmp_path):
    log = _log(tmp_path)
    before = _open_fds()
    piece = log.read_slice(0, 1 << 20, log.end_offset)
    assert len(list(piece.ranges())) > 1 and _open_fds() == before + len(list(piece.ranges()))
    piece.materialize()
    assert _open_fds() == before
    with pytest.raises(ValueError):
        piece.materialize()
    dropped = log.read_slice(0, 1 << 20, log.end_offset)   # built and never sent (a long-poll retry)
    assert _open_fds() > before
    del dropped
    assert _open_fds() == before
    assert len(FileSlice([])) == 0 and log.read_slice(log.end_offset, 10, log.end_offset).materialize() == b""


def test_out_of_descriptors_the_view_reads_into_memory(tmp_path, monkeypatch):
    from kraftwire.node.view import LogPartitionView

    class Core:
        leader_id, epoch, hw = 1, 1, 40

    log = _log(tmp_path)
    expected = log.read_raw(0, 1 << 20, 40)
    before = _open_fds()
    real_dup, calls = os.dup, []

    def dup_then_fail(fd):
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(24, "Too many open files")
        return real_dup(fd)

    monkeypatch.setattr(os, "dup", dup_then_fail)
    assert LogPartitionView(Core(), log).read_committed(0, 1 << 20) == expected
    assert len(calls) == 2 and _open_fds() == before, "the first duplicate was closed again"
