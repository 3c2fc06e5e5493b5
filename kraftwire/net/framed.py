"""One plaintext Kafka connection as an asyncio protocol: frames cut out on arrival, answered in order.

``data_received`` splits the byte stream into size-prefixed frames and queues them; the connection's
task (``KafkaServer._framed_connection``) takes them one at a time with ``next_frame`` (no await when
one is queued) or ``wait_frame``, and writes each answer with ``write``. Bounded work per connection:
reading pauses once ``MAX_QUEUED`` frames wait (Kafka mutes a channel while its request is handled)
and a client that does not read its answers stops the task at ``drain``. A size prefix outside
0..``max_bytes`` closes the connection after the frames before it are answered; a connection with
no request in progress and nothing received for ``idle_s`` is closed (``connections.max.idle.ms``).

An answer may come as pieces (``write_pieces``): buffers are written, and file slices (consumer Fetch
records in segment files) go from the page cache to the socket with ``loop.sendfile``, never through
Python. A slice found shorter than announced (its file truncated) aborts the connection: the frame's
size is already on the wire, so the client must see a reset, never a short frame.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from typing import Any

log = logging.getLogger("kraftwire.net.server")
_SIZE = struct.Struct(">i")
MAX_QUEUED = 4


class FramedConnection(asyncio.Protocol):
    """The protocol object of one accepted socket (see the module docstring)."""

    def __init__(self, max_bytes: int, idle_s: float, peer: str) -> None:
        self.max_bytes = max_bytes
        self.idle_s = idle_s
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self.frames: deque[bytes] = deque()   # request frames
        self.buf = bytearray()
        self.closed = False          # the peer went away, or we closed
        self.bad_size: int | None = None
        self.write_paused = False
        self.read_paused = False
        self.busy = False            # a request taken and not yet answered
        self.last_active = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()
        self.last_active = self._loop.time()
        if self.idle_s > 0:
            self._idle = self._loop.call_at(self.last_active + self.idle_s, self._check_idle)

    def data_received(self, data: bytes) -> None:
        self.last_active = self._loop.time()  # type: ignore[union-attr]
        buf = self.buf
        if buf:
            buf += data
            data = buf
        pos, end = 0, len(data)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self.max_bytes:
                self.bad_size = size
                self._stop_reading()
                end = pos = 0
                data = b""
                break
            if end - pos - 4 < size:
                break
            frame = bytes(data[pos + 4:pos + 4 + size])
            pos += 4 + size
            self.frames.append(frame)
        if data is buf:
            del buf[:pos]
        elif pos < end:
            self.buf += data[pos:]
        if len(self.frames) >= MAX_QUEUED:
            self._stop_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._idle is not None:
            self._idle.cancel()
        self._wake()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    # -- the connection's task -------------------------------------------------------------------
    def next_frame(self) -> Any:
        """The next queued request frame, or None when none is queued."""
        if not self.frames:
            self.busy = False
            return None
        frame = self.frames.popleft()
        self.busy = True
        if self.read_paused and len(self.frames) < MAX_QUEUED // 2 and self.bad_size is None and not self.closed:
            self.read_paused = False
            self.transport.resume_reading()  # type: ignore[union-attr]
        return frame

    async def wait_frame(self) -> Any:
        """Wait for the next frame; ConnectionError once the connection closed or sent a bad size."""
        while True:
            frame = self.next_frame()
            if frame is not None:
                return frame
            if self.bad_size is not None:
                log.warning("closing connection from %s: request size %d outside 0..%d (socket.request.max.bytes)",
                            self.peer, self.bad_size, self.max_bytes)
                raise ConnectionError("request size out of bounds")
            if self.closed:
                raise ConnectionError("closed")
            self._waiter = self._loop.create_future()  # type: ignore[union-attr]
            try:
                await self._waiter
            finally:
                self._waiter = None

    def write(self, data: bytes) -> None:
        if not self.closed:
            self.last_active = self._loop.time()  # type: ignore[union-attr]
            self.transport.write(data)  # type: ignore[union-attr]

    async def write_pieces(self, pieces: list[Any]) -> None:
        """Write one answer given as pieces, in order: buffers, and file slices (objects with
        ``ranges()`` of ``(fd, position, size)``) sent with sendfile; the slices are closed after."""
        try:
            for piece in pieces:
                ranges = getattr(piece, "ranges", None)
                if ranges is None:
                    self.write(piece)
                    continue
                for fd, pos, size in ranges():
                    await self._sendfile(fd, pos, size)
            if self.write_paused:
                await self.drain()
        finally:
            for piece in pieces:
                if hasattr(piece, "ranges"):
                    piece.close()

    async def _sendfile(self, fd: int, pos: int, size: int) -> None:
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionError("closed")
        self.last_active = self._loop.time()  # type: ignore[union-attr]
        with open(fd, "rb", buffering=0, closefd=False) as f:
            try:
                sent = await self._loop.sendfile(self.transport, f, pos, size)  # type: ignore[union-attr]
            except RuntimeError as e:   # the transport closed under us
                raise ConnectionError(str(e)) from None
        if sent != size:
            log.warning("aborting connection from %s: segment bytes %d..%d shrank under a Fetch answer (%d of %d "
                        "sent)", self.peer, pos, pos + size, sent, size)
            self.abort()
            raise ConnectionError("file slice cut short")

    async def drain(self) -> None:
        """Wait until the client has read enough of our answers (or went away)."""
        while self.write_paused and not self.closed:
            self._drain = self._loop.create_future()  # type: ignore[union-attr]
            try:
                await self._drain
            finally:
                self._drain = None
        if self.closed:
            raise ConnectionError("closed")

    def close(self) -> None:
        """Close after what was written leaves."""
        if self._idle is not None:
            self._idle.cancel()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # -- internals -------------------------------------------------------------------------------
    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _stop_reading(self) -> None:
        if not self.read_paused and not self.closed:
            self.read_paused = True
            self.transport.pause_reading()  # type: ignore[union-attr]

    def _check_idle(self) -> None:
        """Close the connection when idle for ``idle_s``; otherwise look again when it could be."""
        now = self._loop.time()  # type: ignore[union-attr]
        due = self.last_active + self.idle_s
        if self.closed:
            return
        if not self.busy and not self.frames and now >= due:
            log.debug("closing idle connection from %s", self.peer)
            self.close()
            return
        self._idle = self._loop.call_at(max(due, now + 0.001) if not self.busy else now + self.idle_s,  # type: ignore[union-attr]
                                        self._check_idle)
