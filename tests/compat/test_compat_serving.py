"""Serving consumer Fetches from segment bytes (no per-fetch decoding) returns exactly the committed batches."""

from __future__ import annotations

import pytest

from kraftwire.node.view import LogPartitionView
from kraftwire.protocol.records import Record, decode_batches
from kraftwire.storage.log import FileLog

pytestmark = pytest.mark.compat


class _Core:
    leader_id, epoch = 1, 1

    def __init__(self, hw: int) -> None:
        self.hw = hw


@pytest.mark.parametrize("hw", [0, 1, 5, 6, 23, 40])
@pytest.mark.parametrize("start", [0, 3, 7, 22])
@pytest.mark.parametrize("max_bytes", [1, 150, 400, 1 << 20])
def test_raw_serving_matches_decoded_reads(tmp_path, hw, start, max_bytes):
    log = FileLog(tmp_path, segment_bytes=700)
    log.append_as_leader([Record(b"\x00\x00\x00\x00", key=b"\x00\x00\x00\x02")], 1, control=True)
    for i in range(12):
        log.append_as_leader([Record(bytes([i]) * (5 + i)) for _ in range(1 + i % 3)], 1)
    assert len(list(tmp_path.glob("*.log"))) > 1
    view = LogPartitionView(_Core(hw), log)
    data = view.read_committed_raw(start, max_bytes)
    # The reference: whole decoded batches in offset order, stopping before one that reaches the HW.
    expected = bytearray()
    for batch in log.read(start, max_bytes):
        if batch.last_offset >= hw or (expected and len(expected) + len(batch.raw) > max_bytes):
            break
        expected += batch.raw
    assert data == bytes(expected)
    batches = decode_batches(data)
    assert all(b.last_offset < hw for b in batches)
    if start < log.end_offset and hw > start and batches:
        assert batches[0].base_offset <= start <= batches[0].last_offset
