"""In-memory ``ReplicatedLog`` and ``QuorumStateStore`` for the simulator and unit tests.

Both model durability explicitly: the log keeps a flushed prefix that survives ``crash()``; the
store's ``write`` is atomic. With ``deferred_cuts`` (the simulator) a truncation is durable only at the
next sync, as a ``FileLog``'s under the server's driver: a crash before it brings the cut durable
records back, and an append before it is a bug of the core (the disk could then hold new records beside
cut ones) and raises ``AssertionError``. Snapshots (KIP-630) are kept as their encoded bytes and are durable as
soon as they are stored, like a fsynced and renamed checkpoint file. A test hook (``fail_next``) makes the next flush / write raise
``SimulatedCrash`` *before* anything becomes durable, so a node can die in the middle of a handler.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import snapshot as snap
from kraftwire.raft.log import ElectionState, OffsetAndEpoch, SnapshotId


class SimulatedCrash(Exception):
    """Raised by a memory log/store armed with ``fail_next``: the process dies right here."""


class MemoryLog:
    """A list of batches with an epoch cache ``[(epoch, start_offset)]``, a flushed prefix and snapshots."""

    def __init__(self, *, deferred_cuts: bool = False) -> None:
        self.deferred_cuts = deferred_cuts
        # the durable log as it was before a truncation no sync has made durable yet (deferred_cuts)
        self._uncut: tuple[list[RecordBatch], list[int], list[tuple[int, int]], int, int] | None = None
        self._batches: list[RecordBatch] = []
        self._bases: list[int] = []
        self._epochs: list[tuple[int, int]] = []
        self._start = 0
        self._end = 0
        self._flushed = 0
        self._snapshots: dict[SnapshotId, bytes] = {}
        self.fail_next = False
        self.flush_count = 0

    # -- properties -------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

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
        if self._epochs:
            return self._epochs[-1][0]
        latest = self.latest_snapshot_id()
        return latest.epoch if latest is not None else 0

    # -- writes -----------------------------------------------------------------------------
    def _add(self, batch: RecordBatch) -> None:
        if self._uncut is not None:
            raise AssertionError(f"batch at {batch.base_offset} appended before the truncation to {self._end} "
                                 "was durable: after a crash the disk could hold it beside the cut records")
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
        if self.deferred_cuts and self._uncut is None and max(offset, self._start) < self._flushed:
            self._uncut = (list(self._batches), list(self._bases), list(self._epochs), self._end, self._flushed)
        self._cut(offset)

    def _cut(self, offset: int) -> None:
        offset = max(offset, self._start)
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
            self._uncut = None   # (a flush is a sync: a truncation before it is durable now)
            return
        if self.fail_next:
            self.fail_next = False
            raise SimulatedCrash("crash before flush")
        self.flush_count += 1
        self._flushed = self._end
        self._uncut = None

    def sync(self) -> None:
        """Durability in the simulator is ``mark_flushed``'s, after a simulated fsync latency."""

    def mark_flushed(self, offset: int) -> None:
        """A sync asked for after the last truncation is done (the core asks for none while one runs)."""
        self._flushed = max(self._flushed, min(offset, self._end))
        self._uncut = None

    # -- epochs -----------------------------------------------------------------------------
    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        # Largest cached epoch <= ``epoch``; it ends where the next one starts, or at the LEO.
        if not self._epochs:
            return OffsetAndEpoch(self._end, self.last_epoch())
        lo, hi = 0, len(self._epochs)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._epochs[mid][0] <= epoch:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            # Below every epoch held: a snapshot ending at the first held epoch stands in for it.
            first = min(self._snapshots, key=_order, default=None)
            if first is not None and first.end_offset == self._epochs[0][1]:
                return OffsetAndEpoch(first.end_offset, first.epoch)
            return OffsetAndEpoch(self._start, 0)
        found = self._epochs[lo - 1][0]
        end = self._epochs[lo][1] if lo < len(self._epochs) else self._end
        return OffsetAndEpoch(end, found)

    def _epoch_at(self, offset: int) -> int | None:
        i = bisect_right([o for _, o in self._epochs], offset) - 1
        return self._epochs[i][0] if i >= 0 and self._start <= offset < self._end else None

    # -- snapshots (KIP-630) ----------------------------------------------------------------
    def latest_snapshot_id(self) -> SnapshotId | None:
        return max(self._snapshots, key=_order, default=None)

    def create_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        """Store a snapshot; one below the log start is declined quietly (another one covers it)."""
        sid = snapshot_id
        if sid.end_offset > self._end:
            raise ValueError(f"snapshot {sid} ends beyond the log end offset {self._end}")
        if sid.end_offset < self._start:
            return
        latest = self.latest_snapshot_id()
        if latest is not None and (latest.epoch > sid.epoch or latest.end_offset > sid.end_offset):
            raise ValueError(f"snapshot {sid} is older than the latest snapshot {latest}")
        if sid.end_offset > self._start and self._epoch_at(sid.end_offset - 1) != sid.epoch:
            raise ValueError(f"snapshot {sid}: the record at offset {sid.end_offset - 1} "
                             f"has epoch {self._epoch_at(sid.end_offset - 1)}")
        snap.check_framing(batches)
        self._snapshots[sid] = snap.encode(batches)

    def _held(self, sid: SnapshotId) -> bytes:
        data = self._snapshots.get(sid)
        if data is None:
            raise KeyError(f"no snapshot {sid} held")
        return data

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        return len(self._held(snapshot_id))

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        if position < 0 or max_bytes < 0:
            raise ValueError(f"bad snapshot read position {position} / size {max_bytes}")
        return self._held(snapshot_id)[position:position + max_bytes]

    def read_snapshot(self, snapshot_id: SnapshotId) -> list[RecordBatch]:
        return snap.parse(self._held(snapshot_id))

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        snap.parse(data)  # validated before anything changes
        self._uncut = None   # (durable at once, as the rest of its snapshots)
        self._snapshots[snapshot_id] = bytes(data)
        self._batches, self._bases, self._epochs = [], [], []
        self._start = self._end = self._flushed = snapshot_id.end_offset
        self._drop_snapshots_before(snapshot_id)

    def delete_before(self, snapshot_id: SnapshotId) -> None:
        self._held(snapshot_id)
        if snapshot_id.end_offset > self._end:
            raise ValueError(f"snapshot {snapshot_id} ends beyond the log end offset {self._end}")
        i = bisect_right(self._bases, snapshot_id.end_offset) - 1
        if snapshot_id.end_offset >= self._end:
            i = len(self._batches)
        if i > 0:
            new_start = self._bases[i] if i < len(self._bases) else self._end
            del self._batches[:i]
            del self._bases[:i]
            self._start = new_start
            below = [e for e in self._epochs if e[1] <= new_start]
            if below:
                self._epochs = [(below[-1][0], new_start)] + [e for e in self._epochs if e[1] > new_start]
            self._flushed = max(self._flushed, new_start)
        self._drop_snapshots_before(snapshot_id)

    def _drop_snapshots_before(self, sid: SnapshotId) -> None:
        for old in [s for s in self._snapshots if _order(s) < _order(sid)]:
            del self._snapshots[old]

    # -- faults -----------------------------------------------------------------------------
    def crash(self) -> None:
        """Lose everything not flushed (a truncation not yet durable included: the cut records come back)."""
        self.fail_next = False
        if self._uncut is not None:
            batches, bases, epochs, self._end, self._flushed = self._uncut
            self._batches, self._bases, self._epochs, self._uncut = batches, bases, epochs, None
        self._cut(self._flushed)

    def tear_last_write(self) -> None:
        """Crash where unflushed batches partly reached disk: keep them but drop the last (torn) one.

        Storage recovery discards a batch whose CRC fails, so the torn batch vanishes whole; what
        survives is still a prefix of what was appended.
        """
        self.fail_next = False
        if self._uncut is not None:   # (nothing was appended after it: see _add) the cut did not reach the disk
            self.crash()
            return
        if self._end > self._flushed and self._batches:
            self._cut(self._batches[-1].base_offset)
        self._flushed = self._end

    def wipe(self) -> None:
        self.__init__(deferred_cuts=self.deferred_cuts)  # type: ignore[misc]

    def snapshot_state(self) -> tuple[int, int]:
        return self._end, self._flushed


def _order(sid: SnapshotId) -> tuple[int, int]:
    return sid.end_offset, sid.epoch


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
