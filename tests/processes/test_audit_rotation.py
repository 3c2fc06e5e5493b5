"""The audit file is trimmed with the metadata log: once snapshots let the log start move forward, the
entries of the offsets the log no longer holds leave the file and the recent ones stay."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from kraftwire.storage.audit import audit_path, read_audit
from kraftwire.storage.reader import read_log_dir

from .harness import Cluster

pytestmark = pytest.mark.processes

CLEAN_OFTEN = ["metadata.log.segment.bytes=600", "metadata.log.max.record.bytes.between.snapshots=600",
               "metadata.max.retention.bytes=0", "metadata.max.idle.interval.ms=0"]


def test_entries_below_the_log_start_are_dropped(tmp_path) -> None:
    c = Cluster(tmp_path, 1)
    try:
        c.start(1, *CLEAN_OFTEN)
        addr = c.addr(1)

        def add_acl(i: int) -> None:
            deadline = time.monotonic() + 30
            while True:
                out = subprocess.run([sys.executable, "-m", "kraftwire", "acls", "--bootstrap-controller", addr,
                                      "--add", "--allow-principal", f"User:u{i}", "--operation", "Read", "--topic",
                                      f"t{i}"], capture_output=True, text=True, timeout=60)
                if out.returncode == 0:
                    return
                assert time.monotonic() < deadline, out.stderr
                time.sleep(0.5)

        for i in range(16):
            add_acl(i)
        data = c.data_dir(1)

        def trimmed() -> int | None:
            src = read_log_dir(data, from_start=True)
            start = src.batches[0].base if src.batches else (src.snapshot_id.end_offset if src.snapshot_id else 0)
            entries, warnings = read_audit(audit_path(data))
            assert not warnings
            return start if start > 0 and all(e.last_offset >= start for e in entries) else None

        deadline = time.monotonic() + 30
        start = trimmed()
        while start is None and time.monotonic() < deadline:
            time.sleep(0.5)
            start = trimmed()
        assert start is not None, "the log start never moved, or the audit file kept entries below it"
        add_acl(99)                       # a write after the cleaning is kept
        entries = wait_for_entry(data, "User:u99")
        assert len([e for e in entries if e.api == "CreateAcls"]) < 17 and entries[-1].first_offset >= start
        report = json.loads(subprocess.run([sys.executable, "-m", "kraftwire", "audit", "--log-dir", str(data),
                                            "--principal", "User:ANONYMOUS", "--json"], capture_output=True,
                                           text=True, timeout=60).stdout)
        assert report["entries"] and all(r["status"] == "in the log" for r in report["entries"])
        assert report["entries"][-1]["what"] == "1 AccessControlEntryRecord"
    finally:
        c.stop_all()


def wait_for_entry(data, principal_in_record: str) -> list:
    """The audit entries once the last CreateAcls (whose record names ``principal_in_record``) is in."""
    src_deadline = time.monotonic() + 30
    while True:
        entries, _ = read_audit(audit_path(data))
        src = read_log_dir(data, from_start=True)
        records = dict(src.records)
        last = entries[-1] if entries else None
        if last is not None and any(getattr(records.get(o), "message", None) is not None
                                    and getattr(records[o].message, "principal", "") == principal_in_record
                                    for o in range(last.first_offset, last.last_offset + 1)):
            return entries
        assert time.monotonic() < src_deadline, f"no audit entry for the ACL of {principal_in_record}"
        time.sleep(0.5)
