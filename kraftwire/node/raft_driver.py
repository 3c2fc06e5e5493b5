"""The anyio shell around the sans-I/O node core (``kraftwire.core.node_core.NodeCore``).

All calls into the core happen on the event loop's single thread, one at a time, so the core
never needs locks. The shell only moves the core's outputs: ``SendRequest`` becomes a task that sends
the wire request to the peer and feeds the reply (or the failure) back; ``Respond`` (the
door's answer, Raft's included) wakes the task waiting to answer that request; ``PersistLog``
(every log fsync of the hot paths, leader's and fetcher's) runs in the node's disk worker and is
reported back with ``handle_persisted``; ``PersistState`` (a vote, a new epoch) is written by the disk
worker too, and every output of that call and of the calls after it waits until it is durable (Raft's
rule, as Kafka's quorum-state write before its Vote answer); ``ReadSnapshotChunk`` (a FetchSnapshot's
bytes) is read from the snapshot file in a worker thread and handed back with ``handle_snapshot_chunk``; the log's journal (segment rolls, removals,
the epoch and log-start checkpoints, snapshot files: ``storage/journal.py``) is drained by the same
worker. ``TakeSnapshot`` frames the image in a worker thread and hands the batches back;
``SendController`` (a broker's registration or heartbeat) goes to the voter the peer client believes is
the active controller, on its own lane. Kafka requests enter the core's one door with ``handle_api``:
its ``Respond`` is the answer, its ``Relay`` runs the server's ``relay`` in the caller's task and is
handed back, its ``Read`` (a consumer Fetch) runs the server's ``read`` there, and its ``Park`` leaves
the caller waiting for the next ``Read`` or the answer. Raft's own inbound requests (Vote, a replica's Fetch,
...) take the same door: the core answers them with ``Respond``, held behind a quorum-state write like any
output. Outbound, the driver turns the core's messages into wire requests (``core/raft_wire.py``). A timer task calls ``tick`` at the core's next deadline.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from itertools import count
from typing import Any

import anyio
from anyio.abc import TaskGroup

from kraftwire.core import (
    Audit,
    NodeCore,
    Park,
    Read,
    Relay,
    Respond,
    SendController,
    TakeSnapshot,
    is_raft_request,
    raft_topic,
)
from kraftwire.core import raft_wire as wire
from kraftwire.net.client import RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.protocol.errors import DecodeError, Errors, KafkaProtocolError
from kraftwire.protocol.framing import Request
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.raft import messages as m
from kraftwire.storage.audit import Origin

log = logging.getLogger(__name__)



def wall_ms() -> int:
    return int(time.time() * 1000)


def connection_refused(e: BaseException | None) -> bool:
    """``e`` was caused by a refused connection: nothing listens at the peer's address (its process is
    gone), which the Raft core may act on sooner than on a timeout (``RaftConfig.refused_standoff_ms``)."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, ConnectionRefusedError):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


