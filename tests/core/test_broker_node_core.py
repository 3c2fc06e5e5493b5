"""The broker role in the node core (kraftwire.core.broker_lifecycle_role), driven by hand as a shell would.

A combined one-node quorum: one NodeCore runs the voter's controller role and the broker role over the
same replica, and the test shell hands the broker's ``SendController`` requests to the same core's
``submit`` (as the server's driver sends them to the active controller, itself here).
"""

from __future__ import annotations

import random
import uuid

from kraftwire.broker.lifecycle import BrokerState, LifecycleConfig
from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.controller_role import ControllerRole
from kraftwire.core.node_core import NodeCore, Respond, SendController
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.protocol.errors import Errors
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftConfig, RaftCore
from kraftwire.raft import messages as m

CLUSTER = "kw-broker-core-test-01"


def _lifecycle(node_id: int = 1) -> LifecycleConfig:
    return LifecycleConfig(
        node_id=node_id, cluster_id=CLUSTER, incarnation_id=uuid.UUID(int=7),
        listeners=(("PLAINTEXT", "localhost", 9092, 0),),
        features=tuple((n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())),
        log_dirs=(uuid.UUID(int=1 << 64 | 1),), heartbeat_interval_ms=200, session_timeout_ms=1000,
        retry_backoff_ms=20, max_backoff_ms=100, shutdown_heartbeat_ms=50)


def _combined() -> NodeCore:
    controller = ControllerRole(1, QuorumController(ControllerConfig(cluster_id=CLUSTER, session_timeout_ms=1000,
                                                                     default_replication_factor=1)),
                                bootstrap_records())
    broker = BrokerLifecycleRole(_lifecycle())
    listeners = _Both(controller, broker.metadata)
    raft = RaftCore(1, [1], RaftConfig(defer_flush=True), MemoryLog(), MemoryStateStore(), random.Random(1),
                    CLUSTER, 0, listeners)
    return NodeCore(raft, controller, broker=broker)


class _Both:
    """The controller's and the broker's Raft listeners over one replica (the server's FanOutListener)."""

    def __init__(self, *listeners) -> None:
        self.listeners = listeners

    def __getattr__(self, name):
        def call(*args):
            for listener in self.listeners:
                getattr(listener, name)(*args)
        return call


class Shell:
    """Moves outputs: fsyncs complete at once; broker requests go to this node's controller, and are
    dropped while ``partitioned``."""

    def __init__(self, node: NodeCore) -> None:
        self.node = node
        self.now = 0
        self.partitioned = False
        self.hold = False                 # record broker requests, answer none
        self.sent: list[SendController] = []
        self.calls: dict[int, int] = {}   # controller request id -> broker request id
        self.failed: list[int] = []

    def take(self, outputs: list) -> None:
        for out in outputs:
            if isinstance(out, m.PersistLog):
                self.node.log.sync()
                self.take(self.node.handle_persisted(self.now, out.end_offset))
            elif isinstance(out, SendController):
                self.sent.append(out)
                if self.hold:
                    continue
                if self.partitioned:
                    self.failed.append(out.request_id)
                    continue
                rid = 1000 + len(self.sent)
                self.calls[rid] = out.request_id
                self.take(self.node.submit(self.now, rid, out.request, type(out.request).MAX_VERSION))
            elif isinstance(out, Respond):
                self.take(self.node.handle_controller_response(self.now, self.calls.pop(out.request_id), out.body))
            else:
                raise AssertionError(f"a one-node quorum sends nothing else: {out}")

    def run_until(self, pred, limit_ms: int = 5000) -> None:
        while not pred():
            assert self.now < limit_ms, "condition not reached"
            self.now += 10
            while self.failed:
                self.take(self.node.handle_controller_failed(self.now, self.failed.pop(0)))
            self.take(self.node.tick(self.now))


def test_a_combined_node_core_registers_its_broker_and_unfences_it_once_caught_up() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    epoch = broker.machine.broker_epoch
    assert epoch >= 0 and broker.metadata.applied_offset >= epoch, "unfenced only after replaying its registration"
    image = shell.node.controller.controller.committed_image
    assert not image.brokers[1].fenced
    assert [s.kind for s in shell.sent][:1] == ["register"]


def test_heartbeats_keep_the_lease_and_one_request_is_in_flight_at_a_time() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    sent = len(shell.sent)
    start = shell.now
    shell.run_until(lambda: shell.now >= start + 3000)
    assert broker.serving and len(shell.sent) - sent >= 10, "a heartbeat about every 200 ms"
    assert shell.node.next_deadline() is not None


def test_no_answer_backs_off_and_the_lease_runs_out() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    shell.partitioned = True
    shell.run_until(lambda: not broker.machine.registered)
    assert broker.state == BrokerState.RECOVERY and not broker.serving
    shell.partitioned = False
    shell.run_until(lambda: broker.serving)


def test_the_lease_runs_out_while_a_heartbeat_waits_for_an_answer() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    shell.hold = True   # the next heartbeat is never answered (a controller that stopped reading)
    shell.run_until(lambda: broker.inflight is not None)
    sent_at = shell.now
    shell.run_until(lambda: not broker.machine.registered)
    assert shell.now - sent_at <= 1000 + 20, "noticed at the lease's end, not at the request's timeout"
    assert not broker.serving


def test_controlled_shutdown_moves_through_the_node_core() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    shell.take(shell.node.begin_shutdown(shell.now))
    assert broker.state in (BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTDOWN)
    shell.run_until(lambda: broker.state == BrokerState.SHUTDOWN)
    assert broker.fatal is None and broker.next_deadline() is None


def test_a_stale_answer_is_ignored() -> None:
    shell = Shell(_combined())
    broker = shell.node.broker
    shell.run_until(lambda: broker.serving)
    before = (broker.state, broker.inflight)
    shell.take(shell.node.handle_controller_response(shell.now, 999_999, object()))
    shell.take(shell.node.handle_controller_failed(shell.now, 999_998))
    assert (broker.state, broker.inflight) == before


def test_a_refused_registration_is_retried() -> None:
    from kraftwire.protocol.messages.broker_registration_response import BrokerRegistrationResponse

    shell = Shell(_combined())
    broker = shell.node.broker
    shell.hold = True
    shell.run_until(lambda: broker.inflight is not None)
    first = shell.sent[-1]
    assert first.kind == "register" and broker.inflight == first.request_id
    shell.take(shell.node.handle_controller_response(shell.now, first.request_id,
                                                     BrokerRegistrationResponse(error_code=Errors.NOT_CONTROLLER)))
    assert broker.inflight is None and not broker.machine.registered
    shell.hold = False
    shell.run_until(lambda: broker.serving)
