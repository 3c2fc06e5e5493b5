"""``DiskJournal``: the disk work a log decided on the event loop, run later, in order, off it.

A ``FileLog`` changes its in-memory state and its files' page-cache contents (``pwrite``,
``ftruncate``, ``open``) at once, on the caller's thread; the slow half of each change — fsyncs,
renames, unlinks, the atomic rewrite of a side file — is queued here and run by ``run``, which the
server calls in its one disk-worker thread (``node/disk_worker.py``) and the log itself calls where it
must be synchronous (open, ``flush``, ``close``). Nothing claims durability before ``run`` returned:
the log's flushed offset only moves when the shell reports a ``PersistLog`` done, and that sync runs
the journal first.

A journal starts synchronous (``deferred`` False: each operation runs as it is queued, for tools and
tests that use a log directly); the server's driver defers it when it takes the log over.

Queued work runs in the order it was queued, one runner at a time. A queued ``close`` keeps its file
descriptor valid until then, so a worker's fsync never meets a reused descriptor. A queued ``unlink``
is cancelled by ``claim`` when the loop creates a file of the same name first (a segment re-created at
a base offset a truncation dropped), so the new file is never removed.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path

from kraftwire.storage.fsutil import atomic_write, fsync_dir


class DiskJournal:
    """Ordered, deferred disk operations of one log directory."""

    def __init__(self) -> None:
        self.deferred = False                # False: run every operation as it is queued
        self._ops: deque[tuple[str, object]] = deque()
        self._lock = threading.Lock()        # the queue and unlink-vs-claim
        self._running = threading.Lock()     # one runner at a time: the order holds
        self._unlinks: dict[Path, int] = {}  # path -> queued unlinks not yet run or cancelled

    # -- queueing (the event loop) ---------------------------------------------------------------
    def fsync(self, fd: int) -> None:
        self._put("fsync", fd)

    def close(self, fd: int) -> None:
        self._put("close", fd)

    def fsync_dir(self, path: Path) -> None:
        self._put("fsync_dir", Path(path))

    def unlink(self, path: Path) -> None:
        path = Path(path)
        with self._lock:
            self._unlinks[path] = self._unlinks.get(path, 0) + 1
            self._ops.append(("unlink", path))
        if not self.deferred:
            self.run()

    def write(self, path: Path, data: bytes) -> None:
        """Atomically replace ``path`` with ``data`` (temp file, fsync, rename, directory fsync)."""
        self._put("write", (Path(path), data))

    def call(self, fn: Callable[[], object]) -> None:
        self._put("call", fn)

    def claim(self, path: Path) -> None:
        """``path`` is about to be created anew: cancel the unlinks of it still queued."""
        with self._lock:
            self._unlinks.pop(Path(path), None)

    def _put(self, kind: str, arg: object) -> None:
        with self._lock:
            self._ops.append((kind, arg))
        if not self.deferred:
            self.run()

    @property
    def pending(self) -> bool:
        return bool(self._ops)

    # -- running (the disk worker, or the loop where it must be synchronous) ---------------------
    def run(self, before: Callable[[], None] | None = None) -> None:
        """Run everything queued so far, in order; ``before`` first, under the same runner lock."""
        with self._running:
            if before is not None:
                before()
            while True:
                with self._lock:
                    if not self._ops:
                        return
                    kind, arg = self._ops.popleft()
                    if kind == "unlink":
                        self._unlink(arg)   # type: ignore[arg-type]
                        continue
                self._do(kind, arg)

    def _unlink(self, path: Path) -> None:
        """(Under the queue lock, so ``claim`` and the unlink never interleave.)"""
        n = self._unlinks.get(path, 0)
        if n == 0:
            return   # claimed: the name belongs to a new file now
        if n == 1:
            del self._unlinks[path]
        else:
            self._unlinks[path] = n - 1
        path.unlink(missing_ok=True)

    @staticmethod
    def _do(kind: str, arg: object) -> None:
        if kind == "fsync":
            os.fsync(arg)   # type: ignore[arg-type]
        elif kind == "close":
            os.close(arg)   # type: ignore[arg-type]
        elif kind == "fsync_dir":
            fsync_dir(arg)   # type: ignore[arg-type]
        elif kind == "write":
            path, data = arg   # type: ignore[misc]
            atomic_write(path, data)
        else:
            arg()   # type: ignore[operator]
