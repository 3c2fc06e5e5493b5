"""The matrix's own comparison logic: what counts as reading the log correctly."""

from __future__ import annotations

import pytest

from compat.clients import DriverFailed, parse_kcat
from compat.expected import LogContents, committed_records
from compat.matrix import Result, compare
from kraftwire.protocol.records import Record
from kraftwire.storage.log import FileLog

pytestmark = pytest.mark.compat

TRUTH = LogContents(records=[(1, "aa"), (2, "bb"), (4, "cc")], control_offsets=[0, 3], high_watermark=5)


def test_exact_read_passes_and_counts_skipped_controls():
    r = compare([(1, "aa"), (2, "bb"), (4, "cc")], TRUTH.records, TRUTH)
    assert r == Result("pass", "3 records, offsets 1..4, 1 control records skipped")


@pytest.mark.parametrize("got, words", [
    ([(1, "aa"), (2, "bb"), (3, "00")], "control record delivered at record 2"),
    ([(1, "aa"), (4, "cc")], "mismatch at record 1"),
    ([(1, "aa"), (2, "bx"), (4, "cc")], "mismatch at record 1"),
    ([(1, "aa"), (2, "bb")], "got 2 records, expected 3"),
])
def test_wrong_reads_fail_with_the_reason(got, words):
    r = compare(got, TRUTH.records, TRUTH)
    assert r.status == "fail" and words in r.detail


def test_kcat_stream_keeps_arbitrary_value_bytes():
    out = b"7 3 a b" + b"8 0 " + b"9 2 \n "
    assert parse_kcat(out) == [(7, b"a b".hex()), (8, ""), (9, b"\n ".hex())]
    with pytest.raises(DriverFailed):
        parse_kcat(b"7 5 ab")


def test_committed_records_stop_at_the_high_watermark(tmp_path):
    log = FileLog(tmp_path, segment_bytes=200)
    log.append_as_leader([Record(b"\x00\x00\x00\x00", key=b"\x00\x00\x00\x02")], 1, control=True)
    for i in range(6):
        log.append_as_leader([Record(bytes([i]) * 30)], 1)
    log.flush()
    assert len(list(tmp_path.glob("*.log"))) > 1  # several segments are read in order
    c = committed_records(tmp_path, 5)
    assert c.control_offsets == [0]
    assert c.records == [(i + 1, (bytes([i]) * 30).hex()) for i in range(4)]
