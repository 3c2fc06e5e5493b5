"""The records a listener process and the node's core exchange over one Unix socketpair.

A record is ``kind`` (1 byte), ``connection id`` (4 bytes) and a length-prefixed payload. Records are
queued and leave in one ``send`` per event-loop iteration (a batch), so the core pays one system call
for all the answers of an iteration instead of one per answer. A record may carry a file descriptor
(``SCM_RIGHTS``): a listener process hands a whole client connection to the core that way.

Listener process → core:

- ``OPEN``: a client connected; payload ``host NUL port NUL principal`` (the principal the listener
  authenticated: ``User:ANONYMOUS`` on PLAINTEXT);
- ``FRAME``: one request frame (size prefix removed) of that connection;
- ``CLOSED``: the client went away (or the listener closed it);
- ``HANDOFF``: the connection moves to the core (the descriptor rides along), payload the bytes read
  from it and not handled yet.

Core → listener process: ``ANSWER`` (the frame(s) answering the connection's request in flight; empty:
no answer, the next request may go) and ``CLOSE`` (close the connection once what was written left).

Import-light on purpose (no asyncio, no other kraftwire module): the listener process
(``node/listener_process.py``) starts with it.
"""

from __future__ import annotations

import array
import errno
import os
import socket
import struct
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any

OPEN, FRAME, CLOSED, HANDOFF, ANSWER, CLOSE = 1, 2, 3, 4, 11, 12
HEADER = struct.Struct(">BII")
READ_BYTES = 1 << 16           # one recv per readable event, at most (≈ 600 heartbeats: bounded work per event)
MAX_FDS = 64                   # descriptors one recvmsg can take
_ANC = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)

Record = Callable[[int, int, bytes], None]


class Channel:
    """One end of the socketpair on an event loop (asyncio's ``add_reader``/``add_writer`` API):
    ``send`` queues a record, the queue is written once per loop iteration; ``on_record(kind, conn,
    payload)`` is called for every record read (for at most ``slice_s`` per iteration, see ``_parse``),
    ``on_eof()`` once the other end is gone."""

    def __init__(self, sock: socket.socket, loop: Any, on_record: Record, on_eof: Callable[[], None], *,
                 slice_s: float = 0.0, linger_s: float = 0.0) -> None:
        sock.setblocking(False)
        self.linger_s = linger_s                # how long a record waits for others to leave with it
        self.slice_s = slice_s                  # the most record handling per loop iteration (0: no bound)
        self.deferred = 0                       # times records waited for a later iteration (a metric)
        self._paused = False
        self._parse_scheduled = False
        self.sock = sock
        self.loop = loop
        self.on_record = on_record
        self.on_eof = on_eof
        self.fds: deque[int] = deque()          # descriptors received, taken by HANDOFF records in order
        self.pending = 0                        # bytes queued and not yet written
        self.closed = False
        self._out: list[bytes] = []
        self._unsent = b""                      # what a short send left over
        self._flush_scheduled = False
        self._writing = False
        self._buf = bytearray()
        loop.add_reader(sock.fileno(), self._readable)

    # -- sending ---------------------------------------------------------------------------------
    def send(self, kind: int, conn: int, payload: bytes = b"") -> None:
        if self.closed:
            return
        self._out.append(HEADER.pack(kind, conn, len(payload)))
        if payload:
            self._out.append(payload)
        self.pending += HEADER.size + len(payload)
        if not self._flush_scheduled and not self._writing:
            self._flush_scheduled = True
            if self.linger_s:
                self.loop.call_later(self.linger_s, self._flush)
            else:
                self.loop.call_soon(self._flush)

    def send_fd(self, kind: int, conn: int, payload: bytes, fd: int) -> bool:
        """Send a record carrying ``fd`` now, after everything queued before it; False (nothing sent, the
        caller keeps ``fd`` and tries again later) while the other end is behind. ``fd`` is closed here
        once sent."""
        self._flush()
        if self.closed or self._unsent:
            return False
        data = HEADER.pack(kind, conn, len(payload)) + payload
        try:
            sent = self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self._lost()
            return False
        os.close(fd)
        if sent < len(data):
            self._unsent = data[sent:]
            self._want_write()
        return True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self.closed:
            return
        if self._out:
            data = b"".join(self._out)
            self._out = []
            self.pending = 0
            self._unsent = self._unsent + data if self._unsent else data
        if self._unsent:
            try:
                sent = self.sock.send(self._unsent)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._lost()
                return
            self._unsent = self._unsent[sent:]
        if self._unsent:
            self._want_write()
        elif self._writing:
            self._writing = False
            self.loop.remove_writer(self.sock.fileno())

    def _want_write(self) -> None:
        if not self._writing and not self.closed:
            self._writing = True
            self.loop.add_writer(self.sock.fileno(), self._flush)

    @property
    def backlog(self) -> int:
        """Bytes queued or left over by a short write: the other end is this far behind."""
        return self.pending + len(self._unsent)

    # -- receiving -------------------------------------------------------------------------------
    def _readable(self) -> None:
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(READ_BYTES, _ANC)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if e.errno not in (errno.ECONNRESET, errno.EPIPE, errno.EBADF):
                raise
            data, anc = b"", []
        for level, kind, fds in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(fds[:len(fds) - len(fds) % got.itemsize])
                self.fds.extend(got)
        if not data:
            self._lost()
            return
        self._buf += data
        self._parse()

    def _parse(self) -> None:
        """Hand on the whole records read; with ``slice_s``, for at most that long per loop iteration: the
        rest waits (the socket is not read meanwhile) and goes on in the next iteration, so the loop polls
        its other sockets (the voters' Raft connections) in between."""
        self._parse_scheduled = False
        if self.closed:
            return
        data = self._buf
        pos, end = 0, len(data)
        unpack, size, on_record = HEADER.unpack_from, HEADER.size, self.on_record
        slice_s = self.slice_s
        deadline = perf_counter() + slice_s if slice_s else 0.0
        count = 0
        more = False
        while end - pos >= size:
            kind, conn, length = unpack(data, pos)
            if end - pos - size < length:
                break
            start = pos + size
            pos = start + length
            on_record(kind, conn, bytes(data[start:pos]) if length else b"")
            if self.closed:
                return
            count += 1
            if slice_s and count & 15 == 0 and perf_counter() >= deadline:
                more = True
                break
        del data[:pos]
        if more:
            self.deferred += 1
            if not self._paused:
                self._paused = True
                self.loop.remove_reader(self.sock.fileno())
            self._parse_scheduled = True
            self.loop.call_soon(self._parse)
        elif self._paused:
            self._paused = False
            self.loop.add_reader(self.sock.fileno(), self._readable)

    def take_fd(self) -> int | None:
        """The descriptor of the HANDOFF record being read (None: it did not arrive)."""
        return self.fds.popleft() if self.fds else None

    # -- ending ----------------------------------------------------------------------------------
    def _lost(self) -> None:
        if not self.closed:
            self.close()
            self.on_eof()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        fd = self.sock.fileno()
        if fd >= 0:
            if not self._paused:
                self.loop.remove_reader(fd)
            if self._writing:
                self.loop.remove_writer(fd)
        self.sock.close()
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
