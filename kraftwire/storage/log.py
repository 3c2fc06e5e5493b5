"""``FileLog``: the ``__cluster_metadata-0`` directory as a durable ReplicatedLog.

Layout (Kafka's): ``<baseOffset:020d>.log`` segments of v2 record batches, a sparse ``.index``
per segment (int32 offset of a batch's last record relative to the segment base, int32 position
of the batch, one entry every ``index_interval_bytes``; appended as batches are written, fsynced
on roll and close, rebuilt on open), the ``leader-epoch-checkpoint`` text file
and snapshots ``<endOffset:020d>-<epoch:010d>.checkpoint`` (see ``kraftwire.storage.snapshot``).
The log start offset, when cleaning moved it past the first segment's base, is kept in Kafka's
``log-start-offset-checkpoint`` in the parent (log) directory.

Appends are written at once but become durable only on ``flush()`` (fsync), which is what
advances ``flushed_offset``. Opening the directory validates every batch's CRC, truncates a torn
or corrupt tail, rebuilds the epoch cache and indexes, removes unfinished snapshot files, and, if
the latest snapshot lies beyond the log (a follower that crashed while installing one), replaces
the log with an empty one starting at the snapshot's end offset.

Damage it cannot repair locally — the snapshot that covers the offsets below the log start is
missing or fails its CRCs — is discarded: the damaged snapshot is renamed ``*.damaged``, the log
restarts empty at 0, and the ``rejoining`` marker file is written. The node then fetches everything
(the snapshot first) from the leader; while the marker exists the shell starts its Raft core
re-joining (it votes for nobody until it holds the committed log again, docs/raft.md), and removes
the marker once the core has re-joined. The quorum-state file is never touched, so its votes stay.
"""

from __future__ import annotations

import logging
import os
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.records import (
    Record,
    RecordBatch,
    decode_batch,
    decode_batches,
    encode_batch,
    iter_batches,
)
from kraftwire.raft import OffsetAndEpoch, SnapshotId
from kraftwire.storage.file_slice import FileSlice
from kraftwire.storage.fsutil import fsync_dir
from kraftwire.storage.journal import DiskJournal
from kraftwire.storage.offset_checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    partition_of,
    read_offsets,
    update_offset,
)
from kraftwire.storage.snapshot import (
    SnapshotStore,
    check_framing,
    encode_batches,
    parse_snapshot,
    write_durably,
)

log = logging.getLogger(__name__)
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
REJOIN_MARKER = "rejoining"  # ours: damaged data was discarded and the voter has not re-joined yet
_INDEX_ENTRY = struct.Struct(">ii")
_base_of = attrgetter("base_offset")


@dataclass(slots=True)
class _BatchPos:
    base_offset: int
    next_offset: int
    epoch: int
    position: int
    size: int


