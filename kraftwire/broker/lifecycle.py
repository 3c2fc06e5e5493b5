"""The broker's registration and heartbeat lifecycle (KIP-631), sans-I/O.

``BrokerLifecycle`` is driven by the shell with the current time in ms and the offset up to which
the broker has replayed the metadata log. ``poll`` returns at most one request to send to the
active controller (a BrokerRegistration or a BrokerHeartbeat: only one is ever in flight); the
shell reports what came back with ``on_registration`` / ``on_heartbeat`` / ``on_failure`` and
calls ``poll`` again no later than ``next_deadline()``.

States (Kafka's ``BrokerState`` numbers):

* STARTING — not registered yet; registration is retried until it succeeds.
* RECOVERY — registered but fenced. Heartbeats ask to stay fenced (WantFence) until the broker
  has replayed the log up to its own registration record, then ask to be unfenced.
* RUNNING — unfenced: the broker serves clients. A heartbeat answer saying it is fenced again
  (the controller let the lease lapse) sends it back to RECOVERY.
* PENDING_CONTROLLED_SHUTDOWN — after ``begin_shutdown``: heartbeats carry WantShutDown until the
  controller answers ShouldShutDown (its leaderships have moved away).
* SHUTDOWN — final. ``fatal`` says why when the broker must stop on its own (other
  cluster).

Lease: a registration lasts broker.session.timeout.ms past the last answered heartbeat. When it
lapses the broker counts itself fenced and registers again (same incarnation id, so the controller
keeps its epoch); a heartbeat refused with STALE_BROKER_EPOCH (the registration is gone or was
replaced) also triggers a new registration.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)


class BrokerState(IntEnum):
    """Kafka's broker states (the values of its ``BrokerState`` metric)."""

    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTDOWN = 7


SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True)
class LifecycleConfig:
    """What a broker tells the controller about itself, and its timing settings."""

    node_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: tuple[tuple[str, str, int, int], ...]          # (name, host, port, security protocol id)
    features: tuple[tuple[str, int, int], ...]                # (name, min level, max level)
    log_dirs: tuple[uuid.UUID, ...] = ()
    rack: str | None = None
    heartbeat_interval_ms: int = 2000                         # broker.heartbeat.interval.ms
    session_timeout_ms: int = 9000                            # broker.session.timeout.ms (the lease)
    retry_backoff_ms: int = 50
    max_backoff_ms: int = 1000
    shutdown_heartbeat_ms: int = 100                          # pace of WantShutDown heartbeats
    initial_registration_timeout_ms: int = 60000              # initial.broker.registration.timeout.ms


@dataclass(frozen=True)
class Send:
    """A request for the active controller. ``kind`` is "register" or "heartbeat"."""

    kind: str
    request: Any


@dataclass
class _Timing:
    next_send_ms: int = 0
    failures: int = 0
    lease_until_ms: int | None = None    # None while unregistered
    started_ms: int | None = None        # first poll; bounds the wait for the first registration
    last_refusal: str = "no answer from the controller"


