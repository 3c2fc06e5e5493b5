"""The append-only offsets file: framing, torn tails, compaction, failure handling."""

from __future__ import annotations

import os

import pytest

from kraftwire.group.store import (
    STORE_FILE_NAME,
    FileOffsetStore,
    GroupRecord,
    GroupTombstone,
    OffsetRecord,
    OffsetTombstone,
    decode_record,
    encode_record,
    frame,
    scan_frames,
    store_dir,
)

META = "__cluster_metadata"


def off(group: str, offset: int, partition: int = 0, meta: str | None = "") -> OffsetRecord:
    return OffsetRecord(group, META, partition, offset, 4, meta, 1_700_000_000_000 + offset)


@pytest.mark.parametrize("record", [
    off("g", 1), off("g", 2, meta=None), off("ü-group", 2**40, partition=7, meta="x" * 100),
    OffsetTombstone("g", META, 0), GroupRecord("g", "consumer", 5, "range", "m-1", 123),
    GroupRecord("g", None, 0), GroupTombstone("g"),
])
def test_record_codec_round_trip(record) -> None:
    assert decode_record(encode_record(record)) == record


def test_store_dir_is_under_metadata_log_dir(tmp_path) -> None:
    assert store_dir(tmp_path) == tmp_path / "__consumer_offsets-kraftwire"


def test_append_and_reload(tmp_path) -> None:
    s = FileOffsetStore(tmp_path)
    s.append([GroupRecord("g", "consumer", 3, "range", "m", 9)])
    s.append([off("g", 1), off("h", 2)])
    s.append([off("g", 5), OffsetTombstone("h", META, 0)])
    s.close()
    state = FileOffsetStore(tmp_path).load()
    assert state.groups == {"g": GroupRecord("g", "consumer", 3, "range", "m", 9)}
    assert state.offsets == {("g", META, 0): off("g", 5)}


@pytest.mark.parametrize("cut", [1, 4, 8, 9, 20])
def test_torn_tail_is_dropped_and_appends_continue(tmp_path, cut: int) -> None:
    s = FileOffsetStore(tmp_path)
    s.append([off("g", 1)])
    s.append([off("g", 2)])
    s.close()
    path = tmp_path / STORE_FILE_NAME
    data = path.read_bytes()
    last = len(frame(encode_record(off("g", 2))))
    path.write_bytes(data[: len(data) - last + min(cut, last - 1)])  # the second frame, torn
    s2 = FileOffsetStore(tmp_path)
    assert s2.load().offsets[("g", META, 0)].offset == 1
    assert s2.truncated_bytes == min(cut, last - 1)
    s2.append([off("g", 3)])
    s2.close()
    assert FileOffsetStore(tmp_path).load().offsets[("g", META, 0)].offset == 3


def test_corrupt_crc_ends_the_log(tmp_path) -> None:
    s = FileOffsetStore(tmp_path)
    s.append([off("g", 1)])
    s.append([off("g", 2)])
    s.close()
    path = tmp_path / STORE_FILE_NAME
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert FileOffsetStore(tmp_path).load().offsets[("g", META, 0)].offset == 1
    # Garbage after valid frames is likewise ignored.
    records, good = scan_frames(frame(encode_record(off("g", 1))) + b"\xff" * 11)
    assert len(records) == 1 and good == len(frame(encode_record(off("g", 1))))


def test_compaction_rewrites_to_live_records(tmp_path) -> None:
    s = FileOffsetStore(tmp_path, compact_ratio=3.0, compact_min_bytes=1_000)
    s.append([GroupRecord("g", "consumer", 1)])
    for i in range(500):
        s.append([off("g", i), off("g", i, partition=1)], sync=False)
    assert s.compactions > 0
    path = tmp_path / STORE_FILE_NAME
    assert path.stat().st_size == s.size <= max(1_000, 3 * s.live_bytes) + 200
    assert not (tmp_path / (STORE_FILE_NAME + ".tmp")).exists()
    s.append([off("g", 1000)])
    s.close()
    state = FileOffsetStore(tmp_path).load()
    assert state.offsets[("g", META, 0)].offset == 1000
    assert state.offsets[("g", META, 1)].offset == 499
    assert state.groups["g"].generation == 1


def test_compaction_drops_tombstoned_groups(tmp_path) -> None:
    s = FileOffsetStore(tmp_path, compact_min_bytes=0)
    s.append([GroupRecord("gone", "consumer", 2), off("gone", 1)])
    s.append([OffsetTombstone("gone", META, 0), GroupTombstone("gone")])
    s.compact()
    assert s.size == 0 and s.live_bytes == 0
    s.close()
    assert os.path.getsize(tmp_path / STORE_FILE_NAME) == 0


def test_leftover_temp_file_is_discarded(tmp_path) -> None:
    FileOffsetStore(tmp_path).append([off("g", 1)])
    (tmp_path / (STORE_FILE_NAME + ".tmp")).write_bytes(b"half a compaction")
    s = FileOffsetStore(tmp_path)
    assert s.load().offsets[("g", META, 0)].offset == 1
    assert not (tmp_path / (STORE_FILE_NAME + ".tmp")).exists()


def test_failed_write_leaves_no_partial_frame(tmp_path, monkeypatch) -> None:
    s = FileOffsetStore(tmp_path)
    s.append([off("g", 1)])
    size = s.size

    def boom(fd: int) -> None:
        raise OSError("EIO")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        s.append([off("g", 2)])
    monkeypatch.undo()
    assert s.size == size and (tmp_path / STORE_FILE_NAME).stat().st_size == size
    assert s.load().offsets[("g", META, 0)].offset == 1
    s.append([off("g", 3)])
    s.close()
    assert FileOffsetStore(tmp_path).load().offsets[("g", META, 0)].offset == 3
