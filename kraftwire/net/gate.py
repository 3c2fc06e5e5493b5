"""Client requests in bounded slices, so that the quorum's own requests are never queued behind them.

One event loop serves the voters' Raft traffic and every client connection. When thousands of
requests arrive at once (a registration storm, every broker reconnecting after a failover) the loop
would run all of them before it next reads a socket, and a follower's Fetch or a candidate's Vote
would wait behind the whole backlog: the follower's fetch timeout runs out and it starts an election.

``ClientGate`` admits client requests in slices, one slice per loop iteration: once a slice holds
``fit`` requests or has run ``slice_s``, later requests wait in arrival order and the next
iteration lets the first ``fit`` of them through. Between two slices the loop polls its sockets,
and the Raft requests that came in are handled at once (they never pass the gate: ``is_priority``).
``fit`` adapts so that an iteration stays near ``slice_s`` (halved towards what fitted when one ran
longer, doubled up to ``per_slice`` when the backlog needs it): a slice bounds how long the quorum
waits, not how many requests a second the node serves. Kafka gets the same effect from threads:
its controller's Raft I/O thread does not share a queue with the request handlers.
"""

from __future__ import annotations

import asyncio
from collections import deque
from time import perf_counter

from kraftwire.protocol.api import ApiKey

# Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot and Fetch (a follower's: a consumer's Fetch
# of the metadata log on a controller listener passes too, it cannot be told apart before decoding).
PRIORITY_KEYS = frozenset({ApiKey.FETCH, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH,
                           ApiKey.FETCH_SNAPSHOT})
PER_SLICE = 1024      # most requests one slice admits
SLICE_S = 0.02        # the client work one loop iteration aims at
MIN_FIT = 8


def is_priority(frame: bytes) -> bool:
    """Whether a request frame (size prefix removed) carries one of the quorum's API keys."""
    return len(frame) >= 2 and (frame[0] << 8 | frame[1]) in PRIORITY_KEYS


class ClientGate:
    """Admits client requests in bounded slices, one per loop iteration (see the module docstring)."""

    def __init__(self, per_slice: int = PER_SLICE, slice_s: float = SLICE_S) -> None:
        self.per_slice = per_slice
        self.slice_s = slice_s
        self.fit = per_slice         # how many requests the next slice admits
        self.admitted = 0            # in the current slice
        self.started = 0.0           # when the current slice began
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.deferred = 0            # requests that waited for a later slice (a metric)
        self._scheduled = False

    def try_enter(self) -> bool:
        """Admit one request now if the slice has room and nobody waits ahead of it."""
        if self.waiting or self.admitted >= self.fit:
            return False
        if self.admitted == 0:
            if not self._scheduled:
                self.started = perf_counter()
        elif perf_counter() - self.started >= self.slice_s:
            return False
        self.admitted += 1
        self._schedule()
        return True

    async def enter(self) -> None:
        """Wait for a later slice (call after ``try_enter`` said no)."""
        fut = asyncio.get_running_loop().create_future()
        self.waiting.append(fut)
        self.deferred += 1
        self._schedule()
        try:
            await fut
        except asyncio.CancelledError:
            if not fut.done() or fut.cancelled():
                try:
                    self.waiting.remove(fut)
                except ValueError:
                    pass
            raise

    def _schedule(self) -> None:
        if not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:    # another anyio backend (trio): no slices, every request passes
                self.admitted = 0
                return
            self._scheduled = True
            loop.call_soon(self._next_slice)

    def _next_slice(self) -> None:
        """A new loop iteration: a fresh slice, first for those waiting, in arrival order."""
        self._scheduled = False
        now = perf_counter()
        if self.waiting:             # the last slice was full: fit it to the time an iteration took
            took = now - self.started
            if took > self.slice_s:
                self.fit = max(MIN_FIT, min(self.fit, self.admitted) * self.slice_s // took or MIN_FIT)
            else:
                self.fit = min(self.per_slice, max(self.fit, self.admitted) * 2)
            self.fit = int(self.fit)
        self.started = now
        self.admitted = 0
        waiting = self.waiting
        while waiting and self.admitted < self.fit:
            fut = waiting.popleft()
            if not fut.done():
                fut.set_result(None)
                self.admitted += 1
        if self.admitted:
            self._schedule()
