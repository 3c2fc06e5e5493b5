"""Hypothesis state machine: FileLog and MemoryLog driven by the same random appends, truncations,
flushes, reopens and power losses must agree, and no flushed (acknowledged) record may be lost."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import MemoryLog
from kraftwire.storage.log import FileLog

from .helpers import PowerLoss, all_records, batches_of, open_log

SEGMENT_BYTES = 220


class FileVsMemory(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kw-stateful-"))
        self.power = PowerLoss().__enter__()
        self.file = self._open()
        self.mem = MemoryLog()
        self.epoch = 1
        self.counter = 0

    def _open(self) -> FileLog:
        return open_log(self.root, segment_bytes=SEGMENT_BYTES, index_interval_bytes=100)

    def teardown(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
        self.power.__exit__()
        shutil.rmtree(self.root, ignore_errors=True)

    def _records(self, n: int) -> list[Record]:
        self.counter += 1
        return [Record(value=f"v{self.counter}.{i}".encode() * (1 + i % 3)) for i in range(n)]

    @rule(n=st.integers(1, 5), bump=st.booleans(), ts=st.integers(0, 10**12))
    def append_as_leader(self, n: int, bump: bool, ts: int) -> None:
        self.epoch += bump
        records = self._records(n)
        a = self.file.append_as_leader(records, self.epoch, timestamp_ms=ts)
        b = self.mem.append_as_leader(records, self.epoch, timestamp_ms=ts)
        assert a == b

    @rule(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3), bump=st.booleans())
    def append_as_follower(self, sizes: list[int], bump: bool) -> None:
        self.epoch += bump
        batches, offset = [], self.mem.end_offset
        for n in sizes:
            batches.append(RecordBatch(offset, self.epoch, tuple(self._records(n))))
            offset += n
        self.file.append_as_follower(batches)
        self.mem.append_as_follower(batches)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.mem.end_offset + 2))
        self.file.truncate_to(offset)
        self.mem.truncate_to(offset)
        self.epoch = max(self.epoch, self.mem.last_epoch())

    @rule()
    def flush(self) -> None:
        self.file.flush()
        self.mem.flush()
        assert self.file.flushed_offset == self.mem.flushed_offset == self.mem.end_offset

    @rule()
    def reopen(self) -> None:
        self.file.close()
        self.mem.flush()
        self.file = self._open()

    @precondition(lambda self: self.mem.end_offset > 0)
    @rule(extra=st.integers(0, 300))
    def power_loss(self, extra: int) -> None:
        acked = self.file.flushed_offset
        before = all_records(self.mem)
        self.power.crash(self.file, extra)
        self.file = self._open()
        # nothing acknowledged is lost, and what survived is a prefix of what was written
        assert self.file.end_offset >= acked
        assert all_records(self.file) == before[: self.file.end_offset]
        self.mem.truncate_to(self.file.end_offset)
        self.mem.flush()

    @invariant()
    def agree(self) -> None:
        f, m = self.file, self.mem
        assert (f.start_offset, f.end_offset) == (m.start_offset, m.end_offset)
        assert f.last_epoch() == m.last_epoch()
        assert m.flushed_offset <= f.flushed_offset <= f.end_offset
        assert batches_of(f) == batches_of(m)
        for epoch in range(0, self.epoch + 2):
            assert f.end_offset_for_epoch(epoch) == m.end_offset_for_epoch(epoch), epoch
        if m.end_offset:
            mid = m.end_offset // 2
            assert f.read(mid, 1) == m.read(mid, 1)


FileVsMemory.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
TestFileVsMemory = FileVsMemory.TestCase


class DeferredFileVsMemory(FileVsMemory):
    """The same with the server's deferred journal: rolls' fsyncs, removals and side files wait for the
    disk worker's ``sync`` (run here inline, as the shell's worker would), and a power loss loses them.
    A truncation too is durable only at that sync: a power loss before it may bring the cut records back
    (whole: a segment whose removal was lost, contiguous or dropped on open), and, as the Raft core does
    (``RaftCore._durable``), nothing is appended after a truncation before that sync."""

    uncut: list | None = None   # the records before a truncation no sync has made durable yet

    def _open(self) -> FileLog:
        log = super()._open()
        log.journal.deferred = True
        return log

    @rule()
    def worker_sync(self) -> None:
        end = self.file.end_offset
        self.file.sync()
        self.file.mark_flushed(end)
        self.mem.flush()
        self.uncut = None
        assert self.file.flushed_offset == self.mem.flushed_offset == self.mem.end_offset

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        if self.uncut is None:
            self.uncut = all_records(self.mem)
        super().truncate(data)

    def _synced_before_append(self) -> None:
        if self.uncut is not None:
            self.worker_sync()

    @rule(n=st.integers(1, 5), bump=st.booleans(), ts=st.integers(0, 10**12))
    def append_as_leader(self, n: int, bump: bool, ts: int) -> None:
        self._synced_before_append()
        super().append_as_leader(n, bump, ts)

    @rule(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3), bump=st.booleans())
    def append_as_follower(self, sizes: list[int], bump: bool) -> None:
        self._synced_before_append()
        super().append_as_follower(sizes, bump)

    @rule()
    def flush(self) -> None:
        super().flush()
        self.uncut = None

    @rule()
    def reopen(self) -> None:
        super().reopen()
        self.uncut = None

    @precondition(lambda self: self.mem.end_offset > 0 or self.uncut)
    @rule(extra=st.integers(0, 300))
    def power_loss(self, extra: int) -> None:
        uncut, self.uncut = self.uncut, None
        if uncut is None:
            super().power_loss(extra)
            return
        acked = self.file.flushed_offset
        before = all_records(self.mem)
        self.power.crash(self.file, extra)
        self.file = self._open()
        survived = all_records(self.file)
        # nothing acknowledged is lost, and what survived is a prefix of the log before or after the cut
        assert self.file.end_offset >= acked
        assert survived in (before[: self.file.end_offset], uncut[: self.file.end_offset]), survived
        self.mem = MemoryLog()
        self.mem.append_as_follower(batches_of(self.file))
        self.mem.flush()
        self.epoch = max(self.epoch, self.mem.last_epoch())


DeferredFileVsMemory.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
TestDeferredFileVsMemory = DeferredFileVsMemory.TestCase
