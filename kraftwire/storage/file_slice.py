"""``FileSlice``: byte ranges of segment files handed to a socket without passing through Python.

A consumer Fetch answer's records are whole batches lying in one or more segment files. The log
describes them as ``(fd, position, size)`` ranges over *duplicates* of the segments' descriptors, so
the bytes stay readable while the answer is being sent even if retention deletes or a snapshot
install replaces the segment meanwhile (an unlinked file lives on while a descriptor is open).

A slice is sent with ``sendfile`` by the plaintext listener (``net/server.py``), read with ``pread``
(``materialize``) anywhere else, and closes its descriptors once sent, materialized or collected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator


class FileSlice:
    """Owned ``(fd, position, size)`` ranges; ``len()`` is their total size."""

    __slots__ = ("_ranges", "_size")

    def __init__(self, ranges: list[tuple[int, int, int]]) -> None:
        """``ranges`` are over descriptors this slice now owns (the caller duplicated them)."""
        self._ranges = ranges
        self._size = sum(size for _, _, size in ranges)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"FileSlice({self._size} bytes in {len(self._ranges)} ranges)"

    def ranges(self) -> Iterator[tuple[int, int, int]]:
        """The ``(fd, position, size)`` ranges in order (valid until ``close``)."""
        return iter(self._ranges)

    def materialize(self) -> bytes:
        """The bytes, read with ``pread``; the descriptors are closed. OSError if a range is cut short
        (a file truncated under the slice: the caller must not send a frame of the announced size)."""
        if self._size and not self._ranges:
            raise ValueError("FileSlice already sent or closed")
        try:
            parts = []
            for fd, pos, size in self._ranges:
                data = os.pread(fd, size, pos)
                if len(data) != size:
                    raise OSError(f"segment bytes {pos}..{pos + size} are no longer there ({len(data)} read)")
                parts.append(data)
            return b"".join(parts) if len(parts) != 1 else parts[0]
        finally:
            self.close()

    def close(self) -> None:
        ranges, self._ranges = self._ranges, []
        for fd, _, _ in ranges:
            os.close(fd)

    def __del__(self) -> None:
        # a Fetch answer that was built and dropped (long-poll retry, failed encode) still frees its fds
        if self._ranges:
            self.close()