@dataclass(slots=True)
class _Segment:
    base_offset: int
    path: Path
    fd: int
    size: int = 0
    batches: list[_BatchPos] = field(default_factory=list)
    bases: list[int] = field(default_factory=list)  # batches' base offsets, for bisection
    ends: list[int] = field(default_factory=list)   # batches' end positions, for cutting reads at a size
    dirty: bool = False
    index_entries: list[tuple[int, int]] = field(default_factory=list)
    bytes_since_index: int = 0
    index_fd: int = -1

    @property
    def index_path(self) -> Path:
        return self.path.with_suffix(".index")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class FileLog:
    """A segmented, fsync-on-flush metadata log (implements ``kraftwire.raft.log.ReplicatedLog``)."""

    def __init__(self, directory: Path, *, segment_bytes: int = 1 << 30,
                 index_interval_bytes: int = 4096) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self._segments: list[_Segment] = []
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset)
        self._start = 0
        self._end = 0
        self._flushed = 0
        self._tp = partition_of(self.dir)
        self._start_checkpoint = self.dir.parent / LOG_START_OFFSET_CHECKPOINT
        for leftover in (*self.dir.glob("*.index.tmp"), self.dir / (EPOCH_CHECKPOINT + ".tmp")):
            leftover.unlink(missing_ok=True)
        # fsyncs, renames and unlinks decided after the open run from here (``sync`` in the shell's disk
        # worker; ``flush`` and ``close`` at once)
        self.journal = DiskJournal()
        self.snapshots = SnapshotStore(self.dir, self.journal)
        self.rejoin_marker = self.dir / REJOIN_MARKER
        # The marker's text, read once here: afterwards the disk worker may be unlinking the file at any
        # moment, so the loop never looks at the disk for it again.
        self._rejoin_text: str | None = (self.rejoin_marker.read_text(errors="replace")
                                         if self.rejoin_marker.exists() else None)
        self.damage: str | None = None   # what was discarded on open (None: nothing)
        self._recover()
        self._recover_start()
        self._truncate_to_latest_snapshot()
        self._write_epochs()
        self.journal.run()   # the open is synchronous: the directory is consistent on disk before use

    # -- open / recovery ------------------------------------------------------------------------
    def _recover(self) -> None:
        paths = sorted(self.dir.glob("*.log"), key=lambda p: int(p.stem))
        expected: int | None = None
        for i, path in enumerate(paths):
            base = int(path.stem)
            if expected is not None and base != expected:
                log.warning("%s: segment does not continue the log at %d; removing it and later ones", path,
                            expected)
                self._remove_files(paths[i:])
                break
            seg = _Segment(base, path, os.open(path, os.O_RDWR))
            data = os.pread(seg.fd, os.fstat(seg.fd).st_size, 0)
            good = 0
            torn = False
            try:
                if expected is None:
                    expected = base
                for batch, pos, size in iter_batches(data):
                    if batch.base_offset != expected:
                        raise CorruptRecordError(f"batch at position {pos} has offset {batch.base_offset}, "
                                                 f"expected {expected}")
                    self._track(seg, batch, pos, size)
                    expected = batch.next_offset
                    good = pos + size
            except CorruptRecordError as e:
                log.warning("%s: %s; truncating at position %d", path, e, good)
                torn = True
            if good != len(data):
                if not torn:
                    log.warning("%s: torn tail of %d bytes; truncating at position %d", path,
                                len(data) - good, good)
                os.ftruncate(seg.fd, good)
                os.fsync(seg.fd)
            seg.size = good
            self._segments.append(seg)
            if torn or good != len(data):
                self._remove_files(paths[i + 1:], "follows a torn segment")
                break
        if not self._segments:
            self._segments.append(self._new_segment(0))
        self._active_fd = self._segments[-1].fd   # what ``sync`` fsyncs (read by the disk worker)
        self._start = self._segments[0].base_offset
        self._end = expected if expected is not None else self._start
        self._flushed = self._end
        for seg in self._segments:
            self._open_index(seg)

    def _remove_files(self, paths: Sequence[Path], why: str = "") -> None:
        for p in paths:
            if why:
                log.warning("%s: %s; removing", p, why)
            p.unlink()
            p.with_suffix(".index").unlink(missing_ok=True)
        if paths:
            fsync_dir(self.dir)

    def _recover_start(self) -> None:
        """Apply the checkpointed log start offset, drop what lies wholly below it, check snapshots."""
        saved = read_offsets(self._start_checkpoint).get(self._tp, 0)
        if saved > self._start:
            self._start = self._boundary(saved)
            self._drop_segments_below(self._start)
            self._truncate_epochs_from_start()
        latest = self.snapshots.latest()
        problem = None
        if self._start > 0 and (latest is None or latest.end_offset < self._start):
            problem = f"no snapshot covers the offsets below the log start {self._start} (latest: {latest})"
        elif self._start > 0 and latest is not None:
            try:
                self.snapshots.read(latest)
            except CorruptRecordError as e:
                problem = f"snapshot {latest} is damaged ({e})"
        if problem is not None:
            self._discard_damage(problem)
            return
        stale = [s for s in self.snapshots.ids() if s.end_offset < self._start]
        if stale:
            log.info("%s: removing snapshots below the log start %d: %s", self.dir, self._start, stale)
            self.snapshots.remove(stale)

    def _discard_damage(self, problem: str) -> None:
        """Keep nothing we cannot trust: set damaged snapshots aside, restart the log empty, re-join."""
        log.warning("%s: %s; discarding the local log and snapshots and fetching them from the leader "
                    "(the node re-joins the quorum: it votes for nobody until it has caught up)", self.dir, problem)
        for sid in self.snapshots.ids():
            path = self.snapshots.path(sid)
            path.rename(path.with_name(path.name + ".damaged"))
        self.snapshots = SnapshotStore(self.dir, self.journal)
        self._write_rejoin_marker(problem + "\n")
        self._truncate_fully_and_start_at(0)
        self.damage = problem

    def discard_epochs_above(self, epoch: int) -> bool:
        """Drop batches stamped with an epoch above ``epoch`` (the highest its node ever knew) and re-join.

        A batch's partitionLeaderEpoch lies outside the CRC, so a damaged one passes recovery; a log
        can never legitimately hold an epoch above its node's quorum-state epoch. True if it did.
        """
        last = self.last_epoch()
        if last <= epoch:
            return False
        cut = self.end_offset_for_epoch(epoch).offset
        # Damaged again before it re-joined: what it acknowledged before the first damage still binds it,
        # so the floor never falls (a second cut would otherwise lower it to the already shortened log).
        epoch_floor, end = max((epoch, self.end_offset), self.vote_floor or (-1, -1))
        problem = (f"the log holds leader epoch {last} from offset {cut} but this node never knew an epoch above "
                   f"{epoch} (a damaged batch header)")
        log.warning("%s: %s; truncating to %d and fetching the rest from the leader (until its log is back at "
                    "epoch %d offset %d the node stands for nothing and votes only for candidates that far)",
                    self.dir, problem, cut, epoch_floor, end)
        self.mark_rejoining(problem, vote_floor=(epoch_floor, end))
        self.truncate_to(max(cut, self.start_offset))
        self.flush()   # (at start-up, before the node serves)
        self.damage = problem
        return True

    def mark_rejoining(self, reason: str, vote_floor: tuple[int, int] | None = None) -> None:
        """Make the node start re-joining until its core says it has (durable before the core runs).

        With ``vote_floor`` (epoch, end offset) it re-joins the lighter way: it votes, but only for
        candidates at least that up to date, and stands once its log is back there (raft/core.py).
        """
        if vote_floor is None:
            log.info("%s: %s: re-joining (it votes for nobody until a majority of the voters answered and none has "
                     "a history, or, if the quorum has one, until every voter answered and it holds the committed "
                     "log)", self.dir, reason)
        text = reason + "\n" + ("" if vote_floor is None else f"vote-floor {vote_floor[0]} {vote_floor[1]}\n")
        self._write_rejoin_marker(text)

    def _write_rejoin_marker(self, text: str) -> None:
        self.journal.claim(self.rejoin_marker)   # an unlink of an earlier marker still queued must not remove it
        write_durably(self.rejoin_marker, text.encode())
        self._rejoin_text = text

    @property
    def vote_floor(self) -> tuple[int, int] | None:
        """The (epoch, end offset) floor the marker names, if it names one."""
        if self._rejoin_text is None:
            return None
        for line in self._rejoin_text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "vote-floor" and parts[1].isdigit() and parts[2].isdigit():
                return int(parts[1]), int(parts[2])
        return None

    @property
    def rejoining(self) -> bool:
        """The node must start re-joining (damage was discarded and it has not caught up since)."""
        return self._rejoin_text is not None

    def rejoined(self) -> None:
        """The Raft core re-joined: forget the marker (its unlink is queued for the disk worker)."""
        if self._rejoin_text is not None:
            lines = self._rejoin_text.splitlines()
            reason = lines[0] if lines else "?"
            self._rejoin_text = None
            self.journal.unlink(self.rejoin_marker)
            self.journal.fsync_dir(self.dir)
            log.info("%s: re-joined the quorum (it had started re-joining: %s)", self.dir, reason)

    def _truncate_to_latest_snapshot(self) -> bool:
        """Kafka's rule: a snapshot beyond the log (by epoch, or by offset in the same epoch) replaces it."""
        sid = self.snapshots.latest()
        last = self._epochs[-1][0] if self._epochs else 0
        if sid is None or not (sid.epoch > last or (sid.epoch == last and sid.end_offset > self._end)):
            return False
        if self._start == self._end == sid.end_offset and not self._epochs:
            return False  # already an empty log at the snapshot
        log.info("%s: snapshot %s is beyond the log end %d (epoch %d); starting the log at %d", self.dir, sid,
                 self._end, last, sid.end_offset)
        self._truncate_fully_and_start_at(sid.end_offset)
        self.snapshots.delete_before(sid)
        return True

    def _track(self, seg: _Segment, batch: RecordBatch, pos: int, size: int) -> None:
        seg.batches.append(_BatchPos(batch.base_offset, batch.next_offset, batch.leader_epoch, pos, size))
        seg.bases.append(batch.base_offset)
        seg.ends.append(pos + size)
        if not self._epochs or batch.leader_epoch > self._epochs[-1][0]:
            self._epochs.append((batch.leader_epoch, batch.base_offset))
        if seg.bytes_since_index >= self.index_interval_bytes or not seg.index_entries:
            # Kafka indexes a batch by its last offset (kafka-dump-log checks exactly that).
            seg.index_entries.append((batch.next_offset - 1 - seg.base_offset, pos))
            seg.bytes_since_index = 0
            if seg.index_fd >= 0:
                entry = _INDEX_ENTRY.pack(*seg.index_entries[-1])
                os.pwrite(seg.index_fd, entry, 8 * (len(seg.index_entries) - 1))
        seg.bytes_since_index += size

    def _new_segment(self, base: int) -> _Segment:
        path = self.dir / segment_name(base)
        self.journal.claim(path)   # a dropped segment of the same name is not removed after this
        self.journal.claim(path.with_suffix(".index"))
        seg = _Segment(base, path, os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
        self._open_index(seg)
        self.journal.fsync_dir(self.dir)
        return seg

    def _open_index(self, seg: _Segment) -> None:
        """Open (creating) the segment's index and make it hold exactly ``seg.index_entries``."""
        if seg.index_fd < 0:
            seg.index_fd = os.open(seg.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        data = b"".join(_INDEX_ENTRY.pack(rel, pos) for rel, pos in seg.index_entries)
        os.ftruncate(seg.index_fd, len(data))
        os.pwrite(seg.index_fd, data, 0)

    def _drop_segment(self, seg: _Segment) -> None:
        """Forget ``seg`` now; its descriptors close and its files go in the journal's order (a
        worker may still be fsyncing it)."""
        self.journal.close(seg.fd)
        if seg.index_fd >= 0:
            self.journal.close(seg.index_fd)
        self.journal.unlink(seg.path)
        self.journal.unlink(seg.index_path)

    # -- ReplicatedLog: positions ---------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    def last_epoch(self) -> int:
        if self._epochs:
            return self._epochs[-1][0]
        sid = self.snapshots.latest()
        return sid.epoch if sid is not None else 0

    def epochs(self) -> list[tuple[int, int]]:
        """The epoch cache: (epoch, start offset) pairs, ascending."""
        return list(self._epochs)

    # -- ReplicatedLog: writes ------------------------------------------------------------------
    def append_as_leader(self, records: Sequence[Record], epoch: int, *, control: bool = False,
                         timestamp_ms: int = 0) -> RecordBatch:
        batch = RecordBatch(self._end, epoch, tuple(records), control, timestamp_ms)
        raw = encode_batch(batch)
        batch = RecordBatch(batch.base_offset, epoch, batch.records, control, timestamp_ms, raw=raw)
        self._write(batch, raw)
        return batch

    def append_as_follower(self, batches: Sequence[RecordBatch]) -> None:
        for batch in batches:
            self._write(batch, batch.raw if batch.raw is not None else encode_batch(batch))

    def _write(self, batch: RecordBatch, raw: bytes) -> None:
        if batch.base_offset != self._end:
            raise ValueError(f"batch at {batch.base_offset} does not start at the log end {self._end}")
        if not batch.records:
            raise ValueError("empty batch")
        if batch.leader_epoch < self.last_epoch():
            raise ValueError(f"epoch {batch.leader_epoch} is below the last epoch {self.last_epoch()}")
        seg = self._segments[-1]
        if seg.size > 0 and seg.size + len(raw) > self.segment_bytes:
            self._roll()
            seg = self._segments[-1]
        new_epoch = not self._epochs or batch.leader_epoch > self._epochs[-1][0]
        os.pwrite(seg.fd, raw, seg.size)
        self._track(seg, batch, seg.size, len(raw))
        seg.size += len(raw)
        seg.dirty = True
        self._end = batch.next_offset
        if new_epoch:
            self._write_epochs()

    def _roll(self) -> None:
        old = self._segments[-1]
        self.journal.fsync(old.fd)
        self.journal.fsync(old.index_fd)
        old.dirty = False
        self._segments.append(self._new_segment(self._end))
        self._active_fd = self._segments[-1].fd

    def flush(self) -> None:
        """Everything durable now, on the calling thread (open, close, tests, a shell without a worker)."""
        self.journal.run()
        for seg in self._segments:
            if seg.dirty:
                os.fsync(seg.fd)
                seg.dirty = False
        self._flushed = self._end

    def sync(self) -> None:
        """What was appended before the call, and the disk work queued before it, made durable; run in
        the shell's disk worker while the event loop goes on appending (the dirty flags stay
        ``flush``'s). The active segment's descriptor cannot close under it: closes are journal work."""
        self.journal.run(before=lambda: os.fsync(self._active_fd))

    def mark_flushed(self, offset: int) -> None:
        self._flushed = max(self._flushed, min(offset, self._end))

    def truncate_to(self, offset: int) -> None:
        if offset >= self._end:
            return
        offset = max(offset, self._start)
        keep_prefix: RecordBatch | None = None
        held = len(self._segments)
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._drop_segment(self._segments.pop())
        seg = self._segments[-1]
        j = max(bisect_right(seg.bases, offset) - 1, 0)
        if j < len(seg.batches) and seg.batches[j].next_offset <= offset:
            j += 1
        cut_pos = seg.size
        if j < len(seg.batches):
            bp = seg.batches[j]
            cut_pos = bp.position
            if bp.base_offset < offset:
                whole = decode_batch(os.pread(seg.fd, bp.size, bp.position))
                keep_prefix = RecordBatch(whole.base_offset, whole.leader_epoch,
                                          whole.records[: offset - whole.base_offset], whole.control,
                                          whole.base_timestamp, whole.producer_id, whole.producer_epoch,
                                          whole.base_sequence, whole.transactional)
            del seg.batches[j:]
            del seg.bases[j:]
            del seg.ends[j:]
        dropped = len(self._segments) < held
        os.ftruncate(seg.fd, cut_pos)
        # Appends that follow reuse these offsets and positions, and a crash must never bring the cut records
        # back next to new ones, so the cut is durable before anything is appended after it. With a deferred
        # journal (the server's driver) the next ``sync`` makes it so in the disk worker — it fsyncs the
        # active segment, this one, then the journal (removed segments, the epoch checkpoint) — and the Raft
        # core appends and fetches only once that sync is reported (``RaftCore._durable``). Without one (tools,
        # tests using a log directly), here and now.
        if self.journal.deferred:
            seg.dirty = True   # (a ``flush`` or ``close`` before that sync fsyncs it)
            if dropped:
                self.journal.fsync_dir(self.dir)
        else:
            os.fsync(seg.fd)
            self.journal.run()
        seg.size = cut_pos
        seg.index_entries = [e for e in seg.index_entries if e[1] < cut_pos]
        os.ftruncate(seg.index_fd, 8 * len(seg.index_entries))
        seg.bytes_since_index = 0
        self._end = seg.batches[-1].next_offset if seg.batches else seg.base_offset
        self._end = max(self._end, self._start)
        while self._epochs and self._epochs[-1][1] >= self._end:
            self._epochs.pop()
        self._flushed = min(self._flushed, self._end)
        self._active_fd = seg.fd
        if keep_prefix is not None:   # a cut inside a batch: never Raft's (it cuts at epoch ends, batch
            self._write(keep_prefix, encode_batch(keep_prefix))   # boundaries), only a tool's
            self.flush()
        self._write_epochs()

    # -- ReplicatedLog: reads -------------------------------------------------------------------
    def _locate(self, offset: int) -> tuple[int, int] | None:
        """(segment index, batch index) of the batch containing ``offset``."""
        if offset < self._start or offset >= self._end:
            return None
        s = bisect_right(self._segments, offset, key=_base_of) - 1
        seg = self._segments[s]
        b = bisect_right(seg.bases, offset) - 1
        if b < 0:
            return None
        return s, b

    def _boundary(self, offset: int) -> int:
        """The batch boundary at or below ``offset``, within [start, end]."""
        if offset >= self._end:
            return self._end
        loc = self._locate(offset)
        if loc is None:
            return self._start
        s, b = loc
        return self._segments[s].batches[b].base_offset

    def _ranges(self, start_offset: int, max_bytes: int, below: int) -> list[tuple[_Segment, int, int]]:
        """(segment, position, size) of the whole batches from the one holding ``start_offset`` that end at
        or below offset ``below``, at most ``max_bytes`` of them except that the first is always included
        (KIP-74). Two bisections per segment read: no batch is visited."""
        loc = self._locate(start_offset)
        if loc is None:
            return []
        s, b = loc
        out: list[tuple[_Segment, int, int]] = []
        budget = max_bytes
        segments = self._segments
        while s < len(segments):
            seg = segments[s]
            n = len(seg.batches)
            if b < n:
                first = seg.batches[b].position
                whole = bisect_left(seg.bases, below)   # batches starting below `below` ...
                if whole and seg.batches[whole - 1].next_offset > below:
                    whole -= 1                          # ... and ending at or below it
                fits = bisect_right(seg.ends, first + budget)
                if not out and fits <= b:
                    fits = b + 1
                stop = min(whole, fits)
                if stop <= b:
                    break
                end = seg.ends[stop - 1]
                out.append((seg, first, end - first))
                budget -= end - first
                if stop < n:
                    break
            s += 1
            b = 0
        return out

    def read_raw(self, start_offset: int, max_bytes: int, below: int | None = None) -> bytes:
        """Whole batches' bytes from the batch containing ``start_offset`` (at least one batch), ending at
        or below offset ``below`` (default: the log end)."""
        ranges = self._ranges(start_offset, max_bytes, self._end if below is None else below)
        if len(ranges) == 1:
            seg, pos, size = ranges[0]
            return os.pread(seg.fd, size, pos)
        return b"".join(os.pread(seg.fd, size, pos) for seg, pos, size in ranges)

    def read_slice(self, start_offset: int, max_bytes: int, below: int) -> FileSlice:
        """What ``read_raw`` would return, as ranges over duplicated descriptors (for sendfile): still
        readable if the segments are deleted or replaced meanwhile (see ``FileSlice``)."""
        owned: list[tuple[int, int, int]] = []
        try:
            for seg, pos, size in self._ranges(start_offset, max_bytes, below):
                owned.append((os.dup(seg.fd), pos, size))
        except OSError:
            for fd, _, _ in owned:
                os.close(fd)
            raise
        return FileSlice(owned)

    def read(self, start_offset: int, max_bytes: int) -> list[RecordBatch]:
        data = self.read_raw(start_offset, max_bytes)
        return decode_batches(data, verify_crc=False)

    # -- epochs -----------------------------------------------------------------------------------
    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        if not self._epochs:
            return OffsetAndEpoch(self._end, self.last_epoch())
        lo = bisect_right([e for e, _ in self._epochs], epoch)
        if lo == 0:
            # Below every epoch held: the snapshot at the log start stands in (Kafka's override).
            first = self.snapshots.earliest()
            if first is not None and first.end_offset == self._epochs[0][1]:
                return OffsetAndEpoch(first.end_offset, first.epoch)
            return OffsetAndEpoch(self._start, 0)
        found = self._epochs[lo - 1][0]
        end = self._epochs[lo][1] if lo < len(self._epochs) else self._end
        return OffsetAndEpoch(end, found)

    def _epoch_at(self, offset: int) -> int | None:
        """Epoch of the record at ``offset`` per the epoch cache (None if not held)."""
        i = bisect_right([o for _, o in self._epochs], offset) - 1
        return self._epochs[i][0] if i >= 0 and self._start <= offset < self._end else None

    def _truncate_epochs_from_start(self) -> None:
        """Drop epoch entries wholly below the start; the last of them now starts at the start."""
        below = [e for e in self._epochs if e[1] <= self._start]
        if below:
            self._epochs = [(below[-1][0], self._start)] + [e for e in self._epochs if e[1] > self._start]

    # -- snapshots (KIP-630) ----------------------------------------------------------------------
    def latest_snapshot_id(self) -> SnapshotId | None:
        return self.snapshots.latest()

    def create_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[RecordBatch]) -> None:
        """Store a snapshot durably. One below the log start is declined (logged), like Kafka."""
        sid = snapshot_id
        if sid.end_offset > self._end:
            raise ValueError(f"snapshot {sid} ends beyond the log end offset {self._end}")
        if sid.end_offset < self._start:
            log.info("%s: not creating snapshot %s below the log start offset %d", self.dir, sid, self._start)
            return
        latest = self.snapshots.latest()
        if latest is not None and (latest.epoch > sid.epoch or latest.end_offset > sid.end_offset):
            raise ValueError(f"snapshot {sid} is older than the latest snapshot {latest}")
        if sid.end_offset > self._start:
            held = self._epoch_at(sid.end_offset - 1)
            if held != sid.epoch:
                raise ValueError(f"snapshot {sid}: the record at offset {sid.end_offset - 1} "
                                 f"has epoch {held}")
        check_framing(batches)
        self.snapshots.write(sid, encode_batches(batches))

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        return self.snapshots.size(snapshot_id)

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        return self.snapshots.read_chunk(snapshot_id, position, max_bytes)

    def read_snapshot(self, snapshot_id: SnapshotId) -> list[RecordBatch]:
        """All batches of a stored snapshot, CRCs verified (CorruptRecordError otherwise)."""
        return self.snapshots.read(snapshot_id)

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """Store a downloaded snapshot, then restart the log, empty, at its end offset.

        ``data`` is validated first (CRCs, header and footer; CorruptRecordError). The snapshot is
        durable before any segment is removed, so a crash in between is finished on the next open.
        """
        parse_snapshot(data)
        self.snapshots.write(snapshot_id, data)
        self._truncate_fully_and_start_at(snapshot_id.end_offset)
        self.snapshots.delete_before(snapshot_id)

    def delete_before(self, snapshot_id: SnapshotId) -> None:
        """Advance the log start to ``snapshot_id`` (a batch boundary at or below its end offset),
        delete the segments wholly below it and every older snapshot."""
        if snapshot_id not in self.snapshots:
            raise KeyError(f"no snapshot {snapshot_id} held")
        if snapshot_id.end_offset > self._end:
            raise ValueError(f"snapshot {snapshot_id} ends beyond the log end offset {self._end}")
        new_start = self._boundary(snapshot_id.end_offset)
        if new_start > self._start:
            self._start = new_start
            self._checkpoint_start(new_start)
            self._drop_segments_below(new_start)
            self._truncate_epochs_from_start()
            self._write_epochs()
        self.snapshots.delete_before(snapshot_id)

    def _drop_segments_below(self, offset: int) -> None:
        """Delete segments holding only offsets below ``offset`` (rolling the active one if needed)."""
        if self._end <= offset and self._segments[-1].size > 0:
            self._roll()
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._drop_segment(self._segments.pop(0))
        self.journal.fsync_dir(self.dir)

    def _truncate_fully_and_start_at(self, offset: int) -> None:
        """Remove every segment (newest first) and start an empty log at ``offset``."""
        while self._segments:
            self._drop_segment(self._segments.pop())
        self.journal.fsync_dir(self.dir)
        self._segments.append(self._new_segment(offset))
        self._active_fd = self._segments[-1].fd
        self._epochs = []
        self._start = self._end = self._flushed = offset
        self._write_epochs()
        self._checkpoint_start(offset)

    # -- side files -------------------------------------------------------------------------------
    def _write_epochs(self) -> None:
        """Queue the epoch cache's checkpoint (rebuilt from the batches on open, so it may lag a crash)."""
        lines = ["0", str(len(self._epochs))] + [f"{e} {o}" for e, o in self._epochs]
        self.journal.write(self.dir / EPOCH_CHECKPOINT, ("\n".join(lines) + "\n").encode())

    def _checkpoint_start(self, offset: int) -> None:
        """Queue the log start offset's checkpoint (after the snapshot and drops queued before it)."""
        path, tp = self._start_checkpoint, self._tp
        self.journal.call(lambda: update_offset(path, tp, offset))

    def close(self) -> None:
        self.flush()
        for seg in self._segments:
            os.fsync(seg.index_fd)
            os.close(seg.index_fd)
            os.close(seg.fd)
        self._segments = []

    def segment_paths(self) -> list[Path]:
        return [seg.path for seg in self._segments]
