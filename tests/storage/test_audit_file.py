"""The audit file: durable appends, trimming with the log start, damaged lines reported."""

from __future__ import annotations

from kraftwire.storage.audit import AuditEntry, AuditWriter, audit_path, read_audit


def entry(first: int, last: int) -> AuditEntry:
    return AuditEntry(first, last, 2, 1_000 + first, 1, 19, "CreateTopics", "User:alice", "cli", "10.0.0.1",
                      "CONTROLLER", True)


def test_append_read_and_trim_below_the_log_start(tmp_path) -> None:
    w = AuditWriter(tmp_path)
    for first in (0, 10, 20):
        w.append(entry(first, first + 4))
    assert read_audit(audit_path(tmp_path)) == ([entry(0, 4), entry(10, 14), entry(20, 24)], [])
    w.append(entry(30, 31), log_start=12)      # the log now starts at 12: 0-4 is gone, 10-14 still reaches it
    assert [e.first_offset for e in read_audit(audit_path(tmp_path))[0]] == [10, 20, 30]
    w.trim(25)
    assert [e.first_offset for e in read_audit(audit_path(tmp_path))[0]] == [30]


def test_damaged_lines_are_reported_and_kept(tmp_path) -> None:
    w = AuditWriter(tmp_path)
    w.append(entry(0, 1))
    with open(audit_path(tmp_path), "a") as f:
        f.write("garbage\n")
    w.append(entry(5, 6))
    entries, warnings = read_audit(audit_path(tmp_path))
    assert entries == [entry(0, 1), entry(5, 6)]
    assert len(warnings) == 1 and warnings[0].endswith("line 2: not an audit entry (Expecting value: line 1 column 1 "
                                                       "(char 0))")
    w.trim(3)
    assert audit_path(tmp_path).read_text().splitlines()[0] == "garbage"   # never dropped unread
