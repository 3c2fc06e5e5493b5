"""``DiskWorker``: the node's one disk worker. Every fsync, rename and unlink the event loop decides
on (a log's ``PersistLog`` sync and its journal, quorum-state writes) runs here, one job at a time, in
the order asked, so the loop that answers heartbeats and Raft never waits for the disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class DiskWorker:
    """Runs blocking disk jobs in a worker thread, one at a time (FIFO: anyio's limiter queues fairly)."""

    def __init__(self) -> None:
        self._limiter: anyio.CapacityLimiter | None = None   # made on the loop, at first use
        self.jobs = 0

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        self.jobs += 1
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)
