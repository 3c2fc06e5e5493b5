"""In-memory ``ReplicatedLog`` and ``QuorumStateStore`` for the simulator and unit tests.

Both model durability explicitly: the log keeps a flushed prefix that survives ``crash()``; the
store's ``write`` is atomic. A test hook (``fail_next``) makes the next flush / write raise
``SimulatedCrash`` *before* anything becomes durable, so a node can die in the middle of a handler.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft.log import ElectionState, OffsetAndEpoch, SnapshotId


class SimulatedCrash(Exception):
    """Raised by a memory log/store armed with ``fail_next``: the process dies right here."""


class MemoryLog:
    """A list of batches with an epoch cache ``[(epoch, start_offset)]`` and a flushed prefix."""

    def __init__(self) -> None:
        self._batches: list[RecordBatch] = []
        self._bases: list[int] = []
        self._epochs: list[tuple[int, int]] = []
        self._end = 0
        self._flushed = 0
        self.fail_next = False
        self.flush_count = 0

    # -- properties -------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return 0

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def batches(self) -> list[RecordBatch]:
        return self._batches

    def last_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else 0

    # -- writes -----------------------------------------------------------------------------
    def _add(self, batch: RecordBatch) -> None:
        if batch.base_offset != self._end:
            raise ValueError(f"batch at {batch.base_offset} does not start at end offset {self._end}")
        if not batch.records:
            raise ValueError("empty batch")
        if self._epochs and batch.leader_epoch < self._epochs[-1][0]:
            raise ValueError(f"epoch {batch.leader_epoch} below last epoch {self._epochs[-1][0]}")
        if not self._epochs or batch.leader_epoch > self._epochs[-1][0]:
            self._epochs.append((batch.leader_epoch, batch.base_offset))
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        self._end = batch.next_offset

    def append_as_leader(self, records: Sequence[Record], epoch: int, *, control: bool = False,
                         timestamp_ms: int = 0) -> RecordBatch:
        batch = RecordBatch(base_offset=self._end, leader_epoch=epoch, records=tuple(records),
                            control=control, base_timestamp=timestamp_ms)
        self._add(batch)
        return batch

    def append_as_follower(self, batches: Sequence[RecordBatch]) -> None:
        for batch in batches:
            self._add(batch)

    def read(self, start_offset: int, max_bytes: int) -> list[RecordBatch]:
        i = bisect_right(self._bases, start_offset) - 1
        if i < 0 or start_offset >= self._end:
            return []
        out: list[RecordBatch] = []
        size = 0
        for batch in self._batches[i:]:
            cost = 61 + 32 * len(batch.records)  # rough v2 size; only bounds the response
            if out and size + cost > max_bytes:
                break
            out.append(batch)
            size += cost
        return out

    def truncate_to(self, offset: int) -> None:
        if offset >= self._end:
            return
        i = bisect_right(self._bases, offset) - 1
        if i >= 0 and self._bases[i] < offset:
            # Cut inside a batch: keep the records below ``offset``.
            b = self._batches[i]
            keep = b.records[: offset - b.base_offset]
            self._batches[i] = RecordBatch(b.base_offset, b.leader_epoch, keep, b.control, b.base_timestamp)
            i += 1
        else:
            i = max(i, 0)
        del self._batches[i:]
        del self._bases[i:]
        self._end = offset
        self._flushed = min(self._flushed, offset)
        while self._epochs and self._epochs[-1][1] >= offset:
            self._epochs.pop()

    def flush(self) -> None:
        if self._flushed == self._end:
            return
        if self.fail_next:
            self.fail_next = False
            raise SimulatedCrash("crash before flush")
        self.flush_count += 1
        self._flushed = self._end

    # -- epochs -----------------------------------------------------------------------------
    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        # Largest cached epoch <= ``epoch``; it ends where the next one starts, or at the LEO.
        lo, hi = 0, len(self._epochs)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._epochs[mid][0] <= epoch:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return OffsetAndEpoch(self.start_offset, 0)
        found = self._epochs[lo - 1][0]
        end = self._epochs[lo][1] if lo < len(self._epochs) else self._end
        return OffsetAndEpoch(end, found)

    def latest_snapshot_id(self) -> SnapshotId | None:
        return None

    # -- faults -----------------------------------------------------------------------------
    def crash(self) -> None:
        """Lose everything not flushed."""
        self.fail_next = False
        self.truncate_to(self._flushed)

    def tear_last_write(self) -> None:
        """Crash where unflushed batches partly reached disk: keep them but drop the last (torn) one.

        Storage recovery discards a batch whose CRC fails, so the torn batch vanishes whole; what
        survives is still a prefix of what was appended.
        """
        self.fail_next = False
        if self._end > self._flushed and self._batches:
            self.truncate_to(self._batches[-1].base_offset)
        self._flushed = self._end

    def wipe(self) -> None:
        self.__init__()  # type: ignore[misc]

    def snapshot_state(self) -> tuple[int, int]:
        return self._end, self._flushed


class MemoryStateStore:
    """Holds one ``ElectionState``; ``write`` is atomic and durable."""

    def __init__(self) -> None:
        self._state: ElectionState | None = None
        self.fail_next = False
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self._state

    def write(self, state: ElectionState) -> None:
        if self.fail_next:
            self.fail_next = False
            raise SimulatedCrash("crash before quorum-state write")
        self.writes += 1
        self._state = state

    def wipe(self) -> None:
        self._state = None
        self.fail_next = False
