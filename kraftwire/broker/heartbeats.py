"""The anyio shell around ``BrokerLifecycle``: sends its requests, feeds back answers, keeps time."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup

from kraftwire.broker.lifecycle import BrokerLifecycle, BrokerState, Send
from kraftwire.net.client import RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.protocol.errors import Errors

log = logging.getLogger(__name__)


class LifecycleDriver:
    """Runs a broker's registration/heartbeat state machine against the active controller (its own lane:
    a heartbeat never waits behind a forwarded admin write)."""

    def __init__(self, machine: BrokerLifecycle, peers: PeerClient, metadata_offset: Callable[[], int],
                 clock: Callable[[], int], *, request_timeout_ms: int) -> None:
        self.machine = machine
        self.peers = peers
        self.metadata_offset = metadata_offset
        self.clock = clock
        self.request_timeout_s = request_timeout_ms / 1000
        self.stopped = anyio.Event()
        self.changed = anyio.Event()       # set (and replaced) on every state change
        self.first_serving = anyio.Event() # set once the broker is first unfenced (caught up)
        self._wake = anyio.Event()
        self._state = machine.state
        self._fenced = machine.fenced

    def wake(self) -> None:
        """Something the machine depends on moved (metadata offset, shutdown request)."""
        self._wake.set()

    def begin_shutdown(self) -> None:
        self.machine.begin_shutdown(self.clock())
        self._after()
        self.wake()

    async def run(self, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            task_status.started()
            await self._loop(tg)
            tg.cancel_scope.cancel()

    async def _loop(self, tg: TaskGroup) -> None:
        m = self.machine
        while m.state != BrokerState.SHUTDOWN:
            send = m.poll(self.clock(), self.metadata_offset())
            self._after()
            if send is not None:
                tg.start_soon(self._send, send)
            if m.state == BrokerState.SHUTDOWN:
                break
            deadline = m.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()
        self._after()
        self.stopped.set()

    async def _send(self, send: Send) -> None:
        m = self.machine
        node = self.peers.candidate()
        try:
            resp = await self.peers.send(node, send.request, self.request_timeout_s, lane="heartbeats")
        except RequestFailed as e:
            log.debug("%s to controller %d failed: %s", send.kind, node, e)
            self.peers.failed(node)
            m.on_failure(self.clock())
        else:
            if resp.error_code == Errors.NOT_CONTROLLER:
                self.peers.failed(node)
            else:
                self.peers.succeeded(node)
            if send.kind == "register":
                m.on_registration(self.clock(), resp)
            else:
                m.on_heartbeat(self.clock(), resp)
        self._after()
        self.wake()

    def _after(self) -> None:
        m = self.machine
        for event in m.drain_events():
            if m.fatal is not None and m.state == BrokerState.SHUTDOWN:
                log.error("broker %d: %s", m.config.node_id, event)
            else:
                log.info("broker %d: %s", m.config.node_id, event)
        if m.serving:
            self.first_serving.set()
        if m.state != self._state or m.fenced != self._fenced:
            self._state, self._fenced = m.state, m.fenced
            ev, self.changed = self.changed, anyio.Event()
            ev.set()
