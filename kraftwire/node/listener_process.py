"""A listener process: client connections served beside the node's core, requests relayed to it in batches.

``python -m kraftwire.node.listener_process`` is started by the core (``node/listener_pool.py``) with two
inherited descriptors: the listening socket the core bound (every listener process accepts on it; the
kernel gives each connection to one of them) and its end of a socketpair to the core (``net/channel.py``).
Per client connection it does what the core's own listener would: cut size-prefixed frames out of what
arrives, send each answer, close idle connections (``connections.max.idle.ms``) and frames outside
0..``socket.request.max.bytes``. Every frame goes to the core as a ``FRAME`` record; the core decodes,
authorizes and answers it and sends the answer bytes back; all records of one loop iteration leave in
one write.

- *Order.* A connection has at most one request in the core; the next goes once its answer came back
  (Kafka mutes a channel the same way), so answers leave in request order. A client that pipelines is
  paused after ``MAX_QUEUED`` frames.
- *Back-pressure.* A client that does not read its answers gets no further request relayed until its
  answers drained; while the core is more than ``BACKLOG_BYTES`` behind, no client is read.
- *The quorum's own traffic.* A connection whose next request is one of the quorum's (Vote,
  BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, Fetch: ``--handoff-keys``) is handed to the core
  whole (``HANDOFF``, its descriptor and the bytes not handled yet), so the voters' Raft traffic
  (and a consumer's Fetch, its file slices sent with ``sendfile``) is served in the core's process.
- *Failure.* The core gone (end of file on the socketpair) ends this process and closes its clients.
  This process gone, the core sees end of file and forgets its connections (their clients see the
  connection close and reconnect).

Only what a PLAINTEXT listener needs: the principal is ``User:ANONYMOUS`` (TLS and SASL listeners stay
in the core; ``kraftwire.listener.processes`` refuses them at start). Imports nothing of kraftwire but
``net/channel.py`` and ``node/gc_tuning.py``, so it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import struct
import sys
from collections import deque
from typing import Any

from kraftwire.net.channel import ANSWER, CLOSE, CLOSED, FRAME, HANDOFF, OPEN, Channel
from kraftwire.node.gc_tuning import tune_gc

log = logging.getLogger("kraftwire.node.listener_process")
_SIZE = struct.Struct(">i")
MAX_QUEUED = 4                  # frames a connection may have waiting before it is paused
BACKLOG_BYTES = 8 << 20         # the core this far behind: stop reading clients
HANDOFF_RETRY_S = 0.005
HANDOFF_WAIT_S = 10.0           # a connection to hand over whose client reads nothing for this long is closed
LINGER_S = 0.001                # a frame waits this long for others to cross to the core with it
ACCEPT_PER_WAKEUP = 8           # connections taken per wake-up of the shared listening socket
ACCEPT_BACKOFF_S = 0.1
ANONYMOUS = "User:ANONYMOUS"


class Client(asyncio.Protocol):
    """One accepted client connection (see the module docstring)."""

    __slots__ = ("proc", "cid", "transport", "frames", "buf", "inflight", "read_paused", "write_paused",
                 "bad_size", "last_active", "handing_off", "handoff_tries", "gone")

    def __init__(self, proc: ListenerProcess) -> None:
        self.proc = proc
        self.cid = 0
        self.transport: Any = None
        self.frames: deque[bytes] = deque()
        self.buf = bytearray()
        self.inflight = False        # a request of this connection is in the core
        self.read_paused = False
        self.write_paused = False
        self.bad_size: int | None = None
        self.last_active = proc.now
        self.handing_off = False
        self.handoff_tries = 0
        self.gone = False            # closed, lost or handed to the core

    def connection_made(self, transport: Any) -> None:
        self.transport = transport   # asyncio sets TCP_NODELAY on it
        self.proc.opened(self, transport.get_extra_info("peername") or ("?", 0))

    def data_received(self, data: bytes) -> None:
        self.last_active = self.proc.now
        buf = self.buf
        if buf:
            buf += data
            data = buf
        pos, end = 0, len(data)
        max_bytes = self.proc.max_bytes
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > max_bytes:
                self.bad_size = size
                self.pause()
                pos = end
                break
            if end - pos - 4 < size:
                break
            self.frames.append(bytes(data[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if data is buf:
            del buf[:pos]
        elif pos < end:
            self.buf += data[pos:]
        if len(self.frames) >= MAX_QUEUED:
            self.pause()
        self.proc.pump(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.proc.lost(self)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self.proc.pump(self)

    def pause(self) -> None:
        if not self.read_paused and not self.gone:
            self.read_paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.read_paused and not self.gone and self.bad_size is None and not self.handing_off:
            self.read_paused = False
            self.transport.resume_reading()


class ListenerProcess:
    """The connections of one listener process and its channel to the core."""

    def __init__(self, loop: asyncio.AbstractEventLoop, channel_sock: socket.socket, *, index: int,
                 max_bytes: int, idle_s: float, handoff_keys: frozenset[int]) -> None:
        self.loop = loop
        self.index = index
        self.max_bytes = max_bytes
        self.idle_s = idle_s
        self.handoff_keys = handoff_keys
        self.now = loop.time()
        self.clients: dict[int, Client] = {}
        self.next_cid = 1
        self.stopped = asyncio.Event()
        self.throttled: list[Client] = []      # paused while the core was behind
        self.channel = Channel(channel_sock, loop, self.on_record, self.on_core_gone, linger_s=LINGER_S)

    # -- clients ---------------------------------------------------------------------------------
    def opened(self, client: Client, peer: Any) -> None:
        client.cid = cid = self.next_cid
        self.next_cid = (cid + 1) & 0xFFFFFFFF or 1
        self.clients[cid] = client
        self.channel.send(OPEN, cid, f"{peer[0]}\0{peer[1]}\0{ANONYMOUS}".encode())

    def lost(self, client: Client) -> None:
        if client.gone:
            return
        client.gone = True
        if self.clients.pop(client.cid, None) is not None:
            self.channel.send(CLOSED, client.cid)

    def pump(self, client: Client) -> None:
        """Relay the connection's next request to the core when none is in flight."""
        if client.inflight or client.gone or client.handing_off:
            return
        if client.write_paused:
            return
        frames = client.frames
        if not frames:
            if client.bad_size is not None:
                log.warning("closing connection %d: request size %d outside 0..%d (socket.request.max.bytes)",
                            client.cid, client.bad_size, self.max_bytes)
                self.close(client)
            return
        frame = frames[0]
        if len(frame) >= 2 and (frame[0] << 8 | frame[1]) in self.handoff_keys:
            self.hand_off(client)
            return
        frames.popleft()
        client.inflight = True
        channel = self.channel
        channel.send(FRAME, client.cid, frame)
        if channel.backlog > BACKLOG_BYTES:
            client.pause()
            self.throttled.append(client)
        elif client.read_paused and len(frames) < MAX_QUEUED // 2:
            client.resume()

    def close(self, client: Client) -> None:
        if not client.gone:
            client.transport.close()
            self.lost(client)

    def hand_off(self, client: Client) -> None:
        """Move the connection to the core once every answer it was sent has left (see the docstring)."""
        client.handing_off = True
        client.pause()
        if client.gone:
            return
        if client.transport.get_write_buffer_size():
            client.handoff_tries += 1
            if client.handoff_tries * HANDOFF_RETRY_S > HANDOFF_WAIT_S:   # it does not read its answers
                log.info("closing connection %d: its answers were not read within %.0f s of a Raft or Fetch request",
                         client.cid, HANDOFF_WAIT_S)
                self.close(client)
                return
            self.loop.call_later(HANDOFF_RETRY_S, self.hand_off, client)
            return
        sock = client.transport.get_extra_info("socket")
        fd = os.dup(sock.fileno())
        unread = b"".join(_SIZE.pack(len(f)) + f for f in client.frames) + bytes(client.buf)
        if not self.channel.send_fd(HANDOFF, client.cid, unread, fd):
            os.close(fd)
            self.loop.call_later(HANDOFF_RETRY_S, self.hand_off, client)
            return
        client.gone = True
        self.clients.pop(client.cid, None)
        client.transport.abort()   # closes this process's descriptor only: the core holds the connection

    # -- the core --------------------------------------------------------------------------------
    def on_record(self, kind: int, cid: int, payload: bytes) -> None:
        client = self.clients.get(cid)
        if client is None:
            return
        if kind == ANSWER:
            client.inflight = False
            if payload:
                client.transport.write(payload)
                client.last_active = self.now
            self.pump(client)
        elif kind == CLOSE:
            self.close(client)

    def on_core_gone(self) -> None:
        log.info("listener process %d: the node's core is gone; closing %d client connections", self.index,
                 len(self.clients))
        for client in list(self.clients.values()):
            client.transport.abort()
        self.stopped.set()

    def tick(self) -> None:
        """Once a second: the coarse clock, idle connections, clients paused while the core was behind."""
        self.now = now = self.loop.time()
        if self.throttled and self.channel.backlog <= BACKLOG_BYTES // 2:
            throttled, self.throttled = self.throttled, []
            for client in throttled:
                if len(client.frames) < MAX_QUEUED:
                    client.resume()
        for client in list(self.clients.values()):
            if not client.inflight and not client.frames and now - client.last_active > self.idle_s:
                self.close(client)
        self.loop.call_later(1.0, self.tick)


