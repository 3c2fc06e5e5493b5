"""Byte-range splits of a segment (``rows.split_bytes``): for any layout of batches, any split size and
any (correct or missing) offset index, the splits of a file read every batch exactly once."""

from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.analytics.rows import SEGMENT, LogFile, byte_splits, file_rows, split_bytes
from kraftwire.protocol.records import Record, RecordBatch, encode_batch, iter_batches


def _segment(sizes: list[list[int]]) -> tuple[bytes, list[int]]:
    """A segment whose batches hold records with these value sizes; also each batch's position."""
    out, positions, offset = bytearray(), [], 0
    for values in sizes:
        positions.append(len(out))
        out += encode_batch(RecordBatch(offset, 1, tuple(Record(value=bytes([i % 251]) * n)
                                                           for i, n in enumerate(values))))
        offset += len(values)
    return bytes(out), positions


layouts = st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=4), min_size=0, max_size=15)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts, split=st.integers(1, 4000), data=st.data())
def test_splits_read_every_batch_exactly_once(tmp_path, layout, split, data) -> None:
    raw, positions = _segment(layout)
    tail = data.draw(st.integers(0, 40))            # a torn last batch: never read, by any split
    torn = encode_batch(RecordBatch(10_000, 1, (Record(value=b"x" * 50),)))[:tail] if tail else b""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw + torn)
    index = data.draw(st.lists(st.sampled_from(positions), unique=True).map(sorted) if positions else st.just([]))
    path.with_suffix(".index").write_bytes(b"".join(struct.pack(">ii", 0, p) for p in index))
    want = [b.base_offset for b, _, _ in iter_batches(raw)]
    got = []
    for lo, hi in byte_splits(len(raw) + len(torn), split):
        base, chunk = split_bytes(str(path), lo, hi)
        for b, pos, _ in iter_batches(chunk):
            assert lo <= base + pos < hi
            assert base + pos in positions
            got.append(b.base_offset)
    assert got == want
    # rows, through the reader the data source uses
    f = LogFile(str(path), SEGMENT, 0)
    whole = list(file_rows(f))
    parts = [r for lo, hi in byte_splits(path.stat().st_size, split) for r in file_rows(f, start=lo, end=hi)]
    assert parts == whole


def test_a_corrupt_batch_is_reported_once(tmp_path) -> None:
    raw, positions = _segment([[10, 20], [30], [40, 50, 60], [5]])
    bad = bytearray(raw)
    bad[positions[2] + 20] ^= 0xFF           # inside the third batch's header: its CRC fails
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(bad))
    f = LogFile(str(path), SEGMENT, 0)
    whole = list(file_rows(f))
    assert whole[-1][-1].startswith(f"corrupt batch at position {positions[2]}")
    for split in (1, 7, positions[2], positions[2] + 1, len(raw)):
        rows = [r for lo, hi in byte_splits(len(raw), split) for r in file_rows(f, start=lo, end=hi)]
        errors = [r for r in rows if r[-1] is not None and r[-1].startswith("corrupt batch")]
        assert len(errors) == 1 and errors[0][-1] == whole[-1][-1]
        assert rows[:3] == whole[:3]


def test_byte_splits_tile_the_file() -> None:
    assert byte_splits(0, 5) == [(0, 0)]
    assert byte_splits(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert byte_splits(8, 4) == [(0, 4), (4, 8)]


def test_missing_or_stale_index_is_harmless(tmp_path: Path) -> None:
    raw, positions = _segment([[100]] * 6)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw)
    for stale in (positions[3] + 80, len(raw) + 100):     # inside a record's value; past the end
        path.with_suffix(".index").write_bytes(struct.pack(">ii", 0, stale))
        base, chunk = split_bytes(str(path), positions[4] - 1, None)
        assert base == positions[4] and [b.base_offset for b, _, _ in iter_batches(chunk)] == [4, 5]
    path.with_suffix(".index").unlink()
    base, chunk = split_bytes(str(path), positions[4] - 1, None)
    assert base == positions[4] and [b.base_offset for b, _, _ in iter_batches(chunk)] == [4, 5]


def test_column_buffer_holds_exactly_the_rows(demo_dir, tmp_path) -> None:
    from kraftwire.analytics.rows import ColumnBuffer, RowBuffer, file_batches, list_log_files

    files = list_log_files(demo_dir)
    raw = Path(files[1].path).read_bytes()
    bad = tmp_path / Path(files[1].path).name
    bad.write_bytes(raw[:200] + bytes([raw[200] ^ 0xFF]) + raw[201:])    # a corrupt batch mid-file
    for f in [*files, LogFile(str(bad), SEGMENT, files[1].base_offset)]:
        for split in ({}, {"start": 100, "end": 5000}):
            rows = RowBuffer()
            for r in file_rows(f, **split):
                rows.add(r)
            cols = ColumnBuffer()
            for batch, error in file_batches(f, **split):
                if batch is None:
                    cols.add_row(error)
                else:
                    cols.add_batch(batch, Path(f.path).name, f.kind, f.snapshot_end)
            assert len(cols) == len(rows)
            assert cols.take() == rows.take()
