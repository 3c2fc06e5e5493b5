"""Kafka's ``.lock`` on a data directory: one process per directory, for the whole process life.

Kafka takes an exclusive ``FileChannel.tryLock`` on ``<dir>/.lock``, which on Linux is a POSIX
record lock (``fcntl(F_SETLK)``); ``fcntl.lockf`` takes the same lock, so a kraftwire node and a Kafka
process also refuse each other's directories. The lock dies with the process (kill -9 included).
POSIX locks belong to the process: never open and close ``.lock`` elsewhere while it is held.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from kraftwire.storage import StorageError

LOCK_FILE = ".lock"


class DirectoryLock:
    """An exclusive lock on ``directory/.lock``; raises StorageError when another process holds it."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DirectoryLock:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StorageError(f"failed to acquire lock on {self.path}: another kraftwire or Kafka process is "
                               "using this directory; stop it, or give this node its own log.dirs") from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_all(directories: list[Path]) -> list[DirectoryLock]:
    """Lock every directory (in order); on a refusal the ones already taken are released."""
    locks: list[DirectoryLock] = []
    try:
        for d in directories:
            locks.append(DirectoryLock(d).acquire())
    except StorageError:
        for lock in locks:
            lock.release()
        raise
    return locks