class Acceptor:
    """Accepts on the shared listening socket, a few connections per wake-up: every listener process is woken
    by a new connection, so taking a few at a time spreads a connection storm over them."""

    def __init__(self, loop: asyncio.AbstractEventLoop, listen: socket.socket, proc: ListenerProcess) -> None:
        listen.setblocking(False)
        self.loop = loop
        self.listen = listen
        self.proc = proc
        self.tasks: set[asyncio.Task[None]] = set()
        loop.add_reader(listen.fileno(), self.accept)

    def accept(self) -> None:
        for _ in range(ACCEPT_PER_WAKEUP):
            try:
                sock, _addr = self.listen.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:   # out of descriptors: stop accepting for a moment (the others go on)
                log.warning("listener process %d cannot accept connections: %s; backing off", self.proc.index,
                            e.strerror)
                self.loop.remove_reader(self.listen.fileno())
                self.loop.call_later(ACCEPT_BACKOFF_S, self.loop.add_reader, self.listen.fileno(), self.accept)
                return
            sock.setblocking(False)
            task = self.loop.create_task(self._connect(sock))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _connect(self, sock: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(lambda: Client(self.proc), sock)
        except OSError:
            sock.close()


async def serve(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    listen = socket.socket(fileno=args.listen_fd)
    channel = socket.socket(fileno=args.channel_fd)
    proc = ListenerProcess(loop, channel, index=args.index, max_bytes=args.max_request_bytes,
                           idle_s=args.idle_ms / 1000,
                           handoff_keys=frozenset(int(k) for k in args.handoff_keys.split(",") if k))
    for sig in (signal.SIGINT, signal.SIGTERM):   # the core ends this process (end of file), not a signal
        signal.signal(sig, signal.SIG_IGN)            # to its process group: clients stay served meanwhile
    Acceptor(loop, listen, proc)
    tune_gc()    # thousands of connections' objects: no full collections pausing them (as the node does)
    loop.call_later(1.0, proc.tick)
    await proc.stopped.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="kraftwire listener process (started by the node)")
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--listen-fd", type=int, required=True)
    p.add_argument("--channel-fd", type=int, required=True)
    p.add_argument("--max-request-bytes", type=int, required=True)
    p.add_argument("--idle-ms", type=int, required=True)
    p.add_argument("--handoff-keys", default="")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s listener-process-{args.index} %(message)s")
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