class RaftDriver:
    """Runs a NodeCore: inbound requests, outbound requests to voters, timers, change listeners."""

    def __init__(self, node: NodeCore, peers: PeerClient, *, request_timeout_ms: int,
                 leader_endpoints: list[tuple[str, str, int]],
                 clock: Callable[[], int] = wall_ms, lane: str = "raft",
                 disk: DiskWorker | None = None) -> None:
        self.node = node
        self.core = node.raft
        self.disk = disk if disk is not None else DiskWorker()
        self._journal = getattr(getattr(node.raft, "log", None), "journal", None)   # a FileLog's disk work
        self._journal_busy = False
        self._held: deque[list[Any]] = deque()   # output lists waiting for a quorum-state write, in order
        self._writing = False
        self.lane = lane
        self.peers = peers
        self.request_timeout_s = request_timeout_ms / 1000
        self.leader_endpoints = leader_endpoints
        self.clock = clock
        self._ids = count(1)
        self._waiting: dict[int, tuple[anyio.Event | None, list[Any]]] = {}
        self._tg: TaskGroup | None = None
        self._wake = anyio.Event()
        self.changed = anyio.Event()  # set (and replaced) whenever log end / HW / leader may have moved
        self.on_change: list[Callable[[], None]] = []
        self.metrics: Any = None
        self.audit: Any = None    # an AuditWriter (storage/audit.py) on a voter with a log directory
        self._trimming = False
        self.versions_probe: Callable[[m.KraftVersionsRequest], Any] | None = None   # KIP-853 (voter_changes.py)
        self.relay: Callable[[Relay], Awaitable[Reply | None]] | None = None   # carries the door's Relays
        self.read: Callable[[Read], tuple[Any, int]] | None = None   # reads a consumer Fetch (zero-copy)
        # other quorums on the same listeners (the voters' offsets quorum): their Raft requests, by the topic they
        # name, go to their own driver
        self.quorums: dict[str, RaftDriver] = {}

    @property
    def topic(self) -> str | None:
        """A second quorum's topic name on the wire (``wire.retopic``), None for ``__cluster_metadata``."""
        return self.node.raft_apis.topic

    @property
    def nodes(self) -> list[tuple[int, str, int, str]]:
        """The voters the core's Raft answers list (DescribeQuorum v2, the endpoints of Vote, Fetch ...)."""
        return self.node.raft_apis.nodes

    @nodes.setter
    def nodes(self, nodes: list[tuple[int, str, int, str]]) -> None:
        self.node.raft_apis.nodes = nodes

    # -- lifecycle -----------------------------------------------------------------------------
    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            if self._journal is not None:
                self._journal.deferred = True   # from now on the log's disk work is the worker's
            task_status.started()
            await self._timer()

    async def _timer(self) -> None:
        while True:
            self._dispatch(self.node.tick(self.clock()))
            self._trim_audit()
            self._kick_journal()   # work queued outside a core call (a snapshot stored by a role)
            deadline = self.node.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()

    def poke(self) -> None:
        """Re-evaluate timers now (after an event that may have moved the core's deadline)."""
        self._wake.set()
        self._notify()

    def _notify(self) -> None:
        ev, self.changed = self.changed, anyio.Event()
        ev.set()
        for fn in self.on_change:
            fn()

    # -- core calls ----------------------------------------------------------------------------
    def call(self, fn: Callable[..., list[Any]], *args: Any) -> None:
        """Invoke a core entry point with the current time and dispatch what it returns."""
        self._dispatch(fn(self.clock(), *args))
        self.poke()

    async def submit(self, body: Any, version: int, origin: Origin | None = None) -> Any:
        """Run a controller API request through the node core; returns the response body once it may be
        sent. ``origin`` (who sent it) goes into the audit entry of a request that writes."""
        rid = -next(self._ids)
        box = self._started(rid, self.node.submit(self.clock(), rid, body, version, origin))
        return box[0] if box else await self._later(rid, box)

    def handle_api(self, request: Request, ctx: RequestContext) -> Reply | Awaitable[Reply | None] | None:
        """A request through the node core's one door (``NodeCore.handle_api``): the ``Reply`` (None: no
        answer) when the core answered at once (a heartbeat that wrote nothing: no coroutine, no trip through the event
        loop), else an awaitable of it (a commit wait, or a ``Relay`` this shell carries out)."""
        if self.quorums:
            topic = raft_topic(request)
            if topic is not None and topic in self.quorums:
                return self.quorums[topic].handle_api(request, ctx)
        started = time.monotonic()
        rid = -next(self._ids)
        box = self._started(rid, self.node.handle_api(self.clock(), rid, request, ctx))
        if box:
            first = box[0]
            if type(first) is Relay:
                return self._run_relay(first)
            if type(first) is Read:
                return self._run_read(first)
            if self.metrics is not None and not is_raft_request(request):   # the core's own work (Kafka's
                # request processing time; Raft's requests are not the controller's)
                self.metrics.controller_processed((time.monotonic() - started) * 1000)
            return first  # type: ignore[no-any-return]
        return self._answer_later(rid, box)

    async def _answer_later(self, rid: int, box: list[Any]) -> Reply | None:
        first = await self._later(rid, box)
        if type(first) is Relay:
            return await self._run_relay(first)
        return await self._run_read(first) if type(first) is Read else first

    async def _run_read(self, out: Any) -> Reply | None:
        """A consumer Fetch in the caller's task: read what the core's ``Read`` asks (the server's ``read``,
        zero-copy), hand it back, and while the core ``Park``s it wait for its next ``Read`` or its answer."""
        rid = out.request_id
        while True:
            if type(out) is Read:
                try:
                    assert self.read is not None, "the node core asked for a read but no shell reads"
                    body, size = self.read(out)
                except BaseException:
                    self._dispatch(self.node.handle_relay_failed(self.clock(), rid))
                    raise
                box = self._started(rid, self.node.handle_read(self.clock(), rid, body, size))
                out = box[0] if box else await self._later(rid, box)
            elif type(out) is Park:
                out = await self._later(rid, [])
            else:
                return out  # type: ignore[no-any-return]

    async def _run_relay(self, relay: Relay) -> Reply | None:
        """Carry out a ``Relay`` (``relay``, the server's) in the caller's task, then hand its answer back
        to the core, which completes it (an authorization rule's filter) and gives it out."""
        try:
            assert self.relay is not None, "the node core relayed a request but no shell carries relays"
            reply = await self.relay(relay)
        except BaseException:
            self._dispatch(self.node.handle_relay_failed(self.clock(), relay.request_id))
            raise
        rid = relay.request_id
        box = self._started(rid, self.node.handle_relayed(self.clock(), rid, reply))
        answer = box[0] if box else await self._later(rid, box)
        if type(answer) is Relay:   # a request in parts: the next part is relayed too
            return await self._run_relay(answer)
        return answer  # type: ignore[no-any-return]

    async def submit_group(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        """Run a group API request through the node core's group role; its answer once durable."""
        rid = -next(self._ids)
        box = self._started(rid, self.node.submit_group(self.clock(), rid, api_key, version, body, client_id,
                                                        client_host), poke=True)
        return box[0] if box else await self._later(rid, box)

    def _started(self, rid: int, outputs: list[Any], poke: bool = False) -> list[Any]:
        """Dispatch what the core call that began (or went on with) request ``rid`` gave out; the returned box
        holds its answer when that came out at once (no event: ``_dispatch`` fills a waiter's box without one),
        else ``_later`` waits for it. A request answered at once with nothing else coming out (a heartbeat that
        wrote nothing, 5,000 a second at 10,000 brokers) wakes neither the timer nor the change listeners
        (unless ``poke``); a write, a commit or other answers coming out do."""
        box: list[Any] = []
        self._waiting[rid] = (None, box)
        self._dispatch(outputs)
        if box:
            self._waiting.pop(rid, None)
        if poke or not (len(outputs) == 1 and type(outputs[0]) is Respond and outputs[0].request_id == rid):
            self.poke()
        return box

    async def _later(self, rid: int, box: list[Any]) -> Any:
        """Wait for the answer of a request ``_started`` began (a commit, another event, or ``stop``)."""
        done = anyio.Event()
        self._waiting[rid] = (done, box)
        try:
            if not box:
                await done.wait()
        finally:
            self._waiting.pop(rid, None)
        return box[0]

    def _dispatch(self, outputs: list[Any]) -> None:
        if self._held or any(type(out) is m.PersistState for out in outputs):
            self._held.append(outputs)   # behind a quorum-state write: nothing leaves before it is durable
            if not self._writing:
                self._writing = True
                assert self._tg is not None
                self._tg.start_soon(self._write_states)
            return
        self._dispatch_now(outputs)

    async def _write_states(self) -> None:
        """Write each held list's quorum-state (the last, which covers the others) in the disk worker,
        then let that list's outputs go; lists held behind it follow in order."""
        try:
            while self._held:
                outputs = self._held[0]
                states = [out for out in outputs if type(out) is m.PersistState]
                if states:
                    try:
                        await self.disk.urgent(self.core.store.write, states[-1].state)
                    except OSError as e:   # votes that cannot be made durable must not be given: stop
                        log.critical("writing quorum-state %s failed (%s); stopping the node", states[-1].state, e)
                        raise
                self._held.popleft()
                self._dispatch_now([out for out in outputs if type(out) is not m.PersistState])
        finally:
            self._writing = False

    def _kick_journal(self) -> None:
        if self._journal is not None and self._journal.pending and not self._journal_busy and self._tg is not None:
            self._journal_busy = True
            self._tg.start_soon(self._drain_journal)

    async def _drain_journal(self) -> None:
        """The log's queued disk work (rolls, removals, checkpoints, snapshot files), in the disk worker."""
        journal = self._journal
        assert journal is not None
        try:
            while journal.pending:
                await self.disk.run(journal.run)
        finally:
            self._journal_busy = False

    def _dispatch_now(self, outputs: list[Any]) -> None:
        orphans: list[int] = []
        for out in outputs:
            if isinstance(out, Respond | Relay | Read | Park):
                waiter = self._waiting.pop(out.request_id, None)
                if waiter is not None:
                    waiter[1].append(out.body if type(out) is Respond else out)
                    if waiter[0] is not None:   # None: the answer came during the call that asked (``_started``)
                        waiter[0].set()
                elif type(out) is Read or type(out) is Relay:   # its connection is gone: the core forgets it
                    orphans.append(out.request_id)
            elif isinstance(out, TakeSnapshot):
                assert self._tg is not None
                self._tg.start_soon(self._frame_snapshot, out)
            elif isinstance(out, m.SendRequest):
                assert self._tg is not None
                self._tg.start_soon(self._send, out)
            elif isinstance(out, m.PersistLog):
                assert self._tg is not None
                self._tg.start_soon(self._persist, out.end_offset)
            elif isinstance(out, SendController):
                assert self._tg is not None
                self._tg.start_soon(self._send_controller, out)
            elif isinstance(out, m.ReadSnapshotChunk):
                assert self._tg is not None
                self._tg.start_soon(self._read_snapshot_chunk, out)
            elif isinstance(out, Audit) and self.audit is not None and self._tg is not None:
                self._tg.start_soon(self._write_audit, out)
        self._kick_journal()
        for rid in orphans:
            self._dispatch_now(self.node.handle_relay_failed(self.clock(), rid))

    async def _persist(self, end_offset: int) -> None:
        """The log's fsync (and its journal) in the disk worker: no connection of the node waits for it."""
        await self.disk.run(self.core.log.sync)
        self.call(self.node.handle_persisted, end_offset)

    def _trim_audit(self) -> None:
        """The log start moved (snapshots cleaned the log): drop the audit entries below it, in a thread."""
        audit = self.audit
        if audit is None or self._tg is None or self._trimming:
            return
        start = self.core.log.start_offset
        if start > audit.trimmed_below:
            self._trimming = True
            self._tg.start_soon(self._run_trim, start)

    async def _run_trim(self, start: int) -> None:
        try:
            await anyio.to_thread.run_sync(self.audit.trim, start)
        except OSError as e:
            log.error("cannot trim the audit file below offset %d: %s", start, e)
        finally:
            self._trimming = False

    async def _write_audit(self, out: Audit) -> None:
        """Append the audit entry in a worker thread (trimming entries the log no longer holds); not the disk
        worker's queue: an fsync per write there would hold every PersistLog behind the audit trail."""
        try:
            await anyio.to_thread.run_sync(self.audit.append, out.entry, self.core.log.start_offset)
        except OSError as e:
            log.error("cannot write the audit entry of offsets %d-%d: %s", out.entry.first_offset,
                      out.entry.last_offset, e)

    async def _frame_snapshot(self, out: TakeSnapshot) -> None:
        """Frame the snapshot (an immutable image or offsets state) in a worker thread, then hand the batches back."""
        batches = None
        try:
            batches = await anyio.to_thread.run_sync(out.job.frame)
        except Exception:
            log.exception("framing the snapshot at %s failed", out.job.sid)
        self.call(self.node.snapshot_framed, out.job.sid, batches)

    async def _read_snapshot_chunk(self, out: m.ReadSnapshotChunk) -> None:
        """A FetchSnapshot's bytes, read from the log's snapshot in a worker thread (a file read stays off the
        event loop; one cleaned away meanwhile answers SNAPSHOT_NOT_FOUND), then handed back for its answer."""
        try:
            chunk: bytes | None = await anyio.to_thread.run_sync(
                self.core.log.read_snapshot_chunk, out.snapshot_id, out.position, out.max_bytes)
        except (OSError, KeyError) as e:
            log.info("FetchSnapshot of %s at %d: the snapshot is gone (%s)", out.snapshot_id, out.position, e)
            chunk = None
        self._dispatch(self.node.handle_snapshot_chunk(self.clock(), out, chunk))

    async def _send_controller(self, out: SendController) -> None:
        """A broker's registration or heartbeat, to the voter believed to be the active controller (its
        own lane: a heartbeat never waits behind a forwarded admin write); NOT_CONTROLLER or no answer
        makes the peer client look elsewhere next time."""
        peers = self.peers
        node = peers.candidate()
        try:
            resp = await peers.send(node, out.request, self.request_timeout_s, lane="heartbeats")
        except (RequestFailed, DecodeError, KafkaProtocolError) as e:   # a garbled answer is no answer
            log.debug("%s to controller %d failed: %s", out.kind, node, e)
            peers.failed(node)
            self.call(self.node.handle_controller_failed, out.request_id)
            return
        if resp.error_code == Errors.NOT_CONTROLLER:
            peers.failed(node)
        else:
            peers.succeeded(node)
        self.call(self.node.handle_controller_response, out.request_id, resp)

    async def _send(self, out: m.SendRequest) -> None:
        if isinstance(out.msg, m.KraftVersionsRequest):   # ApiVersions to a voter being added (KIP-853)
            probe = self.versions_probe
            if probe is None:
                self.call(self.node.handle_request_failed, out.request_id)
            else:
                self.call(self.node.handle_response, out.request_id, await probe(out.msg))
            return
        api_key = out.msg.API_KEY
        try:
            # the version is chosen from the peer's ApiVersions, never before it
            conn = await self.peers.connect(out.dest_id, self.lane, self.request_timeout_s)
            version = conn.version_for(api_key)
            try:
                body = wire.request_to_wire(out.msg, version, self.leader_endpoints)
                if self.topic is not None:
                    wire.retopic(body, self.topic)
            except wire.WireError as e:  # e.g. a pre-vote to a peer without Vote v2: Kafka's client answers
                self.call(self.node.handle_response, out.request_id, _error_response_msg(out.msg, e.error))
                return
            wait = out.msg.max_wait_ms / 1000 if isinstance(out.msg, m.FetchRequest) else 0
            resp = await conn.request(body, version, self.request_timeout_s + wait)
            msg = wire.response_from_wire(api_key, resp)
        except (RequestFailed, DecodeError, KafkaProtocolError) as e:
            log.debug("request %s to node %d failed: %s", type(out.msg).__name__, out.dest_id, e)
            self.call(self.node.handle_request_failed, out.request_id, connection_refused(e))
            return
        except Exception:
            log.exception("unexpected error handling %s to node %d", type(out.msg).__name__, out.dest_id)
            self.call(self.node.handle_request_failed, out.request_id)
            return
        if self.metrics is not None and isinstance(msg, m.FetchResponse) and msg.partition is not None:
            self.metrics.fetched(sum(len(b.records) for b in msg.partition.batches))
        self.call(self.node.handle_response, out.request_id, msg)


def _error_response_msg(msg: m.Request, error: int) -> m.Response:
    """The core response for a request our client could not send (top-level ``error``)."""
    return m.RESPONSE_OF[msg.API_KEY](int(error))

