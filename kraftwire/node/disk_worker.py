"""``DiskWorker``: the node's one disk worker. Every fsync, rename and unlink the event loop decides
on (a log's ``PersistLog`` sync and its journal, quorum-state writes) runs here, one job at a time, in
the order asked, so the loop that answers heartbeats and Raft never waits for the disk.

Quorum-state writes take a lane of their own (``urgent``): a vote or a new epoch is a few hundred bytes
every Raft message of an election waits for, and queued behind a log's fsyncs and checkpoint rewrites
on a slow disk it would outlast the election timeout (Kafka's Raft thread writes it at once, too). Each
driver writes its quorum's state one write at a time, so the lane keeps their order.
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
        self._urgent: anyio.CapacityLimiter | None = None
        self.jobs = 0

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        self.jobs += 1
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    async def urgent(self, fn: Callable[..., T], *args: object) -> T:
        """A quorum-state write: its own lane, never behind the log's disk work."""
        if self._urgent is None:
            self._urgent = anyio.CapacityLimiter(1)
        self.jobs += 1
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._urgent)
