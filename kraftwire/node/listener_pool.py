"""Listener processes: a listener's client connections served by separate processes, the node's core here.

With ``kraftwire.listener.processes`` = N > 0 a voter's controller listeners are not served by the
core's event loop: ``ListenerPool.serve`` binds the listening socket here and starts N listener
processes (``node/listener_process.py``) that accept on it, read and write the clients' sockets and relay
every request frame over one socketpair each (``net/channel.py``). For each relayed frame the core does
what its own listener does after cutting the frame (``KafkaServer.answer_frame``: decode, the node core's
one door with the connection's context — authorization stays here — encode) and sends the answer back;
answers of one loop iteration leave in one write per listener process. What stays in the core: the
voters' Raft connections and consumer Fetches (a listener process hands such a connection over whole,
its descriptor passed with ``SCM_RIGHTS``, and the core serves it as any other connection of its own),
the connection limits (``max.connections``, ``max.connections.per.ip``: a connection over them is closed
right after it was opened) and the metrics.

A listener process that dies takes its clients' connections with it (they reconnect; the kernel gives
new connections to the processes still accepting) and is started again after a second; the core's end
ends every listener process (they read end of file on their socketpair and exit).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
from collections.abc import Awaitable
from typing import Any

import anyio

from kraftwire.net.channel import ANSWER, CLOSE, CLOSED, FRAME, HANDOFF, OPEN, Channel
from kraftwire.net.gate import PRIORITY_KEYS, SLICE_S
from kraftwire.net.server import KafkaServer, ListenerSpec
from kraftwire.protocol.requests import RequestContext

log = logging.getLogger(__name__)
RESTART_DELAY_S = 1.0
STOP_WAIT_S = 2.0
BACKLOG = 65535    # the listen backlog (the kernel caps it at net.core.somaxconn), as anyio's listeners have
SUPPORTED_PROTOCOLS = frozenset({"PLAINTEXT"})


def unsupported(security_protocol: str) -> str | None:
    """Why a listener of this security protocol cannot be served by listener processes (None: it can)."""
    if security_protocol in SUPPORTED_PROTOCOLS:
        return None
    return f"listener processes serve PLAINTEXT listeners only, not {security_protocol}"


class _Link:
    """One running listener process: its channel and the connections it relayed."""

    def __init__(self, pool: ListenerPool, index: int, spec: ListenerSpec, proc: subprocess.Popen[bytes],
                 sock: socket.socket, tg: Any) -> None:
        self.pool = pool
        self.tg = tg              # the listener's task group: answers that wait, adopted connections
        self.index = index
        self.spec = spec
        self.proc = proc
        self.contexts: dict[int, RequestContext] = {}
        self.gone = anyio.Event()
        self.channel = Channel(sock, asyncio.get_running_loop(), self.on_record, self.gone.set, slice_s=SLICE_S)

    def on_record(self, kind: int, cid: int, payload: bytes) -> None:
        if kind == FRAME:
            ctx = self.contexts.get(cid)
            if ctx is not None:
                self.pool.answer(self, cid, payload, ctx)
        elif kind == OPEN:
            self.pool.opened(self, cid, payload)
        elif kind == CLOSED:
            self.pool.closed(self, cid)
        elif kind == HANDOFF:
            self.pool.handed_off(self, cid, payload)


class ListenerPool:
    """Serves listeners through ``count`` listener processes, answering with ``server``'s handler."""

    def __init__(self, server: KafkaServer, count: int) -> None:
        self.server = server
        self.count = count
        self.links: dict[tuple[str, int], _Link] = {}
        self.restarts = 0      # listener processes started again after they died
        self.handoffs = 0      # connections handed over to the core (Raft's, consumer Fetches)

    async def serve(self, spec: ListenerSpec, task_status: Any = anyio.TASK_STATUS_IGNORED, *,
                    open_when: anyio.Event | None = None, waiting_for: str = "ready") -> None:
        """``KafkaServer.serve`` for one listener, through the listener processes."""
        why = unsupported(spec.security_protocol)
        if why is not None:
            raise ValueError(f"listener {spec.name}: {why}")
        family = socket.AF_INET6 if ":" in spec.host else socket.AF_INET
        listen = socket.create_server((spec.host, spec.port), family=family, backlog=BACKLOG)
        try:
            host, port = listen.getsockname()[:2]
            self.server.bound[spec.name] = (host, port)
            task_status.started((host, port))
            if open_when is not None and not open_when.is_set():
                log.info("bound %s://%s:%d; accepting connections once %s", spec.name, host, port, waiting_for)
                await open_when.wait()
            log.info("listening on %s://%s:%d through %d listener processes", spec.name, host, port, self.count)
            async with anyio.create_task_group() as tg:
                for index in range(self.count):
                    tg.start_soon(self._supervise, index, spec, listen, tg)
        finally:
            listen.close()

    async def _supervise(self, index: int, spec: ListenerSpec, listen: socket.socket, tg: Any) -> None:
        """Run listener process ``index`` of ``spec``'s listener; start it again when it dies."""
        while True:
            link = self._spawn(index, spec, listen, tg)
            try:
                await link.gone.wait()
            finally:
                dropped = len(link.contexts)
                with anyio.CancelScope(shield=True):
                    code = await self._stop(link)
            self.restarts += 1
            log.warning("listener process %d of %s (pid %d) exited with status %s; its %d client connections "
                        "closed; starting it again in %.0f s", index, spec.name, link.proc.pid, code, dropped,
                        RESTART_DELAY_S)
            await anyio.sleep(RESTART_DELAY_S)

    def _spawn(self, index: int, spec: ListenerSpec, listen: socket.socket, tg: Any) -> _Link:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        server = self.server
        args = [sys.executable, "-m", "kraftwire.node.listener_process", "--index", str(index),
                "--listen-fd", str(listen.fileno()), "--channel-fd", str(theirs.fileno()),
                "--max-request-bytes", str(server.max_request_bytes),
                "--idle-ms", str(int(server.idle_timeout_s * 1000)),
                "--handoff-keys", ",".join(str(int(k)) for k in sorted(PRIORITY_KEYS))]
        try:
            proc = subprocess.Popen(args, pass_fds=(listen.fileno(), theirs.fileno()), stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        link = _Link(self, index, spec, proc, ours, tg)
        self.links[(spec.name, index)] = link
        log.info("listener process %d of %s started (pid %d)", index, spec.name, proc.pid)
        return link

    async def _stop(self, link: _Link) -> int | None:
        """Close the link, forget its connections, and reap the process; its exit status."""
        link.channel.close()
        link.gone.set()
        for cid in list(link.contexts):
            self.closed(link, cid)
        proc = link.proc
        with anyio.move_on_after(STOP_WAIT_S):
            while proc.poll() is None:
                await anyio.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if self.links.get((link.spec.name, link.index)) is link:
            del self.links[(link.spec.name, link.index)]
        return proc.returncode

    # -- what the listener processes relay ------------------------------------------------------
    def opened(self, link: _Link, cid: int, payload: bytes) -> None:
        host, port, principal = payload.decode(errors="replace").split("\0")
        limits = self.server.limits
        refused = "max.connections" if limits.total >= limits.max_connections else limits.admit(host)
        if refused is not None:
            if refused == "max.connections":
                limits.rejected[refused] += 1
            if limits.rejected[refused] % 1000 == 1:
                log.info("closing connection from %s on %s: over %s (%d refused so far)", host, link.spec.name,
                         refused, limits.rejected[refused])
            link.channel.send(CLOSE, cid)
            return
        ctx = RequestContext(link.spec.name, link.spec.security_protocol, host, int(port), principal)
        link.contexts[cid] = ctx
        self.server.connections += 1

    def closed(self, link: _Link, cid: int) -> None:
        ctx = link.contexts.pop(cid, None)
        if ctx is not None:
            self.server.connections -= 1
            self.server.limits.release(ctx.client_host)

    def answer(self, link: _Link, cid: int, frame: bytes, ctx: RequestContext) -> None:
        try:
            out = self.server.answer_frame(frame, ctx)
        except ConnectionError:
            link.channel.send(CLOSE, cid)
            return
        if out is None or type(out) is bytes:
            link.channel.send(ANSWER, cid, out or b"")
        else:
            link.tg.start_soon(self._answer_later, link, cid, out)

    async def _answer_later(self, link: _Link, cid: int, pending: Awaitable[bytes | None]) -> None:
        try:
            out = await pending
        except ConnectionError:
            link.channel.send(CLOSE, cid)
            return
        if cid in link.contexts:
            link.channel.send(ANSWER, cid, out or b"")

    def handed_off(self, link: _Link, cid: int, unread: bytes) -> None:
        """A connection the listener process passed over whole: served here from now on."""
        fd = link.channel.take_fd()
        ctx = link.contexts.pop(cid, None)
        if fd is None:
            log.warning("listener process %d handed over connection %d without its descriptor", link.index, cid)
            if ctx is not None:
                self.server.connections -= 1
                self.server.limits.release(ctx.client_host)
            return
        sock = socket.socket(fileno=fd)
        if ctx is None:    # refused by a limit meanwhile
            sock.close()
            return
        self.handoffs += 1
        self.server.connections -= 1   # counted again (and released at its end) by the connection's task
        link.tg.start_soon(self.server.adopt, sock, (ctx.client_host, ctx.client_port), link.spec,
                            ctx.client_host, unread)