@dataclass
class BrokerLifecycle:
    """The state machine; see the module docstring."""

    config: LifecycleConfig
    state: BrokerState = BrokerState.STARTING
    broker_epoch: int = -1
    registered: bool = False
    fenced: bool = True                  # what the controller last said (True until told otherwise)
    fatal: str | None = None
    inflight: str | None = None          # kind of the request in flight
    controller_stale: bool = False       # the shell should look for the active controller again
    _want_fence_sent: bool = True
    _timing: _Timing = field(default_factory=_Timing)
    _events: list[str] = field(default_factory=list)

    # -- views ----------------------------------------------------------------------------------
    @property
    def serving(self) -> bool:
        """True when clients may be answered from this broker's metadata (unfenced, lease held)."""
        return self.state == BrokerState.RUNNING and not self.fenced and self.registered

    def caught_up(self, metadata_offset: int) -> bool:
        return self.registered and self.broker_epoch >= 0 and metadata_offset >= self.broker_epoch

    def drain_events(self) -> list[str]:
        """Human-readable transitions since the last call (for the shell's log)."""
        out, self._events = self._events, []
        return out

    def next_deadline(self) -> int | None:
        if self.state == BrokerState.SHUTDOWN:
            return None
        times = []
        if self.inflight is None:
            times.append(self._timing.next_send_ms)
        if self._timing.lease_until_ms is not None:
            times.append(self._timing.lease_until_ms + 1)
        return min(times) if times else None

    # -- driving --------------------------------------------------------------------------------
    def poll(self, now: int, metadata_offset: int) -> Send | None:
        """Time passes; returns the next request to send, if one is due and none is in flight."""
        if self.state == BrokerState.SHUTDOWN:
            return None
        self._check_lease(now)
        self._check_first_registration(now)
        if self.state == BrokerState.SHUTDOWN or self.inflight is not None:
            return None
        if (self.state == BrokerState.RECOVERY and self.registered and self._want_fence_sent
                and self.caught_up(metadata_offset)):
            self._timing.next_send_ms = now  # caught up: ask to be unfenced at once
        if now < self._timing.next_send_ms:
            return None
        if not self.registered:
            self.inflight = "register"
            return Send("register", self._registration())
        self.inflight = "heartbeat"
        want_fence = self.state == BrokerState.RECOVERY and not self.caught_up(metadata_offset)
        self._want_fence_sent = want_fence
        return Send("heartbeat", BrokerHeartbeatRequest(
            broker_id=self.config.node_id, broker_epoch=self.broker_epoch,
            current_metadata_offset=max(0, metadata_offset), want_fence=want_fence,
            want_shut_down=self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN))

    def begin_shutdown(self, now: int) -> None:
        """SIGTERM: ask the controller to move leaderships away, or stop at once if never registered."""
        if self.state in (BrokerState.SHUTDOWN, BrokerState.PENDING_CONTROLLED_SHUTDOWN):
            return
        if not self.registered:
            self._to(BrokerState.SHUTDOWN, "shutting down without a registration: nothing to hand over")
            return
        self._to(BrokerState.PENDING_CONTROLLED_SHUTDOWN, "controlled shutdown requested")
        self._timing.next_send_ms = now

    def on_registration(self, now: int, resp: Any) -> None:
        self.inflight = None
        code = resp.error_code
        if code == Errors.NONE:
            self.registered = True
            self.broker_epoch = resp.broker_epoch
            self.fenced = True
            self._want_fence_sent = True
            self._ok(now)
            self._timing.next_send_ms = now
            self._events.append(f"registered with broker epoch {self.broker_epoch}")
            if self.state in (BrokerState.STARTING, BrokerState.RUNNING):
                self._to(BrokerState.RECOVERY, "registered; fenced until caught up")
            return
        if code == Errors.DUPLICATE_BROKER_REGISTRATION:
            # Our previous incarnation's lease (kill -9, fast restart) still runs: retry, as Kafka's
            # broker does, until broker.session.timeout.ms expires it.
            why = (f"broker id {self.config.node_id} is registered by another incarnation "
                   "(DUPLICATE_BROKER_REGISTRATION)")
            self._timing.last_refusal = why
            self._events.append(f"{why}; retrying until its session expires")
            self._backoff(now)
            return
        if code == Errors.INCONSISTENT_CLUSTER_ID:
            self._stop(now, f"the controller does not belong to cluster {self.config.cluster_id}")
            return
        self._refused(now, "registration", code)

    def on_heartbeat(self, now: int, resp: Any) -> None:
        self.inflight = None
        code = resp.error_code
        if code != Errors.NONE:
            if code == Errors.STALE_BROKER_EPOCH:
                self._lose_registration(now, "the controller no longer knows broker epoch "
                                             f"{self.broker_epoch}")
                return
            self._refused(now, "heartbeat", code)
            return
        self._ok(now)
        self.fenced = bool(resp.is_fenced)
        state = self.state
        if state == BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if resp.should_shut_down:
                self._to(BrokerState.SHUTDOWN, "the controller agreed: controlled shutdown complete")
                return
            self._timing.next_send_ms = now + min(self.config.shutdown_heartbeat_ms,
                                                  self.config.heartbeat_interval_ms)
            return
        if state == BrokerState.RECOVERY and not self.fenced:
            self._to(BrokerState.RUNNING, "unfenced by the controller")
        elif state == BrokerState.RUNNING and self.fenced:
            self._to(BrokerState.RECOVERY, "the controller fenced this broker")
        self._timing.next_send_ms = now + self.config.heartbeat_interval_ms

    def on_failure(self, now: int) -> None:
        """The request in flight got no answer (connection failure, timeout, garbage)."""
        self.inflight = None
        self.controller_stale = True
        self._backoff(now)
        self._check_lease(now)

    # -- internals ------------------------------------------------------------------------------
    def _registration(self) -> BrokerRegistrationRequest:
        c = self.config
        return BrokerRegistrationRequest(
            broker_id=c.node_id, cluster_id=c.cluster_id, incarnation_id=c.incarnation_id,
            listeners=[Listener(n, h, p, sp) for n, h, p, sp in c.listeners],
            features=[Feature(n, lo, hi) for n, lo, hi in c.features],
            rack=c.rack, log_dirs=list(c.log_dirs),
            previous_broker_epoch=self.broker_epoch)

    def _ok(self, now: int) -> None:
        self._timing.failures = 0
        self._timing.lease_until_ms = now + self.config.session_timeout_ms

    def _backoff(self, now: int) -> None:
        t = self._timing
        t.failures += 1
        delay = min(self.config.max_backoff_ms, self.config.retry_backoff_ms << min(t.failures - 1, 16))
        t.next_send_ms = now + delay

    def _refused(self, now: int, what: str, code: int) -> None:
        err = Errors.of(code)
        self._timing.last_refusal = f"{what} refused: {getattr(err, 'name', err)}"
        self._events.append(self._timing.last_refusal)
        if code == Errors.NOT_CONTROLLER:
            self.controller_stale = True
        self._backoff(now)

    def _check_first_registration(self, now: int) -> None:
        """Kafka's broker gives up when its first registration has not succeeded in time."""
        t = self._timing
        if t.started_ms is None:
            t.started_ms = now
        if self.broker_epoch < 0 and now - t.started_ms > self.config.initial_registration_timeout_ms:
            self._stop(now, f"broker {self.config.node_id} could not register within "
                            f"initial.broker.registration.timeout.ms ({self.config.initial_registration_timeout_ms} "
                            f"ms): {t.last_refusal}")

    def _check_lease(self, now: int) -> None:
        until = self._timing.lease_until_ms
        if until is None or now <= until:
            return
        if self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            # The controller has fenced us by now, which moved our leaderships: nothing to wait for.
            self._to(BrokerState.SHUTDOWN, "lease lost during controlled shutdown; stopping")
            return
        self._lose_registration(now, "lease lost: no heartbeat answered within broker.session.timeout.ms")

    def _lose_registration(self, now: int, why: str) -> None:
        self.registered = False
        self.fenced = True
        self._timing.lease_until_ms = None
        self._events.append(why)
        if self.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            self._to(BrokerState.SHUTDOWN, "registration gone during controlled shutdown; stopping")
            return
        if self.state == BrokerState.RUNNING:
            self._to(BrokerState.RECOVERY, "fenced; registering again")
        self._timing.next_send_ms = now

    def _stop(self, now: int, why: str) -> None:
        self.fatal = why
        self._to(BrokerState.SHUTDOWN, why)

    def _to(self, state: BrokerState, why: str) -> None:
        if state != self.state:
            self._events.append(f"{self.state.name} -> {state.name}: {why}")
            self.state = state
        if state == BrokerState.SHUTDOWN:
            self.inflight = None
            self._timing.lease_until_ms = None
