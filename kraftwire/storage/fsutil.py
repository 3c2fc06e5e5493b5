"""Durable file replacement: write a temp file, fsync it, rename over the target, fsync the directory."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, suffix: str = ".tmp", *, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content.

    The data goes to ``path + suffix`` first (write, fsync), which is then renamed over ``path``.
    ``sync=False`` skips both fsyncs (a store configured without fsync: tests, benchmarks).
    """
    path = Path(path)
    tmp = path.with_name(path.name + suffix)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)
